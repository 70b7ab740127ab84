//! `configs/stsbench.toml`: the window, the class gates and every mining threshold.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::tracks::Kind;
use crate::{Error, Result};

/// The embedded default config.
pub const DEFAULT_TOML: &str = include_str!("../../configs/stsbench.toml");
/// The name errors give the embedded default.
pub(crate) const DEFAULT_NAME: &str = "configs/stsbench.toml (built in)";

macro_rules! section {
    ($name:ident { $($field:ident),* $(,)? }) => {
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $(pub $field: f64,)*
        }
        impl $name {
            fn values(&self) -> Vec<(&'static str, f64)> {
                vec![$((stringify!($field), self.$field),)*]
            }
        }
    };
}

section!(Accelerate { min_step, min_gain });
section!(Decelerate {
    max_step,
    min_drop,
    min_final_speed
});
section!(Stop {
    max_step,
    min_drop,
    max_final_speed
});
section!(Turn {
    min_rad,
    u_turn_min_rad
});
section!(Reverse {
    min_heading_gap_rad,
    min_mean_speed
});
section!(LaneChange {
    max_boundary_angle_deg
});
section!(Overtake {
    vehicle_max_distance,
    human_max_distance,
    vehicle_min_speed,
    human_min_speed,
    max_yaw_diff_deg
});
section!(Follow {
    max_lateral,
    max_distance,
    max_speed_diff,
    min_speed
});
section!(WaitPedCross {
    max_mean_speed,
    max_distance
});
section!(Stationary {
    max_speed,
    max_yaw_diff_deg,
    max_distance,
    max_lateral,
    min_longitudinal,
    side_max_longitudinal,
    side_min_lateral
});
section!(MovingBeside {
    max_longitudinal,
    min_lateral,
    max_distance,
    min_speed,
    max_yaw_diff_deg
});
section!(Pedestrian {
    cross_min_speed,
    max_ego_distance,
    run_min_speed,
    stand_max_speed,
    walk_min_speed,
    walk_max_speed
});
section!(WalkPair {
    min_speed,
    alongside_max_distance,
    alongside_max_yaw_diff_deg,
    opposite_max_distance,
    opposite_min_yaw_diff_deg
});
section!(Negatives {
    run_median,
    walk_median_min
});

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    pub frames: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Classes {
    pub vehicle: Vec<String>,
    pub human: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sampling {
    pub low_visibility_bins: Vec<u8>,
    pub max_mean_ego_distance: f64,
    pub max_per_scenario: usize,
    pub exempt: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mcq {
    pub negatives: usize,
    pub min_negatives: usize,
}

/// The whole config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StsConfig {
    pub window: Window,
    pub classes: Classes,
    pub accelerate: Accelerate,
    pub decelerate: Decelerate,
    pub stop: Stop,
    pub turn: Turn,
    pub reverse: Reverse,
    pub lane_change: LaneChange,
    pub overtake: Overtake,
    pub pass: Overtake,
    pub follow: Follow,
    pub wait_ped_cross: WaitPedCross,
    pub stationary: Stationary,
    pub moving_beside: MovingBeside,
    pub pedestrian: Pedestrian,
    pub walk_pair: WalkPair,
    pub negatives: Negatives,
    pub sampling: Sampling,
    pub mcq: Mcq,
}

impl StsConfig {
    /// The coarse class of a unified class.
    pub(crate) fn kind_of(&self, class: &str) -> Kind {
        if self.classes.vehicle.iter().any(|c| c == class) {
            Kind::Vehicle
        } else if self.classes.human.iter().any(|c| c == class) {
            Kind::Human
        } else {
            Kind::Other
        }
    }

    /// The largest distance at which any two-object scenario can hold: pairs farther apart on
    /// every keyframe are never examined.
    pub fn pair_radius(&self) -> f64 {
        [
            self.overtake.vehicle_max_distance,
            self.overtake.human_max_distance,
            self.pass.vehicle_max_distance,
            self.pass.human_max_distance,
            self.follow.max_distance,
            self.wait_ped_cross.max_distance,
            self.stationary.max_distance,
            self.moving_beside.max_distance,
            self.walk_pair.alongside_max_distance,
            self.walk_pair.opposite_max_distance,
        ]
        .into_iter()
        .fold(0.0, f64::max)
    }
}

impl crate::config::StageConfig for StsConfig {
    const DEFAULT_TOML: &'static str = DEFAULT_TOML;
    const DEFAULT_NAME: &'static str = DEFAULT_NAME;
    const WHAT: &'static str = "stsbench config";

    /// Fails with a message naming the bad key.
    fn validate(&self, file: &Path) -> Result<()> {
        let bad = |detail: String| Error::Config {
            file: file.to_path_buf(),
            detail,
        };
        if self.window.frames < 2 {
            return Err(bad(format!(
                "window.frames must be at least 2, got {}",
                self.window.frames
            )));
        }
        let sections: [(&str, Vec<(&str, f64)>); 15] = [
            ("accelerate", self.accelerate.values()),
            ("decelerate", self.decelerate.values()),
            ("stop", self.stop.values()),
            ("turn", self.turn.values()),
            ("reverse", self.reverse.values()),
            ("lane_change", self.lane_change.values()),
            ("overtake", self.overtake.values()),
            ("pass", self.pass.values()),
            ("follow", self.follow.values()),
            ("wait_ped_cross", self.wait_ped_cross.values()),
            ("stationary", self.stationary.values()),
            ("moving_beside", self.moving_beside.values()),
            ("pedestrian", self.pedestrian.values()),
            ("walk_pair", self.walk_pair.values()),
            ("negatives", self.negatives.values()),
        ];
        for (sec, vals) in sections {
            for (k, v) in vals {
                // Step thresholds may be negative; everything else is a magnitude.
                let signed = k.ends_with("_step");
                if !v.is_finite() || (!signed && v < 0.0) {
                    return Err(bad(format!(
                        "{sec}.{k} must be a finite{} number, got {v}",
                        if signed { "" } else { " non-negative" }
                    )));
                }
            }
        }
        for (k, v) in [
            ("overtake.max_yaw_diff_deg", self.overtake.max_yaw_diff_deg),
            ("pass.max_yaw_diff_deg", self.pass.max_yaw_diff_deg),
            (
                "stationary.max_yaw_diff_deg",
                self.stationary.max_yaw_diff_deg,
            ),
            (
                "moving_beside.max_yaw_diff_deg",
                self.moving_beside.max_yaw_diff_deg,
            ),
            (
                "walk_pair.alongside_max_yaw_diff_deg",
                self.walk_pair.alongside_max_yaw_diff_deg,
            ),
            (
                "walk_pair.opposite_min_yaw_diff_deg",
                self.walk_pair.opposite_min_yaw_diff_deg,
            ),
            (
                "lane_change.max_boundary_angle_deg",
                self.lane_change.max_boundary_angle_deg,
            ),
        ] {
            if v > 180.0 {
                return Err(bad(format!("{k} must be within [0, 180] degrees, got {v}")));
            }
        }
        for t in &self.sampling.exempt {
            if super::catalog::Scenario::parse(t).is_none() {
                return Err(bad(format!("sampling.exempt: unknown scenario {t:?}")));
            }
        }
        if self.mcq.negatives == 0 || self.mcq.negatives > 25 {
            return Err(bad(format!(
                "mcq.negatives must be within 1..=25, got {}",
                self.mcq.negatives
            )));
        }
        if self.mcq.min_negatives == 0 || self.mcq.min_negatives > self.mcq.negatives {
            return Err(bad(format!(
                "mcq.min_negatives ({}) must be within 1..=mcq.negatives ({})",
                self.mcq.min_negatives, self.mcq.negatives
            )));
        }
        if self.sampling.max_per_scenario == 0 {
            return Err(bad("sampling.max_per_scenario must be positive".into()));
        }
        Ok(())
    }
}
