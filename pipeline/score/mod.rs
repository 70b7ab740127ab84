//! `drivegen score`: a model's answers against a release. Responses are parsed with EgoDyn's
//! 4-stage parser ([`parse`]); accuracy (unparsed = wrong, and over parsed answers only),
//! balanced accuracy and macro-F1 ([`metrics`]) are reported overall and per family, question
//! type, source and corruption; EgoDyn's consistency metrics in both definitions
//! ([`consistency`]) for the `egodyn` family.
//!
//! Predictions are JSON lines `{"qa_id": "...", "prediction": "..."}` (`response` or `answer`
//! are accepted as the text's key). A question without a prediction counts as unparsed; a
//! prediction for an unknown `qa_id` is counted and reported, not scored.

pub mod consistency;
pub mod metrics;
pub mod parse;
pub mod sig;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use self::consistency::Consistency;
use self::metrics::GroupScore;
use crate::qa::{self, QaRecord};
use crate::{Error, Result};

/// EgoDyn's temporal group ("Temporal Acc." in its tables).
pub const EGODYN_TEMPORAL: [&str; 4] = [
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

/// The release's questions (the shards under `data/`, in name order).
pub fn read_release(dir: &Path) -> Result<Vec<QaRecord>> {
    let data = dir.join("data");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&data)
        .map_err(|e| Error::io(&data, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::Input {
            file: data,
            record: "data/*.parquet".into(),
            detail: "no shards".into(),
        });
    }
    let mut rows = Vec::new();
    for f in files {
        let bad = |e: &dyn std::fmt::Display| Error::Input {
            file: f.clone(),
            record: "parquet".into(),
            detail: e.to_string(),
        };
        let file = File::open(&f).map_err(|e| Error::io(&f, e))?;
        let b = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| bad(&e))?;
        // The QA columns only: images can be most of the bytes.
        let names: Vec<String> = qa::record::qa_fields()
            .iter()
            .map(|x| x.name().clone())
            .collect();
        let schema = b.parquet_schema();
        let keep: Vec<usize> = (0..schema.num_columns())
            .filter(|&i| {
                let path = schema.column(i).path().parts().first().cloned();
                path.is_some_and(|p| names.contains(&p))
            })
            .collect();
        let mask = ProjectionMask::leaves(schema, keep);
        for batch in b.with_projection(mask).build().map_err(|e| bad(&e))? {
            rows.extend(qa::from_batch(&batch.map_err(|e| bad(&e))?)?);
        }
    }
    Ok(rows)
}

/// `qa_id` → response text.
pub fn read_predictions(path: &Path) -> Result<BTreeMap<String, String>> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut out = BTreeMap::new();
    for (k, line) in BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| Error::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |detail: String| Error::Input {
            file: path.to_path_buf(),
            record: format!("line {}", k + 1),
            detail,
        };
        let v: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let id = v["qa_id"]
            .as_str()
            .ok_or_else(|| bad("no string `qa_id`".into()))?;
        let text = ["prediction", "response", "answer"]
            .iter()
            .find_map(|key| v[*key].as_str())
            .ok_or_else(|| bad("no `prediction` (or `response`, `answer`) text".into()))?;
        if out.insert(id.to_string(), text.to_string()).is_some() {
            return Err(bad(format!("a second prediction for {id}")));
        }
    }
    Ok(out)
}

/// Scores `predictions` against `questions`.
pub fn score(questions: &[QaRecord], predictions: &BTreeMap<String, String>) -> ScoreReport {
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
    report
}

/// The table the command prints.
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
