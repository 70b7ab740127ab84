//! The images the release draws itself: a row's `image_paths` entry that is no file in its
//! image folder but a row of that folder's recipe table (`marked_images.arrow` of the
//! Set-of-Mark and MetaVQA stages, `corruptions.arrow` of the corrupt stage) is rendered from
//! its source camera image when its shard is written, once per row group, on the CPU pool (or
//! the GPU), and optionally kept as a file (`--keep-images`).
//!
//! Recipe tables hold one record batch per scene (a batch may hold several) and rows come
//! scene by scene, so only the current scene's recipes are in memory.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, StringArray};
use arrow::ipc::reader::FileReader;

use crate::corrupt::config::CorruptConfig;
use crate::corrupt::output::CorruptionRow;
use crate::gpu::Gpu;
use crate::som::config::DrawConfig;
use crate::som::recipe::MarkedImage;
use crate::{Error, Result};

/// How one published image is drawn.
#[derive(Clone)]
pub(super) enum Recipe {
    Marked(Arc<MarkedImage>, Arc<DrawConfig>),
    Corrupt(Arc<CorruptionRow>, Arc<CorruptConfig>),
}

impl Recipe {
    /// The camera image it is drawn on.
    pub(super) fn source_id(&self) -> &str {
        match self {
            Recipe::Marked(m, _) => &m.camera_frame_id,
            Recipe::Corrupt(r, _) => &r.image_id,
        }
    }

    /// The published bytes, drawn on `base` (the decoded source).
    pub(super) fn render(&self, base: &image::RgbImage, gpu: Option<&Gpu>) -> Result<Vec<u8>> {
        match self {
            Recipe::Marked(m, draw) => crate::som::recipe::render(m, base, draw, gpu),
            Recipe::Corrupt(r, cfg) => crate::corrupt::recipe::render(cfg, r, base, gpu),
        }
    }
}

enum Settings {
    Marked(Arc<DrawConfig>),
    Corrupt(Arc<CorruptConfig>),
}

/// One recipe table of one image folder.
struct Table {
    dir: usize,
    file: PathBuf,
    settings: Settings,
    reader: FileReader<File>,
    /// The batches holding each scene's rows.
    batches: HashMap<String, Vec<usize>>,
}

/// The recipe tables of the release's image folders.
pub(super) struct Recipes {
    tables: Vec<Table>,
    scene: Option<String>,
    /// The current scene's recipes by (image folder, path).
    current: BTreeMap<(usize, String), Recipe>,
}

impl Recipes {
    /// Opens the recipe tables in `dirs`. A table without its settings in the schema metadata
    /// (written by an older drivegen) is no recipe table: its images must be files.
    pub(super) fn open(dirs: &[PathBuf]) -> Result<Self> {
        let mut tables = Vec::new();
        for (k, d) in dirs.iter().enumerate() {
            for name in [crate::som::recipe::FILE, "corruptions.arrow"] {
                let file = d.join(name);
                if !file.is_file() {
                    continue;
                }
                let reader = FileReader::try_new(crate::store::input::open(&file)?, None)?;
                let schema = reader.schema();
                let settings = if name == crate::som::recipe::FILE {
                    Settings::Marked(Arc::new(crate::som::recipe::draw_config(&file, &schema)?))
                } else if schema
                    .metadata()
                    .contains_key(crate::corrupt::recipe::CONFIG_KEY)
                {
                    Settings::Corrupt(Arc::new(crate::corrupt::recipe::config_of(&file, &schema)?))
                } else {
                    continue;
                };
                let mut t = Table {
                    dir: k,
                    file,
                    settings,
                    reader,
                    batches: HashMap::new(),
                };
                t.index()?;
                tables.push(t);
            }
        }
        Ok(Self {
            tables,
            scene: None,
            current: BTreeMap::new(),
        })
    }

    /// The recipe of `path` in image folder `dir` for a row of `scene`, if there is one.
    pub(super) fn get(&mut self, scene: &str, dir: usize, path: &str) -> Result<Option<Recipe>> {
        if self.tables.is_empty() {
            return Ok(None);
        }
        if self.scene.as_deref() != Some(scene) {
            self.current.clear();
            for t in &mut self.tables {
                t.load(scene, &mut self.current)?;
            }
            self.scene = Some(scene.to_string());
        }
        Ok(self.current.get(&(dir, path.to_string())).cloned())
    }
}

impl Table {
    fn bad(&self, record: String, detail: String) -> Error {
        Error::input(&self.file, &record, detail)
    }

    /// Record batch `b`.
    fn batch(&mut self, b: usize) -> Result<arrow::array::RecordBatch> {
        let bad = |detail: String| Error::input(&self.file, format!("record batch {b}"), detail);
        self.reader.set_index(b).map_err(|e| bad(e.to_string()))?;
        self.reader
            .next()
            .ok_or_else(|| bad("missing".into()))?
            .map_err(|e| bad(e.to_string()))
    }

    /// Notes which batches hold which scenes (one pass, a batch at a time).
    fn index(&mut self) -> Result<()> {
        for b in 0..self.reader.num_batches() {
            let batch = self.batch(b)?;
            let scenes = batch
                .column_by_name("scene_id")
                .and_then(|c| c.as_any().downcast_ref::<StringArray>())
                .ok_or_else(|| self.bad("schema".into(), "no string column scene_id".into()))?;
            let mut last: Option<&str> = None;
            for i in 0..scenes.len() {
                let s = scenes.value(i);
                if last != Some(s) {
                    let v = self.batches.entry(s.to_string()).or_default();
                    if v.last() != Some(&b) {
                        v.push(b);
                    }
                    last = Some(s);
                }
            }
        }
        Ok(())
    }

    /// Adds `scene`'s recipes to `into`.
    fn load(&mut self, scene: &str, into: &mut BTreeMap<(usize, String), Recipe>) -> Result<()> {
        let Some(batches) = self.batches.get(scene).cloned() else {
            return Ok(());
        };
        for b in batches {
            let batch = self.batch(b)?;
            match &self.settings {
                Settings::Marked(draw) => {
                    for m in crate::som::recipe::from_batch(&self.file, &batch)? {
                        if m.scene_id == scene {
                            let key = (self.dir, m.path.clone());
                            into.insert(key, Recipe::Marked(Arc::new(m), draw.clone()));
                        }
                    }
                }
                Settings::Corrupt(cfg) => {
                    for r in crate::corrupt::recipe::from_batch(&self.file, &batch)? {
                        if r.scene_id == scene && !is_codec(&r.corruption) {
                            let key = (self.dir, r.output_path.clone());
                            into.insert(key, Recipe::Corrupt(Arc::new(r), cfg.clone()));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn is_codec(name: &str) -> bool {
    crate::corrupt::Corruption::parse(name).is_ok_and(|c| c.is_codec())
}

/// The encoded black image of `w`×`h` in the format of `path`'s extension (JPEG for `.jpg`
/// and `.jpeg`, else PNG): the text-only control of a drawn image, which needs no drawing.
pub(super) fn black_for(path: &str, w: u32, h: u32, file: &Path) -> Result<Vec<u8>> {
    let ext = Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let format = if ext == "jpg" || ext == "jpeg" {
        image::ImageFormat::Jpeg
    } else {
        image::ImageFormat::Png
    };
    super::black_image(format, w, h, file)
}
