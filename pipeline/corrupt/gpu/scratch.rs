//! Buffers and bind groups kept from one submission to the next.
//!
//! Every corruption pass needs the same few buffers at the same sizes image after image, so
//! creating them (and their bind groups) per image costs more host time than the small
//! per-pixel kernels themselves on a fast GPU. [`Scratch`] hands out buffers by (use, size)
//! and takes them back once the submission that used them is queued: the queue runs
//! submissions in order, and `Queue::write_buffer` and `clear_buffer` are ordered with them, so
//! the next submission may refill a buffer that an earlier one is still reading. Within one
//! submission a buffer is handed out once, so no two images of a batch share one.

use std::collections::HashMap;

use crate::gpu::compute::{bind_group, Kernel};
use crate::gpu::{Gpu, KernelId};
use crate::Result;

/// Submissions a free buffer may go unused before it is dropped: sizes seen once (an odd
/// image among many of one size) do not stay on the device for the rest of the run.
const KEEP_SUBMISSIONS: u64 = 8;

/// Bind groups kept at most; past it the cache starts over (a group holds its buffers alive,
/// so the cache must not outgrow the pool it describes).
const MAX_GROUPS: usize = 4096;

/// What a buffer is for, which fixes its usage flags and how it is made ready for reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Use {
    /// Uniform parameters, written from the host before each use.
    Uniform,
    /// A storage array written from the host before each use (pixels, taps, tables).
    Input,
    /// A storage array the kernels write; cleared before each reuse, since some kernels only
    /// add to it or write part of it and a fresh buffer is zeroed.
    Work,
}

impl Use {
    fn usage(self) -> wgpu::BufferUsages {
        use wgpu::BufferUsages as U;
        match self {
            Use::Uniform => U::UNIFORM | U::COPY_DST,
            Use::Input => U::STORAGE | U::COPY_SRC | U::COPY_DST,
            Use::Work => U::STORAGE | U::COPY_SRC | U::COPY_DST,
        }
    }
}

/// A buffer taken from a [`Scratch`] for the submission being recorded.
pub(crate) struct Taken {
    pub(crate) buffer: wgpu::Buffer,
    /// Whether an earlier submission used it (a new buffer is already zeroed).
    pub(crate) reused: bool,
}

/// The pool of buffers and bind groups of one runner (see the module docs).
#[derive(Default)]
pub(crate) struct Scratch {
    /// Free buffers by (use, bytes), each with the submission that last returned it.
    free: HashMap<(Use, u64), Vec<(wgpu::Buffer, u64)>>,
    /// Buffers handed out for the submission being recorded.
    taken: Vec<((Use, u64), wgpu::Buffer)>,
    groups: HashMap<(KernelId, Vec<wgpu::Buffer>), wgpu::BindGroup>,
    /// Submissions queued so far.
    submissions: u64,
    /// Buffers created, and buffers handed out, for tests and the benchmark's note.
    created: u64,
    handed_out: u64,
}

impl Scratch {
    /// A buffer of `bytes` bytes for `usage`, free until [`Scratch::submitted`].
    pub(crate) fn take(&mut self, gpu: &Gpu, label: &str, usage: Use, bytes: u64) -> Result<Taken> {
        let key = (usage, bytes);
        let (buffer, reused) = match self.free.get_mut(&key).and_then(Vec::pop) {
            Some((b, _)) => (b, true),
            None => {
                self.created += 1;
                (gpu.reusable_buffer(label, bytes, usage.usage())?, false)
            }
        };
        self.handed_out += 1;
        self.taken.push((key, buffer.clone()));
        Ok(Taken { buffer, reused })
    }

    /// The bind group of `bindings` for kernel `id`, made once per set of buffers.
    pub(crate) fn bind_group(
        &mut self,
        gpu: &Gpu,
        id: KernelId,
        k: &Kernel,
        bindings: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        let key = (
            id,
            bindings.iter().map(|b| (*b).clone()).collect::<Vec<_>>(),
        );
        if let Some(g) = self.groups.get(&key) {
            return g.clone();
        }
        if self.groups.len() >= MAX_GROUPS {
            self.groups.clear();
        }
        let g = bind_group(gpu.device(), k, id.name(), bindings);
        self.groups.insert(key, g.clone());
        g
    }

    /// The submission that used the taken buffers is queued: they are free for the next one.
    /// Buffers unused for [`KEEP_SUBMISSIONS`] submissions are dropped, and with them the
    /// bind groups that name them.
    pub(crate) fn submitted(&mut self) {
        self.submissions += 1;
        let now = self.submissions;
        for (key, b) in self.taken.drain(..) {
            self.free.entry(key).or_default().push((b, now));
        }
        let mut dropped = false;
        for list in self.free.values_mut() {
            let before = list.len();
            list.retain(|(_, last)| now - last < KEEP_SUBMISSIONS);
            dropped |= list.len() != before;
        }
        self.free.retain(|_, list| !list.is_empty());
        if dropped {
            self.groups.clear();
        }
    }

    /// A failed recording: its buffers go back unused (the error ends the run's use of the
    /// device anyway, but the pool stays consistent).
    pub(crate) fn abandon(&mut self) {
        let now = self.submissions;
        for (key, b) in self.taken.drain(..) {
            self.free.entry(key).or_default().push((b, now));
        }
    }

    /// Buffers created so far.
    pub(crate) fn created(&self) -> u64 {
        self.created
    }

    /// Buffers handed out so far: what would have been created without the pool.
    pub(crate) fn handed_out(&self) -> u64 {
        self.handed_out
    }
}
