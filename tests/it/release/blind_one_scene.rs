//! The blind audit of a one-scene build: with a single scene its folds are drawn over clips and
//! keyframes, so the baselines are scored only on rows they were not fitted on, and the blind
//! filter, trusting only such held-out figures, keeps the MetaVQA and SIG rows that a
//! fitted-on-itself audit would all but erase.

use crate::common;

use common::build_config::EVERY_STAGE;

#[test]
fn a_one_scene_build_is_audited_over_clips_and_keeps_its_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    assert!(EVERY_STAGE.contains("scenes = 2") && EVERY_STAGE.contains("max_rows = 60"));
    // One scene, and the same tight margin for MetaVQA and SIG as the demo's.
    let config = EVERY_STAGE
        .replace("scenes = 2", "scenes = 1")
        .replace("max_rows = 60", "max_rows = 60\nmax_blind_excess = 0.04")
        .replace("max_blind_excess = 0.2", "max_blind_excess = 0.04")
        .replace("blind_margin = 0.3", "blind_margin = 1.0")
        // One 320×180 scene of 8 s holds six STSBench scenarios and four DriveBench questions,
        // and only MetaVQA and SIG are filtered: this test is about the folds, so the
        // build's promises are relaxed for the others (`promises.rs` holds them).
        + &common::build_config::relaxed(&["egodyn", "metavqa", "stsbench"]);
    std::fs::write(d.join("build.toml"), config).unwrap();
    let out = common::cli::ok(
        common::cli::bin()
            .current_dir(d)
            .args(["build", "build.toml"])
            .output()
            .unwrap(),
        "drivegen build",
    );
    let rel = d.join("release");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(rel.join("manifest.json")).unwrap()).unwrap();
    let audit = &manifest["blind_audit"];
    assert_eq!(audit["grouping"], "clip", "{audit}");
    assert!(audit["folds"].as_u64().unwrap_or(0) >= 2, "{audit}");
    for family in ["metavqa", "sig"] {
        let rows: u64 = manifest["counts"][family]
            .as_object()
            .map_or(0, |m| m.values().filter_map(|n| n.as_u64()).sum());
        assert!(
            rows > 0,
            "{family}: no rows left\n{out}\n{}",
            manifest["counts"]
        );
        let b = &audit["families"][family];
        assert_eq!(b["rows"].as_u64(), Some(rows), "{family}: {audit}");
    }
    // `drivegen audit` says the same, and names what its folds were drawn over.
    let table = common::cli::ok(
        common::cli::bin().arg("audit").arg(&rel).output().unwrap(),
        "drivegen audit",
    );
    assert!(table.contains("clips and keyframes"), "{table}");
    // The card lists every enabled family with its rows and its held-out audit.
    let card = std::fs::read_to_string(rel.join("README.md")).unwrap();
    let section = card
        .split("## Families, rows and the blind audit")
        .nth(1)
        .unwrap_or_else(|| panic!("no families section:\n{card}"));
    assert!(section.contains("folds of clips"), "{section}");
    for family in ["drivebench", "egodyn", "metavqa", "sig", "stsbench"] {
        assert!(
            section.contains(&format!("| {family} | ")),
            "{family}: {section}"
        );
    }
}
