//! QA tables on disk (Arrow IPC files of [`super::qa_schema`] rows, plus any columns a family
//! appends), read and written a record batch at a time, so that a table of any length passes
//! through balancing and the release with only a batch of it in memory.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::ipc::reader::FileReader;
use arrow::ipc::writer::FileWriter;

use super::QaRecord;
use crate::store::atomic::AtomicFile;
use crate::{Error, Result};

/// Rows per record batch a [`QaWriter`] writes: small enough that a reader holds little, large
/// enough that the per-batch overhead of IPC stays negligible.
pub(crate) const BATCH_ROWS: usize = 1024;

/// One QA table, opened for random access by batch.
pub(crate) struct QaFile {
    path: PathBuf,
    reader: FileReader<File>,
}

impl QaFile {
    pub fn open(path: &Path) -> Result<Self> {
        let file = crate::store::input::open(path)?;
        let reader = FileReader::try_new(file, None).map_err(|e| Error::Input {
            file: path.to_path_buf(),
            record: "file header".into(),
            detail: format!("not an Arrow IPC file: {e}"),
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            reader,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn num_batches(&self) -> usize {
        self.reader.num_batches()
    }

    /// The rows of batch `i`.
    pub fn batch(&mut self, i: usize) -> Result<Vec<QaRecord>> {
        let bad = |detail: String| Error::Input {
            file: self.path.clone(),
            record: format!("record batch {i}"),
            detail,
        };
        self.reader.set_index(i).map_err(|e| bad(e.to_string()))?;
        let b = self
            .reader
            .next()
            .ok_or_else(|| bad("missing".into()))?
            .map_err(|e| bad(e.to_string()))?;
        super::from_batch(&b).map_err(|e| bad(e.report().to_string()))
    }

    /// The number of rows (reads every batch, keeps none).
    #[cfg(test)]
    fn num_rows(&mut self) -> Result<usize> {
        let mut n = 0;
        for i in 0..self.num_batches() {
            n += self.batch(i)?.len();
        }
        Ok(n)
    }
}

/// Calls `f` with every batch of `files`, in order: `(file index, batch index, rows)`.
pub(crate) fn for_each_batch(
    files: &[PathBuf],
    mut f: impl FnMut(usize, usize, Vec<QaRecord>) -> Result<()>,
) -> Result<()> {
    for (fi, path) in files.iter().enumerate() {
        let mut file = QaFile::open(path)?;
        for bi in 0..file.num_batches() {
            f(fi, bi, file.batch(bi)?)?;
        }
    }
    Ok(())
}

/// The rows of `files`, in order, read a batch at a time; stops after the first error.
pub(crate) fn rows(files: &[PathBuf]) -> QaRows<'_> {
    QaRows {
        files,
        next_file: 0,
        file: None,
        next_batch: 0,
        buf: Vec::new().into_iter(),
        failed: false,
    }
}

/// See [`rows`].
pub(crate) struct QaRows<'a> {
    files: &'a [PathBuf],
    next_file: usize,
    file: Option<QaFile>,
    next_batch: usize,
    buf: std::vec::IntoIter<QaRecord>,
    failed: bool,
}

impl QaRows<'_> {
    /// The table the last row came from: what an error about that row names.
    pub(crate) fn current_file(&self) -> Option<&Path> {
        self.file.as_ref().map(QaFile::path)
    }

    /// (table, record batch) of the last row, as indices into `files` and the table's batches.
    pub fn position(&self) -> (usize, usize) {
        (
            self.next_file.saturating_sub(1),
            self.next_batch.saturating_sub(1),
        )
    }
}

/// The rows of the record batches `batches` ((table, batch) indices into `files`, in order),
/// read a batch at a time; stops after the first error.
pub(crate) fn rows_in<'a>(
    files: &'a [PathBuf],
    batches: impl IntoIterator<Item = (usize, usize)> + 'a,
) -> impl Iterator<Item = Result<QaRecord>> + 'a {
    let mut open: Option<(usize, QaFile)> = None;
    let mut failed = false;
    let mut read = move |f: usize, b: usize| -> Result<Vec<QaRecord>> {
        if open.as_ref().is_none_or(|(k, _)| *k != f) {
            let path = files.get(f).ok_or_else(|| {
                crate::Error::Internal(format!("no QA table {f} of {}", files.len()))
            })?;
            open = Some((f, QaFile::open(path)?));
        }
        match open.as_mut() {
            Some((_, file)) => file.batch(b),
            None => Ok(Vec::new()),
        }
    };
    batches
        .into_iter()
        .map_while(move |(f, b)| {
            (!failed).then(|| {
                let r = read(f, b);
                failed = r.is_err();
                r
            })
        })
        .flat_map(|r| {
            let (rows, err) = match r {
                Ok(v) => (v, None),
                Err(e) => (Vec::new(), Some(e)),
            };
            rows.into_iter().map(Ok).chain(err.map(Err))
        })
}

impl Iterator for QaRows<'_> {
    type Item = Result<QaRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.buf.next() {
                return Some(Ok(r));
            }
            if self.failed {
                return None;
            }
            let step = match &mut self.file {
                Some(f) if self.next_batch < f.num_batches() => {
                    self.next_batch += 1;
                    f.batch(self.next_batch - 1)
                        .map(|v| self.buf = v.into_iter())
                }
                _ => {
                    let path = self.files.get(self.next_file)?;
                    self.next_file += 1;
                    self.next_batch = 0;
                    QaFile::open(path).map(|f| self.file = Some(f))
                }
            };
            if let Err(e) = step {
                self.failed = true;
                return Some(Err(e));
            }
        }
    }
}

/// Every row of `files` in memory: for tables known to be small (one scene, tests).
pub fn read_all(files: &[PathBuf]) -> Result<Vec<QaRecord>> {
    let mut out = Vec::new();
    for_each_batch(files, |_, _, rows| {
        out.extend(rows);
        Ok(())
    })?;
    Ok(out)
}

/// Rows per (family, question type) of a QA table as it is written: what `-v` shows a stage
/// decided to ask. Counts only when info records are shown.
#[derive(Debug, Default)]
pub(crate) struct Tally(std::collections::BTreeMap<(String, String), usize>);

impl Tally {
    pub fn add<'r>(&mut self, rows: impl IntoIterator<Item = &'r QaRecord>) {
        if !log::log_enabled!(log::Level::Info) {
            return;
        }
        for r in rows {
            *self
                .0
                .entry((r.family.clone(), r.question_type.clone()))
                .or_default() += 1;
        }
    }

    /// Logs one line per type, naming the table.
    pub fn log(&self, table: &Path) {
        for ((family, qtype), n) in &self.0 {
            log::info!("{}: {n} {family} {qtype} questions", table.display());
        }
    }
}

/// Writes QA rows in batches of [`BATCH_ROWS`]; the file appears under its name only on
/// [`QaWriter::finish`].
pub struct QaWriter {
    w: FileWriter<AtomicFile>,
    path: std::path::PathBuf,
    pending: Vec<QaRecord>,
    rows: usize,
    types: Tally,
}

impl QaWriter {
    pub fn create(path: &Path) -> Result<Self> {
        Ok(Self {
            w: crate::store::atomic::ipc_writer(path, &super::qa_schema())?,
            path: path.to_path_buf(),
            pending: Vec::with_capacity(BATCH_ROWS),
            rows: 0,
            types: Default::default(),
        })
    }

    pub fn push(&mut self, r: QaRecord) -> Result<()> {
        self.types.add([&r]);
        self.pending.push(r);
        if self.pending.len() >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            self.w.write(&super::to_batch(&self.pending)?)?;
            self.rows += self.pending.len();
            self.pending.clear();
        }
        Ok(())
    }

    /// Commits the file; returns its row count.
    pub fn finish(mut self) -> Result<usize> {
        self.flush()?;
        self.types.log(&self.path);
        self.w.finish()?;
        self.w.into_inner()?.commit()?;
        Ok(self.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chosen_batches_yield_their_rows_in_order_and_stop_at_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let table = |name: &str, n: usize| {
            let p = dir.path().join(name);
            let mut w = QaWriter::create(&p).unwrap();
            for i in 0..n {
                w.push(QaRecord {
                    qa_id: format!("{name}-{i}"),
                    ..Default::default()
                })
                .unwrap();
            }
            w.finish().unwrap();
            p
        };
        // Two batches in the first table, one in the second.
        let files = [table("a", BATCH_ROWS + 2), table("b", 3)];
        let ids = |batches: Vec<(usize, usize)>| -> Vec<String> {
            rows_in(&files, batches)
                .map(|r| r.map(|r| r.qa_id))
                .collect::<Result<_>>()
                .unwrap()
        };
        assert_eq!(
            ids(vec![(0, 1), (1, 0)]),
            ["a-1024", "a-1025", "b-0", "b-1", "b-2"]
        );
        assert_eq!(ids(vec![(1, 0), (0, 1)]).len(), 5);
        let after_error: Vec<_> = rows_in(&files, vec![(0, 1), (2, 0), (1, 0)]).collect();
        assert_eq!(
            after_error.len(),
            3,
            "two rows, the error, nothing after it"
        );
        assert!(after_error[2].is_err());
    }

    #[test]
    fn an_empty_table_reads_as_no_rows() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("empty.arrow");
        assert_eq!(QaWriter::create(&p).unwrap().finish().unwrap(), 0);
        let mut f = QaFile::open(&p).unwrap();
        assert_eq!(f.num_batches(), 0);
        assert_eq!(f.num_rows().unwrap(), 0);
        assert_eq!(rows(&[p.clone(), p.clone()]).count(), 0);
        assert!(read_all(&[p]).unwrap().is_empty());
    }
}
