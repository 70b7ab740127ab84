//! Outcomes that used to pass in silence: a limit set in the environment that is no number, a
//! count of zero in a config, two outputs of one command at one path, a stage run again over
//! its own earlier output, and numbers given to the Slurm scripts.

use super::*;

/// A build config: the shared one with `extra` appended.
fn build_with(extra: &'static str) -> impl Fn(&Path) {
    move |t: &Path| write_build(t, &format!("{BUILD}{extra}"))
}

/// The shared build config with one line replaced.
fn build_replacing(from: &'static str, to: &'static str) -> impl Fn(&Path) {
    move |t: &Path| write_build(t, &BUILD.replace(from, to))
}

/// Runs the binary in `dir` with `vars` added to its environment.
fn run_with_env(dir: &Path, vars: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut c = common::cli::bin();
    c.current_dir(dir).args(args).stdin(Stdio::null());
    for (k, v) in vars {
        c.env(k, v);
    }
    c.output().unwrap()
}

pub(super) fn silent_cases() -> Vec<Case> {
    let build = ["build", "{t}/build.toml"];
    let outs = ["rel", "rel.work"];
    let limits =
        |text: &'static str| move |t: &Path| std::fs::write(t.join("limits.toml"), text).unwrap();
    let mut v = Vec::new();

    // The limits file goes through the parser the environment's values go through.
    for (text, key) in [
        ("line_mib = -5\n", "line_mib"),
        ("table_mib = 1.5\n", "table_mib"),
        ("image_mpix = \"100\"\n", "image_mpix"),
    ] {
        v.push(quick(case(
            format!("a limits file with {}", text.trim()),
            "nuscenes",
            limits(text),
            &["--limits", "{t}/limits.toml", "inspect", "{t}/in"],
            &[],
            fails(&["limits.toml", key, "whole number of at least 1"]),
        )));
    }

    // Counts of zero in a build config: refused at load, naming the key.
    for (name, setup, needles) in [
        (
            "a family's balance target of 0",
            Box::new(build_with("\n[balance.egodyn]\ntarget = 0\n")) as Box<dyn Fn(&Path)>,
            &["build.toml", "[balance.egodyn] target must be at least 1"][..],
        ),
        (
            "a family's type_cap of 0",
            Box::new(build_with("\n[balance.egodyn]\ntarget = 5\ntype_cap = 0\n")),
            &["build.toml", "balance.egodyn.type_cap must be at least 1"][..],
        ),
        (
            "a family's source cap of 0",
            Box::new(build_with(
                "\n[balance.egodyn]\ntarget = 5\nsource_caps = { nuscenes = 0 }\n",
            )),
            &[
                "build.toml",
                "balance.egodyn.source_caps.nuscenes must be at least 1",
            ][..],
        ),
        (
            "a synthetic corpus 0 pixels wide",
            Box::new(build_replacing("width = 160", "width = 0")),
            &["build.toml", "input.width"][..],
        ),
        (
            "a synthetic corpus 0 s long",
            Box::new(build_replacing("duration_s = 3.0", "duration_s = 0.0")),
            &["build.toml", "input.duration_s must be positive"][..],
        ),
    ] {
        v.push(quick(case(
            name,
            "nuscenes",
            setup,
            &build,
            &outs,
            fails(needles),
        )));
    }
    v.push(quick(case(
        "a SIG config asking 0 questions per frame",
        "nuscenes",
        |t| {
            with_store(t);
            let text = drivegen::sig::config::DEFAULT_TOML
                .replace("max_per_frame = 8", "max_per_frame = 0");
            assert!(text.contains("max_per_frame = 0"));
            std::fs::write(t.join("sig.toml"), text).unwrap();
        },
        &[
            "sig",
            "--store",
            "{t}/store",
            "--visibility",
            "{t}/v.arrow",
            "--out",
            "{t}/s",
            "--config",
            "{t}/sig.toml",
        ],
        &["s"],
        fails(&["sig.toml", "questions.max_per_frame must be at least 1"]),
    )));

    // Two outputs of one command at one path: refused before anything is read or written.
    let calibrate = |out: &'static str, report: &'static str| {
        vec![
            "calibrate",
            "--store",
            "{t}/store",
            "--out",
            out,
            "--report",
            report,
        ]
    };
    for (name, args, needles) in [
        (
            "calibrate --out F --report F",
            calibrate("{t}/cal.toml", "{t}/cal.toml"),
            &["--report", "is the same path as --out", "cal.toml"][..],
        ),
        (
            "calibrate --report spelled another way",
            calibrate("{t}/cal.toml", "{t}/sentinel/../cal.toml"),
            &["--report", "is the same path as --out"][..],
        ),
        (
            "calibrate --report through a link to --out",
            calibrate("{t}/cal.toml", "{t}/link.toml"),
            &["--report", "is the same path as --out"][..],
        ),
        (
            "score --out F --html F",
            vec![
                "score",
                "--release",
                "{t}/rel",
                "--predictions",
                "{t}/p.jsonl",
                "--out",
                "{t}/r.json",
                "--html",
                "{t}/r.json",
            ],
            &["--html", "is the same path as --out", "r.json"][..],
        ),
        (
            "visibility --out inside --id-maps",
            vec![
                "visibility",
                "--store",
                "{t}/store",
                "--out",
                "{t}/maps/v.arrow",
                "--id-maps",
                "{t}/maps",
            ],
            &["--id-maps", "holds --out"][..],
        ),
        (
            "build --keep-images at the release",
            vec!["build", "{t}/build.toml", "--keep-images", "{t}/rel"],
            &["--keep-images", "--out (the release)"][..],
        ),
        (
            "build --keep-images at the work folder",
            vec!["build", "{t}/build.toml", "--keep-images", "{t}/rel.work"],
            &["--keep-images", "--work (the work folder)"][..],
        ),
    ] {
        v.push(quick(case(
            name,
            "nuscenes",
            |t| {
                with_store(t);
                write_build(t, BUILD);
                std::fs::write(t.join("cal.toml"), b"# a user's config\n").unwrap();
                std::os::unix::fs::symlink(t.join("cal.toml"), t.join("link.toml")).unwrap();
            },
            &args,
            &[],
            fails(needles),
        )));
    }

    // A stage run again over its own output holding a user's file stops before deleting
    // anything of the earlier run.
    v.push(case(
        "corrupt again into its output holding a user's file",
        "nuscenes",
        |t| {
            with_store(t);
            let o = run_in(t, &corrupt_args("store", "c", "brightness", true));
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            std::fs::write(t.join("c/notes.md"), b"mine").unwrap();
        },
        &corrupt_args("{t}/store", "{t}/c", "camera_crash", false),
        &[],
        fails(&["notes.md", "--force"]),
    ));
    v
}

/// `drivegen corrupt` over the first keyframe of each scene of `store` into `out`.
fn corrupt_args<'a>(
    store: &'a str,
    out: &'a str,
    corruption: &'a str,
    images: bool,
) -> Vec<&'a str> {
    let mut a = vec![
        "corrupt",
        "--store",
        store,
        "--out",
        out,
        "--corruption",
        corruption,
        "--severity",
        "1",
        "--device",
        "cpu",
        "--frames-per-scene",
        "1",
    ];
    if !images {
        a.push("--no-images");
    }
    a
}

#[cfg(unix)]
#[test]
pub(super) fn silent_outcomes_are_refused() {
    run_all(silent_cases());
}

/// Every bad value of a `DRIVEGEN_MAX_*` variable, and a variable naming no limit, fails the
/// command with the variable and the value named, before it writes anything; a good value is
/// obeyed.
#[test]
pub(super) fn environment_limits_are_parsed_like_the_limits_file() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    copy_tree(&fixtures().join("nuscenes"), &t.join("in"));
    let before = digest_tree(t, &[]);
    let ingest = ["ingest", "--root", "in", "--out", "store"];
    let mut failed = Vec::new();
    let mut expect = |vars: &[(&str, &str)], needles: &[&str]| {
        let o = run_with_env(t, vars, &ingest);
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.code() != Some(2) || needles.iter().any(|n| !err.contains(n)) {
            failed.push(format!("{vars:?}: exit {:?}: {err}", o.status.code()));
        }
        if digest_tree(t, &[]) != before {
            failed.push(format!("{vars:?}: wrote before refusing"));
        }
    };
    for value in [
        "abc", "-5", "nan", "inf", "0", "", " ", "1.5", "1e3", "0x10", "+4",
    ] {
        for var in ["DRIVEGEN_MAX_LINE_MIB", "DRIVEGEN_MAX_IMAGE_MPIX"] {
            expect(
                &[(var, value)],
                &[var, &format!("`{value}`"), "whole number of at least 1"],
            );
        }
    }
    expect(
        &[("DRIVEGEN_MAX_TABLE_MIB", "99999999999999999999999")],
        &["DRIVEGEN_MAX_TABLE_MIB", "too large"],
    );
    expect(
        &[("DRIVEGEN_MAX_LINE_MB", "4")],
        &[
            "DRIVEGEN_MAX_LINE_MB",
            "no limit has that name",
            "DRIVEGEN_MAX_LINE_MIB",
        ],
    );
    // Even a --limits file setting the same key does not hide a bad environment value.
    std::fs::write(t.join("limits.toml"), "table_mib = 64\n").unwrap();
    let before = digest_tree(t, &[]);
    let o = run_with_env(
        t,
        &[("DRIVEGEN_MAX_TABLE_MIB", "lots")],
        &["--limits", "limits.toml", "inspect", "in"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.code() != Some(2) || !err.contains("DRIVEGEN_MAX_TABLE_MIB") {
        failed.push(format!("bad env beside a limits file: {err}"));
    }
    assert_eq!(digest_tree(t, &[]), before);
    // A good value is read: a 1 MiB table limit stops a table padded to 2 MiB.
    let p = nusc_table(t, "sample_data");
    let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
    f.write_all(&vec![b' '; 2 << 20]).unwrap();
    let o = run_with_env(t, &[("DRIVEGEN_MAX_TABLE_MIB", "1")], &ingest);
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.code() != Some(2)
        || !err.contains("sample_data.json")
        || !err.contains("DRIVEGEN_MAX_TABLE_MIB")
    {
        failed.push(format!("DRIVEGEN_MAX_TABLE_MIB=1 was not obeyed: {err}"));
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The relative paths of the files under `dir`, drivegen's bookkeeping left out.
fn files(dir: &Path) -> Vec<String> {
    digest_tree(dir, &[])
        .into_iter()
        .filter(|(k, v)| {
            v != "dir" && !k.ends_with(".drivegen-owner.json") && !k.ends_with(".drivegen.lock")
        })
        .map(|(k, _)| k)
        .collect()
}

/// A stage run first with `first`, then again into the same folder with `second`, leaves the
/// files a run with `second` leaves in a new folder, and none of the first run's images.
/// `{o}` in the arguments is the output folder.
fn rerun_leaves_only_the_new_run(t: &Path, stage: &str, first: &[&str], second: &[&str]) {
    let run = |args: &[&str], out: &str| {
        let args: Vec<String> = args.iter().map(|a| a.replace("{o}", out)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_in(t, &args);
        assert!(
            o.status.success(),
            "{stage} {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let out = format!("{stage}-out");
    run(first, &out);
    let earlier = files(&t.join(&out));
    run(second, &out);
    let fresh = format!("{stage}-fresh");
    run(second, &fresh);
    let (now, want) = (files(&t.join(&out)), files(&t.join(&fresh)));
    assert_ne!(earlier, want, "{stage}: the two runs write the same files");
    assert_eq!(
        now, want,
        "{stage}: the folder holds other files than a new run's"
    );
}

/// `corrupt`, `som` and `metavqa` write images only on request: a run without them over a
/// folder an earlier run with them wrote removes that run's images.
#[test]
pub(super) fn a_stage_run_again_replaces_its_earlier_output() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    with_store(t);
    let o = run_in(
        t,
        &[
            "visibility",
            "--store",
            "store",
            "--out",
            "v.arrow",
            "--device",
            "cpu",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    rerun_leaves_only_the_new_run(
        t,
        "corrupt",
        &corrupt_args("store", "{o}", "brightness", true),
        &corrupt_args("store", "{o}", "camera_crash", false),
    );
    for stage in ["som", "metavqa"] {
        let base = [
            stage,
            "--store",
            "store",
            "--visibility",
            "v.arrow",
            "--out",
            "{o}",
            "--device",
            "cpu",
        ];
        let mut without = base.to_vec();
        without.push("--no-images");
        rerun_leaves_only_the_new_run(t, stage, &base, &without);
    }
}

// ---- the Slurm scripts ---------------------------------------------------------------------

/// A folder with stand-ins for sbatch, squeue, scontrol and drivegen that append their
/// command line to `calls` (sbatch answers a job id, so a good submission goes through).
fn slurm_stand_ins(t: &Path) {
    let bin = t.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["sbatch", "squeue", "scontrol", "drivegen"] {
        let p = bin.join(name);
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\necho \"{name} $*\" >>\"{}\"\necho 42\n",
                t.join("calls").display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    write_build(t, BUILD);
}

/// Runs `scripts/slurm/<script>` in `t` with the stand-ins first on PATH.
fn slurm(t: &Path, script: &str, args: &[&str], vars: &[(&str, &str)]) -> std::process::Output {
    let path = format!(
        "{}:{}",
        t.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("bash");
    c.arg(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scripts/slurm")
            .join(script),
    )
    .args(args)
    .current_dir(t)
    .env("PATH", path)
    .env("DRIVEGEN", t.join("bin/drivegen"))
    .env_remove("SLURM_ARRAY_TASK_ID")
    .env_remove("SLURM_RESTART_COUNT")
    .env_remove("SLURM_CPUS_PER_TASK")
    .stdin(Stdio::null());
    for (k, v) in vars {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// Every number the Slurm scripts take is checked before sbatch, squeue, scontrol or drivegen
/// is called: a message naming it, and exit 2. Good numbers go through to the stand-ins.
#[cfg(unix)]
#[test]
pub(super) fn slurm_scripts_check_their_numbers_first() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    slurm_stand_ins(t);
    let calls = t.join("calls");
    let mut failed = Vec::new();
    let mut refused = |script: &str, args: &[&str], vars: &[(&str, &str)], needles: &[&str]| {
        let o = slurm(t, script, args, vars);
        let err = String::from_utf8_lossy(&o.stderr);
        let called = std::fs::read_to_string(&calls).unwrap_or_default();
        if o.status.code() != Some(2)
            || !called.is_empty()
            || needles.iter().any(|n| !err.contains(n))
        {
            failed.push(format!(
                "{script} {args:?} {vars:?}: exit {:?}, called [{called}]: {err}",
                o.status.code()
            ));
        }
        let _ = std::fs::remove_file(&calls);
    };
    for n in [
        "99999999999999999999",
        "10001",
        "0",
        "-3",
        "abc",
        "",
        "007",
        "4 ",
        "1e3",
    ] {
        refused(
            "submit.sh",
            &["build.toml", n],
            &[],
            &["N (the number of shards)", "10000"],
        );
    }
    for k in ["abc", "0", "-1", "", "99999999999999999999", "2%3"] {
        refused(
            "submit.sh",
            &["build.toml", "4", "--max-running", k],
            &[],
            &["--max-running", &format!("'{k}'")],
        );
        let joined = format!("--max-running={k}");
        refused(
            "submit.sh",
            &["build.toml", "4", &joined],
            &[],
            &["--max-running"],
        );
    }
    refused(
        "submit.sh",
        &["build.toml", "4", "--max-running"],
        &[],
        &["--max-running"],
    );
    let task = |n: &'static str| ["shard", "drivegen", "build.toml", "w", "o", n, "."];
    for id in ["abc", "4", "-1", "", "01", "99999999999999999999"] {
        refused(
            "task.sh",
            &task("4"),
            &[("SLURM_ARRAY_TASK_ID", id), ("SLURM_ARRAY_JOB_ID", "7")],
            &["SLURM_ARRAY_TASK_ID"],
        );
    }
    let good_task = [("SLURM_ARRAY_TASK_ID", "1"), ("SLURM_ARRAY_JOB_ID", "7")];
    for (var, value) in [
        ("SLURM_RESTART_COUNT", "a[$(touch pwned)]"),
        ("SLURM_RESTART_COUNT", "-1"),
        ("SLURM_CPUS_PER_TASK", "x"),
        ("SLURM_CPUS_PER_TASK", "0"),
    ] {
        let mut vars = good_task.to_vec();
        vars.push((var, value));
        refused("task.sh", &task("4"), &vars, &[var]);
    }
    assert!(
        !t.join("pwned").exists(),
        "SLURM_RESTART_COUNT was evaluated"
    );
    refused(
        "task.sh",
        &task("0"),
        &good_task,
        &["N (the number of shards)"],
    );
    refused(
        "task.sh",
        &[
            "merge",
            "drivegen",
            "build.toml",
            "w",
            "o",
            "99999999999999999999",
            ".",
        ],
        &[("SLURM_JOB_ID", "8")],
        &["N (the number of shards)"],
    );
    for (a, m) in [("abc", "5"), ("5", "0"), ("-5", "6"), ("5", "99999999999")] {
        refused("resume.sh", &[a, m], &[], &["must be a job id"]);
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));

    // The same scripts with good numbers reach the stand-ins.
    let o = slurm(
        t,
        "submit.sh",
        &["build.toml", "4", "--max-running", "2"],
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let called = std::fs::read_to_string(&calls).unwrap();
    assert!(called.contains("--array=0-3%2"), "{called}");
    std::fs::remove_file(&calls).unwrap();
    let o = slurm(t, "task.sh", &task("4"), &good_task);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let called = std::fs::read_to_string(&calls).unwrap();
    assert!(called.contains("--shard auto --shard-count 4"), "{called}");
}
