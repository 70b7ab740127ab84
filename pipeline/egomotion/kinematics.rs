//! Kinematics of a resampled clip: speed, longitudinal acceleration, jerk, yaw rate, lateral
//! acceleration, and the per-clip summary features the oracle and the prompts use.
//!
//! The default scheme is the one that produced the released benchmark: each stage is
//! differentiated with `numpy.gradient`-style differences (central over 2·dt inside, one-sided
//! at the two ends) and its output is Savitzky–Golay smoothed before the next stage
//! differentiates it. Positions and yaw themselves are not smoothed. Speed is the norm of the
//! planar velocity (unsigned), acceleration the rate of change of that norm, and the lateral
//! acceleration the centripetal approximation v·ω.

use super::config::{DerivativeScheme, KinematicsConfig, FEATURES};
use super::savgol::SavGol;
use crate::{Error, Result};

/// A clip resampled on its uniform grid: relative time (s), planar position (m, global
/// frame) and unwrapped yaw (rad).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trajectory {
    pub t: Vec<f64>,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub yaw: Vec<f64>,
}

/// Every per-sample channel of a clip.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Kinematics {
    pub t: Vec<f64>,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub yaw: Vec<f64>,
    /// |v| (m/s), smoothed.
    pub speed: Vec<f64>,
    /// d|v|/dt (m/s²), smoothed.
    pub accel: Vec<f64>,
    /// d²|v|/dt² (m/s³), smoothed.
    pub jerk: Vec<f64>,
    /// dψ/dt (rad/s, + is left), smoothed.
    pub yaw_rate: Vec<f64>,
    /// Signed lateral acceleration v·ω (m/s², + is to the left).
    pub lat_accel: Vec<f64>,
    /// The reference's unsigned lateral acceleration v·|ω| (what every lateral rule reads).
    pub lat_accel_abs: Vec<f64>,
}

/// The per-clip summary features (`docs/egodyn.md` §2.3, plus net heading change and curvature).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Features {
    pub max_speed: f64,
    pub mean_speed: f64,
    pub min_accel: f64,
    pub max_accel: f64,
    pub mean_accel: f64,
    pub max_abs_yaw_rate: f64,
    /// ω at the first argmax of |ω| (keeps the turn's sign).
    pub signed_max_yaw_rate: f64,
    pub max_abs_jerk: f64,
    pub p95_abs_jerk: f64,
    pub mean_abs_jerk: f64,
    /// max of v·|ω|.
    pub max_lateral_accel: f64,
    /// Σ|Δψ| over consecutive samples (total variation, as the benchmark defines it).
    pub total_heading_change: f64,
    /// |ψ_end − ψ_0|.
    pub net_heading_change: f64,
    /// max |ω| / max(v, floor) (1/m); not used by the oracle.
    pub max_abs_curvature: f64,
}

impl Features {
    /// Feature names, in the order they are written (the config's list, since rules name them).
    pub const NAMES: [&'static str; 14] = FEATURES;

    /// The values in [`Features::NAMES`] order.
    pub fn values(&self) -> [f64; 14] {
        [
            self.max_speed,
            self.mean_speed,
            self.min_accel,
            self.max_accel,
            self.mean_accel,
            self.max_abs_yaw_rate,
            self.signed_max_yaw_rate,
            self.max_abs_jerk,
            self.p95_abs_jerk,
            self.mean_abs_jerk,
            self.max_lateral_accel,
            self.total_heading_change,
            self.net_heading_change,
            self.max_abs_curvature,
        ]
    }

    /// A feature by name.
    pub fn get(&self, name: &str) -> Option<f64> {
        Self::NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| self.values()[i])
    }
}

/// Computes kinematics with precomputed filters.
#[derive(Debug, Clone)]
pub struct Processor {
    cfg: KinematicsConfig,
    smoother: SavGol,
    /// First-derivative filter at unit spacing (the `savgol` scheme).
    differentiator: Option<SavGol>,
}

impl Processor {
    pub fn new(cfg: &KinematicsConfig) -> Result<Self> {
        let s = &cfg.savgol;
        let smoother = SavGol::smoother(s.window, s.polyorder, s.mode, s.cval)?;
        let differentiator = match cfg.derivative {
            DerivativeScheme::Gradient => None,
            DerivativeScheme::Savgol => {
                if s.polyorder == 0 {
                    return Err(Error::invalid(
                        "kinematics.polyorder",
                        "the savgol derivative scheme needs polyorder ≥ 1",
                    ));
                }
                Some(SavGol::new(s.window, s.polyorder, 1, 1.0, s.mode, s.cval)?)
            }
        };
        Ok(Self {
            cfg: cfg.clone(),
            smoother,
            differentiator,
        })
    }

    pub fn config(&self) -> &KinematicsConfig {
        &self.cfg
    }

    /// Savitzky–Golay smoothing with the reference's fallbacks: a signal shorter than
    /// polyorder + 2 is returned as is, and a window longer than the signal is shrunk to the
    /// largest odd length that fits (skipped when that is under polyorder + 2).
    pub fn smooth(&self, v: &[f64]) -> Vec<f64> {
        let s = &self.cfg.savgol;
        let min_len = s.polyorder + 2;
        if v.len() < min_len {
            return v.to_vec();
        }
        if v.len() >= s.window {
            if let Ok(out) = self.smoother.apply(v) {
                return out;
            }
            return v.to_vec();
        }
        let mut w = v.len();
        if w.is_multiple_of(2) {
            w -= 1;
        }
        if w < min_len {
            return v.to_vec();
        }
        SavGol::smoother(w, s.polyorder, s.mode, s.cval)
            .and_then(|f| f.apply(v))
            .unwrap_or_else(|_| v.to_vec())
    }

    /// Every channel of a resampled clip.
    pub fn compute(&self, tr: &Trajectory) -> Kinematics {
        let n = tr.t.len();
        let (speed, accel, jerk, yaw_rate) = match (&self.differentiator, n) {
            (Some(d), n) if n >= d.window() && n >= 2 => {
                let dt = (tr.t[n - 1] - tr.t[0]) / (n - 1) as f64;
                let der = |v: &[f64]| -> Vec<f64> {
                    d.apply(v)
                        .map(|o| o.into_iter().map(|x| x / dt).collect())
                        .unwrap_or_else(|_| gradient(&tr.t, v))
                };
                let vx = der(&tr.x);
                let vy = der(&tr.y);
                let speed: Vec<f64> = vx
                    .iter()
                    .zip(&vy)
                    .map(|(a, b)| (a * a + b * b).sqrt())
                    .collect();
                let accel = der(&speed);
                let jerk = der(&accel);
                let yaw_rate = der(&tr.yaw);
                (speed, accel, jerk, yaw_rate)
            }
            _ => {
                let speed = self.smooth(&planar_speed(&tr.t, &tr.x, &tr.y));
                let accel = self.smooth(&gradient(&tr.t, &speed));
                let yaw_rate = self.smooth(&gradient(&tr.t, &tr.yaw));
                let jerk = self.smooth(&gradient(&tr.t, &accel));
                (speed, accel, jerk, yaw_rate)
            }
        };
        let lat_accel = speed.iter().zip(&yaw_rate).map(|(v, w)| v * w).collect();
        let lat_accel_abs = speed
            .iter()
            .zip(&yaw_rate)
            .map(|(v, w)| v * w.abs())
            .collect();
        Kinematics {
            t: tr.t.clone(),
            x: tr.x.clone(),
            y: tr.y.clone(),
            yaw: tr.yaw.clone(),
            speed,
            accel,
            jerk,
            yaw_rate,
            lat_accel,
            lat_accel_abs,
        }
    }

    /// The summary features of a clip (all zero for an empty clip).
    pub fn features(&self, k: &Kinematics) -> Features {
        features(k, self.cfg.curvature_speed_floor)
    }
}

/// `numpy.gradient(v, t)` with edge_order 1 on the grid's own timestamps: (v[i+1] − v[i−1]) /
/// (t[i+1] − t[i−1]) inside, one-sided first differences at the ends.
pub(crate) fn gradient(t: &[f64], v: &[f64]) -> Vec<f64> {
    let n = v.len().min(t.len());
    let mut out = vec![0.0; n];
    if n < 2 {
        return out;
    }
    for i in 1..n - 1 {
        out[i] = (v[i + 1] - v[i - 1]) / (t[i + 1] - t[i - 1]);
    }
    out[0] = (v[1] - v[0]) / (t[1] - t[0]);
    out[n - 1] = (v[n - 1] - v[n - 2]) / (t[n - 1] - t[n - 2]);
    out
}

/// The planar speed |d(x, y)/dt| with the same difference scheme as [`gradient`].
pub(crate) fn planar_speed(t: &[f64], x: &[f64], y: &[f64]) -> Vec<f64> {
    let n = t.len().min(x.len()).min(y.len());
    let mut out = vec![0.0; n];
    if n < 2 {
        return out;
    }
    let norm = |i: usize, j: usize| {
        let (dx, dy) = (x[j] - x[i], y[j] - y[i]);
        (dx * dx + dy * dy).sqrt() / (t[j] - t[i])
    };
    for (i, o) in out.iter_mut().enumerate().take(n - 1).skip(1) {
        *o = norm(i - 1, i + 1);
    }
    out[0] = norm(0, 1);
    out[n - 1] = norm(n - 2, n - 1);
    out
}

/// The mean (0 for an empty slice).
pub(crate) fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// `numpy.percentile(v, p)` with the default linear method (NaN for an empty slice).
pub fn percentile(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    percentile_sorted(&s, p)
}

/// [`percentile`] of an already sorted slice.
pub(crate) fn percentile_sorted(s: &[f64], p: f64) -> f64 {
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    let q = p / 100.0;
    let h = (n - 1) as f64 * q;
    let lo = (h.floor().max(0.0) as usize).min(n - 1);
    let hi = (lo + 1).min(n - 1);
    let g = h - lo as f64;
    let (a, b) = (s[lo], s[hi]);
    // numpy's lerp: from the nearer end, so the result is exact at both ends.
    let d = b - a;
    if g >= 0.5 {
        b - d * (1.0 - g)
    } else {
        a + d * g
    }
}

/// Index of the first maximum of `f(v[i])` (None for an empty slice).
pub(crate) fn argmax_by(v: &[f64], f: impl Fn(f64) -> f64) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, &x) in v.iter().enumerate() {
        let y = f(x);
        if best.is_none_or(|(_, b)| y > b) {
            best = Some((i, y));
        }
    }
    best.map(|(i, _)| i)
}

/// The summary features of `k`.
pub fn features(k: &Kinematics, curvature_speed_floor: f64) -> Features {
    if k.speed.is_empty() {
        return Features::default();
    }
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let abs_jerk: Vec<f64> = k.jerk.iter().map(|j| j.abs()).collect();
    let iw = argmax_by(&k.yaw_rate, f64::abs).unwrap_or(0);
    let total_heading_change = k.yaw.windows(2).map(|w| (w[1] - w[0]).abs()).sum();
    let net_heading_change = match (k.yaw.first(), k.yaw.last()) {
        (Some(a), Some(b)) => (b - a).abs(),
        _ => 0.0,
    };
    let max_abs_curvature = k
        .yaw_rate
        .iter()
        .zip(&k.speed)
        .map(|(w, v)| w.abs() / v.max(curvature_speed_floor))
        .fold(0.0, f64::max);
    Features {
        max_speed: max(&k.speed),
        mean_speed: mean(&k.speed),
        min_accel: min(&k.accel),
        max_accel: max(&k.accel),
        mean_accel: mean(&k.accel),
        max_abs_yaw_rate: k.yaw_rate.get(iw).map_or(0.0, |w| w.abs()),
        signed_max_yaw_rate: k.yaw_rate.get(iw).copied().unwrap_or(0.0),
        max_abs_jerk: max(&abs_jerk),
        p95_abs_jerk: percentile(&abs_jerk, 95.0),
        mean_abs_jerk: mean(&abs_jerk),
        max_lateral_accel: max(&k.lat_accel_abs),
        total_heading_change,
        net_heading_change,
        max_abs_curvature,
    }
}
