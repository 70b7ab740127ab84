//! `drivegen view`: a static, self-contained HTML viewer of a release, opened from disk with no
//! server.
//!
//! `index.html` holds the page and its script; `index.js` the filter index (split, family,
//! type and answer letter of every row, as indices into value lists, and where the row is);
//! `rows/page-NNNNN.js` the rows themselves, [`ROWS_PER_PAGE`] at a time; `images/` each
//! distinct image once. Data files are scripts that call a function of the page rather than
//! JSON it fetches, because browsers refuse `fetch()` of local files; the page loads a rows file
//! only when a row of it is shown and images only as they scroll into view, so a release of
//! 100k rows opens as fast as a small one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::export::ImageDir;
use crate::release::read::{for_each_row_with_images, listed_shards};
use crate::store::atomic::write_atomic;
use crate::Result;

/// Rows per rows file.
pub(crate) const ROWS_PER_PAGE: usize = 100;

const PAGE: &str = include_str!("viewer.html");

/// What the viewer holds.
#[derive(Debug, Clone, Default)]
pub(crate) struct ViewSummary {
    pub out: PathBuf,
    pub rows: usize,
    pub pages: usize,
    pub images: usize,
}

impl std::fmt::Display for ViewSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "view: {} rows in {} rows files, {} images; open {}",
            self.rows,
            self.pages,
            self.images,
            self.out.join("index.html").display()
        )
    }
}

/// Values of one filter, numbered in order of first appearance and listed sorted.
#[derive(Default)]
struct Values(BTreeMap<String, usize>, Vec<String>);

impl Values {
    fn id(&mut self, v: &str) -> usize {
        if let Some(&i) = self.0.get(v) {
            return i;
        }
        let i = self.1.len();
        self.0.insert(v.to_string(), i);
        self.1.push(v.to_string());
        i
    }
}

/// Writes the viewer of `release` into `out`.
pub fn run(release: &Path, out: &Path) -> Result<ViewSummary> {
    crate::store::paths::disjoint(release, "the release", out, "the viewer")?;
    let (_, shards) = listed_shards(release, true)?;
    let owned = crate::store::owner::Owned::claim(out, "release viewer", "the viewer's files")?;
    let mut images = ImageDir::new(out);
    let [mut splits, mut families, mut types, mut answers] = Default::default();
    // Per row: split, family, type and answer (as value numbers), rows file, place in it;
    // compact, since the index holds every row of the release.
    let mut index: Vec<[usize; 6]> = Vec::new();
    let mut page = Vec::new();
    let mut pages = 0usize;
    let flush = |page: &mut Vec<serde_json::Value>, pages: &mut usize| -> Result<()> {
        let body = format!(
            "drivegenPage({}, {});\n",
            *pages,
            serde_json::Value::from(std::mem::take(page))
        );
        write_atomic(
            &out.join("rows").join(format!("page-{:05}.js", *pages)),
            body.as_bytes(),
        )?;
        *pages += 1;
        Ok(())
    };
    let pb = crate::progress::bar(
        shards.values().map(Vec::len).sum::<usize>() as u64,
        "view shards",
    );
    for (split, files) in &shards {
        for f in files {
            for_each_row_with_images(f, |r, _, shown| {
                let paths = shown
                    .iter()
                    .map(|img| images.put(img, &r.qa_id))
                    .collect::<Result<Vec<_>>>()?;
                index.push([
                    Values::id(&mut splits, split),
                    Values::id(&mut families, &r.family),
                    Values::id(&mut types, &r.question_type),
                    Values::id(&mut answers, &r.answer_letter),
                    pages,
                    page.len(),
                ]);
                page.push(json!({
                    "id": r.qa_id,
                    "split": split,
                    "family": r.family,
                    "type": r.question_type,
                    "images": paths,
                    "cameras": r.cameras,
                    "prompt": r.question(),
                    "choices": r.choices,
                    "key": r.answer_index,
                    "rule": r.rule,
                    "params": r.params,
                    "evidence": r.evidence,
                }));
                if page.len() == ROWS_PER_PAGE {
                    flush(&mut page, &mut pages)?;
                }
                Ok(())
            })?;
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    if !page.is_empty() {
        flush(&mut page, &mut pages)?;
    }
    // The filters list their values sorted; rows refer to them by first-appearance number, so
    // the numbers are remapped to sorted positions.
    let sorted = |v: &Values| -> (Vec<String>, Vec<usize>) {
        let mut names = v.1.clone();
        names.sort();
        let pos =
            v.1.iter()
                .map(|n| names.binary_search(n).unwrap_or(0))
                .collect();
        (names, pos)
    };
    let lists = [&splits, &families, &types, &answers].map(sorted);
    for r in &mut index {
        for (k, (_, pos)) in lists.iter().enumerate() {
            r[k] = pos.get(r[k]).copied().unwrap_or(0);
        }
    }
    let n = index.len();
    let ix = json!({
        "splits": lists[0].0,
        "families": lists[1].0,
        "types": lists[2].0,
        "answers": lists[3].0,
        "rows": index,
    });
    write_atomic(
        &out.join("index.js"),
        format!("drivegenIndex({ix});\n").as_bytes(),
    )?;
    write_atomic(&out.join("index.html"), PAGE.as_bytes())?;
    let summary = ViewSummary {
        out: out.to_path_buf(),
        rows: n,
        pages,
        images: images.count(),
    };
    owned.finish()?;
    Ok(summary)
}
