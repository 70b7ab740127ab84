//! Prompts as the benchmark shows them (`docs/egodyn.md` §6.2–§6.3).
//!
//! The vision-only prompt is three lines joined by `\n`: the frame sentence, `{question}
//! [{c1} / {c2} / …]` and the answer instruction. The "Vision + Dynamics" setting inserts one
//! of the four trajectory encodings between the frame sentence and the question
//! ([`with_trajectory`]). Number formats follow the reference evaluator (Python's `.Nf`, which
//! Rust's `{:.N}` reproduces: both round the exact binary value half to even).

use super::config::CoordinatesFrame;
use super::kinematics::{Features, Kinematics};
use super::oracle::inputs::{Agg, Channel, Input};
use super::oracle::{fmt_num, Condition, Event, Op, Rule};
use crate::qa::prompt::{and_list, quoted as q, short_number as num};
use crate::qa::{Layout, Prompt};

/// `k` indices spread evenly over `n` items: round(i·(n−1)/(k−1)) (Python's round, half to
/// even), the middle item when k = 1, every item when k ≥ n.
pub fn select_indices(n: usize, k: usize) -> Vec<usize> {
    if n == 0 || k == 0 {
        return Vec::new();
    }
    if k >= n {
        return (0..n).collect();
    }
    if k == 1 {
        return vec![n / 2];
    }
    let den = (k - 1) as u64;
    (0..k as u64)
        .map(|i| {
            let num = i * (n as u64 - 1);
            let (q, r) = (num / den, num % den);
            let up = 2 * r > den || (2 * r == den && q % 2 == 1);
            (q + u64::from(up)) as usize
        })
        .collect()
}

/// The first prompt line, for `frames` images of a clip of `duration_s` seconds (None when no
/// image is shown).
pub fn frame_sentence(frames: usize, duration_s: f64) -> Option<String> {
    let d = fmt_num(duration_s);
    match frames {
        0 => None,
        1 => Some(format!("The image shows the forward camera view from a {d}-second driving clip.")),
        n => Some(format!(
            "The {n} images show the forward camera view at evenly spaced moments across a {d}-second driving clip."
        )),
    }
}

/// The vision-only prompt of one question: the frame sentence, `{question} [{c1} / {c2} / …]`,
/// the sentence defining its answer words ([`definitions`]; nothing when empty) and the answer
/// instruction, rendered from `choices` by [`crate::qa::Prompt`]. The definitions open the
/// postamble, on their own line, so the question line keeps the paper's form.
pub fn question_prompt(
    frame_line: Option<&str>,
    text: &str,
    definitions: &str,
    instruction: &str,
) -> Prompt {
    let postamble = match (definitions.is_empty(), instruction.is_empty()) {
        (true, _) => instruction.to_string(),
        (false, true) => definitions.to_string(),
        (false, false) => format!("{definitions}\n{instruction}"),
    };
    Prompt::new(Layout::EgoDyn, text)
        .preamble(frame_line.unwrap_or_default())
        .postamble(postamble)
}

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
pub fn definitions(rule: &Rule, choices: &[String], stated: bool) -> String {
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

/// The "Vision + Dynamics" prompt: `trajectory` shown after the frame sentence (or first,
/// when the prompt has no frame sentence), before the question.
pub fn with_trajectory(prompt: &Prompt, trajectory: &str) -> Prompt {
    let mut p = prompt.clone();
    p.preamble = if p.preamble.is_empty() {
        trajectory.to_string()
    } else {
        format!("{}\n{trajectory}", p.preamble)
    };
    p
}

/// The `summary` encoding: 8 scalars on one line.
pub fn summary(f: &Features) -> String {
    let ms = f.max_speed;
    format!(
        "Vehicle dynamics: max_speed={ms:.1}m/s ({:.0}km/h), mean_speed={:.1}m/s, min_accel={:.2}m/s², \
         max_yaw_rate={:.3}rad/s, max_jerk={:.2}m/s³, mean_jerk={:.2}m/s³, max_lat_accel={:.2}m/s², \
         heading_change={:.3}rad",
        ms * 3.6,
        f.mean_speed,
        f.min_accel,
        f.max_abs_yaw_rate,
        f.max_abs_jerk,
        f.mean_abs_jerk,
        f.max_lateral_accel,
        f.total_heading_change
    )
}

fn row(label: &str, v: &[f64], idx: &[usize], prec: usize) -> String {
    let vals: Vec<String> = idx
        .iter()
        .filter_map(|&i| v.get(i))
        .map(|x| format!("{x:.prec$}"))
        .collect();
    format!("{label}{}", vals.join(", "))
}

fn span(k: &Kinematics) -> f64 {
    match (k.t.first(), k.t.last()) {
        (Some(a), Some(b)) => b - a,
        _ => 0.0,
    }
}

/// The `timeseries` encoding: speed, accel, yaw rate and jerk at `points` instants.
pub fn timeseries(k: &Kinematics, points: usize) -> String {
    let idx = select_indices(k.t.len(), points);
    [
        format!(
            "Vehicle dynamics ({} time-steps over {:.1}s):",
            idx.len(),
            span(k)
        ),
        row("t(s):    ", &k.t, &idx, 2),
        row("speed(m/s): ", &k.speed, &idx, 1),
        row("accel(m/s²): ", &k.accel, &idx, 2),
        row("yaw_rate(rad/s): ", &k.yaw_rate, &idx, 3),
        row("jerk(m/s³): ", &k.jerk, &idx, 2),
    ]
    .join("\n")
}

/// The `coordinates` encoding: positions zero-centred on the first sample (global axes, or
/// rotated into the first heading with [`CoordinatesFrame::Ego`]) and the heading.
pub fn coordinates(k: &Kinematics, points: usize, frame: CoordinatesFrame) -> String {
    let idx = select_indices(k.t.len(), points);
    let (x0, y0, h0) = (
        k.x.first().copied().unwrap_or(0.0),
        k.y.first().copied().unwrap_or(0.0),
        k.yaw.first().copied().unwrap_or(0.0),
    );
    let (c, s) = (h0.cos(), h0.sin());
    let mut xs = Vec::with_capacity(k.x.len());
    let mut ys = Vec::with_capacity(k.y.len());
    let mut hs = Vec::with_capacity(k.yaw.len());
    for i in 0..k.x.len().min(k.y.len()).min(k.yaw.len()) {
        let (dx, dy) = (k.x[i] - x0, k.y[i] - y0);
        match frame {
            CoordinatesFrame::Global => {
                xs.push(dx);
                ys.push(dy);
                hs.push(k.yaw[i]);
            }
            CoordinatesFrame::Ego => {
                xs.push(c * dx + s * dy);
                ys.push(-s * dx + c * dy);
                hs.push(k.yaw[i] - h0);
            }
        }
    }
    [
        format!(
            "Vehicle trajectory ({} waypoints over {:.1}s, metres):",
            idx.len(),
            span(k)
        ),
        row("t(s): ", &k.t, &idx, 2),
        row("x(m): ", &xs, &idx, 1),
        row("y(m): ", &ys, &idx, 1),
        row("heading(rad): ", &hs, &idx, 3),
    ]
    .join("\n")
}

/// The four encodings of one clip.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TrajectoryText {
    pub summary: String,
    pub timeseries: String,
    pub coordinates: String,
    /// `timeseries` then `coordinates`.
    pub full: String,
}

impl TrajectoryText {
    pub fn new(k: &Kinematics, f: &Features, points: usize, frame: CoordinatesFrame) -> Self {
        let timeseries = timeseries(k, points);
        let coordinates = coordinates(k, points, frame);
        Self {
            summary: summary(f),
            full: format!("{timeseries}\n{coordinates}"),
            timeseries,
            coordinates,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StageConfig;

    #[test]
    fn ten_of_thirty_one() {
        assert_eq!(
            select_indices(31, 10),
            vec![0, 3, 7, 10, 13, 17, 20, 23, 27, 30]
        );
        assert_eq!(select_indices(5, 10), vec![0, 1, 2, 3, 4]);
        assert_eq!(select_indices(7, 1), vec![3]);
        // Ties go to the even neighbour, as Python's round: 1·(6−1)/(3−1) = 2.5 → 2.
        assert_eq!(select_indices(6, 3), vec![0, 2, 5]);
    }

    #[test]
    fn trajectory_goes_between_frames_and_question() {
        let f = frame_sentence(10, 3.0);
        let choices = ["yes".to_string(), "no".to_string()];
        let p = question_prompt(
            f.as_deref(),
            "Q?",
            "",
            "Answer with ONLY the chosen option.",
        );
        assert_eq!(
            p.render(&choices),
            "The 10 images show the forward camera view at evenly spaced moments across a 3-second driving clip.\n\
             Q? [yes / no]\nAnswer with ONLY the chosen option."
        );
        let v = with_trajectory(&p, "Vehicle dynamics: …").render(&choices);
        let lines: Vec<&str> = v.lines().collect();
        assert_eq!(lines[1], "Vehicle dynamics: …");
        assert_eq!(lines[2], "Q? [yes / no]");
        let summary = summary(&Features {
            max_speed: 8.2,
            mean_speed: 7.4,
            min_accel: -1.23,
            max_abs_yaw_rate: 0.042,
            max_abs_jerk: 2.85,
            mean_abs_jerk: 0.91,
            max_lateral_accel: 0.34,
            total_heading_change: 0.126,
            ..Features::default()
        });
        assert_eq!(
            summary,
            "Vehicle dynamics: max_speed=8.2m/s (30km/h), mean_speed=7.4m/s, min_accel=-1.23m/s², \
             max_yaw_rate=0.042rad/s, max_jerk=2.85m/s³, mean_jerk=0.91m/s³, max_lat_accel=0.34m/s², \
             heading_change=0.126rad"
        );
    }

    fn default_oracle() -> crate::egomotion::oracle::Oracle {
        let cfg = crate::egomotion::config::EgodynConfig::default_config().unwrap();
        crate::egomotion::oracle::Oracle::new(&cfg).unwrap()
    }

    #[test]
    fn every_hidden_criterion_is_defined_and_the_layout_still_parses() {
        let oracle = default_oracle();
        let cfg = crate::egomotion::config::EgodynConfig::default_config().unwrap();
        let frame = frame_sentence(10, 3.0);
        for qn in &oracle.questions {
            let stated = ["mean_speed", "heading_change"].contains(&qn.id.as_str());
            assert_eq!(
                qn.definitions.is_empty(),
                stated,
                "{}: {}",
                qn.id,
                qn.definitions
            );
            for c in &qn.choices {
                if !stated {
                    assert!(
                        qn.definitions.contains(&format!("'{c}'")),
                        "{} does not define {c}: {}",
                        qn.id,
                        qn.definitions
                    );
                }
            }
            assert!(!qn.definitions.contains('\n') && !qn.definitions.ends_with(']'));
            let p = question_prompt(
                frame.as_deref(),
                &qn.text,
                &qn.definitions,
                &cfg.prompt.answer_instruction,
            );
            let mut shown = qn.choices.clone();
            shown.reverse();
            let text = p.render(&shown);
            assert_eq!(
                crate::validate::layouts::shown_options("egodyn", &text).unwrap(),
                shown
            );
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines[1], format!("{} [{}]", qn.text, shown.join(" / ")));
            assert_eq!(
                lines.last().copied(),
                Some(cfg.prompt.answer_instruction.as_str())
            );
            assert_eq!(lines.len(), if stated { 3 } else { 4 });
            if !stated {
                assert_eq!(lines[2], qn.definitions);
            }
            // Deterministic: the same question gives the same text.
            assert_eq!(text, p.render(&shown));
        }
    }

    #[test]
    fn definitions_follow_the_config_and_alpha() {
        let oracle = default_oracle();
        let d = |o: &crate::egomotion::oracle::Oracle, id: &str| {
            o.question(id).unwrap().definitions.clone()
        };
        assert_eq!(
            d(&oracle, "speed_regime"),
            "Here 'stopped' means the highest speed in the clip is under 0.5 m/s, 'slow' that it is \
             0.5 to under 5 m/s, 'urban' that it is 5 to under 13.9 m/s and 'highway' that it is \
             13.9 m/s or more."
        );
        assert_eq!(
            d(&oracle, "turn_direction"),
            "Here 'left' means the largest-magnitude yaw rate in the clip (positive when turning \
             left) is above 0.04 rad/s, 'right' that it is below -0.04 rad/s, and 'straight' that \
             it is from -0.04 to 0.04 rad/s."
        );
        assert!(d(&oracle, "lateral_accel").contains("is above 2 m/s²"));
        assert!(d(&oracle, "extreme_maneuver").contains("above 20 m/s³ or"));
        assert!(d(&oracle, "extreme_maneuver").contains("below -3.924 m/s²"));
        assert!(d(&oracle, "stop_and_go").contains("below 0.5 m/s"));
        assert!(d(&oracle, "stop_and_go").contains("above 2 m/s"));
        assert!(d(&oracle, "brake_then_turn").contains("within 2 s"));
        assert!(d(&oracle, "speed_peak_half").contains("less than 5% above"));
        assert!(d(&oracle, "contrastive_seq").contains("less than 20% of the larger"));
        assert!(d(&oracle, "motion_axis").contains("below 0.2 m/s²"));
        assert!(d(&oracle, "braking_intensity").contains("under -1.59 m/s²"));
        assert!(d(&oracle, "driving_smoothness").contains("1.25 to under 2.15 m/s³"));
        assert!(d(&oracle, "speed_trend").contains("above 0.25 m/s²"));

        // α scales the thresholds the definitions show, as it scales the rules.
        let cfg = crate::egomotion::config::EgodynConfig::default_config().unwrap();
        let scaled = crate::egomotion::oracle::Oracle::with_alpha(&cfg, 2.0).unwrap();
        assert!(d(&scaled, "speed_regime").contains("27.8 m/s or more"));
        assert!(d(&scaled, "stop_and_go").contains("above 4 m/s"));
        // A recalibrated config shows its own values.
        let text = crate::egomotion::config::DEFAULT_TOML.replace(
            "thresholds = [0.5, 5.0, 13.9]",
            "thresholds = [0.3, 6.0, 15.0]",
        );
        let cfg = crate::egomotion::config::EgodynConfig::from_toml(
            &text,
            std::path::Path::new("x.toml"),
        )
        .unwrap();
        let o = crate::egomotion::oracle::Oracle::new(&cfg).unwrap();
        assert!(d(&o, "speed_regime").contains("under 0.3 m/s"));
        assert!(d(&o, "speed_regime").contains("15 m/s or more"));
    }
}
