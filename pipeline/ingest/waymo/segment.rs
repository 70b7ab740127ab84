//! One Waymo v2 segment → one store scene.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};

use super::frames::{isometry_from_row_major, pose_of, store_camera_pose};
use crate::formats::waymo::{component_path, empty_image_rows, Component, BOX_TYPES, CAMERA_NAMES};
use crate::geometry::{wrap_pi, wxyz, yaw_of};
use crate::ingest::sources::WaymoRules;
use crate::store::{CameraRow, EgoPoseRow, FrameRow, ObjectRow, SceneData, SceneRow};
use crate::taxonomy::Taxonomy;
use crate::{Error, Result};

pub(crate) use crate::formats::waymo::{
    CAL, CAM, CAMERA_OBJECT_ID, CB, IMG, LASER_ID, LB, PB, POSE, SB, SEG, ST, TS,
};

/// The intrinsic fields in Waymo's array order.
pub(crate) const INTRINSICS: [&str; 9] = ["f_u", "f_v", "c_u", "c_v", "k1", "k2", "p1", "p2", "k3"];

/// Counters one segment contributes to the summary.
#[derive(Debug, Default, Clone)]
pub(crate) struct SegmentStats {
    pub unknown_types: BTreeMap<String, u64>,
    /// Rows of the label components the store has no table for (checked, counted).
    pub camera_boxes: u64,
    pub projected_boxes: u64,
    pub synced_boxes: u64,
    /// Optional components absent for this segment.
    pub missing_optional: Vec<String>,
}

fn col(component: &str, path: &str) -> String {
    format!("{component}.{path}")
}

fn row_err(path: &Path, row: usize, detail: impl Into<String>) -> Error {
    Error::input(path, format!("row {row}"), detail)
}

fn camera_name(code: u8) -> &'static str {
    CAMERA_NAMES
        .get(code as usize)
        .copied()
        .unwrap_or("UNKNOWN")
}

/// A label type name from its code (`TYPE_VEHICLE`, or `TYPE_<code>` when out of range).
pub(crate) fn type_name(code: i64) -> String {
    usize::try_from(code)
        .ok()
        .and_then(|i| BOX_TYPES.get(i))
        .map_or_else(|| format!("TYPE_{code}"), |s| s.to_string())
}

/// Camera calibration of one camera.
#[derive(Debug, Clone)]
struct Calibration {
    intrinsic: [f64; 9],
    extrinsic: Isometry3<f64>,
    width: u32,
    height: u32,
}

fn read_optional(
    root: &Path,
    component: &str,
    segment: &str,
    required: &[&str],
    optional: &[&str],
    rules: &WaymoRules,
    stats: &mut SegmentStats,
) -> Result<Option<Component>> {
    let path = component_path(root, component, segment);
    if !path.is_file() {
        stats.missing_optional.push(component.to_string());
        return Ok(None);
    }
    let c = Component::read(&path, required, optional, rules.batch_rows)?;
    c.check_segment(segment)?;
    Ok(Some(c))
}

/// Box columns (`center.{x,y,z}` etc.) of a label component, required and finite.
fn box_cols(c: &Component, prefix: &str, fields: &[&str]) -> Result<Vec<Vec<f64>>> {
    fields
        .iter()
        .map(|f| c.f64s_required(&format!("{prefix}.{f}")))
        .collect()
}

/// Reads and checks one segment's components and assembles its scene.
///
/// The components are read in a fixed order (poses, calibrations, images, 3-D boxes, the
/// unstored labels, stats), so the first broken one is the one reported.
pub(crate) fn assemble(
    root: &Path,
    segment: &str,
    taxonomy: &Taxonomy,
    rules: &WaymoRules,
) -> Result<(SceneData, SegmentStats)> {
    let mut stats = SegmentStats::default();
    let frames = read_frames(root, segment, rules)?;
    let calib = read_calibrations(root, segment, rules)?;
    let cameras = camera_rows(root, segment, rules, &frames, &calib)?;
    let objects = object_rows(root, segment, taxonomy, rules, &frames, &mut stats)?;
    check_unstored_labels(root, segment, rules, &frames, &calib, &mut stats)?;
    let (location, time_of_day, weather) = read_conditions(root, segment, rules, &mut stats)?;

    let mut data = SceneData {
        scene: SceneRow {
            scene_id: segment.to_string(),
            source: "waymo".into(),
            source_scene_id: segment.to_string(),
            description: format!(
                "time of day: {}; weather: {}",
                time_of_day.as_deref().unwrap_or("unknown"),
                weather.as_deref().unwrap_or("unknown")
            ),
            log_id: None,
            location,
            vehicle: None,
            date_captured: None,
            ..Default::default()
        },
        frames: frames.rows,
        ego_poses: frames.ego_poses,
        cameras,
        objects,
    };
    data.update_counts();
    Ok((data, stats))
}

/// The segment's frames, one per vehicle pose in time order; every other component is keyed
/// to them by timestamp.
struct Frames {
    /// Frame index by timestamp.
    of: HashMap<i64, usize>,
    /// Each frame's world-from-vehicle pose, which places its boxes in the world frame.
    pose: Vec<Isometry3<f64>>,
    rows: Vec<FrameRow>,
    ego_poses: Vec<EgoPoseRow>,
}

impl Frames {
    /// The frame of timestamp `t`, which row `row` of `path` refers to.
    fn at(&self, path: &Path, row: usize, t: i64) -> Result<usize> {
        self.of.get(&t).copied().ok_or_else(|| {
            row_err(
                path,
                row,
                format!("frame timestamp {t} has no vehicle_pose row"),
            )
        })
    }
}

/// Frames: the vehicle poses, in time order; timestamps must be unique, since they are the key
/// every other component joins on.
fn read_frames(root: &Path, segment: &str, rules: &WaymoRules) -> Result<Frames> {
    let tol = rules.rotation_tolerance;
    let vp_path = component_path(root, "vehicle_pose", segment);
    let vp = Component::read(&vp_path, &[SEG, TS, POSE], &[], rules.batch_rows)?;
    vp.check_segment(segment)?;
    let ts = vp.i64s_required(TS)?;
    let mats = vp.transforms(POSE)?;
    let mut order: Vec<usize> = (0..vp.rows()).collect();
    order.sort_by_key(|&i| ts[i]);
    if order.is_empty() {
        return Err(Error::input(
            &vp_path,
            "rows",
            "the segment has no vehicle poses",
        ));
    }
    for w in order.windows(2) {
        if ts[w[0]] == ts[w[1]] {
            return Err(row_err(
                &vp_path,
                w[1],
                format!("duplicate frame timestamp {} (also row {})", ts[w[1]], w[0]),
            ));
        }
    }
    let mut frame_of: HashMap<i64, usize> = HashMap::new();
    let mut frame_pose: Vec<Isometry3<f64>> = Vec::with_capacity(order.len());
    let mut frames = Vec::with_capacity(order.len());
    let mut ego_poses = Vec::with_capacity(order.len());
    for (fi, &row) in order.iter().enumerate() {
        let iso = isometry_from_row_major(&mats[row], tol)
            .map_err(|e| row_err(&vp_path, row, format!("`{POSE}`: {e}")))?;
        frame_of.insert(ts[row], fi);
        frame_pose.push(iso);
        frames.push(FrameRow {
            scene_id: segment.to_string(),
            frame_idx: fi as u32,
            timestamp_us: ts[row],
            is_keyframe: true,
            source_frame_id: format!("{segment}/{}", ts[row]),
            ego: pose_of(&iso),
        });
        ego_poses.push(EgoPoseRow {
            scene_id: segment.to_string(),
            timestamp_us: ts[row],
            source_pose_id: format!("{segment}/{}", ts[row]),
            sensor: None,
            ego: pose_of(&iso),
        });
    }
    Ok(Frames {
        of: frame_of,
        pose: frame_pose,
        rows: frames,
        ego_poses,
    })
}

/// Camera calibrations, one per camera; the images and 2-D labels may only name a camera
/// calibrated here.
fn read_calibrations(
    root: &Path,
    segment: &str,
    rules: &WaymoRules,
) -> Result<BTreeMap<u8, Calibration>> {
    let tol = rules.rotation_tolerance;
    let cal_path = component_path(root, "camera_calibration", segment);
    let mut req: Vec<String> = vec![SEG.into(), CAM.into()];
    req.extend(
        INTRINSICS
            .iter()
            .map(|f| col(CAL, &format!("intrinsic.{f}"))),
    );
    req.extend([
        col(CAL, "extrinsic.transform"),
        col(CAL, "width"),
        col(CAL, "height"),
    ]);
    let req_ref: Vec<&str> = req.iter().map(String::as_str).collect();
    let cal = Component::read(&cal_path, &req_ref, &[], rules.batch_rows)?;
    cal.check_segment(segment)?;
    let cams = cal.cameras(CAM)?;
    let intr: Vec<Vec<f64>> = INTRINSICS
        .iter()
        .map(|f| cal.f64s_required(&col(CAL, &format!("intrinsic.{f}"))))
        .collect::<Result<_>>()?;
    let ext = cal.transforms(&col(CAL, "extrinsic.transform"))?;
    let widths = cal.i64s_required(&col(CAL, "width"))?;
    let heights = cal.i64s_required(&col(CAL, "height"))?;
    let mut calib: BTreeMap<u8, Calibration> = BTreeMap::new();
    for (i, &cam) in cams.iter().enumerate() {
        let extrinsic = isometry_from_row_major(&ext[i], tol)
            .map_err(|e| row_err(&cal_path, i, format!("extrinsic: {e}")))?;
        let dim = |v: i64, what: &str| {
            u32::try_from(v)
                .ok()
                .filter(|&d| d > 0)
                .ok_or_else(|| row_err(&cal_path, i, format!("{what} is {v}")))
        };
        let mut intrinsic = [0.0; 9];
        for (k, slot) in intrinsic.iter_mut().enumerate() {
            *slot = intr[k][i];
        }
        if intrinsic[0] <= 0.0 || intrinsic[1] <= 0.0 {
            return Err(row_err(
                &cal_path,
                i,
                format!(
                    "focal lengths must be positive, got {} and {}",
                    intrinsic[0], intrinsic[1]
                ),
            ));
        }
        let c = Calibration {
            intrinsic,
            extrinsic,
            width: dim(widths[i], "width")?,
            height: dim(heights[i], "height")?,
        };
        if calib.insert(cam, c).is_some() {
            return Err(row_err(
                &cal_path,
                i,
                format!("camera {} is calibrated twice", camera_name(cam)),
            ));
        }
    }
    Ok(calib)
}

/// Camera images (without the JPEG column: the store references the bytes, never copies
/// them, and the column is checked a few rows at a time), sorted by frame and camera.
fn camera_rows(
    root: &Path,
    segment: &str,
    rules: &WaymoRules,
    frames: &Frames,
    calib: &BTreeMap<u8, Calibration>,
) -> Result<Vec<CameraRow>> {
    let tol = rules.rotation_tolerance;
    let img_path = component_path(root, "camera_image", segment);
    let img_pose = col(IMG, "pose.transform");
    let img_time = col(IMG, "pose_timestamp");
    let img = Component::read(
        &img_path,
        &[SEG, TS, CAM, &img_pose],
        &[&img_time],
        rules.batch_rows,
    )?;
    img.check_segment(segment)?;
    let (its, icam) = (img.i64s_required(TS)?, img.cameras(CAM)?);
    let ipose = img.transforms(&img_pose)?;
    let itime = img.f64s_or_null(&img_time)?;
    if rules.check_images {
        let image_col = col(IMG, "image");
        if let Some(&r) = empty_image_rows(&img_path, &image_col, rules.image_batch_rows)?.first() {
            return Err(row_err(
                &img_path,
                r,
                format!("`{image_col}` is null or empty"),
            ));
        }
    }
    let image_rel = format!("camera_image/{segment}.parquet");
    let mut seen_images = HashSet::new();
    let mut cameras = Vec::with_capacity(img.rows());
    for i in 0..img.rows() {
        let fi = frames.at(&img_path, i, its[i])?;
        let cal = calib.get(&icam[i]).ok_or_else(|| {
            row_err(
                &img_path,
                i,
                format!(
                    "camera {} has no camera_calibration row",
                    camera_name(icam[i])
                ),
            )
        })?;
        if !seen_images.insert((its[i], icam[i])) {
            return Err(row_err(
                &img_path,
                i,
                format!(
                    "duplicate image of camera {} at {}",
                    camera_name(icam[i]),
                    its[i]
                ),
            ));
        }
        let ego = isometry_from_row_major(&ipose[i], tol)
            .map_err(|e| row_err(&img_path, i, format!("`{img_pose}`: {e}")))?;
        let t_us = match itime[i] {
            Some(s) if s.is_finite() => (s * 1e6).round() as i64,
            Some(s) => return Err(row_err(&img_path, i, format!("`{img_time}` is {s}"))),
            None => its[i],
        };
        let k = &cal.intrinsic;
        let name = camera_name(icam[i]);
        cameras.push(CameraRow {
            scene_id: segment.to_string(),
            frame_idx: fi as u32,
            camera: name.to_string(),
            camera_frame_id: format!("{segment}/{}/{name}", its[i]),
            timestamp_us: t_us,
            is_keyframe: true,
            image_path: image_rel.clone(),
            width: cal.width,
            height: cal.height,
            fx: k[0],
            fy: k[1],
            cx: k[2],
            cy: k[3],
            cam: pose_of(&store_camera_pose(&cal.extrinsic)),
            ego: pose_of(&ego),
            distortion: Some([k[4], k[5], k[6], k[7], k[8]]),
        });
    }
    cameras.sort_by(|a, b| (a.frame_idx, &a.camera).cmp(&(b.frame_idx, &b.camera)));
    Ok(cameras)
}

/// 3-D boxes, in the frame's vehicle frame → the segment's world frame, sorted by frame and
/// track; label types the taxonomy does not know are counted in `stats`.
fn object_rows(
    root: &Path,
    segment: &str,
    taxonomy: &Taxonomy,
    rules: &WaymoRules,
    frames: &Frames,
    stats: &mut SegmentStats,
) -> Result<Vec<ObjectRow>> {
    let lb_path = component_path(root, "lidar_box", segment);
    let fields = [
        "center.x", "center.y", "center.z", "size.x", "size.y", "size.z", "heading",
    ];
    let mut req: Vec<String> = vec![SEG.into(), TS.into(), LASER_ID.into(), col(LB, "type")];
    req.extend(fields.iter().map(|f| col(LB, &format!("box.{f}"))));
    let req_ref: Vec<&str> = req.iter().map(String::as_str).collect();
    let speed_cols = [col(LB, "speed.x"), col(LB, "speed.y"), col(LB, "speed.z")];
    let npts = col(LB, "num_lidar_points_in_box");
    let opt: Vec<&str> = speed_cols
        .iter()
        .map(String::as_str)
        .chain([npts.as_str()])
        .collect();
    let lb = Component::read(&lb_path, &req_ref, &opt, rules.batch_rows)?;
    lb.check_segment(segment)?;
    let (lts, ids) = (lb.i64s_required(TS)?, lb.strings_required(LASER_ID)?);
    let types = lb.i64s_required(&col(LB, "type"))?;
    let b = box_cols(&lb, &col(LB, "box"), &fields)?;
    let (sx, sy) = (
        lb.f64s_or_null(&speed_cols[0])?,
        lb.f64s_or_null(&speed_cols[1])?,
    );
    let points: Vec<Option<f64>> = lb.f64s_or_null(&npts)?;
    let mut seen_boxes = HashSet::new();
    let mut objects = Vec::with_capacity(lb.rows());
    for i in 0..lb.rows() {
        let fi = frames.at(&lb_path, i, lts[i])?;
        if !seen_boxes.insert((lts[i], ids[i].clone())) {
            return Err(row_err(
                &lb_path,
                i,
                format!("duplicate box {} at {}", ids[i], lts[i]),
            ));
        }
        let (l, w, h) = (b[3][i], b[4][i], b[5][i]);
        if !(l > 0.0 && w > 0.0 && h > 0.0) {
            return Err(row_err(
                &lb_path,
                i,
                format!("box size {l} × {w} × {h} is not positive"),
            ));
        }
        let pose = &frames.pose[fi];
        let c = pose * Point3::new(b[0][i], b[1][i], b[2][i]);
        // Upright in the vehicle frame; tilted with the vehicle in the world frame.
        let rot = pose.rotation * UnitQuaternion::from_axis_angle(&Vector3::z_axis(), b[6][i]);
        let q = wxyz(&rot);
        let yaw = wrap_pi(yaw_of(q));
        let v = match (sx[i], sy[i]) {
            (Some(x), Some(y)) if x.is_finite() && y.is_finite() => {
                let g = pose.rotation * Vector3::new(x, y, 0.0);
                (Some(g.x), Some(g.y))
            }
            _ => (None, None),
        };
        let tname = type_name(types[i]);
        let (class, known) = taxonomy.waymo_class(&tname);
        if !known {
            *stats.unknown_types.entry(tname.clone()).or_default() += 1;
        }
        let n = points[i].unwrap_or(0.0);
        objects.push(ObjectRow {
            scene_id: segment.to_string(),
            frame_idx: fi as u32,
            timestamp_us: lts[i],
            track_id: ids[i].clone(),
            annotation_id: format!("{segment}/{}/{}", lts[i], ids[i]),
            category: tname,
            class,
            center: [c.x, c.y, c.z],
            size_wlh: [w, l, h],
            q,
            yaw,
            vx: v.0,
            vy: v.1,
            num_lidar_pts: if n.is_finite() && n >= 0.0 {
                n as u32
            } else {
                0
            },
            num_radar_pts: 0,
            visibility_bin: None,
            attributes: Vec::new(),
        });
    }
    objects.sort_by(|a, b| (a.frame_idx, &a.track_id).cmp(&(b.frame_idx, &b.track_id)));
    Ok(objects)
}

/// Label components the store has no table for: checked (keys, frames, finite boxes) and
/// counted, so a broken one still rejects the segment.
fn check_unstored_labels(
    root: &Path,
    segment: &str,
    rules: &WaymoRules,
    frames: &Frames,
    calib: &BTreeMap<u8, Calibration>,
    stats: &mut SegmentStats,
) -> Result<()> {
    // The two 2D box components: checked the same way, counted apart.
    let fields = ["box.center.x", "box.center.y", "box.size.x", "box.size.y"];
    type Count = fn(&mut SegmentStats) -> &mut u64;
    let boxes_2d: [(&str, &str, &str, Count); 2] = [
        ("projected_lidar_box", PB, LASER_ID, |s| {
            &mut s.projected_boxes
        }),
        ("camera_box", CB, CAMERA_OBJECT_ID, |s| &mut s.camera_boxes),
    ];
    for (component, prefix, id, count) in boxes_2d {
        let named: Vec<String> = fields.iter().map(|f| col(prefix, f)).collect();
        let mut required = vec![SEG, TS, CAM, id];
        required.extend(named.iter().map(String::as_str));
        if let Some(c) = read_optional(root, component, segment, &required, &[], rules, stats)? {
            check_label_rows(&c, &frames.of, calib, prefix, &fields)?;
            *count(stats) = c.rows() as u64;
        }
    }
    let synced_fields = [
        "camera_synced_box.center.x",
        "camera_synced_box.center.y",
        "camera_synced_box.center.z",
    ];
    if let Some(c) = read_optional(
        root,
        "lidar_camera_synced_box",
        segment,
        &[
            SEG,
            TS,
            LASER_ID,
            &col(SB, synced_fields[0]),
            &col(SB, synced_fields[1]),
            &col(SB, synced_fields[2]),
        ],
        &[],
        rules,
        stats,
    )? {
        let t = c.i64s_required(TS)?;
        for (i, t) in t.iter().enumerate() {
            if !frames.of.contains_key(t) {
                return Err(row_err(
                    &c.path,
                    i,
                    format!("frame timestamp {t} has no vehicle_pose row"),
                ));
            }
        }
        box_cols(&c, SB, &synced_fields)?;
        stats.synced_boxes = c.rows() as u64;
    }
    Ok(())
}

/// The segment's location, time of day and weather from the optional `stats` component, for
/// the scene row.
fn read_conditions(
    root: &Path,
    segment: &str,
    rules: &WaymoRules,
    stats: &mut SegmentStats,
) -> Result<(Option<String>, Option<String>, Option<String>)> {
    let stat_cols = ["location", "time_of_day", "weather"].map(|f| col(ST, f));
    let stat_ref: Vec<&str> = stat_cols.iter().map(String::as_str).collect();
    let stats_c = read_optional(root, "stats", segment, &[SEG], &stat_ref, rules, stats)?;
    Ok(match &stats_c {
        Some(c) => (
            c.first_string(&col(ST, "location"))?,
            c.first_string(&col(ST, "time_of_day"))?,
            c.first_string(&col(ST, "weather"))?,
        ),
        None => (None, None, None),
    })
}

fn check_label_rows(
    c: &Component,
    frame_of: &HashMap<i64, usize>,
    calib: &BTreeMap<u8, Calibration>,
    prefix: &str,
    fields: &[&str],
) -> Result<()> {
    let t = c.i64s_required(TS)?;
    let cams = c.cameras(CAM)?;
    for i in 0..c.rows() {
        if !frame_of.contains_key(&t[i]) {
            return Err(row_err(
                &c.path,
                i,
                format!("frame timestamp {} has no vehicle_pose row", t[i]),
            ));
        }
        if !calib.contains_key(&cams[i]) {
            return Err(row_err(
                &c.path,
                i,
                format!(
                    "camera {} has no camera_calibration row",
                    camera_name(cams[i])
                ),
            ));
        }
    }
    box_cols(c, prefix, fields)?;
    Ok(())
}

/// One row of `projected_lidar_box`: the dataset's own 2-D box of a 3-D label in one image.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectedBox {
    pub timestamp_us: i64,
    pub camera: String,
    pub laser_object_id: String,
    /// Centre and size (px).
    pub center: [f64; 2],
    pub size: [f64; 2],
}

/// Reads a segment's `projected_lidar_box` (the free oracle for our projection).
pub fn read_projected_boxes(root: &Path, segment: &str) -> Result<Vec<ProjectedBox>> {
    let path = component_path(root, "projected_lidar_box", segment);
    let f = ["box.center.x", "box.center.y", "box.size.x", "box.size.y"].map(|f| col(PB, f));
    let c = Component::read(
        &path,
        &[TS, CAM, LASER_ID, &f[0], &f[1], &f[2], &f[3]],
        &[],
        4096,
    )?;
    let (t, cams, ids) = (
        c.i64s_required(TS)?,
        c.cameras(CAM)?,
        c.strings_required(LASER_ID)?,
    );
    let v: Vec<Vec<f64>> = f
        .iter()
        .map(|n| c.f64s_required(n))
        .collect::<Result<_>>()?;
    Ok((0..c.rows())
        .map(|i| ProjectedBox {
            timestamp_us: t[i],
            camera: camera_name(cams[i]).to_string(),
            laser_object_id: ids[i].clone(),
            center: [v[0][i], v[1][i]],
            size: [v[2][i], v[3][i]],
        })
        .collect())
}
