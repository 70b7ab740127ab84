//! The synthetic world, free of any dataset format: roads, the ego's drive and the agents
//! around it, as continuous functions of time (seconds from the scene's first keyframe).
//!
//! A scene is built from a manoeuvre [`Script`]: a speed profile (smooth acceleration ramps and
//! waves) and path events (junction turns and lane changes) placed in time. The speed profile is
//! integrated in time and the path in arc length, so the ego moves smoothly, its heading is the
//! tangent of its path and its yaw rate is curvature × speed. The roads are then laid under the
//! path: every straight stretch of the drive is a road with lanes each way, parking strips and
//! sidewalks, and every turn is a right-angled junction of two such roads. Agents of every
//! class are placed on those roads: parked and oncoming vehicles, traffic in the other lane,
//! cyclists, a work zone with cones and barriers, pedestrians standing, walking and crossing,
//! a dog, debris. Anything that would run into the ego or into another agent is dropped.
//!
//! The writers (nuScenes here; Waymo and Bench2Drive later) only sample this world.

use std::f64::consts::{FRAC_PI_2, PI};

use super::tokens::Rng;
use crate::geometry::wrap_pi;
use crate::{Error, Result};

/// Lane width (m).
pub const LANE_WIDTH: f64 = 3.5;
/// Lanes in each direction.
pub const LANES_EACH_WAY: u32 = 2;
/// Width of the kerbside parking strip (m).
pub const PARKING_WIDTH: f64 = 2.5;
/// Sidewalk width (m).
pub const SIDEWALK_WIDTH: f64 = 3.5;
/// The ego trajectory is defined from this time on, so camera frames that precede the first
/// keyframe by a few tens of milliseconds still have a pose.
pub const T_BEGIN: f64 = -1.0;
/// Ego body: [w, l, h] and how far its centre is ahead of the ego origin (the rear axle).
pub const EGO_SIZE: [f64; 3] = [1.9, 4.7, 1.6];
pub const EGO_CENTER_AHEAD: f64 = 1.35;

/// Time step of the speed integration and arc-length step of the path integration. Both are
/// far below what any consumer resolves (cameras sample every 83 ms, i.e. ≥ 0 m at a stop and
/// ~1.4 m at highway speed).
const DT: f64 = 1e-3;
const DS: f64 = 0.02;

/// The unified classes, in `configs/taxonomy.toml` order.
pub const CLASSES: [&str; 13] = [
    "car",
    "truck",
    "bus",
    "trailer",
    "construction_vehicle",
    "emergency_vehicle",
    "pedestrian",
    "bicycle",
    "motorcycle",
    "traffic_cone",
    "barrier",
    "animal",
    "other",
];

/// A kind of agent: its nuScenes category, its unified class and a typical size [w, l, h].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kind {
    pub category: &'static str,
    pub class: &'static str,
    pub wlh: [f64; 3],
}

const fn kind(category: &'static str, class: &'static str, wlh: [f64; 3]) -> Kind {
    Kind {
        category,
        class,
        wlh,
    }
}

/// All 23 nuScenes categories with mean-like sizes.
pub const KINDS: [Kind; 23] = [
    kind("vehicle.car", "car", [1.95, 4.62, 1.73]),
    kind("vehicle.truck", "truck", [2.52, 6.94, 2.84]),
    kind("vehicle.bus.rigid", "bus", [2.95, 11.19, 3.47]),
    kind("vehicle.bus.bendy", "bus", [2.94, 16.8, 3.3]),
    kind("vehicle.trailer", "trailer", [2.9, 12.29, 3.87]),
    kind(
        "vehicle.construction",
        "construction_vehicle",
        [2.82, 6.37, 3.19],
    ),
    kind(
        "vehicle.emergency.ambulance",
        "emergency_vehicle",
        [2.35, 6.2, 2.6],
    ),
    kind(
        "vehicle.emergency.police",
        "emergency_vehicle",
        [2.0, 5.0, 1.75],
    ),
    kind("human.pedestrian.adult", "pedestrian", [0.67, 0.73, 1.77]),
    kind("human.pedestrian.child", "pedestrian", [0.52, 0.5, 1.3]),
    kind(
        "human.pedestrian.construction_worker",
        "pedestrian",
        [0.72, 0.72, 1.78],
    ),
    kind(
        "human.pedestrian.police_officer",
        "pedestrian",
        [0.72, 0.72, 1.8],
    ),
    kind("human.pedestrian.stroller", "other", [0.6, 0.95, 1.15]),
    kind("human.pedestrian.wheelchair", "other", [0.75, 1.1, 1.3]),
    kind(
        "human.pedestrian.personal_mobility",
        "other",
        [0.6, 1.2, 1.7],
    ),
    kind("vehicle.bicycle", "bicycle", [0.6, 1.7, 1.29]),
    kind("vehicle.motorcycle", "motorcycle", [0.77, 2.11, 1.47]),
    kind(
        "movable_object.trafficcone",
        "traffic_cone",
        [0.41, 0.41, 1.07],
    ),
    kind("movable_object.barrier", "barrier", [2.53, 0.5, 0.98]),
    kind("movable_object.debris", "other", [0.9, 1.1, 0.45]),
    kind(
        "movable_object.pushable_pullable",
        "other",
        [0.62, 0.7, 1.1],
    ),
    kind("static_object.bicycle_rack", "other", [1.2, 3.0, 1.0]),
    kind("animal", "animal", [0.36, 0.73, 0.51]),
];

fn kind_of(category: &str) -> Kind {
    KINDS
        .iter()
        .copied()
        .find(|k| k.category == category)
        .unwrap_or(KINDS[0])
}

// ---------------------------------------------------------------------------------------------
// Roads

/// Which side of the road traffic keeps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traffic {
    RightHand,
    LeftHand,
}

/// A straight road: a centre line through `origin` along `heading`, from `s_min` to `s_max`
/// (metres along the line), with lanes each way, parking strips and sidewalks. `s` runs in the
/// ego's direction of travel, `d` is the lateral offset, positive to the left of `heading`.
#[derive(Debug, Clone, PartialEq)]
pub struct Road {
    pub origin: [f64; 2],
    pub heading: f64,
    pub s_min: f64,
    pub s_max: f64,
    pub lanes_each_way: u32,
    pub lane_width: f64,
    pub parking_width: f64,
    pub sidewalk_width: f64,
    pub traffic: Traffic,
}

impl Road {
    pub fn dir(&self) -> [f64; 2] {
        [self.heading.cos(), self.heading.sin()]
    }

    pub fn left(&self) -> [f64; 2] {
        [-self.heading.sin(), self.heading.cos()]
    }

    /// (s, d) of a global point.
    pub fn local(&self, p: [f64; 2]) -> (f64, f64) {
        let (dx, dy) = (p[0] - self.origin[0], p[1] - self.origin[1]);
        let (u, l) = (self.dir(), self.left());
        (dx * u[0] + dy * u[1], dx * l[0] + dy * l[1])
    }

    /// The global point at (s, d).
    pub fn point(&self, s: f64, d: f64) -> [f64; 2] {
        let (u, l) = (self.dir(), self.left());
        [
            self.origin[0] + s * u[0] + d * l[0],
            self.origin[1] + s * u[1] + d * l[1],
        ]
    }

    /// The sign of `d` on the side whose lanes run along +s.
    fn forward_sign(&self) -> f64 {
        match self.traffic {
            Traffic::RightHand => -1.0,
            Traffic::LeftHand => 1.0,
        }
    }

    fn side_sign(&self, forward: bool) -> f64 {
        if forward {
            self.forward_sign()
        } else {
            -self.forward_sign()
        }
    }

    /// The centre of lane `lane` (0 next to the centre line) of the forward (+s) or backward
    /// carriageway.
    pub fn lane_d(&self, lane: u32, forward: bool) -> f64 {
        self.side_sign(forward) * (f64::from(lane) + 0.5) * self.lane_width
    }

    /// Half the width of the lanes alone.
    pub fn lanes_half(&self) -> f64 {
        f64::from(self.lanes_each_way) * self.lane_width
    }

    /// Half the width from kerb to kerb (lanes and parking strips).
    pub fn kerb_half(&self) -> f64 {
        self.lanes_half() + self.parking_width
    }

    /// Half the total width, sidewalks included.
    pub fn half_width(&self) -> f64 {
        self.kerb_half() + self.sidewalk_width
    }

    /// The middle of the parking strip on one side.
    pub fn parking_d(&self, forward: bool) -> f64 {
        self.side_sign(forward) * (self.lanes_half() + 0.5 * self.parking_width)
    }

    /// A point across the sidewalk on one side: `frac` 0 at the kerb, 1 at the far edge.
    pub fn sidewalk_d(&self, forward: bool, frac: f64) -> f64 {
        self.side_sign(forward) * (self.kerb_half() + frac * self.sidewalk_width)
    }

    /// Heading of travel on the forward or backward carriageway.
    pub fn travel_heading(&self, forward: bool) -> f64 {
        if forward {
            self.heading
        } else {
            wrap_pi(self.heading + PI)
        }
    }

    /// Whether a point lies between the kerbs (within the s extent).
    pub fn on_carriageway(&self, p: [f64; 2], margin: f64) -> bool {
        let (s, d) = self.local(p);
        s >= self.s_min && s <= self.s_max && d.abs() <= self.kerb_half() + margin
    }
}

// ---------------------------------------------------------------------------------------------
// Manoeuvre scripts

/// A left or right turn, lane change, ….
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Left,
    Right,
}

impl Side {
    fn sign(self) -> f64 {
        match self {
            Side::Left => 1.0,
            Side::Right => -1.0,
        }
    }
}

/// One element of the speed profile. Outside all steps the acceleration is zero.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SpeedStep {
    /// From `t0`, change speed to `to` (m/s) within `dur` seconds. The acceleration has a
    /// plateau and rises and falls over `edge` seconds with raised-cosine edges, so jerk stays
    /// finite: plateau = Δv / (dur − edge), peak jerk = π·plateau / (2·edge).
    Ramp {
        t0: f64,
        to: f64,
        dur: f64,
        edge: f64,
    },
    /// From `t0`, a sinusoidal acceleration of amplitude `amp` over whole cycles of `period`
    /// seconds: a jerky driver whose speed returns to its start value. Mean |jerk| = 4·amp/period.
    Wave {
        t0: f64,
        amp: f64,
        period: f64,
        cycles: u32,
    },
}

/// One event of the path, placed in time (its arc length follows from the speed profile).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PathEvent {
    /// A right-angled turn at a junction of radius `radius` (m), curvature rising and falling
    /// over `ramp` metres (a clothoid-like transition).
    Turn {
        t0: f64,
        side: Side,
        radius: f64,
        ramp: f64,
    },
    /// A change to the neighbouring lane within `dur` seconds. The steering lobe is shorter
    /// than the counter-steer lobe (40/60 % of the length), as drivers do, so the peak yaw rate
    /// of the manoeuvre is the one towards the new lane.
    LaneChange { t0: f64, side: Side, dur: f64 },
}

/// A scripted drive: initial speed, speed profile, path events and what it is for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Script {
    pub name: &'static str,
    pub description: &'static str,
    pub v0: f64,
    pub speed: &'static [SpeedStep],
    pub path: &'static [PathEvent],
}

/// The manoeuvre scripts; scene k uses script k mod len. Times are seconds from the scene's
/// first keyframe; a 20 s scene has 3 s EgoDyn windows ending every 0.5 s from 3.0 to 19.5 s.
/// The answer classes each one produces are listed in `synth/mod.rs`.
pub const SCRIPTS: [Script; 4] = [
    Script {
        name: "junction-stop-go-left",
        description: "urban cruise at 9 m/s, firm braking to a stop before a junction, a 3.5 s wait, pull away and a left turn",
        v0: 9.0,
        speed: &[
            // 9 → 0 m/s at −2.14 m/s² (emergency band < −1.59, well above the extreme −3.92).
            SpeedStep::Ramp { t0: 3.0, to: 0.0, dur: 5.0, edge: 0.8 },
            // Stopped 8.0–11.5 s, then 0 → 8 m/s at +2.35 m/s².
            SpeedStep::Ramp { t0: 11.5, to: 8.0, dur: 4.0, edge: 0.6 },
        ],
        // 90° left at R 18 m and 8 m/s: yaw rate 0.44 rad/s, lateral 3.6 m/s².
        path: &[PathEvent::Turn { t0: 15.0, side: Side::Left, radius: 18.0, ramp: 5.0 }],
    },
    Script {
        name: "arterial-lanechange-brake-right",
        description: "arterial at 16 m/s, lane change to the left, moderate braking to 10 m/s, hard braking into a right turn, pull away",
        v0: 16.0,
        speed: &[
            // 16 → 10 m/s at −1.25 m/s² (moderate band −1.59..−0.89).
            SpeedStep::Ramp { t0: 6.5, to: 10.0, dur: 5.8, edge: 1.0 },
            // 10 → 6 m/s at −3.6 m/s² right before the turn: brake-then-turn.
            SpeedStep::Ramp { t0: 12.8, to: 6.0, dur: 1.6, edge: 0.5 },
            SpeedStep::Ramp { t0: 17.8, to: 10.0, dur: 2.0, edge: 0.5 },
        ],
        path: &[
            PathEvent::LaneChange { t0: 2.5, side: Side::Left, dur: 3.0 },
            // 90° right at R 12 m and 6 m/s: yaw rate −0.5 rad/s, lateral 3.0 m/s².
            PathEvent::Turn { t0: 14.2, side: Side::Right, radius: 12.0, ramp: 4.0 },
        ],
    },
    Script {
        name: "lowbrake-emergency-stop-creep-jerky",
        description: "gentle braking 13 → 11 m/s, emergency stop, creep at 3 m/s with a jerky stop-start driver through a tight left turn, pull away",
        v0: 13.0,
        speed: &[
            // 13 → 11 m/s at −0.54 m/s² (low band −0.89..−0.18).
            SpeedStep::Ramp { t0: -1.0, to: 11.0, dur: 4.5, edge: 0.8 },
            // 11 → 0 m/s at −4.9 m/s² (extreme: < −3.92), edges of 0.35 s.
            SpeedStep::Ramp { t0: 4.0, to: 0.0, dur: 2.6, edge: 0.35 },
            SpeedStep::Ramp { t0: 8.5, to: 3.0, dur: 2.0, edge: 0.5 },
            // Mean |jerk| 4·1.1/2.5 = 1.76 m/s³ (moderate band 1.25..2.15).
            SpeedStep::Wave { t0: 11.0, amp: 1.1, period: 2.5, cycles: 2 },
            SpeedStep::Ramp { t0: 16.5, to: 7.0, dur: 3.0, edge: 0.6 },
        ],
        // 90° left at R 9 m and ~3 m/s: heading change without high lateral acceleration.
        path: &[PathEvent::Turn { t0: 11.5, side: Side::Left, radius: 9.0, ramp: 3.0 }],
    },
    Script {
        name: "merge-highway-lanechanges",
        description: "accelerate from 11 to 17 m/s, lane change to the right, gentle braking to 15 m/s, lane change back",
        v0: 11.0,
        speed: &[
            SpeedStep::Ramp { t0: 2.0, to: 17.0, dur: 5.0, edge: 1.0 },
            SpeedStep::Ramp { t0: 12.0, to: 15.0, dur: 5.0, edge: 1.0 },
        ],
        path: &[
            PathEvent::LaneChange { t0: 8.0, side: Side::Right, dur: 3.5 },
            PathEvent::LaneChange { t0: 16.0, side: Side::Left, dur: 3.5 },
        ],
    },
];

// ---------------------------------------------------------------------------------------------
// Ego track

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
    pub fn body_center(&self) -> [f64; 2] {
        [
            self.x + EGO_CENTER_AHEAD * self.yaw.cos(),
            self.y + EGO_CENTER_AHEAD * self.yaw.sin(),
        ]
    }
}

/// The ego's drive: speed integrated on a 1 ms grid, the path on a 2 cm arc-length grid.
#[derive(Debug, Clone)]
pub struct EgoTrack {
    v: Vec<f64>,
    a: Vec<f64>,
    s: Vec<f64>,
    px: Vec<f64>,
    py: Vec<f64>,
    /// Unwrapped heading along the path.
    pyaw: Vec<f64>,
    pkappa: Vec<f64>,
    /// The path events that happen within the integrated span: (start s, length, event).
    events: Vec<(f64, f64, PathEvent)>,
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
    fn heading_at_s(&self, s: f64) -> f64 {
        lerp(&self.pyaw, s / DS)
    }

    fn point_at_s(&self, s: f64) -> [f64; 2] {
        [lerp(&self.px, s / DS), lerp(&self.py, s / DS)]
    }

    /// The earliest time at which the ego has driven `s` metres (T_BEGIN when already there).
    fn time_at_s(&self, s: f64) -> f64 {
        let i = self.s.partition_point(|&x| x < s);
        T_BEGIN + i as f64 * DT
    }

    /// Arc length driven by time `t`.
    pub fn s_at(&self, t: f64) -> f64 {
        lerp(&self.s, (t - T_BEGIN) / DT)
    }
}

// ---------------------------------------------------------------------------------------------
// Agents

/// How an agent moves: along a straight line at `yaw`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Motion {
    /// Standing still at `p`.
    Fixed { p: [f64; 2], yaw: f64 },
    /// Moving at constant `speed` the whole time; at t = 0 it is at `p`.
    Cruise { p: [f64; 2], yaw: f64, speed: f64 },
    /// Standing at `p` until `t_go`, then accelerating at `accel` to `speed`, and standing
    /// again once `dist` metres from `p` (∞: never).
    Go {
        p: [f64; 2],
        yaw: f64,
        t_go: f64,
        accel: f64,
        speed: f64,
        dist: f64,
    },
}

/// An agent's state at one time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgentState {
    /// Box centre [x, y, z] in the global frame (the box stands on the ground, z = h/2).
    pub center: [f64; 3],
    pub yaw: f64,
    pub velocity: [f64; 2],
    pub speed: f64,
}

/// One object of the world.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    /// Unique within the scene; also the object id the renderer reports.
    pub id: u32,
    pub kind: Kind,
    /// [w, l, h] (m).
    pub size: [f64; 3],
    pub motion: Motion,
    /// A vehicle parked at the kerb, or a cycle without rider.
    pub parked: bool,
}

impl Agent {
    pub fn class(&self) -> &'static str {
        self.kind.class
    }

    pub fn class_index(&self) -> usize {
        CLASSES
            .iter()
            .position(|c| *c == self.kind.class)
            .unwrap_or(CLASSES.len() - 1)
    }

    pub fn state(&self, t: f64) -> AgentState {
        let (p, yaw, dist, speed) = match self.motion {
            Motion::Fixed { p, yaw } => (p, yaw, 0.0, 0.0),
            Motion::Cruise { p, yaw, speed } => (p, yaw, speed * t, speed),
            Motion::Go {
                p,
                yaw,
                t_go,
                accel,
                speed,
                dist,
            } => {
                let tau = t - t_go;
                let t_acc = if accel > 0.0 { speed / accel } else { 0.0 };
                let (mut d, mut v) = if tau <= 0.0 {
                    (0.0, 0.0)
                } else if tau < t_acc {
                    (0.5 * accel * tau * tau, accel * tau)
                } else {
                    (0.5 * accel * t_acc * t_acc + speed * (tau - t_acc), speed)
                };
                if d >= dist {
                    d = dist;
                    v = 0.0;
                }
                (p, yaw, d, v)
            }
        };
        let (c, s) = (yaw.cos(), yaw.sin());
        AgentState {
            center: [p[0] + dist * c, p[1] + dist * s, 0.5 * self.size[2]],
            yaw,
            velocity: [speed * c, speed * s],
            speed,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The scene

/// Where a scene is, and on which side its traffic drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub location: &'static str,
    pub vehicle: &'static str,
    pub traffic: Traffic,
    /// Offset of local time from UTC, in hours (for log names).
    pub utc_offset_h: i64,
}

/// nuScenes' four locations; scene k is at `PLACES[k mod 4]`.
pub const PLACES: [Place; 4] = [
    Place {
        location: "boston-seaport",
        vehicle: "n008",
        traffic: Traffic::RightHand,
        utc_offset_h: -4,
    },
    Place {
        location: "singapore-onenorth",
        vehicle: "n015",
        traffic: Traffic::LeftHand,
        utc_offset_h: 8,
    },
    Place {
        location: "singapore-queenstown",
        vehicle: "n015",
        traffic: Traffic::LeftHand,
        utc_offset_h: 8,
    },
    Place {
        location: "singapore-hollandvillage",
        vehicle: "n015",
        traffic: Traffic::LeftHand,
        utc_offset_h: 8,
    },
];

/// One scene of the world.
#[derive(Debug, Clone)]
pub struct SceneWorld {
    pub index: usize,
    pub name: String,
    pub script: &'static Script,
    pub place: Place,
    pub duration_s: f64,
    pub roads: Vec<Road>,
    /// Centres of the junctions (where consecutive roads cross).
    pub junctions: Vec<[f64; 2]>,
    pub ego: EgoTrack,
    pub agents: Vec<Agent>,
}

/// A straight stretch of the drive: arc-length range, the lane changes in it and the lane the
/// ego starts it in.
struct Stretch {
    s0: f64,
    s1: f64,
    start_lane: u32,
}

impl SceneWorld {
    /// The world with its agents dropped: what the map masks and layers need once its images
    /// and tables are written.
    pub fn layout_only(mut self) -> Self {
        self.agents = Vec::new();
        self.ego = EgoTrack {
            v: Vec::new(),
            a: Vec::new(),
            s: Vec::new(),
            px: Vec::new(),
            py: Vec::new(),
            pyaw: Vec::new(),
            pkappa: Vec::new(),
            events: Vec::new(),
        };
        self
    }

    /// Builds scene `index` of the world drawn from `seed`.
    pub fn build(seed: u64, index: usize, duration_s: f64) -> Result<Self> {
        if !(duration_s.is_finite() && duration_s > 0.0) {
            return Err(Error::invalid(
                "scene duration",
                format!("must be positive, got {duration_s}"),
            ));
        }
        let script = &SCRIPTS[index % SCRIPTS.len()];
        let place = PLACES[index % PLACES.len()];
        let mut rng = Rng::new(seed, &format!("scene/{index}/layout"));
        // Each scene lies in its own part of a nuScenes-sized map.
        let start = [
            400.0 + 700.0 * (index % 3) as f64 + rng.range(0.0, 100.0),
            700.0 + 600.0 * ((index / 3) % 3) as f64 + rng.range(0.0, 100.0),
        ];
        let yaw0 = wrap_pi(rng.range(-PI, PI));
        let ego = EgoTrack::build(script, start, yaw0, duration_s + 1.0)?;
        let (roads, junctions) = lay_roads(script, &ego, place.traffic)?;
        let mut world = Self {
            index,
            name: format!("scene-{:04}", index + 1),
            script,
            place,
            duration_s,
            roads,
            junctions,
            ego,
            agents: Vec::new(),
        };
        world.agents = Cast::new(&world, seed).populate();
        Ok(world)
    }

    /// The ego at time `t`.
    pub fn ego_state(&self, t: f64) -> EgoState {
        self.ego.state(t)
    }
}

/// Splits the drive at its turns and lays a road under every straight stretch.
fn lay_roads(
    script: &Script,
    ego: &EgoTrack,
    traffic: Traffic,
) -> Result<(Vec<Road>, Vec<[f64; 2]>)> {
    let s_end = ego.s.last().copied().unwrap_or(0.0);
    // Turn intervals and lane changes in arc length.
    let turns: Vec<(f64, f64)> = ego.turns().iter().map(|&(a, b, _)| (a, b)).collect();
    let changes: Vec<(f64, Side)> = ego
        .events
        .iter()
        .filter_map(|&(s0, _, ev)| match ev {
            PathEvent::LaneChange { side, .. } => Some((s0, side)),
            PathEvent::Turn { .. } => None,
        })
        .collect();
    let mut bounds = vec![0.0];
    for &(a, b) in &turns {
        bounds.push(a);
        bounds.push(b);
    }
    bounds.push(s_end.max(bounds.last().copied().unwrap_or(0.0)));
    let mut stretches = Vec::new();
    for w in bounds.chunks(2) {
        let (s0, s1) = (w[0], w.get(1).copied().unwrap_or(w[0]));
        // Lane index moves outward (+1) when the change goes towards the kerb side.
        let outward = |side: Side| match (traffic, side) {
            (Traffic::RightHand, Side::Right) | (Traffic::LeftHand, Side::Left) => 1i32,
            _ => -1,
        };
        let steps: Vec<i32> = changes
            .iter()
            .filter(|(s, _)| *s >= s0 && *s < s1)
            .map(|(_, side)| outward(*side))
            .collect();
        let valid = |l0: i32| {
            let mut l = l0;
            steps.iter().all(|d| {
                l += d;
                (0..LANES_EACH_WAY as i32).contains(&l)
            })
        };
        let start_lane = (0..LANES_EACH_WAY as i32)
            .find(|&l| valid(l))
            .ok_or_else(|| {
                Error::invalid(
                    format!("script {}", script.name),
                    format!("its lane changes leave the {LANES_EACH_WAY}-lane carriageway"),
                )
            })?;
        stretches.push(Stretch {
            s0,
            s1,
            start_lane: start_lane as u32,
        });
    }
    let mut roads = Vec::new();
    for st in &stretches {
        let heading = wrap_pi(ego.heading_at_s(st.s0));
        let p = ego.point_at_s(st.s0);
        let mut road = Road {
            origin: p,
            heading,
            s_min: -160.0,
            s_max: (st.s1 - st.s0) + 160.0,
            lanes_each_way: LANES_EACH_WAY,
            lane_width: LANE_WIDTH,
            parking_width: PARKING_WIDTH,
            sidewalk_width: SIDEWALK_WIDTH,
            traffic,
        };
        let d = road.lane_d(st.start_lane, true);
        let l = road.left();
        road.origin = [p[0] - d * l[0], p[1] - d * l[1]];
        roads.push(road);
    }
    let mut junctions = Vec::new();
    for w in roads.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        // Solve a.origin + u·a.dir = b.origin + v·b.dir for u.
        let (da, db) = (a.dir(), b.dir());
        let det = da[0] * (-db[1]) - da[1] * (-db[0]);
        if det.abs() < 1e-9 {
            continue;
        }
        let rx = b.origin[0] - a.origin[0];
        let ry = b.origin[1] - a.origin[1];
        let u = (rx * (-db[1]) - ry * (-db[0])) / det;
        junctions.push(a.point(u, 0.0));
    }
    Ok((roads, junctions))
}

// ---------------------------------------------------------------------------------------------
// Placing agents

/// An oriented rectangle on the ground, for overlap tests.
#[derive(Debug, Clone, Copy)]
struct Footprint {
    c: [f64; 2],
    /// cos and sin of the heading.
    dir: [f64; 2],
    half_l: f64,
    half_w: f64,
}

impl Footprint {
    fn new(c: [f64; 2], yaw: f64, half_l: f64, half_w: f64) -> Self {
        Self {
            c,
            dir: [yaw.cos(), yaw.sin()],
            half_l,
            half_w,
        }
    }

    fn radius(&self) -> f64 {
        self.half_l.hypot(self.half_w)
    }

    /// Separating-axis test of two oriented rectangles.
    fn overlaps(&self, o: &Footprint) -> bool {
        let d = [o.c[0] - self.c[0], o.c[1] - self.c[1]];
        let reach = self.radius() + o.radius();
        if d[0] * d[0] + d[1] * d[1] > reach * reach {
            return false;
        }
        let axes = [
            self.dir,
            [-self.dir[1], self.dir[0]],
            o.dir,
            [-o.dir[1], o.dir[0]],
        ];
        axes.iter().all(|n| {
            let proj = |f: &Footprint| {
                let [c, s] = f.dir;
                f.half_l * (c * n[0] + s * n[1]).abs() + f.half_w * (-s * n[0] + c * n[1]).abs()
            };
            (d[0] * n[0] + d[1] * n[1]).abs() <= proj(self) + proj(o)
        })
    }
}

/// An agent standing still at `(s, d)` on `road`, facing `yaw`.
fn fixed(road: &Road, s: f64, d: f64, yaw: f64) -> Motion {
    Motion::Fixed {
        p: road.point(s, d),
        yaw,
    }
}

/// Times at which overlaps are checked.
fn check_times(duration: f64) -> Vec<f64> {
    let n = ((duration + 1.0) / 0.1).ceil() as usize;
    (0..=n).map(|i| -0.5 + i as f64 * 0.1).collect()
}

struct Cast<'a> {
    world: &'a SceneWorld,
    rng: Rng,
    times: Vec<f64>,
    ego_prints: Vec<Footprint>,
    agents: Vec<Agent>,
    prints: Vec<Vec<Footprint>>,
}

impl<'a> Cast<'a> {
    fn new(world: &'a SceneWorld, seed: u64) -> Self {
        let times = check_times(world.duration_s);
        let ego_prints = times
            .iter()
            .map(|&t| {
                let e = world.ego.state(t);
                Footprint::new(
                    e.body_center(),
                    e.yaw,
                    0.5 * EGO_SIZE[1] + 1.2,
                    0.5 * EGO_SIZE[0] + 0.5,
                )
            })
            .collect();
        Self {
            world,
            rng: Rng::new(seed, &format!("scene/{}/agents", world.index)),
            times,
            ego_prints,
            agents: Vec::new(),
            prints: Vec::new(),
        }
    }

    /// Adds an agent unless it would hit the ego or an agent already placed, or (when it stands
    /// still off its own road) stand inside another road's carriageway.
    fn add(&mut self, kind: Kind, motion: Motion, parked: bool, home: Option<usize>) -> bool {
        let jitter = 1.0 + self.rng.range(-0.06, 0.06);
        let size = [
            kind.wlh[0] * jitter,
            kind.wlh[1] * jitter,
            kind.wlh[2] * jitter,
        ];
        let agent = Agent {
            id: self.agents.len() as u32,
            kind,
            size,
            motion,
            parked,
        };
        let static_ = !matches!(motion, Motion::Cruise { .. } | Motion::Go { .. });
        let prints: Vec<Footprint> = if static_ {
            let st = agent.state(0.0);
            vec![Footprint::new(
                [st.center[0], st.center[1]],
                st.yaw,
                0.5 * size[1] + 0.15,
                0.5 * size[0] + 0.15,
            )]
        } else {
            self.times
                .iter()
                .map(|&t| {
                    let st = agent.state(t);
                    Footprint::new(
                        [st.center[0], st.center[1]],
                        st.yaw,
                        0.5 * size[1] + 0.25,
                        0.5 * size[0] + 0.25,
                    )
                })
                .collect()
        };
        let at = |i: usize, v: &[Footprint]| v[if v.len() == 1 { 0 } else { i }];
        for i in 0..self.times.len() {
            let me = at(i, &prints);
            if me.overlaps(&self.ego_prints[i]) {
                return false;
            }
            for other in &self.prints {
                // Two things standing still need one look, not one per time.
                if i > 0 && static_ && other.len() == 1 {
                    continue;
                }
                if me.overlaps(&at(i, other)) {
                    return false;
                }
            }
        }
        // Static things on one road's kerb must not stand in the junction's carriageway.
        if static_ {
            if let Some(h) = home {
                let c = prints[0].c;
                if self
                    .world
                    .roads
                    .iter()
                    .enumerate()
                    .any(|(j, r)| j != h && r.on_carriageway(c, 1.0))
                {
                    return false;
                }
            }
        }
        self.agents.push(agent);
        self.prints.push(prints);
        true
    }

    fn populate(mut self) -> Vec<Agent> {
        let w = self.world;
        // Which road the ego is on at the scene start and how far along it.
        let e0 = w.ego.state(0.0);
        let r0 = 0;
        let road0 = w.roads[r0].clone();
        let (s0, _) = road0.local([e0.x, e0.y]);
        self.mandatory(&road0, r0, s0);
        for (ri, road) in w.roads.iter().enumerate() {
            // The stretch of this road the ego covers during the scene.
            let (ta, tb) = self.time_on_road(ri);
            let ea = w.ego.state(ta);
            let eb = w.ego.state(tb);
            let (sa, _) = road.local([ea.x, ea.y]);
            let (sb, _) = road.local([eb.x, eb.y]);
            let mean_speed = (w.ego.s_at(tb) - w.ego.s_at(ta)) / (tb - ta).max(0.5);
            self.kerbside(road, ri, sa - 30.0, sb + 80.0);
            self.traffic(road, ri, sa, sb, ta, tb, mean_speed);
            self.work_zone(road, ri, sa, sb);
        }
        for ji in 0..w.junctions.len() {
            self.junction(ji);
        }
        self.agents
    }

    /// The interval of scene time during which the ego drives along road `ri`.
    fn time_on_road(&self, ri: usize) -> (f64, f64) {
        let w = self.world;
        let ego = &w.ego;
        let turns = ego.turns();
        let s_from = if ri == 0 {
            0.0
        } else {
            turns.get(ri - 1).map(|t| t.1).unwrap_or(0.0)
        };
        let s_to = turns.get(ri).map(|t| t.0).unwrap_or(f64::INFINITY);
        let ta = ego.time_at_s(s_from).max(0.0).min(w.duration_s);
        let tb = if s_to.is_finite() {
            ego.time_at_s(s_to)
        } else {
            w.duration_s
        };
        (ta, tb.clamp(ta, w.duration_s.max(ta)))
    }

    /// One of every class close to where the ego starts, so that even a short scene has them
    /// all; some stand behind others so that occlusion happens. The steps run in this order
    /// because each placement draws from the cast's random stream and takes the next id.
    fn mandatory(&mut self, road: &Road, ri: usize, s0: f64) {
        self.mandatory_kerbside(road, ri, s0);
        self.mandatory_sidewalk(road, ri, s0);
        self.mandatory_across(road, ri, s0);
        self.mandatory_overtaker(road, ri, s0);
    }

    /// Kerbside on the ego's side: a car, a truck with a pedestrian behind it, a motorcycle,
    /// and a child on the sidewalk beyond.
    fn mandatory_kerbside(&mut self, road: &Road, ri: usize, s0: f64) {
        let fwd = road.travel_heading(true);
        let park_f = road.parking_d(true);
        // Nothing wider: the ego may drive in the outer lane.
        self.add(
            kind_of("vehicle.car"),
            fixed(road, s0 + 14.0, park_f, fwd),
            true,
            Some(ri),
        );
        self.add(
            kind_of("vehicle.truck"),
            fixed(road, s0 + 26.0, park_f, fwd),
            true,
            Some(ri),
        );
        self.add(
            kind_of("human.pedestrian.adult"),
            fixed(
                road,
                s0 + 27.0,
                road.sidewalk_d(true, 0.25),
                fwd + FRAC_PI_2,
            ),
            false,
            Some(ri),
        );
        self.add(
            kind_of("vehicle.motorcycle"),
            fixed(road, s0 + 34.0, park_f, fwd),
            true,
            Some(ri),
        );
        self.add(
            kind_of("human.pedestrian.child"),
            fixed(road, s0 + 44.0, road.sidewalk_d(true, 0.2), fwd - FRAC_PI_2),
            false,
            Some(ri),
        );
    }

    /// The sidewalk on the ego's side: a bicycle rack with two bicycles, an animal walking
    /// beside a person, and something pushable.
    fn mandatory_sidewalk(&mut self, road: &Road, ri: usize, s0: f64) {
        let fwd = road.travel_heading(true);
        self.add(
            kind_of("static_object.bicycle_rack"),
            fixed(road, s0 + 20.0, road.sidewalk_d(true, 0.8), fwd),
            false,
            Some(ri),
        );
        self.add(
            kind_of("vehicle.bicycle"),
            fixed(road, s0 + 18.6, road.sidewalk_d(true, 0.3), fwd),
            true,
            Some(ri),
        );
        self.add(
            kind_of("vehicle.bicycle"),
            fixed(road, s0 + 21.4, road.sidewalk_d(true, 0.3), fwd),
            true,
            Some(ri),
        );
        self.add(
            kind_of("animal"),
            Motion::Cruise {
                p: road.point(s0 + 30.0, road.sidewalk_d(true, 0.5)),
                yaw: fwd,
                speed: 1.1,
            },
            false,
            Some(ri),
        );
        self.add(
            kind_of("human.pedestrian.adult"),
            Motion::Cruise {
                p: road.point(s0 + 31.5, road.sidewalk_d(true, 0.55)),
                yaw: fwd,
                speed: 1.1,
            },
            false,
            Some(ri),
        );
        self.add(
            kind_of("movable_object.pushable_pullable"),
            fixed(road, s0 + 38.0, road.sidewalk_d(true, 0.1), fwd),
            false,
            Some(ri),
        );
    }

    /// Across the road: a bus at its stop, a work zone, a parked trailer and an ambulance
    /// coming towards us; with them, debris at the ego's kerb.
    fn mandatory_across(&mut self, road: &Road, ri: usize, s0: f64) {
        let fwd = road.travel_heading(true);
        let bwd = road.travel_heading(false);
        let park_f = road.parking_d(true);
        let park_b = road.parking_d(false);
        self.add(
            kind_of("vehicle.bus.rigid"),
            fixed(road, s0 + 40.0, park_b, bwd),
            false,
            Some(ri),
        );
        self.add(
            kind_of("human.pedestrian.adult"),
            fixed(road, s0 + 36.0, road.sidewalk_d(false, 0.3), bwd),
            false,
            Some(ri),
        );
        self.add(
            kind_of("vehicle.construction"),
            fixed(road, s0 + 62.0, park_b, bwd),
            true,
            Some(ri),
        );
        self.add(
            kind_of("vehicle.trailer"),
            fixed(road, s0 + 80.0, park_b, bwd),
            true,
            Some(ri),
        );
        for i in 0..5 {
            let s = s0 + 48.0 + 2.5 * f64::from(i);
            self.add(
                kind_of("movable_object.trafficcone"),
                fixed(
                    road,
                    s,
                    road.side_sign(false) * (road.lanes_half() + 0.4),
                    0.0,
                ),
                false,
                Some(ri),
            );
        }
        self.add(
            kind_of("movable_object.barrier"),
            fixed(road, s0 + 55.0, park_b, bwd + FRAC_PI_2),
            false,
            Some(ri),
        );
        self.add(
            kind_of("movable_object.barrier"),
            fixed(road, s0 + 69.0, park_b, bwd + FRAC_PI_2),
            false,
            Some(ri),
        );
        self.add(
            kind_of("human.pedestrian.construction_worker"),
            fixed(road, s0 + 58.0, road.sidewalk_d(false, 0.15), bwd),
            false,
            Some(ri),
        );
        self.add(
            kind_of("movable_object.debris"),
            fixed(road, s0 + 9.0, park_f, fwd + 0.4),
            false,
            Some(ri),
        );
        self.add(
            kind_of("vehicle.emergency.ambulance"),
            Motion::Cruise {
                p: road.point(s0 + 95.0, road.lane_d(0, false)),
                yaw: bwd,
                speed: 9.0,
            },
            false,
            Some(ri),
        );
    }

    /// A car overtaking in the other forward lane, hiding things behind it as it passes.
    fn mandatory_overtaker(&mut self, road: &Road, ri: usize, s0: f64) {
        let fwd = road.travel_heading(true);
        let e0 = self.world.ego.state(0.0);
        let (_, d_ego) = road.local([e0.x, e0.y]);
        let other_lane = if (d_ego - road.lane_d(0, true)).abs() < 1.0 {
            1
        } else {
            0
        };
        self.add(
            kind_of("vehicle.car"),
            Motion::Cruise {
                p: road.point(s0 - 12.0, road.lane_d(other_lane, true)),
                yaw: fwd,
                speed: e0.speed + 3.0,
            },
            false,
            Some(ri),
        );
    }

    /// Parked vehicles, sidewalk pedestrians and street furniture between `sa` and `sb`.
    fn kerbside(&mut self, road: &Road, ri: usize, sa: f64, sb: f64) {
        for forward in [true, false] {
            let heading = road.travel_heading(forward);
            let mut s = sa + self.rng.range(0.0, 8.0);
            while s < sb {
                if self.rng.chance(0.55) {
                    let u = self.rng.unit();
                    let cat = if u < 0.72 {
                        "vehicle.car"
                    } else if u < 0.8 {
                        "vehicle.truck"
                    } else if u < 0.84 {
                        "vehicle.trailer"
                    } else if u < 0.88 {
                        "vehicle.emergency.police"
                    } else if u < 0.92 {
                        "vehicle.construction"
                    } else {
                        "vehicle.motorcycle"
                    };
                    let p = Motion::Fixed {
                        p: road.point(s, road.parking_d(forward)),
                        yaw: heading + self.rng.range(-0.03, 0.03),
                    };
                    self.add(kind_of(cat), p, true, Some(ri));
                }
                s += self.rng.range(8.0, 20.0);
            }
            let mut s = sa + self.rng.range(0.0, 6.0);
            while s < sb {
                let u = self.rng.unit();
                let cat = if u < 0.62 {
                    "human.pedestrian.adult"
                } else if u < 0.72 {
                    "human.pedestrian.child"
                } else if u < 0.76 {
                    "human.pedestrian.police_officer"
                } else if u < 0.8 {
                    "human.pedestrian.stroller"
                } else if u < 0.83 {
                    "human.pedestrian.wheelchair"
                } else if u < 0.86 {
                    "human.pedestrian.personal_mobility"
                } else if u < 0.9 {
                    "animal"
                } else {
                    "movable_object.pushable_pullable"
                };
                let d = road.sidewalk_d(forward, self.rng.range(0.15, 0.85));
                let walking = cat != "movable_object.pushable_pullable" && self.rng.chance(0.55);
                let motion = if walking {
                    let dir = if self.rng.chance(0.5) {
                        heading
                    } else {
                        wrap_pi(heading + PI)
                    };
                    let speed = if cat == "animal" {
                        self.rng.range(0.8, 1.8)
                    } else {
                        self.rng.range(0.9, 1.6)
                    };
                    Motion::Cruise {
                        p: road.point(s, d),
                        yaw: dir,
                        speed,
                    }
                } else {
                    Motion::Fixed {
                        p: road.point(s, d),
                        yaw: heading + self.rng.range(-PI, PI),
                    }
                };
                self.add(kind_of(cat), motion, false, Some(ri));
                s += self.rng.range(5.0, 14.0);
            }
            if self.rng.chance(0.5) {
                let s = self.rng.range(sa, sb.max(sa + 1.0));
                let yaw = self.rng.range(-PI, PI);
                self.add(
                    kind_of("movable_object.debris"),
                    Motion::Fixed {
                        p: road.point(s, road.parking_d(forward)),
                        yaw,
                    },
                    false,
                    Some(ri),
                );
            }
        }
    }

    /// Moving traffic: oncoming vehicles, vehicles in the other forward lane, cyclists.
    #[allow(clippy::too_many_arguments)]
    fn traffic(
        &mut self,
        road: &Road,
        ri: usize,
        sa: f64,
        sb: f64,
        ta: f64,
        tb: f64,
        ego_speed: f64,
    ) {
        let fwd = road.travel_heading(true);
        let bwd = road.travel_heading(false);
        let span = (sb - sa).max(10.0);
        let n_oncoming = 3 + (span / 35.0) as usize;
        for _ in 0..n_oncoming {
            let u = self.rng.unit();
            let cat = if u < 0.55 {
                "vehicle.car"
            } else if u < 0.65 {
                "vehicle.bus.rigid"
            } else if u < 0.7 {
                "vehicle.bus.bendy"
            } else if u < 0.8 {
                "vehicle.truck"
            } else if u < 0.9 {
                "vehicle.motorcycle"
            } else {
                "vehicle.emergency.police"
            };
            let lane = self.rng.below(LANES_EACH_WAY as usize) as u32;
            let speed = self.rng.range(7.0, 13.0);
            // Where it is at t = 0 so that it meets the ego somewhere in the ego's stretch.
            let t_meet = self.rng.range(ta, tb.max(ta + 0.5));
            let s_meet =
                sa + (sb - sa) * ((t_meet - ta) / (tb - ta).max(0.5)) + self.rng.range(-10.0, 30.0);
            let s_now = s_meet + speed * t_meet;
            let d = road.lane_d(lane, false);
            let placed = self.add(
                kind_of(cat),
                Motion::Cruise {
                    p: road.point(s_now, d),
                    yaw: bwd,
                    speed,
                },
                false,
                Some(ri),
            );
            if placed && cat == "vehicle.truck" && self.rng.chance(0.6) {
                // A trailer towed behind the truck.
                let tl = self.agents.last().map(|a| a.size[1]).unwrap_or(7.0);
                let trailer = kind_of("vehicle.trailer");
                let s_tr = s_now + 0.5 * tl + 0.5 * trailer.wlh[1] + 0.6;
                self.add(
                    trailer,
                    Motion::Cruise {
                        p: road.point(s_tr, d),
                        yaw: bwd,
                        speed,
                    },
                    false,
                    Some(ri),
                );
            }
        }
        // Same direction, in whichever lane: the overlap test drops the ones the ego would hit.
        for _ in 0..(2 + (span / 60.0) as usize) {
            let u = self.rng.unit();
            let cat = if u < 0.6 {
                "vehicle.car"
            } else if u < 0.75 {
                "vehicle.truck"
            } else if u < 0.9 {
                "vehicle.motorcycle"
            } else {
                "vehicle.emergency.ambulance"
            };
            let lane = self.rng.below(LANES_EACH_WAY as usize) as u32;
            let speed = (ego_speed + self.rng.range(-3.0, 4.0)).max(3.0);
            let s_at_ta = sa + self.rng.range(-40.0, 60.0);
            let s_now = s_at_ta - speed * ta;
            self.add(
                kind_of(cat),
                Motion::Cruise {
                    p: road.point(s_now, road.lane_d(lane, true)),
                    yaw: fwd,
                    speed,
                },
                false,
                Some(ri),
            );
        }
        // Cyclists along the outer lane edge, both directions.
        for forward in [true, false] {
            let heading = road.travel_heading(forward);
            let d = road.side_sign(forward) * (road.lanes_half() - 0.7);
            let speed = self.rng.range(3.5, 5.5);
            // Its rider is part of the cycle box, as in nuScenes.
            let p = road.point(self.rng.range(sa - 10.0, sb + 40.0), d);
            self.add(
                kind_of("vehicle.bicycle"),
                Motion::Cruise {
                    p,
                    yaw: heading,
                    speed,
                },
                false,
                Some(ri),
            );
        }
    }

    /// A lane closure across the road: cones, barriers, a construction vehicle and a worker.
    fn work_zone(&mut self, road: &Road, ri: usize, sa: f64, sb: f64) {
        if !self.rng.chance(0.7) {
            return;
        }
        let forward = false;
        let bwd = road.travel_heading(false);
        let s = self.rng.range(sa + 15.0, (sb + 40.0).max(sa + 16.0));
        let d_edge = road.side_sign(forward) * (road.lanes_half() + 0.3);
        for i in 0..4 {
            let si = s + 3.0 * f64::from(i);
            self.add(
                kind_of("movable_object.trafficcone"),
                Motion::Fixed {
                    p: road.point(si, d_edge),
                    yaw: 0.0,
                },
                false,
                Some(ri),
            );
        }
        self.add(
            kind_of("movable_object.barrier"),
            Motion::Fixed {
                p: road.point(s + 13.0, road.parking_d(forward)),
                yaw: bwd + FRAC_PI_2,
            },
            false,
            Some(ri),
        );
        self.add(
            kind_of("vehicle.construction"),
            Motion::Fixed {
                p: road.point(s + 19.0, road.parking_d(forward)),
                yaw: bwd,
            },
            true,
            Some(ri),
        );
        self.add(
            kind_of("human.pedestrian.construction_worker"),
            Motion::Fixed {
                p: road.point(s + 15.0, road.sidewalk_d(forward, 0.2)),
                yaw: bwd + FRAC_PI_2,
            },
            false,
            Some(ri),
        );
    }

    /// At a junction: pedestrians crossing, vehicles waiting on the cross road, then going.
    fn junction(&mut self, ji: usize) {
        let w = self.world;
        let (Some(a), Some(b)) = (w.roads.get(ji), w.roads.get(ji + 1)) else {
            return;
        };
        let j = w.junctions[ji];
        let (sja, _) = a.local(j);
        let (sjb, _) = b.local(j);
        let t_turn = w.ego.turns().get(ji).map(|t| t.2).unwrap_or(0.0);
        // Crosswalks just outside the other road's carriageway, on both roads.
        for (road, sj, other) in [(a, sja, b), (b, sjb, a)] {
            for side in [-1.0, 1.0] {
                let s_cross = sj + side * (other.kerb_half() + 2.0);
                let n = 1 + self.rng.below(3);
                for i in 0..n {
                    let from_left = self.rng.chance(0.5);
                    let half = road.kerb_half() + 1.0;
                    let (d0, d1) = if from_left {
                        (half, -half)
                    } else {
                        (-half, half)
                    };
                    let yaw = road.heading + if from_left { -FRAC_PI_2 } else { FRAC_PI_2 };
                    let p = road.point(s_cross + 0.8 * i as f64, d0);
                    let t_go = self.rng.range(-2.0, w.duration_s);
                    let cat = if self.rng.chance(0.85) {
                        "human.pedestrian.adult"
                    } else {
                        "human.pedestrian.child"
                    };
                    let speed = self.rng.range(1.1, 1.6);
                    self.add(
                        kind_of(cat),
                        Motion::Go {
                            p,
                            yaw,
                            t_go,
                            accel: 1.5,
                            speed,
                            dist: (d1 - d0).abs(),
                        },
                        false,
                        None,
                    );
                }
            }
        }
        // A vehicle waiting at the stop line of each arm of the cross road, going later.
        let ri_b = ji + 1;
        for forward in [true, false] {
            let heading = b.travel_heading(forward);
            let dir = if forward { 1.0 } else { -1.0 };
            let s_stop = sjb - dir * (a.kerb_half() + 3.0 + 2.5);
            let p = b.point(s_stop, b.lane_d(0, forward));
            let t_go = t_turn + self.rng.range(2.0, 6.0);
            let cat = if self.rng.chance(0.8) {
                "vehicle.car"
            } else {
                "vehicle.truck"
            };
            self.add(
                kind_of(cat),
                Motion::Go {
                    p,
                    yaw: heading,
                    t_go,
                    accel: 2.0,
                    speed: 9.0,
                    dist: f64::INFINITY,
                },
                false,
                Some(ri_b),
            );
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn scripts_integrate_smoothly_and_stay_on_their_lanes() {
        for (i, sc) in SCRIPTS.iter().enumerate() {
            let w = SceneWorld::build(3, i, 20.0).unwrap();
            let mut prev = w.ego_state(T_BEGIN);
            for k in 1..=2100 {
                let t = T_BEGIN + k as f64 * 0.01;
                let e = w.ego_state(t);
                assert!(
                    e.speed >= 0.0 && e.speed < 25.0,
                    "{}: speed {}",
                    sc.name,
                    e.speed
                );
                // Position moves by speed·dt along the heading (consistency of the two grids).
                let step = ((e.x - prev.x).powi(2) + (e.y - prev.y).powi(2)).sqrt();
                let expect = 0.5 * (e.speed + prev.speed) * 0.01;
                assert!(
                    (step - expect).abs() < 2e-3,
                    "{} t={t}: moved {step}, expected {expect}",
                    sc.name
                );
                if step > 1e-3 {
                    let dir = (e.y - prev.y).atan2(e.x - prev.x);
                    assert!(
                        wrap_pi(dir - e.yaw).abs() < 0.02,
                        "{}: heading off the path at {t}",
                        sc.name
                    );
                }
                prev = e;
            }
            // The ego is on a carriageway at all times.
            for k in 0..=40 {
                let e = w.ego_state(k as f64 * 0.5);
                assert!(
                    w.roads.iter().any(|r| r.on_carriageway([e.x, e.y], 0.0)),
                    "{}: off road at {}",
                    sc.name,
                    e.t
                );
            }
        }
    }

    #[test]
    fn stops_are_exact_and_turns_are_right_angles() {
        let w = SceneWorld::build(0, 0, 20.0).unwrap();
        assert_eq!(w.ego_state(9.0).speed, 0.0);
        let (a, b) = (w.ego_state(9.0), w.ego_state(10.0));
        assert_eq!((a.x, a.y), (b.x, b.y));
        let before = w.ego_state(14.0).yaw;
        let after = w.ego_state(19.9).yaw;
        assert!((wrap_pi(after - before) - FRAC_PI_2).abs() < 1e-3);
        assert_eq!(w.roads.len(), 2);
        assert_eq!(w.junctions.len(), 1);
    }

    #[test]
    fn every_class_is_cast_and_nothing_overlaps_the_ego() {
        for i in 0..SCRIPTS.len() {
            let w = SceneWorld::build(11, i, 20.0).unwrap();
            for c in CLASSES {
                assert!(
                    w.agents.iter().any(|a| a.class() == c),
                    "scene {i} lacks {c}"
                );
            }
            for t in check_times(20.0) {
                let e = w.ego_state(t);
                let ego =
                    Footprint::new(e.body_center(), e.yaw, 0.5 * EGO_SIZE[1], 0.5 * EGO_SIZE[0]);
                for a in &w.agents {
                    let s = a.state(t);
                    let f = Footprint::new(
                        [s.center[0], s.center[1]],
                        s.yaw,
                        0.5 * a.size[1],
                        0.5 * a.size[0],
                    );
                    assert!(
                        !f.overlaps(&ego),
                        "scene {i}: agent {} hits the ego at {t}",
                        a.id
                    );
                }
            }
            for k in 0..40 {
                let t = 0.5 * f64::from(k);
                let prints: Vec<Footprint> = w
                    .agents
                    .iter()
                    .map(|a| {
                        let s = a.state(t);
                        Footprint::new(
                            [s.center[0], s.center[1]],
                            s.yaw,
                            0.5 * a.size[1],
                            0.5 * a.size[0],
                        )
                    })
                    .collect();
                for (x, p) in prints.iter().enumerate() {
                    for q in &prints[..x] {
                        assert!(
                            !p.overlaps(q),
                            "scene {i}: agent {x} overlaps another at {t}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn scenes_are_busy() {
        for i in 0..SCRIPTS.len() {
            let w = SceneWorld::build(11, i, 20.0).unwrap();
            let pedestrians = w
                .agents
                .iter()
                .filter(|a| a.class() == "pedestrian")
                .count();
            let cars = w.agents.iter().filter(|a| a.class() == "car").count();
            assert!(
                w.agents.len() >= 60 && pedestrians >= 10 && cars >= 10,
                "scene {i}: {} agents",
                w.agents.len()
            );
        }
    }

    #[test]
    fn footprint_overlap() {
        let a = Footprint::new([0.0, 0.0], 0.0, 2.0, 1.0);
        let b = Footprint::new([3.9, 0.0], 0.0, 2.0, 1.0);
        let c = Footprint::new([4.1, 0.0], 0.0, 2.0, 1.0);
        let d = Footprint::new([3.2, 3.2], 0.785, 2.0, 0.2);
        assert!(a.overlaps(&b));
        assert!(!a.overlaps(&c));
        assert!(!a.overlaps(&d));
    }
}
