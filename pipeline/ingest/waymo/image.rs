//! Fetching a Waymo camera image the store references: `image_path` is the segment's
//! `camera_image/<segment>.parquet` and `camera_frame_id` is `<segment>/<timestamp>/<camera>`.

use std::path::Path;

use arrow::array::{Array, AsArray};
use arrow::datatypes::DataType;

use super::segment::{CAM, IMG, TS};
use crate::formats::waymo::Component;
use crate::store::CameraRow;
use crate::{Error, Result};

/// The JPEG bytes of one store camera row, read from the source root. Reads the whole segment
/// file per call: for one-off checks only; stages use [`crate::images::ImageReader`],
/// which indexes the segment once and caches blocks of rows.
pub fn read_jpeg(root: &Path, row: &CameraRow) -> Result<Vec<u8>> {
    let path = root.join(&row.image_path);
    let mut parts = row.camera_frame_id.rsplitn(3, '/');
    let (camera, ts) = (
        parts.next(),
        parts.next().and_then(|t| t.parse::<i64>().ok()),
    );
    let (Some(camera), Some(ts)) = (camera, ts) else {
        return Err(Error::input(
            &path,
            &row.camera_frame_id,
            "camera_frame_id is not <segment>/<timestamp>/<camera>",
        ));
    };
    let image_col = format!("{IMG}.image");
    // One segment's images: read with the key columns, keep the one asked for.
    let c = Component::read(&path, &[TS, CAM, &image_col], &[], 16)?;
    let (t, cams) = (c.i64s_required(TS)?, c.cameras(CAM)?);
    let want = crate::formats::waymo::CAMERA_NAMES
        .iter()
        .position(|n| *n == camera);
    let i = (0..c.rows())
        .find(|&i| t[i] == ts && Some(cams[i] as usize) == want)
        .ok_or_else(|| Error::input(&path, &row.camera_frame_id, "no such image"))?;
    let col = c.column(&image_col)?;
    let bytes = match col.data_type() {
        DataType::Binary => col.as_binary::<i32>().value(i).to_vec(),
        DataType::LargeBinary => col.as_binary::<i64>().value(i).to_vec(),
        DataType::BinaryView => col.as_binary_view().value(i).to_vec(),
        dt => {
            return Err(Error::input(
                &path,
                "schema",
                format!("`{image_col}` has type {dt}"),
            ));
        }
    };
    if col.is_null(i) || bytes.is_empty() {
        return Err(Error::input(
            &path,
            &row.camera_frame_id,
            "the image is null or empty",
        ));
    }
    Ok(bytes)
}
