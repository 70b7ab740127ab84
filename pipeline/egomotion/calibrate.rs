//! Re-calibration for a new platform, and the α sensitivity study.
//!
//! `run` recomputes the percentile-calibrated thresholds (config `calibration = "percentile"`:
//! braking from P25/P50/P75 of the per-clip minimum acceleration, smoothness from P33/P67 of
//! the mean |jerk|) on the clips of a store, keeps every physics-anchored, semantic and
//! placeholder threshold, and writes a complete config that `egomotion` accepts. The Markdown
//! report compares old and new thresholds and the label distribution under both and, with an
//! α sweep, gives per question the fraction of labels that flip relative to α = 1 and the
//! oracle's own consistency violations at each α.
//!
//! Unlike the reference's relabelling (which silently skipped `extreme_maneuver` because a
//! feature was missing from its inputs), every question is relabelled from the full arrays.

use std::fmt;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::config::{Calibration, EgodynConfig};
use super::kinematics::{percentile_sorted, Features, Kinematics};
use super::oracle::consistency::{violations, RULES};
use super::oracle::inputs::Input;
use super::oracle::{Oracle, Rule};
use super::Engine;
use crate::config::StageConfig;
use crate::store::atomic::write_atomic;
use crate::store::Store;
use crate::{Error, Result};

/// One recalibrated question.
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdChange {
    pub question: String,
    pub percentiles: Vec<f64>,
    pub old: Vec<f64>,
    pub new: Vec<f64>,
}

/// What `calibrate::run` did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CalibrationSummary {
    pub clips: usize,
    pub changes: Vec<ThresholdChange>,
    pub out_config: PathBuf,
    pub report: PathBuf,
    /// The α values swept (empty without a sweep).
    pub alphas: Vec<f64>,
    /// Per question, the flip fraction at each α.
    pub flips: Vec<(String, Vec<f64>)>,
}

impl fmt::Display for CalibrationSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "egodyn calibration on {} clips → {} (report {})",
            self.clips,
            self.out_config.display(),
            self.report.display()
        )?;
        for c in &self.changes {
            writeln!(
                f,
                "  {:<20} {} → {}",
                c.question,
                fmt_list(&c.old),
                fmt_list(&c.new)
            )?;
        }
        if !self.alphas.is_empty() {
            writeln!(
                f,
                "  α sweep: {} levels from {} to {}",
                self.alphas.len(),
                self.alphas[0],
                self.alphas[self.alphas.len() - 1]
            )?;
        }
        Ok(())
    }
}

fn fmt_list(v: &[f64]) -> String {
    let s: Vec<String> = v.iter().map(|x| format!("{x:.4}")).collect();
    format!("[{}]", s.join(", "))
}

/// The α values of `start:end:step` (inclusive of `end` up to rounding).
pub fn alpha_levels(start: f64, end: f64, step: f64) -> Result<Vec<f64>> {
    if !(start.is_finite() && end.is_finite() && step.is_finite())
        || start <= 0.0
        || step <= 0.0
        || end < start
    {
        return Err(Error::invalid(
            format!("alpha sweep {start}:{end}:{step}"),
            "need 0 < start ≤ end and step > 0",
        ));
    }
    let n = ((end - start) / step + 1e-9).floor() as usize + 1;
    if n > 1000 {
        return Err(Error::invalid(
            format!("alpha sweep {start}:{end}:{step}"),
            format!("{n} levels (at most 1000)"),
        ));
    }
    // Rounded to 12 decimals so 0.5 + 2·0.1 prints as 0.7.
    Ok((0..n)
        .map(|i| ((start + i as f64 * step) * 1e12).round() / 1e12)
        .collect())
}

/// Recalibrates `in_config` (default: the built-in config) on the clips of `store_dir`, writes
/// the new config to `out_config` and the Markdown report to `report`; `alpha_sweep` =
/// `(start, end, step)` adds the sensitivity study.
pub fn run(
    store_dir: &Path,
    in_config: Option<&Path>,
    out_config: &Path,
    report: &Path,
    alpha_sweep: Option<(f64, f64, f64)>,
) -> Result<CalibrationSummary> {
    let alphas = match alpha_sweep {
        Some((a, b, s)) => alpha_levels(a, b, s)?,
        None => Vec::new(),
    };
    let old_cfg = EgodynConfig::load(in_config)?;
    let engine = Engine::new(old_cfg.clone())?;
    let store = Store::open(store_dir)?;
    for (out, flag) in [(out_config, "--out"), (report, "--report")] {
        crate::store::paths::disjoint(store_dir, "--store", out, flag)?;
        if let Some(cfg) = in_config {
            crate::store::paths::disjoint(cfg, "--config", out, flag)?;
        }
        crate::store::owner::file_output(out)?;
    }
    let pool = clip_pool(&engine, &store)?;
    if pool.is_empty() {
        return Err(Error::input(
            store_dir,
            "clips",
            "the store yields no valid EgoDyn clip to calibrate on",
        ));
    }
    let (new_cfg, changes) = recalibrate(&old_cfg, &pool)?;
    let new_text = config_text(&new_cfg, pool.len(), store_dir, in_config, out_config)?;
    let config_error = |detail| Error::Config {
        file: out_config.to_path_buf(),
        detail,
    };
    let new_oracle = Oracle::new(&new_cfg).map_err(config_error)?;
    let mut md = String::new();
    report_header(
        &mut md,
        store_dir,
        &store,
        pool.len(),
        &old_cfg,
        &new_cfg,
        out_config,
    )?;
    report_thresholds(&mut md, &old_cfg, &new_cfg, &changes);
    report_labels(&mut md, &pool, &engine.oracle, &new_oracle);
    let flips = if alphas.is_empty() {
        Vec::new()
    } else {
        let (flips, consistency_rows) =
            sweep(&pool, &new_cfg, &new_oracle, &alphas).map_err(config_error)?;
        report_sweep(&mut md, &alphas, &new_cfg, &flips, &consistency_rows);
        flips
    };
    write_atomic(out_config, new_text.as_bytes())?;
    write_atomic(report, md.as_bytes())?;
    Ok(CalibrationSummary {
        clips: pool.len(),
        changes,
        out_config: out_config.to_path_buf(),
        report: report.to_path_buf(),
        flips,
        alphas,
    })
}

/// The valid clips of every scene of `store`, cut as `egomotion` cuts them, so the
/// percentiles describe the clips the questions will be asked on.
fn clip_pool(engine: &Engine, store: &Store) -> Result<Vec<(Kinematics, Features)>> {
    let mut pool: Vec<(Kinematics, Features)> = Vec::new();
    let pb = crate::progress::bar(store.meta().counts.scenes, "egodyn calibrate");
    for scene in store.scenes()? {
        let scene = scene?;
        let source = if scene.scene.source.is_empty() {
            store.meta().source.clone()
        } else {
            scene.scene.source.clone()
        };
        let (clips, _) = engine.scene_clips(&scene, &source);
        pool.extend(clips.into_iter().map(|c| (c.kin, c.features)));
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok(pool)
}

/// The text of the recalibrated config, with a header naming where it came from; fails
/// unless it reads back as exactly `new_cfg`, since that is what `egomotion` will use.
fn config_text(
    new_cfg: &EgodynConfig,
    clips: usize,
    store_dir: &Path,
    in_config: Option<&Path>,
    out_config: &Path,
) -> Result<String> {
    let new_text = format!(
        "# EgoDyn config recalibrated by drivegen on {} clips of {}.\n# Percentile thresholds recomputed; all other values copied from {}.\n\n{}",
        clips,
        store_dir.display(),
        in_config.map_or_else(|| super::config::DEFAULT_NAME.to_string(), |p| p.display().to_string()),
        new_cfg.to_toml()?
    );
    let reread = EgodynConfig::from_toml(&new_text, out_config)?;
    if reread != *new_cfg {
        return Err(Error::Config {
            file: out_config.to_path_buf(),
            detail: "the written config does not read back identically".into(),
        });
    }
    Ok(new_text)
}

/// The report's title and provenance: store, clip count and both configs' hashes.
fn report_header(
    md: &mut String,
    store_dir: &Path,
    store: &Store,
    clips: usize,
    old_cfg: &EgodynConfig,
    new_cfg: &EgodynConfig,
    out_config: &Path,
) -> Result<()> {
    let _ = writeln!(md, "# EgoDyn threshold calibration\n");
    let _ = writeln!(
        md,
        "- store: `{}` (source `{}`)",
        store_dir.display(),
        store.meta().source
    );
    let _ = writeln!(md, "- valid clips: {}", clips);
    let _ = writeln!(
        md,
        "- config in: hash `{}`; config out `{}`: hash `{}`",
        old_cfg.hash()?,
        out_config.display(),
        new_cfg.hash()?
    );
    if (old_cfg.alpha - 1.0).abs() > 0.0 {
        let _ = writeln!(
            md,
            "- note: the input config has α = {}; thresholds below are before α scaling",
            old_cfg.alpha
        );
    }
    Ok(())
}

/// The report's threshold table (every question, old against new) and the percentiles each
/// recalibrated question was computed from.
fn report_thresholds(
    md: &mut String,
    old_cfg: &EgodynConfig,
    new_cfg: &EgodynConfig,
    changes: &[ThresholdChange],
) {
    let _ = writeln!(md, "\n## Thresholds\n");
    let _ = writeln!(md, "| question | calibration | old | new |");
    let _ = writeln!(md, "|---|---|---|---|");
    for q in &new_cfg.questions {
        let old_q = old_cfg.questions.iter().find(|o| o.id == q.id);
        let kind = format!("{:?}", q.calibration).to_lowercase();
        let old = old_q.map(|o| threshold_values(&o.rule)).unwrap_or_default();
        let new = threshold_values(&q.rule);
        let _ = writeln!(
            md,
            "| {} | {kind} | {} | {} |",
            q.id,
            fmt_params(&old),
            fmt_params(&new)
        );
    }
    for c in changes {
        let _ = writeln!(
            md,
            "\n`{}`: percentiles {:?} of its input → {}",
            c.question,
            c.percentiles,
            fmt_list(&c.new)
        );
    }
}

/// The report's label distribution: per question and label, the clips of `pool` the old and
/// the new oracle give it.
fn report_labels(
    md: &mut String,
    pool: &[(Kinematics, Features)],
    old_oracle: &Oracle,
    new_oracle: &Oracle,
) {
    let old_classes: Vec<Vec<usize>> = pool.iter().map(|(k, f)| old_oracle.classes(k, f)).collect();
    let new_classes: Vec<Vec<usize>> = pool.iter().map(|(k, f)| new_oracle.classes(k, f)).collect();
    let _ = writeln!(md, "\n## Label distribution\n");
    let _ = writeln!(md, "| question | label | old | new |");
    let _ = writeln!(md, "|---|---|---|---|");
    let n = pool.len() as f64;
    for (qi, q) in new_oracle.questions.iter().enumerate() {
        for (ci, label) in q.choices.iter().enumerate() {
            let o = old_classes.iter().filter(|c| c[qi] == ci).count();
            let nw = new_classes.iter().filter(|c| c[qi] == ci).count();
            let _ = writeln!(
                md,
                "| {} | {label} | {o} ({:.1}%) | {nw} ({:.1}%) |",
                q.id,
                100.0 * o as f64 / n,
                100.0 * nw as f64 / n
            );
        }
    }
}

/// Per question, the fraction of clips whose label flips at each α; per α, the clips
/// violating each consistency rule.
type Sweep = (Vec<(String, Vec<f64>)>, Vec<Vec<usize>>);

/// The α sweep on `pool` with the new config: per question (in `new_oracle`'s order), the
/// fraction of clips whose label differs from α = 1 at each α; and per α, the clips violating
/// each consistency rule (in [`RULES`] order). Fails with the oracle's error detail.
fn sweep(
    pool: &[(Kinematics, Features)],
    new_cfg: &EgodynConfig,
    new_oracle: &Oracle,
    alphas: &[f64],
) -> std::result::Result<Sweep, String> {
    let n = pool.len() as f64;
    let mut flips: Vec<(String, Vec<f64>)> = new_oracle
        .questions
        .iter()
        .map(|q| (q.id.clone(), Vec::new()))
        .collect();
    let base = Oracle::with_alpha(new_cfg, 1.0)?;
    let base_classes: Vec<Vec<usize>> = pool.iter().map(|(k, f)| base.classes(k, f)).collect();
    let mut consistency_rows = Vec::new();
    for &a in alphas {
        let o = Oracle::with_alpha(new_cfg, a)?;
        let classes: Vec<Vec<usize>> = pool.iter().map(|(k, f)| o.classes(k, f)).collect();
        for (qi, fl) in flips.iter_mut().enumerate() {
            let changed = classes
                .iter()
                .zip(&base_classes)
                .filter(|(c, b)| c[qi] != b[qi])
                .count();
            fl.1.push(changed as f64 / n);
        }
        let mut per_rule = vec![0usize; RULES.len()];
        for c in &classes {
            for v in violations(&o, c) {
                if let Some(i) = RULES.iter().position(|r| r.name == v) {
                    per_rule[i] += 1;
                }
            }
        }
        consistency_rows.push(per_rule);
    }
    Ok((flips, consistency_rows))
}

/// The report's sensitivity and self-consistency tables from [`sweep`]'s results.
fn report_sweep(
    md: &mut String,
    alphas: &[f64],
    new_cfg: &EgodynConfig,
    flips: &[(String, Vec<f64>)],
    consistency_rows: &[Vec<usize>],
) {
    let head: Vec<String> = alphas.iter().map(|a| format!("α={a}")).collect();
    let _ = writeln!(
        md,
        "\n## Sensitivity: fraction of labels that flip against α = 1\n"
    );
    let _ = writeln!(
        md,
        "Thresholds of the new config multiplied by α (keys scaled as in the paper's study).\n"
    );
    let _ = writeln!(md, "| question | scaled keys | {} |", head.join(" | "));
    let _ = writeln!(md, "|---|---|{}", "---|".repeat(alphas.len()));
    for ((qid, fl), q) in flips.iter().zip(&new_cfg.questions) {
        let cells: Vec<String> = fl.iter().map(|x| format!("{x:.3}")).collect();
        let keys = q.rule.scaled_keys().join(", ");
        let _ = writeln!(
            md,
            "| {qid} | {} | {} |",
            if keys.is_empty() { "—".into() } else { keys },
            cells.join(" | ")
        );
    }
    let _ = writeln!(
        md,
        "\n## Oracle self-consistency: clips violating each rule\n"
    );
    let _ = writeln!(md, "| rule | {} |", head.join(" | "));
    let _ = writeln!(md, "|---|{}", "---|".repeat(alphas.len()));
    for (ri, r) in RULES.iter().enumerate() {
        let cells: Vec<String> = consistency_rows
            .iter()
            .map(|row| row[ri].to_string())
            .collect();
        let _ = writeln!(md, "| {} | {} |", r.name, cells.join(" | "));
    }
}

/// The thresholds of a rule as `name=value` pairs.
fn threshold_values(rule: &Rule) -> Vec<(String, f64)> {
    rule.named_params()
}

fn fmt_params(p: &[(String, f64)]) -> String {
    p.iter()
        .map(|(k, v)| format!("{k}={}", (v * 1e6).round() / 1e6))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The config with its percentile questions recomputed on `pool`.
pub(crate) fn recalibrate(
    cfg: &EgodynConfig,
    pool: &[(Kinematics, Features)],
) -> Result<(EgodynConfig, Vec<ThresholdChange>)> {
    let mut out = cfg.clone();
    let mut changes = Vec::new();
    let bad = |detail: String| Error::Config {
        file: PathBuf::from("egodyn config"),
        detail,
    };
    for q in out.questions.iter_mut() {
        if q.calibration != Calibration::Percentile {
            continue;
        }
        let pcts = q.percentiles.clone().unwrap_or_default();
        let input = match &q.rule {
            Rule::MultiThreshold { input, .. } | Rule::Threshold { input, .. } => input.clone(),
            other => {
                return Err(bad(format!(
                    "question {}: percentile calibration needs a threshold or multi_threshold rule, not {}",
                    q.id,
                    other.type_name()
                )))
            }
        };
        let input = Input::parse(&input).map_err(|e| bad(format!("question {}: {e}", q.id)))?;
        let mut values: Vec<f64> = pool
            .iter()
            .map(|(k, f)| input.measure(k, f).value)
            .filter(|v| v.is_finite())
            .collect();
        values.sort_by(f64::total_cmp);
        let new: Vec<f64> = pcts
            .iter()
            .map(|p| percentile_sorted(&values, *p))
            .collect();
        let (old, fits) = match &q.rule {
            Rule::MultiThreshold { thresholds, .. } => {
                (thresholds.clone(), new.len() == thresholds.len())
            }
            Rule::Threshold { threshold, .. } => (vec![*threshold], new.len() == 1),
            _ => (Vec::new(), false),
        };
        if !fits {
            return Err(bad(format!(
                "question {}: {} percentiles for {} thresholds",
                q.id,
                new.len(),
                old.len()
            )));
        }
        if new.windows(2).any(|w| w[0] >= w[1]) || new.iter().any(|v| !v.is_finite()) {
            return Err(bad(format!(
                "question {}: the pool's percentiles {new:?} are not strictly ascending (too few distinct values to calibrate)",
                q.id
            )));
        }
        match &mut q.rule {
            Rule::MultiThreshold { thresholds, .. } => thresholds.clone_from(&new),
            Rule::Threshold { threshold, .. } => *threshold = new[0],
            _ => {}
        }
        changes.push(ThresholdChange {
            question: q.id.clone(),
            percentiles: pcts,
            old,
            new,
        });
    }
    Ok((out, changes))
}
