//! `drivegen validate` on a real release (a build of every family on a tiny synthetic corpus):
//! the release as built passes; a copy with each kind of defect planted (the options of a
//! prompt swapped in each family's layout, a duplicated id, an undecodable image, a wrong
//! letter or index, a wrong manifest count, a stray or tampered shard, a card without a split)
//! fails with the row and shard named. Letter moves keep every family's prompt and key
//! consistent, and a source image that cannot be decoded is left out of the release with a
//! reject instead of being published.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, ListBuilder, RecordBatch, StringArray, StringBuilder,
    StructBuilder,
};
use arrow::datatypes::{DataType, Field, Fields};
use drivegen::qa::QaRecord;
use drivegen::validate::layouts::shown_options;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use sha2::{Digest, Sha256};

const FAMILIES: [&str; 5] = ["egodyn", "metavqa", "stsbench", "sig", "drivebench"];

use common::built::built;

fn release() -> PathBuf {
    built().join("release")
}

/// A copy of the built release to plant a defect in.
pub(super) fn copy() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dst = t.path().join("release");
    copy_dir(&release(), &dst);
    (t, dst)
}

pub(super) fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        let to = dst.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &to);
        } else {
            std::fs::copy(&p, &to).unwrap();
        }
    }
}

/// `drivegen validate --json DIR`: (exit code, report).
pub(super) fn validate(dir: &Path) -> (i32, serde_json::Value) {
    let o = common::cli::bin()
        .args(["validate", "--json"])
        .arg(dir)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "validate printed no JSON ({e}):\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code().unwrap_or(-1), v)
}

/// Requires a violation of `check` (naming `qa_id` and `shard` where given) and exit 1.
pub(super) fn expect(dir: &Path, check: &str, qa_id: Option<&str>, shard: Option<&str>) {
    let (code, v) = validate(dir);
    assert_eq!(
        code, 1,
        "validate passed a release with a planted {check}: {v}"
    );
    let found = v["violations"].as_array().unwrap().iter().any(|x| {
        x["check"] == check
            && qa_id.is_none_or(|q| x["qa_id"] == q)
            && shard.is_none_or(|s| x["shard"] == s)
    });
    assert!(
        found,
        "no {check} violation naming {qa_id:?} in {shard:?}: {}",
        serde_json::to_string_pretty(&v["violations"]).unwrap()
    );
}

pub(super) fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn write_manifest(dir: &Path, m: &serde_json::Value) {
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(m).unwrap() + "\n",
    )
    .unwrap();
}

/// The main split's shards, relative paths.
fn main_shards(dir: &Path) -> Vec<String> {
    manifest(dir)["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap().to_string())
        .filter(|p| p.starts_with("data/test-"))
        .collect()
}

pub(super) fn read_shard(path: &Path) -> Vec<RecordBatch> {
    let f = std::fs::File::open(path).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

/// Rewrites a shard and its manifest entry (sha256, bytes), so only the planted defect is
/// wrong.
pub(super) fn write_shard(dir: &Path, rel: &str, batches: &[RecordBatch]) {
    let path = dir.join(rel);
    let f = std::fs::File::create(&path).unwrap();
    let mut w = ArrowWriter::try_new(f, batches[0].schema(), None).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let sha: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut m = manifest(dir);
    for s in m["shards"].as_array_mut().unwrap() {
        if s["path"] == rel {
            s["sha256"] = sha.clone().into();
            s["bytes"] = (bytes.len() as u64).into();
        }
    }
    write_manifest(dir, &m);
}

pub(super) fn strings(b: &RecordBatch, name: &str) -> Vec<String> {
    b.column_by_name(name)
        .unwrap()
        .as_string::<i32>()
        .iter()
        .map(|s| s.unwrap().to_string())
        .collect()
}

pub(super) fn with_strings(b: &RecordBatch, name: &str, values: Vec<String>) -> RecordBatch {
    let i = b.schema().index_of(name).unwrap();
    let mut cols: Vec<ArrayRef> = b.columns().to_vec();
    cols[i] = Arc::new(StringArray::from(values));
    RecordBatch::try_new(b.schema(), cols).unwrap()
}

/// The first row of `family` in the main split: (shard, batch, row, qa_id).
fn find(dir: &Path, family: &str) -> (String, usize, usize, String) {
    for rel in main_shards(dir) {
        for (k, b) in read_shard(&dir.join(&rel)).iter().enumerate() {
            if let Some(i) = strings(b, "family").iter().position(|f| f == family) {
                return (rel, k, i, strings(b, "qa_id")[i].clone());
            }
        }
    }
    panic!("no {family} row in the release");
}

/// Replaces one string cell of the first `family` row; returns (qa_id, shard).
fn edit(
    dir: &Path,
    family: &str,
    column: &str,
    f: impl Fn(&str, &[String]) -> String,
) -> (String, String) {
    let (rel, k, i, id) = find(dir, family);
    let mut batches = read_shard(&dir.join(&rel));
    let b = &batches[k];
    let choices: Vec<String> = {
        let l = b.column_by_name("choices").unwrap().as_list::<i32>();
        let v = l.value(i);
        v.as_string::<i32>()
            .iter()
            .map(|s| s.unwrap().to_string())
            .collect()
    };
    let mut values = strings(b, column);
    let new = f(&values[i], &choices);
    assert_ne!(
        new, values[i],
        "the edit of {family}.{column} changed nothing"
    );
    values[i] = new;
    batches[k] = with_strings(b, column, values);
    write_shard(dir, &rel, &batches);
    (id, rel)
}

/// The prompt with its first two options swapped, in the family's own layout.
fn swap_options(family: &str, q: &str, c: &[String]) -> String {
    let (a, b) = (&c[0], &c[1]);
    let pairs = match family {
        "egodyn" => (format!("[{a} / {b}"), format!("[{b} / {a}")),
        "metavqa" => (format!("(A) {a}; (B) {b}"), format!("(A) {b}; (B) {a}")),
        "stsbench" => (format!("A. {a}.\nB. {b}."), format!("A. {b}.\nB. {a}.")),
        "sig" => (format!("A. {a}\nB. {b}\n"), format!("A. {b}\nB. {a}\n")),
        "drivebench" => (format!("A. {a}. B. {b}."), format!("A. {b}. B. {a}.")),
        _ => unreachable!(),
    };
    assert!(q.contains(&pairs.0), "{family}: {:?} not in {q:?}", pairs.0);
    q.replacen(&pairs.0, &pairs.1, 1)
}

#[test]
fn the_built_release_passes_and_holds_every_family() {
    let (code, v) = validate(&release());
    assert_eq!(code, 0, "{}", serde_json::to_string_pretty(&v).unwrap());
    assert!(v["distinct_images"].as_u64().unwrap() > 0);
    let m = manifest(&release());
    for f in FAMILIES {
        assert!(
            m["counts"][f].as_object().is_some_and(|t| !t.is_empty()),
            "no {f} rows: {}",
            m["counts"]
        );
    }
    // The summary a user reads.
    let o = common::cli::bin()
        .arg("validate")
        .arg(release())
        .output()
        .unwrap();
    let text = common::cli::ok(o, "drivegen validate");
    assert!(text.contains("every check passed"), "{text}");
}

#[test]
fn swapped_prompt_options_are_caught_in_every_layout() {
    for family in FAMILIES {
        let (_t, dir) = copy();
        let (id, shard) = edit(&dir, family, "question", |q, c| swap_options(family, q, c));
        expect(&dir, "options_in_prompt", Some(&id), Some(&shard));
    }
}

#[test]
fn wrong_keys_and_ids_are_caught() {
    let (_t, dir) = copy();
    let (id, shard) = edit(&dir, "sig", "answer_letter", |l, _| {
        if l == "A" { "B" } else { "A" }.to_string()
    });
    expect(&dir, "answer_letter", Some(&id), Some(&shard));

    let (_t, dir) = copy();
    let (id, shard) = edit(&dir, "egodyn", "answer", |_, c| format!("{} ", c[0]));
    expect(&dir, "answer", Some(&id), Some(&shard));
    expect(&dir, "answer_index", Some(&id), Some(&shard));

    // A duplicated id: the second row of the first shard takes the first row's id.
    let (_t, dir) = copy();
    let rel = main_shards(&dir)[0].clone();
    let mut batches = read_shard(&dir.join(&rel));
    let mut ids = strings(&batches[0], "qa_id");
    let first = ids[0].clone();
    ids[1] = first.clone();
    batches[0] = with_strings(&batches[0], "qa_id", ids);
    write_shard(&dir, &rel, &batches);
    expect(&dir, "duplicate_id", Some(&first), Some(&rel));
}

#[test]
fn an_undecodable_image_is_caught() {
    let (_t, dir) = copy();
    let (rel, k, i, id) = find(&dir, "drivebench");
    let mut batches = read_shard(&dir.join(&rel));
    let b = &batches[k];
    let images = b.column_by_name("images").unwrap().as_list::<i32>();
    let fields = Fields::from(vec![
        Field::new("bytes", DataType::Binary, true),
        Field::new("path", DataType::Utf8, true),
    ]);
    let mut list = ListBuilder::new(StructBuilder::new(
        fields,
        vec![
            Box::new(BinaryBuilder::new()),
            Box::new(StringBuilder::new()),
        ],
    ))
    .with_field(
        match b.schema().field_with_name("images").unwrap().data_type() {
            DataType::List(f) => f.clone(),
            _ => unreachable!(),
        },
    );
    for row in 0..b.num_rows() {
        let v = images.value(row);
        let s = v.as_struct();
        let (bytes, paths) = (
            s.column(0).as_binary::<i32>(),
            s.column(1).as_string::<i32>(),
        );
        for j in 0..s.len() {
            let mut data = bytes.value(j).to_vec();
            if row == i && j == 0 {
                data.truncate(data.len() / 3);
            }
            let st = list.values();
            st.field_builder::<BinaryBuilder>(0)
                .unwrap()
                .append_value(&data);
            st.field_builder::<StringBuilder>(1)
                .unwrap()
                .append_value(paths.value(j));
            st.append(true);
        }
        list.append(true);
    }
    let col = b.schema().index_of("images").unwrap();
    let mut cols: Vec<ArrayRef> = b.columns().to_vec();
    cols[col] = Arc::new(list.finish());
    batches[k] = RecordBatch::try_new(b.schema(), cols).unwrap();
    write_shard(&dir, &rel, &batches);
    expect(&dir, "image_decode", Some(&id), Some(&rel));
}

#[test]
fn release_level_defects_are_caught() {
    // A manifest count that is not what the shards hold.
    let (_t, dir) = copy();
    let mut m = manifest(&dir);
    let counts = m["counts"]["sig"].as_object_mut().unwrap();
    let (t, n) = counts
        .iter()
        .next()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .unwrap();
    counts.insert(t, (n + 1).into());
    write_manifest(&dir, &m);
    expect(&dir, "manifest_counts", None, None);

    // A shard changed after the manifest was written.
    let (_t, dir) = copy();
    let rel = main_shards(&dir)[0].clone();
    let mut bytes = std::fs::read(dir.join(&rel)).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x55;
    std::fs::write(dir.join(&rel), bytes).unwrap();
    expect(&dir, "shard_sha256", None, Some(&rel));

    // A Parquet file the manifest does not list.
    let (_t, dir) = copy();
    std::fs::copy(dir.join(&rel), dir.join("data/test-00009-of-00009.parquet")).unwrap();
    expect(
        &dir,
        "stray_shard",
        None,
        Some("data/test-00009-of-00009.parquet"),
    );

    // A card that leaves out the control split.
    let (_t, dir) = copy();
    let card = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let cut = card.replace(
        "  - split: test_text_only\n    path: data/test_text_only-*\n",
        "",
    );
    assert_ne!(card, cut);
    std::fs::write(dir.join("README.md"), cut).unwrap();
    expect(&dir, "card", None, None);

    // A card without one family's config (`load_dataset(path, "metavqa")` would fail).
    let (_t, dir) = copy();
    let card = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let from = card.find("- config_name: metavqa\n").unwrap();
    let to = from + card[from + 1..].find("- config_name:").unwrap() + 1;
    std::fs::write(
        dir.join("README.md"),
        format!("{}{}", &card[..from], &card[to..]),
    )
    .unwrap();
    expect(&dir, "card", None, None);

    // A family's shard filed under another family's name: its config would read it.
    let (_t, dir) = copy();
    let mut m = manifest(&dir);
    let entry = m["shards"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["path"].as_str().unwrap().starts_with("data/test-sig-"))
        .unwrap();
    let (from, to) = (
        entry["path"].as_str().unwrap().to_string(),
        "data/test-metavqa-00009-of-00009.parquet".to_string(),
    );
    std::fs::rename(dir.join(&from), dir.join(&to)).unwrap();
    entry["path"] = to.clone().into();
    write_manifest(&dir, &m);
    let id = strings(&read_shard(&dir.join(&to))[0], "qa_id")[0].clone();
    expect(&dir, "shard_family", Some(&id), Some(&to));

    // A control row whose key differs from the question it repeats.
    let (_t, dir) = copy();
    let ctl = manifest(&dir)["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap().to_string())
        .find(|p| p.starts_with("data/test_text_only-"))
        .unwrap();
    let mut batches = read_shard(&dir.join(&ctl));
    let mut q = strings(&batches[0], "question");
    q[0].push(' ');
    let id = strings(&batches[0], "qa_id")[0].clone();
    batches[0] = with_strings(&batches[0], "question", q);
    write_shard(&dir, &ctl, &batches);
    expect(&dir, "control_split", Some(&id), Some(&ctl));
}

/// Every QA table the build's stages wrote (before balancing and the release).
fn stage_rows() -> Vec<QaRecord> {
    let work = built().join("release.work");
    let mut files = Vec::new();
    let mut stack = vec![work];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if !p.ends_with("families") {
                    stack.push(p);
                }
            } else if p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .ends_with("qa.arrow")
            {
                files.push(p);
            }
        }
    }
    files.sort();
    drivegen::qa::ipc::read_all(&files).unwrap()
}

#[test]
fn letter_moves_keep_prompt_and_key_consistent_for_every_family_and_type() {
    let rows = stage_rows();
    let mut types = std::collections::BTreeSet::new();
    for r in &rows {
        for to in 0..r.choices.len() {
            let mut m = r.clone();
            drivegen::balance::plan::move_answer(&mut m, to);
            let q = m.question();
            assert_eq!(
                shown_options(&m.family, &q).unwrap(),
                m.choices,
                "{} {}: {q}",
                m.family,
                m.question_type
            );
            assert_eq!(m.choices[usize::from(m.answer_index)], r.answer);
            assert_eq!(m.answer, r.answer);
            // Ordered options that cannot move keep their letter (SIG's runs and distances).
            let want = if drivegen::qa::option_order(&m.family, &m.question_type).movable() {
                to
            } else {
                usize::from(r.answer_index)
            };
            assert_eq!(
                m.answer_letter,
                char::from(b'A' + want as u8).to_string(),
                "{}",
                m.qa_id
            );
        }
        types.insert((r.family.clone(), r.question_type.clone()));
    }
    for f in FAMILIES {
        assert!(types.iter().any(|(x, _)| x == f), "no {f} rows: {types:?}");
    }
    // The balancer itself, over all of them.
    let mut all = rows.clone();
    drivegen::balance::balance_letters(&mut all);
    for (a, r) in all.iter().zip(&rows) {
        assert_eq!(shown_options(&a.family, &a.question()).unwrap(), a.choices);
        assert_eq!(a.answer, r.answer);
    }
}

#[test]
fn a_source_image_that_does_not_decode_is_left_out_with_a_reject() {
    // The EgoDyn rows show store images (sweeps included): break one of them.
    let dir = built();
    let rows = drivegen::score::read_release(&release()).unwrap();
    let r = rows.iter().find(|r| r.family == "egodyn").unwrap();
    let id = &r.camera_frame_ids[r.camera_frame_ids.len() / 2];
    let showing = rows
        .iter()
        .filter(|x| x.family == "egodyn" && x.camera_frame_ids.contains(id))
        .count();
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("corpus");
    let store_src = dir.join("release.work/store");
    copy_dir(&store_src, &t.path().join("store"));
    let src_root = drivegen::store::Store::open(&store_src)
        .unwrap()
        .meta()
        .source_root
        .clone();
    copy_dir(&dir.join(src_root), &root);
    let store = t.path().join("store");
    // The copied store reads its images from the copied corpus.
    let cams: Vec<drivegen::store::CameraRow> = drivegen::store::Store::open(&store)
        .unwrap()
        .read_all(drivegen::store::Table::Cameras)
        .unwrap();
    let cam = cams.iter().find(|c| &c.camera_frame_id == id).unwrap();
    let file = root.join(&cam.image_path);
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let out = t.path().join("rel");
    common::cli::drivegen(
        &["release"],
        &[
            (
                "--qa",
                &dir.join("release.work/families/egodyn/balanced_qa.arrow"),
            ),
            ("--store", &store),
            ("--images-root", &root),
            ("--out", &out),
        ],
    );
    let rejects = drivegen::store::rejects::RejectLog::read(&out.join("rejects.jsonl")).unwrap();
    assert_eq!(rejects.len(), showing, "{rejects:?}");
    assert!(rejects
        .iter()
        .all(|x| x.file.as_deref() == Some(file.to_str().unwrap()) && x.stage == "release"));
    let m = manifest(&out);
    assert_eq!(m["rejected_rows"], showing as u64);
    let published = drivegen::score::read_release(&out).unwrap();
    assert!(published.iter().all(|x| !x.camera_frame_ids.contains(id)));
    let (code, v) = validate(&out);
    assert_eq!(code, 0, "{}", serde_json::to_string_pretty(&v).unwrap());
}

#[test]
fn an_independent_reader_agrees_with_every_row() {
    let Some(py) = common::oracle::python("interop") else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles/release_check.py");
    let o = std::process::Command::new(py)
        .arg(script)
        .arg(release())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the pyarrow reading found problems:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn score_scores_each_split_on_its_own() {
    let rel = release();
    let rows = drivegen::score::read_release(&rel).unwrap();
    let t = tempfile::tempdir().unwrap();
    // The main split answered right without naming it; the control answered "A", named.
    let mut lines = String::new();
    for r in &rows {
        lines += &serde_json::json!({"qa_id": r.qa_id, "prediction": r.answer}).to_string();
        lines += "\n";
        lines +=
            &serde_json::json!({"qa_id": r.qa_id, "prediction": "A", "split": "test_text_only"})
                .to_string();
        lines += "\n";
    }
    let preds = t.path().join("p.jsonl");
    std::fs::write(&preds, lines).unwrap();
    let out = t.path().join("s.json");
    let text = common::cli::drivegen(
        &["score"],
        &[
            ("--release", &rel),
            ("--predictions", &preds),
            ("--out", &out),
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["default_split"], "test", "{text}");
    assert_eq!(v["matched_to_default"], rows.len());
    let main = &v["splits"]["test"];
    assert_eq!(main["questions"], rows.len());
    assert_eq!(main["overall"]["accuracy"], 1.0, "{text}");
    let ctl = &v["splits"]["test_text_only"];
    assert_eq!(ctl["questions"], rows.len());
    assert!(ctl["overall"]["accuracy"].as_f64().unwrap() < 0.6, "{text}");
    assert!(text.contains("## split test_text_only"), "{text}");

    // A shard changed by hand is refused unless asked.
    let (_t, dir) = copy();
    let shard = main_shards(&dir)[0].clone();
    let mut bytes = std::fs::read(dir.join(&shard)).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 1;
    std::fs::write(dir.join(&shard), bytes).unwrap();
    let o = common::cli::bin()
        .args(["score", "--release"])
        .arg(&dir)
        .arg("--predictions")
        .arg(&preds)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("sha256"));
}

#[test]
fn an_image_path_climbing_out_of_the_image_folders_is_refused() {
    let dir = built();
    let table = dir.join("release.work/families/drivebench/balanced_qa.arrow");
    let mut rows = drivegen::qa::ipc::read_all(&[table]).unwrap();
    rows.truncate(1);
    rows[0].image_paths[0] = "../../../etc/hostname".into();
    let t = tempfile::tempdir().unwrap();
    let qa = t.path().join("qa.arrow");
    let mut w = drivegen::qa::ipc::QaWriter::create(&qa).unwrap();
    w.push(rows.remove(0)).unwrap();
    w.finish().unwrap();
    let o = common::cli::bin()
        .arg("release")
        .arg("--qa")
        .arg(&qa)
        .arg("--store")
        .arg(dir.join("release.work/store"))
        .arg("--image-dir")
        .arg(dir.join("release.work/corrupt"))
        .arg("--out")
        .arg(t.path().join("rel"))
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("climbs out"), "{e}");
    assert!(!t.path().join("rel/data").exists());
}

/// Whether an option needs no definition: yes/no, a count, a corruption's name (DriveBench asks
/// which of the named corruptions it applied), or a MetaVQA option that names marked objects or
/// what is seen (a label, a class, a colour).
fn self_evident(family: &str, qtype: &str, option: &str) -> bool {
    let o = option.to_ascii_lowercase();
    if ["yes", "no"].contains(&o.as_str()) || o.chars().all(|c| c.is_ascii_digit()) {
        return true;
    }
    match family {
        "drivebench" => drivegen::corrupt::Corruption::ALL
            .iter()
            .any(|c| c.display_name() == option),
        // Sets of the image's labels (`[<0>, <2>]`) and what the image shows of them.
        "metavqa" => {
            o.starts_with('[')
                || o.starts_with('<')
                || qtype.starts_with("identify_type")
                || qtype.starts_with("identify_color")
                || qtype.starts_with("grounding")
        }
        _ => false,
    }
}

/// Every answer a model must give is defined by the prompt it reads, read back from the
/// release as a user reads it: SIG's directions and distance bins are each defined in quotes,
/// STSBench lists one definition per option and names one-party scenarios without "the
/// first", EgoDyn defines every thresholded label in quotes, and the rest are self-evident.
#[test]
fn every_answer_word_is_defined_by_its_prompt() {
    let mut checked: BTreeMap<String, usize> = BTreeMap::new();
    let mut undefined = Vec::new();
    for rel in main_shards(&release()) {
        for b in read_shard(&release().join(&rel)) {
            let (fam, ty, q) = (
                strings(&b, "family"),
                strings(&b, "question_type"),
                strings(&b, "question"),
            );
            for i in 0..b.num_rows() {
                let (family, question) = (fam[i].as_str(), q[i].as_str());
                let options = shown_options(family, question).unwrap();
                // The prompt before its question line: where definitions must be.
                let rest = question.rsplit_once('\n').map_or("", |(head, _)| head);
                let defined = |o: &str| match family {
                    "sig" => question.contains(&format!("\"{o}\"")),
                    "egodyn" => question.contains(&format!("'{o}'")),
                    "stsbench" => {
                        let defs: Vec<&str> = question
                            .lines()
                            .skip_while(|l| *l != "Definitions:")
                            .skip(1)
                            .filter(|l| l.starts_with("- "))
                            .collect();
                        defs.len() == options.len()
                            && defs.iter().all(|d| {
                                let first = d.to_ascii_lowercase().contains("the first");
                                !first || d.to_ascii_lowercase().contains("the second")
                            })
                    }
                    // The words before an inline range (`Medium (10-30m)`), quoted in the
                    // definitions.
                    "metavqa" => {
                        let word = o.split(" (").next().unwrap_or(o).to_ascii_lowercase();
                        rest.to_ascii_lowercase().contains(&format!("'{word}'"))
                    }
                    _ => false,
                };
                for o in &options {
                    if !self_evident(family, &ty[i], o) && !defined(o) {
                        undefined.push(format!("{family}/{}: {o:?} in {question:?}", ty[i]));
                    }
                }
                *checked.entry(family.to_string()).or_default() += 1;
            }
        }
    }
    for f in FAMILIES {
        assert!(
            checked.get(f).copied().unwrap_or(0) > 0,
            "no {f} rows: {checked:?}"
        );
    }
    let kinds: std::collections::BTreeSet<String> = undefined
        .iter()
        .map(|u| u.split(" in ").next().unwrap_or_default().to_string())
        .collect();
    assert!(
        undefined.is_empty(),
        "{} options undefined: {kinds:#?}\ne.g. {}",
        undefined.len(),
        undefined.first().cloned().unwrap_or_default()
    );
}
