//! Reading files other people wrote: only regular files, and never more than a limit.
//!
//! A FIFO given as a table blocks a reader forever, and a link to `/dev/zero` feeds it until
//! memory runs out. Every input drivegen opens goes through [`open`], which follows links and
//! refuses anything but a regular file before it is opened; whole-file reads go through
//! [`read`] with a [`Limit`] that names the setting raising it.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, Read};
use std::path::Path;

use crate::{Error, Result};

/// A size limit and what raises it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limit {
    pub bytes: u64,
    /// What is limited, as a message names it.
    pub what: &'static str,
    /// The setting or flag that raises it.
    pub key: &'static str,
}

/// A hand-written config file (TOML): nothing legitimate comes near it.
pub(crate) const CONFIG: Limit = Limit {
    bytes: 16 << 20,
    what: "a config file",
    key: "DRIVEGEN_MAX_CONFIG_MIB",
};

/// A metadata file drivegen wrote (`store.json`, `manifest.json`, checkpoints, reports).
pub(crate) const METADATA: Limit = Limit {
    bytes: 256 << 20,
    what: "a metadata file",
    key: "DRIVEGEN_MAX_METADATA_MIB",
};

/// A source table read whole (a nuScenes JSON table, a Frenetix log, a map layer). nuScenes
/// trainval's largest table is well under 1 GiB.
pub(crate) const TABLE: Limit = Limit {
    bytes: 4 << 30,
    what: "a source table",
    key: "DRIVEGEN_MAX_TABLE_MIB",
};

/// What one compressed annotation file (a Bench2Drive `anno/*.json.gz`) may inflate to; a real
/// one is tens of KiB.
pub(crate) const DECOMPRESSED: Limit = Limit {
    bytes: 256 << 20,
    what: "a decompressed annotation",
    key: "DRIVEGEN_MAX_DECOMPRESSED_MIB",
};

/// One encoded image file.
pub(crate) const IMAGE: Limit = Limit {
    bytes: 256 << 20,
    what: "an image file",
    key: "DRIVEGEN_MAX_IMAGE_FILE_MIB",
};

/// The most pixels an image may have before it is decoded: 100 megapixels by default (nuScenes
/// images are 1.4, Waymo's 2.1), raised with `image_mpix` in a `--limits` file or
/// `DRIVEGEN_MAX_IMAGE_MPIX`.
pub(crate) const DEFAULT_MAX_MPIX: u64 = 100;

/// What one column chunk of a source Parquet file may decompress to. A Waymo segment's whole
/// `camera_image` file is a few GiB at most.
pub(crate) const PARQUET_CHUNK: Limit = Limit {
    bytes: 8 << 30,
    what: "a Parquet column chunk (uncompressed)",
    key: "DRIVEGEN_MAX_PARQUET_CHUNK_MIB",
};

/// One line of a predictions file.
pub(crate) const PREDICTION_LINE: Limit = Limit {
    bytes: 1 << 20,
    what: "a line of predictions",
    key: "DRIVEGEN_MAX_LINE_MIB",
};

/// The longest string a release's row may hold once decoded (a prompt, an evidence record): a
/// real one is a few KiB; a forged dictionary page can repeat one of gigabytes.
pub(crate) const RELEASE_STRING: Limit = Limit {
    bytes: 16 << 20,
    what: "a string of a release row",
    key: "DRIVEGEN_MAX_RELEASE_STRING_MIB",
};

/// What one release row may decode to, its images included (six cameras' JPEGs are a few MiB).
pub(crate) const RELEASE_ROW: Limit = Limit {
    bytes: 256 << 20,
    what: "a release row",
    key: "DRIVEGEN_MAX_RELEASE_ROW_MIB",
};

/// What one batch of release rows (at most a row group) may decode to, and what a row group's
/// pages may hold: a reader holds one batch at a time.
pub(crate) const RELEASE_BATCH: Limit = Limit {
    bytes: 768 << 20,
    what: "a batch of release rows",
    key: "DRIVEGEN_MAX_RELEASE_BATCH_MIB",
};

/// Limits a `--limits` file set for this process, by key (`table_mib`, `image_mpix`, …).
static CONFIGURED: std::sync::RwLock<Option<BTreeMap<String, u64>>> = std::sync::RwLock::new(None);

/// The built-in limits file: every key with its default (checked against the constants here by
/// a test), the template for a `--limits` file.
#[cfg(test)]
pub(crate) const LIMITS_TOML: &str = include_str!("../../configs/limits.toml");

/// The limit keys a `--limits` file may set.
pub(crate) const LIMIT_KEYS: [&str; 11] = [
    "config_mib",
    "metadata_mib",
    "table_mib",
    "decompressed_mib",
    "image_file_mib",
    "line_mib",
    "parquet_chunk_mib",
    "image_mpix",
    "release_string_mib",
    "release_row_mib",
    "release_batch_mib",
];

/// Replaces the defaults of the limits in `set` (keys of [`LIMIT_KEYS`], values in each
/// limit's own unit) for this process; `config::load_limits` reads them from a file.
pub(crate) fn set_limits(set: BTreeMap<String, u64>) {
    *CONFIGURED.write().unwrap_or_else(|p| p.into_inner()) = Some(set);
}

/// The one reading of a limit's value, from a `--limits` file (its TOML text) and from the
/// environment alike: a whole number of at least 1, in decimal digits. Zero, a sign, a
/// fraction, `nan`, `inf` or an empty value is refused rather than read as "no limit" or
/// left for the default, which would make a typo go unnoticed.
pub(crate) fn parse_limit(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let why = || format!("`{text}` is not a whole number of at least 1");
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(why());
    }
    match t.parse::<u64>() {
        Ok(0) => Err(why()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is too large (at most {})", u64::MAX)),
    }
}

/// The environment variable that sets limit `key` (`table_mib` is `DRIVEGEN_MAX_TABLE_MIB`).
pub(crate) fn env_name(key: &str) -> String {
    format!("DRIVEGEN_MAX_{}", key.to_ascii_uppercase())
}

/// The limits the environment sets by key, or the first bad variable's name and what is wrong.
type EnvLimits = std::result::Result<BTreeMap<String, u64>, (String, String)>;

/// The limits set in the environment, read once: every `DRIVEGEN_MAX_*` variable must name a
/// limit and hold a value [`parse_limit`] accepts.
fn environment() -> &'static EnvLimits {
    static ENV: std::sync::OnceLock<EnvLimits> = std::sync::OnceLock::new();
    ENV.get_or_init(|| {
        let mut vars: Vec<(String, std::ffi::OsString)> = std::env::vars_os()
            .map(|(k, v)| (k.to_string_lossy().into_owned(), v))
            .collect();
        vars.sort();
        let mut set = BTreeMap::new();
        for (name, value) in vars {
            let Some(rest) = name.strip_prefix("DRIVEGEN_MAX_") else {
                continue;
            };
            let key = rest.to_ascii_lowercase();
            if !LIMIT_KEYS.contains(&key.as_str()) || env_name(&key) != name {
                let known: Vec<String> = LIMIT_KEYS.iter().map(|k| env_name(k)).collect();
                return Err((
                    name,
                    format!(
                        "set to `{}`, but no limit has that name; unset it, or use one of {}",
                        value.to_string_lossy(),
                        known.join(", ")
                    ),
                ));
            }
            let value = value.to_string_lossy().into_owned();
            match parse_limit(&value) {
                Ok(n) => {
                    set.insert(key, n);
                }
                Err(why) => {
                    let unit = if key.ends_with("_mpix") {
                        "megapixels"
                    } else {
                        "MiB"
                    };
                    return Err((
                        name,
                        format!(
                            "{why} ({unit}); set it to a positive whole number, or unset it \
                             for the default"
                        ),
                    ));
                }
            }
        }
        Ok(set)
    })
}

/// Checks every `DRIVEGEN_MAX_*` variable of the environment (the binary does so before any
/// command runs): an error names the variable and its value.
pub(crate) fn check_environment() -> Result<()> {
    match environment() {
        Ok(_) => Ok(()),
        Err((name, why)) => Err(Error::invalid(name.clone(), why.clone())),
    }
}

/// The value of limit `key` in its own unit where the user set one: a `--limits` file's, else
/// the environment variable's ([`env_name`]). A bad environment value (refused by
/// [`check_environment`] in the binary) counts as unset here, with a warning, for library
/// callers that did not check.
fn overridden(key: &str) -> Option<u64> {
    if let Some(v) = CONFIGURED
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .and_then(|m| m.get(key).copied())
    {
        return Some(v);
    }
    match environment() {
        Ok(set) => set.get(key).copied(),
        Err((name, why)) => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| log::warn!("{name}: {why}; the limits keep their defaults"));
            None
        }
    }
}

/// The value of limit `key` in its own unit: a `--limits` file's, else the environment
/// variable's ([`env_name`]), else `default`.
pub(crate) fn setting(key: &str, default: u64) -> u64 {
    overridden(key).unwrap_or(default)
}

/// How a message tells the user to raise the limit `key`.
pub(crate) fn how_to_raise(key: &str) -> String {
    format!(
        "raise it with `{key}` in a --limits file, or {}",
        env_name(key)
    )
}

impl Limit {
    /// The key of this limit in a `--limits` file: the environment variable's name without
    /// `DRIVEGEN_MAX_`, in lower case (`DRIVEGEN_MAX_TABLE_MIB` is `table_mib`).
    pub(crate) fn config_key(&self) -> String {
        self.key
            .strip_prefix("DRIVEGEN_MAX_")
            .unwrap_or(self.key)
            .to_ascii_lowercase()
    }

    /// The limit in bytes: a `--limits` file's, else the environment variable's, else the
    /// default.
    pub fn bytes(&self) -> u64 {
        overridden(&self.config_key()).map_or(self.bytes, |mib| mib.saturating_mul(1 << 20))
    }

    /// The error for `path` holding `got` bytes (at least) against this limit.
    pub(crate) fn exceeded(&self, path: &Path, record: &str, got: u64) -> Error {
        Error::input(
            path,
            record,
            format!(
                "{got} bytes is over the limit of {} bytes for {} ({})",
                self.bytes(),
                self.what,
                how_to_raise(&self.config_key())
            ),
        )
    }
}

/// What `m` is, when it is not a regular file.
fn kind(m: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
    }
    if m.is_dir() {
        "a folder"
    } else {
        "not a regular file"
    }
}

/// Refuses `path` unless it is (or links to) a regular file.
pub(crate) fn regular(path: &Path) -> Result<std::fs::Metadata> {
    let m = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !m.is_file() {
        return Err(Error::input(
            path,
            "file",
            format!("is {}; drivegen reads only regular files", kind(&m)),
        ));
    }
    Ok(m)
}

/// `bytes` without a leading UTF-8 byte-order mark. Editors on Windows write one; JSON and
/// TOML allow a reader to skip it, and reporting it as malformed text at 1:1 helps no one.
pub(crate) fn without_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// Opens a regular file for reading.
pub(crate) fn open(path: &Path) -> Result<File> {
    regular(path)?;
    File::open(path).map_err(|e| Error::io(path, e))
}

/// Reads a whole regular file of at most `limit` bytes.
pub(crate) fn read(path: &Path, limit: Limit) -> Result<Vec<u8>> {
    let m = regular(path)?;
    let max = limit.bytes();
    if m.len() > max {
        return Err(limit.exceeded(path, "size", m.len()));
    }
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut out = Vec::with_capacity(m.len() as usize);
    // The file may grow after it was measured.
    f.take(max + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::io(path, e))?;
    if out.len() as u64 > max {
        return Err(limit.exceeded(path, "size", out.len() as u64));
    }
    Ok(out)
}

/// Opens a regular file of at most `limit` bytes, to be read a piece at a time (no more than
/// `limit` bytes are read even when it grows after it was measured).
pub(crate) fn open_limited(path: &Path, limit: Limit) -> Result<impl Read> {
    let m = regular(path)?;
    let max = limit.bytes();
    if m.len() > max {
        return Err(limit.exceeded(path, "size", m.len()));
    }
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    Ok(f.take(max))
}

/// Reads a whole regular UTF-8 file of at most `limit` bytes.
pub(crate) fn read_to_string(path: &Path, limit: Limit) -> Result<String> {
    let bytes = read(path, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        Error::input(
            path,
            format!("byte {}", e.utf8_error().valid_up_to()),
            "is not UTF-8 text",
        )
    })
}

/// Reads one line into `buf` (without its end), refusing one longer than `max` bytes; false
/// at the end of the input. `line` is the 1-based number of the line, for the message.
pub(crate) fn read_line(
    r: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: Limit,
    path: &Path,
    line: usize,
) -> Result<bool> {
    buf.clear();
    let cap = max.bytes();
    let n = r
        .by_ref()
        .take(cap + 1)
        .read_until(b'\n', buf)
        .map_err(|e| Error::io(path, e))?;
    if n == 0 {
        return Ok(false);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() as u64 > cap {
        return Err(max.exceeded(path, &format!("line {line}"), buf.len() as u64));
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(true)
}

/// A reader that fails, naming `path` and `limit`, once more than the limit has come out of
/// it: a decompressor fed a bomb stops at the limit instead of filling memory.
pub(crate) struct Capped<R> {
    inner: R,
    left: u64,
    limit: Limit,
    path: std::path::PathBuf,
}

impl<R: Read> Capped<R> {
    pub fn new(inner: R, limit: Limit, path: &Path) -> Self {
        Self {
            inner,
            left: limit.bytes(),
            limit,
            path: path.to_path_buf(),
        }
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // One byte more tells a stream that ends exactly at the limit from a longer one.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(std::io::Error::other(
                    self.limit
                        .exceeded(&self.path, "decompressed size", self.limit.bytes() + 1)
                        .report()
                        .to_string(),
                )),
            };
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Limit = Limit {
        bytes: 8,
        what: "a test file",
        key: "test.limit",
    };

    #[test]
    fn only_regular_files_are_read() {
        let d = tempfile::tempdir().unwrap();
        let e = read(d.path(), SMALL).unwrap_err().report().to_string();
        assert!(e.contains("a folder"), "{e}");
        #[cfg(unix)]
        {
            let link = d.path().join("zero");
            std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
            let e = read(&link, SMALL).unwrap_err().report().to_string();
            assert!(e.contains("a device"), "{e}");
        }
    }

    #[test]
    fn sizes_and_lines_are_capped() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.txt");
        std::fs::write(&p, b"0123456789").unwrap();
        let e = read(&p, SMALL).unwrap_err().report().to_string();
        assert!(e.contains("test.limit"), "{e}");
        std::fs::write(&p, b"abc\r\n0123456789\n").unwrap();
        let mut r = std::io::BufReader::new(File::open(&p).unwrap());
        let mut buf = Vec::new();
        assert!(read_line(&mut r, &mut buf, SMALL, &p, 1).unwrap());
        assert_eq!(buf, b"abc");
        let e = read_line(&mut r, &mut buf, SMALL, &p, 2)
            .unwrap_err()
            .report()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn a_capped_stream_stops_at_its_limit() {
        let mut out = Vec::new();
        let ok = Capped::new(&b"12345678"[..], SMALL, Path::new("x")).read_to_end(&mut out);
        assert_eq!(ok.unwrap(), 8);
        let e = Capped::new(&b"123456789"[..], SMALL, Path::new("x"))
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert!(e.to_string().contains("test.limit"), "{e}");
    }
}

#[cfg(test)]
mod limit_tests {
    use super::*;

    #[test]
    fn the_limits_file_lists_every_key_with_its_default() {
        let t: toml::Table = toml::from_str(LIMITS_TOML).unwrap();
        let keys: Vec<&str> = t.keys().map(String::as_str).collect();
        let mut want = LIMIT_KEYS.to_vec();
        want.sort_unstable();
        assert_eq!(keys, want);
        let chunk = PARQUET_CHUNK;
        for l in [
            CONFIG,
            METADATA,
            TABLE,
            DECOMPRESSED,
            IMAGE,
            PREDICTION_LINE,
            chunk,
            RELEASE_STRING,
            RELEASE_ROW,
            RELEASE_BATCH,
        ] {
            assert_eq!(
                t[&l.config_key()].as_integer(),
                Some((l.bytes >> 20) as i64),
                "{}",
                l.config_key()
            );
        }
        assert_eq!(t["image_mpix"].as_integer(), Some(DEFAULT_MAX_MPIX as i64));
    }
}
