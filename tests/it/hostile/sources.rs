//! Bad records in the four source formats: each ends in a clear error or a recorded reject.

use super::*;

pub(super) fn nuscenes_cases() -> Vec<Case> {
    let ing = ingest("nuscenes");
    let out = ["store"];
    let mut v = Vec::new();
    for table in [
        "scene",
        "sample",
        "sample_data",
        "ego_pose",
        "calibrated_sensor",
        "sensor",
        "sample_annotation",
        "instance",
        "category",
        "log",
    ] {
        let file = format!("{table}.json");
        let f: &'static str = Box::leak(file.clone().into_boxed_str());
        v.push(case(
            format!("nuscenes {table} missing"),
            "nuscenes",
            move |t| std::fs::remove_file(nusc_table(t, table)).unwrap(),
            &ing,
            &out,
            fails(&[f]),
        ));
        v.push(case(
            format!("nuscenes {table} truncated"),
            "nuscenes",
            move |t| truncate_half(&nusc_table(t, table)),
            &ing,
            &out,
            fails(&[f]),
        ));
        v.push(case(
            format!("nuscenes {table} not a list"),
            "nuscenes",
            move |t| std::fs::write(nusc_table(t, table), b"{\"token\": 1}").unwrap(),
            &ing,
            &out,
            fails(&[f]),
        ));
        v.push(case(
            format!("nuscenes {table} with a byte-order mark"),
            "nuscenes",
            move |t| prepend_bom(&nusc_table(t, table)),
            &ing,
            &out,
            Expect::Succeeds,
        ));
    }
    v.push(case(
        "nuscenes filename absolute",
        "nuscenes",
        set_front_filename(|t, _| t.join("outside.jpg").to_string_lossy().into_owned()),
        &ing,
        &out,
        rejects(&["outside.jpg"], 1),
    ));
    v.push(case(
        "nuscenes filename climbing out",
        "nuscenes",
        set_front_filename(|_, _| "../outside.jpg".into()),
        &ing,
        &out,
        rejects(&["../outside.jpg"], 1),
    ));
    #[cfg(unix)]
    v.push(case(
        "nuscenes filename through a link out of the root, strict links",
        "nuscenes",
        set_front_filename(|t, _| {
            std::os::unix::fs::symlink(t.join("outside.jpg"), t.join("in/samples/escape.jpg"))
                .unwrap();
            "samples/escape.jpg".into()
        }),
        &[ing.clone(), vec!["--strict-links"]].concat(),
        &out,
        rejects(&["samples/escape.jpg", "leads out of the dataset root"], 1),
    ));
    v.push(case(
        "nuscenes camera image missing",
        "nuscenes",
        |t| {
            let (_, f) = first_front(t);
            std::fs::remove_file(t.join("in").join(f)).unwrap();
        },
        &ing,
        &out,
        rejects(&["CAM_FRONT"], 1),
    ));
    // (name, table, field, value, what the error or reject names, whether the scene is
    // rejected rather than the whole dataset)
    for (name, table, field, value, needle, per_scene) in [
        (
            "ego pose beyond 1e7 m",
            "ego_pose",
            "translation",
            serde_json::json!([1e308, 0.0, 0.0]),
            "ego_pose",
            true,
        ),
        (
            "ego pose of text",
            "ego_pose",
            "translation",
            serde_json::json!(["x", 0.0, 0.0]),
            "ego_pose.json",
            false,
        ),
        (
            "ego rotation of three numbers",
            "ego_pose",
            "rotation",
            serde_json::json!([1.0, 0.0, 0.0]),
            "ego_pose.json",
            false,
        ),
        (
            "box of zero size",
            "sample_annotation",
            "size",
            serde_json::json!([0.0, 1.0, 1.0]),
            "size",
            true,
        ),
        (
            "box of a kilometre",
            "sample_annotation",
            "size",
            serde_json::json!([1000.0, 1.0, 1.0]),
            "size",
            true,
        ),
        (
            "box far away",
            "sample_annotation",
            "translation",
            serde_json::json!([1e300, 0.0, 0.0]),
            "sample_annotation",
            true,
        ),
        (
            "camera intrinsics of zeros",
            "calibrated_sensor",
            "camera_intrinsic",
            serde_json::json!([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),
            "calibrated_sensor",
            true,
        ),
        (
            "sample of an unknown scene",
            "sample",
            "scene_token",
            serde_json::json!("nope"),
            "nope",
            true,
        ),
        (
            "annotation of an unknown instance",
            "sample_annotation",
            "instance_token",
            serde_json::json!("nope"),
            "nope",
            true,
        ),
        (
            "scene starting at an unknown sample",
            "scene",
            "first_sample_token",
            serde_json::json!("nope"),
            "nope",
            true,
        ),
    ] {
        v.push(case(
            format!("nuscenes {name}"),
            "nuscenes",
            nusc_field(table, field, value),
            &ing,
            &out,
            if per_scene {
                rejects(&[needle], 1)
            } else {
                fails(&[needle])
            },
        ));
    }
    v
}

#[test]
pub(super) fn nuscenes_inputs() {
    run_all(nuscenes_cases());
}

pub(super) fn waymo_cases() -> Vec<Case> {
    let ing = ingest("waymo");
    let out = ["store"];
    let mut v = Vec::new();
    for comp in [
        "vehicle_pose",
        "camera_calibration",
        "camera_box",
        "camera_image",
    ] {
        let first = move |t: &Path| {
            let mut files: Vec<_> = std::fs::read_dir(t.join("in").join(comp))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            files.sort();
            files[0].clone()
        };
        v.push(case(
            format!("waymo {comp} truncated"),
            "waymo",
            move |t| truncate_half(&first(t)),
            &ing,
            &out,
            rejects(&[comp], 1),
        ));
        v.push(case(
            format!("waymo {comp} not Parquet"),
            "waymo",
            move |t| std::fs::write(first(t), b"not parquet at all").unwrap(),
            &ing,
            &out,
            rejects(&[comp], 1),
        ));
        v.push(case(
            format!("waymo {comp} empty"),
            "waymo",
            move |t| std::fs::write(first(t), b"").unwrap(),
            &ing,
            &out,
            rejects(&[comp], 1),
        ));
        #[cfg(unix)]
        v.push(case(
            format!("waymo {comp} a link out of the root, strict links"),
            "waymo",
            move |t| {
                let f = first(t);
                std::fs::rename(&f, t.join("sentinel/moved.parquet")).unwrap();
                std::os::unix::fs::symlink(t.join("sentinel/moved.parquet"), &f).unwrap();
            },
            &[ing.clone(), vec!["--strict-links"]].concat(),
            &out,
            rejects(&[comp, "leads out of the dataset root"], 1),
        ));
    }
    v.push(case(
        "waymo without vehicle_pose",
        "waymo",
        |t| std::fs::remove_dir_all(t.join("in/vehicle_pose")).unwrap(),
        &ing,
        &out,
        fails(&["vehicle_pose"]),
    ));
    v
}

#[test]
pub(super) fn waymo_inputs() {
    run_all(waymo_cases());
}

pub(super) fn carla_routes(t: &Path) -> Vec<PathBuf> {
    let mut routes = Vec::new();
    for s in std::fs::read_dir(t.join("in")).unwrap() {
        let s = s.unwrap().path();
        if s.is_dir() {
            for r in std::fs::read_dir(&s).unwrap() {
                routes.push(r.unwrap().path());
            }
        }
    }
    routes.sort();
    routes
}

pub(super) fn carla_anno(t: &Path) -> PathBuf {
    carla_routes(t)[0].join("anno/00001.json.gz")
}

pub(super) fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

pub(super) fn carla_cases() -> Vec<Case> {
    let ing = ingest("carla");
    let out = ["store"];
    let anno_edit = |f: fn(&mut Value)| {
        move |t: &Path| {
            let p = carla_anno(t);
            let mut text = String::new();
            std::io::Read::read_to_string(
                &mut flate2::read::GzDecoder::new(std::fs::File::open(&p).unwrap()),
                &mut text,
            )
            .unwrap();
            let mut v: Value = serde_json::from_str(&text).unwrap();
            f(&mut v);
            std::fs::write(&p, gz(&serde_json::to_vec(&v).unwrap())).unwrap();
        }
    };
    vec![
        case(
            "carla annotation truncated",
            "carla",
            |t| truncate_half(&carla_anno(t)),
            &ing,
            &out,
            rejects(&["00001.json.gz"], 1),
        ),
        case(
            "carla annotation not gzip",
            "carla",
            |t| std::fs::write(carla_anno(t), b"{}").unwrap(),
            &ing,
            &out,
            rejects(&["00001.json.gz"], 1),
        ),
        case(
            "carla annotation of malformed JSON",
            "carla",
            |t| std::fs::write(carla_anno(t), gz(b"{\"x\": [1, 2")).unwrap(),
            &ing,
            &out,
            rejects(&["00001.json.gz"], 1),
        ),
        case(
            "carla annotation of a list",
            "carla",
            |t| std::fs::write(carla_anno(t), gz(b"[1, 2, 3]")).unwrap(),
            &ing,
            &out,
            rejects(&["00001.json.gz"], 1),
        ),
        case(
            "carla ego far away",
            "carla",
            anno_edit(|v| {
                if let Some(b) = v["bounding_boxes"].as_array_mut() {
                    if let Some(ego) = b.iter_mut().find(|b| b["class"] == "ego_vehicle") {
                        ego["world2ego"][0][3] = serde_json::json!(1e12);
                    }
                }
            }),
            &ing,
            &out,
            rejects(&["00001"], 1),
        ),
        case(
            "carla box at the speed of light",
            "carla",
            anno_edit(|v| {
                if let Some(b) = v["bounding_boxes"].as_array_mut() {
                    if let Some(first) = b.iter_mut().find(|b| b["class"] == "vehicle") {
                        first["speed"] = serde_json::json!(3e8);
                    }
                }
            }),
            &ing,
            &out,
            rejects(&["00001", "speed"], 1),
        ),
        case(
            "carla box of a kilometre",
            "carla",
            anno_edit(|v| {
                if let Some(b) = v["bounding_boxes"].as_array_mut() {
                    if let Some(first) = b.iter_mut().find(|b| b["class"] == "vehicle") {
                        first["extent"] = serde_json::json!([1000.0, 1.0, 1.0]);
                    }
                }
            }),
            &ing,
            &out,
            rejects(&["00001", "box size"], 1),
        ),
        case(
            "carla camera image missing",
            "carla",
            |t| {
                let cam = carla_routes(t)[0].join("camera/rgb_front");
                let mut imgs: Vec<_> = std::fs::read_dir(&cam)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .collect();
                imgs.sort();
                std::fs::remove_file(&imgs[0]).unwrap();
            },
            &ing,
            &out,
            rejects(&["rgb_front"], 1),
        ),
        #[cfg(unix)]
        case(
            "carla route folder a link out of the root, strict links",
            "carla",
            |t| {
                let r = carla_routes(t)[0].clone();
                std::fs::rename(&r, t.join("sentinel/route")).unwrap();
                std::os::unix::fs::symlink(t.join("sentinel/route"), &r).unwrap();
            },
            &[ing.clone(), vec!["--strict-links"]].concat(),
            &out,
            rejects(&["leads out of the dataset root"], 1),
        ),
    ]
}

#[test]
pub(super) fn carla_inputs() {
    run_all(carla_cases());
}

pub(super) fn frenetix_log(t: &Path) -> PathBuf {
    t.join("in/scene-0001/Default_logs.csv")
}

pub(super) fn frenetix_edit(f: fn(String) -> String) -> impl Fn(&Path) {
    move |t: &Path| {
        let p = frenetix_log(t);
        let s = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, f(s)).unwrap();
    }
}

pub(super) fn frenetix_cases() -> Vec<Case> {
    let ing = ingest("frenetix");
    let out = ["store"];
    vec![
        case(
            "frenetix log empty",
            "frenetix",
            frenetix_edit(|_| String::new()),
            &ing,
            &out,
            rejects(&["scene-0001"], 1),
        ),
        case(
            "frenetix log of a header only",
            "frenetix",
            frenetix_edit(|s| s.lines().next().unwrap().to_string() + "\n"),
            &ing,
            &out,
            rejects(&["scene-0001"], 1),
        ),
        case(
            "frenetix log without the x column",
            "frenetix",
            frenetix_edit(|s| s.replace("x_position_vehicle_m", "x_renamed")),
            &ing,
            &out,
            rejects(&["x_position_vehicle_m"], 1),
        ),
        case(
            "frenetix cell of text",
            "frenetix",
            frenetix_edit(|s| {
                let mut l: Vec<String> = s.lines().map(String::from).collect();
                let mut cells: Vec<String> = l[2].split(';').map(String::from).collect();
                cells[2] = "east".into();
                l[2] = cells.join(";");
                l.join("\n") + "\n"
            }),
            &ing,
            &out,
            rejects(&["Default_logs.csv"], 1),
        ),
        case(
            "frenetix position far away",
            "frenetix",
            frenetix_edit(|s| {
                let mut l: Vec<String> = s.lines().map(String::from).collect();
                let mut cells: Vec<String> = l[2].split(';').map(String::from).collect();
                cells[2] = "1e300".into();
                l[2] = cells.join(";");
                l.join("\n") + "\n"
            }),
            &ing,
            &out,
            rejects(&["Default_logs.csv"], 1),
        ),
        case(
            "frenetix ego jumping a kilometre in a step",
            "frenetix",
            frenetix_edit(|s| {
                let mut l: Vec<String> = s.lines().map(String::from).collect();
                let mut cells: Vec<String> = l[2].split(';').map(String::from).collect();
                let x: f64 = cells[2].parse().unwrap();
                cells[2] = (x + 1000.0).to_string();
                l[2] = cells.join(";");
                l.join("\n") + "\n"
            }),
            &ing,
            &out,
            rejects(&["Default_logs.csv"], 1),
        ),
        case(
            "frenetix log with a byte-order mark",
            "frenetix",
            |t| prepend_bom(&frenetix_log(t)),
            &ing,
            &out,
            Expect::Succeeds,
        ),
        case(
            "frenetix log of binary bytes",
            "frenetix",
            |t| std::fs::write(frenetix_log(t), [0u8, 159, 146, 150, 255]).unwrap(),
            &ing,
            &out,
            rejects(&["scene-0001"], 1),
        ),
    ]
}

#[test]
pub(super) fn frenetix_inputs() {
    run_all(frenetix_cases());
}
