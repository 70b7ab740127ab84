//! The release's side of the robustness splits (`crate::robustness`): a drawn row asked again
//! under a setting, its images corrupted from their source camera images as the row group is
//! written. A Set-of-Mark image gets its marks drawn after the corruption (the marks name the
//! question's referents; they are not part of the scene the camera saw).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use super::render::Recipe;
use super::shards::RowTag;
use super::{From, ImageFinder, Options, Shown};
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

/// The corrupted images of one robustness split that more than one family shows: drawn by the
/// first family's rows, kept (up to a few row groups' worth of bytes) and taken by the others',
/// so an image is corrupted once per split. Families are written one after another, so without
/// this an image shown by two would be drawn twice.
#[derive(Default)]
pub(super) struct Shared {
    /// Clean keys ([`Shown::clean_key`]) of the images drawn rows of two families show.
    keys: HashSet<PathBuf>,
    kept: HashMap<PathBuf, Arc<Vec<u8>>>,
    bytes: usize,
    cap: usize,
    /// Images corrupted, and images taken as another family drew them, in this split.
    drawn: usize,
    reused: usize,
}

impl Shared {
    /// Starts a split: nothing kept, nothing counted.
    pub(super) fn begin_split(&mut self) {
        self.kept.clear();
        self.bytes = 0;
        self.drawn = 0;
        self.reused = 0;
    }

    /// The bytes of `im` if another family's rows drew it in this split.
    pub(super) fn take(&mut self, im: &Shown<'_>) -> Option<Arc<Vec<u8>>> {
        im.corrupted.as_ref()?;
        let got = self.kept.get(&im.key()).cloned();
        if got.is_some() {
            self.reused += 1;
        }
        got
    }

    /// Notes that `im` was drawn, and keeps it when another family shows it too.
    pub(super) fn offer(&mut self, im: &Shown<'_>, bytes: &Arc<Vec<u8>>) {
        if im.corrupted.is_none() {
            return;
        }
        self.drawn += 1;
        if self.keys.contains(&im.clean_key()) && self.bytes + bytes.len() <= self.cap {
            self.bytes += bytes.len();
            self.kept.insert(im.key(), bytes.clone());
        }
    }

    /// What the split showed and drew, for the manifest.
    pub(super) fn counts(&self, shown: usize) -> Value {
        json!({"shown": shown, "drawn": self.drawn, "reused": self.reused})
    }
}

/// Finds the images the drawn rows of two or more families show (the rows' images are looked
/// up, not read).
pub(super) fn plan_shared(
    finder: &ImageFinder<'_>,
    screened: &super::screen::Screened,
    drawn: &BTreeMap<String, HashSet<u128>>,
) -> Result<()> {
    let mut first: HashMap<PathBuf, &str> = HashMap::new();
    let mut keys = HashSet::new();
    for (family, chosen) in drawn {
        let batches = screened.batches.get(family).into_iter().flatten().copied();
        for r in crate::qa::ipc::rows_in(&finder.opts.qa, batches) {
            let r = r?;
            if &r.family != family || !chosen.contains(&super::screen::id_key(&r.qa_id)) {
                continue;
            }
            for im in finder.images(&r)? {
                let k = im.clean_key();
                match first.get(k.as_path()) {
                    None => {
                        first.insert(k, family);
                    }
                    Some(f) if *f != family => {
                        keys.insert(k);
                    }
                    Some(_) => {}
                }
            }
        }
    }
    let mut shared = finder.shared.borrow_mut();
    shared.keys = keys;
    shared.cap = finder.opts.row_group_bytes.saturating_mul(4);
    Ok(())
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
pub(super) fn manifest(opts: &Options, images: &BTreeMap<String, Value>) -> Value {
    let Some(r) = &opts.robustness else {
        return Value::Null;
    };
    let settings: Vec<Value> = r
        .settings
        .iter()
        .map(|s| {
            let split = crate::robustness::split_name(&opts.split, s);
            json!({
                "images": images.get(&split).cloned().unwrap_or(Value::Null),
                "split": split,
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
