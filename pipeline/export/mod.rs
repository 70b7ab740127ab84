//! `drivegen export`: a release in the formats evaluation harnesses read.
//!
//! * [`Format::Llava`]: `{split}.json`, a list of LLaVA conversations (`id`, `image`,
//!   `conversations`), one `<image>` line per image in `cameras` order before the prompt, the
//!   reply the answer the prompt asks for (the letter where options are lettered, else the
//!   option), `image` a path for one image and a list for several, under `images/`.
//! * [`Format::Vlmevalkit`]: one `{name}.tsv` in VLMEvalKit's multiple-choice layout (`index`,
//!   base64 `image`, `question`, `hint`, one column per option `A`…, `answer` letter,
//!   `category` = family/type, `l2-category` = family, `split`, plus `qa_id`), every field
//!   quoted as VLMEvalKit's own writer does. Several images are a JSON list of base64 strings,
//!   which its loader reads as a list.
//! * [`Format::Jsonl`]: `{split}.jsonl`, the QA record's columns with the images' paths under
//!   `images/`.
//! * lmms-eval ([`lmms_eval`]): a task folder over the release itself, nothing copied.
//!
//! Images are written once each, named by their content's sha256, so a frame shown by many
//! questions is one file. Every split of the release is exported (the text-only control too),
//! and answers are copied, never recomputed.

mod formats;
pub(crate) mod lmms_eval;

use std::collections::BTreeMap;
use std::path::PathBuf;

use sha2::{Digest, Sha256};

use crate::release::read::{for_each_row_with_images, listed_shards, ShownImage};
use crate::{Error, Result};

/// The harness formats `drivegen export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Llava,
    Vlmevalkit,
    Jsonl,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Llava => "llava",
            Format::Vlmevalkit => "vlmevalkit",
            Format::Jsonl => "jsonl",
        }
    }
}

/// What to export, where.
#[derive(Debug, Clone)]
pub(crate) struct ExportOptions {
    pub release: PathBuf,
    pub out: PathBuf,
    pub format: Format,
    /// The VLMEvalKit dataset name (the TSV's file name, what `--data` names).
    pub name: String,
}

/// What an export wrote.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExportSummary {
    pub out: PathBuf,
    /// Rows per split.
    pub rows: BTreeMap<String, usize>,
    /// Image files written (distinct images), none for VLMEvalKit.
    pub image_files: usize,
    /// The files a harness reads, relative to `out`.
    pub files: Vec<String>,
}

impl std::fmt::Display for ExportSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rows: Vec<String> = self.rows.iter().map(|(s, n)| format!("{s} {n}")).collect();
        write!(
            f,
            "export: {} rows ({}), {} image files, {} in {}",
            self.rows.values().sum::<usize>(),
            rows.join(", "),
            self.image_files,
            self.files.join(", "),
            self.out.display()
        )
    }
}

/// The folder of exported images: each distinct image once, named by content.
pub(crate) struct ImageDir {
    dir: PathBuf,
    written: std::collections::HashSet<String>,
    /// The images seen last by their path, with their names: the questions of a clip or a
    /// frame show the same images row after row, and comparing bytes is several times faster
    /// than hashing them again. A path only says where to look; the bytes must be equal.
    recent: std::collections::HashMap<String, (Vec<u8>, String)>,
}

/// Images remembered by [`ImageDir`] before it forgets them all (rows come scene by scene, so
/// a scene's images fit).
const RECENT_IMAGES: usize = 256;

impl ImageDir {
    /// Images under `out/images/`, created with the first image.
    pub(crate) fn new(out: &std::path::Path) -> Self {
        Self {
            dir: out.join("images"),
            written: Default::default(),
            recent: Default::default(),
        }
    }

    /// Distinct images written so far.
    pub(crate) fn count(&self) -> usize {
        self.written.len()
    }

    /// The path (relative to the export folder) of `img`, written the first time it is seen.
    pub(crate) fn put(&mut self, img: &ShownImage, qa_id: &str) -> Result<String> {
        let bytes = image_bytes(img, qa_id)?;
        if let Some((seen, name)) = self.recent.get(&img.path) {
            if seen.as_slice() == bytes {
                return Ok(format!("images/{name}"));
            }
        }
        let digest = Sha256::digest(bytes);
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        let name = format!("{hex}.{}", extension(bytes, img, qa_id)?);
        if self.written.insert(name.clone()) {
            // `write_atomic` creates the folder.
            crate::store::atomic::write_atomic(&self.dir.join(&name), bytes)?;
        }
        if self.recent.len() >= RECENT_IMAGES {
            self.recent.clear();
        }
        self.recent
            .insert(img.path.clone(), (bytes.to_vec(), name.clone()));
        Ok(format!("images/{name}"))
    }
}

/// The encoded bytes of an image, or an error naming the row when the release holds paths
/// only.
fn image_bytes<'a>(img: &'a ShownImage, qa_id: &str) -> Result<&'a [u8]> {
    img.bytes.as_deref().ok_or_else(|| Error::Input {
        file: PathBuf::from(&img.path),
        record: qa_id.to_string(),
        detail: "the release publishes this image's path only (built with --images paths); \
                 exports need the images themselves"
            .into(),
    })
}

/// The file extension of encoded image bytes, from their signature.
fn extension(bytes: &[u8], img: &ShownImage, qa_id: &str) -> Result<&'static str> {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Ok("jpg")
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Ok("png")
    } else {
        Err(Error::Input {
            file: PathBuf::from(&img.path),
            record: qa_id.to_string(),
            detail: "the image is neither JPEG nor PNG".into(),
        })
    }
}

/// Exports a release (see the module docs).
pub fn run(opts: &ExportOptions) -> Result<ExportSummary> {
    crate::store::paths::component("--name", &opts.name)?;
    crate::store::paths::disjoint(&opts.release, "the release", &opts.out, "the export")?;
    let (_, shards) = listed_shards(&opts.release, true)?;
    for split in shards.keys() {
        crate::store::paths::component("manifest.json splits", split)?;
    }
    let owned = crate::store::owner::Owned::claim(
        &opts.out,
        "export",
        &format!("a {} export of the release", opts.format.name()),
    )?;
    let mut record = ExportRecord::claim(&opts.release, &opts.out)?;
    let mut images = ImageDir::new(&opts.out);
    let mut summary = ExportSummary {
        out: opts.out.clone(),
        ..Default::default()
    };
    let mut writer = formats::Writer::new(opts)?;
    let pb = crate::progress::bar(
        shards.values().map(Vec::len).sum::<usize>() as u64,
        "export shards",
    );
    for (split, files) in &shards {
        writer.begin_split(split)?;
        let mut n = 0usize;
        for f in files {
            for_each_row_with_images(f, |record, tag, shown| {
                n += 1;
                writer.row(split, &record, &tag, &shown, &mut images)
            })?;
            pb.inc(1);
        }
        summary.rows.insert(split.clone(), n);
        writer.end_split(split)?;
    }
    pb.finish_and_clear();
    summary.files = writer.finish()?;
    summary.image_files = images.count();
    record.add(opts.format.name(), &summary.files);
    record.write(&opts.out)?;
    owned.finish()?;
    Ok(summary)
}

/// `.drivegen-export.json`: the release an export folder holds (its `manifest.json`'s sha256) and the
/// formats written there. Formats of one release share `images/` and may be added one run at a
/// time; an export of another release into the same folder is refused, since its files would
/// mix with the first one's.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct ExportRecord {
    release: String,
    manifest_sha256: String,
    /// Format → the files it wrote.
    formats: BTreeMap<String, Vec<String>>,
}

// Hidden: harnesses glob the folder for `*.json` and `*.jsonl` and would read it as data.
const RECORD: &str = ".drivegen-export.json";

impl ExportRecord {
    /// The record of the export folder `out`, new or of the same `release`; refused when the
    /// folder holds another release's export.
    pub(crate) fn claim(release: &std::path::Path, out: &std::path::Path) -> Result<Self> {
        let sha = crate::release::sha256_file(&release.join("manifest.json"))?;
        let path = out.join(RECORD);
        if std::fs::symlink_metadata(&path).is_err() {
            return Ok(Self {
                release: release.display().to_string(),
                manifest_sha256: sha,
                formats: BTreeMap::new(),
            });
        }
        let text = crate::store::input::read_to_string(&path, crate::store::input::METADATA)?;
        let rec: Self = serde_json::from_str(&text).map_err(|e| Error::json(&path, e))?;
        if rec.manifest_sha256 != sha {
            return Err(Error::Refused {
                path: out.to_path_buf(),
                why: format!(
                    "holds an export of another release ({}, manifest sha256 {}); an export \
                     folder holds one release. Give another folder",
                    rec.release, rec.manifest_sha256
                ),
            });
        }
        Ok(rec)
    }

    pub(crate) fn add(&mut self, format: &str, files: &[String]) {
        self.formats.insert(format.to_string(), files.to_vec());
    }

    pub(crate) fn write(&self, out: &std::path::Path) -> Result<()> {
        let json = serde_json::to_string_pretty(self)
            .map_err(|e| Error::Internal(format!("{RECORD}: {e}")))?;
        crate::store::atomic::write_atomic(&out.join(RECORD), (json + "\n").as_bytes())
    }
}
