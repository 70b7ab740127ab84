//! What the Set-of-Mark stage takes of a visibility table's kept rows
//! ([`crate::visibility::table`]): each object's box, visible pixels and anchor, grouped by
//! scene and image in table order, checked for what drawing needs.

use crate::visibility::anchor::AnchorRule;
use crate::visibility::table::{KeptRow, KeptScenes};
use crate::{Error, Result};

/// One kept object of an image.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Kept {
    pub track_id: String,
    pub annotation_id: String,
    /// `[x0, y0, x1, y1]`, pixels, not clipped.
    pub amodal: [f64; 4],
    /// Pixel edges; `None` without visible pixels.
    pub modal: Option<[u32; 4]>,
    pub visible_pixels: u32,
    /// The anchor pixel and the rule that placed it; `None` without visible pixels.
    pub anchor: Option<([u32; 2], AnchorRule)>,
}

/// A camera image's kept objects.
pub(super) struct Image {
    pub camera_frame_id: String,
    pub rows: Vec<Kept>,
}

/// The kept objects of `scene_id`, images in table order (frame, camera, image id), rows in
/// table order. A value drawing cannot use (a non-finite box, a box or anchor off the pixel
/// grid, an unknown rule) is refused with its row.
pub(super) fn scene(table: &mut KeptScenes, scene_id: &str) -> Result<Vec<Image>> {
    let mut images: Vec<Image> = Vec::new();
    for r in table.scene(scene_id)? {
        let kept = convert(&r).map_err(|why| Error::input(table.path(), r.record(), why))?;
        match images.last_mut() {
            Some(img) if img.camera_frame_id == r.camera_frame_id => img.rows.push(kept),
            _ => images.push(Image {
                camera_frame_id: r.camera_frame_id,
                rows: vec![kept],
            }),
        }
    }
    Ok(images)
}

/// Whether `v` is a whole pixel coordinate.
fn pixel(v: f64) -> Option<u32> {
    (v >= 0.0 && v <= f64::from(u32::MAX) && v.fract() == 0.0).then_some(v as u32)
}

fn convert(r: &KeptRow) -> std::result::Result<Kept, &'static str> {
    let amodal = r
        .amodal
        .filter(|b| b.iter().all(|v| v.is_finite()))
        .ok_or("kept row without a finite amodal box")?;
    let modal = match r.modal {
        Some([x0, y0, x1, y1]) => Some(
            [pixel(x0), pixel(y0), pixel(x1), pixel(y1)]
                .into_iter()
                .collect::<Option<Vec<u32>>>()
                .map(|v| [v[0], v[1], v[2], v[3]])
                .ok_or("modal box off the pixel grid")?,
        ),
        None => None,
    };
    let anchor = match r.anchor {
        // Anchors are pixel centres, `i + 0.5`.
        Some([x, y]) => {
            let rule = r
                .anchor_rule
                .as_deref()
                .and_then(AnchorRule::parse)
                .ok_or("anchor without a known anchor_rule")?;
            let at = pixel(x - 0.5)
                .zip(pixel(y - 0.5))
                .ok_or("anchor off the pixel centres")?;
            Some(([at.0, at.1], rule))
        }
        None => None,
    };
    Ok(Kept {
        track_id: r.track_id.clone(),
        annotation_id: r.annotation_id.clone(),
        amodal,
        modal,
        visible_pixels: r.visible_pixels,
        anchor,
    })
}
