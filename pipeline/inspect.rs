//! Human-readable summaries of a scene store or an Arrow IPC file (`drivegen inspect`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::path::Path;

use arrow::ipc::reader::FileReader;

use crate::store::{schema::Table, Store};
use crate::{Error, Result};

/// Summarises `path`: a store folder or a `.arrow` file. `head` rows of each table are shown.
pub(crate) fn inspect(path: &Path, head: usize, scene: Option<&str>) -> Result<String> {
    if path.is_dir() {
        let store = Store::open(path)?;
        match scene {
            Some(id) => scene_detail(&store, id),
            None => store_summary(&store, head),
        }
    } else {
        arrow_file(path, head)
    }
}

fn store_summary(store: &Store, head: usize) -> Result<String> {
    let m = store.meta();
    let mut out = String::new();
    let _ = writeln!(out, "store {}", store.dir().display());
    let _ = writeln!(
        out,
        "  source {} {} (root {}), written by {} {}",
        m.source, m.source_version, m.source_root, m.tool, m.tool_version
    );
    let c = &m.counts;
    let _ = writeln!(
        out,
        "  {} scenes, {} frames, {} ego poses, {} camera images, {} objects; {} scenes rejected",
        c.scenes, c.frames, c.ego_poses, c.camera_images, c.objects, m.rejected_scenes
    );
    for t in Table::ALL {
        let r = store.reader(t)?;
        let fields: Vec<String> = r
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let _ = writeln!(out, "  {}: {}", t.file_name(), fields.join(", "));
        if head > 0 {
            let _ = writeln!(out, "{}", head_rows(r, head)?);
        }
    }
    let _ = writeln!(out, "  scenes:");
    for s in store.scenes()? {
        let s = s?;
        let dur = (s.scene.end_timestamp_us - s.scene.start_timestamp_us) as f64 * 1e-6;
        let _ = writeln!(
            out,
            "    {:<16} {:>4} frames {:>6} images {:>6} objects {:>6.1} s  {}",
            s.scene.scene_id,
            s.frames.len(),
            s.cameras.len(),
            s.objects.len(),
            dur,
            s.scene.location.as_deref().unwrap_or("")
        );
    }
    for r in store.rejects()? {
        let _ = writeln!(
            out,
            "  rejected {}: {}",
            r.scene_id.as_deref().unwrap_or("?"),
            r.reason
        );
    }
    Ok(out)
}

fn scene_detail(store: &Store, id: &str) -> Result<String> {
    for s in store.scenes()? {
        let s = s?;
        if s.scene.scene_id != id {
            continue;
        }
        let mut out = String::new();
        let _ = writeln!(
            out,
            "scene {} ({})",
            s.scene.scene_id, s.scene.source_scene_id
        );
        let _ = writeln!(out, "  {}", s.scene.description);
        let mut cams: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for c in &s.cameras {
            let e = cams.entry(&c.camera).or_default();
            e.0 += 1;
            e.1 += usize::from(c.is_keyframe);
        }
        for (cam, (n, k)) in cams {
            let _ = writeln!(out, "  {cam:<16} {n:>5} images ({k} keyframes)");
        }
        let mut classes: BTreeMap<&str, usize> = BTreeMap::new();
        let mut tracks = std::collections::BTreeSet::new();
        for o in &s.objects {
            *classes.entry(&o.class).or_default() += 1;
            tracks.insert(&o.track_id);
        }
        let _ = writeln!(
            out,
            "  {} boxes on {} tracks",
            s.objects.len(),
            tracks.len()
        );
        for (c, n) in classes {
            let _ = writeln!(out, "    {c:<22} {n:>6}");
        }
        if let (Some(a), Some(b)) = (s.frames.first(), s.frames.last()) {
            let d = ((b.ego.t[0] - a.ego.t[0]).powi(2) + (b.ego.t[1] - a.ego.t[1]).powi(2)).sqrt();
            let _ = writeln!(
                out,
                "  ego travels {d:.1} m (straight line) over {} keyframes",
                s.frames.len()
            );
        }
        return Ok(out);
    }
    Err(Error::not_found(store.dir(), format!("scene {id}")))
}

fn arrow_file(path: &Path, head: usize) -> Result<String> {
    let f = crate::store::input::open(path)?;
    let r = FileReader::try_new(f, None)
        .map_err(|e| Error::input(path, "header", format!("not an Arrow IPC file: {e}")))?;
    let schema = r.schema();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} record batches",
        path.display(),
        r.num_batches()
    );
    for fld in schema.fields() {
        let _ = writeln!(
            out,
            "  {:<24} {}{}",
            fld.name(),
            crate::store::schema::type_name(fld.data_type()),
            if fld.is_nullable() { "" } else { " not null" }
        );
    }
    let mut rows = 0usize;
    let f = crate::store::input::open(path)?;
    for b in FileReader::try_new(f, None)? {
        rows += b?.num_rows();
    }
    let _ = writeln!(out, "  {rows} rows");
    if head > 0 {
        let _ = writeln!(out, "{}", head_rows(r, head)?);
    }
    Ok(out)
}

fn head_rows(r: FileReader<File>, n: usize) -> Result<String> {
    let mut batches = Vec::new();
    let mut left = n;
    for b in r {
        let b = b?;
        let take = left.min(b.num_rows());
        batches.push(b.slice(0, take));
        left -= take;
        if left == 0 {
            break;
        }
    }
    Ok(arrow::util::pretty::pretty_format_batches(&batches)?.to_string())
}
