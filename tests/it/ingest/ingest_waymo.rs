//! Waymo Open Dataset v2 ingest: the synthetic segments against the world they were written
//! from, files with the observed type quirks written by pyarrow (a different generator), and
//! broken segments rejected with the file and row while the others are ingested.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use drivegen::config::StageConfig;
use drivegen::geometry::{wrap_pi, yaw_of};
use drivegen::ingest::sources::SourcesConfig;
use drivegen::ingest::waymo;
use drivegen::store::{Store, Table};
use drivegen::synth::waymo::{segment_name, WaymoSynthOptions, DEFAULT_DISTORTION};
use drivegen::synth::world::SceneWorld;
use drivegen::synth::SynthOptions;
use drivegen::taxonomy::Taxonomy;

/// nuScenes-mini's first keyframe, where the synthetic corpus starts (µs).
const T0_US: i64 = 1_532_402_927_647_951;

fn synth(dir: &Path, scenes: usize, duration_s: f64) -> PathBuf {
    let root = dir.join("waymo");
    let opts = WaymoSynthOptions {
        base: SynthOptions {
            scenes,
            duration_s,
            image_width: 64,
            image_height: 36,
            ..Default::default()
        },
        ..Default::default()
    };
    drivegen::synth::waymo::write(&root, &opts).unwrap();
    root
}

fn ingest(root: &Path, out: &Path) -> waymo::Summary {
    waymo::run(&waymo::Options {
        root: root.to_path_buf(),
        out: out.to_path_buf(),
        taxonomy: Taxonomy::load(None).unwrap(),
        config: SourcesConfig::load(None).unwrap(),
        links: Default::default(),
    })
    .unwrap()
}

fn same_rotation(a: [f64; 4], b: [f64; 4]) -> bool {
    let dot: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    (dot.abs() - 1.0).abs() < 1e-12
}

#[test]
fn synthetic_segment_carries_the_world() {
    let dir = tempfile::tempdir().unwrap();
    let root = synth(dir.path(), 1, 3.0);
    let store_dir = dir.path().join("store");
    let s = ingest(&root, &store_dir);
    assert_eq!(s.ingest.scenes_written, 1, "{s}");
    assert_eq!(s.missing_optional.len(), 0);
    let store = Store::open(&store_dir).unwrap();
    let scene = store.scenes().unwrap().next().unwrap().unwrap();
    let world = SceneWorld::build(0, 0, 3.0).unwrap();
    assert_eq!(scene.scene.scene_id, segment_name(0, 0));
    assert_eq!(scene.scene.source, "waymo");
    assert_eq!(
        scene.scene.location.as_deref(),
        Some("location_boston_seaport")
    );
    assert!(scene.scene.description.contains("Day") && scene.scene.description.contains("sunny"));

    // 30 frames at 10 Hz from the first keyframe, the ego where the world puts it.
    assert_eq!(scene.frames.len(), 30);
    for (i, f) in scene.frames.iter().enumerate() {
        assert_eq!(f.timestamp_us, T0_US + 100_000 * i as i64);
        let e = world.ego_state(0.1 * i as f64);
        assert!((f.ego.t[0] - e.x).abs() < 1e-9 && (f.ego.t[1] - e.y).abs() < 1e-9);
        assert!(f.ego.t[2].abs() < 1e-12);
        assert!(wrap_pi(yaw_of(f.ego.q) - e.yaw).abs() < 1e-12);
    }

    // Five cameras per frame with the nuScenes rig's geometry (OpenCV axes, sensor → ego)
    // and intrinsics scaled to 64×36, carrying the distortion.
    assert_eq!(scene.cameras.len(), 150);
    let front = scene.cameras.iter().find(|c| c.camera == "FRONT").unwrap();
    assert_eq!((front.width, front.height), (64, 36));
    assert!((front.fx - 1266.417203046554 * 0.04).abs() < 1e-9);
    assert!((front.cx - 816.2670197447984 * 0.04).abs() < 1e-9);
    let want_t = [1.70079118954, 0.0159456324149, 1.51095763913];
    let want_q = [
        0.4998015430569128,
        -0.5030316162024876,
        0.4997798114386805,
        -0.49737083824542755,
    ];
    for (have, want) in front.cam.t.iter().zip(want_t) {
        assert!((have - want).abs() < 1e-12);
    }
    assert!(same_rotation(front.cam.q, want_q), "{:?}", front.cam.q);
    let side = scene
        .cameras
        .iter()
        .find(|c| c.camera == "SIDE_RIGHT")
        .unwrap();
    assert!(
        (side.cam.t[1] - -0.480568219723).abs() < 1e-12,
        "CAM_BACK_RIGHT's mount"
    );
    assert_eq!(front.distortion, Some(DEFAULT_DISTORTION));
    assert_eq!(
        front.image_path,
        format!("camera_image/{}.parquet", segment_name(0, 0))
    );

    // Every labelled agent within 60 m, in the world frame, with Waymo's coarse types.
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
            let st = a.state(t);
            let d = ((st.center[0] - e.x).powi(2) + (st.center[1] - e.y).powi(2)).sqrt();
            let want_class = match a.class() {
                "car"
                | "truck"
                | "bus"
                | "trailer"
                | "construction_vehicle"
                | "emergency_vehicle" => "car",
                "pedestrian" => "pedestrian",
                "bicycle" | "motorcycle" => "bicycle",
                _ => continue,
            };
            if d > 60.0 {
                continue;
            }
            expected += 1;
            let o = objs
                .iter()
                .find(|o| (0..3).all(|k| (o.center[k] - st.center[k]).abs() < 1e-9))
                .unwrap_or_else(|| panic!("agent {} at {t} s missing", a.id));
            assert_eq!(o.class, want_class, "agent {} ({})", a.id, a.class());
            for k in 0..3 {
                assert!((o.size_wlh[k] - a.size[k]).abs() < 1e-12);
            }
            assert!(
                wrap_pi(o.yaw - st.yaw).abs() < 1e-9,
                "{} vs {}",
                o.yaw,
                st.yaw
            );
            assert!((o.vx.unwrap() - st.velocity[0]).abs() < 1e-9);
            assert!((o.vy.unwrap() - st.velocity[1]).abs() < 1e-9);
        }
        assert_eq!(objs.len(), expected, "frame {i}");
    }
    assert!(scene.objects.len() > 100);
    // The image bytes are referenced, and can be fetched.
    let jpeg = waymo::image::read_jpeg(&root, front).unwrap();
    assert_eq!(&jpeg[..2], &[0xff, 0xd8]);
    // Same input, same store bytes.
    let again = dir.path().join("store2");
    ingest(&root, &again);
    for t in Table::ALL {
        assert_eq!(
            std::fs::read(store_dir.join(t.file_name())).unwrap(),
            std::fs::read(again.join(t.file_name())).unwrap()
        );
    }
}

/// A segment written by pyarrow with the quirks of the real files (`docs/formats.md` §2.5): f32
/// transforms in fixed-size and plain lists, string and dictionary camera names, f32 box
/// values; no optional components.
const QUIRKS_PY: &str = r#"
import sys, pyarrow as pa, pyarrow.parquet as pq, os
root = sys.argv[1]; seg = "quirks_0001_000_0021_000"
def put(comp, table):
    os.makedirs(os.path.join(root, comp), exist_ok=True)
    pq.write_table(table, os.path.join(root, comp, seg + ".parquet"), compression="none")
ts = [1000000, 1100000, 1200000]
def pose(i):  # yaw 90 degrees, at (100 + i, 200, 0), row-major
    return [0, -1, 0, 100 + i, 1, 0, 0, 200, 0, 0, 1, 0, 0, 0, 0, 1]
f32x16 = pa.list_(pa.float32(), 16)
put("vehicle_pose", pa.table({
    "key.segment_context_name": [seg] * 3,
    "key.frame_timestamp_micros": pa.array(ts, pa.int64()),
    "[VehiclePoseComponent].world_from_vehicle.transform": pa.array([pose(i) for i in range(3)], f32x16),
}))
cal = {"key.segment_context_name": [seg], "key.camera_name": ["FRONT"]}
for k, v in zip(["f_u", "f_v", "c_u", "c_v", "k1", "k2", "p1", "p2", "k3"], [1000, 1000, 960, 640, 0, 0, 0, 0, 0]):
    cal["[CameraCalibrationComponent].intrinsic." + k] = pa.array([v], pa.float64())
cal["[CameraCalibrationComponent].extrinsic.transform"] = pa.array([[1, 0, 0, 1.5, 0, 1, 0, 0, 0, 0, 1, 2, 0, 0, 0, 1]], pa.list_(pa.float64()))
cal["[CameraCalibrationComponent].width"] = pa.array([1920], pa.int32())
cal["[CameraCalibrationComponent].height"] = pa.array([1280], pa.int32())
put("camera_calibration", pa.table(cal))
put("camera_image", pa.table({
    "key.segment_context_name": [seg] * 3,
    "key.frame_timestamp_micros": pa.array(ts, pa.int64()),
    "key.camera_name": pa.array(["FRONT"] * 3).dictionary_encode(),
    "[CameraImageComponent].image": pa.array([b"\xff\xd8 not really a jpeg"] * 3, pa.binary()),
    "[CameraImageComponent].pose.transform": pa.array([pose(i) for i in range(3)], f32x16),
    "[CameraImageComponent].pose_timestamp": pa.array([t / 1e6 + 0.01 for t in ts], pa.float64()),
}))
box = {"key.segment_context_name": [seg] * 3, "key.frame_timestamp_micros": pa.array(ts, pa.int64()),
       "key.laser_object_id": ["obj"] * 3, "[LiDARBoxComponent].type": pa.array([4] * 3, pa.int8())}
for k, v in zip(["center.x", "center.y", "center.z", "size.x", "size.y", "size.z", "heading"], [10, 0, 1, 4, 2, 1.5, 0.5]):
    box["[LiDARBoxComponent].box." + k] = pa.array([v] * 3, pa.float32())
put("lidar_box", pa.table(box))
"#;

#[test]
fn pyarrow_files_with_type_quirks_are_read() {
    let Some(py) = common::oracle::python("oracles") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("quirks");
    let st = Command::new(py)
        .arg("-c")
        .arg(QUIRKS_PY)
        .arg(&root)
        .status()
        .unwrap();
    assert!(st.success());
    let out = dir.path().join("store");
    let s = ingest(&root, &out);
    assert_eq!(s.ingest.scenes_written, 1, "{s} {:?}", s.ingest.rejects);
    assert_eq!(s.missing_optional.len(), 4, "{:?}", s.missing_optional);
    let scene = Store::open(&out)
        .unwrap()
        .scenes()
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(scene.frames.len(), 3);
    // Frame 1: ego at (101, 200), yaw 90°.
    assert_eq!(scene.frames[1].ego.t, [101.0, 200.0, 0.0]);
    assert!((yaw_of(scene.frames[1].ego.q) - std::f64::consts::FRAC_PI_2).abs() < 1e-7);
    // The box 10 m ahead of the ego is 10 m north of it; heading 0.5 rad + 90°; Waymo's
    // size.x is the length.
    let o = scene.objects.iter().find(|o| o.frame_idx == 1).unwrap();
    assert!(
        (o.center[0] - 101.0).abs() < 1e-5 && (o.center[1] - 210.0).abs() < 1e-5,
        "{:?}",
        o.center
    );
    assert!((o.center[2] - 1.0).abs() < 1e-6);
    assert!(
        (o.yaw - (0.5 + std::f64::consts::FRAC_PI_2)).abs() < 1e-6,
        "{}",
        o.yaw
    );
    assert_eq!(o.size_wlh, [2.0, 4.0, 1.5]);
    assert_eq!(
        (o.category.as_str(), o.class.as_str()),
        ("TYPE_CYCLIST", "bicycle")
    );
    assert_eq!((o.vx, o.vy), (None, None));
    // The camera: a Waymo camera looking along the vehicle's +x is an OpenCV camera whose
    // z axis is the vehicle's x; the image time is its pose_timestamp.
    let c = &scene.cameras[0];
    assert_eq!(c.camera, "FRONT");
    assert_eq!(c.timestamp_us, 1_010_000);
    let q = drivegen::geometry::quat_wxyz(c.cam.q);
    let z = q * nalgebra::Vector3::z();
    let x = q * nalgebra::Vector3::x();
    assert!(
        (z - nalgebra::Vector3::x()).norm() < 1e-12 && (x + nalgebra::Vector3::y()).norm() < 1e-12
    );
    assert_eq!(c.cam.t, [1.5, 0.0, 2.0]);
    assert_eq!(c.distortion, Some([0.0; 5]));
}

fn rejects(store: &Path) -> Vec<drivegen::store::rejects::Reject> {
    Store::open(store).unwrap().rejects().unwrap()
}

#[test]
fn broken_segments_are_rejected_with_file_and_row() {
    use drivegen::synth::parquet_table::{write_table, Kind, TableBuf, Val};
    let dir = tempfile::tempdir().unwrap();
    let root = synth(dir.path(), 4, 1.0);
    let segs: Vec<String> = (0..4).map(|k| segment_name(0, k)).collect();
    let file = |c: &str, k: usize| root.join(c).join(format!("{}.parquet", segs[k]));
    // 0: camera_image is not Parquet at all.
    std::fs::write(file("camera_image", 0), b"PAR1 garbage").unwrap();
    // 1: no lidar_box.
    std::fs::remove_file(file("lidar_box", 1)).unwrap();
    // 2: row 5 of vehicle_pose has a NaN in its transform.
    let mut t = TableBuf::new(&[
        ("key.segment_context_name", Kind::Utf8),
        ("key.frame_timestamp_micros", Kind::Int64),
        (
            "[VehiclePoseComponent].world_from_vehicle.transform",
            Kind::Mat16,
        ),
    ]);
    for i in 0..10 {
        let mut m = [
            1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0,
        ];
        if i == 5 {
            m[3] = f64::NAN;
        }
        let ts = T0_US + 4 * 90_000_000 + i * 100_000;
        t.push(vec![Val::S(segs[2].clone()), Val::I(ts), Val::M(m)]);
    }
    write_table(&file("vehicle_pose", 2), &mut t).unwrap();
    let out = dir.path().join("store");
    let s = ingest(&root, &out);
    assert_eq!(s.ingest.scenes_written, 1);
    let r = rejects(&out);
    assert_eq!(r.len(), 3, "{r:?}");
    let by = |k: usize| {
        r.iter()
            .find(|x| x.scene_id.as_deref() == Some(&segs[k]))
            .unwrap()
    };
    assert!(by(0)
        .file
        .as_deref()
        .unwrap()
        .ends_with(&format!("camera_image/{}.parquet", segs[0])));
    assert!(
        by(0).reason.contains("not a readable Parquet file"),
        "{}",
        by(0).reason
    );
    assert!(
        by(1).reason.contains("lidar_box") && by(1).reason.contains("no"),
        "{}",
        by(1).reason
    );
    assert_eq!(by(2).record.as_deref(), Some("row 5"), "{:?}", by(2));
    assert!(by(2).file.as_deref().unwrap().contains("vehicle_pose"));
    assert!(by(2).reason.contains("not finite"), "{}", by(2).reason);
    let store = Store::open(&out).unwrap();
    let ids: Vec<String> = store
        .scenes()
        .unwrap()
        .map(|s| s.unwrap().scene.scene_id)
        .collect();
    assert_eq!(ids, vec![segs[3].clone()]);

    // The command line: exit 0 with one segment in, 1 with --strict, the reasons on stderr.
    let run = |strict: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_drivegen"));
        c.args(["ingest", "--source", "waymo", "--root"])
            .arg(&root)
            .arg("--out")
            .arg(dir.path().join("cli"));
        if strict {
            c.arg("--strict");
        }
        c.env("DRIVEGEN_PROGRESS", "0").output().unwrap()
    };
    let o = run(false);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("row 5") && err.contains(&segs[2]), "{err}");
    assert_eq!(run(true).status.code(), Some(1));
    // A root without component folders is an error naming it.
    let o = Command::new(env!("CARGO_BIN_EXE_drivegen"))
        .args(["ingest", "--source", "waymo", "--root"])
        .arg(dir.path())
        .arg("--out")
        .arg(dir.path().join("x"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("vehicle_pose"));
}

/// Our projection through Waymo's lens against the dataset's own `projected_lidar_box`
/// (global shutter on the synthetic data, so no rolling-shutter term). Waymo's box covers the
/// projected *corners*; ours agrees with it to 1e-6 px. The rasterised silhouette (faces
/// split until edge images are straight to 0.05 px) follows the curved images of the edges: its box is within
/// [`SILHOUETTE_TOL_PX`] of the densely projected edges, and so exceeds the corners-only box
/// by the edges' bow (printed; tens of pixels for tall boxes near the image border at this
/// strong k1 = −0.12). A pinhole projection misses most boxes by more than 3 px.
const SILHOUETTE_TOL_PX: f64 = 0.1;

#[test]
fn projection_with_distortion_matches_projected_lidar_box() {
    use drivegen::visibility::project::{project_box, BoxGeom, Camera};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("waymo");
    let lens = [-0.12, 0.02, 0.001, -0.001, 0.0];
    let opts = WaymoSynthOptions {
        base: SynthOptions {
            scenes: 1,
            duration_s: 2.0,
            image_width: 480,
            image_height: 320,
            ..Default::default()
        },
        distortion: lens,
    };
    drivegen::synth::waymo::write(&root, &opts).unwrap();
    let store_dir = dir.path().join("store");
    ingest(&root, &store_dir);
    let scene = Store::open(&store_dir)
        .unwrap()
        .scenes()
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let seg = segment_name(0, 0);
    let boxes = waymo::read_projected_boxes(&root, &seg).unwrap();
    assert!(boxes.len() > 100, "{}", boxes.len());
    let (mut worst_corner, mut worst_sil, mut pinhole_far) = (0.0f64, 0.0f64, 0usize);
    let (mut excess, mut inside_boxes) = (0.0f64, 0usize);
    for pb in &boxes {
        let c = scene
            .cameras
            .iter()
            .find(|c| {
                c.camera == pb.camera
                    && c.camera_frame_id
                        .contains(&format!("/{}/", pb.timestamp_us))
            })
            .unwrap();
        let o = scene
            .objects
            .iter()
            .find(|o| o.timestamp_us == pb.timestamp_us && o.track_id == pb.laser_object_id)
            .unwrap();
        let c_row = c;
        let cam = Camera::from_row(c).unwrap();
        assert!(cam.lens.is_some());
        let b = BoxGeom::from_row(o).unwrap();
        let p = project_box(&cam, &b, 0.1).expect("a box Waymo projects is projected");
        let theirs = [
            pb.center[0] - pb.size[0] / 2.0,
            pb.center[1] - pb.size[1] / 2.0,
            pb.center[0] + pb.size[0] / 2.0,
            pb.center[1] + pb.size[1] / 2.0,
        ];
        let (w, h) = (480.0, 320.0);
        let clamp = |b: [f64; 4]| [b[0].max(0.0), b[1].max(0.0), b[2].min(w), b[3].min(h)];
        let mut corners = [
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ];
        for px in p.corners_px {
            let [u, v] = px.unwrap();
            corners = [
                corners[0].min(u),
                corners[1].min(v),
                corners[2].max(u),
                corners[3].max(v),
            ];
        }
        let diff =
            |a: [f64; 4], b: [f64; 4]| (0..4).map(|k| (a[k] - b[k]).abs()).fold(0.0, f64::max);
        worst_corner = worst_corner.max(diff(clamp(corners), theirs));
        let mut sil = [
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ];
        for t in &p.tris {
            for v in t {
                sil = [
                    sil[0].min(v[0]),
                    sil[1].min(v[1]),
                    sil[2].max(v[0]),
                    sil[3].max(v[1]),
                ];
            }
        }
        excess = excess.max(diff(sil, theirs));
        // Independent truth for the silhouette: every segment between two corners sampled
        // densely through the writer's own lens model (the box's image is the image of its
        // edges' hull), for boxes wholly inside the image.
        let waymo_frame = p
            .corners_cam
            .map(|v| nalgebra::Vector3::new(v.z, -v.x, -v.y));
        let k = [
            c_row.fx, c_row.fy, c_row.cx, c_row.cy, lens[0], lens[1], lens[2], lens[3], lens[4],
        ];
        let mut dense = [
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ];
        let mut inside = true;
        for i in 0..8 {
            for j in i + 1..8 {
                for s in 0..=400 {
                    let t = f64::from(s) / 400.0;
                    let q = waymo_frame[i] * (1.0 - t) + waymo_frame[j] * t;
                    let [u, v] = drivegen::synth::waymo::project(&q, &k).unwrap();
                    inside &= (0.0..=w).contains(&u) && (0.0..=h).contains(&v);
                    dense = [
                        dense[0].min(u),
                        dense[1].min(v),
                        dense[2].max(u),
                        dense[3].max(v),
                    ];
                }
            }
        }
        if inside {
            inside_boxes += 1;
            worst_sil = worst_sil.max(diff(sil, dense));
            // Inside the image the silhouette contains the corners' box and exceeds it by the
            // bow of the edges (partly outside, Waymo's box is clamped, ours clipped).
            let c = clamp(corners);
            assert!(
                sil[0] <= c[0] + 1e-6
                    && sil[1] <= c[1] + 1e-6
                    && sil[2] >= c[2] - 1e-6
                    && sil[3] >= c[3] - 1e-6
            );
        }
        let pinhole = Camera {
            lens: None,
            ..cam.clone()
        };
        // Without the lens the box may not even reach the image.
        let Some(q) = project_box(&pinhole, &b, 0.1) else {
            pinhole_far += 1;
            continue;
        };
        let mut pin = [
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ];
        for px in q.corners_px {
            let [u, v] = px.unwrap();
            pin = [pin[0].min(u), pin[1].min(v), pin[2].max(u), pin[3].max(v)];
        }
        if diff(clamp(pin), theirs) > 3.0 * SILHOUETTE_TOL_PX {
            pinhole_far += 1;
        }
    }
    eprintln!(
        "projected_lidar_box: {} boxes; corners' box within {worst_corner:.1e} px; silhouette \
         box within {worst_sil:.3} px of the densely projected edges ({inside_boxes} boxes \
         inside the image); silhouette beyond the corners-only box by up to {excess:.1} px; \
         pinhole off by more than {} px on {pinhole_far}",
        boxes.len(),
        3.0 * SILHOUETTE_TOL_PX
    );
    assert!(inside_boxes > 50, "{inside_boxes}");
    assert!(
        worst_corner < 1e-6,
        "corner boxes differ by {worst_corner} px"
    );
    assert!(
        worst_sil <= SILHOUETTE_TOL_PX,
        "silhouette boxes differ by {worst_sil} px"
    );
    assert!(
        pinhole_far * 4 > boxes.len(),
        "distortion hardly matters here: {pinhole_far}"
    );

    // The visibility stage runs on the distorted store (its CPU rasteriser here: lavapipe
    // is slow on the thousands of lens pieces; the GPU kernels take the same triangle lists).
    let out = dir.path().join("vis.arrow");
    let o = Command::new(env!("CARGO_BIN_EXE_drivegen"))
        .args(["visibility", "--store"])
        .arg(&store_dir)
        .arg("--out")
        .arg(&out)
        .args(["--device", "cpu"])
        .env("DRIVEGEN_PROGRESS", "0")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::metadata(&out).unwrap().len() > 0);
}

#[test]
fn a_release_embeds_the_images_of_waymo_segments() {
    use arrow::array::{AsArray, StructArray};
    let dir = tempfile::tempdir().unwrap();
    let root = synth(dir.path(), 1, 2.0);
    let store = dir.path().join("store");
    ingest(&root, &store);
    let cams: Vec<drivegen::store::CameraRow> = Store::open(&store)
        .unwrap()
        .read_all(drivegen::store::Table::Cameras)
        .unwrap();
    // Three questions showing two images each, from different frames and cameras.
    let picks = [(0, 7), (3, 11), (19, cams.len() - 1)];
    let rows: Vec<drivegen::qa::QaRecord> = picks
        .iter()
        .enumerate()
        .map(|(i, &(a, b))| drivegen::qa::QaRecord {
            qa_id: format!("q{i}"),
            family: "egodyn".into(),
            question_type: "t".into(),
            choices: vec!["x".into(), "y".into()],
            answer: "x".into(),
            answer_letter: "A".into(),
            source: "waymo".into(),
            scene_id: cams[a].scene_id.clone(),
            frame_idx: Some(i as u32),
            cameras: vec![cams[a].camera.clone(), cams[b].camera.clone()],
            camera_frame_ids: vec![
                cams[a].camera_frame_id.clone(),
                cams[b].camera_frame_id.clone(),
            ],
            marks: "{}".into(),
            params: "{}".into(),
            evidence: "{}".into(),
            ..Default::default()
        })
        .collect();
    let qa_file = dir.path().join("qa.arrow");
    let mut w = drivegen::qa::ipc::QaWriter::create(&qa_file).unwrap();
    for r in rows {
        w.push(r).unwrap();
    }
    w.finish().unwrap();
    let out = dir.path().join("release");
    drivegen::release::run(&drivegen::release::Options {
        qa: vec![qa_file],
        stores: vec![store.clone()],
        out: out.clone(),
        ..Default::default()
    })
    .unwrap();
    let shard = std::fs::File::open(out.join("data/test-egodyn-00000-of-00001.parquet")).unwrap();
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(shard, 64).unwrap();
    let mut seen = 0;
    for b in reader {
        let b = b.unwrap();
        let images = b.column_by_name("images").unwrap().as_list::<i32>();
        for (row, &(a, c)) in picks.iter().enumerate() {
            let list = images.value(row);
            let st: &StructArray = list.as_struct();
            for (k, cam) in [&cams[a], &cams[c]].into_iter().enumerate() {
                let bytes = st.column(0).as_binary::<i32>().value(k);
                // The whole-segment reader is independent of the release's cached one.
                let want = waymo::image::read_jpeg(&root, cam).unwrap();
                assert_eq!(bytes, want.as_slice(), "{}", cam.camera_frame_id);
                let img = image::load_from_memory(bytes).unwrap();
                assert_eq!((img.width(), img.height()), (cam.width, cam.height));
                let path = st.column(1).as_string::<i32>().value(k);
                assert!(
                    path.ends_with(".jpg") && path.contains(&cam.camera),
                    "{path}"
                );
                seen += 1;
            }
        }
    }
    assert_eq!(seen, 6);
}
