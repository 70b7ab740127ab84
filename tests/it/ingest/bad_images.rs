//! Unusable camera images in a store (a truncated JPEG, a picture of another size) must not stop
//! the stages that decode images: Set-of-Mark, MetaVQA and the corruptions skip what needs
//! them, record each in their `rejects.jsonl` with the file, and give every other image the
//! output of a run on the intact corpus.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use arrow::array::AsArray;
use drivegen::qa::QaRecord;
use drivegen::store::rejects::{Reject, RejectLog};

use common::cli::drivegen;

/// The image stages on the store, into `out`.
fn image_stages(store: &Path, vis: &Path, out: &Path) {
    drivegen(
        &["som", "--device", "cpu"],
        &[
            ("--store", store),
            ("--visibility", vis),
            ("--out", &out.join("som")),
        ],
    );
    drivegen(
        &["metavqa", "--device", "cpu"],
        &[
            ("--store", store),
            ("--visibility", vis),
            ("--out", &out.join("metavqa")),
        ],
    );
    drivegen(
        &["corrupt", "--corruption", "brightness", "--device", "cpu"],
        &[("--store", store), ("--out", &out.join("corrupt"))],
    );
}

/// (camera_frame_id, annotation_id, mark) of every row of a `marks.arrow`.
fn marks(dir: &Path) -> BTreeSet<(String, String, u32)> {
    let f = std::fs::File::open(dir.join("marks.arrow")).unwrap();
    let mut out = BTreeSet::new();
    for b in arrow::ipc::reader::FileReader::try_new(f, None).unwrap() {
        let b = b.unwrap();
        let s = |n: &str| b.column_by_name(n).unwrap().as_string::<i32>().clone();
        let (ids, anns) = (s("camera_frame_id"), s("annotation_id"));
        let m = b.column_by_name("mark").unwrap();
        let m = m.as_primitive::<arrow::datatypes::UInt32Type>();
        for i in 0..b.num_rows() {
            out.insert((
                ids.value(i).to_string(),
                anns.value(i).to_string(),
                m.value(i),
            ));
        }
    }
    out
}

fn questions(file: &Path) -> BTreeMap<String, QaRecord> {
    drivegen::qa::ipc::read_all(&[file.to_path_buf()])
        .unwrap()
        .into_iter()
        .map(|q| (q.qa_id.clone(), q))
        .collect()
}

fn rejects(file: &Path) -> Vec<Reject> {
    RejectLog::read(file).unwrap()
}

#[test]
fn unusable_images_are_skipped_recorded_and_leave_the_rest_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (root, store, vis) = (d.join("nusc"), d.join("store"), d.join("vis.arrow"));
    drivegen(
        &[
            "synth",
            "--scenes",
            "2",
            "--duration",
            "3",
            "--width",
            "320",
            "--height",
            "180",
        ],
        &[("--out", &root)],
    );
    drivegen(&["ingest"], &[("--root", &root), ("--out", &store)]);
    drivegen(
        &["visibility", "--device", "cpu"],
        &[("--store", &store), ("--out", &vis)],
    );
    let clean = d.join("clean");
    image_stages(&store, &vis, &clean);

    // Two marked images of the first scene, in different frames: one truncated, one replaced by
    // a valid JPEG of another size.
    let marked: BTreeSet<String> = marks(&clean.join("som"))
        .into_iter()
        .map(|(id, _, _)| id)
        .collect();
    let first = drivegen::store::Store::open(&store)
        .unwrap()
        .scenes()
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let mut picked: Vec<&drivegen::store::CameraRow> = Vec::new();
    for c in first.cameras.iter().filter(|c| c.is_keyframe) {
        if marked.contains(&c.camera_frame_id) && picked.iter().all(|p| p.frame_idx != c.frame_idx)
        {
            picked.push(c);
        }
    }
    assert!(picked.len() >= 2, "too few marked frames in the corpus");
    let broken: Vec<(String, PathBuf, u32)> = picked[..2]
        .iter()
        .map(|c| {
            (
                c.camera_frame_id.clone(),
                root.join(&c.image_path),
                c.frame_idx,
            )
        })
        .collect();
    let bytes = std::fs::read(&broken[0].1).unwrap();
    std::fs::write(&broken[0].1, &bytes[..100]).unwrap();
    let mut small = Vec::new();
    image::RgbImage::new(64, 48)
        .write_to(
            &mut std::io::Cursor::new(&mut small),
            image::ImageFormat::Jpeg,
        )
        .unwrap();
    std::fs::write(&broken[1].1, small).unwrap();
    let broken_ids: BTreeSet<&str> = broken.iter().map(|b| b.0.as_str()).collect();

    let hurt = d.join("hurt");
    image_stages(&store, &vis, &hurt);

    // Each stage names both images (the corruptions: the frame each is in) and their files.
    for stage in ["som", "metavqa", "corrupt"] {
        let r = rejects(&hurt.join(stage).join("rejects.jsonl"));
        assert_eq!(r.len(), 2, "{stage}: {r:?}");
        for ((id, file, _), why) in broken.iter().zip(["cannot decode", "64×48"]) {
            let b = r
                .iter()
                .find(|b| b.item.as_deref() == Some(id.as_str()))
                .unwrap_or_else(|| panic!("{stage}: {id} not recorded: {r:?}"));
            assert_eq!(b.stage, stage);
            assert_eq!(b.file.as_deref(), Some(file.to_str().unwrap()), "{r:?}");
            assert_eq!(b.scene_id.as_deref(), Some(first.scene.scene_id.as_str()));
            assert!(b.reason.contains(why), "{stage}: {b:?}");
        }
        assert!(rejects(&clean.join(stage).join("rejects.jsonl")).is_empty());
    }

    // Set-of-Mark: every other image keeps its marks; the two have none.
    let (before, after) = (marks(&clean.join("som")), marks(&hurt.join("som")));
    let expected: BTreeSet<_> = before
        .into_iter()
        .filter(|(id, _, _)| !broken_ids.contains(id.as_str()))
        .collect();
    assert_eq!(after, expected);

    // MetaVQA: the questions drawn on the two images are gone, the others unchanged.
    let (before, after) = (
        questions(&clean.join("metavqa/metavqa_qa.arrow")),
        questions(&hurt.join("metavqa/metavqa_qa.arrow")),
    );
    let lost: Vec<&QaRecord> = before
        .values()
        .filter(|q| !after.contains_key(&q.qa_id))
        .collect();
    assert!(!lost.is_empty());
    for q in &lost {
        assert!(
            q.camera_frame_ids
                .iter()
                .any(|id| broken_ids.contains(id.as_str())),
            "{} lost",
            q.qa_id
        );
    }
    for (id, q) in &after {
        assert_eq!(Some(q), before.get(id), "{id} changed");
    }

    // Corruptions: the two frames are skipped, every other frame's questions are unchanged.
    let (before, after) = (
        questions(&clean.join("corrupt/corruption_qa.arrow")),
        questions(&hurt.join("corrupt/corruption_qa.arrow")),
    );
    let skipped = |q: &QaRecord| {
        broken
            .iter()
            .any(|(_, _, f)| q.scene_id == first.scene.scene_id && q.frame_idx == Some(*f))
    };
    let expected: BTreeMap<&String, &QaRecord> =
        before.iter().filter(|(_, q)| !skipped(q)).collect();
    assert!(expected.len() < before.len());
    assert_eq!(after.iter().collect::<BTreeMap<_, _>>(), expected);

    // The whole build goes through too, with the first front image (the contact sheet's usual
    // subject) broken as well.
    let front = first
        .cameras
        .iter()
        .filter(|c| c.is_keyframe && c.camera == "CAM_FRONT")
        .min_by_key(|c| c.frame_idx)
        .unwrap();
    let p = root.join(&front.image_path);
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..100]).unwrap();
    let config = d.join("build.toml");
    std::fs::write(
        &config,
        format!(
            r#"name = "broken images"
seed = 0
out = "{}"

[input]
kind = "store"
path = "{}"

[stages]
egomotion = true
visibility = true
som = true
metavqa = true
corrupt = true

[corrupt]
corruptions = "brightness"
severity = "default"
frames_per_scene = 1
{}"#,
            d.join("release").display(),
            store.display(),
            // The point is the skipped images, not how many questions two short scenes give.
            crate::common::build_config::relaxed(&["drivebench", "egodyn", "metavqa"])
        ),
    )
    .unwrap();
    let summary = drivegen(&["build"], &[("", &config)]);
    for step in ["som", "metavqa", "corrupt"] {
        let line = summary
            .lines()
            .find(|l| l.starts_with(step))
            .unwrap_or_else(|| panic!("no {step} line in\n{summary}"));
        assert!(line.contains("skipped (unusable images"), "{line}");
    }
    assert!(d.join("release/report/contact_sheet.png").is_file());
    let shards: Vec<String> = std::fs::read_dir(d.join("release/data"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        shards
            .iter()
            .any(|n| n.starts_with("test-") && n.ends_with(".parquet")),
        "{shards:?}"
    );
    // The summary points at every rejects log with its count, and the counts are the logs'.
    let listed: Vec<&str> = summary
        .lines()
        .skip_while(|l| !l.starts_with("rejects: "))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert!(!listed.is_empty(), "no rejects listed:\n{summary}");
    for l in listed {
        let (path, n) = l.trim().rsplit_once(" (").unwrap();
        let n: usize = n.trim_end_matches(')').parse().unwrap();
        let lines = std::fs::read_to_string(path).unwrap().lines().count();
        assert_eq!(lines, n, "{l}");
    }
}
