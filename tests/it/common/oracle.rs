//! Finding the Python venvs that hold reference implementations (created by scripts/setup.sh).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

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

/// Called by a test that cannot check without `what` (a tool such as ffmpeg): the test is
/// skipped with a message, unless `DRIVEGEN_REQUIRE_ORACLES=1` (as in CI), where it fails.
pub fn missing(what: &str) {
    if std::env::var("DRIVEGEN_REQUIRE_ORACLES").is_ok_and(|v| v == "1") {
        panic!("{what} is missing: run scripts/setup.sh");
    }
    eprintln!("skipped: {what} is missing (scripts/setup.sh installs it)");
}

/// Runs `tests/oracles/SCRIPT` with `py`, `args` and the environment `envs`; returns its output,
/// which must come from a successful run that reports ", 0 problems".
pub fn run_script(py: &Path, script: &str, args: &[&OsStr], envs: &[(&str, &OsStr)]) -> String {
    let o = Command::new(py)
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/oracles")
                .join(script),
        )
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.status.success() && text.contains(", 0 problems"),
        "{script}: {text}"
    );
    text
}
