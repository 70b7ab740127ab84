//! Set-of-Mark images of a question set (`docs/metavqa.md` §3.3), drawn with the `som` stage's
//! layout and drawing (GPU kernel or its CPU twin, identical pixels).
//!
//! The anchors are the visibility table's (the exact distance-transform anchors the GPU stage
//! measured); the boxes are the table's modal or amodal boxes (`configs/som.toml` `[draw] box`).
//! Labels are placed without overlaps by [`crate::som::layout::layout_numbered`] with the
//! question set's own numbers. A grounding image boxes only its target, in white, and labels
//! every object in its mark colour: the white outline is one more mark without a label, so
//! the drawing kernels need no change.

use super::graph::{Node, SceneGraph};
use crate::som::config::SomConfig;
use crate::som::draw::DrawMark;
use crate::som::font::mark_colour;
use crate::som::layout::{layout_numbered, MarkIn, Rect};
use crate::visibility::anchor::BoxKind;
use crate::Result;

/// White, the grounding target's box.
pub(crate) const WHITE: u32 = 0xff_ffff;

/// One label to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MarkSpec {
    pub node: usize,
    pub number: u32,
    /// Draw the object's box in the mark's colour.
    pub boxed: bool,
}

/// The drawn rectangle of a node, pixel edges inside the image.
pub(crate) fn node_box(nd: &Node, kind: BoxKind, width: u32, height: u32) -> Rect {
    let m = &nd.mark;
    let r = match (kind, m.modal) {
        (BoxKind::Modal, Some(b)) => b,
        _ => m.amodal,
    };
    let cx = |v: f64| v.clamp(0.0, f64::from(width)) as u32;
    let cy = |v: f64| v.clamp(0.0, f64::from(height)) as u32;
    [
        cx(r[0].floor()),
        cy(r[1].floor()),
        cx(r[2].ceil()),
        cy(r[3].ceil()),
    ]
}

/// The anchor pixel of a node: the table's anchor, else its box centre.
fn anchor_px(nd: &Node, b: Rect, width: u32, height: u32) -> [u32; 2] {
    let [x, y] = nd
        .mark
        .anchor
        .unwrap_or([f64::from(b[0] + b[2]) / 2.0, f64::from(b[1] + b[3]) / 2.0]);
    [
        (x.floor().max(0.0) as u32).min(width.saturating_sub(1)),
        (y.floor().max(0.0) as u32).min(height.saturating_sub(1)),
    ]
}

/// The marks of `specs` laid out on `g`'s image (and a white box around `white`, if any), in
/// drawing order, with the number of labels that overlap.
pub(crate) fn plan(
    g: &SceneGraph,
    specs: &[MarkSpec],
    white: Option<usize>,
    som: &SomConfig,
) -> Result<(Vec<DrawMark>, u64)> {
    let (w, h) = (g.width, g.height);
    let boxes: Vec<Rect> = specs
        .iter()
        .map(|s| node_box(&g.nodes[s.node], som.draw.box_kind, w, h))
        .collect();
    let ins: Vec<MarkIn> = specs
        .iter()
        .zip(&boxes)
        .map(|(s, b)| MarkIn {
            anchor: anchor_px(&g.nodes[s.node], *b, w, h),
            visible_pixels: g.nodes[s.node].mark.visible_pixels,
        })
        .collect();
    let numbers: Vec<u32> = specs.iter().map(|s| s.number).collect();
    let labels = layout_numbered(w, h, &ins, &numbers, &som.draw, &som.layout)?;
    let mut marks: Vec<DrawMark> = specs
        .iter()
        .zip(&boxes)
        .zip(&labels)
        .map(|((s, b), l)| {
            let bbox = if s.boxed { *b } else { [0; 4] };
            DrawMark::new(bbox, l.rect, s.number, mark_colour(s.number))
        })
        .collect();
    if let Some(t) = white {
        let b = node_box(&g.nodes[t], som.draw.box_kind, w, h);
        marks.push(DrawMark::new(b, [0; 4], 0, WHITE));
    }
    Ok((marks, labels.iter().filter(|l| l.overlaps).count() as u64))
}
