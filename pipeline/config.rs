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

/// The dotted key of the first non-finite number (`nan`, `inf`: TOML spells both) in `v`.
/// No setting of drivegen means anything at NaN or infinity, and a NaN threshold compares
/// false with everything, which silently turns a rule off.
fn non_finite(v: &toml::Value, at: &str) -> Option<String> {
    let key = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    match v {
        toml::Value::Float(f) if !f.is_finite() => Some(format!("{} = {f}", at)),
        toml::Value::Table(t) => t.iter().find_map(|(k, v)| non_finite(v, &key(k))),
        toml::Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| non_finite(v, &format!("{at}[{i}]"))),
        _ => None,
    }
}

/// Parses `text` as TOML; `file` names it in errors. A non-finite number is refused with its
/// key, whatever the setting.
pub(crate) fn parse_toml<T: DeserializeOwned>(text: &str, file: &Path) -> Result<T> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Ok(v) = text.parse::<toml::Table>() {
        if let Some(bad) = non_finite(&toml::Value::Table(v), "") {
            return Err(Error::Config {
                file: file.to_path_buf(),
                detail: format!("{bad}: every number must be finite"),
            });
        }
    }
    toml::from_str(text).map_err(|e| Error::Config {
        file: file.to_path_buf(),
        detail: e.to_string(),
    })
}

/// Reads and parses a TOML file.
pub(crate) fn load_toml<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = crate::store::input::read_to_string(path, crate::store::input::CONFIG)?;
    parse_toml(&text, path)
}

/// Reads a limits file (`drivegen --limits FILE`): a TOML table of
/// [`crate::store::input::LIMIT_KEYS`], each a whole number of at least 1; the keys it sets
/// replace the defaults for this process.
pub(crate) fn load_limits(path: &Path) -> Result<()> {
    use crate::store::input::LIMIT_KEYS;
    let table: toml::Table = load_toml(path)?;
    let bad = |detail: String| Error::Config {
        file: path.to_path_buf(),
        detail,
    };
    let mut set = std::collections::BTreeMap::new();
    for (k, v) in table {
        if !LIMIT_KEYS.contains(&k.as_str()) {
            return Err(bad(format!(
                "unknown key `{k}`; the limits are {}",
                LIMIT_KEYS.join(", ")
            )));
        }
        // A TOML integer's text is its decimal digits; anything else (a string, a float, a
        // sign) fails the one parser the environment's values go through too.
        let n = crate::store::input::parse_limit(&v.to_string())
            .map_err(|why| bad(format!("`{k}`: {why}")))?;
        set.insert(k, n);
    }
    crate::store::input::set_limits(set);
    Ok(())
}

/// Loads `path` when given, else parses the embedded default (`default_name` is shown in errors).
pub(crate) fn load_or_default<T: DeserializeOwned>(
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
pub(crate) fn load_validated<T: DeserializeOwned>(
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
pub(crate) fn parse_validated<T: DeserializeOwned>(
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
pub(crate) fn short_hash(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// [`short_hash`] of a config's TOML form; `what` names the config in errors.
pub(crate) fn toml_hash<T: Serialize>(cfg: &T, what: &str) -> Result<String> {
    let text = toml::to_string(cfg).map_err(|e| Error::Config {
        file: what.into(),
        detail: e.to_string(),
    })?;
    Ok(short_hash(&text))
}

/// How a stage config is serialised before [`short_hash`] hashes it. The form is part of the
/// hash a config records, so each config keeps the one it has always used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashForm {
    /// `toml::to_string` (see [`toml_hash`]).
    Toml,
    /// `toml::to_string_pretty`: the text `egomotion calibrate` writes.
    PrettyToml,
    /// `serde_json::to_string`.
    Json,
}

/// A stage config: one file of `configs/`, embedded as the default, replaced whole by a user's
/// file, validated after parsing, and hashed into every checkpoint, QA row and manifest that
/// depends on it. Implementors name their file and errors and write [`StageConfig::validate`];
/// loading, parsing and hashing are the same for all of them.
pub trait StageConfig: Serialize + DeserializeOwned + Sized {
    /// The embedded default (the file of `configs/`).
    const DEFAULT_TOML: &'static str;
    /// The name errors give the embedded default, e.g. `configs/som.toml (built in)`.
    const DEFAULT_NAME: &'static str;
    /// Names the config in errors of [`StageConfig::hash`], e.g. `som config`.
    const WHAT: &'static str;
    /// How [`StageConfig::hash`] serialises the config.
    const HASH_FORM: HashForm = HashForm::Toml;

    /// Fails with a message naming the bad key; `file` names the config in the error.
    fn validate(&self, _file: &Path) -> Result<()> {
        Ok(())
    }

    /// Loads `path`, or the built-in default, and validates it.
    fn load(path: Option<&Path>) -> Result<Self> {
        load_validated(path, Self::DEFAULT_TOML, Self::DEFAULT_NAME, Self::validate)
    }

    /// The built-in default.
    fn default_config() -> Result<Self> {
        Self::load(None)
    }

    /// Parses and validates TOML text; `name` is shown in errors.
    fn from_toml(text: &str, name: &Path) -> Result<Self> {
        parse_validated(text, name, Self::validate)
    }

    /// A short stable hash of the config ([`short_hash`] of its [`StageConfig::HASH_FORM`]).
    fn hash(&self) -> Result<String> {
        let err = |detail: String| Error::Config {
            file: Self::WHAT.into(),
            detail,
        };
        match Self::HASH_FORM {
            HashForm::Toml => toml_hash(self, Self::WHAT),
            HashForm::PrettyToml => toml::to_string_pretty(self)
                .map(|t| short_hash(&t))
                .map_err(|e| err(e.to_string())),
            HashForm::Json => serde_json::to_string(self)
                .map(|t| short_hash(&t))
                .map_err(|e| err(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct T {
        a: f64,
        sub: std::collections::BTreeMap<String, Vec<f64>>,
    }

    /// The hash of every stage config's built-in default, pinned: checkpoint keys, QA rows and
    /// manifests record these, so a change here is a change of behaviour, not a refactor.
    #[test]
    fn default_config_hashes_are_pinned() {
        let got = [
            (
                "egodyn",
                crate::egomotion::config::EgodynConfig::load(None)
                    .unwrap()
                    .hash()
                    .unwrap(),
            ),
            (
                "stsbench",
                crate::stsbench::config::StsConfig::load(None)
                    .unwrap()
                    .hash()
                    .unwrap(),
            ),
            (
                "metavqa",
                crate::metavqa::config::MetavqaConfig::load(None)
                    .unwrap()
                    .hash()
                    .unwrap(),
            ),
            (
                "som",
                crate::som::config::SomConfig::load(None)
                    .unwrap()
                    .hash()
                    .unwrap(),
            ),
            (
                "sig",
                crate::sig::config::SigConfig::load(None)
                    .unwrap()
                    .hash()
                    .unwrap(),
            ),
            (
                "corrupt",
                crate::corrupt::config::CorruptConfig::load(None)
                    .unwrap()
                    .hash()
                    .unwrap(),
            ),
            (
                "visibility",
                crate::visibility::config::VisibilityConfig::load(None)
                    .unwrap()
                    .hash()
                    .unwrap(),
            ),
            (
                "sources",
                crate::ingest::sources::SourcesConfig::load(None)
                    .unwrap()
                    .hash()
                    .unwrap(),
            ),
        ];
        let want: [(&str, &str); 8] = [
            ("egodyn", "20c0f260a71660b2"),
            ("stsbench", "524fddfe401b759d"),
            ("metavqa", "dc8b501588ed2940"),
            ("som", "7d4a7015837590e9"),
            ("sig", "7ab536343b837038"),
            ("corrupt", "9d1a219015c40519"),
            ("visibility", "18f37dd3f979ba85"),
            ("sources", "fa98beb4a2c41057"),
        ];
        let got: Vec<(&str, &str)> = got.iter().map(|(k, h)| (*k, h.as_str())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn non_finite_numbers_are_refused_with_their_key() {
        let ok: Result<T> = parse_toml("a = 1.0\n[sub]\nx = [1.0]\n", Path::new("c.toml"));
        assert!(ok.is_ok());
        for (text, key) in [
            ("a = nan\n[sub]\n", "a = NaN"),
            ("a = 1.0\n[sub]\nx = [1.0, -inf]\n", "sub.x[1] = -inf"),
        ] {
            let e = parse_toml::<T>(text, Path::new("c.toml"))
                .map(|_| ())
                .unwrap_err()
                .report()
                .to_string();
            assert!(e.contains("c.toml") && e.contains(key), "{e}");
        }
    }
}
