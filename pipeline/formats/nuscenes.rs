//! The 13 nuScenes v1.0 tables as serde structs, shared by the reader and the synthetic writer.
//!
//! Field names and types follow the devkit's schema: tokens are strings, "no link" foreign
//! keys are the empty string, quaternions are `[w, x, y, z]`, sizes `[w, l, h]`, timestamps µs.
//! Unknown fields are accepted, so newer exports still load.
//!
//! Python's `json.dump` writes non-finite floats as the bare words `NaN`, `Infinity` and
//! `-Infinity`, which are not JSON. [`sanitize_nonfinite`] rewrites them (outside strings) into
//! same-length string markers before parsing, so such a value reaches validation as a
//! non-finite number (and its scene is rejected) instead of failing the whole table.

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

/// The table names the devkit loads, in its order.
pub const TABLE_NAMES: [&str; 13] = [
    "category",
    "attribute",
    "visibility",
    "instance",
    "sensor",
    "calibrated_sensor",
    "ego_pose",
    "log",
    "scene",
    "sample",
    "sample_data",
    "sample_annotation",
    "map",
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Category {
    pub token: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribute {
    pub token: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Visibility {
    pub token: String,
    pub level: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    pub token: String,
    pub category_token: String,
    pub nbr_annotations: u32,
    pub first_annotation_token: String,
    pub last_annotation_token: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sensor {
    pub token: String,
    pub channel: String,
    pub modality: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibratedSensor {
    pub token: String,
    pub sensor_token: String,
    #[serde(deserialize_with = "de_arr")]
    pub translation: [f64; 3],
    #[serde(deserialize_with = "de_arr")]
    pub rotation: [f64; 4],
    /// Row-major 3×3; `[]` in the file for non-cameras.
    #[serde(deserialize_with = "de_intrinsic", serialize_with = "ser_intrinsic")]
    pub camera_intrinsic: Option<[[f64; 3]; 3]>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EgoPose {
    pub token: TokenStr,
    pub timestamp: i64,
    #[serde(deserialize_with = "de_arr")]
    pub rotation: [f64; 4],
    #[serde(deserialize_with = "de_arr")]
    pub translation: [f64; 3],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Log {
    pub token: String,
    #[serde(default)]
    pub logfile: String,
    #[serde(default)]
    pub vehicle: String,
    #[serde(default)]
    pub date_captured: String,
    #[serde(default)]
    pub location: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scene {
    pub token: String,
    pub log_token: String,
    pub nbr_samples: u32,
    pub first_sample_token: String,
    pub last_sample_token: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub token: String,
    pub timestamp: i64,
    pub prev: String,
    pub next: String,
    pub scene_token: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleData {
    pub token: TokenStr,
    pub sample_token: TokenStr,
    pub ego_pose_token: TokenStr,
    pub calibrated_sensor_token: TokenStr,
    pub timestamp: i64,
    pub fileformat: String,
    pub is_key_frame: bool,
    pub height: u32,
    pub width: u32,
    pub filename: String,
    pub prev: TokenStr,
    pub next: TokenStr,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleAnnotation {
    pub token: TokenStr,
    pub sample_token: TokenStr,
    pub instance_token: TokenStr,
    /// `"1"`..`"4"`, or `""` when unannotated.
    #[serde(default)]
    pub visibility_token: TokenStr,
    #[serde(default)]
    pub attribute_tokens: Vec<TokenStr>,
    #[serde(deserialize_with = "de_arr")]
    pub translation: [f64; 3],
    #[serde(deserialize_with = "de_arr")]
    pub size: [f64; 3],
    #[serde(deserialize_with = "de_arr")]
    pub rotation: [f64; 4],
    pub prev: TokenStr,
    pub next: TokenStr,
    #[serde(default)]
    pub num_lidar_pts: i64,
    #[serde(default)]
    pub num_radar_pts: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Map {
    pub token: String,
    pub log_tokens: Vec<String>,
    #[serde(default)]
    pub category: String,
    pub filename: String,
}

/// `None` for the empty-string foreign key.
pub fn link(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

/// A float that also accepts the markers written by [`sanitize_nonfinite`].
struct Num(f64);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Num, E> {
                match v {
                    "N" | "NaN" => Ok(Num(f64::NAN)),
                    "Infini" | "Infinity" => Ok(Num(f64::INFINITY)),
                    "-Infini" | "-Infinity" => Ok(Num(f64::NEG_INFINITY)),
                    _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

fn de_arr<'de, D: Deserializer<'de>, const N: usize>(d: D) -> Result<[f64; N], D::Error> {
    let v: Vec<Num> = Vec::deserialize(d)?;
    let n = v.len();
    let arr: [Num; N] = v
        .try_into()
        .map_err(|_| de::Error::invalid_length(n, &format!("an array of {N} numbers").as_str()))?;
    Ok(arr.map(|x| x.0))
}

fn de_intrinsic<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[[f64; 3]; 3]>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<[[f64; 3]; 3]>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a 3x3 matrix or []")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut rows = Vec::new();
            while let Some(r) = seq.next_element::<Vec<Num>>()? {
                let n = r.len();
                let r: [Num; 3] = r
                    .try_into()
                    .map_err(|_| de::Error::invalid_length(n, &"a row of 3 numbers"))?;
                rows.push(r.map(|x| x.0));
            }
            match rows.len() {
                0 => Ok(None),
                3 => Ok(Some([rows[0], rows[1], rows[2]])),
                n => Err(de::Error::invalid_length(n, &"3 rows or none")),
            }
        }
    }
    d.deserialize_any(V)
}

fn ser_intrinsic<S: Serializer>(k: &Option<[[f64; 3]; 3]>, s: S) -> Result<S::Ok, S::Error> {
    match k {
        Some(m) => m.serialize(s),
        None => Vec::<[f64; 3]>::new().serialize(s),
    }
}

/// A token of the three large tables (sample_data, sample_annotation, ego_pose), which hold
/// millions of them in a full release. nuScenes' tokens are 32 hex digits: one that long or
/// shorter is kept inline, 40 bytes with no allocation, against a `String`'s 24 bytes and a
/// 48-byte heap block; a longer one is kept on the heap. It reads as a `str`.
#[derive(Clone)]
pub enum TokenStr {
    Inline(u8, [u8; TOKEN_INLINE]),
    Heap(Box<str>),
}

/// The longest token kept inline: a nuScenes token's length.
const TOKEN_INLINE: usize = 32;

impl TokenStr {
    pub fn as_str(&self) -> &str {
        match self {
            // Whole `str`s are copied in, so the bytes are UTF-8.
            TokenStr::Inline(n, b) => std::str::from_utf8(&b[..usize::from(*n)]).unwrap_or(""),
            TokenStr::Heap(s) => s,
        }
    }
}

impl From<&str> for TokenStr {
    fn from(s: &str) -> Self {
        if s.len() <= TOKEN_INLINE {
            let mut b = [0u8; TOKEN_INLINE];
            b[..s.len()].copy_from_slice(s.as_bytes());
            TokenStr::Inline(s.len() as u8, b)
        } else {
            TokenStr::Heap(s.into())
        }
    }
}

impl From<String> for TokenStr {
    fn from(s: String) -> Self {
        TokenStr::from(s.as_str())
    }
}

impl std::borrow::Borrow<str> for TokenStr {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&TokenStr> for String {
    fn from(t: &TokenStr) -> Self {
        t.as_str().to_string()
    }
}

impl Default for TokenStr {
    fn default() -> Self {
        TokenStr::from("")
    }
}

impl std::ops::Deref for TokenStr {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for TokenStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for TokenStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for TokenStr {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for TokenStr {}

impl PartialEq<&str> for TokenStr {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for TokenStr {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialOrd for TokenStr {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TokenStr {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for TokenStr {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}

impl Serialize for TokenStr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TokenStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TokenStr;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a token string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TokenStr, E> {
                Ok(TokenStr::from(v))
            }
        }
        d.deserialize_str(V)
    }
}

/// Rewrites the bare words `NaN`, `Infinity`, `-Infinity` outside JSON strings into string
/// markers of the same byte length (`"N"`, `"Infini"`, `"-Infini"`), so serde's line and
/// column positions stay those of the original file.
pub fn sanitize_nonfinite(buf: &mut [u8]) {
    Scan::default().run(buf, false);
}

/// The bare words and their markers, the longest first (`-Infinity` before `Infinity`).
const NONFINITE: [(&[u8], &[u8]); 3] = [
    (b"-Infinity", b"\"-Infini\""),
    (b"Infinity", b"\"Infini\""),
    (b"NaN", b"\"N\""),
];

/// Where a scan of JSON text is: inside a string, after a backslash in one.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Scan {
    in_str: bool,
    escaped: bool,
}

impl Scan {
    /// Takes the next byte `c`; whether it belongs to a string (its quotes included), where
    /// no bracket or bare word counts.
    pub(crate) fn string(&mut self, c: u8) -> bool {
        if self.in_str {
            if self.escaped {
                self.escaped = false;
            } else if c == b'\\' {
                self.escaped = true;
            } else if c == b'"' {
                self.in_str = false;
            }
            return true;
        }
        self.in_str = c == b'"';
        self.in_str
    }

    /// Rewrites the bare words in `buf`; returns how many leading bytes are done. When `more`
    /// text follows, it stops before an unfinished word at the end (the next piece completes
    /// it); otherwise every byte is done.
    fn run(&mut self, buf: &mut [u8], more: bool) -> usize {
        let mut i = 0;
        while i < buf.len() {
            let c = buf[i];
            if self.string(c) || !matches!(c, b'-' | b'I' | b'N') {
                i += 1;
                continue;
            }
            let rest = &buf[i..];
            if let Some(&(word, marker)) = NONFINITE.iter().find(|(w, _)| rest.starts_with(w)) {
                buf[i..i + word.len()].copy_from_slice(marker);
                i += word.len();
                continue;
            }
            if more
                && NONFINITE
                    .iter()
                    .any(|(w, _)| w.len() > rest.len() && w.starts_with(rest))
            {
                return i;
            }
            i += 1;
        }
        buf.len()
    }
}

/// A reader of JSON text that rewrites the bare non-finite words as [`sanitize_nonfinite`]
/// does, a piece at a time, and drops a leading UTF-8 byte-order mark: a table is parsed as it
/// is read, never held whole.
pub struct NonFiniteReader<R> {
    inner: R,
    buf: Box<[u8]>,
    /// Bytes in `buf`; `done` of them rewritten, `pos` of those handed out.
    len: usize,
    done: usize,
    pos: usize,
    scan: Scan,
    started: bool,
    eof: bool,
}

impl<R: std::io::Read> NonFiniteReader<R> {
    pub fn new(inner: R) -> Self {
        NonFiniteReader {
            inner,
            buf: vec![0; 1 << 16].into_boxed_slice(),
            len: 0,
            done: 0,
            pos: 0,
            scan: Scan::default(),
            started: false,
            eof: false,
        }
    }

    /// Moves the unfinished tail to the front and reads more after it.
    fn fill(&mut self) -> std::io::Result<()> {
        self.buf.copy_within(self.done..self.len, 0);
        self.len -= self.done;
        (self.done, self.pos) = (0, 0);
        while !self.eof && self.len < self.buf.len() {
            match self.inner.read(&mut self.buf[self.len..]) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.len += n;
                    // One read is enough once the mark can be told apart.
                    if self.started || self.len >= 3 {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if !self.started {
            self.started = true;
            if self.buf[..self.len].starts_with(b"\xEF\xBB\xBF") {
                self.buf.copy_within(3..self.len, 0);
                self.len -= 3;
            }
        }
        self.done = self.scan.run(&mut self.buf[..self.len], !self.eof);
        Ok(())
    }
}

impl<R: std::io::Read> std::io::Read for NonFiniteReader<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.done {
            if self.eof && self.done == self.len {
                return Ok(0);
            }
            self.fill()?;
        }
        let n = out.len().min(self.done - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Text handed out at most `.1` bytes a read, as a pipe or a slow disk may: for the tests of
/// the readers that take a table a piece at a time.
#[cfg(test)]
pub(crate) struct Trickle<'a>(pub &'a [u8], pub usize);

#[cfg(test)]
impl std::io::Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.1.min(out.len()).min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonfinite_words_become_markers_of_same_length() {
        let mut s = br#"{"a": [NaN, -Infinity, Infinity], "name": "NaN Infinity"}"#.to_vec();
        let n = s.len();
        sanitize_nonfinite(&mut s);
        assert_eq!(s.len(), n);
        #[derive(Deserialize)]
        struct T {
            #[serde(deserialize_with = "de_arr")]
            a: [f64; 3],
            name: String,
        }
        let t: T = serde_json::from_slice(&s).unwrap();
        assert!(t.a[0].is_nan());
        assert_eq!(t.a[1], f64::NEG_INFINITY);
        assert_eq!(t.a[2], f64::INFINITY);
        assert_eq!(t.name, "NaN Infinity");
    }

    /// The reader gives the bytes the whole-buffer rewrite gives, whatever pieces the text
    /// arrives in (a word cut at every place, a mark, strings holding the words).
    #[test]
    fn the_reader_rewrites_as_the_buffer_does_in_any_pieces() {
        use std::io::Read;
        let text = br#"[{"a": [NaN, -Infinity, Infinity, -1.5e3, 2], "s": "NaN \"Infinity\" -Infinity", "t": -Infinity}, NaN]"#;
        let mut want = text.to_vec();
        sanitize_nonfinite(&mut want);
        assert_ne!(want, text.to_vec());
        for bom in [false, true] {
            let mut input = if bom {
                b"\xEF\xBB\xBF".to_vec()
            } else {
                Vec::new()
            };
            input.extend_from_slice(text);
            for piece in 1..=input.len() {
                let mut got = Vec::new();
                NonFiniteReader::new(Trickle(&input, piece))
                    .read_to_end(&mut got)
                    .unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&got),
                    String::from_utf8_lossy(&want),
                    "pieces of {piece}, mark {bom}"
                );
            }
        }
        // A word cut by the end of the text is left as it is, as the buffer leaves it.
        let mut got = Vec::new();
        NonFiniteReader::new(Trickle(b"[1, -Inf", 3))
            .read_to_end(&mut got)
            .unwrap();
        assert_eq!(got, b"[1, -Inf");
    }

    #[test]
    fn empty_intrinsic_is_none_and_roundtrips() {
        let j = r#"{"token":"t","sensor_token":"s","translation":[0,0,0],"rotation":[1,0,0,0],"camera_intrinsic":[]}"#;
        let c: CalibratedSensor = serde_json::from_str(j).unwrap();
        assert_eq!(c.camera_intrinsic, None);
        let back = serde_json::to_string(&c).unwrap();
        assert!(back.contains("\"camera_intrinsic\":[]"));
    }
}
