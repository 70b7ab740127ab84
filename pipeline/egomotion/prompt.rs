//! Prompts as the benchmark shows them (`docs/egodyn.md` §6.2–§6.3).
//!
//! The vision-only prompt is three lines joined by `\n`: the frame sentence, `{question} [{c1} /
//! {c2} / …]` and the answer instruction. For the "Vision + Dynamics" setting the four trajectory
//! encodings ([`TrajectoryText`]) go into `clips.arrow`'s `trajectory_text`, for a harness to put
//! between the frame sentence and the question. Number formats follow the reference evaluator
//! (Python's `.Nf`, which Rust's `{:.N}` reproduces: both round the exact binary value half to
//! even).

use super::config::CoordinatesFrame;
use super::kinematics::{Features, Kinematics};
use super::oracle::fmt_num;
use crate::qa::{Layout, Prompt};

/// `k` indices spread evenly over `n` items: round(i·(n−1)/(k−1)) (Python's round, half to
/// even), the middle item when k = 1, every item when k ≥ n.
pub(crate) fn select_indices(n: usize, k: usize) -> Vec<usize> {
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
pub(crate) fn frame_sentence(frames: usize, duration_s: f64) -> Option<String> {
    let d = fmt_num(duration_s);
    match frames {
        0 => None,
        1 => Some(format!("The image shows the forward camera view from a {d}-second driving clip.")),
        n => Some(format!(
            "The {n} images show the forward camera view at evenly spaced moments across a {d}-second driving clip."
        )),
    }
}

/// The vision-only prompt of one question: the frame sentence, `{question} [{c1} / {c2} / …]`, the
/// sentence defining its answer words ([`super::oracle::wording::definitions`]; nothing when empty)
/// and the answer instruction, rendered from `choices` by [`crate::qa::Prompt`]. The definitions
/// open the postamble, on their own line, so the question line keeps the paper's form.
pub(crate) fn question_prompt(
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

/// The `summary` encoding: 8 scalars on one line.
pub(crate) fn summary(f: &Features) -> String {
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
pub(crate) fn timeseries(k: &Kinematics, points: usize) -> String {
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
pub(crate) fn coordinates(k: &Kinematics, points: usize, frame: CoordinatesFrame) -> String {
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
pub(crate) struct TrajectoryText {
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
