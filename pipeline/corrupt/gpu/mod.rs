//! GPU host code: runs a batch of planned views through the `kernels/corrupt_*.wgsl` kernels.
//!
//! Images travel as one packed u32 per pixel (R | G << 8 | B << 16). All passes of all images
//! of a chunk are recorded into one command encoder and submitted together; the outputs are
//! then read back. Plans come from [`super::plan_frame`], exactly as for [`super::apply_cpu`].

use image::RgbImage;

use super::blur::Tap;
use super::occlusion::Disc;
use super::photometric::DarkEntry;
use super::weather;
use super::Plan;
use crate::gpu::{gpu_error, Gpu, KernelId};
use crate::Result;

/// Images per submission, bounding the scratch memory of one chunk.
const CHUNK: usize = 8;
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
pub fn pack(img: &RgbImage) -> Vec<u32> {
    img.pixels()
        .map(|p| u32::from(p.0[0]) | (u32::from(p.0[1]) << 8) | (u32::from(p.0[2]) << 16))
        .collect()
}

/// Unpacks [`pack`]'s layout.
pub fn unpack(w: u32, h: u32, data: &[u32]) -> Result<RgbImage> {
    let raw: Vec<u8> = data
        .iter()
        .flat_map(|v| [*v as u8, (*v >> 8) as u8, (*v >> 16) as u8])
        .collect();
    RgbImage::from_raw(w, h, raw).ok_or_else(|| gpu_error("read_back", "output size mismatch"))
}

/// Records passes into one encoder.
struct Recorder<'g> {
    gpu: &'g Gpu,
    enc: wgpu::CommandEncoder,
}

impl Recorder<'_> {
    /// One dispatch of `kernel` over `n` invocations with `bindings` at 0, 1, ….
    fn pass(&mut self, kernel: KernelId, bindings: &[&wgpu::Buffer], n: u64) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let k = self.gpu.kernel(kernel)?;
        let groups = n.div_ceil(u64::from(WG));
        let max = u64::from(self.gpu.limits().max_compute_workgroups_per_dimension);
        let gx = groups.min(max);
        let gy = groups.div_ceil(gx);
        if gy > max {
            return Err(gpu_error(
                kernel.name(),
                format!("{n} invocations exceed the dispatch limits"),
            ));
        }
        crate::gpu::compute::record_pass(
            self.gpu.device(),
            &mut self.enc,
            &k,
            kernel.name(),
            bindings,
            [gx as u32, gy as u32],
        );
        Ok(())
    }
}

/// A storage buffer of `data`, or of one zeroed element when `data` is empty (bindings may
/// not be empty).
fn storage<T: bytemuck::Pod>(gpu: &Gpu, label: &str, data: &[T]) -> Result<wgpu::Buffer> {
    if data.is_empty() {
        gpu.storage_buffer(label, &[T::zeroed()])
    } else {
        gpu.storage_buffer(label, data)
    }
}

fn zeroed(gpu: &Gpu, label: &str, words: u64) -> Result<wgpu::Buffer> {
    // At least 16 bytes: small stats buffers stay valid bindings on every backend.
    gpu.output_buffer(label, (words * 4).max(16))
}

/// Records the passes of one view; returns its output buffer (None: unchanged).
fn record(rec: &mut Recorder<'_>, img: &RgbImage, plan: &Plan) -> Result<Option<wgpu::Buffer>> {
    if matches!(plan, Plan::Unchanged) {
        return Ok(None);
    }
    let src = rec.gpu.storage_buffer("corrupt src", &pack(img))?;
    record_on(rec, img.dimensions(), &src, plan).map(Some)
}

/// Records the passes of one view whose packed pixels are already in `src`.
fn record_on(
    rec: &mut Recorder<'_>,
    (w, h): (u32, u32),
    src: &wgpu::Buffer,
    plan: &Plan,
) -> Result<wgpu::Buffer> {
    let gpu = rec.gpu;
    let n = u64::from(w) * u64::from(h);
    let dst = zeroed(gpu, "corrupt dst", n)?;
    // The output buffer must be exactly n words: kernels bound-check with arrayLength.
    let dst = if n * 4 < 16 {
        gpu.output_buffer("corrupt dst", n * 4)?
    } else {
        dst
    };
    match plan {
        Plan::Unchanged => {}
        Plan::Pixel(p) => {
            let u = gpu.uniform_buffer("corrupt_pixel", p)?;
            rec.pass(KernelId::CorruptPixel, &[&u, src, &dst], n)?;
        }
        Plan::Dark(p, _) => {
            let u = gpu.uniform_buffer("corrupt_dark", &p.params)?;
            let t = storage::<DarkEntry>(gpu, "dark table", &p.table)?;
            let c = storage::<u32>(gpu, "dark cdf", &p.cdf)?;
            rec.pass(KernelId::CorruptDark, &[&u, &t, &c, src, &dst], n)?;
        }
        Plan::Motion(p) => {
            let u = gpu.uniform_buffer(
                "corrupt_motion",
                &Dims {
                    width: w,
                    height: h,
                    n: p.taps.len() as u32,
                    extra: 0.0,
                },
            )?;
            let t = storage::<Tap>(gpu, "motion taps", &p.taps)?;
            rec.pass(KernelId::CorruptMotion, &[&u, &t, src, &dst], n)?;
        }
        Plan::Zoom(p) => {
            let inv = 1.0f32 / (p.layers.len() as f32 + 1.0);
            let u = gpu.uniform_buffer(
                "corrupt_zoom",
                &Dims {
                    width: w,
                    height: h,
                    n: p.layers.len() as u32,
                    extra: inv,
                },
            )?;
            let l = storage(gpu, "zoom layers", &p.layers)?;
            rec.pass(KernelId::CorruptZoom, &[&u, &l, src, &dst], n)?;
        }
        Plan::Splash(p) => {
            let u = gpu.uniform_buffer("corrupt_splash", &p.params)?;
            let d = storage::<Disc>(gpu, "splash discs", &p.discs)?;
            let splashed = zeroed(gpu, "splashed", n)?;
            rec.pass(KernelId::CorruptSplash, &[&u, &d, src, &splashed], n)?;
            blur(rec, w, h, &p.weights, &splashed, src, None, &dst)?;
        }
        Plan::Lens(p) => {
            blur(rec, w, h, &p.weights, src, src, Some(&p.spans), &dst)?;
        }
        Plan::Snow(p) => record_snow(rec, n, p, src, &dst)?,
        Plan::Fog(p) => record_fog(rec, w, n, p, src, &dst)?,
        Plan::Rain(p) => record_rain(rec, n, p, src, &dst)?,
    }
    Ok(dst)
}

/// Snow's four passes over `n` pixels: noise on the crop, its zoom, the flake layer and
/// the composite into `dst`.
fn record_snow(
    rec: &mut Recorder<'_>,
    n: u64,
    p: &weather::SnowPlan,
    src: &wgpu::Buffer,
    dst: &wgpu::Buffer,
) -> Result<()> {
    let gpu = rec.gpu;
    let sp = &p.params;
    let u = gpu.uniform_buffer("corrupt_snow", sp)?;
    let cells = u64::from(sp.zoom.crop_w) * u64::from(sp.zoom.crop_h);
    let noise = gpu.output_buffer("snow noise", cells * 4)?;
    rec.pass(KernelId::CorruptSnowNoise, &[&u, &noise], cells)?;
    let zn = u64::from(sp.zoom_w) * u64::from(sp.zoom_h);
    let zoomed = gpu.output_buffer("snow zoomed", zn * 4)?;
    rec.pass(KernelId::CorruptSnowZoom, &[&u, &noise, &zoomed], zn)?;
    let taps = storage::<Tap>(gpu, "snow taps", &p.taps)?;
    let layer = gpu.output_buffer("snow layer", n * 4)?;
    rec.pass(KernelId::CorruptSnowLayer, &[&u, &taps, &zoomed, &layer], n)?;
    rec.pass(KernelId::CorruptSnowComposite, &[&u, &layer, src, dst], n)?;
    Ok(())
}

/// Fog's passes: one per plasma level into the map, the statistics the composite needs,
/// then the composite into `dst`.
fn record_fog(
    rec: &mut Recorder<'_>,
    w: u32,
    n: u64,
    p: &weather::FogPlan,
    src: &wgpu::Buffer,
    dst: &wgpu::Buffer,
) -> Result<()> {
    let gpu = rec.gpu;
    let size = u64::from(p.size);
    let map = gpu.output_buffer("fog map", size * size * 4)?;
    for l in &p.levels {
        let u = gpu.uniform_buffer("corrupt_fog_level", l)?;
        let cells = u64::from(p.size / l.step).pow(2);
        rec.pass(KernelId::CorruptFogLevel, &[&u, &map], cells)?;
    }
    let stats = zeroed(gpu, "fog stats", 4)?;
    rec.pass(
        KernelId::CorruptFogStats,
        &[&map, src, &stats],
        (size * size).max(n),
    )?;
    let u = gpu.uniform_buffer(
        "corrupt_fog_composite",
        &Dims {
            width: w,
            height: p.size,
            n: 0,
            extra: p.strength,
        },
    )?;
    rec.pass(
        KernelId::CorruptFogComposite,
        &[&u, &map, &stats, src, dst],
        n,
    )?;
    Ok(())
}

/// Rain's passes: the drop mask, the image sum, the streaks, the blend with its channel
/// sums, then the final mix into `dst`.
fn record_rain(
    rec: &mut Recorder<'_>,
    n: u64,
    p: &weather::RainPlan,
    src: &wgpu::Buffer,
    dst: &wgpu::Buffer,
) -> Result<()> {
    let gpu = rec.gpu;
    let rp = &p.params;
    let u = gpu.uniform_buffer("corrupt_rain", rp)?;
    let mask = zeroed(gpu, "rain mask", n)?;
    rec.pass(
        KernelId::CorruptRainDrops,
        &[&u, &mask],
        u64::from(rp.drops),
    )?;
    let sums = zeroed(gpu, "rain image sum", 4)?;
    rec.pass(KernelId::CorruptImageSum, &[src, &sums], n)?;
    let streaked = gpu.output_buffer("rain streaked", n * 4)?;
    rec.pass(
        KernelId::CorruptRainStreak,
        &[&u, &mask, &sums, src, &streaked],
        n,
    )?;
    let blend = gpu.output_buffer("rain blend", n * 12)?;
    let csums = zeroed(gpu, "rain channel sums", 8)?;
    rec.pass(
        KernelId::CorruptRainBlend,
        &[&u, &mask, &streaked, src, &blend, &csums],
        n,
    )?;
    rec.pass(KernelId::CorruptRainFinal, &[&u, &blend, &csums, dst], n)?;
    Ok(())
}

/// The two Gaussian passes; `spans` selects Lens Obstacle's inside-only mode.
#[allow(clippy::too_many_arguments)]
fn blur(
    rec: &mut Recorder<'_>,
    w: u32,
    h: u32,
    weights: &[f32],
    input: &wgpu::Buffer,
    orig: &wgpu::Buffer,
    spans: Option<&[[i32; 2]]>,
    dst: &wgpu::Buffer,
) -> Result<()> {
    let gpu = rec.gpu;
    let n = u64::from(w) * u64::from(h);
    let k = weights.len() as u32;
    let wb = storage(gpu, "gauss weights", weights)?;
    let tmp = gpu.output_buffer("gauss tmp", n * 12)?;
    let uh = gpu.uniform_buffer(
        "corrupt_gauss_h",
        &DimsMode {
            width: w,
            height: h,
            n: k,
            mode: 0,
        },
    )?;
    rec.pass(KernelId::CorruptGaussH, &[&uh, &wb, input, &tmp], n)?;
    let mode = u32::from(spans.is_some());
    let sb = storage(gpu, "lens spans", spans.unwrap_or(&[[1, 0]]))?;
    let uv = gpu.uniform_buffer(
        "corrupt_gauss_v",
        &DimsMode {
            width: w,
            height: h,
            n: k,
            mode,
        },
    )?;
    rec.pass(
        KernelId::CorruptGaussV,
        &[&uv, &wb, &tmp, orig, &sb, dst],
        n,
    )?;
    Ok(())
}

/// Applies each plan to its image on the GPU; the results equal [`super::apply_cpu`]'s
/// (exactly for integer corruptions, within one grey level where f32 rounding differs).
pub fn apply_gpu(gpu: &Gpu, jobs: &[(&RgbImage, &Plan)]) -> Result<Vec<RgbImage>> {
    let mut out = Vec::with_capacity(jobs.len());
    for chunk in jobs.chunks(CHUNK) {
        let device = gpu.device();
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let recorded = (|| -> Result<Vec<Option<wgpu::Buffer>>> {
            let mut rec = Recorder {
                gpu,
                enc: device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("corrupt"),
                }),
            };
            let bufs = chunk
                .iter()
                .map(|(img, plan)| record(&mut rec, img, plan))
                .collect::<Result<Vec<_>>>()?;
            gpu.queue().submit([rec.enc.finish()]);
            Ok(bufs)
        })();
        let oom = pollster::block_on(oom.pop());
        let validation = pollster::block_on(validation.pop());
        if let Some(e) = oom.or(validation) {
            return Err(gpu_error("corrupt", e));
        }
        for ((img, _), buf) in chunk.iter().zip(recorded?) {
            match buf {
                None => out.push((*img).clone()),
                Some(b) => {
                    let data: Vec<u32> = gpu.read_back(&b)?;
                    let n = (img.width() * img.height()) as usize;
                    out.push(unpack(
                        img.width(),
                        img.height(),
                        &data[..n.min(data.len())],
                    )?);
                }
            }
        }
    }
    Ok(out)
}

/// Seconds per image of the kernels alone: `plan` on `img` run `images` times in one
/// submission, the input already on the device, no read-back (scratch buffers are still
/// allocated per image, as in [`apply_gpu`]).
pub(crate) fn time_kernels(gpu: &Gpu, img: &RgbImage, plan: &Plan, images: usize) -> Result<f64> {
    let src = gpu.storage_buffer("corrupt src", &pack(img))?;
    let run = |count: usize| -> Result<f64> {
        let t = std::time::Instant::now();
        let mut rec = Recorder {
            gpu,
            enc: gpu
                .device()
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("corrupt bench"),
                }),
        };
        let mut keep = Vec::with_capacity(count);
        for _ in 0..count {
            keep.push(record_on(&mut rec, img.dimensions(), &src, plan)?);
        }
        gpu.queue().submit([rec.enc.finish()]);
        gpu.device()
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| gpu_error("corrupt bench", e))?;
        Ok(t.elapsed().as_secs_f64())
    };
    // The first run compiles the pipelines.
    run(1)?;
    Ok(run(images.max(1))? / images.max(1) as f64)
}
