//! The selection filters of MetaVQA's nuScenes path (`docs/metavqa.md` §2.1), with a true
//! occlusion test added (`docs/metavqa.md` §8 #2).
//!
//! Every (camera image, object) row is tested against the thresholds of
//! [`FilterConfig`] in this fixed order, and the first test that fails is its
//! `reject_reason`:
//!
//! | order | reason | the row fails when |
//! |---|---|---|
//! | 1 | `ignored_category` | its category matches an entry of `ignored_categories` |
//! | 2 | `low_visibility_bin` | its visibility bin is not in `visibility_bins` (a missing bin fails unless `allow_missing_visibility`) |
//! | 3 | `too_few_lidar_points` | `num_lidar_pts < min_lidar_points` |
//! | 4 | `too_far` | `distance_m > max_distance_m` (or is not a number) |
//! | 5 | `truncated` | `truncation < min_truncation` |
//! | 6 | `too_few_visible_pixels` | `visible_pixels < min_visible_pixels` |
//! | 7 | `occluded` | `visible_fraction < min_visible_fraction` |
//!
//! Annotation-level tests come first (the category, then MetaVQA's pass 1), then the image-level
//! ones (pass 2: truncation, visible pixels, and the occlusion ratio the paper describes).

use super::config::FilterConfig;

/// Why a row was not kept. The strings are stable and written to `reject_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RejectReason {
    IgnoredCategory,
    LowVisibilityBin,
    TooFewLidarPoints,
    TooFar,
    Truncated,
    TooFewVisiblePixels,
    Occluded,
}

impl RejectReason {
    /// Every reason, in test order.
    pub const ALL: [RejectReason; 7] = [
        RejectReason::IgnoredCategory,
        RejectReason::LowVisibilityBin,
        RejectReason::TooFewLidarPoints,
        RejectReason::TooFar,
        RejectReason::Truncated,
        RejectReason::TooFewVisiblePixels,
        RejectReason::Occluded,
    ];

    /// The snake_case name written to `reject_reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectReason::IgnoredCategory => "ignored_category",
            RejectReason::LowVisibilityBin => "low_visibility_bin",
            RejectReason::TooFewLidarPoints => "too_few_lidar_points",
            RejectReason::TooFar => "too_far",
            RejectReason::Truncated => "truncated",
            RejectReason::TooFewVisiblePixels => "too_few_visible_pixels",
            RejectReason::Occluded => "occluded",
        }
    }
}

impl std::fmt::Display for RejectReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the filters look at for one row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterInput<'a> {
    pub category: &'a str,
    pub visibility_bin: Option<u8>,
    pub num_lidar_pts: u32,
    pub distance_m: f64,
    pub truncation: f64,
    pub visible_pixels: u32,
    pub visible_fraction: f64,
}

/// Whether `category` matches one `ignored_categories` entry: equal to it, or, for an entry
/// `prefix.*`, equal to `prefix` or starting with `prefix.`.
pub fn category_matches(pattern: &str, category: &str) -> bool {
    match pattern.strip_suffix(".*") {
        Some(prefix) => {
            category == prefix
                || (category.len() > prefix.len()
                    && category.starts_with(prefix)
                    && category.as_bytes()[prefix.len()] == b'.')
        }
        None => category == pattern,
    }
}

/// The first failing test, or `None` when the row is kept. NaN measurements fail their test.
pub fn evaluate(cfg: &FilterConfig, x: &FilterInput<'_>) -> Option<RejectReason> {
    if cfg
        .ignored_categories
        .iter()
        .any(|p| category_matches(p, x.category))
    {
        return Some(RejectReason::IgnoredCategory);
    }
    let bin_ok = match x.visibility_bin {
        Some(b) => cfg.visibility_bins.contains(&b),
        None => cfg.allow_missing_visibility,
    };
    if !bin_ok {
        return Some(RejectReason::LowVisibilityBin);
    }
    if x.num_lidar_pts < cfg.min_lidar_points {
        return Some(RejectReason::TooFewLidarPoints);
    }
    if x.distance_m.is_nan() || x.distance_m > cfg.max_distance_m {
        return Some(RejectReason::TooFar);
    }
    if x.truncation.is_nan() || x.truncation < cfg.min_truncation {
        return Some(RejectReason::Truncated);
    }
    if x.visible_pixels < cfg.min_visible_pixels {
        return Some(RejectReason::TooFewVisiblePixels);
    }
    if x.visible_fraction.is_nan() || x.visible_fraction < cfg.min_visible_fraction {
        return Some(RejectReason::Occluded);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_patterns_match_whole_segments() {
        assert!(category_matches("flat.*", "flat.driveable_surface"));
        assert!(category_matches("flat.*", "flat"));
        assert!(!category_matches("flat.*", "flatbed.truck"));
        assert!(category_matches("noise", "noise"));
        assert!(!category_matches("noise", "noise.x"));
    }
}
