//! Replacing a whole folder at once: the new store is written beside the old one and the two
//! are exchanged in one step.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// What a sibling folder's name carries between the folder's name and the writer's pid.
const TAG: &str = ".drivegen-new-";

/// The folder a new version of `dir` is written in, beside it.
pub(crate) fn sibling(dir: &Path) -> PathBuf {
    let mut name = dir
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!("{TAG}{}", std::process::id()));
    dir.with_file_name(name)
}

/// Removes the siblings of `dir` that writers no longer running left (killed mid-ingest or
/// between the exchange and the removal of the old store). Only where `/proc` tells which
/// processes run.
pub(crate) fn sweep_stale(dir: &Path) {
    let proc_fs = Path::new("/proc");
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return;
    };
    if !proc_fs.join("self").exists() {
        return;
    }
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let prefix = format!("{}{TAG}", name.to_string_lossy());
    let Ok(rd) = std::fs::read_dir(parent) else {
        return;
    };
    for e in rd.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = n.strip_prefix(&prefix).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && pid != std::process::id() && !proc_fs.join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Exchanges the folders `a` and `b` (both exist): atomically where the OS can
/// (`renameat2(RENAME_EXCHANGE)` on Linux), else by two renames.
pub(crate) fn exchange(a: &Path, b: &Path) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let ca = CString::new(a.as_os_str().as_bytes()).map_err(|_| Error::Refused {
            path: a.to_path_buf(),
            why: "holds a NUL byte".into(),
        })?;
        let cb = CString::new(b.as_os_str().as_bytes()).map_err(|_| Error::Refused {
            path: b.to_path_buf(),
            why: "holds a NUL byte".into(),
        })?;
        // SAFETY: both are valid NUL-terminated paths that outlive the call.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                ca.as_ptr(),
                libc::AT_FDCWD,
                cb.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if !matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) {
            return Err(Error::io(b, e));
        }
    }
    // The fallback has a moment when `b` is missing; a crash there leaves the old folder under
    // the `aside` name and the new one under `a`.
    let mut aside = b.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    aside.push(format!(".drivegen-old-{}", std::process::id()));
    let aside = b.with_file_name(aside);
    std::fs::rename(b, &aside).map_err(|e| Error::io(b, e))?;
    std::fs::rename(a, b).map_err(|e| Error::io(a, e))?;
    std::fs::rename(&aside, a).map_err(|e| Error::io(&aside, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_are_exchanged_whole() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        std::fs::write(a.join("new"), b"").unwrap();
        std::fs::write(b.join("old"), b"").unwrap();
        exchange(&a, &b).unwrap();
        assert!(b.join("new").exists() && a.join("old").exists());
        assert!(!b.join("old").exists() && !a.join("new").exists());
    }

    #[test]
    fn a_dead_writers_sibling_is_swept() {
        let d = tempfile::tempdir().unwrap();
        let store = d.path().join("store");
        let dead = d.path().join("store.drivegen-new-0");
        let other = d.path().join("store.backup");
        std::fs::create_dir_all(&dead).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        sweep_stale(&store);
        if Path::new("/proc/self").exists() {
            assert!(!dead.exists());
        }
        assert!(other.exists());
    }
}
