//! CUDA C++ sources on the GPU back end: a `.cu` kernel at a point is the file as written,
//! compiled by NVRTC with `-DNAME=value` for each name of the point (so `__launch_bounds__`,
//! template arguments and array sizes take the point's values). Nothing is generated: the
//! launch follows the ABI of `phobos_gpu::abi` (the `@params` in order, then one `int` per
//! runtime dim), with the block and grid of `@launch` and `@grid`.

use phobos_cuda::Emitted;
use phobos_ir::Kernel;

/// The `-D` definitions of a point, in the space's order.
pub fn defines(kernel: &Kernel) -> Vec<(String, Option<String>)> {
    kernel
        .point
        .0
        .iter()
        .map(|(n, v)| (n.to_string(), Some(v.to_string())))
        .collect()
}

/// The `.cu` text as the compiler's input, with the launch facts of a plain kernel.
pub fn emitted(kernel: &Kernel, text: &str, tag: Option<&str>) -> Emitted {
    let mut source = text.to_string();
    if let Some(tag) = tag {
        source.push_str(&format!("\n// generator tag: {tag}\n"));
    }
    Emitted {
        source,
        entry: kernel.name.clone(),
        headers: Vec::new(),
        dynamic_smem_bytes: 0,
        threads: kernel.launch.threads,
        max_regs: kernel.launch.max_regs,
        notes: Vec::new(),
        dots: Vec::new(),
        loops: Vec::new(),
        masks: Vec::new(),
        gemms: Vec::new(),
        row_smem: Vec::new(),
        sum_exp: Vec::new(),
        rows_ahead: None,
        schedule: phobos_cuda::Schedule::OneBlockPerTile,
        c_store: None,
        tma: Vec::new(),
        zero_before_launch: Vec::new(),
        split_refused: None,
        split_workspace: None,
        grid_z: 1,
        persistent: false,
        cluster: 1,
        cluster_refused: None,
        row_split: None,
    }
}

/// The entry symbol of kernel `name` in compiled PTX: `name` itself for an `extern "C"`
/// function, else the one mangled entry of a function of that name (`_Z<len><name>..`, a
/// template instantiated once).
pub fn entry(ptx: &str, name: &str) -> Result<String, String> {
    let entries: Vec<&str> = ptx
        .lines()
        .filter_map(|l| {
            // `.visible .entry name(`, `.weak .entry name(` (a template instantiation).
            let l = l.trim_start();
            if !l.starts_with('.') {
                return None;
            }
            let rest = &l[l.find(".entry ")? + ".entry ".len()..];
            Some(rest.split(['(', ' ']).next().unwrap_or(rest))
        })
        .collect();
    if entries.contains(&name) {
        return Ok(name.to_string());
    }
    let mangled = format!("_Z{}{name}", name.len());
    let matching: Vec<&&str> = entries.iter().filter(|e| e.starts_with(&mangled)).collect();
    match matching.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(format!(
            "the compiled code has no kernel `{name}` (entries: {}); declare it \
             `extern \"C\" __global__`",
            if entries.is_empty() {
                "none".to_string()
            } else {
                entries.join(", ")
            }
        )),
        many => Err(format!(
            "several compiled kernels are named `{name}` ({}); declare it `extern \"C\"` or \
             instantiate one template",
            many.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_plain_and_mangled() {
        let ptx = ".visible .entry row_sum(\n.param .u64 p\n)\n\
                   .weak .entry _Z4heatILi32EEvPKfPf(\n";
        assert_eq!(entry(ptx, "row_sum").unwrap(), "row_sum");
        assert_eq!(entry(ptx, "heat").unwrap(), "_Z4heatILi32EEvPKfPf");
        let e = entry(ptx, "saxpy").unwrap_err();
        assert!(e.contains("row_sum, _Z4heat"), "{e}");
        let two = format!("{ptx}.visible .entry _Z4heatILi64EEvPKfPf(\n");
        assert!(entry(&two, "heat").unwrap_err().contains("several"));
    }
}
