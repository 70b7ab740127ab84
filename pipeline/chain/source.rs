//! Where a build's scenes come from: the synthetic corpus written in a source layout, or a
//! dataset root, ingested into the store (one checkpointed step each), or a store as it is.

use crate::config::StageConfig;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::checkpoint::{key, Checkpoints};
use super::config::{BuildConfig, CameraSweeps, InputConfig};
use super::{first_line, BuildOptions};
use crate::formats::Format;
use crate::store::paths::Links;
use crate::{Error, Result};

/// The cameras whose sweeps the synthetic corpus gets (None: every camera's).
pub(super) fn sweep_cameras(c: &BuildConfig, which: CameraSweeps) -> Result<Option<Vec<String>>> {
    Ok(match which {
        CameraSweeps::All => None,
        CameraSweeps::Used if c.stages.egomotion => {
            let e = crate::egomotion::config::EgodynConfig::load(c.egomotion.config.as_deref())?;
            Some(vec![e.clips.camera])
        }
        CameraSweeps::Used => Some(Vec::new()),
    })
}

/// The scene store to build from (synthesised and ingested when the input asks).
pub(super) fn source_store(opts: &BuildOptions, cp: &mut Checkpoints) -> Result<(PathBuf, String)> {
    let w = &opts.work;
    match &opts.config.input {
        InputConfig::Store { path } => {
            let meta =
                crate::store::input::read(&path.join("store.json"), crate::store::input::METADATA)?;
            let k = key(
                "store",
                &json!({"store_json": String::from_utf8_lossy(&meta)}),
                &[],
            );
            Ok((path.clone(), k))
        }
        InputConfig::Synth {
            scenes,
            duration_s,
            width,
            height,
            format,
            camera_sweeps,
        } => {
            let corpus = w.join("corpus");
            let d = crate::synth::SynthOptions::default();
            let so = crate::synth::SynthOptions {
                scenes: *scenes,
                seed: opts.config.seed,
                duration_s: duration_s.unwrap_or(d.duration_s),
                image_width: width.unwrap_or(d.image_width),
                image_height: height.unwrap_or(d.image_height),
                sweep_cameras: sweep_cameras(&opts.config, *camera_sweeps)?,
                ..d
            };
            let mut params = json!({"scenes": so.scenes, "seed": so.seed,
                                    "duration_s": so.duration_s,
                                    "w": so.image_width, "h": so.image_height});
            // nuScenes keeps the key it had before formats existed.
            if *format != Format::Nuscenes {
                params["format"] = json!(format);
            }
            if let Some(c) = &so.sweep_cameras {
                params["camera_sweeps"] = json!(c);
            }
            let ck = key("corpus", &params, &[]);
            cp.step("corpus", &ck, &[&corpus], || {
                Ok(first_line(&crate::synth::write(*format, &corpus, &so)?))
            })?;
            let version = (*format == Format::Nuscenes).then(|| so.version.clone());
            ingest(cp, &corpus, *format, version, Links::Follow, w, &ck)
        }
        InputConfig::Nuscenes {
            root,
            version,
            strict_links,
        } => {
            let version = match version {
                Some(v) => v.clone(),
                None => crate::ingest::nuscenes::only_version(root)?,
            };
            let k = key(
                "source",
                &source_params(json!({"root": root, "version": version}), *strict_links),
                &[],
            );
            let links = Links::strict_if(*strict_links);
            ingest(cp, root, Format::Nuscenes, Some(version), links, w, &k)
        }
        InputConfig::Waymo { root, strict_links } => {
            let k = key(
                "source",
                &source_params(json!({"kind": "waymo", "root": root}), *strict_links),
                &[],
            );
            let links = Links::strict_if(*strict_links);
            ingest(cp, root, Format::WaymoV2, None, links, w, &k)
        }
        InputConfig::Carla { root, strict_links } => {
            let k = key(
                "source",
                &source_params(json!({"kind": "carla", "root": root}), *strict_links),
                &[],
            );
            let links = Links::strict_if(*strict_links);
            ingest(cp, root, Format::Bench2drive, None, links, w, &k)
        }
    }
}

/// A source's key parameters; strict links are named only when set, so a lenient build keeps
/// the key it had before the mode existed.
pub(super) fn source_params(
    mut params: serde_json::Value,
    strict_links: bool,
) -> serde_json::Value {
    if strict_links {
        params["strict_links"] = json!(true);
    }
    params
}

pub(super) fn ingest(
    cp: &mut Checkpoints,
    root: &Path,
    format: Format,
    version: Option<String>,
    links: Links,
    work: &Path,
    upstream: &str,
) -> Result<(PathBuf, String)> {
    let store = work.join("store");
    // The keys name the layouts by the words they had before formats had one name.
    let k = match (format, &version) {
        (Format::Nuscenes, Some(v)) => key("ingest", &json!({"version": v}), &[upstream]),
        (Format::WaymoV2, _) => key("ingest", &json!({"source": "waymo"}), &[upstream]),
        (Format::Bench2drive, _) => key("ingest", &json!({"source": "carla"}), &[upstream]),
        (f, _) => key("ingest", &json!({"source": f}), &[upstream]),
    };
    cp.step("ingest", &k, &[&store], || {
        // An absolute root keeps the store's image paths valid from any working folder.
        let root = std::fs::canonicalize(root).map_err(|e| Error::io(root, e))?;
        let s = crate::ingest::run(&crate::ingest::Options {
            format,
            root: root.clone(),
            version,
            out: store.clone(),
            taxonomy: crate::taxonomy::Taxonomy::load(None)?,
            sources: crate::ingest::sources::SourcesConfig::load(None)?,
            check_images: true,
            chunk_scenes: crate::ingest::DEFAULT_CHUNK_SCENES,
            links,
        })?
        .summary;
        if s.scenes_written == 0 {
            return Err(Error::not_found(root, "scene could be ingested"));
        }
        Ok(format!(
            "{}/{} scenes, {} rejected",
            s.scenes_written,
            s.scenes_total,
            s.rejects.len()
        ))
    })?;
    Ok((store, k))
}
