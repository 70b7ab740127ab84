//! `drivegen export` on the shared build of every family: each format loaded as its harness
//! loads it (`tests/oracles/export_check.py`: LLaVA's JSON with its `<image>` tokens,
//! VLMEvalKit's TSV through pandas with base64 images, JSONL), every row of every split there
//! with the release's answers and image bytes; an export folder inside the release is refused.

use crate::common;

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use common::built::built;

/// Runs `tests/oracles/SCRIPT` with `args`; its output, which must report no problems.
fn oracle(py: &Path, script: &str, args: &[&OsStr]) -> String {
    common::oracle::run_script(py, script, args, &[])
}

fn check(format: &str) {
    let Some(py) = common::oracle::python("interop") else {
        return;
    };
    let release = built().join("release");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(format);
    let printed = common::cli::drivegen(
        &["export", "--format", format],
        &[("", &release), ("--out", &out)],
    );
    assert!(printed.contains("export:"), "{printed}");
    let text = oracle(
        &py,
        "export_check.py",
        &[release.as_os_str(), format.as_ref(), out.as_os_str()],
    );
    eprintln!("{}", text.trim());
}

#[test]
fn llava_export_loads_with_one_image_token_per_image() {
    check("llava");
}

#[test]
fn vlmevalkit_export_loads_with_pandas_and_decodes() {
    check("vlmevalkit");
}

#[test]
fn jsonl_export_keeps_answers_and_images() {
    check("jsonl");
}

#[test]
fn exports_refuse_a_folder_inside_the_release() {
    let release = built().join("release");
    let o = common::cli::bin()
        .args(["export", "--format", "jsonl", "--out"])
        .arg(release.join("export"))
        .arg(&release)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("release"), "{err}");
    assert!(!release.join("export").exists());
}

#[test]
fn trace_follows_a_row_of_each_family_back_to_its_source_files() {
    let release = built().join("release");
    // The corpus's own index, read as the nuScenes devkit reads it: sample_data token → file.
    let corpus = built().join("release.work/corpus");
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(corpus.join("v1.0-mini/sample_data.json")).unwrap())
            .unwrap();
    let scenes: serde_json::Value =
        serde_json::from_slice(&std::fs::read(corpus.join("v1.0-mini/scene.json")).unwrap())
            .unwrap();
    // sample_data token → (file, sample token).
    let file_of = |token: &str| -> (String, String) {
        let s = index
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["token"] == token)
            .unwrap_or_else(|| panic!("{token} is not in sample_data.json"));
        let text = |k: &str| s[k].as_str().unwrap().to_string();
        (text("filename"), text("sample_token"))
    };
    let rows = drivegen::release::read::read_release(&release).unwrap();
    let mut rng = common::random::Rng(common::random::seed());
    for family in ["egodyn", "metavqa", "stsbench", "sig", "drivebench"] {
        let of: Vec<_> = rows.iter().filter(|r| r.family == family).collect();
        assert!(!of.is_empty(), "no {family} row in the build");
        let r = of[rng.below(of.len() as u32) as usize];
        let o = common::cli::bin()
            .arg("trace")
            .arg(&release)
            .arg(&r.qa_id)
            .output()
            .unwrap();
        let printed = common::cli::ok(o, "drivegen trace");
        assert!(printed.starts_with(&r.qa_id), "{printed}");
        assert!(
            printed.contains("source    nuscenes v1.0-mini, built by drivegen"),
            "{printed}"
        );
        let token = scenes
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == r.scene_id.as_str())
            .unwrap()["token"]
            .as_str()
            .unwrap();
        assert!(
            printed.contains(&format!("scene {} (the source's {token})", r.scene_id)),
            "{printed}"
        );
        assert!(
            printed.contains(&format!("scene {}", r.scene_id)),
            "{printed}"
        );
        for (k, (cam, token)) in r.cameras.iter().zip(&r.camera_frame_ids).enumerate() {
            let (file, sample) = file_of(token);
            assert!(corpus.join(&file).is_file(), "{file}");
            let line =
                format!("image {k:<3} {cam} frame {token} of sample {sample}: source {file}");
            assert!(printed.contains(&line), "{line} missing:\n{printed}");
            // A corrupted or marked image names the file it was drawn on and its own path.
            if let Some(shown) = r.image_paths.get(k) {
                assert!(
                    printed.contains(&format!("{line}, shown as {shown}")),
                    "{shown} missing:\n{printed}"
                );
            }
        }
        assert!(
            printed.contains(&format!("rule      {}", r.rule)),
            "{printed}"
        );
        assert!(
            printed.contains(&format!("answer    {} = {}", r.answer_letter, r.answer)),
            "{printed}"
        );
        assert!(
            printed.contains(&format!("{}. {}  <- key", r.answer_letter, r.answer)),
            "{printed}"
        );
    }
    let o = common::cli::bin()
        .arg("trace")
        .arg(&release)
        .arg("no-such-id")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no-such-id"));
}

#[test]
fn the_viewer_loads_in_chromium_filters_and_shows_marked_images() {
    let Some(py) = common::oracle::python("interop") else {
        return;
    };
    if Command::new("chromium").arg("--version").output().is_err() {
        if std::env::var("DRIVEGEN_REQUIRE_ORACLES").is_ok_and(|v| v == "1") {
            panic!("chromium is missing: run scripts/setup.sh");
        }
        eprintln!("skipped: chromium is missing (scripts/setup.sh installs it)");
        return;
    }
    let release = built().join("release");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("viewer");
    let printed = common::cli::drivegen(&["view"], &[("", &release), ("--out", &out)]);
    assert!(printed.contains("index.html"), "{printed}");
    let shot = dir.path().join("metavqa.png");
    let text = oracle(
        &py,
        "view_check.py",
        &[release.as_os_str(), out.as_os_str(), shot.as_os_str()],
    );
    eprintln!("{}", text.trim());
}

#[test]
fn a_build_asked_for_a_viewer_writes_one_of_every_row() {
    let work = built().join("release.work");
    let index = std::fs::read_to_string(work.join("viewer/index.js")).unwrap();
    let json = index
        .strip_prefix("drivegenIndex(")
        .and_then(|s| s.trim_end().strip_suffix(");"))
        .unwrap();
    let ix: serde_json::Value = serde_json::from_str(json).unwrap();
    let splits = drivegen::release::read::read_release_splits(&built().join("release"), true)
        .unwrap()
        .splits;
    let rows: usize = splits.values().map(Vec::len).sum();
    assert_eq!(ix["rows"].as_array().unwrap().len(), rows);
    assert!(work.join("viewer/index.html").is_file());
    assert!(work.join("checkpoints/viewer.json").is_file());
}
