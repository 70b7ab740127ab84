//! Seedable random test data without an extra dependency: SplitMix64, and the seed of a run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

/// SplitMix64. Small and good enough for test data; a given seed always gives the same
/// sequence, so a printed seed replays a failure.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, n)`; `below(0)` is 0 rather than a division by zero.
    pub fn below(&mut self, n: u32) -> u32 {
        (self.next_u64() % u64::from(n.max(1))) as u32
    }

    /// [`Rng::below`] over the whole `u64` range.
    pub fn below_u64(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform in `[0, 1)`, from the top 53 bits (all an f64 mantissa holds).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

/// The seed of this run: `DRIVEGEN_TEST_SEED`, else the clock. Always printed, so that any
/// failure, even one that does not mention it, can be replayed.
pub fn seed() -> u64 {
    let s = match std::env::var("DRIVEGEN_TEST_SEED") {
        Ok(s) => s.trim().parse().expect("DRIVEGEN_TEST_SEED must be a u64"),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    };
    eprintln!("DRIVEGEN_TEST_SEED={s}");
    s
}
