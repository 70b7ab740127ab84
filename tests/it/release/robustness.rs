//! Corruption-robustness splits on the shared build (four families re-asked under Brightness,
//! Fog, Camera Crash and H.265): read with pyarrow and `datasets` by an independent checker
//! (`tests/oracles/robustness_check.py`: every repeat against its clean row, the same rows in
//! every setting, Brightness and Camera Crash pixels from its own implementation of the
//! definitions, every score figure recomputed from a planted prediction file); `validate`
//! catching repeats planted wrong; `trace` and the exports naming a repeat's setting and clean
//! row.

use super::validate::{copy, expect, manifest, read_shard, strings, with_strings, write_shard};
use crate::common;

use std::path::{Path, PathBuf};

use arrow::array::AsArray;

use common::built::built;

const SETTINGS: [&str; 4] = ["brightness", "fog", "camera_crash", "h265"];

fn release() -> PathBuf {
    built().join("release")
}

/// The shards of split `split`, relative paths.
fn shards_of(dir: &Path, split: &str) -> Vec<String> {
    manifest(dir)["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap().to_string())
        .filter(|p| p.starts_with(&format!("data/{split}-")))
        .collect()
}

/// A prediction file answering every row of every split: right where a hash of the row's id
/// says so (about two rows in three), else a wrong option; a third of the lines name no split
/// (robustness rows are then found by their own ids, main rows go to the main split).
fn planted_predictions(dir: &Path, out: &Path) {
    let q = drivegen::score::read_release_splits(dir, true).unwrap();
    let mut lines = String::new();
    for (split, rows) in &q.splits {
        for r in rows {
            let h = r
                .qa_id
                .bytes()
                .fold(7u64, |a, b| a.wrapping_mul(31) ^ u64::from(b));
            let right = h % 3 != 0;
            let i = if right {
                usize::from(r.answer_index)
            } else {
                (usize::from(r.answer_index) + 1) % r.choices.len()
            };
            let text = if r.family == "egodyn" {
                r.choices[i].clone()
            } else {
                char::from(b'A' + i as u8).to_string()
            };
            let named = split != &q.main || h % 2 == 0;
            let line = if named && !(split != &q.main && split != "test_text_only" && h % 3 == 1) {
                serde_json::json!({"qa_id": r.qa_id, "split": split, "prediction": text})
            } else {
                serde_json::json!({"qa_id": r.qa_id, "prediction": text})
            };
            lines += &line.to_string();
            lines.push('\n');
        }
    }
    std::fs::write(out, lines).unwrap();
}

#[test]
fn a_robustness_release_reads_and_scores_as_a_user_reads_it() {
    let rel = release();
    let m = manifest(&rel);
    let settings: Vec<&str> = m["robustness"]["settings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["setting"].as_str().unwrap())
        .collect();
    assert_eq!(settings, SETTINGS);
    for s in SETTINGS {
        let n: u64 = m["split_counts"][format!("test_{s}")]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(n, 24, "six rows of each of four families in test_{s}");
    }
    // Render once: each distinct published image of a split was corrupted once, whichever
    // families and rows show it.
    for s in m["robustness"]["settings"].as_array().unwrap() {
        let split = s["split"].as_str().unwrap();
        let mut distinct = std::collections::BTreeSet::new();
        let mut shown = 0;
        for rel_shard in shards_of(&rel, split) {
            for b in read_shard(&rel.join(rel_shard)) {
                let paths = b.column_by_name("image_paths").unwrap().as_list::<i32>();
                for i in 0..b.num_rows() {
                    let v = paths.value(i);
                    for p in v.as_string::<i32>().iter() {
                        distinct.insert(p.unwrap().to_string());
                        shown += 1;
                    }
                }
            }
        }
        assert_eq!(
            s["images"]["drawn"],
            distinct.len(),
            "{split}: {}",
            s["images"]
        );
        assert_eq!(s["images"]["shown"], shown, "{split}");
    }
    let t = tempfile::tempdir().unwrap();
    let preds = t.path().join("predictions.jsonl");
    planted_predictions(&rel, &preds);
    let score = t.path().join("score.json");
    let html = t.path().join("robustness.html");
    let text = common::cli::drivegen(
        &["score"],
        &[
            ("--release", &rel),
            ("--predictions", &preds),
            ("--out", &score),
            ("--html", &html),
        ],
    );
    assert!(text.contains("## corruption robustness"), "{text}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&score).unwrap()).unwrap();
    assert!(v["matched_by_id"].as_u64().unwrap() > 0, "{text}");
    for f in ["egodyn", "metavqa", "sig", "stsbench"] {
        let fam = &v["robustness"][f];
        assert_eq!(fam["rows"], 6, "{f}: {fam}");
        assert_eq!(fam["settings"].as_object().unwrap().len(), 4, "{f}");
        assert!(fam["visual_reliance"]["value"].is_number(), "{f}: {fam}");
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("<svg").count(), 4, "one plot per family");

    let Some(py) = common::oracle::python("interop") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let out = common::oracle::run_script(
        &py,
        "robustness_check.py",
        &[
            rel.as_os_str(),
            "--predictions".as_ref(),
            preds.as_os_str(),
            "--score".as_ref(),
            score.as_os_str(),
        ],
        &[
            ("HF_DATASETS_OFFLINE", "1".as_ref()),
            ("HF_HOME", home.path().as_os_str()),
        ],
    );
    assert!(out.contains("robustness: 4 settings"), "{out}");
    assert!(out.contains("score: 4 families recomputed"), "{out}");
}

#[test]
fn trace_and_exports_name_a_repeats_setting_and_clean_row() {
    let rel = release();
    let rel_shard = &shards_of(&rel, "test_fog")[0];
    let b = &read_shard(&rel.join(rel_shard))[0];
    let (id, base) = (
        strings(b, "qa_id")[0].clone(),
        strings(b, "base_qa_id")[0].clone(),
    );
    assert_ne!(id, base);
    let o = common::cli::bin()
        .arg("trace")
        .arg(&rel)
        .arg(&id)
        .output()
        .unwrap();
    let text = common::cli::ok(o, "drivegen trace");
    assert!(text.contains("split test_fog"), "{text}");
    assert!(
        text.contains(&format!("setting   fog, asks again {base} of split test")),
        "{text}"
    );
    assert!(
        text.contains("corrupt   fog at severity 5, seed 7"),
        "{text}"
    );

    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("export");
    let o = common::cli::bin()
        .arg("export")
        .arg(&rel)
        .args(["--format", "jsonl", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    common::cli::ok(o, "drivegen export");
    let fog = std::fs::read_to_string(out.join("test_fog.jsonl")).unwrap();
    let row: serde_json::Value = fog
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["qa_id"] == id.as_str())
        .unwrap();
    assert_eq!(row["setting"], "fog");
    assert_eq!(row["base_qa_id"], base.as_str());
    assert_eq!(row["corruption"], "fog");
    assert!(!row["images"][0].as_str().unwrap().is_empty(), "{row}");
}

/// Replaces column `column` of the first row of a robustness split's first shard.
fn plant(dir: &Path, split: &str, column: &str, value: &str) -> (String, String) {
    let rel = shards_of(dir, split)[0].clone();
    let mut batches = read_shard(&dir.join(&rel));
    let mut values = strings(&batches[0], column);
    let id = strings(&batches[0], "qa_id")[0].clone();
    values[0] = value.to_string();
    batches[0] = with_strings(&batches[0], column, values);
    write_shard(dir, &rel, &batches);
    (id, rel)
}

#[test]
fn validate_catches_repeats_planted_wrong() {
    // A repeat pointing at another clean row: its question is not that row's.
    let (_t, dir) = copy();
    let rel = shards_of(&dir, "test_brightness")[0].clone();
    let b = &read_shard(&dir.join(&rel))[0];
    let bases = strings(b, "base_qa_id");
    let other = bases.iter().find(|x| **x != bases[0]).unwrap().clone();
    let (id, shard) = plant(&dir, "test_brightness", "base_qa_id", &other);
    expect(&dir, "robust_row", Some(&id), Some(&shard));
    // …which also leaves the settings re-asking different rows.
    expect(&dir, "robust_rows", None, None);

    // A repeat of a row the main split does not hold.
    let (_t, dir) = copy();
    let (id, shard) = plant(&dir, "test_fog", "base_qa_id", "sig-0000000000000000");
    expect(&dir, "robust_row", Some(&id), Some(&shard));

    // A repeat naming another setting than its split's.
    let (_t, dir) = copy();
    let (id, shard) = plant(&dir, "test_h265", "setting", "fog");
    expect(&dir, "robust_setting", Some(&id), Some(&shard));

    // A repeat with its clean row's own id.
    let (_t, dir) = copy();
    let rel = shards_of(&dir, "test_camera_crash")[0].clone();
    let base = strings(&read_shard(&dir.join(&rel))[0], "base_qa_id")[0].clone();
    let (_, shard) = plant(&dir, "test_camera_crash", "qa_id", &base);
    expect(&dir, "robust_row", Some(&base), Some(&shard));
}

#[test]
fn the_release_command_writes_robustness_splits_too() {
    let work = built().join("release.work");
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("r");
    let mut c = common::cli::bin();
    c.arg("release");
    for f in ["metavqa", "sig"] {
        c.arg("--qa")
            .arg(work.join("families").join(f).join("balanced_qa.arrow"));
    }
    c.arg("--store")
        .arg(work.join("store"))
        .arg("--image-dir")
        .arg(work.join("metavqa"))
        .arg("--out")
        .arg(&out)
        .args(["--device", "cpu", "--robustness-rows", "3"])
        .args(["--robustness-corruptions", "zoom_blur,frame_lost"])
        .args(["--robustness-severities", "1,5", "--seed", "9"]);
    common::cli::ok(c.output().unwrap(), "drivegen release --robustness-rows");
    let m = manifest(&out);
    assert_eq!(
        m["splits"],
        serde_json::json!([
            "test",
            "test_text_only",
            "test_frame_lost_s1",
            "test_frame_lost_s5",
            "test_zoom_blur_s1",
            "test_zoom_blur_s5"
        ])
    );
    assert_eq!(m["split_counts"]["test_zoom_blur_s5"]["sig"], 3);
    let (code, v) = super::validate::validate(&out);
    assert_eq!(code, 0, "{}", serde_json::to_string_pretty(&v).unwrap());

    // What cannot be re-asked, or shown, is refused before anything is written.
    for (args, why) in [
        (&["--robustness-families", "drivebench"][..], "drivebench"),
        (&["--robustness-severities", "6"][..], "severity"),
        (&["--images", "paths"][..], "embedded images"),
    ] {
        let o = common::cli::bin()
            .arg("release")
            .arg("--qa")
            .arg(work.join("families/sig/balanced_qa.arrow"))
            .arg("--out")
            .arg(t.path().join("refused"))
            .args(["--robustness-rows", "3"])
            .args(args)
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && e.contains(why), "{args:?}: {e}");
        assert!(!t.path().join("refused").exists(), "{args:?}");
    }
}

#[test]
fn the_build_report_plots_the_scored_robustness_splits() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("b");
    super::validate::copy_dir(built(), &dir);
    planted_predictions(&dir.join("release"), &dir.join("p.jsonl"));
    let cfg = std::fs::read_to_string(dir.join("build.toml")).unwrap();
    let cfg = cfg.replace("[report]\n", "[report]\npredictions = \"p.jsonl\"\n");
    std::fs::write(dir.join("build.toml"), cfg).unwrap();
    let o = common::cli::bin()
        .current_dir(&dir)
        .args(["build", "build.toml"])
        .output()
        .unwrap();
    common::cli::ok(o, "drivegen build with [report] predictions");
    let html = std::fs::read_to_string(dir.join("release/report.html")).unwrap();
    let (_, section) = html.split_once("<h2>Corruption robustness</h2>").unwrap();
    let section = section.split("<h2>").next().unwrap();
    assert!(section.contains("test_camera_crash"), "{section}");
    assert_eq!(section.matches("<svg").count(), 4, "a plot per family");
    assert!(section.contains("p.jsonl"));
}
