//! Projection of global-frame points into one pinhole camera: the CPU twin of
//! `kernels/project_points.wgsl`, the structs both sides share, and an f64 reference.
//!
//! # Agreement with the GPU
//!
//! [`project_points`] evaluates exactly the expressions of the kernel, in the same order, in
//! f32, so the two differ only where the GPU is allowed to round differently:
//!
//! * drivers may contract `a * b + c` into one fused multiply-add (WGSL and SPIR-V allow it;
//!   Rust never does it), which skips one rounding per term of the 4-term dot products and of
//!   `fx * (x / z) + cx`;
//! * WGSL only requires f32 division to be accurate to 2.5 ULP (Rust's is correctly rounded);
//! * GPUs may flush subnormals to zero (irrelevant at metric scales).
//!
//! [`agreement_tolerance`] turns these into a per-point bound: each dot product may differ by
//! `4·ε·S`, where `S` is the sum of the magnitudes of its terms (cancellation between a large
//! global coordinate and the translation is what makes `S` matter), the quotient by a further
//! 3 ULP, and the affine step by 2 ULP of its terms, all times a safety factor of 2. The flags
//! are compared exactly: they only differ when a value lies within that bound of a boundary
//! (`z = near`, `u ∈ {0, width}`, `v ∈ {0, height}`).

use bytemuck::{Pod, Zeroable};
use nalgebra::{Matrix3, Matrix4, Vector3, Vector4};
use rayon::prelude::*;

/// Flag bit: the point is in front of the near plane (`depth > near`).
pub const IN_FRONT: u32 = 1;
/// Flag bit: the projection lies inside the image (`0 <= u < width && 0 <= v < height`);
/// only ever set together with [`IN_FRONT`].
pub const IN_IMAGE: u32 = 2;

/// The near plane used unless [`ProjectParams::with_near`] says otherwise, in metres.
pub(crate) const DEFAULT_NEAR: f32 = 0.1;

/// One camera: the uniform block of `project_points.wgsl` (96 bytes, WGSL uniform layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct ProjectParams {
    /// Global → camera transform, column-major (`global_to_camera[c][r]` is row `r` of
    /// column `c`), as nalgebra stores it and as WGSL's `mat4x4<f32>` reads it. It is the
    /// devkit chain global → ego → sensor, composed in f64 before the cast to f32.
    pub global_to_camera: [[f32; 4]; 4],
    pub fx: f32,
    pub fy: f32,
    pub cx: f32,
    pub cy: f32,
    /// Image size in pixels.
    pub width: u32,
    pub height: u32,
    /// Points with camera depth `<= near` are not projected.
    pub near: f32,
    // Rounds the struct up to the 16-byte multiple a WGSL uniform block has.
    pub(crate) _pad: u32,
}

impl ProjectParams {
    /// A camera from a column-major f32 matrix, `[fx, fy, cx, cy]` and `[width, height]`,
    /// with the near plane at [`DEFAULT_NEAR`].
    pub fn new(global_to_camera: [[f32; 4]; 4], intrinsics: [f32; 4], size: [u32; 2]) -> Self {
        let [fx, fy, cx, cy] = intrinsics;
        Self {
            global_to_camera,
            fx,
            fy,
            cx,
            cy,
            width: size[0],
            height: size[1],
            near: DEFAULT_NEAR,
            _pad: 0,
        }
    }

    /// A camera from an f64 global → camera matrix (e.g. `(ego_pose * sensor_pose)
    /// .inverse().to_homogeneous()`), rounded to f32 once, after composing.
    pub fn from_matrix(
        global_to_camera: &Matrix4<f64>,
        intrinsics: [f32; 4],
        size: [u32; 2],
    ) -> Self {
        let mut m = [[0f32; 4]; 4];
        for (c, col) in m.iter_mut().enumerate() {
            for (r, v) in col.iter_mut().enumerate() {
                *v = global_to_camera[(r, c)] as f32;
            }
        }
        Self::new(m, intrinsics, size)
    }

    /// The same camera with another near plane.
    pub fn with_near(self, near: f32) -> Self {
        Self { near, ..self }
    }
}

/// The projection of one point: the storage element the kernel writes (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Projected {
    /// Pixel coordinates; both 0 when the point is not in front of the near plane, so that
    /// no NaN or infinity ever leaves the kernel and results compare bit for bit.
    pub u: f32,
    pub v: f32,
    /// `z` in the camera frame, also for points behind the near plane.
    pub depth: f32,
    /// [`IN_FRONT`] | [`IN_IMAGE`].
    pub flags: u32,
}

/// Projects `points` (global frame; the fourth lane is padding and ignored) into one camera.
///
/// Mirrors `kernels/project_points.wgsl` operation for operation; see the module docs for
/// how far the two may differ.
pub fn project_points(params: &ProjectParams, points: &[[f32; 4]]) -> Vec<Projected> {
    points.par_iter().map(|p| project_one(params, p)).collect()
}

/// One point; the statements are those of the kernel, in its order.
fn project_one(k: &ProjectParams, p: &[f32; 4]) -> Projected {
    let m = &k.global_to_camera;
    let x = m[0][0] * p[0] + m[1][0] * p[1] + m[2][0] * p[2] + m[3][0];
    let y = m[0][1] * p[0] + m[1][1] * p[1] + m[2][1] * p[2] + m[3][1];
    let z = m[0][2] * p[0] + m[1][2] * p[1] + m[2][2] * p[2] + m[3][2];
    let mut r = Projected {
        u: 0.0,
        v: 0.0,
        depth: z,
        flags: 0,
    };
    if z > k.near {
        r.u = k.fx * (x / z) + k.cx;
        r.v = k.fy * (y / z) + k.cy;
        r.flags = IN_FRONT;
        if r.u >= 0.0 && r.u < k.width as f32 && r.v >= 0.0 && r.v < k.height as f32 {
            r.flags |= IN_IMAGE;
        }
    }
    r
}

/// How far the GPU's `(u, v, depth)` of `point` may be from [`project_points`]'s (see the
/// module docs for the derivation). `u` and `v` get 0 for points behind the near plane,
/// where both sides write exactly 0.
pub fn agreement_tolerance(params: &ProjectParams, point: &[f32; 4]) -> [f32; 3] {
    const SAFETY: f64 = 2.0;
    let eps = f64::from(f32::EPSILON);
    let m = &params.global_to_camera;
    // Value of each camera coordinate and the magnitude sum of its terms, in f64.
    let row = |r: usize| {
        let terms = [
            f64::from(m[0][r]) * f64::from(point[0]),
            f64::from(m[1][r]) * f64::from(point[1]),
            f64::from(m[2][r]) * f64::from(point[2]),
            f64::from(m[3][r]),
        ];
        let value: f64 = terms.iter().sum();
        let scale: f64 = terms.iter().map(|t| t.abs()).sum();
        (value, 4.0 * eps * scale)
    };
    let (x, dx) = row(0);
    let (y, dy) = row(1);
    let (z, dz) = row(2);
    if z <= f64::from(params.near) {
        return [0.0, 0.0, (SAFETY * dz) as f32];
    }
    let pixel = |num: f64, dnum: f64, f: f32, c: f32| {
        let (f, c) = (f64::from(f), f64::from(c));
        let q = num / z;
        let dq = (dnum + q.abs() * dz) / z + 3.0 * eps * q.abs();
        f.abs() * dq + 2.0 * eps * ((f * q).abs() + c.abs())
    };
    [
        (SAFETY * pixel(x, dx, params.fx, params.cx)) as f32,
        (SAFETY * pixel(y, dy, params.fy, params.cy)) as f32,
        (SAFETY * dz) as f32,
    ]
}

/// The projection of one point computed in f64 by [`project_points_f64`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProjectedF64 {
    pub u: f64,
    pub v: f64,
    pub depth: f64,
    pub flags: u32,
}

/// Independent f64 reference for tests: builds nalgebra matrices from the parameters and
/// projects with the intrinsic matrix `K` (`[u·z, v·z, z] = K · p_cam`), a different formula
/// from the twins', so that an error common to kernel and twin cannot hide.
pub fn project_points_f64(params: &ProjectParams, points: &[[f32; 4]]) -> Vec<ProjectedF64> {
    let m = Matrix4::from_fn(|r, c| f64::from(params.global_to_camera[c][r]));
    let k = Matrix3::new(
        f64::from(params.fx),
        0.0,
        f64::from(params.cx),
        0.0,
        f64::from(params.fy),
        f64::from(params.cy),
        0.0,
        0.0,
        1.0,
    );
    points
        .iter()
        .map(|p| {
            let g = Vector4::new(f64::from(p[0]), f64::from(p[1]), f64::from(p[2]), 1.0);
            let cam = m * g;
            let depth = cam.z;
            if depth <= f64::from(params.near) {
                return ProjectedF64 {
                    u: 0.0,
                    v: 0.0,
                    depth,
                    flags: 0,
                };
            }
            let h: Vector3<f64> = k * cam.xyz();
            let (u, v) = (h.x / h.z, h.y / h.z);
            let inside = (0.0..f64::from(params.width)).contains(&u)
                && (0.0..f64::from(params.height)).contains(&v);
            ProjectedF64 {
                u,
                v,
                depth,
                flags: IN_FRONT | if inside { IN_IMAGE } else { 0 },
            }
        })
        .collect()
}
