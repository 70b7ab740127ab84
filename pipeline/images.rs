//! A store's camera images, whatever the source holds them in: one way for every stage to get
//! a camera row's encoded bytes or its decoded RGB.
//!
//! For nuScenes and CARLA stores `image_path` is an image file (JPEG or PNG) under the source
//! root. For a Waymo v2 store it is the segment's `camera_image/<segment>.parquet` and
//! `camera_frame_id` is `<segment>/<timestamp>/<camera>`: a real segment holds about a
//! thousand JPEGs of 1–2 MB, so reading the file per image is out of the question.
//!
//! Waymo images are therefore read through two small caches shared by all threads:
//!
//! - a segment index per file (the key columns, read once: (timestamp, camera) → row group and
//!   row, plus the file's Parquet metadata), at most [`MAX_INDEXES`] files, a few tens of bytes
//!   per image;
//! - blocks of the image column: contiguous rows of one row group, sized from the row group's
//!   metadata to about [`BLOCK_BYTES`] (a whole row group when it is smaller, never less than
//!   one row), at most [`MAX_BLOCKS`] kept, least recently used evicted.
//!
//! Memory therefore stays under `MAX_BLOCKS × BLOCK_BYTES` (256 MiB; more only when a single
//! image exceeds `BLOCK_BYTES`), plus one block per thread reading at that moment. A stage that
//! walks a scene's frames in order reads each block once; threads asking for the same block at
//! once wait for one read instead of each reading it.
//!
//! Decoded images the release draws on (one camera image under fifteen corruptions, or under
//! its marks) are shared too: the last [`MAX_DECODED`] used are kept, so each is decoded once
//! while rows showing it come together.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::DataType;
use image::RgbImage;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
    RowSelector,
};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::PageIndexPolicy;

use crate::formats::waymo::{Component, CAM, CAMERA_NAMES, IMG, TS};
use crate::store::subset::absolute_source_root;
use crate::store::{CameraRow, Store};
use crate::{Error, Result};

/// Image-column bytes a cached block aims at.
pub(crate) const BLOCK_BYTES: u64 = 32 << 20;
/// Blocks kept at most.
pub(crate) const MAX_BLOCKS: usize = 8;
/// Segment indexes kept at most.
pub(crate) const MAX_INDEXES: usize = 32;
/// Decoded images kept at most for [`ImageReader::rgb_shared`] (about 100 MiB at 1600×900).
pub(crate) const MAX_DECODED: usize = 24;

/// A value computed once by whichever thread gets there first; errors are kept as text so
/// that every thread waiting on it can report them.
type Shared<T> = Arc<OnceLock<std::result::Result<T, String>>>;

/// What one segment file's key columns say.
struct SegmentIndex {
    meta: ArrowReaderMetadata,
    image_root: usize,
    /// (timestamp, camera code) → (row group, row within it).
    rows: HashMap<(i64, u8), (usize, usize)>,
    group_rows: Vec<usize>,
    /// Rows per cached block, per row group.
    block_rows: Vec<usize>,
}

type BlockKey = (PathBuf, usize, usize);
/// A camera image by (image_path, camera_frame_id).
type ImageKey = (String, String);

/// Least-recently-used lists, small enough to scan.
#[derive(Default)]
struct Cache {
    tick: u64,
    indexes: Vec<(PathBuf, u64, Shared<Arc<SegmentIndex>>)>,
    blocks: Vec<(BlockKey, u64, Shared<ArrayRef>)>,
    decoded: Vec<(ImageKey, u64, Shared<Arc<RgbImage>>)>,
}

fn entry<K: PartialEq + Clone, T>(
    list: &mut Vec<(K, u64, Shared<T>)>,
    key: &K,
    tick: u64,
    cap: usize,
) -> Shared<T> {
    if let Some(e) = list.iter_mut().find(|e| e.0 == *key) {
        e.1 = tick;
        return e.2.clone();
    }
    if list.len() >= cap {
        if let Some(i) = (0..list.len()).min_by_key(|&i| list[i].1) {
            list.swap_remove(i);
        }
    }
    let s: Shared<T> = Arc::new(OnceLock::new());
    list.push((key.clone(), tick, s.clone()));
    s
}

/// Reads a store's camera images; `Send + Sync`, meant to be shared by reference across
/// threads.
pub struct ImageReader {
    root: PathBuf,
    /// `root` and how links under it are treated (the store's ingest mode).
    dataset: crate::store::paths::Root,
    block_bytes: u64,
    cache: Mutex<Cache>,
}

impl ImageReader {
    /// Images relative to `root_override`, or to the store's source root.
    pub fn new(store: &Store, root_override: Option<&Path>) -> Self {
        Self::with_root_links(
            root_override.map_or_else(|| absolute_source_root(store), Path::to_path_buf),
            crate::store::paths::Links::strict_if(store.meta().strict_links),
        )
    }

    /// Images relative to `root`, links under it followed.
    pub(crate) fn with_root(root: PathBuf) -> Self {
        Self::with_root_links(root, crate::store::paths::Links::Follow)
    }

    fn with_root_links(root: PathBuf, links: crate::store::paths::Links) -> Self {
        Self {
            dataset: crate::store::paths::Root::new(&root, links),
            root,
            block_bytes: BLOCK_BYTES,
            cache: Mutex::new(Cache::default()),
        }
    }

    /// Aims blocks at `bytes` instead of [`BLOCK_BYTES`] (the memory bound scales with it);
    /// tests use it to split small row groups.
    pub fn with_block_bytes(mut self, bytes: u64) -> Self {
        self.block_bytes = bytes.max(1);
        self
    }

    /// The folder `image_path`s are relative to.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether `cam`'s image is a row of a Waymo `camera_image` file rather than a file.
    pub(crate) fn is_parquet_row(cam: &CameraRow) -> bool {
        cam.image_path.to_ascii_lowercase().ends_with(".parquet")
    }

    /// The file holding `cam`'s image (for Waymo, the segment's `camera_image` file).
    pub(crate) fn source_path(&self, cam: &CameraRow) -> PathBuf {
        self.root.join(&cam.image_path)
    }

    /// A stable relative name for `cam`'s image with its format's extension, unique within
    /// the store: the image file's own relative path, or for a Waymo row
    /// `camera_image/<segment>/<timestamp>_<CAMERA>.jpg`.
    pub fn file_name(cam: &CameraRow) -> String {
        if !Self::is_parquet_row(cam) {
            // Outputs are named after this: a path that could lead out of an output folder
            // (a store written by another tool) gets a name from the image's id instead.
            if crate::store::paths::unsafe_relative(&cam.image_path).is_some() {
                return format!(
                    "images/{}.img",
                    crate::store::paths::safe_name(&cam.camera_frame_id)
                );
            }
            return cam.image_path.replace('\\', "/");
        }
        let parts: Vec<&str> = cam.camera_frame_id.rsplitn(3, '/').collect();
        match parts.as_slice() {
            [camera, ts, segment] => format!(
                "camera_image/{}/{}_{}.jpg",
                crate::store::paths::safe_name(segment),
                crate::store::paths::safe_name(ts),
                crate::store::paths::safe_name(camera)
            ),
            _ => format!(
                "camera_image/{}.jpg",
                crate::store::paths::safe_name(&cam.camera_frame_id)
            ),
        }
    }

    /// The encoded image (JPEG or PNG) as the source stores it.
    pub fn bytes(&self, cam: &CameraRow) -> Result<Vec<u8>> {
        if Self::is_parquet_row(cam) {
            return self.waymo_bytes(cam);
        }
        let path = self
            .dataset
            .inside(&cam.image_path)
            .map_err(|why| Error::input(self.source_path(cam), &cam.camera_frame_id, why))?;
        let bytes = crate::store::input::read(&path, crate::store::input::IMAGE).map_err(|e| {
            Error::input(
                &path,
                &cam.camera_frame_id,
                format!("cannot read the image: {}", e.report()),
            )
        })?;
        Ok(bytes)
    }

    /// The decoded image.
    pub fn rgb(&self, cam: &CameraRow) -> Result<RgbImage> {
        self.decode(cam, None)
    }

    /// The decoded image, which must have the size the store records (checked on the header,
    /// before decoding).
    pub fn rgb_checked(&self, cam: &CameraRow) -> Result<RgbImage> {
        self.decode(cam, Some((cam.width, cam.height)))
    }

    /// [`ImageReader::rgb_checked`], decoded once while it is among the last [`MAX_DECODED`]
    /// asked for; threads asking at once wait for one decode.
    pub fn rgb_shared(&self, cam: &CameraRow) -> Result<Arc<RgbImage>> {
        let key = (cam.image_path.clone(), cam.camera_frame_id.clone());
        let slot = {
            let mut c = self.lock();
            c.tick += 1;
            let tick = c.tick;
            entry(&mut c.decoded, &key, tick, MAX_DECODED)
        };
        let got = slot.get_or_init(|| {
            self.rgb_checked(cam)
                .map(Arc::new)
                .map_err(|e| e.to_string())
        });
        match got {
            Ok(img) => Ok(img.clone()),
            // Decoded again for the typed error, which names the file and record.
            Err(_) => self.rgb_checked(cam).map(Arc::new),
        }
    }

    fn decode(&self, cam: &CameraRow, expect: Option<(u32, u32)>) -> Result<RgbImage> {
        let bytes = self.bytes(cam)?;
        decode_checked(&bytes, expect)
            .map_err(|why| Error::input(self.source_path(cam), &cam.camera_frame_id, why))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        // A thread that panicked holding the lock left the lists consistent (every change is
        // a single push or remove), so the cache stays usable.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn index(&self, path: &Path) -> std::result::Result<Arc<SegmentIndex>, String> {
        let slot = {
            let mut c = self.lock();
            c.tick += 1;
            let tick = c.tick;
            entry(&mut c.indexes, &path.to_path_buf(), tick, MAX_INDEXES)
        };
        slot.get_or_init(|| build_index(path, self.block_bytes).map(Arc::new))
            .clone()
    }

    fn block(
        &self,
        path: &Path,
        index: &SegmentIndex,
        group: usize,
        block: usize,
    ) -> std::result::Result<ArrayRef, String> {
        let slot = {
            let mut c = self.lock();
            c.tick += 1;
            let tick = c.tick;
            entry(
                &mut c.blocks,
                &(path.to_path_buf(), group, block),
                tick,
                MAX_BLOCKS,
            )
        };
        slot.get_or_init(|| read_block(path, index, group, block))
            .clone()
    }

    fn waymo_bytes(&self, cam: &CameraRow) -> Result<Vec<u8>> {
        let path = self.source_path(cam);
        let err = |detail: String| Error::input(&path, &cam.camera_frame_id, detail);
        self.dataset.inside(&cam.image_path).map_err(err)?;
        let (ts, code) = parse_frame_id(&cam.camera_frame_id)
            .ok_or_else(|| err("camera_frame_id is not <segment>/<timestamp>/<camera>".into()))?;
        let index = self.index(&path).map_err(err)?;
        let &(group, row) = index.rows.get(&(ts, code)).ok_or_else(|| {
            err(format!(
                "no image row for timestamp {ts} and camera {}",
                CAMERA_NAMES[code as usize]
            ))
        })?;
        let per = index.block_rows[group].max(1);
        let array = self.block(&path, &index, group, row / per).map_err(err)?;
        let k = row % per;
        let value = match array.data_type() {
            DataType::Binary => array.as_binary::<i32>().value(k),
            DataType::LargeBinary => array.as_binary::<i64>().value(k),
            DataType::BinaryView => array.as_binary_view().value(k),
            dt => return Err(err(format!("`{IMG}.image` has type {dt}, expected binary"))),
        };
        if array.is_null(k) || value.is_empty() {
            return Err(err("the image is null or empty".into()));
        }
        Ok(value.to_vec())
    }
}

/// The most pixels an image may have before it is decoded, in pixels (see
/// [`crate::store::input::DEFAULT_MAX_MPIX`]).
pub(crate) fn max_pixels() -> u64 {
    crate::store::input::setting("image_mpix", crate::store::input::DEFAULT_MAX_MPIX)
        .saturating_mul(1_000_000)
}

/// Decodes an encoded image after reading its header: the size must be `expect` where the
/// caller knows it, and within [`max_pixels`], before a pixel buffer is allocated (a 20000×20000
/// JPEG would take 1.5 GiB per thread otherwise). The decoder's allocations are capped at that
/// size too, whatever the header claims.
pub(crate) fn decode_checked(
    bytes: &[u8],
    expect: Option<(u32, u32)>,
) -> std::result::Result<RgbImage, String> {
    if let Some(why) = truncated(bytes) {
        return Err(why);
    }
    let reader = || {
        image::ImageReader::new(std::io::Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|e| format!("cannot read the image: {e}"))
    };
    let (w, h) = reader()?
        .into_dimensions()
        .map_err(|e| format!("cannot read the image header: {e}"))?;
    if let Some((ew, eh)) =
        expect.filter(|&(ew, eh)| (ew, eh) != (w, h) && u64::from(ew) * u64::from(eh) != 0)
    {
        return Err(format!(
            "the image header says {w}×{h}, its camera row says {ew}×{eh}"
        ));
    }
    let pixels = u64::from(w) * u64::from(h);
    if pixels > max_pixels() {
        return Err(format!(
            "the image header says {w}×{h}, over the limit of {} pixels ({})",
            max_pixels(),
            crate::store::input::how_to_raise("image_mpix")
        ));
    }
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(w);
    limits.max_image_height = Some(h);
    limits.max_alloc = Some(pixels * 4 + (16 << 20));
    let mut r = reader()?;
    r.limits(limits);
    r.decode()
        .map(image::DynamicImage::into_rgb8)
        .map_err(|e| format!("cannot decode the image: {e}"))
}

/// Why `bytes` are not a whole JPEG or PNG file, if they are not: empty, or a JPEG without its
/// end-of-image marker or a PNG without its `IEND` chunk. The decoders fill a cut-off picture
/// in (grey below the cut) without an error, so a truncated file must be told by its end.
pub(crate) fn truncated(bytes: &[u8]) -> Option<String> {
    const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    const PNG_END: &[u8] = b"IEND\xaeB`\x82";
    if bytes.is_empty() {
        return Some("cannot decode the image: the file is empty".into());
    }
    if bytes.starts_with(&[0xFF, 0xD8]) {
        // Some encoders pad the file after the marker.
        let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        if !bytes[..end].ends_with(&[0xFF, 0xD9]) {
            return Some(format!(
                "cannot decode the image: the JPEG file is truncated ({} bytes, no end-of-image marker)",
                bytes.len()
            ));
        }
    } else if bytes.starts_with(PNG_SIGNATURE) && !bytes.ends_with(PNG_END) {
        return Some(format!(
            "cannot decode the image: the PNG file is truncated ({} bytes, no IEND chunk)",
            bytes.len()
        ));
    }
    None
}

/// `<segment>/<timestamp>/<camera>` → (timestamp, camera code).
fn parse_frame_id(id: &str) -> Option<(i64, u8)> {
    let mut parts = id.rsplitn(3, '/');
    let camera = parts.next()?;
    let ts = parts.next()?.parse().ok()?;
    parts.next()?;
    let code = CAMERA_NAMES.iter().position(|n| *n == camera)?;
    Some((ts, u8::try_from(code).ok()?))
}

fn build_index(path: &Path, block_bytes: u64) -> std::result::Result<SegmentIndex, String> {
    let file = crate::store::input::open(path)
        .map_err(|e| format!("cannot open the segment file: {}", e.report()))?;
    // The offset index, when the file has one, lets a block read seek straight to its pages.
    let opts = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
    let meta = ArrowReaderMetadata::load(&file, opts)
        .map_err(|e| format!("not a readable Parquet file: {e}"))?;
    let image_col = format!("{IMG}.image");
    let image_root = meta
        .schema()
        .index_of(&image_col)
        .map_err(|_| format!("missing column `{image_col}`"))?;
    let keys = Component::read(path, &[TS, CAM], &[], 8192).map_err(|e| e.report().to_string())?;
    let (ts, cams) = (
        keys.i64s_required(TS).map_err(|e| e.to_string())?,
        keys.cameras(CAM).map_err(|e| e.to_string())?,
    );
    let groups = meta.metadata().row_groups();
    let schema = meta.parquet_schema();
    let image_leaves: Vec<usize> = (0..schema.num_columns())
        .filter(|&l| schema.get_column_root_idx(l) == image_root)
        .collect();
    let mut rows = HashMap::with_capacity(ts.len());
    let (mut group_rows, mut block_rows) = (Vec::new(), Vec::new());
    let mut base = 0usize;
    for (g, rg) in groups.iter().enumerate() {
        let n = usize::try_from(rg.num_rows()).unwrap_or(0);
        let bytes: i64 = image_leaves
            .iter()
            .map(|&l| rg.column(l).uncompressed_size())
            .sum();
        let per_row = (u64::try_from(bytes).unwrap_or(0) / n.max(1) as u64).max(1);
        let per_block = usize::try_from(block_bytes / per_row)
            .unwrap_or(n)
            .clamp(1, n.max(1));
        group_rows.push(n);
        block_rows.push(per_block);
        for r in 0..n {
            let i = base + r;
            let (Some(&t), Some(&c)) = (ts.get(i), cams.get(i)) else {
                return Err(format!(
                    "the key columns hold {} rows, the row groups {}",
                    ts.len(),
                    base + n
                ));
            };
            rows.insert((t, c), (g, r));
        }
        base += n;
    }
    Ok(SegmentIndex {
        meta,
        image_root,
        rows,
        group_rows,
        block_rows,
    })
}

fn read_block(
    path: &Path,
    index: &SegmentIndex,
    group: usize,
    block: usize,
) -> std::result::Result<ArrayRef, String> {
    let per = index.block_rows[group];
    let start = block * per;
    let len = per.min(index.group_rows[group].saturating_sub(start));
    let file = crate::store::input::open(path)
        .map_err(|e| format!("cannot open the segment file: {}", e.report()))?;
    let mask = ProjectionMask::roots(index.meta.parquet_schema(), [index.image_root]);
    let mut selection = Vec::new();
    if start > 0 {
        selection.push(RowSelector::skip(start));
    }
    selection.push(RowSelector::select(len));
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, index.meta.clone())
        .with_row_groups(vec![group])
        .with_projection(mask)
        .with_row_selection(RowSelection::from(selection))
        .with_batch_size(len.max(1))
        .build()
        .map_err(|e| format!("cannot read row group {group}: {e}"))?;
    let mut parts = Vec::new();
    for b in reader {
        let b = b.map_err(|e| format!("cannot decode row group {group}: {e}"))?;
        parts.push(b.column(0).clone());
    }
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    let array = match refs.len() {
        1 => parts[0].clone(),
        _ => arrow::compute::concat(&refs).map_err(|e| e.to_string())?,
    };
    if array.len() != len {
        return Err(format!(
            "row group {group}: read {} image rows from {start}, expected {len}",
            array.len()
        ));
    }
    Ok(array)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_ids_parse_and_name_files() {
        assert_eq!(parse_frame_id("seg_1/1500/FRONT"), Some((1500, 1)));
        assert_eq!(parse_frame_id("a/b/c/1500/SIDE_RIGHT"), Some((1500, 5)));
        assert_eq!(parse_frame_id("1500/FRONT"), None);
        assert_eq!(parse_frame_id("s/x/FRONT"), None);
        assert_eq!(parse_frame_id("s/1/BACK"), None);
        let cam = CameraRow {
            image_path: "camera_image/seg_1.parquet".into(),
            camera_frame_id: "seg_1/1500/FRONT".into(),
            ..Default::default()
        };
        assert_eq!(
            ImageReader::file_name(&cam),
            "camera_image/seg_1/1500_FRONT.jpg"
        );
        let nus = CameraRow {
            image_path: "samples/CAM_FRONT/x.jpg".into(),
            ..Default::default()
        };
        assert_eq!(ImageReader::file_name(&nus), "samples/CAM_FRONT/x.jpg");
    }

    #[test]
    fn shared_decodes_are_decoded_once_and_errors_stay_typed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let img = RgbImage::from_fn(8, 4, |x, y| image::Rgb([x as u8 * 30, y as u8 * 60, 7]));
        img.save(dir.path().join("a.png"))
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("bad.png"), b"not a png").unwrap_or_else(|e| panic!("{e}"));
        let reader = ImageReader::with_root(dir.path().to_path_buf());
        let cam = |path: &str, id: &str| CameraRow {
            image_path: path.into(),
            camera_frame_id: id.into(),
            width: 8,
            height: 4,
            ..Default::default()
        };
        let a = cam("a.png", "a");
        let first = reader.rgb_shared(&a).unwrap_or_else(|e| panic!("{e}"));
        let again = reader.rgb_shared(&a).unwrap_or_else(|e| panic!("{e}"));
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(*first, img);
        // Pushed out by MAX_DECODED others, it is decoded afresh, to the same pixels.
        for k in 0..MAX_DECODED {
            reader
                .rgb_shared(&cam("a.png", &format!("other {k}")))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let fresh = reader.rgb_shared(&a).unwrap_or_else(|e| panic!("{e}"));
        assert!(!Arc::ptr_eq(&first, &fresh) && *fresh == img);
        // A broken image is an input error naming its file and record, every time.
        for _ in 0..2 {
            match reader.rgb_shared(&cam("bad.png", "b")) {
                Err(Error::Input { file, record, .. }) => {
                    assert!(
                        file.ends_with("bad.png") && record == "b",
                        "{file:?} {record}"
                    );
                }
                other => panic!("{:?}", other.map(|_| ())),
            }
        }
        // The size the store records is checked.
        let wrong = CameraRow {
            width: 9,
            ..cam("a.png", "w")
        };
        assert!(reader.rgb_shared(&wrong).is_err());
    }

    #[test]
    fn the_cache_evicts_the_least_recently_used() {
        let mut list: Vec<(u32, u64, Shared<u32>)> = Vec::new();
        for (t, k) in [1u32, 2, 3].into_iter().enumerate() {
            entry(&mut list, &k, t as u64, 3);
        }
        entry(&mut list, &1, 10, 3);
        entry(&mut list, &4, 11, 3);
        let mut keys: Vec<u32> = list.iter().map(|e| e.0).collect();
        keys.sort_unstable();
        assert_eq!(keys, vec![1, 3, 4]);
    }
}
