//! The kept rows of a visibility table (`schemas/visibility/visibility.json`, read by
//! [`crate::visibility::table`]) as MetaVQA marks.

use std::collections::HashMap;
use std::path::Path;

use super::graph::KeptMark;
use crate::visibility::anchor::AnchorRules;
use crate::{Error, Result};

/// A kept row: the image it belongs to and its mark geometry.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptRow {
    pub frame_idx: u32,
    pub camera: String,
    pub camera_frame_id: String,
    pub mark: KeptMark,
}

/// Kept rows by scene, in table order.
pub(crate) type KeptByScene = HashMap<String, Vec<KeptRow>>;

/// Reads every kept row of the visibility table at `path`; with `anchors`, the table's anchors
/// must have been placed under those rules.
pub fn read_kept(path: &Path, anchors: Option<&AnchorRules>) -> Result<KeptByScene> {
    let mut out = KeptByScene::new();
    for r in crate::visibility::table::read_kept(path, anchors)? {
        let amodal = r
            .amodal
            .filter(|b| b.iter().all(|v| v.is_finite()))
            .ok_or_else(|| {
                Error::input(path, r.record(), "kept row without a finite amodal box")
            })?;
        let finite = |b: &[f64]| b.iter().all(|v| v.is_finite());
        out.entry(r.scene_id).or_default().push(KeptRow {
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
