//! The counter-based generator every corruption draws from, on the CPU and in WGSL.
//!
//! A draw is a pure function of (key, stream, counter): the key comes from (seed, image id,
//! corruption, severity), the stream names what is drawn (a parameter, a pixel's noise, a
//! drop's position) and the counter indexes it (pixel, channel, drop). No state is carried
//! from one draw to the next, so an image's output does not depend on which other images
//! share its batch or in which order they run. Only wrapping u32 multiplies, xors and shifts
//! are used, so `kernels/corrupt_common.wgsl` computes the same bits.

/// Chris Wellons' `lowbias32` integer finaliser (a bijection on u32 with good avalanche).
#[inline]
pub const fn mix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// The two key words of one (seed, image, corruption, severity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub k0: u32,
    pub k1: u32,
}

/// FNV-1a over bytes, for turning ids into key material.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl Key {
    /// The key of `id` (an image id, or a frame id for per-frame decisions) under `seed`,
    /// corruption index `corruption` and `severity`.
    pub fn new(seed: u64, id: &str, corruption: u32, severity: u8) -> Key {
        let h = fnv1a(id.as_bytes());
        let a = mix32(seed as u32 ^ mix32((seed >> 32) as u32 ^ 0x9e37_79b9));
        let b = mix32(a ^ h as u32);
        let c = mix32(b ^ (h >> 32) as u32);
        let d = mix32(c ^ corruption.wrapping_mul(0x85eb_ca6b));
        let e = mix32(d ^ u32::from(severity).wrapping_mul(0xc2b2_ae35));
        Key { k0: d, k1: e }
    }

    /// The raw draw number `counter` of `stream`.
    #[inline]
    pub fn u32(&self, stream: u32, counter: u32) -> u32 {
        Self::draw(self.stream(stream), mix32(counter))
    }

    /// The part of [`Key::u32`] that depends on the stream alone: a loop that draws from many
    /// streams at one counter computes it once per stream, not once per draw.
    #[inline]
    pub fn stream(&self, stream: u32) -> u32 {
        mix32(self.k1 ^ mix32(self.k0 ^ mix32(stream)))
    }

    /// [`Key::u32`] from [`Key::stream`]`(stream)` and `mix32(counter)`.
    #[inline]
    pub fn draw(stream: u32, mixed_counter: u32) -> u32 {
        mix32(stream ^ mixed_counter)
    }

    /// A uniform f32 in [0, 1) with 24 random bits (exact in f32).
    #[inline]
    pub fn unit(&self, stream: u32, counter: u32) -> f32 {
        unit24(self.u32(stream, counter))
    }

    /// A uniform f64 in [0, 1) with 24 random bits, for host-side parameter draws.
    pub fn unit_f64(&self, stream: u32, counter: u32) -> f64 {
        f64::from(self.u32(stream, counter) >> 8) / 16_777_216.0
    }

    /// A uniform f64 in [lo, hi).
    pub fn uniform(&self, stream: u32, counter: u32, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit_f64(stream, counter)
    }

    /// A uniform integer in [lo, hi] (inclusive, like Python's `random.randint`).
    pub fn int_incl(&self, stream: u32, counter: u32, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        let span = (hi - lo + 1) as u64;
        // 32-bit multiply-shift: bias below 2^-32 · span, negligible for our spans.
        lo + ((u64::from(self.u32(stream, counter)) * span) >> 32) as i64
    }

    /// A standard normal draw for host-side parameters (Box–Muller in f64).
    pub fn normal_f64(&self, stream: u32, counter: u32) -> f64 {
        let u1 = (f64::from(self.u32(stream, counter) >> 8) + 1.0) / 16_777_216.0;
        let u2 = self.unit_f64(stream ^ 0x8000_0000, counter);
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// A standard normal f32 from draw `counter` of streams `stream` and `stream ^ 1<<31`
    /// (Box–Muller, the same expression as `normal()` in WGSL).
    #[inline]
    pub fn normal(&self, stream: u32, counter: u32) -> f32 {
        let u1 = ((self.u32(stream, counter) >> 8) as f32 + 1.0) * (1.0 / 16_777_216.0);
        let u2 = self.unit(stream ^ 0x8000_0000, counter);
        (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
    }
}

/// The top 24 bits of `x` as an f32 in [0, 1).
#[inline]
pub fn unit24(x: u32) -> f32 {
    (x >> 8) as f32 * (1.0 / 16_777_216.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix32_known_values() {
        // lowbias32 of 0 is 0; of 1 it is 0x0a09_7520 (hand-run of the three rounds).
        assert_eq!(mix32(0), 0);
        let mut x: u32 = 1;
        x ^= x >> 16;
        x = x.wrapping_mul(0x7feb_352d);
        x ^= x >> 15;
        x = x.wrapping_mul(0x846c_a68b);
        x ^= x >> 16;
        assert_eq!(mix32(1), x);
    }

    #[test]
    fn keys_differ_and_draws_are_uniform() {
        let a = Key::new(0, "img", 0, 1);
        assert_ne!(a, Key::new(1, "img", 0, 1));
        assert_ne!(a, Key::new(0, "img2", 0, 1));
        assert_ne!(a, Key::new(0, "img", 1, 1));
        assert_ne!(a, Key::new(0, "img", 0, 2));
        let n = 100_000;
        let mean: f64 = (0..n).map(|i| f64::from(a.unit(3, i))).sum::<f64>() / f64::from(n);
        assert!((mean - 0.5).abs() < 0.005, "{mean}");
        let z: Vec<f64> = (0..n).map(|i| f64::from(a.normal(5, i))).collect();
        let m = z.iter().sum::<f64>() / f64::from(n);
        let v = z.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / f64::from(n);
        assert!(m.abs() < 0.02 && (v - 1.0).abs() < 0.02, "{m} {v}");
        for i in 0..1000 {
            let k = a.int_incl(7, i, -10, 9);
            assert!((-10..=9).contains(&k));
        }
    }
}
