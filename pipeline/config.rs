//! Loading TOML configs.
//!
//! Every stage owns a serde struct mirroring one file of `configs/`; the file in the repository
//! is embedded as the default, so a binary never depends on where it was built, and a user's
//! file (`--config`) replaces it whole. Unknown keys are errors (`deny_unknown_fields` on each
//! struct), so a typo in a threshold name never silently falls back to a default.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::{Error, Result};

/// Parses `text` as TOML; `file` names it in errors.
pub fn parse_toml<T: DeserializeOwned>(text: &str, file: &Path) -> Result<T> {
    toml::from_str(text).map_err(|e| Error::Config {
        file: file.to_path_buf(),
        detail: e.to_string(),
    })
}

/// Reads and parses a TOML file.
pub fn load_toml<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_toml(&text, path)
}

/// Loads `path` when given, else parses the embedded default (`default_name` is shown in errors).
pub fn load_or_default<T: DeserializeOwned>(
    path: Option<&Path>,
    default_text: &str,
    default_name: &str,
) -> Result<T> {
    match path {
        Some(p) => load_toml(p),
        None => parse_toml(default_text, Path::new(default_name)),
    }
}
