//! `egomotion::run` end to end on a store of analytic scenes: the written tables, their
//! published schemas, the common QA invariants, the prompts, rejects, determinism, sliding
//! windows and config handling.

use super::support;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::{Array, Float64Array, ListArray, RecordBatch, StringArray, StructArray};
use arrow::ipc::reader::FileReader;
use drivegen::config::StageConfig;
use drivegen::egomotion::config::{Anchoring, EgodynConfig};
use drivegen::egomotion::{self, output, CLIPS_FILE, QA_FILE, REJECTS_FILE};
use drivegen::qa::{check_invariants, from_batch, QaRecord};
use drivegen::store::rejects::RejectLog;
use drivegen::store::schema::schema_json;
use drivegen::store::{SceneData, Store};

fn scratch(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("egodyn-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

/// Five 8 s scenes with nuScenes-like timing (12 Hz images, a keyframe every 6th) and one
/// broken scene (a NaN pose, duplicated timestamps).
fn scenes() -> Vec<SceneData> {
    let mut v = vec![
        support::scene(
            "scene-straight",
            8.0,
            12.0,
            6,
            &*support::straight(8.0, 0.3),
        ),
        support::scene("scene-left", 8.0, 12.0, 6, &*support::turn(7.0, 0.25, -3.0)),
        support::scene(
            "scene-right",
            8.0,
            12.0,
            6,
            &*support::turn(12.0, -0.15, 1.0),
        ),
        support::scene("scene-brake", 8.0, 12.0, 6, &*support::decel(14.0, 1.6)),
        support::scene("scene-slow", 8.0, 12.0, 6, &*support::straight(1.5, -2.0)),
    ];
    let mut bad = support::scene("scene-bad", 8.0, 12.0, 6, &*support::straight(5.0, 0.0));
    bad.cameras[40].ego.t[0] = f64::NAN;
    let ts = bad.cameras[80].timestamp_us;
    bad.cameras[81].timestamp_us = ts;
    v.push(bad);
    v
}

/// A fresh scratch folder holding the store of [`scenes`] at `store/`.
fn store(name: &str) -> PathBuf {
    let base = scratch(name);
    support::write_store(&base.join("store"), &scenes());
    base
}

fn read(path: &Path) -> Vec<RecordBatch> {
    FileReader::try_new(File::open(path).unwrap(), None)
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

fn published(path: &str) -> serde_json::Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(path);
    serde_json::from_str(
        &std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
    )
    .unwrap()
}

#[test]
fn writes_clips_qa_and_rejects() {
    let base = store("run");
    let (store_dir, out) = (base.join("store"), base.join("out"));
    let summary =
        egomotion::run(&egomotion::Options::new(&store_dir, &out, None).unwrap()).unwrap();
    let text = summary.to_string();
    assert!(text.contains("egodyn: 6 scenes"), "{text}");

    // clips.arrow: the published schema, 31 samples per channel, t from 0 to 3 s.
    let clips = read(&out.join(CLIPS_FILE));
    let schema = clips[0].schema();
    assert_eq!(
        schema_json("clips", &schema),
        published("egomotion/clips.json")
    );
    assert_eq!(
        schema_json("clips", &schema),
        schema_json("clips", &output::clips_schema())
    );
    let mut clip_ids = BTreeSet::new();
    let mut n_clips = 0;
    for b in &clips {
        let ids = b
            .column_by_name("clip_id")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        for ch in output::CHANNELS {
            let l = b
                .column_by_name(ch)
                .unwrap()
                .as_any()
                .downcast_ref::<ListArray>()
                .unwrap();
            for i in 0..b.num_rows() {
                assert_eq!(l.value(i).len(), 31, "{ch}");
            }
        }
        let t = b
            .column_by_name("t")
            .unwrap()
            .as_any()
            .downcast_ref::<ListArray>()
            .unwrap();
        let t0 = t.value(0);
        let t0 = t0.as_any().downcast_ref::<Float64Array>().unwrap();
        assert_eq!((t0.value(0), t0.value(30)), (0.0, 3.0));
        let traj = b
            .column_by_name("trajectory_text")
            .unwrap()
            .as_any()
            .downcast_ref::<StructArray>()
            .unwrap();
        let enc = |n: &str| {
            traj.column_by_name(n)
                .unwrap()
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap()
                .value(0)
                .to_string()
        };
        assert!(
            enc("summary").starts_with("Vehicle dynamics: max_speed="),
            "{}",
            enc("summary")
        );
        assert!(
            enc("timeseries").starts_with(
                "Vehicle dynamics (10 time-steps over 3.0s):\nt(s):    0.00, 0.30, 0.70, 1.00,"
            ),
            "{}",
            enc("timeseries")
        );
        assert_eq!(enc("timeseries").lines().count(), 6);
        assert!(enc("coordinates")
            .starts_with("Vehicle trajectory (10 waypoints over 3.0s, metres):\nt(s): 0.00,"));
        assert!(
            enc("coordinates").contains("\nx(m): 0.0, "),
            "zero-centred: {}",
            enc("coordinates")
        );
        assert_eq!(
            enc("full"),
            format!("{}\n{}", enc("timeseries"), enc("coordinates"))
        );
        for i in 0..b.num_rows() {
            clip_ids.insert(ids.value(i).to_string());
        }
        n_clips += b.num_rows();
    }
    // 8 s scenes with keyframes every 0.5 s: keyframes at 3.0 … 8.0 s have 3 s of history (11
    // per scene). In the broken scene only the windows that miss both the NaN pose (image 40,
    // 3.33 s) and the duplicated timestamp (image 81, 6.75 s) survive: those ending at 3.0 and 6.5 s.
    assert_eq!(n_clips, 5 * 11 + 2, "clips: {clip_ids:?}");
    assert!(clip_ids.contains("scene-bad_kf0006") && clip_ids.contains("scene-bad_kf0013"));
    assert_eq!(summary.clips as usize, n_clips);

    // egodyn_qa.arrow: the common record, 14 questions per clip, every invariant.
    let qa_batches = read(&out.join(QA_FILE));
    assert_eq!(
        schema_json("qa", &qa_batches[0].schema()),
        published("qa.json")
    );
    let records: Vec<QaRecord> = qa_batches
        .iter()
        .flat_map(|b| from_batch(b).unwrap())
        .collect();
    assert_eq!(records.len(), 14 * n_clips);
    if let Err(e) = check_invariants(&records) {
        panic!("{} violations, first: {:?}", e.len(), &e[..e.len().min(5)]);
    }
    let store = Store::open(&store_dir).unwrap();
    let images: BTreeSet<(String, String)> = store
        .read_all::<drivegen::store::CameraRow>(drivegen::store::Table::Cameras)
        .unwrap()
        .into_iter()
        .map(|c| (c.camera, c.camera_frame_id))
        .collect();
    let mut per_type: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &records {
        *per_type.entry(&r.question_type).or_default() += 1;
        assert_eq!(r.family, "egodyn");
        assert_eq!(r.source, "synthetic");
        assert!(clip_ids.contains(r.clip_id.as_ref().unwrap()));
        assert!(r.frame_idx.is_none());
        assert_eq!(r.cameras.len(), 10);
        for (c, id) in r.cameras.iter().zip(&r.camera_frame_ids) {
            assert!(
                images.contains(&(c.clone(), id.clone())),
                "unknown image {c} {id}"
            );
        }
        let question = r.question();
        let lines: Vec<&str> = question.lines().collect();
        assert_eq!(lines[0], "The 10 images show the forward camera view at evenly spaced moments across a 3-second driving clip.");
        assert!(
            lines[1].ends_with(&format!("[{}]", r.choices.join(" / "))),
            "{}",
            lines[1]
        );
        // A question whose answer words carry thresholds defines them on a line of its own.
        match lines.len() {
            3 => {}
            4 => {
                for c in r
                    .choices
                    .iter()
                    .filter(|c| !["yes", "no"].contains(&c.as_str()))
                {
                    assert!(
                        lines[2].contains(&format!("'{c}'")),
                        "{c} undefined: {}",
                        lines[2]
                    );
                }
            }
            n => panic!("{n} prompt lines: {question}"),
        }
        assert_eq!(
            lines[lines.len() - 1],
            "Answer with ONLY the chosen option."
        );
        let params: serde_json::Value = serde_json::from_str(&r.params).unwrap();
        assert_eq!(params["type"], r.rule);
        assert_eq!(params["alpha"], 1.0);
        assert_eq!(params["config_hash"], summary.config_hash);
        let evidence: serde_json::Value = serde_json::from_str(&r.evidence).unwrap();
        assert_eq!(evidence["label"], r.answer);
    }
    assert_eq!(per_type.len(), 14);
    assert!(per_type.values().all(|n| *n == n_clips));

    // The 10 images are spread over the ~36 images of the 3 s window, first and last included.
    let r = &records[0];
    let scene_cams: Vec<String> = store
        .read_all::<drivegen::store::CameraRow>(drivegen::store::Table::Cameras)
        .unwrap()
        .into_iter()
        .filter(|c| c.scene_id == r.scene_id)
        .map(|c| c.camera_frame_id)
        .collect();
    let first = scene_cams
        .iter()
        .position(|c| *c == r.camera_frame_ids[0])
        .unwrap();
    let last = scene_cams
        .iter()
        .position(|c| *c == r.camera_frame_ids[9])
        .unwrap();
    assert_eq!(last - first, 36, "a 3 s window at 12 Hz holds 37 images");

    // Labels follow the scenes: the straight scene goes straight, the left one turns left.
    for r in &records {
        if r.question_type == "turn_direction" {
            let want = match r.scene_id.as_str() {
                "scene-left" => "left",
                "scene-right" => "right",
                _ => "straight",
            };
            assert_eq!(r.answer, want, "{}", r.clip_id.as_ref().unwrap());
        }
        if r.question_type == "braking_intensity" && r.scene_id == "scene-brake" {
            assert!(
                r.answer == "emergency" || r.answer == "moderate",
                "{}",
                r.answer
            );
        }
    }

    // Rejects: every keyframe without 3 s of history, and the broken scene's clips.
    let rejects = RejectLog::read(&out.join(REJECTS_FILE)).unwrap();
    assert!(rejects
        .iter()
        .all(|r| r.stage == "egomotion" && r.item.is_some()));
    assert!(
        rejects.iter().any(|r| r.reason.contains("not finite")),
        "{rejects:?}"
    );
    assert!(
        rejects
            .iter()
            .any(|r| r.reason.contains("not strictly increasing")),
        "{rejects:?}"
    );
    assert!(
        rejects
            .iter()
            .any(|r| r.reason.contains("poses in the 3 s before keyframe")),
        "{rejects:?}"
    );
    assert_eq!(
        summary.rejected.values().sum::<u64>() as usize,
        rejects.len()
    );
    assert!(summary.rejected["invalid"] >= 2);
}

#[test]
fn output_is_deterministic() {
    let base = store("det");
    let (store_dir, a, b) = (base.join("store"), base.join("a"), base.join("b"));
    egomotion::run(&egomotion::Options::new(&store_dir, &a, None).unwrap()).unwrap();
    egomotion::run(&egomotion::Options::new(&store_dir, &b, None).unwrap()).unwrap();
    for f in [CLIPS_FILE, QA_FILE, REJECTS_FILE] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f} differs between runs"
        );
    }
}

#[test]
fn sliding_windows_for_uniform_logs() {
    // A 10 Hz log of 9.2 s (93 poses): windows [0, 31), [30, 61), [60, 91); the rest is dropped.
    let dir = scratch("sliding");
    let store_dir = dir.join("store");
    support::write_store(
        &store_dir,
        &[support::scene(
            "carla-log",
            9.2,
            10.0,
            5,
            &*support::straight(9.0, 1.0),
        )],
    );
    let mut cfg = EgodynConfig::default_config().unwrap();
    cfg.clips.anchoring = Anchoring::Sliding;
    let cfg_path = dir.join("sliding.toml");
    std::fs::write(&cfg_path, cfg.to_toml().unwrap()).unwrap();
    let out = dir.join("out");
    let s = egomotion::run(&egomotion::Options::new(&store_dir, &out, Some(&cfg_path)).unwrap())
        .unwrap();
    assert_eq!(s.clips, 3);
    let clips = read(&out.join(CLIPS_FILE));
    let ids = clips[0]
        .column_by_name("clip_id")
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    let ids: Vec<&str> = (0..ids.len()).map(|i| ids.value(i)).collect();
    assert_eq!(ids, ["carla-log__w0", "carla-log__w1", "carla-log__w2"]);
    let anchors = clips[0]
        .column_by_name("anchor_timestamp_us")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow::array::Int64Array>()
        .unwrap();
    // Consecutive windows share their boundary sample: each ends 3 s after the previous one.
    assert_eq!(anchors.value(1) - anchors.value(0), 3_000_000);
    assert_eq!(anchors.value(0) - support::T0_US, 3_000_000);
}

#[test]
fn config_roundtrips_and_rejects_unknown_keys() {
    let cfg = EgodynConfig::default_config().unwrap();
    let text = cfg.to_toml().unwrap();
    assert_eq!(
        EgodynConfig::from_toml(&text, Path::new("roundtrip.toml")).unwrap(),
        cfg
    );
    let typo = text.replacen("min_frames", "min_frame", 1);
    assert!(EgodynConfig::from_toml(&typo, Path::new("typo.toml")).is_err());
    let bad_rule = text.replacen("thresholds = [\n    -1.59,", "thresholds = [\n    -0.5,", 1);
    if bad_rule != text {
        let e = EgodynConfig::from_toml(&bad_rule, Path::new("order.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("ascending"), "{e}");
    }
    let mut even = cfg.clone();
    even.kinematics.savgol.window = 4;
    assert!(EgodynConfig::from_toml(&even.to_toml().unwrap(), Path::new("even.toml")).is_err());
    // A missing store is an error, not a panic.
    assert!(egomotion::run(
        &egomotion::Options::new(Path::new("/nonexistent/store"), scratch("missing"), None)
            .unwrap()
    )
    .is_err());
}
