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

/// Records a temporary file or folder being written.
pub fn register(path: &Path) {
    with(|s| s.insert(path.to_path_buf()));
}

/// Forgets it: renamed into place, or removed.
pub fn unregister(path: &Path) {
    with(|s| s.remove(path));
}

/// Removes every registered path; returns how many there were.
pub fn remove_all() -> usize {
    let paths: Vec<PathBuf> = with(|s| s.drain().collect());
    for p in &paths {
        let _ = if p.is_dir() {
            std::fs::remove_dir_all(p)
        } else {
            std::fs::remove_file(p)
        };
    }
    paths.len()
}
