//! Progress and logging as a user sees them: a redrawn bar when stderr is a terminal (run
//! under `script`, which gives the command a pseudo-terminal), plain lines when it is a pipe,
//! and `-v` saying what each build step decided (why it runs, the device, the questions each
//! stage asked, what balancing and the release kept), none of which shows without `-v`.

use crate::common;

use std::path::Path;
use std::process::Command;

/// `drivegen synth` of two small scenes into `out`, progress left to drivegen's own choice.
fn synth_line(out: &Path) -> String {
    format!(
        "{} synth --scenes 2 --duration 3 --width 160 --height 90 --out {}",
        env!("CARGO_BIN_EXE_drivegen"),
        out.display()
    )
}

#[test]
fn a_pipe_gets_plain_progress_lines() {
    let d = tempfile::tempdir().unwrap();
    let o = common::cli::bin()
        .env_remove("DRIVEGEN_PROGRESS")
        .args([
            "synth",
            "--scenes",
            "2",
            "--duration",
            "3",
            "--width",
            "160",
        ])
        .args(["--height", "90", "--out"])
        .arg(d.path().join("c"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    assert!(err.contains("synth scenes: 2/2 (100%), "), "{err}");
    // No terminal control codes and no bar in a log.
    assert!(!err.contains('\u{1b}') && !err.contains('['), "{err}");
}

#[test]
fn a_terminal_gets_one_redrawn_bar() {
    if Command::new("script").arg("--version").output().is_err() {
        if std::env::var("DRIVEGEN_REQUIRE_ORACLES").is_ok_and(|v| v == "1") {
            panic!("`script` (bsdutils) is missing");
        }
        eprintln!("skipped: `script` is missing");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let o = Command::new("script")
        .args(["-qec", &synth_line(&d.path().join("c")), "/dev/null"])
        .env_remove("DRIVEGEN_PROGRESS")
        .output()
        .unwrap();
    let tty = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{tty}");
    assert!(tty.contains("synth scenes ["), "no bar drawn:\n{tty}");
    assert!(tty.contains("2/2"), "the bar never reached the end:\n{tty}");
    assert!(
        !tty.contains("synth scenes: "),
        "plain lines on a terminal:\n{tty}"
    );
}

/// Runs the tiny every-stage build in `dir`; returns its stderr.
fn build(dir: &Path, verbose: bool) -> String {
    let mut c = common::cli::bin();
    if verbose {
        c.arg("-v");
    }
    let o = c
        .current_dir(dir)
        .args(["build", "build.toml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    err
}

#[test]
fn verbose_builds_say_what_each_step_decided() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("build.toml"),
        common::build_config::EVERY_STAGE,
    )
    .unwrap();
    let err = build(d.path(), true);
    for step in [
        "corpus",
        "ingest",
        "egomotion",
        "visibility",
        "som",
        "metavqa",
        "stsbench",
        "sig",
        "corrupt",
        "balance_egodyn",
        "release",
        "validate",
    ] {
        let why = format!("drivegen: {step}: runs, no earlier run completed it");
        assert!(err.contains(&why), "{why} missing:\n{err}");
    }
    assert!(err.contains("drivegen: device cpu: the CPU twins"), "{err}");
    for table in [
        "egodyn/egodyn_qa.arrow",
        "metavqa/metavqa_qa.arrow",
        "stsbench/stsbench_qa.arrow",
        "sig/sig_qa.arrow",
        "corrupt/corruption_qa.arrow",
    ] {
        assert!(
            err.lines()
                .any(|l| l.contains(table) && l.ends_with(" questions")),
            "no question counts for {table}:\n{err}"
        );
    }
    for decided in [
        "balance release.work/families/egodyn: kept ",
        "most common answer",
        "rows kept, 0 left out for unusable images",
        "release test: metavqa ",
    ] {
        assert!(err.contains(decided), "{decided} missing:\n{err}");
    }

    // Run again: every step is reused, and -v says why a changed one runs.
    let again = build(d.path(), true);
    assert!(!again.contains(": runs, "), "{again}");
    let seed = |n: u32| {
        let cfg = common::build_config::EVERY_STAGE.replace("seed = 7", &format!("seed = {n}"));
        assert_ne!(cfg, common::build_config::EVERY_STAGE);
        std::fs::write(d.path().join("build.toml"), cfg).unwrap();
    };
    seed(8);
    let changed = build(d.path(), true);
    assert!(
        changed
            .contains("runs, its settings, inputs or tool version changed since it last completed"),
        "{changed}"
    );
    seed(9);
    let changed = build(d.path(), false);
    assert!(
        !changed.lines().any(|l| l.starts_with("drivegen: ")),
        "info lines without -v:\n{changed}"
    );
}
