//! Placing the agents: every candidate is tested against the ego and the agents already
//! placed over the whole scene and dropped if it would touch one. Every placement draws from
//! the cast's one random stream and takes the next id, so the order of the steps is part of
//! the output: [`Cast::populate`] fixes it; `mandatory` holds what every scene has near the
//! ego's start, `street` what is drawn along each road and at each junction.

mod mandatory;
mod street;

use super::agent::{Agent, Motion};
use super::road::Road;
use super::{Kind, SceneWorld, EGO_SIZE};
use crate::synth::tokens::Rng;

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

pub(super) struct Cast<'a> {
    world: &'a SceneWorld,
    rng: Rng,
    times: Vec<f64>,
    ego_prints: Vec<Footprint>,
    agents: Vec<Agent>,
    prints: Vec<Vec<Footprint>>,
}

impl<'a> Cast<'a> {
    pub(super) fn new(world: &'a SceneWorld, seed: u64) -> Self {
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

    pub(super) fn populate(mut self) -> Vec<Agent> {
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
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::{CLASSES, SCRIPTS};
    use super::*;

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
