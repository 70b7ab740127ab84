//! The rejects log: every input item a stage refused, with the reason.
//!
//! One broken scene or clip never stops a run; it is recorded here instead. The log is a JSON
//! Lines file, one object per rejected item, written atomically when the stage finishes so an
//! interrupted run never leaves half a log behind.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::store::atomic::write_atomic;
use crate::{Error, Result};

/// The file name of a rejects log in a stage's output folder (and in a scene store).
pub(crate) const LOG_FILE: &str = "rejects.jsonl";

/// One rejected item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reject {
    /// The stage that refused it (`ingest`, `egomotion`, …).
    pub stage: String,
    /// The scene it belongs to, when known.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub scene_id: Option<String>,
    /// The item within the scene (clip id, camera frame, …), when it is not the whole scene.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub item: Option<String>,
    /// The input file at fault, when known.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub file: Option<String>,
    /// The record at fault (token, row, line), when known.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub record: Option<String>,
    /// Why it was rejected, as a user would read it.
    pub reason: String,
}

impl Reject {
    /// The reject for an input image a stage could not use, when `err` is about the data (an
    /// unreadable, undecodable or wrongly sized image: [`Error::Input`] or [`Error::Io`]);
    /// `None` for every other error, which must stop the run (a GPU or output failure would
    /// otherwise be recorded against every image in turn).
    pub(crate) fn bad_image(
        stage: &str,
        scene_id: &str,
        image_id: &str,
        err: &Error,
    ) -> Option<Reject> {
        let (file, record) = match err {
            Error::Input { file, record, .. } => (file, Some(record.clone())),
            Error::Io { path, .. } => (path, None),
            _ => return None,
        };
        Some(Reject {
            stage: stage.to_string(),
            scene_id: Some(scene_id.to_string()),
            item: Some(image_id.to_string()),
            file: Some(file.display().to_string()),
            record,
            reason: err.report().to_string(),
        })
    }
}

/// Collects rejects and writes them as JSON Lines.
#[derive(Debug, Default)]
pub struct RejectLog {
    items: Vec<Reject>,
}

impl RejectLog {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, r: Reject) {
        self.items.push(r);
    }

    pub fn extend(&mut self, rs: impl IntoIterator<Item = Reject>) {
        self.items.extend(rs);
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn items(&self) -> &[Reject] {
        &self.items
    }

    /// Writes the log to `path` (temp file + rename); an empty log writes an empty file.
    pub fn write(&self, path: &Path) -> Result<()> {
        let mut text = String::new();
        for r in &self.items {
            // Serialising a plain struct of strings cannot fail.
            text.push_str(&serde_json::to_string(r).unwrap_or_default());
            text.push('\n');
        }
        write_atomic(path, text.as_bytes())
    }

    /// Reads a log written by [`RejectLog::write`].
    pub fn read(path: &Path) -> Result<Vec<Reject>> {
        let text = crate::store::input::read_to_string(path, crate::store::input::METADATA)?;
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| crate::Error::Json {
                    path: path.to_path_buf(),
                    line: i + 1,
                    column: e.column(),
                    source: e,
                })
            })
            .collect()
    }
}
