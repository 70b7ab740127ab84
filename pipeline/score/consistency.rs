//! EgoDyn's physical-consistency metrics over a model's answers per clip (`docs/egodyn.md`
//! §4.2–§4.3), with the rules of [`crate::egomotion::oracle::consistency::RULES`].
//!
//! For clip `c`, `T_c` = rules whose two questions were both answered (parsed) and whose
//! condition holds; `V_c` = those violated. `|R|` = number of rules.
//! * paper (Eq. 2): `wpcr_paper = mean_c 1[V_c = 0 ∧ T_c > 0]·T_c/|R|`,
//!   `pcov_paper = mean_c T_c/|R|`;
//! * released code (what the published tables report): `wpcr_ref = EMCR · rule_coverage`
//!   with `EMCR` = consistent / evaluable clips (evaluable: `T_c > 0`) and `rule_coverage` =
//!   rules triggered at least once / `|R|`; `pcov_ref` = evaluable / all clips.

use std::collections::BTreeMap;

use crate::egomotion::oracle::consistency::{ConsistencyRule, RULES};

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Consistency {
    pub clips: usize,
    pub evaluable_clips: usize,
    pub consistent_clips: usize,
    pub wpcr_paper: f64,
    pub pcov_paper: f64,
    pub emcr: f64,
    pub rule_coverage: f64,
    pub wpcr_ref: f64,
    pub pcov_ref: f64,
    /// Per rule: (times triggered, times violated).
    pub per_rule: BTreeMap<String, (usize, usize)>,
}

/// `answers[clip][question type]` = the parsed answer.
pub fn consistency(answers: &BTreeMap<String, BTreeMap<String, String>>) -> Consistency {
    consistency_with(answers, &RULES)
}

pub(crate) fn consistency_with(
    answers: &BTreeMap<String, BTreeMap<String, String>>,
    rules: &[ConsistencyRule],
) -> Consistency {
    let r = rules.len().max(1) as f64;
    let mut out = Consistency {
        clips: answers.len(),
        ..Default::default()
    };
    for rule in rules {
        out.per_rule.insert(rule.name.to_string(), (0, 0));
    }
    let (mut paper_w, mut paper_c) = (0.0, 0.0);
    for clip in answers.values() {
        let (mut t, mut v) = (0usize, 0usize);
        for rule in rules {
            let (Some(a), Some(b)) = (clip.get(rule.if_question), clip.get(rule.then_question))
            else {
                continue;
            };
            if a != rule.if_label {
                continue;
            }
            t += 1;
            let broken = (b == rule.then_label) != rule.then_equal;
            let e = out.per_rule.entry(rule.name.to_string()).or_default();
            e.0 += 1;
            if broken {
                v += 1;
                e.1 += 1;
            }
        }
        paper_c += t as f64 / r;
        if t > 0 {
            out.evaluable_clips += 1;
            if v == 0 {
                out.consistent_clips += 1;
                paper_w += t as f64 / r;
            }
        }
    }
    let n = out.clips.max(1) as f64;
    out.wpcr_paper = paper_w / n;
    out.pcov_paper = paper_c / n;
    out.emcr = if out.evaluable_clips == 0 {
        0.0
    } else {
        out.consistent_clips as f64 / out.evaluable_clips as f64
    };
    out.rule_coverage = out.per_rule.values().filter(|(t, _)| *t > 0).count() as f64 / r;
    out.wpcr_ref = out.emcr * out.rule_coverage;
    out.pcov_ref = out.evaluable_clips as f64 / n;
    out
}
