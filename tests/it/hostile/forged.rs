//! Releases forged by hand, their manifest's sha256 kept consistent as a forger would: rows
//! whose key or options no reader can use, shards that are links or of another schema, a
//! dictionary bomb, an edited blind audit, terminal escapes. Every reader ends in a clear error
//! naming the shard (and the row), never in a panic or a silently wrong output.

use super::*;

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// A one-scene release with questions in it (the shared release fixture's scene is too short
/// for a clip, so it holds none), built once per test binary.
pub(super) fn rows_fixture() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let config = BUILD
            .replace("duration_s = 3.0", "duration_s = 8.0")
            .replace("name = \"hostile\"", "name = \"rows\"");
        assert!(config.contains("duration_s = 8.0"), "{config}");
        built_release("release-rows", &config)
    })
}

pub(super) fn with_rows(f: fn(&Path)) -> impl Fn(&Path) {
    with_copy(rows_fixture, f)
}

/// Every batch of `shard`.
fn batches(shard: &Path) -> Vec<RecordBatch> {
    let f = std::fs::File::open(shard).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

/// Writes `batches` over `shard` (zstd, dictionaries up to 64 MiB kept as dictionaries, the
/// Arrow schema left out when `bare`), and points the manifest's sha256 of it at the new bytes.
fn rewrite(rel: &Path, shard: &Path, batches: &[RecordBatch], bare: bool) {
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
        .set_dictionary_page_size_limit(64 << 20)
        .build();
    let opts = parquet::arrow::arrow_writer::ArrowWriterOptions::new()
        .with_properties(props)
        .with_skip_arrow_metadata(bare);
    let mut bytes = Vec::new();
    let mut w =
        parquet::arrow::ArrowWriter::try_new_with_options(&mut bytes, batches[0].schema(), opts)
            .unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    std::fs::write(shard, &bytes).unwrap();
    let sha = format!("{:x}", sha2::Sha256::digest(&bytes));
    let name = format!(
        "data/{}",
        shard.file_name().unwrap().to_string_lossy().into_owned()
    );
    edit_json(&rel.join("manifest.json"), |m| {
        for s in m["shards"].as_array_mut().unwrap() {
            if s["path"] == name.as_str() {
                s["sha256"] = Value::String(sha.clone());
            }
        }
    });
}

/// `b` with column `name` replaced by `col`.
fn with_column(b: &RecordBatch, name: &str, col: ArrayRef) -> RecordBatch {
    let i = b.schema().index_of(name).unwrap();
    let mut cols = b.columns().to_vec();
    cols[i] = col;
    let mut fields: Vec<arrow::datatypes::Field> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields[i] = fields[i]
        .clone()
        .with_data_type(cols[i].data_type().clone());
    RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), cols).unwrap()
}

/// Forges the first row of the first shard with `f` (the batch, the column's name, its new
/// values for every row).
fn forge(f: fn(&RecordBatch) -> (&'static str, ArrayRef)) -> impl Fn(&Path) {
    move |t: &Path| {
        with_rows(|_| {})(t);
        let rel = t.join("rel");
        let shard = first_shard(&rel);
        let mut bs = batches(&shard);
        let (name, col) = f(&bs[0]);
        bs[0] = with_column(&bs[0], name, col);
        rewrite(&rel, &shard, &bs, false);
    }
}

/// A list-of-strings column whose first row is `first` and the rest as they were.
fn strings_first(b: &RecordBatch, name: &str, first: Vec<String>) -> ArrayRef {
    let l = b.column_by_name(name).unwrap().as_list::<i32>();
    let mut builder = arrow::array::ListBuilder::new(arrow::array::StringBuilder::new());
    for i in 0..l.len() {
        let row: Vec<String> = if i == 0 {
            first.clone()
        } else {
            let v = l.value(i);
            let s = v.as_string::<i32>();
            (0..s.len()).map(|k| s.value(k).to_string()).collect()
        };
        for x in row {
            builder.values().append_value(x);
        }
        builder.append(true);
    }
    Arc::new(builder.finish())
}

fn key_200(b: &RecordBatch) -> (&'static str, ArrayRef) {
    let a = b
        .column_by_name("answer_index")
        .unwrap()
        .as_primitive::<arrow::datatypes::UInt8Type>();
    let v: Vec<u8> = (0..a.len())
        .map(|i| if i == 0 { 200 } else { a.value(i) })
        .collect();
    ("answer_index", Arc::new(arrow::array::UInt8Array::from(v)))
}

fn no_options(b: &RecordBatch) -> (&'static str, ArrayRef) {
    ("choices", strings_first(b, "choices", Vec::new()))
}

fn thirty_options(b: &RecordBatch) -> (&'static str, ArrayRef) {
    let l = b.column_by_name("choices").unwrap().as_list::<i32>();
    let v = l.value(0);
    let s = v.as_string::<i32>();
    let mut opts: Vec<String> = (0..s.len()).map(|k| s.value(k).to_string()).collect();
    let mut k = 0;
    while opts.len() < 30 {
        opts.push(format!("padding option {k}"));
        k += 1;
    }
    ("choices", strings_first(b, "choices", opts))
}

fn cameras_misaligned(b: &RecordBatch) -> (&'static str, ArrayRef) {
    (
        "camera_frame_ids",
        strings_first(b, "camera_frame_ids", Vec::new()),
    )
}

fn escapes_in_the_rule(b: &RecordBatch) -> (&'static str, ArrayRef) {
    let a = b.column_by_name("rule").unwrap().as_string::<i32>();
    let v: Vec<String> = (0..a.len())
        .map(|i| format!("\u{1b}]0;pwned\u{7}\u{1b}[2J{}", a.value(i)))
        .collect();
    ("rule", Arc::new(arrow::array::StringArray::from(v)))
}

/// The first row's qa_id in the fixture release.
fn first_qa_id() -> String {
    let bs = batches(&first_shard(rows_fixture()));
    bs[0]
        .column_by_name("qa_id")
        .unwrap()
        .as_string::<i32>()
        .value(0)
        .to_string()
}

/// The commands that read a release's rows, with the files each may write.
fn readers() -> Vec<(&'static str, Vec<String>, Vec<&'static str>)> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        (
            "export llava",
            s(&["export", "{t}/rel", "--format", "llava", "--out", "{t}/e"]),
            vec!["e"],
        ),
        (
            "export vlmevalkit",
            s(&[
                "export",
                "{t}/rel",
                "--format",
                "vlmevalkit",
                "--out",
                "{t}/e",
            ]),
            vec!["e"],
        ),
        ("view", s(&["view", "{t}/rel", "--out", "{t}/v"]), vec!["v"]),
        (
            "score",
            s(&[
                "score",
                "--release",
                "{t}/rel",
                "--predictions",
                "{t}/p.jsonl",
            ]),
            vec![],
        ),
        ("audit", s(&["audit", "{t}/rel"]), vec![]),
    ]
}

pub(super) fn forged_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let qa = first_qa_id();
    let qa: &'static str = Box::leak(qa.into_boxed_str());
    for (what, f, needle) in [
        (
            "key out of range",
            key_200 as fn(&RecordBatch) -> (&'static str, ArrayRef),
            "option 201",
        ),
        ("no options", no_options, "0 options"),
        ("30 options", thirty_options, "30 options"),
        ("cameras misaligned", cameras_misaligned, "camera_frame_ids"),
    ] {
        for (reader, args, outputs) in readers() {
            let args: Vec<&str> = args
                .iter()
                .map(|a| &*Box::leak(a.clone().into_boxed_str()))
                .collect();
            v.push(case(
                format!("forged row, {what}: {reader}"),
                "nuscenes",
                forge(f),
                &args,
                &outputs,
                fails(&[".parquet", qa, needle]),
            ));
        }
        v.push(case(
            format!("forged row, {what}: trace"),
            "nuscenes",
            forge(f),
            &["trace", "{t}/rel", qa],
            &[],
            fails(&[".parquet", qa, needle]),
        ));
        // validate lists the row as a violation (exit 1) instead of stopping or panicking.
        v.push(case(
            format!("forged row, {what}: validate"),
            "nuscenes",
            forge(f),
            &["validate", "{t}/rel"],
            &[],
            fails(&[qa]),
        ));
    }
    v.push(case(
        "terminal escapes in a row: trace prints them escaped",
        "nuscenes",
        forge(escapes_in_the_rule),
        &["trace", "{t}/rel", qa],
        &[],
        Expect::SucceedsWithout(vec!["\u{1b}".into(), "\u{7}".into()]),
    ));
    v.push(case(
        "a shard that is a link leading out of the release",
        "nuscenes",
        with_rows(|r| {
            let p = first_shard(r);
            let away = r.parent().unwrap().join("away.parquet");
            std::fs::rename(&p, &away).unwrap();
            std::os::unix::fs::symlink(&away, &p).unwrap();
        }),
        &[
            "score",
            "--release",
            "{t}/rel",
            "--predictions",
            "{t}/p.jsonl",
        ],
        &[],
        fails(&["leads out of the release"]),
    ));
    v.push(case(
        "a shard of another schema, read without verifying",
        "nuscenes",
        |t: &Path| {
            with_rows(|_| {})(t);
            let rel = t.join("rel");
            let b = RecordBatch::try_from_iter([(
                "x",
                Arc::new(arrow::array::Int32Array::from(vec![1, 2, 3])) as ArrayRef,
            )])
            .unwrap();
            rewrite(&rel, &first_shard(&rel), &[b], false);
        },
        &[
            "score",
            "--no-verify",
            "--release",
            "{t}/rel",
            "--predictions",
            "{t}/p.jsonl",
        ],
        &[],
        fails(&["not a drivegen release shard"]),
    ));
    v.push(case(
        "an edited blind audit in the manifest",
        "nuscenes",
        with_rows(|r| {
            edit_json(&r.join("manifest.json"), |m| {
                m["blind_audit"] = serde_json::json!({
                    "folds": 5, "families": {}, "types": {}
                });
            })
        }),
        &["validate", "{t}/rel"],
        &[],
        fails(&["blind_audit"]),
    ));
    for (reader, args, outputs) in readers().into_iter().take(4) {
        let args: Vec<&str> = args
            .iter()
            .map(|a| &*Box::leak(a.clone().into_boxed_str()))
            .collect();
        v.push(quick(case(
            format!("a dictionary bomb (one 48 MiB string in every row): {reader}"),
            "nuscenes",
            dictionary_bomb,
            &args,
            &outputs,
            fails(&[".parquet", "release_string_mib"]),
        )));
    }
    v
}

/// The first shard's `question` column replaced by one 48 MiB string every row shares, kept
/// as a dictionary page and without the Arrow schema (so a reader sees a plain string column):
/// a few KiB on disk, gigabytes once every row gets its copy.
fn dictionary_bomb(t: &Path) {
    with_rows(|_| {})(t);
    let rel = t.join("rel");
    let shard = first_shard(&rel);
    let bs = batches(&shard);
    let huge = "Q".repeat(48 << 20);
    let forged: Vec<RecordBatch> = bs
        .iter()
        .map(|b| {
            let keys = arrow::array::Int32Array::from(vec![0; b.num_rows()]);
            let values = arrow::array::StringArray::from(vec![huge.as_str()]);
            let dict = arrow::array::DictionaryArray::new(keys, Arc::new(values));
            with_column(b, "question", Arc::new(dict))
        })
        .collect();
    rewrite(&rel, &shard, &forged, true);
}

#[test]
fn forged_releases() {
    run_all(forged_cases());
}
