//! What the answer words mean.
//!
//! Every prompt defines the words its answers use, in the config's values: the bins, the
//! box-extent rule, the heading sectors and the thresholds behind yes/no answers. The text
//! depends only on the question type and the config (plus, for embodied questions, the action
//! they name), so it cannot tell an answer apart.

use super::SAME_DISTANCE;
use crate::metavqa::config::MetavqaConfig;
use crate::metavqa::relations::{Pos, HEADING_SECTORS};
use crate::metavqa::rollout::SIDENESS;
use crate::metavqa::types::QuestionType as Q;
use crate::qa::prompt::{and_list, quoted, short_number as num};

/// Sentences joined by spaces, empty ones left out.
pub(super) fn join(parts: Vec<String>) -> String {
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `'a' means under 2 m, 'b' 2 to under 10 m, … and 'z' 30 m or more` (half-open bins).
fn bin_words(names: &[String], edges: &[f64], unit: &str) -> String {
    let parts: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let lo = k.checked_sub(1).and_then(|i| edges.get(i));
            let range = match (lo, edges.get(k)) {
                (None, Some(hi)) => format!("under {} {unit}", num(*hi)),
                (Some(lo), Some(hi)) => format!("{} to under {} {unit}", num(*lo), num(*hi)),
                (Some(lo), None) => format!("{} {unit} or more", num(*lo)),
                (None, None) => "any value".into(),
            };
            if k == 0 {
                format!("{} means {range}", quoted(name))
            } else {
                format!("{} {range}", quoted(name))
            }
        })
        .collect();
    and_list(&parts)
}

/// The distance bins.
fn distance_ranges(cfg: &MetavqaConfig) -> String {
    let b = &cfg.bins;
    format!(
        "Distance ranges: {}.",
        bin_words(&b.distance_names, &b.distance_edges_m, "m")
    )
}

/// The speed bins.
pub(super) fn speed_ranges(cfg: &MetavqaConfig) -> String {
    let b = &cfg.bins;
    format!(
        "Speed ranges: {}.",
        bin_words(&b.speed_names, &b.speed_edges_mps, "m/s")
    )
}

/// Where distances from us are measured (the ego pose to the box centre).
fn distance_from_us(cfg: &MetavqaConfig) -> String {
    let off = cfg.ego.center_offset_m;
    let from = if off == 0.0 {
        "the centre of our own box".to_string()
    } else {
        format!(
            "our reference point, {} m behind the centre of our own box,",
            num(off)
        )
    };
    format!("Distances from us are measured on the ground from {from} to the centre of the object's box.")
}

/// Our own box.
fn our_box(cfg: &MetavqaConfig) -> String {
    format!(
        "our own box ({} m long, {} m wide)",
        num(cfg.ego.length_m),
        num(cfg.ego.width_m)
    )
}

/// The box-extent rule (`docs/metavqa.md` §4.1) against `reference`.
fn position_words(reference: &str) -> String {
    let w = |p: Pos| quoted(p.text());
    format!(
        "Positions are judged from above, across and along our heading: an object is {} of {reference} when every corner of its box lies at or beyond the leftmost point of that box, {} when at or beyond its rightmost point, {} when at or beyond its foremost point and {} when at or beyond its rearmost point; {}, {}, {} and {} mean a side and an end both hold (a single word means only that one holds), and {} means none holds.",
        w(Pos::L),
        w(Pos::R),
        w(Pos::F),
        w(Pos::B),
        w(Pos::Lf),
        w(Pos::Rf),
        w(Pos::Lb),
        w(Pos::Rb),
        w(Pos::M),
    )
}

/// The heading sectors (`docs/metavqa.md` §4.2) in the config's clockwise edges.
fn heading_words(cfg: &MetavqaConfig) -> String {
    let e = &cfg.bins.heading_edges_deg;
    let (Some(first), Some(last)) = (e.first(), e.last()) else {
        return String::new();
    };
    let mut parts = vec![format!(
        "{} means {}° round to under {}°",
        quoted(Pos::F.text()),
        num(*last),
        num(*first)
    )];
    for (k, p) in HEADING_SECTORS.iter().enumerate() {
        if let (Some(lo), Some(hi)) = (e.get(k), e.get(k + 1)) {
            parts.push(format!(
                "{} {}° to under {}°",
                quoted(p.text()),
                num(*lo),
                num(*hi)
            ));
        }
    }
    format!(
        "An object's heading is the direction it faces, measured clockwise from our heading: {}.",
        and_list(&parts)
    )
}

/// The classes without a heading, by display name.
fn no_heading_words(cfg: &MetavqaConfig) -> String {
    let names: Vec<String> = cfg
        .rules
        .classes_without_heading
        .iter()
        .map(|c| cfg.class_name(c).to_string())
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!("{} objects have no heading.", and_list(&names))
    }
}

/// The crash sweep of `crash_*` questions: `who` moved along `whose` heading(s).
fn crash_words(cfg: &MetavqaConfig, boxes: &str, motion: &str) -> String {
    let r = &cfg.rules;
    let step = r.crash_step_m;
    let far = f64::from(r.crash_steps.saturating_sub(1)) * step;
    format!(
        "'Yes' means {boxes}, seen from above, touch or overlap at some step when {motion}, in steps of {} m up to {} m, and 'No' that they never do.",
        num(step),
        num(far)
    )
}

/// The named action of an embodied question: its steering angle and acceleration.
pub(super) fn action_words(cfg: &MetavqaConfig, a: usize) -> String {
    let ro = &cfg.rollout;
    let Some(act) = ro.actions.get(a) else {
        return String::new();
    };
    let deg = act.steer * ro.max_steer_deg;
    let steer = if deg > 0.0 {
        format!("turning the front wheels {}° to the left", num(deg))
    } else if deg < 0.0 {
        format!("turning the front wheels {}° to the right", num(-deg))
    } else {
        "keeping the front wheels straight".to_string()
    };
    let accel = if act.throttle > 0.0 {
        format!(
            "accelerating at {} m/s²",
            num(act.throttle * ro.max_accel_mps2)
        )
    } else if act.throttle < 0.0 {
        format!(
            "braking at {} m/s² (until we stop)",
            num(-act.throttle * ro.max_decel_mps2)
        )
    } else {
        "holding our speed".to_string()
    };
    format!("Action \"{}\" means {steer} while {accel}.", act.name)
}

/// What the answer words of question type `q` mean under `cfg`: empty for types whose answers
/// are self-evident (a colour, a class name, a mark number).
pub(crate) fn definitions(q: Q, cfg: &MetavqaConfig) -> String {
    let r = &cfg.rules;
    let parts: Vec<String> = match q {
        Q::IdentifyColor | Q::IdentifyType | Q::Grounding => Vec::new(),
        Q::IdentifyDistance | Q::DescribeDistance => {
            vec![distance_from_us(cfg), distance_ranges(cfg)]
        }
        Q::IdentifyPosition | Q::DescribeSector => vec![position_words(&our_box(cfg))],
        Q::IdentifyHeading => vec![heading_words(cfg)],
        Q::PickCloser => vec![
            distance_from_us(cfg),
            format!(
                "{} means the two distances differ by at most {} m.",
                quoted(SAME_DISTANCE),
                num(r.same_distance_m)
            ),
        ],
        Q::RelativeDistance => vec![
            "The distance between two objects is measured on the ground between the centres of their boxes.".into(),
            distance_ranges(cfg),
        ],
        Q::RelativePosition => vec![position_words("the other object's box")],
        Q::RelativeHeading => vec![format!(
            "'Yes' means the directions the two objects face differ by less than {}°, and 'No' that they do not.",
            num(r.same_heading_deg)
        )],
        Q::RelativePredictCrashStill => vec![crash_words(
            cfg,
            "the two objects' boxes",
            "the first is moved along its heading while the other stays where it is",
        )],
        Q::RelativePredictCrashDynamic => vec![crash_words(
            cfg,
            "the two objects' boxes",
            "both are moved along their headings by the same distance",
        )],
        Q::PredictCrashEgoStill => vec![crash_words(
            cfg,
            &format!("the object's box and {}", our_box(cfg)),
            "the object is moved along its heading while we stay where we are",
        )],
        Q::PredictCrashEgoDynamic => vec![crash_words(
            cfg,
            &format!("the object's box and {}", our_box(cfg)),
            "the object and we are moved along our headings by the same distance",
        )],
        Q::OrderClosest | Q::IdentifyClosest => vec![distance_from_us(cfg)],
        Q::OrderLeftmost | Q::OrderRightmost | Q::IdentifyLeftmost | Q::IdentifyRightmost => {
            vec!["Leftmost and rightmost compare how far the centres of the objects' boxes lie to our left or right, measured across our heading.".into()]
        }
        Q::OrderFrontmost | Q::OrderBackmost | Q::IdentifyFrontmost | Q::IdentifyBackmost => {
            vec!["Positions along our front direction compare how far the centres of the objects' boxes lie ahead of us, measured along our heading (negative behind us): the furthest has the largest value and the closest the smallest.".into()]
        }
        Q::DescribeScenario => vec![
            position_words(&our_box(cfg)),
            distance_from_us(cfg),
            distance_ranges(cfg),
            heading_words(cfg),
            no_heading_words(cfg),
        ],
        Q::EmbodiedDistance => vec![
            "How far we end up from our current position is measured on the ground between the centres of our box now and at the end.".into(),
            distance_ranges(cfg),
        ],
        Q::EmbodiedSideness => {
            let [left, front, right] = SIDENESS.map(|p| quoted(p.text()));
            vec![format!(
                "{left} means every corner of our box at the end lies at or beyond the leftmost point of our box now, across our current heading, {right} at or beyond its rightmost point, and {front} neither."
            )]
        }
        Q::EmbodiedCollision => vec![
            "'Yes' means our box touches or overlaps the object's box at some moment of the manoeuvre, for at least one starting speed in that range, and 'No' that it never does.".into(),
        ],
    };
    join(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StageConfig;

    #[test]
    fn definitions_state_the_config_values() {
        let cfg = MetavqaConfig::default_config().unwrap();
        for q in Q::ALL {
            let d = definitions(q, &cfg);
            let plain = matches!(q, Q::IdentifyColor | Q::IdentifyType | Q::Grounding);
            assert_eq!(d.is_empty(), plain, "{}: {d}", q.name());
            assert!(!d.contains('\n') && !d.contains(": (A) "), "{}", q.name());
            assert_eq!(d, definitions(q, &cfg), "deterministic");
        }
        assert_eq!(
            definitions(Q::IdentifyDistance, &cfg),
            "Distances from us are measured on the ground from our reference point, 1.3 m behind \
             the centre of our own box, to the centre of the object's box. Distance ranges: \
             'very close' means under 2 m, 'close' 2 to under 10 m, 'medium' 10 to under 30 m and \
             'far' 30 m or more."
        );
        let heading = definitions(Q::IdentifyHeading, &cfg);
        assert!(
            heading.contains("'front' means 345° round to under 15°"),
            "{heading}"
        );
        assert!(
            heading.contains("'right-front' 15° to under 75°"),
            "{heading}"
        );
        assert!(
            heading.contains("'left-front' 285° to under 345°"),
            "{heading}"
        );
        let pos = definitions(Q::IdentifyPosition, &cfg);
        assert!(
            pos.contains("our own box (4.084 m long, 1.73 m wide)"),
            "{pos}"
        );
        assert!(pos.contains("'next-to' means none holds"), "{pos}");
        assert!(definitions(Q::PickCloser, &cfg).contains("differ by at most 2 m"));
        assert!(definitions(Q::RelativeHeading, &cfg).contains("less than 20°"));
        assert!(definitions(Q::PredictCrashEgoStill, &cfg).contains("in steps of 1 m up to 49 m"));
        assert!(definitions(Q::DescribeScenario, &cfg)
            .contains("Traffic cone, Barrier and Trailer objects have no heading."));

        // Another config, other words and values.
        let text = crate::metavqa::config::DEFAULT_TOML
            .replace(
                "distance_edges_m = [2.0, 10.0, 30.0]",
                "distance_edges_m = [3.0, 12.5, 40.0]",
            )
            .replace("same_heading_deg = 20.0", "same_heading_deg = 12.5")
            .replace("heading_edges_deg = [15.0,", "heading_edges_deg = [22.5,");
        let other = MetavqaConfig::from_toml(&text, std::path::Path::new("x.toml")).unwrap();
        assert!(definitions(Q::RelativeDistance, &other).contains("'close' 3 to under 12.5 m"));
        assert!(definitions(Q::RelativeHeading, &other).contains("less than 12.5°"));
        assert!(definitions(Q::IdentifyHeading, &other).contains("345° round to under 22.5°"));
    }
}
