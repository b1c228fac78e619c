//! SplitMix64, the one small deterministic generator every tool draws from: random test
//! inputs (`phobos run`, the tuner's checks), block samples of the interpreter and the fuzz
//! corpora. The numbers need to be reproducible on every machine, not secret, and a dozen lines
//! need no dependency.

/// The golden-ratio increment of the counter.
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64 (Steele, Lea and Flood): a counter run through a mixer, so any output can also
/// be computed on its own ([`SplitMix64::at`]), and large tensors filled in parallel get the
/// values of one sequential pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64(pub u64);

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl SplitMix64 {
    /// The next output.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        mix(self.0)
    }

    /// The `i`-th output (0-based) of the stream seeded with `seed`.
    pub fn at(seed: u64, i: u64) -> u64 {
        mix(seed.wrapping_add(i.wrapping_add(1).wrapping_mul(GAMMA)))
    }

    /// A value in `0..n` (`0` when `n` is 0); the modulo bias is irrelevant for test inputs.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_stream_and_random_access_agree() {
        // The first outputs of SplitMix64 seeded with 0, as the reference implementation gives.
        let mut r = SplitMix64(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        let mut s = SplitMix64(42);
        for i in 0..100 {
            assert_eq!(s.next_u64(), SplitMix64::at(42, i), "output {i}");
        }
        assert_eq!(SplitMix64(7).below(0), 0);
        let mut p = SplitMix64(3);
        assert!((0..50).all(|_| ["a", "b"].contains(p.pick(&["a", "b"]))));
    }
}
