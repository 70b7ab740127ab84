//! The release's side of the robustness splits (`crate::robustness`): a drawn row asked again
//! under a setting, its images corrupted from their source camera images as the row group is
//! written. A Set-of-Mark image gets its marks drawn after the corruption (the marks name the
//! question's referents; they are not part of the scene the camera saw).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use super::render::Recipe;
use super::shards::RowTag;
use super::{From, ImageFinder, ReleaseOptions, Shown};
use crate::corrupt::CorruptConfig;
use crate::qa::QaRecord;
use crate::robustness::{FrameOf, RobustnessOptions, Setting};
use crate::store::atomic::write_atomic;
use crate::{Error, Result};

/// A shown image under a setting.
pub(super) struct Corrupted {
    setting: Setting,
    frame: FrameOf,
    config: Arc<CorruptConfig>,
    seed: u64,
}

/// The cache key of a corrupted image: its setting and its clean image's key.
pub(super) fn key(c: &Corrupted, clean: &Path) -> PathBuf {
    PathBuf::from(format!("{}\u{1}{}", c.setting.name, clean.display()))
}

/// Row `r` (as the main split publishes it) asked again under `s`, with its images.
pub(super) fn reask<'a>(
    finder: &ImageFinder<'a>,
    r: QaRecord,
    shown: Vec<Shown<'a>>,
    s: &Setting,
) -> Result<(QaRecord, Vec<Shown<'a>>, RowTag)> {
    let ro =
        finder.opts.robustness.as_ref().ok_or_else(|| {
            Error::Internal("a robustness split without robustness options".into())
        })?;
    let mut shown = shown;
    for (k, im) in shown.iter_mut().enumerate() {
        if let From::Render(_, _, Recipe::Corrupt(..), _) = &im.from {
            return Err(Error::input(
                finder.opts.qa.first().cloned().unwrap_or_default(),
                &r.qa_id,
                format!(
                    "image {} is already corrupted (a {} question): robustness splits re-ask \
                     questions about clean images ({})",
                    im.path,
                    r.family,
                    crate::robustness::FAMILIES.join(", ")
                ),
            ));
        }
        let frame = frame_of(finder, &r, k, im)?;
        im.path = crate::robustness::image_path(s, &im.path);
        im.corrupted = Some(Box::new(Corrupted {
            setting: s.clone(),
            frame,
            config: ro.config.clone(),
            seed: ro.seed,
        }));
    }
    let mut again = crate::robustness::reasked(&r, s);
    again.image_paths = shown.iter().map(|im| im.path.clone()).collect();
    let tag = RowTag {
        setting: s.name.clone(),
        base_qa_id: r.qa_id,
        corruption_seed: Some(ro.seed),
    };
    Ok((again, shown, tag))
}

/// Where image `k` of `r` sits in its frame: the store's camera row when it has one.
fn frame_of(finder: &ImageFinder<'_>, r: &QaRecord, k: usize, im: &Shown<'_>) -> Result<FrameOf> {
    let id = match &im.from {
        From::Camera(_, c) | From::Render(_, c, ..) => c.camera_frame_id.clone(),
        From::File(_) => r.camera_frame_ids.get(k).cloned().unwrap_or_default(),
    };
    let camera = r.cameras.get(k).cloned().unwrap_or_default();
    let mut cameras = finder.cameras.borrow_mut();
    if let Some((_, c)) = cameras.get(&r.scene_id, &id)? {
        if c.is_keyframe {
            let all = cameras.keyframe_cameras(c.frame_idx);
            if all.contains(&c.camera) {
                return Ok(FrameOf {
                    frame_id: format!("{}/{}", r.scene_id, c.frame_idx),
                    cameras: all,
                    camera: c.camera,
                    image_id: c.camera_frame_id,
                });
            }
        }
        // A sweep is a moment of its own, taken by the same rig as its keyframe: the frame
        // decisions (crashed or lost cameras) are drawn over the rig's cameras, keyed by the
        // image, so a sweep's camera is lost or crashed as often as a keyframe's.
        let mut rig = cameras.keyframe_cameras(c.frame_idx);
        if !rig.contains(&c.camera) {
            rig = vec![c.camera.clone()];
        }
        return Ok(FrameOf {
            frame_id: format!("{}/{}", r.scene_id, c.camera_frame_id),
            cameras: rig,
            camera: c.camera,
            image_id: c.camera_frame_id,
        });
    }
    // An image no store knows (a folder of files): a frame of its own.
    let camera = if camera.is_empty() {
        "CAM_FRONT".to_string()
    } else {
        camera
    };
    let image_id = if id.is_empty() { im.path.clone() } else { id };
    Ok(FrameOf {
        frame_id: image_id.clone(),
        cameras: vec![camera.clone()],
        camera,
        image_id,
    })
}

impl Shown<'_> {
    /// The published bytes of a corrupted image: the source decoded, corrupted, marked when
    /// the clean image is a Set-of-Mark drawing, and encoded as its clean image is.
    pub(super) fn publish_corrupted(
        &self,
        c: &Corrupted,
        keep: Option<&Path>,
        gpu: Option<&crate::gpu::Gpu>,
    ) -> Result<Vec<u8>> {
        let base = match &self.from {
            From::Camera(r, cam) | From::Render(r, cam, ..) => r.rgb_shared(cam)?,
            From::File(f) => Arc::new(crate::corrupt::run::load_rgb(f)?),
        };
        let img =
            crate::robustness::corrupt_view(&c.config, c.seed, &c.setting, &c.frame, &base, gpu)?;
        let bytes = match &self.from {
            From::Render(_, _, Recipe::Marked(m, draw), _) => {
                crate::som::recipe::render(m, &img, draw, gpu)?
            }
            _ => crate::corrupt::run::encode_like(
                &img,
                Path::new(&self.path),
                c.config.output.jpeg_quality,
            )?,
        };
        if let Some(k) = keep {
            write_atomic(&k.join(&self.path), &bytes)?;
        }
        Ok(bytes)
    }
}

/// What of the robustness options shapes the files (for the options hash).
pub(super) fn shaping(r: Option<&RobustnessOptions>) -> Value {
    match r {
        None => Value::Null,
        Some(r) => json!({
            "families": r.families,
            "settings": r.settings,
            "rows": r.rows,
            "seed": r.seed,
            "corruptions": serde_json::to_value(&*r.config).unwrap_or_default(),
        }),
    }
}

/// The manifest's `robustness` entry: what each robustness split is.
pub(super) fn manifest(opts: &ReleaseOptions) -> Value {
    let Some(r) = &opts.robustness else {
        return Value::Null;
    };
    let settings: Vec<Value> = r
        .settings
        .iter()
        .map(|s| {
            json!({
                "split": crate::robustness::split_name(&opts.split, s),
                "setting": s.name,
                "corruption": s.corruption.name(),
                "display_name": s.corruption.display_name(),
                "severity": s.severity,
                "seed": r.seed,
                "blackout": crate::robustness::is_blackout(s.corruption),
            })
        })
        .collect();
    json!({
        "families": r.families,
        "rows_per_family": r.rows,
        "seed": r.seed,
        "clean_split": opts.split,
        "text_only_split": opts.text_only_controls.then(|| super::control_split(&opts.split)),
        "settings": settings,
    })
}
