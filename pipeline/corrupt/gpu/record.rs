//! Recording one view's passes into a command encoder: which kernels run, in which order, on
//! which buffers. The buffers come from a [`Scratch`], so a run of images of one size creates
//! them once.

use super::scratch::{Scratch, Use};
use super::{Dims, DimsMode, WG};
use crate::corrupt::blur::Tap;
use crate::corrupt::occlusion::Disc;
use crate::corrupt::photometric::DarkEntry;
use crate::corrupt::weather;
use crate::corrupt::Plan;
use crate::gpu::{gpu_error, Gpu, KernelId};
use crate::Result;

/// Records passes into one encoder, with buffers from `scratch`.
pub(crate) struct Recorder<'g, 's> {
    pub(crate) gpu: &'g Gpu,
    pub(crate) enc: wgpu::CommandEncoder,
    pub(crate) scratch: &'s mut Scratch,
}

impl Recorder<'_, '_> {
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
        let group = self.scratch.bind_group(self.gpu, kernel, &k, bindings);
        crate::gpu::compute::record_bound(
            &mut self.enc,
            &k,
            kernel.name(),
            &group,
            [gx as u32, gy as u32],
        );
        Ok(())
    }

    /// A uniform buffer holding `value` (the WGSL uniform layout, as
    /// [`Gpu::uniform_buffer`] requires).
    fn uniform<T: bytemuck::Pod>(&mut self, label: &str, value: &T) -> Result<wgpu::Buffer> {
        let bytes = bytemuck::bytes_of(value);
        let t = self
            .scratch
            .take(self.gpu, label, Use::Uniform, bytes.len() as u64)?;
        self.gpu.queue().write_buffer(&t.buffer, 0, bytes);
        Ok(t.buffer)
    }

    /// A storage buffer of `data`, or of one zeroed element when `data` is empty (bindings
    /// may not be empty).
    pub(crate) fn input<T: bytemuck::Pod>(
        &mut self,
        label: &str,
        data: &[T],
    ) -> Result<wgpu::Buffer> {
        let zero = [T::zeroed()];
        let data = if data.is_empty() { &zero[..] } else { data };
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let t = self
            .scratch
            .take(self.gpu, label, Use::Input, bytes.len() as u64)?;
        self.gpu.queue().write_buffer(&t.buffer, 0, bytes);
        Ok(t.buffer)
    }

    /// A zeroed storage buffer of `bytes` bytes for the kernels to write: a reused one is
    /// cleared first, so every pass sees what a new buffer would hold.
    fn work(&mut self, label: &str, bytes: u64) -> Result<wgpu::Buffer> {
        let t = self.scratch.take(self.gpu, label, Use::Work, bytes)?;
        if t.reused {
            self.enc.clear_buffer(&t.buffer, 0, None);
        }
        Ok(t.buffer)
    }

    /// A zeroed buffer of `words` u32, at least 16 bytes: small statistics buffers stay valid
    /// bindings on every backend.
    fn zeroed(&mut self, label: &str, words: u64) -> Result<wgpu::Buffer> {
        self.work(label, (words * 4).max(16))
    }
}

/// Records the passes of one view whose packed pixels are in `src`; returns the buffer that
/// will hold its output (exactly `w·h` words: kernels bound-check with `arrayLength`).
pub(crate) fn record_on(
    rec: &mut Recorder<'_, '_>,
    (w, h): (u32, u32),
    src: &wgpu::Buffer,
    plan: &Plan,
) -> Result<wgpu::Buffer> {
    let n = u64::from(w) * u64::from(h);
    let dst = rec.work("corrupt dst", n * 4)?;
    match plan {
        Plan::Unchanged => {}
        Plan::Pixel(p) => {
            let u = rec.uniform("corrupt_pixel", p)?;
            rec.pass(KernelId::CorruptPixel, &[&u, src, &dst], n)?;
        }
        Plan::Dark(p, _) => {
            let u = rec.uniform("corrupt_dark", &p.params)?;
            let t = rec.input::<DarkEntry>("dark table", &p.table)?;
            let c = rec.input::<u32>("dark cdf", &p.cdf)?;
            rec.pass(KernelId::CorruptDark, &[&u, &t, &c, src, &dst], n)?;
        }
        Plan::Motion(p) => {
            let u = rec.uniform(
                "corrupt_motion",
                &Dims {
                    width: w,
                    height: h,
                    n: p.taps.len() as u32,
                    extra: 0.0,
                },
            )?;
            let t = rec.input::<Tap>("motion taps", &p.taps)?;
            rec.pass(KernelId::CorruptMotion, &[&u, &t, src, &dst], n)?;
        }
        Plan::Zoom(p) => {
            let inv = 1.0f32 / (p.layers.len() as f32 + 1.0);
            let u = rec.uniform(
                "corrupt_zoom",
                &Dims {
                    width: w,
                    height: h,
                    n: p.layers.len() as u32,
                    extra: inv,
                },
            )?;
            let l = rec.input("zoom layers", &p.layers)?;
            rec.pass(KernelId::CorruptZoom, &[&u, &l, src, &dst], n)?;
        }
        Plan::Splash(p) => {
            let u = rec.uniform("corrupt_splash", &p.params)?;
            let d = rec.input::<Disc>("splash discs", &p.discs)?;
            let splashed = rec.zeroed("splashed", n)?;
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
    rec: &mut Recorder<'_, '_>,
    n: u64,
    p: &weather::SnowPlan,
    src: &wgpu::Buffer,
    dst: &wgpu::Buffer,
) -> Result<()> {
    let sp = &p.params;
    let u = rec.uniform("corrupt_snow", sp)?;
    let cells = u64::from(sp.zoom.crop_w) * u64::from(sp.zoom.crop_h);
    let noise = rec.work("snow noise", cells * 4)?;
    rec.pass(KernelId::CorruptSnowNoise, &[&u, &noise], cells)?;
    let zn = u64::from(sp.zoom_w) * u64::from(sp.zoom_h);
    let zoomed = rec.work("snow zoomed", zn * 4)?;
    rec.pass(KernelId::CorruptSnowZoom, &[&u, &noise, &zoomed], zn)?;
    let taps = rec.input::<Tap>("snow taps", &p.taps)?;
    let layer = rec.work("snow layer", n * 4)?;
    rec.pass(KernelId::CorruptSnowLayer, &[&u, &taps, &zoomed, &layer], n)?;
    rec.pass(KernelId::CorruptSnowComposite, &[&u, &layer, src, dst], n)?;
    Ok(())
}

/// Fog's passes: one per plasma level into the map, the statistics the composite needs,
/// then the composite into `dst`.
fn record_fog(
    rec: &mut Recorder<'_, '_>,
    w: u32,
    n: u64,
    p: &weather::FogPlan,
    src: &wgpu::Buffer,
    dst: &wgpu::Buffer,
) -> Result<()> {
    let size = u64::from(p.size);
    let map = rec.work("fog map", size * size * 4)?;
    for l in &p.levels {
        let u = rec.uniform("corrupt_fog_level", l)?;
        let cells = u64::from(p.size / l.step).pow(2);
        rec.pass(KernelId::CorruptFogLevel, &[&u, &map], cells)?;
    }
    let stats = rec.zeroed("fog stats", 4)?;
    rec.pass(
        KernelId::CorruptFogStats,
        &[&map, src, &stats],
        (size * size).max(n),
    )?;
    let u = rec.uniform(
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
    rec: &mut Recorder<'_, '_>,
    n: u64,
    p: &weather::RainPlan,
    src: &wgpu::Buffer,
    dst: &wgpu::Buffer,
) -> Result<()> {
    let rp = &p.params;
    let u = rec.uniform("corrupt_rain", rp)?;
    let mask = rec.zeroed("rain mask", n)?;
    rec.pass(
        KernelId::CorruptRainDrops,
        &[&u, &mask],
        u64::from(rp.drops),
    )?;
    let sums = rec.zeroed("rain image sum", 4)?;
    rec.pass(KernelId::CorruptImageSum, &[src, &sums], n)?;
    let streaked = rec.work("rain streaked", n * 4)?;
    rec.pass(
        KernelId::CorruptRainStreak,
        &[&u, &mask, &sums, src, &streaked],
        n,
    )?;
    let blend = rec.work("rain blend", n * 12)?;
    let csums = rec.zeroed("rain channel sums", 8)?;
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
    rec: &mut Recorder<'_, '_>,
    w: u32,
    h: u32,
    weights: &[f32],
    input: &wgpu::Buffer,
    orig: &wgpu::Buffer,
    spans: Option<&[[i32; 2]]>,
    dst: &wgpu::Buffer,
) -> Result<()> {
    let n = u64::from(w) * u64::from(h);
    let k = weights.len() as u32;
    let wb = rec.input("gauss weights", weights)?;
    let tmp = rec.work("gauss tmp", n * 12)?;
    let uh = rec.uniform(
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
    let sb = rec.input("lens spans", spans.unwrap_or(&[[1, 0]]))?;
    let uv = rec.uniform(
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
