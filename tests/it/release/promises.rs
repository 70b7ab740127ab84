//! What a build promises about each family it enables: at least `min_rows` published (or the
//! build stops, naming the step that dropped them), and no held-out blind baseline beyond the
//! family's margin over chance (or the build stops with the audit table). The dataset card
//! ends with every enabled family's rows, audit and margin.

use std::path::Path;

use crate::common;

/// One synthetic scene and the ego-motion questions only: quick, and EgoDyn's answers, left
/// unbalanced, lean towards a few answers per type (a family a blind model can partly pass).
const EGODYN_ONLY: &str = r#"
name = "promises"
seed = 3
out = "release"

[input]
kind = "synth"
scenes = 1
duration_s = 8.0
width = 320
height = 180

[stages]
egomotion = true
"#;

fn build(dir: &Path, config: &str) -> std::process::Output {
    std::fs::write(dir.join("build.toml"), config).unwrap();
    common::cli::bin()
        .current_dir(dir)
        .args(["build", "build.toml"])
        .output()
        .unwrap()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_family_over_its_blind_margin_stops_the_build_unless_raised() {
    let tmp = tempfile::tempdir().unwrap();
    let o = build(tmp.path(), EGODYN_ONLY);
    let err = stderr(&o);
    assert!(!o.status.success(), "an unbalanced EgoDyn passed:\n{err}");
    assert!(err.contains("beyond the blind margin for egodyn"), "{err}");
    // The audit table, held out over the scene's clips, with the default margin.
    assert!(err.contains("folds by clip"), "{err}");
    let row = err
        .lines()
        .find(|l| l.starts_with("| egodyn |"))
        .unwrap_or_else(|| panic!("no egodyn row:\n{err}"));
    assert!(row.contains("| 0.050 | over |"), "{row}");
    let excess: f64 = row.split('|').nth(7).unwrap().trim().parse().unwrap();
    assert!(excess > 0.05, "{row}");
    // The card of the release left for inspection says the same.
    let card = std::fs::read_to_string(tmp.path().join("release/README.md")).unwrap();
    assert!(card.contains("| 0.050 | over |"), "{card}");

    // Raised explicitly, the same release is published, and its card states the margin.
    let raised = format!("{EGODYN_ONLY}\n[families.egodyn]\nblind_margin = 0.9\n");
    let o = build(tmp.path(), &raised);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(tmp.path().join("release/README.md")).unwrap();
    assert_eq!(
        card.matches("## Families, rows and the blind audit")
            .count(),
        1,
        "{card}"
    );
    let section = card
        .split("## Families, rows and the blind audit")
        .nth(1)
        .unwrap();
    let row = section
        .lines()
        .find(|l| l.starts_with("| egodyn |"))
        .unwrap();
    assert!(row.ends_with("| 0.900 | within |"), "{row}");
    let rows: u64 = row.split('|').nth(2).unwrap().trim().parse().unwrap();
    assert!(rows >= 10, "{row}");
}

#[test]
fn a_family_emptied_by_a_step_stops_the_build_naming_the_step() {
    let tmp = tempfile::tempdir().unwrap();
    let margin = "\n[families.egodyn]\nblind_margin = 0.9\n";
    // Balancing keeps three rows.
    let o = build(
        tmp.path(),
        &format!("{EGODYN_ONLY}{margin}\n[balance.egodyn]\ntarget = 1\nmax_rows = 3\n"),
    );
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("family egodyn is left with 3 rows, fewer than its min_rows (10), after step balance_egodyn"),
        "{err}"
    );
    assert!(err.contains("balancing selected 1 of"), "{err}");
    // The stage itself writes fewer than the family asks for.
    let o = build(
        tmp.path(),
        &format!("{EGODYN_ONLY}{margin}min_rows = 100000\n"),
    );
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("after step egomotion: the egomotion stage wrote"),
        "{err}"
    );
    // Allowed explicitly, three rows are published.
    let o = build(
        tmp.path(),
        &format!(
            "{EGODYN_ONLY}{margin}min_rows = 0\n\n[balance.egodyn]\ntarget = 1\nmax_rows = 3\n"
        ),
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn family_promises_that_cannot_hold_are_refused_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    for (section, expect) in [
        (
            "[families.egodyn]\nblind_margin = nan\n",
            "families.egodyn.blind_margin = NaN",
        ),
        (
            "[families.egodyn]\nblind_margin = 1.5\n",
            "families.egodyn.blind_margin must lie in [0, 1]",
        ),
        ("[families.egodyn]\nmin_rows = -1\n", "min_rows"),
        (
            "[families.sig]\nmin_rows = 5\n",
            "[families.sig]: its stage (sig) is not enabled",
        ),
        (
            "[families.nuplan]\nmin_rows = 5\n",
            "[families.nuplan]: unknown family",
        ),
        ("[families.egodyn]\nmin_row = 5\n", "min_row"),
    ] {
        let o = build(tmp.path(), &format!("{EGODYN_ONLY}\n{section}"));
        let err = stderr(&o);
        assert!(!o.status.success(), "{section}: accepted");
        assert!(
            err.contains("build.toml") && err.contains(expect),
            "{section}: {err}"
        );
        assert!(
            !tmp.path().join("release").exists(),
            "{section}: wrote a release"
        );
    }
}
