//! The frames a corrupt run reads: every image of a folder as a frame of its own, or the
//! keyframes of a store with their views in camera order.

use std::path::{Path, PathBuf};

use super::qa::FrameRef;
use super::run::Input;
use crate::images::ImageReader;
use crate::store::{CameraRow, Store};
use crate::{Error, Result};

/// One input view.
#[derive(Debug, Clone)]
pub(super) struct ViewIn {
    pub(super) image_id: String,
    pub(super) camera: String,
    /// The file the image is in (for a Waymo store, the segment's `camera_image` file).
    pub(super) path: PathBuf,
    /// The store row the image belongs to (None: a plain file).
    pub(super) cam: Option<CameraRow>,
    /// Relative path kept under the output folders; its extension is the output format.
    pub(super) rel: PathBuf,
}

#[derive(Debug, Clone)]
pub(super) struct FrameIn {
    pub(super) frame: FrameRef,
    pub(super) views: Vec<ViewIn>,
}

fn is_image(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "png" | "jpg" | "jpeg"))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for e in rd {
        let p = e.map_err(|e| Error::io(dir, e))?.path();
        if p.is_dir() {
            walk(&p, out)?;
        } else if is_image(&p) {
            out.push(p);
        }
    }
    Ok(())
}

pub(super) fn frames_of(
    input: &Input,
    frames_per_scene: Option<usize>,
) -> Result<(Vec<FrameIn>, Option<ImageReader>)> {
    match input {
        Input::Images(dir) => {
            let mut files = Vec::new();
            walk(dir, &mut files)?;
            files.sort();
            if files.is_empty() {
                return Err(Error::not_found(dir, ".png/.jpg/.jpeg images found"));
            }
            let frames = files
                .into_iter()
                .map(|p| {
                    let rel = p.strip_prefix(dir).unwrap_or(&p).to_path_buf();
                    let id = rel.to_string_lossy().replace('\\', "/");
                    let camera = p
                        .parent()
                        .and_then(|d| d.file_name())
                        .map(|n| n.to_string_lossy().into_owned())
                        .filter(|n| n.starts_with("CAM_"))
                        .unwrap_or_else(|| "CAM_FRONT".into());
                    FrameIn {
                        frame: FrameRef {
                            source: "images".into(),
                            scene_id: String::new(),
                            frame_idx: None,
                            frame_id: id.clone(),
                        },
                        views: vec![ViewIn {
                            image_id: id,
                            camera,
                            path: p,
                            cam: None,
                            rel,
                        }],
                    }
                })
                .collect();
            Ok((frames, None))
        }
        Input::Store(dir) => {
            let store = Store::open(dir)?;
            let images = ImageReader::new(&store, None);
            let source = store.meta().source.clone();
            let mut frames = Vec::new();
            for scene in store.scenes()? {
                let scene = scene?;
                let mut by_frame: std::collections::BTreeMap<u32, Vec<ViewIn>> = Default::default();
                for c in scene.cameras.iter().filter(|c| c.is_keyframe) {
                    by_frame.entry(c.frame_idx).or_default().push(ViewIn {
                        image_id: c.camera_frame_id.clone(),
                        camera: c.camera.clone(),
                        path: images.source_path(c),
                        cam: Some(c.clone()),
                        // Waymo images are rows of one file: each gets a name of its own.
                        rel: PathBuf::from(ImageReader::file_name(c)),
                    });
                }
                let keep = frames_per_scene.unwrap_or(usize::MAX);
                for (idx, mut views) in by_frame.into_iter().take(keep) {
                    views.sort_by_key(|v| (super::camera_rank(&v.camera), v.camera.clone()));
                    frames.push(FrameIn {
                        frame: FrameRef {
                            source: source.clone(),
                            scene_id: scene.scene.scene_id.clone(),
                            frame_idx: Some(idx),
                            frame_id: format!("{}/{idx}", scene.scene.scene_id),
                        },
                        views,
                    });
                }
            }
            Ok((frames, Some(images)))
        }
    }
}
