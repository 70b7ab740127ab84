//! CARLA ingest: Bench2Drive routes against the world they were written from (left-handed →
//! right-handed, half extents, `[pitch, roll, yaw]`, the class mapping, the static-vehicle
//! bug), a round trip through `world_cord`, broken routes rejected with the file and JSON
//! path, and Frenetix logs cut into EgoDyn's 31-sample, stride-30 windows.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use drivegen::config::StageConfig;
use drivegen::geometry::{box_corners, wrap_pi, yaw_of};
use drivegen::ingest::sources::SourcesConfig;
use drivegen::ingest::{carla, frenetix};
use drivegen::store::Store;
use drivegen::synth::bench2drive::route_dir;
use drivegen::synth::world::SceneWorld;
use drivegen::synth::SynthOptions;
use drivegen::taxonomy::Taxonomy;

fn opts(scenes: usize, duration_s: f64) -> SynthOptions {
    SynthOptions {
        scenes,
        duration_s,
        image_width: 64,
        image_height: 36,
        ..Default::default()
    }
}

fn ingest(root: &Path, out: &Path) -> drivegen::ingest::IngestSummary {
    carla::run(&carla::Options {
        root: root.to_path_buf(),
        out: out.to_path_buf(),
        taxonomy: Taxonomy::load(None).unwrap(),
        config: SourcesConfig::load(None).unwrap(),
        links: Default::default(),
    })
    .unwrap()
}

fn read_gz(p: &Path) -> serde_json::Value {
    let mut s = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap())
        .read_to_end(&mut s)
        .unwrap();
    serde_json::from_slice(&s).unwrap()
}

fn write_gz(p: &Path, v: &serde_json::Value) {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(&serde_json::to_vec(v).unwrap()).unwrap();
    std::fs::write(p, e.finish().unwrap()).unwrap();
}

#[test]
fn bench2drive_route_carries_the_world_right_handed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("b2d");
    drivegen::synth::bench2drive::write(&root, &opts(1, 2.0)).unwrap();
    let out = dir.path().join("store");
    let s = ingest(&root, &out);
    assert_eq!(s.scenes_written, 1, "{s}");
    let scene = Store::open(&out)
        .unwrap()
        .scenes()
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let world = SceneWorld::build(0, 0, 2.0).unwrap();
    assert_eq!(scene.scene.scene_id, "TownSynth_Route0_Weather1");
    assert_eq!(scene.frames.len(), 20);
    for (i, f) in scene.frames.iter().enumerate() {
        assert_eq!(f.timestamp_us, 100_000 * i as i64);
        let e = world.ego_state(0.1 * i as f64);
        assert!(
            (f.ego.t[0] - e.x).abs() < 1e-9 && (f.ego.t[1] - e.y).abs() < 1e-9,
            "{:?}",
            f.ego.t
        );
        assert!(wrap_pi(yaw_of(f.ego.q) - e.yaw).abs() < 1e-9);
    }
    // Six cameras; the front one 0.8 m ahead and 1.6 m up, looking forward (OpenCV z = ego x),
    // f = 64 / (2 tan 35°).
    assert_eq!(scene.cameras.len(), 120);
    let front = scene
        .cameras
        .iter()
        .find(|c| c.camera == "CAM_FRONT")
        .unwrap();
    assert!((front.fx - 64.0 / (2.0 * 35f64.to_radians().tan())).abs() < 1e-9);
    assert_eq!((front.cx, front.cy), (32.0, 18.0));
    assert!((front.cam.t[0] - 0.8).abs() < 1e-12 && (front.cam.t[2] - 1.6).abs() < 1e-12);
    let q = drivegen::geometry::quat_wxyz(front.cam.q);
    assert!((q * nalgebra::Vector3::z() - nalgebra::Vector3::x()).norm() < 1e-12);
    // CARLA's front-right camera (y = +0.55, yaw +55°) sits to the right: negative y.
    let fr = scene
        .cameras
        .iter()
        .find(|c| c.camera == "CAM_FRONT_RIGHT")
        .unwrap();
    assert!((fr.cam.t[1] + 0.55).abs() < 1e-12);
    let zr = drivegen::geometry::quat_wxyz(fr.cam.q) * nalgebra::Vector3::z();
    assert!((zr.y.atan2(zr.x) + 55f64.to_radians()).abs() < 1e-12);
    assert!(root.join(&front.image_path).is_file());

    // Objects: the vehicles and walkers within 60 m, in the world frame, classes by blueprint.
    let mut parked_seen = 0;
    for (i, f) in scene.frames.iter().enumerate() {
        let t = 0.1 * i as f64;
        let e = world.ego_state(t);
        let objs: Vec<_> = scene
            .objects
            .iter()
            .filter(|o| o.frame_idx == f.frame_idx)
            .collect();
        let mut expected = 0;
        for a in &world.agents {
            let want = match a.class() {
                c @ ("car" | "truck" | "bus" | "emergency_vehicle" | "motorcycle" | "bicycle"
                | "pedestrian") => c,
                _ => continue,
            };
            let st = a.state(t);
            if ((st.center[0] - e.x).powi(2) + (st.center[1] - e.y).powi(2)).sqrt() > 60.0 {
                continue;
            }
            expected += 1;
            let o = objs
                .iter()
                .find(|o| (0..3).all(|k| (o.center[k] - st.center[k]).abs() < 1e-9))
                .unwrap_or_else(|| panic!("agent {} ({want}) at {t} s missing", a.id));
            assert_eq!(o.class, want);
            for k in 0..3 {
                assert!(
                    (o.size_wlh[k] - a.size[k]).abs() < 1e-12,
                    "{:?} vs {:?}",
                    o.size_wlh,
                    a.size
                );
            }
            assert!(
                wrap_pi(o.yaw - st.yaw).abs() < 1e-9,
                "{} vs {}",
                o.yaw,
                st.yaw
            );
            if want == "pedestrian" {
                assert_eq!(
                    o.vx, None,
                    "walker speed is always 0 in Bench2Drive: unknown"
                );
            } else {
                assert!((o.vx.unwrap() - st.velocity[0]).abs() < 1e-9);
            }
            if a.parked && want != "pedestrian" {
                parked_seen += 1;
                assert!(o.attributes.contains(&"carla.state.static".to_string()));
            }
        }
        assert_eq!(objs.len(), expected, "frame {i}");
    }
    assert!(parked_seen > 0, "the static-vehicle path was not exercised");

    // Round trip: the store's box corners are Bench2Drive's world_cord with y negated.
    let anno = read_gz(&root.join(route_dir(&world)).join("anno/00007.json.gz"));
    let mut checked = 0;
    for b in anno["bounding_boxes"].as_array().unwrap() {
        if b["class"] == "ego_vehicle" {
            continue;
        }
        let id = b["id"].as_str().unwrap();
        let o = scene
            .objects
            .iter()
            .find(|o| o.frame_idx == 7 && o.track_id == id)
            .unwrap();
        let ours = box_corners(o.center, o.size_wlh, o.q);
        for v in b["world_cord"].as_array().unwrap() {
            let p = nalgebra::Vector3::new(
                v[0].as_f64().unwrap(),
                -v[1].as_f64().unwrap(),
                v[2].as_f64().unwrap(),
            );
            let d = ours
                .iter()
                .map(|c| (c - p).norm())
                .fold(f64::INFINITY, f64::min);
            assert!(d < 1e-9, "vertex {p} of {id} is {d} m from every corner");
        }
        checked += 1;
    }
    assert!(checked > 5);
}

fn route(root: &Path, k: usize) -> PathBuf {
    root.join(route_dir(&SceneWorld::build(0, k, 1.0).unwrap()))
}

#[test]
fn broken_routes_are_rejected_with_file_and_json_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("b2d");
    drivegen::synth::bench2drive::write(&root, &opts(5, 1.0)).unwrap();
    // 0: not gzip.
    std::fs::write(route(&root, 0).join("anno/00003.json.gz"), b"{}").unwrap();
    // 1: a camera image missing.
    std::fs::remove_file(route(&root, 1).join("camera/rgb_back/00004.jpg")).unwrap();
    // 2: a box's extent holds a string.
    let p2 = route(&root, 2).join("anno/00002.json.gz");
    let mut v = read_gz(&p2);
    v["bounding_boxes"][1]["extent"][1] = serde_json::json!("wide");
    write_gz(&p2, &v);
    // 3: no ego box.
    let p3 = route(&root, 3).join("anno/00005.json.gz");
    let mut v = read_gz(&p3);
    v["bounding_boxes"]
        .as_array_mut()
        .unwrap()
        .retain(|b| b["class"] != "ego_vehicle");
    write_gz(&p3, &v);
    let out = dir.path().join("store");
    let s = ingest(&root, &out);
    assert_eq!(s.scenes_written, 1, "{s}");
    let r = Store::open(&out).unwrap().rejects().unwrap();
    assert_eq!(r.len(), 4);
    let by = |k: usize| {
        let name = format!("TownSynth_Route{k}_Weather1");
        r.iter()
            .find(|x| x.scene_id.as_deref() == Some(name.as_str()))
            .unwrap()
            .clone()
    };
    assert!(by(0).file.unwrap().ends_with("anno/00003.json.gz"));
    assert!(by(0).reason.contains("gzip"), "{}", by(0).reason);
    assert!(by(1).file.unwrap().ends_with("camera/rgb_back/00004.jpg"));
    assert!(by(1).reason.contains("missing camera image"));
    let r2 = by(2);
    assert!(r2.file.unwrap().ends_with("anno/00002.json.gz"));
    assert_eq!(
        r2.record.as_deref(),
        Some("/bounding_boxes/1/extent/1"),
        "{}",
        r2.reason
    );
    let r3 = by(3);
    assert!(r3.reason.contains("ego_vehicle") && r3.file.unwrap().ends_with("00005.json.gz"));
    let ok = Store::open(&out)
        .unwrap()
        .scenes()
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(ok.scene.scene_id, "TownSynth_Route4_Weather1");
    // A single route folder is a root of its own.
    let single = ingest(&route(&root, 4), &dir.path().join("one"));
    assert_eq!((single.scenes_total, single.scenes_written), (1, 1));
}

#[test]
fn frenetix_logs_give_egodyn_windows() {
    use drivegen::egomotion::config::{Anchoring, EgodynConfig, PoseSource};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("logs");
    drivegen::synth::frenetix::write(&root, &opts(2, 10.0)).unwrap();
    // A second behaviour of scene 2 in the other file-name form, with a broken row.
    let text = std::fs::read_to_string(root.join("scene-0002/Default_logs.csv")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // A decimal comma in x on line 9.
    let mut fields: Vec<String> = lines[8].split(';').map(str::to_string).collect();
    fields[2] = "12,5".into();
    lines[8] = fields.join(";");
    std::fs::write(root.join("scene-0002/logs_sporty.csv"), lines.join("\n")).unwrap();
    let out = dir.path().join("store");
    let s = frenetix::run(&frenetix::Options {
        root: root.clone(),
        out: out.clone(),
        config: SourcesConfig::load(None).unwrap(),
        links: Default::default(),
    })
    .unwrap();
    assert_eq!((s.scenes_total, s.scenes_written), (3, 2), "{s}");
    let r = Store::open(&out).unwrap().rejects().unwrap();
    assert_eq!(r[0].scene_id.as_deref(), Some("scene-0002__sporty"));
    assert_eq!(r[0].record.as_deref(), Some("line 9"), "{:?}", r[0]);
    assert!(r[0].reason.contains("x_position_vehicle_m"));

    // 100 rows at 0.1 s: windows [0, 31), [30, 61), [60, 91) — three, sharing boundaries.
    let mut cfg = EgodynConfig::default_config().unwrap();
    cfg.clips.anchoring = Anchoring::Sliding;
    cfg.clips.pose_source = PoseSource::Frames;
    let engine = drivegen::egomotion::Engine::new(cfg).unwrap();
    let store = Store::open(&out).unwrap();
    let world = SceneWorld::build(0, 0, 10.0).unwrap();
    for scene in store.scenes().unwrap() {
        let scene = scene.unwrap();
        assert_eq!(scene.frames.len(), 100);
        let (clips, rejects) = engine.scene_clips(&scene, "carla");
        let ids: Vec<&str> = clips.iter().map(|c| c.raw.clip_id.as_str()).collect();
        let stem = scene.scene.scene_id.clone();
        assert_eq!(
            ids,
            [0, 1, 2].map(|w| format!("{stem}__w{w}")),
            "{rejects:?}"
        );
        for (w, c) in clips.iter().enumerate() {
            assert_eq!(c.raw.samples.len(), 31);
            assert_eq!(c.raw.samples[0].timestamp_us, 3_000_000 * w as i64);
            assert!((c.raw.duration_s - 3.0).abs() < 1e-9);
        }
        if stem == "scene-0001__Default" {
            // Positions are the world's, to the printed precision.
            let s = &clips[1].raw.samples[5];
            let e = world.ego_state(3.5);
            assert!((s.x - e.x).abs() < 1e-9 && (s.y - e.y).abs() < 1e-9);
        }
    }
}
