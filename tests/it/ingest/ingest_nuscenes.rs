//! nuScenes ingest against a hand-built fixture whose every value is known, and every kind of
//! bad input: each must name the file and token, reject only the broken scene, never panic.

use crate::common;

use std::path::{Path, PathBuf};

use common::cli::bin;
use common::nusc_fixture::*;
use drivegen::config::StageConfig;
use drivegen::ingest::nuscenes::{ingest, IngestOptions, SceneRules};
use drivegen::ingest::IngestSummary;
use drivegen::store::paths::Links;
use drivegen::store::{CameraRow, ObjectRow, Store, Table};
use drivegen::taxonomy::Taxonomy;

const VERSION: &str = "v1.0-fixture";

fn run(f: &Fixture, dir: &Path) -> drivegen::Result<IngestSummary> {
    let root = dir.join("root");
    f.write(&root, VERSION);
    ingest_into(root, dir.join("store"), 2)
}

/// Ingests the fixture version at `root` into `out`, `chunk` scenes at a time.
fn ingest_into(root: PathBuf, out: PathBuf, chunk: usize) -> drivegen::Result<IngestSummary> {
    ingest_links(root, out, chunk, Links::Follow)
}

fn ingest_links(
    root: PathBuf,
    out: PathBuf,
    chunk: usize,
    links: Links,
) -> drivegen::Result<IngestSummary> {
    ingest(&IngestOptions {
        root,
        version: VERSION.into(),
        out,
        taxonomy: Taxonomy::load(None).unwrap(),
        rules: SceneRules::default(),
        chunk_scenes: chunk,
        links,
    })
}

fn rejected(s: &IngestSummary) -> Vec<(String, String)> {
    s.rejects
        .iter()
        .map(|r| (r.scene_id.clone().unwrap_or_default(), r.reason.clone()))
        .collect()
}

#[test]
fn clean_fixture_has_known_rows() {
    let dir = tempfile::tempdir().unwrap();
    let s = run(&Fixture::new(3), dir.path()).unwrap();
    assert!(s.rejects.is_empty(), "{:?}", rejected(&s));
    assert_eq!(s.scenes_written, 3);
    let store = Store::open(&dir.path().join("store")).unwrap();
    let m = store.meta();
    assert_eq!(
        (m.source.as_str(), m.source_version.as_str()),
        ("nuscenes", VERSION)
    );
    // Per scene: 5 keyframes; 5 keyframe + 4 sweep camera images; 2 sample_data per keyframe
    // plus the sweeps, each with its own pose; 5 car boxes + 1 pedestrian box.
    assert_eq!(m.counts.scenes, 3);
    assert_eq!(m.counts.frames, 15);
    assert_eq!(m.counts.camera_images, 27);
    assert_eq!(m.counts.ego_poses, 3 * 14);
    assert_eq!(m.counts.objects, 18);

    let scenes: Vec<_> = store.scenes().unwrap().map(Result::unwrap).collect();
    let names: Vec<_> = scenes.iter().map(|s| s.scene.scene_id.as_str()).collect();
    assert_eq!(names, ["scene-0000", "scene-0001", "scene-0002"]);
    let sc = &scenes[1];
    assert_eq!(sc.scene.location.as_deref(), Some("singapore-onenorth"));
    // Frame poses are the LIDAR_TOP keyframe poses: x = 10 m/s · t.
    for fr in &sc.frames {
        let t = (fr.timestamp_us - T0) as f64 * 1e-6;
        assert!((fr.ego.t[0] - EGO_SPEED * t).abs() < 1e-9, "{fr:?}");
        assert!(fr.is_keyframe);
    }
    assert_eq!(sc.frames[2].source_frame_id, "sample_1_2");
    // Camera rows carry the pose at their own timestamp (10 ms after the keyframe).
    let cam: &CameraRow = sc
        .cameras
        .iter()
        .find(|c| c.camera_frame_id == "sd_cam_1_2_k")
        .unwrap();
    let t = (cam.timestamp_us - T0) as f64 * 1e-6;
    assert!((cam.ego.t[0] - EGO_SPEED * t).abs() < 1e-9);
    assert_eq!(
        (cam.frame_idx, cam.is_keyframe, cam.width, cam.height),
        (2, true, 1600, 900)
    );
    assert_eq!(
        (cam.fx, cam.fy, cam.cx, cam.cy),
        (1000.0, 1000.0, 800.0, 450.0)
    );
    assert_eq!(cam.cam.q, CAM_FRONT_Q);
    assert_eq!(cam.image_path, "samples/CAM_FRONT/sd_cam_1_2_k.jpg");
    // A sweep belongs to the keyframe that follows it.
    let sweep = sc
        .cameras
        .iter()
        .find(|c| c.camera_frame_id == "sd_cam_1_2_s")
        .unwrap();
    assert_eq!((sweep.frame_idx, sweep.is_keyframe), (2, false));
    // ego_poses are time-sorted.
    assert!(sc
        .ego_poses
        .windows(2)
        .all(|w| w[0].timestamp_us <= w[1].timestamp_us));

    // The car: centred difference gives exactly its speed; the ends use one-sided differences.
    let cars: Vec<&ObjectRow> = sc.objects.iter().filter(|o| o.class == "car").collect();
    assert_eq!(cars.len(), SAMPLES);
    for c in &cars {
        assert!((c.vx.unwrap() - CAR_SPEED).abs() < 1e-9 && c.vy.unwrap().abs() < 1e-12);
        assert_eq!(
            (c.category.as_str(), c.visibility_bin, c.num_lidar_pts),
            ("vehicle.car", Some(4), 100)
        );
        assert_eq!(c.attributes, ["vehicle.moving"]);
        assert_eq!(c.size_wlh, [1.9, 4.5, 1.6]);
    }
    let ped = sc.objects.iter().find(|o| o.class == "pedestrian").unwrap();
    assert_eq!((ped.vx, ped.vy, ped.visibility_bin), (None, None, None));
    assert!((ped.yaw - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
    assert!(ped.attributes.is_empty());
    assert!(store.rejects().unwrap().is_empty());
}

#[test]
fn missing_table_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = Fixture::new(1);
    let root = dir.path().join("root");
    let v = f.write(&root, VERSION);
    std::fs::remove_file(v.join("instance.json")).unwrap();
    let err = ingest_into(root, dir.path().join("store"), 1)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("instance.json") && err.contains("missing table"),
        "{err}"
    );
    assert!(!dir.path().join("store/store.json").exists());
}

#[test]
fn malformed_json_gives_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let v = Fixture::new(1).write(&root, VERSION);
    let p = v.join("sample.json");
    let text = std::fs::read_to_string(&p).unwrap();
    // Drop the comma after the first "timestamp" value: line of that field, end of the number.
    let idx = text.find("\"timestamp\"").unwrap();
    let comma = idx + text[idx..].find(',').unwrap();
    let line = text[..comma].lines().count();
    std::fs::write(&p, format!("{}{}", &text[..comma], &text[comma + 1..])).unwrap();
    let err = ingest_into(root, dir.path().join("store"), 1)
        .unwrap_err()
        .to_string();
    let expect = format!("sample.json:{}:", line + 1);
    assert!(
        err.contains(&expect) && err.contains("malformed JSON"),
        "{err} (expected {expect})"
    );
}

/// Breaks scene 1 of 3 with `fault`, ingests, and checks that only scene 1 is rejected with a
/// reason containing every `needle`.
fn only_scene_1_rejected(fault: impl FnOnce(&mut Fixture, &Path), needles: &[&str]) {
    only_scene_1_rejected_with(Links::Follow, fault, needles);
}

fn only_scene_1_rejected_with(
    links: Links,
    fault: impl FnOnce(&mut Fixture, &Path),
    needles: &[&str],
) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = Fixture::new(3);
    let root = dir.path().join("root");
    f.write(&root, VERSION);
    fault(&mut f, &root);
    let s = ingest_links(root, dir.path().join("store"), 2, links).unwrap();
    let r = rejected(&s);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].0, "scene-0001");
    for n in needles {
        assert!(r[0].1.contains(n), "reason {:?} lacks {n:?}", r[0].1);
    }
    assert_eq!(s.scenes_written, 2);
    let store = Store::open(&dir.path().join("store")).unwrap();
    let ids: Vec<_> = store
        .scenes()
        .unwrap()
        .map(|s| s.unwrap().scene.scene_id)
        .collect();
    assert_eq!(ids, ["scene-0000", "scene-0002"]);
    let logged = store.rejects().unwrap();
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0].stage, "ingest");
    assert!(
        logged[0].file.is_some() && logged[0].record.is_some(),
        "{logged:?}"
    );
}

fn rewrite(root: &Path, f: &Fixture) {
    f.write(root, VERSION);
}

#[test]
fn missing_image_rejects_its_scene() {
    only_scene_1_rejected(
        |_, root| std::fs::remove_file(root.join("sweeps/CAM_FRONT/sd_cam_1_3_s.jpg")).unwrap(),
        &["missing image", "sd_cam_1_3_s.jpg", "sample_data.json"],
    );
}

#[test]
fn dangling_token_rejects_its_scene() {
    only_scene_1_rejected(
        |f, root| {
            let a = f
                .sample_annotation
                .iter_mut()
                .find(|a| a.token == "ann_car_1_2")
                .unwrap();
            a.instance_token = "no_such_instance".into();
            rewrite(root, f);
        },
        &[
            "instance.json",
            "no_such_instance",
            "dangling",
            "ann_car_1_2",
        ],
    );
}

#[test]
fn duplicate_token_rejects_its_scene() {
    only_scene_1_rejected(
        |f, root| {
            let dup = f
                .ego_pose
                .iter()
                .find(|e| e.token == "ep_cam_1_2_k")
                .unwrap()
                .clone();
            f.ego_pose.push(dup);
            rewrite(root, f);
        },
        &["ego_pose.json", "ep_cam_1_2_k", "duplicate"],
    );
}

#[test]
fn non_monotonic_sample_timestamps_reject_the_scene() {
    only_scene_1_rejected(
        |f, root| {
            let s = f
                .sample
                .iter_mut()
                .find(|s| s.token == "sample_1_3")
                .unwrap();
            s.timestamp -= 2_000_000;
            rewrite(root, f);
        },
        &["non-monotonic", "sample_1_3", "sample.json"],
    );
}

#[test]
fn non_monotonic_sensor_timestamps_reject_the_scene() {
    only_scene_1_rejected(
        |f, root| {
            let s = f
                .sample_data
                .iter_mut()
                .find(|s| s.token == "sd_cam_1_2_k")
                .unwrap();
            s.timestamp += 900_000;
            rewrite(root, f);
        },
        &["non-monotonic", "CAM_FRONT", "sd_cam_1_2_k"],
    );
}

#[test]
fn nan_written_by_python_rejects_the_scene() {
    only_scene_1_rejected(
        |_, root| {
            // Python's json.dump writes float('nan') as the bare word NaN.
            let p = root.join(VERSION).join("sample_annotation.json");
            let text = std::fs::read_to_string(&p).unwrap();
            let i = text.find("\"ann_car_1_3\"").unwrap();
            let j = i + text[i..].find("\"translation\"").unwrap();
            let k = j + text[j..].find('[').unwrap() + 1;
            let end = k + text[k..].find(',').unwrap();
            std::fs::write(&p, format!("{}NaN{}", &text[..k], &text[end..])).unwrap();
        },
        &["non-finite", "ann_car_1_3", "sample_annotation.json"],
    );
}

#[test]
fn infinite_ego_pose_rejects_the_scene() {
    only_scene_1_rejected(
        |f, root| {
            f.ego_pose
                .iter_mut()
                .find(|e| e.token == "ep_lidar_1_0_k")
                .unwrap()
                .translation[1] = f64::INFINITY;
            f.write(root, VERSION);
            // serde_json writes a non-finite f64 as null; make it what Python would write.
            let p = root.join(VERSION).join("ego_pose.json");
            let text = std::fs::read_to_string(&p)
                .unwrap()
                .replace("null", "Infinity");
            std::fs::write(&p, text).unwrap();
        },
        &["non-finite", "ep_lidar_1_0_k", "ego_pose.json"],
    );
}

#[test]
fn far_from_unit_quaternion_rejects_the_scene() {
    only_scene_1_rejected(
        |f, root| {
            f.sample_annotation
                .iter_mut()
                .find(|a| a.token == "ann_car_1_1")
                .unwrap()
                .rotation = [1.01, 0.0, 0.0, 0.0];
            rewrite(root, f);
        },
        &["not a unit quaternion", "ann_car_1_1"],
    );
}

#[test]
fn near_unit_quaternion_is_renormalised() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = Fixture::new(1);
    f.sample_annotation[0].rotation = [1.0005, 0.0, 0.0, 0.0];
    let s = run(&f, dir.path()).unwrap();
    assert!(s.rejects.is_empty());
    assert_eq!(s.renormalised_quaternions, 1);
    let store = Store::open(&dir.path().join("store")).unwrap();
    let objs: Vec<ObjectRow> = store.read_all(Table::Objects).unwrap();
    assert_eq!(objs[0].q, [1.0, 0.0, 0.0, 0.0]);
}

#[test]
fn cli_exit_status_follows_rejects() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = Fixture::new(2);
    let root = dir.path().join("root");
    f.sample
        .iter_mut()
        .find(|s| s.token == "sample_1_3")
        .unwrap()
        .timestamp = 0;
    f.write(&root, VERSION);
    let ingest = |extra: &[&str], out: &str| {
        let mut c = bin();
        c.args(["ingest", "--source", "nuscenes", "--root"])
            .arg(&root)
            .arg("--out")
            .arg(dir.path().join(out));
        c.args(extra);
        c.output().unwrap()
    };
    let o = ingest(&[], "a");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("drivegen: rejected scene scene-0001") && err.contains("sample_1_3"),
        "{err}"
    );
    let o = ingest(&["--strict"], "b");
    assert_eq!(o.status.code(), Some(1));
    // Nothing ingestable: every scene broken.
    f.sample
        .iter_mut()
        .find(|s| s.token == "sample_0_3")
        .unwrap()
        .timestamp = 0;
    f.write(&root, VERSION);
    let o = ingest(&[], "c");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no scene could be ingested"));
    // A fatal error (no version folder) exits 2 and says what was found.
    let o = bin()
        .args(["ingest", "--root"])
        .arg(dir.path())
        .arg("--out")
        .arg(dir.path().join("d"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("drivegen: "));
}

#[test]
fn ingest_is_deterministic() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    run(&Fixture::new(3), a.path()).unwrap();
    run(&Fixture::new(3), b.path()).unwrap();
    for t in Table::ALL {
        let fa = std::fs::read(a.path().join("store").join(t.file_name())).unwrap();
        let fb = std::fs::read(b.path().join("store").join(t.file_name())).unwrap();
        assert!(fa == fb, "{} differs", t.file_name());
    }
}

/// Points scene 1's sweep `sd_cam_1_3_s` at `to`.
fn point_sweep_at(f: &mut Fixture, root: &Path, to: &str) {
    f.sample_data
        .iter_mut()
        .find(|s| s.token == "sd_cam_1_3_s")
        .unwrap()
        .filename = to.into();
    rewrite(root, f);
}

#[test]
fn an_absolute_image_path_rejects_its_scene() {
    only_scene_1_rejected(
        |f, root| {
            let outside = root.parent().unwrap().join("outside.jpg");
            std::fs::copy(root.join("sweeps/CAM_FRONT/sd_cam_1_3_s.jpg"), &outside).unwrap();
            point_sweep_at(f, root, outside.to_str().unwrap());
        },
        &["absolute", "sample_data.json", "sd_cam_1_3_s"],
    );
}

#[test]
fn an_image_path_climbing_out_rejects_its_scene() {
    only_scene_1_rejected(
        |f, root| {
            let outside = root.parent().unwrap().join("outside.jpg");
            std::fs::copy(root.join("sweeps/CAM_FRONT/sd_cam_1_3_s.jpg"), &outside).unwrap();
            point_sweep_at(f, root, "sweeps/../../outside.jpg");
        },
        &["climbs out", "sample_data.json", "sd_cam_1_3_s"],
    );
}

/// Moves scene 1's sweep image out of the root and links it back in.
#[cfg(unix)]
fn link_sweep_out(root: &Path) {
    let outside = root.parent().unwrap().join("outside.jpg");
    let inside = root.join("sweeps/CAM_FRONT/sd_cam_1_3_s.jpg");
    std::fs::rename(&inside, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &inside).unwrap();
}

#[cfg(unix)]
#[test]
fn an_image_linked_out_of_the_root_rejects_its_scene_with_strict_links() {
    only_scene_1_rejected_with(
        Links::Strict,
        |_, root| link_sweep_out(root),
        &["symbolic link", "sample_data.json", "sd_cam_1_3_s"],
    );
}

#[cfg(unix)]
#[test]
fn an_image_linked_out_of_the_root_is_followed_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    Fixture::new(3).write(&root, VERSION);
    link_sweep_out(&root);
    let s = ingest_into(root, dir.path().join("store"), 2).unwrap();
    assert!(s.rejects.is_empty(), "{s}");
    assert_eq!(s.scenes_written, 3);
    let store = Store::open(&dir.path().join("store")).unwrap();
    assert!(!store.meta().strict_links);
    let linked: Vec<CameraRow> = store
        .scenes()
        .unwrap()
        .flat_map(|s| s.unwrap().cameras)
        .filter(|c| c.camera_frame_id == "sd_cam_1_3_s")
        .collect();
    // The store keeps the path as the dataset names it, not the link's target.
    assert_eq!(linked.len(), 1);
    assert_eq!(linked[0].image_path, "sweeps/CAM_FRONT/sd_cam_1_3_s.jpg");
}

#[test]
fn a_byte_order_mark_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let v = Fixture::new(2).write(&root, VERSION);
    for table in ["sample.json", "scene.json", "sample_data.json"] {
        let p = v.join(table);
        let mut bytes = b"\xEF\xBB\xBF".to_vec();
        bytes.extend(std::fs::read(&p).unwrap());
        std::fs::write(&p, bytes).unwrap();
    }
    let s = ingest_into(root, dir.path().join("store"), 1).unwrap();
    assert_eq!(s.scenes_written, 2, "{:?}", rejected(&s));
}

#[test]
fn an_absurd_box_size_rejects_its_scene() {
    only_scene_1_rejected(
        |f, root| {
            f.sample_annotation
                .iter_mut()
                .find(|a| a.token == "ann_car_1_2")
                .unwrap()
                .size = [1.9, 1e308, 1.6];
            rewrite(root, f);
        },
        &["box size", "sample_annotation.json", "ann_car_1_2"],
    );
}

#[test]
fn an_ego_pose_beyond_any_map_rejects_its_scene() {
    only_scene_1_rejected(
        |f, root| {
            f.ego_pose
                .iter_mut()
                .find(|e| e.token.starts_with("ep_cam_1_"))
                .unwrap()
                .translation = [3e7, 0.0, 0.0];
            rewrite(root, f);
        },
        &["ego position", "ego_pose.json", "beyond"],
    );
}
