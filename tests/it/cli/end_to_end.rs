//! The `drivegen` binary end to end: synth → ingest → inspect → egomotion → calibrate, plus
//! gpu-info and usage errors. Each step's output is checked by what a user would look at.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::cli::{bin, ok};

fn run(args: &[&str], paths: &[&Path]) -> Output {
    let mut c = bin();
    c.args(args);
    for p in paths {
        c.arg(p);
    }
    c.output().unwrap()
}

#[test]
fn synth_ingest_inspect_egomotion_calibrate() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("nusc");
    let store = dir.path().join("store");
    let ego = dir.path().join("ego");

    let out = ok(
        bin()
            .args(["synth", "--scenes", "2", "--seed", "3", "--duration", "12"])
            .args(["--width", "400", "--height", "225", "--out"])
            .arg(&root)
            .output()
            .unwrap(),
        "synth",
    );
    assert!(out.contains('2'), "{out}");
    assert!(root.join("v1.0-mini/scene.json").is_file());
    assert!(root.join("sweeps/CAM_FRONT").is_dir());
    let img = std::fs::read_dir(root.join("samples/CAM_FRONT"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let (w, h) = image::image_dimensions(&img).unwrap();
    assert_eq!((w, h), (400, 225));

    ok(
        bin()
            .args(["ingest", "--root"])
            .arg(&root)
            .arg("--out")
            .arg(&store)
            .output()
            .unwrap(),
        "ingest",
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("store.json")).unwrap()).unwrap();
    assert_eq!(meta["counts"]["scenes"], 2, "{meta}");

    let out = ok(run(&["inspect"], &[&store]), "inspect");
    // A reader that closes its end (`drivegen inspect … | head -1`) ends the command quietly,
    // by SIGPIPE as Unix tools do. The test drops the only read end before the child prints,
    // so its first write always meets a closed pipe.
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        let mut child = bin()
            .args(["inspect", "--head", "100000"])
            .arg(store.join("cameras.arrow"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.signal(), Some(13), "{:?}: {err}", o.status);
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(out.contains("2 scenes"), "{out}");
    let out = ok(
        run(&["inspect", "--head", "2"], &[&store.join("frames.arrow")]),
        "inspect file",
    );
    assert!(out.contains("frame_idx"), "{out}");

    let out = ok(
        bin()
            .args(["egomotion", "--store"])
            .arg(&store)
            .arg("--out")
            .arg(&ego)
            .output()
            .unwrap(),
        "egomotion",
    );
    assert!(out.contains("egodyn: 2 scenes"), "{out}");
    for f in ["clips.arrow", "egodyn_qa.arrow", "egodyn_rejects.jsonl"] {
        assert!(ego.join(f).is_file(), "{f} missing");
    }
    let out = ok(
        run(&["inspect"], &[&ego.join("egodyn_qa.arrow")]),
        "inspect qa",
    );
    assert!(out.contains("rows"), "{out}");

    let bal = dir.path().join("balanced");
    let out = ok(
        bin()
            .args(["balance", "--qa"])
            .arg(ego.join("egodyn_qa.arrow"))
            .args(["--target", "10", "--balance-letters", "--out"])
            .arg(&bal)
            .output()
            .unwrap(),
        "balance",
    );
    assert!(out.contains("→ 10 selected (140 rows)"), "{out}");
    let report = std::fs::read_to_string(bal.join("balance_report.md")).unwrap();
    assert!(report.contains("egodyn/turn_direction"), "{report}");
    let out = ok(
        run(&["inspect"], &[&bal.join("balanced_qa.arrow")]),
        "inspect balanced",
    );
    assert!(out.contains("140 rows"), "{out}");

    let cfg = dir.path().join("platform.toml");
    let report = dir.path().join("calibration.md");
    let out = ok(
        bin()
            .args(["calibrate", "--store"])
            .arg(&store)
            .arg("--out")
            .arg(&cfg)
            .arg("--report")
            .arg(&report)
            .args(["--alpha-sweep", "0.5:1.5:0.1"])
            .output()
            .unwrap(),
        "calibrate",
    );
    assert!(out.contains("α sweep: 11 levels"), "{out}");
    // The recalibrated config is a valid config: egomotion accepts it.
    ok(
        bin()
            .args(["egomotion", "--store"])
            .arg(&store)
            .arg("--out")
            .arg(dir.path().join("ego2"))
            .arg("--config")
            .arg(&cfg)
            .output()
            .unwrap(),
        "egomotion with the calibrated config",
    );
    assert!(std::fs::read_to_string(&report).unwrap().len() > 100);

    let vis = dir.path().join("visibility.arrow");
    let maps = dir.path().join("id_maps");
    let out = ok(
        bin()
            .args(["visibility", "--device", "cpu", "--store"])
            .arg(&store)
            .arg("--out")
            .arg(&vis)
            .arg("--id-maps")
            .arg(&maps)
            .output()
            .unwrap(),
        "visibility",
    );
    assert!(out.contains("288 camera images"), "{out}");
    let out = ok(
        run(&["inspect", "--head", "1"], &[&vis]),
        "inspect visibility",
    );
    assert!(out.contains("visible_pixels"), "{out}");
    // One 16-bit instance-ID map per keyframe camera image.
    let pngs: Vec<_> = std::fs::read_dir(maps.join("scene-0001"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(pngs.len(), 144);
    let img = image::open(&pngs[0]).unwrap();
    assert_eq!(img.color(), image::ColorType::L16);
    assert_eq!((img.width(), img.height()), (400, 225));
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["inspect"], &[&dir.path().join("nope")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nope"));
    let o = run(
        &[
            "calibrate",
            "--alpha-sweep",
            "0.8:x",
            "--out",
            "a",
            "--report",
            "b",
            "--store",
        ],
        &[dir.path()],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("start:end:step"));
    let o = run(&["egomotion", "--out", "o", "--store"], &[dir.path()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("store.json"));
    // Outputs that are, or lie inside, an input are refused before anything is written.
    let sentinel = dir.path().join("cameras.arrow");
    std::fs::write(&sentinel, b"theirs").unwrap();
    let o = run(
        &["visibility", "--store"],
        &[dir.path(), Path::new("--out"), &sentinel],
    );
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.code() == Some(2) && e.contains("lies inside"),
        "{e}"
    );
    let o = run(
        &["corrupt", "--corruption", "fog", "--images"],
        &[dir.path(), Path::new("--out"), dir.path()],
    );
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.code() == Some(2) && e.contains("--out"), "{e}");
    assert_eq!(std::fs::read(&sentinel).unwrap(), b"theirs");
    std::fs::remove_file(&sentinel).unwrap();
    // A negative gravity would reject every clip, with exit 0.
    let cfg = dir.path().join("g.toml");
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/egodyn.toml"))
            .unwrap();
    let bad: String = text
        .lines()
        .map(|l| {
            if l.starts_with("gravity") {
                "gravity = -9.8".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&cfg, bad).unwrap();
    let o = run(
        &["egomotion", "--out", "o", "--config"],
        &[&cfg, Path::new("--store"), dir.path()],
    );
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("g.toml") && e.contains("validation.gravity"),
        "{e}"
    );
}

#[test]
fn gpu_info_lists_an_adapter() {
    if std::env::var("DRIVEGEN_GPU_TESTS").as_deref() == Ok("no") {
        eprintln!("DRIVEGEN_GPU_TESTS=no: skipping");
        return;
    }
    let out = ok(bin().arg("gpu-info").output().unwrap(), "gpu-info");
    assert!(out.to_lowercase().contains("adapter"), "{out}");
}

#[test]
fn no_sweeps_keeps_keyframe_images_and_the_lidar_pose_stream() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("nusc");
    ok(
        bin()
            .args(["synth", "--scenes", "1", "--duration", "3", "--no-sweeps"])
            .args(["--width", "320", "--height", "180", "--out"])
            .arg(&root)
            .output()
            .unwrap(),
        "synth --no-sweeps",
    );
    assert!(
        !root.join("sweeps/CAM_FRONT").exists(),
        "--no-sweeps wrote camera sweeps"
    );
    assert!(root.join("samples/CAM_FRONT").is_dir());
    // 20 Hz lidar: 6 keyframes at 2 Hz, 9 sweeps between consecutive ones (the scene ends at
    // its last keyframe).
    let sweeps = std::fs::read_dir(root.join("sweeps/LIDAR_TOP"))
        .unwrap()
        .count();
    assert_eq!(sweeps, 5 * 9);
}

#[test]
fn bench_visibility_times_the_device_every_stage_would_pick() {
    let run = |device: &str| {
        let o = bin()
            .args(["bench", "visibility", "--frames", "3", "--boxes", "20"])
            .args(["--width", "320", "--height", "180", "--repeats", "1"])
            .args(["--python", "none", "--device", device])
            .output()
            .unwrap();
        ok(o, "bench visibility")
    };
    // `auto` passes over a software adapter exactly as the stages do, and times the twin.
    let auto = run("auto");
    assert!(auto.contains("| implementation |"), "{auto}");
    assert!(auto.contains("cpu twin"), "{auto}");
    let auto_device = drivegen::gpu::Device::open(drivegen::gpu::DeviceChoice::Auto).unwrap();
    assert_eq!(
        auto.contains("| gpu |"),
        auto_device.gpu().is_some(),
        "{auto}"
    );
    // `gpu` times whatever adapter opens (lavapipe here), and only it.
    let gpu = run("gpu");
    assert!(gpu.contains("| gpu |"), "{gpu}");
    assert!(!gpu.contains("cpu twin"), "{gpu}");
}
