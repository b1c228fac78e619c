//! Reading and writing NumPy `.npy` files for [`HostTensor`].
//!
//! Format versions 1.0, 2.0 and 3.0 are read; 1.0 is written (2.0 when the header does not fit).
//! Both byte orders and Fortran order are read; files are written little-endian in C order.
//!
//! Element types and their `descr`:
//!
//! | Phobos | descr | note |
//! | --- | --- | --- |
//! | bool, i8, u8, i32, u32, i64 | `|b1 |i1 |u1 <i4 <u4 <i8` | |
//! | f16, f32, f64 | `<f2 <f4 <f8` | |
//! | tf32 | `<f4` | stored as f32 |
//! | bf16 | `<u2` | the raw bit pattern (NumPy has no bfloat16) |
//! | f8e4m3, f8e5m2 | `|u1` | the raw bit pattern |
//!
//! **bf16 and fp8 tensors are written as their bit patterns**, so NumPy sees `uint16`/`uint8`
//! (view them with `a.view(ml_dtypes.bfloat16)` or `ml_dtypes.float8_e4m3fn`). Reading such a
//! file back needs the element type it holds: pass it as `expect` ([`from_npy`]); without it a
//! `<u2` file is refused with an error that says so, and `|u1` reads as u8.

use crate::dtype::DType;
use crate::host::HostTensor;
use std::path::Path;

/// Why an `.npy` file could not be read or written.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum NpyError {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("not an .npy file (the magic string `\\x93NUMPY` is missing)")]
    BadMagic,
    #[error("unsupported .npy format version {major}.{minor}")]
    BadVersion { major: u8, minor: u8 },
    #[error("malformed .npy header: {0}")]
    BadHeader(String),
    #[error("element type `{descr}` is not supported{hint}")]
    UnsupportedDType { descr: String, hint: String },
    #[error("the data holds {found} bytes, but shape {shape:?} of `{descr}` needs {expected}")]
    SizeMismatch {
        descr: String,
        shape: Vec<usize>,
        expected: usize,
        found: usize,
    },
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// The `descr` this crate writes for an element type (see the module docs).
pub fn descr(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "|b1",
        DType::I8 => "|i1",
        DType::U8 | DType::F8E4M3 | DType::F8E5M2 => "|u1",
        DType::I32 => "<i4",
        DType::U32 => "<u4",
        DType::I64 => "<i8",
        DType::F16 => "<f2",
        DType::BF16 => "<u2",
        DType::F32 | DType::Tf32 => "<f4",
        DType::F64 => "<f8",
    }
}

/// Whether a tensor of this type is stored as a raw bit pattern under an unsigned descr.
pub fn is_bit_pattern(dtype: DType) -> bool {
    matches!(dtype, DType::BF16 | DType::F8E4M3 | DType::F8E5M2)
}

/// The bytes of an `.npy` file holding `t` (C order, little-endian).
pub fn to_npy(t: &HostTensor) -> Vec<u8> {
    let shape = match t.shape.len() {
        0 => "()".to_string(),
        1 => format!("({},)", t.shape[0]),
        _ => format!(
            "({})",
            t.shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        descr(t.dtype),
        shape
    );
    // The whole preamble is padded to a multiple of 64 bytes and ends in a newline.
    let (version, len_bytes) = if dict.len() + 1 + MAGIC.len() + 4 <= u16::MAX as usize {
        (1u8, 2usize)
    } else {
        (2u8, 4usize)
    };
    let unpadded = MAGIC.len() + 2 + len_bytes + dict.len() + 1;
    let header_len = dict.len() + 1 + (64 - unpadded % 64) % 64;
    let mut out = Vec::with_capacity(MAGIC.len() + 8 + header_len + t.len() * 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(header_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(out.len() + header_len - dict.len() - 1, b' ');
    out.push(b'\n');
    out.extend_from_slice(&t.to_bytes());
    out
}

/// Parses the bytes of an `.npy` file. `expect` is the element type the caller wants; it is
/// needed to read bf16/fp8 bit patterns and picks tf32 for a `<f4` file, and is otherwise only a
/// hint (checking that the type matches is the caller's business).
pub fn from_npy(bytes: &[u8], expect: Option<DType>) -> Result<HostTensor, NpyError> {
    if bytes.len() < MAGIC.len() + 4 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(NpyError::BadMagic);
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (header_len, start): (usize, usize) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        _ => return Err(NpyError::BadVersion { major, minor }),
    };
    let end = start
        .checked_add(header_len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| NpyError::BadHeader("the header runs past the end of the file".into()))?;
    let text = std::str::from_utf8(&bytes[start..end])
        .map_err(|_| NpyError::BadHeader("the header is not text".into()))?;
    let header = parse_header(text)?;
    let (dtype, swap) = dtype_of(&header.descr, expect)?;
    let size = dtype.size_bytes();
    let data = &bytes[end..];
    // A header may claim any shape: its byte count is computed without overflow, and a shape
    // the data cannot fill is refused before anything is allocated for it.
    let expected = header
        .shape
        .iter()
        .try_fold(size, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            NpyError::BadHeader(format!(
                "the shape {:?} holds more bytes than any file",
                header.shape
            ))
        })?;
    if data.len() != expected {
        return Err(NpyError::SizeMismatch {
            descr: header.descr,
            shape: header.shape,
            expected,
            found: data.len(),
        });
    }
    let owned;
    let data = if swap && size > 1 {
        owned = data
            .chunks_exact(size)
            .flat_map(|c| c.iter().rev().copied())
            .collect::<Vec<u8>>();
        &owned[..]
    } else {
        data
    };
    let t = if header.fortran_order {
        HostTensor::from_bytes_col_major(dtype, &header.shape, data)
    } else {
        HostTensor::from_bytes(dtype, &header.shape, data)
    };
    // The length was checked above, so decoding cannot fail.
    t.ok_or_else(|| NpyError::BadHeader("the data does not fill the shape".into()))
}

/// Writes `t` to an `.npy` file.
pub fn write_npy(path: &Path, t: &HostTensor) -> Result<(), NpyError> {
    std::fs::write(path, to_npy(t)).map_err(|e| io_error(path, e))
}

/// Reads an `.npy` file (see [`from_npy`] for `expect`).
pub fn read_npy(path: &Path, expect: Option<DType>) -> Result<HostTensor, NpyError> {
    let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
    from_npy(&bytes, expect)
}

fn io_error(path: &Path, e: std::io::Error) -> NpyError {
    NpyError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// The element type of a descr, and whether its bytes must be swapped to little-endian.
fn dtype_of(descr: &str, expect: Option<DType>) -> Result<(DType, bool), NpyError> {
    let unsupported = |hint: &str| NpyError::UnsupportedDType {
        descr: descr.to_string(),
        hint: hint.to_string(),
    };
    let (order, code) = match descr.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, &descr[1..]),
        _ => ('=', descr),
    };
    let swap = order == '>' && cfg!(target_endian = "little")
        || order == '<' && cfg!(target_endian = "big");
    let dtype = match code {
        "b1" | "?" => DType::Bool,
        "i1" => DType::I8,
        "u1" => match expect {
            Some(t @ (DType::F8E4M3 | DType::F8E5M2)) => t,
            _ => DType::U8,
        },
        "i4" => DType::I32,
        "u4" => DType::U32,
        "i8" => DType::I64,
        "f2" => DType::F16,
        "f4" => match expect {
            Some(DType::Tf32) => DType::Tf32,
            _ => DType::F32,
        },
        "f8" => DType::F64,
        "u2" => match expect {
            Some(DType::BF16) => DType::BF16,
            _ => {
                return Err(unsupported(
                    " (uint16 is not a Phobos type; bf16 tensors are stored as uint16 bit \
                     patterns and read back only where bf16 is expected)",
                ))
            }
        },
        "i2" => return Err(unsupported(" (int16 is not a Phobos type: use int32)")),
        "u8" => return Err(unsupported(" (uint64 is not a Phobos type: use int64)")),
        _ => return Err(unsupported("")),
    };
    Ok((dtype, swap))
}

/// Parses the Python dict literal of an `.npy` header.
fn parse_header(text: &str) -> Result<Header, NpyError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let mut descr = None;
    let mut fortran_order = None;
    let mut shape = None;
    p.expect(b'{')?;
    loop {
        p.skip_ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.expect(b':')?;
        match key.as_str() {
            "descr" => descr = Some(p.string()?),
            "fortran_order" => fortran_order = Some(p.boolean()?),
            "shape" => shape = Some(p.tuple()?),
            other => return Err(NpyError::BadHeader(format!("unexpected key `{other}`"))),
        }
        p.skip_ws();
        if !p.eat(b',') {
            p.expect(b'}')?;
            break;
        }
    }
    let missing = |k: &str| NpyError::BadHeader(format!("the key `{k}` is missing"));
    Ok(Header {
        descr: descr.ok_or_else(|| missing("descr"))?,
        fortran_order: fortran_order.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
    })
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), NpyError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(NpyError::BadHeader(format!(
                "expected `{}` at byte {}",
                c as char, self.i
            )))
        }
    }

    fn string(&mut self) -> Result<String, NpyError> {
        self.skip_ws();
        let quote = match self.s.get(self.i) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => {
                return Err(NpyError::BadHeader(format!(
                    "expected a string at byte {} (structured dtypes are not supported)",
                    self.i
                )))
            }
        };
        let start = self.i + 1;
        let len = self.s[start..]
            .iter()
            .position(|&c| c == quote)
            .ok_or_else(|| NpyError::BadHeader("unterminated string".into()))?;
        self.i = start + len + 1;
        Ok(String::from_utf8_lossy(&self.s[start..start + len]).into_owned())
    }

    fn boolean(&mut self) -> Result<bool, NpyError> {
        self.skip_ws();
        for (word, v) in [("True", true), ("False", false)] {
            if self.s[self.i..].starts_with(word.as_bytes()) {
                self.i += word.len();
                return Ok(v);
            }
        }
        Err(NpyError::BadHeader("expected True or False".into()))
    }

    fn tuple(&mut self) -> Result<Vec<usize>, NpyError> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            if self.eat(b')') {
                return Ok(dims);
            }
            self.skip_ws();
            let start = self.i;
            while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                self.i += 1;
            }
            // Python 2 wrote long integers as `3L`.
            let digits = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
            let d = digits
                .parse::<usize>()
                .map_err(|_| NpyError::BadHeader(format!("bad extent at byte {start}")))?;
            dims.push(d);
            self.eat(b'L');
            if !self.eat(b',') {
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

#[cfg(test)]
#[path = "npy_tests.rs"]
mod tests;
