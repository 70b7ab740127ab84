//! Waymo Open Dataset v2 ingest: the Parquet component tables → the canonical scene store.
//!
//! `ROOT/<component>/<segment>.parquet`, one file per segment per component
//! (`docs/formats.md` §2). Segments are the files of `vehicle_pose/`, read one at a
//! time, so memory holds one segment's rows (never its JPEGs: `camera_image`'s image column is
//! only streamed through to check it, and the store references the bytes by segment, frame
//! timestamp and camera, see [`image`]). Poses and boxes stay in the segment's own world frame.
//!
//! Required per segment: `vehicle_pose`, `camera_calibration`, `camera_image`, `lidar_box`;
//! `projected_lidar_box`, `camera_box`, `lidar_camera_synced_box` and `stats` are checked and
//! counted when present. A segment with a missing required file, a broken row (with the file
//! and row named) or inconsistent keys is rejected and logged; the others are ingested.

pub(crate) mod frames;
pub mod image;
pub(crate) mod segment;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::ingest::limits::Kind;
use crate::ingest::source::{Refusal, SceneIds, SceneSource};
use crate::ingest::sources::SourcesConfig;
use crate::ingest::IngestSummary;
use crate::store::paths::{Links, Root};
use crate::store::{SceneData, StoreMeta};
use crate::taxonomy::Taxonomy;
use crate::{Error, Result};

pub use segment::{read_projected_boxes, ProjectedBox};

/// The components a segment must have.
pub(crate) const REQUIRED: [&str; 4] = [
    "vehicle_pose",
    "camera_calibration",
    "camera_image",
    "lidar_box",
];

/// What to ingest and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The folder holding `vehicle_pose/`, `camera_image/`, … (one split).
    pub root: PathBuf,
    pub out: PathBuf,
    pub taxonomy: Taxonomy,
    pub config: SourcesConfig,
    /// Whether links under the root are followed out of it.
    pub links: Links,
}

/// What a Waymo ingest did, beyond the common summary.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub ingest: IngestSummary,
    pub camera_boxes: u64,
    pub projected_boxes: u64,
    pub synced_boxes: u64,
    /// Optional component → segments without it.
    pub missing_optional: BTreeMap<String, u64>,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.ingest)?;
        writeln!(
            f,
            "checked {} projected_lidar_box, {} camera_box and {} lidar_camera_synced_box rows",
            self.projected_boxes, self.camera_boxes, self.synced_boxes
        )?;
        for (c, n) in &self.missing_optional {
            writeln!(f, "{n} segments have no {c} file")?;
        }
        Ok(())
    }
}

/// The segments under `root`: the stems of `vehicle_pose/*.parquet`, sorted.
pub(crate) fn segments(root: &Path) -> Result<Vec<String>> {
    let dir = root.join("vehicle_pose");
    if !dir.is_dir() {
        return Err(Error::input(
            root,
            "layout",
            "no vehicle_pose/ folder: --root must be the folder holding the component folders \
             (e.g. …/validation)",
        ));
    }
    // A stem that is not UTF-8 stays in the list, escaped, and is rejected by the caller:
    // decoding it lossily could merge two segments.
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| Error::io(&dir, e))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .filter_map(|p| {
            p.file_stem()
                .map(|s| s.to_str().map_or_else(|| format!("{s:?}"), str::to_string))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// In strict-links mode, refuses a segment whose component files lead out of the dataset root
/// through a link.
fn components_inside(root: &Root, dir: &Path, seg: &str) -> Result<()> {
    const OPTIONAL: [&str; 4] = [
        "camera_box",
        "projected_lidar_box",
        "lidar_camera_synced_box",
        "stats",
    ];
    for c in REQUIRED.iter().chain(&OPTIONAL) {
        let p = crate::formats::waymo::component_path(dir, c, seg);
        if std::fs::symlink_metadata(&p).is_err() {
            continue;
        }
        let rel = format!("{c}/{seg}.parquet");
        root.inside(&rel)
            .map_err(|why| Error::input(&p, "file", why))?;
    }
    Ok(())
}

/// Ingests every segment under `opts.root` into a store at `opts.out`. Fails only when the
/// root cannot be listed or the store cannot be written; broken segments are rejected.
pub fn run(opts: &Options) -> Result<Summary> {
    let source = Source {
        opts,
        dataset: Root::new(&opts.root, opts.links),
    };
    let mut extra = Summary::default();
    let ingest = crate::ingest::ingest(&source, &opts.out, |summary, st| {
        for (k, v) in st.unknown_types {
            *summary.unknown_categories.entry(k).or_default() += v;
        }
        extra.camera_boxes += st.camera_boxes;
        extra.projected_boxes += st.projected_boxes;
        extra.synced_boxes += st.synced_boxes;
        for c in st.missing_optional {
            *extra.missing_optional.entry(c).or_default() += 1;
        }
    })?;
    Ok(Summary { ingest, ..extra })
}

/// A split folder; a unit is a segment (the stem of its `vehicle_pose` file).
struct Source<'a> {
    opts: &'a Options,
    dataset: Root,
}

impl SceneSource for Source<'_> {
    type Unit = String;
    type Stats = segment::SegmentStats;

    fn label(&self) -> &'static str {
        "ingest waymo segments"
    }

    fn root(&self) -> &Path {
        &self.opts.root
    }

    fn meta(&self) -> StoreMeta {
        StoreMeta::new("waymo", "v2", &self.opts.root.to_string_lossy()).with_links(self.opts.links)
    }

    fn units(&self) -> Result<Vec<String>> {
        segments(&self.opts.root)
    }

    fn admit(&self, seg: &String, _: &mut SceneIds) -> std::result::Result<String, Refusal> {
        let root = &self.opts.root;
        let not_utf8 = seg.starts_with('"')
            && !crate::formats::waymo::component_path(root, "vehicle_pose", seg).exists();
        if not_utf8 {
            let why = format!("the segment file name {seg} is not UTF-8; rename it");
            let e = Error::input(root.join("vehicle_pose"), seg.as_str(), why);
            return Err((seg.clone(), e));
        }
        let missing = REQUIRED
            .iter()
            .map(|c| crate::formats::waymo::component_path(root, c, seg))
            .find(|p| !p.is_file());
        if let Some(p) = missing {
            let why = format!("segment {seg} has no {} file", p.display());
            return Err((seg.clone(), Error::input(&p, "file", why)));
        }
        components_inside(&self.dataset, root, seg).map_err(|e| (seg.clone(), e))?;
        Ok(seg.clone())
    }

    fn assemble(&self, seg: &String, _id: &str) -> Result<(SceneData, segment::SegmentStats)> {
        let o = self.opts;
        segment::assemble(&o.root, seg, &o.taxonomy, &o.config.waymo)
    }

    fn limit_file(&self, seg: &String, _: Kind) -> PathBuf {
        self.opts.root.join(seg)
    }
}
