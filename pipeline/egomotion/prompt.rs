//! Prompts as the benchmark shows them (spec §6.2–6.3).
//!
//! The vision-only prompt is three lines joined by `\n`: the frame sentence, `{question}
//! [{c1} / {c2} / …]` and the answer instruction. The "Vision + Dynamics" setting inserts one
//! of the four trajectory encodings between the frame sentence and the question
//! ([`with_trajectory`]). Number formats follow the reference evaluator (Python's `.Nf`, which
//! Rust's `{:.N}` reproduces: both round the exact binary value half to even).

use super::config::CoordinatesFrame;
use super::kinematics::{Features, Kinematics};
use super::oracle::fmt_num;
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

/// The vision-only prompt of one question: the frame sentence, `{question} [{c1} / {c2} / …]`
/// and the answer instruction, rendered from `choices` by [`crate::qa::Prompt`].
pub fn question_prompt(frame_line: Option<&str>, text: &str, instruction: &str) -> Prompt {
    Prompt::new(Layout::EgoDyn, text)
        .preamble(frame_line.unwrap_or_default())
        .postamble(instruction)
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
        let p = question_prompt(f.as_deref(), "Q?", "Answer with ONLY the chosen option.");
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
}
