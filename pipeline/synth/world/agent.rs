//! An agent of the world and how it moves.

use super::{Kind, CLASSES};

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

    pub(crate) fn class_index(&self) -> usize {
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
