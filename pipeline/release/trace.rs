//! `drivegen trace`: one release row followed back to its source, as the row itself records
//! it: the dataset and its version, the scene (with the source's key of it), frame and clip,
//! each shown image's camera, frame token, sample, source file and the copy shown, the
//! corruption and seed that drew it, the rule with its parameters and evidence that decided the
//! answer, and the prompt with its key.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray};

use super::read::{listed_shards, qa_batches};
use crate::qa::record::letter;
use crate::qa::{self, QaRecord};
use crate::{Error, Result};

/// One row found by its id.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub split: String,
    pub shard: PathBuf,
    /// Row index within the shard.
    pub row: usize,
    pub record: QaRecord,
    /// The `path` of each shown image (the source dataset's file, or the stage's output).
    pub image_files: Vec<String>,
    /// The source dataset's file of each shown image (what a drawn image was drawn on).
    pub source_files: Vec<String>,
    /// The source's key of the frame of each shown image (nuScenes' sample token).
    pub source_frames: Vec<String>,
    /// The source's version and its key of the scene.
    pub source_version: String,
    pub source_scene: String,
    /// The setting the row is asked in (`clean`, `text_only`, a corruption) and the main
    /// split's row it repeats.
    pub setting: String,
    pub base_qa_id: String,
    /// The seed a robustness setting's corruption was drawn with.
    pub corruption_seed: Option<u64>,
}

/// Every row of the release with id `qa_id` (one per split that holds it), the QA columns
/// and the images' paths only read.
pub(crate) fn find(dir: &Path, qa_id: &str) -> Result<Vec<Found>> {
    let (_, shards) = listed_shards(dir, true)?;
    let mut out = Vec::new();
    for (split, files) in &shards {
        for f in files {
            scan(f, qa_id, split, &mut out)?;
        }
    }
    Ok(out)
}

fn scan(f: &Path, qa_id: &str, split: &str, out: &mut Vec<Found>) -> Result<()> {
    let mut base = 0usize;
    for batch in qa_batches(f, true)? {
        let batch = batch?;
        let records = super::read::checked(f, qa::from_batch(&batch)?)?;
        let images = batch
            .column_by_name("images")
            .and_then(|c| c.as_list_opt::<i32>());
        let mut sources = super::read::string_lists(&batch, "source_files");
        let mut frames = super::read::string_lists(&batch, "source_frame_ids");
        let version = super::read::strings(&batch, "source_version");
        let scene = super::read::strings(&batch, "source_scene_id");
        let setting = super::read::strings(&batch, "setting");
        let base_ids = super::read::strings(&batch, "base_qa_id");
        let cseed = batch
            .column_by_name("corruption_seed")
            .and_then(|c| c.as_primitive_opt::<arrow::datatypes::UInt64Type>());
        for (i, record) in records.into_iter().enumerate() {
            if record.qa_id != qa_id {
                continue;
            }
            let image_files = images
                .map(|l| l.value(i))
                .and_then(|v| {
                    v.as_struct_opt()?
                        .column_by_name("path")
                        .map(super::read::texts)
                })
                .unwrap_or_default();
            out.push(Found {
                split: split.to_string(),
                shard: f.to_path_buf(),
                row: base + i,
                record,
                image_files,
                source_files: sources.get_mut(i).map(std::mem::take).unwrap_or_default(),
                source_frames: frames.get_mut(i).map(std::mem::take).unwrap_or_default(),
                source_version: version.get(i).cloned().unwrap_or_default(),
                source_scene: scene.get(i).cloned().unwrap_or_default(),
                setting: setting.get(i).cloned().unwrap_or_default(),
                base_qa_id: base_ids.get(i).cloned().unwrap_or_default(),
                corruption_seed: cseed.filter(|c| !c.is_null(i)).map(|c| c.value(i)),
            });
        }
        base += batch.num_rows();
    }
    Ok(())
}

/// JSON text indented for reading; other text as it is.
fn pretty(s: &str) -> String {
    serde_json::from_str::<serde_json::Value>(s)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| s.to_string())
}

fn indented(s: &str) -> String {
    s.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The chain of one found row, from source to answer.
pub(crate) fn render(dir: &Path, found: &Found) -> Result<String> {
    let mpath = dir.join("manifest.json");
    let text = crate::store::input::read_to_string(&mpath, crate::store::input::METADATA)?;
    let m: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::json(&mpath, e))?;
    let r = &found.record;
    let mut s = String::new();
    let shard = found
        .shard
        .strip_prefix(dir)
        .unwrap_or(&found.shard)
        .display();
    // Writing to a String cannot fail.
    let _ = writeln!(s, "{} ({}/{})", r.qa_id, r.family, r.question_type);
    let _ = writeln!(
        s,
        "release   split {}, {shard} row {}",
        found.split, found.row
    );
    if !found.setting.is_empty() {
        let mut line = format!("setting   {}", found.setting);
        if !found.base_qa_id.is_empty() && found.base_qa_id != r.qa_id {
            let main = m["split"].as_str().unwrap_or("the main split");
            let _ = write!(line, ", asks again {} of split {main}", found.base_qa_id);
        }
        let _ = writeln!(s, "{line}");
    }
    let _ = writeln!(
        s,
        "source    {} {}, built by {} {}",
        r.source,
        found.source_version,
        m["tool"].as_str().unwrap_or("drivegen"),
        m["tool_version"].as_str().unwrap_or("?"),
    );
    let mut at = format!("scene {}", r.scene_id);
    if !found.source_scene.is_empty() && found.source_scene != r.scene_id {
        let _ = write!(at, " (the source's {})", found.source_scene);
    }
    if let Some(f) = r.frame_idx {
        let _ = write!(at, ", keyframe {f}");
    }
    if let Some(c) = &r.clip_id {
        let _ = write!(at, ", clip {c}");
    }
    let _ = writeln!(s, "where     {at}");
    for (k, cam) in r.cameras.iter().enumerate() {
        let token = r.camera_frame_ids.get(k).map(String::as_str).unwrap_or("");
        let file = found.image_files.get(k).map(String::as_str).unwrap_or("");
        let source = found.source_files.get(k).map(String::as_str).unwrap_or("");
        let sample = found.source_frames.get(k).map(String::as_str).unwrap_or("");
        // The frame token is the source dataset's key of the camera image (nuScenes'
        // sample_data token, Waymo's and CARLA's frame keys); the source file is where that
        // image is in the dataset, and the shown file the image as the release stores it (the
        // dataset's own file, or a stage's corrupted or marked copy drawn on it).
        let _ = write!(
            s,
            "image {k:<3} {cam} frame {token} of sample {sample}: source {source}"
        );
        if file != source {
            let _ = write!(s, ", shown as {file}");
        }
        s.push('\n');
    }
    if let Some(c) = &r.corruption {
        let _ = writeln!(
            s,
            "corrupt   {c} at severity {}, seed {}",
            r.severity.map(|v| v.to_string()).unwrap_or("?".into()),
            found.corruption_seed.unwrap_or(r.seed)
        );
        if found.corruption_seed.is_some_and(|k| k != r.seed) {
            let _ = writeln!(s, "seed      {} (options and labels)", r.seed);
        }
    } else {
        let _ = writeln!(s, "seed      {}", r.seed);
    }
    if !r.objects.is_empty() {
        let _ = writeln!(s, "objects   {}", r.objects.join(", "));
    }
    if !r.marks.is_empty() && r.marks != "{}" {
        let _ = writeln!(s, "marks\n{}", indented(&pretty(&r.marks)));
    }
    let _ = writeln!(s, "rule      {}", r.rule);
    let _ = writeln!(s, "params\n{}", indented(&pretty(&r.params)));
    let _ = writeln!(s, "evidence\n{}", indented(&pretty(&r.evidence)));
    let _ = writeln!(s, "prompt\n{}", indented(&r.question()));
    for (i, c) in r.choices.iter().enumerate() {
        let key = if i == usize::from(r.answer_index) {
            "  <- key"
        } else {
            ""
        };
        let _ = writeln!(s, "option    {}. {c}{key}", letter(i).unwrap_or_default());
    }
    let _ = writeln!(s, "answer    {} = {}", r.answer_letter, r.answer);
    Ok(s)
}
