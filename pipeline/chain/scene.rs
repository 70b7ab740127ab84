//! The per-scene steps: their keys and folders (planned before anything runs, so a merge can
//! find every shard's outputs) and the steps themselves, one stage each, over one store.

use crate::config::StageConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::checkpoint::{key, Checkpoints};
use super::{file_text, first_line, skipped, BuildOptions};
use crate::gpu::Device;
use crate::qa::Family;
use crate::Result;

/// The per-scene outputs of one store (the whole dataset or one shard).
#[derive(Debug, Clone)]
pub(super) struct SceneOutputs {
    pub(super) store: PathBuf,
    /// family → QA tables.
    pub(super) qa: BTreeMap<String, Vec<PathBuf>>,
    /// Folders that rows' `image_paths` are relative to.
    pub(super) image_dirs: Vec<PathBuf>,
    pub(super) som_dir: Option<PathBuf>,
    /// Keys of the steps that made these outputs.
    pub(super) keys: Vec<String>,
}

/// The keys and paths of the per-scene steps for one store (without running them).
pub(super) fn scene_plan(opts: &BuildOptions, store_key: &str, dir: &Path) -> Result<ScenePlan> {
    let c = &opts.config;
    let ego = key(
        "egomotion",
        &json!({"config": file_text(&c.egomotion.config)?}),
        &[store_key],
    );
    // The anchors are placed under the Set-of-Mark config's rules; the built-in one keeps the
    // key it had before the table held them.
    let mut vis_params = json!({"config": file_text(&c.visibility.config)?});
    if let Some(som) = file_text(&c.som.config)? {
        vis_params["som"] = json!(som);
    }
    let vis = key("visibility", &vis_params, &[store_key]);
    let som = key(
        "som",
        &json!({"config": file_text(&c.som.config)?}),
        &[&vis],
    );
    let corrupt = key(
        "corrupt",
        &json!({"config": file_text(&c.corrupt.config)?, "corruptions": c.corrupt.corruptions,
                "severity": c.corrupt.severity, "frames_per_scene": c.corrupt.frames_per_scene,
                "seed": c.seed}),
        &[store_key],
    );
    let sts = key(
        "stsbench",
        &json!({"config": file_text(&c.stsbench.config)?, "maps": c.stsbench.maps, "seed": c.seed}),
        &[store_key],
    );
    let sig = key(
        "sig",
        &json!({"config": file_text(&c.sig.config)?, "seed": c.seed}),
        &[&vis],
    );
    let metavqa = key(
        "metavqa",
        &json!({"config": file_text(&c.metavqa.config)?, "som": file_text(&c.som.config)?,
                "seed": c.seed}),
        &[&vis],
    );
    Ok(ScenePlan {
        metavqa: (metavqa, dir.join("metavqa")),
        ego: (ego, dir.join("egodyn")),
        vis: (vis, dir.join("visibility")),
        som: (som, dir.join("som")),
        corrupt: (corrupt, dir.join("corrupt")),
        sts: (sts, dir.join("stsbench")),
        sig: (sig, dir.join("sig")),
    })
}

pub(super) struct ScenePlan {
    pub(super) metavqa: (String, PathBuf),
    pub(super) ego: (String, PathBuf),
    pub(super) vis: (String, PathBuf),
    pub(super) som: (String, PathBuf),
    pub(super) corrupt: (String, PathBuf),
    pub(super) sts: (String, PathBuf),
    pub(super) sig: (String, PathBuf),
}

/// What the per-scene steps of a store produce, as paths (for `--merge`).
pub(super) fn scene_outputs(
    opts: &BuildOptions,
    store: &Path,
    store_key: &str,
    dir: &Path,
) -> Result<SceneOutputs> {
    let p = scene_plan(opts, store_key, dir)?;
    let st = opts.config.stages;
    let mut o = SceneOutputs {
        store: store.to_path_buf(),
        qa: BTreeMap::new(),
        image_dirs: Vec::new(),
        som_dir: None,
        keys: vec![store_key.to_string()],
    };
    if st.egomotion {
        o.qa.entry(Family::Egodyn.name().into())
            .or_default()
            .push(p.ego.1.join(crate::egomotion::QA_FILE));
        o.keys.push(p.ego.0);
    }
    if st.visibility || st.som || st.sig || st.metavqa {
        o.keys.push(p.vis.0);
    }
    if st.metavqa {
        o.qa.entry(Family::Metavqa.name().into())
            .or_default()
            .push(p.metavqa.1.join("metavqa_qa.arrow"));
        o.image_dirs.push(p.metavqa.1);
        o.keys.push(p.metavqa.0);
    }
    if st.stsbench {
        o.qa.entry(Family::Stsbench.name().into())
            .or_default()
            .push(p.sts.1.join(crate::stsbench::QA_FILE));
        o.keys.push(p.sts.0);
    }
    if st.sig {
        o.qa.entry(Family::Sig.name().into())
            .or_default()
            .push(p.sig.1.join(crate::sig::QA_FILE));
        o.keys.push(p.sig.0);
    }
    if st.som {
        o.som_dir = Some(p.som.1);
        o.keys.push(p.som.0);
    }
    if st.corrupt {
        o.qa.entry(Family::Drivebench.name().into())
            .or_default()
            .push(p.corrupt.1.join("corruption_qa.arrow"));
        o.image_dirs.push(p.corrupt.1);
        o.keys.push(p.corrupt.0);
    }
    Ok(o)
}

/// Runs the per-scene steps on one store; `suffix` tells shards' steps apart. It is one block
/// per step (its checkpoint, then the stage call), in the order the steps depend on each other;
/// the blocks share the plan and the checkpoints, so the order is kept in one place rather than
/// split over helpers.
pub(super) fn scene_steps(
    opts: &BuildOptions,
    cp: &mut Checkpoints,
    store: &Path,
    store_key: &str,
    dir: &Path,
    suffix: &str,
) -> Result<SceneOutputs> {
    let c = &opts.config;
    let p = scene_plan(opts, store_key, dir)?;
    if c.stages.egomotion {
        let (k, out) = &p.ego;
        cp.step(&format!("egomotion{suffix}"), k, &[out], || {
            let opts = crate::egomotion::Options::new(store, out, c.egomotion.config.as_deref())?;
            let s = crate::egomotion::run(&opts)?;
            Ok(first_line(&s))
        })?;
    }
    let vis_file = p.vis.1.join("visibility.arrow");
    if c.stages.visibility || c.stages.som || c.stages.sig || c.stages.metavqa {
        let (k, out) = &p.vis;
        cp.step(&format!("visibility{suffix}"), k, &[out], || {
            let r = crate::visibility::rasteriser(&Device::open(c.visibility.device)?)?;
            let som = crate::som::SomConfig::load(c.som.config.as_deref())?;
            let s = crate::visibility::run(&crate::visibility::Options {
                rasteriser: r.as_ref(),
                anchor: som.anchor_rules(),
                ..crate::visibility::Options::new(store, &vis_file, c.visibility.config.as_deref())?
            })?;
            Ok(first_line(&s))
        })?;
    }
    if c.stages.som {
        let (k, out) = &p.som;
        cp.step(&format!("som{suffix}"), k, &[out], || {
            let cfg = crate::som::SomConfig::load(c.som.config.as_deref())?;
            let s = crate::som::run(&crate::som::Options {
                store,
                visibility: &vis_file,
                out,
                config: &cfg,
                // The build draws no marks here (the release does), so it needs no GPU.
                device: &Device::Cpu,
                scene: None,
                images: false,
            })?;
            Ok(first_line(&s) + &skipped(s.rejected_images, "images", out))
        })?;
    }
    if c.stages.metavqa {
        let (k, out) = &p.metavqa;
        cp.step(&format!("metavqa{suffix}"), k, &[out], || {
            let mut config = crate::metavqa::MetavqaConfig::load(c.metavqa.config.as_deref())?;
            config.seed = c.seed;
            let o = crate::metavqa::Options {
                store: store.to_path_buf(),
                visibility: vis_file.clone(),
                out: out.clone(),
                config,
                som: crate::som::SomConfig::load(c.som.config.as_deref())?,
                device: Device::open(c.metavqa.device)?,
                images: false,
                scene: None,
            };
            let s = crate::metavqa::run(&o)?;
            Ok(first_line(&s) + &skipped(s.rejected_images, "images", out))
        })?;
    }
    if c.stages.stsbench {
        let (k, out) = &p.sts;
        cp.step(&format!("stsbench{suffix}"), k, &[out], || {
            let o = crate::stsbench::Options {
                store: store.to_path_buf(),
                out: out.clone(),
                config: crate::stsbench::config::StsConfig::load(c.stsbench.config.as_deref())?,
                seed: c.seed,
                maps: c.stsbench.maps.clone(),
            };
            let s = crate::stsbench::run(&o)?;
            Ok(first_line(&s))
        })?;
    }
    if c.stages.sig {
        let (k, out) = &p.sig;
        cp.step(&format!("sig{suffix}"), k, &[out], || {
            let o = crate::sig::Options {
                store: store.to_path_buf(),
                visibility: vis_file.clone(),
                out: out.clone(),
                config: crate::sig::config::SigConfig::load(c.sig.config.as_deref())?,
                seed: c.seed,
            };
            let s = crate::sig::run(&o)?;
            Ok(first_line(&s))
        })?;
    }
    if c.stages.corrupt {
        let (k, out) = &p.corrupt;
        cp.step(&format!("corrupt{suffix}"), k, &[out], || {
            use crate::corrupt::run as cr;
            let corruptions = c.corrupt.corruptions.value.clone();
            // Codecs run in ffmpeg: a codec-only run opens no device.
            let device = if corruptions.iter().all(|c| c.is_codec()) {
                Device::Cpu
            } else {
                Device::open(c.corrupt.device)?
            };
            let o = cr::Options {
                input: cr::Input::Store(store.to_path_buf()),
                out: out.clone(),
                corruptions,
                severities: c.corrupt.severity.value,
                seed: c.seed,
                config: crate::corrupt::CorruptConfig::load(c.corrupt.config.as_deref())?,
                device,
                max_frames: None,
                frames_per_scene: c.corrupt.frames_per_scene,
                images: false,
            };
            let s = cr::run(&o)?;
            Ok(format!(
                "{} frames, {} images ({} written), {} questions on {}{}",
                s.frames,
                s.images_out,
                s.images_written,
                s.questions,
                s.device,
                skipped(s.rejected_frames as u64, "frames", out)
            ))
        })?;
    }
    scene_outputs(opts, store, store_key, dir)
}
