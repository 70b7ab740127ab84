//! Savitzky–Golay filtering with the semantics of `scipy.signal.savgol_filter`.
//!
//! A Savitzky–Golay filter fits a polynomial of order `polyorder` by least squares to each
//! window of `window` samples and evaluates its `deriv`-th derivative at the window's centre.
//! The fit is linear in the samples, so each output is a fixed weighted sum of its neighbours;
//! the weights only depend on the window, the order, the derivative and the sample spacing.
//!
//! Edges follow scipy's five modes:
//! * `interp` (scipy's default): the outermost `window/2` outputs on each side are the
//!   derivative of one polynomial fitted to the first (last) `window` samples;
//! * `mirror`, `nearest`, `constant` (with `cval`), `wrap`: the signal is extended past its
//!   ends exactly as `scipy.ndimage.convolve1d` extends it, and the centre weights are applied
//!   everywhere.
//!
//! The least-squares weights are computed from a Householder QR factorisation of the scaled
//! Vandermonde matrix, not from the normal equations, so they stay accurate for wide windows
//! and high orders where the normal equations lose most of their digits.

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// How the filter treats the samples near the ends of the signal (scipy's `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeMode {
    /// Fit one polynomial to the first/last window and evaluate it at the edge samples.
    Interp,
    /// Reflect about the edge sample without repeating it: `d c b | a b c d | c b a`.
    Mirror,
    /// Repeat the edge sample: `a a a | a b c d | d d d`.
    Nearest,
    /// Pad with a constant (`cval`): `k k k | a b c d | k k k`.
    Constant,
    /// Periodic continuation: `b c d | a b c d | a b c`.
    Wrap,
}

impl EdgeMode {
    /// scipy's name of the mode.
    pub fn name(self) -> &'static str {
        match self {
            EdgeMode::Interp => "interp",
            EdgeMode::Mirror => "mirror",
            EdgeMode::Nearest => "nearest",
            EdgeMode::Constant => "constant",
            EdgeMode::Wrap => "wrap",
        }
    }

    pub const ALL: [EdgeMode; 5] = [
        EdgeMode::Interp,
        EdgeMode::Mirror,
        EdgeMode::Nearest,
        EdgeMode::Constant,
        EdgeMode::Wrap,
    ];
}

fn invalid(detail: String) -> Error {
    Error::invalid("Savitzky-Golay filter", detail)
}

/// Checks the parameters scipy would reject (and the even windows we do not support).
fn check_params(window: usize, polyorder: usize, delta: f64) -> Result<()> {
    if window == 0 || window.is_multiple_of(2) {
        return Err(invalid(format!(
            "window must be a positive odd number, got {window}"
        )));
    }
    if polyorder >= window {
        return Err(invalid(format!(
            "polyorder ({polyorder}) must be less than the window ({window})"
        )));
    }
    if !delta.is_finite() || delta <= 0.0 {
        return Err(invalid(format!(
            "delta must be finite and positive, got {delta}"
        )));
    }
    Ok(())
}

/// The least-squares weights that give the `deriv`-th derivative at position `pos` of a window
/// of `window` samples, in the order of the samples (scipy's `savgol_coeffs(…, pos, use="dot")`).
///
/// `y = Σ_j w[j]·x[start + j]` is the derivative of the fitted polynomial at sample `start + pos`.
/// A derivative above the polynomial order is identically zero, as in scipy.
pub fn savgol_coeffs(
    window: usize,
    polyorder: usize,
    deriv: usize,
    delta: f64,
    pos: usize,
) -> Result<Vec<f64>> {
    check_params(window, polyorder, delta)?;
    if pos >= window {
        return Err(invalid(format!(
            "position {pos} is outside the window of {window}"
        )));
    }
    if deriv > polyorder {
        return Ok(vec![0.0; window]);
    }
    // The weights are the unique minimum-norm w with Σ_j w_j·P(x_j) = P⁽ᵈ⁾(x_pos) for every
    // polynomial P of degree ≤ polyorder. That set does not depend on the basis of the
    // polynomials, so the basis is chosen for conditioning: powers of u = (x − centre)/half,
    // which lies in [−1, 1] over the window.
    let centre = (window - 1) as f64 / 2.0;
    let half = centre.max(1.0);
    let u = |x: f64| (x - centre) / half;
    let cols = polyorder + 1;
    // M (window × cols): M[j][k] = u_j^k, i.e. Aᵀ of the system A·w = y.
    let m = DMatrix::from_fn(window, cols, |j, k| u(j as f64).powi(k as i32));
    let qr = m.qr();
    let q = qr.q();
    let r = qr.r();
    // y_k = d^deriv/dx^deriv of u(x)^k at x = pos: k!/(k−d)!·u_pos^(k−d) / half^d / delta^d.
    let up = u(pos as f64);
    let scale = (half * delta).powi(deriv as i32);
    let y: Vec<f64> = (0..cols)
        .map(|k| {
            if k < deriv {
                0.0
            } else {
                let falling: f64 = ((k - deriv + 1)..=k).map(|v| v as f64).product();
                falling * up.powi((k - deriv) as i32) / scale
            }
        })
        .collect();
    // A = Mᵀ = Rᵀ·Qᵀ; the minimum-norm solution of A·w = y is w = Q·z with Rᵀ·z = y.
    let mut z = vec![0.0; cols];
    for k in 0..cols {
        let mut acc = y[k];
        for (i, zi) in z.iter().enumerate().take(k) {
            acc -= r[(i, k)] * zi;
        }
        let diag = r[(k, k)];
        if diag == 0.0 || !diag.is_finite() {
            return Err(invalid(format!(
                "the fit of order {polyorder} over {window} samples is singular"
            )));
        }
        z[k] = acc / diag;
    }
    Ok((0..window)
        .map(|j| (0..cols).map(|k| q[(j, k)] * z[k]).sum())
        .collect())
}

/// A Savitzky–Golay filter with its weights computed once.
#[derive(Debug, Clone, PartialEq)]
pub struct SavGol {
    window: usize,
    polyorder: usize,
    deriv: usize,
    delta: f64,
    mode: EdgeMode,
    cval: f64,
    /// Weights for the window centre, in sample order (offsets −half..=half).
    center: Vec<f64>,
    /// For `interp`: weights for every position of the window (`fit[pos][j]`).
    fit: Vec<Vec<f64>>,
}

impl SavGol {
    /// A filter; fails on the parameters scipy rejects (and on even windows).
    pub fn new(
        window: usize,
        polyorder: usize,
        deriv: usize,
        delta: f64,
        mode: EdgeMode,
        cval: f64,
    ) -> Result<Self> {
        check_params(window, polyorder, delta)?;
        let half = window / 2;
        let center = savgol_coeffs(window, polyorder, deriv, delta, half)?;
        let fit = if mode == EdgeMode::Interp {
            (0..window)
                .map(|p| savgol_coeffs(window, polyorder, deriv, delta, p))
                .collect::<Result<Vec<_>>>()?
        } else {
            Vec::new()
        };
        Ok(Self {
            window,
            polyorder,
            deriv,
            delta,
            mode,
            cval,
            center,
            fit,
        })
    }

    /// A smoother (derivative 0, unit spacing).
    pub(crate) fn smoother(
        window: usize,
        polyorder: usize,
        mode: EdgeMode,
        cval: f64,
    ) -> Result<Self> {
        Self::new(window, polyorder, 0, 1.0, mode, cval)
    }

    pub fn window(&self) -> usize {
        self.window
    }

    pub fn polyorder(&self) -> usize {
        self.polyorder
    }

    pub fn deriv(&self) -> usize {
        self.deriv
    }

    pub fn delta(&self) -> f64 {
        self.delta
    }

    pub fn mode(&self) -> EdgeMode {
        self.mode
    }

    /// Filters `x`. Only `interp` can fail: it needs at least `window` samples, as in scipy.
    pub fn apply(&self, x: &[f64]) -> Result<Vec<f64>> {
        let mut out = vec![0.0; x.len()];
        self.apply_into(x, &mut out)?;
        Ok(out)
    }

    /// Filters `x` into `out` (same length) without allocating.
    pub(crate) fn apply_into(&self, x: &[f64], out: &mut [f64]) -> Result<()> {
        let n = x.len();
        if out.len() != n {
            return Err(invalid(format!(
                "output has {} samples, input {n}",
                out.len()
            )));
        }
        if n == 0 {
            return Ok(());
        }
        let half = self.window / 2;
        if self.mode == EdgeMode::Interp && n < self.window {
            return Err(invalid(format!(
                "mode interp needs at least window ({}) samples, got {n}",
                self.window
            )));
        }
        // The interior never touches the extension: a straight dot product.
        let lo = half.min(n);
        let hi = n.saturating_sub(half).max(lo);
        for (i, o) in out.iter_mut().enumerate().take(hi).skip(lo) {
            *o = dot(&self.center, &x[i - half..i - half + self.window]);
        }
        match self.mode {
            EdgeMode::Interp => {
                // n ≥ window here, so lo = hi_start = half and both edge fits are in range.
                let tail = n - self.window;
                for p in 0..half {
                    out[p] = dot(&self.fit[p], &x[..self.window]);
                    let q = self.window - half + p;
                    out[n - half + p] = dot(&self.fit[q], &x[tail..]);
                }
            }
            _ => {
                for i in (0..lo).chain(hi..n) {
                    let mut acc = 0.0;
                    for (j, w) in self.center.iter().enumerate() {
                        let k = i as i64 + j as i64 - half as i64;
                        acc += w * self.extended(x, k);
                    }
                    out[i] = acc;
                }
            }
        }
        Ok(())
    }

    /// The value of the extended signal at index `k` (any integer), as `ndimage` extends it.
    fn extended(&self, x: &[f64], k: i64) -> f64 {
        let n = x.len() as i64;
        if (0..n).contains(&k) {
            return x[k as usize];
        }
        match self.mode {
            EdgeMode::Constant => self.cval,
            EdgeMode::Nearest => x[k.clamp(0, n - 1) as usize],
            EdgeMode::Wrap => x[k.rem_euclid(n) as usize],
            EdgeMode::Mirror | EdgeMode::Interp => {
                if n == 1 {
                    return x[0];
                }
                let period = 2 * (n - 1);
                let r = k.rem_euclid(period);
                x[(if r >= n { period - r } else { r }) as usize]
            }
        }
    }
}

#[inline]
fn dot(w: &[f64], x: &[f64]) -> f64 {
    w.iter().zip(x).map(|(a, b)| a * b).sum()
}

/// One-shot filter, the counterpart of `scipy.signal.savgol_filter(x, window, polyorder,
/// deriv, delta, mode=mode, cval=cval)`.
pub fn savgol_filter(
    x: &[f64],
    window: usize,
    polyorder: usize,
    deriv: usize,
    delta: f64,
    mode: EdgeMode,
    cval: f64,
) -> Result<Vec<f64>> {
    SavGol::new(window, polyorder, deriv, delta, mode, cval)?.apply(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_five_point_quadratic_smoother() {
        // The textbook (−3, 12, 17, 12, −3)/35 kernel.
        let c = savgol_coeffs(5, 2, 0, 1.0, 2).unwrap_or_default();
        let want = [-3.0, 12.0, 17.0, 12.0, -3.0].map(|v| v / 35.0);
        for (a, b) in c.iter().zip(want) {
            assert!((a - b).abs() < 1e-15, "{c:?}");
        }
    }

    #[test]
    fn mirror_matches_hand_padding() {
        let x = [1.0, 4.0, 2.0, 8.0, 5.0, 7.0];
        let y = savgol_filter(&x, 5, 2, 0, 1.0, EdgeMode::Mirror, 0.0).unwrap_or_default();
        // Mirror: [2 4 | 1 4 2 8 5 7 | 5 8].
        let k = [-3.0, 12.0, 17.0, 12.0, -3.0].map(|v| v / 35.0);
        let padded = [2.0, 4.0, 1.0, 4.0, 2.0, 8.0, 5.0, 7.0, 5.0, 8.0];
        for i in 0..6 {
            let want: f64 = (0..5).map(|j| k[j] * padded[i + j]).sum();
            assert!((y[i] - want).abs() < 1e-12);
        }
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(SavGol::new(4, 2, 0, 1.0, EdgeMode::Mirror, 0.0).is_err());
        assert!(SavGol::new(5, 5, 0, 1.0, EdgeMode::Mirror, 0.0).is_err());
        assert!(SavGol::new(5, 2, 0, 0.0, EdgeMode::Mirror, 0.0).is_err());
        let f = SavGol::new(5, 2, 0, 1.0, EdgeMode::Interp, 0.0);
        assert!(f.is_ok_and(|f| f.apply(&[1.0, 2.0]).is_err()));
    }
}
