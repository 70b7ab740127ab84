//! `drivegen metavqa` end to end on the built-in synthetic corpus: synth → ingest →
//! visibility → metavqa, the QA invariants, uniform answer letters, references into the store,
//! the pick_closer letter, determinism, the per-frame cap and type weights, GPU = CPU marked
//! images, and clear errors for inputs that do not belong together.
//!
//! GPU tests need an adapter (lavapipe is enough); `DRIVEGEN_GPU_TESTS=no` skips them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use arrow::array::StringArray;
use arrow::ipc::reader::FileReader;
use drivegen::config::StageConfig;
use drivegen::gpu::DeviceChoice;
use drivegen::metavqa::graph::KeptMark;
use drivegen::metavqa::input::KeptRow;
use drivegen::metavqa::stage::scene_graphs;
use drivegen::metavqa::{self, MetavqaConfig, Options};
use drivegen::qa::record::{check_invariants, from_batch, letter_index, QaRecord};
use drivegen::som::SomConfig;
use drivegen::store::{CameraRow, ObjectRow, Store, Table};
use drivegen::visibility;

use crate::common::tree;

struct Corpus {
    _dir: tempfile::TempDir,
    store: PathBuf,
    vis: PathBuf,
}

/// One synthetic scene (6 s, keyframes only, 800×450), ingested, with its visibility table.
fn corpus() -> &'static Corpus {
    static C: OnceLock<Corpus> = OnceLock::new();
    C.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (_, _, store) = crate::common::synth_store(dir.path(), 1, 6.0, (800, 450));
        let vis = dir.path().join("vis.arrow");
        let opts = visibility::Options::new(&store, &vis, None).unwrap();
        drivegen::visibility::run(&opts).unwrap();
        Corpus {
            _dir: dir,
            store,
            vis,
        }
    })
}

fn options(out: &Path, device: DeviceChoice, images: bool) -> Options {
    let c = corpus();
    Options {
        store: c.store.clone(),
        visibility: c.vis.clone(),
        out: out.to_path_buf(),
        config: MetavqaConfig::default_config().unwrap(),
        som: SomConfig::default_config().unwrap(),
        device: drivegen::gpu::Device::open(device).unwrap(),
        images,
        scene: None,
    }
}

/// The records and their `image` column.
fn read(out: &Path) -> (Vec<QaRecord>, Vec<String>) {
    let f = File::open(out.join("metavqa_qa.arrow")).unwrap();
    let mut rows = Vec::new();
    let mut images = Vec::new();
    for b in FileReader::try_new(f, None).unwrap() {
        let b = b.unwrap();
        rows.extend(from_batch(&b).unwrap());
        let im = b
            .column_by_name("image")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        images.extend(im.iter().map(|s| s.unwrap().to_string()));
    }
    (rows, images)
}

fn gpu_tests() -> bool {
    let off = std::env::var("DRIVEGEN_GPU_TESTS").is_ok_and(|v| v.eq_ignore_ascii_case("no"));
    if off {
        eprintln!("DRIVEGEN_GPU_TESTS=no: skipping a GPU test");
    } else if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
    !off
}

#[test]
fn corpus_questions_hold_the_invariants_and_reference_the_store() {
    let out = tempfile::tempdir().unwrap();
    let s = metavqa::run(&options(out.path(), DeviceChoice::Cpu, true)).unwrap();
    eprintln!("{s}");
    let (rows, images) = read(out.path());
    assert_eq!(rows.len() as u64, s.questions);
    assert!(rows.len() > 500, "{} questions", rows.len());
    assert_eq!(s.overlapping_labels, 0);
    assert!(s.images_written > 0);
    check_invariants(&rows).unwrap();
    // No colours in the synthetic corpus: identify_color is skipped and counted.
    assert_eq!(s.by_type["identify_color"], 0);
    assert_eq!(s.skipped_no_color, s.camera_images);
    // Every other type is asked.
    for (t, n) in &s.by_type {
        assert!(t == "identify_color" || *n > 0, "{t} never asked");
    }
    // Letters per number of options: every letter within 5σ + 1 of uniform.
    let mut by_k: BTreeMap<usize, [f64; 4]> = BTreeMap::new();
    for r in &rows {
        by_k.entry(r.choices.len()).or_default()[r.answer_index as usize] += 1.0;
    }
    for (k, counts) in &by_k {
        let n: f64 = counts.iter().sum();
        let p = 1.0 / *k as f64;
        for c in &counts[..*k] {
            let tol = 5.0 * (n * p * (1.0 - p)).sqrt() + 1.0;
            assert!((c - n * p).abs() <= tol, "{k} options: {counts:?}");
        }
    }
    // References: store objects of the keyframe, store camera images, written images.
    let store = Store::open(&corpus().store).unwrap();
    let objects: Vec<ObjectRow> = store.read_all(Table::Objects).unwrap();
    let cameras: Vec<CameraRow> = store.read_all(Table::Cameras).unwrap();
    let tracks: BTreeSet<(String, u32, String)> = objects
        .iter()
        .map(|o| (o.scene_id.clone(), o.frame_idx, o.track_id.clone()))
        .collect();
    let images_of: HashMap<&str, &CameraRow> = cameras
        .iter()
        .map(|c| (c.camera_frame_id.as_str(), c))
        .collect();
    for (r, image) in rows.iter().zip(&images) {
        let f = r.frame_idx.unwrap();
        let cam = images_of[r.camera_frame_ids[0].as_str()];
        assert_eq!(
            (cam.frame_idx, cam.camera.as_str()),
            (f, r.cameras[0].as_str())
        );
        let marks: BTreeMap<String, String> = serde_json::from_str(&r.marks).unwrap();
        for t in r.objects.iter().chain(marks.values()) {
            assert!(tracks.contains(&(r.scene_id.clone(), f, t.clone())), "{t}");
        }
        for t in &r.objects {
            assert!(marks.values().any(|m| m == t), "{}: {t} unmarked", r.qa_id);
        }
        let unmarked = matches!(
            r.question_type.as_str(),
            "embodied_distance" | "embodied_sideness"
        );
        assert_eq!(image.is_empty(), unmarked);
        if !unmarked {
            assert!(out.path().join(image).is_file(), "{image}");
        }
        // Labels in the text are labels of the image.
        for l in r.question().split('<').skip(1) {
            let l = l.split('>').next().unwrap();
            assert!(
                marks.contains_key(l),
                "{}: <{l}> not in {}",
                r.qa_id,
                r.marks
            );
        }
    }
    // pick_closer: the letter names the nearer object's option whenever one is nearer.
    let mut decisive = 0;
    for r in rows.iter().filter(|r| r.question_type == "pick_closer") {
        let ev: serde_json::Value = serde_json::from_str(&r.evidence).unwrap();
        let d: Vec<f64> = serde_json::from_value(ev["distance_m"].clone()).unwrap();
        let marks: BTreeMap<String, String> = serde_json::from_str(&r.marks).unwrap();
        let label = |t: &str| format!("<{}>", marks.iter().find(|(_, v)| *v == t).unwrap().0);
        let shown = &r.choices[letter_index(&r.answer_letter).unwrap()];
        if (d[0] - d[1]).abs() > 2.0 {
            let near = if d[0] < d[1] {
                &r.objects[0]
            } else {
                &r.objects[1]
            };
            assert_eq!(*shown, label(near));
            decisive += 1;
        } else {
            assert_eq!(shown, "about the same distance");
        }
    }
    assert!(decisive > 0);
    // Determinism: a second run writes the same bytes.
    let again = tempfile::tempdir().unwrap();
    metavqa::run(&options(again.path(), DeviceChoice::Cpu, true)).unwrap();
    let (a, b) = (tree(out.path()), tree(again.path()));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (k, v) in &a {
        assert!(b[k] == *v, "{k} differs between runs");
    }
    assert!(a.keys().any(|k| k.ends_with("_g0.png")));
    assert!(a.keys().any(|k| k.ends_with("_qa.png")));
    assert!(a.keys().any(|k| k.ends_with("_full.png")));
}

#[test]
fn per_frame_cap_and_weights() {
    let out = tempfile::tempdir().unwrap();
    let mut o = options(out.path(), DeviceChoice::Cpu, false);
    o.config.per_frame = 5;
    o.config.weights.insert("grounding".into(), 0.0);
    // Embodied questions ten times as likely as the others.
    for t in [
        "embodied_distance",
        "embodied_sideness",
        "embodied_collision",
    ] {
        o.config.weights.insert(t.into(), 10.0);
    }
    let s = metavqa::run(&o).unwrap();
    let (rows, images) = read(out.path());
    assert!(s.capped > 0);
    assert!(rows.iter().all(|r| r.question_type != "grounding"));
    let mut per_image: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &rows {
        *per_image.entry(&r.camera_frame_ids[0]).or_default() += 1;
    }
    assert!(per_image.values().all(|n| *n <= 5));
    let embodied = rows
        .iter()
        .filter(|r| r.question_type.starts_with("embodied_"))
        .count();
    // 12 embodied drafts of weight 10 against ≈ 25 others of weight 1 per image.
    assert!(
        embodied * 10 > rows.len() * 7,
        "{embodied} of {}",
        rows.len()
    );
    // No images were written.
    assert!(!out.path().join("images").exists());
    assert!(images
        .iter()
        .all(|i| i.is_empty() || i.starts_with("images/")));
}

#[test]
fn gpu_and_cpu_marks_are_identical() {
    if !gpu_tests() {
        return;
    }
    let (cpu, gpu) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut oc = options(cpu.path(), DeviceChoice::Cpu, true);
    let mut og = options(gpu.path(), DeviceChoice::Gpu, true);
    // A few questions per image keep lavapipe's share small.
    oc.config.per_frame = 4;
    og.config.per_frame = 4;
    metavqa::run(&oc).unwrap();
    let s = metavqa::run(&og).unwrap();
    assert_eq!(s.device, "gpu");
    let (a, b) = (tree(cpu.path()), tree(gpu.path()));
    assert_eq!(a.len(), b.len());
    for (k, v) in &a {
        assert!(b[k] == *v, "{k}: GPU and CPU differ");
    }
}

#[test]
fn inputs_that_do_not_belong_together_are_named() {
    let c = corpus();
    let store = Store::open(&c.store).unwrap();
    let data = store.scenes().unwrap().next().unwrap().unwrap();
    let cfg = MetavqaConfig::default_config().unwrap();
    let cam = &data.cameras[0];
    let row = |cfid: &str, ann: &str| KeptRow {
        frame_idx: cam.frame_idx,
        camera: cam.camera.clone(),
        camera_frame_id: cfid.into(),
        mark: KeptMark {
            annotation_id: ann.into(),
            ..Default::default()
        },
    };
    let vis = Path::new("elsewhere/vis.arrow");
    let e = scene_graphs(&data, &[row("no-such-image", "a")], &cfg, vis).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("elsewhere/vis.arrow") && msg.contains("no-such-image"),
        "{msg}"
    );
    let e = scene_graphs(
        &data,
        &[row(&cam.camera_frame_id, "no-such-box")],
        &cfg,
        vis,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("no-such-box") && e.contains("no such object"),
        "{e}"
    );
    // A file that is not a visibility table.
    let out = tempfile::tempdir().unwrap();
    let mut o = options(out.path(), DeviceChoice::Cpu, false);
    o.visibility = c.store.join("frames.arrow");
    let e = metavqa::run(&o).unwrap_err().report().to_string();
    assert!(
        e.contains("frames.arrow") && e.contains("not a visibility table"),
        "{e}"
    );
    // The CLI says the same and exits 2.
    let bin = env!("CARGO_BIN_EXE_drivegen");
    let res = std::process::Command::new(bin)
        .args(["metavqa", "--store"])
        .arg(&c.store)
        .arg("--visibility")
        .arg(out.path().join("missing.arrow"))
        .arg("--out")
        .arg(out.path().join("o"))
        .arg("--no-images")
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&res.stderr).contains("missing.arrow"));
}
