//! `drivegen export --format lmms-eval`: a task folder lmms-eval's `TaskManager(include_path=…)`
//! reads, over the release as it is.
//!
//! ```text
//! _default_template_yaml      dataset_path (the release folder), the functions, the metrics
//! {name}_{family}_{split}.yaml one task per family and split that holds its rows
//! {name}_{family}.yaml         a group per family, its tasks
//! utils.py                     doc_to_visual, doc_to_text, doc_to_target, process_results
//! ```
//!
//! Nothing is copied: `dataset_path` names the release, whose card makes every family a
//! `datasets` config with its splits, so `dataset_name` is the family and `test_split` the split.
//! The rows, their images and prompts are read by `datasets` from the shards at evaluation time.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::store::atomic::write_atomic;
use crate::{Error, Result};

/// The functions the tasks call, the same for every release: they read only the row.
const UTILS: &str = include_str!("lmms_eval_utils.py");

const TEMPLATE: &str = "_default_template_yaml";

/// What `run` writes.
#[derive(Debug, Clone)]
pub(crate) struct LmmsEvalOptions {
    pub release: PathBuf,
    pub out: PathBuf,
    /// The tasks' prefix, lower-cased (`drivegen_metavqa_test`).
    pub name: String,
}

/// Writes the task folder; the summary counts the release's rows per split.
pub fn run(opts: &LmmsEvalOptions) -> Result<super::ExportSummary> {
    crate::store::paths::disjoint(&opts.release, "the release", &opts.out, "the export")?;
    let lower = opts.name.to_lowercase();
    let prefix = identifier("--name", &lower, &opts.release)?;
    let manifest_path = opts.release.join("manifest.json");
    let text = crate::store::input::read_to_string(&manifest_path, crate::store::input::METADATA)?;
    let manifest: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::json(&manifest_path, e))?;
    let tasks = tasks(&manifest, &manifest_path)?;
    // `datasets` resolves the path against its own working directory, not this folder's.
    let release = std::fs::canonicalize(&opts.release).map_err(|e| Error::io(&opts.release, e))?;
    let release = release.to_str().ok_or_else(|| Error::Input {
        file: release.clone(),
        record: "dataset_path".into(),
        detail: "the release's path is not UTF-8, which YAML cannot hold".into(),
    })?;

    let owned = crate::store::owner::Owned::claim(
        &opts.out,
        "export",
        "an lmms-eval task folder over the release",
    )?;
    let mut record = super::ExportRecord::claim(&opts.release, &opts.out)?;
    let mut files = Vec::new();
    let mut put = |name: String, body: &str| -> Result<()> {
        write_atomic(&opts.out.join(&name), body.as_bytes())?;
        files.push(name);
        Ok(())
    };
    put(TEMPLATE.into(), &template(release))?;
    put("utils.py".into(), UTILS)?;
    let mut summary = super::ExportSummary {
        out: opts.out.clone(),
        ..Default::default()
    };
    for (family, splits) in &tasks {
        let family = identifier("manifest.json split_counts", family, &manifest_path)?;
        let mut names = Vec::new();
        for (split, rows) in splits {
            let split = identifier("manifest.json split_counts", split, &manifest_path)?;
            let task = format!("{prefix}_{family}_{split}");
            put(
                format!("{task}.yaml"),
                &format!(
                    "task: {task}\ninclude: {TEMPLATE}\ndataset_name: {family}\n\
                     test_split: {split}\n"
                ),
            )?;
            *summary.rows.entry(split.to_string()).or_default() += rows;
            names.push(task);
        }
        let mut group = format!("group: {prefix}_{family}\ntask:\n");
        for n in &names {
            let _ = writeln!(group, "  - {n}");
        }
        // No aggregate over the group: clean, text-only and corrupted splits are different
        // measurements, compared by `drivegen score`, not averaged.
        put(format!("{prefix}_{family}.yaml"), &group)?;
    }
    record.add("lmms-eval", &files);
    record.write(&opts.out)?;
    summary.files = files;
    owned.finish()?;
    Ok(summary)
}

/// Family → split → rows, from `split_counts`: a family's task exists for each split holding
/// its rows (a robustness split re-asks only some families, and `datasets` refuses a split
/// whose files match nothing).
fn tasks(
    manifest: &serde_json::Value,
    path: &Path,
) -> Result<BTreeMap<String, BTreeMap<String, usize>>> {
    let bad = |detail: &str| Error::Input {
        file: path.to_path_buf(),
        record: "split_counts".into(),
        detail: detail.into(),
    };
    let counts = manifest["split_counts"]
        .as_object()
        .ok_or_else(|| bad("missing, or not an object of split → family → rows"))?;
    let mut out: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for (split, families) in counts {
        let families = families.as_object().ok_or_else(|| {
            bad(&format!(
                "split {split:?} is not an object of family → rows"
            ))
        })?;
        for (family, n) in families {
            let n = n
                .as_u64()
                .ok_or_else(|| bad(&format!("{split}/{family}: not a row count")))?;
            if n > 0 {
                out.entry(family.clone())
                    .or_default()
                    .insert(split.clone(), n as usize);
            }
        }
    }
    if out.is_empty() {
        return Err(bad("no split holds any rows"));
    }
    Ok(out)
}

/// `s` if it can be a task name and a bare YAML scalar: lower-case ASCII letters, digits, `_`
/// and `-`, starting with a letter.
fn identifier<'a>(what: &str, s: &'a str, file: &Path) -> Result<&'a str> {
    let ok = s.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if ok {
        Ok(s)
    } else {
        Err(Error::Input {
            file: file.to_path_buf(),
            record: what.into(),
            detail: format!(
                "{s:?} cannot name an lmms-eval task: use lower-case letters, digits, _ and -, \
                 starting with a letter"
            ),
        })
    }
}

fn template(release: &str) -> String {
    let path = serde_json::to_string(release).unwrap_or_default();
    format!(
        "dataset_path: {path}\n\
         output_type: generate_until\n\
         doc_to_visual: !function utils.doc_to_visual\n\
         doc_to_text: !function utils.doc_to_text\n\
         doc_to_target: !function utils.doc_to_target\n\
         process_results: !function utils.process_results\n\
         generation_kwargs:\n  max_new_tokens: 64\n  temperature: 0\n  do_sample: false\n\
         metric_list:\n\
         \x20 - metric: accuracy\n    aggregation: !function utils.aggregate_accuracy\n    \
         higher_is_better: true\n\
         \x20 - metric: type_accuracy\n    aggregation: !function utils.aggregate_type_accuracy\n    \
         higher_is_better: true\n\
         lmms_eval_specific_kwargs:\n  default:\n    pre_prompt: \"\"\n    post_prompt: \"\"\n\
         metadata:\n  version: 1.0\n"
    )
}
