//! `drivegen build` end to end on a tiny synthetic corpus: every stage, the release with its
//! text-only controls and report; a rerun reuses every step and changes no byte; a build
//! killed at random points and resumed, a build split over two shards (taken from a Slurm
//! array's and an indexed job's environment) and merged, and three shard tasks run at once on
//! one work folder and merged, end with the bytes of the uninterrupted, unsharded build; bad
//! configs fail with the file named.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::build_config::EVERY_STAGE as CONFIG;

fn drivegen(dir: &Path, args: &[&str]) -> std::process::Output {
    common::cli::bin()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn ok(dir: &Path, args: &[&str]) -> String {
    common::cli::ok(drivegen(dir, args), &format!("drivegen {args:?}"))
}

/// The release's deterministic files (everything but the report), relative path → bytes.
fn release_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if rel.starts_with("report") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                v.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    v.sort();
    v
}

fn setup(d: &Path) -> PathBuf {
    std::fs::create_dir_all(d).unwrap();
    let cfg = d.join("build.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    cfg
}

fn assert_same(a: &[(String, Vec<u8>)], b: &[(String, Vec<u8>)], what: &str) {
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(a), names(b), "{what}: different files");
    for (x, y) in a.iter().zip(b) {
        assert!(x.1 == y.1, "{what}: {} differs", x.0);
    }
}

#[test]
fn build_resume_and_shards_give_the_same_release() {
    let tmp = tempfile::tempdir().unwrap();
    // The reference: one uninterrupted, unsharded build.
    let a = tmp.path().join("a");
    setup(&a);
    let out = ok(&a, &["build", "build.toml"]);
    assert!(out.contains("questions:"), "{out}");
    let rel = a.join("release");
    let reference = release_files(&rel);
    let names: Vec<&str> = reference.iter().map(|f| f.0.as_str()).collect();
    assert!(
        names.contains(&"manifest.json") && names.contains(&"README.md"),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("data/test-")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("data/test_text_only-")),
        "{names:?}"
    );

    // The corpus has the sweeps of the camera ego-motion reads, and no other camera's.
    let sweeps = a.join("release.work/corpus/sweeps");
    assert!(sweeps.join("CAM_FRONT").is_dir() && sweeps.join("LIDAR_TOP").is_dir());
    assert!(!sweeps.join("CAM_BACK").exists() && !sweeps.join("CAM_FRONT_LEFT").exists());

    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(rel.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["build"]["seed"], 7);
    assert!(manifest["build"]["config"]
        .as_str()
        .unwrap()
        .contains("build test"));
    let counts = &manifest["counts"];
    assert!(
        counts["egodyn"].as_object().is_some_and(|m| !m.is_empty()),
        "{counts}"
    );
    // 2 scenes × 1 frame × 3 corruptions: a type question each, plus the crash count question.
    assert_eq!(counts["drivebench"]["corruption_type"], 6, "{counts}");
    for family in ["stsbench", "sig", "metavqa"] {
        assert!(
            counts[family].as_object().is_some_and(|m| !m.is_empty()),
            "{counts}"
        );
    }

    let report = std::fs::read_to_string(rel.join("report.html")).unwrap();
    // The blind audit: every family, beside chance, in the manifest and the report, and the
    // same figures from `drivegen audit` on the release as a user would run it.
    let audit = &manifest["blind_audit"];
    for family in ["egodyn", "drivebench", "sig", "stsbench", "metavqa"] {
        let b = &audit["families"][family];
        assert!(b["rows"].as_u64().unwrap_or(0) > 0, "{family}: {audit}");
        let chance = b["chance"].as_f64().unwrap();
        assert!(chance > 0.0 && chance < 1.0, "{family}: {b}");
    }
    let json = ok(&a, &["audit", "release", "--json"]);
    let cli: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        &cli, audit,
        "drivegen audit disagrees with the build's audit"
    );
    for part in [
        "Blind baselines",
        "<svg",
        "Seconds per step",
        "answer shares",
        "contact_sheet.png",
        "marked_00.jpg",
    ] {
        assert!(report.contains(part), "report lacks {part}");
    }
    assert!(rel.join("report/contact_sheet.png").is_file());
    assert!(rel.join("report/marked_02.jpg").is_file());

    // A second run reuses every step and changes nothing.
    let again = ok(&a, &["build", "build.toml"]);
    assert!(!again.contains(" ran "), "{again}");
    assert_same(&reference, &release_files(&rel), "rerun");

    // Killed at random points, then resumed.
    let b = tmp.path().join("b");
    let cfg_b = setup(&b);
    // DRIVEGEN_TEST_SEED replays a run's kill times.
    let seed = common::random::seed();
    let mut rng = drivegen::qa::record::SplitMix64::new(seed);
    let mut kills = Vec::new();
    for _ in 0..3 {
        let after = Duration::from_millis(500 + rng.below(6000));
        let mut child = Command::new(env!("CARGO_BIN_EXE_drivegen"))
            .current_dir(&b)
            .env("DRIVEGEN_PROGRESS", "0")
            .args(["build", cfg_b.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while t0.elapsed() < after {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        kills.push(after.as_millis());
    }
    ok(&b, &["build", "build.toml"]);
    assert_same(
        &reference,
        &release_files(&b.join("release")),
        &format!("resumed after kills at {kills:?} ms (seed {seed})"),
    );

    // Two shards, then the merge: shard 0 as a Slurm array task, shard 1 as a Kubernetes
    // indexed job's pod, each with `--shard auto`.
    let c = tmp.path().join("c");
    setup(&c);
    let scheduler_vars = [
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_MAX",
        "SLURM_ARRAY_TASK_COUNT",
        "JOB_COMPLETION_INDEX",
        "DRIVEGEN_SHARD_COUNT",
    ];
    let in_scheduler = |dir: &Path| {
        let mut cmd = common::cli::bin();
        cmd.current_dir(dir);
        for v in scheduler_vars {
            cmd.env_remove(v);
        }
        cmd
    };
    let slurm = in_scheduler(&c)
        .args(["build", "build.toml", "--shard", "auto"])
        .envs([
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_MIN", "3"),
            ("SLURM_ARRAY_TASK_MAX", "4"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
        ])
        .output()
        .unwrap();
    common::cli::ok(slurm.clone(), "build --shard auto (Slurm)");
    let said = String::from_utf8_lossy(&slurm.stderr);
    assert!(
        said.contains("shard 0/2 from the SLURM_ARRAY_TASK_ID"),
        "{said}"
    );
    let early = drivegen(&c, &["build", "build.toml", "--merge", "2"]);
    assert!(!early.status.success());
    let msg = String::from_utf8_lossy(&early.stderr);
    assert!(msg.contains("shard 1/2 is not complete"), "{msg}");
    let k8s = in_scheduler(&c)
        .args([
            "build",
            "build.toml",
            "--shard",
            "auto",
            "--shard-count",
            "2",
        ])
        .env("JOB_COMPLETION_INDEX", "1")
        .output()
        .unwrap();
    common::cli::ok(k8s, "build --shard auto (indexed job)");
    // A task that still holds its shard's folder (running, or requeued) stops the merge.
    let held = std::fs::File::open(c.join("release.work/shard-0-of-2/.drivegen.lock")).unwrap();
    held.lock().unwrap();
    let busy = drivegen(&c, &["build", "build.toml", "--merge", "2"]);
    assert!(!busy.status.success());
    let msg = String::from_utf8_lossy(&busy.stderr);
    assert!(msg.contains("shard 0/2 is still running"), "{msg}");
    drop(held);
    ok(&c, &["build", "build.toml", "--merge", "2"]);
    assert_same(
        &reference,
        &release_files(&c.join("release")),
        "merged shards",
    );

    // Three tasks at once on one work folder, as an array runs them: they take turns on the
    // shared corpus and store, then run side by side; two scenes over three shards leave one
    // shard empty. The merge still gives the unsharded bytes.
    let d = tmp.path().join("d");
    setup(&d);
    let tasks: Vec<_> = (0..3)
        .map(|i| {
            common::cli::bin()
                .current_dir(&d)
                .args(["build", "build.toml", "--shard", &format!("{i}/3")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, t) in tasks.into_iter().enumerate() {
        common::cli::ok(
            t.wait_with_output().unwrap(),
            &format!("concurrent shard {i}/3"),
        );
    }
    ok(&d, &["build", "build.toml", "--merge", "3"]);
    assert_same(
        &reference,
        &release_files(&d.join("release")),
        "three concurrent shards, merged",
    );

    // The readers see both splits through the dataset card.
    let Some(py) = common::oracle::python("interop") else {
        return;
    };
    let script = r#"
import io, sys
from datasets import load_dataset
from PIL import Image
ds = load_dataset(sys.argv[1])
robust = {f"test_{c}" for c in ("brightness", "fog", "camera_crash", "h265")}
assert set(ds.keys()) == {"test", "test_text_only"} | robust, ds.keys()
t, c = ds["test"], ds["test_text_only"]
assert len(t) == len(c) > 0
row = next(r for r in t if r["family"] == "drivebench")
assert row["image_paths"] and row["image_paths"][0].startswith(("brightness/", "camera_crash/", "h265/")), row["image_paths"]
img = row["images"][0]
assert img.size == (320, 180), img.size
black = next(r for r in c if r["qa_id"] == row["qa_id"])["images"][0]
assert black.size == (320, 180) and black.getextrema() in [((0, 0), (0, 0), (0, 0)), (0, 0)], black.getextrema()
print("ok")
"#;
    let o = Command::new(&py)
        .arg("-c")
        .arg(script)
        .arg(&rel)
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HOME", tmp.path().join("hf"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "datasets failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn bad_build_configs_name_the_file_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(
        d.join("typo.toml"),
        CONFIG.replace("[stages]", "[stages]\negomotoin = true"),
    )
    .unwrap();
    let o = drivegen(d, &["build", "typo.toml"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("typo.toml") && e.contains("egomotoin"), "{e}");

    std::fs::write(
        d.join("sev.toml"),
        CONFIG.replace("severity = \"default\"", "severity = \"9\""),
    )
    .unwrap();
    let o = drivegen(d, &["build", "sev.toml"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("sev.toml") && e.contains("severity"),
        "{e}"
    );

    let o = drivegen(d, &["build", "missing.toml"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("missing.toml"), "{e}");

    // Values no setting can use: refused at load, the key named, nothing built.
    for (name, from, to, key) in [
        (
            "nan.toml",
            "duration_s = 8.0",
            "duration_s = nan",
            "input.duration_s = NaN",
        ),
        (
            "frames.toml",
            "frames_per_scene = 1",
            "frames_per_scene = 0",
            "frames_per_scene",
        ),
    ] {
        std::fs::write(d.join(name), CONFIG.replace(from, to)).unwrap();
        let o = drivegen(d, &["build", name]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.code() == Some(2) && e.contains(name) && e.contains(key),
            "{e}"
        );
        assert!(!d.join("release").exists(), "{name} built something");
    }
    std::fs::write(d.join("ok.toml"), CONFIG).unwrap();
    let o = drivegen(d, &["build", "ok.toml", "--merge", "0"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.code() == Some(2) && e.contains("--merge"), "{e}");
}

#[test]
fn a_second_build_on_the_same_work_folder_is_refused() {
    // This test holds the work folder's lock, as a running build would: the build must stop
    // at once, name this process, and write nothing.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("c");
    setup(&d);
    let work = d.join("release.work");
    let held = drivegen::store::lock::FolderLock::acquire(&work, "build").unwrap();
    let o = drivegen(&d, &["build", "build.toml"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("in use by pid {}", std::process::id())),
        "{err}"
    );
    let files: Vec<_> = std::fs::read_dir(&work).unwrap().collect();
    assert_eq!(
        files.len(),
        1,
        "the refused build wrote into the work folder"
    );
    assert!(!d.join("release").exists());
    drop(held);
}
