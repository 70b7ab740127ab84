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
//!
//! The parts:
//!
//! * this file: the road and body dimensions, the agent classes and kinds, the places, and
//!   [`SceneWorld`], which puts a scene together;
//! * `script`: the manoeuvre scripts ([`SCRIPTS`]) and what they are made of;
//! * `ego`: the ego's drive, integrated from a script ([`EgoTrack`]);
//! * `road`: the straight roads ([`Road`]) and how they are laid under the drive;
//! * `agent`: an agent and how it moves ([`Agent`], [`agent::Motion`]);
//! * `cast`: placing the agents on the roads without collisions, in a fixed order (the random
//!   stream and the agent ids depend on it): the overlap test and the placement loop there, the
//!   objects every scene has in `cast/mandatory.rs`, the drawn street life in `cast/street.rs`.

mod agent;
mod cast;
mod ego;
mod road;
mod script;

use std::f64::consts::PI;

pub(crate) use agent::{Agent, AgentState};
pub(crate) use ego::{EgoState, EgoTrack};
pub(crate) use road::{Road, Traffic};
pub use script::{PathEvent, Script, Side, SpeedStep, SCRIPTS};

use cast::Cast;
use road::lay_roads;

use super::tokens::Rng;
use crate::geometry::wrap_pi;
use crate::{Error, Result};

/// Lane width (m).
pub(crate) const LANE_WIDTH: f64 = 3.5;
/// Lanes in each direction.
pub(crate) const LANES_EACH_WAY: u32 = 2;
/// Width of the kerbside parking strip (m).
pub(crate) const PARKING_WIDTH: f64 = 2.5;
/// Sidewalk width (m).
pub(crate) const SIDEWALK_WIDTH: f64 = 3.5;
/// The ego trajectory is defined from this time on, so camera frames that precede the first
/// keyframe by a few tens of milliseconds still have a pose.
pub(crate) const T_BEGIN: f64 = -1.0;
/// Ego body: [w, l, h] and how far its centre is ahead of the ego origin (the rear axle).
pub(crate) const EGO_SIZE: [f64; 3] = [1.9, 4.7, 1.6];
pub(crate) const EGO_CENTER_AHEAD: f64 = 1.35;

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
pub(crate) const KINDS: [Kind; 23] = [
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
pub(crate) const PLACES: [Place; 4] = [
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

impl SceneWorld {
    /// The world with its agents dropped: what the map masks and layers need once its images
    /// and tables are written.
    pub(crate) fn layout_only(mut self) -> Self {
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::f64::consts::FRAC_PI_2;

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
}
