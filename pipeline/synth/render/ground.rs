//! The background: the sky, and the road plane with its markings, one ray per pixel.

use nalgebra::Vector3;

use super::color::{
    mix, ASPHALT, JUNCTION, KERB, SIDEWALK, SKY_HORIZON, SKY_ZENITH, TERRAIN, WHITE, YELLOW,
};
use super::{Canvas, Ground, View, HAZE_HALF};

/// Per-road constants of the ground shader, relative to the camera to keep numbers small.
struct RoadPaint {
    ox: f32,
    oy: f32,
    ux: f32,
    uy: f32,
    s_min: f32,
    s_max: f32,
    lanes: u32,
    lane_w: f32,
    lanes_half: f32,
    kerb_half: f32,
    half_width: f32,
    crosswalks: Vec<(f32, f32)>,
    /// The road's rectangle as [x_min, y_min, x_max, y_max], padded by a metre, far more than
    /// f32 rounding moves [`ground_color`]'s test: a point outside it is on no part of the
    /// road.
    bounds: [f32; 4],
}

impl RoadPaint {
    fn bounds(&self) -> [f32; 4] {
        let (nx, ny) = (-self.uy, self.ux);
        let mut b = [
            f32::INFINITY,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
        ];
        for s in [self.s_min, self.s_max] {
            for d in [-self.half_width, self.half_width] {
                let (x, y) = (
                    self.ox + s * self.ux + d * nx,
                    self.oy + s * self.uy + d * ny,
                );
                b = [b[0].min(x), b[1].min(y), b[2].max(x), b[3].max(y)];
            }
        }
        [b[0] - 1.0, b[1] - 1.0, b[2] + 1.0, b[3] + 1.0]
    }

    /// Whether the box [x_min, y_min, x_max, y_max] meets the road's bounds.
    fn meets(&self, b: [f32; 4]) -> bool {
        b[0] <= self.bounds[2]
            && b[2] >= self.bounds[0]
            && b[1] <= self.bounds[3]
            && b[3] >= self.bounds[1]
    }
}

/// `x` modulo `period`, in [0, period). Written with a truncating conversion because the
/// float `floor`/`rem` of baseline x86-64 are library calls.
#[inline]
fn periodic(x: f32, period: f32) -> f32 {
    let q = x / period;
    let mut f = q - (q as i32) as f32;
    if f < 0.0 {
        f += 1.0;
    }
    f * period
}

/// The colour of the ground at (x, y) relative to the camera.
#[inline(always)]
fn ground_color(roads: &[&RoadPaint], x: f32, y: f32) -> [f32; 3] {
    let mut on_carriageway = 0u32;
    let mut paint = ASPHALT;
    let mut side = None;
    for &r in roads {
        let dx = x - r.ox;
        let dy = y - r.oy;
        let s = dx * r.ux + dy * r.uy;
        if s < r.s_min || s > r.s_max {
            continue;
        }
        let d = dy * r.ux - dx * r.uy;
        let ad = d.abs();
        if ad > r.half_width {
            continue;
        }
        if ad > r.kerb_half {
            side = Some(if ad - r.kerb_half < 0.2 {
                KERB
            } else {
                SIDEWALK
            });
            continue;
        }
        on_carriageway += 1;
        if on_carriageway > 1 {
            continue;
        }
        if r.crosswalks.iter().any(|&(a, b)| s >= a && s <= b) {
            if ad < r.lanes_half && periodic(d, 1.2) < 0.6 {
                paint = WHITE;
            }
            continue;
        }
        if (0.06..0.18).contains(&ad) {
            paint = YELLOW;
        } else if (ad - r.lanes_half).abs() < 0.1 {
            paint = WHITE;
        } else if r.lanes > 1 && periodic(s, 9.0) < 3.0 {
            // Lane lines are dashed: 3 m painted in every 9 m along the road.
            if (1..r.lanes).any(|k| (ad - k as f32 * r.lane_w).abs() < 0.075) {
                paint = WHITE;
            }
        }
    }
    match (on_carriageway, side) {
        (0, Some(c)) => c,
        (0, None) => TERRAIN,
        (1, _) => paint,
        _ => JUNCTION,
    }
}

/// The ground's roads and crosswalks relative to the camera at `cam`, for [`ground_color`].
fn road_paints(ground: &Ground, cam: Vector3<f64>) -> Vec<RoadPaint> {
    ground
        .roads
        .iter()
        .zip(
            ground
                .crosswalks
                .iter()
                .chain(std::iter::repeat(&Vec::new())),
        )
        .map(|(r, cw)| {
            let (ux, uy) = (r.heading.cos(), r.heading.sin());
            let mut paint = RoadPaint {
                ox: (r.origin[0] - cam.x) as f32,
                oy: (r.origin[1] - cam.y) as f32,
                ux: ux as f32,
                uy: uy as f32,
                s_min: r.s_min as f32,
                s_max: r.s_max as f32,
                lanes: r.lanes_each_way,
                lane_w: r.lane_width as f32,
                lanes_half: r.lanes_half() as f32,
                kerb_half: r.kerb_half() as f32,
                half_width: r.half_width() as f32,
                crosswalks: cw.iter().map(|&(a, b)| (a as f32, b as f32)).collect(),
                bounds: [0.0; 4],
            };
            paint.bounds = paint.bounds();
            paint
        })
        .collect()
}

crate::cpu::avx2_clone! {
    /// The sky and the ground of every pixel of `canvas.rgb`.
    pub(super) fn background(canvas: &mut Canvas, view: &View, ground: &Ground) = background_any;
}

#[inline(always)]
fn background_any(canvas: &mut Canvas, view: &View, ground: &Ground) {
    let w = view.width as usize;
    let cam = view.pos;
    let paints = road_paints(ground, cam);
    let mut near: Vec<&RoadPaint> = Vec::with_capacity(paints.len());

    // Background: a ray per pixel; the ground where it points down, else the sky. Each row is
    // done in two passes: the ray arithmetic (divisions, square roots) over whole rows of f32
    // without branches, which the compiler vectorises, then the per-pixel shading. f32 is
    // plenty: coordinates are relative to the camera and markings are centimetres wide at
    // most a few hundred metres away.
    let m = &view.rot;
    let (ax, ay, az) = (
        m[(0, 0)] / view.fx,
        m[(1, 0)] / view.fx,
        m[(2, 0)] / view.fx,
    );
    let (bx, by, bz) = (
        m[(0, 1)] / view.fy,
        m[(1, 1)] / view.fy,
        m[(2, 1)] / view.fy,
    );
    let (cx, cy, cz) = (m[(0, 2)], m[(1, 2)], m[(2, 2)]);
    let height = cam.z as f32;
    let [gx, gy, haze, elev, us] = &mut canvas.rows;
    for (u, x) in us.iter_mut().enumerate() {
        *x = u as f32;
    }
    for (v, row) in canvas.rgb.chunks_exact_mut(w * 3).enumerate() {
        let yv = v as f64 - view.cy;
        let ox = (cx + bx * yv - ax * view.cx) as f32;
        let oy = (cy + by * yv - ay * view.cx) as f32;
        let oz = (cz + bz * yv - az * view.cx) as f32;
        let (fax, fay, faz) = (ax as f32, ay as f32, az as f32);
        for i in 0..w {
            let uf = us[i];
            let (rx, ry, rz) = (ox + fax * uf, oy + fay * uf, oz + faz * uf);
            let norm = (rx * rx + ry * ry + rz * rz).sqrt();
            let t = -height / rz;
            gx[i] = t * rx;
            gy[i] = t * ry;
            let dist = (t * norm).abs();
            haze[i] = dist / (dist + HAZE_HALF as f32);
            // Below the horizon: negative; the sky shader only uses it where positive.
            elev[i] = rz / norm;
        }
        // A row of pixels sees the ground along a line: only the roads whose bounds meet the
        // box of the row's ground points can colour it, and they keep their order.
        let b = ground_bounds(&gx[..w], &gy[..w], &elev[..w]);
        if b[0] == f32::INFINITY || height <= 0.0 {
            sky_row(row, elev);
            continue;
        }
        near.clear();
        near.extend(paints.iter().filter(|r| r.meets(b)));
        for (i, px) in row.chunks_exact_mut(3).enumerate() {
            let col = if elev[i] < -1e-6 && height > 0.0 {
                mix(ground_color(&near, gx[i], gy[i]), SKY_HORIZON, haze[i])
            } else {
                mix(SKY_HORIZON, SKY_ZENITH, elev[i].clamp(0.0, 1.0).sqrt())
            };
            px[0] = col[0] as u8;
            px[1] = col[1] as u8;
            px[2] = col[2] as u8;
        }
    }
}

/// The box `[x_min, y_min, x_max, y_max]` of a row's ground points (those looking down), or
/// infinite bounds when it has none. Eight independent lanes, so that the minima and maxima
/// run as vector instructions instead of one dependent chain per pixel; min and max do not
/// depend on the order they are taken in.
#[inline(always)]
fn ground_bounds(gx: &[f32], gy: &[f32], elev: &[f32]) -> [f32; 4] {
    const L: usize = 8;
    let mut lo_x = [f32::INFINITY; L];
    let mut lo_y = [f32::INFINITY; L];
    let mut hi_x = [f32::NEG_INFINITY; L];
    let mut hi_y = [f32::NEG_INFINITY; L];
    let mut lane = |k: usize, x: f32, y: f32, e: f32| {
        let down = e < -1e-6;
        lo_x[k] = if down { lo_x[k].min(x) } else { lo_x[k] };
        lo_y[k] = if down { lo_y[k].min(y) } else { lo_y[k] };
        hi_x[k] = if down { hi_x[k].max(x) } else { hi_x[k] };
        hi_y[k] = if down { hi_y[k].max(y) } else { hi_y[k] };
    };
    let n = gx.len().min(gy.len()).min(elev.len());
    let whole = n / L * L;
    for c in (0..whole).step_by(L) {
        for k in 0..L {
            lane(k, gx[c + k], gy[c + k], elev[c + k]);
        }
    }
    for i in whole..n {
        lane(i - whole, gx[i], gy[i], elev[i]);
    }
    let fold = |v: [f32; L], f: fn(f32, f32) -> f32| v.into_iter().reduce(f).unwrap_or(v[0]);
    [
        fold(lo_x, f32::min),
        fold(lo_y, f32::min),
        fold(hi_x, f32::max),
        fold(hi_y, f32::max),
    ]
}

/// A row with no ground in it: the sky's colour at every pixel, as the shading loop of
/// [`render_into`](super::render_into) gives it, in a loop without branches that runs as
/// vector instructions.
#[inline(always)]
fn sky_row(row: &mut [u8], elev: &[f32]) {
    for (px, &e) in row.chunks_exact_mut(3).zip(elev) {
        let col = mix(SKY_HORIZON, SKY_ZENITH, e.clamp(0.0, 1.0).sqrt());
        for (p, c) in px.iter_mut().zip(col) {
            // The colours and the blend keep c in [62, 224]: the bounds only let the
            // conversion skip its checks, and it truncates like `as u8`. Not `clamp`, which
            // keeps NaN.
            #[allow(clippy::manual_clamp)]
            let c = c.max(0.0).min(255.0);
            // SAFETY: c is finite and in [0, 255] (`max` turns NaN into 0).
            *p = unsafe { c.to_int_unchecked::<i32>() } as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::road;
    use super::*;

    #[test]
    fn only_roads_whose_bounds_hold_a_point_colour_it() {
        let mut rng = crate::qa::record::SplitMix64::new(0x2545_f491_4f6c_dd1d);
        let mut next = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        for _ in 0..20 {
            let mut ground = Ground {
                roads: Vec::new(),
                crosswalks: Vec::new(),
            };
            for _ in 0..6 {
                let mut r = road();
                r.origin = [next() * 200.0 - 100.0, next() * 200.0 - 100.0];
                r.heading = next() * std::f64::consts::TAU;
                r.s_min = -next() * 100.0;
                r.s_max = next() * 150.0;
                ground.roads.push(r);
                ground.crosswalks.push(vec![(0.0, 4.0)]);
            }
            let cam = Vector3::new(next() * 20.0, next() * 20.0, 1.5);
            let paints = road_paints(&ground, cam);
            let all: Vec<&RoadPaint> = paints.iter().collect();
            for k in 0..6000 {
                // Half anywhere, half at or just beyond a road's edges and ends.
                let (x, y) = if k % 2 == 0 {
                    (
                        (next() * 300.0 - 150.0) as f32,
                        (next() * 300.0 - 150.0) as f32,
                    )
                } else {
                    let r = &paints[k % paints.len()];
                    let s = r.s_min + (next() as f32) * (r.s_max - r.s_min + 4.0) - 2.0;
                    let d = (next() as f32 * 2.0 - 1.0) * (r.half_width + 2.0);
                    (r.ox + s * r.ux - d * r.uy, r.oy + s * r.uy + d * r.ux)
                };
                let near: Vec<&RoadPaint> =
                    paints.iter().filter(|r| r.meets([x, y, x, y])).collect();
                assert_eq!(
                    ground_color(&near, x, y),
                    ground_color(&all, x, y),
                    "({x}, {y})"
                );
            }
        }
    }
}
