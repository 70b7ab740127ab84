//! `drivegen export` on the shared build of every family: each format loaded as its harness
//! loads it (`tests/oracles/export_check.py`: LLaVA's JSON with its `<image>` tokens,
//! VLMEvalKit's TSV through pandas with base64 images, JSONL), every row of every split there
//! with the release's answers and image bytes; an export folder inside the release is refused.

use crate::common;

use std::process::Command;

use common::built::built;

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
    let o = Command::new(py)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/oracles/export_check.py"
        ))
        .arg(&release)
        .arg(format)
        .arg(&out)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{format} export: {text}");
    assert!(text.contains(", 0 problems"), "{text}");
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
