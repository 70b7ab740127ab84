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
//!
//! The parts: this file holds the camera, the boxes, the ground description, the reusable
//! [`Canvas`] and the entry points; `ground` shades the sky and the road plane, `raster` clips
//! and rasterises the boxes into the depth and id buffers, and `color` holds the palette, with
//! one hue per class so that a pixel's class can be read back from its colour.

mod color;
mod ground;
mod raster;

use nalgebra::{Matrix3, Vector3};

pub use color::{class_color, class_hue, hue_of, nearest_class, saturation_of};

use super::world::Road;
use crate::{Error, Result};
use ground::background;
use raster::{draw_solids, Buffers};

/// Distance at which the haze reaches half strength (m).
const HAZE_HALF: f64 = 450.0;

/// A pinhole camera placed in the world.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct View {
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
pub(crate) struct Solid {
    /// Reported back in [`ObjectPixels`].
    pub id: u32,
    /// Index into [`CLASSES`](super::world::CLASSES).
    pub class: usize,
    pub center: [f64; 3],
    pub yaw: f64,
    /// [w, l, h].
    pub size: [f64; 3],
}

/// How much of one box an image shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ObjectPixels {
    pub id: u32,
    /// Pixels where the box is the nearest thing.
    pub visible: u32,
    /// Pixels the box covers ignoring everything else (its silhouette inside the image).
    pub silhouette: u32,
}

/// The ground: roads and the crosswalks at their junctions (s ranges per road).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ground {
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
#[cfg(test)]
#[derive(Debug, Clone)]
pub(crate) struct Rendered {
    /// Row-major RGB8.
    pub rgb: Vec<u8>,
    /// One entry per box that has a non-empty silhouette, in `solids` order.
    pub objects: Vec<ObjectPixels>,
}

/// Buffers a thread reuses from frame to frame: the picture, the depth and id buffers and one
/// row of ray scratch. Fresh 20 MB allocations per frame cost more in page faults than drawing.
#[derive(Debug, Default)]
pub(crate) struct Canvas {
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
#[cfg(test)]
pub(crate) fn render(view: &View, ground: &Ground, solids: &[Solid]) -> Rendered {
    let mut canvas = Canvas::new();
    let objects = render_into(&mut canvas, view, ground, solids, true);
    Rendered {
        rgb: canvas.rgb,
        objects,
    }
}

/// Renders one image into `canvas.rgb`; with `count`, also returns what it shows of each box
/// (otherwise an empty list, and less work).
pub(crate) fn render_into(
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

/// How many pixels of each box an image of `view` would show, without drawing it: the same
/// rasterisation as [`render_into`], depth and ids only, in `canvas`'s reused buffers.
pub(crate) fn coverage_into(
    canvas: &mut Canvas,
    view: &View,
    solids: &[Solid],
) -> Vec<ObjectPixels> {
    canvas.prepare(view, true);
    draw_solids(view, solids, None, &mut canvas.buf)
}

/// Encodes RGB8 pixels as a baseline JPEG (4:2:0, see [`crate::jpeg`]).
pub(crate) fn encode_jpeg(rgb: &[u8], width: u32, height: u32, quality: u8) -> Result<Vec<u8>> {
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

    pub(super) fn road() -> Road {
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
}
