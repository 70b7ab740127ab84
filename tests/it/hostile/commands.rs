//! Bad configs, command lines, stores and releases.

use super::*;

// ---- configs, command lines, stores, releases ------------------------------------------

pub(super) const BUILD: &str = r#"
name = "hostile"
seed = 1
out = "rel"

# A scene of 3 s holds no 3 s clip: this release is built to have no questions at all.
[families.egodyn]
min_rows = 0
blind_margin = 1.0

[input]
kind = "synth"
scenes = 1
duration_s = 3.0
width = 160
height = 90

[stages]
egomotion = true
"#;

pub(super) fn write_build(t: &Path, text: &str) {
    std::fs::write(t.join("build.toml"), text).unwrap();
}

pub(super) fn config_cases() -> Vec<Case> {
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
pub(super) fn configs() {
    run_all(config_cases());
}

pub(super) fn with_store(t: &Path) {
    copy_tree(&fixtures().join("store"), &t.join("store"));
}

pub(super) fn cli_cases() -> Vec<Case> {
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
pub(super) fn command_lines() {
    run_all(cli_cases());
}

pub(super) fn store_edit(f: fn(&Path)) -> impl Fn(&Path) {
    move |t: &Path| {
        with_store(t);
        f(&t.join("store"));
    }
}

pub(super) fn store_cases() -> Vec<Case> {
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
pub(super) fn stores() {
    run_all(store_cases());
}

/// A small release, built once.
pub(super) fn release_fixture() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| built_release("release-case", BUILD))
}

/// Builds `config` in `fixtures()/name` once; its release folder.
pub(super) fn built_release(name: &str, config: &str) -> PathBuf {
    let d = fixtures().join(name);
    std::fs::create_dir_all(&d).unwrap();
    write_build(&d, config);
    common::cli::ok(
        common::cli::bin()
            .current_dir(&d)
            .args(["build", "build.toml"])
            .output()
            .unwrap(),
        name,
    );
    d.join("rel")
}

pub(super) fn with_release(f: fn(&Path)) -> impl Fn(&Path) {
    with_copy(release_fixture, f)
}

/// The release `fixture()` copied to `rel/` of the case folder, an empty predictions file
/// beside it, and `f` applied to it.
pub(super) fn with_copy(fixture: fn() -> &'static Path, f: fn(&Path)) -> impl Fn(&Path) {
    move |t: &Path| {
        copy_tree(fixture(), &t.join("rel"));
        std::fs::write(t.join("p.jsonl"), b"").unwrap();
        f(&t.join("rel"));
    }
}

pub(super) fn first_shard(rel: &Path) -> PathBuf {
    let mut v: Vec<_> = std::fs::read_dir(rel.join("data"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v[0].clone()
}

pub(super) fn release_cases() -> Vec<Case> {
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
pub(super) fn releases() {
    run_all(release_cases());
}
