//! The release as the Hugging Face Hub reads it, on the shared build of every family
//! (`tests/oracles/hub_check.py`): the card's configs loaded with `datasets`, one per family
//! and a default of all, each holding exactly the rows the manifest counts for it, and row
//! groups small enough for the dataset viewer.

use crate::common;

use std::process::Command;

use common::built::built;

#[test]
fn every_family_loads_as_its_own_config() {
    let Some(py) = common::oracle::python("interop") else {
        return;
    };
    let release = built().join("release");
    let home = tempfile::tempdir().unwrap();
    let o = Command::new(&py)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/oracles/hub_check.py"
        ))
        .arg(&release)
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HOME", home.path())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.status.success() && text.contains(", 0 problems"),
        "hub_check.py: {text}"
    );
    assert!(text.contains("hub: 6 configs"), "{text}");
}
