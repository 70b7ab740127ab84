//! Reading a release back as its users get it: the shards `manifest.json` lists, checked
//! against their sha256, and the QA columns of each (images are most of the bytes and are not
//! read). `score`, `audit` and `validate` all read releases through here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray};
use parquet::arrow::ProjectionMask;

use super::bounded::Bounded;

use crate::qa::{self, QaRecord};
use crate::{Error, Result};

/// A release's questions, split by split.
#[derive(Debug, Clone, Default)]
pub struct ReleaseQuestions {
    /// The split the release was built for (the manifest's `split`); its text-only control,
    /// when there is one, is a split of its own.
    pub main: String,
    pub splits: BTreeMap<String, Vec<QaRecord>>,
    /// Per split, aligned with its rows: the setting each row is asked in and the main split's
    /// row it repeats (the shards' `setting` and `base_qa_id`; a row of a release written
    /// before those columns existed repeats itself).
    pub tags: BTreeMap<String, Vec<RowSetting>>,
    /// The robustness splits the manifest describes, in its order.
    pub settings: Vec<SplitSetting>,
    /// The text-only control split, when the release has one.
    pub text_only: Option<String>,
}

/// A robustness split as `manifest.json` describes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SplitSetting {
    pub split: String,
    pub setting: String,
    pub corruption: String,
    pub severity: u8,
    /// Camera Crash and Frame Lost: views blacked out, reported apart.
    pub blackout: bool,
}

/// The robustness splits and the text-only control split `manifest.json` names.
pub(crate) fn manifest_settings(dir: &Path) -> Result<(Vec<SplitSetting>, Option<String>)> {
    let mpath = dir.join("manifest.json");
    let text = crate::store::input::read_to_string(&mpath, crate::store::input::METADATA)?;
    let m: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::json(&mpath, e))?;
    let main = m["split"].as_str().unwrap_or_default();
    let control = super::control_split(main);
    let text_only = super::manifest_splits(&m)
        .contains(&control)
        .then_some(control);
    let r = &m["robustness"];
    if r.is_null() {
        return Ok((Vec::new(), text_only));
    }
    let settings: Vec<SplitSetting> = serde_json::from_value(r["settings"].clone())
        .map_err(|e| Error::input(&mpath, "robustness.settings", e.to_string()))?;
    Ok((settings, text_only))
}

/// The setting of a published row (see [`ReleaseQuestions::tags`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowSetting {
    pub setting: String,
    pub base_qa_id: String,
}

/// The shards `manifest.json` lists, by split, each checked against its sha256 (unless
/// `verify` is false); a Parquet file in `data/` that the manifest does not list is refused,
/// since readers of `data/*.parquet` would take it in.
pub fn listed_shards(dir: &Path, verify: bool) -> Result<(String, BTreeMap<String, Vec<PathBuf>>)> {
    let mpath = dir.join("manifest.json");
    let text = crate::store::input::read_to_string(&mpath, crate::store::input::METADATA)?;
    let m: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::json(&mpath, e))?;
    let bad = |record: &str, detail: String| Error::Input {
        file: mpath.clone(),
        record: record.to_string(),
        detail,
    };
    let main = m["split"]
        .as_str()
        .ok_or_else(|| bad("split", "no `split`".into()))?
        .to_string();
    let mut splits = super::manifest_splits(&m);
    if splits.is_empty() {
        splits.push(main.clone());
    }
    let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    let mut listed = std::collections::BTreeSet::new();
    for s in m["shards"].as_array().into_iter().flatten() {
        let path = s["path"]
            .as_str()
            .ok_or_else(|| bad("shards", format!("a shard without a path: {s}")))?;
        let split = super::shard_split(path, &splits).ok_or_else(|| {
            bad(
                "shards",
                format!("{path} is not a shard under data/ of a split of {splits:?}"),
            )
        })?;
        let name = &path["data/".len()..];
        crate::store::paths::component("manifest.json shards", name)?;
        let file = dir.join(path);
        shard_file(dir, &file)?;
        if verify {
            let want = s["sha256"].as_str().unwrap_or_default();
            let have = super::sha256_file(&file)?;
            if have != want {
                return Err(Error::Input {
                    file: file.clone(),
                    record: "sha256".into(),
                    detail: format!(
                        "the shard's sha256 is {have}, manifest.json says {want}: the release \
                         was changed after it was written (--no-verify reads it anyway)"
                    ),
                });
            }
        }
        listed.insert(name.to_string());
        out.entry(split.clone()).or_default().push(file);
    }
    let data = dir.join("data");
    for e in std::fs::read_dir(&data)
        .map_err(|e| Error::io(&data, e))?
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".parquet") && !listed.contains(&name) && verify {
            return Err(Error::Input {
                file: e.path(),
                record: "data/".into(),
                detail: "a shard that manifest.json does not list (--no-verify ignores it)".into(),
            });
        }
    }
    if out.is_empty() {
        return Err(bad("shards", "no shards".into()));
    }
    Ok((main, out))
}

/// Refuses a shard that is not a regular file inside the release: a link leading out of it
/// (or a folder, a FIFO) would make every reader take rows from elsewhere.
pub(crate) fn shard_file(dir: &Path, file: &Path) -> Result<()> {
    let refused = |why: String| Error::Input {
        file: file.to_path_buf(),
        record: "shard".into(),
        detail: why,
    };
    let real = file.canonicalize().map_err(|e| Error::io(file, e))?;
    let root = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
    if !real.starts_with(&root) {
        return Err(refused(format!(
            "leads out of the release to {}; a release's shards are files inside it",
            real.display()
        )));
    }
    crate::store::input::regular(file)?;
    Ok(())
}

/// `records` of shard `f`, each checked for what a reader relies on ([`qa::row_problem`]): a
/// row that breaks it is refused with the shard and its `qa_id` named.
pub(crate) fn checked(f: &Path, records: Vec<QaRecord>) -> Result<Vec<QaRecord>> {
    for r in &records {
        if let Some(why) = qa::row_problem(r) {
            return Err(Error::Input {
                file: f.to_path_buf(),
                record: format!("qa_id {}", r.qa_id),
                detail: format!(
                    "{why}: the release was edited or damaged (`drivegen validate` lists every \
                     such row)"
                ),
            });
        }
    }
    Ok(records)
}

/// The release's questions, split by split (see [`listed_shards`]).
pub fn read_release_splits(dir: &Path, verify: bool) -> Result<ReleaseQuestions> {
    let (main, shards) = listed_shards(dir, verify)?;
    let mut splits = BTreeMap::new();
    let mut tags = BTreeMap::new();
    for (split, files) in shards {
        let mut rows = Vec::new();
        let mut settings = Vec::new();
        for f in files {
            for batch in qa_batches(&f, false)? {
                let batch = batch?;
                let records = checked(&f, qa::from_batch(&batch)?)?;
                let fallback = if split == main { "clean" } else { "" };
                settings.extend(row_settings(&batch, &records, fallback));
                rows.extend(records);
            }
        }
        splits.insert(split.clone(), rows);
        tags.insert(split, settings);
    }
    let (settings, text_only) = manifest_settings(dir)?;
    Ok(ReleaseQuestions {
        main,
        splits,
        tags,
        settings,
        text_only,
    })
}

/// The most options any row of the release offers, read a batch at a time (memory stays flat
/// however many rows there are).
pub(crate) fn max_choices(dir: &Path) -> Result<usize> {
    let (_, shards) = listed_shards(dir, false)?;
    let mut most = 0;
    for f in shards.values().flatten() {
        for_each_batch(f, |batch| {
            most = batch.iter().map(|r| r.choices.len()).fold(most, usize::max);
        })?;
    }
    Ok(most)
}

/// The questions of the release's main split.
pub fn read_release(dir: &Path) -> Result<Vec<QaRecord>> {
    let mut r = read_release_splits(dir, true)?;
    Ok(r.splits.remove(&r.main).unwrap_or_default())
}

/// The blind audit of the release's main split: only the main split's shards are read, and
/// each batch's records go into the audit's compact rows and are dropped as they are read, so
/// memory follows the rows' count, not their text.
pub(crate) fn audit_main(dir: &Path) -> Result<crate::audit::Audit> {
    let (main, shards) = listed_shards(dir, true)?;
    let mut c = crate::audit::Collector::for_audit();
    for f in shards.get(&main).into_iter().flatten() {
        for_each_batch(f, |batch| batch.iter().for_each(|r| c.add(r)))?;
    }
    Ok(c.finish())
}

/// Reads shard `f` a batch at a time, passing each row's record and setting to `each` (the
/// shard's QA columns only; memory holds one batch). `main` says whether the shard is of the
/// main split: a row of a release written before the setting columns existed is then clean.
pub(crate) fn for_each_row(
    f: &Path,
    main: bool,
    mut each: impl FnMut(&QaRecord, &RowSetting) -> Result<()>,
) -> Result<()> {
    for batch in qa_batches(f, false)? {
        let batch = batch?;
        let records = checked(f, qa::from_batch(&batch)?)?;
        let tags = row_settings(&batch, &records, if main { "clean" } else { "" });
        for (r, t) in records.iter().zip(&tags) {
            each(r, t)?;
        }
    }
    Ok(())
}

/// Reads only the `qa_id` column of shard `f`, passing each id to `each`.
pub(crate) fn for_each_id(f: &Path, mut each: impl FnMut(&str)) -> Result<()> {
    for_each_string(f, "qa_id", |id| each(id.unwrap_or_default()))
}

/// Reads only the string column `name` of shard `f`, passing each value (None where null) to
/// `each`.
pub(crate) fn for_each_string(
    f: &Path,
    name: &str,
    mut each: impl FnMut(Option<&str>),
) -> Result<()> {
    let reader = super::bounded::open(
        f,
        |schema| {
            let keep = (0..schema.num_columns()).filter(|&i| {
                schema.column(i).path().parts().first().map(String::as_str) == Some(name)
            });
            ProjectionMask::leaves(schema, keep)
        },
        1024,
    )?;
    for batch in reader {
        let batch = batch?;
        let values = batch
            .column_by_name(name)
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| Error::Input {
                file: f.to_path_buf(),
                record: format!("column {name}"),
                detail: "missing: the file is not a drivegen release shard".into(),
            })?;
        for i in 0..values.len() {
            each(values.is_valid(i).then(|| values.value(i)));
        }
    }
    Ok(())
}

/// Rows per batch when images are read.
const IMAGE_BATCH_ROWS: usize = 16;

/// One image a row shows, as the release stores it: the encoded bytes (`None` in a release
/// built with `--images paths`) and the path it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShownImage {
    pub bytes: Option<Vec<u8>>,
    pub path: String,
    /// The source dataset's file it is or was drawn on (the row's `source_files`).
    pub source_file: String,
}

/// Reads shard `f` a row group's batch at a time, passing each row's record, its setting and
/// its images (in `cameras` order) to `each`; an error from `each` stops the reading and is returned.
pub(crate) fn for_each_row_with_images(
    f: &Path,
    mut each: impl FnMut(QaRecord, RowSetting, Vec<ShownImage>) -> Result<()>,
) -> Result<()> {
    let bad = |e: &dyn std::fmt::Display| Error::Input {
        file: f.to_path_buf(),
        record: "images".into(),
        detail: e.to_string(),
    };
    // A batch holds every row's images decoded (the questions of a clip repeat its images, each
    // a copy): a few rows at a time keep memory flat however many images rows show.
    let reader = super::bounded::open(f, |_| ProjectionMask::all(), IMAGE_BATCH_ROWS)?;
    for batch in reader {
        let batch = batch?;
        let records = checked(f, qa::from_batch(&batch)?)?;
        let images = batch
            .column_by_name("images")
            .and_then(|c| c.as_list_opt::<i32>())
            .ok_or_else(|| bad(&"no column `images` of lists"))?;
        let sources = string_lists(&batch, "source_files");
        let mut tags = row_settings(&batch, &records, "").into_iter();
        for (i, record) in records.into_iter().enumerate() {
            let files = sources.get(i).cloned().unwrap_or_default();
            let shown = images.value(i);
            let st = shown
                .as_struct_opt()
                .ok_or_else(|| bad(&"`images` is not a list of structs"))?;
            let bytes = st
                .column_by_name("bytes")
                .and_then(|c| c.as_binary_opt::<i32>())
                .ok_or_else(|| bad(&"`images` has no binary `bytes` field"))?;
            let paths = st
                .column_by_name("path")
                .and_then(|c| c.as_string_opt::<i32>())
                .ok_or_else(|| bad(&"`images` has no string `path` field"))?;
            let row = (0..st.len())
                .map(|k| ShownImage {
                    bytes: (!bytes.is_null(k)).then(|| bytes.value(k).to_vec()),
                    path: if paths.is_null(k) {
                        String::new()
                    } else {
                        paths.value(k).to_string()
                    },
                    source_file: files.get(k).cloned().unwrap_or_default(),
                })
                .collect();
            each(record, tags.next().unwrap_or_default(), row)?;
        }
    }
    Ok(())
}

/// Each row's list of strings in column `name` (none when the batch lacks it: a release
/// written before the column existed, or a projection without it).
pub(crate) fn string_lists(batch: &arrow::array::RecordBatch, name: &str) -> Vec<Vec<String>> {
    let Some(list) = batch
        .column_by_name(name)
        .and_then(|c| c.as_list_opt::<i32>())
    else {
        return Vec::new();
    };
    (0..list.len()).map(|i| list_strings(list, i)).collect()
}

/// Row `i` of a list-of-strings column (empty when the items are not strings).
pub(crate) fn list_strings(l: &arrow::array::ListArray, i: usize) -> Vec<String> {
    texts(&l.value(i))
}

/// Each row's string in column `name` (none when the batch lacks it).
pub(crate) fn strings(batch: &arrow::array::RecordBatch, name: &str) -> Vec<String> {
    batch.column_by_name(name).map(texts).unwrap_or_default()
}

/// The values of a string array, a null as an empty string (none when `a` holds no strings).
pub(crate) fn texts(a: &arrow::array::ArrayRef) -> Vec<String> {
    a.as_string_opt::<i32>()
        .map(|s| {
            s.iter()
                .map(|x| x.unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Each row's setting and clean row (a release written before the columns existed: `fallback`
/// and the row itself).
fn row_settings(
    batch: &arrow::array::RecordBatch,
    records: &[QaRecord],
    fallback: &str,
) -> Vec<RowSetting> {
    let setting = strings(batch, "setting");
    let base = strings(batch, "base_qa_id");
    records
        .iter()
        .enumerate()
        .map(|(i, r)| RowSetting {
            setting: setting
                .get(i)
                .cloned()
                .unwrap_or_else(|| fallback.to_string()),
            base_qa_id: base
                .get(i)
                .filter(|b| !b.is_empty())
                .cloned()
                .unwrap_or_else(|| r.qa_id.clone()),
        })
        .collect()
}

/// A reader of shard `f`'s QA columns (images can be most of the bytes), with the images'
/// `path` field and the rows' `source_files` too when `image_paths`.
pub(crate) fn qa_batches(f: &Path, image_paths: bool) -> Result<Bounded> {
    let names: Vec<String> = qa::record::qa_fields()
        .iter()
        .map(|x| x.name().clone())
        .collect();
    let mut missing = None;
    let reader = super::bounded::open(
        f,
        |schema| {
            let keep: Vec<usize> = (0..schema.num_columns())
                .filter(|&i| {
                    let column = schema.column(i);
                    let parts = column.path().parts();
                    let first = parts.first().map(String::as_str);
                    first.is_some_and(|p| names.iter().any(|n| n == p) || ROW_SETTING.contains(&p))
                        || (image_paths
                            && first == Some("images")
                            && parts.last().is_some_and(|l| l == "path"))
                        || (image_paths && first.is_some_and(|p| p.starts_with("source_")))
                })
                .collect();
            missing = names
                .iter()
                .find(|n| {
                    !keep
                        .iter()
                        .any(|&i| schema.column(i).path().parts().first() == Some(*n))
                })
                .cloned();
            ProjectionMask::leaves(schema, keep)
        },
        1024,
    )?;
    if let Some(column) = missing {
        // A file of another schema would otherwise read as rows without questions, or none.
        return Err(Error::Input {
            file: f.to_path_buf(),
            record: format!("column {column}"),
            detail: "missing: the file is not a drivegen release shard (its QA columns are \
                     described in schemas/)"
                .into(),
        });
    }
    Ok(reader)
}

/// The columns that say which setting a row is asked in.
const ROW_SETTING: [&str; 3] = ["setting", "base_qa_id", "corruption_seed"];

/// A Parquet or Arrow error while reading shard `f`.
pub(crate) fn parquet_error(f: &Path, e: &dyn std::fmt::Display) -> Error {
    Error::Input {
        file: f.to_path_buf(),
        record: "parquet".into(),
        detail: e.to_string(),
    }
}

/// Reads shard `f` a record batch at a time, passing each batch's records to `each`.
fn for_each_batch(f: &Path, mut each: impl FnMut(Vec<QaRecord>)) -> Result<()> {
    for batch in qa_batches(f, false)? {
        each(checked(f, qa::from_batch(&batch?)?)?);
    }
    Ok(())
}
