//! Files are created inside an output folder without following links.
//!
//! The folder a user names (`--out`) may itself be a link: the user made it. Below it, every
//! folder drivegen writes into is one it made, so a link found there was planted by someone
//! else, and writing through it would put files outside the output. Checking with
//! `symlink_metadata` and then writing by path leaves a window in which a folder can be swapped
//! for a link; instead a claimed output folder is recorded ([`anchor`]), and a file below it is
//! reached from the open output folder one component at a time with `O_NOFOLLOW`, then created
//! with `O_EXCL` and renamed into place relative to the same open folder. Nothing a concurrent
//! swap below the output folder does can redirect the write. (The output folder itself is
//! opened by its name each time: a store or release is swapped into place under that name.)

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use crate::{Error, Result};

/// The output folders this process has claimed, by their absolute path as given.
static ROOTS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// `p` made absolute and with `.` components dropped, without resolving links: the spelling
/// output paths are matched by (they are all built by joining onto the folder's own path).
fn lexical(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    abs.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

fn cstr(name: &OsStr) -> std::io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| std::io::Error::other("a NUL byte in a file name"))
}

/// Opens the folder `dir` as the user named it (links in it followed).
fn open_dir(dir: &Path) -> std::io::Result<OwnedFd> {
    let c = cstr(dir.as_os_str())?;
    // SAFETY: a valid NUL-terminated path; the returned descriptor is owned below.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Makes `dir`, an output folder drivegen has claimed, the anchor of the files created below
/// it until the guard is dropped.
#[derive(Debug)]
pub(crate) struct Anchor {
    path: PathBuf,
}

pub(crate) fn anchor(dir: &Path) -> Anchor {
    let path = lexical(dir);
    let mut roots = ROOTS.lock().unwrap_or_else(|p| p.into_inner());
    roots.push(path.clone());
    Anchor { path }
}

impl Drop for Anchor {
    fn drop(&mut self) {
        let mut roots = ROOTS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = roots.iter().rposition(|p| *p == self.path) {
            roots.remove(i);
        }
    }
}

/// The open folder a file at `path` is created in, and its name there.
pub(crate) struct Parent {
    fd: OwnedFd,
    pub name: CString,
}

fn refused(path: &Path, below: &Path) -> Error {
    Error::Refused {
        path: path.to_path_buf(),
        why: format!(
            "is a symbolic link or not a folder inside the output folder {}; drivegen made \
             the folders there and writes nothing through a link it did not make. Remove it \
             and run again",
            below.display()
        ),
    }
}

/// Opens (making it when missing) the folder `name` inside the open folder `at`, never through
/// a link.
fn step(at: &OwnedFd, name: &OsStr, shown: &Path, root: &Path) -> Result<OwnedFd> {
    let c = cstr(name).map_err(|e| Error::io(shown, e))?;
    // SAFETY: valid descriptor and NUL-terminated name.
    let made = unsafe { libc::mkdirat(at.as_raw_fd(), c.as_ptr(), 0o755) };
    if made != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(Error::io(shown, e));
        }
    }
    // SAFETY: as above; the descriptor is owned below.
    let fd = unsafe {
        libc::openat(
            at.as_raw_fd(),
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::ENOTDIR) => refused(shown, root),
            _ => Error::io(shown, e),
        });
    }
    // SAFETY: just opened, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The folder `path` is to be created in, opened: from the innermost claimed output folder
/// holding it, each folder between opened without following links (and made when missing);
/// outside every claimed folder, its parent folder as named (made when missing).
pub(crate) fn parent(path: &Path) -> Result<Parent> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::invalid(path.display().to_string(), "names no file"))?;
    let name = cstr(name).map_err(|e| Error::io(path, e))?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let want = lexical(dir);
    let root = {
        let roots = ROOTS.lock().unwrap_or_else(|p| p.into_inner());
        roots
            .iter()
            .filter(|p| want.starts_with(p))
            .max_by_key(|p| p.components().count())
            .cloned()
    };
    let Some(root) = root else {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let fd = open_dir(dir).map_err(|e| Error::io(dir, e))?;
        return Ok(Parent { fd, name });
    };
    let mut fd = open_dir(&root).map_err(|e| Error::io(&root, e))?;
    let mut shown = root.clone();
    for c in want
        .strip_prefix(&root)
        .unwrap_or(Path::new(""))
        .components()
    {
        let Component::Normal(c) = c else {
            return Err(Error::invalid(
                path.display().to_string(),
                "climbs out of its output folder",
            ));
        };
        shown.push(c);
        fd = step(&fd, c, &shown, &root)?;
    }
    Ok(Parent { fd, name })
}

impl Parent {
    /// Creates `tmp` (a name in this folder) for writing: it must not exist, and a link in its
    /// place is not followed.
    pub fn create(&self, tmp: &CString) -> std::io::Result<File> {
        // SAFETY: valid descriptor and NUL-terminated name; the descriptor is owned below.
        let fd = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                tmp.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o644 as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: just opened, owned by nobody else.
        Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Whether `name` here is something other than a regular file (a link, a folder, a
    /// device), looked at without following links.
    pub(crate) fn is_special(&self, name: &CString) -> bool {
        // SAFETY: a zeroed stat is a valid out-buffer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: valid descriptor, name and out-buffer.
        let r = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                name.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        r == 0 && (st.st_mode & libc::S_IFMT) != libc::S_IFREG
    }

    /// Renames `from` to `to`, both names in this folder.
    pub fn rename(&self, from: &CString, to: &CString) -> std::io::Result<()> {
        let fd = self.fd.as_raw_fd();
        // SAFETY: valid descriptor and names.
        if unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Removes the file `name` in this folder (a link itself, never its target).
    pub fn remove(&self, name: &CString) {
        // SAFETY: valid descriptor and name.
        unsafe { libc::unlinkat(self.fd.as_raw_fd(), name.as_ptr(), 0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_planted_below_an_anchor_is_refused_and_nothing_leaks() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("out");
        let away = t.path().join("away");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::create_dir_all(&away).unwrap();
        std::os::unix::fs::symlink(&away, out.join("images")).unwrap();
        let _a = anchor(&out);
        let e = parent(&out.join("images/x.jpg")).err().unwrap();
        assert!(e.report().to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(&away).unwrap().count(), 0);
        // A folder drivegen makes below the anchor is fine.
        let p = parent(&out.join("rows/a/b.json")).unwrap();
        let tmp = CString::new("b.json.tmp").unwrap();
        drop(p.create(&tmp).unwrap());
        assert!(out.join("rows/a/b.json.tmp").is_file());
    }

    #[test]
    fn the_named_folder_may_itself_be_a_link() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        std::fs::create_dir_all(&real).unwrap();
        let named = t.path().join("named");
        std::os::unix::fs::symlink(&real, &named).unwrap();
        let _a = anchor(&named);
        let p = parent(&named.join("sub/f")).unwrap();
        drop(p.create(&CString::new("f").unwrap()).unwrap());
        assert!(real.join("sub/f").is_file());
    }
}
