//! An exclusive lock on a folder drivegen writes (a build's work folder, a store being
//! written), so that a second process on the same folder stops at once with a clear message
//! instead of interleaving its files with the first's.
//!
//! The lock is an advisory OS lock on `.drivegen.lock` in the folder (`flock` on Unix), held
//! for the life of the [`FolderLock`]; the OS releases it when the process ends however it
//! ends, so a killed run never leaves a folder locked. The file records the holder's pid for
//! the message.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The lock file's name in a locked folder.
pub const LOCK_FILE: &str = ".drivegen.lock";

/// A held lock; released on drop.
#[derive(Debug)]
pub struct FolderLock {
    _file: File,
    path: PathBuf,
}

impl FolderLock {
    /// Locks `dir` (created if missing) for `what` (`build`, `ingest`, …), or says which
    /// process holds it.
    pub fn acquire(dir: &Path, what: &str) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => {
                let pid = std::process::id();
                file.set_len(0)
                    .and_then(|()| file.rewind())
                    .and_then(|()| writeln!(file, "{pid} {what}"))
                    .map_err(|e| Error::io(&path, e))?;
                Ok(Self { _file: file, path })
            }
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let mut parts = holder.split_whitespace();
                let pid = parts.next().unwrap_or("unknown");
                let cmd = parts.next().unwrap_or("drivegen");
                Err(Error::Usage(format!(
                    "{} is in use by pid {pid} (drivegen {cmd}); wait for it to finish, or give \
                     this run another folder",
                    dir.display()
                )))
            }
            Err(TryLockError::Error(e)) => Err(Error::io(&path, e)),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_pid() {
        let dir = std::env::temp_dir().join(format!("drivegen-lock-{}", std::process::id()));
        let a = FolderLock::acquire(&dir, "build");
        assert!(a.is_ok());
        let b = FolderLock::acquire(&dir, "build");
        let msg = b
            .map(|_| ())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            msg.contains(&format!("in use by pid {}", std::process::id())),
            "{msg}"
        );
        drop(a);
        assert!(FolderLock::acquire(&dir, "build").is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
