//! The sentence that defines a question's answer words from its rule, in the config's (α-scaled)
//! thresholds, so a model is not left to guess where "slow" ends and "urban" begins. It is part
//! of the compiled question ([`super::Question::definitions`]); the prompts show it after the
//! options.

use super::inputs::{Agg, Channel, Input};
use super::rules::{Condition, Event, Op, Rule};
use crate::qa::prompt::{and_list, quoted as q, short_number as num};

/// How a channel is named: its noun, what it is, its sign convention, and its unit.
fn channel_words(c: Channel) -> (&'static str, &'static str, &'static str, &'static str) {
    match c {
        Channel::T => ("time", "", "", "s"),
        Channel::X => ("x position", "", "", "m"),
        Channel::Y => ("y position", "", "", "m"),
        Channel::Yaw => ("heading", "", "positive anticlockwise", "rad"),
        Channel::Speed => ("speed", "", "", "m/s"),
        Channel::Accel => (
            "acceleration",
            "the rate of change of speed",
            "negative when slowing down",
            "m/s²",
        ),
        Channel::Jerk => ("jerk", "the rate of change of acceleration", "", "m/s³"),
        Channel::YawRate => ("yaw rate", "", "positive when turning left", "rad/s"),
        Channel::LatAccel => (
            "lateral acceleration",
            "speed × yaw rate",
            "positive to the left",
            "m/s²",
        ),
        Channel::LatAccelAbs => ("lateral acceleration", "speed × |yaw rate|", "", "m/s²"),
    }
}

/// ` (what; sign)`, or nothing; the sign only where the value keeps it.
fn note(c: Channel, signed: bool) -> String {
    let (_, what, sign, _) = channel_words(c);
    let parts: Vec<&str> = [what, if signed { sign } else { "" }]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}

/// The adjective of an aggregation, and whether its value keeps the channel's sign.
fn agg_words(agg: Agg) -> (String, bool) {
    match agg {
        Agg::Mean => ("mean".into(), true),
        Agg::Min => ("lowest".into(), true),
        Agg::Max => ("highest".into(), true),
        Agg::Rms => ("root-mean-square".into(), false),
        Agg::AbsMax => ("largest-magnitude".into(), true),
        Agg::MaxAbs => ("peak absolute".into(), false),
        Agg::MeanAbs => ("mean absolute".into(), false),
        Agg::Percentile(p) => (format!("{}th-percentile", num(p)), true),
    }
}

/// `agg(channel)` in words (`the lowest acceleration in the clip (…)`) and its unit.
fn aggregate_words(agg: Agg, c: Channel) -> (String, &'static str) {
    let (noun, _, _, unit) = channel_words(c);
    let (adj, signed) = agg_words(agg);
    let span = match agg {
        Agg::Min | Agg::Max | Agg::AbsMax | Agg::MaxAbs => "in the clip",
        _ => "over the clip",
    };
    (format!("the {adj} {noun} {span}{}", note(c, signed)), unit)
}

/// What a rule input measures, in words, and its unit.
fn input_words(input: &Input) -> (String, &'static str) {
    match input {
        Input::Aggregate(agg, c) => aggregate_words(*agg, *c),
        Input::Feature(name) => match *name {
            "max_speed" => aggregate_words(Agg::Max, Channel::Speed),
            "mean_speed" => aggregate_words(Agg::Mean, Channel::Speed),
            "min_accel" => aggregate_words(Agg::Min, Channel::Accel),
            "max_accel" => aggregate_words(Agg::Max, Channel::Accel),
            "mean_accel" => aggregate_words(Agg::Mean, Channel::Accel),
            "max_abs_yaw_rate" => aggregate_words(Agg::MaxAbs, Channel::YawRate),
            "signed_max_yaw_rate" => aggregate_words(Agg::AbsMax, Channel::YawRate),
            "max_abs_jerk" => aggregate_words(Agg::MaxAbs, Channel::Jerk),
            "p95_abs_jerk" => (
                format!(
                    "the 95th percentile of the absolute jerk over the clip{}",
                    note(Channel::Jerk, false)
                ),
                "m/s³",
            ),
            "mean_abs_jerk" => aggregate_words(Agg::MeanAbs, Channel::Jerk),
            "max_lateral_accel" => aggregate_words(Agg::Max, Channel::LatAccelAbs),
            "total_heading_change" => (
                "the total heading change over the clip (all turning added up, left and right)"
                    .into(),
                "rad",
            ),
            "net_heading_change" => (
                "the heading change between the start and the end of the clip".into(),
                "rad",
            ),
            "max_abs_curvature" => (
                "the largest path curvature in the clip (|yaw rate| / speed)".into(),
                "1/m",
            ),
            other => (format!("the clip's {}", other.replace('_', " ")), ""),
        },
    }
}

/// A value with its unit (`0.5 m/s`).
fn with_unit(v: f64, unit: &str) -> String {
    if unit.is_empty() {
        num(v)
    } else {
        format!("{} {unit}", num(v))
    }
}

/// `is below 0.5 m/s`.
fn holds_words(op: Op, v: f64, unit: &str) -> String {
    let verb = match op {
        Op::LessThan => "is below",
        Op::LessEqual => "is at most",
        Op::GreaterThan => "is above",
        Op::GreaterEqual => "is at least",
        Op::AbsGreaterThan => "has a magnitude above",
    };
    format!("{verb} {}", with_unit(v, unit))
}

/// The sentence that defines a question's answer words from its (α-scaled) rule: what each
/// of `choices` (in the rule's class order) means, in the config's thresholds. Empty when the
/// question text already states its only threshold (`stated`: a `threshold` rule whose text
/// has a placeholder) or the choices do not match the rule's classes.
pub(crate) fn definitions(rule: &Rule, choices: &[String], stated: bool) -> String {
    if choices.len() != rule.num_classes() {
        return String::new();
    }
    let c: Vec<String> = choices.iter().map(|s| q(s)).collect();
    match rule {
        Rule::Threshold {
            input,
            op,
            threshold,
        } => {
            if stated {
                return String::new();
            }
            threshold_definition(&c, input, *op, *threshold)
        }
        Rule::MultiThreshold {
            input,
            op,
            thresholds,
        } => multi_threshold_definition(&c, input, *op, thresholds),
        Rule::DeadzoneSign {
            input,
            threshold_positive,
            threshold_negative,
        }
        | Rule::Trend {
            input,
            threshold_positive,
            threshold_negative,
        } => deadzone_definition(&c, input, *threshold_positive, *threshold_negative),
        Rule::OrEvent { conditions } => or_event_definition(&c, conditions),
        Rule::SequentialEvent {
            first,
            second,
            min_gap_s,
            max_gap_s,
            min_gap_floor_s,
        } => sequential_definition(&c, first, second, *min_gap_s, *max_gap_s, *min_gap_floor_s),
        Rule::StateMachine {
            channel,
            stop_threshold,
            go_threshold,
            min_cycles,
        } => state_machine_definition(&c, channel, *stop_threshold, *go_threshold, *min_cycles),
        Rule::PeakHalf {
            channel,
            prominence_ratio,
            min_peak_value,
            ..
        } => peak_half_definition(&c, channel, *prominence_ratio, *min_peak_value),
        Rule::HalfComparison {
            channel,
            agg,
            similarity_threshold,
            ..
        } => half_comparison_definition(&c, channel, agg, *similarity_threshold),
        Rule::DominantAxis {
            longitudinal,
            lateral,
            agg,
            deadzone_long,
            deadzone_lat,
            ratio_threshold,
            ..
        } => dominant_axis_definition(
            &c,
            longitudinal,
            lateral,
            agg,
            *deadzone_long,
            *deadzone_lat,
            *ratio_threshold,
        ),
    }
}

/// A rule input in words and its unit; `None` when the config's spelling does not parse (the
/// question then gets no definition rather than a wrong one).
fn measured(input: &str) -> Option<(String, &'static str)> {
    Input::parse(input).ok().map(|i| input_words(&i))
}

/// `threshold`: the first choice when the condition holds, the second otherwise.
fn threshold_definition(c: &[String], input: &str, op: Op, threshold: f64) -> String {
    let Some((what, unit)) = measured(input) else {
        return String::new();
    };
    format!(
        "Here {} means {what} {}, and {} otherwise.",
        c[0],
        holds_words(op, threshold, unit),
        c[1]
    )
}

/// `multi_threshold`: ordered bins. Upper-bound operators read as ranges ("0.5 to under 5");
/// the others as a chain of "else" conditions, first match wins, as the rule tests them.
fn multi_threshold_definition(c: &[String], input: &str, op: Op, thresholds: &[f64]) -> String {
    let Some((what, unit)) = measured(input) else {
        return String::new();
    };
    let n = thresholds.len();
    let mut parts = Vec::with_capacity(n + 1);
    match op {
        Op::LessThan | Op::LessEqual => {
            let strict = op == Op::LessThan;
            for (i, t) in thresholds.iter().enumerate() {
                let upper = if strict {
                    format!("under {}", with_unit(*t, unit))
                } else {
                    format!("at most {}", with_unit(*t, unit))
                };
                parts.push(if i == 0 {
                    format!("{} means {what} is {upper}", c[0])
                } else {
                    let lower = if strict {
                        num(thresholds[i - 1])
                    } else {
                        format!("above {}", num(thresholds[i - 1]))
                    };
                    format!("{} that it is {lower} to {upper}", c[i])
                });
            }
            let last = with_unit(thresholds[n - 1], unit);
            parts.push(if strict {
                format!("{} that it is {last} or more", c[n])
            } else {
                format!("{} that it is above {last}", c[n])
            });
        }
        _ => {
            for (i, t) in thresholds.iter().enumerate() {
                parts.push(if i == 0 {
                    format!("{} means {what} {}", c[0], holds_words(op, *t, unit))
                } else {
                    format!("else {} that it {}", c[i], holds_words(op, *t, unit))
                });
            }
            parts.push(format!("{} that none of these holds", c[n]));
        }
    }
    format!("Here {}.", and_list(&parts))
}

/// `deadzone_sign` and `trend`: above, below, or within the deadzone.
fn deadzone_definition(
    c: &[String],
    input: &str,
    threshold_positive: f64,
    threshold_negative: f64,
) -> String {
    let Some((what, unit)) = measured(input) else {
        return String::new();
    };
    format!(
        "Here {} means {what} is above {}, {} that it is below {}, and {} that it is from {} to {}.",
        c[0],
        with_unit(threshold_positive, unit),
        c[1],
        with_unit(threshold_negative, unit),
        c[2],
        num(threshold_negative),
        with_unit(threshold_positive, unit),
    )
}

/// `or_event`: any of the conditions, or none.
fn or_event_definition(c: &[String], conditions: &[Condition]) -> String {
    let mut any = Vec::with_capacity(conditions.len());
    for cond in conditions {
        let Some((what, unit)) = measured(&cond.input) else {
            return String::new();
        };
        any.push(format!(
            "{what} {}",
            holds_words(cond.op, cond.threshold, unit)
        ));
    }
    let none = match any.len() {
        1 => "that it does not",
        2 => "that neither holds",
        _ => "that none of these holds",
    };
    format!(
        "Here {} means {}, and {} {none}.",
        c[0],
        any.join(" or "),
        c[1]
    )
}

/// `sequential_event`: one event followed by another within the gap. A minimum gap at the
/// floor only means "strictly later", so it is worded as such.
fn sequential_definition(
    c: &[String],
    first: &Event,
    second: &Event,
    min_gap_s: f64,
    max_gap_s: f64,
    min_gap_floor_s: f64,
) -> String {
    let event = |e: &Event| -> Option<String> {
        let ch = Channel::parse(&e.channel).ok()?;
        let (noun, _, _, unit) = channel_words(ch);
        Some(format!(
            "the {noun}{} {}",
            note(ch, true),
            holds_words(e.op, e.threshold, unit)
        ))
    };
    let (Some(a), Some(b)) = (event(first), event(second)) else {
        return String::new();
    };
    let gap = if min_gap_s <= min_gap_floor_s {
        format!("later but within {} of it", with_unit(max_gap_s, "s"))
    } else {
        format!("{} to {} later", num(min_gap_s), with_unit(max_gap_s, "s"))
    };
    format!(
        "Here {} means that at some moment {a} and, {gap}, {b}, and {} that this does not happen.",
        c[0], c[1]
    )
}

/// `state_machine`: enough stop→go cycles, or not.
fn state_machine_definition(
    c: &[String],
    channel: &str,
    stop_threshold: f64,
    go_threshold: f64,
    min_cycles: u32,
) -> String {
    let Ok(ch) = Channel::parse(channel) else {
        return String::new();
    };
    let (noun, _, _, unit) = channel_words(ch);
    let times = match min_cycles {
        0 => return format!("Here {} always applies.", c[0]),
        1 => String::new(),
        n => format!(", at least {n} times over"),
    };
    format!(
        "Here {} means the {noun} is below {} at some moment and rises above {} after that{times}, and {} otherwise.",
        c[0],
        with_unit(stop_threshold, unit),
        with_unit(go_threshold, unit),
        c[1]
    )
}

/// `peak_half`: the half holding the first maximum, or no prominent peak.
fn peak_half_definition(
    c: &[String],
    channel: &str,
    prominence_ratio: f64,
    min_peak_value: Option<f64>,
) -> String {
    let Ok(ch) = Channel::parse(channel) else {
        return String::new();
    };
    let (noun, _, _, unit) = channel_words(ch);
    let small = min_peak_value
        .map(|m| format!(" or below {}", with_unit(m, unit)))
        .unwrap_or_default();
    format!(
        "Here {} and {} name the half of the clip in which the {noun} first reaches its maximum, and {} means that maximum is less than {}% above the clip's mean {noun}{small}.",
        c[0],
        c[1],
        c[2],
        num(prominence_ratio * 100.0)
    )
}

/// `half_comparison`: the half with the larger aggregate, or similar halves.
fn half_comparison_definition(
    c: &[String],
    channel: &str,
    agg: &str,
    similarity_threshold: f64,
) -> String {
    let (Ok(ch), Ok(agg)) = (Channel::parse(channel), Agg::parse(agg)) else {
        return String::new();
    };
    let (noun, _, _, _) = channel_words(ch);
    let (adj, _) = agg_words(agg);
    format!(
        "Here {} and {} name the half of the clip with the larger {adj} {noun}{}, and {} means the two halves' values differ by less than {}% of the larger one.",
        c[0],
        c[1],
        note(ch, false),
        c[2],
        num(similarity_threshold * 100.0)
    )
}

/// `dominant_axis`: longitudinal, lateral, or neither above its deadzone. The deadzone case
/// comes first in the sentence because the rule tests it first.
fn dominant_axis_definition(
    c: &[String],
    longitudinal: &str,
    lateral: &str,
    agg: &str,
    deadzone_long: f64,
    deadzone_lat: f64,
    ratio_threshold: f64,
) -> String {
    let (Ok(lo), Ok(la), Ok(agg)) = (
        Channel::parse(longitudinal),
        Channel::parse(lateral),
        Agg::parse(agg),
    ) else {
        return String::new();
    };
    let (adj, _) = agg_words(agg);
    let (lo_noun, _, _, lo_unit) = channel_words(lo);
    let (la_noun, _, _, la_unit) = channel_words(la);
    let lo_words = format!("the {adj} {lo_noun} over the clip{}", note(lo, false));
    let la_words = format!("the {adj} {la_noun} over the clip{}", note(la, false));
    let more = if ratio_threshold == 1.0 {
        "larger than the former".to_string()
    } else {
        format!("more than {} times the former", num(ratio_threshold))
    };
    format!(
        "Here {} means {lo_words} is below {} and {la_words} is below {}; otherwise {} means the latter is {more}, and {} that it is not.",
        c[2],
        with_unit(deadzone_long, lo_unit),
        with_unit(deadzone_lat, la_unit),
        c[1],
        c[0]
    )
}
