//! [`GpuRunner`]: views go into an open batch, a batch is one submission, and its results are
//! collected later with one wait, so the host can record batch k+1 while the device runs
//! batch k and the read-back of batch k waits for nothing else.

use image::RgbImage;
use rayon::prelude::*;

use super::record::{record_on, Recorder};
use super::scratch::Scratch;
use super::{pack, unpack};
use crate::corrupt::Plan;
use crate::gpu::{gpu_error, Gpu};
use crate::{Error, Result};

/// One view's pixels packed as the kernels read them ([`super::pack`]).
pub(crate) struct Packed {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u32>,
}

impl Packed {
    pub fn of(img: &RgbImage) -> Packed {
        Packed {
            width: img.width(),
            height: img.height(),
            pixels: pack(img),
        }
    }
}

/// What a batch gives back for one view.
enum Slot {
    /// Its plan leaves it as it is: the input itself.
    Unchanged(RgbImage),
    /// `w × h` words at `offset` bytes of the batch's read-back buffer.
    Read { offset: u64, w: u32, h: u32 },
}

/// The batch being recorded.
struct Open {
    enc: wgpu::CommandEncoder,
    slots: Vec<Slot>,
    /// Each view's output buffer and its offset in the read-back buffer.
    outputs: Vec<(wgpu::Buffer, u64)>,
    bytes: u64,
}

/// A submitted batch; [`GpuRunner::wait`] turns it into its images.
#[must_use = "a ticket holds its batch's results until waited for"]
pub(crate) struct Ticket {
    slots: Vec<Slot>,
    read: Option<InFlight>,
}

struct InFlight {
    staging: wgpu::Buffer,
    index: wgpu::SubmissionIndex,
    mapped: std::sync::mpsc::Receiver<std::result::Result<(), wgpu::BufferAsyncError>>,
}

/// Runs corruption plans on the GPU a batch at a time, keeping its buffers and bind groups
/// from batch to batch (`scratch.rs`). Not shared between threads: each thread that
/// feeds the device holds its own.
pub(crate) struct GpuRunner<'g> {
    gpu: &'g Gpu,
    scratch: Scratch,
    open: Option<Open>,
    /// Read-back buffers whose batches were collected, by size.
    staging: Vec<wgpu::Buffer>,
}

/// Read-back buffers kept for reuse: one per batch in flight, and one being filled.
const KEEP_STAGING: usize = 4;

impl<'g> GpuRunner<'g> {
    pub fn new(gpu: &'g Gpu) -> GpuRunner<'g> {
        GpuRunner {
            gpu,
            scratch: Scratch::default(),
            open: None,
            staging: Vec::new(),
        }
    }

    /// Views recorded into the open batch.
    pub fn open_len(&self) -> usize {
        self.open.as_ref().map_or(0, |o| o.slots.len())
    }

    /// Device buffers created so far.
    pub fn buffers_created(&self) -> u64 {
        self.scratch.created()
    }

    /// Device buffers the views used so far, reused ones included: what one image at a
    /// time would have created.
    pub fn buffers_used(&self) -> u64 {
        self.scratch.handed_out()
    }

    /// Adds `jobs` to the open batch, packing their pixels on the CPU pool.
    pub fn push_all(&mut self, jobs: &[(&RgbImage, &Plan)]) -> Result<()> {
        let packed: Vec<Option<Packed>> = jobs
            .par_iter()
            .map(|(img, plan)| (!matches!(plan, Plan::Unchanged)).then(|| Packed::of(img)))
            .collect();
        for ((img, plan), p) in jobs.iter().zip(packed) {
            match p {
                Some(p) => self.push_packed(&p, plan)?,
                None => self.push_unchanged((*img).clone()),
            }
        }
        Ok(())
    }

    /// Adds a view whose plan leaves it unchanged: it comes back as it is, in its place.
    pub fn push_unchanged(&mut self, img: RgbImage) {
        let open = self.open_batch();
        open.slots.push(Slot::Unchanged(img));
    }

    /// Records the passes of one view into the open batch (which it opens if need be).
    pub fn push_packed(&mut self, src: &Packed, plan: &Plan) -> Result<()> {
        if matches!(plan, Plan::Unchanged) {
            let img = unpack(src.width, src.height, &src.pixels)?;
            self.push_unchanged(img);
            return Ok(());
        }
        let gpu = self.gpu;
        let open = self.open.take().unwrap_or_else(|| new_open(gpu));
        let Open {
            enc,
            mut slots,
            mut outputs,
            bytes,
        } = open;
        let mut rec = Recorder {
            gpu,
            enc,
            scratch: &mut self.scratch,
        };
        let (w, h) = (src.width, src.height);
        let recorded = scoped(gpu, || {
            let input = rec.input("corrupt src", &src.pixels)?;
            record_on(&mut rec, (w, h), &input, plan)
        });
        let enc = rec.enc;
        let dst = match recorded {
            Ok(dst) => dst,
            Err(e) => {
                // The batch cannot be submitted without this view; its other views are lost
                // with it, and the caller stops on the error.
                self.scratch.abandon();
                return Err(e);
            }
        };
        let size = dst.size();
        slots.push(Slot::Read {
            offset: bytes,
            w,
            h,
        });
        outputs.push((dst, bytes));
        self.open = Some(Open {
            enc,
            slots,
            outputs,
            bytes: bytes + size,
        });
        Ok(())
    }

    fn open_batch(&mut self) -> &mut Open {
        let gpu = self.gpu;
        self.open.get_or_insert_with(|| new_open(gpu))
    }

    /// Submits the open batch (an empty one if none is open): its outputs are copied into one
    /// read-back buffer and mapped when the device gets there. Nothing here waits.
    pub fn submit(&mut self) -> Result<Ticket> {
        let Some(open) = self.open.take() else {
            return Ok(Ticket {
                slots: Vec::new(),
                read: None,
            });
        };
        let Open {
            mut enc,
            slots,
            outputs,
            bytes,
        } = open;
        if outputs.is_empty() {
            return Ok(Ticket { slots, read: None });
        }
        let gpu = self.gpu;
        let staging = match self.staging.iter().position(|b| b.size() == bytes) {
            Some(i) => self.staging.swap_remove(i),
            None => gpu.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("corrupt read-back"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
        };
        let submitted = scoped(gpu, || {
            for (dst, offset) in &outputs {
                enc.copy_buffer_to_buffer(dst, 0, &staging, *offset, dst.size());
            }
            Ok(gpu.queue().submit([enc.finish()]))
        });
        self.scratch.submitted();
        let index = submitted?;
        let (tx, mapped) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            // The receiver is gone only when the ticket was dropped unread.
            let _ = tx.send(r);
        });
        Ok(Ticket {
            slots,
            read: Some(InFlight {
                staging,
                index,
                mapped,
            }),
        })
    }

    /// Waits for `ticket`'s batch and returns its images in the order they were pushed.
    pub fn wait(&mut self, ticket: Ticket) -> Result<Vec<RgbImage>> {
        let Ticket { slots, read } = ticket;
        let Some(InFlight {
            staging,
            index,
            mapped,
        }) = read
        else {
            return slots
                .into_iter()
                .map(|s| match s {
                    Slot::Unchanged(img) => Ok(img),
                    Slot::Read { .. } => Err(Error::Internal(
                        "corrupt: a batch without a read-back holds a GPU output".into(),
                    )),
                })
                .collect();
        };
        let mut wait_for = Some(index);
        let done = loop {
            match mapped.try_recv() {
                Ok(r) => break r,
                Err(std::sync::mpsc::TryRecvError::Empty) => {}
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    return Err(gpu_error("corrupt", "the mapping callback never ran"))
                }
            }
            // The batch's own submission first; should its callback still be pending after
            // that, whatever was submitted since.
            self.gpu
                .device()
                .poll(wgpu::PollType::Wait {
                    submission_index: wait_for.take(),
                    timeout: None,
                })
                .map_err(|e| gpu_error("corrupt", format!("waiting for the device: {e}")))?;
        };
        done.map_err(|e| gpu_error("corrupt", format!("mapping the result: {e}")))?;
        let images = {
            let view = staging
                .get_mapped_range(..)
                .map_err(|e| gpu_error("corrupt", format!("mapping the result: {e}")))?;
            let words: &[u32] = bytemuck::try_cast_slice(&view)
                .map_err(|e| gpu_error("corrupt", format!("reading the result: {e}")))?;
            slots
                .into_par_iter()
                .map(|s| match s {
                    Slot::Unchanged(img) => Ok(img),
                    Slot::Read { offset, w, h } => {
                        let start = (offset / 4) as usize;
                        let n = w as usize * h as usize;
                        let data = words.get(start..start + n).ok_or_else(|| {
                            gpu_error("corrupt", "a read-back is shorter than its image")
                        })?;
                        unpack(w, h, data)
                    }
                })
                .collect::<Result<Vec<_>>>()
        };
        staging.unmap();
        if self.staging.len() < KEEP_STAGING {
            self.staging.push(staging);
        }
        images
    }
}

fn new_open(gpu: &Gpu) -> Open {
    Open {
        enc: gpu
            .device()
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("corrupt"),
            }),
        slots: Vec::new(),
        outputs: Vec::new(),
        bytes: 0,
    }
}

/// Runs `f` inside the device's error scopes: wgpu reports a mistake in a recorded command
/// there, not as the call's result.
fn scoped<T>(gpu: &Gpu, f: impl FnOnce() -> Result<T>) -> Result<T> {
    gpu.scoped("corrupt", f).and_then(|r| r)
}
