//! C++ names for the kernel's parameters, dims and locals: the source names where C++ allows
//! them, made unique (shadowed locals get `_2`, `_3`, ..).

use phobos_ir::Kernel;
use std::collections::HashSet;

/// Words a source name may not become: C++ keywords, CUDA built-ins, and the prelude's
/// namespace. Names starting with `ph_` are the generated code's own.
const RESERVED: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "asm",
    "auto",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "class",
    "const",
    "constexpr",
    "const_cast",
    "continue",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "nullptr",
    "operator",
    "or",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "while",
    "xor",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
    "min",
    "max",
    "abs",
    "exp",
    "log",
    "sqrt",
    "fma",
    "exp2",
    "rsqrt",
    "tanh",
    "log2",
    "log1p",
    "expm1",
    "sin",
    "cos",
    "erf",
    "floor",
    "ceil",
    "rint",
    "pow",
    "ph",
    "memcpy",
    "uint2",
    "uint4",
    "float2",
    "float4",
    "main",
];

/// The C++ names of a kernel's entities.
#[derive(Clone, Debug)]
pub struct Names {
    pub kernel: String,
    pub params: Vec<String>,
    pub dims: Vec<String>,
    pub locals: Vec<String>,
}

/// A legal C++ identifier close to `name`.
pub fn sanitize(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, 'v');
    }
    // Leading underscores and `ph_` belong to the implementation and the generated code.
    if s.starts_with('_') || s.starts_with("ph_") || RESERVED.contains(&s.as_str()) {
        s.insert_str(0, "v_");
    }
    s
}

impl Names {
    pub fn new(k: &Kernel) -> Names {
        let mut used = HashSet::new();
        let mut take = |name: &str| {
            let base = sanitize(name);
            let mut s = base.clone();
            let mut n = 2;
            while !used.insert(s.clone()) {
                s = format!("{base}_{n}");
                n += 1;
            }
            s
        };
        let kernel = take(&k.name);
        let params = k.params.iter().map(|p| take(&p.name)).collect();
        let dims = k.dims.iter().map(|d| take(&d.name)).collect();
        let locals = k.locals.iter().map(|l| take(&l.name)).collect();
        Names {
            kernel,
            params,
            dims,
            locals,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_reserved_and_internal_names() {
        assert_eq!(sanitize("acc"), "acc");
        assert_eq!(sanitize("int"), "v_int");
        assert_eq!(sanitize("ph"), "v_ph");
        assert_eq!(sanitize("ph_tmp"), "v_ph_tmp");
        assert_eq!(sanitize("_x"), "v__x");
        assert_eq!(sanitize("1a"), "v1a");
    }
}
