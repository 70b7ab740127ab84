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
pub(crate) mod robustness;
pub mod sig;
mod split;

use std::collections::{BTreeMap, HashMap, HashSet};
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
pub(crate) fn read_predictions(path: &Path) -> Result<SplitPredictions> {
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
pub(crate) struct ReleaseScore {
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

/// Scores each split of the release in `dir` on its own: a prediction counts for the split it
/// names, or for `default_split` (the release's main split unless given) when it names none.
/// The text-only control repeats the main split's ids, so one prediction never counts for both.
/// The shards are read a batch at a time (the prediction file and per-group tallies are what is
/// held), each checked against the manifest's sha256 when `verify`.
pub(crate) fn score_release(
    dir: &Path,
    verify: bool,
    predictions: &SplitPredictions,
    default_split: Option<&str>,
) -> Result<ReleaseScore> {
    let (main, shards) = listed_shards(dir, verify)?;
    let (settings, text_only) = crate::release::read::manifest_settings(dir)?;
    let default = default_split.unwrap_or(&main).to_string();
    if !shards.contains_key(&default) {
        return Err(Error::invalid(
            "score",
            format!(
                "the release has no split {default} (it has {})",
                shards.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    let by_id = matched_by_id(&shards, &settings, &default, predictions.get(&None))?;
    let mut by_split: BTreeMap<String, HashMap<&str, &str>> = BTreeMap::new();
    let mut out = ReleaseScore {
        default_split: default.clone(),
        ..Default::default()
    };
    for (split, preds) in predictions {
        let named = split.clone().unwrap_or_else(|| default.clone());
        if !shards.contains_key(&named) {
            *out.unknown_split.entry(named).or_default() += preds.len();
            continue;
        }
        for (id, text) in preds {
            let name = match (split, by_id.get(id.as_str())) {
                (None, Some(s)) => {
                    out.matched_by_id += 1;
                    (*s).to_string()
                }
                (None, None) => {
                    out.matched_to_default += 1;
                    named.clone()
                }
                _ => named.clone(),
            };
            let into = by_split.entry(name.clone()).or_default();
            if into.insert(id.as_str(), text.as_str()).is_some() {
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
    // The robustness splits first: the main split's and the control's rows only fill in the
    // base rows they re-ask.
    let mut order: Vec<&String> = Vec::new();
    for s in settings.iter().map(|s| &s.split) {
        if let Some((k, _)) = shards.get_key_value(s).filter(|_| !order.contains(&s)) {
            order.push(k);
        }
    }
    order.extend(
        shards
            .keys()
            .filter(|k| !settings.iter().any(|s| &s.split == *k)),
    );
    let mut robust = robustness::Collector::new(&settings, &main, text_only.as_deref());
    for split in order {
        let preds = by_split.remove(split.as_str()).unwrap_or_default();
        if preds.is_empty() && *split != main {
            continue;
        }
        let mut tally = split::SplitTally::new(preds);
        for f in &shards[split] {
            crate::release::read::for_each_row(f, *split == main, |q, tag| {
                let right = tally.add(q);
                robust.add(
                    split,
                    robustness::Answered {
                        family: &q.family,
                        qa_id: &q.qa_id,
                        base_qa_id: &tag.base_qa_id,
                        question_type: &q.question_type,
                        choices: q.choices.len(),
                        right,
                    },
                );
                Ok(())
            })?;
        }
        out.splits.insert(split.clone(), tally.finish());
    }
    if !settings.is_empty() {
        out.robustness = robust.finish();
    }
    Ok(out)
}

/// The predictions naming no split whose `qa_id` is a robustness row's and not a row of the
/// default split: `qa_id` → that robustness split. Reads only the shards' id columns.
fn matched_by_id<'p>(
    shards: &'p BTreeMap<String, Vec<std::path::PathBuf>>,
    settings: &[crate::release::read::SplitSetting],
    default: &str,
    unnamed: Option<&'p BTreeMap<String, String>>,
) -> Result<HashMap<&'p str, &'p str>> {
    let mut out = HashMap::new();
    let Some(unnamed) = unnamed.filter(|u| !u.is_empty()) else {
        return Ok(out);
    };
    let mut in_default: HashSet<&str> = HashSet::new();
    for f in shards.get(default).into_iter().flatten() {
        crate::release::read::for_each_id(f, |id| {
            if let Some((k, _)) = unnamed.get_key_value(id) {
                in_default.insert(k.as_str());
            }
        })?;
    }
    for s in settings {
        let Some((split, files)) = shards.get_key_value(&s.split) else {
            continue;
        };
        for f in files {
            crate::release::read::for_each_id(f, |id| {
                if let Some((k, _)) = unnamed.get_key_value(id) {
                    if !in_default.contains(k.as_str()) {
                        out.insert(k.as_str(), split.as_str());
                    }
                }
            })?;
        }
    }
    Ok(out)
}

/// Scores `predictions` against `questions`.
pub fn score(questions: &[QaRecord], predictions: &BTreeMap<String, String>) -> ScoreReport {
    let preds = predictions
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut tally = split::SplitTally::new(preds);
    for q in questions {
        tally.add(q);
    }
    tally.finish()
}

/// The tables the command prints, one per scored split.
pub(crate) fn release_summary(r: &ReleaseScore) -> String {
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
pub(crate) fn summary(r: &ScoreReport) -> String {
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
