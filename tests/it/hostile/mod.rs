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

mod bounded;
mod commands;
mod faults;
mod forged;
mod integrity;
#[cfg(unix)]
mod links;
mod outputs;
mod safety;
mod silent;
mod sources;
use bounded::*;
use commands::*;
use faults::*;
use forged::*;
use integrity::*;
use links::*;
use outputs::*;
use safety::*;
use silent::*;
use sources::*;

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
    /// Exit 0 with none of the needles in stdout or stderr.
    SucceedsWithout(Vec<String>),
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
        Expect::SucceedsWithout(needles) => {
            if code != Some(0) {
                return Err(format!("exit {code:?}; stderr: {stderr}"));
            }
            if let Some(n) = needles.iter().find(|n| stderr.contains(n.as_str())) {
                return Err(format!("the output holds {n:?}: {stderr}"));
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
    // Links under a dataset root, referential integrity, forged releases, where outputs go and
    // outcomes that used to pass in silence.
    let both_ways = link_cases().len()
        + integrity_cases().len()
        + forged_cases().len()
        + output_cases().len()
        + silent_cases().len();
    assert!(both_ways >= 40, "{both_ways} cases");
}
