//! A variant: what a host chooses besides the source — a point, element types for the type
//! parameters and memory orders for the tensors — built from the CLI strings.

use crate::module::KernelInfo;
use crate::space::{parse_pins, PinError};
use phobos_ir::{DType, MemOrder, Point};

/// One compiled instance of a kernel: a point, bound type parameters and tensor orders.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// One value per declared name, in declaration order.
    pub point: Point,
    /// One type per type parameter, in declaration order.
    pub types: Vec<(String, DType)>,
    /// One order per tensor parameter, in signature order.
    pub orders: Vec<(String, MemOrder)>,
}

/// Why a variant could not be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum VariantError {
    #[error(transparent)]
    Pin(#[from] PinError),
    #[error("`{name}` is not a type parameter of `{kernel}` (type parameters: {valid})")]
    UnknownTypeParam {
        name: String,
        kernel: String,
        valid: String,
    },
    #[error("unknown element type `{ty}` for `{name}` (valid: {valid})")]
    UnknownType {
        name: String,
        ty: String,
        valid: String,
    },
    #[error("the type parameter `{name}` has no default; bind it, e.g. --types \"{name}=f16\"")]
    Unbound { name: String },
    #[error("`{name}` is not a tensor parameter of `{kernel}` (tensors: {valid})")]
    UnknownTensor {
        name: String,
        kernel: String,
        valid: String,
    },
    #[error("unknown layout `{text}` for `{name}` (valid: row, col)")]
    UnknownLayout { name: String, text: String },
    #[error("`{text}` is not of the form NAME=VALUE")]
    Malformed { text: String },
    #[error("`{name}` is given twice")]
    Duplicate { name: String },
}

/// `A=x,B=y` or `A=x B=y` as name/value pairs (values are words, not only integers).
fn pairs(text: &str) -> Result<Vec<(String, String)>, VariantError> {
    let mut out: Vec<(String, String)> = Vec::new();
    // Allow spaces around `=` by gluing them before splitting on separators.
    let glued = text.split('=').map(str::trim).collect::<Vec<_>>().join("=");
    for item in glued
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
    {
        let Some((n, v)) = item.split_once('=') else {
            return Err(VariantError::Malformed {
                text: item.to_string(),
            });
        };
        if n.is_empty() || v.is_empty() || v.contains('=') {
            return Err(VariantError::Malformed {
                text: item.to_string(),
            });
        }
        if out.iter().any(|(o, _)| o == n) {
            return Err(VariantError::Duplicate {
                name: n.to_string(),
            });
        }
        out.push((n.to_string(), v.to_string()));
    }
    Ok(out)
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

impl KernelInfo {
    /// Every name at its first choice, every type parameter at its default, row-major tensors.
    pub fn default_variant(&self) -> Result<Variant, VariantError> {
        self.variant(None, None, None)
    }

    /// Binds type parameters from `--types "TA=bf16,TC=f32"` (defaults fill the rest).
    pub fn bind_types(&self, text: Option<&str>) -> Result<Vec<(String, DType)>, VariantError> {
        let given = pairs(text.unwrap_or(""))?;
        let names: Vec<&str> = self.type_params.iter().map(|(n, _)| n.as_str()).collect();
        let mut chosen = Vec::new();
        for (n, v) in &given {
            if !names.contains(&n.as_str()) {
                return Err(VariantError::UnknownTypeParam {
                    name: n.clone(),
                    kernel: self.name.clone(),
                    valid: list(&names),
                });
            }
            let t = DType::parse(v).ok_or_else(|| VariantError::UnknownType {
                name: n.clone(),
                ty: v.clone(),
                valid: DType::ALL.map(|t| t.name()).join(", "),
            })?;
            chosen.push((n.clone(), t));
        }
        self.type_params
            .iter()
            .map(|(n, default)| {
                let t = chosen
                    .iter()
                    .find(|(c, _)| c == n)
                    .map(|&(_, t)| t)
                    .or(*default);
                t.map(|t| (n.clone(), t))
                    .ok_or_else(|| VariantError::Unbound { name: n.clone() })
            })
            .collect()
    }

    /// Tensor orders from `--layout "B=col"` (row-major for the rest).
    pub fn bind_layout(&self, text: Option<&str>) -> Result<Vec<(String, MemOrder)>, VariantError> {
        let given = pairs(text.unwrap_or(""))?;
        let tensors = self.tensor_names();
        for (n, v) in &given {
            if !tensors.contains(&n.as_str()) {
                return Err(VariantError::UnknownTensor {
                    name: n.clone(),
                    kernel: self.name.clone(),
                    valid: list(&tensors),
                });
            }
            parse_order(v).ok_or_else(|| VariantError::UnknownLayout {
                name: n.clone(),
                text: v.clone(),
            })?;
        }
        Ok(tensors
            .iter()
            .map(|t| {
                let order = given
                    .iter()
                    .find(|(n, _)| n == t)
                    .and_then(|(_, v)| parse_order(v))
                    .unwrap_or_default();
                (t.to_string(), order)
            })
            .collect())
    }

    /// A variant from the CLI strings `--autotune`, `--types` and `--layout`.
    pub fn variant(
        &self,
        autotune: Option<&str>,
        types: Option<&str>,
        layout: Option<&str>,
    ) -> Result<Variant, VariantError> {
        let pins = parse_pins(autotune.unwrap_or(""))?;
        Ok(Variant {
            point: self.space.bind(&pins)?,
            types: self.bind_types(types)?,
            orders: self.bind_layout(layout)?,
        })
    }
}

impl Variant {
    /// A variant of `kernel` from the CLI strings (see [`KernelInfo::variant`]).
    pub fn new(
        kernel: &KernelInfo,
        autotune: Option<&str>,
        types: Option<&str>,
        layout: Option<&str>,
    ) -> Result<Variant, VariantError> {
        kernel.variant(autotune, types, layout)
    }

    /// The same variant at another point.
    pub fn at(&self, point: Point) -> Variant {
        Variant {
            point,
            ..self.clone()
        }
    }
}

/// `row`/`col` (also `row_major`, `col_major`, `r`, `c`).
fn parse_order(s: &str) -> Option<MemOrder> {
    match s.to_ascii_lowercase().as_str() {
        "row" | "row_major" | "rowmajor" | "r" => Some(MemOrder::RowMajor),
        "col" | "col_major" | "colmajor" | "column" | "c" => Some(MemOrder::ColMajor),
        _ => None,
    }
}
