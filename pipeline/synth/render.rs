//! A small software renderer: sky, the road plane with its markings, and boxes.
//!
//! Every pixel is a ray through the pinhole camera (pixel centres at integer coordinates, as
//! nuScenes' intrinsics assume), so the picture is exactly what the devkit's projection chain
//! predicts for the same poses: the ground by ray–plane intersection, boxes by projecting their
//! faces after clipping them to a near plane in front of the camera, so a box that reaches
//! behind the camera is cut, never mirrored. A per-pixel depth buffer (1/z, which is affine in
//! the pixel coordinates over a planar face) puts nearer boxes over farther ones; the id buffer
//! that comes with it tells how many pixels of each box are visible and how many it would cover
//! on its own, which is where the annotations' visibility comes from.

use nalgebra::{Matrix3, Vector3};

use super::world::{Road, CLASSES};
use crate::geometry::box_corners;
use crate::{Error, Result};

/// Faces are cut this far in front of the camera (m).
const NEAR: f64 = 0.05;
/// Distance at which the haze reaches half strength (m).
const HAZE_HALF: f64 = 450.0;

const SKY_ZENITH: [f32; 3] = [62.0, 112.0, 196.0];
const SKY_HORIZON: [f32; 3] = [188.0, 206.0, 224.0];
const ASPHALT: [f32; 3] = [84.0, 85.0, 90.0];
const JUNCTION: [f32; 3] = [90.0, 90.0, 95.0];
const WHITE: [f32; 3] = [228.0, 228.0, 224.0];
const YELLOW: [f32; 3] = [222.0, 182.0, 48.0];
const SIDEWALK: [f32; 3] = [158.0, 156.0, 148.0];
const KERB: [f32; 3] = [190.0, 189.0, 183.0];
const TERRAIN: [f32; 3] = [98.0, 116.0, 74.0];

/// Hue (degrees) of each unified class, 360/13 apart so that every class is told apart by
/// hue alone, whatever its shading.
const CLASS_HUES: [f64; 13] = [
    0.0,   // car: red
    222.0, // truck: azure
    55.0,  // bus: yellow
    194.0, // trailer: cyan
    166.0, // construction_vehicle: teal
    138.0, // emergency_vehicle: spring green
    305.0, // pedestrian: magenta
    83.0,  // bicycle: lime
    110.0, // motorcycle: green
    28.0,  // traffic_cone: orange
    250.0, // barrier: blue
    277.0, // animal: violet
    332.0, // other: rose
];

/// The hue of class `class` (an index into [`CLASSES`]).
pub fn class_hue(class: usize) -> f64 {
    CLASS_HUES[class.min(CLASS_HUES.len() - 1)]
}

/// The fully lit colour of class `class`.
pub fn class_color(class: usize) -> [u8; 3] {
    let c = hsv(class_hue(class), 0.82, 0.92);
    [c[0] as u8, c[1] as u8, c[2] as u8]
}

/// The class index whose hue is nearest to that of `rgb` (for checks on decoded images).
pub fn nearest_class(rgb: [u8; 3]) -> usize {
    let h = hue_of(rgb);
    (0..CLASSES.len())
        .min_by(|&a, &b| {
            let da = hue_dist(h, class_hue(a));
            let db = hue_dist(h, class_hue(b));
            da.total_cmp(&db)
        })
        .unwrap_or(0)
}

/// Hue in degrees of an RGB colour.
pub fn hue_of(rgb: [u8; 3]) -> f64 {
    let [r, g, b] = rgb.map(|c| f64::from(c) / 255.0);
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    let d = max - min;
    if d <= 0.0 {
        return 0.0;
    }
    let h = if max == r {
        ((g - b) / d).rem_euclid(6.0)
    } else if max == g {
        (b - r) / d + 2.0
    } else {
        (r - g) / d + 4.0
    };
    h * 60.0
}

/// Saturation (0..1) of an RGB colour.
pub fn saturation_of(rgb: [u8; 3]) -> f64 {
    let max = f64::from(*rgb.iter().max().unwrap_or(&0));
    let min = f64::from(*rgb.iter().min().unwrap_or(&0));
    if max <= 0.0 {
        0.0
    } else {
        (max - min) / max
    }
}

fn hue_dist(a: f64, b: f64) -> f64 {
    let d = (a - b).rem_euclid(360.0);
    d.min(360.0 - d)
}

fn hsv(h: f64, s: f64, v: f64) -> [f32; 3] {
    let c = v * s;
    let hp = h.rem_euclid(360.0) / 60.0;
    let x = c * (1.0 - (hp.rem_euclid(2.0) - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = v - c;
    [
        ((r + m) * 255.0) as f32,
        ((g + m) * 255.0) as f32,
        ((b + m) * 255.0) as f32,
    ]
}

/// A pinhole camera placed in the world.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub width: u32,
    pub height: u32,
    pub fx: f64,
    pub fy: f64,
    pub cx: f64,
    pub cy: f64,
    /// Camera → global rotation (columns: the camera's x right, y down, z forward axes).
    pub rot: Matrix3<f64>,
    /// Camera centre in the global frame.
    pub pos: Vector3<f64>,
}

/// A box to draw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Solid {
    /// Reported back in [`ObjectPixels`].
    pub id: u32,
    /// Index into [`CLASSES`].
    pub class: usize,
    pub center: [f64; 3],
    pub yaw: f64,
    /// [w, l, h].
    pub size: [f64; 3],
}

/// How much of one box an image shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ObjectPixels {
    pub id: u32,
    /// Pixels where the box is the nearest thing.
    pub visible: u32,
    /// Pixels the box covers ignoring everything else (its silhouette inside the image).
    pub silhouette: u32,
}

/// The ground: roads and the crosswalks at their junctions (s ranges per road).
#[derive(Debug, Clone, PartialEq)]
pub struct Ground {
    pub roads: Vec<Road>,
    pub crosswalks: Vec<Vec<(f64, f64)>>,
}

impl Ground {
    /// Roads and crosswalks on both sides of every junction of consecutive roads.
    pub fn new(roads: &[Road], junctions: &[[f64; 2]]) -> Self {
        let mut crosswalks = vec![Vec::new(); roads.len()];
        for (ji, j) in junctions.iter().enumerate() {
            for (me, other) in [(ji, ji + 1), (ji + 1, ji)] {
                let (Some(r), Some(o)) = (roads.get(me), roads.get(other)) else {
                    continue;
                };
                let (sj, _) = r.local(*j);
                let off = o.kerb_half() + 0.8;
                crosswalks[me].push((sj - off - 3.0, sj - off));
                crosswalks[me].push((sj + off, sj + off + 3.0));
            }
        }
        Self {
            roads: roads.to_vec(),
            crosswalks,
        }
    }
}

/// A rendered image and what it shows of each box.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub width: u32,
    pub height: u32,
    /// Row-major RGB8.
    pub rgb: Vec<u8>,
    /// One entry per box that has a non-empty silhouette, in `solids` order.
    pub objects: Vec<ObjectPixels>,
}

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

#[inline(always)]
fn mix(a: [f32; 3], b: [f32; 3], t: f32) -> [f32; 3] {
    [
        a[0] + (b[0] - a[0]) * t,
        a[1] + (b[1] - a[1]) * t,
        a[2] + (b[2] - a[2]) * t,
    ]
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

/// Buffers a thread reuses from frame to frame: the picture, the depth and id buffers and one
/// row of ray scratch. Fresh 20 MB allocations per frame cost more in page faults than drawing.
#[derive(Debug, Default)]
pub struct Canvas {
    /// Row-major RGB8 of the last frame rendered.
    pub rgb: Vec<u8>,
    buf: Buffers,
    rows: [Vec<f32>; 5],
}

impl Canvas {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sizes the buffers for `view` and clears what the box pass reads.
    fn prepare(&mut self, view: &View, count: bool) {
        let (w, h) = (view.width as usize, view.height as usize);
        self.rgb.resize(w * h * 3, 0);
        let b = &mut self.buf;
        b.inv_z.clear();
        b.inv_z.resize(w * h, 0.0);
        b.count = count;
        if count {
            b.ids.clear();
            b.ids.resize(w * h, 0);
            b.own.clear();
            b.own.resize(w * h, 0);
        }
        for r in &mut self.rows {
            r.resize(w, 0.0);
        }
    }
}

/// Renders one image.
pub fn render(view: &View, ground: &Ground, solids: &[Solid]) -> Rendered {
    let mut canvas = Canvas::new();
    let objects = render_into(&mut canvas, view, ground, solids, true);
    Rendered {
        width: view.width,
        height: view.height,
        rgb: canvas.rgb,
        objects,
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

/// Renders one image into `canvas.rgb`; with `count`, also returns what it shows of each box
/// (otherwise an empty list, and less work).
pub fn render_into(
    canvas: &mut Canvas,
    view: &View,
    ground: &Ground,
    solids: &[Solid],
    count: bool,
) -> Vec<ObjectPixels> {
    canvas.prepare(view, count);
    background(canvas, view, ground);
    draw_solids(view, solids, Some(&mut canvas.rgb), &mut canvas.buf)
}

crate::cpu::avx2_clone! {
    /// The sky and the ground of every pixel of `canvas.rgb`.
    fn background(canvas: &mut Canvas, view: &View, ground: &Ground) = background_any;
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
/// [`render_into`] gives it, in a loop without branches that runs as vector instructions.
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

/// How many pixels of each box an image of `view` would show, without drawing it: the same
/// rasterisation as [`render`], depth and ids only.
pub fn coverage(view: &View, solids: &[Solid]) -> Vec<ObjectPixels> {
    coverage_into(&mut Canvas::new(), view, solids)
}

/// [`coverage`] with reused buffers.
pub fn coverage_into(canvas: &mut Canvas, view: &View, solids: &[Solid]) -> Vec<ObjectPixels> {
    canvas.prepare(view, true);
    draw_solids(view, solids, None, &mut canvas.buf)
}

/// Draws the boxes over `rgb` (when given), nearest wins; returns the pixel counts when the
/// buffers count.
fn draw_solids(
    view: &View,
    solids: &[Solid],
    mut rgb: Option<&mut [u8]>,
    buf: &mut Buffers,
) -> Vec<ObjectPixels> {
    let cam = view.pos;
    let mut silhouettes = vec![0u32; solids.len()];
    let rt = view.rot.transpose();
    for (si, solid) in solids.iter().enumerate() {
        let corners = box_corners(
            solid.center,
            solid.size,
            crate::geometry::quat_from_yaw(solid.yaw),
        );
        let to_cam = |p: &Vector3<f64>| rt * (p - cam);
        let cc: Vec<Vector3<f64>> = corners.iter().map(to_cam).collect();
        // Cheap reject: every corner behind the near plane.
        if cc.iter().all(|p| p.z <= NEAR) {
            continue;
        }
        let base = hsv(class_hue(solid.class), 0.82, 0.92);
        let dist = (Vector3::from(solid.center) - cam).norm();
        let haze = (dist / (dist + HAZE_HALF)) as f32;
        let (cy, sy) = (solid.yaw.cos(), solid.yaw.sin());
        // Faces as corner indices (devkit order) and outward normals in the global frame.
        let faces: [([usize; 4], [f64; 3]); 6] = [
            ([0, 1, 2, 3], [cy, sy, 0.0]),
            ([4, 7, 6, 5], [-cy, -sy, 0.0]),
            ([0, 3, 7, 4], [-sy, cy, 0.0]),
            ([1, 5, 6, 2], [sy, -cy, 0.0]),
            ([0, 4, 5, 1], [0.0, 0.0, 1.0]),
            ([3, 2, 6, 7], [0.0, 0.0, -1.0]),
        ];
        let tag = si as u32 + 1;
        for (idx, n) in faces {
            let ng = Vector3::new(n[0], n[1], n[2]);
            let fc = idx.iter().map(|&i| corners[i]).sum::<Vector3<f64>>() / 4.0;
            if ng.dot(&(cam - fc)) <= 0.0 {
                continue;
            }
            // Sun from the south-west and above: tops bright, sides by their orientation.
            let shade = if n[2] > 0.5 {
                1.0
            } else if n[2] < -0.5 {
                0.45
            } else {
                0.62 + 0.3 * (0.6 * n[0] + 0.8 * n[1]).max(0.0)
            } as f32;
            let col = mix(
                [base[0] * shade, base[1] * shade, base[2] * shade],
                SKY_HORIZON,
                haze,
            );
            let nc = rt * ng;
            let poly: Vec<Vector3<f64>> = idx.iter().map(|&i| cc[i]).collect();
            let face = Face {
                poly: &poly,
                normal: &nc,
                col,
                tag,
            };
            raster_face(view, &face, rgb.as_deref_mut(), buf, &mut silhouettes[si]);
        }
    }
    if !buf.count {
        return Vec::new();
    }
    let mut visible = vec![0u32; solids.len()];
    for &t in &buf.ids {
        if t > 0 {
            visible[t as usize - 1] += 1;
        }
    }
    solids
        .iter()
        .enumerate()
        .filter(|(i, _)| silhouettes[*i] > 0)
        .map(|(i, s)| ObjectPixels {
            id: s.id,
            visible: visible[i],
            silhouette: silhouettes[i],
        })
        .collect()
}

/// Per-pixel state of the box pass: 1/depth of the nearest box, its tag (index + 1), and the
/// tag of the last box that covered the pixel at all (to count each silhouette pixel once).
/// The last two are kept only when `count`.
#[derive(Debug, Default)]
struct Buffers {
    inv_z: Vec<f32>,
    ids: Vec<u32>,
    own: Vec<u32>,
    count: bool,
}

/// One face to rasterise: its corners and normal in the camera frame, colour and box tag.
struct Face<'a> {
    poly: &'a [Vector3<f64>],
    normal: &'a Vector3<f64>,
    col: [f32; 3],
    tag: u32,
}

/// Clips a face (camera frame) to z ≥ NEAR; each output vertex says whether it lies on the cut.
fn clip_near(poly: &[Vector3<f64>]) -> Vec<(Vector3<f64>, bool)> {
    let mut out = Vec::with_capacity(poly.len() + 2);
    for i in 0..poly.len() {
        let a = poly[i];
        let b = poly[(i + 1) % poly.len()];
        let (ina, inb) = (a.z >= NEAR, b.z >= NEAR);
        if ina {
            out.push((a, false));
        }
        if ina != inb {
            let t = (NEAR - a.z) / (b.z - a.z);
            out.push((a + (b - a) * t, true));
        }
    }
    out
}

/// A face's edge line `a·u + b·v + c ≥ 0` inside, normalised so the value is a distance in
/// pixels, and whether the near-plane cut made it (no outline there).
type EdgeLine = (f64, f64, f64, bool);

/// The clipped face projected to pixels, with the sign of its winding; `None` when it has no
/// area on screen (seen edge-on).
fn screen_polygon(view: &View, clipped: &[(Vector3<f64>, bool)]) -> Option<(Vec<(f64, f64)>, f64)> {
    let pts: Vec<(f64, f64)> = clipped
        .iter()
        .map(|(p, _)| (view.fx * p.x / p.z + view.cx, view.fy * p.y / p.z + view.cy))
        .collect();
    let n = pts.len();
    let area: f64 = (0..n)
        .map(|i| {
            let (a, b) = (pts[i], pts[(i + 1) % n]);
            a.0 * b.1 - b.0 * a.1
        })
        .sum();
    if area.abs() < 1e-9 {
        return None;
    }
    Some((pts, area.signum()))
}

/// The inside half-planes of the projected polygon `pts` (winding `orient`), skipping
/// zero-length edges; `clipped` says which vertices the near-plane cut made.
fn edge_lines(pts: &[(f64, f64)], orient: f64, clipped: &[(Vector3<f64>, bool)]) -> Vec<EdgeLine> {
    let n = pts.len();
    let mut edges = Vec::with_capacity(n);
    for i in 0..n {
        let (p, q) = (pts[i], pts[(i + 1) % n]);
        let (ex, ey) = (q.0 - p.0, q.1 - p.1);
        let len = (ex * ex + ey * ey).sqrt();
        if len < 1e-12 {
            continue;
        }
        let a = -ey * orient / len;
        let b = ex * orient / len;
        let c = -(a * p.0 + b * p.1);
        // An edge made by the near-plane cut is not a box edge: no outline there.
        let cut = clipped[i].1 && clipped[(i + 1) % n].1;
        edges.push((a, b, c, cut));
    }
    edges
}

/// The pixel rectangle `(umin, umax, vmin, vmax)` that can hold the polygon `pts`, clipped to
/// the image; `None` when it misses the image.
fn pixel_bounds(pts: &[(f64, f64)], view: &View) -> Option<(i64, i64, i64, i64)> {
    let (w, h) = (view.width as i64, view.height as i64);
    let umin = pts
        .iter()
        .map(|p| p.0)
        .fold(f64::INFINITY, f64::min)
        .ceil()
        .max(0.0) as i64;
    let umax = (pts
        .iter()
        .map(|p| p.0)
        .fold(f64::NEG_INFINITY, f64::max)
        .floor() as i64)
        .min(w - 1);
    let vmin = pts
        .iter()
        .map(|p| p.1)
        .fold(f64::INFINITY, f64::min)
        .ceil()
        .max(0.0) as i64;
    let vmax = (pts
        .iter()
        .map(|p| p.1)
        .fold(f64::NEG_INFINITY, f64::max)
        .floor() as i64)
        .min(h - 1);
    if umin > umax || vmin > vmax {
        return None;
    }
    Some((umin, umax, vmin, vmax))
}

/// 1/z as a linear function `za·u + zb·v + zc` of the pixel, over the plane through `q` with
/// normal `normal` (camera frame): 1/z = n·r(u, v) / (n·q), r = ((u−cx)/fx, (v−cy)/fy, 1).
/// `None` when the plane passes through the camera.
fn inv_depth_plane(view: &View, normal: &Vector3<f64>, q: &Vector3<f64>) -> Option<[f64; 3]> {
    let nq = normal.dot(q);
    if nq.abs() < 1e-12 {
        return None;
    }
    let za = normal.x / view.fx / nq;
    let zb = normal.y / view.fy / nq;
    let zc = (normal.z - normal.x * view.cx / view.fx - normal.y * view.cy / view.fy) / nq;
    Some([za, zb, zc])
}

/// The first and last pixel of row `vf` inside every edge, within `[umin, umax]`; `None` when
/// the row misses the face.
fn row_span(edges: &[EdgeLine], vf: f64, umin: i64, umax: i64) -> Option<(i64, i64)> {
    let (mut lo, mut hi) = (umin as f64, umax as f64);
    for &(a, b, c, _) in edges {
        let k = b * vf + c;
        if a.abs() < 1e-12 {
            if k < 0.0 {
                lo = f64::INFINITY;
            }
        } else if a > 0.0 {
            lo = lo.max(-k / a);
        } else {
            hi = hi.min(-k / a);
        }
    }
    if lo > hi {
        return None;
    }
    Some((lo.ceil() as i64, hi.floor() as i64))
}

/// Distance (pixels) from `(uf, vf)` to the nearest box edge of the face, for the outline.
fn outline_dist(edges: &[EdgeLine], uf: f64, vf: f64) -> f64 {
    edges
        .iter()
        .filter(|e| !e.3)
        .map(|&(a, b, c, _)| a * uf + b * vf + c)
        .fold(f64::INFINITY, f64::min)
}

/// Rasterises one face into the depth (and, when counting, id) buffers, and into `rgb` when
/// given, nearest wins; counts the face's pixels not yet in the box's silhouette.
fn raster_face(
    view: &View,
    face: &Face,
    mut rgb: Option<&mut [u8]>,
    buf: &mut Buffers,
    silhouette: &mut u32,
) {
    let Face {
        poly,
        normal,
        col,
        tag,
    } = *face;
    let clipped = clip_near(poly);
    if clipped.len() < 3 {
        return;
    }
    let Some((pts, orient)) = screen_polygon(view, &clipped) else {
        return;
    };
    let edges = edge_lines(&pts, orient, &clipped);
    let w = view.width as i64;
    let Some((umin, umax, vmin, vmax)) = pixel_bounds(&pts, view) else {
        return;
    };
    let Some([za, zb, zc]) = inv_depth_plane(view, normal, &clipped[0].0) else {
        return;
    };
    let dark = [col[0] * 0.4, col[1] * 0.4, col[2] * 0.4];
    for v in vmin..=vmax {
        let vf = v as f64;
        let Some((u0, u1)) = row_span(&edges, vf, umin, umax) else {
            continue;
        };
        let row = (v * w) as usize;
        for u in u0.max(0)..=u1.min(w - 1) {
            let i = row + u as usize;
            if buf.count && buf.own[i] != tag {
                buf.own[i] = tag;
                *silhouette += 1;
            }
            let uf = u as f64;
            let iz = (za * uf + zb * vf + zc) as f32;
            if iz <= buf.inv_z[i] {
                continue;
            }
            buf.inv_z[i] = iz;
            if buf.count {
                buf.ids[i] = tag;
            }
            let Some(rgb) = rgb.as_deref_mut() else {
                continue;
            };
            let c = if outline_dist(&edges, uf, vf) < 1.0 {
                dark
            } else {
                col
            };
            rgb[3 * i] = c[0] as u8;
            rgb[3 * i + 1] = c[1] as u8;
            rgb[3 * i + 2] = c[2] as u8;
        }
    }
}

/// Encodes RGB8 pixels as a baseline JPEG (4:2:0, see [`crate::jpeg`]).
pub fn encode_jpeg(rgb: &[u8], width: u32, height: u32, quality: u8) -> Result<Vec<u8>> {
    let (w, h) = (width as usize, height as usize);
    if w == 0 || h == 0 || w > 65_535 || h > 65_535 || rgb.len() != 3 * w * h {
        return Err(Error::Internal(format!(
            "cannot encode a {width}x{height} JPEG from {} bytes",
            rgb.len()
        )));
    }
    crate::jpeg::encode(rgb, w, h, quality)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::geometry::quat_wxyz;
    use crate::synth::world::Traffic;

    fn front_view(w: u32, h: u32) -> View {
        // CAM_FRONT-like: looking along +x from 1.5 m up.
        let q = quat_wxyz([0.5, -0.5, 0.5, -0.5]);
        View {
            width: w,
            height: h,
            fx: 0.8 * f64::from(w),
            fy: 0.8 * f64::from(w),
            cx: f64::from(w) / 2.0,
            cy: f64::from(h) / 2.0,
            rot: *q.to_rotation_matrix().matrix(),
            pos: Vector3::new(0.0, 0.0, 1.5),
        }
    }

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

    fn road() -> Road {
        Road {
            origin: [-50.0, 1.75],
            heading: 0.0,
            s_min: 0.0,
            s_max: 300.0,
            lanes_each_way: 2,
            lane_width: 3.5,
            parking_width: 2.5,
            sidewalk_width: 3.5,
            traffic: Traffic::RightHand,
        }
    }

    #[test]
    fn box_centre_pixel_has_its_class_colour_and_nearer_wins() {
        let view = front_view(320, 180);
        let ground = Ground::new(&[road()], &[]);
        let near = Solid {
            id: 7,
            class: 0,
            center: [12.0, 0.0, 0.8],
            yaw: 0.0,
            size: [1.9, 4.5, 1.6],
        };
        let far = Solid {
            id: 9,
            class: 6,
            center: [25.0, 0.0, 0.75],
            yaw: 0.0,
            size: [0.7, 0.7, 1.5],
        };
        let img = render(&view, &ground, &[far, near]);
        let px = |u: usize, v: usize| {
            let i = 3 * (v * 320 + u);
            [img.rgb[i], img.rgb[i + 1], img.rgb[i + 2]]
        };
        // The car's centre projects to the principal point's column, below the horizon.
        let (u, v) = (160, (90.0 + 256.0 * (1.5 - 0.8) / 12.0) as usize);
        assert_eq!(nearest_class(px(u, v)), 0);
        let far_stats = img.objects.iter().find(|o| o.id == 9).unwrap();
        // The pedestrian is entirely behind the car.
        assert_eq!(far_stats.visible, 0);
        assert!(far_stats.silhouette > 0);
        let near_stats = img.objects.iter().find(|o| o.id == 7).unwrap();
        assert_eq!(near_stats.visible, near_stats.silhouette);
        // Road below the horizon, sky above.
        assert!(saturation_of(px(160, 170)) < 0.2);
        assert!(px(160, 5)[2] > px(160, 5)[0]);
    }

    #[test]
    fn box_through_the_camera_plane_is_clipped_not_mirrored() {
        let view = front_view(160, 90);
        let ground = Ground::new(&[road()], &[]);
        // A long truck from 3 m behind to 9 m ahead, to the left: its rear must not appear
        // mirrored on the right side of the image.
        let truck = Solid {
            id: 1,
            class: 1,
            center: [3.0, 3.0, 1.4],
            yaw: 0.0,
            size: [2.5, 12.0, 2.8],
        };
        let img = render(&view, &ground, &[truck]);
        for v in 0..90 {
            for u in 85..160 {
                let i = 3 * (v * 160 + u);
                let c = [img.rgb[i], img.rgb[i + 1], img.rgb[i + 2]];
                assert!(
                    saturation_of(c) < 0.45 || nearest_class(c) != 1,
                    "truck pixel at ({u},{v})"
                );
            }
        }
        assert!(img.objects[0].visible > 100);
    }

    #[test]
    fn hues_are_distinct() {
        for a in 0..13 {
            assert_eq!(nearest_class(class_color(a)), a);
            for b in 0..a {
                assert!(hue_dist(class_hue(a), class_hue(b)) > 25.0);
            }
        }
    }
}
