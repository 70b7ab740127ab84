//! Rule evaluation: a config rule ([`Rule`]) compiled against the input registry and applied
//! to one clip's kinematics. Every class comes with the evidence behind it (the measured
//! values, event indices and times), so each label can be re-derived by hand.
//!
//! The comparison operators are those of the reference implementation (which produced the
//! released benchmark), so boundary values land in the same class.

use serde_json::{json, Map, Value};

use super::inputs::{Agg, Channel, Input, Measured};
pub use crate::egomotion::config::rule::{Condition, Event, Op, Rule};
use crate::egomotion::config::Parsed;
use crate::egomotion::kinematics::{argmax_by, Features, Kinematics};

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
    /// The rule with what it reads, as the config checks returned it.
    pub(super) fn from_parsed(rule: &Rule, parsed: Parsed) -> Self {
        Self {
            rule: rule.clone(),
            inputs: parsed.inputs,
            channels: parsed.channels,
            agg: parsed.agg,
        }
    }

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
