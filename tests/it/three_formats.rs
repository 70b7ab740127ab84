//! The same synthetic world written as nuScenes, Waymo v2 and Bench2Drive and ingested by the
//! three adapters gives the same ego poses and the same objects (to 1e-9 m and rad: the only
//! differences are float round-off through each format's own conventions), and the same
//! answers for every question family the sources support.
//!
//! What is compared, and why it can be compared:
//! * Times. Waymo and Bench2Drive frames are every 100 ms from nuScenes' first keyframe, so
//!   every Waymo frame is a nuScenes LIDAR_TOP sweep time (nuScenes' own 20 Hz ego poses) and
//!   every fifth one a nuScenes keyframe. Bench2Drive has no clock: its times are relative to
//!   its first frame, so it is compared on time since the first frame.
//! * Objects at the nuScenes keyframes, for the classes each format can carry: Waymo's coarse
//!   types (vehicle, pedestrian, cyclist) and CARLA's vehicles and walkers (with fine classes
//!   through the blueprint mapping). nuScenes keeps an agent annotated between its first and
//!   last sample in range, the others decide per frame, so the check is: every box of Waymo
//!   and Bench2Drive is a nuScenes box, and every nuScenes box within the 60 m range is theirs.
//! * EgoDyn ([`FAMILIES`]): the 14 questions on the 31-sample, stride-30 windows (the
//!   uniform-log clip rule) over the 10 Hz ego poses, exactly equal.
//!
//! The image families (visibility, SIG, MetaVQA) and STSBench run on keyframe stores built
//! per pair (nuScenes, X) for X = Waymo and Bench2Drive ([`pair`]): X's frames at the nuScenes
//! keyframe times, and nuScenes' keyframes put into X's vocabulary. What differs between the
//! formats, and what the pair does about it:
//! * Boxes: X carries a subset of the classes (and Waymo only coarse ones); both sides keep the
//!   boxes X carries, matched to nuScenes' by position (1e-9 m), each with X's class and
//!   category. Otherwise an unlabelled cone occluding a car in nuScenes but not in Waymo
//!   would (rightly) change the car's visible pixels.
//! * Velocities, attributes, lidar counts, visibility bins: each source has its own (Waymo's
//!   annotated speeds, Bench2Drive's walkers at 0 m/s, a reproduced data bug; nuScenes'
//!   attributes and visibility tokens). They are cleared on both sides (speeds come from
//!   positions) and the visibility filters of [`vis_config`] use geometry only, so the
//!   families depend on the shared geometry alone.
//! * Camera rigs. Waymo's five cameras are the nuScenes rig without CAM_BACK (same extrinsics
//!   and intrinsics, zero distortion in this world), compared on those five. But nuScenes'
//!   cameras fire 2.5–45 ms before the lidar keyframe, while the synthetic Waymo cameras are
//!   global-shutter at the frame time: nuScenes' keyframe camera poses are moved to the
//!   keyframe's ego pose (what a camera firing at the sample time would have), so both see one
//!   instant. Bench2Drive's rig is CARLA's (other mounts, fov 70°/110°) and shares no camera
//!   with nuScenes', so Bench2Drive is compared twice: (a) its CARLA-rig routes, with
//!   nuScenes' side projected through Bench2Drive's camera rows (intrinsics, cam → ego) at
//!   nuScenes' ego poses, which checks boxes and poses, while the camera rows themselves are
//!   checked against the CARLA rig (mounts, yaws, fovs of `docs/formats.md` §3.2) in
//!   [`check_carla_rig`]; (b) the same routes written with the nuScenes rig
//!   (`bench2drive::write_with_rig`, `Rig::NuScenes`: the rig's intrinsics and cam → ego in
//!   Bench2Drive's left-handed `cam2ego`/`world2cam`), compared like Waymo on all six
//!   nuScenes cameras, which checks the adapter's camera conversion end to end.
//! * Visibility ([`compare_visibility`]): per object per camera, projected and visible pixel
//!   counts, modal boxes and `kept` exactly equal, amodal boxes to 1e-6 px, truncation to 1e-9.
//!   Exact is right: the projected vertices differ by ~1e-9 px and are snapped to the
//!   rasteriser's fixed-point grid, so coverage could only differ for a pixel centre within
//!   1e-9 px of an edge (none occur in this world; the test would show it).
//! * SIG ([`compare_sig`], `min_box_area_px` scaled with the image area): every image's
//!   vehicles' camera-ground positions and image positions to 1e-6, and its grid JSON and
//!   relations exactly equal (cells, orders and keys are integers and names), except on
//!   images with a vehicle standing on a grid line to 1e-6 m (the world parks cars on a
//!   lattice, so a car exactly 10 m behind a camera falls into either row by round-off):
//!   those are compared on positions only, and must stay under 10 % of the images. The
//!   relation questions are drawn with a seed keyed by the image id, so they are compared
//!   through the relations they come from.
//! * MetaVQA ([`compare_metavqa`]): the scene graph of every image (library `scene_graphs` on
//!   each side's kept rows), nodes ranked by position instead of by the source's annotation ids
//!   and ids replaced by the rank, then every question type drawn with one seed per (scene,
//!   keyframe, camera): question types, stems, options and answers exactly equal. The stage
//!   itself seeds by image id, so its question tables cannot match row for row.
//! * STSBench ([`compare_stsbench`]): windows evaluated and mined scenarios (role, scenario,
//!   window, actor and other matched by position, verified negatives) exactly equal, except
//!   for candidate pairs whose closest approach is the pair radius to 1e-6 m (a strict test
//!   that round-off decides; one such pair in this world), which are left out on both sides
//!   (at most 3). Only nuScenes has map layers, so its side is mined without its map, as the
//!   others must be: map scenarios are skipped on both sides (and their skip counts compared).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::{Array, BooleanArray, Float64Array, StringArray, UInt32Array};
use arrow::ipc::reader::FileReader;

use drivegen::config::StageConfig;
use drivegen::egomotion::config::{Anchoring, EgodynConfig, PoseSource};
use drivegen::geometry::{wrap_pi, yaw_of};
use drivegen::ingest::nuscenes::{IngestOptions, SceneRules};
use drivegen::ingest::sources::SourcesConfig;
use drivegen::ingest::{carla, waymo};
use drivegen::maplayers::MapLayers;
use drivegen::metavqa::input::read_kept;
use drivegen::metavqa::questions::generate;
use drivegen::metavqa::rollout::Rollouts;
use drivegen::metavqa::stage::scene_graphs;
use drivegen::metavqa::templates::render;
use drivegen::metavqa::MetavqaConfig;
use drivegen::sig::{SigConfig, SigOptions};
use drivegen::store::rejects::RejectLog;
use drivegen::store::{ObjectRow, SceneData, Store, StoreMeta, StoreWriter};
use drivegen::stsbench::mine::{mine_scene, window_starts};
use drivegen::stsbench::{tracks_with_map, StsConfig};
use drivegen::synth::bench2drive::Rig;
use drivegen::synth::waymo::WaymoSynthOptions;
use drivegen::synth::SynthOptions;
use drivegen::taxonomy::Taxonomy;
use drivegen::tracks::candidate_pairs;
use drivegen::visibility::config::VisibilityConfig;
use drivegen::visibility::raster::CpuRasteriser;

const SCENES: usize = 3;
const DURATION_S: f64 = 7.0;
/// Small images keep the test fast; pixel thresholds scale with the area (1/100 of 1600×900).
const WIDTH: u32 = 160;
const HEIGHT: u32 = 90;
const AREA_SCALE: f64 = (WIDTH as f64 * HEIGHT as f64) / (1600.0 * 900.0);

struct Stores {
    nuscenes: Vec<SceneData>,
    waymo: Vec<SceneData>,
    b2d: Vec<SceneData>,
    /// The same routes written with the nuScenes camera rig.
    b2d_nuscenes_rig: Vec<SceneData>,
    _dir: tempfile::TempDir,
}

fn load(dir: &Path) -> Vec<SceneData> {
    Store::open(dir)
        .unwrap()
        .scenes()
        .unwrap()
        .map(|s| s.unwrap())
        .collect()
}

fn build() -> Stores {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = SynthOptions {
        scenes: SCENES,
        duration_s: DURATION_S,
        image_width: WIDTH,
        image_height: HEIGHT,
        write_sweeps: false,
        ..Default::default()
    };
    let tax = Taxonomy::load(None).unwrap();
    let cfg = SourcesConfig::load(None).unwrap();
    drivegen::synth::write_nuscenes(&d.join("nusc"), &base).unwrap();
    drivegen::ingest::nuscenes::ingest(&IngestOptions {
        root: d.join("nusc"),
        version: base.version.clone(),
        out: d.join("s_nusc"),
        taxonomy: tax.clone(),
        rules: SceneRules::default(),
        chunk_scenes: 2,
        links: Default::default(),
    })
    .unwrap();
    let wopts = WaymoSynthOptions {
        base: base.clone(),
        distortion: [0.0; 5],
    };
    drivegen::synth::waymo::write(&d.join("waymo"), &wopts).unwrap();
    waymo::run(&waymo::Options {
        root: d.join("waymo"),
        out: d.join("s_waymo"),
        taxonomy: tax.clone(),
        config: cfg.clone(),
        links: Default::default(),
    })
    .unwrap();
    let mut b2d = Vec::new();
    for (rig, name) in [(Rig::Carla, "b2d"), (Rig::NuScenes, "b2d_nusc_rig")] {
        drivegen::synth::bench2drive::write_with_rig(&d.join(name), &base, rig).unwrap();
        carla::run(&carla::Options {
            root: d.join(name),
            out: d.join(format!("s_{name}")),
            taxonomy: tax.clone(),
            config: cfg.clone(),
            links: Default::default(),
        })
        .unwrap();
        let mut scenes = load(&d.join(format!("s_{name}")));
        // Routes are found in path order (by script name); put them back in world order.
        scenes.sort_by_key(|s| s.scene.scene_id.clone());
        b2d.push(scenes);
    }
    let b2d_nuscenes_rig = b2d.pop().unwrap();
    let b2d = b2d.pop().unwrap();
    // Segments are ingested in segment-name order; put them in time (world) order.
    let mut waymo = load(&d.join("s_waymo"));
    waymo.sort_by_key(|s| s.frames[0].timestamp_us);
    Stores {
        nuscenes: load(&d.join("s_nusc")),
        waymo,
        b2d,
        b2d_nuscenes_rig,
        _dir: dir,
    }
}

fn close_pose(a: &drivegen::store::Pose, b: &drivegen::store::Pose) -> bool {
    (0..3).all(|k| (a.t[k] - b.t[k]).abs() < 1e-9)
        && wrap_pi(yaw_of(a.q) - yaw_of(b.q)).abs() < 1e-9
}

fn same_box(a: &ObjectRow, b: &ObjectRow) -> bool {
    (0..3).all(|k| {
        (a.center[k] - b.center[k]).abs() < 1e-9 && (a.size_wlh[k] - b.size_wlh[k]).abs() < 1e-9
    }) && wrap_pi(a.yaw - b.yaw).abs() < 1e-9
}

fn waymo_coarse(class: &str) -> Option<&'static str> {
    match class {
        "car" | "truck" | "bus" | "trailer" | "construction_vehicle" | "emergency_vehicle" => {
            Some("car")
        }
        "pedestrian" => Some("pedestrian"),
        "bicycle" | "motorcycle" => Some("bicycle"),
        _ => None,
    }
}

fn carla_class(class: &str) -> Option<&'static str> {
    [
        "car",
        "truck",
        "bus",
        "emergency_vehicle",
        "motorcycle",
        "bicycle",
        "pedestrian",
    ]
    .into_iter()
    .find(|c| *c == class)
}

/// Compares one format's boxes at the nuScenes keyframes with nuScenes'.
fn compare_objects(
    nus: &SceneData,
    other: &SceneData,
    time_offset: i64,
    map: impl Fn(&str) -> Option<&'static str>,
) -> usize {
    let mut matched = 0;
    for kf in &nus.frames {
        let f = other
            .frames
            .iter()
            .find(|f| f.timestamp_us + time_offset == kf.timestamp_us)
            .unwrap_or_else(|| panic!("no frame at keyframe {}", kf.frame_idx));
        let ours: Vec<&ObjectRow> = other
            .objects
            .iter()
            .filter(|o| o.frame_idx == f.frame_idx)
            .collect();
        let theirs: Vec<&ObjectRow> = nus
            .objects
            .iter()
            .filter(|o| o.frame_idx == kf.frame_idx)
            .collect();
        for o in &ours {
            let n = theirs.iter().find(|n| same_box(n, o)).unwrap_or_else(|| {
                panic!(
                    "{} box {} is not a nuScenes box",
                    other.scene.source, o.track_id
                )
            });
            assert_eq!(
                map(&n.class),
                Some(o.class.as_str()),
                "class of {}",
                n.category
            );
            matched += 1;
        }
        for n in &theirs {
            let d =
                ((n.center[0] - kf.ego.t[0]).powi(2) + (n.center[1] - kf.ego.t[1]).powi(2)).sqrt();
            if d <= 60.0 && map(&n.class).is_some() {
                assert!(
                    ours.iter().any(|o| same_box(n, o)),
                    "nuScenes {} box {} at {d:.1} m has no {} box",
                    n.class,
                    n.track_id,
                    other.scene.source
                );
            }
        }
    }
    matched
}

#[test]
fn three_formats_agree() {
    let s = build();
    assert_eq!(
        (s.nuscenes.len(), s.waymo.len(), s.b2d.len()),
        (SCENES, SCENES, SCENES)
    );
    let mut totals = (0, 0);
    for k in 0..SCENES {
        let (n, w, b) = (&s.nuscenes[k], &s.waymo[k], &s.b2d[k]);
        let start = n.frames[0].timestamp_us;
        assert_eq!(w.frames[0].timestamp_us, start);
        // Ego poses: Waymo's frames are nuScenes' LIDAR_TOP poses; Bench2Drive's equal Waymo's.
        let lidar: BTreeMap<i64, &drivegen::store::Pose> = n
            .ego_poses
            .iter()
            .filter(|p| p.sensor.as_deref() == Some("LIDAR_TOP"))
            .map(|p| (p.timestamp_us, &p.ego))
            .collect();
        let last = *lidar.keys().last().unwrap();
        let mut shared = 0;
        for f in &w.frames {
            if f.timestamp_us <= last {
                assert!(
                    close_pose(lidar[&f.timestamp_us], &f.ego),
                    "scene {k} at {}",
                    f.timestamp_us
                );
                shared += 1;
            }
        }
        assert!(shared >= 60);
        assert_eq!(w.frames.len(), b.frames.len());
        for (fw, fb) in w.frames.iter().zip(&b.frames) {
            assert_eq!(fw.timestamp_us - start, fb.timestamp_us);
            assert!(close_pose(&fw.ego, &fb.ego));
        }
        totals.0 += compare_objects(n, w, 0, waymo_coarse);
        totals.1 += compare_objects(n, b, start, carla_class);
    }
    assert!(totals.0 > 200 && totals.1 > 200, "{totals:?}");

    for (family, answers) in FAMILIES {
        let (n, w, b) = (
            answers(&s.nuscenes, true),
            answers(&s.waymo, false),
            answers(&s.b2d, false),
        );
        assert!(
            n.len() >= SCENES * 2 * 14,
            "{family}: only {} answers",
            n.len()
        );
        assert_eq!(n, w, "{family}: nuScenes vs Waymo");
        assert_eq!(n, b, "{family}: nuScenes vs Bench2Drive");
    }

    let dir = tempfile::tempdir().unwrap();
    for p in [
        pair("waymo", &s.nuscenes, &s.waymo, false, false),
        pair("bench2drive", &s.nuscenes, &s.b2d, true, true),
        pair(
            "bench2drive-nuscenes-rig",
            &s.nuscenes,
            &s.b2d_nuscenes_rig,
            true,
            false,
        ),
    ] {
        let st = Staged::new(dir.path(), &p);
        let v = compare_visibility(&p, &st);
        let g = compare_sig(&p, &st);
        let m = compare_metavqa(&p, &st);
        let t = compare_stsbench(&p);
        eprintln!(
            "nuScenes vs {}: {v} visibility rows, {g} SIG images, {m} MetaVQA questions, \
             {t} STSBench scenarios agree",
            p.name
        );
        assert!(
            v > 300 && g > 20 && m > 300 && t > 20,
            "{}: too little compared",
            p.name
        );
    }
}

/// Per question family: `(name, answers(scenes, is_nuscenes))`, the answers keyed by
/// (scene index, item, question) so that sources with different ids compare.
type Answers = BTreeMap<(usize, String, String), String>;
/// A family's answers over one source's scenes (`true` for nuScenes).
type Family = fn(&[SceneData], bool) -> Answers;
const FAMILIES: &[(&str, Family)] = &[("egodyn", egodyn_answers)];

/// EgoDyn on the uniform 10 Hz ego poses: sliding 31/30 windows. nuScenes' ego pose stream
/// mixes every sensor's timestamps, so its LIDAR_TOP poses on the 10 Hz grid are the series
/// that the other formats carry.
fn egodyn_answers(scenes: &[SceneData], is_nuscenes: bool) -> Answers {
    let mut cfg = EgodynConfig::default_config().unwrap();
    cfg.clips.anchoring = Anchoring::Sliding;
    cfg.clips.pose_source = PoseSource::EgoPoses;
    let engine = drivegen::egomotion::Engine::new(cfg).unwrap();
    let mut out = Answers::new();
    for (k, scene) in scenes.iter().enumerate() {
        let mut scene = scene.clone();
        if is_nuscenes {
            let start = scene.frames[0].timestamp_us;
            scene.ego_poses.retain(|p| {
                p.sensor.as_deref() == Some("LIDAR_TOP") && (p.timestamp_us - start) % 100_000 == 0
            });
        }
        let (clips, _) = engine.scene_clips(&scene, "synthetic");
        assert_eq!(clips.len(), 2, "scene {k}");
        for (w, c) in clips.iter().enumerate() {
            for (q, class) in engine
                .oracle
                .classes(&c.kin, &c.features)
                .into_iter()
                .enumerate()
            {
                out.insert(
                    (k, format!("w{w}"), format!("q{q}")),
                    format!("class {class}"),
                );
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// The image families and STSBench, per (nuScenes, X) pair
// ---------------------------------------------------------------------------------------

/// nuScenes' keyframes in X's vocabulary and X's frames at the same times (see the module
/// docs), scene k of one side being scene k of the other; frames renumbered 0.. on both.
struct Pair {
    name: &'static str,
    nus: Vec<SceneData>,
    other: Vec<SceneData>,
}

/// The nuScenes channel of a camera name (Waymo's names mapped through the synthetic rig).
fn canonical_camera(name: &str) -> String {
    drivegen::synth::waymo::CAMERAS
        .iter()
        .find(|c| c.1 == name)
        .map_or(name, |c| c.2)
        .to_string()
}

fn pair(
    name: &'static str,
    nus: &[SceneData],
    other: &[SceneData],
    relative_times: bool,
    own_cameras: bool,
) -> Pair {
    let mut out = Pair {
        name,
        nus: Vec::new(),
        other: Vec::new(),
    };
    for (n, x) in nus.iter().zip(other) {
        let offset = if relative_times {
            n.frames[0].timestamp_us
        } else {
            0
        };
        let mut rn = SceneData {
            scene: n.scene.clone(),
            ..Default::default()
        };
        // Only nuScenes has map layers (see `compare_stsbench`).
        rn.scene.location = None;
        let mut rx = SceneData {
            scene: x.scene.clone(),
            ..Default::default()
        };
        let mut kfs: Vec<_> = n.frames.iter().collect();
        kfs.sort_by_key(|f| f.frame_idx);
        for (ki, kf) in kfs.into_iter().enumerate() {
            let ki = ki as u32;
            let xf = x
                .frames
                .iter()
                .find(|f| f.timestamp_us + offset == kf.timestamp_us)
                .unwrap_or_else(|| panic!("{name}: no frame at keyframe {}", kf.frame_idx));
            for (side, f) in [(&mut rn, kf), (&mut rx, xf)] {
                let mut f = f.clone();
                f.frame_idx = ki;
                side.ego_poses.push(drivegen::store::EgoPoseRow {
                    scene_id: f.scene_id.clone(),
                    timestamp_us: f.timestamp_us,
                    source_pose_id: f.source_frame_id.clone(),
                    sensor: None,
                    ego: f.ego,
                });
                side.frames.push(f);
            }
            let theirs: Vec<&ObjectRow> = n
                .objects
                .iter()
                .filter(|o| o.frame_idx == kf.frame_idx)
                .collect();
            for xo in x.objects.iter().filter(|o| o.frame_idx == xf.frame_idx) {
                let no = theirs.iter().find(|o| same_box(o, xo)).unwrap();
                let mut a = (*no).clone();
                a.class = xo.class.clone();
                a.category = xo.category.clone();
                let mut b = xo.clone();
                for o in [&mut a, &mut b] {
                    o.frame_idx = ki;
                    (o.vx, o.vy) = (None, None);
                    o.attributes.clear();
                    o.visibility_bin = None;
                    o.num_lidar_pts = 0;
                    o.num_radar_pts = 0;
                }
                rn.objects.push(a);
                rx.objects.push(b);
            }
            for c in x.cameras.iter().filter(|c| c.frame_idx == xf.frame_idx) {
                if own_cameras {
                    check_carla_rig(c);
                }
                let mut c = c.clone();
                c.frame_idx = ki;
                rx.cameras.push(c);
            }
            let n_cams: Vec<_> = if own_cameras {
                // Bench2Drive's rig shares no camera with nuScenes': project into its cameras.
                rx.cameras
                    .iter()
                    .filter(|c| c.frame_idx == ki)
                    .map(|c| {
                        let mut c = c.clone();
                        c.scene_id = n.scene.scene_id.clone();
                        c.camera_frame_id = format!("{}/{ki}/{}", n.scene.scene_id, c.camera);
                        c
                    })
                    .collect()
            } else {
                let shared: Vec<String> = rx
                    .cameras
                    .iter()
                    .map(|c| canonical_camera(&c.camera))
                    .collect();
                n.cameras
                    .iter()
                    .filter(|c| {
                        c.frame_idx == kf.frame_idx && c.is_keyframe && shared.contains(&c.camera)
                    })
                    .cloned()
                    .collect()
            };
            for mut c in n_cams {
                c.frame_idx = ki;
                // The camera at the keyframe instant, as X's global-shutter cameras are.
                c.ego = kf.ego;
                c.timestamp_us = kf.timestamp_us;
                rn.cameras.push(c);
            }
        }
        rn.update_counts();
        rx.update_counts();
        assert!(!rn.objects.is_empty() && !rn.cameras.is_empty(), "{name}");
        out.nus.push(rn);
        out.other.push(rx);
    }
    out
}

/// A Bench2Drive camera row is the CARLA rig of `docs/formats.md` §3.2 in the store's
/// right-handed ego frame: mount (x, −y, z), optical axis at yaw −yaw°, image y down, and
/// f = W / (2 tan(fov/2)) with the principal point at the image centre. (The pair projects
/// both sides through these rows, so they are checked against the rig here.)
fn check_carla_rig(c: &drivegen::store::CameraRow) {
    let cam = drivegen::synth::bench2drive::CAMERAS
        .iter()
        .find(|k| k.key == c.camera)
        .unwrap_or_else(|| panic!("no CARLA camera {}", c.camera));
    let iso = c.cam.isometry();
    let t = iso.translation.vector;
    let want_t = [cam.mount[0], -cam.mount[1], cam.mount[2]];
    assert!(
        (0..3).all(|k| (t[k] - want_t[k]).abs() < 1e-9),
        "{}: mount {t:?}",
        c.camera
    );
    let yaw = -cam.yaw_deg.to_radians();
    let axes = [
        (nalgebra::Vector3::z(), [yaw.cos(), yaw.sin(), 0.0]),
        (nalgebra::Vector3::x(), [yaw.sin(), -yaw.cos(), 0.0]),
        (nalgebra::Vector3::y(), [0.0, 0.0, -1.0]),
    ];
    for (axis, want) in axes {
        let got = iso.rotation * axis;
        assert!(
            (0..3).all(|k| (got[k] - want[k]).abs() < 1e-9),
            "{}: camera axis {axis:?} → {got:?}, want {want:?}",
            c.camera
        );
    }
    let f = f64::from(c.width) / (2.0 * (cam.fov_deg.to_radians() / 2.0).tan());
    let want_k = [f, f, f64::from(c.width) / 2.0, f64::from(c.height) / 2.0];
    assert!(
        [c.fx, c.fy, c.cx, c.cy]
            .iter()
            .zip(want_k)
            .all(|(a, b)| (a - b).abs() < 1e-9),
        "{}: intrinsics {:?}",
        c.camera,
        [c.fx, c.fy, c.cx, c.cy]
    );
}

/// The keyframe stores of a pair and their visibility tables.
struct Staged {
    nus: (PathBuf, PathBuf),
    other: (PathBuf, PathBuf),
}

impl Staged {
    fn new(dir: &Path, p: &Pair) -> Self {
        let cfg = vis_config();
        let stage = |side: &str, scenes: &[SceneData]| {
            let store = dir.join(format!("{}_{side}", p.name));
            let mut w =
                StoreWriter::create(&store, StoreMeta::new(side, "test", "/nonexistent")).unwrap();
            for s in scenes {
                w.write_scene(s).unwrap();
            }
            w.finish(&RejectLog::new()).unwrap();
            let vis = dir.join(format!("{}_{side}.arrow", p.name));
            drivegen::visibility::run(&drivegen::visibility::VisibilityOptions {
                store: (&store).into(),
                out: (&vis).into(),
                config: cfg.clone(),
                rasteriser: &CpuRasteriser,
                id_maps: None,
            })
            .unwrap();
            (store, vis)
        };
        Self {
            nus: stage("nuscenes", &p.nus),
            other: stage(p.name, &p.other),
        }
    }
}

/// The built-in filters on geometry only: the per-source metadata (categories, visibility
/// bins, lidar counts) is cleared in the pairs, and the pixel threshold scales with the area.
fn vis_config() -> VisibilityConfig {
    let mut cfg = VisibilityConfig::default_config().unwrap();
    cfg.filters.ignored_categories.clear();
    cfg.filters.allow_missing_visibility = true;
    cfg.filters.min_lidar_points = 0;
    cfg.filters.min_visible_pixels =
        (f64::from(cfg.filters.min_visible_pixels) * AREA_SCALE).round() as u32;
    cfg
}

/// Scene index of every scene id of a side.
fn scene_index(scenes: &[SceneData]) -> BTreeMap<String, usize> {
    scenes
        .iter()
        .enumerate()
        .map(|(k, s)| (s.scene.scene_id.clone(), k))
        .collect()
}

/// An image key that no source id enters: (scene index, keyframe index, nuScenes channel).
type ImageKey = (usize, u32, String);

#[derive(Debug, Clone)]
struct VisRow {
    annotation_id: String,
    amodal: [f64; 4],
    truncation: f64,
    projected: u32,
    visible: u32,
    fraction: f64,
    modal: Option<[f64; 4]>,
    kept: bool,
}

fn read_visibility(path: &Path, scenes: &[SceneData]) -> BTreeMap<ImageKey, Vec<VisRow>> {
    let index = scene_index(scenes);
    let mut out: BTreeMap<ImageKey, Vec<VisRow>> = BTreeMap::new();
    for b in FileReader::try_new(File::open(path).unwrap(), None).unwrap() {
        let b = b.unwrap();
        let col = |n: &str| b.column_by_name(n).unwrap().clone();
        let s = |n: &str| {
            col(n)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap()
                .clone()
        };
        let f = |n: &str| {
            col(n)
                .as_any()
                .downcast_ref::<Float64Array>()
                .unwrap()
                .clone()
        };
        let u = |n: &str| {
            col(n)
                .as_any()
                .downcast_ref::<UInt32Array>()
                .unwrap()
                .clone()
        };
        let (sid, cam, ann) = (s("scene_id"), s("camera"), s("annotation_id"));
        let (fi, pp, vp) = (u("frame_idx"), u("projected_pixels"), u("visible_pixels"));
        let (tr, fr) = (f("truncation"), f("visible_fraction"));
        let am = ["x0", "y0", "x1", "y1"].map(|c| f(&format!("amodal_{c}")));
        let mo = ["x0", "y0", "x1", "y1"].map(|c| f(&format!("modal_{c}")));
        let kept = col("kept")
            .as_any()
            .downcast_ref::<BooleanArray>()
            .unwrap()
            .clone();
        for i in 0..b.num_rows() {
            let key = (
                index[sid.value(i)],
                fi.value(i),
                canonical_camera(cam.value(i)),
            );
            out.entry(key).or_default().push(VisRow {
                annotation_id: ann.value(i).to_string(),
                amodal: am.each_ref().map(|a| a.value(i)),
                truncation: tr.value(i),
                projected: pp.value(i),
                visible: vp.value(i),
                fraction: fr.value(i),
                modal: mo[0].is_valid(i).then(|| mo.each_ref().map(|a| a.value(i))),
                kept: kept.value(i),
            });
        }
    }
    out
}

/// The box centre of every annotation of a side, by (scene index, annotation id).
fn centres(scenes: &[SceneData]) -> BTreeMap<(usize, String), [f64; 3]> {
    scenes
        .iter()
        .enumerate()
        .flat_map(|(k, s)| {
            s.objects
                .iter()
                .map(move |o| ((k, o.annotation_id.clone()), o.center))
        })
        .collect()
}

fn same_centre(a: [f64; 3], b: [f64; 3]) -> bool {
    (0..3).all(|k| (a[k] - b[k]).abs() < 1e-9)
}

fn compare_visibility(p: &Pair, st: &Staged) -> usize {
    let n = read_visibility(&st.nus.1, &p.nus);
    let x = read_visibility(&st.other.1, &p.other);
    assert_eq!(
        n.keys().collect::<Vec<_>>(),
        x.keys().collect::<Vec<_>>(),
        "{}: images with projected boxes",
        p.name
    );
    let (cn, cx) = (centres(&p.nus), centres(&p.other));
    let mut compared = 0;
    let mut visible = 0;
    for (key, rows) in &n {
        let others = &x[key];
        assert_eq!(rows.len(), others.len(), "{}: rows of {key:?}", p.name);
        for r in rows {
            let c = cn[&(key.0, r.annotation_id.clone())];
            let o = others
                .iter()
                .find(|o| same_centre(c, cx[&(key.0, o.annotation_id.clone())]))
                .unwrap_or_else(|| panic!("{}: {key:?} {} unmatched", p.name, r.annotation_id));
            let what = format!("{}: {key:?} object at {c:?}", p.name);
            assert_eq!(
                (r.projected, r.visible, r.modal, r.kept),
                (o.projected, o.visible, o.modal, o.kept),
                "{what}"
            );
            assert_eq!(r.fraction.to_bits(), o.fraction.to_bits(), "{what}");
            assert!((r.truncation - o.truncation).abs() < 1e-9, "{what}");
            assert!(
                (0..4).all(|k| (r.amodal[k] - o.amodal[k]).abs() < 1e-6),
                "{what}: amodal {:?} vs {:?}",
                r.amodal,
                o.amodal
            );
            compared += 1;
            visible += usize::from(r.visible > 0 && r.kept);
        }
    }
    assert!(visible > 50, "{}: only {visible} kept visible rows", p.name);
    compared
}

fn compare_sig(p: &Pair, st: &Staged) -> usize {
    let mut cfg = SigConfig::load(None).unwrap();
    cfg.objects.min_box_area_px *= AREA_SCALE;
    let read = |(store, vis): &(PathBuf, PathBuf), scenes: &[SceneData], side: &str| {
        let out = vis.with_extension(format!("sig_{side}"));
        drivegen::sig::run(&SigOptions {
            store: store.clone(),
            visibility: vis.clone(),
            out: out.clone(),
            config: cfg.clone(),
            seed: 1,
        })
        .unwrap();
        let index = scene_index(scenes);
        let mut m: BTreeMap<ImageKey, (String, String, String)> = BTreeMap::new();
        let file = File::open(out.join(drivegen::sig::FRAMES_FILE)).unwrap();
        for b in FileReader::try_new(file, None).unwrap() {
            let b = b.unwrap();
            let s = |n: &str| {
                b.column_by_name(n)
                    .unwrap()
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .unwrap()
                    .clone()
            };
            let fi = b
                .column_by_name("frame_idx")
                .unwrap()
                .as_any()
                .downcast_ref::<UInt32Array>()
                .unwrap()
                .clone();
            let (sid, cam, sig, rel, objs) = (
                s("scene_id"),
                s("camera"),
                s("sig_json"),
                s("relations_json"),
                s("objects_json"),
            );
            for i in 0..b.num_rows() {
                m.insert(
                    (
                        index[sid.value(i)],
                        fi.value(i),
                        canonical_camera(cam.value(i)),
                    ),
                    (
                        sig.value(i).to_string(),
                        rel.value(i).to_string(),
                        objs.value(i).to_string(),
                    ),
                );
            }
        }
        m
    };
    let n = read(&st.nus, &p.nus, "nuscenes");
    let x = read(&st.other, &p.other, p.name);
    assert_eq!(
        n.keys().collect::<Vec<_>>(),
        x.keys().collect::<Vec<_>>(),
        "{}: SIG images",
        p.name
    );
    // A cell is a floor of the position over the cell size: an object standing on a grid
    // line (the synthetic world parks cars on a lattice, e.g. exactly 10 m behind a camera)
    // falls on either side by round-off, so an image with one is a tie, compared on its
    // positions only.
    let g = &cfg.grid;
    let on_line = |o: &serde_json::Value| {
        let lat = (o["lateral_m"].as_f64().unwrap() - g.lateral_min_m)
            / ((g.lateral_max_m - g.lateral_min_m) / f64::from(g.columns));
        let fwd = o["forward_m"].as_f64().unwrap() / (g.forward_max_m / f64::from(g.rows));
        (lat - lat.round()).abs() < 1e-6 || (fwd - fwd.round()).abs() < 1e-6
    };
    let mut ties = 0;
    for (key, v) in &n {
        let w = &x[key];
        let (a, b): (Vec<serde_json::Value>, Vec<serde_json::Value>) = (
            serde_json::from_str(&v.2).unwrap(),
            serde_json::from_str(&w.2).unwrap(),
        );
        assert_eq!(a.len(), b.len(), "{}: SIG vehicles of {key:?}", p.name);
        for (oa, ob) in a.iter().zip(&b) {
            for c in ["lateral_m", "forward_m", "u"] {
                let (ca, cb) = (oa[c].as_f64().unwrap(), ob[c].as_f64().unwrap());
                assert!(
                    (ca - cb).abs() < 1e-6,
                    "{}: {c} in {key:?}: {ca} vs {cb}",
                    p.name
                );
            }
        }
        if a.iter().chain(&b).any(on_line) {
            ties += 1;
            continue;
        }
        assert_eq!(
            (&v.0, &v.1),
            (&w.0, &w.1),
            "{}: SIG of {key:?}; objects {} vs {}",
            p.name,
            v.2,
            w.2
        );
    }
    eprintln!(
        "{}: {ties} SIG images with a vehicle on a grid line",
        p.name
    );
    assert!(
        ties * 10 < n.len(),
        "{}: {ties} tied SIG images of {}",
        p.name,
        n.len()
    );
    let vehicles = n.values().filter(|(s, _, _)| s.contains('[')).count();
    assert!(vehicles > 10, "{}: {vehicles} images with vehicles", p.name);
    n.len()
}

/// Every question type MetaVQA draws on every image, with a seed per image key.
fn metavqa_questions(
    (_, vis): &(PathBuf, PathBuf),
    scenes: &[SceneData],
) -> BTreeMap<ImageKey, Vec<String>> {
    let cfg = MetavqaConfig::default_config().unwrap();
    let ro = Rollouts::new(&cfg);
    let kept = read_kept(vis).unwrap();
    let mut out = BTreeMap::new();
    for (k, scene) in scenes.iter().enumerate() {
        let rows = kept
            .get(&scene.scene.scene_id)
            .map_or(&[][..], Vec::as_slice);
        for mut g in scene_graphs(scene, rows, &cfg, vis).unwrap() {
            // Rank the nodes by position, and let no source id or name enter the draws.
            g.nodes.sort_by(|a, b| {
                a.center[0]
                    .total_cmp(&b.center[0])
                    .then(a.center[1].total_cmp(&b.center[1]))
            });
            for (r, node) in g.nodes.iter_mut().enumerate() {
                node.track_id = format!("t{r}");
                node.annotation_id = format!("a{r}");
                node.mark.track_id = node.track_id.clone();
                node.mark.annotation_id = node.annotation_id.clone();
            }
            let key = (k, g.frame_idx, canonical_camera(&g.camera));
            g.source = "synthetic".into();
            g.scene_id = format!("scene{k}");
            g.camera = key.2.clone();
            g.camera_frame_id = format!("{k}/{}/{}", key.1, key.2);
            let seed = 0x5EED ^ ((k as u64) << 40) ^ (u64::from(key.1) << 20) ^ key.2.len() as u64;
            let (drafts, _) = generate(&g, &cfg, &ro, seed);
            let label = |i: usize| i as u32;
            let qs = drafts
                .iter()
                .map(|d| {
                    let options: Vec<String> =
                        d.options.iter().map(|o| render(o, &label)).collect();
                    format!(
                        "{} {} | {} | {} | {}",
                        d.qtype.name(),
                        d.variant,
                        render(&d.stem, &label),
                        options.join(" / "),
                        d.correct
                    )
                })
                .collect();
            out.insert(key, qs);
        }
    }
    out
}

fn compare_metavqa(p: &Pair, st: &Staged) -> usize {
    let n = metavqa_questions(&st.nus, &p.nus);
    let x = metavqa_questions(&st.other, &p.other);
    assert_eq!(
        n.keys().collect::<Vec<_>>(),
        x.keys().collect::<Vec<_>>(),
        "{}: MetaVQA images",
        p.name
    );
    for (key, qs) in &n {
        assert_eq!(qs, &x[key], "{}: MetaVQA questions of {key:?}", p.name);
    }
    n.values().map(Vec::len).sum()
}

/// What STSBench mines on one side: the scenario instances as text keyed by position, the
/// windows evaluated, the map skips, and the candidate pairs as (scene, actor key, other key)
/// with each pair's closest approach and windows.
struct Mined {
    instances: Vec<(String, String, Option<String>, usize)>,
    windows: u64,
    skipped: BTreeMap<String, u64>,
    pairs: BTreeMap<(usize, String, String), (f64, u64)>,
}

/// A track named by what it is and where it starts (1e-6 m), not by its source id.
fn track_key(t: &drivegen::tracks::Track) -> String {
    format!("{}@({:.6}, {:.6})", t.class, t.xy[0][0], t.xy[0][1])
}

fn sts_mine(scenes: &[SceneData]) -> Mined {
    let cfg = StsConfig::load(None).unwrap();
    let mut out = Mined {
        instances: Vec::new(),
        windows: 0,
        skipped: BTreeMap::new(),
        pairs: BTreeMap::new(),
    };
    for (k, scene) in scenes.iter().enumerate() {
        let tracks = tracks_with_map(&cfg, scene, &MapLayers::none());
        for (i, j) in candidate_pairs(&tracks, cfg.pair_radius()) {
            let (a, b) = (&tracks[i], &tracks[j]);
            let common: Vec<u32> = a
                .frames
                .iter()
                .copied()
                .filter(|f| b.frames.contains(f))
                .collect();
            let closest = common
                .iter()
                .map(|f| {
                    let (p, q) = (a.xy[a.index_of(*f).unwrap()], b.xy[b.index_of(*f).unwrap()]);
                    (p[0] - q[0]).hypot(p[1] - q[1])
                })
                .fold(f64::INFINITY, f64::min);
            // Agent pairs are mined both ways round, the ego with an agent once.
            let ways = if i == 0 { 1 } else { 2 };
            let windows = ways * window_starts(&common, cfg.window.frames).len() as u64;
            let (ka, kb) = (track_key(a), track_key(b));
            let key = if ka < kb { (k, ka, kb) } else { (k, kb, ka) };
            out.pairs.insert(key, (closest, windows));
        }
        let m = mine_scene(&cfg, &tracks);
        out.windows += m.windows;
        for (s, v) in m.skipped_no_map {
            *out.skipped.entry(s).or_default() += v;
        }
        for i in &m.instances {
            let text = format!(
                "{k} {:?} {} frames {:?} negatives {:?} mean ({:.6}, {:.6})",
                i.role,
                i.scenario.name(),
                i.frames,
                i.negatives,
                i.mean_ego_xy[0],
                i.mean_ego_xy[1]
            );
            let actor = track_key(&tracks[i.actor]);
            let other = i.other.map(|o| track_key(&tracks[o]));
            out.instances.push((text, actor, other, k));
        }
    }
    out
}

/// STSBench on both sides. Candidate pairs are the tracks that come within the pair radius
/// (a strict test): a pair whose closest approach is the radius itself to 1e-6 m is a tie
/// that round-off decides (the synthetic world parks some objects exactly that far apart),
/// so such pairs, and only they, may differ; their windows and scenarios are left out.
fn compare_stsbench(p: &Pair) -> usize {
    let radius = StsConfig::load(None).unwrap().pair_radius();
    let (mut n, mut x) = (sts_mine(&p.nus), sts_mine(&p.other));
    let mut ties = Vec::new();
    for (side, a, b) in [("nuScenes", &n, &x), (p.name, &x, &n)] {
        for (key, (closest, _)) in &a.pairs {
            if !b.pairs.contains_key(key) {
                assert!(
                    (closest - radius).abs() < 1e-6,
                    "{}: only {side} pairs {key:?}, {closest} m apart (radius {radius})",
                    p.name
                );
                ties.push(key.clone());
            }
        }
    }
    for m in [&mut n, &mut x] {
        for t in &ties {
            if let Some((_, w)) = m.pairs.get(t) {
                m.windows -= w;
            }
        }
        let tied = |i: &(String, String, Option<String>, usize)| {
            i.2.as_ref().is_some_and(|o| {
                let (a, b) = if &i.1 < o { (&i.1, o) } else { (o, &i.1) };
                ties.contains(&(i.3, a.clone(), b.clone()))
            })
        };
        m.instances.retain(|i| !tied(i));
        m.instances.sort();
    }
    eprintln!("{}: STSBench pairs tied at the radius: {ties:?}", p.name);
    assert!(ties.len() <= 3, "{}: {} tied pairs", p.name, ties.len());
    assert_eq!(n.windows, x.windows, "{}: STSBench windows", p.name);
    assert_eq!(
        n.skipped, x.skipped,
        "{}: STSBench scenarios skipped without a map",
        p.name
    );
    assert_eq!(n.instances, x.instances, "{}: STSBench scenarios", p.name);
    n.instances.len()
}
