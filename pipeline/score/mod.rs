//! `drivegen score`: a model's answers against a release. Responses are parsed with EgoDyn's
//! 4-stage parser ([`parse`]); accuracy (unparsed = wrong, and over parsed answers only),
//! balanced accuracy and macro-F1 ([`metrics`]) are reported overall and per family, question
//! type, source and corruption; EgoDyn's consistency metrics in both definitions
//! ([`consistency`]) for the `egodyn` family.
//!
//! Predictions are JSON lines `{"qa_id": "...", "prediction": "..."}` (`response` or `answer`
//! are accepted as the text's key), with `"split": "..."` naming the split they answer; those
//! without one count for the release's main split (or `--split`). Each split is scored on its
//! own, the text-only control apart from the questions it repeats. A question without a
//! prediction counts as unparsed; a prediction for an unknown `qa_id` is counted and reported,
//! not scored. Only the shards `manifest.json` lists are read, each checked against its sha256.
//! A release with robustness splits also gets, per re-asked family, accuracy per setting,
//! relative robustness, mRR and visual reliance ([`robustness`]); a robustness row has an id
//! of its own, so its prediction needs no `split`.

pub mod consistency;
pub mod metrics;
pub mod parse;
pub mod robustness;
pub mod sig;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufReader;
use std::path::Path;

use self::consistency::Consistency;
use self::metrics::GroupScore;
use crate::qa::QaRecord;
pub use crate::release::read::{
    listed_shards, read_release, read_release_splits, ReleaseQuestions,
};
use crate::{Error, Result};

/// EgoDyn's temporal group ("Temporal Acc." in its tables).
pub(crate) const EGODYN_TEMPORAL: [&str; 4] = [
    "speed_trend",
    "brake_then_turn",
    "speed_peak_half",
    "contrastive_seq",
];

/// The report.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ScoreReport {
    pub questions: usize,
    pub predictions: usize,
    /// Questions without a prediction (scored as unparsed).
    pub missing: usize,
    /// Predictions whose `qa_id` is not in the release.
    pub unknown: usize,
    /// Parsed answers by parser stage.
    pub stages: BTreeMap<String, usize>,
    pub overall: GroupScore,
    pub by_family: BTreeMap<String, GroupScore>,
    pub by_type: BTreeMap<String, GroupScore>,
    pub by_source: BTreeMap<String, GroupScore>,
    pub by_corruption: BTreeMap<String, GroupScore>,
    pub egodyn_temporal: Option<GroupScore>,
    pub egodyn_consistency: Option<Consistency>,
}

/// Predictions by the split they name (None: they name none).
pub(crate) type SplitPredictions = BTreeMap<Option<String>, BTreeMap<String, String>>;

/// `qa_id` → response text, by the split each line names in `split` (if any).
pub fn read_predictions(path: &Path) -> Result<SplitPredictions> {
    let f = crate::store::input::open(path)?;
    let mut out: SplitPredictions = BTreeMap::new();
    let mut reader = BufReader::new(f);
    let mut buf = Vec::new();
    let limit = crate::store::input::PREDICTION_LINE;
    for k in 0.. {
        if !crate::store::input::read_line(&mut reader, &mut buf, limit, path, k + 1)? {
            break;
        }
        let line = std::str::from_utf8(&buf)
            .map_err(|_| Error::input(path, format!("line {}", k + 1), "is not UTF-8 text"))?;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |detail: String| Error::Input {
            file: path.to_path_buf(),
            record: format!("line {}", k + 1),
            detail,
        };
        let line = line.strip_prefix('\u{feff}').unwrap_or(line);
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let id = v["qa_id"]
            .as_str()
            .ok_or_else(|| bad("no string `qa_id`".into()))?;
        let text = ["prediction", "response", "answer"]
            .iter()
            .find_map(|key| v[*key].as_str())
            .ok_or_else(|| bad("no `prediction` (or `response`, `answer`) text".into()))?;
        let split = match &v["split"] {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) => Some(s.clone()),
            other => return Err(bad(format!("`split` is not a string: {other}"))),
        };
        let entry = out.entry(split.clone()).or_default();
        if entry.insert(id.to_string(), text.to_string()).is_some() {
            return Err(bad(format!(
                "a second prediction for {id}{}",
                split.map(|s| format!(" in split {s}")).unwrap_or_default()
            )));
        }
    }
    Ok(out)
}

/// Scores of every split that has predictions (the main split always).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ReleaseScore {
    /// The split predictions without a `split` were matched to.
    pub default_split: String,
    /// How many predictions named no split.
    pub matched_to_default: usize,
    /// Predictions naming a split the release does not have.
    pub unknown_split: BTreeMap<String, usize>,
    /// Predictions without a `split` whose `qa_id` is a robustness row's (each has an id of
    /// its own), counted for that row's split.
    pub matched_by_id: usize,
    pub splits: BTreeMap<String, ScoreReport>,
    /// Per family re-asked by robustness splits: accuracy per setting, relative robustness,
    /// mRR and visual reliance (`docs/robustness.md` §5); empty without robustness splits.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub robustness: BTreeMap<String, robustness::FamilyRobustness>,
}

/// Scores each split on its own: a prediction counts for the split it names, or for
/// `default_split` (the release's main split unless given) when it names none. The text-only
/// control repeats the main split's ids, so one prediction never counts for both.
pub fn score_release(
    release: &ReleaseQuestions,
    predictions: &SplitPredictions,
    default_split: Option<&str>,
) -> Result<ReleaseScore> {
    let default = default_split.unwrap_or(&release.main).to_string();
    if !release.splits.contains_key(&default) {
        return Err(Error::invalid(
            "score",
            format!(
                "the release has no split {default} (it has {})",
                release
                    .splits
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let mut by_split: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut out = ReleaseScore {
        default_split: default.clone(),
        ..Default::default()
    };
    // A robustness row has an id of its own, so a prediction naming no split still finds it.
    let robust_ids: std::collections::HashMap<&str, &str> = release
        .settings
        .iter()
        .filter_map(|s| release.splits.get_key_value(&s.split))
        .flat_map(|(split, rows)| rows.iter().map(move |r| (r.qa_id.as_str(), split.as_str())))
        .collect();
    let main_ids: std::collections::HashSet<&str> = release
        .splits
        .get(&default)
        .map(|rows| rows.iter().map(|r| r.qa_id.as_str()).collect())
        .unwrap_or_default();
    for (split, preds) in predictions {
        let named = split.clone().unwrap_or_else(|| default.clone());
        if !release.splits.contains_key(&named) {
            *out.unknown_split.entry(named).or_default() += preds.len();
            continue;
        }
        for (id, text) in preds {
            let name = match (split, robust_ids.get(id.as_str())) {
                (None, Some(s)) if !main_ids.contains(id.as_str()) => {
                    out.matched_by_id += 1;
                    s.to_string()
                }
                (None, _) => {
                    out.matched_to_default += 1;
                    named.clone()
                }
                _ => named.clone(),
            };
            let into = by_split.entry(name.clone()).or_default();
            if into.insert(id.clone(), text.clone()).is_some() {
                return Err(Error::invalid(
                    "score",
                    format!(
                        "two predictions for {id} in split {name} (one names the split, one \
                         is matched to it)"
                    ),
                ));
            }
        }
    }
    let mut correct = robustness::Correct::new();
    for (split, questions) in &release.splits {
        let preds = by_split.remove(split).unwrap_or_default();
        if preds.is_empty() && *split != release.main {
            continue;
        }
        let (report, right) = score_rows(questions, &preds);
        correct.insert(split.clone(), right);
        out.splits.insert(split.clone(), report);
    }
    if !release.settings.is_empty() {
        out.robustness = robustness::robustness(release, &correct);
    }
    Ok(out)
}

/// Scores `predictions` against `questions`.
pub fn score(questions: &[QaRecord], predictions: &BTreeMap<String, String>) -> ScoreReport {
    score_rows(questions, predictions).0
}

/// [`score`], and whether each question was answered right (unanswered or unparsable: no),
/// which the robustness figures pair across splits.
fn score_rows(
    questions: &[QaRecord],
    predictions: &BTreeMap<String, String>,
) -> (ScoreReport, Vec<bool>) {
    let mut right = Vec::with_capacity(questions.len());
    type Pairs = Vec<(String, Option<String>)>;
    let mut report = ScoreReport {
        questions: questions.len(),
        predictions: predictions.len(),
        ..Default::default()
    };
    let mut all: Pairs = Vec::new();
    let mut groups: [BTreeMap<String, Pairs>; 4] = Default::default();
    let mut temporal: Pairs = Vec::new();
    let mut per_clip: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for q in questions {
        let predicted = match predictions.get(&q.qa_id) {
            None => {
                report.missing += 1;
                None
            }
            Some(text) => {
                // Letters are only accepted where the family shows lettered options.
                let letters = q.family != "egodyn";
                parse::parse(text, &q.choices, letters).map(|(i, stage)| {
                    let s = serde_json::to_value(stage)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default();
                    *report.stages.entry(s).or_default() += 1;
                    q.choices[i].clone()
                })
            }
        };
        right.push(predicted.as_ref() == Some(&q.answer));
        let pair = (q.answer.clone(), predicted.clone());
        all.push(pair.clone());
        let keys = [
            q.family.clone(),
            format!("{}/{}", q.family, q.question_type),
            q.source.clone(),
            q.corruption.clone().unwrap_or_else(|| "clean".into()),
        ];
        for (g, k) in groups.iter_mut().zip(keys) {
            g.entry(k).or_default().push(pair.clone());
        }
        if q.family == "egodyn" {
            if EGODYN_TEMPORAL.contains(&q.question_type.as_str()) {
                temporal.push(pair.clone());
            }
            let clip = q.clip_id.clone().unwrap_or_else(|| q.scene_id.clone());
            let answers = per_clip.entry(clip).or_default();
            if let Some(p) = predicted {
                answers.insert(q.question_type.clone(), p);
            }
        }
    }
    let known: std::collections::BTreeSet<&str> =
        questions.iter().map(|q| q.qa_id.as_str()).collect();
    report.unknown = predictions
        .keys()
        .filter(|k| !known.contains(k.as_str()))
        .count();
    report.overall = metrics::score(&all);
    let [fam, ty, src, cor] = groups;
    let sc = |m: BTreeMap<String, Pairs>| -> BTreeMap<String, GroupScore> {
        m.into_iter()
            .map(|(k, v)| (k, metrics::score(&v)))
            .collect()
    };
    report.by_family = sc(fam);
    report.by_type = sc(ty);
    report.by_source = sc(src);
    report.by_corruption = sc(cor);
    if !per_clip.is_empty() {
        report.egodyn_temporal = Some(metrics::score(&temporal));
        report.egodyn_consistency = Some(consistency::consistency(&per_clip));
    }
    (report, right)
}

/// The tables the command prints, one per scored split.
pub fn release_summary(r: &ReleaseScore) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "predictions without a `split` ({}) were matched to split {}",
        r.matched_to_default, r.default_split
    );
    for (split, n) in &r.unknown_split {
        let _ = writeln!(
            s,
            "{n} predictions name split {split}, which the release does not have"
        );
    }
    if r.matched_by_id > 0 {
        let _ = writeln!(
            s,
            "predictions without a `split` matched to a robustness split by their qa_id: {}",
            r.matched_by_id
        );
    }
    for (split, rep) in &r.splits {
        let _ = writeln!(s, "\n## split {split}");
        s.push_str(&summary(rep));
    }
    if !r.robustness.is_empty() {
        let _ = writeln!(s, "\n## corruption robustness");
        s.push_str(&robustness::summary(&r.robustness));
    }
    s
}

/// The table of one split.
pub fn summary(r: &ScoreReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "score: {} questions, {} predictions ({} missing, {} unknown ids)",
        r.questions, r.predictions, r.missing, r.unknown
    );
    let _ = writeln!(
        s,
        "| group | n | parsed | accuracy | accuracy (parsed) | balanced acc. | macro-F1 |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
    let mut row = |name: &str, g: &GroupScore| {
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} |",
            g.n, g.parsed, g.accuracy, g.accuracy_parsed, g.balanced_accuracy, g.macro_f1
        );
    };
    row("all", &r.overall);
    for (k, g) in &r.by_family {
        row(k, g);
    }
    for (k, g) in &r.by_type {
        row(k, g);
    }
    if let Some(t) = &r.egodyn_temporal {
        row("egodyn temporal", t);
    }
    if let Some(c) = &r.egodyn_consistency {
        let _ = writeln!(
            s,
            "egodyn consistency: WPCR {:.3} / PCov {:.3} (released code: EMCR {:.3} × rule coverage {:.2}); WPCR {:.3} / PCov {:.3} (paper Eq. 2); {} clips",
            c.wpcr_ref, c.pcov_ref, c.emcr, c.rule_coverage, c.wpcr_paper, c.pcov_paper, c.clips
        );
    }
    s
}
