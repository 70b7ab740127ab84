//! `drivegen export --format lmms-eval` on the shared build of every family, loaded by lmms-eval's
//! own `TaskManager` (`tests/oracles/lmms_eval_check.py`): every (family, split) a task, every
//! task's documents the release's rows, its images at the recorded sizes, its prompt the
//! release's, and the oracle answers scoring 1.0 where a wrong letter scores 0.0.

use crate::common;

use common::built::built;

#[test]
fn lmms_eval_tasks_load_with_its_task_manager_and_score_the_oracle() {
    let Some(py) = common::oracle::python("lmms") else {
        return;
    };
    let release = built().join("release");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tasks");
    let printed = common::cli::drivegen(
        &["export", "--format", "lmms-eval"],
        &[("", &release), ("--out", &out)],
    );
    assert!(printed.contains("export:"), "{printed}");
    assert!(out.join("utils.py").is_file() && out.join("_default_template_yaml").is_file());
    // A cache of its own: `datasets` would otherwise write under the user's home.
    let cache = dir.path().join("hf");
    let text = common::oracle::run_script(
        &py,
        "lmms_eval_check.py",
        &[release.as_os_str(), out.as_os_str()],
        &[
            ("HF_HOME", cache.as_os_str()),
            ("HF_DATASETS_OFFLINE", "1".as_ref()),
        ],
    );
    eprintln!("{}", text.trim());
    assert!(text.contains("rows checked"), "{text}");
}

#[test]
fn lmms_eval_export_refuses_a_name_that_cannot_be_a_task() {
    let release = built().join("release");
    let dir = tempfile::tempdir().unwrap();
    let o = common::cli::bin()
        .args([
            "export",
            "--format",
            "lmms-eval",
            "--name",
            "Drive Gen",
            "--out",
        ])
        .arg(dir.path().join("tasks"))
        .arg(&release)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--name") && err.contains("lmms-eval task"),
        "{err}"
    );
    assert!(!dir.path().join("tasks").exists());
}

#[test]
fn lmms_eval_tasks_join_an_export_of_their_release_and_refuse_another_ones() {
    let release = built().join("release");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("export");
    common::cli::drivegen(
        &["export", "--format", "jsonl"],
        &[("", &release), ("--out", &out)],
    );
    common::cli::drivegen(
        &["export", "--format", "lmms-eval"],
        &[("", &release), ("--out", &out)],
    );
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join(".drivegen-export.json")).unwrap()).unwrap();
    assert!(
        record["formats"]["jsonl"].is_array() && record["formats"]["lmms-eval"].is_array(),
        "{record}"
    );
    // Another release (its manifest differs by a byte) is not mixed into that folder.
    let other = dir.path().join("other");
    std::fs::create_dir_all(other.join("data")).unwrap();
    for e in std::fs::read_dir(release.join("data")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), other.join("data").join(e.file_name())).unwrap();
    }
    std::fs::copy(release.join("README.md"), other.join("README.md")).unwrap();
    let mut manifest = std::fs::read(release.join("manifest.json")).unwrap();
    manifest.push(b'\n');
    std::fs::write(other.join("manifest.json"), manifest).unwrap();
    let before = std::fs::read(out.join(".drivegen-export.json")).unwrap();
    let o = common::cli::bin()
        .args(["export", "--format", "lmms-eval", "--out"])
        .arg(&out)
        .arg(&other)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success(),
        "exported over another release's export"
    );
    assert!(err.contains("holds an export of another release"), "{err}");
    assert_eq!(
        before,
        std::fs::read(out.join(".drivegen-export.json")).unwrap()
    );
}
