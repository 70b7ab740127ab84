//! Reading rows and their images ahead of the shard writer.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::shown::{ImageFinder, Shown};
use super::{robust, shards, ImageMode, Look, Options};
use crate::qa::QaRecord;
use crate::{Error, Result};

/// The rows about to be written and their images' bytes, read and drawn ahead on the CPU
/// pool a batch at a time, so that every core is busy while memory stays bounded by a row
/// group and one batch.
pub(super) struct Ahead<'f, 'a> {
    pub(super) finder: &'f ImageFinder<'a>,
    pub(super) opts: &'f Options,
    pub(super) look: Look<'f>,
    pub(super) queue: std::collections::VecDeque<(QaRecord, Vec<Shown<'a>>, shards::RowTag)>,
    pub(super) ready: std::collections::HashMap<PathBuf, Arc<Vec<u8>>>,
}

impl<'f, 'a> Ahead<'f, 'a> {
    pub(super) fn new(finder: &'f ImageFinder<'a>, opts: &'f Options, look: Look<'f>) -> Self {
        Self {
            finder,
            opts,
            look,
            queue: Default::default(),
            ready: Default::default(),
        }
    }

    /// The next row and its images, with the bytes of every image it shows ready.
    pub(super) fn next(
        &mut self,
        rows: &mut impl Iterator<Item = Result<QaRecord>>,
    ) -> Result<(QaRecord, Vec<Shown<'a>>, shards::RowTag)> {
        type Queued<'q> = (QaRecord, Vec<Shown<'q>>, shards::RowTag);
        let missing = |q: &Queued<'a>, ready: &std::collections::HashMap<_, _>| {
            q.1.iter().any(|im| !ready.contains_key(&im.key()))
        };
        let embed = self.opts.images == ImageMode::Embed;
        if self.queue.is_empty() || (embed && missing(&self.queue[0], &self.ready)) {
            self.fill(rows)?;
        }
        self.queue.pop_front().ok_or_else(|| Error::Refused {
            path: self.opts.out.clone(),
            why: "was not written: the QA tables changed while the release was written".into(),
        })
    }

    /// Reads rows ahead until a batch of new images is due (or a row group's worth of rows
    /// is queued) and produces their bytes in parallel.
    pub(super) fn fill(&mut self, rows: &mut impl Iterator<Item = Result<QaRecord>>) -> Result<()> {
        let batch = 2 * rayon::current_num_threads().max(1);
        let embed = self.opts.images == ImageMode::Embed;
        let ready = &self.ready;
        let mut due: std::collections::BTreeSet<PathBuf> = Default::default();
        let note = |shown: &[Shown<'a>], due: &mut std::collections::BTreeSet<PathBuf>| {
            due.extend(
                shown
                    .iter()
                    .map(Shown::key)
                    .filter(|k| !ready.contains_key(k)),
            );
        };
        for (_, shown, _) in &self.queue {
            note(shown, &mut due);
        }
        while self.queue.len() < self.opts.row_group_rows.max(1) && (!embed || due.len() < batch) {
            let Some(r) = rows.next() else { break };
            let r = r?;
            let shown = self.finder.images(&r)?;
            let (r, shown, tag) = match self.look {
                Look::Clean => {
                    let tag = shards::RowTag::of(crate::robustness::CLEAN, &r.qa_id);
                    (r, shown, tag)
                }
                Look::Black => {
                    let tag = shards::RowTag::of(crate::robustness::TEXT_ONLY, &r.qa_id);
                    (r, shown, tag)
                }
                Look::Corrupt(s) => robust::reask(self.finder, r, shown, s)?,
            };
            note(&shown, &mut due);
            self.queue.push_back((r, shown, tag));
        }
        if !embed {
            return Ok(());
        }
        // Each due image once, from the first queued row that shows it; a corrupted image
        // another family's rows drew in this split is taken as drawn.
        let mut jobs: Vec<&Shown<'a>> = self
            .queue
            .iter()
            .flat_map(|(_, shown, _)| shown.iter())
            .filter(|im| due.remove(&im.key()))
            .collect();
        {
            let mut shared = self.finder.shared.borrow_mut();
            jobs.retain(|im| match shared.take(im) {
                Some(bytes) => {
                    self.ready.insert(im.key(), bytes);
                    false
                }
                None => true,
            });
        }
        let (black, keep, gpu) = (
            matches!(self.look, Look::Black),
            self.opts.keep_images.as_deref(),
            self.opts.device.gpu(),
        );
        let made: Vec<Result<(PathBuf, Vec<u8>)>> = {
            use rayon::prelude::*;
            jobs.par_iter()
                .map(|im| Ok((im.key(), im.publish(black, keep, gpu)?)))
                .collect()
        };
        let mut shared = self.finder.shared.borrow_mut();
        for (m, im) in made.into_iter().zip(&jobs) {
            let (key, bytes) = m?;
            let bytes = Arc::new(bytes);
            shared.offer(im, &bytes);
            self.ready.insert(key, bytes);
        }
        Ok(())
    }

    /// The bytes of the image `key` (made by [`Ahead::next`]).
    pub(super) fn bytes(&self, key: &Path) -> Result<Arc<Vec<u8>>> {
        self.ready
            .get(key)
            .cloned()
            .ok_or_else(|| Error::Internal(format!("{} was not read ahead", key.display())))
    }

    /// Drops the bytes no queued row shows (at the end of a row group).
    pub(super) fn forget_unused(&mut self) {
        let used: std::collections::BTreeSet<PathBuf> = self
            .queue
            .iter()
            .flat_map(|(_, shown, _)| shown.iter().map(Shown::key))
            .collect();
        self.ready.retain(|k, _| used.contains(k));
    }
}
