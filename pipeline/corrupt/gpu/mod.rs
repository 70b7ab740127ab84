//! GPU host code: runs planned views through the `kernels/corrupt_*.wgsl` kernels.
//!
//! Images travel as one packed u32 per pixel (R | G << 8 | B << 16). A batch of views is
//! recorded into one command encoder (`record.rs`) on buffers and bind groups kept from batch
//! to batch (`scratch.rs`), submitted at once, and read back through one mapped buffer with one
//! wait ([`GpuRunner`]); [`stream()`] overlaps that with decoding and encoding on every core.
//! Plans come from [`super::plan_frame`], exactly as for [`super::apply_cpu`].

mod record;
mod runner;
mod scratch;
mod stream;

use image::RgbImage;

pub(crate) use runner::{GpuRunner, Packed, Ticket};
pub use stream::{stream, StreamReport, StreamShape};

use super::Plan;
use crate::gpu::{gpu_error, Gpu};
use crate::Result;

/// Images per submission: enough that the host's per-submission costs (the encoder, the
/// submit, the wait, the mapping) are small beside the views', few enough that one batch's
/// scratch and read-back of 1600×900 views stay near 0.5 GB at the heaviest corruption.
pub(crate) const BATCH: usize = 8;
/// Invocations per workgroup of every corrupt kernel.
const WG: u32 = 256;

/// Width, height, a count and an f32 (the generic uniform block of several kernels).
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Dims {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) n: u32,
    pub(crate) extra: f32,
}

/// Width, height, a count and a mode.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct DimsMode {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) n: u32,
    pub(crate) mode: u32,
}

/// Packs RGB8 into one u32 per pixel.
pub(crate) fn pack(img: &RgbImage) -> Vec<u32> {
    img.as_raw()
        .chunks_exact(3)
        .map(|p| u32::from(p[0]) | (u32::from(p[1]) << 8) | (u32::from(p[2]) << 16))
        .collect()
}

/// Unpacks [`pack`]'s layout.
pub(crate) fn unpack(w: u32, h: u32, data: &[u32]) -> Result<RgbImage> {
    let mut raw = vec![0u8; data.len() * 3];
    // Written in place rather than collected from an iterator: this runs on every read-back,
    // and the fixed-size chunks let the compiler keep it to straight stores.
    for (px, v) in raw.chunks_exact_mut(3).zip(data) {
        px[0] = *v as u8;
        px[1] = (*v >> 8) as u8;
        px[2] = (*v >> 16) as u8;
    }
    RgbImage::from_raw(w, h, raw).ok_or_else(|| gpu_error("read_back", "output size mismatch"))
}

/// Applies each plan to its image on the GPU, [`BATCH`] views per submission, reading one
/// batch back while the next runs; the results equal [`super::apply_cpu`]'s (exactly for
/// integer corruptions, within one grey level where f32 rounding differs) and do not depend
/// on the batching.
pub fn apply_gpu(gpu: &Gpu, jobs: &[(&RgbImage, &Plan)]) -> Result<Vec<RgbImage>> {
    let mut runner = GpuRunner::new(gpu);
    let mut out = Vec::with_capacity(jobs.len());
    let mut in_flight: Option<Ticket> = None;
    for chunk in jobs.chunks(BATCH) {
        runner.push_all(chunk)?;
        let ticket = runner.submit()?;
        if let Some(previous) = in_flight.replace(ticket) {
            out.extend(runner.wait(previous)?);
        }
    }
    if let Some(last) = in_flight {
        out.extend(runner.wait(last)?);
    }
    Ok(out)
}

/// Seconds per image of the kernels alone: `plan` on `img` run `images` times, [`BATCH`] to a
/// submission, on buffers kept across submissions as [`GpuRunner`] keeps them, the input
/// already on the device, no read-back. A first batch, which creates the buffers and compiles
/// the pipelines, is not timed.
pub(crate) fn time_kernels(gpu: &Gpu, img: &RgbImage, plan: &Plan, images: usize) -> Result<f64> {
    let src = gpu.storage_buffer("corrupt src", &pack(img))?;
    let mut scratch = scratch::Scratch::default();
    let mut run = |count: usize| -> Result<f64> {
        let t = std::time::Instant::now();
        let mut left = count;
        while left > 0 {
            let k = left.min(BATCH);
            let mut rec = record::Recorder {
                gpu,
                enc: gpu
                    .device()
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("corrupt bench"),
                    }),
                scratch: &mut scratch,
            };
            for _ in 0..k {
                record::record_on(&mut rec, img.dimensions(), &src, plan)?;
            }
            let enc = rec.enc;
            gpu.queue().submit([enc.finish()]);
            scratch.submitted();
            left -= k;
        }
        gpu.device()
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| gpu_error("corrupt bench", e))?;
        Ok(t.elapsed().as_secs_f64())
    };
    let images = images.max(1);
    run(images.min(BATCH))?;
    Ok(run(images)? / images as f64)
}
