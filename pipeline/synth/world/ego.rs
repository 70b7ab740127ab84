//! The ego's drive: a script's speed profile integrated in time and its path in arc length.

use std::f64::consts::{FRAC_PI_2, PI};

use super::script::{PathEvent, Script, SpeedStep};
use super::{EGO_CENTER_AHEAD, LANE_WIDTH, T_BEGIN};
use crate::geometry::wrap_pi;
use crate::{Error, Result};

/// Time step of the speed integration and arc-length step of the path integration. Both are
/// far below what any consumer resolves (cameras sample every 83 ms, i.e. ≥ 0 m at a stop and
/// ~1.4 m at highway speed).
const DT: f64 = 1e-3;
const DS: f64 = 0.02;

/// The ego's state at one time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EgoState {
    pub t: f64,
    pub x: f64,
    pub y: f64,
    /// Heading in (−π, π], equal to the direction of travel.
    pub yaw: f64,
    pub speed: f64,
    /// Longitudinal acceleration (m/s²).
    pub accel: f64,
    /// Yaw rate (rad/s, positive to the left).
    pub yaw_rate: f64,
    /// Distance driven since [`T_BEGIN`].
    pub s: f64,
}

impl EgoState {
    /// The centre of the ego body.
    pub(crate) fn body_center(&self) -> [f64; 2] {
        [
            self.x + EGO_CENTER_AHEAD * self.yaw.cos(),
            self.y + EGO_CENTER_AHEAD * self.yaw.sin(),
        ]
    }
}

/// The ego's drive: speed integrated on a 1 ms grid, the path on a 2 cm arc-length grid.
#[derive(Debug, Clone)]
pub struct EgoTrack {
    pub(super) v: Vec<f64>,
    pub(super) a: Vec<f64>,
    pub(super) s: Vec<f64>,
    pub(super) px: Vec<f64>,
    pub(super) py: Vec<f64>,
    /// Unwrapped heading along the path.
    pub(super) pyaw: Vec<f64>,
    pub(super) pkappa: Vec<f64>,
    /// The path events that happen within the integrated span: (start s, length, event).
    pub(super) events: Vec<(f64, f64, PathEvent)>,
}

fn lerp(v: &[f64], f: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let last = v.len() - 1;
    if f <= 0.0 {
        return v[0];
    }
    let i = (f.floor() as usize).min(last);
    if i >= last {
        return v[last];
    }
    let w = f - i as f64;
    v[i] + (v[i + 1] - v[i]) * w
}

/// Raised-cosine rise from 0 to 1 over [0, e].
fn rise(x: f64, e: f64) -> f64 {
    if x <= 0.0 {
        0.0
    } else if x >= e {
        1.0
    } else {
        0.5 * (1.0 - (PI * x / e).cos())
    }
}

/// The speed profile's acceleration at time `t`, given the plateau of each ramp (filled in as
/// the integration reaches the ramp's start).
fn accel_at(steps: &[SpeedStep], plateau: &[Option<f64>], t: f64) -> f64 {
    let mut a = 0.0;
    for (st, p) in steps.iter().zip(plateau) {
        match *st {
            SpeedStep::Ramp { t0, dur, edge, .. } => {
                let (Some(p), true) = (*p, t >= t0 && t <= t0 + dur) else {
                    continue;
                };
                let x = t - t0;
                a += p * rise(x, edge) * rise(dur - x, edge);
            }
            SpeedStep::Wave {
                t0,
                amp,
                period,
                cycles,
            } => {
                if t >= t0 && t <= t0 + period * f64::from(cycles) {
                    a += amp * (2.0 * PI * (t - t0) / period).sin();
                }
            }
        }
    }
    a
}

/// The speed profile of `script` integrated on the [`DT`] grid from [`T_BEGIN`] to `t_end`:
/// speed, acceleration and distance driven at every step.
fn integrate_speed(script: &Script, t_end: f64) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    let n = ((t_end - T_BEGIN) / DT).ceil() as usize + 1;
    let mut v = Vec::with_capacity(n);
    let mut a = Vec::with_capacity(n);
    let mut s = Vec::with_capacity(n);
    let mut plateau: Vec<Option<f64>> = vec![None; script.speed.len()];
    let mut ramp_ends: Vec<(usize, f64)> = Vec::new();
    let (mut vk, mut sk) = (script.v0, 0.0);
    for k in 0..n {
        let t = T_BEGIN + k as f64 * DT;
        // A ramp's plateau is fixed by the speed at its start, so that it ends at `to`.
        for (j, st) in script.speed.iter().enumerate() {
            if let SpeedStep::Ramp { t0, to, dur, edge } = *st {
                if plateau[j].is_none() && t >= t0 - 0.5 * DT {
                    if dur <= edge {
                        return Err(Error::invalid(
                            format!("script {}", script.name),
                            "a ramp's duration must exceed its edge",
                        ));
                    }
                    plateau[j] = Some((to - vk) / (dur - edge));
                    let end = ((t0 + dur - T_BEGIN) / DT).round() as usize;
                    ramp_ends.push((end, to));
                }
            }
        }
        let ak = accel_at(script.speed, &plateau, t);
        if k > 0 {
            let a_prev = a[k - 1];
            let v_prev = v[k - 1];
            vk = v_prev + 0.5 * (a_prev + ak) * DT;
            // Land exactly on the ramp's target so a stop is a true stop.
            if let Some(&(_, to)) = ramp_ends.iter().find(|(e, _)| *e == k) {
                vk = to;
            }
            vk = vk.max(0.0);
            sk += 0.5 * (v_prev + vk) * DT;
        }
        v.push(vk);
        a.push(if vk <= 0.0 && ak < 0.0 { 0.0 } else { ak });
        s.push(sk);
    }
    Ok((v, a, s))
}

/// The path events of `script` placed in arc length, given the distance driven on the [`DT`]
/// grid (`s`) and the path's length (`total`): (start s, length, event) for each event the
/// drive completes.
fn place_events(
    script: &Script,
    s: &[f64],
    t_end: f64,
    total: f64,
) -> Result<Vec<(f64, f64, PathEvent)>> {
    let s_at = |t: f64| lerp(s, (t - T_BEGIN) / DT);
    let mut pieces: Vec<(f64, f64, PathEvent)> = Vec::new();
    for ev in script.path {
        let (t0, s0, len) = match *ev {
            PathEvent::Turn {
                t0, radius, ramp, ..
            } => (t0, s_at(t0), FRAC_PI_2 * radius + ramp),
            PathEvent::LaneChange { t0, dur, .. } => (t0, s_at(t0), s_at(t0 + dur) - s_at(t0)),
        };
        // A scene cut shorter than its script keeps only the events it completes, so that
        // every road under it is a whole one.
        if t0 >= t_end || s0 + len > total - 1.0 {
            continue;
        }
        if len < 1.0 {
            return Err(Error::invalid(
                format!("script {}", script.name),
                format!("a path event at {ev:?} covers {len:.2} m; the ego must be moving"),
            ));
        }
        if let Some(&(ps, pl, _)) = pieces.last() {
            if s0 < ps + pl {
                return Err(Error::invalid(
                    format!("script {}", script.name),
                    "path events overlap",
                ));
            }
        }
        pieces.push((s0, len, *ev));
    }
    Ok(pieces)
}

/// The path's curvature at arc length `x`, from the placed events (zero between them).
fn curvature_at(pieces: &[(f64, f64, PathEvent)], x: f64) -> f64 {
    for &(s0, len, ev) in pieces {
        if x < s0 || x > s0 + len {
            continue;
        }
        let u = x - s0;
        return match ev {
            PathEvent::Turn {
                side, radius, ramp, ..
            } => side.sign() / radius * rise(u, ramp) * rise(len - u, ramp),
            PathEvent::LaneChange { side, .. } => {
                let psi_max = 2.0 * LANE_WIDTH / len;
                let f = 0.4;
                let w = u / len;
                let k = if w < f {
                    psi_max * PI / (2.0 * f * len) * (PI * w / f).sin()
                } else {
                    -psi_max * PI / (2.0 * (1.0 - f) * len) * (PI * (w - f) / (1.0 - f)).sin()
                };
                side.sign() * k
            }
        };
    }
    0.0
}

/// A path sampled on the [`DS`] arc-length grid: x, y, unwrapped heading and curvature at
/// every step.
type PathSamples = (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>);

/// The path over `total` metres from `start` and heading `yaw0`, its curvature integrated
/// from the placed events.
fn integrate_path(
    pieces: &[(f64, f64, PathEvent)],
    start: [f64; 2],
    yaw0: f64,
    total: f64,
) -> PathSamples {
    let m = (total / DS).ceil() as usize + 2;
    let (mut px, mut py, mut pyaw, mut pkappa) = (
        Vec::with_capacity(m),
        Vec::with_capacity(m),
        Vec::with_capacity(m),
        Vec::with_capacity(m),
    );
    let (mut x, mut y, mut psi) = (start[0], start[1], yaw0);
    let mut kap = curvature_at(pieces, 0.0);
    for j in 0..m {
        px.push(x);
        py.push(y);
        pyaw.push(psi);
        pkappa.push(kap);
        let k1 = curvature_at(pieces, (j + 1) as f64 * DS);
        let psi1 = psi + 0.5 * (kap + k1) * DS;
        let mid = 0.5 * (psi + psi1);
        x += DS * mid.cos();
        y += DS * mid.sin();
        psi = psi1;
        kap = k1;
    }
    (px, py, pyaw, pkappa)
}

impl EgoTrack {
    /// Integrates `script` from [`T_BEGIN`] to `t_end`, starting at `start` with heading `yaw0`.
    pub fn build(script: &Script, start: [f64; 2], yaw0: f64, t_end: f64) -> Result<Self> {
        let (v, a, s) = integrate_speed(script, t_end)?;
        let total = s.last().copied().unwrap_or(0.0) + 1.0;
        let pieces = place_events(script, &s, t_end, total)?;
        let (px, py, pyaw, pkappa) = integrate_path(&pieces, start, yaw0, total);
        Ok(Self {
            v,
            a,
            s,
            px,
            py,
            pyaw,
            pkappa,
            events: pieces,
        })
    }

    /// The state at time `t` (clamped to the integrated span).
    pub fn state(&self, t: f64) -> EgoState {
        let f = (t - T_BEGIN) / DT;
        let s = lerp(&self.s, f);
        let speed = lerp(&self.v, f);
        let g = s / DS;
        let yaw_unwrapped = lerp(&self.pyaw, g);
        EgoState {
            t,
            x: lerp(&self.px, g),
            y: lerp(&self.py, g),
            yaw: wrap_pi(yaw_unwrapped),
            speed,
            accel: lerp(&self.a, f),
            yaw_rate: lerp(&self.pkappa, g) * speed,
            s,
        }
    }

    /// The turns the drive completes: (start s, end s, start time).
    pub fn turns(&self) -> Vec<(f64, f64, f64)> {
        self.events
            .iter()
            .filter_map(|&(s0, len, ev)| match ev {
                PathEvent::Turn { t0, .. } => Some((s0, s0 + len, t0)),
                PathEvent::LaneChange { .. } => None,
            })
            .collect()
    }

    /// The unwrapped path heading at arc length `s`.
    pub(super) fn heading_at_s(&self, s: f64) -> f64 {
        lerp(&self.pyaw, s / DS)
    }

    pub(super) fn point_at_s(&self, s: f64) -> [f64; 2] {
        [lerp(&self.px, s / DS), lerp(&self.py, s / DS)]
    }

    /// The earliest time at which the ego has driven `s` metres (T_BEGIN when already there).
    pub(super) fn time_at_s(&self, s: f64) -> f64 {
        let i = self.s.partition_point(|&x| x < s);
        T_BEGIN + i as f64 * DT
    }

    /// Arc length driven by time `t`.
    pub(crate) fn s_at(&self, t: f64) -> f64 {
        lerp(&self.s, (t - T_BEGIN) / DT)
    }
}
