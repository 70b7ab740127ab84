//! Rules as the config writes them: each question of the config names one rule type and its
//! parameters; the oracle ([`crate::egomotion::oracle`]) turns a rule into a function from a
//! clip's kinematics to a class index (the index into the question's `choices`) and the
//! evidence behind it.
//!
//! Class indices per rule type:
//!
//! | rule | classes |
//! |---|---|
//! | `threshold` | 0 when `value op threshold`, else 1 |
//! | `multi_threshold` | the first i with `value op thresholds[i]`, else `len(thresholds)` |
//! | `deadzone_sign`, `trend` | 0 when > `threshold_positive`, 1 when < `threshold_negative`, else 2 |
//! | `or_event` | 0 when any condition holds, else 1 |
//! | `sequential_event` | 0 when a second event follows a first one within the gap, else 1 |
//! | `state_machine` | 0 when ≥ `min_cycles` stop→go cycles, else 1 |
//! | `peak_half` | 0 first half, 1 second half, 2 no prominent peak |
//! | `half_comparison` | 0 first half stronger, 1 second half stronger, 2 similar |
//! | `dominant_axis` | 0 longitudinal, 1 lateral, 2 neither above its deadzone |
//!
//! The comparison operators are those of the reference implementation (which produced the
//! released benchmark), so boundary values land in the same class.

use serde::{Deserialize, Serialize};

/// A comparison of a value against a threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    LessThan,
    LessEqual,
    GreaterThan,
    GreaterEqual,
    /// |value| > threshold.
    AbsGreaterThan,
}

impl Op {
    #[inline]
    pub fn holds(self, v: f64, t: f64) -> bool {
        match self {
            Op::LessThan => v < t,
            Op::LessEqual => v <= t,
            Op::GreaterThan => v > t,
            Op::GreaterEqual => v >= t,
            Op::AbsGreaterThan => v.abs() > t,
        }
    }
}

/// One condition of an `or_event` rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    pub input: String,
    pub op: Op,
    pub threshold: f64,
}

/// One event of a `sequential_event` rule: the samples where `channel op threshold`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    pub channel: String,
    pub op: Op,
    pub threshold: f64,
}

/// A rule and its parameters, as written in the config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Rule {
    /// Binary: class 0 when `input op threshold`.
    Threshold {
        input: String,
        op: Op,
        threshold: f64,
    },
    /// Ordered bins: class i for the first `input op thresholds[i]`.
    MultiThreshold {
        input: String,
        op: Op,
        thresholds: Vec<f64>,
    },
    /// Sign with a deadzone (turn direction).
    DeadzoneSign {
        input: String,
        threshold_positive: f64,
        threshold_negative: f64,
    },
    /// Increasing/decreasing/steady with a deadzone (speed trend).
    Trend {
        input: String,
        threshold_positive: f64,
        threshold_negative: f64,
    },
    /// Any of several threshold conditions.
    OrEvent { conditions: Vec<Condition> },
    /// A first event followed by a second within [max(min_gap, floor), max_gap] seconds.
    SequentialEvent {
        first: Event,
        second: Event,
        min_gap_s: f64,
        max_gap_s: f64,
        /// The smallest gap that counts as "then" (the reference uses 1e-6 s: strictly later).
        min_gap_floor_s: f64,
    },
    /// Stop→go cycles on a channel: stopped below `stop_threshold`, moving above `go_threshold`.
    StateMachine {
        channel: String,
        stop_threshold: f64,
        go_threshold: f64,
        min_cycles: u32,
    },
    /// Which half holds the channel's first maximum, if it stands out from the mean.
    PeakHalf {
        channel: String,
        /// (peak − mean)/|mean| below this means no peak.
        prominence_ratio: f64,
        /// |mean| at or below this is "zero": then the peak itself must reach `prominence_ratio`.
        mean_epsilon: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_peak_value: Option<f64>,
    },
    /// Which half has the larger |aggregate| of a channel, unless they are within a relative
    /// `similarity_threshold` of each other.
    HalfComparison {
        channel: String,
        agg: String,
        similarity_threshold: f64,
        zero_epsilon: f64,
    },
    /// Longitudinal (|longitudinal| aggregated) against lateral (aggregated) acceleration.
    DominantAxis {
        longitudinal: String,
        lateral: String,
        agg: String,
        deadzone_long: f64,
        deadzone_lat: f64,
        ratio_threshold: f64,
        zero_epsilon: f64,
        /// The reference's α study left the deadzones unscaled (they were function defaults,
        /// not config keys); true scales them too.
        alpha_scales_deadzones: bool,
    },
}

impl Rule {
    /// The rule type's registry name (the `rule` column).
    pub fn type_name(&self) -> &'static str {
        match self {
            Rule::Threshold { .. } => "threshold",
            Rule::MultiThreshold { .. } => "multi_threshold",
            Rule::DeadzoneSign { .. } => "deadzone_sign",
            Rule::Trend { .. } => "trend",
            Rule::OrEvent { .. } => "or_event",
            Rule::SequentialEvent { .. } => "sequential_event",
            Rule::StateMachine { .. } => "state_machine",
            Rule::PeakHalf { .. } => "peak_half",
            Rule::HalfComparison { .. } => "half_comparison",
            Rule::DominantAxis { .. } => "dominant_axis",
        }
    }

    /// How many classes the rule produces.
    pub fn num_classes(&self) -> usize {
        match self {
            Rule::MultiThreshold { thresholds, .. } => thresholds.len() + 1,
            Rule::Threshold { .. }
            | Rule::OrEvent { .. }
            | Rule::SequentialEvent { .. }
            | Rule::StateMachine { .. } => 2,
            Rule::DeadzoneSign { .. }
            | Rule::Trend { .. }
            | Rule::PeakHalf { .. }
            | Rule::HalfComparison { .. }
            | Rule::DominantAxis { .. } => 3,
        }
    }

    /// The rule with its thresholds multiplied by `alpha`, as the reference's sensitivity study
    /// scales them: thresholds, deadzone bounds, stop/go speeds, similarity and ratio
    /// thresholds and the minimum peak; never gaps, prominence ratios, cycle counts or epsilons.
    pub fn scaled(&self, alpha: f64) -> Rule {
        let mut r = self.clone();
        match &mut r {
            Rule::Threshold { threshold, .. } => *threshold *= alpha,
            Rule::MultiThreshold { thresholds, .. } => {
                thresholds.iter_mut().for_each(|t| *t *= alpha)
            }
            Rule::DeadzoneSign {
                threshold_positive,
                threshold_negative,
                ..
            }
            | Rule::Trend {
                threshold_positive,
                threshold_negative,
                ..
            } => {
                *threshold_positive *= alpha;
                *threshold_negative *= alpha;
            }
            Rule::OrEvent { conditions } => {
                conditions.iter_mut().for_each(|c| c.threshold *= alpha)
            }
            Rule::SequentialEvent { first, second, .. } => {
                first.threshold *= alpha;
                second.threshold *= alpha;
            }
            Rule::StateMachine {
                stop_threshold,
                go_threshold,
                ..
            } => {
                *stop_threshold *= alpha;
                *go_threshold *= alpha;
            }
            Rule::PeakHalf { min_peak_value, .. } => {
                if let Some(m) = min_peak_value {
                    *m *= alpha;
                }
            }
            Rule::HalfComparison {
                similarity_threshold,
                ..
            } => *similarity_threshold *= alpha,
            Rule::DominantAxis {
                ratio_threshold,
                deadzone_long,
                deadzone_lat,
                alpha_scales_deadzones,
                ..
            } => {
                *ratio_threshold *= alpha;
                if *alpha_scales_deadzones {
                    *deadzone_long *= alpha;
                    *deadzone_lat *= alpha;
                }
            }
        }
        r
    }

    /// The keys [`Rule::scaled`] scales, for reports.
    pub fn scaled_keys(&self) -> Vec<String> {
        match self {
            Rule::Threshold { .. } => vec!["threshold".into()],
            Rule::MultiThreshold { .. } => vec!["thresholds".into()],
            Rule::DeadzoneSign { .. } | Rule::Trend { .. } => {
                vec!["threshold_positive".into(), "threshold_negative".into()]
            }
            Rule::OrEvent { conditions } => (0..conditions.len())
                .map(|i| format!("conditions[{i}].threshold"))
                .collect(),
            Rule::SequentialEvent { .. } => {
                vec!["first.threshold".into(), "second.threshold".into()]
            }
            Rule::StateMachine { .. } => vec!["stop_threshold".into(), "go_threshold".into()],
            Rule::PeakHalf { min_peak_value, .. } => min_peak_value
                .iter()
                .map(|_| "min_peak_value".to_string())
                .collect(),
            Rule::HalfComparison { .. } => vec!["similarity_threshold".into()],
            Rule::DominantAxis {
                alpha_scales_deadzones,
                ..
            } => {
                let mut v = vec!["ratio_threshold".to_string()];
                if *alpha_scales_deadzones {
                    v.extend(["deadzone_long".to_string(), "deadzone_lat".to_string()]);
                }
                v
            }
        }
    }

    /// Named numeric parameters, for `{name}` placeholders in question texts.
    pub fn named_params(&self) -> Vec<(String, f64)> {
        match self {
            Rule::Threshold { threshold, .. } => vec![("threshold".into(), *threshold)],
            Rule::MultiThreshold { thresholds, .. } => thresholds
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("threshold_{i}"), *t))
                .collect(),
            Rule::DeadzoneSign {
                threshold_positive,
                threshold_negative,
                ..
            }
            | Rule::Trend {
                threshold_positive,
                threshold_negative,
                ..
            } => vec![
                ("threshold_positive".into(), *threshold_positive),
                ("threshold_negative".into(), *threshold_negative),
            ],
            Rule::OrEvent { conditions } => conditions
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("threshold_{i}"), c.threshold))
                .collect(),
            Rule::SequentialEvent {
                first,
                second,
                min_gap_s,
                max_gap_s,
                ..
            } => vec![
                ("first_threshold".into(), first.threshold),
                ("second_threshold".into(), second.threshold),
                ("min_gap_s".into(), *min_gap_s),
                ("max_gap_s".into(), *max_gap_s),
            ],
            Rule::StateMachine {
                stop_threshold,
                go_threshold,
                ..
            } => vec![
                ("stop_threshold".into(), *stop_threshold),
                ("go_threshold".into(), *go_threshold),
            ],
            Rule::PeakHalf {
                prominence_ratio, ..
            } => vec![("prominence_ratio".into(), *prominence_ratio)],
            Rule::HalfComparison {
                similarity_threshold,
                ..
            } => vec![("similarity_threshold".into(), *similarity_threshold)],
            Rule::DominantAxis {
                ratio_threshold,
                deadzone_long,
                deadzone_lat,
                ..
            } => vec![
                ("ratio_threshold".into(), *ratio_threshold),
                ("deadzone_long".into(), *deadzone_long),
                ("deadzone_lat".into(), *deadzone_lat),
            ],
        }
    }
}
