//! A tiny deterministic pseudo-random generator (SplitMix64): the search and the instance
//! generator need reproducible randomness, never entropy.

/// SplitMix64: fast, well distributed, and fully determined by its seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

/// SplitMix64's step: the state advances by this constant with every number drawn, so the
/// `k`-th number ahead is known without drawing the ones before it.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function of a state.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A number in `0..n` from 64 random bits (0 when `n` is 0).
fn scale(bits: u64, n: usize) -> usize {
    ((u128::from(bits) * n as u128) >> 64) as usize
}

impl Rng {
    /// A generator that always yields the same sequence for the same seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        mix(self.0)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        scale(self.next_u64(), n)
    }

    /// What [`Rng::below`] would give as the `k`-th draw from now (0: the next), without
    /// drawing anything.
    pub fn peek_below(&self, k: u64, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        scale(mix(self.0.wrapping_add(GAMMA.wrapping_mul(k + 1))), n)
    }

    /// Moves on `k` draws, exactly as drawing `k` numbers and ignoring them would.
    pub fn skip(&mut self, k: u64) {
        self.0 = self.0.wrapping_add(GAMMA.wrapping_mul(k));
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn same_seed_same_sequence_and_bounded() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
            assert!(a.below(13) < 13);
            b.below(13);
        }
        assert_eq!(Rng::new(1).below(0), 0);
        // Peeking ahead and skipping give what drawing one by one gives.
        let mut c = Rng::new(11);
        let ahead: Vec<usize> = (0..5).map(|k| c.peek_below(k, 51)).collect();
        let mut d = Rng::new(11);
        assert_eq!(ahead, (0..5).map(|_| d.below(51)).collect::<Vec<_>>());
        c.skip(5);
        assert_eq!(c.next_u64(), d.next_u64());
    }
}
