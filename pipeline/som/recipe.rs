//! Marked images as a table: `marked_images.arrow`, one row per image the Set-of-Mark and
//! MetaVQA stages mark, saying which source image it is drawn on and which boxes, labels,
//! numbers and colours are drawn (`schemas/som/marked_images.json`). The schema's metadata
//! holds the drawing settings (`configs/som.toml` `[draw]`, as JSON under [`DRAW_KEY`]), so
//! the table alone decides every pixel: the release draws each published image from it once
//! ([`render`]), and a stage that is asked for files writes the same bytes.
//!
//! `marks` is JSON, an array of `{"box": [x0, y0, x1, y1], "label": [x0, y0, x1, y1],
//! "number": n, "colour": 0xRRGGBB}` in drawing order (pixel edges; an empty rectangle is not
//! drawn), so every Arrow and Parquet reader shows it without a nested type.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, StringArray, UInt32Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::ipc::writer::FileWriter;
use serde::{Deserialize, Serialize};

use super::config::DrawConfig;
use super::draw::{draw_cpu, draw_gpu, pack, unpack, DrawMark};
use crate::gpu::Gpu;
use crate::store::atomic::AtomicFile;
use crate::{Error, Result};

/// The table's file name in a stage's output folder.
pub const FILE: &str = "marked_images.arrow";
/// The schema metadata key holding the drawing settings as JSON.
pub(crate) const DRAW_KEY: &str = "drivegen:draw";

/// One marked image.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkedImage {
    /// Where the image goes, relative to the stage's folder (and the path the release shows).
    pub path: String,
    pub scene_id: String,
    pub camera_frame_id: String,
    pub width: u32,
    pub height: u32,
    pub marks: Vec<DrawMark>,
}

#[derive(Serialize, Deserialize)]
struct MarkJson {
    #[serde(rename = "box")]
    bbox: [u32; 4],
    label: [u32; 4],
    number: u32,
    colour: u32,
}

/// The packed colour of a mark back to `0xRRGGBB`.
fn rgb_of(packed: u32) -> u32 {
    let [r, g, b, _] = unpack(packed);
    (u32::from(r) << 16) | (u32::from(g) << 8) | u32::from(b)
}

fn marks_json(marks: &[DrawMark]) -> String {
    let v: Vec<MarkJson> = marks
        .iter()
        .map(|m| MarkJson {
            bbox: m.bbox,
            label: m.label,
            number: m.number,
            colour: rgb_of(m.colour),
        })
        .collect();
    serde_json::to_string(&v).unwrap_or_else(|_| "[]".into())
}

/// The table's columns (the published schema).
pub(crate) fn columns() -> SchemaRef {
    let f = |n: &str, t: DataType| Field::new(n, t, false);
    Arc::new(Schema::new(vec![
        f("path", DataType::Utf8),
        f("scene_id", DataType::Utf8),
        f("camera_frame_id", DataType::Utf8),
        f("width", DataType::UInt32),
        f("height", DataType::UInt32),
        f("marks", DataType::Utf8),
    ]))
}

/// The table's schema as written: [`columns`] with `draw` in its metadata.
pub(crate) fn schema(draw: &DrawConfig) -> Result<SchemaRef> {
    let meta = serde_json::to_string(draw)
        .map_err(|e| Error::Internal(format!("the draw settings as JSON: {e}")))?;
    Ok(Arc::new(columns().as_ref().clone().with_metadata(
        HashMap::from([(DRAW_KEY.to_string(), meta)]),
    )))
}

/// A record batch of `rows`.
pub fn to_batch(schema: &SchemaRef, rows: &[MarkedImage]) -> Result<RecordBatch> {
    let s = |g: &dyn Fn(&MarkedImage) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(g)))
    };
    let u = |g: &dyn Fn(&MarkedImage) -> u32| -> ArrayRef {
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(g)))
    };
    Ok(RecordBatch::try_new(
        schema.clone(),
        vec![
            s(&|r| &r.path),
            s(&|r| &r.scene_id),
            s(&|r| &r.camera_frame_id),
            u(&|r| r.width),
            u(&|r| r.height),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| marks_json(&r.marks)),
            )),
        ],
    )?)
}

/// Writes the table one record batch per scene (readers load one scene at a time).
pub struct Writer {
    schema: SchemaRef,
    inner: FileWriter<AtomicFile>,
}

impl Writer {
    pub fn create(path: &Path, draw: &DrawConfig) -> Result<Self> {
        let schema = schema(draw)?;
        let inner = crate::store::atomic::ipc_writer(path, &schema)?;
        Ok(Self { schema, inner })
    }

    /// Appends one scene's images.
    pub fn write(&mut self, rows: &[MarkedImage]) -> Result<()> {
        self.inner.write(&to_batch(&self.schema, rows)?)?;
        Ok(())
    }

    pub fn finish(mut self) -> Result<()> {
        self.inner.finish()?;
        self.inner.into_inner()?.commit()
    }
}

/// The drawing settings a table's schema carries.
pub fn draw_config(file: &Path, schema: &Schema) -> Result<DrawConfig> {
    let text = schema
        .metadata()
        .get(DRAW_KEY)
        .ok_or_else(|| Error::input(file, "schema metadata", format!("no {DRAW_KEY} entry")))?;
    let draw: DrawConfig = serde_json::from_str(text)
        .map_err(|e| Error::input(file, DRAW_KEY, format!("not draw settings: {e}")))?;
    draw.check()
        .map_err(|why| Error::input(file, DRAW_KEY, why))?;
    Ok(draw)
}

/// The rows of one record batch, checked: a hand-edited table must not draw outside the image
/// or point the release outside its folders.
pub fn from_batch(file: &Path, batch: &RecordBatch) -> Result<Vec<MarkedImage>> {
    let bad = |record: String, detail: String| Error::input(file, &record, detail);
    let strs = |name: &str| -> Result<&StringArray> {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            .ok_or_else(|| bad("schema".into(), format!("no string column {name}")))
    };
    let u32s = |name: &str| -> Result<&UInt32Array> {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<UInt32Array>())
            .ok_or_else(|| bad("schema".into(), format!("no uint32 column {name}")))
    };
    let (path, scene, id, w, h, marks) = (
        strs("path")?,
        strs("scene_id")?,
        strs("camera_frame_id")?,
        u32s("width")?,
        u32s("height")?,
        strs("marks")?,
    );
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        if [
            path.is_null(i),
            scene.is_null(i),
            id.is_null(i),
            marks.is_null(i),
        ]
        .iter()
        .any(|n| *n)
        {
            return Err(bad(format!("row {i}"), "a null value".into()));
        }
        let p = path.value(i);
        if let Some(why) = crate::store::paths::unsafe_relative(p) {
            return Err(bad(p.to_string(), format!("path: {why}")));
        }
        let (width, height) = (w.value(i), h.value(i));
        let parsed: Vec<MarkJson> = serde_json::from_str(marks.value(i))
            .map_err(|e| bad(p.to_string(), format!("marks: {e}")))?;
        let mut drawn = Vec::with_capacity(parsed.len());
        for m in parsed {
            for r in [m.bbox, m.label] {
                if r[0] > r[2] || r[1] > r[3] || r[2] > width || r[3] > height {
                    return Err(bad(
                        p.to_string(),
                        format!("marks: rectangle {r:?} is not inside the {width}×{height} image"),
                    ));
                }
            }
            if m.colour > 0xff_ffff {
                return Err(bad(p.to_string(), format!("marks: colour {:#x}", m.colour)));
            }
            drawn.push(DrawMark::new(m.bbox, m.label, m.number, m.colour));
        }
        out.push(MarkedImage {
            path: p.to_string(),
            scene_id: scene.value(i).to_string(),
            camera_frame_id: id.value(i).to_string(),
            width,
            height,
            marks: drawn,
        });
    }
    Ok(out)
}

/// Draws `marks` into `base` (the source image) on the GPU or the CPU twin (identical pixels).
pub(crate) fn draw(
    base: &image::RgbImage,
    marks: &[DrawMark],
    draw: &DrawConfig,
    gpu: Option<&Gpu>,
) -> Result<image::RgbImage> {
    let (w, h) = base.dimensions();
    let mut px: Vec<u32> = base
        .pixels()
        .map(|p| pack([p.0[0], p.0[1], p.0[2], 255]))
        .collect();
    match gpu {
        Some(gpu) => draw_gpu(gpu, &mut px, w, h, marks, draw)?,
        None => draw_cpu(&mut px, w, h, marks, draw)?,
    }
    let rgb: Vec<u8> = px
        .iter()
        .flat_map(|&p| {
            let [r, g, b, _] = unpack(p);
            [r, g, b]
        })
        .collect();
    image::RgbImage::from_raw(w, h, rgb)
        .ok_or_else(|| Error::Internal(format!("a marked {w}×{h} image has the wrong size")))
}

/// The published bytes of `m` drawn on `base`: lossless RGB PNG.
pub fn render(
    m: &MarkedImage,
    base: &image::RgbImage,
    draw_cfg: &DrawConfig,
    gpu: Option<&Gpu>,
) -> Result<Vec<u8>> {
    if base.dimensions() != (m.width, m.height) {
        return Err(Error::input(
            &m.camera_frame_id,
            &m.path,
            format!(
                "the source image is {}×{}, the marked image {}×{}",
                base.width(),
                base.height(),
                m.width,
                m.height
            ),
        ));
    }
    let marked = draw(base, &m.marks, draw_cfg, gpu)?;
    crate::store::atomic::encode_png(&m.path, marked)
}
