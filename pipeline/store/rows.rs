//! Typed rows of the scene store and their conversion to and from Arrow record batches.
//!
//! A scene is small (tens of frames, a few thousand boxes), so stages work on typed rows of
//! one scene at a time; the columnar form is for storage and for other tools.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, ListArray, ListBuilder, RecordBatch,
    StringArray, StringBuilder, UInt32Array, UInt8Array,
};
use arrow::datatypes::{Field, SchemaRef};

use super::schema;
use crate::{Error, Result};

/// A rigid pose: translation (m) and `[w, x, y, z]` rotation.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Pose {
    pub t: [f64; 3],
    pub q: [f64; 4],
}

impl Pose {
    pub fn isometry(&self) -> nalgebra::Isometry3<f64> {
        crate::geometry::pose(self.t, self.q)
    }
}

/// One row of `scenes.arrow`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SceneRow {
    pub scene_id: String,
    pub source: String,
    pub source_scene_id: String,
    pub description: String,
    pub log_id: Option<String>,
    pub location: Option<String>,
    pub vehicle: Option<String>,
    pub date_captured: Option<String>,
    pub num_frames: u32,
    pub num_ego_poses: u32,
    pub num_camera_images: u32,
    pub num_objects: u32,
    pub start_timestamp_us: i64,
    pub end_timestamp_us: i64,
}

/// One row of `frames.arrow`: a keyframe.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FrameRow {
    pub scene_id: String,
    pub frame_idx: u32,
    pub timestamp_us: i64,
    pub is_keyframe: bool,
    pub source_frame_id: String,
    pub ego: Pose,
}

/// One row of `ego_poses.arrow`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EgoPoseRow {
    pub scene_id: String,
    pub timestamp_us: i64,
    pub source_pose_id: String,
    /// The sensor channel whose sample carried this pose, when the source says.
    pub sensor: Option<String>,
    pub ego: Pose,
}

/// One row of `cameras.arrow`: one camera image.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CameraRow {
    pub scene_id: String,
    /// The keyframe the image belongs to (for sweeps: the keyframe that follows it, as in
    /// nuScenes' `sample_token`).
    pub frame_idx: u32,
    pub camera: String,
    pub camera_frame_id: String,
    pub timestamp_us: i64,
    pub is_keyframe: bool,
    /// Relative to the source root.
    pub image_path: String,
    pub width: u32,
    pub height: u32,
    pub fx: f64,
    pub fy: f64,
    pub cx: f64,
    pub cy: f64,
    /// Sensor → ego.
    pub cam: Pose,
    /// Ego → global at the image's own timestamp.
    pub ego: Pose,
    /// Lens distortion `[k1, k2, p1, p2, k3]` (Waymo's model on normalised coordinates), when
    /// the source has one.
    pub distortion: Option<[f64; 5]>,
}

/// One row of `objects.arrow`: one annotated box on one keyframe.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ObjectRow {
    pub scene_id: String,
    pub frame_idx: u32,
    pub timestamp_us: i64,
    pub track_id: String,
    pub annotation_id: String,
    pub category: String,
    pub class: String,
    /// Centre in the global frame (m).
    pub center: [f64; 3],
    /// Width, length, height (m), nuScenes order.
    pub size_wlh: [f64; 3],
    /// Box → global rotation `[w, x, y, z]`.
    pub q: [f64; 4],
    pub yaw: f64,
    pub vx: Option<f64>,
    pub vy: Option<f64>,
    pub num_lidar_pts: u32,
    pub num_radar_pts: u32,
    pub visibility_bin: Option<u8>,
    pub attributes: Vec<String>,
}

/// Conversion between typed rows and record batches.
pub trait StoreRow: Sized {
    fn schema() -> SchemaRef;
    fn to_batch(rows: &[Self]) -> Result<RecordBatch>;
    fn from_batch(batch: &RecordBatch) -> Result<Vec<Self>>;
}

fn arc<A: Array + 'static>(a: A) -> ArrayRef {
    Arc::new(a)
}

fn strs<'a>(it: impl Iterator<Item = &'a str>) -> ArrayRef {
    arc(StringArray::from_iter_values(it))
}

fn opt_strs<'a>(it: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    arc(StringArray::from_iter(it))
}

fn f64s(it: impl Iterator<Item = f64>) -> ArrayRef {
    arc(Float64Array::from_iter_values(it))
}

fn pose_cols<T>(rows: &[T], get: impl Fn(&T) -> &Pose) -> Vec<ArrayRef> {
    let mut cols = Vec::with_capacity(7);
    for k in 0..3 {
        cols.push(f64s(rows.iter().map(|r| get(r).t[k])));
    }
    for k in 0..4 {
        cols.push(f64s(rows.iter().map(|r| get(r).q[k])));
    }
    cols
}

fn batch(schema: SchemaRef, cols: Vec<ArrayRef>) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new(schema, cols)?)
}

/// Typed column access by name, with errors that name the table and column.
struct Cols<'a> {
    table: &'static str,
    batch: &'a RecordBatch,
}

impl<'a> Cols<'a> {
    fn get<A: Array + 'static>(&self, name: &str) -> Result<&'a A> {
        let col = self
            .batch
            .column_by_name(name)
            .ok_or_else(|| Error::Schema {
                table: self.table.into(),
                detail: format!("missing column {name}"),
            })?;
        col.as_any()
            .downcast_ref::<A>()
            .ok_or_else(|| Error::Schema {
                table: self.table.into(),
                detail: format!("column {name} has type {}", col.data_type()),
            })
    }
    fn s(&self, name: &str) -> Result<&'a StringArray> {
        self.get(name)
    }
    fn f(&self, name: &str) -> Result<&'a Float64Array> {
        self.get(name)
    }
    fn u32(&self, name: &str) -> Result<&'a UInt32Array> {
        self.get(name)
    }
    fn i64(&self, name: &str) -> Result<&'a Int64Array> {
        self.get(name)
    }
    fn b(&self, name: &str) -> Result<&'a BooleanArray> {
        self.get(name)
    }
    fn pose(&self, prefix: &str) -> Result<PoseCols<'a>> {
        let c = |s: &str| self.f(&format!("{prefix}_{s}"));
        Ok(PoseCols([
            c("tx")?,
            c("ty")?,
            c("tz")?,
            c("qw")?,
            c("qx")?,
            c("qy")?,
            c("qz")?,
        ]))
    }
}

struct PoseCols<'a>([&'a Float64Array; 7]);

impl PoseCols<'_> {
    fn at(&self, i: usize) -> Pose {
        let v = |k: usize| self.0[k].value(i);
        Pose {
            t: [v(0), v(1), v(2)],
            q: [v(3), v(4), v(5), v(6)],
        }
    }
}

fn opt_str(a: &StringArray, i: usize) -> Option<String> {
    a.is_valid(i).then(|| a.value(i).to_string())
}

fn opt_f64(a: &Float64Array, i: usize) -> Option<f64> {
    a.is_valid(i).then(|| a.value(i))
}

impl StoreRow for SceneRow {
    fn schema() -> SchemaRef {
        schema::scenes()
    }

    fn to_batch(rows: &[Self]) -> Result<RecordBatch> {
        let u = |g: fn(&SceneRow) -> u32| arc(UInt32Array::from_iter_values(rows.iter().map(g)));
        let i = |g: fn(&SceneRow) -> i64| arc(Int64Array::from_iter_values(rows.iter().map(g)));
        batch(
            Self::schema(),
            vec![
                strs(rows.iter().map(|r| r.scene_id.as_str())),
                strs(rows.iter().map(|r| r.source.as_str())),
                strs(rows.iter().map(|r| r.source_scene_id.as_str())),
                strs(rows.iter().map(|r| r.description.as_str())),
                opt_strs(rows.iter().map(|r| r.log_id.as_deref())),
                opt_strs(rows.iter().map(|r| r.location.as_deref())),
                opt_strs(rows.iter().map(|r| r.vehicle.as_deref())),
                opt_strs(rows.iter().map(|r| r.date_captured.as_deref())),
                u(|r| r.num_frames),
                u(|r| r.num_ego_poses),
                u(|r| r.num_camera_images),
                u(|r| r.num_objects),
                i(|r| r.start_timestamp_us),
                i(|r| r.end_timestamp_us),
            ],
        )
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>> {
        let c = Cols {
            table: "scenes",
            batch: b,
        };
        let (id, src, sid, desc) = (
            c.s("scene_id")?,
            c.s("source")?,
            c.s("source_scene_id")?,
            c.s("description")?,
        );
        let (log, loc, veh, date) = (
            c.s("log_id")?,
            c.s("location")?,
            c.s("vehicle")?,
            c.s("date_captured")?,
        );
        let (nf, ne, nc, no) = (
            c.u32("num_frames")?,
            c.u32("num_ego_poses")?,
            c.u32("num_camera_images")?,
            c.u32("num_objects")?,
        );
        let (t0, t1) = (c.i64("start_timestamp_us")?, c.i64("end_timestamp_us")?);
        Ok((0..b.num_rows())
            .map(|i| SceneRow {
                scene_id: id.value(i).into(),
                source: src.value(i).into(),
                source_scene_id: sid.value(i).into(),
                description: desc.value(i).into(),
                log_id: opt_str(log, i),
                location: opt_str(loc, i),
                vehicle: opt_str(veh, i),
                date_captured: opt_str(date, i),
                num_frames: nf.value(i),
                num_ego_poses: ne.value(i),
                num_camera_images: nc.value(i),
                num_objects: no.value(i),
                start_timestamp_us: t0.value(i),
                end_timestamp_us: t1.value(i),
            })
            .collect())
    }
}

impl StoreRow for FrameRow {
    fn schema() -> SchemaRef {
        schema::frames()
    }

    fn to_batch(rows: &[Self]) -> Result<RecordBatch> {
        let mut cols = vec![
            strs(rows.iter().map(|r| r.scene_id.as_str())),
            arc(UInt32Array::from_iter_values(
                rows.iter().map(|r| r.frame_idx),
            )),
            arc(Int64Array::from_iter_values(
                rows.iter().map(|r| r.timestamp_us),
            )),
            arc(BooleanArray::from_iter(
                rows.iter().map(|r| Some(r.is_keyframe)),
            )),
            strs(rows.iter().map(|r| r.source_frame_id.as_str())),
        ];
        cols.extend(pose_cols(rows, |r| &r.ego));
        batch(Self::schema(), cols)
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>> {
        let c = Cols {
            table: "frames",
            batch: b,
        };
        let (id, fi, ts, kf, sf) = (
            c.s("scene_id")?,
            c.u32("frame_idx")?,
            c.i64("timestamp_us")?,
            c.b("is_keyframe")?,
            c.s("source_frame_id")?,
        );
        let ego = c.pose("ego")?;
        Ok((0..b.num_rows())
            .map(|i| FrameRow {
                scene_id: id.value(i).into(),
                frame_idx: fi.value(i),
                timestamp_us: ts.value(i),
                is_keyframe: kf.value(i),
                source_frame_id: sf.value(i).into(),
                ego: ego.at(i),
            })
            .collect())
    }
}

impl StoreRow for EgoPoseRow {
    fn schema() -> SchemaRef {
        schema::ego_poses()
    }

    fn to_batch(rows: &[Self]) -> Result<RecordBatch> {
        let mut cols = vec![
            strs(rows.iter().map(|r| r.scene_id.as_str())),
            arc(Int64Array::from_iter_values(
                rows.iter().map(|r| r.timestamp_us),
            )),
            strs(rows.iter().map(|r| r.source_pose_id.as_str())),
            opt_strs(rows.iter().map(|r| r.sensor.as_deref())),
        ];
        cols.extend(pose_cols(rows, |r| &r.ego));
        batch(Self::schema(), cols)
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>> {
        let c = Cols {
            table: "ego_poses",
            batch: b,
        };
        let (id, ts, sp, se) = (
            c.s("scene_id")?,
            c.i64("timestamp_us")?,
            c.s("source_pose_id")?,
            c.s("sensor")?,
        );
        let ego = c.pose("ego")?;
        Ok((0..b.num_rows())
            .map(|i| EgoPoseRow {
                scene_id: id.value(i).into(),
                timestamp_us: ts.value(i),
                source_pose_id: sp.value(i).into(),
                sensor: opt_str(se, i),
                ego: ego.at(i),
            })
            .collect())
    }
}

impl StoreRow for CameraRow {
    fn schema() -> SchemaRef {
        schema::cameras()
    }

    fn to_batch(rows: &[Self]) -> Result<RecordBatch> {
        let mut cols = vec![
            strs(rows.iter().map(|r| r.scene_id.as_str())),
            arc(UInt32Array::from_iter_values(
                rows.iter().map(|r| r.frame_idx),
            )),
            strs(rows.iter().map(|r| r.camera.as_str())),
            strs(rows.iter().map(|r| r.camera_frame_id.as_str())),
            arc(Int64Array::from_iter_values(
                rows.iter().map(|r| r.timestamp_us),
            )),
            arc(BooleanArray::from_iter(
                rows.iter().map(|r| Some(r.is_keyframe)),
            )),
            strs(rows.iter().map(|r| r.image_path.as_str())),
            arc(UInt32Array::from_iter_values(rows.iter().map(|r| r.width))),
            arc(UInt32Array::from_iter_values(rows.iter().map(|r| r.height))),
            f64s(rows.iter().map(|r| r.fx)),
            f64s(rows.iter().map(|r| r.fy)),
            f64s(rows.iter().map(|r| r.cx)),
            f64s(rows.iter().map(|r| r.cy)),
        ];
        cols.extend(pose_cols(rows, |r| &r.cam));
        cols.extend(pose_cols(rows, |r| &r.ego));
        for k in 0..5 {
            cols.push(arc(Float64Array::from_iter(
                rows.iter().map(|r| r.distortion.map(|d| d[k])),
            )));
        }
        batch(Self::schema(), cols)
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>> {
        let c = Cols {
            table: "cameras",
            batch: b,
        };
        let (id, fi, cam, cfi) = (
            c.s("scene_id")?,
            c.u32("frame_idx")?,
            c.s("camera")?,
            c.s("camera_frame_id")?,
        );
        let (ts, kf, path) = (
            c.i64("timestamp_us")?,
            c.b("is_keyframe")?,
            c.s("image_path")?,
        );
        let (w, h) = (c.u32("width")?, c.u32("height")?);
        let (fx, fy, cx, cy) = (c.f("fx")?, c.f("fy")?, c.f("cx")?, c.f("cy")?);
        let (cp, ep) = (c.pose("cam")?, c.pose("ego")?);
        let dist = schema::DISTORTION_COLUMNS
            .iter()
            .map(|n| c.f(n))
            .collect::<Result<Vec<_>>>()?;
        Ok((0..b.num_rows())
            .map(|i| CameraRow {
                scene_id: id.value(i).into(),
                frame_idx: fi.value(i),
                camera: cam.value(i).into(),
                camera_frame_id: cfi.value(i).into(),
                timestamp_us: ts.value(i),
                is_keyframe: kf.value(i),
                image_path: path.value(i).into(),
                width: w.value(i),
                height: h.value(i),
                fx: fx.value(i),
                fy: fy.value(i),
                cx: cx.value(i),
                cy: cy.value(i),
                cam: cp.at(i),
                ego: ep.at(i),
                distortion: dist.iter().all(|a| a.is_valid(i)).then(|| {
                    let v = |k: usize| dist[k].value(i);
                    [v(0), v(1), v(2), v(3), v(4)]
                }),
            })
            .collect())
    }
}

impl StoreRow for ObjectRow {
    fn schema() -> SchemaRef {
        schema::objects()
    }

    fn to_batch(rows: &[Self]) -> Result<RecordBatch> {
        let mut attrs = ListBuilder::new(StringBuilder::new()).with_field(Arc::new(Field::new(
            "item",
            arrow::datatypes::DataType::Utf8,
            false,
        )));
        for r in rows {
            for a in &r.attributes {
                attrs.values().append_value(a);
            }
            attrs.append(true);
        }
        let attrs: ListArray = attrs.finish();
        let mut cols = vec![
            strs(rows.iter().map(|r| r.scene_id.as_str())),
            arc(UInt32Array::from_iter_values(
                rows.iter().map(|r| r.frame_idx),
            )),
            arc(Int64Array::from_iter_values(
                rows.iter().map(|r| r.timestamp_us),
            )),
            strs(rows.iter().map(|r| r.track_id.as_str())),
            strs(rows.iter().map(|r| r.annotation_id.as_str())),
            strs(rows.iter().map(|r| r.category.as_str())),
            strs(rows.iter().map(|r| r.class.as_str())),
        ];
        for k in 0..3 {
            cols.push(f64s(rows.iter().map(|r| r.center[k])));
        }
        for k in 0..3 {
            cols.push(f64s(rows.iter().map(|r| r.size_wlh[k])));
        }
        for k in 0..4 {
            cols.push(f64s(rows.iter().map(|r| r.q[k])));
        }
        cols.push(f64s(rows.iter().map(|r| r.yaw)));
        cols.push(arc(Float64Array::from_iter(rows.iter().map(|r| r.vx))));
        cols.push(arc(Float64Array::from_iter(rows.iter().map(|r| r.vy))));
        cols.push(arc(UInt32Array::from_iter_values(
            rows.iter().map(|r| r.num_lidar_pts),
        )));
        cols.push(arc(UInt32Array::from_iter_values(
            rows.iter().map(|r| r.num_radar_pts),
        )));
        cols.push(arc(UInt8Array::from_iter(
            rows.iter().map(|r| r.visibility_bin),
        )));
        cols.push(arc(attrs));
        batch(Self::schema(), cols)
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>> {
        let c = Cols {
            table: "objects",
            batch: b,
        };
        let (id, fi, ts) = (
            c.s("scene_id")?,
            c.u32("frame_idx")?,
            c.i64("timestamp_us")?,
        );
        let (tr, an, cat, cls) = (
            c.s("track_id")?,
            c.s("annotation_id")?,
            c.s("category")?,
            c.s("class")?,
        );
        let ctr = [c.f("cx")?, c.f("cy")?, c.f("cz")?];
        let size = [c.f("width")?, c.f("length")?, c.f("height")?];
        let q = [c.f("qw")?, c.f("qx")?, c.f("qy")?, c.f("qz")?];
        let (yaw, vx, vy) = (c.f("yaw")?, c.f("vx")?, c.f("vy")?);
        let (nl, nr) = (c.u32("num_lidar_pts")?, c.u32("num_radar_pts")?);
        let vis: &UInt8Array = c.get("visibility_bin")?;
        let attrs: &ListArray = c.get("attributes")?;
        let mut out = Vec::with_capacity(b.num_rows());
        for i in 0..b.num_rows() {
            let list = attrs.value(i);
            let items =
                list.as_any()
                    .downcast_ref::<StringArray>()
                    .ok_or_else(|| Error::Schema {
                        table: "objects".into(),
                        detail: "attributes is not list<string>".into(),
                    })?;
            out.push(ObjectRow {
                scene_id: id.value(i).into(),
                frame_idx: fi.value(i),
                timestamp_us: ts.value(i),
                track_id: tr.value(i).into(),
                annotation_id: an.value(i).into(),
                category: cat.value(i).into(),
                class: cls.value(i).into(),
                center: ctr.map(|a| a.value(i)),
                size_wlh: size.map(|a| a.value(i)),
                q: q.map(|a| a.value(i)),
                yaw: yaw.value(i),
                vx: opt_f64(vx, i),
                vy: opt_f64(vy, i),
                num_lidar_pts: nl.value(i),
                num_radar_pts: nr.value(i),
                visibility_bin: vis.is_valid(i).then(|| vis.value(i)),
                attributes: items.iter().flatten().map(str::to_string).collect(),
            });
        }
        Ok(out)
    }
}
