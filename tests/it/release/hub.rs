//! The release as the Hugging Face Hub reads it, on the shared build of every family
//! (`tests/oracles/hub_check.py`): the card's configs loaded with `datasets`, one per family
//! and a default of all, each holding exactly the rows the manifest counts for it, and row
//! groups small enough for the dataset viewer.

use crate::common;

use common::built::built;

#[test]
fn every_family_loads_as_its_own_config() {
    let Some(py) = common::oracle::python("interop") else {
        return;
    };
    let release = built().join("release");
    let home = tempfile::tempdir().unwrap();
    let text = common::oracle::run_script(
        &py,
        "hub_check.py",
        &[release.as_os_str()],
        &[
            ("HF_DATASETS_OFFLINE", "1".as_ref()),
            ("HF_HOME", home.path().as_os_str()),
        ],
    );
    assert!(text.contains("hub: 6 configs"), "{text}");
}
