//! One split's [`ScoreReport`], added a question at a time: groups keep counts of (truth,
//! prediction) pairs and EgoDyn's consistency keeps each clip's answers, so scoring holds the
//! predictions and these tallies, never the split's questions.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::metrics::Counts;
use super::{consistency, parse, ScoreReport, EGODYN_TEMPORAL};
use crate::qa::{Family, QaRecord};

pub(crate) struct SplitTally<'p> {
    predictions: HashMap<&'p str, &'p str>,
    /// The predictions some question of the split asked for.
    met: HashSet<&'p str>,
    report: ScoreReport,
    all: Counts,
    /// By family, family/type, source and corruption.
    groups: [BTreeMap<String, Counts>; 4],
    temporal: Counts,
    /// EgoDyn: clip → question type → parsed answer.
    per_clip: BTreeMap<String, BTreeMap<String, String>>,
}

impl<'p> SplitTally<'p> {
    /// A split answered by `predictions` (`qa_id` → response text).
    pub(crate) fn new(predictions: HashMap<&'p str, &'p str>) -> Self {
        let report = ScoreReport {
            predictions: predictions.len(),
            ..Default::default()
        };
        Self {
            predictions,
            met: HashSet::new(),
            report,
            all: Counts::default(),
            groups: Default::default(),
            temporal: Counts::default(),
            per_clip: BTreeMap::new(),
        }
    }

    /// Scores question `q`; returns whether it was answered right (unanswered or unparsable:
    /// no), which the robustness figures pair across splits.
    pub(crate) fn add(&mut self, q: &QaRecord) -> bool {
        self.report.questions += 1;
        let predicted = match self.predictions.get_key_value(q.qa_id.as_str()) {
            None => {
                self.report.missing += 1;
                None
            }
            Some((&id, &text)) => {
                self.met.insert(id);
                // Letters are only accepted where the family shows lettered options.
                let letters = q.family != Family::Egodyn.name();
                parse::parse(text, &q.choices, letters).map(|(i, stage)| {
                    let s = serde_json::to_value(stage)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default();
                    *self.report.stages.entry(s).or_default() += 1;
                    q.choices[i].as_str()
                })
            }
        };
        let right = predicted == Some(q.answer.as_str());
        self.all.add(&q.answer, predicted);
        let keys = [
            q.family.clone(),
            format!("{}/{}", q.family, q.question_type),
            q.source.clone(),
            q.corruption.clone().unwrap_or_else(|| "clean".into()),
        ];
        for (g, k) in self.groups.iter_mut().zip(keys) {
            g.entry(k).or_default().add(&q.answer, predicted);
        }
        if q.family == Family::Egodyn.name() {
            if EGODYN_TEMPORAL.contains(&q.question_type.as_str()) {
                self.temporal.add(&q.answer, predicted);
            }
            let clip = q.clip_id.clone().unwrap_or_else(|| q.scene_id.clone());
            let answers = self.per_clip.entry(clip).or_default();
            if let Some(p) = predicted {
                answers.insert(q.question_type.clone(), p.to_string());
            }
        }
        right
    }

    pub(crate) fn finish(self) -> ScoreReport {
        let mut report = self.report;
        report.unknown = self.predictions.len() - self.met.len();
        report.overall = self.all.score();
        let [fam, ty, src, cor] = self.groups;
        let sc = |m: BTreeMap<String, Counts>| m.into_iter().map(|(k, v)| (k, v.score())).collect();
        report.by_family = sc(fam);
        report.by_type = sc(ty);
        report.by_source = sc(src);
        report.by_corruption = sc(cor);
        if !self.per_clip.is_empty() {
            report.egodyn_temporal = Some(self.temporal.score());
            report.egodyn_consistency = Some(consistency::consistency(&self.per_clip));
        }
        report
    }
}
