//! The search space of one run: the kernel's `@autotune` product with `--autotune` pins applied.

use phobos_check::{PinError, Space};
use phobos_ir::Point;

/// A space after pins: each pinned name has exactly its pinned value.
#[derive(Clone, Debug, PartialEq)]
pub struct Pinned {
    /// The declared space, unpinned (what the user sees as the choices).
    pub declared: Space,
    /// The space left to search.
    pub space: Space,
    /// The names the user pinned, with their values, in the order given.
    pub pins: Vec<(String, i64)>,
}

impl Pinned {
    /// Applies pins; only declared names may be pinned.
    pub fn new(declared: &Space, pins: &[(String, i64)]) -> Result<Pinned, PinError> {
        Ok(Pinned {
            space: declared.pin(pins)?,
            declared: declared.clone(),
            pins: pins.to_vec(),
        })
    }

    /// Number of points left to search.
    pub fn size(&self) -> u128 {
        self.space.size()
    }

    /// Every point left, the first name varying slowest.
    pub fn points(&self) -> Vec<Point> {
        self.space.points().collect()
    }

    /// The point the winner is compared against: each name's default (first) choice, or its
    /// pinned value.
    pub fn default_point(&self) -> Point {
        self.space.default_point()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use phobos_check::{parse_pins, Name};

    fn space() -> Space {
        let name = |n: &str, c: &[i64]| Name {
            name: n.into(),
            choices: c.to_vec(),
            span: Default::default(),
        };
        Space {
            names: vec![name("TILE_M", &[32, 64, 128]), name("TILE_K", &[8, 16, 32])],
        }
    }

    #[test]
    fn product_in_declaration_order() {
        let p = Pinned::new(&space(), &[]).unwrap();
        assert_eq!(p.size(), 9);
        let pts = p.points();
        assert_eq!(pts.len(), 9);
        assert_eq!(pts[0].to_pins(), "TILE_M=32 TILE_K=8");
        assert_eq!(pts[1].to_pins(), "TILE_M=32 TILE_K=16");
        assert_eq!(pts[8].to_pins(), "TILE_M=128 TILE_K=32");
        assert_eq!(p.default_point(), pts[0]);
    }

    #[test]
    fn pins_restrict_and_all_pinned_is_one_point() {
        let p = Pinned::new(&space(), &parse_pins("TILE_K=16").unwrap()).unwrap();
        assert_eq!(p.size(), 3);
        assert!(p.points().iter().all(|pt| pt.get("TILE_K") == Some(16)));
        let p = Pinned::new(&space(), &parse_pins("TILE_M=64,TILE_K=16").unwrap()).unwrap();
        assert_eq!(p.points(), vec![p.default_point()]);
        assert_eq!(p.default_point().to_pins(), "TILE_M=64 TILE_K=16");
    }

    #[test]
    fn undeclared_pin_lists_declared_names() {
        let e = Pinned::new(&space(), &parse_pins("TILE_N=64").unwrap()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`TILE_N` is not declared in @autotune (declared: TILE_M, TILE_K)"
        );
    }
}
