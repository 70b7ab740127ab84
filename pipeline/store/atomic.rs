//! Atomic file writes: write to a temporary name in the same folder, fsync, rename.
//!
//! A reader (or a resumed run) therefore sees either the old file or the complete new one,
//! never a torn write. A temporary file is removed when its write fails; one left by a process
//! that was killed is removed by the next write into the same folder (its name carries the
//! writer's pid, and that process no longer exists). A rename never replaces anything but a
//! regular file: `--out /dev/null` is refused instead of turning the device into a file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// What a temporary name carries between the file's name and the writer's pid.
const TEMP_TAG: &str = ".drivegen-";

/// The temporary name a file is written under before it is renamed into place.
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!("{TEMP_TAG}{}.tmp", std::process::id()));
    path.with_file_name(name)
}

/// The pid in a temporary name drivegen made, if `name` is one.
fn temp_pid(name: &str) -> Option<u32> {
    let rest = name.strip_suffix(".tmp")?;
    let at = rest.rfind(TEMP_TAG)?;
    rest[at + TEMP_TAG.len()..].parse().ok()
}

/// Whether `name` is a temporary name drivegen writes under.
pub(crate) fn is_temp_name(name: &str) -> bool {
    temp_pid(name).is_some()
}

/// Removes the temporary files that processes no longer running left in `dir`, once per
/// folder and process. Only where `/proc` tells which processes run (Linux).
fn sweep_stale(dir: &Path) {
    static SWEPT: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let proc_fs = Path::new("/proc");
    if !proc_fs.join("self").exists() {
        return;
    }
    {
        let mut swept = SWEPT.lock().unwrap_or_else(|p| p.into_inner());
        if swept.iter().any(|d| d == dir) {
            return;
        }
        swept.push(dir.to_path_buf());
    }
    remove_stale_temps(dir);
}

/// Removes the temporary files in `dir` of processes no longer running (a killed run's), at
/// once. Only where `/proc` tells which processes run (Linux); elsewhere none is removed.
pub(crate) fn remove_stale_temps(dir: &Path) {
    let proc_fs = Path::new("/proc");
    if !proc_fs.join("self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let me = std::process::id();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(temp_pid) else {
            continue;
        };
        if pid != me && !proc_fs.join(pid.to_string()).exists() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Refuses to replace `path` when it is something other than a regular file (a device, a
/// FIFO, a link, a folder).
fn replaceable(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() => Err(not_regular(path)),
        _ => Ok(()),
    }
}

fn not_regular(path: &Path) -> Error {
    Error::Refused {
        path: path.to_path_buf(),
        why: "exists and is not a regular file; drivegen writes only regular files and will \
              not replace it"
            .into(),
    }
}

/// Whether a report path is `-`, which means standard output.
pub(crate) fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Writes a report where the user asked: standard output for `-`, else atomically into a file
/// drivegen may write ([`super::owner::file_output`]).
pub(crate) fn write_report(path: &Path, bytes: &[u8]) -> Result<()> {
    if is_stdout(path) {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        return out
            .write_all(bytes)
            .and_then(|()| out.flush())
            .map_err(|e| Error::io("standard output", e));
    }
    super::owner::file_output(path)?;
    write_atomic(path, bytes)
}

/// Encodes `img` as PNG (the `image` crate's fast deflate) and writes it to `path` atomically.
pub(crate) fn write_png(path: &Path, img: impl Into<image::DynamicImage>) -> Result<()> {
    let bytes = encode_png(&path.display(), img)?;
    write_atomic(path, &bytes)
}

/// The PNG bytes [`write_png`] writes (`what` names the image in an error).
pub(crate) fn encode_png(
    what: &dyn std::fmt::Display,
    img: impl Into<image::DynamicImage>,
) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    img.into()
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .map_err(|e| Error::Tool {
            tool: "png".into(),
            detail: format!("{what}: {e}"),
        })?;
    Ok(bytes)
}

/// An Arrow IPC file writer for a stage's table at `path`, written atomically. Record batches
/// are compressed with zstd (an IPC format option that pyarrow, polars and arrow-rs read):
/// the tables are mostly repeated ids, prompts and JSON, which shrink several-fold, and
/// they are the bulk of a work folder once images are no longer written.
pub(crate) fn ipc_writer(
    path: &Path,
    schema: &arrow::datatypes::Schema,
) -> Result<arrow::ipc::writer::FileWriter<AtomicFile>> {
    let opts = arrow::ipc::writer::IpcWriteOptions::default()
        .try_with_compression(Some(arrow::ipc::CompressionType::ZSTD))?;
    Ok(arrow::ipc::writer::FileWriter::try_new_with_options(
        AtomicFile::create(path)?,
        schema,
        opts,
    )?)
}

/// Writes `bytes` to `path` atomically, creating parent folders.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes).map_err(|e| Error::io(path, e))?;
    f.commit()
}

/// A file being written under a temporary name; [`AtomicFile::commit`] moves it into place.
/// Dropping it uncommitted removes the temporary file. Both names are reached from the open
/// folder that holds them, never through a link ([`super::nofollow`]).
pub(crate) struct AtomicFile {
    path: PathBuf,
    tmp: PathBuf,
    dir: super::nofollow::Parent,
    tmp_name: std::ffi::CString,
    out: Option<BufWriter<File>>,
}

impl AtomicFile {
    pub fn create(path: &Path) -> Result<Self> {
        replaceable(path)?;
        let folder = path.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(folder) = folder {
            sweep_stale(folder);
        }
        let tmp = temp_path(path);
        let tmp_name = std::ffi::CString::new(
            tmp.file_name()
                .map(|n| n.as_encoded_bytes().to_vec())
                .unwrap_or_default(),
        )
        .map_err(|e| Error::io(&tmp, std::io::Error::other(e)))?;
        // The folders are made under the registry's lock too: made after a signal's cleanup
        // emptied a half-written store, they would outlive the process.
        let mut refused = None;
        let made = super::cleanup::create_registered(&tmp, || {
            let dir = match super::nofollow::parent(path) {
                Ok(d) => d,
                Err(e) => {
                    refused = Some(e);
                    return Err(std::io::Error::other("refused"));
                }
            };
            let file = match dir.create(&tmp_name) {
                // A temporary file of this process's that a failed write left behind.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    dir.remove(&tmp_name);
                    dir.create(&tmp_name)
                }
                r => r,
            }?;
            Ok((dir, file))
        });
        let (dir, file) = match (made, refused) {
            (_, Some(e)) => return Err(e),
            (Ok(m), None) => m,
            (Err(e), None) => return Err(Error::io(&tmp, e)),
        };
        Ok(Self {
            path: path.to_path_buf(),
            tmp,
            dir,
            tmp_name,
            out: Some(BufWriter::with_capacity(1 << 20, file)),
        })
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes, syncs and renames into place.
    pub(crate) fn commit(mut self) -> Result<()> {
        let Some(out) = self.out.take() else {
            return Ok(());
        };
        let done = out
            .into_inner()
            .map_err(|e| Error::io(&self.tmp, e.into_error()))
            .and_then(|file| file.sync_all().map_err(|e| Error::io(&self.tmp, e)))
            .and_then(|()| {
                if self.dir.is_special(&self.dir.name) {
                    return Err(not_regular(&self.path));
                }
                self.dir
                    .rename(&self.tmp_name, &self.dir.name)
                    .map_err(|e| Error::io(&self.path, e))
            });
        if done.is_err() {
            // A full disk or a failed rename must not leave the half-written file behind.
            self.dir.remove(&self.tmp_name);
        }
        super::cleanup::unregister(&self.tmp);
        done
    }
}

impl AtomicFile {
    /// The error with the file named: writers layered on top (Arrow, Parquet, image encoders)
    /// pass an I/O error on as a message, and "No space left on device" alone names nothing.
    fn named(&self, e: std::io::Error) -> std::io::Error {
        std::io::Error::new(e.kind(), format!("{}: {e}", self.path.display()))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let r = match self.out.as_mut() {
            Some(o) => o.write(buf),
            None => Err(std::io::Error::other("file already committed")),
        };
        r.map_err(|e| self.named(e))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let r = match self.out.as_mut() {
            Some(o) => o.flush(),
            None => Ok(()),
        };
        r.map_err(|e| self.named(e))
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.out.take().is_some() {
            self.dir.remove(&self.tmp_name);
            super::cleanup::unregister(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncommitted_file_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        {
            let mut f = AtomicFile::create(&p).unwrap();
            f.write_all(b"half").unwrap();
        }
        assert!(!p.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        write_atomic(&p, b"whole").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"whole");
    }

    #[test]
    fn a_dead_writers_temporary_file_is_swept_and_others_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        // pid 0 is never a user process: its writer is gone.
        let dead = dir.path().join("a.arrow.drivegen-0.tmp");
        let mine = dir.path().join("users-own.123.tmp");
        std::fs::write(&dead, b"x").unwrap();
        std::fs::write(&mine, b"x").unwrap();
        write_atomic(&dir.path().join("b.txt"), b"b").unwrap();
        if Path::new("/proc/self").exists() {
            assert!(!dead.exists());
        }
        assert!(mine.exists(), "a file drivegen did not name was removed");
    }

    #[cfg(unix)]
    #[test]
    fn a_device_or_link_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("out.json");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let e = write_atomic(&link, b"x").unwrap_err().report().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
