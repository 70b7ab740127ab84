//! Where a release row's images come from and how each is published: read, drawn from a
//! recipe, corrupted for a robustness split, or black for the text-only control.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::cameras::SceneCameras;
use super::{render, robust, Options};
use crate::images::ImageReader;
use crate::qa::QaRecord;
use crate::store::atomic::write_atomic;
use crate::store::CameraRow;
use crate::{Error, Result};

/// Where a row's images are: its own `image_paths` (under `image_dirs`), else the stores'
/// images by `camera_frame_id` (files, or rows of a Waymo segment's camera_image table).
pub(super) struct ImageFinder<'a> {
    pub(super) opts: &'a Options,
    pub(super) cameras: std::cell::RefCell<SceneCameras>,
    pub(super) recipes: std::cell::RefCell<render::Recipes>,
    pub(super) readers: &'a [ImageReader],
    pub(super) has_store: bool,
    /// Corrupted images more than one family shows, kept across a robustness split.
    pub(super) shared: std::cell::RefCell<robust::Shared>,
}

/// One image a row shows: the path recorded in the shard and where its bytes are.
pub(super) struct Shown<'a> {
    pub(super) path: String,
    /// The source dataset's file it is or was drawn on (see
    /// [`super::read::ShownImage::source_file`]).
    pub(super) source_file: String,
    /// The source's key of the frame it belongs to (the row's `source_frame_ids`).
    pub(super) source_frame: String,
    pub(super) from: From<'a>,
    /// The size the store's camera row gives the image ((0, 0) when no store says).
    pub(super) size: (u32, u32),
    /// The view under a robustness setting, when its split re-asks the row.
    pub(super) corrupted: Option<Box<robust::Corrupted>>,
}

pub(super) enum From<'a> {
    File(PathBuf),
    Camera(&'a ImageReader, Box<CameraRow>),
    /// Drawn by the release on a camera image; the path is where a kept copy would go.
    Render(&'a ImageReader, Box<CameraRow>, render::Recipe, PathBuf),
}

impl Shown<'_> {
    /// Identifies the bytes read (for the screening's verdicts and for errors): a drawn image
    /// is screened by its source.
    pub(super) fn source(&self) -> PathBuf {
        match &self.from {
            From::File(f) => f.clone(),
            From::Camera(r, c) | From::Render(r, c, ..) => {
                r.source_path(c).join(&c.camera_frame_id)
            }
        }
    }

    /// Identifies the published bytes (for the per-group cache).
    pub(super) fn key(&self) -> PathBuf {
        match &self.corrupted {
            Some(c) => robust::key(c, &self.clean_key()),
            None => self.clean_key(),
        }
    }

    /// Identifies the bytes the image would have uncorrupted.
    pub(super) fn clean_key(&self) -> PathBuf {
        match &self.from {
            From::Render(.., at) => at.clone(),
            _ => self.source(),
        }
    }

    /// The file the bytes are in (a Waymo segment holds many images).
    pub(super) fn file(&self) -> PathBuf {
        match &self.from {
            From::File(f) => f.clone(),
            From::Camera(r, c) | From::Render(r, c, ..) => r.source_path(c),
        }
    }

    /// The bytes read: the file, or the camera image (a drawn image's source).
    pub(super) fn read(&self) -> Result<Vec<u8>> {
        match &self.from {
            From::File(f) => crate::store::input::read(f, crate::store::input::IMAGE),
            From::Camera(r, c) | From::Render(r, c, ..) => r.bytes(c),
        }
    }

    /// The bytes published: as read, drawn, or (`black`) a black image of the same size and
    /// format. A drawn image is kept under `keep`, if given.
    pub(super) fn publish(
        &self,
        black: bool,
        keep: Option<&Path>,
        gpu: Option<&crate::gpu::Gpu>,
    ) -> Result<Vec<u8>> {
        if let Some(c) = &self.corrupted {
            return self.publish_corrupted(c, keep, gpu);
        }
        match &self.from {
            From::Render(r, c, recipe, _) => {
                if black {
                    return render::black_for(&self.path, c.width, c.height, &r.source_path(c));
                }
                let base = r.rgb_shared(c)?;
                let bytes = recipe.render(&base, gpu)?;
                if let Some(k) = keep {
                    write_atomic(&k.join(&self.path), &bytes)?;
                }
                Ok(bytes)
            }
            _ => {
                let raw = self.read()?;
                if black {
                    black_like(&raw, &self.source())
                } else {
                    Ok(raw)
                }
            }
        }
    }
}

/// What the store says of the camera image a drawn or copied image comes from.
#[derive(Debug, Clone, Default)]
pub(super) struct Source {
    pub(super) size: (u32, u32),
    pub(super) file: String,
    pub(super) frame: String,
}

impl<'a> ImageFinder<'a> {
    /// Image `p` of row `r`: the first image folder holding it as a file or as a recipe.
    pub(super) fn find(&self, r: &QaRecord, p: &str, source: &Source) -> Result<Option<Shown<'a>>> {
        for (k, d) in self.opts.image_dirs.iter().enumerate() {
            let f = d.join(p);
            if f.is_file() {
                return Ok(Some(Shown {
                    path: p.to_string(),
                    source_file: source.file.clone(),
                    source_frame: source.frame.clone(),
                    from: From::File(f),
                    size: source.size,
                    corrupted: None,
                }));
            }
            let Some(recipe) = self.recipes.borrow_mut().get(&r.scene_id, k, p)? else {
                continue;
            };
            let cam = self
                .cameras
                .borrow_mut()
                .get(&r.scene_id, recipe.source_id())?;
            let Some((s, cam)) = cam else {
                return Err(Error::input(
                    &f,
                    &r.qa_id,
                    format!(
                        "image {p} is drawn on camera image {}, which is not in the stores' \
                         cameras.arrow (the release needs the store the stage read)",
                        recipe.source_id()
                    ),
                ));
            };
            let source_frame = self.cameras.borrow().frame_key(cam.frame_idx);
            return Ok(Some(Shown {
                path: p.to_string(),
                source_file: cam.image_path.clone(),
                source_frame,
                size: (cam.width, cam.height),
                from: From::Render(&self.readers[s], Box::new(cam), recipe, f),
                corrupted: None,
            }));
        }
        Ok(None)
    }

    /// The images `r` shows, in order.
    pub(super) fn images(&self, r: &QaRecord) -> Result<Vec<Shown<'a>>> {
        let missing = |detail: String| Error::Input {
            file: self.opts.qa.first().cloned().unwrap_or_default(),
            record: r.qa_id.clone(),
            detail,
        };
        if !r.image_paths.is_empty() {
            // Corrupted and marked images keep their source's size.
            let mut sources = Vec::with_capacity(r.camera_frame_ids.len());
            for id in &r.camera_frame_ids {
                let mut cameras = self.cameras.borrow_mut();
                let cam = cameras.get(&r.scene_id, id)?;
                sources.push(cam.map_or_else(Source::default, |(_, c)| Source {
                    size: (c.width, c.height),
                    frame: cameras.frame_key(c.frame_idx),
                    file: c.image_path,
                }));
            }
            return r
                .image_paths
                .iter()
                .enumerate()
                .map(|(k, p)| {
                    // A QA table edited by hand must not point the release outside its folders.
                    if let Some(why) = crate::store::paths::unsafe_relative(p) {
                        return Err(missing(format!("image_paths entry: {why}")));
                    }
                    let source = sources.get(k).cloned().unwrap_or_default();
                    self.find(r, p, &source)?.ok_or_else(|| {
                        missing(format!(
                            "image {p} is in none of the image folders ({})",
                            self.opts
                                .image_dirs
                                .iter()
                                .map(|d| d.display().to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })
                })
                .collect();
        }
        let mut v = Vec::with_capacity(r.camera_frame_ids.len());
        for id in &r.camera_frame_ids {
            let mut cameras = self.cameras.borrow_mut();
            match cameras.get(&r.scene_id, id)? {
                Some((k, cam)) => v.push(Shown {
                    path: ImageReader::file_name(&cam),
                    source_file: cam.image_path.clone(),
                    source_frame: cameras.frame_key(cam.frame_idx),
                    size: (cam.width, cam.height),
                    from: From::Camera(&self.readers[k], Box::new(cam)),
                    corrupted: None,
                }),
                None if self.has_store => {
                    return Err(missing(format!(
                        "image {id} is not in the store's cameras.arrow"
                    )))
                }
                None => {}
            }
        }
        Ok(v)
    }
}

/// A black image with the size and format of `bytes` (the text-only control of that image).
pub(super) fn black_like(bytes: &[u8], file: &Path) -> Result<Vec<u8>> {
    let reader = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| Error::io(file, e))?;
    let format = reader.format().unwrap_or(image::ImageFormat::Png);
    let (w, h) = reader.into_dimensions().map_err(|e| Error::Input {
        file: file.to_path_buf(),
        record: String::new(),
        detail: format!("cannot read the image size: {e}"),
    })?;
    let format = match format {
        image::ImageFormat::Jpeg => image::ImageFormat::Jpeg,
        _ => image::ImageFormat::Png,
    };
    black_image(format, w, h, file)
}

/// A black `w`×`h` image encoded as `format` (`file` names it in an error). Every text-only
/// control of a size is the same picture, so each (format, size) is encoded once per process.
pub(super) fn black_image(
    format: image::ImageFormat,
    w: u32,
    h: u32,
    file: &Path,
) -> Result<Vec<u8>> {
    type Cache = std::sync::Mutex<BTreeMap<(bool, u32, u32), Arc<Vec<u8>>>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let jpeg = format == image::ImageFormat::Jpeg;
    let cache = CACHE.get_or_init(Default::default);
    if let Some(b) = cache
        .lock()
        .ok()
        .and_then(|c| c.get(&(jpeg, w, h)).cloned())
    {
        return Ok(b.to_vec());
    }
    if w == 0 || h == 0 || w > crate::jpeg::MAX_SIDE || h > crate::jpeg::MAX_SIDE {
        return Err(Error::Input {
            file: file.to_path_buf(),
            record: String::new(),
            detail: format!("cannot encode a {w}×{h} black control image"),
        });
    }
    let black = image::RgbImage::new(w, h);
    let bytes = if jpeg {
        crate::jpeg::encode(black.as_raw(), w as usize, h as usize, 95)?
    } else {
        crate::store::atomic::encode_png(&file.display(), black)?
    };
    if let Ok(mut c) = cache.lock() {
        c.insert((jpeg, w, h), Arc::new(bytes.clone()));
    }
    Ok(bytes)
}
