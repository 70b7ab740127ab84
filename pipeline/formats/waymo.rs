//! Reading Waymo v2 component files: one Parquet file per segment per component, every column
//! a top-level field whose name holds dots and brackets (`[CameraImageComponent].pose.transform`).
//!
//! Readers decode by data type, not by the documented schema, because real files disagree with
//! it (`docs/formats.md` §2.5): transforms come as `fixed_size_list<double|float>[16]` or plain
//! lists, camera names as int8 (or any integer), string or dictionary, scalars as double or float.
//! Every error names the file and the row.

use std::path::{Path, PathBuf};

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::compute::{cast, concat_batches};
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatchReader;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use crate::{Error, Result};

// Column names of the v2 components: `key.*` columns and one prefix per component, shared by
// the ingest and by the image reader (images live in `camera_image` files).
pub(crate) const SEG: &str = "key.segment_context_name";
pub(crate) const TS: &str = "key.frame_timestamp_micros";
pub(crate) const CAM: &str = "key.camera_name";
pub(crate) const LASER_ID: &str = "key.laser_object_id";
pub(crate) const CAMERA_OBJECT_ID: &str = "key.camera_object_id";

pub(crate) const POSE: &str = "[VehiclePoseComponent].world_from_vehicle.transform";

pub(crate) const CAL: &str = "[CameraCalibrationComponent]";
pub(crate) const IMG: &str = "[CameraImageComponent]";
pub(crate) const LB: &str = "[LiDARBoxComponent]";
pub(crate) const SB: &str = "[LiDARCameraSyncedBoxComponent]";
pub(crate) const PB: &str = "[ProjectedLiDARBoxComponent]";
pub(crate) const CB: &str = "[CameraBoxComponent]";
pub(crate) const ST: &str = "[StatsComponent]";

/// An isometry as the row-major 4×4 the v2 transform columns hold.
pub(crate) fn row_major(iso: &nalgebra::Isometry3<f64>) -> [f64; 16] {
    let h = iso.to_homogeneous();
    std::array::from_fn(|k| h[(k / 4, k % 4)])
}

/// The v2 camera names (`CameraName`); 6–8 are the v1 rear cameras, unused in perception.
pub(crate) const CAMERA_NAMES: [&str; 9] = [
    "UNKNOWN",
    "FRONT",
    "FRONT_LEFT",
    "FRONT_RIGHT",
    "SIDE_LEFT",
    "SIDE_RIGHT",
    "REAR_LEFT",
    "REAR",
    "REAR_RIGHT",
];

/// The label types of `lidar_box`, `camera_box` and `projected_lidar_box`.
pub(crate) const BOX_TYPES: [&str; 5] = [
    "TYPE_UNKNOWN",
    "TYPE_VEHICLE",
    "TYPE_PEDESTRIAN",
    "TYPE_SIGN",
    "TYPE_CYCLIST",
];

/// The file of one component of one segment.
pub(crate) fn component_path(root: &Path, component: &str, segment: &str) -> PathBuf {
    root.join(component).join(format!("{segment}.parquet"))
}

/// The columns of one component file that a reader asked for, all rows in one batch.
pub(crate) struct Component {
    pub path: PathBuf,
    batch: RecordBatch,
}

fn row_err(path: &Path, row: usize, detail: impl Into<String>) -> Error {
    Error::input(path, format!("row {row}"), detail)
}

impl Component {
    /// Reads `required` and whichever of `optional` exist. A missing required column is an
    /// error naming it; rows are read `batch_rows` at a time.
    pub fn read(
        path: &Path,
        required: &[&str],
        optional: &[&str],
        batch_rows: usize,
    ) -> Result<Self> {
        let file = crate::store::input::open(path)?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| {
            Error::input(path, "footer", format!("not a readable Parquet file: {e}"))
        })?;
        check_chunk_sizes(path, builder.metadata())?;
        let schema = builder.schema().clone();
        let mut roots = Vec::new();
        for name in required {
            let i = schema
                .index_of(name)
                .map_err(|_| Error::input(path, "schema", format!("missing column `{name}`")))?;
            roots.push(i);
        }
        roots.extend(optional.iter().filter_map(|n| schema.index_of(n).ok()));
        roots.sort_unstable();
        roots.dedup();
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        let reader = builder
            .with_projection(mask)
            .with_batch_size(batch_rows.max(1))
            .build()
            .map_err(|e| Error::input(path, "schema", e.to_string()))?;
        let out_schema = reader.schema();
        let batches = reader
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::input(path, "data", format!("cannot decode: {e}")))?;
        let batch = concat_batches(&out_schema, &batches)?;
        Ok(Self {
            path: path.to_path_buf(),
            batch,
        })
    }

    pub fn rows(&self) -> usize {
        self.batch.num_rows()
    }

    pub fn has(&self, name: &str) -> bool {
        self.batch.column_by_name(name).is_some()
    }

    /// A column as read.
    pub fn column(&self, name: &str) -> Result<&ArrayRef> {
        self.col(name)
    }

    fn col(&self, name: &str) -> Result<&ArrayRef> {
        self.batch
            .column_by_name(name)
            .ok_or_else(|| Error::input(&self.path, "schema", format!("missing column `{name}`")))
    }

    fn cast_to(&self, name: &str, dt: &DataType) -> Result<ArrayRef> {
        let c = self.col(name)?;
        cast(c, dt).map_err(|e| {
            Error::input(
                &self.path,
                "schema",
                format!("column `{name}` has type {} ({e})", c.data_type()),
            )
        })
    }

    /// A numeric column as f64 (any float or integer type).
    pub(crate) fn f64s(&self, name: &str) -> Result<Vec<Option<f64>>> {
        let a = self.cast_to(name, &DataType::Float64)?;
        let a = a.as_primitive::<arrow::datatypes::Float64Type>();
        Ok(a.iter().collect())
    }

    /// A numeric column as f64 where every value must be present and finite.
    pub(crate) fn f64s_required(&self, name: &str) -> Result<Vec<f64>> {
        self.f64s(name)?
            .into_iter()
            .enumerate()
            .map(|(i, v)| match v {
                Some(x) if x.is_finite() => Ok(x),
                Some(x) => Err(row_err(&self.path, i, format!("`{name}` is {x}"))),
                None => Err(row_err(&self.path, i, format!("`{name}` is null"))),
            })
            .collect()
    }

    /// An optional numeric column: all nulls when the file lacks it.
    pub(crate) fn f64s_or_null(&self, name: &str) -> Result<Vec<Option<f64>>> {
        if self.has(name) {
            self.f64s(name)
        } else {
            Ok(vec![None; self.rows()])
        }
    }

    /// An integer column (any integer type) where every value must be present.
    pub(crate) fn i64s_required(&self, name: &str) -> Result<Vec<i64>> {
        let c = self.col(name)?;
        if !c.data_type().is_integer() {
            return Err(Error::input(
                &self.path,
                "schema",
                format!(
                    "column `{name}` has type {}, expected an integer",
                    c.data_type()
                ),
            ));
        }
        let a = self.cast_to(name, &DataType::Int64)?;
        let a: &Int64Array = a.as_primitive();
        (0..a.len())
            .map(|i| {
                if a.is_valid(i) {
                    Ok(a.value(i))
                } else {
                    Err(row_err(&self.path, i, format!("`{name}` is null")))
                }
            })
            .collect()
    }

    /// A string column (utf8, large utf8 or dictionary) where every value must be present.
    pub(crate) fn strings_required(&self, name: &str) -> Result<Vec<String>> {
        let a = self.cast_to(name, &DataType::Utf8)?;
        let a: &StringArray = a.as_string();
        (0..a.len())
            .map(|i| {
                if a.is_valid(i) {
                    Ok(a.value(i).to_string())
                } else {
                    Err(row_err(&self.path, i, format!("`{name}` is null")))
                }
            })
            .collect()
    }

    /// An optional string column: the first non-null value, if any.
    pub(crate) fn first_string(&self, name: &str) -> Result<Option<String>> {
        if !self.has(name) {
            return Ok(None);
        }
        let a = self.cast_to(name, &DataType::Utf8)?;
        let a: &StringArray = a.as_string();
        Ok(a.iter().flatten().next().map(str::to_string))
    }

    /// A camera-name key column as the v2 code 1..=8, from an integer (`1`) or a name
    /// (`"FRONT"`, also `"CameraName.FRONT"`, any case).
    pub fn cameras(&self, name: &str) -> Result<Vec<u8>> {
        let c = self.col(name)?;
        let codes: Vec<i64> = if c.data_type().is_integer() {
            self.i64s_required(name)?
        } else {
            self.strings_required(name)?
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let bare = s.rsplit('.').next().unwrap_or(s).to_ascii_uppercase();
                    CAMERA_NAMES
                        .iter()
                        .position(|n| *n == bare)
                        .map(|p| p as i64)
                        .or_else(|| bare.parse().ok())
                        .ok_or_else(|| {
                            row_err(&self.path, i, format!("`{name}`: unknown camera {s:?}"))
                        })
                })
                .collect::<Result<_>>()?
        };
        codes
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                if (1..CAMERA_NAMES.len() as i64).contains(&v) {
                    Ok(v as u8)
                } else {
                    Err(row_err(
                        &self.path,
                        i,
                        format!("`{name}`: unknown camera code {v}"),
                    ))
                }
            })
            .collect()
    }

    /// A 4×4 row-major transform column (`fixed_size_list` or `list` of f32/f64, 16 values).
    pub fn transforms(&self, name: &str) -> Result<Vec<[f64; 16]>> {
        let c = self.col(name)?;
        let bad_type = || {
            Error::input(
                &self.path,
                "schema",
                format!(
                    "column `{name}` has type {}, expected a list of 16 numbers",
                    c.data_type()
                ),
            )
        };
        let row = |i: usize, values: ArrayRef| -> Result<[f64; 16]> {
            let v = cast(&values, &DataType::Float64).map_err(|_| bad_type())?;
            let v: &Float64Array = v.as_primitive();
            if v.len() != 16 {
                return Err(row_err(
                    &self.path,
                    i,
                    format!("`{name}` holds {} values, expected 16", v.len()),
                ));
            }
            let mut m = [0.0; 16];
            for (k, slot) in m.iter_mut().enumerate() {
                if !v.is_valid(k) || !v.value(k).is_finite() {
                    return Err(row_err(
                        &self.path,
                        i,
                        format!("`{name}`[{k}] is null or not finite"),
                    ));
                }
                *slot = v.value(k);
            }
            Ok(m)
        };
        let null = |i: usize| row_err(&self.path, i, format!("`{name}` is null"));
        // The three list layouts writers use for the same 16 numbers differ only in type.
        let value: Box<dyn Fn(usize) -> Option<ArrayRef> + '_> = match c.data_type() {
            DataType::FixedSizeList(_, _) => {
                let a = c.as_fixed_size_list_opt().ok_or_else(bad_type)?;
                Box::new(move |i| a.is_valid(i).then(|| a.value(i)))
            }
            DataType::List(_) => {
                let a = c.as_list_opt::<i32>().ok_or_else(bad_type)?;
                Box::new(move |i| a.is_valid(i).then(|| a.value(i)))
            }
            DataType::LargeList(_) => {
                let a = c.as_list_opt::<i64>().ok_or_else(bad_type)?;
                Box::new(move |i| a.is_valid(i).then(|| a.value(i)))
            }
            _ => return Err(bad_type()),
        };
        (0..c.len())
            .map(|i| match value(i) {
                Some(v) => row(i, v),
                None => Err(null(i)),
            })
            .collect()
    }

    /// Checks that the segment key column holds only `segment`.
    pub(crate) fn check_segment(&self, segment: &str) -> Result<()> {
        let names = self.strings_required("key.segment_context_name")?;
        match names.iter().position(|n| n != segment) {
            Some(i) => Err(row_err(
                &self.path,
                i,
                format!(
                    "key.segment_context_name is {:?}, but the file is segment {segment:?}",
                    names[i]
                ),
            )),
            None => Ok(()),
        }
    }
}

/// Refuses a file whose footer declares a column chunk larger than
/// [`crate::store::input::PARQUET_CHUNK`] once decompressed, before any page is read.
fn check_chunk_sizes(path: &Path, meta: &parquet::file::metadata::ParquetMetaData) -> Result<()> {
    for (g, rg) in meta.row_groups().iter().enumerate() {
        for c in rg.columns() {
            let n = u64::try_from(c.uncompressed_size()).unwrap_or(u64::MAX);
            if n > crate::store::input::PARQUET_CHUNK.bytes() {
                return Err(crate::store::input::PARQUET_CHUNK.exceeded(
                    path,
                    &format!("row group {g}, column {}", c.column_path()),
                    n,
                ));
            }
        }
    }
    Ok(())
}

/// Streams the image column of `camera_image` a few rows at a time and returns the rows whose
/// image is null or empty, so that a segment's JPEGs are never all in memory.
pub(crate) fn empty_image_rows(path: &Path, column: &str, batch_rows: usize) -> Result<Vec<usize>> {
    let file = crate::store::input::open(path)?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| Error::input(path, "footer", format!("not a readable Parquet file: {e}")))?;
    check_chunk_sizes(path, builder.metadata())?;
    let i = builder
        .schema()
        .index_of(column)
        .map_err(|_| Error::input(path, "schema", format!("missing column `{column}`")))?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), [i]);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(batch_rows.max(1))
        .build()
        .map_err(|e| Error::input(path, "schema", e.to_string()))?;
    let mut bad = Vec::new();
    let mut base = 0usize;
    for b in reader {
        let b = b.map_err(|e| Error::input(path, "data", format!("cannot decode: {e}")))?;
        let col = b.column(0);
        let len_of = |k: usize| -> Option<usize> {
            match col.data_type() {
                DataType::Binary => Some(col.as_binary::<i32>().value(k).len()),
                DataType::LargeBinary => Some(col.as_binary::<i64>().value(k).len()),
                DataType::BinaryView => Some(col.as_binary_view().value(k).len()),
                _ => None,
            }
        };
        if len_of(0).is_none() && b.num_rows() > 0 {
            return Err(Error::input(
                path,
                "schema",
                format!(
                    "column `{column}` has type {}, expected binary",
                    col.data_type()
                ),
            ));
        }
        for k in 0..b.num_rows() {
            if col.is_null(k) || len_of(k) == Some(0) {
                bad.push(base + k);
            }
        }
        base += b.num_rows();
    }
    Ok(bad)
}
