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
pub(crate) const fn mix32(mut x: u32) -> u32 {
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
    pub(crate) fn unit_f64(&self, stream: u32, counter: u32) -> f64 {
        f64::from(self.u32(stream, counter) >> 8) / 16_777_216.0
    }

    /// A uniform f64 in [lo, hi).
    pub fn uniform(&self, stream: u32, counter: u32, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit_f64(stream, counter)
    }

    /// A uniform integer in [lo, hi] (inclusive, like Python's `random.randint`).
    pub(crate) fn int_incl(&self, stream: u32, counter: u32, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        let span = (hi - lo + 1) as u64;
        // 32-bit multiply-shift: bias below 2^-32 · span, negligible for our spans.
        lo + ((u64::from(self.u32(stream, counter)) * span) >> 32) as i64
    }

    /// A standard normal draw for host-side parameters (Box–Muller in f64).
    pub(crate) fn normal_f64(&self, stream: u32, counter: u32) -> f64 {
        let u1 = (f64::from(self.u32(stream, counter) >> 8) + 1.0) / 16_777_216.0;
        let u2 = self.unit_f64(stream ^ 0x8000_0000, counter);
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// [`Key::normal`] with [`ln_unit`] and [`cos_turn`] in place of the library's log and
    /// cosine: the same draws, within a few units in the last place of it, and a loop of them
    /// vectorises.
    #[inline(always)]
    pub(crate) fn normal_poly(&self, stream: u32, counter: u32) -> f32 {
        let u1 = ((self.u32(stream, counter) >> 8) as f32 + 1.0) * (1.0 / 16_777_216.0);
        let u2 = self.unit(stream ^ 0x8000_0000, counter);
        (-2.0 * ln_unit(u1)).sqrt() * cos_turn(u2)
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

/// The natural log of `x`, a normal f32 in (0, 1] (the Box–Muller `u1`), to about one unit in
/// the last place: the classic split into exponent and mantissa, with the mantissa's log from
/// a degree-9 polynomial (Cephes `logf`'s coefficients), written without branches or library
/// calls so that a loop of them runs as vector instructions.
#[inline(always)]
pub(crate) fn ln_unit(x: f32) -> f32 {
    let bits = x.to_bits();
    // x = m·2^e with m in [0.5, 1).
    let e = ((bits >> 23) & 0xff) as i32 - 126;
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f00_0000);
    let small = m < std::f32::consts::FRAC_1_SQRT_2;
    let e = (e - i32::from(small)) as f32;
    let f = if small { m + m - 1.0 } else { m - 1.0 };
    let z = f * f;
    let mut y = 7.037_683_6e-2_f32;
    for c in [
        -1.151_461e-1,
        1.167_699_9e-1,
        -1.242_014_1e-1,
        1.424_932_3e-1,
        -1.666_805_8e-1,
        2.000_071_4e-1,
        -2.499_999_4e-1,
        3.333_333e-1,
    ] {
        y = y * f + c;
    }
    y = y * f * z;
    y += e * -2.121_944_4e-4;
    y += -0.5 * z;
    (f + y) + e * 0.693_359_4
}

/// cos(2π·u) for u in [0, 1) (the Box–Muller angle), to within a few units in the last place:
/// u less its nearest quarter is exact in f32, and that angle's sine and cosine on
/// [−π/4, π/4] come from short polynomials (Cephes `sinf`/`cosf`'s coefficients); without
/// branches or library calls, like [`ln_unit`].
#[inline(always)]
pub(crate) fn cos_turn(u: f32) -> f32 {
    let q = (u * 4.0 + 0.5) as i32;
    let a = (u - q as f32 * 0.25) * std::f32::consts::TAU;
    let z = a * a;
    let cos = 1.0 - 0.5 * z + z * z * (4.166_664_6e-2 + z * (-1.388_731_6e-3 + z * 2.443_315_7e-5));
    let sin = a + a * z * (-1.666_665_5e-1 + z * (8.332_161e-3 + z * -1.951_529_6e-4));
    // cos(a + qπ/2): cos, −sin, −cos, sin.
    let v = if q & 1 == 0 { cos } else { sin };
    if (q + 1) & 2 == 0 {
        v
    } else {
        -v
    }
}

/// The top 24 bits of `x` as an f32 in [0, 1).
#[inline]
pub(crate) fn unit24(x: u32) -> f32 {
    (x >> 8) as f32 * (1.0 / 16_777_216.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_polynomial_log_and_cosine_are_within_a_few_ulp() {
        let mut worst_ln = 0.0f64;
        let mut worst_cos = 0.0f64;
        // Every Box–Muller input has 24 bits: all of the first 2^16 and a stride through the rest.
        let ks = (1u32..=1 << 16).chain((1u32 << 16..=1 << 24).step_by(97));
        for k in ks {
            let u1 = k as f32 * (1.0 / 16_777_216.0);
            let want = f64::from(u1).ln();
            let err = (f64::from(ln_unit(u1)) - want).abs() / want.abs().max(1e-30);
            if k != 1 << 24 {
                worst_ln = worst_ln.max(err);
            } else {
                assert_eq!(ln_unit(u1), 0.0);
            }
            let u2 = (k - 1) as f32 * (1.0 / 16_777_216.0);
            let want = (std::f64::consts::TAU * f64::from(u2)).cos();
            worst_cos = worst_cos.max((f64::from(cos_turn(u2)) - want).abs());
        }
        assert!(worst_ln < 3e-7, "log: relative error {worst_ln}");
        assert!(worst_cos < 3e-7, "cos: absolute error {worst_cos}");
        let key = Key::new(5, "n", 0, 3);
        for c in 0..10_000 {
            let (a, b) = (key.normal(7, c), key.normal_poly(7, c));
            assert!((a - b).abs() <= 4e-6 * a.abs().max(1.0), "{c}: {a} {b}");
        }
    }

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
