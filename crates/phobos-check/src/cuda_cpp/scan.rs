//! A light scan of CUDA C++ text: its `//` comments, the code with comments and literals
//! blanked, and the signatures of its `__global__` functions. Not a C++ parser: enough to find
//! attribute comments, the names the code mentions and each kernel's parameter list.

use phobos_ir::DType;
use phobos_syntax::Span;

/// One `//` comment: the offset just after the slashes, and its text to the end of the line.
#[derive(Clone, Debug, PartialEq)]
pub struct LineComment {
    pub start: usize,
    pub text: String,
    /// Nothing but spaces precedes it on its line.
    pub own_line: bool,
}

/// The text split into comments and code.
pub struct Scanned {
    pub comments: Vec<LineComment>,
    /// The text with every comment, string and character literal replaced by spaces (newlines
    /// kept), so byte offsets are the source's.
    pub code: String,
}

/// Splits `text` into `//` comments and code.
pub fn scan(text: &str) -> Scanned {
    let b = text.as_bytes();
    let mut code = b.to_vec();
    let mut comments = Vec::new();
    let mut i = 0;
    let blank = |code: &mut Vec<u8>, lo: usize, hi: usize| {
        for c in &mut code[lo..hi] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(b.len(), |n| i + n);
                let line_start = text[..i].rfind('\n').map_or(0, |n| n + 1);
                comments.push(LineComment {
                    start: i + 2,
                    text: text[i + 2..end].to_string(),
                    own_line: text[line_start..i].trim().is_empty(),
                });
                blank(&mut code, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |n| i + 2 + n + 2);
                blank(&mut code, i, end);
                i = end;
            }
            q @ (b'"' | b'\'') => {
                let mut j = i + 1;
                while j < b.len() && b[j] != q && b[j] != b'\n' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(b.len());
                blank(&mut code, i + 1, end.saturating_sub(1).max(i + 1));
                i = end;
            }
            _ => i += 1,
        }
    }
    Scanned {
        comments,
        // Only ASCII bytes were replaced by ASCII spaces inside whole characters' runs.
        code: String::from_utf8_lossy(&code).into_owned(),
    }
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Every identifier of `code` with its span.
pub fn identifiers(code: &str) -> Vec<(&str, Span)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if is_ident_start(b[i]) && (i == 0 || !is_ident(b[i - 1])) {
            let start = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            out.push((&code[start..i], Span::new(start, i)));
        } else {
            i += 1;
        }
    }
    out
}

/// One C++ parameter of a kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct CParam {
    /// The parameter as written (trimmed).
    pub text: String,
    pub span: Span,
    /// `T*` (or `T[]`).
    pub pointer: bool,
    /// `const T*`: the kernel only reads through it.
    pub const_pointee: bool,
    /// The element type, when the scan knows its spelling.
    pub dtype: Option<DType>,
}

/// A `__global__` function as the scan sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct CKernel {
    pub name: String,
    /// The name in the source.
    pub name_span: Span,
    /// Where `__global__` is.
    pub global_span: Span,
    /// The parameter list with its parentheses.
    pub params_span: Span,
    pub params: Vec<CParam>,
}

/// Attribute-like words skipped with their parenthesized arguments before the kernel's name.
const SKIPPED_WITH_ARGS: [&str; 4] = [
    "__launch_bounds__",
    "__cluster_dims__",
    "__attribute__",
    "__maxnreg__",
];

/// The end (exclusive) of the balanced group opening at `open`, or `None`.
fn close_of(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (j, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Every `__global__` function of the code: `Err(span)` for one whose name and parameter list
/// the scan cannot find (the span is its `__global__`).
pub fn kernels(code: &str) -> Vec<Result<CKernel, Span>> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (word, span) in identifiers(code) {
        if word != "__global__" {
            continue;
        }
        out.push(kernel_at(code, b, span).ok_or(span));
    }
    out
}

fn kernel_at(code: &str, b: &[u8], global: Span) -> Option<CKernel> {
    let mut i = global.hi as usize;
    let mut last: Option<(String, Span)> = None;
    while i < b.len() {
        let c = b[i];
        if is_ident_start(c) {
            let start = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            let word = &code[start..i];
            if SKIPPED_WITH_ARGS.contains(&word) {
                let open = i + code[i..].find(|c: char| !c.is_whitespace())?;
                if b[open] == b'(' {
                    i = close_of(b, open)?;
                }
                continue;
            }
            last = Some((word.to_string(), Span::new(start, i)));
        } else if c == b'(' {
            let (name, name_span) = last?;
            let close = close_of(b, i)?;
            let params = split_params(code, i + 1, close - 1);
            return Some(CKernel {
                name,
                name_span,
                global_span: global,
                params_span: Span::new(i, close),
                params,
            });
        } else if c == b';' || c == b'{' {
            return None;
        } else {
            i += 1;
        }
    }
    None
}

/// The parameters between `lo` and `hi`, split at top-level commas.
fn split_params(code: &str, lo: usize, hi: usize) -> Vec<CParam> {
    let b = code.as_bytes();
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, lo);
    for (j, &c) in b.iter().enumerate().take(hi).skip(lo) {
        match c {
            b'(' | b'<' | b'[' => depth += 1,
            b')' | b'>' | b']' => depth -= 1,
            b',' if depth == 0 => {
                parts.push((start, j));
                start = j + 1;
            }
            _ => {}
        }
    }
    parts.push((start, hi));
    let params: Vec<CParam> = parts
        .into_iter()
        .filter_map(|(s, e)| param(code, s, e))
        .collect();
    if params.len() == 1 && params[0].text == "void" {
        return Vec::new();
    }
    params
}

const QUALIFIERS: [&str; 6] = [
    "const",
    "volatile",
    "__restrict__",
    "__restrict",
    "restrict",
    "__grid_constant__",
];

/// Words that make up a builtin type's spelling (so an unnamed `unsigned int` keeps both).
const TYPE_WORDS: [&str; 7] = [
    "unsigned", "signed", "int", "long", "short", "char", "float",
];

fn param(code: &str, lo: usize, hi: usize) -> Option<CParam> {
    let raw = &code[lo..hi];
    let text = raw.trim();
    if text.is_empty() {
        return None;
    }
    let lead = raw.len() - raw.trim_start().len();
    let span = Span::new(lo + lead, lo + lead + text.len());
    let pointer = text.contains('*') || text.contains('[');
    let star = text.find(['*', '[']).unwrap_or(text.len());
    let words: Vec<&str> = identifiers(text).into_iter().map(|(w, _)| w).collect();
    let const_pointee = pointer
        && identifiers(&text[..star])
            .iter()
            .any(|(w, _)| *w == "const");
    let mut ty: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !QUALIFIERS.contains(w))
        .collect();
    // The last word is the parameter's name unless the type alone was written.
    if ty.len() > 1 && !TYPE_WORDS.contains(ty.last()?) {
        ty.pop();
    }
    Some(CParam {
        text: text.to_string(),
        span,
        pointer,
        const_pointee,
        dtype: c_dtype(&ty.join(" ")),
    })
}

/// The Phobos element type a C++ spelling passes (the launch ABI of `phobos_gpu::abi`).
pub fn c_dtype(spelling: &str) -> Option<DType> {
    Some(match spelling {
        "bool" => DType::Bool,
        "char" | "signed char" | "int8_t" => DType::I8,
        "unsigned char" | "uint8_t" => DType::U8,
        "int" | "signed" | "signed int" | "int32_t" => DType::I32,
        "unsigned" | "unsigned int" | "uint32_t" => DType::U32,
        "long" | "long int" | "long long" | "long long int" | "int64_t" => DType::I64,
        "__half" | "half" => DType::F16,
        "__nv_bfloat16" | "nv_bfloat16" => DType::BF16,
        "float" => DType::F32,
        "double" => DType::F64,
        "__nv_fp8_e4m3" => DType::F8E4M3,
        "__nv_fp8_e5m2" => DType::F8E5M2,
        _ => return None,
    })
}

/// How the C++ side spells a Phobos element type, for messages.
pub fn c_spelling(t: DType) -> &'static str {
    match t {
        DType::Bool => "bool",
        DType::I8 => "signed char",
        DType::U8 => "unsigned char",
        DType::I32 => "int",
        DType::U32 => "unsigned",
        DType::I64 => "long long",
        DType::F16 => "__half",
        DType::BF16 => "__nv_bfloat16",
        DType::F32 | DType::Tf32 => "float",
        DType::F64 => "double",
        DType::F8E4M3 => "__nv_fp8_e4m3",
        DType::F8E5M2 => "__nv_fp8_e5m2",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_literals_are_blanked_at_their_offsets() {
        let text = "int a; // @autotune(B in [1, 2])\nchar* s = \"__global__\"; /* x */ int b;\n";
        let s = scan(text);
        assert_eq!(s.code.len(), text.len());
        assert_eq!(s.comments.len(), 1);
        assert_eq!(s.comments[0].text, " @autotune(B in [1, 2])");
        assert!(!s.comments[0].own_line);
        assert!(!s.code.contains("__global__"));
        assert!(s.code.contains("int b;"));
    }

    #[test]
    fn a_kernel_signature_with_launch_bounds() {
        let code = "extern \"C\" __global__ void __launch_bounds__(BLOCK, MIN_B)\n\
                    reduce(const float* __restrict__ x, float *out, int n) { }";
        let s = scan(code);
        let ks = kernels(&s.code);
        let k = ks[0].as_ref().unwrap();
        assert_eq!(k.name, "reduce");
        assert_eq!(k.params.len(), 3);
        assert!(k.params[0].pointer && k.params[0].const_pointee);
        assert_eq!(k.params[0].dtype, Some(DType::F32));
        assert!(k.params[1].pointer && !k.params[1].const_pointee);
        assert_eq!(k.params[2].dtype, Some(DType::I32));
        assert!(!k.params[2].pointer);
        assert_eq!(&code[k.params[1].span.range()], "float *out");
    }

    #[test]
    fn unnamed_and_unknown_types() {
        let s = scan("__global__ void k(unsigned int, const __half* h, MyT* p) {}");
        let k = kernels(&s.code).remove(0).unwrap();
        assert_eq!(k.params[0].dtype, Some(DType::U32));
        assert_eq!(k.params[1].dtype, Some(DType::F16));
        assert_eq!(k.params[2].dtype, None);
        assert!(k.params[2].pointer);
    }

    #[test]
    fn a_declaration_without_parameters_is_not_a_kernel() {
        let s = scan("__global__ ;");
        assert!(kernels(&s.code)[0].is_err());
    }
}
