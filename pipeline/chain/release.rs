//! The global steps after the per-scene ones: per-family tables (balanced or gathered), the
//! release with its audit, the contact sheet, the viewer, `validate` and the manifest's build
//! record.

use crate::config::StageConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;
use sha2::Digest as _;

use super::checkpoint::{key, Checkpoints};
use super::config::{BuildConfig, FamilyBalance};
use super::scene::SceneOutputs;
use super::{file_text, honesty, report, BuildOptions};
use crate::gpu::Device;
use crate::store::atomic::write_atomic;
use crate::{Error, Result};

/// Balancing, the release and its manifest; returns the release's counts.
pub(super) fn global_steps(
    opts: &BuildOptions,
    cp: &mut Checkpoints,
    outputs: &[SceneOutputs],
) -> Result<BTreeMap<String, BTreeMap<String, usize>>> {
    let c = &opts.config;
    let (family_keys, kept) = family_steps(opts, cp, outputs)?;
    let rows = honesty::count(&produced(outputs), &kept)?;
    honesty::check_kept(c, &opts.out, &rows)?;
    // In family name order, as the steps ran.
    let release_inputs = kept.values().map(|(_, file)| file.clone()).collect();
    let mut ro = release_options(opts, outputs, release_inputs)?;
    let fk: Vec<&str> = family_keys.iter().map(String::as_str).collect();
    let robust_config = match &c.robustness {
        Some(r) => file_text(&r.config.clone().or_else(|| c.corrupt.config.clone()))?,
        None => None,
    };
    let k = key(
        "release",
        &json!({"config": opts.config_text, "release": c.release, "keep_images": opts.keep_images,
                "corruptions": robust_config}),
        &fk,
    );
    // The release replaces its own shards and removes stale ones itself; the rest of `data/`
    // is not drivegen's to delete.
    cp.step("release", &k, &[], || {
        // Opened here: a release step that is reused needs no device.
        ro.device = Device::open(c.release_device())?;
        let s = crate::release::run(&ro)?;
        add_build_to_manifest(opts)?;
        // The blind baselines of what was just written go into the manifest and the report.
        let a = crate::release::blind::audit(&opts.out)?;
        crate::release::blind::write_audit(&opts.out, &a)?;
        let worst = a
            .families
            .iter()
            .map(|(f, b)| (b.excess(), f))
            .max_by(|x, y| x.0.total_cmp(&y.0));
        Ok(format!(
            "{} rows, {} images, {} shards; largest blind excess over chance {}",
            s.rows,
            s.images,
            s.shards.len(),
            worst.map_or("–".into(), |(e, f)| format!("{e:+.3} ({f})"))
        ))
    })?;
    let counts = release_counts(opts);
    honesty::check_released(c, &opts.out, &counts, &rows)?;
    honesty::check_margins(c, &opts.out)?;
    Ok(counts)
}

/// Per QA family, the tables the per-scene steps wrote for it.
pub(super) fn produced(outputs: &[SceneOutputs]) -> BTreeMap<String, Vec<PathBuf>> {
    let mut families: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for o in outputs {
        for (f, files) in &o.qa {
            families.entry(f.clone()).or_default().extend(files.clone());
        }
    }
    families
}

/// One step per QA family, in name order: balancing where the config has a spec for the
/// family, plain gathering otherwise. Returns the steps' keys, which the release's key depends
/// on, and per family the step and the file that kept its rows (the release's inputs).
pub(super) fn family_steps(
    opts: &BuildOptions,
    cp: &mut Checkpoints,
    outputs: &[SceneOutputs],
) -> Result<FamilySteps> {
    let c = &opts.config;
    let upstream: Vec<String> = outputs.iter().flat_map(|o| o.keys.clone()).collect();
    let up: Vec<&str> = upstream.iter().map(String::as_str).collect();
    let families = produced(outputs);
    let mut family_keys = Vec::new();
    let mut kept = BTreeMap::new();
    for (family, files) in &families {
        let dir = opts.work.join("families").join(family);
        let k = match c.balance.get(family) {
            Some(b) => {
                let k = key("balance", &serde_json::to_value(b).unwrap_or_default(), &up);
                // Balancing and gathering write one folder: the other's record no longer holds.
                cp.forget(&format!("gather_{family}"))?;
                cp.step(&format!("balance_{family}"), &k, &[&dir], || {
                    balance_family(b, files, &dir)
                })?;
                kept.insert(
                    family.clone(),
                    (format!("balance_{family}"), dir.join("balanced_qa.arrow")),
                );
                k
            }
            None => {
                let k = key("gather", &json!({}), &up);
                let file = dir.join(format!("{family}_qa.arrow"));
                cp.forget(&format!("balance_{family}"))?;
                cp.step(&format!("gather_{family}"), &k, &[&dir], || {
                    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                    let n = crate::balance::gather(files, &file)?;
                    Ok(format!("{n} rows (not balanced)"))
                })?;
                kept.insert(family.clone(), (format!("gather_{family}"), file));
                k
            }
        };
        family_keys.push(k);
    }
    Ok((family_keys, kept))
}

/// What the family steps give the release: the steps' keys, and per family the step and the
/// file that kept its rows.
pub(super) type FamilySteps = (Vec<String>, BTreeMap<String, (String, PathBuf)>);

/// Balances one family's `files` into `dir` under spec `b`; returns the step's detail.
pub(super) fn balance_family(b: &FamilyBalance, files: &[PathBuf], dir: &Path) -> Result<String> {
    let bo = crate::balance::Options {
        inputs: files.to_vec(),
        out: dir.to_path_buf(),
        spec: crate::balance::greedy::BalanceSpec {
            target: b.target,
            source_caps: b.source_caps.clone(),
            targets: Default::default(),
            mode: match b.mode.as_str() {
                "released" => crate::balance::greedy::Mode::Released,
                _ => crate::balance::greedy::Mode::Paper,
            },
        },
        type_cap: b.type_cap,
        balance_letters: b.balance_letters,
        answer_ratio: b.answer_ratio,
        prune_options: b.prune_options,
        max_rows: b.max_rows,
        max_blind_excess: b.max_blind_excess,
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let o = crate::balance::run(&bo)?;
    Ok(format!(
        "{} of {} items, {} rows; majority-answer accuracy {:.3} → {:.3}",
        o.selection.chosen.len(),
        o.items_in,
        o.rows,
        o.before.overall_majority_accuracy(),
        o.after.overall_majority_accuracy()
    ))
}

/// The release's options: the family tables `qa`, every shard's store and image folders,
/// and the config's release settings.
pub(super) fn release_options(
    opts: &BuildOptions,
    outputs: &[SceneOutputs],
    qa: Vec<PathBuf>,
) -> Result<crate::release::Options> {
    let c = &opts.config;
    let robustness = match &c.robustness {
        None => None,
        Some(r) => {
            let bad = |detail: String| Error::Config {
                file: PathBuf::from("[robustness]"),
                detail,
            };
            let config = crate::corrupt::CorruptConfig::load(
                r.config.as_deref().or(c.corrupt.config.as_deref()),
            )?;
            let settings = crate::robustness::RobustnessOptions::settings(
                r.corruptions(),
                r.severities(),
                &config,
            )?;
            Some(crate::robustness::RobustnessOptions {
                families: r.families(&c.stages).map_err(bad)?,
                settings,
                rows: r.rows,
                seed: c.seed,
                config: std::sync::Arc::new(config),
            })
        }
    };
    Ok(crate::release::Options {
        qa,
        stores: outputs.iter().map(|o| o.store.clone()).collect(),
        images_root: None,
        out: opts.out.clone(),
        split: c.split.clone(),
        rows_per_shard: c.release.rows_per_shard,
        row_group_rows: c.release.row_group_rows,
        row_group_bytes: c.release.row_group_mib << 20,
        images: if c.release.images == "paths" {
            crate::release::ImageMode::Paths
        } else {
            crate::release::ImageMode::Embed
        },
        name: c.name.clone(),
        image_dirs: outputs.iter().flat_map(|o| o.image_dirs.clone()).collect(),
        // DriveBench's study compares clean, corrupted and text-only answers to one question.
        text_only_controls: c.release.text_only_controls || robustness.is_some(),
        keep_images: opts.keep_images.clone(),
        robustness,
        device: Device::Cpu,
    })
}

/// The counts the release's manifest records, read back so that a release step skipped as
/// done still reports them; empty when the manifest cannot be read.
pub(super) fn release_counts(opts: &BuildOptions) -> BTreeMap<String, BTreeMap<String, usize>> {
    let mut counts = BTreeMap::new();
    let manifest = opts.out.join("manifest.json");
    if let Ok(text) = crate::store::input::read_to_string(&manifest, crate::store::input::METADATA)
    {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
            if let Ok(c) = serde_json::from_value(v["counts"].clone()) {
                counts = c;
            }
        }
    }
    counts
}

/// The report's corruption contact sheet: the first front image under every corruption and
/// severity.
pub(super) fn contact_sheet(
    opts: &BuildOptions,
    cp: &mut Checkpoints,
    outputs: &[SceneOutputs],
) -> Result<()> {
    let c = &opts.config;
    let stores: Vec<PathBuf> = outputs.iter().map(|o| o.store.clone()).collect();
    let Some(subject) = report::sheet_subject(&stores)? else {
        return Ok(());
    };
    let sheet = opts.out.join("report").join("contact_sheet.png");
    let k = key(
        "contact_sheet",
        &json!({"config": file_text(&c.corrupt.config)?, "seed": c.seed,
                "subject": subject.name()}),
        &[],
    );
    cp.step("contact_sheet", &k, &[&sheet], || {
        let cfg = crate::corrupt::CorruptConfig::load(c.corrupt.config.as_deref())?;
        crate::corrupt::sheet::contact_sheet_of(
            &cfg,
            &subject.image,
            &subject.name(),
            &subject.source(),
            &sheet,
            c.seed,
            Device::open(c.corrupt.device)?.gpu(),
            320,
        )?;
        Ok(format!(
            "{} under 15 corruptions × 5 severities",
            subject.source()
        ))
    })
}

/// The last step: `drivegen validate` on the release as written; a violation fails the build
/// and names the rows. Keyed by the manifest, which holds every shard's sha256, so a release
/// that changed in any byte is checked again.
/// The key of a step that reads the finished release: its manifest, which holds every shard's
/// sha256, stands for all of it.
pub(super) fn release_key(opts: &BuildOptions, step: &str) -> Result<String> {
    let manifest = opts.out.join("manifest.json");
    let text = crate::store::input::read(&manifest, crate::store::input::METADATA)?;
    Ok(key(
        step,
        &json!({"manifest": crate::release::shards::hex(&sha2::Sha256::digest(&text))}),
        &[],
    ))
}

/// The release viewer in `WORK/viewer`, when the config asks for it (after validation, so a
/// release that fails its checks gets none); its page's path.
pub(super) fn viewer(opts: &BuildOptions, cp: &mut Checkpoints) -> Result<Option<PathBuf>> {
    if !opts.config.report.viewer {
        return Ok(None);
    }
    let k = release_key(opts, "viewer")?;
    let dir = opts.work.join("viewer");
    let page = dir.join("index.html");
    cp.step("viewer", &k, &[&page], || {
        crate::view::run(&opts.out, &dir).map(|s| s.to_string())
    })?;
    Ok(Some(page))
}

pub(super) fn validate(opts: &BuildOptions, cp: &mut Checkpoints) -> Result<()> {
    let k = release_key(opts, "validate")?;
    let json_out = opts.work.join("validate.json");
    cp.step("validate", &k, &[&json_out], || {
        let rep = crate::validate::run(&opts.out)?;
        crate::validate::write_json(&rep, &json_out)?;
        if !rep.ok() {
            return Err(Error::Refused {
                path: opts.out.clone(),
                why: format!(
                    "is not released: the release breaks {} checks (all of them in {}):\n{}",
                    rep.violations.len(),
                    json_out.display(),
                    rep.summary(20)
                ),
            });
        }
        let rows: usize = rep.rows.values().sum();
        Ok(format!(
            "{rows} rows in {} splits, {} distinct images decoded: every check passed",
            rep.rows.len(),
            rep.distinct_images
        ))
    })
}

/// Records the build config, its hash and the seed in `manifest.json`.
pub(super) fn add_build_to_manifest(opts: &BuildOptions) -> Result<()> {
    let path = opts.out.join("manifest.json");
    let text = crate::store::input::read_to_string(&path, crate::store::input::METADATA)?;
    let mut v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::json(&path, e))?;
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "build".into(),
            json!({
                "config": opts.config_text,
                "config_hash": BuildConfig::hash_of(&opts.config_text),
                "seed": opts.config.seed,
            }),
        );
    }
    let out = serde_json::to_string_pretty(&v).unwrap_or_default() + "\n";
    write_atomic(&path, out.as_bytes())
}

/// What the report shows from the per-scene outputs.
pub(super) fn outputs_for_report(outputs: &[SceneOutputs]) -> report::Inputs {
    report::Inputs {
        som: outputs
            .iter()
            .filter_map(|o| o.som_dir.clone().map(|d| (d, o.store.clone())))
            .collect(),
    }
}
