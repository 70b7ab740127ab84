//! The wgpu device and the WGSL kernels of `kernels/`.
//!
//! [`Gpu::open`] picks an adapter (see [`adapter`] for the rules and [`adapter_report`] for
//! what was found), [`Gpu`] caches one compute pipeline per kernel, and the helpers of
//! [`compute`] cover the pattern every kernel here follows: a uniform block at binding 0,
//! storage arrays after it, one invocation per output element. Each kernel has a CPU twin in
//! [`crate::cpu`] that shares its `#[repr(C)]` structs.

pub(crate) mod adapter;
pub(crate) mod compute;
mod context;
pub(crate) mod device;
pub(crate) mod kernels;
pub(crate) mod project_points;

pub use adapter::{adapter_report, AdapterSummary};
pub use context::Gpu;
pub use device::{Device, DeviceChoice};
pub use kernels::{KernelId, Shader, KERNELS};
pub use project_points::project_points;

use crate::Error;

/// An [`Error::Gpu`] for `kernel` (a kernel or buffer name).
pub(crate) fn gpu_error(kernel: &str, detail: impl std::fmt::Display) -> Error {
    Error::Gpu {
        kernel: kernel.to_string(),
        detail: detail.to_string(),
    }
}
