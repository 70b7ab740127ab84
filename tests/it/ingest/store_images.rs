//! `store::images::ImageReader`: a Waymo store's images are the bytes of its `camera_image`
//! Parquet rows (read here independently with arrow), whatever the row-group and block
//! layout; a nuScenes store's are its files; missing files and rows are errors naming both;
//! and the stages that open images (som, corrupt, metavqa) work on a Waymo store.

use crate::common;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray};
use arrow::datatypes::DataType;
use arrow::ipc::reader::FileReader;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::reader::{FileReader as _, SerializedFileReader};
use rayon::prelude::*;

use drivegen::images::ImageReader;
use drivegen::store::{CameraRow, Store, Table};

/// The v2 camera codes, from the Waymo v2 `CameraName` enum.
const CAMERAS: [&str; 6] = [
    "UNKNOWN",
    "FRONT",
    "FRONT_LEFT",
    "FRONT_RIGHT",
    "SIDE_LEFT",
    "SIDE_RIGHT",
];

fn drivegen(args: &[&std::ffi::OsStr]) -> String {
    let o = common::cli::bin().args(args).output().unwrap();
    common::cli::ok(o, &format!("drivegen {args:?}"))
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

/// A synthetic Waymo corpus and its store.
fn waymo_store(dir: &Path, duration: &str, w: &str, h: &str) -> (PathBuf, PathBuf) {
    let root = dir.join("waymo");
    let store = dir.join("store");
    drivegen(&[
        os("synth"),
        os("--format"),
        os("waymo-v2"),
        os("--scenes"),
        os("1"),
        os("--duration"),
        os(duration),
        os("--width"),
        os(w),
        os("--height"),
        os(h),
        os("--out"),
        root.as_os_str(),
    ]);
    drivegen(&[
        os("ingest"),
        os("--source"),
        os("waymo"),
        os("--root"),
        root.as_os_str(),
        os("--out"),
        store.as_os_str(),
    ]);
    (root, store)
}

/// Every image of a `camera_image` file: (timestamp, camera name) → JPEG bytes.
fn parquet_images(path: &Path) -> HashMap<(i64, String), Vec<u8>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let mut out = HashMap::new();
    for b in reader {
        let b = b.unwrap();
        let ts = arrow::compute::cast(
            b.column_by_name("key.frame_timestamp_micros").unwrap(),
            &DataType::Int64,
        )
        .unwrap();
        let ts = ts.as_primitive::<arrow::datatypes::Int64Type>();
        let cam = arrow::compute::cast(
            b.column_by_name("key.camera_name").unwrap(),
            &DataType::Int64,
        )
        .unwrap();
        let cam = cam.as_primitive::<arrow::datatypes::Int64Type>();
        let img = b
            .column_by_name("[CameraImageComponent].image")
            .unwrap()
            .as_binary::<i32>();
        for i in 0..b.num_rows() {
            let name = CAMERAS[cam.value(i) as usize].to_string();
            out.insert((ts.value(i), name), img.value(i).to_vec());
        }
    }
    out
}

fn cameras(store: &Path) -> Vec<CameraRow> {
    Store::open(store)
        .unwrap()
        .read_all(Table::Cameras)
        .unwrap()
}

fn key_of(c: &CameraRow) -> (i64, String) {
    let mut p = c.camera_frame_id.rsplitn(3, '/');
    let cam = p.next().unwrap().to_string();
    (p.next().unwrap().parse().unwrap(), cam)
}

#[test]
fn waymo_images_are_the_parquet_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (root, store_dir) = waymo_store(dir.path(), "3", "64", "36");
    let cams = cameras(&store_dir);
    assert_eq!(cams.len(), 30 * 5);
    let file = root
        .join("camera_image")
        .join(cams[0].image_path.trim_start_matches("camera_image/"));
    // The writer's row groups are a few frames each, so reads cross several of them.
    let groups = SerializedFileReader::new(File::open(&file).unwrap())
        .unwrap()
        .metadata()
        .num_row_groups();
    assert!(groups >= 5, "{groups} row groups");
    let want = parquet_images(&file);
    assert_eq!(want.len(), cams.len());

    let store = Store::open(&store_dir).unwrap();
    // The default blocks (whole row groups here), one-image blocks (every read seeks inside a
    // row group) and blocks of a few rows; in order, reversed and in parallel.
    for block in [None, Some(1), Some(3 * 1500)] {
        let mut reader = ImageReader::new(&store, None);
        if let Some(b) = block {
            reader = reader.with_block_bytes(b);
        }
        for c in &cams {
            assert_eq!(
                reader.bytes(c).unwrap(),
                want[&key_of(c)],
                "{} (block {block:?})",
                c.camera_frame_id
            );
        }
        cams.par_iter().rev().for_each(|c| {
            assert_eq!(reader.bytes(c).unwrap(), want[&key_of(c)]);
            let img = reader.rgb(c).unwrap();
            assert_eq!((img.width(), img.height()), (64, 36));
            assert_eq!(
                (img.width(), img.height()),
                (c.width, c.height),
                "{}",
                c.camera_frame_id
            );
        });
    }
    // The release names: real .jpg names, one per image.
    let names: std::collections::BTreeSet<String> =
        cams.iter().map(ImageReader::file_name).collect();
    assert_eq!(names.len(), cams.len());
    let seg = &cams[0].scene_id;
    let front = cams.iter().find(|c| c.camera == "FRONT").unwrap();
    assert_eq!(
        ImageReader::file_name(front),
        format!("camera_image/{seg}/{}_FRONT.jpg", key_of(front).0)
    );
    // The old one-off reader agrees.
    assert_eq!(
        drivegen::ingest::waymo::image::read_jpeg(&root, front).unwrap(),
        want[&key_of(front)]
    );
}

#[test]
fn missing_segments_and_rows_name_the_file_and_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let (root, store_dir) = waymo_store(dir.path(), "1", "32", "18");
    let cams = cameras(&store_dir);
    let store = Store::open(&store_dir).unwrap();
    let reader = ImageReader::new(&store, None);

    let mut no_row = cams[0].clone();
    no_row.camera_frame_id = format!("{}/42/FRONT", no_row.scene_id);
    let e = reader.bytes(&no_row).unwrap_err().report().to_string();
    assert!(e.contains(&no_row.camera_frame_id), "{e}");
    assert!(e.contains(&no_row.image_path), "{e}");
    assert!(e.contains("no image row"), "{e}");

    let mut bad_id = cams[0].clone();
    bad_id.camera_frame_id = "not-an-id".into();
    let e = reader.bytes(&bad_id).unwrap_err().report().to_string();
    assert!(e.contains("not-an-id"), "{e}");

    let moved = dir.path().join("elsewhere");
    std::fs::create_dir_all(&moved).unwrap();
    let reader = ImageReader::new(&store, Some(&moved));
    let e = reader.rgb(&cams[0]).unwrap_err().report().to_string();
    assert!(e.contains(&cams[0].camera_frame_id), "{e}");
    assert!(
        e.contains(&moved.join(&cams[0].image_path).display().to_string()),
        "{e}"
    );
    // The right root still works with the same store.
    let reader = ImageReader::new(&store, Some(&root));
    assert!(!reader.bytes(&cams[0]).unwrap().is_empty());
}

#[test]
fn nuscenes_images_are_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("nusc");
    let store_dir = dir.path().join("store");
    drivegen(&[
        os("synth"),
        os("--scenes"),
        os("1"),
        os("--duration"),
        os("1"),
        os("--no-sweeps"),
        os("--width"),
        os("48"),
        os("--height"),
        os("27"),
        os("--out"),
        root.as_os_str(),
    ]);
    drivegen(&[
        os("ingest"),
        os("--root"),
        root.as_os_str(),
        os("--out"),
        store_dir.as_os_str(),
    ]);
    let cams = cameras(&store_dir);
    assert!(!cams.is_empty());
    let reader = ImageReader::new(&Store::open(&store_dir).unwrap(), None);
    for c in &cams {
        let on_disk = std::fs::read(root.join(&c.image_path)).unwrap();
        assert_eq!(reader.bytes(c).unwrap(), on_disk, "{}", c.image_path);
        assert_eq!(ImageReader::file_name(c), c.image_path);
        let img = reader.rgb(c).unwrap();
        assert_eq!((img.width(), img.height()), (48, 27));
    }
    let mut gone = cams[0].clone();
    gone.image_path = "samples/CAM_FRONT/missing.jpg".into();
    let e = reader.bytes(&gone).unwrap_err().report().to_string();
    assert!(
        e.contains("missing.jpg") && e.contains(&gone.camera_frame_id),
        "{e}"
    );
}

fn arrow_strings(path: &Path, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for b in FileReader::try_new(File::open(path).unwrap(), None).unwrap() {
        let b = b.unwrap();
        let c = arrow::compute::cast(b.column_by_name(name).unwrap(), &DataType::Utf8).unwrap();
        let c = c.as_string::<i32>();
        out.extend((0..c.len()).map(|i| c.value(i).to_string()));
    }
    out
}

fn arrow_lists(path: &Path, name: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for b in FileReader::try_new(File::open(path).unwrap(), None).unwrap() {
        let b = b.unwrap();
        let l = b.column_by_name(name).unwrap().as_list::<i32>();
        for i in 0..l.len() {
            let v = l.value(i);
            let v = v.as_string::<i32>();
            out.push((0..v.len()).map(|k| v.value(k).to_string()).collect());
        }
    }
    out
}

fn files_under(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files_under(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

#[test]
fn stages_open_waymo_images() {
    let dir = tempfile::tempdir().unwrap();
    let (root, store_dir) = waymo_store(dir.path(), "2", "320", "180");
    let want = {
        let cams = cameras(&store_dir);
        let file = root.join(&cams[0].image_path);
        let images = parquet_images(&file);
        cams.iter()
            .map(|c| (c.camera_frame_id.clone(), images[&key_of(c)].clone()))
            .collect::<HashMap<_, _>>()
    };
    let vis = dir.path().join("vis.arrow");
    drivegen(&[
        os("visibility"),
        os("--device"),
        os("cpu"),
        os("--store"),
        store_dir.as_os_str(),
        os("--out"),
        vis.as_os_str(),
    ]);

    // Set-of-Mark: marked PNGs drawn on the segment's own images.
    let som = dir.path().join("som");
    let said = drivegen(&[
        os("som"),
        os("--device"),
        os("cpu"),
        os("--store"),
        store_dir.as_os_str(),
        os("--visibility"),
        vis.as_os_str(),
        os("--out"),
        som.as_os_str(),
    ]);
    let marked_ids = arrow_strings(&som.join("marks.arrow"), "camera_frame_id");
    assert!(!marked_ids.is_empty(), "no marks: {said}");
    let mut pngs = Vec::new();
    files_under(&som, "png", &mut pngs);
    assert!(!pngs.is_empty());
    let unique: std::collections::BTreeSet<&String> = marked_ids.iter().collect();
    assert_eq!(pngs.len(), unique.len());
    // Away from the marks the pixels are the source JPEG's.
    let id = unique.iter().next().unwrap();
    let png = pngs
        .iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .contains(&id.replace('/', "_"))
        })
        .unwrap_or(&pngs[0]);
    let marked = image::open(png).unwrap().to_rgb8();
    assert_eq!(marked.dimensions(), (320, 180));
    let best = want
        .values()
        .map(|jpeg| {
            let src = image::load_from_memory(jpeg).unwrap().to_rgb8();
            src.pixels()
                .zip(marked.pixels())
                .filter(|(a, b)| a == b)
                .count()
        })
        .max()
        .unwrap();
    assert!(best * 2 > 320 * 180, "{best} pixels equal the source");

    // Corruptions: real, uniquely named JPEGs that the questions point at.
    let cor = dir.path().join("corrupt");
    drivegen(&[
        os("corrupt"),
        os("--store"),
        store_dir.as_os_str(),
        os("--out"),
        cor.as_os_str(),
        os("--corruption"),
        os("brightness,camera_crash"),
        os("--device"),
        os("cpu"),
        os("--frames-per-scene"),
        os("2"),
    ]);
    let outs = arrow_strings(&cor.join("corruptions.arrow"), "output_path");
    let ids = arrow_strings(&cor.join("corruptions.arrow"), "image_id");
    assert_eq!(outs.len(), 2 * 5 * 2);
    let distinct: std::collections::BTreeSet<&String> = outs.iter().collect();
    assert_eq!(distinct.len(), outs.len());
    let corr = arrow_strings(&cor.join("corruptions.arrow"), "corruption");
    let sev = arrow_strings(&cor.join("corruptions.arrow"), "severity");
    for (i, (o, id)) in outs.iter().zip(&ids).enumerate() {
        let (seg_ts, cam) = id.rsplit_once('/').unwrap();
        let (seg, ts) = seg_ts.rsplit_once('/').unwrap();
        assert_eq!(
            *o,
            format!("{}/{}/camera_image/{seg}/{ts}_{cam}.jpg", corr[i], sev[i])
        );
        let img = image::open(cor.join(o)).unwrap();
        assert_eq!((img.width(), img.height()), (320, 180), "{o}");
    }
    let paths = arrow_lists(&cor.join("corruption_qa.arrow"), "image_paths");
    assert!(!paths.is_empty());
    for p in paths.iter().flatten() {
        assert!(cor.join(p).is_file(), "{p} does not resolve");
    }

    // MetaVQA: marked images from the same source.
    let mv = dir.path().join("metavqa");
    drivegen(&[
        os("metavqa"),
        os("--device"),
        os("cpu"),
        os("--store"),
        store_dir.as_os_str(),
        os("--visibility"),
        vis.as_os_str(),
        os("--out"),
        mv.as_os_str(),
    ]);
    let mut mv_pngs = Vec::new();
    files_under(&mv, "png", &mut mv_pngs);
    assert!(!mv_pngs.is_empty());
}
