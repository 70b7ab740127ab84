//! What to remove when the process is stopped by a signal: the temporary files and
//! half-written stores in flight.
//!
//! Writers register what they create under a temporary name and unregister it once it is
//! renamed into place or removed. The binary's signal thread calls [`remove_all`] on SIGINT or
//! SIGTERM before it exits; a SIGKILL leaves them to the sweep of the next run instead.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

static LIVE: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut HashSet<PathBuf>) -> T) -> T {
    let mut g = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(HashSet::new))
}

/// Makes a temporary file or folder with `create` and records it, both under the registry's
/// lock: a signal's cleanup, which takes the same lock and keeps it until the process exits,
/// finds either nothing made yet (and `create` never runs) or the path made and recorded.
/// Recording first and making after would let a cleanup run in between and miss what is then
/// made (a half-written store left behind).
pub(crate) fn create_registered<T>(
    path: &Path,
    create: impl FnOnce() -> std::io::Result<T>,
) -> std::io::Result<T> {
    let mut g = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    let made = create()?;
    g.get_or_insert_with(HashSet::new)
        .insert(path.to_path_buf());
    Ok(made)
}

/// Forgets it: renamed into place, or removed.
pub(crate) fn unregister(path: &Path) {
    with(|s| s.remove(path));
}

/// Removes every registered path; returns how many there were. For the signal thread only:
/// the registry stays locked afterwards, so no other thread makes anything more before the
/// process exits.
pub(crate) fn remove_all() -> usize {
    let mut g = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    let paths: Vec<PathBuf> = g.get_or_insert_with(HashSet::new).drain().collect();
    for p in &paths {
        let _ = if p.is_dir() {
            std::fs::remove_dir_all(p)
        } else {
            std::fs::remove_file(p)
        };
    }
    std::mem::forget(g);
    paths.len()
}
