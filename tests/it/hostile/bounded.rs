//! Bounded memory and time, special files, colliding ids, signals.

use super::*;

// ---- bounded memory and time, special files, colliding ids, signals -----------------------

/// A case with a 10 s bound.
pub(super) fn quick(c: Case) -> Case {
    Case { seconds: 10, ..c }
}

#[cfg(unix)]
pub(super) fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o644) },
        0,
        "mkfifo {p:?}"
    );
}

#[cfg(unix)]
pub(super) fn replace_with(p: &Path, what: &str) {
    let _ = std::fs::remove_file(p);
    match what {
        "fifo" => mkfifo(p),
        _ => std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
    }
}

/// A JPEG whose header claims `w`×`h` while its data is that of a 16×16 image.
pub(super) fn jpeg_claiming(w: u16, h: u16) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(16, 16, image::Rgb([90, 90, 90]));
    let mut bytes = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 90)
        .encode_image(&img)
        .unwrap();
    let sof = bytes
        .windows(2)
        .position(|m| m == [0xFF, 0xC0])
        .expect("a baseline JPEG");
    // FFC0, length (2), precision (1), height (2), width (2).
    bytes[sof + 5..sof + 7].copy_from_slice(&h.to_be_bytes());
    bytes[sof + 7..sof + 9].copy_from_slice(&w.to_be_bytes());
    bytes
}

/// The fixture store with one keyframe holding `n` boxes in a grid in front of the ego.
pub(super) fn store_with_boxes(t: &Path, n: usize) {
    use drivegen::store::rejects::RejectLog;
    use drivegen::store::{Store, StoreWriter};
    let st = Store::open(&fixtures().join("store")).unwrap();
    let mut scene = st.scenes().unwrap().next().unwrap().unwrap();
    let frame = scene.objects[0].frame_idx;
    let template = scene.objects[0].clone();
    scene.objects.retain(|o| o.frame_idx != frame);
    // At nuScenes' full resolution, where per-pixel work per box would show.
    for c in &mut scene.cameras {
        let k = 1600.0 / f64::from(c.width);
        (c.width, c.height) = (1600, 900);
        (c.fx, c.fy, c.cx, c.cy) = (c.fx * k, c.fy * k, c.cx * k, c.cy * k);
    }
    for k in 0..n {
        let mut o = template.clone();
        o.annotation_id = format!("many-{k}");
        o.track_id = format!("many-{k}");
        // A 100 × 100 grid of boxes 10 cm apart around a box the cameras see: every one of
        // them projects, most of them overlap.
        let (row, col) = ((k / 100) as f64, (k % 100) as f64);
        o.center = [
            template.center[0] + 0.1 * (row - 50.0),
            template.center[1] + 0.1 * (col - 50.0),
            template.center[2],
        ];
        scene.objects.push(o);
    }
    let mut w = StoreWriter::create(&t.join("store"), st.meta().clone()).unwrap();
    w.write_scene(&scene).unwrap();
    w.finish(&RejectLog::new()).unwrap();
}

pub(super) fn bounded_cases() -> Vec<Case> {
    let mut v = Vec::new();
    v.push(case(
        "carla annotation a gzip bomb",
        "carla",
        |t| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let zeros = vec![b' '; 1 << 20];
            for _ in 0..300 {
                e.write_all(&zeros).unwrap();
            }
            std::fs::write(carla_anno(t), e.finish().unwrap()).unwrap();
        },
        &ingest("carla"),
        &["store"],
        rejects(&["00001.json.gz", "DRIVEGEN_MAX_DECOMPRESSED_MIB"], 1),
    ));
    v.push(case(
        "an image whose header claims 20000×20000",
        "nuscenes",
        |t| {
            let (_, f) = first_front(t);
            std::fs::create_dir_all(t.join("imgs")).unwrap();
            std::fs::copy(t.join("in").join(&f), t.join("imgs/a.jpg")).unwrap();
            std::fs::write(t.join("imgs/b.jpg"), jpeg_claiming(20000, 20000)).unwrap();
        },
        &[
            "corrupt",
            "--images",
            "{t}/imgs",
            "--out",
            "{t}/cor",
            "--corruption",
            "brightness",
            "--device",
            "cpu",
        ],
        &["cor"],
        Expect::RejectsIn {
            file: "cor/rejects.jsonl",
            needles: ["b.jpg", "20000×20000", "DRIVEGEN_MAX_IMAGE_MPIX"]
                .map(String::from)
                .to_vec(),
        },
    ));
    // Bounded memory is the point here; how fast the released binary does it is measured in
    // BENCHMARKS.md (7.2 s on two cores), and the unoptimised test build takes about three
    // times as long, so this case is given a minute to show it ends.
    v.push(case(
        "10,000 boxes in one frame",
        "nuscenes",
        |t| store_with_boxes(t, 10_000),
        &[
            "visibility",
            "--store",
            "{t}/store",
            "--out",
            "{t}/vis.arrow",
            "--device",
            "cpu",
        ],
        &["vis.arrow", "vis.rejects.jsonl"],
        Expect::Succeeds,
    ));
    v.push(case(
        "--threads 100000",
        "nuscenes",
        with_store,
        &["--threads", "100000", "inspect", "{t}/store"],
        &[],
        Expect::SucceedsSaying(vec!["--threads 100000".into(), "per core".into()]),
    ));
    #[cfg(unix)]
    for what in ["fifo", "zero"] {
        let table_err: &'static str = if what == "fifo" { "a FIFO" } else { "a device" };
        v.push(case(
            format!("nuscenes table a {what}"),
            "nuscenes",
            move |t| replace_with(&nusc_table(t, "sample_data"), what),
            &ingest("nuscenes"),
            &["store"],
            fails(&["sample_data.json", table_err]),
        ));
        v.push(case(
            format!("carla annotation a {what}"),
            "carla",
            move |t| replace_with(&carla_anno(t), what),
            &ingest("carla"),
            &["store"],
            rejects(&["00001.json.gz", table_err], 1),
        ));
        v.push(case(
            format!("frenetix log a {what}"),
            "frenetix",
            move |t| replace_with(&frenetix_log(t), what),
            &ingest("frenetix"),
            &["store"],
            rejects(&["Default_logs.csv", table_err], 1),
        ));
        v.push(case(
            format!("build config a {what}"),
            "nuscenes",
            move |t| replace_with(&t.join("build.toml"), what),
            &["build", "{t}/build.toml"],
            &["rel", "rel.work"],
            fails(&["build.toml", table_err]),
        ));
        v.push(case(
            format!("predictions a {what}"),
            "nuscenes",
            move |t| {
                copy_tree(release_fixture(), &t.join("rel"));
                replace_with(&t.join("p.jsonl"), what);
            },
            &[
                "score",
                "--release",
                "{t}/rel",
                "--predictions",
                "{t}/p.jsonl",
            ],
            &[],
            fails(&["p.jsonl", table_err]),
        ));
        v.push(case(
            format!("store.json a {what}"),
            "nuscenes",
            move |t| {
                with_store(t);
                replace_with(&t.join("store/store.json"), what);
            },
            &["inspect", "{t}/store"],
            &[],
            fails(&["store.json", table_err]),
        ));
        v.push(case(
            format!("inspect of a {what}"),
            "nuscenes",
            move |t| replace_with(&t.join("t.arrow"), what),
            &["inspect", "{t}/t.arrow"],
            &[],
            fails(&["t.arrow", table_err]),
        ));
    }
    v.push(case(
        "a prediction line of 2 MiB",
        "nuscenes",
        |t| {
            copy_tree(release_fixture(), &t.join("rel"));
            let long = format!("{{\"qa_id\": \"{}\"}}\n", "x".repeat(2 << 20));
            std::fs::write(t.join("p.jsonl"), long).unwrap();
        },
        &[
            "score",
            "--release",
            "{t}/rel",
            "--predictions",
            "{t}/p.jsonl",
        ],
        &[],
        fails(&["p.jsonl", "line 1", "DRIVEGEN_MAX_LINE_MIB"]),
    ));
    v.push(case(
        "release of one QA table given twice",
        "nuscenes",
        |t| {
            with_store(t);
            common::cli::drivegen(
                &["egomotion"],
                &[("--store", &t.join("store")), ("--out", &t.join("ego"))],
            );
            std::fs::copy(t.join("ego/egodyn_qa.arrow"), t.join("qa.arrow")).unwrap();
        },
        &[
            "release",
            "--qa",
            "{t}/qa.arrow",
            "--qa",
            "{t}/qa.arrow",
            "--store",
            "{t}/store",
            "--out",
            "{t}/rel",
            "--images",
            "paths",
        ],
        &["rel"],
        fails(&["appears twice"]),
    ));
    v.push(case(
        "carla two routes of one name",
        "carla",
        |t| {
            let r = carla_routes(t);
            let twin = r[1].parent().unwrap().join(r[0].file_name().unwrap());
            std::fs::rename(&r[1], twin).unwrap();
        },
        &ingest("carla"),
        &["store"],
        rejects(&["already taken"], 1),
    ));
    v.push(case(
        "carla routes `Town 1` and `Town_1`",
        "carla",
        |t| {
            let r = carla_routes(t);
            std::fs::rename(&r[0], r[0].with_file_name("Town 1")).unwrap();
            std::fs::rename(&r[1], r[1].with_file_name("Town_1")).unwrap();
        },
        &ingest("carla"),
        &["store"],
        rejects(&[], 2),
    ));
    v.push(case(
        "carla box id twice in a frame",
        "carla",
        |t| {
            let p = carla_anno(t);
            let mut text = String::new();
            std::io::Read::read_to_string(
                &mut flate2::read::GzDecoder::new(std::fs::File::open(&p).unwrap()),
                &mut text,
            )
            .unwrap();
            let mut v: Value = serde_json::from_str(&text).unwrap();
            let boxes = v["bounding_boxes"].as_array_mut().unwrap();
            let vehicles: Vec<usize> = (0..boxes.len())
                .filter(|&i| boxes[i]["class"] == "vehicle")
                .collect();
            let id = boxes[vehicles[0]]["id"].clone();
            boxes[vehicles[1]]["id"] = id;
            std::fs::write(&p, gz(&serde_json::to_vec(&v).unwrap())).unwrap();
        },
        &ingest("carla"),
        &["store"],
        rejects(&["appears twice"], 1),
    ));
    v.push(case(
        "frenetix a__b+c beside a+b__c",
        "frenetix",
        |t| {
            let i = t.join("in");
            std::fs::rename(i.join("scene-0001"), i.join("a__b")).unwrap();
            std::fs::rename(i.join("a__b/Default_logs.csv"), i.join("a__b/c_logs.csv")).unwrap();
            std::fs::rename(i.join("scene-0002"), i.join("a")).unwrap();
            std::fs::rename(i.join("a/Default_logs.csv"), i.join("a/b__c_logs.csv")).unwrap();
        },
        &ingest("frenetix"),
        &["store"],
        rejects(&["already taken"], 1),
    ));
    v.push(case(
        "frenetix X_logs.csv beside logs_X.csv",
        "frenetix",
        |t| {
            let s = t.join("in/scene-0001");
            std::fs::copy(s.join("Default_logs.csv"), s.join("logs_Default.csv")).unwrap();
        },
        &ingest("frenetix"),
        &["store"],
        rejects(&["already taken"], 2),
    ));
    #[cfg(unix)]
    v.push(case(
        "frenetix scene folder not UTF-8",
        "frenetix",
        |t| {
            use std::os::unix::ffi::OsStrExt;
            let bad = std::ffi::OsStr::from_bytes(b"scene-\xff01");
            std::fs::rename(t.join("in/scene-0001"), t.join("in").join(bad)).unwrap();
        },
        &ingest("frenetix"),
        &["store"],
        rejects(&["not UTF-8", "\\xFF"], 1),
    ));
    #[cfg(unix)]
    v.push(case(
        "waymo segment name not UTF-8",
        "waymo",
        |t| {
            use std::os::unix::ffi::OsStrExt;
            let comps: Vec<PathBuf> = std::fs::read_dir(t.join("in"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_dir())
                .collect();
            let mut stems: Vec<String> = std::fs::read_dir(t.join("in/vehicle_pose"))
                .unwrap()
                .map(|e| {
                    e.unwrap()
                        .path()
                        .file_stem()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            stems.sort();
            let bad = std::ffi::OsStr::from_bytes(b"seg\xfe.parquet");
            for c in comps {
                let f = c.join(format!("{}.parquet", stems[0]));
                if f.exists() {
                    std::fs::rename(&f, c.join(bad)).unwrap();
                }
            }
        },
        &ingest("waymo"),
        &["store"],
        rejects(&["not UTF-8", "\\xFE"], 1),
    ));
    v.into_iter()
        .map(|c| {
            if c.name.starts_with("10,000 boxes") {
                Case { seconds: 60, ..c }
            } else {
                quick(c)
            }
        })
        .collect()
}

#[test]
pub(super) fn bounded_special_and_colliding() {
    let _heavy = heavy();
    run_all(bounded_cases());
}

/// SIGTERM and SIGINT at random moments of `synth`, `ingest`, `visibility` and `release`: the
/// process ends with 128 + the signal (or finishes first), and no temporary file or
/// half-written store is left, with nothing outside the outputs changed.
#[cfg(unix)]
#[test]
pub(super) fn signals_leave_no_temporary_files() {
    let _heavy = heavy();
    let seed = common::random::seed();
    let mut rng = drivegen::qa::record::SplitMix64::new(seed);
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    common::cli::drivegen(
        &[
            "synth",
            "--scenes",
            "3",
            "--duration",
            "6",
            "--width",
            "320",
            "--height",
            "180",
        ],
        &[("--out", &t.join("ds"))],
    );
    common::cli::drivegen(
        &["ingest"],
        &[("--root", &t.join("ds")), ("--out", &t.join("st"))],
    );
    common::cli::drivegen(
        &["egomotion"],
        &[("--store", &t.join("st")), ("--out", &t.join("ego"))],
    );
    let outputs = [
        t.join("syn"),
        t.join("st2"),
        t.join("vis.arrow"),
        t.join("vis.rejects.jsonl"),
        t.join("rel"),
    ];
    let inputs = digest_tree(t, &outputs);
    let release: &[&str] = &[
        "release",
        "--qa",
        "ego/egodyn_qa.arrow",
        "--store",
        "st",
        "--out",
        "rel",
        "--rows-per-shard",
        "20",
    ];
    let commands: [(&[&str], i32); 8] = [
        (release, libc::SIGTERM),
        (release, libc::SIGINT),
        (
            &["synth", "--scenes", "3", "--duration", "6", "--out", "syn"],
            libc::SIGTERM,
        ),
        (&["ingest", "--root", "ds", "--out", "st2"], libc::SIGTERM),
        (
            &[
                "visibility",
                "--store",
                "st",
                "--out",
                "vis.arrow",
                "--device",
                "cpu",
            ],
            libc::SIGINT,
        ),
        (
            &["synth", "--scenes", "3", "--duration", "6", "--out", "syn"],
            libc::SIGINT,
        ),
        (&["ingest", "--root", "ds", "--out", "st2"], libc::SIGINT),
        (
            &[
                "visibility",
                "--store",
                "st",
                "--out",
                "vis.arrow",
                "--device",
                "cpu",
            ],
            libc::SIGTERM,
        ),
    ];
    for (args, sig) in commands {
        let after = Duration::from_millis(5 + rng.below(300));
        let mut child = common::cli::bin()
            .current_dir(t)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(after);
        // SAFETY: signalling a child this test spawned and has not reaped.
        unsafe {
            libc::kill(child.id() as i32, sig);
        }
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert!(
            status.success() || status.code() == Some(128 + sig) || status.signal() == Some(sig),
            "{args:?} after {after:?}: {status:?} (seed {seed})"
        );
        let debris: Vec<String> = digest_tree(t, &[])
            .into_keys()
            .filter(|k| k.ends_with(".tmp") || k.contains(".drivegen-new-"))
            .collect();
        assert!(
            debris.is_empty(),
            "{args:?} after {after:?} left {debris:?} (seed {seed})"
        );
    }
    let after = digest_tree(t, &outputs);
    let changed: Vec<_> = inputs
        .keys()
        .chain(after.keys())
        .filter(|k| inputs.get(*k) != after.get(*k))
        .collect();
    assert!(
        changed.is_empty(),
        "changed outside the outputs: {changed:?}"
    );
}

/// `synth --scenes 100000` writes scene by scene in flat memory: stopped after a few seconds,
/// it has written images and stayed far under the memory bound.
#[test]
pub(super) fn a_huge_synth_writes_as_it_goes() {
    let _heavy = heavy();
    let tmp = tempfile::tempdir().unwrap();
    let args: Vec<String> = [
        "synth",
        "--scenes",
        "100000",
        "--duration",
        "2",
        "--width",
        "32",
        "--height",
        "18",
        "--no-sweeps",
        "--out",
        "big",
    ]
    .map(String::from)
    .to_vec();
    let mut rss = 0.0;
    let done = run_bounded(&args, tmp.path(), Duration::from_secs(6), &mut rss);
    assert!(done.is_none(), "100000 scenes in 6 s?");
    assert!(rss < MAX_RSS_MIB, "peak RSS {rss:.0} MiB");
    let written = digest_tree(&tmp.path().join("big/samples"), &[])
        .keys()
        .filter(|k| k.ends_with(".jpg"))
        .count();
    assert!(written > 0, "nothing written after 6 s");
}
