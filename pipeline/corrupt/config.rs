//! `configs/corruptions.toml`: the severity tables of the 15 corruptions.
//!
//! The file in the repository is embedded as the default. A user's file replaces it whole and
//! must name every key (unknown or missing keys are errors); [`load`](crate::config::StageConfig::load) refuses
//! values the algorithms cannot use, naming the key.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The embedded default config.
pub(crate) const DEFAULT_TOML: &str = include_str!("../../configs/corruptions.toml");
/// The name errors give the embedded default.
pub(crate) const DEFAULT_NAME: &str = "configs/corruptions.toml (built in)";

/// One value per severity 1..=5.
pub(crate) type Sev<T> = [T; 5];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorruptConfig {
    pub output: OutputConfig,
    pub brightness: Brightness,
    pub dark: Dark,
    pub snow: Snow,
    pub fog: Fog,
    pub rain: Rain,
    pub water_splash: WaterSplash,
    pub lens_obstacle: LensObstacle,
    pub camera_crash: CameraCrash,
    pub frame_lost: FrameLost,
    pub saturate: Saturate,
    pub motion_blur: MotionBlur,
    pub zoom_blur: ZoomBlur,
    pub bit_error: BitError,
    pub color_quant: ColorQuant,
    pub h265: H265,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    pub jpeg_quality: u8,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Brightness {
    pub default_severity: u8,
    pub delta_v: Sev<f32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dark {
    pub default_severity: u8,
    pub gamma: f32,
    pub c_max: Sev<f32>,
    pub lambda: Sev<f32>,
    pub sigma: Sev<f32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snow {
    pub default_severity: u8,
    pub mean: Sev<f32>,
    pub std: Sev<f32>,
    pub zoom: Sev<f64>,
    pub threshold: Sev<f32>,
    pub radius: Sev<u32>,
    pub sigma: Sev<f64>,
    pub blend: Sev<f32>,
    pub angle_deg: [f64; 2],
    pub gray_weights: [f32; 3],
    pub whiten_scale: f32,
    pub whiten_offset: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fog {
    pub default_severity: u8,
    pub strength: Sev<f32>,
    pub decay: Sev<f64>,
    pub initial_wibble: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rain {
    pub default_severity: u8,
    pub area_per_drop: Sev<u32>,
    pub length: Sev<u32>,
    pub contrast: Sev<f32>,
    pub slant: [i32; 2],
    pub drop_value: u8,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaterSplash {
    pub default_severity: u8,
    pub drops: Sev<u32>,
    pub radius_min: Sev<u32>,
    pub radius_max: Sev<u32>,
    pub kernel: Sev<u32>,
    pub alpha: f32,
    pub extra_views: [u32; 2],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LensObstacle {
    pub default_severity: u8,
    pub kernel: Sev<u32>,
    pub min_axis: f64,
    pub max_axis: Sev<f64>,
    pub centre_std: Sev<f64>,
    pub extra_views: [u32; 2],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraCrash {
    pub default_severity: u8,
    pub draws: Sev<u32>,
    pub same_cameras_every_frame: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameLost {
    pub default_severity: u8,
    pub probability: Sev<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Saturate {
    pub default_severity: u8,
    pub scale: Sev<f32>,
    pub offset: Sev<f32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MotionBlur {
    pub default_severity: u8,
    pub radius: Sev<u32>,
    pub sigma: Sev<f64>,
    pub angle_deg: [f64; 2],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoomBlur {
    pub default_severity: u8,
    pub start: Sev<f64>,
    pub stop: Sev<f64>,
    pub step: Sev<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BitError {
    pub default_severity: u8,
    pub noise: Sev<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColorQuant {
    pub default_severity: u8,
    pub bits: Sev<u8>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct H265 {
    pub default_severity: u8,
    pub bitrate_divisor: Sev<u32>,
}

/// Collects the first invalid value with its key.
struct Check<'a> {
    file: &'a Path,
}

impl Check<'_> {
    fn fail(&self, key: &str, detail: impl std::fmt::Display) -> Error {
        Error::Config {
            file: self.file.to_path_buf(),
            detail: format!("{key}: {detail}"),
        }
    }

    fn ok(&self, cond: bool, key: &str, detail: impl std::fmt::Display) -> Result<()> {
        if cond {
            Ok(())
        } else {
            Err(self.fail(key, detail))
        }
    }

    fn severity(&self, key: &str, s: u8) -> Result<()> {
        self.ok(
            (1..=5).contains(&s),
            key,
            format!("{s} is not a severity (1..=5)"),
        )
    }

    fn each_f64(&self, key: &str, v: &[f64], lo: f64, hi: f64, what: &str) -> Result<()> {
        for (i, x) in v.iter().enumerate() {
            self.ok(
                x.is_finite() && *x >= lo && *x <= hi,
                &format!("{key}[{i}]"),
                format!("{x} must be {what}"),
            )?;
        }
        Ok(())
    }

    fn each_f32(&self, key: &str, v: &[f32], lo: f32, hi: f32, what: &str) -> Result<()> {
        let w: Vec<f64> = v.iter().map(|x| f64::from(*x)).collect();
        self.each_f64(key, &w, f64::from(lo), f64::from(hi), what)
    }

    fn each_u32(&self, key: &str, v: &[u32], lo: u32, hi: u32) -> Result<()> {
        for (i, x) in v.iter().enumerate() {
            self.ok(
                (lo..=hi).contains(x),
                &format!("{key}[{i}]"),
                format!("{x} must be in {lo}..={hi}"),
            )?;
        }
        Ok(())
    }

    fn odd_kernels(&self, key: &str, v: &[u32]) -> Result<()> {
        for (i, k) in v.iter().enumerate() {
            self.ok(
                k % 2 == 1 && *k >= 3 && *k <= 255,
                &format!("{key}[{i}]"),
                format!("kernel size {k} must be odd, 3..=255"),
            )?;
        }
        Ok(())
    }
}

impl CorruptConfig {
    /// The default severity of every corruption, by [`super::Corruption`].
    pub fn default_severity(&self, c: super::Corruption) -> u8 {
        use super::Corruption as C;
        match c {
            C::Brightness => self.brightness.default_severity,
            C::Dark => self.dark.default_severity,
            C::Snow => self.snow.default_severity,
            C::Fog => self.fog.default_severity,
            C::Rain => self.rain.default_severity,
            C::WaterSplash => self.water_splash.default_severity,
            C::LensObstacle => self.lens_obstacle.default_severity,
            C::CameraCrash => self.camera_crash.default_severity,
            C::FrameLost => self.frame_lost.default_severity,
            C::Saturate => self.saturate.default_severity,
            C::MotionBlur => self.motion_blur.default_severity,
            C::ZoomBlur => self.zoom_blur.default_severity,
            C::BitError => self.bit_error.default_severity,
            C::ColorQuant => self.color_quant.default_severity,
            C::H265 => self.h265.default_severity,
        }
    }

    /// The checks of brightness and dark.
    fn check_light(&self, c: &Check<'_>) -> Result<()> {
        c.each_f32(
            "brightness.delta_v",
            &self.brightness.delta_v,
            -1.0,
            1.0,
            "in [-1, 1]",
        )?;

        let d = &self.dark;
        c.ok(
            d.gamma.is_finite() && d.gamma > 0.0,
            "dark.gamma",
            "must be > 0",
        )?;
        c.each_f32("dark.c_max", &d.c_max, 0.0, 1.0, "in [0, 1]")?;
        c.each_f32("dark.lambda", &d.lambda, 1e-3, 1e4, "in [0.001, 10000]")?;
        c.each_f32("dark.sigma", &d.sigma, 0.0, 1.0, "in [0, 1]")?;
        Ok(())
    }

    /// The checks of snow, fog and rain.
    fn check_weather(&self, c: &Check<'_>) -> Result<()> {
        let s = &self.snow;
        c.each_f32("snow.mean", &s.mean, -10.0, 10.0, "in [-10, 10]")?;
        c.each_f32("snow.std", &s.std, 0.0, 10.0, "in [0, 10]")?;
        c.each_f64("snow.zoom", &s.zoom, 1.0, 64.0, "in [1, 64]")?;
        c.each_f32("snow.threshold", &s.threshold, -10.0, 10.0, "in [-10, 10]")?;
        c.each_u32("snow.radius", &s.radius, 0, 100)?;
        c.each_f64("snow.sigma", &s.sigma, 1e-3, 1e3, "in [0.001, 1000]")?;
        c.each_f32("snow.blend", &s.blend, 0.0, 1.0, "in [0, 1]")?;
        c.each_f64(
            "snow.angle_deg",
            &s.angle_deg,
            -360.0,
            360.0,
            "in [-360, 360]",
        )?;
        c.ok(
            s.angle_deg[0] <= s.angle_deg[1],
            "snow.angle_deg",
            "min must be ≤ max",
        )?;
        c.each_f32("snow.gray_weights", &s.gray_weights, 0.0, 1.0, "in [0, 1]")?;
        c.each_f32(
            "snow.whiten_scale",
            &[s.whiten_scale],
            0.0,
            10.0,
            "in [0, 10]",
        )?;
        c.each_f32(
            "snow.whiten_offset",
            &[s.whiten_offset],
            -1.0,
            1.0,
            "in [-1, 1]",
        )?;

        let f = &self.fog;
        c.each_f32("fog.strength", &f.strength, 0.0, 100.0, "in [0, 100]")?;
        c.each_f64("fog.decay", &f.decay, 1.0, 100.0, "in [1, 100]")?;
        c.each_f64(
            "fog.initial_wibble",
            &[f.initial_wibble],
            1e-6,
            1e6,
            "in (0, 1e6]",
        )?;

        let r = &self.rain;
        c.each_u32("rain.area_per_drop", &r.area_per_drop, 1, u32::MAX)?;
        c.each_u32("rain.length", &r.length, 1, 10_000)?;
        c.each_f32("rain.contrast", &r.contrast, 0.0, 10.0, "in [0, 10]")?;
        c.ok(
            r.slant[0] <= r.slant[1] && r.slant[0].abs() <= 1000 && r.slant[1].abs() <= 1000,
            "rain.slant",
            "must be [min, max] with min ≤ max, |slant| ≤ 1000",
        )?;
        Ok(())
    }

    /// The checks of water_splash and lens_obstacle.
    fn check_lens(&self, c: &Check<'_>) -> Result<()> {
        let w = &self.water_splash;
        c.each_u32("water_splash.drops", &w.drops, 0, 10_000)?;
        c.each_u32("water_splash.radius_min", &w.radius_min, 0, 10_000)?;
        c.each_u32("water_splash.radius_max", &w.radius_max, 0, 10_000)?;
        for i in 0..5 {
            c.ok(
                w.radius_min[i] <= w.radius_max[i],
                &format!("water_splash.radius_min[{i}]"),
                "must be ≤ radius_max",
            )?;
        }
        c.odd_kernels("water_splash.kernel", &w.kernel)?;
        c.each_f32("water_splash.alpha", &[w.alpha], 0.0, 1.0, "in [0, 1]")?;
        c.ok(
            w.extra_views[0] <= w.extra_views[1] && w.extra_views[1] <= 5,
            "water_splash.extra_views",
            "must be [min, max] with min ≤ max ≤ 5",
        )?;

        let l = &self.lens_obstacle;
        c.odd_kernels("lens_obstacle.kernel", &l.kernel)?;
        c.each_f64(
            "lens_obstacle.min_axis",
            &[l.min_axis],
            0.0,
            1.0,
            "in [0, 1]",
        )?;
        c.each_f64("lens_obstacle.max_axis", &l.max_axis, 0.0, 1.0, "in [0, 1]")?;
        for i in 0..5 {
            c.ok(
                l.min_axis <= l.max_axis[i],
                &format!("lens_obstacle.max_axis[{i}]"),
                "must be ≥ min_axis",
            )?;
        }
        c.each_f64(
            "lens_obstacle.centre_std",
            &l.centre_std,
            0.0,
            10.0,
            "in [0, 10]",
        )?;
        c.ok(
            l.extra_views[0] <= l.extra_views[1] && l.extra_views[1] <= 5,
            "lens_obstacle.extra_views",
            "must be [min, max] with min ≤ max ≤ 5",
        )?;
        Ok(())
    }

    /// The checks of camera_crash, frame_lost and saturate.
    fn check_sensor_and_colour(&self, c: &Check<'_>) -> Result<()> {
        c.each_u32("camera_crash.draws", &self.camera_crash.draws, 0, 100)?;
        c.each_f64(
            "frame_lost.probability",
            &self.frame_lost.probability,
            0.0,
            1.0,
            "in [0, 1]",
        )?;
        let sa = &self.saturate;
        c.each_f32("saturate.scale", &sa.scale, 0.0, 1000.0, "in [0, 1000]")?;
        c.each_f32("saturate.offset", &sa.offset, -1.0, 1.0, "in [-1, 1]")?;
        Ok(())
    }

    /// The checks of motion_blur and zoom_blur.
    fn check_blur(&self, c: &Check<'_>) -> Result<()> {
        let m = &self.motion_blur;
        c.each_u32("motion_blur.radius", &m.radius, 0, 200)?;
        c.each_f64("motion_blur.sigma", &m.sigma, 1e-3, 1e3, "in [0.001, 1000]")?;
        c.each_f64(
            "motion_blur.angle_deg",
            &m.angle_deg,
            -360.0,
            360.0,
            "in [-360, 360]",
        )?;
        c.ok(
            m.angle_deg[0] <= m.angle_deg[1],
            "motion_blur.angle_deg",
            "min must be ≤ max",
        )?;

        let z = &self.zoom_blur;
        c.each_f64("zoom_blur.start", &z.start, 1.0, 16.0, "in [1, 16]")?;
        c.each_f64("zoom_blur.stop", &z.stop, 1.0, 16.0, "in [1, 16]")?;
        c.each_f64("zoom_blur.step", &z.step, 1e-4, 16.0, "in [0.0001, 16]")?;
        for i in 0..5 {
            let n = super::blur::arange_len(z.start[i], z.stop[i], z.step[i]);
            c.ok(
                (1..=64).contains(&n),
                &format!("zoom_blur[{i}]"),
                format!("arange(start, stop, step) has {n} factors; 1..=64 allowed"),
            )?;
        }
        Ok(())
    }

    /// The checks of bit_error, color_quant and h265.
    fn check_digital(&self, c: &Check<'_>) -> Result<()> {
        c.each_u32("bit_error.noise", &self.bit_error.noise, 1, u32::MAX)?;
        for (i, b) in self.color_quant.bits.iter().enumerate() {
            c.ok(
                *b <= 8,
                &format!("color_quant.bits[{i}]"),
                "must be in 0..=8",
            )?;
        }
        c.each_u32(
            "h265.bitrate_divisor",
            &self.h265.bitrate_divisor,
            1,
            1_000_000,
        )?;
        Ok(())
    }
}

impl crate::config::StageConfig for CorruptConfig {
    const DEFAULT_TOML: &'static str = DEFAULT_TOML;
    const DEFAULT_NAME: &'static str = DEFAULT_NAME;
    const WHAT: &'static str = "corrupt config";

    /// Refuses the first value the algorithms cannot use, naming its key. The checks go
    /// through the tables in the file's order, one helper per group of corruptions, so the
    /// key reported for a file with several bad values stays the same.
    fn validate(&self, file: &Path) -> Result<()> {
        let c = Check { file };
        for k in super::Corruption::ALL {
            c.severity(
                &format!("{}.default_severity", k.name()),
                self.default_severity(k),
            )?;
        }
        c.ok(
            (1..=100).contains(&self.output.jpeg_quality),
            "output.jpeg_quality",
            "must be in 1..=100",
        )?;
        self.check_light(&c)?;
        self.check_weather(&c)?;
        self.check_lens(&c)?;
        self.check_sensor_and_colour(&c)?;
        self.check_blur(&c)?;
        self.check_digital(&c)
    }
}

/// The built-in config, for the tests of every corruption.
#[cfg(test)]
pub(crate) fn test_config() -> CorruptConfig {
    use crate::config::StageConfig;
    CorruptConfig::default_config().unwrap_or_else(|e| panic!("{e}"))
}
