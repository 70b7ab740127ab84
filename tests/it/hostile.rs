//! Bad inputs and faults against the real binary, each in its own folder with a sentinel tree
//! around it: the four source formats, configs, command lines, stores and releases. Every case
//! must end in a clear error that names the file (and the record where there is one) or in a
//! recorded reject with the other scenes kept, within a time bound and without a panic, and no
//! file outside the folders the case names as outputs may change (the test hashes the whole
//! case folder, the dataset included, before and after).

use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::Digest;

/// What a case must end in.
#[derive(Debug, Clone)]
enum Expect {
    /// Exit 1 or 2 with every needle in stderr.
    Fails(Vec<String>),
    /// Exit 0; the store's `rejects.jsonl` holds every needle and `kept` scenes remain.
    Rejects { needles: Vec<String>, kept: u64 },
    /// Exit 0; the reject log `file` (relative to the case folder) holds every needle.
    RejectsIn {
        file: &'static str,
        needles: Vec<String>,
    },
    /// Exit 0.
    Succeeds,
    /// Exit 0 with every needle in stderr.
    SucceedsSaying(Vec<String>),
}

fn fails(needles: &[&str]) -> Expect {
    Expect::Fails(needles.iter().map(|s| s.to_string()).collect())
}

fn rejects(needles: &[&str], kept: u64) -> Expect {
    Expect::Rejects {
        needles: needles.iter().map(|s| s.to_string()).collect(),
        kept,
    }
}

/// One case: a copy of a fixture, a change to it, a command line, the folders it may write.
struct Case {
    name: String,
    fixture: &'static str,
    /// Changes the case folder (the dataset is `in/`).
    mutate: Box<dyn Fn(&Path)>,
    /// The arguments, with `{t}` replaced by the case folder.
    args: Vec<String>,
    /// Folders and files (relative to the case folder) the command may write.
    outputs: Vec<&'static str>,
    expect: Expect,
    /// The time bound.
    seconds: u64,
}

fn case(
    name: impl Into<String>,
    fixture: &'static str,
    mutate: impl Fn(&Path) + 'static,
    args: &[&str],
    outputs: &[&'static str],
    expect: Expect,
) -> Case {
    Case {
        name: name.into(),
        fixture,
        mutate: Box::new(mutate),
        args: args.iter().map(|s| s.to_string()).collect(),
        outputs: outputs.to_vec(),
        expect,
        seconds: 60,
    }
}

fn ingest(source: &str) -> Vec<&'static str> {
    let s: &'static str = Box::leak(source.to_string().into_boxed_str());
    vec![
        "ingest",
        "--source",
        s,
        "--root",
        "{t}/in",
        "--out",
        "{t}/store",
    ]
}

/// The synthetic datasets, written once per test binary.
fn fixtures() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-fixtures");
        let _ = std::fs::remove_dir_all(&d);
        // nuScenes long enough for EgoDyn's 3 s clips; the others as short as they can be.
        for (name, format, seconds) in [
            ("nuscenes", "nuscenes", "8"),
            ("waymo", "waymo-v2", "3"),
            ("carla", "bench2drive", "3"),
            ("frenetix", "frenetix", "3"),
        ] {
            common::cli::drivegen(
                &[
                    "synth",
                    "--format",
                    format,
                    "--scenes",
                    "2",
                    "--duration",
                    seconds,
                    "--width",
                    "160",
                    "--height",
                    "90",
                ],
                &[("--out", &d.join(name))],
            );
            for f in [".drivegen.lock", ".drivegen-owner.json"] {
                let _ = std::fs::remove_file(d.join(name).join(f));
            }
        }
        // A store of the nuScenes fixture, for the store and stage cases.
        common::cli::drivegen(
            &["ingest", "--source", "nuscenes"],
            &[("--root", &d.join("nuscenes")), ("--out", &d.join("store"))],
        );
        d
    })
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

/// Every file and link under `root` except those under `skip`, relative path → a digest of
/// its bytes (or its link target).
fn digest_tree(root: &Path, skip: &[PathBuf]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if skip.iter().any(|s| p.starts_with(s)) {
                continue;
            }
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                out.insert(rel, format!("link {:?}", std::fs::read_link(&p).unwrap()));
            } else if m.is_dir() {
                out.insert(rel, "dir".into());
                stack.push(p);
            } else if m.is_file() {
                let h = sha2::Sha256::digest(std::fs::read(&p).unwrap());
                out.insert(rel, format!("{h:x}"));
            } else {
                out.insert(rel, "special".into());
            }
        }
    }
    out
}

/// The peak resident memory of a running process in MiB (`VmHWM`), where `/proc` has it.
fn peak_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// The most memory a case may take.
const MAX_RSS_MIB: f64 = 1024.0;

/// Runs the binary with a time bound; None when it had to be killed. The peak resident memory
/// seen while it ran goes to `rss`.
fn run_bounded(
    args: &[String],
    cwd: &Path,
    limit: Duration,
    rss: &mut f64,
) -> Option<std::process::Output> {
    let mut child = common::cli::bin()
        .current_dir(cwd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let (out, err) = (child.stdout.take(), child.stderr.take());
    // Drained on threads, so a chatty child never blocks on a full pipe while it is polled.
    let drain = |p: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut p) = p {
                let _ = std::io::Read::read_to_end(&mut p, &mut v);
            }
            v
        })
    };
    let out = drain(out.map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let err = drain(err.map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    loop {
        if let Some(m) = peak_rss_mib(child.id()) {
            *rss = rss.max(m);
        }
        if let Some(status) = child.try_wait().unwrap() {
            return Some(std::process::Output {
                status,
                stdout: out.join().unwrap(),
                stderr: err.join().unwrap(),
            });
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn store_scenes(store: &Path) -> u64 {
    let text = std::fs::read(store.join("store.json")).unwrap_or_default();
    let v: Value = serde_json::from_slice(&text).unwrap_or(Value::Null);
    v["counts"]["scenes"].as_u64().unwrap_or(0)
}

/// Runs one case; returns what was wrong with its outcome.
fn check(c: &Case) -> Result<(), String> {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    copy_tree(&fixtures().join(c.fixture), &t.join("in"));
    // The sentinel tree: what a path escaping the dataset or an output would reach.
    std::fs::create_dir_all(t.join("sentinel/deep")).unwrap();
    std::fs::write(t.join("sentinel/notes.md"), b"a user's notes").unwrap();
    std::fs::write(t.join("sentinel/deep/data.bin"), [7u8; 64]).unwrap();
    let jpeg = std::fs::read(first_jpeg(&t.join("in"))).unwrap_or_default();
    std::fs::write(t.join("outside.jpg"), &jpeg).unwrap();
    (c.mutate)(t);
    let skip: Vec<PathBuf> = c.outputs.iter().map(|o| t.join(o)).collect();
    let before = digest_tree(t, &skip);
    let tp = t.to_string_lossy();
    let args: Vec<String> = c.args.iter().map(|a| a.replace("{t}", &tp)).collect();
    let mut rss = 0.0;
    let Some(o) = run_bounded(&args, t, Duration::from_secs(c.seconds), &mut rss) else {
        return Err(format!("did not end within {} s", c.seconds));
    };
    if rss > MAX_RSS_MIB {
        return Err(format!("peak RSS {rss:.0} MiB is over {MAX_RSS_MIB} MiB"));
    }
    // `validate` reports on stdout; the rest say what went wrong on stderr.
    let stderr =
        String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    let after = digest_tree(t, &skip);
    if before != after {
        let changed: Vec<_> = before
            .keys()
            .chain(after.keys())
            .filter(|k| before.get(*k) != after.get(*k))
            .take(5)
            .collect();
        return Err(format!("changed files outside its outputs: {changed:?}"));
    }
    if stderr.contains("panicked") {
        return Err(format!("panicked: {stderr}"));
    }
    let code = o.status.code();
    match &c.expect {
        Expect::Fails(needles) => {
            if !matches!(code, Some(1) | Some(2)) {
                return Err(format!(
                    "exit {code:?}, expected an error; stderr: {stderr}"
                ));
            }
            if let Some(n) = needles.iter().find(|n| !stderr.contains(n.as_str())) {
                return Err(format!("the error does not name `{n}`: {stderr}"));
            }
        }
        Expect::Rejects { needles, kept } => {
            if code != Some(0) {
                return Err(format!(
                    "exit {code:?}, expected a reject; stderr: {stderr}"
                ));
            }
            let log = std::fs::read_to_string(t.join("store/rejects.jsonl")).unwrap_or_default();
            if let Some(n) = needles.iter().find(|n| !log.contains(n.as_str())) {
                return Err(format!("no reject names `{n}`: {log}"));
            }
            let got = store_scenes(&t.join("store"));
            if got != *kept {
                return Err(format!(
                    "{got} scenes kept, expected {kept}; rejects: {log}"
                ));
            }
        }
        Expect::RejectsIn { file, needles } => {
            if code != Some(0) {
                return Err(format!(
                    "exit {code:?}, expected a reject; stderr: {stderr}"
                ));
            }
            let log = std::fs::read_to_string(t.join(file)).unwrap_or_default();
            if let Some(n) = needles.iter().find(|n| !log.contains(n.as_str())) {
                return Err(format!("no reject in {file} names `{n}`: {log}"));
            }
        }
        Expect::Succeeds => {
            if code != Some(0) {
                return Err(format!("exit {code:?}; stderr: {stderr}"));
            }
        }
        Expect::SucceedsSaying(needles) => {
            if code != Some(0) {
                return Err(format!("exit {code:?}; stderr: {stderr}"));
            }
            if let Some(n) = needles.iter().find(|n| !stderr.contains(n.as_str())) {
                return Err(format!("stderr does not say `{n}`: {stderr}"));
            }
        }
    }
    Ok(())
}

fn first_jpeg(dir: &Path) -> PathBuf {
    let mut stack = vec![dir.to_path_buf()];
    let mut found = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jpg") {
                found.push(p);
            }
        }
    }
    found.sort();
    found.into_iter().next().unwrap_or_default()
}

/// Held by the tests that load the machine (builds, signals, the many-box frame), so that the
/// time bounds of one are not spent waiting for another.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|p| p.into_inner())
}

fn run_all(cases: Vec<Case>) {
    let mut failed = Vec::new();
    for c in &cases {
        if let Err(e) = check(c) {
            failed.push(format!("{}: {e}", c.name));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} cases failed:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
}

// ---- the changes cases make -------------------------------------------------------------

fn edit_json(path: &Path, f: impl Fn(&mut Value)) {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_vec(&v).unwrap()).unwrap();
}

fn nusc_table(t: &Path, table: &str) -> PathBuf {
    t.join("in/v1.0-mini").join(format!("{table}.json"))
}

fn truncate_half(p: &Path) {
    let b = std::fs::read(p).unwrap();
    std::fs::write(p, &b[..b.len() / 2]).unwrap();
}

fn prepend_bom(p: &Path) {
    let mut b = vec![0xEF, 0xBB, 0xBF];
    b.extend(std::fs::read(p).unwrap());
    std::fs::write(p, b).unwrap();
}

/// Sets `field` of the first record of a nuScenes table.
fn nusc_field(table: &'static str, field: &'static str, value: Value) -> impl Fn(&Path) {
    move |t: &Path| {
        edit_json(&nusc_table(t, table), |v| v[0][field] = value.clone());
    }
}

/// The first keyframe front-camera sample_data record (scene 1's first sample).
fn first_front(t: &Path) -> (usize, String) {
    let v: Value =
        serde_json::from_slice(&std::fs::read(nusc_table(t, "sample_data")).unwrap()).unwrap();
    let i = v
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["filename"].as_str().unwrap().contains("CAM_FRONT/"))
        .unwrap();
    (i, v[i]["filename"].as_str().unwrap().to_string())
}

fn set_front_filename(name: impl Fn(&Path, &str) -> String + 'static) -> impl Fn(&Path) {
    move |t: &Path| {
        let (i, old) = first_front(t);
        let new = name(t, &old);
        edit_json(&nusc_table(t, "sample_data"), |v| {
            v[i]["filename"] = Value::String(new.clone())
        });
    }
}

fn nuscenes_cases() -> Vec<Case> {
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
        "nuscenes filename through a link out of the root",
        "nuscenes",
        set_front_filename(|t, _| {
            std::os::unix::fs::symlink(t.join("outside.jpg"), t.join("in/samples/escape.jpg"))
                .unwrap();
            "samples/escape.jpg".into()
        }),
        &ing,
        &out,
        rejects(&["samples/escape.jpg"], 1),
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
fn nuscenes_inputs() {
    run_all(nuscenes_cases());
}

fn waymo_cases() -> Vec<Case> {
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
            format!("waymo {comp} a link out of the root"),
            "waymo",
            move |t| {
                let f = first(t);
                std::fs::rename(&f, t.join("sentinel/moved.parquet")).unwrap();
                std::os::unix::fs::symlink(t.join("sentinel/moved.parquet"), &f).unwrap();
            },
            &ing,
            &out,
            rejects(&[comp], 1),
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
fn waymo_inputs() {
    run_all(waymo_cases());
}

fn carla_routes(t: &Path) -> Vec<PathBuf> {
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

fn carla_anno(t: &Path) -> PathBuf {
    carla_routes(t)[0].join("anno/00001.json.gz")
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn carla_cases() -> Vec<Case> {
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
            "carla route folder a link out of the root",
            "carla",
            |t| {
                let r = carla_routes(t)[0].clone();
                std::fs::rename(&r, t.join("sentinel/route")).unwrap();
                std::os::unix::fs::symlink(t.join("sentinel/route"), &r).unwrap();
            },
            &ing,
            &out,
            rejects(&["leads out of the dataset root"], 1),
        ),
    ]
}

#[test]
fn carla_inputs() {
    run_all(carla_cases());
}

fn frenetix_log(t: &Path) -> PathBuf {
    t.join("in/scene-0001/Default_logs.csv")
}

fn frenetix_edit(f: fn(String) -> String) -> impl Fn(&Path) {
    move |t: &Path| {
        let p = frenetix_log(t);
        let s = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, f(s)).unwrap();
    }
}

fn frenetix_cases() -> Vec<Case> {
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
fn frenetix_inputs() {
    run_all(frenetix_cases());
}

// ---- configs, command lines, stores, releases ------------------------------------------

const BUILD: &str = r#"
name = "hostile"
seed = 1
out = "rel"

[input]
kind = "synth"
scenes = 1
duration_s = 3.0
width = 160
height = 90

[stages]
egomotion = true
"#;

fn write_build(t: &Path, text: &str) {
    std::fs::write(t.join("build.toml"), text).unwrap();
}

fn config_cases() -> Vec<Case> {
    let build = ["build", "{t}/build.toml"];
    let outs = ["rel", "rel.work"];
    let with = |extra: &'static str| move |t: &Path| write_build(t, &format!("{BUILD}{extra}"));
    let replaced = |from: &'static str, to: &'static str| {
        move |t: &Path| write_build(t, &BUILD.replace(from, to))
    };
    vec![
        case(
            "build config with an unknown key",
            "nuscenes",
            with("\nbogus = 1\n"),
            &build,
            &outs,
            fails(&["build.toml", "bogus"]),
        ),
        case(
            "build config of malformed TOML",
            "nuscenes",
            |t| write_build(t, "name = \"x\"\n[input\n"),
            &build,
            &outs,
            fails(&["build.toml"]),
        ),
        case(
            "build config with a byte-order mark",
            "nuscenes",
            |t| {
                write_build(t, BUILD);
                prepend_bom(&t.join("build.toml"));
            },
            &["build", "{t}/build.toml", "--shard", "0/1"],
            &outs,
            Expect::Succeeds,
        ),
        case(
            "build config writing into the current folder",
            "nuscenes",
            replaced("out = \"rel\"", "out = \".\""),
            &build,
            &outs,
            fails(&["holds the work folder"]),
        ),
        case(
            "build config with an empty out",
            "nuscenes",
            replaced("out = \"rel\"", "out = \"\""),
            &build,
            &outs,
            fails(&["build.toml", "out is empty"]),
        ),
        case(
            "build config with zero scenes",
            "nuscenes",
            replaced("scenes = 1", "scenes = 0"),
            &build,
            &outs,
            fails(&["scenes"]),
        ),
        case(
            "build config with a negative duration",
            "nuscenes",
            replaced("duration_s = 3.0", "duration_s = -3.0"),
            &build,
            &outs,
            fails(&["duration"]),
        ),
        case(
            "build config with a NaN duration",
            "nuscenes",
            replaced("duration_s = 3.0", "duration_s = nan"),
            &build,
            &outs,
            fails(&["duration_s"]),
        ),
        case(
            "build config with corrupt frames of zero",
            "nuscenes",
            with("\n[corrupt]\nframes_per_scene = 0\n"),
            &build,
            &outs,
            fails(&["frames_per_scene"]),
        ),
        case(
            "build config reading a dataset inside its release",
            "nuscenes",
            |t| {
                write_build(
                    t,
                    &BUILD.replace(
                        "kind = \"synth\"\nscenes = 1\nduration_s = 3.0\nwidth = 160\nheight = 90",
                        "kind = \"nuscenes\"\nroot = \".\"",
                    ),
                )
            },
            &build,
            &outs,
            fails(&["dataset root"]),
        ),
        case(
            "egodyn config of a negative gravity",
            "nuscenes",
            |t| {
                let text = std::fs::read_to_string(
                    Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/egodyn.toml"),
                )
                .unwrap();
                let re = text
                    .lines()
                    .map(|l| {
                        if l.trim_start().starts_with("gravity") {
                            "gravity = -9.81".to_string()
                        } else {
                            l.to_string()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                std::fs::write(t.join("egodyn.toml"), re).unwrap();
                copy_tree(&fixtures().join("store"), &t.join("store"));
            },
            &[
                "egomotion",
                "--store",
                "{t}/store",
                "--out",
                "{t}/ego",
                "--config",
                "{t}/egodyn.toml",
            ],
            &["ego"],
            fails(&["egodyn.toml", "gravity"]),
        ),
        case(
            "visibility config missing",
            "nuscenes",
            |t| copy_tree(&fixtures().join("store"), &t.join("store")),
            &[
                "visibility",
                "--store",
                "{t}/store",
                "--out",
                "{t}/vis.arrow",
                "--config",
                "{t}/nope.toml",
            ],
            &["vis.arrow", "vis.rejects.jsonl"],
            fails(&["nope.toml"]),
        ),
    ]
}

#[test]
fn configs() {
    run_all(config_cases());
}

fn with_store(t: &Path) {
    copy_tree(&fixtures().join("store"), &t.join("store"));
}

fn cli_cases() -> Vec<Case> {
    let outs = ["rel", "rel.work"];
    fn build(t: &Path) {
        write_build(t, BUILD)
    }
    vec![
        case(
            "--merge 0",
            "nuscenes",
            build,
            &["build", "{t}/build.toml", "--merge", "0"],
            &outs,
            fails(&["--merge"]),
        ),
        case(
            "--merge 3 without shards",
            "nuscenes",
            build,
            &["build", "{t}/build.toml", "--merge", "3"],
            &outs,
            fails(&["shard 0/3 is not complete"]),
        ),
        case(
            "--shard 5/3",
            "nuscenes",
            build,
            &["build", "{t}/build.toml", "--shard", "5/3"],
            &outs,
            fails(&["5/3"]),
        ),
        case(
            "release into a user's folder",
            "nuscenes",
            |t| {
                build(t);
                std::fs::create_dir_all(t.join("rel")).unwrap();
                std::fs::write(t.join("rel/README.md"), b"my own card").unwrap();
            },
            &["build", "{t}/build.toml"],
            &["rel.work"],
            fails(&["README.md", "--force"]),
        ),
        case(
            "work folder of a user's",
            "nuscenes",
            |t| {
                build(t);
                std::fs::create_dir_all(t.join("rel.work/som")).unwrap();
                std::fs::write(t.join("rel.work/som/mine.png"), b"x").unwrap();
            },
            &["build", "{t}/build.toml"],
            &["rel"],
            fails(&["som", "did not write"]),
        ),
        case(
            "ingest over a user's folder",
            "nuscenes",
            |t| {
                std::fs::create_dir_all(t.join("store")).unwrap();
                std::fs::write(t.join("store/thesis.tex"), b"x").unwrap();
            },
            &ingest("nuscenes"),
            &[],
            fails(&["thesis.tex"]),
        ),
        case(
            "ingest writing into the dataset",
            "nuscenes",
            |_| {},
            &["ingest", "--root", "{t}/in", "--out", "{t}/in/store"],
            &[],
            fails(&["dataset root"]),
        ),
        case(
            "ingest writing over the dataset's parent",
            "nuscenes",
            |_| {},
            &["ingest", "--root", "{t}/in", "--out", "{t}"],
            &[],
            fails(&["dataset root"]),
        ),
        case(
            "visibility into the store",
            "nuscenes",
            with_store,
            &[
                "visibility",
                "--store",
                "{t}/store",
                "--out",
                "{t}/store/cameras.arrow",
            ],
            &[],
            fails(&["store"]),
        ),
        case(
            "visibility over a user's file",
            "nuscenes",
            |t| {
                with_store(t);
                std::fs::write(t.join("vis.arrow"), b"precious").unwrap();
            },
            &[
                "visibility",
                "--store",
                "{t}/store",
                "--out",
                "{t}/vis.arrow",
            ],
            &[],
            fails(&["vis.arrow", "--force"]),
        ),
        #[cfg(unix)]
        case(
            "visibility to /dev/null",
            "nuscenes",
            with_store,
            &["visibility", "--store", "{t}/store", "--out", "/dev/null"],
            &[],
            fails(&["/dev/null"]),
        ),
        case(
            "egomotion into the store",
            "nuscenes",
            with_store,
            &["egomotion", "--store", "{t}/store", "--out", "{t}/store"],
            &[],
            fails(&["store"]),
        ),
        case(
            "corrupt into its own input",
            "nuscenes",
            |_| {},
            &[
                "corrupt",
                "--images",
                "{t}/in/samples/CAM_FRONT",
                "--out",
                "{t}/in/samples/CAM_FRONT",
            ],
            &[],
            fails(&["--images", "--out"]),
        ),
        case(
            "synth into a user's folder",
            "nuscenes",
            |_| {},
            &["synth", "--out", "{t}/sentinel", "--scenes", "1"],
            &[],
            fails(&["notes.md"]),
        ),
        case(
            "score without a release",
            "nuscenes",
            |t| std::fs::write(t.join("p.jsonl"), b"").unwrap(),
            &[
                "score",
                "--release",
                "{t}/sentinel",
                "--predictions",
                "{t}/p.jsonl",
            ],
            &[],
            fails(&["manifest.json"]),
        ),
        case(
            "inspect of a missing store",
            "nuscenes",
            |_| {},
            &["inspect", "{t}/nothing"],
            &[],
            fails(&["nothing"]),
        ),
        case(
            "release with zero rows per shard",
            "nuscenes",
            with_store,
            &[
                "release",
                "--qa",
                "{t}/none.arrow",
                "--out",
                "{t}/rel",
                "--rows-per-shard",
                "0",
            ],
            &["rel"],
            fails(&["--rows-per-shard", "at least 1"]),
        ),
    ]
}

#[test]
fn command_lines() {
    run_all(cli_cases());
}

fn store_edit(f: fn(&Path)) -> impl Fn(&Path) {
    move |t: &Path| {
        with_store(t);
        f(&t.join("store"));
    }
}

fn store_cases() -> Vec<Case> {
    let inspect = ["inspect", "{t}/store"];
    let ego = ["egomotion", "--store", "{t}/store", "--out", "{t}/ego"];
    vec![
        case(
            "store.json counts edited",
            "nuscenes",
            store_edit(|s| {
                edit_json(&s.join("store.json"), |v| {
                    v["counts"]["frames"] = serde_json::json!(1)
                })
            }),
            &inspect,
            &[],
            fails(&["store.json", "counts.frames"]),
        ),
        case(
            "store.json scene count edited",
            "nuscenes",
            store_edit(|s| {
                edit_json(&s.join("store.json"), |v| {
                    v["counts"]["scenes"] = serde_json::json!(5)
                })
            }),
            &ego,
            &["ego"],
            fails(&["store.json", "counts.scenes"]),
        ),
        case(
            "store table truncated",
            "nuscenes",
            store_edit(|s| truncate_half(&s.join("objects.arrow"))),
            &inspect,
            &[],
            fails(&["objects.arrow"]),
        ),
        case(
            "store table missing",
            "nuscenes",
            store_edit(|s| std::fs::remove_file(s.join("frames.arrow")).unwrap()),
            &ego,
            &["ego"],
            fails(&["frames.arrow"]),
        ),
        case(
            "store tables swapped",
            "nuscenes",
            store_edit(|s| {
                std::fs::copy(s.join("frames.arrow"), s.join("objects.arrow")).unwrap();
            }),
            &inspect,
            &[],
            fails(&["objects"]),
        ),
        case(
            "store.json missing",
            "nuscenes",
            store_edit(|s| std::fs::remove_file(s.join("store.json")).unwrap()),
            &inspect,
            &[],
            fails(&["store.json"]),
        ),
        case(
            "store.json of another format",
            "nuscenes",
            store_edit(|s| {
                edit_json(&s.join("store.json"), |v| {
                    v["format_version"] = serde_json::json!(99)
                })
            }),
            &inspect,
            &[],
            fails(&["store.json", "format"]),
        ),
        case(
            "store.json with a byte-order mark",
            "nuscenes",
            store_edit(|s| prepend_bom(&s.join("store.json"))),
            &inspect,
            &[],
            Expect::Succeeds,
        ),
        case(
            "store.json malformed",
            "nuscenes",
            store_edit(|s| truncate_half(&s.join("store.json"))),
            &inspect,
            &[],
            fails(&["store.json"]),
        ),
    ]
}

#[test]
fn stores() {
    run_all(store_cases());
}

/// A small release, built once.
fn release_fixture() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = fixtures().join("release-case");
        std::fs::create_dir_all(&d).unwrap();
        write_build(&d, BUILD);
        common::cli::ok(
            common::cli::bin()
                .current_dir(&d)
                .args(["build", "build.toml"])
                .output()
                .unwrap(),
            "the release fixture",
        );
        d.join("rel")
    })
}

fn with_release(f: fn(&Path)) -> impl Fn(&Path) {
    move |t: &Path| {
        copy_tree(release_fixture(), &t.join("rel"));
        std::fs::write(t.join("p.jsonl"), b"").unwrap();
        f(&t.join("rel"));
    }
}

fn first_shard(rel: &Path) -> PathBuf {
    let mut v: Vec<_> = std::fs::read_dir(rel.join("data"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v[0].clone()
}

fn release_cases() -> Vec<Case> {
    let score = [
        "score",
        "--release",
        "{t}/rel",
        "--predictions",
        "{t}/p.jsonl",
    ];
    let validate = ["validate", "{t}/rel"];
    vec![
        case(
            "release shard tampered",
            "nuscenes",
            with_release(|r| {
                let p = first_shard(r);
                let mut b = std::fs::read(&p).unwrap();
                let n = b.len() / 2;
                b[n] ^= 0xff;
                std::fs::write(&p, b).unwrap();
            }),
            &score,
            &[],
            fails(&["sha256"]),
        ),
        case(
            "release with a stray shard",
            "nuscenes",
            with_release(|r| {
                let p = first_shard(r);
                std::fs::copy(&p, r.join("data/test-stray.parquet")).unwrap();
            }),
            &score,
            &[],
            fails(&["test-stray.parquet"]),
        ),
        case(
            "release without its manifest",
            "nuscenes",
            with_release(|r| std::fs::remove_file(r.join("manifest.json")).unwrap()),
            &validate,
            &[],
            fails(&["manifest.json"]),
        ),
        case(
            "release shard truncated",
            "nuscenes",
            with_release(|r| truncate_half(&first_shard(r))),
            &validate,
            &[],
            fails(&["parquet"]),
        ),
        case(
            "predictions malformed",
            "nuscenes",
            with_release(|r| {
                std::fs::write(r.parent().unwrap().join("p.jsonl"), b"{\"qa_id\": \n").unwrap()
            }),
            &score,
            &[],
            fails(&["p.jsonl", "1"]),
        ),
        case(
            "score writing over its predictions",
            "nuscenes",
            with_release(|_| {}),
            &[
                "score",
                "--release",
                "{t}/rel",
                "--predictions",
                "{t}/p.jsonl",
                "--out",
                "{t}/p.jsonl",
            ],
            &[],
            fails(&["--predictions"]),
        ),
    ]
}

#[test]
fn releases() {
    run_all(release_cases());
}

#[test]
fn the_corpus_holds_at_least_a_hundred_cases() {
    let n = nuscenes_cases().len()
        + waymo_cases().len()
        + carla_cases().len()
        + frenetix_cases().len()
        + config_cases().len()
        + cli_cases().len()
        + store_cases().len()
        + release_cases().len()
        + bounded_cases().len()
        + safety_cases().len()
        + KILLS
        + 6
        + 3;
    assert!(n >= 100, "{n} cases");
}

/// The kill -9 moments of [`faults`].
const KILLS: usize = 20;

/// Faults while a build runs: killed at 20 moments and resumed (the release ends byte-identical
/// to an uninterrupted build and no temporary file survives), and two builds at once on one
/// work folder (the second is refused, the first is unharmed); the sentinel tree stays as it
/// was throughout.
#[test]
fn faults() {
    let _heavy = heavy();
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    std::fs::create_dir_all(t.join("sentinel")).unwrap();
    std::fs::write(t.join("sentinel/notes.md"), b"mine").unwrap();
    let reference = t.join("a");
    std::fs::create_dir_all(&reference).unwrap();
    write_build(&reference, BUILD);
    let t0 = Instant::now();
    common::cli::ok(
        common::cli::bin()
            .current_dir(&reference)
            .args(["build", "build.toml"])
            .output()
            .unwrap(),
        "reference build",
    );
    let full = t0.elapsed().as_millis() as u64;
    let sentinel = digest_tree(&t.join("sentinel"), &[]);

    let b = t.join("b");
    std::fs::create_dir_all(&b).unwrap();
    write_build(&b, BUILD);
    let seed = common::random::seed();
    let mut rng = drivegen::qa::record::SplitMix64::new(seed);
    let mut kills = Vec::new();
    for _ in 0..KILLS {
        let after = Duration::from_millis(20 + rng.below(full.max(100)));
        let mut child = Command::new(env!("CARGO_BIN_EXE_drivegen"))
            .current_dir(&b)
            .env("DRIVEGEN_PROGRESS", "0")
            .args(["build", "build.toml"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while start.elapsed() < after && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill();
        let _ = child.wait();
        kills.push(after.as_millis());
    }
    common::cli::ok(
        common::cli::bin()
            .current_dir(&b)
            .args(["build", "build.toml"])
            .output()
            .unwrap(),
        "resumed build",
    );
    let strip = |m: BTreeMap<String, String>| -> BTreeMap<String, String> {
        m.into_iter()
            .filter(|(k, _)| !k.starts_with("report"))
            .collect()
    };
    assert_eq!(
        strip(digest_tree(&reference.join("rel"), &[])),
        strip(digest_tree(&b.join("rel"), &[])),
        "resumed after kills at {kills:?} ms (seed {seed})"
    );
    let debris: Vec<String> = digest_tree(&b, &[])
        .into_keys()
        .filter(|k| k.ends_with(".tmp") || k.contains(".drivegen-new-"))
        .collect();
    assert!(debris.is_empty(), "left behind: {debris:?}");

    // Two builds at once on one work folder: exactly one runs.
    let c = t.join("c");
    std::fs::create_dir_all(&c).unwrap();
    write_build(&c, BUILD);
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_drivegen"))
            .current_dir(&c)
            .env("DRIVEGEN_PROGRESS", "0")
            .args(["build", "build.toml"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (x, y) = (spawn(), spawn());
    let (x, y) = (x.wait_with_output().unwrap(), y.wait_with_output().unwrap());
    let refused = [&x, &y]
        .iter()
        .filter(|o| String::from_utf8_lossy(&o.stderr).contains("in use by pid"))
        .count();
    let succeeded = [&x, &y].iter().filter(|o| o.status.success()).count();
    // The second may also start after the first has finished, and then finds its work done.
    assert!(
        succeeded == 2 || (succeeded == 1 && refused == 1),
        "{}\n{}",
        String::from_utf8_lossy(&x.stderr),
        String::from_utf8_lossy(&y.stderr)
    );
    assert_eq!(
        strip(digest_tree(&reference.join("rel"), &[])),
        strip(digest_tree(&c.join("rel"), &[])),
        "concurrent builds"
    );
    assert_eq!(sentinel, digest_tree(&t.join("sentinel"), &[]));
}

/// A full disk: on a small tmpfs (where this machine lets the test mount one), a re-ingest that
/// runs out of space fails naming the file, leaves the old store whole and readable, and leaves
/// no temporary file or half-written store behind.
#[cfg(target_os = "linux")]
#[test]
fn disk_full() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("disk_full: cannot mount a tmpfs here; skipped");
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _guard = Unmount(&mnt);
    let store = mnt.join("store");
    let root = fixtures().join("nuscenes");
    common::cli::drivegen(&["ingest"], &[("--root", &root), ("--out", &store)]);
    let before = digest_tree(&store, &[]);
    // Leave less room than a second store needs.
    let free = {
        let o = Command::new("df")
            .args(["-B1", "--output=avail"])
            .arg(&mnt)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        text.lines().nth(1).unwrap().trim().parse::<u64>().unwrap()
    };
    std::fs::write(
        mnt.join("filler"),
        vec![0u8; free.saturating_sub(100_000) as usize],
    )
    .unwrap();
    let o = common::cli::bin()
        .args(["ingest", "--root"])
        .arg(&root)
        .arg("--out")
        .arg(&store)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "ingest into a full disk succeeded");
    assert!(
        err.contains(&mnt.to_string_lossy().into_owned()),
        "names no file: {err}"
    );
    assert!(err.to_lowercase().contains("no space"), "{err}");
    // The failed run's lock file (empty once released) is the only addition.
    let after: BTreeMap<_, _> = digest_tree(&store, &[])
        .into_iter()
        .filter(|(k, _)| k != ".drivegen.lock")
        .collect();
    assert_eq!(before, after, "the old store changed");
    common::cli::drivegen(&["inspect"], &[("", &store)]);
    let left: Vec<String> = digest_tree(&mnt, &[])
        .into_keys()
        .filter(|k| k.ends_with(".tmp") || k.contains(".drivegen-new-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

// ---- bounded memory and time, special files, colliding ids, signals -----------------------

/// A case with a 10 s bound.
fn quick(c: Case) -> Case {
    Case { seconds: 10, ..c }
}

#[cfg(unix)]
fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o644) },
        0,
        "mkfifo {p:?}"
    );
}

#[cfg(unix)]
fn replace_with(p: &Path, what: &str) {
    let _ = std::fs::remove_file(p);
    match what {
        "fifo" => mkfifo(p),
        _ => std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
    }
}

/// A JPEG whose header claims `w`×`h` while its data is that of a 16×16 image.
fn jpeg_claiming(w: u16, h: u16) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(16, 16, image::Rgb([90, 90, 90]));
    let mut bytes = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 90)
        .encode_image(&img)
        .unwrap();
    let sof = bytes
        .windows(2)
        .position(|m| m == [0xFF, 0xC0])
        .expect("a baseline JPEG");
    // FFC0, length (2), precision (1), height (2), width (2).
    bytes[sof + 5..sof + 7].copy_from_slice(&h.to_be_bytes());
    bytes[sof + 7..sof + 9].copy_from_slice(&w.to_be_bytes());
    bytes
}

/// The fixture store with one keyframe holding `n` boxes in a grid in front of the ego.
fn store_with_boxes(t: &Path, n: usize) {
    use drivegen::store::rejects::RejectLog;
    use drivegen::store::{Store, StoreWriter};
    let st = Store::open(&fixtures().join("store")).unwrap();
    let mut scene = st.scenes().unwrap().next().unwrap().unwrap();
    let frame = scene.objects[0].frame_idx;
    let template = scene.objects[0].clone();
    scene.objects.retain(|o| o.frame_idx != frame);
    // At nuScenes' full resolution, where per-pixel work per box would show.
    for c in &mut scene.cameras {
        let k = 1600.0 / f64::from(c.width);
        (c.width, c.height) = (1600, 900);
        (c.fx, c.fy, c.cx, c.cy) = (c.fx * k, c.fy * k, c.cx * k, c.cy * k);
    }
    for k in 0..n {
        let mut o = template.clone();
        o.annotation_id = format!("many-{k}");
        o.track_id = format!("many-{k}");
        // A 100 × 100 grid of boxes 10 cm apart around a box the cameras see: every one of
        // them projects, most of them overlap.
        let (row, col) = ((k / 100) as f64, (k % 100) as f64);
        o.center = [
            template.center[0] + 0.1 * (row - 50.0),
            template.center[1] + 0.1 * (col - 50.0),
            template.center[2],
        ];
        scene.objects.push(o);
    }
    let mut w = StoreWriter::create(&t.join("store"), st.meta().clone()).unwrap();
    w.write_scene(&scene).unwrap();
    w.finish(&RejectLog::new()).unwrap();
}

fn bounded_cases() -> Vec<Case> {
    let mut v = Vec::new();
    v.push(case(
        "carla annotation a gzip bomb",
        "carla",
        |t| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let zeros = vec![b' '; 1 << 20];
            for _ in 0..300 {
                e.write_all(&zeros).unwrap();
            }
            std::fs::write(carla_anno(t), e.finish().unwrap()).unwrap();
        },
        &ingest("carla"),
        &["store"],
        rejects(&["00001.json.gz", "DRIVEGEN_MAX_DECOMPRESSED_MIB"], 1),
    ));
    v.push(case(
        "an image whose header claims 20000×20000",
        "nuscenes",
        |t| {
            let (_, f) = first_front(t);
            std::fs::create_dir_all(t.join("imgs")).unwrap();
            std::fs::copy(t.join("in").join(&f), t.join("imgs/a.jpg")).unwrap();
            std::fs::write(t.join("imgs/b.jpg"), jpeg_claiming(20000, 20000)).unwrap();
        },
        &[
            "corrupt",
            "--images",
            "{t}/imgs",
            "--out",
            "{t}/cor",
            "--corruption",
            "brightness",
            "--device",
            "cpu",
        ],
        &["cor"],
        Expect::RejectsIn {
            file: "cor/rejects.jsonl",
            needles: ["b.jpg", "20000×20000", "DRIVEGEN_MAX_IMAGE_MPIX"]
                .map(String::from)
                .to_vec(),
        },
    ));
    // Bounded memory is the point here; how fast the released binary does it is measured in
    // BENCHMARKS.md (7.2 s on two cores), and the unoptimised test build takes about three
    // times as long, so this case is given a minute to show it ends.
    v.push(case(
        "10,000 boxes in one frame",
        "nuscenes",
        |t| store_with_boxes(t, 10_000),
        &[
            "visibility",
            "--store",
            "{t}/store",
            "--out",
            "{t}/vis.arrow",
            "--device",
            "cpu",
        ],
        &["vis.arrow", "vis.rejects.jsonl"],
        Expect::Succeeds,
    ));
    v.push(case(
        "--threads 100000",
        "nuscenes",
        with_store,
        &["--threads", "100000", "inspect", "{t}/store"],
        &[],
        Expect::SucceedsSaying(vec!["--threads 100000".into(), "per core".into()]),
    ));
    #[cfg(unix)]
    for what in ["fifo", "zero"] {
        let table_err: &'static str = if what == "fifo" { "a FIFO" } else { "a device" };
        // Files found by walking a root: a link to /dev/zero leads out of it.
        let link_err: &'static str = if what == "fifo" {
            "a FIFO"
        } else {
            "leads out of the dataset root"
        };
        v.push(case(
            format!("nuscenes table a {what}"),
            "nuscenes",
            move |t| replace_with(&nusc_table(t, "sample_data"), what),
            &ingest("nuscenes"),
            &["store"],
            fails(&["sample_data.json", table_err]),
        ));
        v.push(case(
            format!("carla annotation a {what}"),
            "carla",
            move |t| replace_with(&carla_anno(t), what),
            &ingest("carla"),
            &["store"],
            rejects(&["00001.json.gz", link_err], 1),
        ));
        v.push(case(
            format!("frenetix log a {what}"),
            "frenetix",
            move |t| replace_with(&frenetix_log(t), what),
            &ingest("frenetix"),
            &["store"],
            rejects(&["Default_logs.csv", link_err], 1),
        ));
        v.push(case(
            format!("build config a {what}"),
            "nuscenes",
            move |t| replace_with(&t.join("build.toml"), what),
            &["build", "{t}/build.toml"],
            &["rel", "rel.work"],
            fails(&["build.toml", table_err]),
        ));
        v.push(case(
            format!("predictions a {what}"),
            "nuscenes",
            move |t| {
                copy_tree(release_fixture(), &t.join("rel"));
                replace_with(&t.join("p.jsonl"), what);
            },
            &[
                "score",
                "--release",
                "{t}/rel",
                "--predictions",
                "{t}/p.jsonl",
            ],
            &[],
            fails(&["p.jsonl", table_err]),
        ));
        v.push(case(
            format!("store.json a {what}"),
            "nuscenes",
            move |t| {
                with_store(t);
                replace_with(&t.join("store/store.json"), what);
            },
            &["inspect", "{t}/store"],
            &[],
            fails(&["store.json", table_err]),
        ));
        v.push(case(
            format!("inspect of a {what}"),
            "nuscenes",
            move |t| replace_with(&t.join("t.arrow"), what),
            &["inspect", "{t}/t.arrow"],
            &[],
            fails(&["t.arrow", table_err]),
        ));
    }
    v.push(case(
        "a prediction line of 2 MiB",
        "nuscenes",
        |t| {
            copy_tree(release_fixture(), &t.join("rel"));
            let long = format!("{{\"qa_id\": \"{}\"}}\n", "x".repeat(2 << 20));
            std::fs::write(t.join("p.jsonl"), long).unwrap();
        },
        &[
            "score",
            "--release",
            "{t}/rel",
            "--predictions",
            "{t}/p.jsonl",
        ],
        &[],
        fails(&["p.jsonl", "line 1", "DRIVEGEN_MAX_LINE_MIB"]),
    ));
    v.push(case(
        "release of one QA table given twice",
        "nuscenes",
        |t| {
            with_store(t);
            common::cli::drivegen(
                &["egomotion"],
                &[("--store", &t.join("store")), ("--out", &t.join("ego"))],
            );
            std::fs::copy(t.join("ego/egodyn_qa.arrow"), t.join("qa.arrow")).unwrap();
        },
        &[
            "release",
            "--qa",
            "{t}/qa.arrow",
            "--qa",
            "{t}/qa.arrow",
            "--store",
            "{t}/store",
            "--out",
            "{t}/rel",
            "--images",
            "paths",
        ],
        &["rel"],
        fails(&["appears twice"]),
    ));
    v.push(case(
        "carla two routes of one name",
        "carla",
        |t| {
            let r = carla_routes(t);
            let twin = r[1].parent().unwrap().join(r[0].file_name().unwrap());
            std::fs::rename(&r[1], twin).unwrap();
        },
        &ingest("carla"),
        &["store"],
        rejects(&["already taken"], 1),
    ));
    v.push(case(
        "carla routes `Town 1` and `Town_1`",
        "carla",
        |t| {
            let r = carla_routes(t);
            std::fs::rename(&r[0], r[0].with_file_name("Town 1")).unwrap();
            std::fs::rename(&r[1], r[1].with_file_name("Town_1")).unwrap();
        },
        &ingest("carla"),
        &["store"],
        rejects(&[], 2),
    ));
    v.push(case(
        "carla box id twice in a frame",
        "carla",
        |t| {
            let p = carla_anno(t);
            let mut text = String::new();
            std::io::Read::read_to_string(
                &mut flate2::read::GzDecoder::new(std::fs::File::open(&p).unwrap()),
                &mut text,
            )
            .unwrap();
            let mut v: Value = serde_json::from_str(&text).unwrap();
            let boxes = v["bounding_boxes"].as_array_mut().unwrap();
            let vehicles: Vec<usize> = (0..boxes.len())
                .filter(|&i| boxes[i]["class"] == "vehicle")
                .collect();
            let id = boxes[vehicles[0]]["id"].clone();
            boxes[vehicles[1]]["id"] = id;
            std::fs::write(&p, gz(&serde_json::to_vec(&v).unwrap())).unwrap();
        },
        &ingest("carla"),
        &["store"],
        rejects(&["appears twice"], 1),
    ));
    v.push(case(
        "frenetix a__b+c beside a+b__c",
        "frenetix",
        |t| {
            let i = t.join("in");
            std::fs::rename(i.join("scene-0001"), i.join("a__b")).unwrap();
            std::fs::rename(i.join("a__b/Default_logs.csv"), i.join("a__b/c_logs.csv")).unwrap();
            std::fs::rename(i.join("scene-0002"), i.join("a")).unwrap();
            std::fs::rename(i.join("a/Default_logs.csv"), i.join("a/b__c_logs.csv")).unwrap();
        },
        &ingest("frenetix"),
        &["store"],
        rejects(&["already taken"], 1),
    ));
    v.push(case(
        "frenetix X_logs.csv beside logs_X.csv",
        "frenetix",
        |t| {
            let s = t.join("in/scene-0001");
            std::fs::copy(s.join("Default_logs.csv"), s.join("logs_Default.csv")).unwrap();
        },
        &ingest("frenetix"),
        &["store"],
        rejects(&["already taken"], 2),
    ));
    #[cfg(unix)]
    v.push(case(
        "frenetix scene folder not UTF-8",
        "frenetix",
        |t| {
            use std::os::unix::ffi::OsStrExt;
            let bad = std::ffi::OsStr::from_bytes(b"scene-\xff01");
            std::fs::rename(t.join("in/scene-0001"), t.join("in").join(bad)).unwrap();
        },
        &ingest("frenetix"),
        &["store"],
        rejects(&["not UTF-8", "\\xFF"], 1),
    ));
    #[cfg(unix)]
    v.push(case(
        "waymo segment name not UTF-8",
        "waymo",
        |t| {
            use std::os::unix::ffi::OsStrExt;
            let comps: Vec<PathBuf> = std::fs::read_dir(t.join("in"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_dir())
                .collect();
            let mut stems: Vec<String> = std::fs::read_dir(t.join("in/vehicle_pose"))
                .unwrap()
                .map(|e| {
                    e.unwrap()
                        .path()
                        .file_stem()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            stems.sort();
            let bad = std::ffi::OsStr::from_bytes(b"seg\xfe.parquet");
            for c in comps {
                let f = c.join(format!("{}.parquet", stems[0]));
                if f.exists() {
                    std::fs::rename(&f, c.join(bad)).unwrap();
                }
            }
        },
        &ingest("waymo"),
        &["store"],
        rejects(&["not UTF-8", "\\xFE"], 1),
    ));
    v.into_iter()
        .map(|c| {
            if c.name.starts_with("10,000 boxes") {
                Case { seconds: 60, ..c }
            } else {
                quick(c)
            }
        })
        .collect()
}

#[test]
fn bounded_special_and_colliding() {
    let _heavy = heavy();
    run_all(bounded_cases());
}

/// SIGTERM and SIGINT at random moments of `synth`, `ingest`, `visibility` and `release`: the
/// process ends with 128 + the signal (or finishes first), and no temporary file or
/// half-written store is left, with nothing outside the outputs changed.
#[cfg(unix)]
#[test]
fn signals_leave_no_temporary_files() {
    let _heavy = heavy();
    let seed = common::random::seed();
    let mut rng = drivegen::qa::record::SplitMix64::new(seed);
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    common::cli::drivegen(
        &[
            "synth",
            "--scenes",
            "3",
            "--duration",
            "6",
            "--width",
            "320",
            "--height",
            "180",
        ],
        &[("--out", &t.join("ds"))],
    );
    common::cli::drivegen(
        &["ingest"],
        &[("--root", &t.join("ds")), ("--out", &t.join("st"))],
    );
    common::cli::drivegen(
        &["egomotion"],
        &[("--store", &t.join("st")), ("--out", &t.join("ego"))],
    );
    let outputs = [
        t.join("syn"),
        t.join("st2"),
        t.join("vis.arrow"),
        t.join("vis.rejects.jsonl"),
        t.join("rel"),
    ];
    let inputs = digest_tree(t, &outputs);
    let release: &[&str] = &[
        "release",
        "--qa",
        "ego/egodyn_qa.arrow",
        "--store",
        "st",
        "--out",
        "rel",
        "--rows-per-shard",
        "20",
    ];
    let commands: [(&[&str], i32); 8] = [
        (release, libc::SIGTERM),
        (release, libc::SIGINT),
        (
            &["synth", "--scenes", "3", "--duration", "6", "--out", "syn"],
            libc::SIGTERM,
        ),
        (&["ingest", "--root", "ds", "--out", "st2"], libc::SIGTERM),
        (
            &[
                "visibility",
                "--store",
                "st",
                "--out",
                "vis.arrow",
                "--device",
                "cpu",
            ],
            libc::SIGINT,
        ),
        (
            &["synth", "--scenes", "3", "--duration", "6", "--out", "syn"],
            libc::SIGINT,
        ),
        (&["ingest", "--root", "ds", "--out", "st2"], libc::SIGINT),
        (
            &[
                "visibility",
                "--store",
                "st",
                "--out",
                "vis.arrow",
                "--device",
                "cpu",
            ],
            libc::SIGTERM,
        ),
    ];
    for (args, sig) in commands {
        let after = Duration::from_millis(5 + rng.below(300));
        let mut child = common::cli::bin()
            .current_dir(t)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(after);
        // SAFETY: signalling a child this test spawned and has not reaped.
        unsafe {
            libc::kill(child.id() as i32, sig);
        }
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert!(
            status.success() || status.code() == Some(128 + sig) || status.signal() == Some(sig),
            "{args:?} after {after:?}: {status:?} (seed {seed})"
        );
        let debris: Vec<String> = digest_tree(t, &[])
            .into_keys()
            .filter(|k| k.ends_with(".tmp") || k.contains(".drivegen-new-"))
            .collect();
        assert!(
            debris.is_empty(),
            "{args:?} after {after:?} left {debris:?} (seed {seed})"
        );
    }
    let after = digest_tree(t, &outputs);
    let changed: Vec<_> = inputs
        .keys()
        .chain(after.keys())
        .filter(|k| inputs.get(*k) != after.get(*k))
        .collect();
    assert!(
        changed.is_empty(),
        "changed outside the outputs: {changed:?}"
    );
}

/// `synth --scenes 100000` writes scene by scene in flat memory: stopped after a few seconds,
/// it has written images and stayed far under the memory bound.
#[test]
fn a_huge_synth_writes_as_it_goes() {
    let _heavy = heavy();
    let tmp = tempfile::tempdir().unwrap();
    let args: Vec<String> = [
        "synth",
        "--scenes",
        "100000",
        "--duration",
        "2",
        "--width",
        "32",
        "--height",
        "18",
        "--no-sweeps",
        "--out",
        "big",
    ]
    .map(String::from)
    .to_vec();
    let mut rss = 0.0;
    let done = run_bounded(&args, tmp.path(), Duration::from_secs(6), &mut rss);
    assert!(done.is_none(), "100000 scenes in 6 s?");
    assert!(rss < MAX_RSS_MIB, "peak RSS {rss:.0} MiB");
    let written = digest_tree(&tmp.path().join("big/samples"), &[])
        .keys()
        .filter(|k| k.ends_with(".jpg"))
        .count();
    assert!(written > 0, "nothing written after 6 s");
}

/// Runs the binary in `dir`, stdout and stderr captured.
fn run_in(dir: &Path, args: &[&str]) -> std::process::Output {
    common::cli::bin()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// A build config over 1 MiB (TOML comments).
fn big_config(t: &Path) {
    let mut text = BUILD.to_string();
    text.push_str(&"# padding\n".repeat(220_000));
    write_build(t, &text);
}

/// Numbers a command cannot use, limits set by a file, forced runs, links out of a root and
/// reports to standard output.
fn safety_cases() -> Vec<Case> {
    let limits =
        |text: &'static str| move |t: &Path| std::fs::write(t.join("limits.toml"), text).unwrap();
    let mut v = Vec::new();
    for (name, args, flag) in [
        (
            "corrupt --frames-per-scene 0",
            &[
                "corrupt",
                "--store",
                "{t}/store",
                "--out",
                "{t}/c",
                "--frames-per-scene",
                "0",
            ][..],
            "--frames-per-scene",
        ),
        (
            "corrupt --max-frames 0",
            &[
                "corrupt",
                "--store",
                "{t}/store",
                "--out",
                "{t}/c",
                "--max-frames",
                "0",
            ][..],
            "--max-frames",
        ),
        (
            "metavqa --per-frame 0",
            &[
                "metavqa",
                "--store",
                "{t}/store",
                "--visibility",
                "{t}/v.arrow",
                "--out",
                "{t}/m",
                "--per-frame",
                "0",
            ][..],
            "--per-frame",
        ),
        (
            "--threads 0",
            &["--threads", "0", "inspect", "{t}/store"][..],
            "--threads",
        ),
        (
            "audit --max-excess nan",
            &["audit", "{t}/rel", "--max-excess", "nan"][..],
            "--max-excess",
        ),
        (
            "balance --answer-ratio 0.5",
            &[
                "balance",
                "--qa",
                "{t}/q.arrow",
                "--out",
                "{t}/b",
                "--target",
                "5",
                "--answer-ratio",
                "0.5",
            ][..],
            "--answer-ratio",
        ),
        (
            "balance --max-blind-excess 2",
            &[
                "balance",
                "--qa",
                "{t}/q.arrow",
                "--out",
                "{t}/b",
                "--target",
                "5",
                "--max-blind-excess",
                "2",
            ][..],
            "--max-blind-excess",
        ),
        (
            "demo --scenes 0",
            &["demo", "--out", "{t}/d", "--scenes", "0"][..],
            "--scenes",
        ),
        (
            "synth --duration inf",
            &["synth", "--out", "{t}/s", "--duration", "inf"][..],
            "--duration",
        ),
        (
            "release --rows-per-shard 0",
            &[
                "release",
                "--qa",
                "{t}/q.arrow",
                "--out",
                "{t}/r",
                "--rows-per-shard",
                "0",
            ][..],
            "--rows-per-shard",
        ),
        (
            "ingest --chunk 0",
            &[
                "ingest", "--root", "{t}/in", "--out", "{t}/st", "--chunk", "0",
            ][..],
            "--chunk",
        ),
    ] {
        v.push(quick(case(
            name,
            "nuscenes",
            with_store,
            args,
            &[],
            fails(&[flag]),
        )));
    }
    v.push(quick(case(
        "a limits file lowering the config limit",
        "nuscenes",
        |t| {
            big_config(t);
            std::fs::write(t.join("limits.toml"), "config_mib = 1\n").unwrap();
        },
        &["--limits", "{t}/limits.toml", "build", "{t}/build.toml"],
        &[],
        fails(&["build.toml", "config_mib", "--limits"]),
    )));
    v.push(quick(case(
        "a limits file with an unknown key",
        "nuscenes",
        limits("table_gib = 1\n"),
        &["--limits", "{t}/limits.toml", "inspect", "{t}/in"],
        &[],
        fails(&["limits.toml", "table_gib", "image_mpix"]),
    )));
    v.push(quick(case(
        "a limits file with a zero",
        "nuscenes",
        limits("table_mib = 0\n"),
        &["--limits", "{t}/limits.toml", "inspect", "{t}/in"],
        &[],
        fails(&["limits.toml", "table_mib", "at least 1"]),
    )));
    v.push(quick(case(
        "a limits file lowering the table limit",
        "nuscenes",
        |t| {
            // Two MiB of JSON whitespace: a valid table over the lowered limit.
            let p = nusc_table(t, "sample_data");
            let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
            f.write_all(&vec![b' '; 2 << 20]).unwrap();
            std::fs::write(t.join("limits.toml"), "table_mib = 1\n").unwrap();
        },
        &[
            "--limits",
            "{t}/limits.toml",
            "ingest",
            "--root",
            "{t}/in",
            "--out",
            "{t}/store",
        ],
        &["store"],
        fails(&["sample_data.json", "table_mib"]),
    )));
    v.push(quick(case(
        "a limits file that is a FIFO",
        "nuscenes",
        |t| mkfifo(&t.join("limits.toml")),
        &["--limits", "{t}/limits.toml", "inspect", "{t}/in"],
        &[],
        fails(&["limits.toml", "a FIFO"]),
    )));
    v.push(case(
        "ingest again after a forced ingest over a user's file",
        "nuscenes",
        |t| {
            std::fs::create_dir_all(t.join("store")).unwrap();
            std::fs::write(t.join("store/mine.txt"), b"a user's file").unwrap();
            let o = run_in(t, &["--force", "ingest", "--root", "in", "--out", "store"]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert_eq!(
                std::fs::read(t.join("store/mine.txt")).unwrap(),
                b"a user's file"
            );
        },
        &ingest("nuscenes"),
        &[],
        fails(&["mine.txt", "--force"]),
    ));
    v.push(case(
        "carla annotation linked out of the root",
        "carla",
        |t| {
            let a = carla_anno(t);
            let outside = t.join("outside.json.gz");
            std::fs::rename(&a, &outside).unwrap();
            std::os::unix::fs::symlink(&outside, &a).unwrap();
        },
        &ingest("carla"),
        &["store"],
        rejects(&["00001.json.gz", "leads out of the dataset root"], 1),
    ));
    v.push(case(
        "frenetix log linked out of the root",
        "frenetix",
        |t| {
            let l = frenetix_log(t);
            let outside = t.join("outside.csv");
            std::fs::rename(&l, &outside).unwrap();
            std::os::unix::fs::symlink(&outside, &l).unwrap();
        },
        &ingest("frenetix"),
        &["store"],
        rejects(&["Default_logs.csv", "leads out of the dataset root"], 1),
    ));
    v
}

#[cfg(unix)]
#[test]
fn ownership_values_and_limits() {
    run_all(safety_cases());
}

/// A build step that runs again removes only what drivegen recorded writing: a user's file in
/// a stage folder stops the build before anything is deleted (and stays under `--force`), and
/// one in the release's `data/` is left alone.
#[test]
fn a_rebuild_deletes_only_what_it_wrote() {
    let _heavy = heavy();
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    write_build(t, BUILD);
    let o = run_in(t, &["build", "build.toml"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let work = digest_tree(&t.join("rel.work"), &[]);
    let find = |name: &str| {
        t.join("rel.work").join(
            work.keys()
                .find(|k| k.ends_with(&format!("/{name}")) || k.as_str() == name)
                .unwrap_or_else(|| panic!("no {name} in the work folder")),
        )
    };
    let qa = find("egodyn_qa.arrow");
    let ego = qa.parent().unwrap().to_path_buf();
    let notes = ego.join("notes.md");
    std::fs::write(&notes, b"mine").unwrap();
    std::fs::write(t.join("rel/data/mine.txt"), b"mine").unwrap();
    for step in ["egomotion.json", "release.json"] {
        std::fs::remove_file(find(step)).unwrap();
    }
    let qa_before = std::fs::read(&qa).unwrap();
    let o = run_in(t, &["build", "build.toml"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("notes.md") && err.contains("--force"), "{err}");
    assert_eq!(
        std::fs::read(&qa).unwrap(),
        qa_before,
        "deleted before refusing"
    );
    assert!(notes.exists());
    let o = run_in(t, &["--force", "build", "build.toml"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&notes).unwrap(), b"mine");
    assert_eq!(std::fs::read(t.join("rel/data/mine.txt")).unwrap(), b"mine");
    assert_eq!(
        std::fs::read(&qa).unwrap(),
        qa_before,
        "the step is deterministic"
    );
}
