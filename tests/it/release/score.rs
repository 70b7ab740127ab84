//! The scorer against hand-computed values: the 4-stage parser on typical model outputs,
//! accuracy / balanced accuracy / macro-F1 on small confusion tables, both definitions of
//! EgoDyn's consistency metrics on clips worked out by hand, and missing / unknown ids.

use std::collections::BTreeMap;

use drivegen::qa::QaRecord;
use drivegen::score::consistency::consistency;
use drivegen::score::metrics::score as group_score;
use drivegen::score::parse::{parse, Stage};
use drivegen::score::score;

fn v(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

#[test]
fn parser_stages() {
    let turn = v(&["left", "right", "straight"]);
    assert_eq!(parse("**Left**.", &turn, false), Some((0, Stage::Exact)));
    let half = v(&["first_half", "second_half", "no_peak"]);
    assert_eq!(
        parse("First half", &half, false),
        Some((0, Stage::Normalised))
    );
    assert_eq!(
        parse("Looking at the speeds...\n\nno_peak\n", &half, false),
        Some((2, Stage::LastLine))
    );
    // Longest choice first: `second half` is found before anything shorter.
    assert_eq!(
        parse(
            "The peak is in the second half of the clip.\nConfidence: medium",
            &half,
            false
        ),
        Some((1, Stage::WordBoundary))
    );
    let yn = v(&["yes", "no"]);
    assert_eq!(
        parse("I'd say no, it does not.\nThat's it", &yn, false).map(|x| x.0),
        Some(1)
    );
    // Whole words only: "nothing" and "yesterday" name no choice.
    assert_eq!(parse("nothing happened yesterday", &yn, false), None);
    // Letters only where the family shows lettered options.
    let mcq = v(&["car", "truck", "bus"]);
    assert_eq!(parse("(B)", &mcq, true), Some((1, Stage::Letter)));
    assert_eq!(parse("B.", &mcq, true), Some((1, Stage::Letter)));
    assert_eq!(parse("(B)", &mcq, false), None);
    assert_eq!(parse("D", &mcq, true), None);
}

#[test]
fn metrics_on_hand_counted_tables() {
    // Truth a a b b; predictions a b b (unparsed). Recall a = 1/2, b = 1/1 → BAcc 0.75.
    // F1 a = 2·1/(2·1 + 0 + 1) = 2/3; F1 b = 2·1/(2·1 + 1 + 0) = 2/3.
    let pairs = vec![
        ("a".to_string(), Some("a".to_string())),
        ("a".to_string(), Some("b".to_string())),
        ("b".to_string(), Some("b".to_string())),
        ("b".to_string(), None),
    ];
    let s = group_score(&pairs);
    assert_eq!((s.n, s.parsed), (4, 3));
    assert!((s.accuracy - 0.5).abs() < 1e-12);
    assert!((s.accuracy_parsed - 2.0 / 3.0).abs() < 1e-12);
    assert!((s.parsability - 0.75).abs() < 1e-12);
    assert!((s.balanced_accuracy - 0.75).abs() < 1e-12);
    assert!((s.macro_f1 - 2.0 / 3.0).abs() < 1e-12);
    // A label predicted but never true enters macro-F1 with 0, not balanced accuracy.
    let s = group_score(&[
        ("a".to_string(), Some("a".to_string())),
        ("a".to_string(), Some("c".to_string())),
    ]);
    assert!((s.balanced_accuracy - 0.5).abs() < 1e-12);
    // F1 a = 2/(2 + 0 + 1) = 2/3, F1 c = 0 → 1/3.
    assert!((s.macro_f1 - 1.0 / 3.0).abs() < 1e-12);
}

#[test]
fn consistency_both_definitions_by_hand() {
    let clip = |xs: &[(&str, &str)]| -> BTreeMap<String, String> {
        xs.iter()
            .map(|(q, a)| (q.to_string(), a.to_string()))
            .collect()
    };
    let mut answers = BTreeMap::new();
    // c1: straight with no heading change and no lateral accel: R3, R4 hold (T 2, V 0).
    answers.insert(
        "c1".to_string(),
        clip(&[
            ("turn_direction", "straight"),
            ("heading_change", "no"),
            ("lateral_accel", "no"),
        ]),
    );
    // c2: straight but a heading change: R1 and R3 both triggered and broken (T 2, V 2).
    answers.insert(
        "c2".to_string(),
        clip(&[("turn_direction", "straight"), ("heading_change", "yes")]),
    );
    // c3: nothing triggers.
    answers.insert("c3".to_string(), clip(&[("speed_regime", "urban")]));
    let c = consistency(&answers);
    assert_eq!((c.clips, c.evaluable_clips, c.consistent_clips), (3, 2, 1));
    // Paper: mean over clips of 1[V = 0 ∧ T > 0]·T/10 → (0.2 + 0 + 0)/3; coverage (0.2 + 0.2)/3.
    assert!((c.wpcr_paper - 0.2 / 3.0).abs() < 1e-12);
    assert!((c.pcov_paper - 0.4 / 3.0).abs() < 1e-12);
    // Released code: EMCR 1/2 × rules ever triggered (R1, R3, R4) 3/10; coverage 2/3.
    assert!((c.emcr - 0.5).abs() < 1e-12);
    assert!((c.rule_coverage - 0.3).abs() < 1e-12);
    assert!((c.wpcr_ref - 0.15).abs() < 1e-12);
    assert!((c.pcov_ref - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(c.per_rule["heading_change_implies_turning"], (1, 1));
    assert_eq!(c.per_rule["straight_implies_no_heading_change"], (2, 1));
}

fn q(id: &str, family: &str, ty: &str, choices: &[&str], answer: usize) -> QaRecord {
    QaRecord {
        qa_id: id.into(),
        family: family.into(),
        question_type: ty.into(),
        choices: v(choices),
        answer: choices[answer].into(),
        answer_index: answer as u8,
        source: "synthetic".into(),
        clip_id: (family == "egodyn").then(|| "clip0".to_string()),
        ..Default::default()
    }
}

#[test]
fn missing_predictions_count_as_wrong_and_unknown_ids_are_reported() {
    let questions = vec![
        q(
            "q1",
            "egodyn",
            "turn_direction",
            &["left", "right", "straight"],
            0,
        ),
        q("q2", "egodyn", "heading_change", &["yes", "no"], 0),
        q("q3", "metavqa", "pick_closer", &["car", "truck"], 1),
    ];
    let mut p = BTreeMap::new();
    p.insert("q1".to_string(), "left".to_string());
    p.insert("q3".to_string(), "(B)".to_string());
    p.insert("zzz".to_string(), "left".to_string());
    let r = score(&questions, &p);
    assert_eq!((r.missing, r.unknown), (1, 1));
    assert_eq!(r.overall.n, 3);
    assert!((r.overall.accuracy - 2.0 / 3.0).abs() < 1e-12);
    assert!((r.overall.accuracy_parsed - 1.0).abs() < 1e-12);
    assert_eq!(r.by_family["metavqa"].parsed, 1);
    assert_eq!(r.stages["letter"], 1);
    // q2 unanswered: only the turn is known for clip0, no rule can trigger.
    assert_eq!(r.egodyn_consistency.unwrap().evaluable_clips, 0);
}
