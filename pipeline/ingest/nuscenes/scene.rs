//! Assembling one scene from the indexed tables, validating as it goes.
//!
//! Any problem returns an `Error::Input` naming the file and token; the caller records the
//! scene as rejected and moves on to the next one.

use std::collections::BTreeMap;

use super::chains;
use super::load::Tables;
use crate::formats::nuscenes::*;
use crate::geometry::{quat_norm_error, yaw_of};
use crate::store::paths::Root;
use crate::store::{CameraRow, EgoPoseRow, FrameRow, ObjectRow, Pose, SceneData, SceneRow};
use crate::taxonomy::Taxonomy;
use crate::{Error, Result};

/// Validation settings of the nuScenes reader.
#[derive(Debug, Clone)]
pub struct SceneRules {
    /// Quaternions whose norm is within this of 1 are renormalised; others reject the scene.
    pub quat_tolerance: f64,
    /// Check that every camera image file exists.
    pub check_images: bool,
    /// The devkit's `box_velocity` gap limit (s), doubled for centred differences.
    pub velocity_max_time_diff_s: f64,
}

impl Default for SceneRules {
    fn default() -> Self {
        Self {
            quat_tolerance: 1e-3,
            check_images: true,
            velocity_max_time_diff_s: 1.5,
        }
    }
}

/// Counters a scene contributes to the ingest summary.
#[derive(Debug, Default, Clone)]
pub(crate) struct SceneStats {
    pub unknown_categories: BTreeMap<String, u64>,
    pub renormalised_quaternions: u64,
}

struct Ctx<'a> {
    t: &'a Tables,
    rules: &'a SceneRules,
    stats: SceneStats,
}

fn finite<const N: usize>(
    v: &[f64; N],
    file: &std::path::Path,
    token: &str,
    what: &str,
) -> Result<()> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(Error::input(
            file,
            token,
            format!("{what} has a non-finite value {v:?}"),
        ))
    }
}

impl Ctx<'_> {
    fn quat(
        &mut self,
        q: [f64; 4],
        file: &std::path::Path,
        token: &str,
        what: &str,
    ) -> Result<[f64; 4]> {
        finite(&q, file, token, what)?;
        let err = quat_norm_error(q);
        if err > self.rules.quat_tolerance {
            return Err(Error::input(
                file,
                token,
                format!(
                    "{what} {q:?} is not a unit quaternion (|norm − 1| = {err:.3e} > {})",
                    self.rules.quat_tolerance
                ),
            ));
        }
        if err > 0.0 {
            self.stats.renormalised_quaternions += u64::from(err > 1e-12);
            let n = q.iter().map(|c| c * c).sum::<f64>().sqrt();
            return Ok(q.map(|c| c / n));
        }
        Ok(q)
    }

    fn ego_pose(&mut self, token: &str, referrer: &str) -> Result<(i64, Pose)> {
        let t = self.t;
        let ep = t.ego_pose.get(token, referrer)?;
        finite(&ep.translation, &t.ego_pose.file, token, "translation")?;
        let q = self.quat(ep.rotation, &t.ego_pose.file, token, "rotation")?;
        Ok((
            ep.timestamp,
            Pose {
                t: ep.translation,
                q,
            },
        ))
    }
}

/// Builds the store rows of scene `scene_idx` (position in `scene.json`); its images are
/// files under `dataset`.
pub(crate) fn assemble(
    t: &Tables,
    dataset: &Root,
    scene_idx: usize,
    taxonomy: &Taxonomy,
    rules: &SceneRules,
) -> Result<(SceneData, SceneStats)> {
    let scene = &t.scene.rows[scene_idx];
    let mut cx = Ctx {
        t,
        rules,
        stats: SceneStats::default(),
    };
    if t.scene.is_duplicate(&scene.token) {
        return Err(Error::input(
            &t.scene.file,
            &scene.token,
            "duplicate scene token",
        ));
    }
    let log = t
        .log
        .get(&scene.log_token, &format!("scene {}", scene.token))?;

    let samples = chains::sample_chain(t, scene)?;
    chains::data_chains(t, scene, &samples)?;
    chains::instance_chains(t, &samples)?;
    let scene_id = scene.name.clone();
    let mut frames = Vec::with_capacity(samples.len());
    let mut cameras = Vec::new();
    let mut poses: BTreeMap<(i64, String), EgoPoseRow> = BTreeMap::new();
    let mut objects = Vec::new();

    for (fi, s) in samples.iter().enumerate() {
        let ego = cx.sensor_rows(s, fi as u32, &scene_id, dataset, &mut poses, &mut cameras)?;
        frames.push(FrameRow {
            scene_id: scene_id.clone(),
            frame_idx: fi as u32,
            timestamp_us: s.timestamp,
            is_keyframe: true,
            source_frame_id: s.token.clone(),
            ego,
        });

        for &ai in t
            .anns_by_sample
            .get(s.token.as_str())
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            objects.push(annotation(
                &mut cx,
                &t.sample_annotation.rows[ai],
                &scene_id,
                fi as u32,
                s.timestamp,
                taxonomy,
            )?);
        }
    }
    // Sweeps are listed under the sample that follows them, so they are covered above; the
    // frame index of a sweep is that following keyframe's.
    cameras.sort_by(|a, b| {
        (a.timestamp_us, &a.camera, &a.camera_frame_id).cmp(&(
            b.timestamp_us,
            &b.camera,
            &b.camera_frame_id,
        ))
    });

    let mut data = SceneData {
        scene: SceneRow {
            scene_id,
            source: "nuscenes".into(),
            source_scene_id: scene.token.clone(),
            description: scene.description.clone(),
            log_id: Some(log.token.clone()),
            location: link(&log.location).map(str::to_string),
            vehicle: link(&log.vehicle).map(str::to_string),
            date_captured: link(&log.date_captured).map(str::to_string),
            ..Default::default()
        },
        frames,
        ego_poses: poses.into_values().collect(),
        cameras,
        objects,
    };
    data.update_counts();
    Ok((data, cx.stats))
}

impl Ctx<'_> {
    /// The sample_data of sample `s` (its keyframes and the sweeps before it): adds an ego pose
    /// row per sample_data to `poses` and a camera row per image to `cameras`, and returns the
    /// frame's ego pose.
    fn sensor_rows(
        &mut self,
        s: &Sample,
        frame_idx: u32,
        scene_id: &str,
        dataset: &Root,
        poses: &mut BTreeMap<(i64, String), EgoPoseRow>,
        cameras: &mut Vec<CameraRow>,
    ) -> Result<Pose> {
        let t = self.t;
        let sd_idx = t
            .data_by_sample
            .get(s.token.as_str())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        // The keyframe pose is the LIDAR_TOP keyframe's, as in nuScenes; without lidar, the
        // CAM_FRONT keyframe's, else any keyframe's.
        let mut frame_pose: Option<(u8, Pose)> = None;
        for &i in sd_idx {
            let sd = &t.sample_data.rows[i];
            let referrer = format!("sample_data {}", sd.token);
            let cs = t
                .calibrated_sensor
                .get(&sd.calibrated_sensor_token, &referrer)?;
            let sensor = t
                .sensor
                .get(&cs.sensor_token, &format!("calibrated_sensor {}", cs.token))?;
            let (ts, ego) = self.ego_pose(&sd.ego_pose_token, &referrer)?;
            if let Some(nx) = link(&sd.next) {
                let n = t
                    .sample_data
                    .get(nx, &format!("sample_data {}.next", sd.token))?;
                if n.timestamp <= sd.timestamp {
                    return Err(Error::input(
                        &t.sample_data.file,
                        &n.token,
                        format!(
                            "non-monotonic timestamps on {}: {} follows {} at {}",
                            sensor.channel, n.timestamp, sd.token, sd.timestamp
                        ),
                    ));
                }
            }
            poses.insert(
                (ts, sd.ego_pose_token.to_string()),
                EgoPoseRow {
                    scene_id: scene_id.to_string(),
                    timestamp_us: ts,
                    source_pose_id: sd.ego_pose_token.to_string(),
                    sensor: Some(sensor.channel.clone()),
                    ego,
                },
            );
            if sd.is_key_frame {
                let rank = match sensor.channel.as_str() {
                    "LIDAR_TOP" => 0,
                    "CAM_FRONT" => 1,
                    _ => 2,
                };
                if frame_pose.is_none_or(|(r, _)| rank < r) {
                    frame_pose = Some((rank, ego));
                }
            }
            if sensor.modality != "camera" {
                continue;
            }
            let (k, cq) = self.camera_calibration(cs)?;
            self.check_image(sd, dataset)?;
            cameras.push(CameraRow {
                scene_id: scene_id.to_string(),
                frame_idx,
                camera: sensor.channel.clone(),
                camera_frame_id: sd.token.to_string(),
                timestamp_us: sd.timestamp,
                is_keyframe: sd.is_key_frame,
                image_path: sd.filename.clone(),
                width: sd.width,
                height: sd.height,
                fx: k[0][0],
                fy: k[1][1],
                cx: k[0][2],
                cy: k[1][2],
                cam: Pose {
                    t: cs.translation,
                    q: cq,
                },
                ego,
                distortion: None,
            });
        }
        let Some((_, ego)) = frame_pose else {
            return Err(Error::input(
                &t.sample.file,
                &s.token,
                "sample has no keyframe sample_data, so no ego pose",
            ));
        };
        Ok(ego)
    }

    /// A camera's checked intrinsic matrix and (renormalised) rotation; the camera row needs
    /// both, and a camera without usable ones rejects the scene.
    fn camera_calibration(&mut self, cs: &CalibratedSensor) -> Result<([[f64; 3]; 3], [f64; 4])> {
        let t = self.t;
        let k = cs.camera_intrinsic.ok_or_else(|| {
            Error::input(
                &t.calibrated_sensor.file,
                &cs.token,
                "camera without camera_intrinsic",
            )
        })?;
        finite(
            &k[0],
            &t.calibrated_sensor.file,
            &cs.token,
            "camera_intrinsic",
        )?;
        finite(
            &k[1],
            &t.calibrated_sensor.file,
            &cs.token,
            "camera_intrinsic",
        )?;
        if k[0][0] <= 0.0 || k[1][1] <= 0.0 {
            return Err(Error::input(
                &t.calibrated_sensor.file,
                &cs.token,
                "camera_intrinsic has a non-positive focal length",
            ));
        }
        finite(
            &cs.translation,
            &t.calibrated_sensor.file,
            &cs.token,
            "translation",
        )?;
        let cq = self.quat(
            cs.rotation,
            &t.calibrated_sensor.file,
            &cs.token,
            "rotation",
        )?;
        Ok((k, cq))
    }

    /// A camera image's path must stay inside the dataset root (the store keeps it relative to
    /// the root) and, when the rules say so, the file must exist.
    fn check_image(&self, sd: &SampleData, dataset: &Root) -> Result<()> {
        let t = self.t;
        let path = dataset
            .inside(&sd.filename)
            .map_err(|why| Error::input(&t.sample_data.file, &sd.token, why))?;
        if self.rules.check_images && !path.is_file() {
            return Err(Error::input(
                &t.sample_data.file,
                &sd.token,
                format!("missing image {}", path.display()),
            ));
        }
        Ok(())
    }
}

fn annotation(
    cx: &mut Ctx,
    a: &SampleAnnotation,
    scene_id: &str,
    frame_idx: u32,
    timestamp_us: i64,
    taxonomy: &Taxonomy,
) -> Result<ObjectRow> {
    let t = cx.t;
    let file = &t.sample_annotation.file;
    if t.sample_annotation.is_duplicate(&a.token) {
        return Err(Error::input(
            file,
            &a.token,
            "duplicate sample_annotation token",
        ));
    }
    let referrer = format!("sample_annotation {}", a.token);
    let inst = t.instance.get(&a.instance_token, &referrer)?;
    let cat = t
        .category
        .get(&inst.category_token, &format!("instance {}", inst.token))?;
    let (class, known) = taxonomy.nuscenes_class(&cat.name);
    if !known {
        *cx.stats
            .unknown_categories
            .entry(cat.name.clone())
            .or_default() += 1;
    }
    let attributes = a
        .attribute_tokens
        .iter()
        .map(|tok| t.attribute.get(tok, &referrer).map(|at| at.name.clone()))
        .collect::<Result<Vec<_>>>()?;
    let visibility_bin = match link(&a.visibility_token) {
        None => None,
        Some(v) => {
            t.visibility.get(v, &referrer)?;
            match v.parse::<u8>() {
                Ok(b @ 1..=4) => Some(b),
                _ => {
                    return Err(Error::input(
                        file,
                        &a.token,
                        format!("visibility_token {v:?} is not one of 1..4"),
                    ))
                }
            }
        }
    };
    finite(&a.translation, file, &a.token, "translation")?;
    finite(&a.size, file, &a.token, "size")?;
    if a.size.iter().any(|&s| s <= 0.0) {
        return Err(Error::input(
            file,
            &a.token,
            format!("size {:?} has a non-positive extent", a.size),
        ));
    }
    let q = cx.quat(a.rotation, file, &a.token, "rotation")?;
    let counts = |n: i64, what: &str| {
        u32::try_from(n)
            .map_err(|_| Error::input(file, &a.token, format!("{what} = {n} is out of range")))
    };
    let (vx, vy) = velocity(t, a, cx.rules.velocity_max_time_diff_s)?;
    Ok(ObjectRow {
        scene_id: scene_id.to_string(),
        frame_idx,
        timestamp_us,
        track_id: a.instance_token.to_string(),
        annotation_id: a.token.to_string(),
        category: cat.name.clone(),
        class,
        center: a.translation,
        size_wlh: a.size,
        q,
        yaw: yaw_of(q),
        vx,
        vy,
        num_lidar_pts: counts(a.num_lidar_pts, "num_lidar_pts")?,
        num_radar_pts: counts(a.num_radar_pts, "num_radar_pts")?,
        visibility_bin,
        attributes,
    })
}

/// The devkit's `box_velocity`: a centred difference over the neighbouring annotations (one-sided
/// at track ends) divided by their samples' time gap; unknown (None) without neighbours or when
/// the gap exceeds the limit (doubled for centred differences).
fn velocity(t: &Tables, a: &SampleAnnotation, max_dt: f64) -> Result<(Option<f64>, Option<f64>)> {
    let referrer = format!("sample_annotation {}", a.token);
    let prev = link(&a.prev)
        .map(|p| t.sample_annotation.get(p, &format!("{referrer}.prev")))
        .transpose()?;
    let next = link(&a.next)
        .map(|n| t.sample_annotation.get(n, &format!("{referrer}.next")))
        .transpose()?;
    if prev.is_none() && next.is_none() {
        return Ok((None, None));
    }
    let first = prev.unwrap_or(a);
    let last = next.unwrap_or(a);
    let time = |x: &SampleAnnotation| -> Result<f64> {
        Ok(t.sample
            .get(&x.sample_token, &format!("sample_annotation {}", x.token))?
            .timestamp as f64
            * 1e-6)
    };
    let dt = time(last)? - time(first)?;
    let limit = if prev.is_some() && next.is_some() {
        2.0 * max_dt
    } else {
        max_dt
    };
    if dt > limit || dt <= 0.0 {
        return Ok((None, None));
    }
    let vx = (last.translation[0] - first.translation[0]) / dt;
    let vy = (last.translation[1] - first.translation[1]) / dt;
    if !(vx.is_finite() && vy.is_finite()) {
        return Ok((None, None));
    }
    Ok((Some(vx), Some(vy)))
}
