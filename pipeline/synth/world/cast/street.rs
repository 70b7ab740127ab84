//! Street life drawn along each road and at each junction: parked vehicles, people on the
//! sidewalks, moving traffic, work zones, crossings.

use std::f64::consts::{FRAC_PI_2, PI};

use super::super::agent::Motion;
use super::super::road::Road;
use super::super::{kind_of, LANES_EACH_WAY};
use super::Cast;
use crate::geometry::wrap_pi;

impl Cast<'_> {
    /// Parked vehicles, sidewalk pedestrians and street furniture between `sa` and `sb`.
    pub(super) fn kerbside(&mut self, road: &Road, ri: usize, sa: f64, sb: f64) {
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
    pub(super) fn traffic(
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
    pub(super) fn work_zone(&mut self, road: &Road, ri: usize, sa: f64, sb: f64) {
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
    pub(super) fn junction(&mut self, ji: usize) {
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
