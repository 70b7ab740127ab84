//! SIG on the synthetic corpus: every vehicle's cell recomputed here from the store's boxes and
//! calibration, the image order, the QA invariants, determinism, and a perfect prediction
//! scoring 1 on every metric.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;

use arrow::array::{Array, StringArray};
use arrow::ipc::reader::FileReader;
use drivegen::config::StageConfig;
use drivegen::ingest::nuscenes::{ingest, IngestOptions};
use drivegen::sig::{self, run, SigConfig, FRAMES_FILE, QA_FILE};
use drivegen::store::{CameraRow, ObjectRow, Store, Table};
use nalgebra::{Quaternion, UnitQuaternion, Vector3};
use serde_json::Value;

fn strings(b: &arrow::array::RecordBatch, n: &str) -> Vec<String> {
    let a = b
        .column_by_name(n)
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    (0..a.len()).map(|i| a.value(i).to_string()).collect()
}

/// Global → camera by hand: subtract the translation, rotate by the inverse quaternion.
fn to_camera(c: &CameraRow, p: [f64; 3]) -> Vector3<f64> {
    let inv = |t: [f64; 3], q: [f64; 4], v: Vector3<f64>| {
        let r = UnitQuaternion::from_quaternion(Quaternion::new(q[0], q[1], q[2], q[3]));
        r.inverse() * (v - Vector3::new(t[0], t[1], t[2]))
    };
    let e = inv(c.ego.t, c.ego.q, Vector3::new(p[0], p[1], p[2]));
    inv(c.cam.t, c.cam.q, e)
}

#[test]
fn synthetic_corpus_grids() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let opts = drivegen::synth::SynthOptions {
        scenes: 1,
        duration_s: 6.0,
        write_sweeps: false,
        ..Default::default()
    };
    drivegen::synth::write_nuscenes(&root, &opts).unwrap();
    let store_dir = dir.path().join("store");
    ingest(&IngestOptions {
        root,
        version: opts.version.clone(),
        out: store_dir.clone(),
        taxonomy: drivegen::taxonomy::Taxonomy::load(None).unwrap(),
        rules: Default::default(),
        chunk_scenes: 1,
        links: Default::default(),
    })
    .unwrap();
    let vis = dir.path().join("visibility.arrow");
    drivegen::visibility::run(&drivegen::visibility::Options::new(&store_dir, &vis, None).unwrap())
        .unwrap();
    let out = dir.path().join("sig");
    let sopts = sig::Options {
        store: store_dir.clone(),
        visibility: vis,
        out: out.clone(),
        config: SigConfig::load(None).unwrap(),
        seed: 1,
    };
    let summary = run(&sopts).unwrap();
    println!("{summary}");
    assert!(
        summary.images > 0 && summary.vehicles > 0 && summary.questions > 0,
        "{summary}"
    );

    let store = Store::open(&store_dir).unwrap();
    let objects: Vec<ObjectRow> = store.read_all(Table::Objects).unwrap();
    let cams: Vec<CameraRow> = store.read_all(Table::Cameras).unwrap();
    let cam_of: HashMap<&str, &CameraRow> = cams
        .iter()
        .map(|c| (c.camera_frame_id.as_str(), c))
        .collect();
    let mut checked = 0;
    let mut truth_lines = Vec::new();
    for b in FileReader::try_new(File::open(out.join(FRAMES_FILE)).unwrap(), None).unwrap() {
        let b = b.unwrap();
        assert_eq!(b.schema(), drivegen::sig::output::frames_schema());
        let (ids, sigs, objs, rels) = (
            strings(&b, "camera_frame_id"),
            strings(&b, "sig_json"),
            strings(&b, "objects_json"),
            strings(&b, "relations_json"),
        );
        for i in 0..ids.len() {
            let cam = cam_of[ids[i].as_str()];
            let sig: Value = serde_json::from_str(&sigs[i]).unwrap();
            assert_eq!(sig["self"], serde_json::json!([5, 0]));
            let list: Vec<Value> = serde_json::from_str(&objs[i]).unwrap();
            let mut last_u = f64::NEG_INFINITY;
            for (k, o) in list.iter().enumerate() {
                let track = o["track_id"].as_str().unwrap();
                let row = objects
                    .iter()
                    .find(|r| r.track_id == track && r.frame_idx == cam.frame_idx)
                    .unwrap();
                let p = to_camera(cam, row.center);
                // 4 m columns from −20 m, 5 m rows from the camera.
                let want = [
                    ((p.x + 20.0) / 4.0).floor() as u64,
                    (p.z / 5.0).floor() as u64,
                ];
                let cell = [
                    o["cell"][0].as_u64().unwrap(),
                    o["cell"][1].as_u64().unwrap(),
                ];
                assert_eq!(cell, want, "{track} in {}", ids[i]);
                assert_eq!(o["order"].as_u64().unwrap(), k as u64 + 1);
                let u = o["u"].as_f64().unwrap();
                assert!(u >= last_u);
                last_u = u;
                let key = o["key"].as_str().unwrap();
                assert_eq!(sig["vehicles"][key], o["cell"]);
                checked += 1;
            }
            let rel: Vec<Value> = serde_json::from_str(&rels[i]).unwrap();
            let n = list.len() + 1;
            assert_eq!(rel.len(), n * (n - 1));
            let dirs: Vec<Value> = rel
                .iter()
                .filter(|r| !r["directional"].is_null())
                .map(|r| r["directional"].clone())
                .collect();
            let prox: Vec<Value> = rel.iter().map(|r| r["proximal"].clone()).collect();
            truth_lines.push(serde_json::json!({"camera_frame_id": ids[i], "sig": sig, "answers_directional": dirs, "answers_proximal": prox}).to_string());
        }
    }
    assert!(checked > 0);
    // QA: the common invariants and the extra columns.
    let mut recs = Vec::new();
    for b in FileReader::try_new(File::open(out.join(QA_FILE)).unwrap(), None).unwrap() {
        let b = b.unwrap();
        assert_eq!(b.schema(), drivegen::sig::output::qa_schema());
        recs.extend(drivegen::qa::record::from_batch(&b).unwrap());
    }
    drivegen::qa::check_invariants(&recs).unwrap();
    assert!(recs
        .iter()
        .all(|r| r.family == "sig" && r.cameras.len() == 1));
    // Determinism.
    let out2 = dir.path().join("sig2");
    run(&sig::Options {
        out: out2.clone(),
        ..sopts.clone()
    })
    .unwrap();
    for f in [FRAMES_FILE, QA_FILE] {
        assert_eq!(
            std::fs::read(out.join(f)).unwrap(),
            std::fs::read(out2.join(f)).unwrap()
        );
    }
    // The truth as a prediction scores perfectly; an empty prediction file scores recall 0.
    let pred = dir.path().join("pred.jsonl");
    let mut f = File::create(&pred).unwrap();
    for l in &truth_lines {
        writeln!(f, "{l}").unwrap();
    }
    drop(f);
    let cfg = SigConfig::load(None).unwrap();
    let r = drivegen::score::sig::score_files(&cfg, &pred, &out.join(FRAMES_FILE)).unwrap();
    assert_eq!(r.predicted, r.frames);
    for v in [
        r.mlsm.mean.f1,
        r.mlsm.colour_level.assa,
        r.srgs_s,
        r.srgs_ws,
        r.srd_directional.acc,
        r.srd_proximal.acc,
    ] {
        assert!((v - 1.0).abs() < 1e-12, "{r:?}");
    }
    // A perfect grid without answer lists: the answers it implies are the truth's.
    let grids_only = dir.path().join("grids.jsonl");
    let mut f = File::create(&grids_only).unwrap();
    for l in &truth_lines {
        let mut v: Value = serde_json::from_str(l).unwrap();
        v.as_object_mut().unwrap().remove("answers_directional");
        v.as_object_mut().unwrap().remove("answers_proximal");
        writeln!(f, "{v}").unwrap();
    }
    drop(f);
    let r = drivegen::score::sig::score_files(&cfg, &grids_only, &out.join(FRAMES_FILE)).unwrap();
    // Images without vehicles have only self: no blanks; all others are implied exactly.
    assert!(
        (r.srd_directional.acc - 1.0).abs() < 1e-12 && (r.srd_proximal.acc - 1.0).abs() < 1e-12,
        "{r:?}"
    );
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let r = drivegen::score::sig::score_files(&cfg, &empty, &out.join(FRAMES_FILE)).unwrap();
    assert_eq!(r.predicted, 0);
    assert!(r.srd_directional.acc == 0.0 && (r.srd_proximal.mae - 4.0).abs() < 1e-12);
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"camera_frame_id\": \"x\"}\n").unwrap();
    let e = drivegen::score::sig::score_files(&cfg, &bad, &out.join(FRAMES_FILE))
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.jsonl") && e.contains("line 1"), "{e}");
}
