//! The ten physical-consistency rules of the benchmark's WPCR metric (`docs/egodyn.md` §4.2),
//! as data.
//!
//! The oracle's own labels must satisfy all of them (its WPCR is 1 at every α); tests and the
//! calibration report check that.

use super::Oracle;

/// `if question = label then other (= | ≠) label`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConsistencyRule {
    pub name: &'static str,
    pub if_question: &'static str,
    pub if_label: &'static str,
    pub then_question: &'static str,
    /// true: `then_question` must equal `then_label`; false: must differ from it.
    pub then_equal: bool,
    pub then_label: &'static str,
}

const fn rule(
    name: &'static str,
    if_question: &'static str,
    if_label: &'static str,
    then_question: &'static str,
    then_equal: bool,
    then_label: &'static str,
) -> ConsistencyRule {
    ConsistencyRule {
        name,
        if_question,
        if_label,
        then_question,
        then_equal,
        then_label,
    }
}

/// R1–R10 in the benchmark's order.
pub(crate) const RULES: [ConsistencyRule; 10] = [
    rule(
        "heading_change_implies_turning",
        "heading_change",
        "yes",
        "turn_direction",
        false,
        "straight",
    ),
    rule(
        "lateral_accel_implies_turning",
        "lateral_accel",
        "yes",
        "turn_direction",
        false,
        "straight",
    ),
    rule(
        "straight_implies_no_heading_change",
        "turn_direction",
        "straight",
        "heading_change",
        true,
        "no",
    ),
    rule(
        "straight_implies_no_high_lateral_accel",
        "turn_direction",
        "straight",
        "lateral_accel",
        true,
        "no",
    ),
    rule(
        "highway_implies_not_low_speed",
        "speed_regime",
        "highway",
        "mean_speed",
        true,
        "no",
    ),
    rule(
        "stopped_implies_low_speed",
        "speed_regime",
        "stopped",
        "mean_speed",
        true,
        "yes",
    ),
    rule(
        "stopped_not_accelerating",
        "speed_regime",
        "stopped",
        "speed_trend",
        false,
        "accelerating",
    ),
    rule(
        "brake_then_turn_implies_braking",
        "brake_then_turn",
        "yes",
        "braking_intensity",
        false,
        "none",
    ),
    rule(
        "brake_then_turn_implies_turning",
        "brake_then_turn",
        "yes",
        "turn_direction",
        false,
        "straight",
    ),
    rule(
        "stop_and_go_not_stopped",
        "stop_and_go",
        "yes",
        "speed_regime",
        false,
        "stopped",
    ),
];

/// The rules one clip's labels (classes in question order) violate. Rules naming a question
/// the oracle does not have are skipped.
pub fn violations(oracle: &Oracle, classes: &[usize]) -> Vec<&'static str> {
    let label = |q: &str| -> Option<&str> {
        let i = oracle.questions.iter().position(|x| x.id == q)?;
        Some(oracle.questions[i].label(*classes.get(i)?))
    };
    RULES
        .iter()
        .filter(|r| {
            let (Some(a), Some(b)) = (label(r.if_question), label(r.then_question)) else {
                return false;
            };
            a == r.if_label && ((b == r.then_label) != r.then_equal)
        })
        .map(|r| r.name)
        .collect()
}
