//! The detectors of `docs/stsbench.md` §4.3 on one window, with the published bugs fixed: yaw
//! differences between objects are wrapped to [0°, 180°], DECELERATE needs every speed step below a
//! negative threshold, and a lane change needs a lateral lane-boundary crossing.

use crate::geometry::wrap_pi;
use crate::maplayers::Layer;
use crate::tracks::{Kind, Track};

use super::catalog::Role;
use super::catalog::Scenario::{self, *};
use super::config::StsConfig;

/// A window `[s, s + w)` of a track.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    pub tr: &'a Track,
    pub s: usize,
    pub w: usize,
}

impl<'a> View<'a> {
    pub fn new(tr: &'a Track, s: usize, w: usize) -> Self {
        Self { tr, s, w }
    }
    pub fn xy(&self) -> &'a [[f64; 2]] {
        &self.tr.xy[self.s..self.s + self.w]
    }
    pub fn yaw(&self) -> &'a [f64] {
        &self.tr.yaw[self.s..self.s + self.w]
    }
    pub fn v(&self) -> &'a [f64] {
        &self.tr.speed[self.s..self.s + self.w]
    }
    fn flags(&self, v: &'a Option<Vec<bool>>) -> Option<&'a [bool]> {
        v.as_deref().map(|f| &f[self.s..self.s + self.w])
    }
    pub fn ped_crossing(&self) -> Option<&'a [bool]> {
        self.flags(&self.tr.layers.ped_crossing)
    }
    pub(crate) fn drivable(&self) -> Option<&'a [bool]> {
        self.flags(&self.tr.layers.drivable_area)
    }
    pub fn walkway(&self) -> Option<&'a [bool]> {
        self.flags(&self.tr.layers.walkway)
    }
    /// Lane changes between the window's consecutive keyframes.
    pub(crate) fn lane_changes(&self) -> Option<&'a [bool]> {
        self.tr
            .layers
            .lane_change
            .as_deref()
            .map(|f| &f[self.s..self.s + self.w - 1])
    }
}

/// What a detector says about a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Holds,
    No,
    /// The rule needs a map layer the source lacks.
    NeedsMap(Layer),
    /// The scenario does not apply to these objects (e.g. an `_EGO` relation of the ego).
    NotApplicable,
}

/// The objects of one window: the actor, the other object of an agent pair (or the agent of
/// an ego-to-agent relation), and the ego, all over the same keyframes.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    pub a: View<'a>,
    pub b: Option<View<'a>>,
    pub ego: Option<View<'a>>,
}

/// The actor's position in the other's body frame (x forward, y left) per keyframe.
pub(crate) fn relative(a: &View<'_>, b: &View<'_>) -> Vec<[f64; 2]> {
    a.xy()
        .iter()
        .zip(b.xy())
        .zip(b.yaw())
        .map(|((pa, pb), &yb)| {
            let (dx, dy) = (pa[0] - pb[0], pa[1] - pb[1]);
            let (c, s) = (yb.cos(), yb.sin());
            [dx * c + dy * s, -dx * s + dy * c]
        })
        .collect()
}

/// Centre distances per keyframe.
pub(crate) fn distances(a: &View<'_>, b: &View<'_>) -> Vec<f64> {
    a.xy()
        .iter()
        .zip(b.xy())
        .map(|(p, q)| (p[0] - q[0]).hypot(p[1] - q[1]))
        .collect()
}

/// Heading differences per keyframe, wrapped to [0°, 180°].
pub(crate) fn yaw_diffs_deg(a: &View<'_>, b: &View<'_>) -> Vec<f64> {
    a.yaw()
        .iter()
        .zip(b.yaw())
        .map(|(x, y)| wrap_pi(x - y).abs().to_degrees())
        .collect()
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn steps(v: &[f64]) -> impl Iterator<Item = f64> + '_ {
    v.windows(2).map(|w| w[1] - w[0])
}

fn verdict(b: bool) -> Verdict {
    if b {
        Verdict::Holds
    } else {
        Verdict::No
    }
}

/// The motion heading per keyframe from consecutive positions (the last keyframe uses the
/// step into it); `None` where the object did not move.
fn motion_headings(xy: &[[f64; 2]]) -> Vec<Option<f64>> {
    let n = xy.len();
    (0..n)
        .map(|k| {
            let (i, j) = if k + 1 < n {
                (k, k + 1)
            } else {
                (k.saturating_sub(1), k)
            };
            let (dx, dy) = (xy[j][0] - xy[i][0], xy[j][1] - xy[i][1]);
            (dx != 0.0 || dy != 0.0).then(|| dy.atan2(dx))
        })
        .collect()
}

/// Single-object kinematic rules (no map, no class gate).
fn single(cfg: &StsConfig, sc: Scenario, a: &View<'_>) -> Option<bool> {
    let v = a.v();
    let (first, last) = (v[0], v[v.len() - 1]);
    let dyaw = wrap_pi(a.yaw()[a.w - 1] - a.yaw()[0]);
    Some(match sc {
        ACCELERATE => {
            let c = &cfg.accelerate;
            steps(v).all(|d| d > c.min_step) && last - first > c.min_gain
        }
        DECELERATE => {
            let c = &cfg.decelerate;
            steps(v).all(|d| d < c.max_step)
                && first - last > c.min_drop
                && last > c.min_final_speed
        }
        STOP => {
            let c = &cfg.stop;
            steps(v).all(|d| d < c.max_step)
                && first - last > c.min_drop
                && last < c.max_final_speed
        }
        LEFT_TURN => dyaw > cfg.turn.min_rad,
        RIGHT_TURN => dyaw < -cfg.turn.min_rad,
        U_TURN => dyaw.abs() > cfg.turn.u_turn_min_rad,
        REVERSE => {
            let c = &cfg.reverse;
            let off = motion_headings(a.xy())
                .iter()
                .zip(a.yaw())
                .filter(|(h, y)| h.is_some_and(|h| wrap_pi(**y - h).abs() > c.min_heading_gap_rad))
                .count();
            off > a.w / 2 && mean(v) > c.min_mean_speed
        }
        RUN => min(v) > cfg.pedestrian.run_min_speed,
        STAND => max(v) < cfg.pedestrian.stand_max_speed,
        _ => return None,
    })
}

fn behind_then_ahead(rel: &[[f64; 2]]) -> bool {
    rel[0][0] < 0.0 && rel[rel.len() - 1][0] > 0.0
}

/// Two-object rules (no class gate); thresholds that differ for humans follow the actor.
fn pair(cfg: &StsConfig, sc: Scenario, a: &View<'_>, b: &View<'_>) -> Verdict {
    let p = PairSeries::new(a, b);
    let stem = sc
        .name()
        .trim_end_matches("_AGENT")
        .trim_end_matches("_EGO");
    match stem {
        "OVERTAKE" => p.overtake(cfg),
        "PASS" => p.pass(cfg),
        "FOLLOW" | "LEAD" => p.follow(cfg, stem == "LEAD"),
        "WAIT_PED_CROSS" => p.wait_ped_cross(cfg, b),
        "STATIONARY_BEHIND"
        | "STATIONARY_IN_FRONT_OF"
        | "STATIONARY_LEFT_OF"
        | "STATIONARY_RIGHT_OF" => p.stationary(cfg, stem),
        "MOVING_LEFT_OF" | "MOVING_RIGHT_OF" => p.moving_beside(cfg, stem == "MOVING_LEFT_OF"),
        "WALK_ALONGSIDE" => p.walk_alongside(cfg),
        "WALK_OPPOSITE" => p.walk_opposite(cfg),
        _ => Verdict::NotApplicable,
    }
}

/// The per-keyframe series the two-object rules read, computed once per pair so that each
/// rule below is only its thresholds.
struct PairSeries<'a> {
    /// Centre distances.
    d: Vec<f64>,
    /// The actor in the other's body frame.
    rel: Vec<[f64; 2]>,
    /// Heading differences in degrees, in [0, 180].
    dy: Vec<f64>,
    va: &'a [f64],
    vb: &'a [f64],
    /// Whether the actor is a human (its thresholds differ).
    human: bool,
}

impl<'a> PairSeries<'a> {
    fn new(a: &View<'a>, b: &View<'a>) -> Self {
        let d = distances(a, b);
        let rel = relative(a, b);
        let dy = yaw_diffs_deg(a, b);
        let (va, vb) = (a.v(), b.v());
        let human = a.tr.kind == Kind::Human;
        Self {
            d,
            rel,
            dy,
            va,
            vb,
            human,
        }
    }

    /// Whether `f` holds at every keyframe.
    fn all(&self, f: &dyn Fn(usize) -> bool) -> bool {
        (0..self.d.len()).all(f)
    }

    fn overtake(&self, cfg: &StsConfig) -> Verdict {
        let Self {
            d, rel, dy, va, vb, ..
        } = self;
        let c = &cfg.overtake;
        let (md, ms) = if self.human {
            (c.human_max_distance, c.human_min_speed)
        } else {
            (c.vehicle_max_distance, c.vehicle_min_speed)
        };
        verdict(
            self.all(&|k| d[k] < md && va[k] - vb[k] > 0.0 && dy[k] < c.max_yaw_diff_deg)
                && min(va) > ms
                && min(vb) > ms
                && behind_then_ahead(rel),
        )
    }

    fn pass(&self, cfg: &StsConfig) -> Verdict {
        let Self {
            d, rel, dy, va, vb, ..
        } = self;
        let c = &cfg.pass;
        let (md, ms) = if self.human {
            (c.human_max_distance, c.human_min_speed)
        } else {
            (c.vehicle_max_distance, c.vehicle_min_speed)
        };
        verdict(
            max(d) < md
                && min(va) > ms
                && max(vb) < ms
                && self.all(&|k| dy[k] < c.max_yaw_diff_deg)
                && behind_then_ahead(rel),
        )
    }

    /// FOLLOW, or LEAD when `ahead`.
    fn follow(&self, cfg: &StsConfig, ahead: bool) -> Verdict {
        let Self { d, rel, va, vb, .. } = self;
        let c = &cfg.follow;
        verdict(
            self.all(&|k| {
                rel[k][1].abs() < c.max_lateral
                    && if ahead {
                        rel[k][0] > 0.0
                    } else {
                        rel[k][0] < 0.0
                    }
                    && d[k] < c.max_distance
                    && (va[k] - vb[k]).abs() < c.max_speed_diff
            }) && min(va) > c.min_speed
                && min(vb) > c.min_speed,
        )
    }

    /// WAIT_PED_CROSS, the other object `b` being the pedestrian whose crossing flags it
    /// reads.
    fn wait_ped_cross(&self, cfg: &StsConfig, b: &View<'_>) -> Verdict {
        let c = &cfg.wait_ped_cross;
        let Some(pc) = b.ped_crossing() else {
            return Verdict::NeedsMap(Layer::PedCrossing);
        };
        verdict(
            mean(self.va) < c.max_mean_speed
                && max(&self.d) < c.max_distance
                && pc.iter().any(|x| *x),
        )
    }

    /// The four STATIONARY_* relations, `stem` naming which.
    fn stationary(&self, cfg: &StsConfig, stem: &str) -> Verdict {
        let Self {
            d, rel, dy, va, vb, ..
        } = self;
        let c = &cfg.stationary;
        let place = |r: [f64; 2]| match stem {
            "STATIONARY_BEHIND" => r[1].abs() < c.max_lateral && r[0] < -c.min_longitudinal,
            "STATIONARY_IN_FRONT_OF" => r[1].abs() < c.max_lateral && r[0] > c.min_longitudinal,
            "STATIONARY_LEFT_OF" => {
                r[0].abs() < c.side_max_longitudinal && r[1] > c.side_min_lateral
            }
            _ => r[0].abs() < c.side_max_longitudinal && r[1] < -c.side_min_lateral,
        };
        verdict(
            self.all(&|k| place(rel[k]) && d[k] < c.max_distance && dy[k] < c.max_yaw_diff_deg)
                && max(va) < c.max_speed
                && max(vb) < c.max_speed,
        )
    }

    /// MOVING_LEFT_OF, or MOVING_RIGHT_OF unless `left`.
    fn moving_beside(&self, cfg: &StsConfig, left: bool) -> Verdict {
        let Self {
            d, rel, dy, va, vb, ..
        } = self;
        let c = &cfg.moving_beside;
        verdict(
            self.all(&|k| {
                rel[k][0].abs() < c.max_longitudinal
                    && if left {
                        rel[k][1] > c.min_lateral
                    } else {
                        rel[k][1] < -c.min_lateral
                    }
                    && d[k] < c.max_distance
                    && dy[k] < c.max_yaw_diff_deg
            }) && min(va) > c.min_speed
                && min(vb) > c.min_speed,
        )
    }

    fn walk_alongside(&self, cfg: &StsConfig) -> Verdict {
        let Self { d, dy, va, vb, .. } = self;
        let c = &cfg.walk_pair;
        verdict(
            max(d) < c.alongside_max_distance
                && min(va) > c.min_speed
                && min(vb) > c.min_speed
                && self.all(&|k| dy[k] < c.alongside_max_yaw_diff_deg),
        )
    }

    fn walk_opposite(&self, cfg: &StsConfig) -> Verdict {
        let Self { d, dy, va, vb, .. } = self;
        let c = &cfg.walk_pair;
        verdict(
            max(d) < c.opposite_max_distance
                && min(va) > c.min_speed
                && min(vb) > c.min_speed
                && self.all(&|k| dy[k] > c.opposite_min_yaw_diff_deg),
        )
    }
}

/// Whether the class gate of `sc` admits the window's objects.
pub(crate) fn gate(sc: Scenario, a: Kind, b: Option<Kind>) -> bool {
    use Kind::*;
    match sc {
        ACCELERATE | DECELERATE | STOP | LEFT_TURN | RIGHT_TURN | U_TURN | REVERSE
        | LANE_CHANGE => a == Vehicle,
        CROSS | JAYWALK | RUN | STAND | WALK => a == Human,
        OVERTAKE_AGENT | OVERTAKE_EGO | PASS_AGENT | PASS_EGO => {
            b.is_some_and(|b| a == b && (a == Vehicle || a == Human))
        }
        WAIT_PED_CROSS => a == Vehicle && b == Some(Human),
        WALK_ALONGSIDE | WALK_OPPOSITE => a == Human && b == Some(Human),
        _ => a == Vehicle && b == Some(Vehicle),
    }
}

/// The scenarios a question about objects of these kinds in `role` offers: those the role mines
/// for them. They follow from what the prompt says (who is named and their classes) and never
/// from the answer, so no option can be ruled out, nor the answer picked, from the text alone.
pub fn plausible(role: Role, a: Kind, b: Option<Kind>) -> Vec<Scenario> {
    role.scenarios()
        .iter()
        .copied()
        .filter(|sc| gate(*sc, a, b))
        .collect()
}

/// Evaluates `sc` on a window. With `gated`, the class gate applies first (mining positives);
/// without, only the geometry and kinematics are checked (verifying negatives).
pub fn check(cfg: &StsConfig, sc: Scenario, ctx: &Ctx<'_>, gated: bool) -> Verdict {
    let a = &ctx.a;
    let other = if sc.other_is_ego() { ctx.ego } else { ctx.b };
    if sc.is_pair() {
        let Some(b) = other else {
            return Verdict::NotApplicable;
        };
        if b.tr.id == a.tr.id {
            return Verdict::NotApplicable;
        }
        if gated && !gate(sc, a.tr.kind, Some(b.tr.kind)) {
            return Verdict::No;
        }
        return pair(cfg, sc, a, &b);
    }
    if gated && !gate(sc, a.tr.kind, None) {
        return Verdict::No;
    }
    if let Some(r) = single(cfg, sc, a) {
        // RUN also needs the pedestrian near the ego.
        if sc == RUN {
            return match ctx.ego {
                Some(e) if r => verdict(max(&distances(a, &e)) < cfg.pedestrian.max_ego_distance),
                Some(_) => Verdict::No,
                None => Verdict::NotApplicable,
            };
        }
        return verdict(r);
    }
    let p = &cfg.pedestrian;
    let near_ego = || ctx.ego.map(|e| max(&distances(a, &e)) < p.max_ego_distance);
    match sc {
        LANE_CHANGE => match a.lane_changes() {
            Some(f) => verdict(f.iter().any(|x| *x)),
            None => Verdict::NeedsMap(Layer::Lane),
        },
        CROSS => {
            let Some(pc) = a.ped_crossing() else {
                return Verdict::NeedsMap(Layer::PedCrossing);
            };
            match near_ego() {
                Some(near) => {
                    verdict(pc.iter().all(|x| *x) && min(a.v()) > p.cross_min_speed && near)
                }
                None => Verdict::NotApplicable,
            }
        }
        JAYWALK => {
            let Some(pc) = a.ped_crossing() else {
                return Verdict::NeedsMap(Layer::PedCrossing);
            };
            let Some(da) = a.drivable() else {
                return Verdict::NeedsMap(Layer::DrivableArea);
            };
            match near_ego() {
                Some(near) => verdict(
                    !pc.iter().any(|x| *x)
                        && da.iter().all(|x| *x)
                        && min(a.v()) > p.cross_min_speed
                        && near,
                ),
                None => Verdict::NotApplicable,
            }
        }
        WALK => {
            let Some(ww) = a.walkway() else {
                return Verdict::NeedsMap(Layer::Walkway);
            };
            verdict(
                ww.iter().all(|x| *x)
                    && min(a.v()) > p.walk_min_speed
                    && max(a.v()) < p.walk_max_speed,
            )
        }
        _ => Verdict::NotApplicable,
    }
}
