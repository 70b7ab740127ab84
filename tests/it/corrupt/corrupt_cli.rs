//! `drivegen corrupt` end to end on a small synthetic store: the tables, the questions, the
//! sensor-failure views, determinism (same seed → byte-identical files) and independence from
//! how many frames a run processes; and the contact sheet.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow::array::{Array, BooleanArray, StringArray};
use arrow::ipc::reader::FileReader;
use common::cli::{bin, ok};

fn device() -> &'static str {
    if std::env::var("DRIVEGEN_GPU_TESTS").is_ok_and(|v| v.eq_ignore_ascii_case("no")) {
        "cpu"
    } else {
        "gpu"
    }
}

fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

fn batches(path: &Path) -> Vec<arrow::array::RecordBatch> {
    FileReader::try_new(std::fs::File::open(path).unwrap(), None)
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

fn strings(b: &arrow::array::RecordBatch, name: &str) -> Vec<String> {
    let a = b
        .column_by_name(name)
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    (0..a.len()).map(|i| a.value(i).to_string()).collect()
}

fn store(dir: &Path) -> PathBuf {
    let root = dir.join("nusc");
    ok(
        bin()
            .args(["synth", "--scenes", "1", "--duration", "1", "--no-sweeps"])
            .args(["--width", "160", "--height", "90", "--out"])
            .arg(&root)
            .output()
            .unwrap(),
        "synth",
    );
    let store = dir.join("store");
    ok(
        bin()
            .args(["ingest", "--root"])
            .arg(&root)
            .arg("--out")
            .arg(&store)
            .output()
            .unwrap(),
        "ingest",
    );
    store
}

fn corrupt(store: &Path, out: &Path, extra: &[&str]) -> String {
    ok(
        bin()
            .args(["corrupt", "--store"])
            .arg(store)
            .arg("--out")
            .arg(out)
            .args(["--seed", "5", "--device", device()])
            .args(extra)
            .output()
            .unwrap(),
        "corrupt",
    )
}

#[test]
fn corrupt_a_store_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let kernels = "brightness,dark,snow,fog,rain,water_splash,lens_obstacle,camera_crash,frame_lost,saturate,motion_blur,zoom_blur,color_quant";
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    let one = dir.path().join("one");
    println!(
        "{}",
        corrupt(&store, &a, &["--corruption", kernels, "--severity", "all"])
    );
    corrupt(&store, &b, &["--corruption", kernels, "--severity", "all"]);
    corrupt(
        &store,
        &one,
        &[
            "--corruption",
            kernels,
            "--severity",
            "all",
            "--max-frames",
            "1",
        ],
    );
    let (fa, fb, f1) = (files(&a), files(&b), files(&one));
    assert_eq!(fa.len(), fb.len());
    for (p, bytes) in &fa {
        assert!(
            fb.get(p) == Some(bytes),
            "{} differs between two runs",
            p.display()
        );
    }
    // The first frame's images do not depend on the other frames being processed.
    let mut compared = 0;
    for (p, bytes) in &f1 {
        // The tables, the (empty) rejects log and the ownership marker cover the whole run.
        let bookkeeping = p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(".drivegen"));
        if bookkeeping || p.extension().is_some_and(|e| e == "arrow" || e == "jsonl") {
            continue;
        }
        assert!(
            fa.get(p) == Some(bytes),
            "{} depends on the batch",
            p.display()
        );
        compared += 1;
    }
    assert_eq!(compared, 6 * 13 * 5);

    // The table: one row per view, corruption and severity; sensor failures are black.
    let rows = batches(&a.join("corruptions.arrow"));
    let r = &rows[0];
    let frames = r.num_rows() / (6 * 13 * 5);
    assert!(
        frames >= 2 && r.num_rows() == frames * 6 * 13 * 5,
        "{} rows",
        r.num_rows()
    );
    let corr = strings(r, "corruption");
    let outp = strings(r, "output_path");
    let applied = r
        .column_by_name("applied")
        .unwrap()
        .as_any()
        .downcast_ref::<BooleanArray>()
        .unwrap();
    for i in 0..r.num_rows() {
        if corr[i] == "camera_crash" || corr[i] == "frame_lost" {
            let img = image::open(a.join(&outp[i])).unwrap().to_rgb8();
            // JPEG of an all-black image decodes to all black.
            assert_eq!(img.iter().all(|v| *v == 0), applied.value(i), "{}", outp[i]);
        }
    }
    // The questions hold the common invariants.
    let qa = batches(&a.join("corruption_qa.arrow"));
    let recs: Vec<_> = qa
        .iter()
        .flat_map(|b| drivegen::qa::from_batch(b).unwrap())
        .collect();
    drivegen::qa::check_invariants(&recs).unwrap_or_else(|e| panic!("{}", e.join("\n")));
    let counts = recs
        .iter()
        .filter(|q| q.question_type == "camera_failure_count")
        .count();
    assert_eq!(counts, frames * 2 * 5);
}

#[test]
fn codec_corruptions_and_the_contact_sheet() {
    if drivegen::corrupt::codec::find_ffmpeg().is_err() {
        crate::common::oracle::missing("ffmpeg");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let out = dir.path().join("codec");
    corrupt(
        &store,
        &out,
        &["--corruption", "h265,bit_error", "--max-frames", "1"],
    );
    let rows = batches(&out.join("corruptions.arrow"));
    assert_eq!(rows[0].num_rows(), 12);
    let img = std::fs::read_dir(dir.path().join("nusc/samples/CAM_FRONT"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let sheet = dir.path().join("sheet.png");
    ok(
        bin()
            .args(["corrupt", "--contact-sheet"])
            .arg(&img)
            .arg("--out")
            .arg(&sheet)
            .args(["--cell-width", "64", "--device", device()])
            .output()
            .unwrap(),
        "contact sheet",
    );
    let s = image::open(&sheet).unwrap();
    // 6 columns and 15 rows of 64×36 cells with 4-pixel gaps, after the label margins.
    let (left, top, _) = drivegen::corrupt::sheet::margins(64);
    assert_eq!(
        (s.width(), s.height()),
        (left + 6 * 68 + 4, top + 15 * 40 + 4)
    );
    assert!(Path::new(&format!("{}.json", sheet.display())).is_file());
}

#[test]
fn bench_corrupt_reports_every_corruption() {
    if device() == "cpu" {
        eprintln!("skipped: the benchmark needs an adapter");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("bench.md");
    let out = ok(
        bin()
            .args([
                "bench",
                "corrupt",
                "--width",
                "64",
                "--height",
                "48",
                "--images",
                "2",
                "--gpu-only",
                "--device",
                device(),
                "--report",
            ])
            .arg(&report)
            .output()
            .unwrap(),
        "bench corrupt",
    );
    for c in drivegen::corrupt::Corruption::ALL {
        assert!(
            out.contains(&format!("| {} |", c.name())),
            "{} missing:\n{out}",
            c.name()
        );
    }
    assert_eq!(std::fs::read_to_string(&report).unwrap(), out);
}
