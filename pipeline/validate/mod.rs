//! `drivegen validate RELEASE`: checks a release as a user downloads it (the Parquet shards,
//! `manifest.json` and the dataset card), row by row and as a whole.
//!
//! A stage passing its own tests says nothing about the artifact, so this reads only the
//! published files and none of drivegen's intermediate tables, and parses prompts back with
//! its own per-family parsers ([`layouts`]) rather than the renderer that wrote them.
//!
//! Per row: at least two distinct options, exactly one of them the answer, `answer` =
//! `choices[answer_index]`, `answer_letter` the letter of `answer_index`, the prompt showing
//! `choices` in order in the family's layout, `cameras`/`camera_frame_ids`/`images` (and
//! `image_paths` when set) of one length, every image decoding to the size its row records.
//! Per split: unique `qa_id`s; a text-only control split holding exactly its main split's
//! questions, every image black. Per release: answer letters uniform within each (family,
//! type, number of options) and within each (family, number of options) up to the remainder;
//! every shard listed in the manifest with its sha256, size and row count, no other shard in
//! `data/`, each holding only the family its name gives; the manifest's counts per family and
//! type true of every split; the card's configs (all families, and each family) and their
//! splits those of the manifest.

pub mod layouts;
mod robust;
mod rows;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::{Error, Result};

/// One thing wrong with a release.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Violation {
    /// Short name of the check (`options_in_prompt`, `shard_sha256`, …).
    pub check: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qa_id: Option<String>,
    pub detail: String,
}

/// What `validate` found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Report {
    pub release: String,
    /// Rows read per split.
    pub rows: BTreeMap<String, usize>,
    /// Images read, and how many of them were distinct (each distinct one decoded once).
    pub images: usize,
    pub distinct_images: usize,
    pub shards: usize,
    pub violations: Vec<Violation>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }

    fn add(&mut self, check: &str, shard: Option<&str>, qa_id: Option<&str>, detail: String) {
        self.violations.push(Violation {
            check: check.into(),
            shard: shard.map(str::to_string),
            qa_id: qa_id.map(str::to_string),
            detail,
        });
    }

    /// A readable summary; at most `max_listed` violations are listed one per line.
    pub fn summary(&self, max_listed: usize) -> String {
        let mut s = String::new();
        let rows: Vec<String> = self.rows.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(
            s,
            "validate {}: {} shards, rows {}, {} images ({} distinct, each decoded)",
            self.release,
            self.shards,
            rows.join(", "),
            self.images,
            self.distinct_images
        );
        if self.ok() {
            let _ = writeln!(s, "every check passed");
            return s;
        }
        let mut by: BTreeMap<&str, usize> = BTreeMap::new();
        for v in &self.violations {
            *by.entry(&v.check).or_default() += 1;
        }
        let kinds: Vec<String> = by.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(
            s,
            "{} violations: {}",
            self.violations.len(),
            kinds.join(", ")
        );
        for v in self.violations.iter().take(max_listed) {
            let _ = writeln!(
                s,
                "  {} [{}{}]: {}",
                v.check,
                v.shard.as_deref().unwrap_or("release"),
                v.qa_id
                    .as_deref()
                    .map(|q| format!(" {q}"))
                    .unwrap_or_default(),
                v.detail
            );
        }
        if self.violations.len() > max_listed {
            let _ = writeln!(
                s,
                "  … and {} more (--json lists them all)",
                self.violations.len() - max_listed
            );
        }
        s
    }
}

/// The suffix of a text-only control split's name.
const CONTROL_SUFFIX: &str = "_text_only";

/// Validates the release in `dir`. An unreadable manifest or shard is a violation, not an
/// error: the report names every problem it can find. Errors are left for what stops reading
/// altogether (the folder itself).
pub fn run(dir: &Path) -> Result<Report> {
    let mut rep = Report {
        release: dir.display().to_string(),
        ..Default::default()
    };
    if !dir.is_dir() {
        return Err(Error::invalid(
            "validate",
            format!("{} is not a release folder", dir.display()),
        ));
    }
    let manifest = read_manifest(dir, &mut rep);
    let listed = check_shard_files(dir, manifest.as_ref(), &mut rep);
    let mut state = rows::State::default();
    state.robust = robust::Robust::from_manifest(manifest.as_ref(), &mut rep);
    state.robust.read_bases(dir, &listed);
    state.paired = listed.iter().any(|l| l.split.ends_with(CONTROL_SUFFIX));
    let pb = crate::progress::bar(listed.len() as u64, "validate shards");
    for shard in &listed {
        rows::check_shard(dir, shard, &mut state, &mut rep);
        pb.inc(1);
    }
    pb.finish_and_clear();
    rows::repeated_ids(dir, &listed, &mut state, &mut rep);
    rows::finish(&state, &mut rep);
    check_counts(manifest.as_ref(), &state, &mut rep);
    check_card(dir, manifest.as_ref(), &mut rep);
    rep.rows = state.rows_per_split();
    rep.images = state.images;
    rep.distinct_images = state.distinct_images();
    // The audit reads the rows again: what the row checks kept (ids, decoded images) is not
    // held beside it.
    drop(state);
    check_blind_audit(dir, manifest.as_ref(), &mut rep);
    rep.shards = listed.len();
    rep.violations.sort();
    Ok(rep)
}

/// The blind audit `manifest.json` records is the one its rows give: recomputed and compared,
/// so a hand-edited figure cannot vouch for a release.
fn check_blind_audit(dir: &Path, manifest: Option<&serde_json::Value>, rep: &mut Report) {
    let Some(recorded) = manifest.map(|m| &m["blind_audit"]).filter(|v| !v.is_null()) else {
        return;
    };
    let fresh = match crate::release::blind::audit(dir) {
        Ok(a) => serde_json::to_value(&a).unwrap_or_default(),
        Err(e) => {
            let why = format!("cannot be recomputed: {}", e.report());
            return rep.add("blind_audit", None, None, why);
        }
    };
    if let Some(at) = differs(recorded, &fresh, "blind_audit") {
        rep.add(
            "blind_audit",
            None,
            None,
            format!("manifest.json's {at} is not what the release's rows give (`drivegen audit`)"),
        );
    }
}

/// Where `a` and `b` first differ (numbers within 1e-9 relative count as equal), as a path.
fn differs(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> Option<String> {
    use serde_json::Value as V;
    match (a, b) {
        (V::Number(x), V::Number(y)) => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            ((x - y).abs() > 1e-9 * x.abs().max(y.abs()).max(1.0)).then(|| at.to_string())
        }
        (V::Object(x), V::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => differs(p, q, &format!("{at}.{k}")),
                _ => Some(format!("{at}.{k}")),
            })
        }
        (V::Array(x), V::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| differs(p, q, &format!("{at}[{i}]"))),
        _ => (a != b).then(|| at.to_string()),
    }
}

fn read_manifest(dir: &Path, rep: &mut Report) -> Option<serde_json::Value> {
    let path = dir.join("manifest.json");
    let text = match crate::store::input::read_to_string(&path, crate::store::input::METADATA) {
        Ok(t) => t,
        Err(e) => {
            rep.add("manifest", None, None, e.report().to_string());
            return None;
        }
    };
    match serde_json::from_str(&text) {
        Ok(v) => Some(v),
        Err(e) => {
            rep.add(
                "manifest",
                None,
                None,
                format!("{}: not JSON: {e}", path.display()),
            );
            None
        }
    }
}

/// The manifest's `splits` (none without a manifest).
fn manifest_splits(manifest: Option<&serde_json::Value>) -> Vec<String> {
    manifest
        .map(crate::release::manifest_splits)
        .unwrap_or_default()
}

/// A shard the manifest lists.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    pub path: String,
    pub split: String,
    /// The family its file name gives (None: the one file of an empty split).
    pub family: Option<String>,
    pub rows: u64,
}

/// Checks the manifest's shard list against `data/`; returns the shards to read.
fn check_shard_files(
    dir: &Path,
    manifest: Option<&serde_json::Value>,
    rep: &mut Report,
) -> Vec<Listed> {
    let splits = manifest_splits(manifest);
    if manifest.is_some() && splits.is_empty() {
        rep.add("manifest", None, None, "no `splits` list".into());
    }
    let mut listed = Vec::new();
    let shards = manifest
        .and_then(|m| m["shards"].as_array())
        .cloned()
        .unwrap_or_default();
    if manifest.is_some() && shards.is_empty() {
        rep.add("manifest", None, None, "no `shards` list".into());
    }
    for s in &shards {
        let (Some(path), Some(sha), Some(bytes), Some(rows)) = (
            s["path"].as_str(),
            s["sha256"].as_str(),
            s["bytes"].as_u64(),
            s["rows"].as_u64(),
        ) else {
            rep.add(
                "manifest",
                None,
                None,
                format!("shard entry without path, sha256, bytes and rows: {s}"),
            );
            continue;
        };
        let Some(split) = crate::release::shard_split(path, &splits) else {
            rep.add(
                "manifest",
                Some(path),
                None,
                "the shard is not a file under data/ of a split the manifest lists".into(),
            );
            continue;
        };
        let file = dir.join(path);
        let found = crate::release::sha256_file(&file).and_then(|h| {
            Ok((
                h,
                std::fs::metadata(&file)
                    .map_err(|e| Error::io(&file, e))?
                    .len(),
            ))
        });
        match found {
            Err(e) => {
                rep.add("shard_missing", Some(path), None, e.report().to_string());
                continue;
            }
            Ok((have, n)) => {
                if have != sha {
                    rep.add(
                        "shard_sha256",
                        Some(path),
                        None,
                        format!("sha256 is {have}, the manifest says {sha}"),
                    );
                }
                if n != bytes {
                    rep.add(
                        "shard_bytes",
                        Some(path),
                        None,
                        format!("{n} bytes, the manifest says {bytes}"),
                    );
                }
            }
        }
        listed.push(Listed {
            path: path.to_string(),
            family: crate::release::shard_family(path, split),
            split: split.clone(),
            rows,
        });
    }
    for sp in &splits {
        if !listed.iter().any(|l| &l.split == sp) {
            rep.add("manifest", None, None, format!("split {sp} has no shard"));
        }
    }
    let data = dir.join("data");
    if let Ok(entries) = std::fs::read_dir(&data) {
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".parquet"))
            .collect();
        names.sort();
        for n in names {
            let rel = format!("data/{n}");
            if !shards.iter().any(|s| s["path"].as_str() == Some(&rel)) {
                rep.add(
                    "stray_shard",
                    Some(&rel),
                    None,
                    "a Parquet file in data/ that the manifest does not list (readers of \
                     data/*.parquet would take it in)"
                        .into(),
                );
            }
        }
    }
    listed
}

/// The manifest's counts per family and type against the rows of every split, and its row
/// and image totals.
fn check_counts(manifest: Option<&serde_json::Value>, state: &rows::State, rep: &mut Report) {
    let Some(m) = manifest else { return };
    let want: Option<BTreeMap<String, BTreeMap<String, usize>>> =
        serde_json::from_value(m["counts"].clone()).ok();
    let Some(want) = want else {
        rep.add("manifest", None, None, "no `counts` object".into());
        return;
    };
    let main = m["split"].as_str().unwrap_or_default();
    let split_counts: Option<BTreeMap<String, BTreeMap<String, usize>>> =
        serde_json::from_value(m["split_counts"].clone()).ok();
    for (split, have) in &state.counts {
        if let Some(sc) = &split_counts {
            let totals: BTreeMap<String, usize> = have
                .iter()
                .map(|(f, t)| (f.clone(), t.values().sum()))
                .collect();
            let listed = sc.get(split).cloned().unwrap_or_default();
            let listed: BTreeMap<String, usize> =
                listed.into_iter().filter(|(_, n)| *n > 0).collect();
            if totals != listed {
                rep.add(
                    "manifest_counts",
                    None,
                    None,
                    format!(
                        "split {split} holds {totals:?} rows per family, split_counts says                          {listed:?}"
                    ),
                );
            }
        }
        // A robustness split re-asks a draw of rows: only split_counts counts it.
        if split != main && *split != crate::release::control_split(main) {
            continue;
        }
        if *have != want {
            let mut diffs = Vec::new();
            let keys: std::collections::BTreeSet<(&String, &String)> = have
                .iter()
                .chain(&want)
                .flat_map(|(f, t)| t.keys().map(move |k| (f, k)))
                .collect();
            for (f, t) in keys {
                let h = have.get(f).and_then(|x| x.get(t)).copied().unwrap_or(0);
                let w = want.get(f).and_then(|x| x.get(t)).copied().unwrap_or(0);
                if h != w {
                    diffs.push(format!("{f}/{t}: {h} rows, manifest {w}"));
                }
            }
            rep.add(
                "manifest_counts",
                None,
                None,
                format!("split {split}: {}", diffs.join("; ")),
            );
        }
    }
    let rows = state.rows_per_split();
    if let (Some(w), Some(h)) = (m["rows"].as_u64(), rows.get(main)) {
        if w != *h as u64 {
            rep.add(
                "manifest_counts",
                None,
                None,
                format!("split {main} has {h} rows, the manifest says {w}"),
            );
        }
    }
    if let Some(w) = m["images"].as_u64() {
        if w != state.images as u64 {
            rep.add(
                "manifest_counts",
                None,
                None,
                format!(
                    "the shards show {} images, the manifest says {w}",
                    state.images
                ),
            );
        }
    }
}

/// The dataset card's YAML header: the `default` config lists the manifest's splits, each at
/// `data/{split}-*`, and every family the manifest counts is a config of its own with each
/// split at `data/{split}-{family}-*`.
fn check_card(dir: &Path, manifest: Option<&serde_json::Value>, rep: &mut Report) {
    let path = dir.join("README.md");
    let text = match crate::store::input::read_to_string(&path, crate::store::input::METADATA) {
        Ok(t) => t,
        Err(e) => {
            rep.add("card", None, None, e.report().to_string());
            return;
        }
    };
    let header = text
        .strip_prefix("---\n")
        .and_then(|rest| rest.split_once("\n---\n").map(|(h, _)| h));
    let Some(header) = header else {
        rep.add(
            "card",
            None,
            None,
            "README.md does not start with a `---` YAML header".into(),
        );
        return;
    };
    let card = card_configs(header);
    let splits = manifest_splits(manifest);
    let families: Vec<String> = manifest
        .and_then(|m| m["counts"].as_object())
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    // A family's config lists the splits holding its rows (a robustness split re-asks some
    // families only); the main split always.
    let main = manifest
        .and_then(|m| m["split"].as_str())
        .unwrap_or_default();
    let split_counts = manifest.map(|m| &m["split_counts"]);
    let holds = |split: &str, family: &str| match split_counts {
        Some(sc) if sc.is_object() => split == main || sc[split][family].as_u64().unwrap_or(0) > 0,
        _ => true,
    };
    let mut want: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for config in std::iter::once(None).chain(families.iter().map(|f| Some(f.as_str()))) {
        want.insert(
            config.unwrap_or("default").to_string(),
            splits
                .iter()
                .filter(|s| config.is_none_or(|f| holds(s, f)))
                .map(|s| (s.clone(), crate::release::card::config_glob(s, config)))
                .collect(),
        );
    }
    for (config, files) in &want {
        let Some(have) = card.get(config) else {
            rep.add(
                "card",
                None,
                None,
                format!("the card has no config {config}"),
            );
            continue;
        };
        for (s, glob) in files {
            match have.get(s) {
                Some(p) if p == glob => {}
                Some(p) => rep.add(
                    "card",
                    None,
                    None,
                    format!("config {config}: split {s} points at {p}, not {glob}"),
                ),
                None => rep.add(
                    "card",
                    None,
                    None,
                    format!("config {config}: split {s} is not in its data_files"),
                ),
            }
        }
        for s in have.keys().filter(|s| !files.contains_key(*s)) {
            rep.add(
                "card",
                None,
                None,
                format!("config {config} lists split {s}, which the manifest does not"),
            );
        }
    }
    for config in card.keys().filter(|c| !want.contains_key(*c)) {
        rep.add(
            "card",
            None,
            None,
            format!("the card has config {config}, a family the manifest does not count"),
        );
    }
}

/// The card header's configs: name → split → path (the YAML drivegen writes, one key a line).
fn card_configs(header: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut card: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let (mut config, mut split): (Option<String>, Option<String>) = (None, None);
    for line in header.lines() {
        let t = line.trim();
        if let Some(c) = t.strip_prefix("- config_name:") {
            config = Some(c.trim().to_string());
            card.entry(c.trim().to_string()).or_default();
        } else if let Some(s) = t.strip_prefix("- split:") {
            split = Some(s.trim().to_string());
        } else if let (Some(p), Some(s), Some(c)) = (t.strip_prefix("path:"), split.take(), &config)
        {
            card.entry(c.clone())
                .or_default()
                .insert(s, p.trim().to_string());
        }
    }
    card
}

/// Writes the report as JSON to `path`.
pub(crate) fn write_json(rep: &Report, path: &Path) -> Result<()> {
    let text = serde_json::to_string_pretty(rep).unwrap_or_default() + "\n";
    crate::store::atomic::write_atomic(path, text.as_bytes())
}
