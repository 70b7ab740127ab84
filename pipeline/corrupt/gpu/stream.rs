//! Decode → GPU → encode, overlapped: [`stream`].
//!
//! Decoding and encoding a JPEG costs more CPU than most corruption kernels cost the GPU, so
//! the GPU path is only as fast as it keeps every core coding while the device works. Decoder
//! threads decode and pack, the calling thread records, submits and collects batches through
//! a [`GpuRunner`] (batch k+1 recorded while the device runs batch k; a collected batch is
//! unpacked on the CPU pool), encoder threads encode; bounded queues between them keep memory
//! to a few batches.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crossbeam_channel::{bounded, Receiver, Sender};
use image::RgbImage;

use super::{GpuRunner, Packed, Ticket, BATCH};
use crate::corrupt::Plan;
use crate::gpu::Gpu;
use crate::{Error, Result};

/// The shape of a [`stream`] run.
#[derive(Debug, Clone, Copy)]
pub struct StreamShape {
    /// Views per submission.
    pub batch: usize,
    /// Submitted batches not yet read back, at most (2: one runs while the other is read).
    pub in_flight: usize,
    /// Decoder threads, and as many encoder threads.
    pub workers: usize,
}

impl Default for StreamShape {
    fn default() -> StreamShape {
        StreamShape {
            batch: BATCH,
            in_flight: 2,
            workers: rayon::current_num_threads(),
        }
    }
}

impl StreamShape {
    /// Decoded views waiting for the GPU, and finished ones waiting for an encoder, at most:
    /// two batches each, so the next batch is ready when one is submitted and a read-back
    /// never waits for the encoders to catch up with the one before.
    pub fn queue_depth(&self) -> usize {
        2 * self.batch.max(1)
    }
}

/// What a [`stream`] run did.
#[derive(Debug, Clone, Default)]
pub struct StreamReport {
    pub images: usize,
    pub batches: usize,
    /// Device buffers created over the run.
    pub buffers_created: u64,
    /// Device buffers the views used, reused ones included (what one image at a time
    /// would have created).
    pub buffers_used: u64,
    /// Seconds the GPU thread waited for decoded views.
    pub waited_for_input_s: f64,
    /// Seconds the GPU thread waited for the device (read-backs).
    pub waited_for_device_s: f64,
}

/// A decoded view on its way to the GPU thread.
struct Decoded {
    index: usize,
    /// Packed pixels, or the image itself when its plan leaves it unchanged.
    src: std::result::Result<Packed, RgbImage>,
    plan: Plan,
}

/// Runs items `0..n` through `decode` (an image and its plan), the GPU, and `encode` (the
/// corrupted image); `decode` and `encode` run on `shape.workers` threads each, in no
/// particular order, so `encode` gets the item's index. Stops at the first error, which it
/// returns.
pub fn stream<D, E>(
    gpu: &Gpu,
    n: usize,
    shape: &StreamShape,
    decode: D,
    encode: E,
) -> Result<StreamReport>
where
    D: Fn(usize) -> Result<(RgbImage, Plan)> + Sync,
    E: Fn(usize, RgbImage) -> Result<()> + Sync,
{
    let workers = shape.workers.max(1);
    let depth = shape.queue_depth();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    let fail = |e: Error| {
        stop.store(true, Ordering::Relaxed);
        let mut first = failed.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert(e);
    };
    let (dec_tx, dec_rx) = bounded::<Decoded>(depth);
    let (enc_tx, enc_rx) = bounded::<(usize, RgbImage)>(depth);
    let report = std::thread::scope(|scope| {
        for _ in 0..workers {
            let tx = dec_tx.clone();
            let (next, stop, decode, fail) = (&next, &stop, &decode, &fail);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= n {
                        break;
                    }
                    let item = decode(index).map(|(img, plan)| Decoded {
                        index,
                        src: match plan {
                            Plan::Unchanged => Err(img),
                            _ => Ok(Packed::of(&img)),
                        },
                        plan,
                    });
                    match item {
                        // The GPU thread hung up: it stopped on an error of its own.
                        Ok(d) => {
                            if tx.send(d).is_err() {
                                break;
                            }
                        }
                        Err(e) => {
                            fail(e);
                            break;
                        }
                    }
                }
            });
        }
        drop(dec_tx);
        for _ in 0..workers {
            let rx = enc_rx.clone();
            let (encode, fail) = (&encode, &fail);
            scope.spawn(move || {
                for (index, img) in rx {
                    if let Err(e) = encode(index, img) {
                        fail(e);
                        break;
                    }
                }
            });
        }
        drop(enc_rx);
        let run = feed(gpu, shape, &stop, dec_rx, enc_tx);
        if run.is_err() {
            // Decoders blocked on a full queue see it closed when `feed` returns; the flag
            // stops the others before their next image.
            stop.store(true, Ordering::Relaxed);
        }
        run
    })?;
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(report),
    }
}

/// The GPU thread: batches decoded views, keeps up to `shape.in_flight` batches submitted,
/// and hands each collected batch to the encoders. Returns when the decoders are done (or
/// `stop` is set) and every batch is collected; dropping its ends of the queues on return is
/// what lets the other threads finish.
fn feed(
    gpu: &Gpu,
    shape: &StreamShape,
    stop: &AtomicBool,
    dec_rx: Receiver<Decoded>,
    enc_tx: Sender<(usize, RgbImage)>,
) -> Result<StreamReport> {
    let batch = shape.batch.max(1);
    let in_flight = shape.in_flight.max(1);
    let mut runner = GpuRunner::new(gpu);
    let mut report = StreamReport::default();
    let mut flying: VecDeque<(Ticket, Vec<usize>)> = VecDeque::new();
    let mut open: Vec<usize> = Vec::with_capacity(batch);
    let mut more = true;
    while more {
        let t = Instant::now();
        let got = dec_rx.recv();
        report.waited_for_input_s += t.elapsed().as_secs_f64();
        match got {
            Ok(d) => {
                match d.src {
                    Ok(packed) => runner.push_packed(&packed, &d.plan)?,
                    Err(img) => runner.push_unchanged(img),
                }
                open.push(d.index);
            }
            Err(_) => more = false,
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(report);
        }
        if open.len() < batch && more {
            continue;
        }
        if !open.is_empty() {
            flying.push_back((runner.submit()?, std::mem::take(&mut open)));
            report.batches += 1;
        }
        // Collect the oldest batches until `in_flight` remain (none at the end): the newest
        // one runs on the device meanwhile.
        let keep = if more { in_flight - 1 } else { 0 };
        while flying.len() > keep {
            let Some((ticket, indices)) = flying.pop_front() else {
                break;
            };
            let t = Instant::now();
            let images = runner.wait(ticket)?;
            report.waited_for_device_s += t.elapsed().as_secs_f64();
            report.images += images.len();
            for pair in indices.into_iter().zip(images) {
                if enc_tx.send(pair).is_err() {
                    // Every encoder stopped on an error, which `stream` returns.
                    return Ok(report);
                }
            }
        }
    }
    report.buffers_created = runner.buffers_created();
    report.buffers_used = runner.buffers_used();
    Ok(report)
}
