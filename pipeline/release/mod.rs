//! The release writer: QA tables → Parquet shards with embedded images, `manifest.json` and a
//! dataset card (`README.md` with the YAML header Hugging Face `datasets` reads).
//!
//! Layout of a release folder:
//!
//! ```text
//! data/{split}-{family}-{i:05d}-of-{n:05d}.parquet
//!                                             QA columns + images (list<struct<bytes, path>>)
//! manifest.json                               options + their hash, input fingerprints,
//!                                             tool version, row counts, sha256 per shard
//! README.md                                   dataset card
//! ```
//!
//! Each family's rows go into files of their own, so the card can give every family a config
//! (`load_dataset(path, "metavqa")`); within a family rows keep the order of the inputs, and
//! shards hold `rows_per_shard` rows each. Rows whose
//! images cannot be decoded are left out (the release's `rejects.jsonl` says which and why),
//! and the correct options of the rows published are placed so that answer letters are
//! uniform within every family, type and option count (the prompts are rendered as the rows
//! are written, so they show the options in their final order). Every file is
//! written to a temporary name and renamed, and no timestamp or host name goes into any file,
//! so the same inputs and options give byte-identical releases, and re-running an interrupted
//! release ends where an uninterrupted one would.

mod ahead;
pub(crate) mod blind;
pub(crate) mod bounded;
mod cameras;
pub(crate) mod card;
pub mod read;
mod render;
mod robust;
pub(crate) mod screen;
pub mod shards;
mod shown;
pub(crate) mod trace;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use self::ahead::Ahead;
use self::cameras::SceneCameras;
use self::shards::{hex, ImageRef, ShardInfo};
use self::shown::ImageFinder;
use self::shown::{black_image, From, Shown};
use crate::images::ImageReader;
use crate::qa::QaRecord;
use crate::store::atomic::write_atomic;
use crate::store::paths::disjoint;
use crate::store::Store;
use crate::{Error, Result};

/// How images go into the shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageMode {
    /// The encoded file bytes (JPEG/PNG as in the source) plus the path.
    #[default]
    Embed,
    /// Only the path in the source dataset (bytes null).
    Paths,
}

/// Rows per Parquet shard unless told otherwise.
pub(crate) const DEFAULT_ROWS_PER_SHARD: usize = 5000;
/// Rows per row group unless told otherwise: the Hugging Face dataset viewer's guideline for
/// rows that carry images (it reads a row group at a time to show a page of rows).
pub(crate) const DEFAULT_ROW_GROUP_ROWS: usize = 100;
/// MiB of distinct images that end a row group unless told otherwise.
pub(crate) const DEFAULT_ROW_GROUP_MIB: usize = 16;
/// The split the questions are published under unless told otherwise.
pub(crate) const DEFAULT_SPLIT: &str = "test";
/// The dataset's name on its card unless told otherwise.
pub(crate) const DEFAULT_NAME: &str = "drivegen release";

/// What to write.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Options {
    pub qa: Vec<PathBuf>,
    /// The scene stores the questions come from (map image ids to files): one, or one per
    /// shard of a sharded build. Without any, rows show only their `image_paths`.
    pub stores: Vec<PathBuf>,
    /// Overrides the stores' source root when looking for image files.
    pub images_root: Option<PathBuf>,
    pub out: PathBuf,
    pub split: String,
    pub rows_per_shard: usize,
    pub row_group_rows: usize,
    /// A row group also ends once its distinct images reach this many bytes. The writer holds
    /// a group's distinct images a few times over (its dictionary, then the compressed
    /// dictionary page), so this bounds the release's memory and keeps groups readable with
    /// images of any size.
    pub row_group_bytes: usize,
    pub images: ImageMode,
    pub name: String,
    /// Folders that rows' `image_paths` (corrupted, marked images) are relative to, searched
    /// in order.
    pub image_dirs: Vec<PathBuf>,
    /// Also write every question with black images of the same sizes into the split
    /// `{split}_text_only`: the control DriveBench recommends, which shows how much a model
    /// answers from the text alone.
    pub text_only_controls: bool,
    /// Also write every image the release draws (marked, corrupted) under this folder, at its
    /// published path, for people to look at.
    pub keep_images: Option<PathBuf>,
    /// Also re-ask a draw of some families' rows under corruptions, a split per setting
    /// (`crate::robustness`).
    pub robustness: Option<crate::robustness::RobustnessOptions>,
    /// The device images are drawn on (the CPU twins by default).
    #[serde(skip)]
    pub device: crate::gpu::Device,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            qa: Vec::new(),
            stores: Vec::new(),
            images_root: None,
            out: PathBuf::from("release"),
            split: DEFAULT_SPLIT.into(),
            rows_per_shard: DEFAULT_ROWS_PER_SHARD,
            row_group_rows: DEFAULT_ROW_GROUP_ROWS,
            row_group_bytes: DEFAULT_ROW_GROUP_MIB << 20,
            images: ImageMode::Embed,
            name: DEFAULT_NAME.into(),
            image_dirs: Vec::new(),
            text_only_controls: false,
            keep_images: None,
            robustness: None,
            device: crate::gpu::Device::Cpu,
        }
    }
}

/// What [`run`] wrote.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReleaseSummary {
    pub rows: usize,
    pub images: usize,
    pub shards: Vec<ShardInfo>,
    /// Rows per family and question type of the main split.
    pub counts: BTreeMap<String, BTreeMap<String, usize>>,
    /// Rows per split and family (the text-only control and every robustness split too).
    pub split_counts: BTreeMap<String, BTreeMap<String, usize>>,
    pub options_hash: String,
}

/// The sha256 of a file, lower-case hex.
pub(crate) fn sha256_file(path: &Path) -> Result<String> {
    let mut file = crate::store::input::open(path)?;
    let mut h = Sha256::new();
    std::io::copy(&mut file, &mut h).map_err(|e| Error::io(path, e))?;
    Ok(hex(&h.finalize()))
}

/// Writes the release.
pub fn run(opts: &Options) -> Result<ReleaseSummary> {
    check_options(opts)?;
    let stores: Vec<Store> = opts
        .stores
        .iter()
        .map(|p| Store::open(p))
        .collect::<Result<_>>()?;
    let _owned = crate::store::owner::Owned::claim(
        &opts.out,
        "release",
        "the Parquet shards, manifest.json and README.md",
    )?;
    // The kept images go into a folder drivegen owns and locks, like every output.
    let _kept = opts
        .keep_images
        .as_deref()
        .map(|k| {
            crate::store::owner::Owned::claim(k, "kept images", "the images the release draws")
        })
        .transpose()?;
    // `images_root` overrides where the stores' image paths are relative to.
    let readers: Vec<ImageReader> = stores
        .iter()
        .map(|s| ImageReader::new(s, opts.images_root.as_deref()))
        .collect();
    let finder = ImageFinder {
        opts,
        cameras: std::cell::RefCell::new(SceneCameras::open(&stores)?),
        recipes: std::cell::RefCell::new(render::Recipes::open(&opts.image_dirs)?),
        readers: &readers,
        has_store: !stores.is_empty(),
        shared: Default::default(),
    };
    // Rows stream from the tables a batch at a time. The screening pass comes first: shard
    // names carry the number of shards, so the rows whose images are unusable must be known
    // before the first shard is written.
    let screened = screen::screen(opts, &finder)?;
    let total = screened.kept;
    log::info!(
        "release: {total} rows kept, {} left out for unusable images (rejects.jsonl); the key \
         of {} moved so letters are uniform",
        screened.dropped.len(),
        screened.moves.placed()
    );
    // Written even when empty, as every stage's log is: a rerun replaces the file it wrote.
    screened
        .rejects
        .write(&opts.out.join(crate::store::rejects::LOG_FILE))?;
    let mut splits = vec![(opts.split.clone(), Look::Clean)];
    if opts.text_only_controls {
        splits.push((control_split(&opts.split), Look::Black));
    }
    // The rows every setting re-asks, drawn from the rows the main split publishes.
    let drawn = opts
        .robustness
        .as_ref()
        .map(|r| screened.pool.draw(r.rows, r.seed))
        .unwrap_or_default();
    if let Some(r) = &opts.robustness {
        robust::plan_shared(&finder, &screened, &drawn)?;
        for s in &r.settings {
            splits.push((
                crate::robustness::split_name(&opts.split, s),
                Look::Corrupt(s),
            ));
        }
    }
    let mut shards = Vec::new();
    let mut images_total = 0;
    let mut counts = BTreeMap::new();
    let mut split_counts = BTreeMap::new();
    let mut drawn_images = BTreeMap::new();
    for (split, look) in &splits {
        finder.shared.borrow_mut().begin_split();
        let (mut written, n_images, c) =
            write_split(opts, &finder, split, &screened, *look, &drawn)?;
        if matches!(look, Look::Corrupt(_)) {
            drawn_images.insert(split.clone(), finder.shared.borrow().counts(n_images));
        }
        split_counts.insert(
            split.clone(),
            c.iter()
                .map(|(f, types)| (f.clone(), types.values().sum()))
                .collect(),
        );
        if matches!(look, Look::Clean) {
            counts = c;
        }
        shards.append(&mut written);
        images_total += n_images;
    }
    // Shards of an earlier run with another count or split would be picked up by `data/*`.
    remove_stale_shards(&opts.out, &shards)?;
    let summary = ReleaseSummary {
        rows: total,
        images: images_total,
        counts,
        split_counts,
        shards,
        options_hash: options_hash(opts),
    };
    let split_names: Vec<String> = splits.iter().map(|(s, _)| s.clone()).collect();
    write_manifest(
        opts,
        &stores,
        &split_names,
        screened.dropped.len(),
        &summary,
        &drawn_images,
    )?;
    write_atomic(
        &opts.out.join("README.md"),
        card::dataset_card(opts, &summary).as_bytes(),
    )?;
    Ok(summary)
}

/// Refuses options that cannot give a release before anything is opened or claimed: an empty
/// shard size, a split name `datasets` cannot derive from file names, and inputs inside the
/// output folder.
fn check_options(opts: &Options) -> Result<()> {
    if opts.rows_per_shard == 0 {
        return Err(Error::invalid("rows per shard", "must be at least 1"));
    }
    if opts.split.is_empty()
        || !opts
            .split
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(Error::invalid(
            format!("split name `{}`", opts.split),
            "must be letters, digits or `_` (datasets derives it from file names)",
        ));
    }
    if opts.robustness.is_some() && opts.images == ImageMode::Paths {
        return Err(Error::invalid(
            "robustness splits",
            "need embedded images: their corrupted images are drawn by the release and exist \
             only in its shards",
        ));
    }
    for q in &opts.qa {
        disjoint(q, "a QA table", &opts.out, "the release")?;
    }
    for s in &opts.stores {
        disjoint(s, "a store", &opts.out, "the release")?;
    }
    for d in &opts.image_dirs {
        disjoint(d, "an image folder", &opts.out, "the release")?;
    }
    if let Some(r) = &opts.images_root {
        disjoint(r, "the images root", &opts.out, "the release")?;
    }
    if let Some(k) = &opts.keep_images {
        disjoint(k, "the kept images' folder", &opts.out, "the release")?;
        for d in &opts.image_dirs {
            disjoint(k, "the kept images' folder", d, "an image folder")?;
        }
        for s in &opts.stores {
            disjoint(k, "the kept images' folder", s, "a store")?;
        }
    }
    Ok(())
}

/// The first 16 hex digits of the hash of the options that shape the files.
fn options_hash(opts: &Options) -> String {
    // What shapes the files, not where they go: the same release written elsewhere has the
    // same hash.
    let shaping = serde_json::json!({
        "name": opts.name,
        "split": opts.split,
        "rows_per_shard": opts.rows_per_shard,
        "row_group_rows": opts.row_group_rows,
        "row_group_bytes": opts.row_group_bytes,
        "images": opts.images,
        "text_only_controls": opts.text_only_controls,
        "robustness": robust::shaping(opts.robustness.as_ref()),
    });
    let options_json = shaping.to_string();
    hex(&Sha256::digest(options_json.as_bytes()))[..16].to_string()
}

/// Writes `manifest.json`: the options and their hash, the inputs' digests, the stores and
/// what `summary` says was written.
fn write_manifest(
    opts: &Options,
    stores: &[Store],
    splits: &[String],
    rejected_rows: usize,
    summary: &ReleaseSummary,
    drawn_images: &BTreeMap<String, serde_json::Value>,
) -> Result<()> {
    let inputs: Vec<serde_json::Value> = opts
        .qa
        .iter()
        .map(|p| {
            Ok(serde_json::json!({
                "file": p.file_name().map(|n| n.to_string_lossy().into_owned()),
                "sha256": sha256_file(p)?,
            }))
        })
        .collect::<Result<_>>()?;
    let manifest = serde_json::json!({
        "tool": "drivegen",
        "tool_version": env!("CARGO_PKG_VERSION"),
        "name": opts.name,
        "split": opts.split,
        "options": {
            "rows_per_shard": opts.rows_per_shard,
            "row_group_rows": opts.row_group_rows,
            "row_group_bytes": opts.row_group_bytes,
            "images": opts.images,
            "text_only_controls": opts.text_only_controls,
        },
        "splits": splits,
        "robustness": robust::manifest(opts, drawn_images),
        "options_hash": summary.options_hash,
        "inputs": inputs,
        "store": store_summary(stores),
        "rows": summary.rows,
        "rejected_rows": rejected_rows,
        "images": summary.images,
        "counts": summary.counts,
        "split_counts": summary.split_counts,
        "shards": summary.shards,
    });
    write_atomic(
        &opts.out.join("manifest.json"),
        (serde_json::to_string_pretty(&manifest).unwrap_or_default() + "\n").as_bytes(),
    )
}

/// Source, version and summed counts of the stores (the same for one store and for the
/// shards of it, so a merged sharded release has the manifest of an unsharded one).
fn store_summary(stores: &[Store]) -> serde_json::Value {
    let Some(first) = stores.first() else {
        return serde_json::Value::Null;
    };
    let mut counts = crate::store::Counts::default();
    let mut sources: Vec<&str> = Vec::new();
    for s in stores {
        let c = &s.meta().counts;
        counts.scenes += c.scenes;
        counts.frames += c.frames;
        counts.ego_poses += c.ego_poses;
        counts.camera_images += c.camera_images;
        counts.objects += c.objects;
        if !sources.contains(&s.meta().source.as_str()) {
            sources.push(&s.meta().source);
        }
    }
    serde_json::json!({
        "source": sources.join(","),
        "source_version": first.meta().source_version,
        "counts": counts,
    })
}

/// The `splits` a release's `manifest.json` lists.
pub(crate) fn manifest_splits(manifest: &serde_json::Value) -> Vec<String> {
    manifest["splits"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The split of `splits` a shard path (`data/{split}-{i}-of-{n}.parquet`) belongs to, the
/// longest name that matches (`test_text_only-…` is not a shard of `test`); None for a path
/// that is not a plain file under `data/` or matches no split.
pub(crate) fn shard_split<'a>(path: &str, splits: &'a [String]) -> Option<&'a String> {
    let name = path
        .strip_prefix("data/")
        .filter(|n| !n.contains('/') && !n.contains(".."))?;
    splits
        .iter()
        .filter(|sp| name.starts_with(&format!("{sp}-")))
        .max_by_key(|sp| sp.len())
}

/// The family of a shard of `split` (`data/{split}-{family}-{i}-of-{n}.parquet`); None for the
/// one file of an empty split, which has none.
pub(crate) fn shard_family(path: &str, split: &str) -> Option<String> {
    let stem = path
        .strip_prefix("data/")?
        .strip_prefix(split)?
        .strip_prefix('-')?
        .strip_suffix(".parquet")?;
    let (family, _) = stem.split_once('-')?;
    (!family.is_empty() && !family.as_bytes()[0].is_ascii_digit()).then(|| family.to_string())
}

/// The split holding the text-only controls of `split`.
pub(crate) fn control_split(split: &str) -> String {
    format!("{split}_text_only")
}

/// Rows per (family, question type).
type Counts = BTreeMap<String, BTreeMap<String, usize>>;

/// Writes one split's shards, each family's rows into files of their own (the dataset card
/// gives each family a config); returns the shards, the number of images they hold and the
/// rows per family and type.
fn write_split(
    opts: &Options,
    finder: &ImageFinder<'_>,
    split: &str,
    screened: &screen::Screened,
    look: Look<'_>,
    drawn: &BTreeMap<String, std::collections::HashSet<u128>>,
) -> Result<(Vec<ShardInfo>, usize, Counts)> {
    let per = opts.rows_per_shard;
    // A robustness split holds the drawn rows of the families it re-asks.
    let families: BTreeMap<&String, usize> = match look {
        Look::Corrupt(_) => drawn
            .iter()
            .filter(|(_, d)| !d.is_empty())
            .map(|(f, d)| (f, d.len()))
            .collect(),
        _ => screened.families.iter().map(|(f, k)| (f, *k)).collect(),
    };
    let planned: usize = families.values().map(|k| k.div_ceil(per)).sum();
    let pb = crate::progress::bar(planned as u64, &format!("release {split}"));
    let mut out = SplitOut::default();
    if families.values().sum::<usize>() == 0 {
        // A split with no rows still has a file for its config's `data/{split}-*` to match.
        let rel = shard_path(split, None, 0, 1);
        out.shards
            .push(shards::ShardWriter::create(&opts.out, &rel)?.finish()?);
    }
    for (&family, &kept) in &families {
        let chosen = drawn.get(family);
        let wanted = |r: &QaRecord| match look {
            Look::Corrupt(_) => chosen.is_some_and(|d| d.contains(&screen::id_key(&r.qa_id))),
            _ => true,
        };
        // Each family reads only the record batches that hold its rows.
        let batches = screened.batches.get(family).into_iter().flatten().copied();
        // A row's move is found by its position among the family's rows as the screening
        // pass read them, published or not.
        let rows = crate::qa::ipc::rows_in(&opts.qa, batches)
            .filter(|r| r.as_ref().map_or(true, |r| &r.family == family))
            .enumerate()
            .filter(|(_, r)| {
                r.as_ref()
                    .map_or(true, |r| !screened.dropped.contains(&r.qa_id) && wanted(r))
            })
            .map(|(k, r)| {
                r.map(|mut r| {
                    if let Some(to) = screened.moves.get(family, k) {
                        crate::balance::plan::move_answer(&mut r, usize::from(to));
                    }
                    r
                })
            });
        let plan = FamilyPlan {
            split,
            family,
            kept,
            look,
        };
        write_family(opts, finder, &plan, rows, &mut out, &pb)?;
    }
    pb.finish_and_clear();
    Ok((out.shards, out.images, out.counts))
}

/// What one split's shards hold so far.
#[derive(Default)]
struct SplitOut {
    shards: Vec<ShardInfo>,
    images: usize,
    counts: Counts,
}

/// One family's part of a split.
struct FamilyPlan<'p> {
    split: &'p str,
    family: &'p str,
    /// Its rows, all of which `rows` yields.
    kept: usize,
    look: Look<'p>,
}

/// How a split shows its rows' images.
#[derive(Debug, Clone, Copy)]
enum Look<'o> {
    /// As the stages made them: the main split.
    Clean,
    /// Black, of the same sizes: the text-only control.
    Black,
    /// Under a corruption: a robustness split re-asking drawn rows.
    Corrupt(&'o crate::robustness::Setting),
}

/// Where shard `i` of `n` of a split (of one family, or of none when the split is empty)
/// goes: `data/{split}-{family}-{i:05}-of-{n:05}.parquet`.
fn shard_path(split: &str, family: Option<&str>, i: usize, n: usize) -> String {
    match family {
        Some(f) => format!("data/{split}-{f}-{i:05}-of-{n:05}.parquet"),
        None => format!("data/{split}-{i:05}-of-{n:05}.parquet"),
    }
}

/// Writes one family's shards of a split from its rows, streamed.
fn write_family(
    opts: &Options,
    finder: &ImageFinder<'_>,
    plan: &FamilyPlan<'_>,
    mut rows: impl Iterator<Item = Result<QaRecord>>,
    out: &mut SplitOut,
    pb: &crate::progress::Bar,
) -> Result<()> {
    let (total, per) = (plan.kept, opts.rows_per_shard);
    let n = total.div_ceil(per);
    log::info!(
        "release {}: {} {total} rows in {n} shards of at most {per}",
        plan.split,
        plan.family
    );
    let mut ahead = Ahead::new(finder, opts, plan.look);
    for i in 0..n {
        let rel = shard_path(plan.split, Some(plan.family), i, n);
        let want = per.min(total - i * per);
        let mut w = shards::ShardWriter::create(&opts.out, &rel)?;
        // Row groups end at `row_group_rows` rows or `row_group_bytes` of distinct images,
        // whichever comes first: only one group's rows and images are in memory, and the cut
        // depends on the data alone. Images repeat across the questions of one clip or frame:
        // each is read or drawn once per group (the Parquet dictionary stores each once per
        // group too).
        let mut seen: std::collections::BTreeSet<PathBuf> = Default::default();
        let (mut group, mut images, mut group_bytes) = (Vec::new(), Vec::new(), 0usize);
        let mut origins = Vec::new();
        for k in 0..want {
            let (r, shown, tag) = ahead.next(&mut rows)?;
            *out.counts
                .entry(r.family.clone())
                .or_default()
                .entry(r.question_type.clone())
                .or_default() += 1;
            let mut v = Vec::with_capacity(shown.len());
            for im in shown {
                let bytes = match opts.images {
                    ImageMode::Paths => None,
                    ImageMode::Embed => {
                        let key = im.key();
                        let b = ahead.bytes(&key)?;
                        if seen.insert(key) {
                            group_bytes += b.len();
                        }
                        Some(b)
                    }
                };
                v.push(ImageRef {
                    bytes,
                    path: im.path,
                    width: im.size.0,
                    height: im.size.1,
                    source_file: im.source_file,
                    source_frame: im.source_frame,
                });
            }
            out.images += v.len();
            let mut origin = finder.cameras.borrow().origin(&r.scene_id);
            origin.tag = tag;
            origins.push(origin);
            group.push(r);
            images.push(v);
            if group.len() >= opts.row_group_rows.max(1)
                || group_bytes >= opts.row_group_bytes
                || k + 1 == want
            {
                w.write_group(&group, &images, &origins)?;
                origins.clear();
                group_bytes = 0;
                group.clear();
                images.clear();
                seen.clear();
                ahead.forget_unused();
            }
        }
        out.shards.push(w.finish()?);
        pb.inc(1);
    }
    Ok(())
}

/// Whether `name` is a shard file name drivegen writes (`{split}-{family}-{i:05}-of-{n:05}.parquet`,
/// or without the family for an empty split or a release of an earlier layout).
fn is_shard_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".parquet") else {
        return false;
    };
    let b = stem.as_bytes();
    // `-iiiii-of-nnnnn` is 15 bytes; the split before it is at least one.
    if b.len() < 17 || !stem.is_char_boundary(stem.len() - 15) {
        return false;
    }
    let (head, tail) = stem.split_at(stem.len() - 15);
    let t = tail.as_bytes();
    let digits = |r: std::ops::Range<usize>| t[r].iter().all(u8::is_ascii_digit);
    let word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    // A family is one drivegen names its files after, so a user's `test-mine-…` file stays.
    let (split, family) = match head.split_once('-') {
        Some((s, f)) => (s, Some(f)),
        None => (head, None),
    };
    word(split)
        && family.is_none_or(|f| crate::qa::record::FAMILIES.contains(&f))
        && t[0] == b'-'
        && digits(1..6)
        && &t[6..10] == b"-of-"
        && digits(10..15)
}

/// Removes the shards of an earlier run that this one did not write again (another count or
/// split). Only files named as drivegen names shards are touched; anything else in `data/`
/// stays.
fn remove_stale_shards(root: &Path, keep: &[ShardInfo]) -> Result<()> {
    let dir = root.join("data");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = format!("data/{name}");
        let regular = e.file_type().is_ok_and(|t| t.is_file());
        if regular && is_shard_name(&name) && !keep.iter().any(|s| s.path == rel) {
            std::fs::remove_file(e.path()).map_err(|err| Error::io(e.path(), err))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::is_shard_name;

    #[test]
    fn only_drivegen_shard_names_are_stale_shards() {
        for ok in [
            "test-00000-of-00001.parquet",
            "test-metavqa-00000-of-00001.parquet",
            "test_text_only-00012-of-00040.parquet",
            "test_text_only-egodyn-00012-of-00040.parquet",
        ] {
            assert!(is_shard_name(ok), "{ok}");
        }
        for no in [
            "test-00000-of-00001.parquet.bak",
            "my-notes.parquet",
            "-00000-of-00001.parquet",
            "test-0000a-of-00001.parquet",
            "te st-00000-of-00001.parquet",
            "test-a-b-00000-of-00001.parquet",
            "test-mine-00000-of-00001.parquet",
            "test--00000-of-00001.parquet",
            "tést-00000-of-00001.parquet",
            "test-00000-to-00001.parquet",
            "README.md",
        ] {
            assert!(!is_shard_name(no), "{no}");
        }
    }
}
