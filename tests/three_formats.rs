//! The same synthetic world written as nuScenes, Waymo v2 and Bench2Drive and ingested by the
//! three adapters gives the same ego poses and the same objects (to 1e-9 m and rad: the only
//! differences are float round-off through each format's own conventions), and the same
//! answers for every question family that all three sources support.
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
//! * Question families, through [`FAMILIES`]: EgoDyn's 14 questions on the 31-sample,
//!   stride-30 windows (the uniform-log clip rule) over the 10 Hz ego poses, exactly equal.
//!   Families written later (MetaVQA, STSBench, SIG) add an entry there.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use drivegen::egomotion::config::{Anchoring, EgodynConfig, PoseSource};
use drivegen::geometry::{wrap_pi, yaw_of};
use drivegen::ingest::nuscenes::{IngestOptions, SceneRules};
use drivegen::ingest::sources::SourcesConfig;
use drivegen::ingest::{carla, waymo};
use drivegen::store::{ObjectRow, SceneData, Store};
use drivegen::synth::waymo::WaymoSynthOptions;
use drivegen::synth::SynthOptions;
use drivegen::taxonomy::Taxonomy;

const SCENES: usize = 3;
const DURATION_S: f64 = 7.0;

struct Stores {
    nuscenes: Vec<SceneData>,
    waymo: Vec<SceneData>,
    b2d: Vec<SceneData>,
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
        image_width: 48,
        image_height: 27,
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
    })
    .unwrap();
    drivegen::synth::bench2drive::write(&d.join("b2d"), &base).unwrap();
    carla::run(&carla::Options {
        root: d.join("b2d"),
        out: d.join("s_b2d"),
        taxonomy: tax,
        config: cfg,
    })
    .unwrap();
    let mut b2d = load(&d.join("s_b2d"));
    // Routes are found in path order (by script name); put them back in world order.
    b2d.sort_by_key(|s| s.scene.scene_id.clone());
    // Segments are ingested in segment-name order; put them in time (world) order.
    let mut waymo = load(&d.join("s_waymo"));
    waymo.sort_by_key(|s| s.frames[0].timestamp_us);
    Stores {
        nuscenes: load(&d.join("s_nusc")),
        waymo,
        b2d,
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
