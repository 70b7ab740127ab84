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
pub fn parse_toml<T: DeserializeOwned>(text: &str, file: &Path) -> Result<T> {
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
pub fn load_toml<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = crate::store::input::read_to_string(path, crate::store::input::CONFIG)?;
    parse_toml(&text, path)
}

/// Reads a limits file (`drivegen --limits FILE`): a TOML table of
/// [`crate::store::input::LIMIT_KEYS`], each a whole number of at least 1; the keys it sets
/// replace the defaults for this process.
pub fn load_limits(path: &Path) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct T {
        a: f64,
        sub: std::collections::BTreeMap<String, Vec<f64>>,
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
