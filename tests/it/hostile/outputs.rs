//! Where outputs go: a name is one plain file name, an output never lands in or on an input or
//! another command's finished output, and a folder drivegen made that was swapped for a link
//! is refused instead of written through. The sentinel tree around each case proves nothing
//! outside the declared outputs changed.

use super::forged::with_rows;
use super::*;

fn run_ok(t: &Path, args: &[&str]) {
    let tp = t.to_string_lossy();
    let args: Vec<String> = args.iter().map(|a| a.replace("{t}", &tp)).collect();
    common::cli::ok(
        common::cli::bin()
            .current_dir(t)
            .args(&args)
            .output()
            .unwrap(),
        "a case's setup",
    );
}

/// The fixture release with an export (`e`, LLaVA) and a viewer (`v`) of it already written.
fn with_outputs(t: &Path) {
    with_rows(|_| {})(t);
    run_ok(
        t,
        &["export", "{t}/rel", "--format", "llava", "--out", "{t}/e"],
    );
    run_ok(t, &["view", "{t}/rel", "--out", "{t}/v"]);
}

/// `with_outputs`, then `rel_dir` (relative to the case folder) replaced by a link to the
/// sentinel folder.
fn planted(rel_dir: &'static str) -> impl Fn(&Path) {
    move |t: &Path| {
        with_outputs(t);
        let p = t.join(rel_dir);
        std::fs::remove_dir_all(&p).unwrap();
        std::os::unix::fs::symlink(t.join("sentinel"), &p).unwrap();
    }
}

fn export_named(name: &'static str) -> Vec<&'static str> {
    vec![
        "export",
        "{t}/rel",
        "--format",
        "vlmevalkit",
        "--out",
        "{t}/e",
        "--name",
        name,
    ]
}

pub(super) fn output_cases() -> Vec<Case> {
    let score_to = |out: &'static str| {
        vec![
            "score",
            "--release",
            "{t}/rel",
            "--predictions",
            "{t}/p.jsonl",
            "--out",
            out,
        ]
    };
    let mut v = Vec::new();
    for (name, needle) in [
        ("../../x", "path separator"),
        ("/tmp/drivegen-hostile-abs", "path separator"),
        ("", "is empty"),
        ("a/b", "path separator"),
        ("..", "`.` or `..`"),
        ("bell\u{7}", "control character"),
    ] {
        v.push(case(
            format!("export --name {name:?}"),
            "nuscenes",
            with_rows(|_| {}),
            &export_named(name),
            &["e"],
            fails(&["--name", needle]),
        ));
    }
    for (what, out, needle) in [
        (
            "the release's manifest",
            "{t}/rel/manifest.json",
            "--release",
        ),
        (
            "a file inside the release",
            "{t}/rel/score.json",
            "--release",
        ),
        (
            "a file inside the release's data",
            "{t}/rel/data/score.json",
            "--release",
        ),
        ("the predictions", "{t}/p.jsonl", "--predictions"),
    ] {
        v.push(case(
            format!("score --out onto {what}"),
            "nuscenes",
            with_rows(|_| {}),
            &score_to(out),
            &[],
            fails(&[needle]),
        ));
    }
    v.push(case(
        "score --out onto a store's table",
        "nuscenes",
        |t: &Path| {
            with_rows(|_| {})(t);
            with_store(t);
        },
        &score_to("{t}/store/frames.arrow"),
        &[],
        fails(&["scene store"]),
    ));
    v.push(case(
        "score --out into an export folder",
        "nuscenes",
        with_outputs,
        &score_to("{t}/e/score.json"),
        &[],
        fails(&["export"]),
    ));
    v.push(case(
        "score --html onto the release's card",
        "nuscenes",
        with_rows(|_| {}),
        &[
            "score",
            "--release",
            "{t}/rel",
            "--predictions",
            "{t}/p.jsonl",
            "--html",
            "{t}/rel/README.md",
        ],
        &[],
        fails(&["--release"]),
    ));
    v.push(case(
        "export again, its images/ swapped for a link",
        "nuscenes",
        planted("e/images"),
        &["export", "{t}/rel", "--format", "llava", "--out", "{t}/e"],
        &["e"],
        fails(&["symbolic link", "images"]),
    ));
    v.push(case(
        "export jsonl, its images/ swapped for a link",
        "nuscenes",
        planted("e/images"),
        &["export", "{t}/rel", "--format", "jsonl", "--out", "{t}/e"],
        &["e"],
        fails(&["symbolic link", "images"]),
    ));
    for sub in ["v/rows", "v/images"] {
        v.push(case(
            format!("view again, its {sub} swapped for a link"),
            "nuscenes",
            planted(sub),
            &["view", "{t}/rel", "--out", "{t}/v"],
            &["v"],
            fails(&["symbolic link"]),
        ));
    }
    v.push(case(
        "export into a viewer's folder",
        "nuscenes",
        with_outputs,
        &["export", "{t}/rel", "--format", "llava", "--out", "{t}/v"],
        &["v"],
        fails(&["release viewer"]),
    ));
    v.push(case(
        "view into an export's folder",
        "nuscenes",
        with_outputs,
        &["view", "{t}/rel", "--out", "{t}/e"],
        &["e"],
        fails(&["export"]),
    ));
    v.push(case(
        "export of another release into an export folder",
        "nuscenes",
        |t: &Path| {
            with_outputs(t);
            copy_tree(&t.join("rel"), &t.join("rel2"));
            edit_json(&t.join("rel2/manifest.json"), |m| {
                m["description"] = Value::String("another release".into())
            });
        },
        &["export", "{t}/rel2", "--format", "jsonl", "--out", "{t}/e"],
        &["e"],
        fails(&["another release"]),
    ));
    v.push(case(
        "a second format of the same release into its export folder",
        "nuscenes",
        with_outputs,
        &["export", "{t}/rel", "--format", "jsonl", "--out", "{t}/e"],
        &["e"],
        Expect::Succeeds,
    ));
    v.push(case(
        "a store over a release",
        "nuscenes",
        with_outputs,
        &[
            "ingest", "--source", "nuscenes", "--root", "{t}/in", "--out", "{t}/rel",
        ],
        &["rel"],
        fails(&["release"]),
    ));
    v.push(case(
        "calibrate --out onto its own --config, forced",
        "nuscenes",
        |t: &Path| {
            with_store(t);
            let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/egodyn.toml");
            std::fs::copy(cfg, t.join("c.toml")).unwrap();
        },
        &[
            "--force",
            "calibrate",
            "--store",
            "{t}/store",
            "--config",
            "{t}/c.toml",
            "--out",
            "{t}/c.toml",
            "--report",
            "{t}/r.md",
        ],
        &["r.md"],
        fails(&["--config"]),
    ));
    v.push(case(
        "a merge of shards built from another config",
        "nuscenes",
        |t: &Path| {
            let config = BUILD.replace("duration_s = 3.0", "duration_s = 8.0");
            write_build(t, &config);
            run_ok(t, &["build", "build.toml", "--shard", "0/2"]);
            run_ok(t, &["build", "build.toml", "--shard", "1/2"]);
            write_build(t, &config.replace("seed = 1", "seed = 2"));
        },
        &["build", "build.toml", "--merge", "2"],
        &["rel", "rel.work"],
        fails(&["shard.json", "another config"]),
    ));
    v
}

#[test]
fn outputs_stay_inside_and_apart() {
    run_all(output_cases());
}

/// A folder of an export swapped for a link again and again while the export writes: whatever
/// moment the swap lands, nothing is written through the link.
#[test]
fn a_link_swapped_in_during_an_export_is_never_written_through() {
    let _heavy = heavy();
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    with_rows(|_| {})(t);
    std::fs::create_dir_all(t.join("sentinel")).unwrap();
    let out = t.join("e");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, out, away) = (stop.clone(), out.clone(), t.join("sentinel"));
        std::thread::spawn(move || {
            let images = out.join("images");
            let parked = out.join("parked");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if images.is_dir() && !images.is_symlink() {
                    let _ = std::fs::rename(&images, &parked);
                    let _ = std::os::unix::fs::symlink(&away, &images);
                    std::thread::sleep(Duration::from_millis(2));
                    let _ = std::fs::remove_file(&images);
                    let _ = std::fs::rename(&parked, &images);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    for _ in 0..3 {
        let _ = common::cli::bin()
            .args(["--force", "export", "--format", "llava", "--out"])
            .arg(&out)
            .arg(t.join("rel"))
            .output()
            .unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    let leaked: Vec<_> = std::fs::read_dir(t.join("sentinel"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(leaked.is_empty(), "written through the link: {leaked:?}");
}
