//! Plain-Rust twins of the WGSL kernels in `kernels/`.
//!
//! Every kernel has a twin here that repeats its f32 arithmetic in the same order, so that
//! the two can be compared within a tight, documented tolerance. The twins are the fallback
//! when no adapter is usable and the ground truth the GPU results are tested against. The
//! `#[repr(C)]` structs a kernel reads and writes are defined next to its twin, and the GPU
//! side reuses them, so both sides share one memory layout.

pub mod project_points;

pub use project_points::{project_points, ProjectParams, Projected};
