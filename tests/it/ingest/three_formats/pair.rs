//! The pairs (nuScenes, X): X's frames at the nuScenes keyframe times and nuScenes' keyframes
//! in X's vocabulary, and the check of Bench2Drive's CARLA camera rig.

use super::*;

pub(super) fn pair(
    name: &'static str,
    nus: &[SceneData],
    other: &[SceneData],
    relative_times: bool,
    own_cameras: bool,
) -> Pair {
    let mut out = Pair {
        name,
        nus: Vec::new(),
        other: Vec::new(),
    };
    for (n, x) in nus.iter().zip(other) {
        let offset = if relative_times {
            n.frames[0].timestamp_us
        } else {
            0
        };
        let mut rn = SceneData {
            scene: n.scene.clone(),
            ..Default::default()
        };
        // Only nuScenes has map layers (see `compare_stsbench`).
        rn.scene.location = None;
        let mut rx = SceneData {
            scene: x.scene.clone(),
            ..Default::default()
        };
        let mut kfs: Vec<_> = n.frames.iter().collect();
        kfs.sort_by_key(|f| f.frame_idx);
        for (ki, kf) in kfs.into_iter().enumerate() {
            let ki = ki as u32;
            let xf = x
                .frames
                .iter()
                .find(|f| f.timestamp_us + offset == kf.timestamp_us)
                .unwrap_or_else(|| panic!("{name}: no frame at keyframe {}", kf.frame_idx));
            for (side, f) in [(&mut rn, kf), (&mut rx, xf)] {
                let mut f = f.clone();
                f.frame_idx = ki;
                side.ego_poses.push(drivegen::store::EgoPoseRow {
                    scene_id: f.scene_id.clone(),
                    timestamp_us: f.timestamp_us,
                    source_pose_id: f.source_frame_id.clone(),
                    sensor: None,
                    ego: f.ego,
                });
                side.frames.push(f);
            }
            let theirs: Vec<&ObjectRow> = n
                .objects
                .iter()
                .filter(|o| o.frame_idx == kf.frame_idx)
                .collect();
            for xo in x.objects.iter().filter(|o| o.frame_idx == xf.frame_idx) {
                let no = theirs.iter().find(|o| same_box(o, xo)).unwrap();
                let mut a = (*no).clone();
                a.class = xo.class.clone();
                a.category = xo.category.clone();
                let mut b = xo.clone();
                for o in [&mut a, &mut b] {
                    o.frame_idx = ki;
                    (o.vx, o.vy) = (None, None);
                    o.attributes.clear();
                    o.visibility_bin = None;
                    o.num_lidar_pts = 0;
                    o.num_radar_pts = 0;
                }
                rn.objects.push(a);
                rx.objects.push(b);
            }
            for c in x.cameras.iter().filter(|c| c.frame_idx == xf.frame_idx) {
                if own_cameras {
                    check_carla_rig(c);
                }
                let mut c = c.clone();
                c.frame_idx = ki;
                rx.cameras.push(c);
            }
            let n_cams: Vec<_> = if own_cameras {
                // Bench2Drive's rig shares no camera with nuScenes': project into its cameras.
                rx.cameras
                    .iter()
                    .filter(|c| c.frame_idx == ki)
                    .map(|c| {
                        let mut c = c.clone();
                        c.scene_id = n.scene.scene_id.clone();
                        c.camera_frame_id = format!("{}/{ki}/{}", n.scene.scene_id, c.camera);
                        c
                    })
                    .collect()
            } else {
                let shared: Vec<String> = rx
                    .cameras
                    .iter()
                    .map(|c| canonical_camera(&c.camera))
                    .collect();
                n.cameras
                    .iter()
                    .filter(|c| {
                        c.frame_idx == kf.frame_idx && c.is_keyframe && shared.contains(&c.camera)
                    })
                    .cloned()
                    .collect()
            };
            for mut c in n_cams {
                c.frame_idx = ki;
                // The camera at the keyframe instant, as X's global-shutter cameras are.
                c.ego = kf.ego;
                c.timestamp_us = kf.timestamp_us;
                rn.cameras.push(c);
            }
        }
        rn.update_counts();
        rx.update_counts();
        assert!(!rn.objects.is_empty() && !rn.cameras.is_empty(), "{name}");
        out.nus.push(rn);
        out.other.push(rx);
    }
    out
}

/// A Bench2Drive camera row is the CARLA rig of `docs/formats.md` §3.2 in the store's
/// right-handed ego frame: mount (x, −y, z), optical axis at yaw −yaw°, image y down, and
/// f = W / (2 tan(fov/2)) with the principal point at the image centre. (The pair projects
/// both sides through these rows, so they are checked against the rig here.)
fn check_carla_rig(c: &drivegen::store::CameraRow) {
    let cam = drivegen::synth::bench2drive::CAMERAS
        .iter()
        .find(|k| k.key == c.camera)
        .unwrap_or_else(|| panic!("no CARLA camera {}", c.camera));
    let iso = c.cam.isometry();
    let t = iso.translation.vector;
    let want_t = [cam.mount[0], -cam.mount[1], cam.mount[2]];
    assert!(
        (0..3).all(|k| (t[k] - want_t[k]).abs() < 1e-9),
        "{}: mount {t:?}",
        c.camera
    );
    let yaw = -cam.yaw_deg.to_radians();
    let axes = [
        (nalgebra::Vector3::z(), [yaw.cos(), yaw.sin(), 0.0]),
        (nalgebra::Vector3::x(), [yaw.sin(), -yaw.cos(), 0.0]),
        (nalgebra::Vector3::y(), [0.0, 0.0, -1.0]),
    ];
    for (axis, want) in axes {
        let got = iso.rotation * axis;
        assert!(
            (0..3).all(|k| (got[k] - want[k]).abs() < 1e-9),
            "{}: camera axis {axis:?} → {got:?}, want {want:?}",
            c.camera
        );
    }
    let f = f64::from(c.width) / (2.0 * (cam.fov_deg.to_radians() / 2.0).tan());
    let want_k = [f, f, f64::from(c.width) / 2.0, f64::from(c.height) / 2.0];
    assert!(
        [c.fx, c.fy, c.cx, c.cy]
            .iter()
            .zip(want_k)
            .all(|(a, b)| (a - b).abs() < 1e-9),
        "{}: intrinsics {:?}",
        c.camera,
        [c.fx, c.fy, c.cx, c.cy]
    );
}
