//! CARLA ingest, Bench2Drive layout (`docs/formats.md` §3.2): a route folder holds
//! `anno/NNNNN.json.gz` (one per 10 Hz frame) and the six cameras' JPEGs under
//! `camera/rgb_*/NNNNN.jpg`. `--root` is one route folder or any folder above routes (they are
//! found two levels down at most, `<scenario>/<route>/anno`), taken in path order.
//!
//! Per frame: the ego pose from the `ego_vehicle` box (`world2ego`, exact simulator state;
//! the top-level GNSS `x`, `y` are noisy), each camera's intrinsics and `cam2ego`, and the
//! vehicles and walkers as objects (`center`, `extent` × 2, rotation from `world2vehicle` /
//! `world2ped`, because static vehicles carry a wrong `location`/`rotation`). Everything is
//! converted to the right-handed store frame ([`crate::formats::carla`]); the world frame is the town's own.
//! A frame's time is its index over `frame_rate_hz` (Bench2Drive stores no timestamps).
//! A route with a malformed file (named with the JSON path of the bad value), a missing image
//! or a missing ego box is rejected and logged; the others are ingested.

pub(crate) mod anno;

use std::path::{Path, PathBuf};

use nalgebra::Isometry3;
use serde_json::Value;

use crate::geometry::{wrap_pi, wxyz, yaw_of};
use crate::ingest::limits::Kind;
use crate::ingest::source::{Refusal, SceneIds, SceneSource};
use crate::ingest::sources::{CarlaRules, SourcesConfig};
use crate::ingest::waymo::frames::pose_of;
use crate::ingest::IngestSummary;
use crate::store::paths::{Links, Root};
use crate::store::{
    CameraRow, EgoPoseRow, FrameRow, ObjectRow, Pose, SceneData, SceneRow, StoreMeta,
};
use crate::taxonomy::Taxonomy;
use crate::{Error, Result};

/// What to ingest and how.
#[derive(Debug, Clone)]
pub struct Options {
    pub root: PathBuf,
    pub out: PathBuf,
    pub taxonomy: Taxonomy,
    pub config: SourcesConfig,
    /// Whether links under the root are followed out of it.
    pub links: Links,
}

/// The route folders under `root` (itself, or up to two levels down), sorted.
pub(crate) fn routes(root: &Path) -> Result<Vec<PathBuf>> {
    if root.join("anno").is_dir() {
        return Ok(vec![root.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut level = vec![root.to_path_buf()];
    for _ in 0..2 {
        let mut next = Vec::new();
        for d in &level {
            let rd = std::fs::read_dir(d).map_err(|e| Error::io(d, e))?;
            for e in rd.filter_map(|e| e.ok()) {
                let p = e.path();
                if !p.is_dir() {
                    continue;
                }
                if p.join("anno").is_dir() {
                    out.push(p);
                } else {
                    next.push(p);
                }
            }
        }
        level = next;
    }
    out.sort();
    if out.is_empty() {
        return Err(Error::input(
            root,
            "layout",
            "no Bench2Drive route (a folder with anno/) here or two levels down",
        ));
    }
    Ok(out)
}

/// Ingests every route under `opts.root`.
pub fn run(opts: &Options) -> Result<IngestSummary> {
    crate::ingest::ingest(&Source(opts), &opts.out, |summary, unknown| {
        for k in unknown {
            *summary.unknown_categories.entry(k).or_default() += 1;
        }
    })
}

/// A folder of routes; a unit is a route folder.
struct Source<'a>(&'a Options);

impl SceneSource for Source<'_> {
    type Unit = PathBuf;
    /// The unknown category names met.
    type Stats = Vec<String>;

    fn label(&self) -> &'static str {
        "ingest carla routes"
    }

    fn root(&self) -> &Path {
        &self.0.root
    }

    fn meta(&self) -> StoreMeta {
        StoreMeta::new("carla", "bench2drive", &self.0.root.to_string_lossy())
            .with_links(self.0.links)
    }

    fn units(&self) -> Result<Vec<PathBuf>> {
        routes(&self.0.root)
    }

    fn admit(&self, route: &PathBuf, ids: &mut SceneIds) -> std::result::Result<String, Refusal> {
        crate::ingest::utf8_name(route)
            .and_then(|n| ids.admit(&n, route).map(|()| n))
            .map_err(|why| {
                let shown = route.to_string_lossy().into_owned();
                (shown, Error::input(route, "route", why))
            })
    }

    fn assemble(&self, route: &PathBuf, name: &str) -> Result<(SceneData, Vec<String>)> {
        let o = self.0;
        let dataset = Root::new(&o.root, o.links);
        assemble(&dataset, &o.root, route, name, &o.taxonomy, &o.config.carla)
    }

    fn limit_file(&self, route: &PathBuf, _: Kind) -> PathBuf {
        route.clone()
    }
}

/// The frame files of a route, `(index, path)` in index order.
fn frame_files(route: &Path) -> Result<Vec<(u32, PathBuf)>> {
    let dir = route.join("anno");
    let mut v = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))? {
        let p = e.map_err(|e| Error::io(&dir, e))?.path();
        let Some(name) = p.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        let Some(stem) = name.strip_suffix(".json.gz") else {
            continue;
        };
        let idx: u32 = stem
            .parse()
            .map_err(|_| Error::input(&p, "file name", "expected NNNNN.json.gz"))?;
        v.push((idx, p));
    }
    v.sort();
    if v.is_empty() {
        return Err(Error::input(
            &dir,
            "files",
            "no NNNNN.json.gz annotation files",
        ));
    }
    Ok(v)
}

/// Assembles one route of the dataset `dataset` (whose folder is `root`); returns the scene and
/// the unknown category names met.
pub(crate) fn assemble(
    dataset: &Root,
    root: &Path,
    route: &Path,
    name: &str,
    taxonomy: &Taxonomy,
    rules: &CarlaRules,
) -> Result<(SceneData, Vec<String>)> {
    let rel = route.strip_prefix(root).unwrap_or(Path::new(""));
    let ctx = RouteCtx {
        root,
        rel,
        dataset,
        name,
        taxonomy,
        rules,
    };
    let mut data = SceneData {
        scene: SceneRow {
            scene_id: name.to_string(),
            source: "carla".into(),
            source_scene_id: rel.to_string_lossy().into_owned(),
            description: format!("Bench2Drive route {}", rel.display()),
            location: name.split('_').next().map(str::to_string),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut unknown = Vec::new();
    for (fi, (idx, path)) in frame_files(route)?.into_iter().enumerate() {
        ctx.frame(fi as u32, idx, &path, &mut data, &mut unknown)?;
    }
    for w in data.frames.windows(2) {
        if w[1].timestamp_us <= w[0].timestamp_us {
            return Err(Error::input(
                route.join("anno"),
                &w[1].source_frame_id,
                "frame times are not increasing (check frame_rate_hz)",
            ));
        }
    }
    data.update_counts();
    Ok((data, unknown))
}

/// What every frame of one route shares while the route is assembled.
struct RouteCtx<'r> {
    root: &'r Path,
    /// The route folder relative to `root`: image paths are stored relative to the root.
    rel: &'r Path,
    dataset: &'r Root,
    name: &'r str,
    taxonomy: &'r Taxonomy,
    rules: &'r CarlaRules,
}

/// One annotation file being read and the frame it becomes.
struct FrameAnno<'f> {
    a: &'f anno::Anno<'f>,
    /// The file's number (`NNNNN`), which names its images and rows.
    idx: u32,
    /// The frame index within the route.
    fi: u32,
    timestamp_us: i64,
}

impl RouteCtx<'_> {
    /// Reads frame file `path` and appends its frame, ego pose, camera and object rows to
    /// `data`; unknown category names go to `unknown`.
    fn frame(
        &self,
        fi: u32,
        idx: u32,
        path: &Path,
        data: &mut SceneData,
        unknown: &mut Vec<String>,
    ) -> Result<()> {
        let (name, tol) = (self.name, self.rules.rotation_tolerance);
        self.dataset
            .holds(path)
            .map_err(|why| Error::input(path, "file", why))?;
        let a = anno::read(path)?;
        let ts = (f64::from(idx) * 1e6 / self.rules.frame_rate_hz).round() as i64;
        let boxes = a
            .get(&a.root, "", "bounding_boxes")?
            .as_array()
            .ok_or_else(|| a.err("/bounding_boxes", "expected an array"))?;
        // The ego.
        let (ei, ego_box) = boxes
            .iter()
            .enumerate()
            .find(|(_, b)| b.get("class").and_then(Value::as_str) == Some("ego_vehicle"))
            .ok_or_else(|| a.err("/bounding_boxes", "no box of class ego_vehicle"))?;
        let at = format!("/bounding_boxes/{ei}");
        let ego = box_pose(&a, ego_box, &at, "world2ego", tol)?;
        let ego_pose = pose_of(&ego);
        data.frames.push(FrameRow {
            scene_id: name.to_string(),
            frame_idx: fi,
            timestamp_us: ts,
            is_keyframe: true,
            source_frame_id: format!("{idx:05}"),
            ego: ego_pose,
        });
        data.ego_poses.push(EgoPoseRow {
            scene_id: name.to_string(),
            timestamp_us: ts,
            source_pose_id: format!("{idx:05}"),
            sensor: None,
            ego: ego_pose,
        });
        let f = FrameAnno {
            a: &a,
            idx,
            fi,
            timestamp_us: ts,
        };
        self.cameras(&f, ego_pose, &mut data.cameras)?;
        self.objects(&f, boxes, &mut data.objects, unknown)
    }

    /// Cameras: one row per configured camera, with checked intrinsics, image size and image
    /// file.
    fn cameras(&self, f: &FrameAnno<'_>, ego_pose: Pose, out: &mut Vec<CameraRow>) -> Result<()> {
        let (a, idx, name, tol) = (f.a, f.idx, self.name, self.rules.rotation_tolerance);
        let (root, rules) = (self.root, self.rules);
        let sensors = a.get(&a.root, "", "sensors")?;
        for (cam, folder) in rules.cameras.iter().zip(&rules.image_folders) {
            let at = format!("/sensors/{cam}");
            let s = a.get(sensors, "/sensors", cam)?;
            let k = a.mat::<3>(a.get(s, &at, "intrinsic")?, &format!("{at}/intrinsic"))?;
            let cam2ego = a.mat4(a.get(s, &at, "cam2ego")?, &format!("{at}/cam2ego"))?;
            let cam_iso = crate::formats::carla::isometry_rh(&cam2ego, tol)
                .map_err(|e| a.err(&format!("{at}/cam2ego"), e))?;
            let cam_cv = cam_iso
                * Isometry3::from_parts(
                    nalgebra::Translation3::identity(),
                    crate::formats::carla::opencv_in_actor(),
                );
            let size = |key: &str| -> Result<u32> {
                let v = a.num(a.get(s, &at, key)?, &format!("{at}/{key}"))?;
                if v >= 1.0 && v.fract() == 0.0 && v <= f64::from(u32::MAX) {
                    Ok(v as u32)
                } else {
                    Err(a.err(
                        &format!("{at}/{key}"),
                        format!("expected a positive integer, got {v}"),
                    ))
                }
            };
            let (w, h) = (size("image_size_x")?, size("image_size_y")?);
            if !(k[0][0] > 0.0 && k[1][1] > 0.0) {
                return Err(a.err(&format!("{at}/intrinsic"), "focal lengths must be positive"));
            }
            let image = self
                .rel
                .join("camera")
                .join(folder)
                .join(format!("{idx:05}.jpg"));
            if let Err(why) = self.dataset.inside(&image.to_string_lossy()) {
                return Err(Error::input(
                    root.join(&image),
                    format!("{}{at}", a.path.display()),
                    why,
                ));
            }
            if rules.check_images && !root.join(&image).is_file() {
                return Err(Error::input(
                    root.join(&image),
                    format!("{}{at}", a.path.display()),
                    "missing camera image",
                ));
            }
            out.push(CameraRow {
                scene_id: name.to_string(),
                frame_idx: f.fi,
                camera: cam.clone(),
                camera_frame_id: format!("{name}/{idx:05}/{cam}"),
                timestamp_us: f.timestamp_us,
                is_keyframe: true,
                image_path: image.to_string_lossy().into_owned(),
                width: w,
                height: h,
                fx: k[0][0],
                fy: k[1][1],
                cx: k[0][2],
                cy: k[1][2],
                cam: pose_of(&cam_cv),
                ego: ego_pose,
                distortion: None,
            });
        }
        Ok(())
    }

    /// Objects: the boxes of the configured classes, in the store frame; unknown category
    /// names go to `unknown`.
    fn objects(
        &self,
        f: &FrameAnno<'_>,
        boxes: &[Value],
        out: &mut Vec<ObjectRow>,
        unknown: &mut Vec<String>,
    ) -> Result<()> {
        let (a, idx, name, tol) = (f.a, f.idx, self.name, self.rules.rotation_tolerance);
        for (bi, b) in boxes.iter().enumerate() {
            let at = format!("/bounding_boxes/{bi}");
            let class = a.str(a.get(b, &at, "class")?, &format!("{at}/class"))?;
            if !self.rules.object_classes.iter().any(|c| c == class) {
                continue;
            }
            let id = a.id(a.get(b, &at, "id")?, &format!("{at}/id"))?;
            let type_id = match b.get("type_id") {
                Some(v) => a.str(v, &format!("{at}/type_id"))?.to_string(),
                None => class.to_string(),
            };
            let base_type = b.get("base_type").and_then(Value::as_str);
            let (cls, known) = self.taxonomy.carla_class(&type_id, base_type, class);
            if !known {
                unknown.push(type_id.clone());
            }
            let center = point_rh(a, b, &at, "center")?;
            let ext = a.vec3(a.get(b, &at, "extent")?, &format!("{at}/extent"))?;
            if ext.iter().any(|&e| e <= 0.0) {
                return Err(a.err(
                    &format!("{at}/extent"),
                    format!("half sizes must be positive, got {ext:?}"),
                ));
            }
            let inv_key = if class == "walker" {
                "world2ped"
            } else {
                "world2vehicle"
            };
            let pose = box_pose(a, b, &at, inv_key, tol)?;
            let q = wxyz(&pose.rotation);
            let yaw = wrap_pi(yaw_of(q));
            let speed = match b.get("speed") {
                Some(v) if !v.is_null() => Some(a.num(v, &format!("{at}/speed"))?),
                _ => None,
            };
            // Walkers' speed is always 0 in Bench2Drive (a documented bug): unknown, not 0.
            let (vx, vy) = match speed {
                Some(s) if class != "walker" => (Some(s * yaw.cos()), Some(s * yaw.sin())),
                _ => (None, None),
            };
            let points = match b.get("num_points") {
                Some(v) if !v.is_null() => a.num(v, &format!("{at}/num_points"))?.max(0.0) as u32,
                _ => 0,
            };
            let mut attributes = Vec::new();
            if let Some(s) = b.get("state").and_then(Value::as_str) {
                attributes.push(format!("carla.state.{s}"));
            }
            out.push(ObjectRow {
                scene_id: name.to_string(),
                frame_idx: f.fi,
                timestamp_us: f.timestamp_us,
                track_id: id.clone(),
                annotation_id: format!("{name}/{idx:05}/{id}"),
                category: type_id,
                class: cls,
                center,
                size_wlh: [2.0 * ext[1], 2.0 * ext[0], 2.0 * ext[2]],
                q,
                yaw,
                vx,
                vy,
                num_lidar_pts: points,
                num_radar_pts: 0,
                visibility_bin: None,
                attributes,
            });
        }
        Ok(())
    }
}

fn point_rh(a: &anno::Anno<'_>, b: &Value, at: &str, key: &str) -> Result<[f64; 3]> {
    let p = a.vec3(a.get(b, at, key)?, &format!("{at}/{key}"))?;
    Ok(crate::formats::carla::point_rh(p))
}

/// A box's right-handed pose: from the inverse of its `world2*` matrix when present (exact
/// even for static vehicles), else from `location` and `rotation`; the translation is
/// `location`'s (the actor origin), and the caller takes the box centre from `center`.
fn box_pose(
    a: &anno::Anno<'_>,
    b: &Value,
    at: &str,
    inv_key: &str,
    tol: f64,
) -> Result<Isometry3<f64>> {
    let m = match b.get(inv_key) {
        Some(v) => {
            let w2 = a.mat4(v, &format!("{at}/{inv_key}"))?;
            w2.try_inverse()
                .ok_or_else(|| a.err(&format!("{at}/{inv_key}"), "singular matrix"))?
        }
        None => {
            let loc = a.vec3(a.get(b, at, "location")?, &format!("{at}/location"))?;
            let rot = a.vec3(a.get(b, at, "rotation")?, &format!("{at}/rotation"))?;
            crate::formats::carla::carla_matrix(loc, rot)
        }
    };
    let key = if b.get(inv_key).is_some() {
        inv_key
    } else {
        "rotation"
    };
    crate::formats::carla::isometry_rh(&m, tol).map_err(|e| a.err(&format!("{at}/{key}"), e))
}
