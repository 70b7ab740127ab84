//! The values a scene may hold, checked before it enters the store, the same for every source.
//!
//! A pose 1e308 m away or a box 1 km long is not a measurement; let through, it overflows
//! projections and distances downstream, where the rows vanish without a reject. Each limit is
//! far outside what nuScenes, Waymo and CARLA record, and a scene that breaches one is rejected
//! with the record and the value named.

use std::path::PathBuf;

use crate::store::{Pose, SceneData};
use crate::{Error, Result};

/// Largest |coordinate| of a position (m): a city-scale map frame stays far below (UTM
/// northings are under 1e7 m).
pub(crate) const MAX_POSITION_M: f64 = 1e7;
/// A box side must lie in (0, MAX_BOX_SIZE_M] (m): the longest road vehicles are ~30 m.
pub(crate) const MAX_BOX_SIZE_M: f64 = 100.0;
/// Largest box speed (m/s): 150 m/s is 540 km/h.
pub(crate) const MAX_SPEED_MPS: f64 = 150.0;

/// The kind of record at fault, so that the caller names the source file holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    EgoPose,
    Camera,
    Object,
}

fn position(t: &[f64; 3]) -> Option<String> {
    if !t.iter().all(|v| v.is_finite()) {
        return Some(format!("position {t:?} is not finite"));
    }
    t.iter()
        .any(|v| v.abs() > MAX_POSITION_M)
        .then(|| format!("position {t:?} lies beyond {MAX_POSITION_M:e} m"))
}

fn pose(p: &Pose) -> Option<String> {
    position(&p.t).or_else(|| {
        (!p.q.iter().all(|v| v.is_finite())).then(|| format!("rotation {:?} is not finite", p.q))
    })
}

/// Poses closer in time than this are not compared: sensors of one rig stamp the same
/// localisation a fraction of a millisecond apart.
const MIN_SPEED_DT_US: i64 = 10_000;

/// The first ego pose reached faster than [`MAX_SPEED_MPS`] from the pose before it.
fn ego_jump(data: &SceneData) -> Option<(String, String)> {
    let mut poses: Vec<_> = data.ego_poses.iter().collect();
    poses.sort_by_key(|p| p.timestamp_us);
    let mut last = poses.first()?;
    for p in &poses[1..] {
        let dt = p.timestamp_us - last.timestamp_us;
        if dt < MIN_SPEED_DT_US {
            continue;
        }
        let d = (0..3)
            .map(|i| (p.ego.t[i] - last.ego.t[i]).powi(2))
            .sum::<f64>()
            .sqrt();
        let speed = d / (dt as f64 * 1e-6);
        if speed > MAX_SPEED_MPS {
            return Some((
                p.source_pose_id.clone(),
                format!(
                    "ego moves {d:.1} m in {:.3} s ({speed:.0} m/s), beyond {MAX_SPEED_MPS} m/s",
                    dt as f64 * 1e-6
                ),
            ));
        }
        last = p;
    }
    None
}

/// Checks every row of `data`; `file` says which source file holds a kind of record.
pub(crate) fn check(data: &SceneData, file: &dyn Fn(Kind) -> PathBuf) -> Result<()> {
    let bad = |k: Kind, record: &str, detail: String| Err(Error::input(file(k), record, detail));
    for e in &data.ego_poses {
        if let Some(why) = pose(&e.ego) {
            return bad(Kind::EgoPose, &e.source_pose_id, format!("ego {why}"));
        }
    }
    if let Some((id, why)) = ego_jump(data) {
        return bad(Kind::EgoPose, &id, why);
    }
    let mut seen = std::collections::HashSet::new();
    for o in &data.objects {
        if !seen.insert((o.frame_idx, o.annotation_id.as_str())) {
            return bad(
                Kind::Object,
                &o.annotation_id,
                format!(
                    "box id {} appears twice in frame {}: box ids must be unique per frame",
                    o.annotation_id, o.frame_idx
                ),
            );
        }
    }
    for c in &data.cameras {
        let why = pose(&c.cam)
            .map(|w| format!("camera {w}"))
            .or_else(|| pose(&c.ego).map(|w| format!("ego {w}")))
            .or_else(|| {
                (![c.fx, c.fy, c.cx, c.cy].iter().all(|v| v.is_finite())
                    || c.fx <= 0.0
                    || c.fy <= 0.0)
                    .then(|| {
                        format!(
                            "intrinsics fx {} fy {} cx {} cy {} are not usable",
                            c.fx, c.fy, c.cx, c.cy
                        )
                    })
            });
        if let Some(why) = why {
            return bad(Kind::Camera, &c.camera_frame_id, why);
        }
    }
    for o in &data.objects {
        let why = position(&o.center)
            .map(|w| format!("box centre {w}"))
            .or_else(|| {
                (!o.size_wlh
                    .iter()
                    .all(|v| v.is_finite() && *v > 0.0 && *v <= MAX_BOX_SIZE_M))
                .then(|| {
                    format!(
                        "box size {:?} (w, l, h) is outside (0, {MAX_BOX_SIZE_M}] m",
                        o.size_wlh
                    )
                })
            })
            .or_else(|| {
                (!o.q.iter().all(|v| v.is_finite()))
                    .then(|| format!("box rotation {:?} is not finite", o.q))
            })
            .or_else(|| {
                let (vx, vy) = (o.vx.unwrap_or(0.0), o.vy.unwrap_or(0.0));
                // nuScenes leaves velocity NaN where it cannot be estimated; that is "unknown".
                let known = vx.is_finite() && vy.is_finite();
                (known && vx.hypot(vy) > MAX_SPEED_MPS).then(|| {
                    format!(
                        "box speed {:.1} m/s is beyond {MAX_SPEED_MPS} m/s",
                        vx.hypot(vy)
                    )
                })
            });
        if let Some(why) = why {
            return bad(Kind::Object, &o.annotation_id, why);
        }
    }
    Ok(())
}
