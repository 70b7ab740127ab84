//! The LIDAR_TOP point clouds: returns on the faces of the boxes the lidar sees, drawn by
//! visible area, and rings of ground.

use std::path::Path;

use nalgebra::{Isometry3, Point3, Vector3};

use super::super::rig;
use super::super::tokens::Rng;
use super::images::ego_iso;
use super::plan::scene_time;
use super::rows::SceneRows;
use super::LIDAR;
use crate::geometry::pose;
use crate::store::atomic::write_atomic;
use crate::Result;

/// The lidar returns no points from farther than this (m).
pub(super) const LIDAR_RANGE: f64 = 55.0;
/// Points per m² of exposed surface at 1 m; a car side at 10 m gets ~160.
pub(super) const LIDAR_DENSITY: f64 = 2000.0;

/// A face of a box seen from a point: centre, the two half-axes spanning it, and its area
/// foreshortened by the viewing angle (m²).
pub(super) type FacingFace = (Vector3<f64>, Vector3<f64>, Vector3<f64>, f64);

/// A box's faces that face `from` (global), as (centre, two half-axes) in the global frame,
/// with the visible area of each (m²·cos).
pub(super) fn facing_faces(
    center: [f64; 3],
    yaw: f64,
    size: [f64; 3],
    from: Vector3<f64>,
) -> Vec<FacingFace> {
    let (c, s) = (yaw.cos(), yaw.sin());
    let fwd = Vector3::new(c, s, 0.0);
    let left = Vector3::new(-s, c, 0.0);
    let up = Vector3::z();
    let (hw, hl, hh) = (0.5 * size[0], 0.5 * size[1], 0.5 * size[2]);
    let ctr = Vector3::from(center);
    let mut out = Vec::new();
    for (n, half_n, a, ha, b, hb) in [
        (fwd, hl, left, hw, up, hh),
        (-fwd, hl, left, hw, up, hh),
        (left, hw, fwd, hl, up, hh),
        (-left, hw, fwd, hl, up, hh),
        (up, hh, fwd, hl, left, hw),
    ] {
        let fc = ctr + n * half_n;
        let to = from - fc;
        let cos = n.dot(&to) / to.norm().max(1e-9);
        if cos > 0.05 {
            out.push((fc, a * ha, b * hb, 4.0 * ha * hb * cos));
        }
    }
    out
}

/// `n` lidar returns on a box's facing `faces` (global; `exposed`: their total visible area),
/// each face drawn by its visible area, pushed onto `cloud` in the lidar frame (`inv`:
/// global → lidar) as x, y, z, intensity, ring.
pub(super) fn object_returns(
    rng: &mut Rng,
    n: usize,
    faces: &[FacingFace],
    exposed: f64,
    center: [f64; 3],
    inv: &Isometry3<f64>,
    cloud: &mut Vec<[f32; 5]>,
) {
    let total: f64 = exposed.max(1e-9);
    for _ in 0..n {
        let mut pick = rng.unit() * total;
        let mut face = &faces[0];
        for f in faces {
            face = f;
            if pick < f.3 {
                break;
            }
            pick -= f.3;
        }
        // Slightly inside the box so that `points_in_box` counts it.
        let p = face.0 * 1.0 + face.1 * rng.range(-0.96, 0.96) + face.2 * rng.range(-0.96, 0.96);
        let inward = (Vector3::from(center) - face.0) * 0.02;
        let pl = inv * Point3::from(p + inward);
        let elev = (pl.z / (pl.x * pl.x + pl.y * pl.y).sqrt().max(0.1))
            .atan()
            .to_degrees();
        let ring = ((elev + 30.0) / 40.0 * 31.0).clamp(0.0, 31.0).round();
        cloud.push([
            pl.x as f32,
            pl.y as f32,
            pl.z as f32,
            rng.range(5.0, 90.0).round() as f32,
            ring as f32,
        ]);
    }
}

impl SceneRows<'_> {
    /// Writes the point clouds: the object returns (`clouds`, per sample) plus a few rings of
    /// ground just below z = 0; returns the number of files.
    pub(super) fn write_point_clouds(
        &self,
        out: &Path,
        mut clouds: Vec<Vec<[f32; 5]>>,
    ) -> Result<usize> {
        let (world, plan) = (self.world, self.plan);
        let lidar_cs = pose(rig::LIDAR_TOP_TRANSLATION, rig::LIDAR_TOP_ROTATION);
        let mut files = 0;
        for r in &plan.readings[LIDAR] {
            let tt = scene_time(plan, r.ts);
            let lidar_to_global = ego_iso(world, tt) * lidar_cs;
            let inv = lidar_to_global.inverse();
            // Object returns only on keyframe sweeps (where the boxes are); sweeps get ground.
            let mut pts = if r.key {
                std::mem::take(&mut clouds[r.sample])
            } else {
                Vec::new()
            };
            for ring in 0..4 {
                let radius = 4.0 + 3.0 * f64::from(ring);
                for a in 0..90 {
                    let ang = f64::from(a) * std::f64::consts::TAU / 90.0;
                    let pg = lidar_to_global.translation.vector
                        + Vector3::new(radius * ang.cos(), radius * ang.sin(), 0.0);
                    let pl = inv * Point3::new(pg.x, pg.y, -0.02);
                    pts.push([pl.x as f32, pl.y as f32, pl.z as f32, 12.0, ring as f32]);
                }
            }
            let bytes: Vec<u8> = pts
                .iter()
                .flat_map(|p| p.iter().flat_map(|v| v.to_le_bytes()))
                .collect();
            write_atomic(&out.join(&r.filename), &bytes)?;
            files += 1;
        }
        Ok(files)
    }
}
