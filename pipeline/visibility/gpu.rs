//! The GPU z-buffer (`kernels/zbuffer.wgsl`): [`GpuRasteriser`], the twin of
//! [`raster_cpu`](crate::visibility::raster::raster_cpu) that gives the same [`RasterOut`] bit
//! for bit.
//!
//! # How it mirrors `raster.rs`
//!
//! * **Setup on the CPU.** Every image's triangles go through exactly the CPU's steps: drop
//!   those with `obj ≥ num_objects`, [`setup`] the rest (rules 1, 2, 5, 6 and 7's plane fit,
//!   in `f64`/`i32`), sort by object (stable). The kernel receives the [`TriSetup`] records
//!   unchanged, so snapping, orientation, bounding boxes and the inverse-depth steps are the
//!   CPU's own values.
//! * **Per-pixel rules on the GPU.** The kernel evaluates only rules 3–8 — `i32` edge
//!   functions with the top-left bias, pixel centres `i·2^S + 2^(S−1)`, and
//!   `ω = (((w0 + wi_hi·di) + wj_hi·dj) + wi_lo·di) + wj_lo·dj` in the CPU's order. Integer
//!   arithmetic is exact; every `f32` product is exact (10-bit × 14-bit mantissas), so fused
//!   multiply-adds change nothing, and each addition is correctly rounded on both sides
//!   (Vulkan requires it for `f32` addition). No intermediate is subnormal (rule 7), so
//!   flushing denormals changes nothing either. Hence every key the GPU computes equals the
//!   CPU's `depth_key(inv_depth(..))`.
//! * **Z-test without races.** Pass 1 keeps the minimum key per pixel with an atomic; pass 2,
//!   after it, keeps the smallest object among the triangles whose key equals that minimum.
//!   Both are minima over the same set the CPU scans, so the result does not depend on the
//!   order the GPU visits triangles in (rules 9 and 10).
//! * **Per-object statistics.** `projected_pixels` is the size of the union of an object's
//!   triangles: a covered pixel of triangle `t` counts iff no earlier triangle of the same
//!   object (its triangles are contiguous after the sort) covers it — one fixed triangle per
//!   pixel, whatever the schedule. A final pass over the instance-ID map adds up the visible
//!   pixels, the modal box (atomic minima and maxima) and the index sums (64-bit, as two
//!   words with carry). Integer sums, minima and maxima are order-independent, so they equal
//!   the CPU's row-by-row scan.
//!
//! # Batching
//!
//! [`Rasteriser::raster_batch`] rasterises many images with one upload, one command encoder
//! (clears, three passes, copies to a staging buffer) and one read-back. Every image gets its
//! range of the shared pixel buffers, and every (image, object) pair that has triangles gets a
//! batch-wide *slot*; slots of an image ascend with the object, so the smallest slot of a
//! pixel is its smallest object. Work is split into items of (triangle, 256 pixels of its
//! bounding box), one workgroup each, over a 2-D dispatch when there are more than the
//! per-dimension limit. Images without triangles never reach the GPU. The device buffers are
//! kept between batches and grow when a batch needs more; batches larger than the budget
//! ([`GpuRasteriser::with_budget`]) or the device's binding limits are split. Instance-ID maps
//! and depth keys are copied back only for the images that ask for them.
//!
//! The kernel stores complements (`!key`, `!slot`, `!x0`, `!y0`) so that zero, which
//! `clear_buffer` writes, means "nothing yet", and an atomic maximum of a complement is a
//! minimum of the value.
//!
//! A 64-bit `atomicMin` of `key << 32 | object` would do the z-test in one pass, but
//! [`Gpu::open`] requests no optional features, so only the two-pass 32-bit path exists.

use std::borrow::Borrow;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::gpu::compute::Kernel;
use crate::gpu::{gpu_error, Gpu, KernelId};
use crate::visibility::raster::{
    setup, Grid, ObjectStats, RasterJob, RasterOut, Rasteriser, TriSetup, EMPTY,
};
use crate::Result;

/// The kernel's name, for errors about its buffers and dispatches.
const KERNEL: &str = KernelId::Zbuffer.name();

/// Invocations per workgroup, and pixels per work item (the kernel's `WG`).
const WG: u32 = 256;

/// `u32` words of per-slot statistics (the kernel's `STATS`).
const STATS: usize = 10;

/// The kernel's `mode` values.
const MODE_DEPTH: u32 = 1;
const MODE_ID: u32 = 2;
const MODE_RESOLVE: u32 = 3;

/// Images per batch by default.
pub(crate) const DEFAULT_BATCH_IMAGES: usize = 32;

/// Pixels per batch by default: 32 nuScenes images (1600×900), 184 MB for each of the two
/// pixel buffers.
pub(crate) const DEFAULT_BATCH_PIXELS: u64 = 32 * 1600 * 900;

/// The kernel's `Params` (16 bytes, a valid uniform layout).
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Params {
    pub(crate) mode: u32,
    pub(crate) groups_x: u32,
    pub(crate) count: u32,
    pub(crate) num_images: u32,
}

/// The kernel's `Image`.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct ImageInfo {
    pub(crate) offset: u32,
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) sub_bits: u32,
}

/// One image after the CPU's part of the work.
struct Prepared {
    grid: Grid,
    num_objects: u32,
    want_maps: bool,
    /// Sorted by object.
    setups: Vec<TriSetup>,
    /// The object of each local slot (ascending) and its first triangle in `setups`.
    slots: Vec<(u32, u32)>,
    /// Work items of the image's triangles.
    items: u64,
}

impl Prepared {
    fn new(job: &RasterJob<'_>) -> Result<Self> {
        let grid = Grid::new(job.width, job.height)?;
        let mut setups: Vec<TriSetup> = job
            .tris
            .iter()
            .filter(|t| t.obj < job.num_objects)
            .filter_map(|t| setup(&grid, t))
            .collect();
        setups.sort_by_key(|s| s.obj);
        let mut slots: Vec<(u32, u32)> = Vec::new();
        let mut items = 0u64;
        for (k, s) in setups.iter().enumerate() {
            if slots.last().is_none_or(|&(o, _)| o != s.obj) {
                slots.push((s.obj, k as u32));
            }
            items += bbox_pixels(s).div_ceil(u64::from(WG));
        }
        Ok(Self {
            grid,
            num_objects: job.num_objects,
            want_maps: job.want_maps,
            setups,
            slots,
            items,
        })
    }

    fn pixels(&self) -> u64 {
        u64::from(self.grid.width) * u64::from(self.grid.height)
    }

    /// The result of an image none of whose triangles covers a pixel centre.
    fn empty_out(&self) -> RasterOut {
        let n = if self.want_maps {
            self.pixels() as usize
        } else {
            0
        };
        RasterOut {
            width: self.grid.width,
            height: self.grid.height,
            ids: vec![EMPTY; n],
            depth_keys: vec![EMPTY; n],
            objects: vec![ObjectStats::default(); self.num_objects as usize],
        }
    }
}

fn bbox_pixels(s: &TriSetup) -> u64 {
    u64::from(s.i1 - s.i0 + 1) * u64::from(s.j1 - s.j0 + 1)
}

/// What one batch needs, for the budget checks.
#[derive(Debug, Clone, Copy, Default)]
struct Need {
    images: u64,
    pixels: u64,
    tris: u64,
    items: u64,
    slots: u64,
}

impl Need {
    fn of(p: &Prepared) -> Self {
        Self {
            images: 1,
            pixels: p.pixels(),
            tris: p.setups.len() as u64,
            items: p.items,
            slots: p.slots.len() as u64,
        }
    }

    fn plus(self, o: Self) -> Self {
        Self {
            images: self.images + o.images,
            pixels: self.pixels + o.pixels,
            tris: self.tris + o.tris,
            items: self.items + o.items,
            slots: self.slots + o.slots,
        }
    }
}

/// The device buffers, kept between batches.
struct Buffers {
    /// One uniform block per pass.
    params: [wgpu::Buffer; 3],
    images: wgpu::Buffer,
    tris: wgpu::Buffer,
    meta: wgpu::Buffer,
    items: wgpu::Buffer,
    keys: wgpu::Buffer,
    ids: wgpu::Buffer,
    stats: wgpu::Buffer,
    staging: wgpu::Buffer,
}

/// The z-buffer on the GPU: a [`Rasteriser`] whose results equal
/// [`CpuRasteriser`](crate::visibility::raster::CpuRasteriser)'s exactly.
///
/// `G` is how the device is held: `&Gpu` or `Arc<Gpu>` (anything that borrows a [`Gpu`]).
/// Calls from several threads are serialised (they share the device buffers).
pub struct GpuRasteriser<G: Borrow<Gpu> = Arc<Gpu>> {
    gpu: G,
    max_images: usize,
    max_pixels: u64,
    buffers: Mutex<Option<Buffers>>,
}

impl<G: Borrow<Gpu>> std::fmt::Debug for GpuRasteriser<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuRasteriser")
            .field("gpu", self.gpu.borrow())
            .field("max_images", &self.max_images)
            .field("max_pixels", &self.max_pixels)
            .finish_non_exhaustive()
    }
}

impl<G: Borrow<Gpu>> GpuRasteriser<G> {
    /// A rasteriser on `gpu` with the default budget ([`DEFAULT_BATCH_IMAGES`] images,
    /// [`DEFAULT_BATCH_PIXELS`] pixels per batch). Compiles the kernel, so a broken kernel or
    /// device shows here.
    pub fn new(gpu: G) -> Result<Self> {
        let kernel = gpu.borrow().kernel(KernelId::Zbuffer)?;
        if kernel.workgroup_size != [WG, 1, 1] {
            return Err(gpu_error(
                KERNEL,
                format!(
                    "workgroup size {:?} in the kernel, {WG} on the host",
                    kernel.workgroup_size
                ),
            ));
        }
        Ok(Self {
            gpu,
            max_images: DEFAULT_BATCH_IMAGES,
            max_pixels: DEFAULT_BATCH_PIXELS,
            buffers: Mutex::new(None),
        })
    }

    /// Sets the batch budget: at most `images` images (also what [`Rasteriser::batch_size`]
    /// says) and `pixels` pixels per dispatch; larger batches are split. An image larger than
    /// `pixels` still runs, alone, if the device can hold it.
    pub fn with_budget(mut self, images: usize, pixels: u64) -> Self {
        self.max_images = images.max(1);
        self.max_pixels = pixels.max(1);
        self
    }

    /// The device in use.
    pub fn gpu(&self) -> &Gpu {
        self.gpu.borrow()
    }

    /// The largest number of elements of `size` bytes one storage binding may hold.
    fn binding_elements(&self, size: u64) -> u64 {
        let l = self.gpu().limits();
        l.max_storage_buffer_binding_size.min(l.max_buffer_size) / size
    }

    /// Device limits on one batch; the pixel and item counts must also fit the kernel's `u32`
    /// indices (with a workgroup of headroom).
    fn hard_limit(&self) -> Need {
        let max_groups = u64::from(self.gpu().limits().max_compute_workgroups_per_dimension);
        let max_u32 = u64::from(u32::MAX / 2);
        Need {
            images: self.binding_elements(size_of::<ImageInfo>() as u64),
            pixels: self
                .binding_elements(4)
                .min(max_u32)
                .min(max_groups * max_groups * u64::from(WG)),
            tris: self
                .binding_elements(size_of::<TriSetup>() as u64)
                .min(max_u32),
            items: self
                .binding_elements(8)
                .min(max_u32)
                .min(max_groups * max_groups),
            slots: self.binding_elements((STATS * 4) as u64).min(max_u32),
        }
    }

    /// Splits `prepared` (indices of images with triangles) into batches within the budget.
    fn plan(&self, prepared: &[Prepared], todo: &[usize]) -> Result<Vec<Vec<usize>>> {
        let hard = self.hard_limit();
        let soft = Need {
            images: self.max_images as u64,
            pixels: self.max_pixels.min(hard.pixels),
            ..hard
        };
        let fits = |n: Need, l: &Need| {
            n.images <= l.images
                && n.pixels <= l.pixels
                && n.tris <= l.tris
                && n.items <= l.items
                && n.slots <= l.slots
        };
        let mut batches: Vec<Vec<usize>> = Vec::new();
        let mut current: Vec<usize> = Vec::new();
        let mut need = Need::default();
        for &k in todo {
            let p = &prepared[k];
            let one = Need::of(p);
            if !fits(one, &hard) {
                return Err(gpu_error(
                    KERNEL,
                    format!(
                        "a {}×{} image with {} triangles ({} work items) exceeds the device's \
                         limits ({} pixels, {} triangles, {} work items per dispatch)",
                        p.grid.width,
                        p.grid.height,
                        one.tris,
                        one.items,
                        hard.pixels,
                        hard.tris,
                        hard.items
                    ),
                ));
            }
            let more = need.plus(one);
            if current.is_empty() || fits(more, &soft) {
                current.push(k);
                need = more;
            } else {
                batches.push(std::mem::take(&mut current));
                current.push(k);
                need = one;
            }
        }
        if !current.is_empty() {
            batches.push(current);
        }
        Ok(batches)
    }

    /// Rasterises one batch that fits the device; returns the outputs in `batch` order.
    fn run_batch(&self, prepared: &[Prepared], batch: &[usize]) -> Result<Vec<RasterOut>> {
        let gpu = self.gpu();
        let packed = Packed::new(prepared, batch);
        let (params, groups) = pass_params(gpu, &packed)?;
        let back = Readback::new(prepared, batch, &packed);

        let kernel = gpu.kernel(KernelId::Zbuffer)?;
        let mut guard = self.buffers.lock().unwrap_or_else(|p| p.into_inner());
        let staged = gpu.scoped(KERNEL, || -> Result<()> {
            let need = [
                bytes_of_len::<ImageInfo>(packed.images.len()),
                bytes_of_len::<TriSetup>(packed.tris.len()),
                bytes_of_len::<[u32; 4]>(packed.meta.len()),
                bytes_of_len::<[u32; 2]>(packed.items.len()),
                back.px_bytes,
                back.px_bytes,
                back.stats_bytes,
                back.staging_bytes,
            ];
            let b = ensure_buffers(gpu.device(), &mut guard, &need);
            submit(gpu, &kernel, b, &packed, &params, groups, &back);
            Ok(())
        })?;
        let read = staged.and_then(|()| match guard.as_ref() {
            Some(b) => read_staging(gpu, &b.staging, back.staging_bytes),
            None => Err(gpu_error(KERNEL, "device buffers missing after the upload")),
        });
        let words = match read {
            Ok(words) => words,
            Err(e) => {
                // A failed batch may leave a buffer mapped: start the next one afresh.
                *guard = None;
                return Err(e);
            }
        };
        drop(guard);
        unpack(prepared, batch, &packed, &back, &words)
    }
}

/// A batch's host-side inputs, laid out as the kernel's bindings read them.
struct Packed {
    images: Vec<ImageInfo>,
    tris: Vec<TriSetup>,
    /// Per triangle: its image, its batch-wide slot, the first triangle of that slot.
    meta: Vec<[u32; 4]>,
    /// Per work item: its triangle and the first of its bounding-box pixels.
    items: Vec<[u32; 2]>,
    /// Pixels of the whole batch.
    pixels: u32,
    /// The first batch-wide slot of each image.
    slot_base: Vec<u32>,
    /// Slots of the whole batch.
    slots: u32,
}

impl Packed {
    /// Concatenates the images of `batch`, giving each its pixel range and slot range.
    fn new(prepared: &[Prepared], batch: &[usize]) -> Self {
        let mut images = Vec::with_capacity(batch.len());
        let mut tris: Vec<TriSetup> = Vec::new();
        let mut meta: Vec<[u32; 4]> = Vec::new();
        let mut items: Vec<[u32; 2]> = Vec::new();
        let mut pixels = 0u32;
        let mut slot_base = Vec::with_capacity(batch.len());
        let mut slots = 0u32;
        for (img, &k) in batch.iter().enumerate() {
            let p = &prepared[k];
            images.push(ImageInfo {
                offset: pixels,
                width: p.grid.width,
                height: p.grid.height,
                sub_bits: p.grid.sub_bits,
            });
            slot_base.push(slots);
            let first_tri = tris.len() as u32;
            let mut slot = 0usize;
            for (t, s) in p.setups.iter().enumerate() {
                while slot + 1 < p.slots.len() && p.slots[slot + 1].1 as usize <= t {
                    slot += 1;
                }
                let g = first_tri + t as u32;
                meta.push([
                    img as u32,
                    slots + slot as u32,
                    first_tri + p.slots[slot].1,
                    0,
                ]);
                let n = bbox_pixels(s) as u32;
                items.extend((0..n).step_by(WG as usize).map(|first| [g, first]));
                tris.push(*s);
            }
            // `plan` keeps the totals within u32.
            pixels += p.pixels() as u32;
            slots += p.slots.len() as u32;
        }
        Self {
            images,
            tris,
            meta,
            items,
            pixels,
            slot_base,
            slots,
        }
    }
}

/// The uniforms and workgroup grids of the three passes (depth, id, resolve), in dispatch
/// order; fails if a pass needs more workgroups than a 2-D dispatch allows.
fn pass_params(gpu: &Gpu, packed: &Packed) -> Result<([Params; 3], [[u32; 2]; 3])> {
    let max_dim = gpu.limits().max_compute_workgroups_per_dimension;
    let grid2d = |groups: u64| -> Result<[u32; 2]> {
        let x = groups.min(u64::from(max_dim));
        let y = groups.div_ceil(x.max(1));
        match (u32::try_from(x), u32::try_from(y)) {
            (Ok(x), Ok(y)) if y <= max_dim => Ok([x, y]),
            _ => Err(gpu_error(
                KERNEL,
                format!("{groups} workgroups exceed the dispatch limits"),
            )),
        }
    };
    let pixels = packed.pixels;
    let items = packed.items.len();
    let raster_groups = grid2d(items as u64)?;
    let resolve_groups = grid2d(u64::from(pixels).div_ceil(u64::from(WG)))?;
    let num_images = packed.images.len() as u32;
    let params = [
        Params {
            mode: MODE_DEPTH,
            groups_x: raster_groups[0],
            count: items as u32,
            num_images,
        },
        Params {
            mode: MODE_ID,
            groups_x: raster_groups[0],
            count: items as u32,
            num_images,
        },
        Params {
            mode: MODE_RESOLVE,
            groups_x: resolve_groups[0],
            count: pixels,
            num_images,
        },
    ];
    Ok((params, [raster_groups, raster_groups, resolve_groups]))
}

/// What comes back through the staging buffer: the statistics, then ids and keys of the
/// images that want maps.
struct Readback {
    /// (image in the batch, source byte offset, bytes) of each map copied back, by image.
    copies: Vec<(usize, u64, u64)>,
    /// Bytes of each pixel buffer in use.
    px_bytes: u64,
    stats_bytes: u64,
    staging_bytes: u64,
}

impl Readback {
    fn new(prepared: &[Prepared], batch: &[usize], packed: &Packed) -> Self {
        let px_bytes = u64::from(packed.pixels) * 4;
        let stats_bytes = u64::from(packed.slots) * (STATS as u64) * 4;
        let mut copies: Vec<(usize, u64, u64)> = Vec::new();
        let mut staging_bytes = stats_bytes;
        for (img, &k) in batch.iter().enumerate() {
            if prepared[k].want_maps {
                let bytes = prepared[k].pixels() * 4;
                copies.push((img, u64::from(packed.images[img].offset) * 4, bytes));
                staging_bytes += 2 * bytes;
            }
        }
        Self {
            copies,
            px_bytes,
            stats_bytes,
            staging_bytes,
        }
    }
}

/// Uploads the batch into `b`, then records and submits one encoder: the clears, the three
/// passes and the copies into the staging buffer, in that order.
fn submit(
    gpu: &Gpu,
    kernel: &Kernel,
    b: &Buffers,
    packed: &Packed,
    params: &[Params; 3],
    groups: [[u32; 2]; 3],
    back: &Readback,
) {
    let device = gpu.device();
    let queue = gpu.queue();
    for (buf, p) in b.params.iter().zip(params) {
        queue.write_buffer(buf, 0, bytemuck::bytes_of(p));
    }
    queue.write_buffer(&b.images, 0, bytemuck::cast_slice(&packed.images));
    queue.write_buffer(&b.tris, 0, bytemuck::cast_slice(&packed.tris));
    queue.write_buffer(&b.meta, 0, bytemuck::cast_slice(&packed.meta));
    queue.write_buffer(&b.items, 0, bytemuck::cast_slice(&packed.items));

    let storage = [
        &b.images, &b.tris, &b.meta, &b.items, &b.keys, &b.ids, &b.stats,
    ];
    let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some(KERNEL),
    });
    enc.clear_buffer(&b.keys, 0, Some(back.px_bytes));
    enc.clear_buffer(&b.ids, 0, Some(back.px_bytes));
    enc.clear_buffer(&b.stats, 0, Some(back.stats_bytes));
    for (uniform, g) in b.params.iter().zip(groups) {
        let mut bindings = vec![uniform];
        bindings.extend(storage);
        crate::gpu::compute::record_pass(device, &mut enc, kernel, KERNEL, &bindings, g);
    }
    enc.copy_buffer_to_buffer(&b.stats, 0, &b.staging, 0, back.stats_bytes);
    let mut at = back.stats_bytes;
    for &(_, src, bytes) in &back.copies {
        enc.copy_buffer_to_buffer(&b.ids, src, &b.staging, at, bytes);
        enc.copy_buffer_to_buffer(&b.keys, src, &b.staging, at + bytes, bytes);
        at += 2 * bytes;
    }
    queue.submit([enc.finish()]);
}

/// Splits the staging words back into one [`RasterOut`] per image of `batch`, in order.
fn unpack(
    prepared: &[Prepared],
    batch: &[usize],
    packed: &Packed,
    back: &Readback,
    words: &[u32],
) -> Result<Vec<RasterOut>> {
    let slots = packed.slots as usize;
    let stats = &words[..slots * STATS];
    let mut maps = &words[slots * STATS..];
    let mut copy = back.copies.iter().peekable();
    let mut outs = Vec::with_capacity(batch.len());
    for (img, &k) in batch.iter().enumerate() {
        let p = &prepared[k];
        let base = packed.slot_base[img] as usize;
        let objects = unpack_stats(p, &stats[base * STATS..]);
        let (mut ids, mut depth_keys) = (Vec::new(), Vec::new());
        if copy.next_if(|c| c.0 == img).is_some() {
            let n = p.pixels() as usize;
            (ids, depth_keys) = unpack_maps(p, base, maps)?;
            maps = &maps[2 * n..];
        }
        outs.push(RasterOut {
            width: p.grid.width,
            height: p.grid.height,
            ids,
            depth_keys,
            objects,
        });
    }
    Ok(outs)
}

/// The per-object statistics of image `p`, from `stats` starting at its first slot.
fn unpack_stats(p: &Prepared, stats: &[u32]) -> Vec<ObjectStats> {
    let mut objects = vec![ObjectStats::default(); p.num_objects as usize];
    for (s, &(obj, _)) in p.slots.iter().enumerate() {
        let w = &stats[s * STATS..(s + 1) * STATS];
        objects[obj as usize] = ObjectStats {
            projected_pixels: w[0],
            visible_pixels: w[1],
            modal: (w[1] > 0).then(|| [!w[2], !w[3], w[4], w[5]]),
            sum_i: u64::from(w[6]) | u64::from(w[7]) << 32,
            sum_j: u64::from(w[8]) | u64::from(w[9]) << 32,
        };
    }
    objects
}

/// The instance-ID map and depth keys of image `p` from the words starting at its copy (ids,
/// then keys), undoing the complements and turning batch-wide slots (from `base`) back into
/// objects.
fn unpack_maps(p: &Prepared, base: usize, words: &[u32]) -> Result<(Vec<u32>, Vec<u32>)> {
    let n = p.pixels() as usize;
    let ids = words[..n]
        .iter()
        .map(|&c| {
            if c == 0 {
                return Ok(EMPTY);
            }
            (!c as usize)
                .checked_sub(base)
                .and_then(|s| p.slots.get(s))
                .map(|&(obj, _)| obj)
                .ok_or_else(|| gpu_error(KERNEL, format!("slot {} not in this image", !c)))
        })
        .collect::<Result<_>>()?;
    let depth_keys = words[n..2 * n]
        .iter()
        .map(|&c| if c == 0 { EMPTY } else { !c })
        .collect();
    Ok((ids, depth_keys))
}

impl<G: Borrow<Gpu> + Sync> Rasteriser for GpuRasteriser<G> {
    fn name(&self) -> &str {
        "gpu"
    }

    fn gpu(&self) -> Option<&Gpu> {
        Some(self.gpu.borrow())
    }

    fn raster(&self, job: &RasterJob<'_>) -> Result<RasterOut> {
        self.raster_batch(std::slice::from_ref(job))?
            .pop()
            .ok_or_else(|| gpu_error(KERNEL, "no output for one image"))
    }

    fn raster_batch(&self, jobs: &[RasterJob<'_>]) -> Result<Vec<RasterOut>> {
        let prepared: Vec<Prepared> = jobs.par_iter().map(Prepared::new).collect::<Result<_>>()?;
        let mut outs: Vec<Option<RasterOut>> = prepared
            .iter()
            .map(|p| p.setups.is_empty().then(|| p.empty_out()))
            .collect();
        let todo: Vec<usize> = (0..prepared.len()).filter(|&k| outs[k].is_none()).collect();
        for batch in self.plan(&prepared, &todo)? {
            for (k, out) in batch.iter().zip(self.run_batch(&prepared, &batch)?) {
                outs[*k] = Some(out);
            }
        }
        outs.into_iter()
            .map(|o| o.ok_or_else(|| gpu_error(KERNEL, "an image was not rasterised")))
            .collect()
    }

    fn batch_size(&self) -> usize {
        self.max_images
    }
}

fn bytes_of_len<T>(n: usize) -> u64 {
    (n * size_of::<T>()) as u64
}

/// Makes sure the buffers exist and are at least `need` bytes (images, tris, meta, items,
/// keys, ids, stats, staging); grows them to the next power of two when not.
fn ensure_buffers<'b>(
    device: &wgpu::Device,
    slot: &'b mut Option<Buffers>,
    need: &[u64; 8],
) -> &'b Buffers {
    use wgpu::BufferUsages as U;
    let make = |label: &str, usage: U, bytes: u64| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes.max(256).next_multiple_of(256),
            usage,
            mapped_at_creation: false,
        })
    };
    let input = U::STORAGE | U::COPY_DST;
    let output = U::STORAGE | U::COPY_SRC | U::COPY_DST;
    let specs: [(&str, U); 8] = [
        ("zbuffer images", input),
        ("zbuffer tris", input),
        ("zbuffer meta", input),
        ("zbuffer items", input),
        ("zbuffer keys", output),
        ("zbuffer ids", output),
        ("zbuffer stats", output),
        ("zbuffer staging", U::MAP_READ | U::COPY_DST),
    ];
    let b = slot.get_or_insert_with(|| {
        let uniform = || make("zbuffer params", U::UNIFORM | U::COPY_DST, 16);
        let [i, t, m, it, k, id, s, st] =
            std::array::from_fn(|n| make(specs[n].0, specs[n].1, need[n]));
        Buffers {
            params: [uniform(), uniform(), uniform()],
            images: i,
            tris: t,
            meta: m,
            items: it,
            keys: k,
            ids: id,
            stats: s,
            staging: st,
        }
    });
    let limit = device
        .limits()
        .max_storage_buffer_binding_size
        .min(device.limits().max_buffer_size);
    let bufs = [
        &mut b.images,
        &mut b.tris,
        &mut b.meta,
        &mut b.items,
        &mut b.keys,
        &mut b.ids,
        &mut b.stats,
        &mut b.staging,
    ];
    for (n, buf) in bufs.into_iter().enumerate() {
        if buf.size() < need[n] {
            let size = need[n].next_power_of_two().min(limit).max(need[n]);
            *buf = make(specs[n].0, specs[n].1, size);
        }
    }
    b
}

/// Maps the first `bytes` of `staging` (after the submitted work) and returns them as words.
fn read_staging(gpu: &Gpu, staging: &wgpu::Buffer, bytes: u64) -> Result<Vec<u32>> {
    let mut out = vec![0u32; (bytes / 4) as usize];
    if bytes == 0 {
        return Ok(out);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    staging.map_async(wgpu::MapMode::Read, 0..bytes, move |r| {
        // The receiver only goes away if this function already returned an error.
        let _ = tx.send(r);
    });
    gpu.device()
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| gpu_error(KERNEL, format!("waiting for the device: {e}")))?;
    rx.recv()
        .map_err(|_| gpu_error(KERNEL, "the mapping callback never ran"))?
        .map_err(|e| gpu_error(KERNEL, format!("mapping the result: {e}")))?;
    {
        let view = staging
            .get_mapped_range(0..bytes)
            .map_err(|e| gpu_error(KERNEL, format!("mapping the result: {e}")))?;
        bytemuck::cast_slice_mut::<u32, u8>(&mut out).copy_from_slice(&view);
    }
    staging.unmap();
    Ok(out)
}
