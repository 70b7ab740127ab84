//! Finding the Python venvs that hold reference implementations (created by scripts/setup.sh).

use std::path::PathBuf;

/// The python of `.venv-<name>` at the repository root. When it is missing the calling test is
/// skipped with a message, unless `DRIVEGEN_REQUIRE_ORACLES=1` (as in CI), where it fails.
pub fn python(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!(".venv-{name}/bin/python"));
    if p.exists() {
        return Some(p);
    }
    if std::env::var("DRIVEGEN_REQUIRE_ORACLES").is_ok_and(|v| v == "1") {
        panic!("{} is missing: run scripts/setup.sh", p.display());
    }
    eprintln!(
        "skipped: {} is missing (scripts/setup.sh creates it)",
        p.display()
    );
    None
}
