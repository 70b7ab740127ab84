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
pub mod project_points;
pub mod zbuffer;

pub use adapter::{adapter_report, AdapterSummary};
pub use context::Gpu;
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
