//! Parquet shard writing, like for like with pyarrow: the same in-memory table (256 QA rows
//! with release-sized texts, 6 embedded JPEGs each, 48 distinct 1600×900 images), the same
//! settings (zstd level 3, row groups of 64 rows, the shard schema with its `datasets`
//! metadata), written to memory.
//!
//! * `parquet/drivegen_writer`: `release::shards::shard_batch` + the release's
//!   `ArrowWriter` settings, one row group per 64 rows (what `drivegen release` does per shard,
//!   without reading images from disk, hashing or syncing); throughput in input image bytes;
//! * then, in a `--bench` run, best of 5 of that, of the encoding alone from ready Arrow
//!   batches, and, when `.venv-interop` (or `$PYTHON`) has pyarrow, of pyarrow `write_table` of
//!   the very table we wrote, read back: the like-for-like pair is the last two.
//!
//! `cargo bench --bench parquet`; the figures also go to `target/parquet-bench.md`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::RecordBatch;
use criterion::{Criterion, Throughput};
use drivegen::qa::QaRecord;
use drivegen::release::shards::{
    shard_batch, shard_schema, writer_properties, ImageRef, RowOrigin, RowTag,
};
use parquet::arrow::ArrowWriter;

const ROWS: usize = 256;
const GROUP_ROWS: usize = 64;
const IMAGES: usize = 48;

/// A 1600×900 JPEG with smooth structure and sensor-like noise, so it compresses like a
/// camera image rather than like a flat colour.
fn jpeg(k: usize) -> Vec<u8> {
    let (w, h) = (1600u32, 900u32);
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ k as u64;
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let noise = (state >> 59) as u8;
        let base = |s: u32| ((x * s / w + y * (s + 1) / h + k as u32 * 17) % 200) as u8;
        image::Rgb([
            base(90).wrapping_add(noise),
            base(130).wrapping_add(noise),
            base(170).wrapping_add(noise),
        ])
    });
    let mut out = Vec::new();
    img.write_to(
        &mut std::io::Cursor::new(&mut out),
        image::ImageFormat::Jpeg,
    )
    .unwrap();
    out
}

/// Release-like rows: texts of the lengths EgoDyn and DriveBench rows have.
fn rows() -> Vec<QaRecord> {
    (0..ROWS)
        .map(|i| {
            let choices: Vec<String> = ["accelerating", "decelerating", "constant speed"]
                .map(String::from)
                .to_vec();
            QaRecord {
                qa_id: format!("egodyn-{i:016x}"),
                family: "egodyn".into(),
                question_type: "speed_change".into(),
                prompt: drivegen::qa::Prompt::new(
                    drivegen::qa::Layout::EgoDyn,
                    format!(
                        "You are the driver of the ego vehicle (clip {i}). Over the 3 seconds \
                         shown by the six cameras, is the ego vehicle accelerating, \
                         decelerating or keeping a constant speed?"
                    ),
                )
                .postamble("Answer with ONLY the option."),
                answer: choices[i % 3].clone(),
                answer_index: (i % 3) as u8,
                answer_letter: ["A", "B", "C"][i % 3].into(),
                choices,
                source: "nuscenes".into(),
                scene_id: format!("scene-{:04}", i / 16),
                clip_id: Some(format!("scene-{:04}-clip-{i:03}", i / 16)),
                cameras: ["CAM_FRONT", "CAM_FRONT_RIGHT", "CAM_BACK_RIGHT", "CAM_BACK"]
                    .into_iter()
                    .chain(["CAM_BACK_LEFT", "CAM_FRONT_LEFT"])
                    .map(String::from)
                    .collect(),
                camera_frame_ids: (0..6).map(|c| format!("sd-{i:05}-{c}")).collect(),
                marks: "{}".into(),
                rule: "speed_change.v1".into(),
                params:
                    r#"{"accel_threshold_mps2":0.3,"window_s":3.0,"savgol":{"window":9,"order":3}}"#
                        .into(),
                evidence: format!(
                    "{{\"speed_mps\":[{}],\"mean_accel_mps2\":{:.4}}}",
                    (0..31)
                        .map(|t| format!("{:.4}", 8.0 + 0.05 * f64::from(t) * (i % 3) as f64))
                        .collect::<Vec<_>>()
                        .join(","),
                    0.05 * (i % 3) as f64
                ),
                seed: 0,
                ..Default::default()
            }
        })
        .collect()
}

/// The row groups as Arrow batches (what `drivegen release` builds from the QA rows).
fn batches(rows: &[QaRecord], images: &[Vec<ImageRef>]) -> Vec<RecordBatch> {
    rows.chunks(GROUP_ROWS)
        .zip(images.chunks(GROUP_ROWS))
        .map(|(r, i)| {
            let origins: Vec<RowOrigin> = r
                .iter()
                .map(|row| RowOrigin {
                    source_version: "v1.0-trainval".into(),
                    source_scene_id: row.scene_id.clone(),
                    tag: RowTag::of("clean", &row.qa_id),
                })
                .collect();
            shard_batch(r, i, &origins).unwrap()
        })
        .collect()
}

/// Encodes the batches, one row group each, with the release's settings.
fn encode(batches: &[RecordBatch]) -> Vec<u8> {
    let mut w = ArrowWriter::try_new(
        Vec::new(),
        shard_schema(),
        Some(writer_properties(usize::MAX)),
    )
    .unwrap();
    for b in batches {
        w.write(b).unwrap();
        w.flush().unwrap();
    }
    w.into_inner().unwrap()
}

fn write(rows: &[QaRecord], images: &[Vec<ImageRef>]) -> Vec<u8> {
    encode(&batches(rows, images))
}

fn pyarrow(file: &std::path::Path, input_bytes: usize) -> Option<String> {
    let py = std::env::var("PYTHON").unwrap_or_else(|_| ".venv-interop/bin/python".into());
    let script = format!(
        "import io, time, pyarrow.parquet as pq\n\
         t = pq.read_table({file:?})\n\
         best = 1e9\n\
         for _ in range(5):\n\
         \x20   s = io.BytesIO(); t0 = time.perf_counter()\n\
         \x20   pq.write_table(t, s, compression='zstd', compression_level=3, row_group_size={GROUP_ROWS})\n\
         \x20   best = min(best, time.perf_counter() - t0)\n\
         import pyarrow\n\
         print(pyarrow.__version__, best, s.tell())\n"
    );
    let out = std::process::Command::new(py)
        .args(["-c", &script])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut it = text.split_whitespace();
    let (version, secs, size) = (it.next()?, it.next()?.parse::<f64>().ok()?, it.next()?);
    let size: f64 = size.parse().ok()?;
    let mib = f64::from(1 << 20);
    Some(format!(
        "| pyarrow {version}: Arrow table → Parquet (`write_table`, the same table read back) | {secs:.3} | {:.1} | {:.0} |\n",
        size / mib,
        input_bytes as f64 / secs / mib
    ))
}

fn main() {
    if !measuring() {
        return;
    }
    let jpegs: Vec<Arc<Vec<u8>>> = (0..IMAGES).map(|k| Arc::new(jpeg(k))).collect();
    let rows = rows();
    let images: Vec<Vec<ImageRef>> = (0..ROWS)
        .map(|i| {
            (0..6)
                .map(|c| ImageRef {
                    bytes: Some(jpegs[(i * 6 + c) % IMAGES].clone()),
                    path: format!("samples/CAM_{c}/{i:05}.jpg"),
                    width: 1600,
                    height: 900,
                    source_file: format!("samples/CAM_{c}/{i:05}.jpg"),
                    source_frame: format!("sample-{i:05}"),
                })
                .collect()
        })
        .collect();
    let image_bytes: usize = images
        .iter()
        .flatten()
        .map(|i| i.bytes.as_ref().map_or(0, |b| b.len()))
        .sum();
    let out = write(&rows, &images);
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(std::time::Duration::from_secs(10))
        .configure_from_args();
    let mut group = c.benchmark_group("parquet");
    group.throughput(Throughput::Bytes(image_bytes as u64));
    group.bench_function("drivegen_writer", |b| {
        b.iter(|| assert_eq!(write(&rows, &images).len(), out.len()))
    });
    group.finish();
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let best_of_5 = |f: &dyn Fn()| {
        (0..5)
            .map(|_| {
                let t0 = std::time::Instant::now();
                f();
                t0.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min)
    };
    let whole = best_of_5(&|| {
        write(&rows, &images);
    });
    let built = batches(&rows, &images);
    let encode_only = best_of_5(&|| {
        encode(&built);
    });
    let target =
        PathBuf::from(std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into()));
    let file = target.join("parquet-bench.parquet");
    std::fs::write(&file, &out).unwrap();
    let mib = |b: usize| b as f64 / f64::from(1 << 20);
    let input = mib(image_bytes);
    let mut report = format!(
        "{ROWS} rows, {} image refs ({input:.1} MiB of JPEG, {IMAGES} distinct images), row \
         groups of {GROUP_ROWS}, zstd 3\n\n\
         | writer | best of 5 (s) | Parquet out (MiB) | MiB/s of input |\n|---|---:|---:|---:|\n\
         | drivegen: QA rows → Arrow batches → Parquet (what the release does) | {whole:.3} | {:.1} | {:.0} |\n\
         | drivegen: Arrow batches → Parquet (`ArrowWriter`, release settings) | {encode_only:.3} | {:.1} | {:.0} |\n",
        ROWS * 6,
        mib(out.len()),
        input / whole,
        mib(out.len()),
        input / encode_only,
    );
    match pyarrow(&file, image_bytes) {
        Some(line) => report.push_str(&line),
        None => report.push_str("| pyarrow | – | – | not run (no python with pyarrow) |\n"),
    }
    print!("\n{report}");
    std::fs::write(target.join("parquet-bench.md"), report).unwrap();
    c.final_summary();
}

/// `cargo test --all-targets` runs bench targets without `--bench`; they measure nothing
/// there, so they return at once instead of building their corpora.
fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}
