//! An exclusive lock on a folder drivegen writes (a build's work folder, a store being
//! written), so that a second process on the same folder stops at once with a clear message
//! instead of interleaving its files with the first's.
//!
//! The lock is an advisory OS lock on `.drivegen.lock` in the folder (`flock` on Unix), held
//! for the life of the [`FolderLock`]; the OS releases it when the process ends however it
//! ends, so a killed run never leaves a folder locked. The file records the holder's pid for
//! the message.
//!
//! Within one process the lock is re-entrant: `build` holds its release folder while the release
//! stage, called from it, claims the same folder again.

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::{Error, Result};

/// The lock file's name in a locked folder.
pub(crate) const LOCK_FILE: &str = ".drivegen.lock";

/// The locks this process holds, by lock file, with how many holders each has.
static HELD: Mutex<Option<HashMap<PathBuf, (File, usize)>>> = Mutex::new(None);

/// A held lock; released when the last holder in this process drops it.
#[derive(Debug)]
pub struct FolderLock {
    key: PathBuf,
    path: PathBuf,
    /// Whether this process already held the lock when this holder took it.
    nested: bool,
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        let map = held.get_or_insert_with(HashMap::new);
        if let Some((_, n)) = map.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                if let Some((file, _)) = map.remove(&self.key) {
                    // Emptied so that a finished folder's bytes do not depend on the pid;
                    // closing the file releases the OS lock.
                    let _ = file.set_len(0);
                }
            }
        }
    }
}

impl FolderLock {
    /// Locks `dir` (created if missing) for `what` (`build`, `ingest`, …), or says which
    /// process holds it.
    pub fn acquire(dir: &Path, what: &str) -> Result<Self> {
        Self::take(dir, what, false)
    }

    /// Like [`FolderLock::acquire`], but waits for another process's hold to end instead of
    /// refusing: the tasks of a sharded build share the work folder's source steps, which the
    /// first task builds while the others wait to reuse them.
    pub(crate) fn acquire_waiting(dir: &Path, what: &str) -> Result<Self> {
        Self::take(dir, what, true)
    }

    fn take(dir: &Path, what: &str, wait: bool) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let path = dir.join(LOCK_FILE);
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        let map = held.get_or_insert_with(HashMap::new);
        if let Some((_, n)) = map.get_mut(&key) {
            *n += 1;
            return Ok(Self {
                key,
                path,
                nested: true,
            });
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let got = match file.try_lock() {
            Err(TryLockError::WouldBlock) if wait => {
                // Not holding the map while blocked lets this process's other threads lock
                // other folders meanwhile.
                drop(held);
                eprintln!(
                    "drivegen: waiting for {} ({}) to release {}",
                    holder_of(&mut file),
                    what,
                    dir.display()
                );
                file.lock().map_err(|e| Error::io(&path, e))?;
                held = HELD.lock().unwrap_or_else(|p| p.into_inner());
                Ok(())
            }
            other => other,
        };
        let map = held.get_or_insert_with(HashMap::new);
        match got {
            Ok(()) => {
                let pid = std::process::id();
                file.set_len(0)
                    .and_then(|()| file.rewind())
                    .and_then(|()| writeln!(file, "{pid} {} {what}", host()))
                    .map_err(|e| Error::io(&path, e))?;
                let key = std::fs::canonicalize(&path).unwrap_or(key);
                map.insert(key.clone(), (file, 1));
                Ok(Self {
                    key,
                    path,
                    nested: false,
                })
            }
            Err(TryLockError::WouldBlock) => Err(Error::Refused {
                path: dir.to_path_buf(),
                why: format!(
                    "is in use by {}; wait for it to finish, or give this run another folder",
                    holder_of(&mut file)
                ),
            }),
            Err(TryLockError::Error(e)) => Err(Error::io(&path, e)),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether an outer holder in this process holds the folder too.
    pub(crate) fn nested(&self) -> bool {
        self.nested
    }
}

/// This machine's name: on a cluster the pid alone does not say where the holder runs.
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty() && !h.contains(char::is_whitespace))
        .unwrap_or_else(|| "unknown-host".into())
}

/// "pid N on HOST (drivegen WHAT)", as the holder wrote it into the lock file.
fn holder_of(file: &mut File) -> String {
    let mut holder = String::new();
    let _ = file
        .rewind()
        .and_then(|()| file.read_to_string(&mut holder));
    let mut parts = holder.trim().splitn(3, ' ');
    let pid = parts.next().filter(|p| !p.is_empty()).unwrap_or("unknown");
    let host = parts.next().unwrap_or("unknown-host");
    let what = parts.next().unwrap_or("run");
    format!("pid {pid} on {host} (drivegen {what})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_is_let_in_again_and_others_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let a = FolderLock::acquire(dir.path(), "build").unwrap();
        // Another open file description stands for another process.
        let other = File::open(dir.path().join(LOCK_FILE)).unwrap();
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
        let again = FolderLock::acquire(dir.path(), "release").unwrap();
        drop(a);
        assert!(
            matches!(other.try_lock(), Err(TryLockError::WouldBlock)),
            "released while a holder remained"
        );
        drop(again);
        assert!(other.try_lock().is_ok(), "not released by its last holder");
    }

    #[test]
    fn a_waiting_claim_gets_the_folder_once_the_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        // Another open file description stands for another process.
        let other = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.path().join(LOCK_FILE))
            .unwrap();
        other.lock().unwrap();
        assert!(FolderLock::acquire(dir.path(), "build").is_err());
        let released = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = released.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            drop(other);
        });
        let got = FolderLock::acquire_waiting(dir.path(), "build").unwrap();
        assert!(released.load(std::sync::atomic::Ordering::SeqCst));
        t.join().unwrap();
        drop(got);
    }
}
