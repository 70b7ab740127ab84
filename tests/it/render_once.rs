//! Render once: the Set-of-Mark, MetaVQA and corrupt stages write the same tables with and
//! without image files, and a release drawn from the tables alone is byte-identical to one
//! read from the stages' files (both splits, the text-only controls included), while
//! `keep_images` writes exactly the files the stages would have.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use drivegen::corrupt::run as cr;
use drivegen::gpu::DeviceChoice;
use drivegen::ingest::nuscenes::{ingest, IngestOptions};
use drivegen::release::ReleaseOptions;
use drivegen::visibility::VisibilityOptions;

use crate::common::tree;

fn images_in(t: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    t.iter()
        .filter(|(k, _)| k.ends_with(".png") || k.ends_with(".jpg"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn corpus(dir: &Path) -> (PathBuf, PathBuf) {
    let root = dir.join("root");
    let opts = drivegen::synth::SynthOptions {
        scenes: 1,
        duration_s: 3.0,
        write_sweeps: false,
        image_width: 640,
        image_height: 360,
        ..Default::default()
    };
    drivegen::synth::write_nuscenes(&root, &opts).unwrap();
    let store = dir.join("store");
    ingest(&IngestOptions {
        root,
        version: opts.version.clone(),
        out: store.clone(),
        taxonomy: drivegen::taxonomy::Taxonomy::load(None).unwrap(),
        rules: Default::default(),
        chunk_scenes: 1,
    })
    .unwrap();
    let vis = dir.join("vis.arrow");
    drivegen::visibility::run(&VisibilityOptions::new(&store, &vis, None).unwrap()).unwrap();
    (store, vis)
}

fn metavqa(store: &Path, vis: &Path, out: &Path, images: bool) {
    let mut config = drivegen::metavqa::MetavqaConfig::default_config().unwrap();
    config.per_frame = 6;
    drivegen::metavqa::run(&drivegen::metavqa::Options {
        store: store.to_path_buf(),
        visibility: vis.to_path_buf(),
        out: out.to_path_buf(),
        config,
        som: drivegen::som::SomConfig::default_config().unwrap(),
        gpu: drivegen::gpu::device::open(DeviceChoice::Cpu).unwrap(),
        images,
        scene: None,
    })
    .unwrap();
}

fn corrupt(store: &Path, out: &Path, images: bool) {
    cr::run(&cr::CorruptOptions {
        input: cr::Input::Store(store.to_path_buf()),
        out: out.to_path_buf(),
        // A photometric, a content-dependent (Dark draws from the image), two blurs, a
        // weather and a view-selective corruption.
        corruptions: cr::parse_corruptions(
            "brightness,dark,motion_blur,zoom_blur,fog,water_splash",
        )
        .unwrap(),
        severities: cr::parse_severities("3").unwrap(),
        seed: 7,
        config: drivegen::corrupt::CorruptConfig::default_config().unwrap(),
        gpu: None,
        max_frames: None,
        frames_per_scene: Some(2),
        images,
    })
    .unwrap();
}

fn release(qa: Vec<PathBuf>, store: &Path, dirs: Vec<PathBuf>, out: &Path, keep: Option<PathBuf>) {
    drivegen::release::run(&ReleaseOptions {
        qa,
        stores: vec![store.to_path_buf()],
        out: out.to_path_buf(),
        image_dirs: dirs,
        text_only_controls: true,
        // Small groups: images shared across a group boundary are drawn again, as they are
        // read again from files.
        row_group_rows: 7,
        row_group_bytes: 400_000,
        keep_images: keep,
        ..Default::default()
    })
    .unwrap();
}

#[test]
fn a_release_drawn_from_tables_equals_one_read_from_files() {
    let d = tempfile::tempdir().unwrap();
    let (store, vis) = corpus(d.path());
    let (mv_files, mv_tables) = (d.path().join("mv_files"), d.path().join("mv_tables"));
    metavqa(&store, &vis, &mv_files, true);
    metavqa(&store, &vis, &mv_tables, false);
    let (co_files, co_tables) = (d.path().join("co_files"), d.path().join("co_tables"));
    corrupt(&store, &co_files, true);
    corrupt(&store, &co_tables, false);

    // The tables do not depend on whether files are written; only the files are missing.
    for (with, without) in [(&mv_files, &mv_tables), (&co_files, &co_tables)] {
        let (a, b) = (tree(with), tree(without));
        // The ownership record lists the files written; everything else must agree.
        for (k, v) in b.iter().filter(|(k, _)| !k.starts_with(".drivegen")) {
            assert!(a.get(k) == Some(v), "{k} differs with and without images");
        }
        assert!(images_in(&b).is_empty(), "images written without images");
        assert!(!images_in(&a).is_empty());
    }

    let qa =
        |mv: &Path, co: &Path| vec![mv.join("metavqa_qa.arrow"), co.join("corruption_qa.arrow")];
    let (r_files, r_tables) = (d.path().join("r_files"), d.path().join("r_tables"));
    let kept = d.path().join("kept");
    release(
        qa(&mv_files, &co_files),
        &store,
        vec![mv_files.clone(), co_files.clone()],
        &r_files,
        None,
    );
    release(
        qa(&mv_tables, &co_tables),
        &store,
        vec![mv_tables.clone(), co_tables.clone()],
        &r_tables,
        Some(kept.clone()),
    );
    let (a, b) = (tree(&r_files.join("data")), tree(&r_tables.join("data")));
    assert_eq!(a.len(), 2, "the split and its text-only control");
    assert!(
        a == b,
        "the release drawn from tables differs from the one read from files"
    );
    let (ma, mb) = (
        std::fs::read(r_files.join("manifest.json")).unwrap(),
        std::fs::read(r_tables.join("manifest.json")).unwrap(),
    );
    let (ma, mb): (serde_json::Value, serde_json::Value) = (
        serde_json::from_slice(&ma).unwrap(),
        serde_json::from_slice(&mb).unwrap(),
    );
    assert_eq!(ma["rows"], mb["rows"]);
    assert_eq!(ma["images"], mb["images"]);

    // Every kept image is the stage's file of that path; every published drawn image is kept.
    let kept = tree(&kept);
    assert!(!kept.is_empty());
    let mut stage = images_in(&tree(&mv_files));
    stage.extend(images_in(&tree(&co_files)));
    for (k, v) in &kept {
        assert!(
            stage.get(k) == Some(v),
            "kept image {k} is not the stage's file"
        );
    }
    let published = drivegen::release::read::read_release(&r_tables).unwrap();
    let drawn: std::collections::BTreeSet<&String> = published
        .iter()
        .flat_map(|r| r.image_paths.iter())
        .collect();
    assert_eq!(
        drawn.len(),
        kept.len(),
        "each published drawn image kept once"
    );
}

#[test]
fn som_tables_do_not_depend_on_the_files_and_draw_the_files() {
    let d = tempfile::tempdir().unwrap();
    let (store, vis) = corpus(d.path());
    let cfg = drivegen::som::SomConfig::default_config().unwrap();
    let vis_cfg = drivegen::visibility::config::VisibilityConfig::load(None).unwrap();
    let r = drivegen::visibility::rasteriser(DeviceChoice::Cpu).unwrap();
    let run = |out: &Path, images: bool| {
        drivegen::som::run(&drivegen::som::Options {
            store: &store,
            visibility: &vis,
            out,
            config: &cfg,
            visibility_config: &vis_cfg,
            rasteriser: r.as_ref(),
            scene: None,
            images,
        })
        .unwrap()
    };
    let (with, without) = (d.path().join("with"), d.path().join("without"));
    run(&with, true);
    run(&without, false);
    let (a, b) = (tree(&with), tree(&without));
    assert!(images_in(&b).is_empty());
    for k in ["marks.arrow", drivegen::som::recipe::FILE] {
        assert!(a[k] == b[k], "{k} differs with and without images");
    }
    // Drawing each recipe on its source gives the stage's PNG, byte for byte.
    let file = without.join(drivegen::som::recipe::FILE);
    let reader =
        arrow::ipc::reader::FileReader::try_new(std::fs::File::open(&file).unwrap(), None).unwrap();
    let draw = drivegen::som::recipe::draw_config(&file, &reader.schema()).unwrap();
    let st = drivegen::store::Store::open(&store).unwrap();
    let images = drivegen::images::ImageReader::new(&st, None);
    let cams: Vec<drivegen::store::CameraRow> = st
        .scenes()
        .unwrap()
        .flat_map(|s| s.unwrap().cameras)
        .collect();
    let mut n = 0;
    for batch in reader {
        for m in drivegen::som::recipe::from_batch(&file, &batch.unwrap()).unwrap() {
            let cam = cams
                .iter()
                .find(|c| c.camera_frame_id == m.camera_frame_id)
                .unwrap();
            let base = images.rgb_checked(cam).unwrap();
            let bytes = drivegen::som::recipe::render(&m, &base, &draw, None).unwrap();
            assert!(
                a[&m.path] == bytes,
                "{} drawn from the table differs",
                m.path
            );
            n += 1;
        }
    }
    assert_eq!(n, images_in(&a).len());
}
