//! STSBench on the synthetic corpus: the QA invariants, references into the store, scenarios
//! that need the synthetic map layers, skipped-and-counted scenarios without a map, and
//! byte-identical reruns.

use std::collections::{BTreeSet, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::{Array, StringArray};
use arrow::ipc::reader::FileReader;
use drivegen::config::StageConfig;
use drivegen::store::{CameraRow, ObjectRow, Store, Table};
use drivegen::stsbench::{self, run, StsConfig, QA_FILE};

fn corpus(dir: &Path) -> PathBuf {
    crate::common::synth_store(dir, 4, 20.0, (160, 90)).2
}

fn read_qa(path: &Path) -> (Vec<drivegen::qa::QaRecord>, Vec<String>) {
    let r = FileReader::try_new(File::open(path).unwrap(), None).unwrap();
    let (mut recs, mut roles) = (Vec::new(), Vec::new());
    for b in r {
        let b = b.unwrap();
        assert_eq!(b.schema(), drivegen::stsbench::output::schema());
        recs.extend(drivegen::qa::record::from_batch(&b).unwrap());
        let role = b
            .column_by_name("role")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        roles.extend((0..role.len()).map(|i| role.value(i).to_string()));
    }
    (recs, roles)
}

#[test]
fn synthetic_corpus_questions() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = corpus(dir.path());
    let out = dir.path().join("sts");
    let opts = stsbench::Options {
        store: store_dir.clone(),
        out: out.clone(),
        config: StsConfig::load(None).unwrap(),
        seed: 3,
        maps: None,
    };
    let summary = run(&opts).unwrap();
    println!("{summary}");
    assert_eq!(summary.scenes_without_map, 0);
    assert!(
        summary.skipped_no_map.is_empty(),
        "{:?}",
        summary.skipped_no_map
    );
    let (recs, roles) = read_qa(&out.join(QA_FILE));
    assert!(recs.len() >= 20, "{} questions", recs.len());
    drivegen::qa::check_invariants(&recs).unwrap();
    // Every question offers 5 scenarios (4 between two pedestrians, who share only four), all
    // different, has its role as its type, and names what it shows.
    let store = Store::open(&store_dir).unwrap();
    let objects: Vec<ObjectRow> = store.read_all(Table::Objects).unwrap();
    let cams: Vec<CameraRow> = store.read_all(Table::Cameras).unwrap();
    let tracks: HashSet<(&str, &str)> = objects
        .iter()
        .map(|o| (o.scene_id.as_str(), o.track_id.as_str()))
        .collect();
    let images: HashSet<(&str, &str, &str)> = cams
        .iter()
        .map(|c| {
            (
                c.scene_id.as_str(),
                c.camera.as_str(),
                c.camera_frame_id.as_str(),
            )
        })
        .collect();
    for (r, role) in recs.iter().zip(&roles) {
        assert_eq!(r.family, "stsbench");
        // The type is the role, split by the actor's kind where the role has both.
        assert!(
            r.question_type == *role || r.question_type.starts_with(&format!("{role}_")),
            "{} in role {role}",
            r.question_type
        );
        let two_pedestrians = r.question_type == "agent_agent_pedestrian";
        assert_eq!(
            two_pedestrians,
            role == "agent_agent" && r.question().matches("is a pedestrian").count() == 2
        );
        assert_eq!(
            r.choices.len(),
            if two_pedestrians { 4 } else { 5 },
            "{}",
            r.question()
        );
        let distinct: BTreeSet<&String> = r.choices.iter().collect();
        assert_eq!(distinct.len(), r.choices.len(), "{}", r.question());
        assert_eq!(r.cameras.len(), 6, "{}", r.qa_id);
        for o in &r.objects {
            assert!(
                tracks.contains(&(r.scene_id.as_str(), o.as_str())),
                "{} names unknown track {o}",
                r.qa_id
            );
        }
        for (c, id) in r.cameras.iter().zip(&r.camera_frame_ids) {
            assert!(images.contains(&(r.scene_id.as_str(), c.as_str(), id.as_str())));
        }
        for c in &r.choices {
            assert!(r.question().contains(c.as_str()));
        }
    }
    // All five roles occur, and scenarios that need the synthetic map layers were mined.
    let role_set: BTreeSet<&str> = roles.iter().map(String::as_str).collect();
    for role in ["ego", "ego_agent", "agent", "agent_ego", "agent_agent"] {
        assert!(role_set.contains(role), "no {role} question: {role_set:?}");
    }
    let mined = |k: &str| summary.mined.get(k).copied().unwrap_or(0);
    // The ego's scripted lane changes and turns (the synthetic world's own manoeuvre scripts,
    // independent of the miner) are each found exactly once: segment boundaries of the synthetic
    // lanes (every 20 m) do not fire lane changes.
    use drivegen::synth::world::{PathEvent, SceneWorld, Side};
    let (mut lc, mut left, mut right) = (0, 0, 0);
    for k in 0..4 {
        let w = SceneWorld::build(0, k, 20.0).unwrap();
        for ev in w.script.path {
            match ev {
                PathEvent::LaneChange { .. } => lc += 1,
                PathEvent::Turn {
                    side: Side::Left, ..
                } => left += 1,
                PathEvent::Turn {
                    side: Side::Right, ..
                } => right += 1,
            }
        }
    }
    assert_eq!((lc, left, right), (3, 2, 1));
    assert_eq!(mined("ego/LANE_CHANGE"), lc, "{:?}", summary.mined);
    assert_eq!(mined("ego/LEFT_TURN"), left, "{:?}", summary.mined);
    assert_eq!(mined("ego/RIGHT_TURN"), right, "{:?}", summary.mined);
    assert!(mined("agent/CROSS") >= 1, "{:?}", summary.mined);
    // Same inputs and seed: the same bytes.
    let out2 = dir.path().join("sts2");
    run(&stsbench::Options {
        out: out2.clone(),
        ..opts.clone()
    })
    .unwrap();
    assert_eq!(
        std::fs::read(out.join(QA_FILE)).unwrap(),
        std::fs::read(out2.join(QA_FILE)).unwrap()
    );
    // Without a map, the map scenarios are skipped and counted, never guessed.
    let empty = dir.path().join("no-maps");
    std::fs::create_dir_all(&empty).unwrap();
    let bare = run(&stsbench::Options {
        out: dir.path().join("sts3"),
        maps: Some(empty),
        ..opts
    })
    .unwrap();
    assert_eq!(bare.scenes_without_map, 4);
    assert_eq!(bare.mined.get("ego/LANE_CHANGE"), None);
    assert!(
        bare.skipped_no_map
            .get("ego/LANE_CHANGE")
            .copied()
            .unwrap_or(0)
            > 0
    );
    assert!(bare.skipped_no_map.get("agent/CROSS").copied().unwrap_or(0) > 0);
    let (bare_recs, _) = read_qa(&dir.path().join("sts3").join(QA_FILE));
    for r in &bare_recs {
        assert!(
            !r.question_type.contains("lane_change")
                && r.question_type != "cross"
                && r.question_type != "walk"
        );
    }
}

#[test]
fn malformed_map_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("boston-seaport.json");
    std::fs::write(&p, r#"{"node": [], "polygon": [{"token": "p1", "exterior_node_tokens": ["n1", "n2", "n3"]}], "lane": []}"#).unwrap();
    let e = drivegen::maplayers::read_expansion(&p)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("boston-seaport.json")
            && e.contains("polygon p1")
            && e.contains("unknown node n1"),
        "{e}"
    );
}
