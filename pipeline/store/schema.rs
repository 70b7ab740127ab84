//! Arrow schemas of the scene store, and their JSON form in `schemas/`.
//!
//! The Rust definitions here are what the writers use; `schemas/scene_store/<table>.json` is the
//! published form that users and other tools read. A test keeps the two identical and checks
//! every written file against the JSON.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use serde_json::{json, Value};

use crate::{Error, Result};

/// The tables of a scene store, in the order scenes are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    Scenes,
    Frames,
    EgoPoses,
    Cameras,
    Objects,
}

impl Table {
    pub const ALL: [Table; 5] = [
        Table::Scenes,
        Table::Frames,
        Table::EgoPoses,
        Table::Cameras,
        Table::Objects,
    ];

    /// The table's name (file stem and schema file stem).
    pub fn name(self) -> &'static str {
        match self {
            Table::Scenes => "scenes",
            Table::Frames => "frames",
            Table::EgoPoses => "ego_poses",
            Table::Cameras => "cameras",
            Table::Objects => "objects",
        }
    }

    /// The file name inside a store folder.
    pub fn file_name(self) -> String {
        format!("{}.arrow", self.name())
    }

    pub fn schema(self) -> SchemaRef {
        match self {
            Table::Scenes => scenes(),
            Table::Frames => frames(),
            Table::EgoPoses => ego_poses(),
            Table::Cameras => cameras(),
            Table::Objects => objects(),
        }
    }
}

fn f(name: &str, dt: DataType, nullable: bool) -> Field {
    Field::new(name, dt, nullable)
}

fn utf8(name: &str) -> Field {
    f(name, DataType::Utf8, false)
}

fn f64c(name: &str) -> Field {
    f(name, DataType::Float64, false)
}

/// The seven pose columns `{p}_tx, {p}_ty, {p}_tz, {p}_qw, {p}_qx, {p}_qy, {p}_qz`.
pub(crate) fn pose_fields(prefix: &str) -> Vec<Field> {
    ["tx", "ty", "tz", "qw", "qx", "qy", "qz"]
        .iter()
        .map(|c| f64c(&format!("{prefix}_{c}")))
        .collect()
}

/// A `list<utf8>` column whose items are never null.
pub(crate) fn list_utf8(name: &str) -> Field {
    f(
        name,
        DataType::List(Arc::new(Field::new("item", DataType::Utf8, false))),
        false,
    )
}

pub(crate) fn scenes() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("scene_id"),
        utf8("source"),
        utf8("source_scene_id"),
        utf8("description"),
        f("log_id", DataType::Utf8, true),
        f("location", DataType::Utf8, true),
        f("vehicle", DataType::Utf8, true),
        f("date_captured", DataType::Utf8, true),
        f("num_frames", DataType::UInt32, false),
        f("num_ego_poses", DataType::UInt32, false),
        f("num_camera_images", DataType::UInt32, false),
        f("num_objects", DataType::UInt32, false),
        f("start_timestamp_us", DataType::Int64, false),
        f("end_timestamp_us", DataType::Int64, false),
    ]))
}

pub(crate) fn frames() -> SchemaRef {
    let mut v = vec![
        utf8("scene_id"),
        f("frame_idx", DataType::UInt32, false),
        f("timestamp_us", DataType::Int64, false),
        f("is_keyframe", DataType::Boolean, false),
        utf8("source_frame_id"),
    ];
    v.extend(pose_fields("ego"));
    Arc::new(Schema::new(v))
}

pub(crate) fn ego_poses() -> SchemaRef {
    let mut v = vec![
        utf8("scene_id"),
        f("timestamp_us", DataType::Int64, false),
        utf8("source_pose_id"),
        f("sensor", DataType::Utf8, true),
    ];
    v.extend(pose_fields("ego"));
    Arc::new(Schema::new(v))
}

pub(crate) fn cameras() -> SchemaRef {
    let mut v = vec![
        utf8("scene_id"),
        f("frame_idx", DataType::UInt32, false),
        utf8("camera"),
        utf8("camera_frame_id"),
        f("timestamp_us", DataType::Int64, false),
        f("is_keyframe", DataType::Boolean, false),
        utf8("image_path"),
        f("width", DataType::UInt32, false),
        f("height", DataType::UInt32, false),
        f64c("fx"),
        f64c("fy"),
        f64c("cx"),
        f64c("cy"),
    ];
    v.extend(pose_fields("cam"));
    v.extend(pose_fields("ego"));
    // Lens distortion (OpenCV/Waymo k1, k2, p1, p2, k3 on normalised coordinates); null for
    // pinhole sources such as nuScenes and CARLA.
    v.extend(
        DISTORTION_COLUMNS
            .iter()
            .map(|c| f(c, DataType::Float64, true)),
    );
    Arc::new(Schema::new(v))
}

/// The nullable distortion columns appended to `cameras`, in coefficient order.
pub(crate) const DISTORTION_COLUMNS: [&str; 5] =
    ["dist_k1", "dist_k2", "dist_p1", "dist_p2", "dist_k3"];

pub(crate) fn objects() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("scene_id"),
        f("frame_idx", DataType::UInt32, false),
        f("timestamp_us", DataType::Int64, false),
        utf8("track_id"),
        utf8("annotation_id"),
        utf8("category"),
        utf8("class"),
        f64c("cx"),
        f64c("cy"),
        f64c("cz"),
        f64c("width"),
        f64c("length"),
        f64c("height"),
        f64c("qw"),
        f64c("qx"),
        f64c("qy"),
        f64c("qz"),
        f64c("yaw"),
        f("vx", DataType::Float64, true),
        f("vy", DataType::Float64, true),
        f("num_lidar_pts", DataType::UInt32, false),
        f("num_radar_pts", DataType::UInt32, false),
        f("visibility_bin", DataType::UInt8, true),
        list_utf8("attributes"),
    ]))
}

/// The name a type has in `schemas/*.json` (pyarrow's spelling where one exists).
pub(crate) fn type_name(dt: &DataType) -> String {
    match dt {
        DataType::Boolean => "bool".into(),
        DataType::Int8 => "int8".into(),
        DataType::Int16 => "int16".into(),
        DataType::Int32 => "int32".into(),
        DataType::Int64 => "int64".into(),
        DataType::UInt8 => "uint8".into(),
        DataType::UInt16 => "uint16".into(),
        DataType::UInt32 => "uint32".into(),
        DataType::UInt64 => "uint64".into(),
        DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::Utf8 => "string".into(),
        DataType::LargeUtf8 => "large_string".into(),
        DataType::Binary => "binary".into(),
        DataType::List(item) => format!("list<{}>", field_type(item)),
        DataType::FixedSizeList(item, n) => format!("fixed_size_list<{}>[{n}]", field_type(item)),
        DataType::Struct(fields) => format!(
            "struct<{}>",
            fields
                .iter()
                .map(|f| format!("{}: {}", f.name(), field_type(f)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => format!("{other:?}"),
    }
}

fn field_type(f: &Field) -> String {
    if f.is_nullable() {
        type_name(f.data_type())
    } else {
        format!("{} not null", type_name(f.data_type()))
    }
}

/// The JSON form of a schema: `{"table": …, "fields": [{"name", "type", "nullable"}]}`.
pub fn schema_json(table: &str, schema: &Schema) -> Value {
    let fields: Vec<Value> = schema
        .fields()
        .iter()
        .map(|f| json!({"name": f.name(), "type": type_name(f.data_type()), "nullable": f.is_nullable()}))
        .collect();
    json!({ "table": table, "fields": fields })
}

/// Fails unless `actual` has exactly the columns, types and nullability of `expected`.
pub(crate) fn check(table: &str, actual: &Schema, expected: &Schema) -> Result<()> {
    let a = schema_json(table, actual);
    let e = schema_json(table, expected);
    if a == e {
        return Ok(());
    }
    let describe = |v: &Value| {
        v["fields"]
            .as_array()
            .map(|fs| {
                fs.iter()
                    .map(|f| {
                        format!(
                            "{}:{}{}",
                            f["name"],
                            f["type"],
                            if f["nullable"] == true { "?" } else { "" }
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    Err(Error::Schema {
        table: table.to_string(),
        detail: format!(
            "expected [{}], found [{}] (written by another drivegen version? re-create it, \
             e.g. with `drivegen ingest` for a scene store)",
            describe(&e),
            describe(&a)
        ),
    })
}
