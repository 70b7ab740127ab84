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
    pub token: String,
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
    pub token: String,
    pub sample_token: String,
    pub ego_pose_token: String,
    pub calibrated_sensor_token: String,
    pub timestamp: i64,
    pub fileformat: String,
    pub is_key_frame: bool,
    pub height: u32,
    pub width: u32,
    pub filename: String,
    pub prev: String,
    pub next: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleAnnotation {
    pub token: String,
    pub sample_token: String,
    pub instance_token: String,
    /// `"1"`..`"4"`, or `""` when unannotated.
    #[serde(default)]
    pub visibility_token: String,
    #[serde(default)]
    pub attribute_tokens: Vec<String>,
    #[serde(deserialize_with = "de_arr")]
    pub translation: [f64; 3],
    #[serde(deserialize_with = "de_arr")]
    pub size: [f64; 3],
    #[serde(deserialize_with = "de_arr")]
    pub rotation: [f64; 4],
    pub prev: String,
    pub next: String,
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

/// Rewrites the bare words `NaN`, `Infinity`, `-Infinity` outside JSON strings into string
/// markers of the same byte length (`"N"`, `"Infini"`, `"-Infini"`), so serde's line and
/// column positions stay those of the original file.
pub fn sanitize_nonfinite(buf: &mut [u8]) {
    let mut in_str = false;
    let mut escaped = false;
    let mut i = 0;
    while i < buf.len() {
        let c = buf[i];
        if in_str {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_str = true;
            i += 1;
            continue;
        }
        let rest = &buf[i..];
        let (word, marker): (&[u8], &[u8]) = if rest.starts_with(b"-Infinity") {
            (b"-Infinity", b"\"-Infini\"")
        } else if rest.starts_with(b"Infinity") {
            (b"Infinity", b"\"Infini\"")
        } else if rest.starts_with(b"NaN") {
            (b"NaN", b"\"N\"")
        } else {
            i += 1;
            continue;
        };
        buf[i..i + word.len()].copy_from_slice(marker);
        i += word.len();
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

    #[test]
    fn empty_intrinsic_is_none_and_roundtrips() {
        let j = r#"{"token":"t","sensor_token":"s","translation":[0,0,0],"rotation":[1,0,0,0],"camera_intrinsic":[]}"#;
        let c: CalibratedSensor = serde_json::from_str(j).unwrap();
        assert_eq!(c.camera_intrinsic, None);
        let back = serde_json::to_string(&c).unwrap();
        assert!(back.contains("\"camera_intrinsic\":[]"));
    }
}
