//! Ingest agrees with the official nuscenes-devkit on the same dataroot: keyframes, camera
//! images and their ego poses and intrinsics, and box velocities (the devkit's box_velocity).

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use drivegen::config::StageConfig;
use drivegen::ingest::nuscenes::{ingest, IngestOptions};
use drivegen::store::Store;

/// Runs the devkit dump on `root` and compares it with the store ingested from it.
pub fn compare_with_devkit(root: &Path, version: &str, store_dir: &Path) {
    let Some(py) = common::oracle::python("devkit") else {
        return;
    };
    let o = Command::new(py)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles/devkit_dump.py"))
        .arg(root)
        .arg(version)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "devkit: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dk: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let store = Store::open(store_dir).unwrap();
    let mut seen = 0;
    for s in store.scenes().unwrap() {
        let s = s.unwrap();
        let d = &dk[&s.scene.scene_id];
        assert!(d.is_object(), "devkit has no scene {}", s.scene.scene_id);
        seen += 1;
        let samples = d["samples"].as_array().unwrap();
        assert_eq!(samples.len(), s.frames.len());
        for (f, ds) in s.frames.iter().zip(samples) {
            assert_eq!(ds[0], f.source_frame_id.as_str());
            assert_eq!(ds[1].as_i64().unwrap(), f.timestamp_us);
        }
        let cams: HashMap<&str, &serde_json::Value> = d["cameras"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["token"].as_str().unwrap(), c))
            .collect();
        assert_eq!(cams.len(), s.cameras.len());
        for c in &s.cameras {
            let dc = cams[c.camera_frame_id.as_str()];
            assert_eq!(dc["timestamp"].as_i64().unwrap(), c.timestamp_us);
            assert_eq!(dc["key"].as_bool().unwrap(), c.is_keyframe);
            assert_eq!(dc["channel"], c.camera.as_str());
            assert_eq!(dc["filename"], c.image_path.as_str());
            for k in 0..3 {
                assert!((dc["ego_t"][k].as_f64().unwrap() - c.ego.t[k]).abs() < 1e-9);
            }
            for k in 0..4 {
                assert!((dc["ego_q"][k].as_f64().unwrap() - c.ego.q[k]).abs() < 1e-6);
            }
            assert!((dc["K"][0][0].as_f64().unwrap() - c.fx).abs() < 1e-9);
            assert!((dc["K"][1][2].as_f64().unwrap() - c.cy).abs() < 1e-9);
        }
        let anns: HashMap<&str, &serde_json::Value> = d["annotations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["token"].as_str().unwrap(), a))
            .collect();
        assert_eq!(anns.len(), s.objects.len());
        for o in &s.objects {
            let da = anns[o.annotation_id.as_str()];
            assert_eq!(da["category"], o.category.as_str());
            let close = |dv: &serde_json::Value, v: Option<f64>| match (dv.as_f64(), v) {
                (None, None) => true,
                (Some(a), Some(b)) => (a - b).abs() < 1e-6,
                _ => false,
            };
            assert!(
                close(&da["vx"], o.vx) && close(&da["vy"], o.vy),
                "velocity of {}: devkit {da} vs {:?} {:?}",
                o.annotation_id,
                o.vx,
                o.vy
            );
            let vis = da["visibility"].as_str().unwrap();
            assert_eq!(vis.parse::<u8>().ok(), o.visibility_bin);
        }
    }
    assert_eq!(seen, dk.as_object().unwrap().len());
}

#[test]
fn fixture_ingest_matches_devkit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    common::nusc_fixture::Fixture::new(2).write(&root, "v1.0-mini");
    let out = dir.path().join("store");
    ingest(&IngestOptions {
        root: root.clone(),
        version: "v1.0-mini".into(),
        out: out.clone(),
        taxonomy: drivegen::taxonomy::Taxonomy::load(None).unwrap(),
        rules: Default::default(),
        chunk_scenes: 2,
        links: Default::default(),
    })
    .unwrap();
    compare_with_devkit(&root, "v1.0-mini", &out);
}

/// The built-in synthetic corpus (small images, keyframes only, to stay quick) read by the
/// devkit and by our ingest gives the same keyframes, poses, intrinsics and box velocities.
#[test]
fn synthetic_corpus_ingest_matches_devkit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let opts = drivegen::synth::SynthOptions {
        scenes: 2,
        seed: 7,
        duration_s: 8.0,
        write_sweeps: false,
        image_width: 320,
        image_height: 180,
        ..Default::default()
    };
    drivegen::synth::write_nuscenes(&root, &opts).unwrap();
    let out = dir.path().join("store");
    let s = ingest(&IngestOptions {
        root: root.clone(),
        version: opts.version.clone(),
        out: out.clone(),
        taxonomy: drivegen::taxonomy::Taxonomy::load(None).unwrap(),
        rules: Default::default(),
        chunk_scenes: 2,
        links: Default::default(),
    })
    .unwrap();
    assert_eq!(s.scenes_written, 2, "{s}");
    compare_with_devkit(&root, &opts.version, &out);
}
