//! `drivegen build` from Waymo v2 and Bench2Drive inputs: a Waymo split (`kind = "waymo"`)
//! and the synthetic corpus written as Bench2Drive (`kind = "synth"`, `format =
//! "bench2drive"`) go through ingest, ego motion, visibility, Set-of-Mark and corruptions to a
//! release whose tables hold questions.

use crate::common;

use std::path::Path;

fn drivegen(dir: &Path, args: &[&str]) -> String {
    let o = common::cli::bin()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    common::cli::ok(o, &format!("drivegen {args:?}"))
}

/// The stages after `[input]`, with the built-in stage configs: Waymo and CARLA boxes carry no
/// visibility bin and Waymo's front camera is `FRONT`, which the defaults handle.
const STAGES: &str = r#"
[stages]
egomotion = true
visibility = true
som = true
corrupt = true

[visibility]
device = "cpu"

[som]
device = "cpu"

[corrupt]
device = "cpu"
corruptions = "brightness,camera_crash"
severity = "default"
frames_per_scene = 1

[release]
rows_per_shard = 1000
"#;

fn setup(dir: &Path, input: &str) {
    std::fs::create_dir_all(dir).unwrap();
    // The point is the source format, not the few questions one short scene gives.
    let relaxed = common::build_config::relaxed(&["drivebench", "egodyn"]);
    let cfg =
        format!("name = \"sources\"\nseed = 5\nout = \"release\"\n\n{input}\n{STAGES}{relaxed}");
    std::fs::write(dir.join("build.toml"), cfg).unwrap();
}

/// The release's question counts per family, and the files under `data/`.
fn check_release(dir: &Path, frames_cameras: usize) {
    let rel = dir.join("release");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(rel.join("manifest.json")).unwrap()).unwrap();
    let counts = &manifest["counts"];
    let total = |family: &str| -> u64 {
        counts[family]
            .as_object()
            .map(|m| m.values().map(|v| v.as_u64().unwrap()).sum())
            .unwrap_or(0)
    };
    assert!(total("egodyn") > 0, "{counts}");
    // One keyframe per scene, 2 corruptions: a type question per corruption and the crash
    // count question.
    assert_eq!(counts["drivebench"]["corruption_type"], 2, "{counts}");
    assert!(total("drivebench") >= 3, "{counts}");
    let data: Vec<_> = std::fs::read_dir(rel.join("data"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    assert!(!data.is_empty());
    let rows: i64 = data
        .iter()
        .map(|p| {
            let f = std::fs::File::open(p).unwrap();
            let r = parquet::file::reader::SerializedFileReader::new(f).unwrap();
            parquet::file::reader::FileReader::metadata(&r)
                .file_metadata()
                .num_rows()
        })
        .sum();
    assert_eq!(rows as u64, total("egodyn") + total("drivebench"));
    // Set-of-Mark drew on the source's images.
    let som = dir.join("release.work").join("som");
    let marks = std::fs::File::open(som.join("marks.arrow")).unwrap();
    let n: usize = arrow::ipc::reader::FileReader::try_new(marks, None)
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert!(n > 0, "no marks");
    // Render once: the corrupt step leaves its images to the release, which embeds them as
    // real JPEGs, one per view and corruption.
    let mut stack = vec![dir.join("release.work").join("corrupt")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                assert!(p.extension().is_none_or(|x| x != "jpg"), "{}", p.display());
            }
        }
    }
    let mut jpgs = std::collections::BTreeSet::new();
    for p in &data {
        let f = std::fs::File::open(p).unwrap();
        let reader =
            parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(f, 256).unwrap();
        for b in reader {
            let b = b.unwrap();
            use arrow::array::{Array, AsArray};
            let list = b.column_by_name("images").unwrap().as_list::<i32>();
            for row in 0..list.len() {
                let items = list.value(row);
                let st = items.as_struct();
                let bytes = st.column(0).as_binary::<i32>();
                let paths = st.column(1).as_string::<i32>();
                for k in 0..st.len() {
                    let path = paths.value(k);
                    let corrupted = path
                        .split('/')
                        .next()
                        .is_some_and(|c| drivegen::corrupt::Corruption::parse(c).is_ok());
                    if corrupted && !jpgs.contains(path) {
                        let img = image::load_from_memory(bytes.value(k)).unwrap();
                        assert!(img.width() > 0);
                        jpgs.insert(path.to_string());
                    }
                }
            }
        }
    }
    assert_eq!(jpgs.len(), 2 * frames_cameras, "{jpgs:?}");
    assert!(rel.join("report/contact_sheet.png").is_file());
}

#[test]
fn build_from_a_waymo_split() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    drivegen(
        d,
        &[
            "synth",
            "--format",
            "waymo-v2",
            "--scenes",
            "1",
            "--duration",
            "6",
            "--width",
            "320",
            "--height",
            "180",
            "--out",
            "segments",
        ],
    );
    setup(d, "[input]\nkind = \"waymo\"\nroot = \"segments\"\n");
    let out = drivegen(d, &["build", "build.toml"]);
    assert!(out.contains("questions:"), "{out}");
    check_release(d, 5);
    // Nothing to redo on a rerun.
    let again = drivegen(d, &["build", "build.toml"]);
    assert!(!again.contains(" ran "), "{again}");
}

#[test]
fn build_from_synthetic_bench2drive() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    setup(
        d,
        "[input]\nkind = \"synth\"\nformat = \"bench2drive\"\nscenes = 1\nduration_s = 6.0\n\
         width = 320\nheight = 180\n",
    );
    let out = drivegen(d, &["build", "build.toml"]);
    assert!(out.contains("questions:"), "{out}");
    check_release(d, 6);
}
