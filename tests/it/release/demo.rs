//! `drivegen demo` as a new user runs it: the three-scene release from the built-in corpus has
//! every family, and a blind model cannot pass any of them. The blind baselines are measured
//! apart from drivegen's own audit (`tests/oracles/blind_check.py`: letter prior, answer prior
//! per template, a question-only conditional logit, scenes held out). A family of a few dozen
//! rows cannot be told from chance to within 0.05 (its standard error at chance is about 0.1),
//! so the check allows two standard errors beyond the margin; the build itself stops at the
//! margin on its own audit.

use std::ffi::OsStr;

use crate::common;

const FAMILIES: [&str; 5] = ["drivebench", "egodyn", "metavqa", "sig", "stsbench"];

#[test]
fn the_demo_has_every_family_and_none_is_answerable_blind() {
    let Some(py) = common::oracle::python("oracles") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let rel = tmp.path().join("demo");
    common::cli::ok(
        common::cli::bin()
            .current_dir(tmp.path())
            .args(["demo", "--scenes", "3", "--out"])
            .arg(&rel)
            .output()
            .unwrap(),
        "drivegen demo",
    );
    let json = tmp.path().join("blind.json");
    let out = common::oracle::run_script(
        &py,
        "blind_check.py",
        &[
            rel.as_os_str(),
            OsStr::new("--families"),
            OsStr::new(&FAMILIES.join(",")),
            OsStr::new("--margin"),
            OsStr::new("0.05"),
            OsStr::new("--sampling-error"),
            OsStr::new("2"),
            OsStr::new("--json"),
            json.as_os_str(),
        ],
        &[],
    );
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    for family in FAMILIES {
        let f = &report[family];
        // Held out by scene: three scenes give three folds.
        assert_eq!(f["grouping"], "scene", "{family}: {out}");
        assert_eq!(f["folds"], 3, "{family}: {out}");
        let excess = f["excess"].as_f64().unwrap_or(f64::INFINITY);
        let se = f["standard_error"].as_f64().unwrap_or(0.0);
        assert!(excess <= 0.05 + 2.0 * se, "{family}: {out}");
        // SIG, the largest family the issue singled out, within the margin itself.
        if family == "sig" {
            assert!(excess <= 0.05, "{family}: {out}");
        }
    }
}
