//! How wide a kernel's Blocked vector groups are, from the element types of the tensors its
//! tiles load and store and what is known of their rows' alignment; and which tensors' rows are
//! known not to start on 16 bytes (shifted loads, shifted row stores).

/// The widest Blocked vector group of a kernel: 16 bytes of its narrowest tensor that tiles
/// are loaded from or stored to (4 for 4-byte types, 8 for 2-byte, 16 for 1-byte), and 4 when
/// no tile touches memory; and, for tensors of 4-byte or wider elements, where the host
/// specialized the kernel on its problem, no wider than the alignment in elements of those
/// tensors' rows (the strides of their outer axes).
/// Rows known to be unaligned take element accesses, and a group of one element a thread
/// makes each of those coalesced (consecutive lanes, consecutive elements) where a wider group
/// would space a warp's elements a group apart. Rows of unknown alignment keep the wide group,
/// whose accesses check alignment at run time. One cap for every tile of the kernel, so that
/// tiles of one shape share their layout and combine without conversions.
pub fn kernel_vec_cap(k: &phobos_ir::Kernel) -> i64 {
    use phobos_ir::{ExprKind, ParamKind};
    let mut narrowest = 4usize;
    let mut row_align = 16i64;
    let mut note = |t: usize| {
        if let ParamKind::Tensor { dtype, dims, .. } = &k.params[t].kind {
            narrowest = narrowest.min(dtype.size_bytes().max(1));
            row_align = row_align.min(outer_stride_align(k, t, dims.len()));
        }
    };
    crate::visit::any_in_stmts(&k.body, &mut |e| {
        if let ExprKind::Load { tensor, .. } = &e.kind {
            if e.ty.is_tile() {
                note(*tensor);
            }
        }
        false
    });
    each_store(&k.body, &mut |t, v| {
        if v.ty.is_tile() {
            note(t)
        }
    });
    let cap = (16 / narrowest as i64).clamp(4, 16);
    // Element groups for 4-byte and wider types only: one element a lane fills a warp's
    // 128-byte line. For 2-byte types it moves half a line an instruction, and the wide groups
    // measured faster (NOTES r6: bf16 cross-entropy at V = 50257, 1.26 against 0.73 TB/s).
    // VEC_COPY=1 keeps 4-byte types' 4-element groups: their unaligned rows' loads and
    // transposed stores take shifted 16-byte accesses ([`shifted_tensors`], NOTES r19).
    if narrowest == 4 && shifted_f32(k) {
        cap
    } else if narrowest >= 4 {
        cap.min(row_align)
    } else {
        cap
    }
}

/// The tensors whose tile loads take shifted 16-byte accesses (`ph::load_tile_shifted`): 2-byte
/// elements in 8-element groups (`vec_cap` 8), rows known not to start on 16 bytes (an outer
/// stride with no factor 8). Such a row's groups are not aligned vectors; each reads the two
/// aligned vectors covering it and shifts its elements out (bench/NOTES.md r8).
///
/// At `VEC_COPY=1` also 4-byte elements in 4-element groups (`vec_cap` 4) whose rows are known
/// not to start on 16 bytes (an outer stride with no factor 4): each group reads the aligned
/// vector holding its first element and the next, and selects its 4 words (NOTES r19).
pub fn shifted_tensors(k: &phobos_ir::Kernel, vec_cap: i64) -> std::collections::BTreeSet<usize> {
    use phobos_ir::{ExprKind, ParamKind};
    let mut out = std::collections::BTreeSet::new();
    let bytes = match vec_cap {
        8 => 2,
        4 if shifted_f32(k) => 4,
        _ => return out,
    };
    crate::visit::any_in_stmts(&k.body, &mut |e| {
        if let ExprKind::Load { tensor, .. } = &e.kind {
            if let ParamKind::Tensor { dtype, dims, .. } = &k.params[*tensor].kind {
                if e.ty.is_tile()
                    && dtype.size_bytes() == bytes
                    && outer_stride_align(k, *tensor, dims.len()) < vec_cap
                {
                    out.insert(*tensor);
                }
            }
        }
        false
    });
    out
}

/// `VEC_COPY=1`: 4-byte tensors whose rows are known unaligned keep 4-element groups, loaded and
/// (transposed) stored by shifted 16-byte accesses.
fn shifted_f32(k: &phobos_ir::Kernel) -> bool {
    phobos_ir::knobs::Knob::VecCopy.get(&k.point) == Some(1)
}

/// The tensors whose transposed tile stores (`t[..] = transpose(x)`) take shifted 16-byte stores
/// (`ph::transpose_store_shifted`): at `VEC_COPY=1`, 4-byte elements in 4-element groups
/// (`vec_cap` 4) whose rows are known not to start on 16 bytes. The transpose's shared tile is
/// read at each output row's shift, so every aligned 16-byte chunk inside the row segment is one
/// vector store, and only the segment's two partial chunks take element stores (NOTES r19).
pub fn shifted_store_tensors(
    k: &phobos_ir::Kernel,
    vec_cap: i64,
) -> std::collections::BTreeSet<usize> {
    if vec_cap != 4 || !shifted_f32(k) {
        return std::collections::BTreeSet::new();
    }
    unaligned_transposed_stores(k, &[4])
}

/// The tensors whose transposed tile stores (`t[..] = transpose(x)`) go by warp windows on
/// 128-byte lines (`ph::transpose_store_lines`): at `STORE_LINES=1` without `VEC_COPY=1`,
/// 4- or 2-byte elements whose rows are known not to start on 16 bytes. A warp stores a whole
/// row segment of the tile, window w covering the row's elements P·w − sh .. P·w − sh + P − 1
/// (P = 128 / element size: 32 or 64) where sh is the segment's first element's index in its
/// line: every window one line, so only the segment's two end sectors are partial, where a warp
/// of the element layout's stores touches two lines and two partial sectors (bench/NOTES.md
/// r37c, r40). 2-byte elements go a pair a lane, one 4-byte store where both are written (r43).
pub fn line_store_tensors(k: &phobos_ir::Kernel) -> std::collections::BTreeSet<usize> {
    if phobos_ir::knobs::Knob::StoreLines.get(&k.point) != Some(1) || shifted_f32(k) {
        return std::collections::BTreeSet::new();
    }
    unaligned_transposed_stores(k, &[4, 2])
}

/// The tensors of an element size in `sizes` (bytes) stored a `transpose(x)` of the same size
/// whose rows are known not to start on 16 bytes (an outer stride in elements times the size
/// with no factor 16): the stores the fused transposed forms can take.
fn unaligned_transposed_stores(
    k: &phobos_ir::Kernel,
    sizes: &[usize],
) -> std::collections::BTreeSet<usize> {
    use phobos_ir::{ExprKind, ParamKind};
    let mut out = std::collections::BTreeSet::new();
    each_store(&k.body, &mut |t, value| {
        if let ParamKind::Tensor { dtype, dims, .. } = &k.params[t].kind {
            if matches!(value.kind, ExprKind::Transpose(_))
                && sizes.contains(&dtype.size_bytes())
                && value.ty.dtype().size_bytes() == dtype.size_bytes()
                && outer_stride_align(k, t, dims.len()) * (dtype.size_bytes() as i64) < 16
            {
                out.insert(t);
            }
        }
    });
    out
}

/// Every store statement's tensor and value, in nested loops and branches too.
fn each_store(stmts: &[phobos_ir::Stmt], f: &mut dyn FnMut(usize, &phobos_ir::Expr)) {
    use phobos_ir::StmtKind;
    for s in stmts {
        match &s.kind {
            StmtKind::Store { tensor, value, .. } => f(*tensor, value),
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => each_store(body, f),
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                each_store(then_body, f);
                each_store(else_body, f);
            }
            _ => {}
        }
    }
}

/// True when `tensor` holds 2-byte elements whose rows are known not to start on 16 bytes
/// (the tensors whose row tiles `ph::store_row_shifted` stores at `PACK=2`).
pub fn rows_known_unaligned(k: &phobos_ir::Kernel, tensor: usize) -> bool {
    match &k.params[tensor].kind {
        phobos_ir::ParamKind::Tensor { dtype, dims, .. } => {
            dtype.size_bytes() == 2 && outer_stride_align(k, tensor, dims.len()) < 8
        }
        _ => false,
    }
}

/// The alignment, in elements, known for every row of a tensor of `rank` axes: the smallest
/// over its outer axes' strides; 16 for a vector (its one row starts at the base) and where
/// nothing is known.
fn outer_stride_align(k: &phobos_ir::Kernel, tensor: usize, rank: usize) -> i64 {
    let phobos_ir::ParamKind::Tensor { order, .. } = &k.params[tensor].kind else {
        return 16;
    };
    // The contiguous axis is the last for row-major tensors, the first for column-major.
    let outer = match order {
        phobos_ir::MemOrder::RowMajor => 0..rank.saturating_sub(1),
        phobos_ir::MemOrder::ColMajor => 1.min(rank)..rank,
    };
    outer
        .filter_map(|axis| crate::mainloop::stride_align_if_known(k, tensor, axis))
        .map(i64::from)
        .min()
        .unwrap_or(16)
}
