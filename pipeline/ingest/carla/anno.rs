//! Reading one Bench2Drive `anno/NNNNN.json.gz`: gzip → JSON → typed fields, every error
//! naming the file and the JSON path of the value.

use std::io::Read;
use std::path::Path;

use nalgebra::Matrix4;
use serde_json::Value;

use crate::{Error, Result};

/// An annotation file's JSON.
pub(crate) struct Anno<'a> {
    pub path: &'a Path,
    pub root: Value,
}

/// Reads and decompresses one annotation file.
pub(crate) fn read(path: &Path) -> Result<Anno<'_>> {
    let f = crate::store::input::open(path)?;
    let mut text = Vec::new();
    let gz = flate2::read::GzDecoder::new(f);
    crate::store::input::Capped::new(gz, crate::store::input::DECOMPRESSED, path)
        .read_to_end(&mut text)
        .map_err(|e| Error::input(path, "gzip", format!("not a readable gzip stream: {e}")))?;
    let root: Value = serde_json::from_slice(crate::store::input::without_bom(&text))
        .map_err(|e| Error::json(path, e))?;
    Ok(Anno { path, root })
}

impl Anno<'_> {
    pub fn err(&self, at: &str, detail: impl Into<String>) -> Error {
        Error::input(self.path, at, detail)
    }

    /// The value at a `/`-separated path (object keys or array indices).
    pub fn get<'v>(&self, v: &'v Value, at: &str, key: &str) -> Result<&'v Value> {
        v.get(key)
            .ok_or_else(|| self.err(&format!("{at}/{key}"), "missing"))
    }

    pub(crate) fn num(&self, v: &Value, at: &str) -> Result<f64> {
        match v.as_f64() {
            Some(x) if x.is_finite() => Ok(x),
            _ => Err(self.err(at, format!("expected a finite number, got {v}"))),
        }
    }

    pub(crate) fn vec3(&self, v: &Value, at: &str) -> Result<[f64; 3]> {
        let a = v
            .as_array()
            .filter(|a| a.len() == 3)
            .ok_or_else(|| self.err(at, format!("expected 3 numbers, got {v}")))?;
        Ok([
            self.num(&a[0], &format!("{at}/0"))?,
            self.num(&a[1], &format!("{at}/1"))?,
            self.num(&a[2], &format!("{at}/2"))?,
        ])
    }

    pub(crate) fn mat<const N: usize>(&self, v: &Value, at: &str) -> Result<[[f64; N]; N]> {
        let rows = v
            .as_array()
            .filter(|a| a.len() == N)
            .ok_or_else(|| self.err(at, format!("expected a {N}×{N} matrix")))?;
        let mut m = [[0.0; N]; N];
        for (r, row) in rows.iter().enumerate() {
            let cols = row
                .as_array()
                .filter(|a| a.len() == N)
                .ok_or_else(|| self.err(&format!("{at}/{r}"), format!("expected {N} numbers")))?;
            for (c, x) in cols.iter().enumerate() {
                m[r][c] = self.num(x, &format!("{at}/{r}/{c}"))?;
            }
        }
        Ok(m)
    }

    pub(crate) fn mat4(&self, v: &Value, at: &str) -> Result<Matrix4<f64>> {
        let m = self.mat::<4>(v, at)?;
        Ok(Matrix4::from_fn(|r, c| m[r][c]))
    }

    pub fn str<'v>(&self, v: &'v Value, at: &str) -> Result<&'v str> {
        v.as_str()
            .ok_or_else(|| self.err(at, format!("expected a string, got {v}")))
    }

    /// An id that Bench2Drive writes as a string (sometimes as a number).
    pub fn id(&self, v: &Value, at: &str) -> Result<String> {
        match v {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            _ => Err(self.err(at, format!("expected an id, got {v}"))),
        }
    }
}
