//! Label numbering and placement.
//!
//! # Numbering
//!
//! The marks of one image are numbered `1..=n` in the order the caller gives them (the `som`
//! stage passes the kept rows of the visibility table in its row order, which is the
//! annotation order of `docs/metavqa.md` §3.3's "objects order"; MetaVQA counts from 0, the
//! benchmark's questions only need distinct integers).
//!
//! # Label boxes
//!
//! A label is the mark's number in the built-in font ([`super::font`]) scaled by
//! `draw.glyph_scale`, on a black rectangle with `draw.label_padding_px` around the digits:
//! `w = 2p + s·(7k + (k − 1))`, `h = 2p + 11s` for `k` digits. Its preferred place has the
//! anchor pixel as its bottom-left pixel (`docs/metavqa.md` §3.2: the text grows right and up from
//! its anchor), shifted into the image.
//!
//! # Placement
//!
//! Labels are placed one at a time, smallest visible area first (`docs/metavqa.md` §3.2; ties by
//! mark). A position is free when the label lies inside the image, overlaps no label placed before
//! and covers no other mark's anchor pixel. The preferred position is tried first, then offsets
//! `k · layout.search_step_px` for `k = 1..=layout.search_rings` in 8 directions (up, up-right,
//! right, down-right, down, down-left, left, up-left: above the anchor first, where the label
//! hides least of its own object), each shifted into the image. If none is free, every
//! position of a `search_step_px` grid over the image is tried in raster order, nearest to the
//! anchor first. Only when no grid position is free (with labels covering well under the
//! whole image this does not happen; `tests/it/families/som/draw.rs` checks it on random crowded scenes) is the
//! label left at its preferred place with `overlaps = true`, which the stage reports. Everything is integer arithmetic, so the layout is
//! deterministic.

use super::config::{DrawConfig, LayoutConfig};
use super::font::{digits, GLYPH_GAP, GLYPH_H, GLYPH_W};
use crate::{Error, Result};

/// `[x0, y0, x1, y1)`, pixel edges.
pub(crate) type Rect = [u32; 4];

/// What the layout needs of one mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkIn {
    /// The anchor pixel.
    pub anchor: [u32; 2],
    /// Visible pixels (the placement order).
    pub visible_pixels: u32,
}

/// A placed label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label {
    /// The number drawn (`1..=n` from [`layout`]).
    pub mark: u32,
    pub rect: Rect,
    /// True only when no free position existed (see the module docs).
    pub overlaps: bool,
}

/// Width and height of the label of `mark`.
pub fn label_size(mark: u32, draw: &DrawConfig) -> [u32; 2] {
    let k = digits(mark).len() as u32;
    let s = draw.glyph_scale;
    let p = draw.label_padding_px;
    [
        2 * p + s * (GLYPH_W * k + GLYPH_GAP * (k - 1)),
        2 * p + s * GLYPH_H,
    ]
}

/// Whether two rectangles share a pixel.
pub(crate) fn overlap(a: Rect, b: Rect) -> bool {
    a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]
}

/// Whether pixel `p` lies in `r`.
pub(crate) fn contains(r: Rect, p: [u32; 2]) -> bool {
    r[0] <= p[0] && p[0] < r[2] && r[1] <= p[1] && p[1] < r[3]
}

/// The label of size `[w, h]` whose bottom-left pixel is `(x, y)`, shifted into the image.
fn at(x: i64, y: i64, [w, h]: [u32; 2], width: u32, height: u32) -> Rect {
    let x0 = x.clamp(0, i64::from(width - w)) as u32;
    let y0 = (y + 1 - i64::from(h)).clamp(0, i64::from(height - h)) as u32;
    [x0, y0, x0 + w, y0 + h]
}

const DIRECTIONS: [(i64, i64); 8] = [
    (0, -1),
    (1, -1),
    (1, 0),
    (1, 1),
    (0, 1),
    (-1, 1),
    (-1, 0),
    (-1, -1),
];

/// Numbers and places the labels of one `width × height` image (`marks[k]` gets number
/// `k + 1`); returns them in mark order. Fails when a label does not fit in the image.
pub fn layout(
    width: u32,
    height: u32,
    marks: &[MarkIn],
    draw: &DrawConfig,
    cfg: &LayoutConfig,
) -> Result<Vec<Label>> {
    let numbers: Vec<u32> = (1..=marks.len() as u32).collect();
    layout_numbered(width, height, marks, &numbers, draw, cfg)
}

/// [`layout`] with the caller's numbers (`marks[k]` gets `numbers[k]`; MetaVQA renumbers
/// labels per question set and draws random ones for grounding questions).
pub(crate) fn layout_numbered(
    width: u32,
    height: u32,
    marks: &[MarkIn],
    numbers: &[u32],
    draw: &DrawConfig,
    cfg: &LayoutConfig,
) -> Result<Vec<Label>> {
    let n = marks.len();
    if numbers.len() != n {
        return Err(Error::Internal(format!(
            "som: {} numbers for {n} marks",
            numbers.len()
        )));
    }
    let sizes: Vec<[u32; 2]> = numbers.iter().map(|&m| label_size(m, draw)).collect();
    if let Some(big) = sizes.iter().find(|s| s[0] > width || s[1] > height) {
        return Err(Error::invalid(
            "som label",
            format!(
                "a {}×{} label does not fit in a {width}×{height} image",
                big[0], big[1]
            ),
        ));
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&k| (marks[k].visible_pixels, k));
    let mut placed: Vec<Option<Label>> = vec![None; n];
    let mut rects: Vec<Rect> = Vec::with_capacity(n);
    let step = i64::from(cfg.search_step_px.max(1));
    for &k in &order {
        let size = sizes[k];
        let [ax, ay] = marks[k].anchor.map(i64::from);
        let free = |r: Rect| {
            !rects.iter().any(|&q| overlap(q, r))
                && !marks
                    .iter()
                    .enumerate()
                    .any(|(o, m)| o != k && contains(r, m.anchor))
        };
        let preferred = at(ax, ay, size, width, height);
        let mut found = free(preferred).then_some(preferred);
        'rings: for ring in 1..=i64::from(cfg.search_rings) {
            if found.is_some() {
                break;
            }
            for (dx, dy) in DIRECTIONS {
                let r = at(
                    ax + dx * ring * step,
                    ay + dy * ring * step,
                    size,
                    width,
                    height,
                );
                if free(r) {
                    found = Some(r);
                    break 'rings;
                }
            }
        }
        if found.is_none() {
            found = grid_search(width, height, size, step, preferred, &free);
        }
        let label = match found {
            Some(rect) => Label {
                mark: numbers[k],
                rect,
                overlaps: false,
            },
            None => Label {
                mark: numbers[k],
                rect: preferred,
                overlaps: true,
            },
        };
        rects.push(label.rect);
        placed[k] = Some(label);
    }
    placed
        .into_iter()
        .map(|l| l.ok_or_else(|| Error::Internal("som: a label was not placed".into())))
        .collect()
}

/// The free grid position nearest to `preferred` (squared distance of the top-left corners,
/// then raster order).
fn grid_search(
    width: u32,
    height: u32,
    [w, h]: [u32; 2],
    step: i64,
    preferred: Rect,
    free: &dyn Fn(Rect) -> bool,
) -> Option<Rect> {
    let mut best: Option<(i64, Rect)> = None;
    let xs = i64::from(width - w);
    let ys = i64::from(height - h);
    let mut y = 0;
    while y <= ys {
        let mut x = 0;
        while x <= xs {
            let r = [x as u32, y as u32, x as u32 + w, y as u32 + h];
            let d = (x - i64::from(preferred[0])).pow(2) + (y - i64::from(preferred[1])).pow(2);
            if best.is_none_or(|(bd, _)| d < bd) && free(r) {
                best = Some((d, r));
            }
            // The last column and row are always tried, so the image's edges are reachable.
            x = if x < xs && x + step > xs {
                xs
            } else {
                x + step
            };
        }
        y = if y < ys && y + step > ys {
            ys
        } else {
            y + step
        };
    }
    best.map(|(_, r)| r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StageConfig;
    use crate::som::SomConfig;

    #[test]
    fn sizes_follow_the_font() {
        let cfg = SomConfig::default_config().unwrap();
        // Scale 2, padding 2: one digit 14 + 4 wide, two digits 14 + 2 + 14 + 4.
        assert_eq!(label_size(7, &cfg.draw), [18, 26]);
        assert_eq!(label_size(12, &cfg.draw), [34, 26]);
        assert_eq!(label_size(100, &cfg.draw), [50, 26]);
    }

    #[test]
    fn the_preferred_place_grows_up_and_right_from_the_anchor() {
        let cfg = SomConfig::default_config().unwrap();
        let marks = [MarkIn {
            anchor: [100, 50],
            visible_pixels: 5000,
        }];
        let l = layout(400, 225, &marks, &cfg.draw, &cfg.layout).unwrap();
        assert_eq!(l[0].rect, [100, 25, 118, 51]);
        // Near the top-left corner it is shifted into the image.
        let marks = [MarkIn {
            anchor: [2, 3],
            visible_pixels: 5000,
        }];
        let l = layout(400, 225, &marks, &cfg.draw, &cfg.layout).unwrap();
        assert_eq!(l[0].rect, [2, 0, 20, 26]);
    }
}
