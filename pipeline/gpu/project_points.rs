//! Projection of global-frame points into one pinhole camera on the GPU
//! (`kernels/project_points.wgsl`); the structs and the CPU twin are in
//! [`crate::cpu::project_points`](mod@crate::cpu::project_points).

use super::Gpu;
use crate::cpu::project_points::{ProjectParams, Projected};
use crate::Result;

/// Projects `points` (global frame, xyz; the fourth lane is ignored) into the camera of
/// `params`. Agrees with [`crate::cpu::project_points()`] within
/// [`crate::cpu::project_points::agreement_tolerance`], flags exactly away from the
/// boundaries (see that module).
pub fn project_points(
    gpu: &Gpu,
    params: &ProjectParams,
    points: &[[f32; 4]],
) -> Result<Vec<Projected>> {
    gpu.map_elements(super::KernelId::ProjectPoints, params, points)
}
