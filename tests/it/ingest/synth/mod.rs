//! The synthetic corpus: determinism, table consistency, rendered pixels, our ingest and the
//! official devkit; manoeuvre coverage, recomputed from the written ego poses independently of
//! the generator, is in `egodyn`.

// Only the venv finder of the shared test helpers is needed here.
use crate::common::oracle;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use drivegen::config::StageConfig;
use drivegen::formats::nuscenes::*;
use drivegen::geometry::{pose, yaw_of};
use drivegen::synth::render::{nearest_class, saturation_of};
use drivegen::synth::world::CLASSES;
use drivegen::synth::{write_nuscenes, SynthOptions};
use drivegen::taxonomy::Taxonomy;
use nalgebra::{Point3, Vector3};
use serde::de::DeserializeOwned;

mod egodyn;

const VERSION: &str = "v1.0-mini";

fn scratch(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("synth-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

/// Removes the scratch folders of earlier runs whose process is gone (the shared corpus lives
/// as long as the test process, so it cannot be removed by the tests themselves).
fn remove_stale_scratch() {
    let Ok(entries) = std::fs::read_dir(env!("CARGO_TARGET_TMPDIR")) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("synth-")
            .and_then(|n| n.rsplit('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Three full-length scenes with sweeps at a tiny image size, shared by several tests.
fn corpus() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        remove_stale_scratch();
        let dir = scratch("corpus");
        let opts = SynthOptions {
            scenes: 3,
            seed: 5,
            image_width: 96,
            image_height: 54,
            jpeg_quality: 80,
            ..Default::default()
        };
        let s = write_nuscenes(&dir, &opts).unwrap();
        eprintln!("{s}");
        dir
    })
}

fn table<T: DeserializeOwned>(dir: &Path, name: &str) -> Vec<T> {
    let bytes = std::fs::read(dir.join(VERSION).join(format!("{name}.json"))).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

struct All {
    category: Vec<Category>,
    attribute: Vec<Attribute>,
    instance: Vec<Instance>,
    sensor: Vec<Sensor>,
    calibrated_sensor: Vec<CalibratedSensor>,
    ego_pose: Vec<EgoPose>,
    log: Vec<Log>,
    scene: Vec<Scene>,
    sample: Vec<Sample>,
    sample_data: Vec<SampleData>,
    sample_annotation: Vec<SampleAnnotation>,
    map: Vec<Map>,
}

fn load(dir: &Path) -> All {
    All {
        category: table(dir, "category"),
        attribute: table(dir, "attribute"),
        instance: table(dir, "instance"),
        sensor: table(dir, "sensor"),
        calibrated_sensor: table(dir, "calibrated_sensor"),
        ego_pose: table(dir, "ego_pose"),
        log: table(dir, "log"),
        scene: table(dir, "scene"),
        sample: table(dir, "sample"),
        sample_data: table(dir, "sample_data"),
        sample_annotation: table(dir, "sample_annotation"),
        map: table(dir, "map"),
    }
}

fn index<T>(rows: &[T], key: impl Fn(&T) -> &str) -> HashMap<String, usize> {
    let m: HashMap<String, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (key(r).to_string(), i))
        .collect();
    assert_eq!(m.len(), rows.len(), "duplicate tokens");
    m
}

fn files_under(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let opts = SynthOptions {
        scenes: 2,
        seed: 1,
        duration_s: 3.0,
        image_width: 64,
        image_height: 36,
        ..Default::default()
    };
    let (a, b, c) = (scratch("det-a"), scratch("det-b"), scratch("det-c"));
    write_nuscenes(&a, &opts).unwrap();
    // The second run on a single thread: the result must not depend on scheduling.
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| write_nuscenes(&b, &opts))
        .unwrap();
    write_nuscenes(
        &c,
        &SynthOptions {
            seed: 2,
            ..opts.clone()
        },
    )
    .unwrap();
    let (fa, fb, fc) = (files_under(&a), files_under(&b), files_under(&c));
    assert!(fa.len() > 100);
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
    for (k, v) in &fa {
        assert!(
            fb[k] == *v,
            "{} differs between two runs with the same seed",
            k.display()
        );
    }
    let tables_a = &fa[&PathBuf::from(VERSION).join("sample_annotation.json")];
    let tables_c = &fc[&PathBuf::from(VERSION).join("sample_annotation.json")];
    assert_ne!(
        tables_a, tables_c,
        "a different seed must give different annotations"
    );
    assert_ne!(
        fa[&PathBuf::from(VERSION).join("sample.json")],
        fc[&PathBuf::from(VERSION).join("sample.json")]
    );
    for d in [a, b, c] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn tables_are_consistent() {
    let dir = corpus();
    let t = load(dir);
    assert_eq!(t.scene.len(), 3);
    assert_eq!(t.sample.len(), 120, "20 s at 2 Hz is 40 samples per scene");
    assert_eq!(t.sensor.len(), 7);
    assert_eq!(t.calibrated_sensor.len(), 21);
    assert_eq!(t.category.len(), 23);
    assert_eq!(t.attribute.len(), 8);
    let sample_ix = index(&t.sample, |s| &s.token);
    let sd_ix = index(&t.sample_data, |s| &s.token);
    let ep_ix = index(&t.ego_pose, |s| &s.token);
    let cs_ix = index(&t.calibrated_sensor, |s| &s.token);
    let sensor_ix = index(&t.sensor, |s| &s.token);
    let inst_ix = index(&t.instance, |s| &s.token);
    let ann_ix = index(&t.sample_annotation, |s| &s.token);
    let cat_ix = index(&t.category, |s| &s.token);
    let att_ix = index(&t.attribute, |s| &s.token);
    let log_ix = index(&t.log, |s| &s.token);
    let scene_ix = index(&t.scene, |s| &s.token);
    // One ego pose per sample_data, each referenced once, at the same timestamp.
    assert_eq!(t.ego_pose.len(), t.sample_data.len());
    let mut used = BTreeSet::new();
    for sd in &t.sample_data {
        let ep = &t.ego_pose[ep_ix[sd.ego_pose_token.as_str()]];
        assert_eq!(ep.timestamp, sd.timestamp);
        assert!(used.insert(sd.ego_pose_token.clone()));
        assert_eq!(ep.translation[2], 0.0);
        assert!(sample_ix.contains_key(sd.sample_token.as_str()));
        assert!(cs_ix.contains_key(sd.calibrated_sensor_token.as_str()));
        for l in [&sd.prev, &sd.next] {
            assert!(l.is_empty() || sd_ix.contains_key(l.as_str()));
        }
        assert!(dir.join(&sd.filename).is_file(), "{} missing", sd.filename);
        assert_eq!(sd.filename.starts_with("samples/"), sd.is_key_frame);
    }
    for cs in &t.calibrated_sensor {
        assert!(sensor_ix.contains_key(&cs.sensor_token));
    }
    // Samples: chained, 0.5 s apart, 40 per scene over 19.5 s.
    for sc in &t.scene {
        assert!(log_ix.contains_key(&sc.log_token));
        let mut s = &t.sample[sample_ix[&sc.first_sample_token]];
        assert!(s.prev.is_empty());
        let mut n = 1;
        while !s.next.is_empty() {
            let nx = &t.sample[sample_ix[&s.next]];
            assert_eq!(nx.prev, s.token);
            assert_eq!(nx.timestamp - s.timestamp, 500_000);
            assert_eq!(nx.scene_token, sc.token);
            s = nx;
            n += 1;
        }
        assert_eq!(s.token, sc.last_sample_token);
        assert_eq!(n, 40);
        assert_eq!(sc.nbr_samples, 40);
    }
    // Per channel: chains time-sorted; cameras at ~12 Hz; one keyframe per sample per channel,
    // the frame nearest the sample; sweeps point at the next sample in time.
    let channel = |sd: &SampleData| {
        t.sensor[sensor_ix
            [&t.calibrated_sensor[cs_ix[sd.calibrated_sensor_token.as_str()]].sensor_token]]
            .channel
            .clone()
    };
    let mut keys: BTreeMap<(String, String), usize> = BTreeMap::new();
    for sd in &t.sample_data {
        if sd.prev.is_empty() {
            let ch = channel(sd);
            let mut chain = vec![sd];
            let mut cur = sd;
            while !cur.next.is_empty() {
                let nx = &t.sample_data[sd_ix[cur.next.as_str()]];
                assert_eq!(nx.prev, cur.token);
                assert!(nx.timestamp > cur.timestamp);
                chain.push(nx);
                cur = nx;
            }
            let span = (chain.last().unwrap().timestamp - chain[0].timestamp) as f64 * 1e-6;
            if ch.starts_with("CAM_") {
                let hz = (chain.len() - 1) as f64 / span;
                assert!((hz - 12.0).abs() < 0.1, "{ch}: {hz} Hz");
                assert!(span > 19.4 && span < 19.6, "{ch}: {span} s");
            } else {
                // LIDAR_TOP at 20 Hz from the first keyframe to the last.
                assert_eq!(chain.len(), 39 * 10 + 1, "{ch}");
            }
        }
        let s = &t.sample[sample_ix[sd.sample_token.as_str()]];
        if sd.is_key_frame {
            *keys
                .entry((sd.sample_token.to_string(), channel(sd)))
                .or_default() += 1;
            assert!((sd.timestamp - s.timestamp).abs() < 42_000);
        } else {
            assert!(sd.timestamp <= s.timestamp);
            if !s.prev.is_empty() {
                assert!(sd.timestamp > t.sample[sample_ix[&s.prev]].timestamp);
            }
        }
    }
    assert_eq!(keys.len(), 120 * 7);
    assert!(keys.values().all(|&n| n == 1));
    // Annotations and instances.
    let mut classes = BTreeSet::new();
    let taxonomy = Taxonomy::load(None).unwrap();
    let mut zero_pts = 0;
    let mut vis = BTreeMap::new();
    for inst in &t.instance {
        let cat = &t.category[cat_ix[&inst.category_token]];
        classes.insert(taxonomy.nuscenes_class(&cat.name).0);
        let mut a = &t.sample_annotation[ann_ix[&inst.first_annotation_token]];
        assert!(a.prev.is_empty());
        let mut n = 1;
        while !a.next.is_empty() {
            let nx = &t.sample_annotation[ann_ix[a.next.as_str()]];
            assert_eq!(nx.prev, a.token);
            let (ta, tb) = (
                t.sample[sample_ix[a.sample_token.as_str()]].timestamp,
                t.sample[sample_ix[nx.sample_token.as_str()]].timestamp,
            );
            assert_eq!(tb - ta, 500_000);
            a = nx;
            n += 1;
        }
        assert_eq!(a.token, inst.last_annotation_token);
        assert_eq!(n, inst.nbr_annotations);
    }
    for a in &t.sample_annotation {
        assert!(inst_ix.contains_key(a.instance_token.as_str()));
        assert!(sample_ix.contains_key(a.sample_token.as_str()));
        assert!(a
            .attribute_tokens
            .iter()
            .all(|x| att_ix.contains_key(x.as_str())));
        assert!(["1", "2", "3", "4"].contains(&a.visibility_token.as_str()));
        *vis.entry(a.visibility_token.clone()).or_insert(0) += 1;
        assert!(a.size.iter().all(|&s| s > 0.0));
        assert!((a.translation[2] - a.size[2] / 2.0).abs() < 1e-9);
        zero_pts += usize::from(a.num_lidar_pts == 0);
    }
    for c in CLASSES {
        assert!(classes.contains(c), "no {c} instance");
    }
    assert!(
        zero_pts > 0 && zero_pts < t.sample_annotation.len(),
        "some, not all, boxes without lidar points"
    );
    assert!(vis.len() >= 3, "visibility levels used: {vis:?}");
    assert!(t
        .map
        .iter()
        .all(|m| dir.join(&m.filename).is_file() && !m.log_tokens.is_empty()));
    assert!(t
        .map
        .iter()
        .flat_map(|m| &m.log_tokens)
        .all(|l| log_ix.contains_key(l)));
    assert_eq!(t.map.iter().map(|m| m.log_tokens.len()).sum::<usize>(), 3);
    let _ = scene_ix;
    // Lidar files hold float32 × 5 points.
    for sd in t.sample_data.iter().filter(|s| s.fileformat == "pcd") {
        let n = std::fs::metadata(dir.join(&sd.filename)).unwrap().len();
        assert!(n > 0 && n.is_multiple_of(20));
    }
}

#[test]
fn unoccluded_box_centres_show_their_class_colour() {
    let dir = scratch("pixels");
    let opts = SynthOptions {
        scenes: 3,
        seed: 9,
        duration_s: 3.0,
        write_sweeps: false,
        image_width: 800,
        image_height: 450,
        jpeg_quality: 95,
        ..Default::default()
    };
    write_nuscenes(&dir, &opts).unwrap();
    let t = load(&dir);
    let taxonomy = Taxonomy::load(None).unwrap();
    let ep_ix = index(&t.ego_pose, |s| &s.token);
    let cs_ix = index(&t.calibrated_sensor, |s| &s.token);
    let inst_ix = index(&t.instance, |s| &s.token);
    let cat_ix = index(&t.category, |s| &s.token);
    let (mut checked, mut ok) = (0, 0);
    let mut failures = Vec::new();
    for sd in t
        .sample_data
        .iter()
        .filter(|s| s.is_key_frame && s.fileformat == "jpg")
    {
        let cs = &t.calibrated_sensor[cs_ix[sd.calibrated_sensor_token.as_str()]];
        let k = cs.camera_intrinsic.unwrap();
        let ep = &t.ego_pose[ep_ix[sd.ego_pose_token.as_str()]];
        let to_cam =
            (pose(ep.translation, ep.rotation) * pose(cs.translation, cs.rotation)).inverse();
        let img = image::open(dir.join(&sd.filename)).unwrap().to_rgb8();
        let anns: Vec<&SampleAnnotation> = t
            .sample_annotation
            .iter()
            .filter(|a| a.sample_token == sd.sample_token)
            .collect();
        // Every box in camera coordinates: its corners and its 2-D bounds.
        let boxes: Vec<(Vector3<f64>, f64, [f64; 4])> = anns
            .iter()
            .map(|a| {
                let c = to_cam * Point3::from(Vector3::from(a.translation));
                let corners = drivegen::geometry::box_corners(a.translation, a.size, a.rotation);
                let cc: Vec<Vector3<f64>> = corners
                    .iter()
                    .map(|p| (to_cam * Point3::from(*p)).coords)
                    .collect();
                let min_z = cc.iter().map(|p| p.z).fold(f64::INFINITY, f64::min);
                let proj: Vec<(f64, f64)> = cc
                    .iter()
                    .map(|p| (k[0][0] * p.x / p.z + k[0][2], k[1][1] * p.y / p.z + k[1][2]))
                    .collect();
                let bb = [
                    proj.iter().map(|p| p.0).fold(f64::INFINITY, f64::min),
                    proj.iter().map(|p| p.1).fold(f64::INFINITY, f64::min),
                    proj.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max),
                    proj.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max),
                ];
                (c.coords, min_z, bb)
            })
            .collect();
        for (i, a) in anns.iter().enumerate() {
            let (c, min_z, bb) = boxes[i];
            if min_z < 1.0 {
                continue;
            }
            let (u, v) = (k[0][0] * c.x / c.z + k[0][2], k[1][1] * c.y / c.z + k[1][2]);
            let (ui, vi) = (u.round(), v.round());
            if ui < 3.0
                || vi < 3.0
                || ui > f64::from(sd.width) - 4.0
                || vi > f64::from(sd.height) - 4.0
            {
                continue;
            }
            // Big enough to have a clean interior, and nothing nearer whose outline covers it.
            if bb[2] - bb[0] < 14.0 || bb[3] - bb[1] < 14.0 {
                continue;
            }
            let occluded = boxes.iter().enumerate().any(|(j, (_, mz, ob))| {
                j != i
                    && *mz < c.z
                    && u >= ob[0] - 2.0
                    && u <= ob[2] + 2.0
                    && v >= ob[1] - 2.0
                    && v <= ob[3] + 2.0
            });
            if occluded {
                continue;
            }
            let cat =
                &t.category[cat_ix[&t.instance[inst_ix[a.instance_token.as_str()]].category_token]];
            let class = taxonomy.nuscenes_class(&cat.name).0;
            let want = CLASSES.iter().position(|c| *c == class).unwrap();
            let p = img.get_pixel(ui as u32, vi as u32).0;
            checked += 1;
            if saturation_of(p) > 0.35 && nearest_class(p) == want {
                ok += 1;
            } else {
                failures.push(format!("{} {class} at ({ui},{vi}) is {p:?}", sd.filename));
            }
        }
    }
    eprintln!("{ok}/{checked} unoccluded box centres have their class colour");
    assert!(checked >= 15, "only {checked} unoccluded boxes checked");
    assert!(
        ok as f64 >= 0.95 * checked as f64,
        "{ok}/{checked} centre pixels have their class colour: {failures:#?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn our_ingest_reads_the_corpus() {
    let dir = corpus();
    let store = scratch("store");
    let opts = drivegen::ingest::nuscenes::IngestOptions {
        root: dir.to_path_buf(),
        version: VERSION.into(),
        out: store.clone(),
        taxonomy: Taxonomy::load(None).unwrap(),
        rules: Default::default(),
        chunk_scenes: 2,
        links: Default::default(),
    };
    let s = drivegen::ingest::nuscenes::ingest(&opts).unwrap();
    assert_eq!(s.scenes_written, 3, "{s}");
    assert!(s.rejects.is_empty(), "{s}");
    assert!(s.unknown_categories.is_empty());
    assert_eq!(s.renormalised_quaternions, 0);
    std::fs::remove_dir_all(&store).unwrap();
}

#[test]
fn the_devkit_loads_the_corpus() {
    let Some(python) = oracle::python("devkit") else {
        return;
    };
    let dir = corpus();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles/devkit_load.py");
    let out = std::process::Command::new(python)
        .arg(&script)
        .arg(dir)
        .arg(VERSION)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "devkit_load.py failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap();
    let t = load(dir);
    assert_eq!(report["scenes"], 3);
    assert_eq!(report["samples"], t.sample.len());
    assert_eq!(report["sample_data"], t.sample_data.len());
    assert_eq!(report["annotations"], t.sample_annotation.len());
    assert!(report["boxes_in_front_keyframes"].as_u64().unwrap() > 0);
    // The devkit's projected box centres agree with our own transform chain.
    let ep_ix = index(&t.ego_pose, |s| &s.token);
    let cs_ix = index(&t.calibrated_sensor, |s| &s.token);
    let sd_ix = index(&t.sample_data, |s| &s.token);
    let ann_ix = index(&t.sample_annotation, |s| &s.token);
    let projections = report["projections"].as_array().unwrap();
    assert!(projections.len() > 10);
    for p in projections {
        let sd = &t.sample_data[sd_ix[p["sample_data"].as_str().unwrap()]];
        let a = &t.sample_annotation[ann_ix[p["annotation"].as_str().unwrap()]];
        let cs = &t.calibrated_sensor[cs_ix[sd.calibrated_sensor_token.as_str()]];
        let ep = &t.ego_pose[ep_ix[sd.ego_pose_token.as_str()]];
        let k = cs.camera_intrinsic.unwrap();
        let c = (pose(ep.translation, ep.rotation) * pose(cs.translation, cs.rotation)).inverse()
            * Point3::from(Vector3::from(a.translation));
        let (u, v) = (k[0][0] * c.x / c.z + k[0][2], k[1][1] * c.y / c.z + k[1][2]);
        let (du, dv) = (u - p["u"].as_f64().unwrap(), v - p["v"].as_f64().unwrap());
        assert!(
            du.abs() < 1e-6 && dv.abs() < 1e-6,
            "projection differs by ({du}, {dv})"
        );
    }
}
