//! CARLA (UE4) is left-handed: x forward, y right, z up, angles in degrees, rotations
//! `[pitch, roll, yaw]`. The store is right-handed (x forward, y left, z up). A point converts by
//! negating y (`F = diag(1, −1, 1)`), a transform `M` by `F·M·F` (which negates yaw and roll and
//! keeps pitch), and a box's half `extent` doubles into full sizes.

use nalgebra::{Isometry3, Matrix3, Matrix4, Rotation3, Translation3, UnitQuaternion};

/// CARLA's transform matrix of a location and a `[pitch, roll, yaw]` rotation in degrees.
pub(crate) fn carla_matrix(loc: [f64; 3], rot_deg: [f64; 3]) -> Matrix4<f64> {
    let [p, r, y] = rot_deg.map(f64::to_radians);
    let (cp, sp, cr, sr, cy, sy) = (p.cos(), p.sin(), r.cos(), r.sin(), y.cos(), y.sin());
    // Rows of UE4's FRotationMatrix, with the location in the last column.
    let rot = Matrix3::new(
        cp * cy,
        cy * sp * sr - sy * cr,
        -cy * sp * cr - sy * sr,
        sy * cp,
        sy * sp * sr + cy * cr,
        -sy * sp * cr + cy * sr,
        sp,
        -cp * sr,
        cp * cr,
    );
    let mut m = Matrix4::identity();
    m.fixed_view_mut::<3, 3>(0, 0).copy_from(&rot);
    m[(0, 3)] = loc[0];
    m[(1, 3)] = loc[1];
    m[(2, 3)] = loc[2];
    m
}

/// A left-handed point in the right-handed frame.
pub(crate) fn point_rh(p: [f64; 3]) -> [f64; 3] {
    [p[0], -p[1], p[2]]
}

/// A left-handed rigid transform in the right-handed frame (`F·M·F`), refusing matrices that are
/// not rigid within `tol`.
pub(crate) fn isometry_rh(m: &Matrix4<f64>, tol: f64) -> Result<Isometry3<f64>, String> {
    let f = Matrix4::from_diagonal(&nalgebra::Vector4::new(1.0, -1.0, 1.0, 1.0));
    let m = f * m * f;
    let r: Matrix3<f64> = m.fixed_view::<3, 3>(0, 0).into_owned();
    let err = (r.transpose() * r - Matrix3::identity()).abs().max();
    if !err.is_finite() || err > tol {
        return Err(format!(
            "rotation is not orthonormal (max |RᵀR − I| = {err:.3e})"
        ));
    }
    if r.determinant() <= 0.0 {
        return Err("rotation is a reflection (determinant ≤ 0)".into());
    }
    let last = [m[(3, 0)], m[(3, 1)], m[(3, 2)], m[(3, 3)] - 1.0];
    if last.iter().any(|v| v.abs() > tol) {
        return Err("last row is not [0, 0, 0, 1]".into());
    }
    let q = UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(r));
    Ok(Isometry3::from_parts(
        Translation3::new(m[(0, 3)], m[(1, 3)], m[(2, 3)]),
        q,
    ))
}

/// OpenCV camera axes in a right-handed CARLA camera actor's axes (x forward, y left, z up).
pub(crate) fn opencv_in_actor() -> UnitQuaternion<f64> {
    UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(Matrix3::new(
        0.0, 0.0, 1.0, -1.0, 0.0, 0.0, 0.0, -1.0, 0.0,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Point3, Vector4};

    #[test]
    fn yaw_and_roll_flip_pitch_stays() {
        // CARLA yaw +30° (clockwise seen from above, towards +y right) is −30° right-handed.
        let iso = isometry_rh(&carla_matrix([1.0, 2.0, 0.5], [0.0, 0.0, 30.0]), 1e-9).unwrap();
        let (roll, pitch, yaw) = iso.rotation.euler_angles();
        assert!((yaw + 30f64.to_radians()).abs() < 1e-12, "{yaw}");
        assert!(roll.abs() < 1e-12 && pitch.abs() < 1e-12);
        assert_eq!(iso.translation.vector.y, -2.0);
        // A point 1 m forward of a CARLA actor lands where the flipped actor puts it.
        let m = carla_matrix([5.0, -3.0, 0.0], [10.0, 20.0, -70.0]);
        let lh = m * Vector4::new(1.0, 0.5, 0.2, 1.0);
        let rh = isometry_rh(&m, 1e-9).unwrap() * Point3::new(1.0, -0.5, 0.2);
        let want = point_rh([lh.x, lh.y, lh.z]);
        assert!((rh - Point3::from(want)).norm() < 1e-12, "{rh} vs {want:?}");
    }
}
