//! `drivegen som` end to end on a tiny synthetic corpus.

use super::draw::read_label;
use super::*;

fn drivegen(args: &[&std::ffi::OsStr]) -> String {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_drivegen"))
        .env("DRIVEGEN_PROGRESS", "0")
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "drivegen {args:?} failed ({:?}):\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The columns of an Arrow IPC file by name, every batch concatenated, as strings / numbers.
pub(super) fn read_table(path: &std::path::Path) -> HashMap<String, Vec<String>> {
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let reader =
        arrow::ipc::reader::FileReader::try_new(std::fs::File::open(path).unwrap(), None).unwrap();
    let mut cols: HashMap<String, Vec<String>> = HashMap::new();
    for batch in reader {
        let batch = batch.unwrap();
        for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
            let fmt = ArrayFormatter::try_new(c.as_ref(), &FormatOptions::default()).unwrap();
            let v = cols.entry(f.name().clone()).or_default();
            for i in 0..c.len() {
                v.push(fmt.value(i).to_string());
            }
        }
    }
    cols
}

#[test]
fn cli_marks_a_tiny_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let p = |s: &str| dir.path().join(s);
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    let (src, store, vis) = (p("src"), p("store"), p("vis.arrow"));
    drivegen(&[
        os("synth"),
        os("--out"),
        src.as_os_str(),
        os("--scenes"),
        os("1"),
        os("--duration"),
        os("3"),
        os("--no-sweeps"),
        os("--width"),
        os("400"),
        os("--height"),
        os("225"),
    ]);
    drivegen(&[
        os("ingest"),
        os("--source"),
        os("nuscenes"),
        os("--root"),
        src.as_os_str(),
        os("--out"),
        store.as_os_str(),
    ]);
    drivegen(&[
        os("visibility"),
        os("--device"),
        os("cpu"),
        os("--store"),
        store.as_os_str(),
        os("--out"),
        vis.as_os_str(),
    ]);
    let som = |out: &std::path::Path, device: &'static str| {
        drivegen(&[
            os("som"),
            os("--device"),
            os(device),
            os("--store"),
            store.as_os_str(),
            os("--visibility"),
            vis.as_os_str(),
            os("--out"),
            out.as_os_str(),
        ])
    };
    let out = p("som");
    let said = som(&out, "cpu");
    assert!(said.contains("marked images"), "{said}");
    let marks = read_table(&out.join("marks.arrow"));
    let v = read_table(&vis);
    let n = marks["mark"].len();
    assert!(n >= 5, "only {n} marks");
    // Every kept visibility row is marked, once, with the anchor the visibility table gives it
    // (same rules: the built-in [anchor] section, modal box).
    let kept: Vec<usize> = (0..v["kept"].len())
        .filter(|&i| v["kept"][i] == "true")
        .collect();
    assert_eq!(kept.len(), n);
    for (r, &i) in kept.iter().enumerate() {
        assert_eq!(marks["annotation_id"][r], v["annotation_id"][i]);
        assert_eq!(marks["camera_frame_id"][r], v["camera_frame_id"][i]);
        assert_eq!(marks["anchor_x"][r], v["anchor_x"][i], "row {r}");
        assert_eq!(marks["anchor_y"][r], v["anchor_y"][i], "row {r}");
    }
    let draw = SomConfig::default_config().unwrap().draw;
    let u = |c: &str, r: usize| -> u32 { marks[c][r].parse().unwrap() };
    let mut by_image: HashMap<String, Vec<usize>> = HashMap::new();
    for (r, id) in marks["camera_frame_id"].iter().enumerate() {
        by_image.entry(id.clone()).or_default().push(r);
    }
    for (image, rows) in &by_image {
        let png = out
            .join(&marks["scene_id"][rows[0]])
            .join(format!("{image}.png"));
        let img = image::open(&png).unwrap();
        assert_eq!(img.color(), image::ColorType::Rgb8, "{png:?}");
        let img = img.to_rgb8();
        let (w, h) = img.dimensions();
        assert_eq!((w, h), (400, 225));
        let px: Vec<u32> = img
            .pixels()
            .map(|q| pack([q.0[0], q.0[1], q.0[2], 255]))
            .collect();
        for (k, &r) in rows.iter().enumerate() {
            // Marks are numbered 1..=n per image in table order.
            assert_eq!(u("mark", r), k as u32 + 1, "{png:?}");
            let label = [
                u("label_x0", r),
                u("label_y0", r),
                u("label_x1", r),
                u("label_y1", r),
            ];
            assert!(label[2] <= w && label[3] <= h);
            let rgb = u("colour", r);
            assert_eq!(rgb, mark_colour(k as u32 + 1));
            // The number can be read back from the written PNG.
            let colour = pack([(rgb >> 16) as u8, (rgb >> 8) as u8, rgb as u8, 255]);
            assert_eq!(
                read_label(&px, w, label, colour, &draw),
                (k + 1).to_string(),
                "{png:?}"
            );
            for &q in rows {
                if q == r {
                    continue;
                }
                let (ax, ay) = (
                    marks["anchor_x"][q].parse::<f64>().unwrap() - 0.5,
                    marks["anchor_y"][q].parse::<f64>().unwrap() - 0.5,
                );
                let (ax, ay) = (ax as u32, ay as u32);
                assert!(
                    !(label[0] <= ax && ax < label[2] && label[1] <= ay && ay < label[3]),
                    "{png:?}: label {} covers anchor of {}",
                    k + 1,
                    u("mark", q)
                );
                let o = [
                    u("label_x0", q),
                    u("label_y0", q),
                    u("label_x1", q),
                    u("label_y1", q),
                ];
                assert!(
                    label[2] <= o[0] || o[2] <= label[0] || label[3] <= o[1] || o[3] <= label[1],
                    "{png:?}: labels overlap"
                );
            }
        }
    }
    let pngs: usize = std::fs::read_dir(out.join(&marks["scene_id"][0]))
        .unwrap()
        .count();
    assert_eq!(pngs, by_image.len());
    // The GPU path writes the same bytes.
    if gpu().is_some() {
        let out_gpu = p("som_gpu");
        som(&out_gpu, "gpu");
        assert_eq!(
            std::fs::read(out.join("marks.arrow")).unwrap(),
            std::fs::read(out_gpu.join("marks.arrow")).unwrap()
        );
        for image in by_image.keys() {
            let f = std::path::Path::new(&marks["scene_id"][0]).join(format!("{image}.png"));
            assert!(
                std::fs::read(out.join(&f)).unwrap() == std::fs::read(out_gpu.join(&f)).unwrap(),
                "{f:?} differs between CPU and GPU"
            );
        }
    }
    // The written schema is the published one.
    let reader = arrow::ipc::reader::FileReader::try_new(
        std::fs::File::open(out.join("marks.arrow")).unwrap(),
        None,
    )
    .unwrap();
    assert_eq!(reader.schema(), drivegen::som::stage::marks_schema());
    // With `box = "amodal"` the boxes are the projected boxes clamped to the image, pixel edges
    // rounded outwards; with the default they are the modal boxes of the visibility table.
    for (r, &i) in kept.iter().enumerate() {
        for (c, m) in ["x0", "y0", "x1", "y1"]
            .iter()
            .zip(["modal_x0", "modal_y0", "modal_x1", "modal_y1"])
        {
            let want: f64 = v[m][i].parse().unwrap();
            assert_eq!(f64::from(u(&format!("box_{c}"), r)), want, "row {r}");
        }
    }
    let cfg_path = p("amodal.toml");
    std::fs::write(
        &cfg_path,
        drivegen::som::config::DEFAULT_TOML.replace("box = \"modal\"", "box = \"amodal\""),
    )
    .unwrap();
    let out_amodal = p("som_amodal");
    // Its anchors are placed by a visibility table made under the same config.
    let vis_amodal = p("vis_amodal.arrow");
    drivegen(&[
        os("visibility"),
        os("--device"),
        os("cpu"),
        os("--som-config"),
        cfg_path.as_os_str(),
        os("--store"),
        store.as_os_str(),
        os("--out"),
        vis_amodal.as_os_str(),
    ]);
    drivegen(&[
        os("som"),
        os("--device"),
        os("cpu"),
        os("--config"),
        cfg_path.as_os_str(),
        os("--store"),
        store.as_os_str(),
        os("--visibility"),
        vis_amodal.as_os_str(),
        os("--out"),
        out_amodal.as_os_str(),
    ]);
    let am = read_table(&out_amodal.join("marks.arrow"));
    for (r, &i) in kept.iter().enumerate() {
        let f = |c: &str| -> f64 { v[c][i].parse().unwrap() };
        let want = [
            f("amodal_x0").floor().clamp(0.0, 400.0),
            f("amodal_y0").floor().clamp(0.0, 225.0),
            f("amodal_x1").ceil().clamp(0.0, 400.0),
            f("amodal_y1").ceil().clamp(0.0, 225.0),
        ];
        for (c, want) in ["x0", "y0", "x1", "y1"].iter().zip(want) {
            let got: f64 = am[&format!("box_{c}")][r].parse().unwrap();
            assert_eq!(got, want, "row {r} box_{c}");
        }
    }
    // An unknown scene is a usage error naming it.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_drivegen"))
        .args(["som", "--device", "cpu", "--scene", "nope", "--store"])
        .arg(&store)
        .arg("--visibility")
        .arg(&vis)
        .arg("--out")
        .arg(p("x"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nope"));
}
