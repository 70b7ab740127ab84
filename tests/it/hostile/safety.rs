//! Numbers a command cannot use, limits files, forced runs, ownership of output folders.

use super::*;

/// Runs the binary in `dir`, stdout and stderr captured.
pub(super) fn run_in(dir: &Path, args: &[&str]) -> std::process::Output {
    common::cli::bin()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// A build config over 1 MiB (TOML comments).
pub(super) fn big_config(t: &Path) {
    let mut text = BUILD.to_string();
    text.push_str(&"# padding\n".repeat(220_000));
    write_build(t, &text);
}

/// Numbers a command cannot use, limits set by a file, forced runs, links out of a root and
/// reports to standard output.
pub(super) fn safety_cases() -> Vec<Case> {
    let limits =
        |text: &'static str| move |t: &Path| std::fs::write(t.join("limits.toml"), text).unwrap();
    let mut v = Vec::new();
    for (name, args, flag) in [
        (
            "corrupt --frames-per-scene 0",
            &[
                "corrupt",
                "--store",
                "{t}/store",
                "--out",
                "{t}/c",
                "--frames-per-scene",
                "0",
            ][..],
            "--frames-per-scene",
        ),
        (
            "corrupt --max-frames 0",
            &[
                "corrupt",
                "--store",
                "{t}/store",
                "--out",
                "{t}/c",
                "--max-frames",
                "0",
            ][..],
            "--max-frames",
        ),
        (
            "metavqa --per-frame 0",
            &[
                "metavqa",
                "--store",
                "{t}/store",
                "--visibility",
                "{t}/v.arrow",
                "--out",
                "{t}/m",
                "--per-frame",
                "0",
            ][..],
            "--per-frame",
        ),
        (
            "--threads 0",
            &["--threads", "0", "inspect", "{t}/store"][..],
            "--threads",
        ),
        (
            "audit --max-excess nan",
            &["audit", "{t}/rel", "--max-excess", "nan"][..],
            "--max-excess",
        ),
        (
            "balance --answer-ratio 0.5",
            &[
                "balance",
                "--qa",
                "{t}/q.arrow",
                "--out",
                "{t}/b",
                "--target",
                "5",
                "--answer-ratio",
                "0.5",
            ][..],
            "--answer-ratio",
        ),
        (
            "balance --max-blind-excess 2",
            &[
                "balance",
                "--qa",
                "{t}/q.arrow",
                "--out",
                "{t}/b",
                "--target",
                "5",
                "--max-blind-excess",
                "2",
            ][..],
            "--max-blind-excess",
        ),
        (
            "demo --scenes 0",
            &["demo", "--out", "{t}/d", "--scenes", "0"][..],
            "--scenes",
        ),
        (
            "synth --duration inf",
            &["synth", "--out", "{t}/s", "--duration", "inf"][..],
            "--duration",
        ),
        (
            "release --rows-per-shard 0",
            &[
                "release",
                "--qa",
                "{t}/q.arrow",
                "--out",
                "{t}/r",
                "--rows-per-shard",
                "0",
            ][..],
            "--rows-per-shard",
        ),
        (
            "ingest --chunk 0",
            &[
                "ingest", "--root", "{t}/in", "--out", "{t}/st", "--chunk", "0",
            ][..],
            "--chunk",
        ),
    ] {
        v.push(quick(case(
            name,
            "nuscenes",
            with_store,
            args,
            &[],
            fails(&[flag]),
        )));
    }
    v.push(quick(case(
        "a limits file lowering the config limit",
        "nuscenes",
        |t| {
            big_config(t);
            std::fs::write(t.join("limits.toml"), "config_mib = 1\n").unwrap();
        },
        &["--limits", "{t}/limits.toml", "build", "{t}/build.toml"],
        &[],
        fails(&["build.toml", "config_mib", "--limits"]),
    )));
    v.push(quick(case(
        "a limits file with an unknown key",
        "nuscenes",
        limits("table_gib = 1\n"),
        &["--limits", "{t}/limits.toml", "inspect", "{t}/in"],
        &[],
        fails(&["limits.toml", "table_gib", "image_mpix"]),
    )));
    v.push(quick(case(
        "a limits file with a zero",
        "nuscenes",
        limits("table_mib = 0\n"),
        &["--limits", "{t}/limits.toml", "inspect", "{t}/in"],
        &[],
        fails(&["limits.toml", "table_mib", "at least 1"]),
    )));
    v.push(quick(case(
        "a limits file lowering the table limit",
        "nuscenes",
        |t| {
            // Two MiB of JSON whitespace: a valid table over the lowered limit.
            let p = nusc_table(t, "sample_data");
            let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
            f.write_all(&vec![b' '; 2 << 20]).unwrap();
            std::fs::write(t.join("limits.toml"), "table_mib = 1\n").unwrap();
        },
        &[
            "--limits",
            "{t}/limits.toml",
            "ingest",
            "--root",
            "{t}/in",
            "--out",
            "{t}/store",
        ],
        &["store"],
        fails(&["sample_data.json", "table_mib"]),
    )));
    v.push(quick(case(
        "a limits file that is a FIFO",
        "nuscenes",
        |t| mkfifo(&t.join("limits.toml")),
        &["--limits", "{t}/limits.toml", "inspect", "{t}/in"],
        &[],
        fails(&["limits.toml", "a FIFO"]),
    )));
    v.push(case(
        "ingest again after a forced ingest over a user's file",
        "nuscenes",
        |t| {
            std::fs::create_dir_all(t.join("store")).unwrap();
            std::fs::write(t.join("store/mine.txt"), b"a user's file").unwrap();
            let o = run_in(t, &["--force", "ingest", "--root", "in", "--out", "store"]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert_eq!(
                std::fs::read(t.join("store/mine.txt")).unwrap(),
                b"a user's file"
            );
        },
        &ingest("nuscenes"),
        &[],
        fails(&["mine.txt", "--force"]),
    ));
    v.push(case(
        "carla annotation linked out of the root, strict links",
        "carla",
        |t| {
            let a = carla_anno(t);
            let outside = t.join("outside.json.gz");
            std::fs::rename(&a, &outside).unwrap();
            std::os::unix::fs::symlink(&outside, &a).unwrap();
        },
        &[ingest("carla"), vec!["--strict-links"]].concat(),
        &["store"],
        rejects(&["00001.json.gz", "leads out of the dataset root"], 1),
    ));
    v.push(case(
        "frenetix log linked out of the root, strict links",
        "frenetix",
        |t| {
            let l = frenetix_log(t);
            let outside = t.join("outside.csv");
            std::fs::rename(&l, &outside).unwrap();
            std::os::unix::fs::symlink(&outside, &l).unwrap();
        },
        &[ingest("frenetix"), vec!["--strict-links"]].concat(),
        &["store"],
        rejects(&["Default_logs.csv", "leads out of the dataset root"], 1),
    ));
    v
}

#[cfg(unix)]
#[test]
pub(super) fn ownership_values_and_limits() {
    run_all(safety_cases());
}

/// A build step that runs again removes only what drivegen recorded writing: a user's file in
/// a stage folder stops the build before anything is deleted (and stays under `--force`), and
/// one in the release's `data/` is left alone.
#[test]
pub(super) fn a_rebuild_deletes_only_what_it_wrote() {
    let _heavy = heavy();
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    write_build(t, BUILD);
    let o = run_in(t, &["build", "build.toml"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let work = digest_tree(&t.join("rel.work"), &[]);
    let find = |name: &str| {
        t.join("rel.work").join(
            work.keys()
                .find(|k| k.ends_with(&format!("/{name}")) || k.as_str() == name)
                .unwrap_or_else(|| panic!("no {name} in the work folder")),
        )
    };
    let qa = find("egodyn_qa.arrow");
    let ego = qa.parent().unwrap().to_path_buf();
    let notes = ego.join("notes.md");
    std::fs::write(&notes, b"mine").unwrap();
    std::fs::write(t.join("rel/data/mine.txt"), b"mine").unwrap();
    for step in ["egomotion.json", "release.json"] {
        std::fs::remove_file(find(step)).unwrap();
    }
    let qa_before = std::fs::read(&qa).unwrap();
    let o = run_in(t, &["build", "build.toml"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("notes.md") && err.contains("--force"), "{err}");
    assert_eq!(
        std::fs::read(&qa).unwrap(),
        qa_before,
        "deleted before refusing"
    );
    assert!(notes.exists());
    let o = run_in(t, &["--force", "build", "build.toml"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&notes).unwrap(), b"mine");
    assert_eq!(std::fs::read(t.join("rel/data/mine.txt")).unwrap(), b"mine");
    assert_eq!(
        std::fs::read(&qa).unwrap(),
        qa_before,
        "the step is deterministic"
    );
}
