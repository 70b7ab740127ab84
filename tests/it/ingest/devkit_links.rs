//! Datasets laid out with symbolic links, as the nuScenes devkit and mmdetection3d set them up:
//! a dataroot whose `samples/`, `sweeps/`, `maps/` and `v1.0-*` link to another disk, or a
//! subset made of one link per file. Both ingest into the very store the plain folder gives;
//! `--strict-links` refuses them, naming the link.

#![cfg(unix)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::cli::{bin, drivegen};

/// The folders a devkit dataroot links to another disk.
const LINKED: [&str; 4] = ["samples", "sweeps", "maps", "v1.0-mini"];

fn ingest(root: &Path, out: &Path, extra: &[&str]) -> Output {
    bin()
        .args(["ingest", "--source", "nuscenes", "--root"])
        .arg(root)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

/// `to` mirrors `from` with one link per file (folders made, drivegen's own marks left out).
fn link_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name.to_string_lossy().starts_with(".drivegen") {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            link_files(&e.path(), &to.join(&name));
        } else {
            std::os::unix::fs::symlink(e.path(), to.join(&name)).unwrap();
        }
    }
}

/// The store's tables and reject log, by file name, as bytes.
fn tables(store: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(store).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".arrow") || name == "rejects.jsonl" {
            out.insert(name, std::fs::read(&p).unwrap());
        }
    }
    out
}

/// `store.json` less the root, which names the folder each ingest was given.
fn meta(store: &Path) -> Value {
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(store.join("store.json")).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("source_root");
    v
}

#[test]
fn devkit_link_layouts_ingest_like_the_plain_folder() {
    let (disk, here) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let plain = disk.path().join("nuscenes");
    drivegen(
        &[
            "synth",
            "--format",
            "nuscenes",
            "--scenes",
            "2",
            "--duration",
            "8",
            "--width",
            "160",
            "--height",
            "90",
        ],
        &[("--out", &plain)],
    );
    // (a) the devkit layout: the data folders on another disk, linked into the root.
    let devkit = here.path().join("devkit");
    std::fs::create_dir_all(&devkit).unwrap();
    for d in LINKED {
        std::os::unix::fs::symlink(plain.join(d), devkit.join(d)).unwrap();
    }
    // (b) a subset of per-file links.
    let per_file = here.path().join("per_file");
    link_files(&plain, &per_file);

    let stores = [
        (&plain, here.path().join("s_plain")),
        (&devkit, here.path().join("s_devkit")),
        (&per_file, here.path().join("s_per_file")),
    ];
    for (root, out) in &stores {
        let o = ingest(root, out, &["--strict"]);
        assert!(
            o.status.success(),
            "{}: {}",
            root.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let (want_tables, want_meta) = (tables(&stores[0].1), meta(&stores[0].1));
    assert_eq!(want_meta["counts"]["scenes"], 2, "{want_meta}");
    assert_eq!(want_meta["strict_links"], false, "{want_meta}");
    assert_eq!(want_tables.len(), 6, "{:?}", want_tables.keys());
    for (root, out) in &stores[1..] {
        assert_eq!(meta(out), want_meta, "{}", root.display());
        let got = tables(out);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want_tables.keys().collect::<Vec<_>>()
        );
        for (name, bytes) in &want_tables {
            assert!(got[name] == *bytes, "{name} differs for {}", root.display());
        }
    }
    // The paths recorded are the dataset's own, relative to the root, never a link's target.
    let store = drivegen::store::Store::open(&stores[1].1).unwrap();
    let cameras: Vec<_> = store
        .scenes()
        .unwrap()
        .flat_map(|s| s.unwrap().cameras)
        .collect();
    assert!(!cameras.is_empty());
    let disk_path = disk.path().to_string_lossy().into_owned();
    for c in &cameras {
        assert!(
            (c.image_path.starts_with("samples/") || c.image_path.starts_with("sweeps/"))
                && !c.image_path.contains(&disk_path),
            "{}",
            c.image_path
        );
    }

    // Strict links: both link layouts are refused with the link named, the plain folder is
    // not, and the store records the mode.
    for (root, link) in [
        (&devkit, devkit.join("v1.0-mini")),
        (&per_file, per_file.join("v1.0-mini/category.json")),
    ] {
        let out = here.path().join("s_strict");
        let o = ingest(root, &out, &["--strict-links"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success(),
            "{} was ingested: {err}",
            root.display()
        );
        assert!(
            err.contains(&format!("symbolic link {}", link.display())),
            "{}: {err}",
            root.display()
        );
        assert!(!out.join("store.json").exists());
    }
    // A build's `strict_links` is the same switch.
    let config = here.path().join("build.toml");
    std::fs::write(
        &config,
        format!(
            "name = \"links\"\nseed = 1\nout = '{}'\n[input]\nkind = \"nuscenes\"\nroot = '{}'\n\
             strict_links = true\n[stages]\negomotion = true\n",
            here.path().join("rel").display(),
            devkit.display()
        ),
    )
    .unwrap();
    let o = bin().arg("build").arg(&config).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "the build ran: {err}");
    let link = devkit.join("v1.0-mini");
    assert!(
        err.contains(&format!("symbolic link {}", link.display())),
        "{err}"
    );

    let out = here.path().join("s_plain_strict");
    let o = ingest(&plain, &out, &["--strict-links", "--strict"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(meta(&out)["strict_links"], true);
    assert_eq!(tables(&out), want_tables);
}

#[test]
fn strict_links_refuse_scenes_whose_images_link_out() {
    // Tables inside the root, one scene's images linked out: that scene alone is refused.
    let (disk, here) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = here.path().join("nuscenes");
    drivegen(
        &[
            "synth",
            "--format",
            "nuscenes",
            "--scenes",
            "2",
            "--duration",
            "8",
            "--width",
            "160",
            "--height",
            "90",
        ],
        &[("--out", &root)],
    );
    let front = root.join("samples/CAM_FRONT");
    std::fs::rename(&front, disk.path().join("CAM_FRONT")).unwrap();
    std::os::unix::fs::symlink(disk.path().join("CAM_FRONT"), &front).unwrap();
    let out = here.path().join("store");
    let o = ingest(&root, &out, &["--strict-links"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains(&format!("symbolic link {}", front.display()))
            && err.contains("no scene could be ingested"),
        "{err}"
    );
    let o = ingest(&root, &out, &["--strict"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
