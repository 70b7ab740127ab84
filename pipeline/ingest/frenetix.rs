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
use crate::ingest::limits::Kind;
use crate::ingest::nuscenes::IngestSummary;
use crate::ingest::source::{Refusal, SceneIds, SceneSource};
use crate::ingest::sources::{FrenetixRules, SourcesConfig};
use crate::store::paths::{Links, Root};
use crate::store::{EgoPoseRow, FrameRow, Pose, SceneData, SceneRow, StoreMeta};
use crate::{Error, Result};

#[derive(Debug, Clone)]
pub struct Options {
    pub root: PathBuf,
    pub out: PathBuf,
    pub config: SourcesConfig,
    /// Whether links under the root are followed out of it.
    pub links: Links,
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
    let source = Source {
        opts,
        dataset: Root::new(&opts.root, opts.links),
    };
    crate::ingest::ingest(&source, &opts.out, |_, ()| {})
}

/// A folder of scene folders holding logs; a unit is a log file.
struct Source<'a> {
    opts: &'a Options,
    dataset: Root,
}

impl SceneSource for Source<'_> {
    type Unit = LogFile;
    type Stats = ();

    fn label(&self) -> &'static str {
        "ingest frenetix logs"
    }

    fn root(&self) -> &Path {
        &self.opts.root
    }

    fn meta(&self) -> StoreMeta {
        StoreMeta::new("frenetix", "csv", &self.opts.root.to_string_lossy())
            .with_links(self.opts.links)
    }

    fn units(&self) -> Result<Vec<LogFile>> {
        logs(&self.opts.root)
    }

    fn admit(&self, f: &LogFile, ids: &mut SceneIds) -> std::result::Result<String, Refusal> {
        let id = format!("{}__{}", f.scene, f.behavior);
        let named = crate::ingest::utf8_name(&f.path)
            .and_then(|_| {
                f.path
                    .parent()
                    .map_or(Ok(String::new()), crate::ingest::utf8_name)
            })
            .and_then(|_| self.dataset.holds(&f.path))
            .and_then(|_| ids.admit(&id, &f.path));
        match named {
            Ok(()) => Ok(id),
            Err(why) => {
                let e = Error::input(&f.path, "log", why);
                Err((id, e))
            }
        }
    }

    fn assemble(&self, f: &LogFile, id: &str) -> Result<(SceneData, ())> {
        let rules = &self.opts.config.frenetix;
        let states = read_log(&f.path, rules)?;
        Ok((scene_of(f, id, &states, rules.dt_s), ()))
    }

    fn limit_file(&self, f: &LogFile, _: Kind) -> PathBuf {
        f.path.clone()
    }
}

/// The ego-only scene of a log's `[x, y, theta]` states, one keyframe every `dt_s`.
fn scene_of(f: &LogFile, id: &str, states: &[[f64; 3]], dt_s: f64) -> SceneData {
    let mut data = SceneData {
        scene: SceneRow {
            scene_id: id.to_string(),
            source: "carla".into(),
            source_scene_id: f.scene.clone(),
            description: format!("Frenetix log, behaviour {}", f.behavior),
            ..Default::default()
        },
        ..Default::default()
    };
    for (k, s) in states.iter().enumerate() {
        let ts = (k as f64 * dt_s * 1e6).round() as i64;
        let ego = Pose {
            t: [s[0], s[1], 0.0],
            q: quat_from_yaw(s[2]),
        };
        data.frames.push(FrameRow {
            scene_id: id.to_string(),
            frame_idx: k as u32,
            timestamp_us: ts,
            is_keyframe: true,
            source_frame_id: format!("{id}/{k}"),
            ego,
        });
        data.ego_poses.push(EgoPoseRow {
            scene_id: id.to_string(),
            timestamp_us: ts,
            source_pose_id: format!("{id}/{k}"),
            sensor: None,
            ego,
        });
    }
    data.update_counts();
    data
}
