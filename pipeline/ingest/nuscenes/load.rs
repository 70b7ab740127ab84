//! Loading the 13 JSON tables and indexing them by token.
//!
//! A table that is missing or is not valid JSON stops the ingest (nothing can be trusted
//! without it) with an error naming the file, line and column. Problems inside records —
//! a dangling or duplicated token — are not fatal here: the index remembers them, and the
//! scene that touches such a record is rejected when it is assembled.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::formats::nuscenes::*;
use crate::{Error, Result};

/// A table's records and their positions sorted by token, beside each one's first eight bytes
/// as a number: a lookup is a binary search over those numbers (then one comparison of
/// tokens), and the index holds 12 bytes a record instead of a second copy of every token.
#[derive(Debug)]
pub(crate) struct Indexed<T> {
    pub file: PathBuf,
    pub rows: Vec<T>,
    by_token: Vec<u32>,
    /// [`prefix`] of the token at each place of `by_token`: never decreasing, as the tokens
    /// are sorted.
    prefixes: Vec<u64>,
    duplicates: HashSet<String>,
}

/// A token's first eight bytes, big-endian, zeros after a short one: tokens in order have
/// prefixes in order.
fn prefix(token: &str) -> u64 {
    let mut b = [0u8; 8];
    let n = token.len().min(8);
    b[..n].copy_from_slice(&token.as_bytes()[..n]);
    u64::from_be_bytes(b)
}

/// Records that carry a token.
pub(crate) trait Token {
    fn token(&self) -> &str;
}

macro_rules! impl_token {
    ($($t:ty),*) => {$(impl Token for $t { fn token(&self) -> &str { &self.token } })*};
}
impl_token!(
    Category,
    Attribute,
    Visibility,
    Instance,
    Sensor,
    CalibratedSensor,
    EgoPose,
    Log,
    Scene,
    Sample,
    SampleData,
    SampleAnnotation,
    Map
);

impl<T: Token> Indexed<T> {
    fn new(file: PathBuf, rows: Vec<T>) -> Result<Self> {
        let n = u32::try_from(rows.len())
            .map_err(|_| Error::input(&file, "table", "more than 4,294,967,295 records"))?;
        // Sorted by prefix, and by the whole token only where prefixes meet: the same order
        // as by token, with few comparisons of text.
        let mut keyed: Vec<(u64, u32)> = (0..n)
            .map(|i| (prefix(rows[i as usize].token()), i))
            .collect();
        keyed.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| rows[a.1 as usize].token().cmp(rows[b.1 as usize].token()))
        });
        let (prefixes, by_token): (Vec<u64>, Vec<u32>) = keyed.into_iter().unzip();
        let duplicates = by_token
            .windows(2)
            .zip(prefixes.windows(2))
            .filter(|(_, p)| p[0] == p[1])
            .map(|(w, _)| (rows[w[0] as usize].token(), rows[w[1] as usize].token()))
            .filter(|(a, b)| a == b)
            .map(|(a, _)| a.to_string())
            .collect();
        Ok(Self {
            file,
            rows,
            by_token,
            prefixes,
            duplicates,
        })
    }

    fn position(&self, token: &str) -> Option<usize> {
        let p = prefix(token);
        let from = self.prefixes.partition_point(|&x| x < p);
        self.prefixes[from..]
            .iter()
            .take_while(|&&x| x == p)
            .zip(&self.by_token[from..])
            .map(|(_, &i)| i as usize)
            .find(|&i| self.rows[i].token() == token)
    }

    /// The record with `token`, or an error naming this table's file and the token.
    /// `referrer` says who points at it, for the message.
    pub fn get(&self, token: &str, referrer: &str) -> Result<&T> {
        if self.duplicates.contains(token) {
            return Err(Error::input(
                &self.file,
                token,
                format!("duplicate token (referenced by {referrer})"),
            ));
        }
        match self.position(token) {
            Some(i) => Ok(&self.rows[i]),
            None => Err(Error::input(
                &self.file,
                token,
                format!("dangling token: no such record (referenced by {referrer})"),
            )),
        }
    }

    /// Whether `token` appears more than once.
    pub(crate) fn is_duplicate(&self, token: &str) -> bool {
        self.duplicates.contains(token)
    }
}

/// The tables of one nuScenes version that ingest reads (`map.json` is parsed, so a broken one
/// is named as the devkit would name it, but nothing downstream reads it).
#[derive(Debug)]
pub(crate) struct Tables {
    pub category: Indexed<Category>,
    pub attribute: Indexed<Attribute>,
    pub visibility: Indexed<Visibility>,
    pub instance: Indexed<Instance>,
    pub sensor: Indexed<Sensor>,
    pub calibrated_sensor: Indexed<CalibratedSensor>,
    pub ego_pose: Indexed<EgoPose>,
    pub log: Indexed<Log>,
    pub scene: Indexed<Scene>,
    pub sample: Indexed<Sample>,
    pub sample_data: Indexed<SampleData>,
    pub sample_annotation: Indexed<SampleAnnotation>,
    /// sample token → its sample_data, sorted by (timestamp, token).
    pub data_by_sample: HashMap<TokenStr, Vec<usize>>,
    /// sample token → its annotations, in file order.
    pub anns_by_sample: HashMap<TokenStr, Vec<usize>>,
}

fn read_table<T: DeserializeOwned + Token>(dir: &Path, name: &str) -> Result<Indexed<T>> {
    let path = dir.join(format!("{name}.json"));
    if !path.exists() {
        return Err(Error::input(
            &path,
            name,
            "missing table: nuScenes needs all 13 tables in the version folder",
        ));
    }
    // Parsed as it is read: the file's text is never held whole beside its records.
    let open = || -> Result<NonFiniteReader<_>> {
        let file = crate::store::input::open_limited(&path, crate::store::input::TABLE)?;
        Ok(NonFiniteReader::new(file))
    };
    let mut rows: Vec<T> = match records(open()?) {
        Some(rows) => rows,
        // Something the record splitter does not take: serde reads the file again and names
        // the line and column of what is wrong (or, if nothing is, gives the records).
        None => serde_json::from_reader(std::io::BufReader::with_capacity(1 << 16, open()?))
            .map_err(|e| Error::json(&path, e))?,
    };
    rows.shrink_to_fit();
    Indexed::new(path, rows)
}

/// The records of a JSON array read from `text`, each parsed from its own bytes as soon as
/// they are in (parsing from a slice is about twice as fast as serde's byte-at-a-time reader);
/// None at anything it does not take (an I/O error, a record that does not parse, text that
/// is not an array of objects), which the caller hands to serde's reader to name.
fn records<T: DeserializeOwned>(text: impl Read) -> Option<Vec<T>> {
    let mut w = Window {
        text,
        buf: Vec::new(),
        at: 0,
        eof: false,
        broken: false,
    };
    if w.token()? != b'[' {
        return None;
    }
    let mut rows = Vec::new();
    let mut c = w.token()?;
    if c != b']' {
        loop {
            if !matches!(c, b'{' | b'[') {
                return None;
            }
            w.at -= 1;
            let n = w.value_len()?;
            rows.push(serde_json::from_slice(&w.buf[w.at..w.at + n]).ok()?);
            w.at += n;
            match w.token()? {
                b',' => c = w.token()?,
                b']' => break,
                _ => return None,
            }
        }
    }
    if w.token().is_some() || w.broken {
        return None;
    }
    Some(rows)
}

/// A window on a text read a piece at a time: `buf[at..]` is read and not yet consumed.
struct Window<R> {
    text: R,
    buf: Vec<u8>,
    at: usize,
    eof: bool,
    /// A read failed (the text is then treated as ended).
    broken: bool,
}

impl<R: Read> Window<R> {
    /// Drops what is consumed and reads more after the rest; whether any came.
    fn more(&mut self) -> bool {
        if self.eof {
            return false;
        }
        self.buf.drain(..self.at);
        self.at = 0;
        let len = self.buf.len();
        // A record longer than the window widens it.
        self.buf.resize(len + (1 << 20).max(len / 4), 0);
        let mut filled = len;
        while filled < self.buf.len() {
            match self.text.read(&mut self.buf[filled..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    (self.broken, self.eof) = (true, true);
                    break;
                }
            }
        }
        self.buf.truncate(filled);
        filled > len
    }

    /// The next byte that is not white space, consumed; None at the end of the text.
    fn token(&mut self) -> Option<u8> {
        loop {
            if self.at == self.buf.len() && !self.more() {
                return None;
            }
            let c = self.buf[self.at];
            self.at += 1;
            if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(c);
            }
        }
    }

    /// The length of the object or array that starts at `at`, to its matching bracket
    /// (brackets inside strings skipped), reading more as needed; None when the text ends
    /// first or a bracket closes that never opened.
    fn value_len(&mut self) -> Option<usize> {
        let (mut k, mut depth, mut scan) = (0, 0usize, Scan::default());
        loop {
            if self.at + k == self.buf.len() && !self.more() {
                return None;
            }
            let c = self.buf[self.at + k];
            k += 1;
            if scan.string(c) {
                continue;
            }
            match c {
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(k);
                    }
                }
                _ => {}
            }
        }
    }
}

impl Tables {
    /// Reads `<root>/<version>/*.json`.
    pub fn load(root: &Path, version: &str) -> Result<Self> {
        let dir = root.join(version);
        if !dir.is_dir() {
            let found: Vec<String> = std::fs::read_dir(root)
                .map(|rd| {
                    let mut v: Vec<String> = rd
                        .filter_map(|e| e.ok())
                        .filter(|e| e.path().join("scene.json").is_file())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect();
                    v.sort();
                    v
                })
                .unwrap_or_default();
            return Err(Error::input(
                &dir,
                version,
                format!(
                    "no such version folder (versions found under {}: {})",
                    root.display(),
                    if found.is_empty() {
                        "none".to_string()
                    } else {
                        found.join(", ")
                    }
                ),
            ));
        }
        // The big tables dominate; parse them on separate threads.
        let ((sample_data, sample_annotation), (ego_pose, rest)) = rayon::join(
            || {
                rayon::join(
                    || read_table::<SampleData>(&dir, "sample_data"),
                    || read_table::<SampleAnnotation>(&dir, "sample_annotation"),
                )
            },
            || {
                rayon::join(
                    || read_table::<EgoPose>(&dir, "ego_pose"),
                    || -> Result<_> {
                        Ok((
                            read_table::<Category>(&dir, "category")?,
                            read_table::<Attribute>(&dir, "attribute")?,
                            read_table::<Visibility>(&dir, "visibility")?,
                            read_table::<Instance>(&dir, "instance")?,
                            read_table::<Sensor>(&dir, "sensor")?,
                            read_table::<CalibratedSensor>(&dir, "calibrated_sensor")?,
                            read_table::<Log>(&dir, "log")?,
                            read_table::<Scene>(&dir, "scene")?,
                            read_table::<Sample>(&dir, "sample")?,
                            read_table::<Map>(&dir, "map")?,
                        ))
                    },
                )
            },
        );
        let (
            category,
            attribute,
            visibility,
            instance,
            sensor,
            calibrated_sensor,
            log,
            scene,
            sample,
            _map,
        ) = rest?;
        let sample_data = sample_data?;
        let sample_annotation = sample_annotation?;
        let ego_pose = ego_pose?;

        let mut data_by_sample: HashMap<TokenStr, Vec<usize>> = HashMap::new();
        for (i, sd) in sample_data.rows.iter().enumerate() {
            data_by_sample
                .entry(sd.sample_token.clone())
                .or_default()
                .push(i);
        }
        for v in data_by_sample.values_mut() {
            v.sort_by(|&a, &b| {
                let (a, b) = (&sample_data.rows[a], &sample_data.rows[b]);
                (a.timestamp, &a.token).cmp(&(b.timestamp, &b.token))
            });
        }
        let mut anns_by_sample: HashMap<TokenStr, Vec<usize>> = HashMap::new();
        for (i, a) in sample_annotation.rows.iter().enumerate() {
            anns_by_sample
                .entry(a.sample_token.clone())
                .or_default()
                .push(i);
        }
        Ok(Self {
            category,
            attribute,
            visibility,
            instance,
            sensor,
            calibrated_sensor,
            ego_pose,
            log,
            scene,
            sample,
            sample_data,
            sample_annotation,
            data_by_sample,
            anns_by_sample,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tokens sharing their first eight bytes, short ones, a repeated one and missing ones:
    /// every lookup finds what a scan of the rows finds.
    #[test]
    fn a_lookup_finds_what_a_scan_finds() {
        let tokens = [
            "aaaaaaaa1",
            "aaaaaaaa0",
            "aaaaaaaa",
            "aaaa",
            "",
            "b",
            "aaaaaaaa0",
            "zzzzzzzzzzzz",
            "aaaaaaab",
            "aaa",
        ];
        let rows: Vec<Category> = tokens
            .iter()
            .map(|t| serde_json::from_value(serde_json::json!({"token": t, "name": "x"})).unwrap())
            .collect();
        let t = Indexed::new(PathBuf::from("category.json"), rows).unwrap();
        for probe in tokens.iter().chain(&["aaaaaaaa2", "aa", "c", "aaaaaaab0"]) {
            let first = tokens.iter().position(|x| x == probe);
            let repeated = tokens.iter().filter(|x| *x == probe).count() > 1;
            assert_eq!(t.is_duplicate(probe), repeated, "{probe:?}");
            match t.get(probe, "test") {
                Ok(r) => assert_eq!(Some(r.token.as_str()), first.map(|i| tokens[i])),
                Err(e) => assert!(first.is_none() || repeated, "{probe:?}: {e}"),
            }
        }
    }

    /// The splitter gives serde's own records for valid text, in any pieces, and leaves
    /// everything else (for serde to name) instead of guessing.
    #[test]
    fn records_are_serdes_or_nothing() {
        type V = serde_json::Value;
        let good = [
            "[]",
            " \n[ ]\n",
            r#"[{"a": "x]}\"{", "b": [1, {"c": []}]}, {"d": "\\"}]"#,
            "[[1, 2], {\"e\": null}]\n",
        ];
        for text in good {
            let want: Vec<V> = serde_json::from_str(text).unwrap();
            for piece in [1, 2, 3, 7, 1 << 20] {
                let got: Option<Vec<V>> = records(Trickle(text.as_bytes(), piece));
                assert_eq!(got.as_ref(), Some(&want), "{text:?} in pieces of {piece}");
            }
        }
        let bad = [
            "",
            "{}",
            "[{},]",
            "[{}",
            "[{}] x",
            "[1]",
            "[{} {}]",
            r#"[{"a": }]"#,
            "[{]}]",
            "[}]",
        ];
        for text in bad {
            for piece in [1, 4, 1 << 20] {
                let got: Option<Vec<V>> = records(Trickle(text.as_bytes(), piece));
                assert_eq!(got, None, "{text:?} in pieces of {piece}");
            }
        }
    }
}
