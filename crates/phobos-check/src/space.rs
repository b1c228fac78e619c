//! The shape environment: the names `@autotune` declares and their choices (seed 000's table).
//!
//! | written               | choices           | rule                                         |
//! | --------------------- | ----------------- | -------------------------------------------- |
//! | `TILE_M in [32, 128]` | 32, 64, 128       | two values are inclusive bounds, doubling    |
//! | `TILE_K in [8, 16, 32]` | 8, 16, 32       | three or more values are the explicit list   |
//! | `BLOCK in [16, 8192]` | 16, 32, .., 8192  | doubling from the lower bound                |
//! | `X in [16, 48]`       | 16, 32, 48        | the upper bound is always included           |
//! | `D in [64]`           | 64                | one value: a fixed constant                  |
//! | `D in [64, 64]`       | 64                | equal bounds: the inclusive range {64}       |
//! | `CAUSAL in {0, 1}`    | 0, 1              | braces: the values listed, any number        |
//!
//! The first choice of each name is its default. Doubling stops at the upper bound, so it can
//! never overflow `i64` (every doubled value is below the bound, itself an `i64`).

use crate::codes;
use phobos_ir::Point;
use phobos_syntax::ast::{Attr, AttrKind, AutotuneEntry, ChoiceList, Expr, ExprKind, UnOp};
use phobos_syntax::{Diagnostic, Span};
use serde::Serialize;

/// One declared name with its choices; the first choice is the default.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Name {
    pub name: String,
    pub choices: Vec<i64>,
    #[serde(skip)]
    pub span: Span,
}

/// The space of a kernel: the product of its names' choices.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Space {
    pub names: Vec<Name>,
}

/// Why a pin (`--autotune "A=1 B=2"`) could not be applied.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PinError {
    #[error("`{text}` is not of the form NAME=VALUE")]
    Malformed { text: String },
    #[error("`{name}` is not declared in @autotune (declared: {declared})")]
    Undeclared { name: String, declared: String },
    #[error("`{name}` is pinned twice")]
    Duplicate { name: String },
}

impl Space {
    /// Builds the space from every `@autotune` attribute of a kernel, in order. Entries with
    /// errors are reported to `diags` and left out, so the rest of the kernel can still be checked.
    pub fn from_attrs(attrs: &[Attr], diags: &mut Vec<Diagnostic>) -> Space {
        let mut space = Space::default();
        for attr in attrs {
            if let AttrKind::Autotune(entries) = &attr.kind {
                for entry in entries {
                    if let Some(first) = space.get(&entry.name.name) {
                        diags.push(
                            Diagnostic::error(
                                codes::AUTOTUNE_DUP_NAME,
                                format!("`{}` is declared twice in @autotune", entry.name.name),
                                entry.name.span,
                            )
                            .with_label("declared again here")
                            .with_secondary(first.span, "first declared here")
                            .with_help("keep one entry per name"),
                        );
                        continue;
                    }
                    if let Some(choices) = entry_choices(entry, diags) {
                        space.names.push(Name {
                            name: entry.name.name.clone(),
                            choices,
                            span: entry.name.span,
                        });
                    }
                }
            }
        }
        space
    }

    /// The declared name, if any.
    pub fn get(&self, name: &str) -> Option<&Name> {
        self.names.iter().find(|n| n.name == name)
    }

    /// The number of points (1 for a kernel without `@autotune`); saturates at `u128::MAX`.
    pub fn size(&self) -> u128 {
        self.names
            .iter()
            .fold(1u128, |acc, n| acc.saturating_mul(n.choices.len() as u128))
    }

    /// Every name at its first choice.
    pub fn default_point(&self) -> Point {
        Point(
            self.names
                .iter()
                .map(|n| (n.name.clone(), n.choices.first().copied().unwrap_or(0)))
                .collect(),
        )
    }

    /// The point at `index` in the order of [`Space::points`], without enumerating the ones
    /// before it; `None` past the end. Strategies sample huge spaces through it.
    pub fn point_at(&self, index: u128) -> Option<Point> {
        if index >= self.size() || self.names.iter().any(|n| n.choices.is_empty()) {
            return None;
        }
        let mut rest = index;
        let mut values = vec![0; self.names.len()];
        // Mixed radix, last name fastest.
        for (i, n) in self.names.iter().enumerate().rev() {
            let radix = n.choices.len() as u128;
            values[i] = n.choices[(rest % radix) as usize];
            rest /= radix;
        }
        Some(Point(
            self.names
                .iter()
                .zip(values)
                .map(|(n, v)| (n.name.clone(), v))
                .collect(),
        ))
    }

    /// Every point, the first name varying slowest (the last name fastest).
    pub fn points(&self) -> Points<'_> {
        let empty = self.names.iter().any(|n| n.choices.is_empty());
        Points {
            space: self,
            digits: vec![0; self.names.len()],
            done: empty,
        }
    }

    /// The declared names, comma-separated (for messages), or `none`.
    pub fn declared(&self) -> String {
        if self.names.is_empty() {
            return "none".to_string();
        }
        self.names
            .iter()
            .map(|n| n.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The space with each pinned name reduced to its pinned value (any integer is allowed,
    /// not only a declared choice).
    pub fn pin(&self, pins: &[(String, i64)]) -> Result<Space, PinError> {
        self.check_pins(pins)?;
        let mut space = self.clone();
        for (name, value) in pins {
            if let Some(n) = space.names.iter_mut().find(|n| &n.name == name) {
                n.choices = vec![*value];
            }
        }
        Ok(space)
    }

    /// The default point with the pinned names overridden.
    pub fn bind(&self, pins: &[(String, i64)]) -> Result<Point, PinError> {
        Ok(self.pin(pins)?.default_point())
    }

    fn check_pins(&self, pins: &[(String, i64)]) -> Result<(), PinError> {
        for (i, (name, _)) in pins.iter().enumerate() {
            if self.get(name).is_none() {
                return Err(PinError::Undeclared {
                    name: name.clone(),
                    declared: self.declared(),
                });
            }
            if pins[..i].iter().any(|(n, _)| n == name) {
                return Err(PinError::Duplicate { name: name.clone() });
            }
        }
        Ok(())
    }
}

/// Iterator over the points of a [`Space`] (see [`Space::points`]).
pub struct Points<'a> {
    space: &'a Space,
    digits: Vec<usize>,
    done: bool,
}

impl Iterator for Points<'_> {
    type Item = Point;

    fn next(&mut self) -> Option<Point> {
        if self.done {
            return None;
        }
        let names = &self.space.names;
        let point = Point(
            names
                .iter()
                .zip(&self.digits)
                .map(|(n, &d)| (n.name.clone(), n.choices[d]))
                .collect(),
        );
        // Odometer, last name fastest.
        self.done = true;
        for i in (0..names.len()).rev() {
            self.digits[i] += 1;
            if self.digits[i] < names[i].choices.len() {
                self.done = false;
                break;
            }
            self.digits[i] = 0;
        }
        Some(point)
    }
}

/// Parses pins: `"A=1 B=2"`, `"A=1,B=2"` or `"A = 1, B = -2"`.
pub fn parse_pins(text: &str) -> Result<Vec<(String, i64)>, PinError> {
    let mut pins = Vec::new();
    let mut rest = text.trim_start_matches(is_sep);
    while !rest.is_empty() {
        let malformed = |r: &str| PinError::Malformed {
            text: r.split(is_sep).next().unwrap_or(r).to_string(),
        };
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..name_len];
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(malformed(rest));
        }
        let after = rest[name_len..].trim_start();
        let Some(after) = after.strip_prefix('=') else {
            return Err(malformed(rest));
        };
        let after = after.trim_start();
        let value_len = after.find(is_sep).unwrap_or(after.len());
        let value = after[..value_len]
            .parse::<i64>()
            .map_err(|_| PinError::Malformed {
                text: format!("{name}={}", &after[..value_len]),
            })?;
        pins.push((name.to_string(), value));
        rest = after[value_len..].trim_start_matches(is_sep);
    }
    Ok(pins)
}

fn is_sep(c: char) -> bool {
    c == ',' || c.is_whitespace()
}

/// An integer literal, possibly negated; `None` for anything else.
fn int_value(e: &Expr) -> Option<i64> {
    match &e.kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Unary { op: UnOp::Neg, arg } => int_value(arg)?.checked_neg(),
        _ => None,
    }
}

/// The choices of one entry by seed 000's rules, or `None` after reporting why not.
fn entry_choices(entry: &AutotuneEntry, diags: &mut Vec<Diagnostic>) -> Option<Vec<i64>> {
    let name = &entry.name.name;
    let mut values = Vec::with_capacity(entry.values.len());
    let mut ok = true;
    for v in &entry.values {
        match int_value(v) {
            Some(i) => values.push(i),
            None => {
                ok = false;
                diags.push(
                    Diagnostic::error(
                        codes::AUTOTUNE_NOT_INT,
                        format!("@autotune values must be integer literals (in `{name}`)"),
                        v.span,
                    )
                    .with_label("not an integer")
                    .with_help("write the value as an integer, e.g. `64`"),
                );
            }
        }
    }
    if !ok {
        return None;
    }
    if values.is_empty() {
        diags.push(
            Diagnostic::error(
                codes::AUTOTUNE_EMPTY,
                format!("`{name}` has no choices"),
                entry.list_span,
            )
            .with_label("empty list")
            .with_help(
                "give one value for a constant (`[64]`), two for a doubling range \
                 (`[32, 128]`), three or more for an explicit list, or the choices in braces \
                 (`{0, 1}`)",
            ),
        );
        return None;
    }
    match (entry.list, values.as_slice()) {
        (ChoiceList::Brackets, [v]) => Some(vec![*v]),
        (ChoiceList::Brackets, [lo, hi]) => doubling(entry, *lo, *hi, diags),
        _ => {
            for (i, v) in values.iter().enumerate() {
                if let Some(j) = values[..i].iter().position(|w| w == v) {
                    diags.push(
                        Diagnostic::error(
                            codes::AUTOTUNE_DUP_VALUE,
                            format!("`{name}` lists the value {v} twice"),
                            entry.values[i].span,
                        )
                        .with_label("duplicated value")
                        .with_secondary(entry.values[j].span, "first listed here")
                        .with_help("each choice is compiled once; remove the duplicate"),
                    );
                    return None;
                }
            }
            Some(values)
        }
    }
}

/// `[lo, hi]`: lo, 2 lo, 4 lo, .. while below hi, then hi itself (`[v, v]` is {v}).
fn doubling(
    entry: &AutotuneEntry,
    lo: i64,
    hi: i64,
    diags: &mut Vec<Diagnostic>,
) -> Option<Vec<i64>> {
    let name = &entry.name.name;
    let (lo_span, hi_span) = (entry.values[0].span, entry.values[1].span);
    if lo < 1 {
        diags.push(
            Diagnostic::error(
                codes::AUTOTUNE_LOW_BOUND,
                format!(
                    "the lower bound of `{name}` is {lo}; a doubling range starts at 1 or more"
                ),
                lo_span,
            )
            .with_label("below 1")
            .with_help(format!(
                "doubling from {lo} never reaches {hi}; start at 1, or list the choices in braces: \
                 `{{{lo}, {hi}}}`"
            )),
        );
        return None;
    }
    if hi < lo {
        diags.push(
            Diagnostic::error(
                codes::AUTOTUNE_BOUNDS_ORDER,
                format!("the upper bound of `{name}` ({hi}) is below its lower bound ({lo})"),
                hi_span,
            )
            .with_label("upper bound")
            .with_secondary(lo_span, "lower bound")
            .with_help(format!(
                "write `[{hi}, {lo}]` for the range, or `{{{lo}, {hi}}}` for these two choices in this order"
            )),
        );
        return None;
    }
    if hi == lo {
        diags.push(
            Diagnostic::warning(
                codes::AUTOTUNE_EQUAL_BOUNDS,
                format!("`{name}` in [{lo}, {hi}] is the one value {lo}"),
                entry.list_span,
            )
            .with_label("a range with equal bounds")
            .with_help(format!("write `{name} in [{lo}]` for a constant")),
        );
    }
    let mut choices = Vec::new();
    let mut v = lo;
    while v < hi {
        choices.push(v);
        match v.checked_mul(2) {
            Some(next) => v = next,
            None => break,
        }
    }
    choices.push(hi);
    Some(choices)
}

#[cfg(test)]
mod tests;
