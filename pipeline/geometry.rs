//! Rigid transforms in the nuScenes conventions, shared by every stage.
//!
//! Quaternions are stored scalar-first `[w, x, y, z]` everywhere in drivegen, as nuScenes does.
//! nalgebra's `Quaternion::new(w, i, j, k)` takes the same order, but its storage is `[i, j, k, w]`,
//! so quaternions are only ever built through [`quat_wxyz`].

use nalgebra::{Isometry3, Quaternion, Translation3, UnitQuaternion, Vector3};

/// A unit quaternion from nuScenes' `[w, x, y, z]` order (normalised).
pub fn quat_wxyz(q: [f64; 4]) -> UnitQuaternion<f64> {
    UnitQuaternion::from_quaternion(Quaternion::new(q[0], q[1], q[2], q[3]))
}

/// `[w, x, y, z]` of a unit quaternion.
pub fn wxyz(q: &UnitQuaternion<f64>) -> [f64; 4] {
    [q.w, q.i, q.j, q.k]
}

/// The rotation about +z by `yaw` radians.
pub fn quat_from_yaw(yaw: f64) -> [f64; 4] {
    [(yaw / 2.0).cos(), 0.0, 0.0, (yaw / 2.0).sin()]
}

/// Yaw (rotation about +z, radians in (−π, π]) of a rotation, as the devkit's
/// `quaternion_yaw`: the heading of the rotated x axis projected onto the xy plane.
pub fn yaw_of(q: [f64; 4]) -> f64 {
    let v = quat_wxyz(q) * Vector3::x();
    v.y.atan2(v.x)
}

/// A pose (`p_parent = R·p_child + t`) from a translation and a `[w, x, y, z]` rotation.
pub fn pose(t: [f64; 3], q: [f64; 4]) -> Isometry3<f64> {
    Isometry3::from_parts(Translation3::new(t[0], t[1], t[2]), quat_wxyz(q))
}

/// How far a quaternion's norm is from 1.
pub(crate) fn quat_norm_error(q: [f64; 4]) -> f64 {
    (q.iter().map(|c| c * c).sum::<f64>().sqrt() - 1.0).abs()
}

/// Wraps an angle to (−π, π].
pub fn wrap_pi(a: f64) -> f64 {
    let two_pi = std::f64::consts::TAU;
    let mut r = a.rem_euclid(two_pi);
    if r > std::f64::consts::PI {
        r -= two_pi;
    }
    r
}

/// The eight corners of a box in its own frame, in the devkit's `Box.corners` order:
/// x = ±l/2 (forward), y = ±w/2 (left), z = ±h/2, signs
/// `(+,+,+), (+,−,+), (+,−,−), (+,+,−), (−,+,+), (−,−,+), (−,−,−), (−,+,−)`.
pub(crate) fn box_corners_local(w: f64, l: f64, h: f64) -> [Vector3<f64>; 8] {
    const SIGNS: [[f64; 3]; 8] = [
        [1.0, 1.0, 1.0],
        [1.0, -1.0, 1.0],
        [1.0, -1.0, -1.0],
        [1.0, 1.0, -1.0],
        [-1.0, 1.0, 1.0],
        [-1.0, -1.0, 1.0],
        [-1.0, -1.0, -1.0],
        [-1.0, 1.0, -1.0],
    ];
    SIGNS.map(|s| Vector3::new(s[0] * l / 2.0, s[1] * w / 2.0, s[2] * h / 2.0))
}

/// The corners of a box placed in its parent frame by centre and `[w, x, y, z]` rotation.
pub fn box_corners(center: [f64; 3], size_wlh: [f64; 3], q: [f64; 4]) -> [Vector3<f64>; 8] {
    let iso = pose(center, q);
    box_corners_local(size_wlh[0], size_wlh[1], size_wlh[2])
        .map(|c| iso * nalgebra::Point3::from(c))
        .map(|p| p.coords)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaw_roundtrip() {
        for k in -7..=7 {
            let yaw = k as f64 * 0.4;
            assert!((wrap_pi(yaw_of(quat_from_yaw(yaw)) - yaw)).abs() < 1e-12);
        }
    }

    #[test]
    fn corners_follow_devkit_order() {
        // A 2 m wide, 4 m long, 1.5 m high box at the origin facing +x: corner 0 is front-left-top.
        let c = box_corners([0.0; 3], [2.0, 4.0, 1.5], [1.0, 0.0, 0.0, 0.0]);
        assert_eq!([c[0].x, c[0].y, c[0].z], [2.0, 1.0, 0.75]);
        assert_eq!([c[6].x, c[6].y, c[6].z], [-2.0, -1.0, -0.75]);
        // Rotated by 90° the front face points to +y.
        let c = box_corners(
            [10.0, 0.0, 0.0],
            [2.0, 4.0, 1.5],
            quat_from_yaw(std::f64::consts::FRAC_PI_2),
        );
        assert!((c[0].x - 9.0).abs() < 1e-12 && (c[0].y - 2.0).abs() < 1e-12);
    }

    #[test]
    fn wrap_is_half_open() {
        assert!((wrap_pi(std::f64::consts::PI) - std::f64::consts::PI).abs() < 1e-12);
        assert!((wrap_pi(-std::f64::consts::PI) - std::f64::consts::PI).abs() < 1e-12);
        assert!((wrap_pi(3.0 * std::f64::consts::PI) - std::f64::consts::PI).abs() < 1e-9);
    }
}
