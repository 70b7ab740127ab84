//! Running the `drivegen` binary from integration tests.

use std::path::Path;
use std::process::{Command, Output};

/// The binary with progress bars off (their redraws would fill the captured output) and
/// `XDG_RUNTIME_DIR` set where it is missing (Mesa complains on stderr without it).
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_drivegen"));
    c.env("DRIVEGEN_PROGRESS", "0");
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        c.env("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
    c
}

/// The stdout of a finished command; panics with its status and both streams when it failed.
pub fn ok(o: Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what} failed ({:?}):\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `drivegen ARGS` followed by each `FLAG PATH` of `paths` (an empty flag passes the path
/// alone) and returns its stdout; panics when it fails.
pub fn drivegen(args: &[&str], paths: &[(&str, &Path)]) -> String {
    let mut c = bin();
    c.args(args);
    for (flag, p) in paths {
        if !flag.is_empty() {
            c.arg(flag);
        }
        c.arg(p);
    }
    ok(c.output().unwrap(), &format!("drivegen {args:?}"))
}
