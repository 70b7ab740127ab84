//! Straight roads, and laying them under the ego's drive: one per straight stretch, the
//! turns being the junctions between consecutive ones.

use std::f64::consts::PI;

use super::ego::EgoTrack;
use super::script::{PathEvent, Script, Side};
use super::{LANES_EACH_WAY, LANE_WIDTH, PARKING_WIDTH, SIDEWALK_WIDTH};
use crate::geometry::wrap_pi;
use crate::{Error, Result};

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

    pub(super) fn side_sign(&self, forward: bool) -> f64 {
        if forward {
            self.forward_sign()
        } else {
            -self.forward_sign()
        }
    }

    /// The centre of lane `lane` (0 next to the centre line) of the forward (+s) or backward
    /// carriageway.
    pub(crate) fn lane_d(&self, lane: u32, forward: bool) -> f64 {
        self.side_sign(forward) * (f64::from(lane) + 0.5) * self.lane_width
    }

    /// Half the width of the lanes alone.
    pub(crate) fn lanes_half(&self) -> f64 {
        f64::from(self.lanes_each_way) * self.lane_width
    }

    /// Half the width from kerb to kerb (lanes and parking strips).
    pub(crate) fn kerb_half(&self) -> f64 {
        self.lanes_half() + self.parking_width
    }

    /// Half the total width, sidewalks included.
    pub(crate) fn half_width(&self) -> f64 {
        self.kerb_half() + self.sidewalk_width
    }

    /// The middle of the parking strip on one side.
    pub(crate) fn parking_d(&self, forward: bool) -> f64 {
        self.side_sign(forward) * (self.lanes_half() + 0.5 * self.parking_width)
    }

    /// A point across the sidewalk on one side: `frac` 0 at the kerb, 1 at the far edge.
    pub(crate) fn sidewalk_d(&self, forward: bool, frac: f64) -> f64 {
        self.side_sign(forward) * (self.kerb_half() + frac * self.sidewalk_width)
    }

    /// Heading of travel on the forward or backward carriageway.
    pub(crate) fn travel_heading(&self, forward: bool) -> f64 {
        if forward {
            self.heading
        } else {
            wrap_pi(self.heading + PI)
        }
    }

    /// Whether a point lies between the kerbs (within the s extent).
    pub(crate) fn on_carriageway(&self, p: [f64; 2], margin: f64) -> bool {
        let (s, d) = self.local(p);
        s >= self.s_min && s <= self.s_max && d.abs() <= self.kerb_half() + margin
    }
}

/// A straight stretch of the drive: arc-length range, the lane changes in it and the lane the
/// ego starts it in.
struct Stretch {
    s0: f64,
    s1: f64,
    start_lane: u32,
}

/// Splits the drive at its turns and lays a road under every straight stretch.
pub(super) fn lay_roads(
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
