//! A stage run again over the folder an earlier run of it wrote.
//!
//! Claiming a folder drivegen wrote reopens it with everything in it, so a second `corrupt`
//! (or `som`, `metavqa`, …) run with other settings would leave the first run's images beside
//! its new tables, and a release drawing from that folder would mix the two. A stage therefore
//! removes what its earlier run recorded writing before it claims the folder again
//! ([`super::owner::remove_output`], which also refuses, before deleting anything, a folder
//! holding entries drivegen did not write), so the folder holds exactly the new run's files.

use std::path::Path;

use crate::Result;

/// Who wrote `dir` according to its ownership marker; None without a marker or with one that
/// cannot be read (the claim that follows reports it).
fn written_by(dir: &Path) -> Option<String> {
    let path = dir.join(super::owner::MARKER);
    std::fs::symlink_metadata(&path).ok()?;
    let bytes = super::input::read(&path, super::input::METADATA).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    Some(v.get("written_by")?.as_str()?.to_string())
}

/// Removes from `dir` what an earlier run writing the same `what` (the name its claim gives,
/// e.g. `corruption output`) recorded there, before a new run claims it. A folder another
/// command wrote is left for the claim to refuse; a new, empty or foreign folder is left as it
/// is. Entries drivegen did not record stop the run before anything is deleted (kept under
/// `--force`).
pub(crate) fn clear_earlier_run(dir: &Path, what: &str) -> Result<()> {
    if written_by(dir).as_deref() != Some(what) {
        return Ok(());
    }
    // A link to the folder: empty the folder it leads to and keep the link usable.
    let real = match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(dir).map_err(|e| crate::Error::io(dir, e))?
        }
        _ => dir.to_path_buf(),
    };
    super::owner::remove_output(&real)?;
    if real != dir && !real.exists() {
        std::fs::create_dir_all(&real).map_err(|e| crate::Error::io(&real, e))?;
    }
    Ok(())
}
