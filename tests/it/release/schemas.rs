//! The published schemas in `schemas/` equal what the code writes, and written files match them.
//! `DRIVEGEN_BLESS=1 cargo test --test it schemas` rewrites the JSON files after a deliberate change.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use drivegen::config::StageConfig;
use drivegen::store::schema::schema_json;
use drivegen::store::{Store, Table};

fn schemas_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas")
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap() + "\n"
}

#[test]
fn published_schemas_match_the_code() {
    let bless = std::env::var("DRIVEGEN_BLESS").is_ok_and(|v| v == "1");
    for (path, table, schema) in drivegen::schemas::published() {
        let file = schemas_dir().join(path);
        let want = pretty(&schema_json(table, &schema));
        if bless {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, &want).unwrap();
        }
        let have =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(
            have,
            want,
            "{} differs from the code; rerun with DRIVEGEN_BLESS=1 if intended",
            file.display()
        );
    }
}

#[test]
fn no_stale_schema_files() {
    let listed: Vec<String> = drivegen::schemas::published()
        .iter()
        .map(|e| e.0.to_string())
        .collect();
    let mut stack = vec![schemas_dir()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                let rel = p
                    .strip_prefix(schemas_dir())
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                assert!(listed.contains(&rel), "{rel} is not written by any table");
            }
        }
    }
}

fn ingest_fixture(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    common::nusc_fixture::Fixture::new(2).write(&root, "v1.0-mini");
    let out = dir.join("store");
    drivegen::ingest::nuscenes::ingest(&drivegen::ingest::nuscenes::IngestOptions {
        root,
        version: "v1.0-mini".into(),
        out: out.clone(),
        taxonomy: drivegen::taxonomy::Taxonomy::load(None).unwrap(),
        rules: Default::default(),
        chunk_scenes: 4,
        links: Default::default(),
    })
    .unwrap();
    out
}

#[test]
fn written_store_matches_published_json() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&ingest_fixture(dir.path())).unwrap();
    for t in Table::ALL {
        let file = schemas_dir().join(format!("scene_store/{}.json", t.name()));
        let published: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let written = store.reader(t).unwrap().schema();
        assert_eq!(
            schema_json(t.name(), &written),
            published,
            "{}",
            t.file_name()
        );
    }
}

#[test]
fn pyarrow_reads_the_store() {
    let Some(py) = common::oracle::python("oracles") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = ingest_fixture(dir.path());
    let o = Command::new(py)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles/read_store.py"))
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = |t: &str| v[t]["rows"].as_u64().unwrap();
    assert_eq!(
        (
            rows("scenes"),
            rows("frames"),
            rows("cameras"),
            rows("objects")
        ),
        (2, 10, 18, 12)
    );
    // One record batch per scene in every table.
    for t in ["scenes", "frames", "ego_poses", "cameras", "objects"] {
        assert_eq!(v[t]["batches"], 2, "{t}");
    }
    assert_eq!(v["frames"]["columns"]["frame_idx"], "uint32");
    assert_eq!(
        v["objects"]["columns"]["attributes"],
        "list<item: string not null>"
    );
    assert_eq!(v["objects"]["first"]["track_id"], "inst_car_0");
    assert_eq!(v["cameras"]["first"]["camera"], "CAM_FRONT");
}
