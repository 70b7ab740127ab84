//! The registry of rule types. Each question of the config names one rule type and its
//! parameters; a rule maps a clip's kinematics to a class index (the index into the question's
//! `choices`) and the evidence behind it.
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
use serde_json::{json, Map, Value};

use super::inputs::{Agg, Channel, Input, Measured};
use crate::egomotion::kinematics::{argmax_by, Features, Kinematics};

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

    /// Every registered rule type.
    pub const TYPES: [&'static str; 10] = [
        "threshold",
        "multi_threshold",
        "deadzone_sign",
        "trend",
        "or_event",
        "sequential_event",
        "state_machine",
        "peak_half",
        "half_comparison",
        "dominant_axis",
    ];

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

    /// Parses the rule's inputs and checks its parameters.
    pub fn compile(&self) -> Result<Compiled, String> {
        let inputs = self.checked_inputs()?;
        let channels = self.parse_channels()?;
        let agg = match self {
            Rule::HalfComparison { agg, .. } | Rule::DominantAxis { agg, .. } => {
                Some(Agg::parse(agg)?)
            }
            _ => None,
        };
        Ok(Compiled {
            rule: self.clone(),
            inputs,
            channels,
            agg,
        })
    }

    /// Checks the rule's numeric parameters and parses the inputs of the rules that read one
    /// value per input (none for the rules that read whole channels). The first bad value, in
    /// parameter order, names the error.
    fn checked_inputs(&self) -> Result<Vec<Input>, String> {
        Ok(match self {
            Rule::Threshold {
                input, threshold, ..
            } => {
                finite("threshold", *threshold)?;
                vec![Input::parse(input)?]
            }
            Rule::MultiThreshold {
                input, thresholds, ..
            } => {
                if thresholds.is_empty() {
                    return Err("thresholds must not be empty".into());
                }
                for t in thresholds {
                    finite("thresholds", *t)?;
                }
                if thresholds.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(format!(
                        "thresholds must be strictly ascending, got {thresholds:?}"
                    ));
                }
                vec![Input::parse(input)?]
            }
            Rule::DeadzoneSign {
                input,
                threshold_positive,
                threshold_negative,
            }
            | Rule::Trend {
                input,
                threshold_positive,
                threshold_negative,
            } => {
                finite("threshold_positive", *threshold_positive)?;
                finite("threshold_negative", *threshold_negative)?;
                if threshold_negative > threshold_positive {
                    return Err("threshold_negative must not exceed threshold_positive".into());
                }
                vec![Input::parse(input)?]
            }
            Rule::OrEvent { conditions } => {
                if conditions.is_empty() {
                    return Err("or_event needs at least one condition".into());
                }
                conditions
                    .iter()
                    .map(|c| {
                        finite("threshold", c.threshold)?;
                        Input::parse(&c.input)
                    })
                    .collect::<Result<Vec<_>, _>>()?
            }
            _ => {
                self.check_channel_params()?;
                Vec::new()
            }
        })
    }

    /// Checks the numeric parameters of the rules that read whole channels; the others check
    /// theirs with their inputs.
    fn check_channel_params(&self) -> Result<(), String> {
        match self {
            Rule::SequentialEvent {
                first,
                second,
                min_gap_s,
                max_gap_s,
                min_gap_floor_s,
            } => {
                for (n, v) in [
                    ("first.threshold", first.threshold),
                    ("second.threshold", second.threshold),
                    ("min_gap_s", *min_gap_s),
                    ("min_gap_floor_s", *min_gap_floor_s),
                ] {
                    finite(n, v)?;
                }
                if max_gap_s.is_nan() || *max_gap_s < 0.0 {
                    return Err("max_gap_s must be ≥ 0".into());
                }
            }
            Rule::StateMachine {
                stop_threshold,
                go_threshold,
                ..
            } => {
                finite("stop_threshold", *stop_threshold)?;
                finite("go_threshold", *go_threshold)?;
            }
            Rule::PeakHalf {
                prominence_ratio,
                mean_epsilon,
                ..
            } => {
                finite("prominence_ratio", *prominence_ratio)?;
                finite("mean_epsilon", *mean_epsilon)?;
            }
            Rule::HalfComparison {
                similarity_threshold,
                zero_epsilon,
                ..
            } => {
                finite("similarity_threshold", *similarity_threshold)?;
                finite("zero_epsilon", *zero_epsilon)?;
            }
            Rule::DominantAxis {
                deadzone_long,
                deadzone_lat,
                ratio_threshold,
                zero_epsilon,
                ..
            } => {
                for (n, v) in [
                    ("deadzone_long", *deadzone_long),
                    ("deadzone_lat", *deadzone_lat),
                    ("ratio_threshold", *ratio_threshold),
                    ("zero_epsilon", *zero_epsilon),
                ] {
                    finite(n, v)?;
                }
            }
            Rule::Threshold { .. }
            | Rule::MultiThreshold { .. }
            | Rule::DeadzoneSign { .. }
            | Rule::Trend { .. }
            | Rule::OrEvent { .. } => {}
        }
        Ok(())
    }

    /// Parses the channels of the rules that read whole channels (none for the others).
    fn parse_channels(&self) -> Result<Vec<Channel>, String> {
        Ok(match self {
            Rule::SequentialEvent { first, second, .. } => {
                vec![
                    Channel::parse(&first.channel)?,
                    Channel::parse(&second.channel)?,
                ]
            }
            Rule::StateMachine { channel, .. }
            | Rule::PeakHalf { channel, .. }
            | Rule::HalfComparison { channel, .. } => vec![Channel::parse(channel)?],
            Rule::DominantAxis {
                longitudinal,
                lateral,
                ..
            } => vec![Channel::parse(longitudinal)?, Channel::parse(lateral)?],
            _ => Vec::new(),
        })
    }
}

/// `Ok` when `v` is finite; else the error names the parameter.
fn finite(name: &str, v: f64) -> Result<(), String> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(format!("{name} must be finite, got {v}"))
    }
}

/// A rule with its inputs parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Compiled {
    pub rule: Rule,
    inputs: Vec<Input>,
    channels: Vec<Channel>,
    agg: Option<Agg>,
}

/// Adds `index` and `time_s` of a measured value to an evidence object.
fn with_sample(mut e: Map<String, Value>, m: &Measured, t: &[f64]) -> Map<String, Value> {
    if let Some(i) = m.index {
        e.insert("index".into(), json!(i));
        e.insert("time_s".into(), json!(t.get(i)));
    }
    e
}

fn measured(input: &Input, m: &Measured, t: &[f64]) -> Map<String, Value> {
    let mut e = Map::new();
    e.insert("input".into(), json!(describe(input)));
    e.insert("value".into(), json!(m.value));
    with_sample(e, m, t)
}

/// The config spelling of an input.
fn describe(input: &Input) -> String {
    match input {
        Input::Feature(n) => (*n).to_string(),
        Input::Aggregate(a, c) => {
            let agg = match a {
                Agg::Mean => "mean".to_string(),
                Agg::Min => "min".into(),
                Agg::Max => "max".into(),
                Agg::Rms => "rms".into(),
                Agg::AbsMax => "abs_max".into(),
                Agg::MaxAbs => "max_abs".into(),
                Agg::MeanAbs => "mean_abs".into(),
                Agg::Percentile(p) => format!("p{p}"),
            };
            format!("{agg}({})", c.name())
        }
    }
}

impl Compiled {
    /// The class index, and the evidence when `evidence` is set.
    pub fn evaluate(&self, k: &Kinematics, f: &Features, evidence: bool) -> (usize, Option<Value>) {
        let t = &k.t;
        match &self.rule {
            Rule::Threshold { op, threshold, .. } => {
                let m = self.inputs[0].measure(k, f);
                let hit = op.holds(m.value, *threshold);
                let ev = evidence.then(|| {
                    let mut e = measured(&self.inputs[0], &m, t);
                    e.insert("satisfied".into(), json!(hit));
                    Value::Object(e)
                });
                (if hit { 0 } else { 1 }, ev)
            }
            Rule::MultiThreshold { op, thresholds, .. } => {
                let m = self.inputs[0].measure(k, f);
                let class = thresholds
                    .iter()
                    .position(|th| op.holds(m.value, *th))
                    .unwrap_or(thresholds.len());
                (
                    class,
                    evidence.then(|| Value::Object(measured(&self.inputs[0], &m, t))),
                )
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
                let m = self.inputs[0].measure(k, f);
                let class = if m.value > *threshold_positive {
                    0
                } else if m.value < *threshold_negative {
                    1
                } else {
                    2
                };
                (
                    class,
                    evidence.then(|| Value::Object(measured(&self.inputs[0], &m, t))),
                )
            }
            Rule::OrEvent { conditions } => self.or_event(conditions, k, f, evidence),
            Rule::SequentialEvent {
                first,
                second,
                min_gap_s,
                max_gap_s,
                min_gap_floor_s,
            } => self.sequential_event(
                k,
                evidence,
                first,
                second,
                min_gap_s.max(*min_gap_floor_s),
                *max_gap_s,
            ),
            Rule::StateMachine {
                stop_threshold,
                go_threshold,
                min_cycles,
                ..
            } => self.state_machine(k, evidence, *stop_threshold, *go_threshold, *min_cycles),
            Rule::PeakHalf {
                prominence_ratio,
                mean_epsilon,
                min_peak_value,
                ..
            } => self.peak_half(
                k,
                evidence,
                *prominence_ratio,
                *mean_epsilon,
                *min_peak_value,
            ),
            Rule::HalfComparison {
                similarity_threshold,
                zero_epsilon,
                ..
            } => self.half_comparison(k, evidence, *similarity_threshold, *zero_epsilon),
            Rule::DominantAxis {
                deadzone_long,
                deadzone_lat,
                ratio_threshold,
                zero_epsilon,
                ..
            } => self.dominant_axis(
                k,
                evidence,
                *deadzone_long,
                *deadzone_lat,
                *ratio_threshold,
                *zero_epsilon,
            ),
        }
    }

    /// `or_event`: every condition is measured (not only up to the first that holds) so the
    /// evidence shows each one.
    fn or_event(
        &self,
        conditions: &[Condition],
        k: &Kinematics,
        f: &Features,
        evidence: bool,
    ) -> (usize, Option<Value>) {
        let t = &k.t;
        let mut any = false;
        let mut ev = Vec::new();
        for (c, input) in conditions.iter().zip(&self.inputs) {
            let m = input.measure(k, f);
            let met = c.op.holds(m.value, c.threshold);
            any |= met;
            if evidence {
                let mut e = measured(input, &m, t);
                e.insert("met".into(), json!(met));
                ev.push(Value::Object(e));
            }
        }
        (
            if any { 0 } else { 1 },
            evidence.then(|| json!({ "conditions": ev })),
        )
    }

    /// `sequential_event`: the earliest first event that some second event follows within
    /// `[gap_lo, max_gap_s]` seconds.
    fn sequential_event(
        &self,
        k: &Kinematics,
        evidence: bool,
        first: &Event,
        second: &Event,
        gap_lo: f64,
        max_gap_s: f64,
    ) -> (usize, Option<Value>) {
        let t = &k.t;
        let (a, b) = (self.channels[0].of(k), self.channels[1].of(k));
        let firsts: Vec<usize> = (0..a.len())
            .filter(|&i| first.op.holds(a[i], first.threshold))
            .collect();
        let seconds: Vec<usize> = (0..b.len().min(t.len()))
            .filter(|&i| second.op.holds(b[i], second.threshold))
            .collect();
        let mut found = None;
        for &i in &firsts {
            let Some(&t1) = t.get(i) else { continue };
            let (lo, hi) = (t1 + gap_lo, t1 + max_gap_s);
            // The earliest second event at or after lo (times are increasing).
            let p = seconds.partition_point(|&j| t[j] < lo);
            if let Some(&j) = seconds.get(p) {
                if t[j] <= hi {
                    found = Some((i, j));
                    break;
                }
            }
        }
        let ev = evidence.then(|| {
            let mut e = json!({
                "first_event_count": firsts.len(),
                "second_event_count": seconds.len(),
                "first_event_indices": firsts,
                "second_event_indices": seconds,
                "sequence_found": found.is_some(),
            });
            if let (Some((i, j)), Some(o)) = (found, e.as_object_mut()) {
                o.insert("first_event_index".into(), json!(i));
                o.insert("second_event_index".into(), json!(j));
                o.insert("first_event_time_s".into(), json!(t[i]));
                o.insert("second_event_time_s".into(), json!(t[j]));
                o.insert("gap_s".into(), json!(t[j] - t[i]));
            }
            e
        });
        (if found.is_some() { 0 } else { 1 }, ev)
    }

    /// `state_machine`: counts stop→go cycles; a clip that starts stopped opens with a stop.
    fn state_machine(
        &self,
        k: &Kinematics,
        evidence: bool,
        stop_threshold: f64,
        go_threshold: f64,
        min_cycles: u32,
    ) -> (usize, Option<Value>) {
        let t = &k.t;
        let v = self.channels[0].of(k);
        let mut cycles = 0u32;
        let mut stops = Vec::new();
        let mut goes = Vec::new();
        let mut stopped = v.first().is_some_and(|&s| s < stop_threshold);
        if stopped {
            stops.push(0);
        }
        for (i, &s) in v.iter().enumerate().skip(1) {
            if !stopped && s < stop_threshold {
                stopped = true;
                stops.push(i);
            } else if stopped && s > go_threshold {
                cycles += 1;
                stopped = false;
                goes.push(i);
            }
        }
        let ev = evidence.then(|| {
            json!({
                "stop_go_cycles": cycles,
                "stop_indices": stops,
                "go_indices": goes,
                "go_times_s": goes.iter().map(|&i| t.get(i)).collect::<Vec<_>>(),
            })
        });
        (if cycles >= min_cycles { 0 } else { 1 }, ev)
    }

    /// `peak_half`: the half of the first maximum, when it stands out from the mean (relative
    /// to |mean|, or absolutely when the mean is about zero) and reaches `min_peak_value`.
    fn peak_half(
        &self,
        k: &Kinematics,
        evidence: bool,
        prominence_ratio: f64,
        mean_epsilon: f64,
        min_peak_value: Option<f64>,
    ) -> (usize, Option<Value>) {
        let t = &k.t;
        let v = self.channels[0].of(k);
        let Some(peak) = argmax_by(v, |x| x) else {
            return (2, evidence.then(|| json!({ "error": "empty channel" })));
        };
        let mid = v.len() / 2;
        let pv = v[peak];
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let prominent = if mean.abs() > mean_epsilon {
            (pv - mean) / mean.abs() >= prominence_ratio
        } else {
            pv >= prominence_ratio
        };
        let big_enough = min_peak_value.is_none_or(|m| pv >= m);
        let class = if !prominent || !big_enough {
            2
        } else if peak < mid {
            0
        } else {
            1
        };
        let ev = evidence.then(|| {
            json!({
                "peak_index": peak,
                "peak_time_s": t.get(peak),
                "peak_value": pv,
                "mean_value": mean,
                "midpoint_index": mid,
                "is_prominent": prominent,
            })
        });
        (class, ev)
    }

    /// `half_comparison`: the half with the larger |aggregate|, unless the two are within
    /// `similarity_threshold` of the larger (or both about zero).
    fn half_comparison(
        &self,
        k: &Kinematics,
        evidence: bool,
        similarity_threshold: f64,
        zero_epsilon: f64,
    ) -> (usize, Option<Value>) {
        let t = &k.t;
        let v = self.channels[0].of(k);
        let agg = self.agg.unwrap_or(Agg::Rms);
        let mid = v.len() / 2;
        let (a, _) = agg.apply(&v[..mid]);
        let (b, _) = agg.apply(&v[mid..]);
        let (ma, mb) = (a.abs(), b.abs());
        let big = ma.max(mb);
        let rel = if big < zero_epsilon {
            0.0
        } else {
            (ma - mb).abs() / big
        };
        let class = if big < zero_epsilon || rel < similarity_threshold {
            2
        } else if ma > mb {
            0
        } else {
            1
        };
        let ev = evidence.then(|| {
            json!({
                "first_half": a,
                "second_half": b,
                "relative_difference": rel,
                "midpoint_index": mid,
                "midpoint_time_s": t.get(mid),
            })
        });
        (class, ev)
    }

    /// `dominant_axis`: neither axis when both stay within their deadzones,
    /// else lateral when it exceeds `ratio_threshold` times the longitudinal (or the
    /// longitudinal is about zero).
    fn dominant_axis(
        &self,
        k: &Kinematics,
        evidence: bool,
        deadzone_long: f64,
        deadzone_lat: f64,
        ratio_threshold: f64,
        zero_epsilon: f64,
    ) -> (usize, Option<Value>) {
        let agg = self.agg.unwrap_or(Agg::Rms);
        let long_abs: Vec<f64> = self.channels[0].of(k).iter().map(|x| x.abs()).collect();
        let (l, _) = agg.apply(&long_abs);
        let (lat, _) = agg.apply(self.channels[1].of(k));
        let ratio = if l < zero_epsilon {
            None
        } else {
            Some(lat / l)
        };
        let class = if l < deadzone_long && lat < deadzone_lat {
            2
        } else {
            match ratio {
                None => 1,
                Some(r) if r > ratio_threshold => 1,
                Some(_) => 0,
            }
        };
        let ev = evidence.then(|| json!({ "longitudinal": l, "lateral": lat, "ratio": ratio }));
        (class, ev)
    }
}
