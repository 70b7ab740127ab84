//! The build of every family on a tiny synthetic corpus that the release tests share (built
//! once per test binary).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::build_config::EVERY_STAGE as CONFIG;

/// The build every test starts from (built once per test binary).
pub fn built() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        std::fs::write(dir.join("build.toml"), CONFIG).unwrap();
        let o = super::cli::bin()
            .current_dir(&dir)
            .args(["build", "build.toml"])
            .output()
            .unwrap();
        let out = super::cli::ok(o, "drivegen build");
        assert!(
            out.contains("validate"),
            "the build did not validate:\n{out}"
        );
        dir
    })
}
