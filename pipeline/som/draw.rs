//! Drawing the marks into an image, on the GPU (`kernels/som_draw.wgsl`) or on the CPU
//! ([`draw_cpu`], its twin; identical pixels).
//!
//! Pixels are RGBA8 packed into a `u32` with red in the low byte ([`pack`], [`unpack`]). Every
//! box outline is drawn first, `draw.box_thickness_px` wide on the inside of its pixel-edge
//! rectangle, in mark order (a later mark's outline covers an earlier one's); then every label:
//! its rectangle black, the number's digits in the mark's colour, each font pixel a
//! `glyph_scale × glyph_scale` block, the first digit at `label_padding_px` from the
//! rectangle's top-left corner, one font pixel (scaled) between digits. Drawn pixels are
//! opaque.

use bytemuck::{Pod, Zeroable};

use super::config::DrawConfig;
use super::font::{digits, glyph_bit, DIGITS, GLYPH_GAP, GLYPH_H, GLYPH_W};
use super::layout::Rect;
use crate::gpu::Gpu;
use crate::{Error, Result};

/// The side of the kernel's tiles (its `TILE`).
const TILE: u32 = 16;

/// Opaque black.
pub const BLACK: u32 = 0xff00_0000;

/// `[r, g, b, a]` → packed.
pub fn pack([r, g, b, a]: [u8; 4]) -> u32 {
    u32::from_le_bytes([r, g, b, a])
}

/// Packed → `[r, g, b, a]`.
pub fn unpack(p: u32) -> [u8; 4] {
    p.to_le_bytes()
}

/// An opaque packed pixel of colour `0xRRGGBB`.
pub(crate) fn opaque(rgb: u32) -> u32 {
    pack([(rgb >> 16) as u8, (rgb >> 8) as u8, rgb as u8, 255])
}

/// The uniform block of `som_draw` (keep in step with its `Params`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pod, Zeroable)]
pub(crate) struct DrawParams {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) num_marks: u32,
    pub(crate) thickness: u32,
    pub(crate) glyph_scale: u32,
    pub(crate) padding: u32,
    pub(crate) tiles_x: u32,
    pub(crate) _pad: u32,
}

/// One mark to draw (the kernel's `Mark`, field for field).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pod, Zeroable)]
pub struct DrawMark {
    /// The box, pixel edges (empty: no outline).
    pub bbox: Rect,
    /// The label rectangle (from [`super::layout`]).
    pub label: Rect,
    /// Packed opaque colour ([`opaque`]).
    pub colour: u32,
    /// The number drawn.
    pub number: u32,
    /// Its decimal digits (set by [`DrawMark::new`]).
    pub num_digits: u32,
    pub _pad: u32,
}

impl DrawMark {
    /// A mark drawing `number` in colour `0xRRGGBB`.
    pub fn new(bbox: Rect, label: Rect, number: u32, rgb: u32) -> Self {
        Self {
            bbox,
            label,
            colour: opaque(rgb),
            number,
            num_digits: digits(number).len() as u32,
            _pad: 0,
        }
    }
}

fn params(width: u32, height: u32, marks: &[DrawMark], draw: &DrawConfig) -> DrawParams {
    DrawParams {
        width,
        height,
        num_marks: marks.len() as u32,
        thickness: draw.box_thickness_px,
        glyph_scale: draw.glyph_scale,
        padding: draw.label_padding_px,
        tiles_x: width.div_ceil(TILE),
        _pad: 0,
    }
}

fn check(image: &[u32], width: u32, height: u32, marks: &[DrawMark]) -> Result<()> {
    if image.len() as u64 != u64::from(width) * u64::from(height) {
        return Err(Error::Internal(format!(
            "som: an image of {} pixels for {width}×{height}",
            image.len()
        )));
    }
    if let Some(m) = marks.iter().find(|m| {
        m.num_digits != digits(m.number).len() as u32
            || m.label[2] > width
            || m.label[3] > height
            || m.bbox[2] > width
            || m.bbox[3] > height
    }) {
        return Err(Error::Internal(format!(
            "som: mark {} does not fit in the {width}×{height} image (box {:?}, label {:?})",
            m.number, m.bbox, m.label
        )));
    }
    Ok(())
}

/// The colour of label pixel `(i, j)` of `m` (inside its rectangle).
fn label_pixel(p: &DrawParams, m: &DrawMark, i: u32, j: u32) -> u32 {
    let s = p.glyph_scale;
    let (ox, oy) = (m.label[0] + p.padding, m.label[1] + p.padding);
    if i < ox || j < oy {
        return BLACK;
    }
    let (gx, gy) = (i - ox, j - oy);
    let advance = (GLYPH_W + GLYPH_GAP) * s;
    let t = gx / advance;
    if t >= m.num_digits || gy >= GLYPH_H * s {
        return BLACK;
    }
    let cx = (gx % advance) / s;
    if cx >= GLYPH_W {
        return BLACK;
    }
    let d = (m.number / 10u32.pow(m.num_digits - 1 - t)) % 10;
    if glyph_bit(d, cx, gy / s) {
        m.colour
    } else {
        BLACK
    }
}

/// Draws `marks` into `image` (row-major packed RGBA8) on the CPU.
pub fn draw_cpu(
    image: &mut [u32],
    width: u32,
    height: u32,
    marks: &[DrawMark],
    draw: &DrawConfig,
) -> Result<()> {
    check(image, width, height, marks)?;
    let p = params(width, height, marks, draw);
    let t = p.thickness;
    let w = width as usize;
    for m in marks {
        let [x0, y0, x1, y1] = m.bbox;
        for j in y0..y1 {
            for i in x0..x1 {
                if i < x0 + t || i + t >= x1 || j < y0 + t || j + t >= y1 {
                    image[j as usize * w + i as usize] = m.colour;
                }
            }
        }
    }
    for m in marks {
        let [x0, y0, x1, y1] = m.label;
        for j in y0..y1 {
            for i in x0..x1 {
                image[j as usize * w + i as usize] = label_pixel(&p, m, i, j);
            }
        }
    }
    Ok(())
}

/// The kernel's per-tile lists (CSR: `offsets[t]..offsets[t + 1]` index `entries`): outline
/// `n` for every tile one of mark `n`'s four outline strips touches, label `N + n` for every
/// tile its rectangle touches, ascending per tile. `entries` ends with one unused word so that
/// it is never empty (wgpu refuses empty bindings).
fn tiles(p: &DrawParams, marks: &[DrawMark]) -> (Vec<u32>, Vec<u32>) {
    let tiles_y = p.height.div_ceil(TILE);
    let count = (p.tiles_x * tiles_y) as usize;
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); count];
    let n = marks.len() as u32;
    let mut add = |r: Rect, v: u32| {
        if r[0] >= r[2] || r[1] >= r[3] {
            return;
        }
        for ty in r[1] / TILE..=(r[3] - 1) / TILE {
            for tx in r[0] / TILE..=(r[2] - 1) / TILE {
                let l = &mut lists[(ty * p.tiles_x + tx) as usize];
                if l.last() != Some(&v) {
                    l.push(v);
                }
            }
        }
    };
    let t = p.thickness;
    for (k, m) in marks.iter().enumerate() {
        let [x0, y0, x1, y1] = m.bbox;
        if x0 >= x1 || y0 >= y1 {
            continue;
        }
        let (xt, yt) = ((x0 + t).min(x1), (y0 + t).min(y1));
        let (xb, yb) = (x1.saturating_sub(t).max(x0), y1.saturating_sub(t).max(y0));
        for strip in [
            [x0, y0, x1, yt],
            [x0, yb, x1, y1],
            [x0, y0, xt, y1],
            [xb, y0, x1, y1],
        ] {
            add(strip, k as u32);
        }
    }
    for (k, m) in marks.iter().enumerate() {
        add(m.label, n + k as u32);
    }
    let mut offsets = Vec::with_capacity(count + 1);
    let mut entries = Vec::new();
    offsets.push(0);
    for l in &lists {
        // Already ascending: marks are added in order, outlines before labels.
        entries.extend_from_slice(l);
        offsets.push(entries.len() as u32);
    }
    entries.push(0);
    (offsets, entries)
}

/// [`draw_cpu`] on the GPU: identical pixels.
pub fn draw_gpu(
    gpu: &Gpu,
    image: &mut [u32],
    width: u32,
    height: u32,
    marks: &[DrawMark],
    draw: &DrawConfig,
) -> Result<()> {
    check(image, width, height, marks)?;
    if marks.is_empty() || image.is_empty() {
        return Ok(());
    }
    let p = params(width, height, marks, draw);
    let (offsets, entries) = tiles(&p, marks);
    let font: Vec<u32> = DIGITS.iter().flatten().copied().collect();
    let uniform = gpu.uniform_buffer("som_draw.params", &p)?;
    let marks_buf = gpu.storage_buffer("som_draw.marks", marks)?;
    let font_buf = gpu.storage_buffer("som_draw.font", &font)?;
    let offsets_buf = gpu.storage_buffer("som_draw.tile_offsets", &offsets)?;
    let entries_buf = gpu.storage_buffer("som_draw.tile_entries", &entries)?;
    let img = gpu.storage_buffer("som_draw.image", image)?;
    gpu.dispatch(
        crate::gpu::KernelId::SomDraw,
        &[
            &uniform,
            &marks_buf,
            &font_buf,
            &offsets_buf,
            &entries_buf,
            &img,
        ],
        image.len(),
    )?;
    let out: Vec<u32> = gpu.read_back(&img)?;
    if out.len() != image.len() {
        return Err(Error::Gpu {
            kernel: "som_draw".into(),
            detail: format!("read back {} pixels of {}", out.len(), image.len()),
        });
    }
    image.copy_from_slice(&out);
    Ok(())
}
