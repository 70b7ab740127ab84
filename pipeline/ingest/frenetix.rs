//! Frenetix CSV logs (ego only) as an ego-motion source, the way EgoDyn cut its CARLA clips
//! (`docs/egodyn.md` §1.3): `ROOT/<scene>/<Behavior>_logs.csv` or
//! `ROOT/<scene>/logs_<behavior>.csv`, `;`-delimited, one row per simulation step of `dt_s`;
//! x, y and the first element of the `theta_orientations_rad` list are the ego state, the time
//! is the row index times `dt_s` (velocities are read and checked but, as in EgoDyn, the speed
//! is re-derived from positions). Each (scene, behaviour) becomes one store scene
//! `<scene>__<Behavior>`, its rows frames and ego poses, so `drivegen egomotion` with
//! `anchoring = "sliding"` and `pose_source = "frames"` cuts EgoDyn's 31-sample, stride-30
//! windows with its clip ids `<scene>__<Behavior>__w<k>`.

use std::path::{Path, PathBuf};

use crate::geometry::quat_from_yaw;
use crate::ingest::nuscenes::IngestSummary;
use crate::ingest::sources::{FrenetixRules, SourcesConfig};
use crate::ingest::waymo::reject;
use crate::store::rejects::RejectLog;
use crate::store::{EgoPoseRow, FrameRow, Pose, SceneData, SceneRow, StoreMeta, StoreWriter};
use crate::{Error, Result};

#[derive(Debug, Clone)]
pub struct Options {
    pub root: PathBuf,
    pub out: PathBuf,
    pub config: SourcesConfig,
}

/// A log file and the scene and behaviour its path names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LogFile {
    pub scene: String,
    pub behavior: String,
    pub path: PathBuf,
}

/// The logs under `root`, in (scene, behaviour) order.
pub fn logs(root: &Path) -> Result<Vec<LogFile>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root).map_err(|e| Error::io(root, e))? {
        let dir = e.map_err(|e| Error::io(root, e))?.path();
        if !dir.is_dir() {
            continue;
        }
        let scene = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for f in std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))? {
            let path = f.map_err(|e| Error::io(&dir, e))?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let behavior = name.strip_suffix("_logs.csv").or_else(|| {
                name.strip_prefix("logs_")
                    .and_then(|n| n.strip_suffix(".csv"))
            });
            if let Some(b) = behavior.filter(|b| !b.is_empty()) {
                out.push(LogFile {
                    scene: scene.clone(),
                    behavior: b.to_string(),
                    path,
                });
            }
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(Error::input(
            root,
            "layout",
            "no <scene>/<Behavior>_logs.csv files",
        ));
    }
    Ok(out)
}

/// The ego states of one log: `(x, y, theta)` per row.
pub fn read_log(path: &Path, rules: &FrenetixRules) -> Result<Vec<[f64; 3]>> {
    let text = crate::store::input::read_to_string(path, crate::store::input::TABLE)?;
    let delim = rules.delimiter.chars().next().unwrap_or(';');
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines
        .next()
        .ok_or_else(|| Error::input(path, "line 1", "empty file"))?;
    let cols: Vec<&str> = header
        .split(delim)
        .map(|c| c.trim().trim_matches('"'))
        .collect();
    let find = |name: &str| {
        cols.iter()
            .position(|c| *c == name)
            .ok_or_else(|| Error::input(path, "line 1", format!("no column `{name}`")))
    };
    let (xi, yi, ti, vi) = (
        find(&rules.x_column)?,
        find(&rules.y_column)?,
        find(&rules.theta_column)?,
        find(&rules.velocity_column)?,
    );
    let mut out = Vec::new();
    for (ln, line) in lines {
        let fields: Vec<&str> = line
            .split(delim)
            .map(|c| c.trim().trim_matches('"'))
            .collect();
        let at = format!("line {}", ln + 1);
        let num = |i: usize, name: &str, first: bool| -> Result<f64> {
            let raw = fields
                .get(i)
                .ok_or_else(|| Error::input(path, &at, format!("missing `{name}`")))?;
            let raw = if first {
                raw.split(',').next().unwrap_or("")
            } else {
                raw
            };
            let v: f64 = raw.trim().trim_matches(['[', ']']).parse().map_err(|_| {
                Error::input(path, &at, format!("`{name}` is not a number: {raw:?}"))
            })?;
            if v.is_finite() {
                Ok(v)
            } else {
                Err(Error::input(path, &at, format!("`{name}` is {v}")))
            }
        };
        let x = num(xi, &rules.x_column, false)?;
        let y = num(yi, &rules.y_column, false)?;
        let theta = num(ti, &rules.theta_column, true)?;
        num(vi, &rules.velocity_column, true)?;
        out.push([x, y, theta]);
    }
    if out.is_empty() {
        return Err(Error::input(path, "line 2", "no data rows"));
    }
    Ok(out)
}

/// Ingests every log under `opts.root`.
pub fn run(opts: &Options) -> Result<IngestSummary> {
    let files = logs(&opts.root)?;
    let rules = &opts.config.frenetix;
    let meta = StoreMeta::new("frenetix", "csv", &opts.root.to_string_lossy());
    crate::store::paths::disjoint(&opts.root, "the dataset root", &opts.out, "the store")?;
    let mut writer = StoreWriter::create(&opts.out, meta)?;
    let mut rejects = RejectLog::new();
    let mut summary = IngestSummary {
        scenes_total: files.len(),
        out: opts.out.clone(),
        ..Default::default()
    };
    let mut ids = crate::ingest::SceneIds::default();
    let dataset = crate::store::paths::Root::new(&opts.root);
    for f in &files {
        let id = format!("{}__{}", f.scene, f.behavior);
        let named = crate::ingest::utf8_name(&f.path)
            .and_then(|_| {
                f.path
                    .parent()
                    .map_or(Ok(String::new()), crate::ingest::utf8_name)
            })
            .and_then(|_| dataset.holds(&f.path))
            .and_then(|_| ids.admit(&id, &f.path));
        if let Err(why) = named {
            rejects.push(reject("ingest", &id, &Error::input(&f.path, "log", why)));
            continue;
        }
        match read_log(&f.path, rules) {
            Ok(states) => {
                let mut data = SceneData {
                    scene: SceneRow {
                        scene_id: id.clone(),
                        source: "carla".into(),
                        source_scene_id: f.scene.clone(),
                        description: format!("Frenetix log, behaviour {}", f.behavior),
                        ..Default::default()
                    },
                    ..Default::default()
                };
                for (k, s) in states.iter().enumerate() {
                    let ts = (k as f64 * rules.dt_s * 1e6).round() as i64;
                    let ego = Pose {
                        t: [s[0], s[1], 0.0],
                        q: quat_from_yaw(s[2]),
                    };
                    data.frames.push(FrameRow {
                        scene_id: id.clone(),
                        frame_idx: k as u32,
                        timestamp_us: ts,
                        is_keyframe: true,
                        source_frame_id: format!("{id}/{k}"),
                        ego,
                    });
                    data.ego_poses.push(EgoPoseRow {
                        scene_id: id.clone(),
                        timestamp_us: ts,
                        source_pose_id: format!("{id}/{k}"),
                        sensor: None,
                        ego,
                    });
                }
                data.update_counts();
                if let Err(e) = crate::ingest::limits::check(&data, &|_| f.path.clone()) {
                    log::info!("frenetix log {id} rejected: {e}");
                    rejects.push(reject("ingest", &id, &e));
                    continue;
                }
                writer.write_scene(&data)?;
                summary.scenes_written += 1;
            }
            Err(e) => {
                log::info!("frenetix log {id} rejected: {e}");
                rejects.push(reject("ingest", &id, &e));
            }
        }
    }
    let meta = writer.finish(&rejects)?;
    summary.counts = meta.counts;
    summary.rejects = rejects.items().to_vec();
    Ok(summary)
}
