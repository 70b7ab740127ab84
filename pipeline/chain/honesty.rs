//! The build's two promises about what it publishes: every family the config enables is in the
//! release with at least its `min_rows` (or the build stops, naming the step that emptied it and
//! why), and no family is answered from the text alone beyond its blind margin over chance (or
//! the build stops with the audit table). The dataset card ends with both, family by family.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::config::BuildConfig;
use crate::store::atomic::write_atomic;
use crate::{Error, Result};

/// Rows a family keeps unless its `[families.<name>] min_rows` says otherwise: below this a
/// question type has one or two rows and no per-type accuracy means anything.
pub(crate) const DEFAULT_MIN_ROWS: usize = 10;

/// How far above chance a family's best blind baseline may be (held out) unless its
/// `[families.<name>] blind_margin` says otherwise.
pub(crate) const DEFAULT_BLIND_MARGIN: f64 = 0.05;

/// The heading of the card's closing section; a build run again replaces it.
const CARD_SECTION: &str = "## Families, rows and the blind audit";

/// One family's rows after each step that can drop them.
#[derive(Debug, Clone, Default)]
pub(crate) struct FamilyRows {
    /// What the family's stage wrote, over every scene.
    pub produced: u64,
    /// The step that balanced or gathered them (`balance_sig`, `gather_stsbench`).
    pub step: String,
    /// What that step kept.
    pub kept: u64,
    /// The step's folder (its balance report and blind-filter log).
    pub dir: PathBuf,
}

/// Counts each family's rows as produced by its stage (`stage_files`) and as kept by its
/// family step (`kept_files`: family → (step name, file the release reads)).
pub(crate) fn count(
    stage_files: &BTreeMap<String, Vec<PathBuf>>,
    kept_files: &BTreeMap<String, (String, PathBuf)>,
) -> Result<BTreeMap<String, FamilyRows>> {
    let mut out = BTreeMap::new();
    for (family, (step, file)) in kept_files {
        let mut produced = 0;
        for f in stage_files.get(family).into_iter().flatten() {
            produced += crate::store::ipc_counts(f)?.1;
        }
        let kept = crate::store::ipc_counts(file)?.1;
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        out.insert(
            family.clone(),
            FamilyRows {
                produced,
                step: step.clone(),
                kept,
                dir,
            },
        );
    }
    Ok(out)
}

/// Stops the build when an enabled family has fewer rows than its `min_rows` after its stage
/// or its family step: names the family, the step and why.
pub(crate) fn check_kept(
    c: &BuildConfig,
    release: &Path,
    rows: &BTreeMap<String, FamilyRows>,
) -> Result<()> {
    for family in c.stages.families() {
        let min = c.min_rows(family);
        let r = rows.get(family).cloned().unwrap_or_default();
        let stage = c.stages.stage_of(family);
        if r.produced < min as u64 {
            return Err(short(
                release,
                family,
                r.produced,
                min,
                stage,
                format!(
                    "the {stage} stage wrote {} questions over the build's scenes: they hold too \
                     few items it can ask about",
                    r.produced
                ),
            ));
        }
        if r.kept < min as u64 {
            return Err(short(
                release,
                family,
                r.kept,
                min,
                &r.step,
                why_dropped(&r),
            ));
        }
    }
    Ok(())
}

/// Stops the build when the release published fewer than `min_rows` of an enabled family
/// (its screen pass drops rows whose images cannot be shown).
pub(crate) fn check_released(
    c: &BuildConfig,
    release: &Path,
    counts: &BTreeMap<String, BTreeMap<String, usize>>,
    rows: &BTreeMap<String, FamilyRows>,
) -> Result<()> {
    for family in c.stages.families() {
        let min = c.min_rows(family);
        let n: usize = counts.get(family).map_or(0, |t| t.values().sum());
        if n < min {
            let kept = rows.get(family).map_or(0, |r| r.kept);
            return Err(short(
                release,
                family,
                n as u64,
                min,
                "release",
                format!(
                    "the release published {n} of the {kept} rows its family step kept; the \
                     others' images could not be shown (see the release step's rejects)"
                ),
            ));
        }
    }
    Ok(())
}

fn short(release: &Path, family: &str, rows: u64, min: usize, step: &str, why: String) -> Error {
    Error::Promise {
        path: release.to_path_buf(),
        detail: format!(
            "family {family} is left with {rows} rows, fewer than its min_rows ({min}), after \
             step {step}: {why}. Build more scenes, loosen that step, or set \
             [families.{family}] min_rows lower to publish it anyway"
        ),
    }
}

/// Why a family step kept so few rows: its balance report and blind-filter log.
fn why_dropped(r: &FamilyRows) -> String {
    let mut parts = vec![format!("it kept {} of {} rows", r.kept, r.produced)];
    let report = r.dir.join("balance_report.json");
    if let Ok(text) = crate::store::input::read_to_string(&report, crate::store::input::METADATA) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
            parts.push(format!(
                "balancing selected {} of {} items (target {})",
                v["items_selected"], v["items_in"], v["target_items"]
            ));
        }
    }
    let log = r.dir.join("blind_filter.jsonl");
    if let Ok(text) = crate::store::input::read_to_string(&log, crate::store::input::METADATA) {
        let n = text.lines().filter(|l| !l.trim().is_empty()).count();
        if n > 0 {
            parts.push(format!(
                "the blind filter removed {n} rows a text-only baseline answered ({})",
                log.display()
            ));
        }
    }
    parts.join("; ")
}

/// Reads the release's blind audit (`manifest.json`), writes every enabled family's rows,
/// audit and margin at the end of the card, and stops the build with the audit table when a
/// family is over its margin.
pub(crate) fn check_margins(c: &BuildConfig, release: &Path) -> Result<()> {
    let manifest = release.join("manifest.json");
    let text = crate::store::input::read_to_string(&manifest, crate::store::input::METADATA)?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::json(&manifest, e))?;
    let audit = &v["blind_audit"];
    let grouping = audit["grouping"].as_str().unwrap_or("none").to_string();
    let folds = audit["folds"].as_u64().unwrap_or(0);
    let lines: BTreeMap<String, crate::audit::Baselines> =
        serde_json::from_value(audit["families"].clone()).unwrap_or_default();
    let held_out = grouping != "none" && folds >= 2;
    let mut table = String::from(
        "| family | rows | chance | letter prior | answer prior per template | question only | \
         excess | margin | |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let mut over = Vec::new();
    for family in c.stages.families() {
        let margin = c.blind_margin(family);
        match lines.get(family) {
            Some(l) => {
                let verdict = if !held_out {
                    "not held out"
                } else if l.excess() > margin {
                    over.push(family);
                    "over"
                } else {
                    "within"
                };
                let _ = writeln!(
                    table,
                    "| {family} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:+.3} | {margin:.3} | {verdict} |",
                    l.rows,
                    l.chance,
                    l.letter_prior,
                    l.template_prior,
                    l.question_only,
                    l.excess()
                );
            }
            None => {
                let _ = writeln!(
                    table,
                    "| {family} | 0 | – | – | – | – | – | {margin:.3} | none published (min_rows {}) |",
                    c.min_rows(family)
                );
            }
        }
    }
    let sampled: BTreeMap<String, crate::audit::Sample> =
        serde_json::from_value(audit["sampled"].clone()).unwrap_or_default();
    if let Some(note) = crate::audit::sampled_note(&sampled) {
        table.push('\n');
        table.push_str(&note);
    }
    write_card_section(release, &grouping, folds, &table)?;
    if over.is_empty() {
        return Ok(());
    }
    Err(Error::Promise {
        path: release.to_path_buf(),
        detail: format!(
            "answered from the text alone beyond the blind margin for {}: \
             held-out blind baselines ({folds} folds by {grouping}):\n{table}Balance the family \
             (answer_ratio, max_blind_excess in [balance.<family>]), build more scenes, or raise \
             [families.<family>] blind_margin explicitly to publish it anyway",
            over.join(", ")
        ),
    })
}

/// Puts the families' section at the end of the release's card, replacing an earlier one.
fn write_card_section(release: &Path, grouping: &str, folds: u64, table: &str) -> Result<()> {
    let path = release.join("README.md");
    let card = crate::store::input::read_to_string(&path, crate::store::input::METADATA)?;
    let body = match card.find(&format!("\n{CARD_SECTION}\n")) {
        Some(i) => &card[..i + 1],
        None => card.as_str(),
    };
    let how = if grouping == "none" || folds < 2 {
        "Too few scenes, clips or keyframes to hold any out: the baselines could not be scored \
         on rows they were not fitted on."
            .to_string()
    } else {
        format!(
            "Three blind baselines that never see an image (the answer letter's prior, each \
             question type's answer prior, a question-only classifier) are fitted on {} of {folds} \
             folds of {grouping}s and scored on the held-out one; `excess` is the best of them \
             over chance, and the build refuses a family over its `margin`.",
            folds - 1
        )
    };
    let out = format!(
        "{}\n{CARD_SECTION}\n\nEvery family the build enabled, with the rows it published. {how}\n\n{table}",
        body.trim_end()
    );
    write_atomic(&path, out.as_bytes())
}
