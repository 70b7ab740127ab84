//! The checks of robustness splits (`crate::robustness`): every row repeats a row of the main
//! split word for word (question, options, key and letter, image sizes) under its own id,
//! names the setting the manifest gives its split, every setting of a family re-asks the same
//! rows, and each image is changed by its corruption, unless the corruption leaves some views
//! of a frame as they are (Water Splash, Lens Obstacle, Camera Crash and Frame Lost choose
//! views).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use image::RgbImage;

use super::rows::{Row, State};
use super::{Listed, Report};
use crate::release::read::SplitSetting;

/// A corrupted image is told apart from its clean one when one of these moves by more than
/// this many grey levels; re-encoding a picture as JPEG at quality 95 moves none of them by
/// more than a few tenths.
const CHANGED: f32 = 0.75;

/// …or when its neighbour difference changes by more than this fraction: on a smooth picture
/// (a side camera facing a wall) motion blur moves it by only half a grey level, but by a
/// fifth or more of itself.
const CHANGED_DETAIL: f32 = 0.1;

/// Per channel mean and standard deviation and the mean absolute difference between
/// neighbouring pixels (what blur lowers and noise raises), in grey levels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stats([f32; 7]);

impl Stats {
    pub fn of(img: &RgbImage) -> Self {
        let (w, h) = img.dimensions();
        let n = f64::from(w) * f64::from(h);
        if n == 0.0 {
            return Stats([0.0; 7]);
        }
        let (mut sum, mut sq) = ([0f64; 3], [0f64; 3]);
        let mut grad = 0f64;
        let raw = img.as_raw();
        let stride = w as usize * 3;
        for (i, px) in raw.chunks_exact(3).enumerate() {
            for c in 0..3 {
                let v = f64::from(px[c]);
                sum[c] += v;
                sq[c] += v * v;
            }
            let x = i % w as usize;
            if x + 1 < w as usize {
                let right = &raw[i * 3 + 3..i * 3 + 6];
                grad += px
                    .iter()
                    .zip(right)
                    .map(|(a, b)| f64::from(a.abs_diff(*b)))
                    .sum::<f64>();
            }
            if i * 3 + stride + 3 <= raw.len() {
                let below = &raw[i * 3 + stride..i * 3 + stride + 3];
                grad += px
                    .iter()
                    .zip(below)
                    .map(|(a, b)| f64::from(a.abs_diff(*b)))
                    .sum::<f64>();
            }
        }
        let mut out = [0f32; 7];
        for c in 0..3 {
            let mean = sum[c] / n;
            out[c] = mean as f32;
            out[3 + c] = (sq[c] / n - mean * mean).max(0.0).sqrt() as f32;
        }
        out[6] = (grad / (n * 6.0)) as f32;
        Stats(out)
    }

    /// The largest change of a statistic between two images.
    pub fn change(&self, other: &Stats) -> f32 {
        self.0
            .iter()
            .zip(other.0)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max)
    }

    /// The change of the neighbour difference as a fraction of the clean image's.
    pub(crate) fn detail_change(&self, other: &Stats) -> f32 {
        (self.0[6] - other.0[6]).abs() / self.0[6].max(1e-3)
    }

    /// Whether `other` is this image changed beyond re-encoding.
    pub fn changed(&self, other: &Stats) -> bool {
        self.change(other) > CHANGED || self.detail_change(other) > CHANGED_DETAIL
    }
}

/// A row of a robustness split, kept until every clean row is read.
#[derive(Debug)]
struct Repeat {
    split: String,
    shard: String,
    qa_id: String,
    family: String,
    cameras: Vec<String>,
    fingerprint: [u8; 32],
    images: Vec<Option<[u8; 32]>>,
    setting: Option<String>,
    base: Option<String>,
    corruption: Option<String>,
    severity: Option<u8>,
    seed: Option<u64>,
}

/// What the robustness checks carry from shard to shard.
#[derive(Debug, Default)]
pub(crate) struct Robust {
    main: String,
    seed: Option<u64>,
    settings: HashMap<String, SplitSetting>,
    /// The image digests of the main split's rows that robustness splits repeat, by `qa_id`.
    clean_images: HashMap<String, Vec<Option<[u8; 32]>>>,
    /// The `base_qa_id`s of the robustness splits' rows, read ahead ([`Robust::read_bases`]).
    bases: Option<HashSet<String>>,
    repeats: Vec<Repeat>,
}

impl Robust {
    /// The robustness splits `manifest` describes; a malformed description is a violation.
    pub(crate) fn from_manifest(m: Option<&serde_json::Value>, rep: &mut Report) -> Self {
        let mut out = Robust::default();
        let Some(m) = m else { return out };
        out.main = m["split"].as_str().unwrap_or_default().to_string();
        let r = &m["robustness"];
        if r.is_null() {
            return out;
        }
        out.seed = r["seed"].as_u64();
        match serde_json::from_value::<Vec<SplitSetting>>(r["settings"].clone()) {
            Ok(v) => {
                for s in v {
                    out.settings.insert(s.split.clone(), s);
                }
            }
            Err(e) => rep.add(
                "manifest",
                None,
                None,
                format!("robustness.settings cannot be read: {e}"),
            ),
        }
        out
    }

    pub(crate) fn is_robust(&self, split: &str) -> bool {
        self.settings.contains_key(split)
    }

    /// Whether the release has robustness splits.
    pub(crate) fn any(&self) -> bool {
        !self.settings.is_empty()
    }

    /// Reads the `base_qa_id` column of the robustness splits' shards, so that only the clean
    /// rows they repeat are kept for the comparison: a drawn subset, not the main split. A
    /// shard that cannot be read leaves every clean row kept (the row checks report it).
    pub(crate) fn read_bases(&mut self, dir: &std::path::Path, listed: &[super::Listed]) {
        let mut bases = HashSet::new();
        for l in listed.iter().filter(|l| self.is_robust(&l.split)) {
            let read =
                crate::release::read::for_each_string(&dir.join(&l.path), "base_qa_id", |b| {
                    if let Some(b) = b.filter(|b| !b.is_empty()) {
                        bases.insert(b.to_string());
                    }
                });
            if read.is_err() {
                return;
            }
        }
        self.bases = Some(bases);
    }

    /// Whether the clean row `qa_id` of the main split is repeated by a robustness split (or
    /// might be, when the repeats could not be read ahead).
    pub(crate) fn repeats(&self, split: &str, qa_id: &str) -> bool {
        self.any() && split == self.main && self.bases.as_ref().is_none_or(|b| b.contains(qa_id))
    }

    /// Notes a row of a main split (its images, for the comparison with its repeats).
    pub(super) fn note_clean(&mut self, r: &Row, split: &str) {
        if self.repeats(split, &r.qa_id) {
            self.clean_images.insert(r.qa_id.clone(), r.images.clone());
        }
    }

    /// Notes a row of a robustness split, checked in [`Robust::finish`].
    pub(super) fn note_repeat(&mut self, r: &Row, shard: &Listed, fingerprint: [u8; 32]) {
        self.repeats.push(Repeat {
            split: shard.split.clone(),
            shard: shard.path.clone(),
            qa_id: r.qa_id.clone(),
            family: r.family.clone(),
            cameras: r.cameras.clone(),
            fingerprint,
            images: r.images.clone(),
            setting: r.setting.clone(),
            base: r.base_qa_id.clone(),
            corruption: r.corruption.clone(),
            severity: r.severity,
            seed: r.corruption_seed,
        });
    }

    pub(super) fn finish(&self, state: &State, rep: &mut Report) {
        let mut sets: BTreeMap<&str, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
        // Per split: images compared with their clean image, and how many look changed.
        let mut looks: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for x in &self.repeats {
            let Some(s) = self.settings.get(&x.split) else {
                continue;
            };
            let mut bad = |check: &str, detail: String| {
                rep.add(check, Some(&x.shard), Some(&x.qa_id), detail);
            };
            let Some(base) = x.base.as_deref() else {
                bad(
                    "robust_row",
                    "no base_qa_id: the row names no clean row".into(),
                );
                continue;
            };
            sets.entry(&x.family)
                .or_default()
                .entry(&x.split)
                .or_default()
                .insert(base);
            if base == x.qa_id {
                bad(
                    "robust_row",
                    "has the qa_id of the clean row it repeats; a repeat has an id of its own"
                        .into(),
                );
            }
            match state.fingerprint_of(&self.main, base) {
                None => bad(
                    "robust_row",
                    format!("repeats {base}, which is not in split {}", self.main),
                ),
                Some(d) if *d != x.fingerprint => bad(
                    "robust_row",
                    format!(
                        "differs from {base} in split {} (prompt, choices, key or image sizes)",
                        self.main
                    ),
                ),
                Some(_) => {}
            }
            let want = (
                Some(s.setting.as_str()),
                Some(s.corruption.as_str()),
                Some(s.severity),
                self.seed,
            );
            let have = (
                x.setting.as_deref(),
                x.corruption.as_deref(),
                x.severity,
                x.seed,
            );
            if have != want {
                bad(
                    "robust_setting",
                    format!(
                        "setting, corruption, severity and seed are {have:?}; split {} is {want:?} \
                         in the manifest",
                        x.split
                    ),
                );
            }
            let (n, changed) = self.check_images(x, s, base, state, &mut bad);
            let c = looks.entry(&x.split).or_default();
            c.0 += n;
            c.1 += changed;
        }
        // A corruption may leave one smooth picture nearly as it was (motion blur along a
        // wall), so the rule is the split's: nearly all of a picture corruption's images change.
        for (split, (n, changed)) in &looks {
            let Some(s) = self.settings.get(*split) else {
                continue;
            };
            if !selects_views(&s.corruption) && *n > 0 && (*changed as f64) < 0.9 * *n as f64 {
                rep.add(
                    "robust_image",
                    None,
                    None,
                    format!(
                        "split {split}: {changed} of {n} images look changed by {} (no mean, \
                         spread or detail moved beyond re-encoding); at least 90 % must",
                        s.corruption
                    ),
                );
            }
        }
        for (family, splits) in &sets {
            let expected: Vec<&String> = self.settings.keys().collect();
            let first = splits.iter().next();
            for split in expected {
                let have = splits.get(split.as_str());
                let differs = match (have, first) {
                    (Some(h), Some((_, f))) => h != f,
                    _ => true,
                };
                if differs {
                    rep.add(
                        "robust_rows",
                        None,
                        None,
                        format!(
                            "split {split} re-asks {} {family} rows, split {} {}: every setting \
                             must re-ask the same rows",
                            have.map_or(0, BTreeSet::len),
                            first.map_or("–", |(s, _)| s),
                            first.map_or(0, |(_, f)| f.len())
                        ),
                    );
                }
            }
        }
    }

    /// Checks a repeat's images against its clean row's; returns how many of them could be
    /// compared and how many of those look changed.
    fn check_images(
        &self,
        x: &Repeat,
        s: &SplitSetting,
        base: &str,
        state: &State,
        bad: &mut impl FnMut(&str, String),
    ) -> (usize, usize) {
        let mut seen = (0, 0);
        let selective = selects_views(&s.corruption);
        let Some(clean) = self.clean_images.get(base) else {
            return seen;
        };
        for (j, (c, r)) in clean.iter().zip(&x.images).enumerate() {
            let (Some(c), Some(r)) = (c, r) else { continue };
            let cam = x.cameras.get(j).map_or("?", String::as_str);
            if c == r && !selective {
                bad(
                    "robust_image",
                    format!("image {j} ({cam}) is the clean image's bytes, not corrupted"),
                );
                continue;
            }
            let (Some(cs), Some(rs)) = (state.stats_of(c), state.stats_of(r)) else {
                continue;
            };
            seen.0 += 1;
            seen.1 += usize::from(cs.changed(rs));
        }
        seen
    }
}

/// The corruptions that change only some views of a frame.
fn selects_views(corruption: &str) -> bool {
    matches!(
        corruption,
        "water_splash" | "lens_obstacle" | "camera_crash" | "frame_lost"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_see_brightness_blur_and_nothing() {
        let mut img = RgbImage::new(32, 16);
        for (x, y, p) in img.enumerate_pixels_mut() {
            *p = image::Rgb([
                (x * 7 % 256) as u8,
                (y * 13 % 256) as u8,
                ((x + y) * 5) as u8,
            ]);
        }
        let s = Stats::of(&img);
        assert_eq!(s.change(&Stats::of(&img)), 0.0);
        let brighter = RgbImage::from_fn(32, 16, |x, y| {
            let p = img.get_pixel(x, y).0;
            image::Rgb(p.map(|v| v.saturating_add(20)))
        });
        assert!(s.change(&Stats::of(&brighter)) > 10.0);
        let blurred = image::imageops::blur(&img, 2.0);
        assert!(s.changed(&Stats::of(&blurred)));
        // A smooth picture with a faint texture, blurred a little: its detail, not its grey
        // levels, moves.
        let smooth = RgbImage::from_fn(64, 32, |x, y| {
            let v = 100 + ((x * 7 + y * 13) % 2) as u8;
            image::Rgb([v, v, v])
        });
        let soft = image::imageops::blur(&smooth, 1.5);
        let st = Stats::of(&smooth);
        assert!(
            st.change(&Stats::of(&soft)) < CHANGED,
            "{:?}",
            Stats::of(&soft)
        );
        assert!(st.changed(&Stats::of(&soft)));
        assert!(!st.changed(&st));
    }
}
