//! `visibility::run` end to end on the built-in synthetic corpus: the table, its invariants and
//! thresholds, determinism, ID maps, unusable store rows, and the projected corners against the
//! official nuscenes-devkit's `view_points`.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use arrow::array::{Array, BooleanArray, Float64Array, ListArray, StringArray, UInt32Array};
use arrow::ipc::reader::FileReader;
use common::gpu::gpu;
use common::oracle;
use drivegen::config::StageConfig;
use drivegen::store::rejects::RejectLog;
use drivegen::store::schema::schema_json;
use drivegen::store::{ObjectRow, Store, StoreWriter};
use drivegen::visibility::config::VisibilityConfig;
use drivegen::visibility::filters::category_matches;
use drivegen::visibility::raster::{raster_cpu, CpuRasteriser, RasterJob, RasterOut, Rasteriser};
use drivegen::visibility::GpuRasteriser;
use drivegen::visibility::{self, rejects_path};

/// Writes the synthetic corpus (1 scene, 6 s, keyframes only, 800×450) and ingests it.
/// Returns (dataroot, version, store).
fn corpus(dir: &Path) -> (PathBuf, String, PathBuf) {
    crate::common::synth_store(dir, 1, 6.0, (800, 450))
}

/// One row of the written table.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    scene_id: String,
    frame_idx: u32,
    camera: String,
    camera_frame_id: String,
    annotation_id: String,
    corners: Vec<Option<f64>>,
    amodal: [f64; 4],
    truncation: f64,
    projected: u32,
    visible: u32,
    fraction: f64,
    modal: [Option<f64>; 4],
    distance_m: f64,
    anchor: [Option<f64>; 2],
    kept: bool,
    reason: Option<String>,
}

/// The rows of a written table, and its number of record batches.
fn read_rows(path: &Path) -> (Vec<Row>, usize) {
    let r = FileReader::try_new(File::open(path).unwrap(), None).unwrap();
    let published: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/visibility/visibility.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        schema_json("visibility", &r.schema()),
        published,
        "written schema vs schemas/visibility/visibility.json"
    );
    let mut rows = Vec::new();
    let mut batches = 0;
    for b in r {
        let b = b.unwrap();
        batches += 1;
        let s = |n: &str| {
            b.column_by_name(n)
                .unwrap()
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap()
                .clone()
        };
        let f = |n: &str| {
            b.column_by_name(n)
                .unwrap()
                .as_any()
                .downcast_ref::<Float64Array>()
                .unwrap()
                .clone()
        };
        let u = |n: &str| {
            b.column_by_name(n)
                .unwrap()
                .as_any()
                .downcast_ref::<UInt32Array>()
                .unwrap()
                .clone()
        };
        let opt = |a: &Float64Array, i: usize| a.is_valid(i).then(|| a.value(i));
        let corners = b
            .column_by_name("corners_px")
            .unwrap()
            .as_any()
            .downcast_ref::<ListArray>()
            .unwrap()
            .clone();
        let kept = b
            .column_by_name("kept")
            .unwrap()
            .as_any()
            .downcast_ref::<BooleanArray>()
            .unwrap()
            .clone();
        let (sid, cam, cfi, ann, reason) = (
            s("scene_id"),
            s("camera"),
            s("camera_frame_id"),
            s("annotation_id"),
            s("reject_reason"),
        );
        let am = ["x0", "y0", "x1", "y1"].map(|c| f(&format!("amodal_{c}")));
        let mo = ["x0", "y0", "x1", "y1"].map(|c| f(&format!("modal_{c}")));
        let (tr, fr, dist, ax, ay) = (
            f("truncation"),
            f("visible_fraction"),
            f("distance_m"),
            f("anchor_x"),
            f("anchor_y"),
        );
        let (fi, pp, vp) = (u("frame_idx"), u("projected_pixels"), u("visible_pixels"));
        for i in 0..b.num_rows() {
            let c = corners.value(i);
            let c = c.as_any().downcast_ref::<Float64Array>().unwrap();
            rows.push(Row {
                scene_id: sid.value(i).into(),
                frame_idx: fi.value(i),
                camera: cam.value(i).into(),
                camera_frame_id: cfi.value(i).into(),
                annotation_id: ann.value(i).into(),
                corners: (0..c.len()).map(|k| opt(c, k)).collect(),
                amodal: am.each_ref().map(|a| a.value(i)),
                truncation: tr.value(i),
                projected: pp.value(i),
                visible: vp.value(i),
                fraction: fr.value(i),
                modal: mo.each_ref().map(|a| opt(a, i)),
                distance_m: dist.value(i),
                anchor: [opt(&ax, i), opt(&ay, i)],
                kept: kept.value(i),
                reason: reason.is_valid(i).then(|| reason.value(i).to_string()),
            });
        }
    }
    (rows, batches)
}

/// The CPU reference, fed one image at a time (as a GPU implementation might be configured).
struct OneAtATime;

impl Rasteriser for OneAtATime {
    fn name(&self) -> &str {
        "one-at-a-time"
    }
    fn raster(&self, job: &RasterJob<'_>) -> drivegen::Result<RasterOut> {
        raster_cpu(job)
    }
    fn batch_size(&self) -> usize {
        1
    }
}

#[test]
fn synthetic_corpus_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, store) = corpus(dir.path());
    let a = dir.path().join("a.arrow");
    let b = dir.path().join("b.arrow");
    let sa =
        visibility::run(&drivegen::visibility::Options::new(&store, &a, None).unwrap()).unwrap();
    let sb =
        visibility::run(&drivegen::visibility::Options::new(&store, &b, None).unwrap()).unwrap();
    assert_eq!(
        std::fs::read(&a).unwrap(),
        std::fs::read(&b).unwrap(),
        "two runs differ"
    );
    assert_eq!((sa.rows, sa.kept), (sb.rows, sb.kept));
    eprintln!("{sa}");
    assert!(RejectLog::read(&rejects_path(&a)).unwrap().is_empty());

    let (rows, batches) = read_rows(&a);
    assert_eq!(batches, 1, "one record batch per scene");
    assert_eq!(rows.len() as u64, sa.rows);
    assert!(!rows.is_empty());
    assert!(sa.kept > 0, "{sa}");
    assert!(sa.rows > sa.kept, "{sa}");

    let st = Store::open(&store).unwrap();
    let objects: HashMap<String, ObjectRow> = st
        .read_all::<ObjectRow>(drivegen::store::Table::Objects)
        .unwrap()
        .into_iter()
        .map(|o| (o.annotation_id.clone(), o))
        .collect();
    let cfg = VisibilityConfig::default_config().unwrap().filters;
    let key = |r: &Row| {
        (
            r.scene_id.clone(),
            r.frame_idx,
            r.camera.clone(),
            r.camera_frame_id.clone(),
            r.annotation_id.clone(),
        )
    };
    for w in rows.windows(2) {
        assert!(
            key(&w[0]) < key(&w[1]),
            "rows out of order: {:?} then {:?}",
            key(&w[0]),
            key(&w[1])
        );
    }
    let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
    for r in &rows {
        let o = &objects[&r.annotation_id];
        assert_eq!(o.frame_idx, r.frame_idx);
        assert_eq!(r.corners.len(), 16);
        for k in 0..8 {
            assert_eq!(r.corners[2 * k].is_some(), r.corners[2 * k + 1].is_some());
        }
        assert!(
            r.amodal[0] < r.amodal[2] && r.amodal[1] < r.amodal[3],
            "{r:?}"
        );
        assert!(
            (0.0..=1.0).contains(&r.truncation) && r.truncation > 0.0,
            "{r:?}"
        );
        assert!(r.visible <= r.projected && r.projected <= 800 * 450);
        let frac = if r.projected == 0 {
            0.0
        } else {
            f64::from(r.visible) / f64::from(r.projected)
        };
        assert_eq!(r.fraction, frac);
        assert_eq!(r.modal[0].is_some(), r.visible > 0);
        assert_eq!(r.anchor[0].is_some(), r.visible > 0);
        if let [Some(x0), Some(y0), Some(x1), Some(y1)] = r.modal {
            assert!(
                0.0 <= x0 && x0 < x1 && x1 <= 800.0 && 0.0 <= y0 && y0 < y1 && y1 <= 450.0,
                "{r:?}"
            );
            // Pixel centres; large objects' anchors lie in their modal box, small ones' in the
            // 20-px ring around it.
            let (ax, ay) = (r.anchor[0].unwrap(), r.anchor[1].unwrap());
            assert_eq!((ax.fract(), ay.fract()), (0.5, 0.5), "{r:?}");
            let m = if r.visible >= 1600 { 0.0 } else { 20.0 };
            assert!(
                x0 - m <= ax && ax <= x1 + m && y0 - m <= ay && ay <= y1 + m,
                "{r:?}"
            );
            // The visible pixels fit in the modal box, the modal box in the amodal one.
            assert!(f64::from(r.visible) <= (x1 - x0) * (y1 - y0));
            assert!(
                x0 >= r.amodal[0].floor() && x1 <= r.amodal[2].ceil() + 1.0,
                "{r:?}"
            );
        }
        assert_eq!(r.kept, r.reason.is_none());
        if let Some(why) = &r.reason {
            *reasons.entry(why.clone()).or_default() += 1;
        }
        if r.kept {
            assert!(
                r.visible >= cfg.min_visible_pixels && r.fraction >= cfg.min_visible_fraction,
                "{r:?}"
            );
            assert!(
                r.truncation >= cfg.min_truncation && r.distance_m <= cfg.max_distance_m,
                "{r:?}"
            );
            assert!(o.num_lidar_pts >= cfg.min_lidar_points, "{r:?}");
            assert!(
                o.visibility_bin
                    .is_some_and(|b| cfg.visibility_bins.contains(&b)),
                "{r:?}"
            );
            assert!(!cfg
                .ignored_categories
                .iter()
                .any(|p| category_matches(p, &o.category)));
        }
    }
    assert_eq!(reasons, sa.rejected);
    assert!(reasons.len() >= 3, "only {reasons:?}");

    // The ID maps agree with the counts: in each image, value k + 1 marks the k-th row's pixels.
    let maps = dir.path().join("maps");
    let cfg = VisibilityConfig::default_config().unwrap();
    let c = dir.path().join("c.arrow");
    visibility::run(&drivegen::visibility::Options {
        store: (&store).into(),
        out: (&c).into(),
        config: cfg.clone(),
        rasteriser: &CpuRasteriser,
        id_maps: Some(maps.clone()),
        anchor: drivegen::visibility::anchor::AnchorRules::built_in().unwrap(),
    })
    .unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&c).unwrap());
    // Another rasteriser behind the seam (one image per batch) on one thread: the same bytes.
    let d = dir.path().join("d.arrow");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| {
        visibility::run(&drivegen::visibility::Options {
            store: (&store).into(),
            out: (&d).into(),
            config: cfg.clone(),
            rasteriser: &OneAtATime,
            id_maps: None,
            anchor: drivegen::visibility::anchor::AnchorRules::built_in().unwrap(),
        })
    })
    .unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&d).unwrap());
    // The GPU z-buffer and distance transform: the same bytes.
    if let Some(gpu) = gpu() {
        let e = dir.path().join("e.arrow");
        let raster = GpuRasteriser::new(gpu).unwrap();
        visibility::run(&drivegen::visibility::Options {
            store: (&store).into(),
            out: (&e).into(),
            config: cfg.clone(),
            rasteriser: &raster,
            id_maps: None,
            anchor: drivegen::visibility::anchor::AnchorRules::built_in().unwrap(),
        })
        .unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&e).unwrap());
    }
    let mut by_image: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        by_image.entry(&r.camera_frame_id).or_default().push(r);
    }
    let (img_id, img_rows) = by_image
        .iter()
        .max_by_key(|(_, v)| v.iter().filter(|r| r.visible > 0).count())
        .unwrap();
    let png = maps
        .join(&img_rows[0].scene_id)
        .join(format!("{img_id}.png"));
    let img = image::open(&png).unwrap().into_luma16();
    assert_eq!(img.dimensions(), (800, 450));
    let mut counts = vec![0u32; img_rows.len() + 1];
    for p in img.pixels() {
        counts[p.0[0] as usize] += 1;
    }
    for (k, r) in img_rows.iter().enumerate() {
        assert_eq!(counts[k + 1], r.visible, "{png:?} object {k}");
    }
    // The anchors of the large objects, from the map alone: the anchor pixel is the object's,
    // and no pixel of the object is farther from the nearest non-object point (another value,
    // the 4-px border band, or outside the image) than it; ties go to the first in raster order.
    let mut checked = 0;
    for (k, r) in img_rows.iter().enumerate() {
        if r.visible < 1600 {
            continue;
        }
        let want = brute_anchor(&img, k as u16 + 1, 4);
        let got = (r.anchor[0].unwrap() - 0.5, r.anchor[1].unwrap() - 0.5);
        assert_eq!(
            (f64::from(want.0), f64::from(want.1)),
            got,
            "{png:?} object {k}"
        );
        checked += 1;
    }
    assert!(checked >= 1, "no large object in {png:?}");
}

/// The interior anchor of the pixels valued `v`, by brute force: a nearest non-mask point is
/// always 4-adjacent to a mask pixel (one step from it towards the pixel is nearer, so in the
/// mask), so only those candidates are searched.
fn brute_anchor(
    img: &image::ImageBuffer<image::Luma<u16>, Vec<u16>>,
    v: u16,
    border: i64,
) -> (u32, u32) {
    let (w, h) = (i64::from(img.width()), i64::from(img.height()));
    let inside = |i: i64, j: i64| {
        i >= border
            && j >= border
            && i + border < w
            && j + border < h
            && img.get_pixel(i as u32, j as u32).0[0] == v
    };
    let mut mask = Vec::new();
    let mut edge = std::collections::BTreeSet::new();
    for j in 0..h {
        for i in 0..w {
            if !inside(i, j) {
                continue;
            }
            mask.push((i, j));
            for (di, dj) in [(-1, 0), (1, 0), (0, -1), (0, 1)] {
                if !inside(i + di, j + dj) {
                    edge.insert((i + di, j + dj));
                }
            }
        }
    }
    let mut best = (0i64, (0u32, 0u32));
    for &(i, j) in &mask {
        let d = edge
            .iter()
            .map(|&(x, y)| (x - i) * (x - i) + (y - j) * (y - j))
            .min()
            .unwrap();
        // Raster order: strictly greater keeps the first.
        if d > best.0 {
            best = (d, (i as u32, j as u32));
        }
    }
    best.1
}

#[test]
fn unusable_store_rows_are_recorded_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, store) = corpus(dir.path());
    let st = Store::open(&store).unwrap();
    let mut scene = st.scenes().unwrap().next().unwrap().unwrap();
    let keyframe = scene.cameras.iter().position(|c| c.is_keyframe).unwrap();
    scene.cameras[keyframe].fx = f64::NAN;
    let big = scene.cameras.iter().rposition(|c| c.is_keyframe).unwrap();
    scene.cameras[big].width = 20000;
    scene.objects[0].size_wlh[1] = -1.0;
    scene.objects[1].q = [0.0; 4];
    scene.objects[2].center[0] = f64::INFINITY;
    let bad = dir.path().join("bad");
    let mut w = StoreWriter::create(&bad, st.meta().clone()).unwrap();
    w.write_scene(&scene).unwrap();
    w.finish(&RejectLog::new()).unwrap();
    let out = dir.path().join("bad.arrow");
    let s =
        visibility::run(&drivegen::visibility::Options::new(&bad, &out, None).unwrap()).unwrap();
    assert_eq!((s.invalid_cameras, s.invalid_objects), (2, 3), "{s}");
    assert!(s.rows > 0);
    let rejects = RejectLog::read(&rejects_path(&out)).unwrap();
    assert_eq!(rejects.len(), 5);
    assert!(rejects
        .iter()
        .all(|r| r.stage == "visibility" && r.scene_id.is_some()));
    assert!(rejects.iter().any(|r| r.item.as_deref()
        == Some(scene.objects[0].annotation_id.as_str())
        && r.reason.contains("size")));
    let (rows, _) = read_rows(&out);
    assert!(rows.iter().all(
        |r| r.camera_frame_id != scene.cameras[keyframe].camera_frame_id
            && r.annotation_id != scene.objects[0].annotation_id
    ));
    // A config file replaces the default; a broken one is an error, not a panic.
    let cfg = dir.path().join("vis.toml");
    std::fs::write(
        &cfg,
        drivegen::visibility::config::DEFAULT_TOML
            .replace("min_visible_pixels = 1200", "min_visible_pixels = 0"),
    )
    .unwrap();
    let s0 = visibility::run(
        &drivegen::visibility::Options::new(&bad, dir.path().join("lenient.arrow"), Some(&cfg))
            .unwrap(),
    )
    .unwrap();
    assert!(s0.kept >= s.kept);
    std::fs::write(&cfg, "[projection]\nnear_m = 0.1\n").unwrap();
    assert!(
        drivegen::visibility::Options::new(&bad, dir.path().join("x.arrow"), Some(&cfg)).is_err()
    );
}

#[test]
fn corners_match_devkit_view_points() {
    let Some(py) = oracle::python("devkit") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (root, version, store) = corpus(dir.path());
    let out = dir.path().join("vis.arrow");
    visibility::run(&drivegen::visibility::Options::new(&store, &out, None).unwrap()).unwrap();
    let o = Command::new(py)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles/devkit_corners.py"))
        .arg(&root)
        .arg(&version)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "devkit: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dk: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let (rows, _) = read_rows(&out);
    let (mut compared, mut max_err, mut behind) = (0usize, 0f64, 0usize);
    for r in &rows {
        let d = &dk[&r.camera_frame_id][&r.annotation_id];
        assert!(
            d.is_object(),
            "the devkit has no box {} in image {}",
            r.annotation_id,
            r.camera_frame_id
        );
        for k in 0..8 {
            let z = d["z"][k].as_f64().unwrap();
            match (r.corners[2 * k], r.corners[2 * k + 1]) {
                (Some(u), Some(v)) => {
                    assert!(
                        z >= 0.1 - 1e-9,
                        "corner {k} of {} has devkit depth {z}",
                        r.annotation_id
                    );
                    let (du, dv) = (d["u"][k].as_f64().unwrap(), d["v"][k].as_f64().unwrap());
                    let err = (u - du).abs().max((v - dv).abs());
                    assert!(
                        err < 1e-3,
                        "{} in {} corner {k}: ({u}, {v}) vs devkit ({du}, {dv})",
                        r.annotation_id,
                        r.camera_frame_id
                    );
                    max_err = max_err.max(err);
                    compared += 1;
                }
                (None, None) => {
                    assert!(
                        z < 0.1 + 1e-9,
                        "corner {k} of {} is null but the devkit puts it at depth {z}",
                        r.annotation_id
                    );
                    behind += 1;
                }
                _ => panic!("half a corner"),
            }
        }
    }
    eprintln!("{compared} corners agree with the devkit (max error {max_err:.2e} px); {behind} behind the near plane");
    assert!(compared > 100, "only {compared} corners compared");
}
