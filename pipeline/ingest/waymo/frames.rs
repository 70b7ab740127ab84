//! Waymo's frames and how they map onto the store's conventions.
//!
//! * Transforms are 16 doubles, a row-major 4×4 (translation at indices 3, 7, 11).
//! * The vehicle frame is x forward, y left, z up, like the store's ego frame, so vehicle poses
//!   and boxes carry over unchanged (no re-centring: the segment's own world frame is kept).
//! * Waymo's camera frame is x along the optical axis, y left, z up; the store's (nuScenes,
//!   OpenCV) camera frame is x right, y down, z forward. The store's camera pose (sensor → ego)
//!   is therefore `extrinsic · M`, with `M` taking OpenCV axes to Waymo camera axes.
//! * Waymo's normalised image coordinates `(−y/x, −z/x)` are then exactly OpenCV's `(x/z, y/z)`,
//!   so the intrinsics and distortion apply unchanged. Waymo's pixel 0 is the left edge of the
//!   first pixel, which is also the store's continuous convention (pixel centres at i + 0.5).

use nalgebra::{Isometry3, Matrix3, Rotation3, Translation3, UnitQuaternion};

use crate::geometry::wxyz;
use crate::store::Pose;

/// OpenCV camera axes (x right, y down, z forward) expressed in Waymo's camera frame
/// (x forward, y left, z up): the columns are the images of the OpenCV axes.
pub(crate) fn opencv_to_waymo_camera() -> Matrix3<f64> {
    Matrix3::new(0.0, 0.0, 1.0, -1.0, 0.0, 0.0, 0.0, -1.0, 0.0)
}

/// A row-major 4×4 as an isometry, refusing matrices that are not a rigid transform within
/// `tol` (rotation block orthonormal with determinant +1, last row 0 0 0 1).
pub(crate) fn isometry_from_row_major(m: &[f64; 16], tol: f64) -> Result<Isometry3<f64>, String> {
    let r = Matrix3::new(m[0], m[1], m[2], m[4], m[5], m[6], m[8], m[9], m[10]);
    let err = (r.transpose() * r - Matrix3::identity()).abs().max();
    if err > tol {
        return Err(format!(
            "rotation block is not orthonormal (max |RᵀR − I| = {err:.3e})"
        ));
    }
    if r.determinant() <= 0.0 {
        return Err("rotation block is a reflection (determinant ≤ 0)".into());
    }
    let last = [m[12], m[13], m[14], m[15] - 1.0];
    if last.iter().any(|v| v.abs() > tol) {
        return Err(format!(
            "last row is {:?}, expected [0, 0, 0, 1]",
            [m[12], m[13], m[14], m[15]]
        ));
    }
    let q = UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(r));
    Ok(Isometry3::from_parts(
        Translation3::new(m[3], m[7], m[11]),
        q,
    ))
}

/// A store pose of an isometry.
pub(crate) fn pose_of(iso: &Isometry3<f64>) -> Pose {
    let t = iso.translation.vector;
    Pose {
        t: [t.x, t.y, t.z],
        q: wxyz(&iso.rotation),
    }
}

/// The store's camera pose (OpenCV camera → vehicle) of a Waymo extrinsic (camera → vehicle).
pub(crate) fn store_camera_pose(extrinsic: &Isometry3<f64>) -> Isometry3<f64> {
    let m = UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(
        opencv_to_waymo_camera(),
    ));
    extrinsic * Isometry3::from_parts(Translation3::identity(), m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Point3, Vector3};

    #[test]
    fn a_point_ahead_of_a_waymo_camera_is_ahead_in_opencv_axes() {
        // A camera at (1.5, 0, 2) looking along the vehicle's +x, Waymo axes = vehicle axes.
        let e = Isometry3::translation(1.5, 0.0, 2.0);
        let cam = store_camera_pose(&e);
        // A point 10 m ahead, 1 m to the left and 0.5 m up of the camera.
        let p_vehicle = Point3::new(11.5, 1.0, 2.5);
        let p_cv = cam.inverse() * p_vehicle;
        // OpenCV: x right (left is negative), y down (up is negative), z forward.
        assert!(
            (p_cv - Point3::new(-1.0, -0.5, 10.0)).norm() < 1e-12,
            "{p_cv}"
        );
        // Waymo's own normalised coordinates (−y/x, −z/x) equal OpenCV's (x/z, y/z).
        let p_w = e.inverse() * p_vehicle;
        assert!((-p_w.y / p_w.x - p_cv.x / p_cv.z).abs() < 1e-15);
        assert!((-p_w.z / p_w.x - p_cv.y / p_cv.z).abs() < 1e-15);
    }

    #[test]
    fn row_major_round_trip_and_refusals() {
        let iso = Isometry3::new(Vector3::new(1.0, -2.0, 3.0), Vector3::new(0.1, -0.2, 0.7));
        let m = crate::formats::waymo::row_major(&iso);
        assert_eq!(m[3], 1.0);
        assert_eq!(m[7], -2.0);
        assert_eq!(m[11], 3.0);
        let back = isometry_from_row_major(&m, 1e-6).unwrap();
        assert!((back.to_homogeneous() - iso.to_homogeneous()).abs().max() < 1e-12);
        let mut scaled = m;
        scaled[0] *= 1.1;
        assert!(isometry_from_row_major(&scaled, 1e-3)
            .unwrap_err()
            .contains("orthonormal"));
        let mut mirrored = m;
        for k in [0, 4, 8] {
            mirrored[k] = -mirrored[k];
        }
        assert!(isometry_from_row_major(&mirrored, 1e-3)
            .unwrap_err()
            .contains("reflection"));
        let mut last = m;
        last[15] = 2.0;
        assert!(isometry_from_row_major(&last, 1e-3)
            .unwrap_err()
            .contains("last row"));
    }
}
