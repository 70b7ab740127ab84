//! The manoeuvre scripts: what the ego does, as a speed profile and path events in time.

/// A left or right turn, lane change, ….
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Left,
    Right,
}

impl Side {
    pub(super) fn sign(self) -> f64 {
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
