//! What every scene has close to where the ego starts: one of every class, some hidden behind
//! others.

use std::f64::consts::FRAC_PI_2;

use super::super::agent::Motion;
use super::super::kind_of;
use super::super::road::Road;
use super::{fixed, Cast};

impl Cast<'_> {
    /// One of every class close to where the ego starts, so that even a short scene has them
    /// all; some stand behind others so that occlusion happens. The steps run in this order
    /// because each placement draws from the cast's random stream and takes the next id.
    pub(super) fn mandatory(&mut self, road: &Road, ri: usize, s0: f64) {
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
}
