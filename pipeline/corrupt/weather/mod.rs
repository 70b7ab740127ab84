//! Weather: Snow (imagecorruptions' snow layer), Fog (diamond-square plasma fractal) and Rain
//! (DriveBench's streak rasteriser), one file per kind as the kernels are named
//! (`kernels/corrupt_snow_*`, `corrupt_fog_*`, `corrupt_rain_*`).
//!
//! Every stage here has a kernel of the same name in `kernels/corrupt_*.wgsl`; the f32
//! arithmetic is written in the same order on both sides.

mod fog;
mod rain;
mod snow;

pub use fog::{fog_cpu, fog_level_element, fog_map_cpu, fog_value, FogLevel, FogPlan};
#[cfg(test)]
pub(crate) use rain::RainParams;
pub(crate) use rain::{rain_cpu, RainPlan};
#[cfg(test)]
pub(crate) use snow::SnowParams;
pub(crate) use snow::{snow_cpu, SnowPlan};

/// Streams of the weather draws, kept in one table so that the kinds cannot share an id.
pub(crate) const SNOW_NOISE: u32 = 0x0300;
pub(crate) const SNOW_ANGLE: u32 = 0x0301;
pub(crate) const FOG_NODE: u32 = 0x0400;
pub(crate) const RAIN_SLANT: u32 = 0x0500;
pub(crate) const RAIN_X: u32 = 0x0501;
pub(crate) const RAIN_Y: u32 = 0x0502;
