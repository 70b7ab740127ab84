//! The sensor rig of the synthetic vehicle: the six nuScenes cameras and the top lidar.
//!
//! The calibration is that of the nuScenes-mini vehicle of scene-0061 (`calibrated_sensor.json`),
//! so projections, fields of view and the look of the camera ring match real nuScenes data.
//! Translations are metres in the ego frame (x forward, y left, z up); rotations are `[w, x, y, z]`
//! and take the sensor frame (cameras: OpenCV, x right, y down, z forward) to the ego frame;
//! intrinsics are pinhole with fx = fy and no distortion, for 1600×900 images.
//!
//! | channel | translation x, y, z (m) | rotation w, x, y, z | f (px) | cx, cy (px) | HFOV |
//! |---|---|---|---|---|---|
//! | CAM_FRONT | 1.70079, 0.01595, 1.51096 | 0.49980, −0.50303, 0.49978, −0.49737 | 1266.42 | 816.27, 491.51 | 64.6° |
//! | CAM_FRONT_RIGHT | 1.55085, −0.49340, 1.49575 | 0.20603, −0.20269, 0.68245, −0.67136 | 1260.85 | 807.97, 495.33 | 64.8° |
//! | CAM_FRONT_LEFT | 1.52388, 0.49463, 1.50933 | 0.67573, −0.67363, 0.21214, −0.21123 | 1272.60 | 826.62, 479.75 | 64.3° |
//! | CAM_BACK | 0.02833, 0.00345, 1.57910 | 0.50379, −0.49740, −0.49419, 0.50455 | 809.22 | 829.22, 481.78 | 89.3° |
//! | CAM_BACK_LEFT | 1.03569, 0.48480, 1.59097 | 0.69242, −0.70316, −0.11648, 0.11203 | 1256.74 | 792.11, 492.78 | 64.9° |
//! | CAM_BACK_RIGHT | 1.01488, −0.48057, 1.56240 | 0.12281, −0.13240, −0.70043, 0.69050 | 1259.51 | 807.25, 501.20 | 64.8° |
//! | LIDAR_TOP | 0.94371, 0.0, 1.84023 | 0.70780, −0.00649, 0.01065, −0.70631 | – | – | 360° |
//!
//! Sanity of the orders of magnitude: the cameras sit 1.5–1.6 m above the ground plane of the
//! ego frame, the front ones 1.5–1.7 m ahead of the rear axle and ±0.5 m to the sides; the
//! optical axes point at yaw 0°, ±55°, ±110° and 180° (checked in the tests below); 1600 px over a
//! focal length of ~1266 px is a 65° horizontal field of view, and the back camera's 809 px a 89°
//! one (nuScenes' back camera is the wide one).
//!
//! Cameras fire one after another as the lidar sweeps past them, so within one keyframe their
//! timestamps differ by tens of milliseconds and all precede the lidar's; [`CameraSpec::offset_us`]
//! reproduces that pattern.

/// One camera of the rig.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CameraSpec {
    pub channel: &'static str,
    pub translation: [f64; 3],
    pub rotation: [f64; 4],
    /// Focal length in pixels at 1600×900 (fx = fy).
    pub f: f64,
    pub cx: f64,
    pub cy: f64,
    /// Capture time relative to the lidar keyframe (µs).
    pub offset_us: i64,
}

/// The image size the intrinsics belong to.
pub(crate) const NATIVE_WIDTH: u32 = 1600;
pub(crate) const NATIVE_HEIGHT: u32 = 900;

/// The six cameras, clockwise from the front.
pub(crate) const CAMERAS: [CameraSpec; 6] = [
    CameraSpec {
        channel: "CAM_FRONT",
        translation: [1.70079118954, 0.0159456324149, 1.51095763913],
        rotation: [
            0.4998015430569128,
            -0.5030316162024876,
            0.4997798114386805,
            -0.49737083824542755,
        ],
        f: 1266.417203046554,
        cx: 816.2670197447984,
        cy: 491.50706579294757,
        offset_us: -37_500,
    },
    CameraSpec {
        channel: "CAM_FRONT_RIGHT",
        translation: [1.5508477543, -0.493404796419, 1.49574800619],
        rotation: [
            0.2060347966337182,
            -0.2026940577919598,
            0.6824507824531167,
            -0.6713610884174485,
        ],
        f: 1260.8474446004698,
        cx: 807.968244525554,
        cy: 495.3344268742088,
        offset_us: -29_600,
    },
    CameraSpec {
        channel: "CAM_BACK_RIGHT",
        translation: [1.0148780988, -0.480568219723, 1.56239545128],
        rotation: [
            0.12280980120078765,
            -0.132400842670559,
            -0.7004305821388234,
            0.690496031265798,
        ],
        f: 1259.5137405846733,
        cx: 807.2529349300377,
        cy: 501.19579884916527,
        offset_us: -22_000,
    },
    CameraSpec {
        channel: "CAM_BACK",
        translation: [0.0283260309358, 0.00345136761476, 1.57910346144],
        rotation: [
            0.5037872666382278,
            -0.49740249788611096,
            -0.4941850223835201,
            0.5045496097725578,
        ],
        f: 809.2209905677063,
        cx: 829.2196003259838,
        cy: 481.77842384512485,
        offset_us: -12_400,
    },
    CameraSpec {
        channel: "CAM_BACK_LEFT",
        translation: [1.03569100218, 0.484795032713, 1.59097014818],
        rotation: [
            0.6924185592174665,
            -0.7031619420114925,
            -0.11648342771943819,
            0.11203317912370753,
        ],
        f: 1256.7414812095406,
        cx: 792.1125740759628,
        cy: 492.7757465151356,
        offset_us: -2_500,
    },
    CameraSpec {
        channel: "CAM_FRONT_LEFT",
        translation: [1.52387798135, 0.494631336551, 1.50932822144],
        rotation: [
            0.6757265034669446,
            -0.6736266522251881,
            0.21214015046209478,
            -0.21122827103904068,
        ],
        f: 1272.5979470598488,
        cx: 826.6154927353808,
        cy: 479.75165386361925,
        offset_us: -45_000,
    },
];

/// The top lidar (its x axis points to the vehicle's right, as in nuScenes).
pub(crate) const LIDAR_TOP_CHANNEL: &str = "LIDAR_TOP";
pub(crate) const LIDAR_TOP_TRANSLATION: [f64; 3] = [0.943713, 0.0, 1.84023];
pub(crate) const LIDAR_TOP_ROTATION: [f64; 4] = [
    0.7077955119163518,
    -0.006492242056004365,
    0.010646214713995808,
    -0.7063073142877817,
];

impl CameraSpec {
    /// The 3×3 intrinsic matrix for an image of `width`×`height`, scaling the native
    /// 1600×900 calibration so that the field of view stays the same.
    pub fn intrinsic(&self, width: u32, height: u32) -> [[f64; 3]; 3] {
        let sx = f64::from(width) / f64::from(NATIVE_WIDTH);
        let sy = f64::from(height) / f64::from(NATIVE_HEIGHT);
        [
            [self.f * sx, 0.0, self.cx * sx],
            [0.0, self.f * sy, self.cy * sy],
            [0.0, 0.0, 1.0],
        ]
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::geometry::quat_wxyz;
    use nalgebra::Vector3;

    fn axis_yaw_deg(spec: &CameraSpec) -> (f64, f64) {
        let z = quat_wxyz(spec.rotation) * Vector3::z();
        (z.y.atan2(z.x).to_degrees(), z.z)
    }

    #[test]
    fn optical_axes_point_around_the_car() {
        let expect = [0.0, -55.0, -110.0, 180.0, 110.0, 55.0];
        for (spec, want) in CAMERAS.iter().zip(expect) {
            let (yaw, up) = axis_yaw_deg(spec);
            let diff = crate::geometry::wrap_pi((yaw - want).to_radians()).to_degrees();
            assert!(diff.abs() < 6.0, "{} looks at yaw {yaw:.1}°", spec.channel);
            // Nearly level: the optical axis is within a few degrees of the horizon.
            assert!(up.abs() < 0.1, "{} tilt {up}", spec.channel);
            // Image y (down) points down in the ego frame.
            let y = quat_wxyz(spec.rotation) * Vector3::y();
            assert!(y.z < -0.9, "{} image y is not down", spec.channel);
            assert!((1.4..1.7).contains(&spec.translation[2]));
            let hfov = 2.0 * (800.0 / spec.f).atan().to_degrees();
            assert!((60.0..95.0).contains(&hfov));
        }
    }

    #[test]
    fn intrinsics_scale_with_the_image() {
        let k = CAMERAS[0].intrinsic(800, 450);
        assert!((k[0][0] - CAMERAS[0].f / 2.0).abs() < 1e-9);
        assert!((k[1][2] - CAMERAS[0].cy / 2.0).abs() < 1e-9);
        assert_eq!(k[2], [0.0, 0.0, 1.0]);
    }
}
