//! Ownership of output folders: drivegen deletes or replaces only what it recorded writing.
//!
//! A folder drivegen writes (a store, a build's work folder, a release, a stage's output)
//! carries `.drivegen-owner.json`: what wrote it, whether that run finished, and the entries
//! (top-level names) it wrote. Claiming a folder refuses, before anything is touched, one that
//! holds entries drivegen did not record — a user's folder, or files added to one of ours —
//! unless the process was started with `--force`, which names them and goes on.
//!
//! A run killed before it finished leaves the marker in the `writing` state. Every entry in
//! such a folder appeared while drivegen held its lock, so the next claim adopts them: an
//! interrupted run resumes without `--force`.
//!
//! Single-file outputs (`visibility --out FILE`, `score --out FILE`) follow the same rule
//! through [`file_output`]: a file that exists is replaced only when the folder's marker records
//! it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::lock::{FolderLock, LOCK_FILE};
use crate::{Error, Result};

/// The marker's file name.
pub(crate) const MARKER: &str = ".drivegen-owner.json";

/// The folder of a build's work folder that a scheduler writes its task logs into
/// (`scripts/slurm/submit.sh`): drivegen neither records it nor counts it as someone else's,
/// so it never removes it.
pub(crate) const WORK_LOGS: &str = "logs";

/// How many foreign entries a message lists before it says "and N more".
const LISTED: usize = 8;

static FORCE: AtomicBool = AtomicBool::new(false);

/// Lets claims go on in folders holding entries drivegen did not write (`--force`).
pub(crate) fn allow_force() {
    FORCE.store(true, Ordering::Relaxed);
}

fn forced() -> bool {
    FORCE.load(Ordering::Relaxed)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum State {
    Writing,
    Complete,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Marker {
    tool: String,
    tool_version: String,
    written_by: String,
    state: State,
    entries: BTreeSet<String>,
    /// The entries written as single-file outputs ([`file_output`]): a later run of such a
    /// command may replace them, while the folder's other files are another command's.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    files: BTreeSet<String>,
}

/// A folder this process owns until it is dropped: locked, marked, its entries recorded.
#[derive(Debug)]
pub(crate) struct Owned {
    dir: PathBuf,
    marker: Marker,
    /// Entries that were there and not ours when a forced claim took the folder over.
    foreign: BTreeSet<String>,
    /// Entries left to others: neither recorded nor counted as foreign.
    ignored: &'static [&'static str],
    started: SystemTime,
    finished: bool,
    _lock: FolderLock,
    /// Files created below the folder are reached without following links.
    _anchor: super::nofollow::Anchor,
}

/// Names that are drivegen's own bookkeeping, never a user's entry.
fn bookkeeping(name: &str) -> bool {
    name == MARKER || name == LOCK_FILE || super::atomic::is_temp_name(name)
}

fn entries(dir: &Path) -> Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for e in rd {
        let e = e.map_err(|err| Error::io(dir, err))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !bookkeeping(&name) {
            out.insert(name);
        }
    }
    Ok(out)
}

fn read_marker(dir: &Path) -> Result<Option<Marker>> {
    let path = dir.join(MARKER);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    let bytes = super::input::read(&path, super::input::METADATA)?;
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| Error::json(&path, e))
}

fn write_marker(dir: &Path, m: &Marker) -> Result<()> {
    let json = serde_json::to_vec_pretty(m).map_err(|e| Error::Schema {
        table: MARKER.into(),
        detail: e.to_string(),
    })?;
    super::atomic::write_atomic(&dir.join(MARKER), &json)
}

fn listing(names: &BTreeSet<String>) -> String {
    let mut s: Vec<&str> = names.iter().take(LISTED).map(String::as_str).collect();
    let more = names.len().saturating_sub(LISTED);
    let extra = format!("and {more} more");
    if more > 0 {
        s.push(&extra);
    }
    s.join(", ")
}

/// The entries of `dir` drivegen did not record writing, read without touching anything.
fn foreign_entries(dir: &Path) -> Result<BTreeSet<String>> {
    if dir.exists() && !dir.is_dir() {
        return Err(Error::Refused {
            path: dir.to_path_buf(),
            why: "exists and is not a folder".into(),
        });
    }
    let present = entries(dir)?;
    Ok(match read_marker(dir)? {
        None => present,
        // Everything there appeared while an unfinished run of ours held the lock.
        Some(m) if m.state == State::Writing => BTreeSet::new(),
        Some(m) => present.difference(&m.entries).cloned().collect(),
    })
}

/// Refuses to claim for `what` a finished folder that drivegen wrote as something else (an
/// export over a viewer, a store over a release): its files would mix with the new ones, and
/// the other command's output would be silently replaced. `--force` takes it over.
fn refuse_other_kind(dir: &Path, what: &str) -> Result<()> {
    let Some(m) = read_marker(dir)? else {
        return Ok(());
    };
    if m.written_by == what || m.entries.is_empty() || m.state == State::Writing || forced() {
        return Ok(());
    }
    Err(Error::Refused {
        path: dir.to_path_buf(),
        why: format!(
            "holds a {} drivegen wrote; it writes a {what} only into a folder of its own. Give \
             another folder, or pass --force to take this one over",
            m.written_by
        ),
    })
}

impl Owned {
    /// Claims `dir` for `what` (`build work folder`, `release`, …): creates it, or reopens a
    /// folder drivegen wrote, and locks it. `writes` names what it will write there, for the
    /// message `--force` prints.
    pub fn claim(dir: &Path, what: &str, writes: &str) -> Result<Self> {
        Self::claim_with(dir, what, writes, false, &[])
    }

    /// Claims a build's work folder, leaving its [`WORK_LOGS`] entry to the scheduler. With
    /// `wait`, waits while another process holds it instead of refusing (the shared source
    /// steps of a sharded build's tasks).
    pub(crate) fn claim_work(dir: &Path, wait: bool) -> Result<Self> {
        Self::claim_with(
            dir,
            "build work folder",
            "the build's steps",
            wait,
            &[WORK_LOGS],
        )
    }

    fn claim_with(
        dir: &Path,
        what: &str,
        writes: &str,
        wait: bool,
        ignored: &'static [&'static str],
    ) -> Result<Self> {
        if dir.as_os_str().is_empty() {
            return Err(Error::invalid(
                format!("the {what} folder"),
                "is an empty path; name a folder",
            ));
        }
        let others = |dir: &Path| -> Result<BTreeSet<String>> {
            let mut f = foreign_entries(dir)?;
            f.retain(|n| !ignored.contains(&n.as_str()));
            Ok(f)
        };
        let foreign = others(dir)?;
        refuse_other_kind(dir, what)?;
        if !foreign.is_empty() {
            if !forced() {
                return Err(Error::Refused {
                    path: dir.to_path_buf(),
                    why: format!(
                        "holds entries drivegen did not write ({}); it writes its {what} only \
                         into a new or empty folder or one it made. Give another folder, move \
                         them away, or pass --force to write {writes} there, replacing any of \
                         those entries with the same names",
                        listing(&foreign)
                    ),
                });
            }
            eprintln!(
                "--force: {} holds entries drivegen did not write ({}); writing {writes} there \
                 replaces those with the same names and leaves the others",
                dir.display(),
                listing(&foreign)
            );
        }
        let lock = if wait {
            let lock = FolderLock::acquire_waiting(dir, what)?;
            // What the holder left is checked again now that nobody is writing.
            let now = others(dir)?;
            if !now.is_subset(&foreign) && !forced() {
                return Err(Error::Refused {
                    path: dir.to_path_buf(),
                    why: format!(
                        "holds entries drivegen did not write ({}), found after waiting for the \
                         run that held it",
                        listing(&now)
                    ),
                });
            }
            lock
        } else {
            FolderLock::acquire(dir, what)?
        };
        let mut marker = read_marker(dir)?.unwrap_or_else(|| Marker {
            tool: "drivegen".into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            written_by: what.into(),
            state: State::Writing,
            entries: BTreeSet::new(),
            files: BTreeSet::new(),
        });
        if marker.state == State::Writing {
            // Adopt what an interrupted run of ours left.
            let present = entries(dir)?;
            marker.entries.extend(
                present
                    .difference(&foreign)
                    .filter(|n| !ignored.contains(&n.as_str()))
                    .cloned(),
            );
        }
        marker.state = State::Writing;
        let owned = Self {
            dir: dir.to_path_buf(),
            marker,
            ignored,
            foreign,
            started: SystemTime::now(),
            finished: false,
            _lock: lock,
            _anchor: super::nofollow::anchor(dir),
        };
        owned.save()?;
        Ok(owned)
    }

    /// The entries a forced claim found that drivegen did not write.
    pub fn foreign(&self) -> impl Iterator<Item = &String> {
        self.foreign.iter()
    }

    fn save(&self) -> Result<()> {
        write_marker(&self.dir, &self.marker)
    }

    /// Records what this run wrote and marks the folder complete (also done on drop, where an
    /// error cannot be reported). A foreign entry a forced run did not touch stays unrecorded.
    pub fn finish(mut self) -> Result<()> {
        self.finished = true;
        self.record()
    }

    fn record(&mut self) -> Result<()> {
        if let Ok(Some(m)) = read_marker(&self.dir) {
            // A nested claim of the same folder (the release inside a build) recorded too.
            self.marker.entries.extend(m.entries);
            self.marker.files.extend(m.files);
        }
        for name in entries(&self.dir)? {
            let touched = !self.foreign.contains(&name)
                || std::fs::symlink_metadata(self.dir.join(&name))
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t >= self.started);
            if touched && !self.ignored.contains(&name.as_str()) {
                self.marker.entries.insert(name);
            }
        }
        // A claim nested in another of this process (the release inside a build) leaves the
        // folder "writing": the outer run is not done, and a kill now must not leave entries
        // it writes later unrecorded in a "complete" folder.
        self.marker.state = if self._lock.nested() {
            State::Writing
        } else {
            State::Complete
        };
        self.save()
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        if !self.finished {
            // A marker left "writing" is adopted by the next claim, which is safe as well.
            let _ = self.record();
        }
    }
}

/// Marks `dir`, which drivegen has just written, as its own: every entry recorded except
/// `foreign`, the entries a forced run carried over without writing them (they stay the
/// user's, so a later run without `--force` still refuses to replace them).
pub(crate) fn mark_complete<'a>(
    dir: &Path,
    what: &str,
    foreign: impl IntoIterator<Item = &'a String>,
) -> Result<()> {
    let mut entries = entries(dir)?;
    for name in foreign {
        entries.remove(name);
    }
    let m = Marker {
        tool: "drivegen".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        written_by: what.into(),
        state: State::Complete,
        entries,
        files: BTreeSet::new(),
    };
    write_marker(dir, &m)
}

/// Whether drivegen recorded writing `path`: the nearest folder above it with a marker records
/// the entry `path` lies under (or that folder is being written by a run of ours, which adopts
/// what it holds).
fn recorded_above(path: &Path) -> Result<bool> {
    let mut below = path;
    for dir in path.ancestors().skip(1) {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Some(m) = read_marker(dir)? {
            let Some(name) = below.file_name() else {
                return Ok(false);
            };
            let name = name.to_string_lossy();
            return Ok(m.state == State::Writing || m.entries.contains(name.as_ref()));
        }
        below = dir;
        if dir == Path::new(".") {
            break;
        }
    }
    Ok(false)
}

/// Removes an output drivegen is about to write again (a build step's folder or file),
/// deleting only what it recorded writing. A folder with a marker loses its recorded entries,
/// and is itself removed once nothing else is left; entries drivegen did not write are
/// refused (listed) before anything is deleted, or kept where `--force` was given. A folder
/// without a marker, or a file, is removed only when the nearest marker above it records it.
pub(crate) fn remove_output(path: &Path) -> Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let marker = if meta.is_dir() {
        read_marker(path)?
    } else {
        None
    };
    let Some(marker) = marker else {
        if !recorded_above(path)? {
            if !forced() {
                return Err(Error::Refused {
                    path: path.to_path_buf(),
                    why: "is in the way of a build output and drivegen did not record writing \
                          it; move it away, or pass --force to replace it"
                        .into(),
                });
            }
            eprintln!("--force: replacing {}", path.display());
        }
        let r = if meta.is_dir() {
            std::fs::remove_dir_all(path)
        } else {
            std::fs::remove_file(path)
        };
        return r.map_err(|e| Error::io(path, e));
    };
    let foreign = foreign_entries(path)?;
    if !foreign.is_empty() {
        if !forced() {
            return Err(Error::Refused {
                path: path.to_path_buf(),
                why: format!(
                    "holds entries drivegen did not write ({}); it removes only what it wrote \
                     before it writes the folder again. Move them away, or pass --force to keep \
                     them there and replace the rest",
                    listing(&foreign)
                ),
            });
        }
        eprintln!(
            "--force: {} holds entries drivegen did not write ({}); they stay",
            path.display(),
            listing(&foreign)
        );
    }
    // Held while deleting, so a second process cannot claim the folder half-emptied.
    let lock = FolderLock::acquire(path, "output")?;
    for name in entries(path)?.difference(&foreign) {
        let p = path.join(name);
        let is_dir = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir());
        let r = if is_dir {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        r.map_err(|e| Error::io(&p, e))?;
    }
    // A run killed while writing leaves its temporary files, which `entries` does not list.
    super::atomic::remove_stale_temps(path);
    if foreign.is_empty() {
        drop(lock);
        let _ = std::fs::remove_file(path.join(MARKER));
        let _ = std::fs::remove_file(path.join(LOCK_FILE));
        return std::fs::remove_dir(path).map_err(|e| Error::io(path, e));
    }
    // Only the user's entries are left: the marker records none of them.
    write_marker(
        path,
        &Marker {
            entries: BTreeSet::new(),
            state: State::Complete,
            ..marker
        },
    )
}

/// Checks that drivegen may write the single file `path`: it does not exist yet, or the
/// marker of its folder records it, or `--force` was given. A new file in a folder drivegen
/// owns is recorded there.
pub(crate) fn file_output(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| Error::Refused {
            path: path.to_path_buf(),
            why: "does not name a file".into(),
        })?;
    if let Some((owner, m)) = nearest_marker(dir)? {
        let mine = owner == dir && m.files.contains(&name);
        if m.state == State::Complete && !mine && !forced() {
            return Err(Error::Refused {
                path: path.to_path_buf(),
                why: format!(
                    "lies in {}, a {} drivegen wrote; drivegen adds no file to another \
                     command's finished output and never writes where it reads. Give a path \
                     outside it",
                    owner.display(),
                    m.written_by
                ),
            });
        }
    }
    let marker = read_marker(dir)?;
    let exists = std::fs::symlink_metadata(path).is_ok();
    let recorded = marker
        .as_ref()
        .is_some_and(|m| m.state == State::Writing || m.entries.contains(&name));
    if exists && !recorded {
        if !forced() {
            return Err(Error::Refused {
                path: path.to_path_buf(),
                why: "exists and drivegen did not write it; give a new file name, or pass \
                      --force to replace it"
                    .into(),
            });
        }
        eprintln!("--force: replacing {}", path.display());
    }
    if let Some(mut m) = marker {
        let new = m.entries.insert(name.clone());
        if m.files.insert(name) || new {
            write_marker(dir, &m)?;
        }
    }
    Ok(())
}

/// The nearest folder at or above `dir` (links resolved) that carries a marker, with it.
fn nearest_marker(dir: &Path) -> Result<Option<(PathBuf, Marker)>> {
    let real = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let real = real.canonicalize().unwrap_or(real);
    for d in real.ancestors() {
        // A marker above that cannot be read is someone else's problem, not a reason to stop.
        if let Ok(Some(m)) = read_marker(d) {
            let d = if d == real {
                dir.to_path_buf()
            } else {
                d.to_path_buf()
            };
            return Ok(Some((d, m)));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_runs_temporary_files_do_not_block_removing_its_output() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("metavqa");
        let owned = Owned::claim(&out, "stage output", "tables").unwrap();
        std::fs::write(out.join("metavqa_qa.arrow"), b"x").unwrap();
        owned.finish().unwrap();
        // A pid above Linux's pid_max (2^22) runs nowhere.
        let stale = out.join("rollouts.json.drivegen-4194999.tmp");
        std::fs::write(&stale, b"half").unwrap();
        remove_output(&out).unwrap();
        assert!(!out.exists());
    }

    #[test]
    fn a_users_folder_is_refused_and_left_untouched() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("notes.md"), b"mine").unwrap();
        let e = Owned::claim(d.path(), "release", "the shards").unwrap_err();
        assert!(e.to_string().contains("notes.md"), "{e}");
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "the refusal wrote into the folder");
    }

    #[test]
    fn a_work_folders_scheduler_logs_are_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        std::fs::create_dir_all(work.join(WORK_LOGS)).unwrap();
        std::fs::write(work.join(WORK_LOGS).join("task-0.log"), "x").unwrap();
        let w = Owned::claim_work(&work, false).unwrap();
        std::fs::create_dir_all(work.join("corpus")).unwrap();
        w.finish().unwrap();
        let m = read_marker(&work).unwrap().unwrap();
        assert!(m.entries.contains("corpus") && !m.entries.contains(WORK_LOGS));
        Owned::claim_work(&work, true).unwrap().finish().unwrap();
        assert!(work.join(WORK_LOGS).join("task-0.log").is_file());
        // Any other folder of ours still counts it as someone else's.
        let other = tmp.path().join("release");
        std::fs::create_dir_all(other.join(WORK_LOGS)).unwrap();
        assert!(Owned::claim(&other, "release", "the release").is_err());
    }

    #[test]
    fn its_own_folder_is_reopened_and_additions_are_foreign() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("rel");
        let o = Owned::claim(&dir, "release", "the shards").unwrap();
        std::fs::write(dir.join("manifest.json"), b"{}").unwrap();
        o.finish().unwrap();
        let o = Owned::claim(&dir, "release", "the shards").unwrap();
        o.finish().unwrap();
        std::fs::write(dir.join("predictions.jsonl"), b"").unwrap();
        let e = Owned::claim(&dir, "release", "the shards").unwrap_err();
        assert!(e.report().to_string().contains("predictions.jsonl"), "{e}");
        assert!(!e.to_string().contains("manifest.json"), "{e}");
    }

    #[test]
    fn an_interrupted_run_is_resumed() {
        let d = tempfile::tempdir().unwrap();
        let o = Owned::claim(d.path(), "work folder", "steps").unwrap();
        std::fs::create_dir(d.path().join("som")).unwrap();
        // Killed before it finished.
        std::mem::forget(o);
        let o = Owned::claim(d.path(), "work folder", "steps").unwrap();
        assert!(o.marker.entries.contains("som"));
    }

    #[test]
    fn a_nested_claim_leaves_the_folder_writing_until_the_outer_one_ends() {
        let d = tempfile::tempdir().unwrap();
        let outer = Owned::claim(d.path(), "release", "files").unwrap();
        Owned::claim(d.path(), "release", "files")
            .unwrap()
            .finish()
            .unwrap();
        assert_eq!(
            read_marker(d.path()).unwrap().unwrap().state,
            State::Writing
        );
        // Written after the inner claim ended, before the outer one did: a kill here must
        // leave it adoptable.
        std::fs::write(d.path().join("report.html"), b"x").unwrap();
        assert!(foreign_entries(d.path()).unwrap().is_empty());
        outer.finish().unwrap();
        let m = read_marker(d.path()).unwrap().unwrap();
        assert_eq!(m.state, State::Complete);
        assert!(m.entries.contains("report.html"));
    }

    #[test]
    fn removing_an_output_keeps_what_drivegen_did_not_write() {
        let d = tempfile::tempdir().unwrap();
        let work = d.path().join("work");
        let outer = Owned::claim(&work, "work folder", "steps").unwrap();
        let som = work.join("som");
        let o = Owned::claim(&som, "Set-of-Mark output", "images").unwrap();
        std::fs::create_dir(som.join("scene-1")).unwrap();
        std::fs::write(som.join("scene-1").join("a.png"), b"x").unwrap();
        std::fs::write(som.join("marks.arrow"), b"x").unwrap();
        o.finish().unwrap();
        outer.finish().unwrap();
        // A user's file beside ours: refused, nothing deleted.
        std::fs::write(som.join("notes.md"), b"mine").unwrap();
        let e = remove_output(&som).unwrap_err();
        assert!(e.to_string().contains("notes.md"), "{e}");
        assert!(som.join("marks.arrow").exists() && som.join("scene-1").exists());
        std::fs::remove_file(som.join("notes.md")).unwrap();
        remove_output(&som).unwrap();
        assert!(!som.exists());
        // A file or folder its parent's marker does not record is refused.
        std::fs::write(work.join("stranger.arrow"), b"mine").unwrap();
        assert!(remove_output(&work.join("stranger.arrow")).is_err());
        assert!(work.join("stranger.arrow").exists());
        remove_output(&work.join("missing")).unwrap();
    }

    #[test]
    fn single_files_are_replaced_only_when_recorded() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("vis.arrow");
        file_output(&f).unwrap();
        std::fs::write(&f, b"x").unwrap();
        assert!(
            file_output(&f).is_err(),
            "a file in a folder without a marker"
        );
        let dir = d.path().join("owned");
        let held = Owned::claim(&dir, "output", "files").unwrap();
        let g = dir.join("score.json");
        file_output(&g).unwrap();
        std::fs::write(&g, b"x").unwrap();
        held.finish().unwrap();
        file_output(&g).unwrap();
        // Another command's finished output gains no file, at any depth.
        assert!(file_output(&dir.join("other.json")).is_err());
        std::fs::create_dir_all(dir.join("data")).unwrap();
        assert!(file_output(&dir.join("data/score.json")).is_err());
    }
}
