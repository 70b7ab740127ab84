//! `corruptions.arrow` as the recipe of every corrupted image: a row names the source image,
//! the corruption, severity and seed, whether the view changes, and the drawn parameters; the
//! schema's metadata holds the corruption settings (`configs/corrupt.toml`, as JSON under
//! [`CONFIG_KEY`]). With these the release corrupts each published image once ([`render`])
//! and gets the bytes the stage writes when asked for files. Codec corruptions are the
//! exception: their parameters are measured by running the codec, so the stage always writes
//! their images and the release reads those files.
//!
//! The table holds one record batch per scene (readers load one scene at a time).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, BooleanArray, RecordBatch, StringArray, UInt64Array, UInt8Array};
use arrow::datatypes::{Schema, SchemaRef};
use image::RgbImage;

use super::config::CorruptConfig;
use super::output::{schema, to_batch, CorruptionRow};
use super::rng::Key;
use super::{apply_cpu, check_severity, view_plan, Corruption, Plan, View};
use crate::config::StageConfig;
use crate::gpu::Gpu;
use crate::{Error, Result};

/// The schema metadata key holding the corruption settings as JSON.
pub(crate) const CONFIG_KEY: &str = "drivegen:corrupt_config";

/// The schema as written: the published columns with `cfg` in the metadata.
pub(crate) fn schema_with(cfg: &CorruptConfig) -> Result<SchemaRef> {
    let meta = serde_json::to_string(cfg)
        .map_err(|e| Error::Internal(format!("the corruption settings as JSON: {e}")))?;
    Ok(Arc::new(schema().as_ref().clone().with_metadata(
        HashMap::from([(CONFIG_KEY.to_string(), meta)]),
    )))
}

/// Writes `rows` (in scene order) to `path`, a record batch per run of rows of one scene.
pub(crate) fn write(path: &Path, rows: &[CorruptionRow], cfg: &CorruptConfig) -> Result<()> {
    let schema = schema_with(cfg)?;
    let mut w = crate::store::atomic::ipc_writer(path, &schema)?;
    let mut start = 0;
    while start < rows.len() {
        let scene = &rows[start].scene_id;
        let end = rows[start..]
            .iter()
            .position(|r| &r.scene_id != scene)
            .map_or(rows.len(), |k| start + k);
        let batch = to_batch(&rows[start..end])?.with_schema(schema.clone())?;
        w.write(&batch)?;
        start = end;
    }
    w.finish()?;
    w.into_inner()?.commit()
}

/// The corruption settings a table's schema carries.
pub(crate) fn config_of(file: &Path, schema: &Schema) -> Result<CorruptConfig> {
    let text = schema
        .metadata()
        .get(CONFIG_KEY)
        .ok_or_else(|| Error::input(file, "schema metadata", format!("no {CONFIG_KEY} entry")))?;
    let cfg: CorruptConfig = serde_json::from_str(text)
        .map_err(|e| Error::input(file, CONFIG_KEY, format!("not corruption settings: {e}")))?;
    cfg.validate(file)?;
    Ok(cfg)
}

/// The rows of one record batch, checked as far as rendering needs.
pub fn from_batch(file: &Path, batch: &RecordBatch) -> Result<Vec<CorruptionRow>> {
    let bad = |record: String, detail: String| Error::input(file, &record, detail);
    fn col<'b, T: 'static>(batch: &'b RecordBatch, name: &str, file: &Path) -> Result<&'b T> {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<T>())
            .ok_or_else(|| Error::input(file, "schema", format!("no column {name} of its type")))
    }
    let s = |name: &str| col::<StringArray>(batch, name, file);
    let (scene, image, camera, frame, corruption, params, source, output) = (
        s("scene_id")?,
        s("image_id")?,
        s("camera")?,
        s("frame_id")?,
        s("corruption")?,
        s("params")?,
        s("source_path")?,
        s("output_path")?,
    );
    let severity = col::<UInt8Array>(batch, "severity", file)?;
    let seed = col::<UInt64Array>(batch, "seed", file)?;
    let applied = col::<BooleanArray>(batch, "applied", file)?;
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let nulls = [
            scene.is_null(i),
            image.is_null(i),
            output.is_null(i),
            corruption.is_null(i),
            severity.is_null(i),
            seed.is_null(i),
            applied.is_null(i),
        ];
        if nulls.iter().any(|n| *n) {
            return Err(bad(format!("row {i}"), "a null value".into()));
        }
        let p = output.value(i);
        if let Some(why) = crate::store::paths::unsafe_relative(p) {
            return Err(bad(p.to_string(), format!("output_path: {why}")));
        }
        let sev = severity.value(i);
        check_severity(sev).map_err(|e| bad(p.to_string(), e.to_string()))?;
        Corruption::parse(corruption.value(i)).map_err(|e| bad(p.to_string(), e.to_string()))?;
        out.push(CorruptionRow {
            scene_id: scene.value(i).to_string(),
            image_id: image.value(i).to_string(),
            camera: camera.value(i).to_string(),
            frame_id: frame.value(i).to_string(),
            corruption: corruption.value(i).to_string(),
            severity: sev,
            seed: seed.value(i),
            applied: applied.value(i),
            params: params.value(i).to_string(),
            source_path: source.value(i).to_string(),
            output_path: p.to_string(),
        });
    }
    Ok(out)
}

/// The corrupted pixels of `row`'s view, `image` being its decoded source.
pub fn apply(
    cfg: &CorruptConfig,
    row: &CorruptionRow,
    image: &RgbImage,
    gpu: Option<&Gpu>,
) -> Result<RgbImage> {
    let c = Corruption::parse(&row.corruption)?;
    if c.is_codec() {
        return Err(Error::invalid(
            c.name(),
            "is a codec corruption: its images are written by the stage, not drawn from the table",
        ));
    }
    let severity = check_severity(row.severity)?;
    let plan = if row.applied {
        let key = Key::new(row.seed, &row.image_id, c.index(), severity);
        let view = View {
            image_id: &row.image_id,
            camera: &row.camera,
            image,
        };
        view_plan(cfg, c, severity, key, &view)
    } else {
        Plan::Unchanged
    };
    Ok(match gpu {
        Some(g) => super::gpu::apply_gpu(g, &[(image, &plan)])?
            .pop()
            .ok_or_else(|| Error::Internal("the GPU returned no image".into()))?,
        None => apply_cpu(image, &plan),
    })
}

/// The published bytes of `row`'s image: [`apply`], encoded as the stage encodes it.
pub(crate) fn render(
    cfg: &CorruptConfig,
    row: &CorruptionRow,
    image: &RgbImage,
    gpu: Option<&Gpu>,
) -> Result<Vec<u8>> {
    let img = apply(cfg, row, image, gpu)?;
    super::run::encode_like(&img, Path::new(&row.output_path), cfg.output.jpeg_quality)
}
