//! Frenetix CSV logs (ego only) as an ego-motion source, the way EgoDyn cut its CARLA clips
//! (`docs/egodyn.md` §1.3): `ROOT/<scene>/<Behavior>_logs.csv` or
//! `ROOT/<scene>/logs_<behavior>.csv`, `;`-delimited, one row per simulation step of `dt_s`;
//! x, y and the first element of the `theta_orientations_rad` list are the ego state, the time
//! is the row's simulation step (`trajectory_number`, counted from the first row's; the row
//! index where a log has no such column) times `dt_s`, and must move forward from row to row
//! (velocities are read and checked but, as in EgoDyn, the speed is re-derived from positions). Each (scene, behaviour) becomes one store scene
//! `<scene>__<Behavior>`, its rows frames and ego poses, so `drivegen egomotion` with
//! `anchoring = "sliding"` and `pose_source = "frames"` cuts EgoDyn's 31-sample, stride-30
//! windows with its clip ids `<scene>__<Behavior>__w<k>`.

use std::path::{Path, PathBuf};

use crate::geometry::quat_from_yaw;
use crate::ingest::limits::Kind;
use crate::ingest::source::{Refusal, SceneIds, SceneSource};
use crate::ingest::sources::{FrenetixRules, SourcesConfig};
use crate::ingest::IngestSummary;
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
pub(crate) struct LogFile {
    pub scene: String,
    pub behavior: String,
    pub path: PathBuf,
}

/// The logs under `root`, in (scene, behaviour) order.
pub(crate) fn logs(root: &Path) -> Result<Vec<LogFile>> {
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

/// The column holding a row's simulation step (Frenetix's logger writes the time step there);
/// a log without it is read one step per row.
pub(crate) const STEP_COLUMN: &str = "trajectory_number";

/// One row of a log: where it is, its simulation step and the ego state `(x, y, theta)`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LogRow {
    /// The line in the file (1-based).
    pub line: usize,
    /// The `trajectory_number` cell, when the log has the column.
    pub step: Option<i64>,
    pub state: [f64; 3],
}

/// The rows of one log.
pub(crate) fn read_log(path: &Path, rules: &FrenetixRules) -> Result<Vec<LogRow>> {
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
    let si = find(STEP_COLUMN).ok();
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
        let step = match si {
            None => None,
            Some(i) => {
                let v = num(i, STEP_COLUMN, false)?;
                // Beyond 2^53 a float no longer holds every whole number.
                if v.fract() != 0.0 || v.abs() > 9.0e15 {
                    return Err(Error::input(
                        path,
                        &at,
                        format!("`{STEP_COLUMN}` is not a whole number of steps: {v}"),
                    ));
                }
                Some(v as i64)
            }
        };
        out.push(LogRow {
            line: ln + 1,
            step,
            state: [x, y, theta],
        });
    }
    if out.is_empty() {
        return Err(Error::input(path, "line 2", "no data rows"));
    }
    Ok(out)
}

/// Each row's time (µs) from the log's start: its step counted from the first row's (or its
/// index) times `dt_s`. A row that is not later than the one before it (two frames sharing a
/// timestamp, or time going back) rejects the log, naming the row.
pub(crate) fn frame_times(path: &Path, rows: &[LogRow], dt_s: f64) -> Result<Vec<i64>> {
    let first = rows.first().and_then(|r| r.step).unwrap_or(0);
    let mut out: Vec<i64> = Vec::with_capacity(rows.len());
    for (k, r) in rows.iter().enumerate() {
        let steps = r.step.map_or(k as i64, |s| s.saturating_sub(first));
        let ts = (steps as f64 * dt_s * 1e6).round() as i64;
        if let (Some(&before), Some(prev)) = (out.last(), k.checked_sub(1).map(|p| &rows[p])) {
            if ts <= before {
                let step = r
                    .step
                    .map_or_else(String::new, |s| format!(" ({STEP_COLUMN} {s})"));
                let how = if ts == before {
                    "shares its timestamp with"
                } else {
                    "goes back in time from"
                };
                return Err(Error::input(
                    path,
                    format!("line {}", r.line),
                    format!(
                        "frame {k}{step} at {ts} µs {how} the frame on line {} at {before} µs: \
                         a log's frames must move forward in time",
                        prev.line
                    ),
                ));
            }
        }
        out.push(ts);
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
        let rows = read_log(&f.path, rules)?;
        let times = frame_times(&f.path, &rows, rules.dt_s)?;
        Ok((scene_of(f, id, &rows, &times), ()))
    }

    fn limit_file(&self, f: &LogFile, _: Kind) -> PathBuf {
        f.path.clone()
    }
}

/// The ego-only scene of a log's rows, one keyframe per row at `times` (µs).
fn scene_of(f: &LogFile, id: &str, rows: &[LogRow], times: &[i64]) -> SceneData {
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
    for (k, (r, &ts)) in rows.iter().zip(times).enumerate() {
        let s = r.state;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(steps: &[Option<i64>]) -> Vec<LogRow> {
        steps
            .iter()
            .enumerate()
            .map(|(i, &step)| LogRow {
                line: i + 2,
                step,
                state: [0.0; 3],
            })
            .collect()
    }

    #[test]
    fn frame_times_follow_the_steps_and_only_move_forward() {
        let p = Path::new("s/Default_logs.csv");
        let t = frame_times(p, &rows(&[Some(7), Some(8), Some(10)]), 0.1).unwrap();
        assert_eq!(t, [0, 100_000, 300_000]);
        let t = frame_times(p, &rows(&[None, None, None]), 0.1).unwrap();
        assert_eq!(t, [0, 100_000, 200_000]);
        for (steps, how, line) in [
            (
                vec![Some(0), Some(1), Some(1)],
                "shares its timestamp",
                "line 4",
            ),
            (
                vec![Some(0), Some(2), Some(1)],
                "goes back in time",
                "line 4",
            ),
            (vec![Some(5), Some(4)], "goes back in time", "line 3"),
        ] {
            let e = frame_times(p, &rows(&steps), 0.1).unwrap_err();
            let r = e.report().to_string();
            assert!(r.contains(how) && r.contains(line), "{r}");
        }
    }
}
