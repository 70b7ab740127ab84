//! Render once: the Set-of-Mark, MetaVQA and corrupt stages write the same tables with and
//! without image files, and a release drawn from the tables alone is byte-identical to one
//! read from the stages' files (both splits, the text-only controls included), while
//! `keep_images` writes exactly the files the stages would have.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use drivegen::config::StageConfig;
use drivegen::corrupt::run as cr;
use drivegen::release;
use drivegen::visibility;

use crate::common::tree;

fn images_in(t: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    t.iter()
        .filter(|(k, _)| k.ends_with(".png") || k.ends_with(".jpg"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn corpus(dir: &Path) -> (PathBuf, PathBuf) {
    let (_, _, store) = crate::common::synth_store(dir, 1, 3.0, (640, 360));
    let vis = dir.join("vis.arrow");
    drivegen::visibility::run(&visibility::Options::new(&store, &vis, None).unwrap()).unwrap();
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
        device: drivegen::gpu::Device::Cpu,
        images,
        scene: None,
    })
    .unwrap();
}

fn corrupt(store: &Path, out: &Path, images: bool) {
    cr::run(&cr::Options {
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
        device: drivegen::gpu::Device::Cpu,
        max_frames: None,
        frames_per_scene: Some(2),
        images,
    })
    .unwrap();
}

fn release(qa: Vec<PathBuf>, store: &Path, dirs: Vec<PathBuf>, out: &Path, keep: Option<PathBuf>) {
    drivegen::release::run(&release::Options {
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
    assert_eq!(
        a.len(),
        4,
        "the split and its text-only control, for MetaVQA and DriveBench"
    );
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
    let kept = images_in(&tree(&kept));
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
    // The kept images' folder is claimed like every output: a folder with files drivegen did
    // not write is refused and left as it was.
    let foreign = d.path().join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), b"mine").unwrap();
    let e = drivegen::release::run(&release::Options {
        qa: vec![mv_tables.join("metavqa_qa.arrow")],
        stores: vec![store.clone()],
        out: d.path().join("r_foreign"),
        image_dirs: vec![mv_tables.clone()],
        keep_images: Some(foreign.clone()),
        ..Default::default()
    })
    .unwrap_err()
    .report()
    .to_string();
    assert!(e.contains("foreign"), "{e}");
    assert_eq!(tree(&foreign).len(), 1);

    // A hand-edited recipe table cannot lead the release out of its folders or draw outside
    // an image: the error names the table and the record.
    let file = mv_tables.join(drivegen::som::recipe::FILE);
    let reader =
        arrow::ipc::reader::FileReader::try_new(std::fs::File::open(&file).unwrap(), None).unwrap();
    let draw = drivegen::som::recipe::draw_config(&file, &reader.schema()).unwrap();
    let batches: Vec<_> = reader.map(|b| b.unwrap()).collect();
    type Edit = fn(&mut drivegen::som::recipe::MarkedImage);
    let edits: [(Edit, &str); 2] = [
        (|m| m.path = "../../escape.png".into(), "path"),
        (|m| m.marks[0].bbox[2] = m.width + 1, "not inside"),
    ];
    for (k, (edit, why)) in edits.into_iter().enumerate() {
        let bad = d.path().join(format!("mv_bad{k}"));
        std::fs::create_dir_all(&bad).unwrap();
        let mut w =
            drivegen::som::recipe::Writer::create(&bad.join(drivegen::som::recipe::FILE), &draw)
                .unwrap();
        for (i, b) in batches.iter().enumerate() {
            let mut rows = drivegen::som::recipe::from_batch(&file, b).unwrap();
            if i == 0 {
                let m = rows.iter_mut().find(|m| !m.marks.is_empty()).unwrap();
                edit(m);
            }
            w.write(&rows).unwrap();
        }
        w.finish().unwrap();
        let e = drivegen::release::run(&release::Options {
            qa: vec![mv_tables.join("metavqa_qa.arrow")],
            stores: vec![store.clone()],
            out: d.path().join(format!("r_bad{k}")),
            image_dirs: vec![bad.clone()],
            ..Default::default()
        })
        .unwrap_err()
        .report()
        .to_string();
        assert!(e.contains("marked_images.arrow") && e.contains(why), "{e}");
    }
}

#[test]
fn som_tables_do_not_depend_on_the_files_and_draw_the_files() {
    let d = tempfile::tempdir().unwrap();
    let (store, vis) = corpus(d.path());
    let cfg = drivegen::som::SomConfig::default_config().unwrap();
    let run = |out: &Path, images: bool| {
        drivegen::som::run(&drivegen::som::Options {
            store: &store,
            visibility: &vis,
            out,
            config: &cfg,
            device: &drivegen::gpu::Device::Cpu,
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

    // The recipes draw what marks.arrow records, mark for mark and in its order.
    let marks = arrow::ipc::reader::FileReader::try_new(
        std::fs::File::open(without.join("marks.arrow")).unwrap(),
        None,
    )
    .unwrap();
    let mut by_image: BTreeMap<String, Vec<[u32; 10]>> = BTreeMap::new();
    for b in marks {
        let b = b.unwrap();
        let u = |c: &str| {
            b.column_by_name(c)
                .unwrap()
                .as_any()
                .downcast_ref::<arrow::array::UInt32Array>()
                .unwrap()
                .clone()
        };
        let id = b
            .column_by_name("camera_frame_id")
            .unwrap()
            .as_any()
            .downcast_ref::<arrow::array::StringArray>()
            .unwrap()
            .clone();
        let cols: Vec<_> = [
            "box_x0", "box_y0", "box_x1", "box_y1", "label_x0", "label_y0", "label_x1", "label_y1",
            "mark", "colour",
        ]
        .iter()
        .map(|c| u(c))
        .collect();
        for i in 0..b.num_rows() {
            let mut v = [0u32; 10];
            for (k, c) in cols.iter().enumerate() {
                v[k] = c.value(i);
            }
            by_image.entry(id.value(i).to_string()).or_default().push(v);
        }
    }
    let reader =
        arrow::ipc::reader::FileReader::try_new(std::fs::File::open(&file).unwrap(), None).unwrap();
    for batch in reader {
        for m in drivegen::som::recipe::from_batch(&file, &batch.unwrap()).unwrap() {
            let drawn: Vec<[u32; 10]> = m
                .marks
                .iter()
                .map(|d| {
                    let [r, g, b, _] = drivegen::som::draw::unpack(d.colour);
                    let rgb = (u32::from(r) << 16) | (u32::from(g) << 8) | u32::from(b);
                    let (x, l) = (d.bbox, d.label);
                    [
                        x[0], x[1], x[2], x[3], l[0], l[1], l[2], l[3], d.number, rgb,
                    ]
                })
                .collect();
            assert_eq!(by_image[&m.camera_frame_id], drawn, "{}", m.path);
        }
    }
}
