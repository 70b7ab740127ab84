//! Loading TOML configs.
//!
//! Every stage owns a serde struct mirroring one file of `configs/`; the file in the repository
//! is embedded as the default, so a binary never depends on where it was built, and a user's
//! file (`--config`) replaces it whole. Unknown keys are errors (`deny_unknown_fields` on each
//! struct), so a typo in a threshold name never silently falls back to a default.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// `bytes` without a leading UTF-8 byte-order mark. Editors on Windows write one; JSON and
/// TOML allow a reader to skip it, and reporting it as malformed text at 1:1 helps no one.
pub fn without_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// Parses `text` as TOML; `file` names it in errors.
pub fn parse_toml<T: DeserializeOwned>(text: &str, file: &Path) -> Result<T> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
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

/// [`load_or_default`], then `validate` with the file errors should name (the built-in
/// default's `default_name` when no path is given): how every stage config loads.
pub fn load_validated<T: DeserializeOwned>(
    path: Option<&Path>,
    default_text: &str,
    default_name: &str,
    validate: impl FnOnce(&T, &Path) -> Result<()>,
) -> Result<T> {
    let cfg: T = load_or_default(path, default_text, default_name)?;
    let file = path.map_or_else(|| PathBuf::from(default_name), Path::to_path_buf);
    validate(&cfg, &file)?;
    Ok(cfg)
}

/// [`parse_toml`], then `validate`.
pub fn parse_validated<T: DeserializeOwned>(
    text: &str,
    name: &Path,
    validate: impl FnOnce(&T, &Path) -> Result<()>,
) -> Result<T> {
    let cfg: T = parse_toml(text, name)?;
    validate(&cfg, name)?;
    Ok(cfg)
}

/// The first 8 bytes of SHA-256 of `text`, in hex: the short hash every config, checkpoint and
/// release records.
pub fn short_hash(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// [`short_hash`] of a config's TOML form; `what` names the config in errors.
pub fn toml_hash<T: Serialize>(cfg: &T, what: &str) -> Result<String> {
    let text = toml::to_string(cfg).map_err(|e| Error::Config {
        file: what.into(),
        detail: e.to_string(),
    })?;
    Ok(short_hash(&text))
}
