//! Deterministic tokens and random numbers.
//!
//! Everything the synthetic corpus draws comes from the run's seed and a name that says what is
//! being drawn ("agents/scene-0002", "sample/1/17"), never from a shared stream. Adding or
//! reordering draws in one place therefore leaves every other value unchanged, and work can be
//! split across threads without the result depending on who ran first.

use sha2::{Digest, Sha256};

/// The SHA-256 of the seed and a name; every token and stream below is cut from it.
fn digest(seed: u64, name: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"drivegen-synth\0");
    h.update(seed.to_le_bytes());
    h.update(name.as_bytes());
    h.finalize().into()
}

/// A 32-character lowercase hex token, as nuScenes uses for primary keys.
pub(crate) fn token(seed: u64, name: &str) -> String {
    let d = digest(seed, name);
    let mut s = String::with_capacity(32);
    for b in &d[..16] {
        s.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        s.push(char::from_digit(u32::from(b & 15), 16).unwrap_or('0'));
    }
    s
}

/// SplitMix64: tiny, fast and good enough for placing objects; not for cryptography.
#[derive(Debug, Clone)]
pub(crate) struct Rng {
    state: u64,
}

impl Rng {
    /// The stream named `name` under `seed`.
    pub fn new(seed: u64, name: &str) -> Self {
        let d = digest(seed, name);
        let mut b = [0u8; 8];
        b.copy_from_slice(&d[..8]);
        Self {
            state: u64::from_le_bytes(b),
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// Uniform integer in [0, n); 0 when n is 0.
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    #[cfg(test)]
    /// One element of a non-empty slice (the first when empty is impossible by construction).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_hex_stable_and_distinct() {
        let a = token(7, "sample/0/3");
        assert_eq!(a.len(), 32);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_eq!(a, token(7, "sample/0/3"));
        assert_ne!(a, token(8, "sample/0/3"));
        assert_ne!(a, token(7, "sample/0/4"));
    }

    #[test]
    fn rng_streams_are_independent_and_in_range() {
        let mut r = Rng::new(1, "x");
        let mut s = Rng::new(1, "y");
        assert_ne!(r.next_u64(), s.next_u64());
        for _ in 0..1000 {
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
            assert!(r.below(5) < 5);
            let x = r.range(-2.0, 3.0);
            assert!((-2.0..3.0).contains(&x));
        }
    }
}
