//! Parquet shards of QA rows in the layout Hugging Face `datasets` expects
//! (`data/{split}-{family}-{i:05d}-of-{n:05d}.parquet`): the common QA columns plus `images`, a
//! `list<struct<bytes: binary, path: string>>` that `datasets` decodes as a sequence of
//! `Image`s (the `huggingface` schema metadata says so), zstd-compressed.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryBuilder, ListBuilder, RecordBatch, StringArray, StringBuilder, StructBuilder,
    UInt32Builder,
};
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use sha2::{Digest, Sha256};

use crate::qa::{self, QaRecord};
use crate::store::atomic::AtomicFile;
use crate::{Error, Result};

/// An image of a row: its bytes (empty when only paths are published) and its path in the
/// source dataset.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImageRef {
    pub bytes: Option<Arc<Vec<u8>>>,
    pub path: String,
    /// The size the store's camera row gives the image (0 when no store says).
    pub width: u32,
    pub height: u32,
    /// The source dataset's file the image is, or was drawn on (relative to the dataset's
    /// root, as its store records it; empty when no store says).
    pub source_file: String,
    /// The source's own key of the frame the image belongs to (nuScenes' sample token, the
    /// Waymo frame's or CARLA step's key; empty when no store says).
    pub source_frame: String,
}

/// Where a row comes from in its source beyond its images (empty when no store holds its
/// scene).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowOrigin {
    /// The store's source version (`v1.0-trainval`, the Waymo or CARLA release).
    pub source_version: String,
    /// The source's own key of the scene (nuScenes' scene token, the Waymo segment, the
    /// CARLA route).
    pub source_scene_id: String,
    /// The setting the row is asked in.
    pub tag: RowTag,
}

/// The setting a row is asked in and the clean row it repeats.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowTag {
    /// `clean` (the main split), `text_only` (its control) or a robustness setting's name.
    pub setting: String,
    /// The `qa_id` of the main split's row this one asks again (its own id in the main split).
    pub base_qa_id: String,
    /// The seed the setting's corruption was drawn with (robustness rows only).
    pub corruption_seed: Option<u64>,
}

impl RowTag {
    /// A row of the main split or its text-only control.
    pub fn of(setting: &str, qa_id: &str) -> Self {
        Self {
            setting: setting.to_string(),
            base_qa_id: qa_id.to_string(),
            corruption_seed: None,
        }
    }
}

fn image_struct_fields() -> Fields {
    Fields::from(vec![
        Field::new("bytes", DataType::Binary, true),
        Field::new("path", DataType::Utf8, true),
    ])
}

/// The shard schema: the QA columns, then `images`, with the `datasets` feature metadata.
pub fn shard_schema() -> SchemaRef {
    let mut fields: Vec<Field> = qa::record::qa_fields();
    // The size each shown image has in the source, aligned with `images`: what a reader (and
    // `drivegen validate`) checks a decoded image against.
    for name in ["image_widths", "image_heights"] {
        fields.push(Field::new(
            name,
            DataType::List(Arc::new(Field::new("item", DataType::UInt32, false))),
            false,
        ));
    }
    // Where each shown image comes from in the source dataset, aligned with `images`: the
    // provenance a corrupted or marked image's own path does not give.
    for name in ["source_files", "source_frame_ids"] {
        fields.push(Field::new(
            name,
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, false))),
            false,
        ));
    }
    for name in ["source_version", "source_scene_id"] {
        fields.push(Field::new(name, DataType::Utf8, false));
    }
    // The setting a row is asked in (`clean`, `text_only`, or a corruption) and the main
    // split's row it repeats: what pairs a robustness row with its clean row.
    for name in ["setting", "base_qa_id"] {
        fields.push(Field::new(name, DataType::Utf8, false));
    }
    fields.push(Field::new("corruption_seed", DataType::UInt64, true));
    fields.push(Field::new(
        "images",
        DataType::List(Arc::new(Field::new(
            "item",
            DataType::Struct(image_struct_fields()),
            true,
        ))),
        // Nullable, as `datasets` declares it: it only applies its metadata feature to a
        // column whose Arrow field matches the feature's exactly.
        true,
    ));
    // `datasets` takes its features from this key (all columns, or it ignores the key), so
    // `images` decodes as a sequence of `Image`s. "Sequence" is read by datasets 3 to 5.
    let features: serde_json::Map<String, serde_json::Value> = fields
        .iter()
        .map(|f| (f.name().clone(), hf_feature(f.name(), f.data_type())))
        .collect();
    let hf = serde_json::json!({"info": {"features": features}});
    let meta: std::collections::HashMap<String, String> =
        [("huggingface".to_string(), hf.to_string())]
            .into_iter()
            .collect();
    Arc::new(Schema::new_with_metadata(fields, meta))
}

/// The Hugging Face feature of a column.
fn hf_feature(name: &str, t: &DataType) -> serde_json::Value {
    use serde_json::json;
    let value = |dtype: &str| json!({"dtype": dtype, "_type": "Value"});
    match t {
        DataType::List(_) if name == "images" => {
            json!({"feature": {"_type": "Image"}, "_type": "Sequence"})
        }
        DataType::List(item) => {
            json!({"feature": hf_feature("item", item.data_type()), "_type": "Sequence"})
        }
        DataType::UInt8 => value("uint8"),
        DataType::UInt32 => value("uint32"),
        DataType::UInt64 => value("uint64"),
        DataType::Int64 => value("int64"),
        DataType::Float64 => value("float64"),
        DataType::Boolean => value("bool"),
        DataType::Binary => value("binary"),
        _ => value("string"),
    }
}

/// Builds one record batch of rows with their images and origins.
pub fn shard_batch(
    rows: &[QaRecord],
    images: &[Vec<ImageRef>],
    origins: &[RowOrigin],
) -> Result<RecordBatch> {
    let mut cols: Vec<ArrayRef> = qa::record::columns(rows);
    for size in [|i: &ImageRef| i.width, |i: &ImageRef| i.height] {
        let mut b = ListBuilder::new(UInt32Builder::new()).with_field(Arc::new(Field::new(
            "item",
            DataType::UInt32,
            false,
        )));
        for imgs in images {
            for im in imgs {
                b.values().append_value(size(im));
            }
            b.append(true);
        }
        cols.push(Arc::new(b.finish()));
    }
    for key in [
        |i: &ImageRef| i.source_file.clone(),
        |i: &ImageRef| i.source_frame.clone(),
    ] {
        let mut b = ListBuilder::new(StringBuilder::new()).with_field(Arc::new(Field::new(
            "item",
            DataType::Utf8,
            false,
        )));
        for imgs in images {
            for im in imgs {
                b.values().append_value(key(im));
            }
            b.append(true);
        }
        cols.push(Arc::new(b.finish()));
    }
    cols.push(Arc::new(StringArray::from_iter_values(
        origins.iter().map(|o| o.source_version.as_str()),
    )));
    cols.push(Arc::new(StringArray::from_iter_values(
        origins.iter().map(|o| o.source_scene_id.as_str()),
    )));
    cols.push(Arc::new(StringArray::from_iter_values(
        origins.iter().map(|o| o.tag.setting.as_str()),
    )));
    cols.push(Arc::new(StringArray::from_iter_values(
        origins.iter().map(|o| o.tag.base_qa_id.as_str()),
    )));
    cols.push(Arc::new(arrow::array::UInt64Array::from_iter(
        origins.iter().map(|o| o.tag.corruption_seed),
    )));
    let mut list = ListBuilder::new(StructBuilder::new(
        image_struct_fields(),
        vec![
            Box::new(BinaryBuilder::new()),
            Box::new(StringBuilder::new()),
        ],
    ));
    for imgs in images {
        let s = list.values();
        for im in imgs {
            let b = s
                .field_builder::<BinaryBuilder>(0)
                .ok_or_else(|| schema_err("images.bytes builder"))?;
            match &im.bytes {
                Some(v) => b.append_value(v.as_slice()),
                None => b.append_null(),
            }
            s.field_builder::<StringBuilder>(1)
                .ok_or_else(|| schema_err("images.path builder"))?
                .append_value(&im.path);
            s.append(true);
        }
        list.append(true);
    }
    cols.push(Arc::new(list.finish()));
    Ok(RecordBatch::try_new(shard_schema(), cols)?)
}

fn schema_err(what: &str) -> Error {
    Error::Schema {
        table: "release shard".into(),
        detail: format!("{what} missing"),
    }
}

/// Writer settings: zstd, row groups small enough that image-heavy rows stay streamable, and
/// no timestamps or host names anywhere, so identical rows give identical bytes.
///
/// The questions of one clip or frame show the same images, so a row group holds each image
/// many times (EgoDyn: 14 questions on the same 6 views). The image bytes column keeps its
/// dictionary for the whole row group, so every image is stored once per group and the rows
/// point at it; with the default 1 MiB dictionary limit the writer would fall back to plain
/// values after the first few images. The release's `row_group_bytes` cut bounds a group's
/// distinct images, so it bounds the dictionary too.
pub fn writer_properties(row_group_rows: usize) -> WriterProperties {
    let image_bytes = ColumnPath::from(
        ["images", "list", "item", "bytes"]
            .map(String::from)
            .to_vec(),
    );
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).unwrap_or_default()))
        .set_max_row_group_row_count(Some(row_group_rows.max(1)))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_column_dictionary_page_size_limit(image_bytes, IMAGE_DICTIONARY_LIMIT)
        .set_created_by(format!("drivegen {}", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Large enough never to be reached within a row group (those end at `row_group_bytes` of
/// distinct images, 16 MiB by default), small enough for every reader's page size limits.
const IMAGE_DICTIONARY_LIMIT: usize = 1 << 30;

/// Rows per Arrow batch within a row group (see [`ShardWriter::write_group`]).
const BATCH_ROWS: usize = 32;

/// A written shard.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ShardInfo {
    /// Relative to the release root.
    pub path: String,
    pub rows: usize,
    pub bytes: u64,
    pub sha256: String,
}

/// Hashes and counts what passes through, so a shard's sha256 needs no second read.
struct Hashing<W> {
    inner: W,
    hash: Sha256,
    bytes: u64,
}

impl<W: std::io::Write> std::io::Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes one shard row group by row group, so only one group's images are in memory; the
/// file appears under its name only on [`ShardWriter::finish`].
pub(crate) struct ShardWriter {
    w: ArrowWriter<Hashing<AtomicFile>>,
    rel: String,
    rows: usize,
}

impl ShardWriter {
    pub fn create(root: &Path, rel: &str) -> Result<Self> {
        let file = AtomicFile::create(&root.join(rel))?;
        let sink = Hashing {
            inner: file,
            hash: Sha256::new(),
            bytes: 0,
        };
        // Groups are cut by the caller (`write_group`), never by the writer's own row limit.
        let w = ArrowWriter::try_new(sink, shard_schema(), Some(writer_properties(usize::MAX)))?;
        Ok(Self {
            w,
            rel: rel.to_string(),
            rows: 0,
        })
    }

    /// Writes `rows` with their images and origins as one row group.
    pub(crate) fn write_group(
        &mut self,
        rows: &[QaRecord],
        images: &[Vec<ImageRef>],
        origins: &[RowOrigin],
    ) -> Result<()> {
        // An Arrow batch holds a copy of an image for every row that shows it; the writer's
        // dictionary keeps one. Handing the group over in small batches keeps the copies few.
        for ((r, im), o) in rows
            .chunks(BATCH_ROWS)
            .zip(images.chunks(BATCH_ROWS))
            .zip(origins.chunks(BATCH_ROWS))
        {
            self.w.write(&shard_batch(r, im, o)?)?;
        }
        self.w.flush()?;
        self.rows += rows.len();
        Ok(())
    }

    pub fn finish(self) -> Result<ShardInfo> {
        let sink = self.w.into_inner()?;
        let info = ShardInfo {
            path: self.rel,
            rows: self.rows,
            bytes: sink.bytes,
            sha256: hex(&sink.hash.finalize()),
        };
        sink.inner.commit()?;
        Ok(info)
    }
}

/// Lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
