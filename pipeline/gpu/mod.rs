//! The wgpu device and the WGSL kernels of `kernels/`.
//!
//! [`Gpu::open`] picks an adapter (see [`adapter`] for the rules and [`adapter_report`] for
//! what was found), [`Gpu`] caches one compute pipeline per kernel, and the helpers of
//! [`compute`] cover the pattern every kernel here follows: a uniform block at binding 0,
//! storage arrays after it, one invocation per output element. Each kernel has a CPU twin in
//! [`crate::cpu`] that shares its `#[repr(C)]` structs.

pub mod adapter;
pub mod compute;
mod context;
pub mod device;
pub mod project_points;
pub mod zbuffer;

pub use adapter::{adapter_report, AdapterSummary};
pub use context::Gpu;
pub use device::DeviceChoice;
pub use project_points::project_points;
pub use zbuffer::GpuRasteriser;

use crate::Error;

/// Every kernel, by name, with its WGSL source embedded at build time. The name is the file
/// stem in `kernels/` and the key [`Gpu`] caches the compiled pipeline under.
pub const KERNELS: &[(&str, &str)] = &[
    (
        "project_points",
        include_str!("../../kernels/project_points.wgsl"),
    ),
    ("zbuffer", include_str!("../../kernels/zbuffer.wgsl")),
    (
        "som_edt_cols",
        include_str!("../../kernels/som_edt_cols.wgsl"),
    ),
    (
        "som_edt_rows",
        include_str!("../../kernels/som_edt_rows.wgsl"),
    ),
    ("som_anchor", include_str!("../../kernels/som_anchor.wgsl")),
    ("som_draw", include_str!("../../kernels/som_draw.wgsl")),
    // The corruption kernels share `corrupt_common.wgsl.inc` (generator, packing).
    (
        "corrupt_pixel",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_pixel.wgsl")
        ),
    ),
    (
        "corrupt_dark",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_dark.wgsl")
        ),
    ),
    (
        "corrupt_motion",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_motion.wgsl")
        ),
    ),
    (
        "corrupt_zoom",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_zoom.wgsl")
        ),
    ),
    (
        "corrupt_splash",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_splash.wgsl")
        ),
    ),
    (
        "corrupt_gauss_h",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_gauss_h.wgsl")
        ),
    ),
    (
        "corrupt_gauss_v",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_gauss_v.wgsl")
        ),
    ),
    (
        "corrupt_fog_level",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_fog_level.wgsl")
        ),
    ),
    (
        "corrupt_fog_stats",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_fog_stats.wgsl")
        ),
    ),
    (
        "corrupt_fog_composite",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_fog_composite.wgsl")
        ),
    ),
    (
        "corrupt_image_sum",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_image_sum.wgsl")
        ),
    ),
    (
        "corrupt_snow_noise",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_noise.wgsl")
        ),
    ),
    (
        "corrupt_snow_zoom",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_zoom.wgsl")
        ),
    ),
    (
        "corrupt_snow_layer",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_layer.wgsl")
        ),
    ),
    (
        "corrupt_snow_composite",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_composite.wgsl")
        ),
    ),
    (
        "corrupt_rain_drops",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_drops.wgsl")
        ),
    ),
    (
        "corrupt_rain_streak",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_streak.wgsl")
        ),
    ),
    (
        "corrupt_rain_blend",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_blend.wgsl")
        ),
    ),
    (
        "corrupt_rain_final",
        concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_final.wgsl")
        ),
    ),
];

/// The registry entry of kernel `name`.
pub fn kernel(name: &str) -> Option<(&'static str, &'static str)> {
    KERNELS.iter().copied().find(|(n, _)| *n == name)
}

/// An [`Error::Gpu`] for `kernel` (a kernel or buffer name).
fn gpu_error(kernel: &str, detail: impl std::fmt::Display) -> Error {
    Error::Gpu {
        kernel: kernel.to_string(),
        detail: detail.to_string(),
    }
}
