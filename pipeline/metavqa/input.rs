//! The kept rows of a visibility table (`schemas/visibility/visibility.json`, read by
//! [`crate::visibility::table`]) as MetaVQA marks.

use super::graph::KeptMark;
use crate::visibility::table::KeptScenes;
use crate::{Error, Result};

/// A kept row: the image it belongs to and its mark geometry.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptRow {
    pub frame_idx: u32,
    pub camera: String,
    pub camera_frame_id: String,
    pub mark: KeptMark,
}

/// The kept rows of `scene_id`, in table order.
pub fn scene_kept(table: &mut KeptScenes, scene_id: &str) -> Result<Vec<KeptRow>> {
    let mut out = Vec::new();
    for r in table.scene(scene_id)? {
        let amodal = r
            .amodal
            .filter(|b| b.iter().all(|v| v.is_finite()))
            .ok_or_else(|| {
                Error::input(
                    table.path(),
                    r.record(),
                    "kept row without a finite amodal box",
                )
            })?;
        let finite = |b: &[f64]| b.iter().all(|v| v.is_finite());
        out.push(KeptRow {
            frame_idx: r.frame_idx,
            camera: r.camera,
            camera_frame_id: r.camera_frame_id,
            mark: KeptMark {
                track_id: r.track_id,
                annotation_id: r.annotation_id,
                amodal,
                modal: r.modal.filter(|b| finite(b)),
                visible_pixels: r.visible_pixels,
                anchor: r.anchor.filter(|a| finite(a)),
            },
        });
    }
    Ok(out)
}
