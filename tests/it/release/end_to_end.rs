//! The release end to end on a tiny synthetic corpus: synth → ingest → egomotion → balance →
//! release. The shards must be read as they are by pyarrow, DuckDB, polars and Hugging Face
//! `datasets` (images decode, lists intact, row counts right), the manifest's checksums must
//! match the files, a rebuild must be byte-identical, and row groups must end where the byte
//! and row caps say.

use crate::common;

use common::cli::drivegen;

use std::path::Path;

use arrow::array::{Array, AsArray};
use std::process::Command;

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                v.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    v.sort();
    v
}

#[test]
fn release_is_read_by_the_four_readers_and_rebuilds_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (root, store, ego, bal) = (
        d.join("nusc"),
        d.join("store"),
        d.join("ego"),
        d.join("bal"),
    );
    drivegen(
        &[
            "synth",
            "--scenes",
            "3",
            "--duration",
            "5",
            "--width",
            "320",
            "--height",
            "180",
        ],
        &[("--out", &root)],
    );
    drivegen(&["ingest"], &[("--root", &root), ("--out", &store)]);
    drivegen(&["egomotion"], &[("--store", &store), ("--out", &ego)]);
    let qa = ego.join("egodyn_qa.arrow");
    drivegen(
        &["balance", "--target", "6", "--balance-letters"],
        &[("--qa", &qa), ("--out", &bal)],
    );
    let balanced = bal.join("balanced_qa.arrow");

    // The same work split over 2 machines: each shard's egomotion, then one balance over both
    // outputs, gives the unsharded bytes.
    let mut shard_qa = Vec::new();
    for i in 0..2 {
        let out = d.join(format!("ego_shard{i}"));
        drivegen(
            &["egomotion", "--shard", &format!("{i}/2")],
            &[("--store", &store), ("--out", &out)],
        );
        shard_qa.push(out.join("egodyn_qa.arrow"));
    }
    let merged = d.join("bal_merged");
    drivegen(
        &["balance", "--target", "6", "--balance-letters"],
        &[
            ("--qa", &shard_qa[0]),
            ("--qa", &shard_qa[1]),
            ("--out", &merged),
        ],
    );
    assert!(
        std::fs::read(merged.join("balanced_qa.arrow")).unwrap()
            == std::fs::read(&balanced).unwrap(),
        "balancing two shards' outputs differs from balancing the unsharded output"
    );
    let rel = d.join("release");
    let out = drivegen(
        &[
            "release",
            "--rows-per-shard",
            "40",
            "--row-group-rows",
            "16",
        ],
        &[("--qa", &balanced), ("--store", &store), ("--out", &rel)],
    );
    // 6 clips × 14 questions, 10 images each, in 3 shards of ≤ 40.
    assert!(
        out.contains("release: 84 rows, 840 images, 3 shards"),
        "{out}"
    );
    let shards: Vec<String> = (0..3)
        .map(|i| format!("data/test-egodyn-{i:05}-of-00003.parquet"))
        .collect();
    for s in &shards {
        assert!(rel.join(s).is_file(), "{s} missing");
    }

    // The manifest's checksums are the files'.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rel.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["rows"], 84);
    for s in manifest["shards"].as_array().unwrap() {
        use sha2::Digest;
        let bytes = std::fs::read(rel.join(s["path"].as_str().unwrap())).unwrap();
        let sum: String = sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(s["sha256"].as_str().unwrap(), sum);
    }
    let card = std::fs::read_to_string(rel.join("README.md")).unwrap();
    assert!(card.starts_with("---\nconfigs:\n"), "{card}");

    // Byte-identical rebuild, including over a release with a different shard count.
    let again = d.join("release2");
    drivegen(
        &[
            "release",
            "--rows-per-shard",
            "20",
            "--row-group-rows",
            "16",
        ],
        &[("--qa", &balanced), ("--store", &store), ("--out", &again)],
    );
    drivegen(
        &[
            "release",
            "--rows-per-shard",
            "40",
            "--row-group-rows",
            "16",
        ],
        &[("--qa", &balanced), ("--store", &store), ("--out", &again)],
    );
    assert!(files(&rel) == files(&again), "rebuild differs");

    // Row groups end at the row cap, or at the row whose images take the group's distinct
    // image bytes to the byte cap, and nowhere else (read back from the file, images told
    // apart by their bytes).
    let grouped = d.join("release_grouped");
    let (cap_rows, cap_bytes) = (40usize, 150_000usize);
    drivegen::release::run(&drivegen::release::Options {
        qa: vec![balanced.clone()],
        stores: vec![store.clone()],
        out: grouped.clone(),
        rows_per_shard: 84,
        row_group_rows: cap_rows,
        row_group_bytes: cap_bytes,
        ..Default::default()
    })
    .unwrap();
    let shard = grouped.join("data/test-egodyn-00000-of-00001.parquet");
    let open = || {
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            std::fs::File::open(&shard).unwrap(),
        )
        .unwrap()
    };
    let groups = open().metadata().num_row_groups();
    let (mut rows_seen, mut byte_cuts) = (0, 0);
    for g in 0..groups {
        let mut seen = std::collections::HashSet::new();
        let (mut rows, mut distinct, mut before_last) = (0usize, 0usize, 0usize);
        for batch in open().with_row_groups(vec![g]).build().unwrap() {
            let batch = batch.unwrap();
            let list = batch.column_by_name("images").unwrap().as_list::<i32>();
            for r in 0..batch.num_rows() {
                before_last = distinct;
                let items = list.value(r);
                let bytes = items.as_struct().column(0).as_binary::<i32>().clone();
                for k in 0..bytes.len() {
                    if seen.insert(bytes.value(k).to_vec()) {
                        distinct += bytes.value(k).len();
                    }
                }
                rows += 1;
            }
        }
        assert!(
            rows <= cap_rows && before_last < cap_bytes,
            "row group {g} ends late: {rows} rows, {before_last} bytes before its last row"
        );
        if g + 1 < groups {
            assert!(
                rows == cap_rows || distinct >= cap_bytes,
                "row group {g} ends early: {rows} rows, {distinct} bytes"
            );
            byte_cuts += usize::from(rows < cap_rows);
        }
        rows_seen += rows;
    }
    assert_eq!(rows_seen, 84);
    assert!(byte_cuts >= 1, "no row group was cut by its images' bytes");

    // The oracle's own answers, phrased as a chatty model would: everything parses, all
    // correct, and no consistency rule is broken (EMCR 1).
    let questions = drivegen::score::read_release(&rel).unwrap();
    assert_eq!(questions.len(), 84);
    let preds: String = questions
        .iter()
        .map(|q| {
            serde_json::json!({"qa_id": q.qa_id, "prediction": format!("Answer: **{}**.", q.answer.replace('_', " "))})
                .to_string()
                + "\n"
        })
        .collect();
    let pred_file = d.join("oracle.jsonl");
    std::fs::write(&pred_file, preds).unwrap();
    let report = d.join("score.json");
    let out = drivegen(
        &["score"],
        &[
            ("--release", &rel),
            ("--predictions", &pred_file),
            ("--out", &report),
        ],
    );
    assert!(
        out.contains("| all | 84 | 84 | 1.000 | 1.000 | 1.000 | 1.000 |"),
        "{out}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(
        r["splits"]["test"]["egodyn_consistency"]["emcr"], 1.0,
        "{out}"
    );

    // The readers, as a user would call them.
    let Some(py) = common::oracle::python("interop") else {
        return;
    };
    let script = r#"
import glob, io, json, sys
root = sys.argv[1]
files = sorted(glob.glob(root + "/data/test-*.parquet"))
import pyarrow.parquet as pq
t = pq.read_table(files)
assert t.num_rows == 84, t.num_rows
row = t.slice(0, 1).to_pylist()[0]
assert len(row["images"]) == 10 and row["images"][0]["bytes"][:2] == b"\xff\xd8", row["images"][0]["path"]
assert row["choices"][row["answer_index"]] == row["answer"]
import duckdb
[(n, imgs)] = duckdb.sql(f"select count(*), sum(len(images)) from read_parquet({files!r})").fetchall()
assert (n, imgs) == (84, 840), (n, imgs)
import polars as pl
df = pl.read_parquet(files)
assert df.height == 84 and df["images"].list.len().sum() == 840
assert df["choices"].list.len().min() >= 2
from datasets import load_dataset
ds = load_dataset("parquet", data_files=files, split="train")
assert len(ds) == 84
ex = ds[0]
img = ex["images"][0]
assert hasattr(img, "size") and img.size == (320, 180), str(img)[:200]
assert ex["answer"] == ex["choices"][ex["answer_index"]]
print("readers ok")
"#;
    let o = Command::new(&py)
        .arg("-c")
        .arg(script)
        .arg(&rel)
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HOME", d.join("hf"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "readers failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A family name becomes part of shard file names and the card's configs, so a QA table with
/// a family drivegen does not know is refused, naming the table and the row, and nothing is
/// written outside the release.
#[test]
fn a_row_of_an_unknown_family_is_refused_with_its_table_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let qa = d.join("qa.arrow");
    let mut w = drivegen::qa::ipc::QaWriter::create(&qa).unwrap();
    w.push(drivegen::qa::QaRecord {
        qa_id: "q0".into(),
        family: "../../escape".into(),
        question_type: "t".into(),
        choices: vec!["x".into(), "y".into()],
        answer: "x".into(),
        answer_letter: "A".into(),
        source: "synthetic".into(),
        scene_id: "s".into(),
        marks: "{}".into(),
        params: "{}".into(),
        evidence: "{}".into(),
        ..Default::default()
    })
    .unwrap();
    w.finish().unwrap();
    let out = d.join("rel");
    let err = drivegen::release::run(&drivegen::release::Options {
        qa: vec![qa.clone()],
        out: out.clone(),
        images: drivegen::release::ImageMode::Paths,
        ..Default::default()
    })
    .unwrap_err()
    .report()
    .to_string();
    assert!(
        err.contains(&qa.display().to_string()) && err.contains("q0") && err.contains("family"),
        "{err}"
    );
    let names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n == "escape"), "{names:?}");
    assert!(
        !d.join("rel/data").exists()
            || std::fs::read_dir(d.join("rel/data"))
                .unwrap()
                .next()
                .is_none()
    );
}
