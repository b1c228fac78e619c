//! The search space of one run: the kernel's `@autotune` product with `--autotune` pins applied.

use phobos_check::{PinError, Space};
use phobos_ir::Point;
use rayon::prelude::*;
use std::collections::HashSet;

/// Spaces larger than this are not searched exhaustively unless `--max-points` bounds them:
/// each point is instantiated, compiled and timed, so more is a mistake, not a search.
pub const MAX_EXHAUSTIVE_POINTS: u128 = 1 << 16;

/// A product larger than [`MAX_EXHAUSTIVE_POINTS`] and at most this is walked to drop the points
/// outside the space (a `@where` over the point's names alone false) before it is counted: a
/// space declared as a wide product and narrowed by its `@where`s is searched without flags when
/// few enough points are left. Larger products are counted as declared.
pub const MAX_WALKED_POINTS: u128 = 1 << 20;

/// Whether a point is inside the space: the front end's [`crate::backend::Frontend::outside_space`],
/// negated. Asked only of products walked under [`MAX_WALKED_POINTS`].
pub type Inside<'a> = &'a (dyn Fn(&Point) -> bool + Sync);

/// How a run picks the points it searches from the space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Every point in space order (the first `max_points` of them when bounded).
    #[default]
    Exhaustive,
    /// `max_points` distinct points drawn uniformly, seeded by the run's seed.
    Random,
    /// Simulated annealing over neighbouring points (`strategy::anneal`), batch by batch.
    Anneal,
    /// A surrogate model of the time (`strategy::model`), batch by batch.
    Model,
}

impl Strategy {
    /// `exhaustive`, `random`, `anneal` or `model`.
    pub fn parse(s: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|k| k.name() == s)
    }

    pub const ALL: [Strategy; 4] = [
        Strategy::Exhaustive,
        Strategy::Random,
        Strategy::Anneal,
        Strategy::Model,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Exhaustive => "exhaustive",
            Strategy::Random => "random",
            Strategy::Anneal => "anneal",
            Strategy::Model => "model",
        }
    }

    /// Whether it picks its points as results come in (the engine measures it batch by
    /// batch) rather than up front.
    pub fn adaptive(self) -> bool {
        matches!(self, Strategy::Anneal | Strategy::Model)
    }

    /// Whether a run with this `--max-points` picks its points as results come in: the
    /// adaptive strategies always; `random` without `--max-points` (its default budget, a
    /// uniform sample then refinement around the best points, `strategy::refine`), while
    /// `random --max-points N` draws its N points up front (shards split them, on a space
    /// of any size).
    pub fn searches_adaptively(self, max_points: Option<usize>) -> bool {
        self.adaptive() || (self == Strategy::Random && max_points.is_none())
    }
}

/// Why no points were picked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    #[error(
        "the space has {size} points, more than {MAX_EXHAUSTIVE_POINTS} searched exhaustively; \
         bound the search with --max-points N (and --strategy random to sample the whole \
         space), or pin names with --autotune"
    )]
    TooLarge { size: u128 },
    #[error("--strategy random needs --max-points N: how many points to draw")]
    RandomNeedsMax,
    #[error(
        "the space has {size} points, more than the {MAX_EXHAUSTIVE_POINTS} --strategy {} \
         chooses among; pin names with --autotune, or use --strategy random --max-points N",
        strategy.name()
    )]
    TooLargeFor { size: u128, strategy: Strategy },
}

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

    /// Every point left, the first name varying slowest. A run takes [`Pinned::select`], which
    /// never lists a huge space; `self.space.points()` walks it lazily.
    pub fn points(&self) -> Vec<Point> {
        self.space.points().collect()
    }

    /// The points a run searches: all of them, the first `max_points`, or a random sample,
    /// found by index so that a huge space is never enumerated. An adaptive strategy's
    /// candidates are every point (it picks among them as it goes). A product above
    /// [`MAX_EXHAUSTIVE_POINTS`] is first walked for the points `inside` keeps
    /// ([`MAX_WALKED_POINTS`]), and those are the space.
    pub fn select(
        &self,
        strategy: Strategy,
        max_points: Option<usize>,
        seed: u64,
        inside: Inside<'_>,
    ) -> Result<Vec<Point>, SelectError> {
        if strategy.adaptive() {
            return self.candidates_of(strategy, inside);
        }
        let source = self.source(inside);
        let size = source.size();
        let take = match (strategy, max_points) {
            (Strategy::Random, None) => return Err(SelectError::RandomNeedsMax),
            (Strategy::Exhaustive, None) if size > MAX_EXHAUSTIVE_POINTS => {
                return Err(SelectError::TooLarge { size })
            }
            (_, None) => size,
            (_, Some(n)) => size.min(n as u128),
        };
        if strategy != Strategy::Random || take == size {
            return Ok(source.first(take as usize));
        }
        // Distinct indices drawn until there are enough; `take < size`, so this ends, and
        // quickly when `take` is a small part of the space (the case it exists for).
        // The checks' SplitMix64 stream (`SplitMix64::at`), keyed apart from theirs.
        let key = seed ^ 0x5eed_5eed_5eed_5eed;
        let mut drawn = 0u64;
        let mut next = || {
            drawn += 1;
            phobos_ir::rng::SplitMix64::at(key, drawn - 1)
        };
        let mut seen = HashSet::new();
        let mut indices = Vec::new();
        while (indices.len() as u128) < take {
            let wide = ((next() as u128) << 64) | next() as u128;
            let i = wide % size;
            if seen.insert(i) {
                indices.push(i);
            }
        }
        indices.sort_unstable();
        Ok(indices.into_iter().filter_map(|i| source.at(i)).collect())
    }

    /// Every point, for a strategy that picks among them as results come in (up to
    /// [`MAX_EXHAUSTIVE_POINTS`], after the walk [`Pinned::select`] describes).
    pub fn candidates_of(
        &self,
        strategy: Strategy,
        inside: Inside<'_>,
    ) -> Result<Vec<Point>, SelectError> {
        let source = self.source(inside);
        let size = source.size();
        match strategy {
            _ if size <= MAX_EXHAUSTIVE_POINTS => Ok(source.first(size as usize)),
            Strategy::Random => Err(SelectError::RandomNeedsMax),
            _ => Err(SelectError::TooLargeFor { size, strategy }),
        }
    }

    /// The space a search picks from: the product itself, or, for a product walked under
    /// [`MAX_WALKED_POINTS`], the list of its points inside.
    fn source(&self, inside: Inside<'_>) -> Source<'_> {
        let size = self.size();
        if size <= MAX_EXHAUSTIVE_POINTS || size > MAX_WALKED_POINTS {
            return Source::Product(&self.space, size);
        }
        let space = &self.space;
        let mut kept: Vec<(u128, Point)> = (0..size as u64)
            .into_par_iter()
            .filter_map(|i| space.point_at(i as u128).map(|p| (i as u128, p)))
            .filter(|(_, p)| inside(p))
            .collect();
        kept.sort_unstable_by_key(|(i, _)| *i);
        Source::Walked(kept.into_iter().map(|(_, p)| p).collect())
    }

    /// The point the winner is compared against: each name's default (first) choice, or its
    /// pinned value.
    pub fn default_point(&self) -> Point {
        self.space.default_point()
    }
}

/// What [`Pinned::select`] picks from, in space order.
enum Source<'a> {
    /// The whole product, of this many points, found by index.
    Product(&'a Space, u128),
    /// The points of a walked product that are inside the space.
    Walked(Vec<Point>),
}

impl Source<'_> {
    fn size(&self) -> u128 {
        match self {
            Source::Product(_, size) => *size,
            Source::Walked(points) => points.len() as u128,
        }
    }

    fn first(self, n: usize) -> Vec<Point> {
        match self {
            Source::Product(space, _) => space.points().take(n).collect(),
            Source::Walked(mut points) => {
                points.truncate(n);
                points
            }
        }
    }

    fn at(&self, i: u128) -> Option<Point> {
        match self {
            Source::Product(space, _) => space.point_at(i),
            Source::Walked(points) => points.get(i as usize).cloned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use phobos_check::{parse_pins, Name};

    /// Every point inside the space.
    const ALL: Inside<'static> = &|_| true;

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

    fn huge() -> Pinned {
        let names = (0..12)
            .map(|i| phobos_check::Name {
                name: format!("N{i}"),
                choices: (1..=8).collect(),
                span: Default::default(),
            })
            .collect();
        Pinned::new(&Space { names }, &[]).unwrap()
    }

    #[test]
    fn a_huge_space_asks_for_a_bound_and_is_sampled_by_index() {
        let p = huge();
        assert_eq!(
            p.select(Strategy::Exhaustive, None, 0, ALL),
            Err(SelectError::TooLarge {
                size: 8u128.pow(12)
            })
        );
        assert_eq!(
            p.select(Strategy::Random, None, 0, ALL),
            Err(SelectError::RandomNeedsMax)
        );
        let first = p.select(Strategy::Exhaustive, Some(3), 0, ALL).unwrap();
        assert_eq!(first, p.space.points().take(3).collect::<Vec<_>>());
        let a = p.select(Strategy::Random, Some(16), 7, ALL).unwrap();
        assert_eq!(a.len(), 16);
        assert_eq!(
            a,
            p.select(Strategy::Random, Some(16), 7, ALL).unwrap(),
            "seeded"
        );
        assert_ne!(a, p.select(Strategy::Random, Some(16), 8, ALL).unwrap());
        let distinct: HashSet<String> = a.iter().map(|pt| pt.to_pins()).collect();
        assert_eq!(distinct.len(), 16);
        // Drawn from the whole space, not its first corner.
        assert!(a.iter().any(|pt| pt.get("N0") != Some(1)), "{a:?}");
    }

    #[test]
    fn random_without_a_bound_searches_adaptively_among_every_point() {
        assert!(Strategy::Random.searches_adaptively(None));
        assert!(!Strategy::Random.searches_adaptively(Some(8)));
        assert!(Strategy::Model.searches_adaptively(Some(8)));
        assert!(!Strategy::Exhaustive.searches_adaptively(None));
        let p = Pinned::new(&space(), &[]).unwrap();
        assert_eq!(p.candidates_of(Strategy::Random, ALL).unwrap(), p.points());
        assert_eq!(
            huge().candidates_of(Strategy::Random, ALL),
            Err(SelectError::RandomNeedsMax)
        );
        assert_eq!(
            huge().candidates_of(Strategy::Anneal, ALL),
            Err(SelectError::TooLargeFor {
                size: 8u128.pow(12),
                strategy: Strategy::Anneal
            })
        );
    }

    #[test]
    fn a_bound_at_or_above_the_size_takes_every_point() {
        let p = Pinned::new(&space(), &[]).unwrap();
        let all = p.points();
        assert_eq!(p.select(Strategy::Random, Some(9), 1, ALL).unwrap(), all);
        assert_eq!(
            p.select(Strategy::Exhaustive, Some(100), 1, ALL).unwrap(),
            all
        );
        assert_eq!(p.select(Strategy::Exhaustive, None, 1, ALL).unwrap(), all);
    }

    type Keep = Box<dyn Fn(&Point) -> bool + Sync>;

    /// 2^17 points, over the exhaustive bound; `inside` keeps those whose first two names
    /// agree with `keep`.
    fn wide(keep: impl Fn(i64, i64) -> bool + Sync + 'static) -> (Pinned, Keep) {
        let names = (0..17)
            .map(|i| Name {
                name: format!("B{i}"),
                choices: vec![0, 1],
                span: Default::default(),
            })
            .collect();
        let inside = move |p: &Point| keep(p.get("B0").unwrap(), p.get("B1").unwrap());
        (
            Pinned::new(&Space { names }, &[]).unwrap(),
            Box::new(inside),
        )
    }

    #[test]
    fn a_product_narrowed_by_its_wheres_is_searched_without_a_bound() {
        // A quarter of 2^17 is left: searched whole, in space order, by every strategy.
        let (p, inside) = wide(|a, b| a == 1 && b == 0);
        let all = p.select(Strategy::Exhaustive, None, 0, &*inside).unwrap();
        assert_eq!(all.len(), 1 << 15);
        assert!(all
            .iter()
            .all(|pt| pt.get("B0") == Some(1) && pt.get("B1") == Some(0)));
        let expected: Vec<Point> = p.space.points().filter(|pt| inside(pt)).collect();
        assert_eq!(all, expected);
        assert_eq!(
            p.candidates_of(Strategy::Model, &*inside).unwrap(),
            expected
        );
        let drawn = p.select(Strategy::Random, Some(5), 3, &*inside).unwrap();
        assert_eq!(drawn.len(), 5);
        assert!(drawn.iter().all(&*inside), "{drawn:?}");
        assert_eq!(
            p.select(Strategy::Exhaustive, Some(2), 0, &*inside)
                .unwrap(),
            expected[..2]
        );
        // Three quarters are still too many: the error counts the points inside.
        let (p, inside) = wide(|a, b| a == 1 || b == 0);
        assert_eq!(
            p.select(Strategy::Exhaustive, None, 0, &*inside),
            Err(SelectError::TooLarge { size: 3 << 15 })
        );
    }

    #[test]
    fn a_product_past_the_walk_is_counted_as_declared() {
        let asked = std::sync::atomic::AtomicBool::new(false);
        let inside = |_: &Point| {
            asked.store(true, std::sync::atomic::Ordering::Relaxed);
            false
        };
        assert_eq!(
            huge().select(Strategy::Exhaustive, None, 0, &inside),
            Err(SelectError::TooLarge {
                size: 8u128.pow(12)
            })
        );
        assert!(
            !asked.load(std::sync::atomic::Ordering::Relaxed),
            "walked 8^12 points"
        );
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
