//! The launch facts of generated code in phobos-gpu's terms (what `phobos run` and the tuner's
//! back end pass to `Gpu::prepare_launch`), and an offline dry run of the binding.

use phobos_cuda::Emitted;
use phobos_gpu::{Extent, LaunchFacts, TensorMapParam};
use phobos_ir::Dim;

fn extent(d: Dim) -> Extent {
    match d {
        Dim::Static(n) => Extent::Static(n.max(0) as u64),
        Dim::Dyn(id) => Extent::Dim(id),
    }
}

/// `Emitted::tma`, `zero_before_launch`, `grid_z`, `persistent` and `cluster` as `LaunchFacts`.
pub fn launch_facts(e: &Emitted) -> LaunchFacts {
    LaunchFacts {
        tensor_maps: e
            .tma
            .iter()
            .map(|t| TensorMapParam {
                tensor: t.tensor,
                data_type: t.spec.data_type as u32,
                elem_bytes: t.spec.elem_bytes,
                global_dim: [extent(t.global_dim[0]), extent(t.global_dim[1])],
                line_stride: extent(t.line_stride),
                box_dim: t.spec.box_dim,
                element_strides: t.spec.element_strides,
                interleave: t.spec.interleave,
                swizzle: t.spec.swizzle,
                l2_promotion: t.spec.l2_promotion,
                oob_fill: t.spec.oob_fill,
            })
            .collect(),
        zero_before_launch: e.zero_before_launch.clone(),
        grid_z: e.grid_z,
        persistent: e.persistent,
        cluster_x: e.cluster,
    }
}
