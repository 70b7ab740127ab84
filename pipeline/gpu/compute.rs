//! Helpers for the compute pattern every kernel follows: upload, dispatch, read back.
//!
//! Binding convention (group 0): binding `i` is the `i`-th buffer passed to
//! [`Gpu::dispatch`]; for [`Gpu::map_elements`] that is 0 = uniform parameters, 1 = input
//! array, 2 = output array. Kernels run one invocation per output element and bound-check
//! with `arrayLength` of their output, so the host never has to pass `n`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytemuck::Pod;
use wgpu::util::DeviceExt;

use super::{gpu_error, Gpu, KernelId};
use crate::Result;

/// A compiled kernel: its pipeline and the workgroup size read from its source.
#[derive(Debug)]
pub struct Kernel {
    pub pipeline: wgpu::ComputePipeline,
    pub workgroup_size: [u32; 3],
}

impl Gpu {
    /// The compiled pipeline of kernel `id` (see [`super::KERNELS`]), compiled on first use
    /// and cached.
    pub fn kernel(&self, id: KernelId) -> Result<Arc<Kernel>> {
        let (name, source) = (id.name(), id.source());
        // A poisoned lock only means another thread panicked while compiling; the map
        // itself is always consistent, so keep using it.
        let mut cache = self.kernels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = cache.get(name) {
            return Ok(k.clone());
        }
        // Compiling under the lock keeps two threads from compiling the same kernel.
        let k = Arc::new(self.compile(name, source)?);
        cache.insert(name, k.clone());
        Ok(k)
    }

    /// Names of the kernels compiled so far.
    pub fn compiled_kernels(&self) -> Vec<&'static str> {
        let cache = self.kernels.lock().unwrap_or_else(|p| p.into_inner());
        let mut names: Vec<_> = cache.keys().copied().collect();
        names.sort_unstable();
        names
    }

    fn compile(&self, name: &str, source: &str) -> Result<Kernel> {
        // naga first: its messages point into the source, and it tells the workgroup size.
        let module = wgpu::naga::front::wgsl::parse_str(source)
            .map_err(|e| gpu_error(name, e.emit_to_string(source)))?;
        let entry = module
            .entry_points
            .iter()
            .find(|e| e.stage == wgpu::naga::ShaderStage::Compute)
            .ok_or_else(|| gpu_error(name, "no @compute entry point"))?;
        let pipeline = self.scoped(name, || {
            let module = self
                .device
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(name),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                });
            self.device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(name),
                    layout: None,
                    module: &module,
                    entry_point: Some(&entry.name),
                    compilation_options: Default::default(),
                    cache: None,
                })
        })?;
        Ok(Kernel {
            pipeline,
            workgroup_size: entry.workgroup_size,
        })
    }

    /// Caps the elements [`Gpu::map_elements`] sends per dispatch (`None`: only the device
    /// limits). Bounds memory use; tests use it to exercise the chunking.
    pub fn set_max_chunk(&self, elements: Option<usize>) {
        self.max_chunk
            .store(elements.unwrap_or(0), Ordering::Relaxed);
    }

    /// A storage buffer (read-only or read-write in the kernel) holding `data`.
    ///
    /// Fails when `data` is larger than one storage binding may be.
    pub fn storage_buffer<T: Pod>(&self, label: &str, data: &[T]) -> Result<wgpu::Buffer> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        self.check_storage_size(label, bytes.len() as u64)?;
        self.scoped(label, || {
            self.device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents: bytes,
                    usage: wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::COPY_SRC
                        | wgpu::BufferUsages::COPY_DST,
                })
        })
    }

    /// A uniform buffer holding `value` (which must have the WGSL uniform layout: a size
    /// that is a multiple of 16, fields at their WGSL offsets).
    pub fn uniform_buffer<T: Pod>(&self, label: &str, value: &T) -> Result<wgpu::Buffer> {
        let bytes = bytemuck::bytes_of(value);
        let max = self.device.limits().max_uniform_buffer_binding_size;
        if bytes.len() as u64 > max {
            return Err(gpu_error(
                label,
                format!(
                    "{} B of parameters exceed max_uniform_buffer_binding_size {max} B",
                    bytes.len()
                ),
            ));
        }
        self.scoped(label, || {
            self.device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents: bytes,
                    usage: wgpu::BufferUsages::UNIFORM,
                })
        })
    }

    /// A storage buffer of `bytes` zeroed bytes for a kernel to write and
    /// [`Gpu::read_back`] to read.
    pub fn output_buffer(&self, label: &str, bytes: u64) -> Result<wgpu::Buffer> {
        self.check_storage_size(label, bytes)?;
        self.scoped(label, || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })
        })
    }

    /// A zeroed buffer of `bytes` bytes with `usage`, for work repeated on buffers of the same
    /// size: the caller refills it with `Queue::write_buffer` or clears it before each use.
    /// Checked against the storage or uniform binding limit its usage implies.
    pub(crate) fn reusable_buffer(
        &self,
        label: &str,
        bytes: u64,
        usage: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer> {
        if usage.contains(wgpu::BufferUsages::STORAGE) {
            self.check_storage_size(label, bytes)?;
        }
        if usage.contains(wgpu::BufferUsages::UNIFORM) {
            let max = self.device.limits().max_uniform_buffer_binding_size;
            if bytes > max {
                return Err(gpu_error(
                    label,
                    format!(
                        "{bytes} B of parameters exceed max_uniform_buffer_binding_size {max} B"
                    ),
                ));
            }
        }
        self.scoped(label, || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        })
    }

    fn check_storage_size(&self, label: &str, bytes: u64) -> Result<()> {
        let l = self.device.limits();
        let max = l.max_storage_buffer_binding_size.min(l.max_buffer_size);
        if bytes > max {
            return Err(gpu_error(
                label,
                format!(
                    "{bytes} B exceed the device's storage buffer limit of {max} B \
                     (max_storage_buffer_binding_size / max_buffer_size); split the input"
                ),
            ));
        }
        Ok(())
    }

    /// Runs kernel `id` over `n` elements: `ceil(n / workgroup_size)` workgroups, with
    /// `bindings[i]` at `@group(0) @binding(i)`. Returns once the work is submitted (read
    /// back to wait for it). `n = 0` dispatches nothing.
    pub fn dispatch(&self, id: KernelId, bindings: &[&wgpu::Buffer], n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let name = id.name();
        let k = self.kernel(id)?;
        let groups = self.workgroups(name, &k, n)?;
        self.scoped(name, || {
            let mut enc = self.encoder(name);
            record_pass(&self.device, &mut enc, &k, name, bindings, [groups, 1]);
            self.queue.submit([enc.finish()]);
        })
    }

    /// Copies `buffer` back to the host, waiting for the work queued before.
    pub fn read_back<T: Pod>(&self, buffer: &wgpu::Buffer) -> Result<Vec<T>> {
        let n = buffer.size() as usize / size_of::<T>().max(1);
        let enc = self.encoder("read_back");
        self.finish_and_read("read_back", enc, buffer, n)
    }

    /// The one-in-one-out pattern: runs kernel `id` with `params` at binding 0, `input` at
    /// binding 1 and `input.len()` outputs at binding 2, and returns the outputs.
    ///
    /// Inputs larger than the device allows in one binding or one dispatch are split into
    /// chunks (each a dispatch of its own, with the same parameters). `n = 0` dispatches
    /// nothing.
    pub fn map_elements<P: Pod, I: Pod, O: Pod>(
        &self,
        id: KernelId,
        params: &P,
        input: &[I],
    ) -> Result<Vec<O>> {
        if input.is_empty() {
            return Ok(Vec::new());
        }
        let name = id.name();
        let k = self.kernel(id)?;
        let chunk = self.chunk_len::<I, O>(name, &k)?;
        let uniform = self.uniform_buffer(name, params)?;
        let mut out = Vec::with_capacity(input.len());
        for part in input.chunks(chunk) {
            let src = self.storage_buffer(name, part)?;
            let dst = self.output_buffer(name, (part.len() * size_of::<O>()) as u64)?;
            let groups = self.workgroups(name, &k, part.len())?;
            let mut enc = self.encoder(name);
            self.scoped(name, || {
                record_pass(
                    &self.device,
                    &mut enc,
                    &k,
                    name,
                    &[&uniform, &src, &dst],
                    [groups, 1],
                )
            })?;
            out.extend(self.finish_and_read::<O>(name, enc, &dst, part.len())?);
        }
        Ok(out)
    }

    /// Elements per dispatch of [`Gpu::map_elements`]: what fits one storage binding (the
    /// larger of the two element sizes), one dispatch dimension, and the cap set by
    /// [`Gpu::set_max_chunk`].
    fn chunk_len<I, O>(&self, name: &str, k: &Kernel) -> Result<usize> {
        let l = self.device.limits();
        let per = size_of::<I>().max(size_of::<O>()).max(1) as u64;
        let by_binding = l.max_storage_buffer_binding_size.min(l.max_buffer_size) / per;
        let by_dispatch =
            u64::from(l.max_compute_workgroups_per_dimension) * u64::from(k.workgroup_size[0]);
        let mut len = by_binding.min(by_dispatch);
        let cap = self.max_chunk.load(Ordering::Relaxed) as u64;
        if cap > 0 {
            len = len.min(cap);
        }
        if len == 0 {
            return Err(gpu_error(
                name,
                format!("one element of {per} B exceeds the device's storage buffer limit"),
            ));
        }
        Ok(usize::try_from(len).unwrap_or(usize::MAX))
    }

    /// Workgroups for `n` elements, checked against the per-dimension dispatch limit.
    fn workgroups(&self, name: &str, k: &Kernel, n: usize) -> Result<u32> {
        let size = k.workgroup_size[0].max(1) as usize;
        let max = self.device.limits().max_compute_workgroups_per_dimension;
        match u32::try_from(n.div_ceil(size)) {
            Ok(g) if g <= max => Ok(g),
            _ => Err(gpu_error(
                name,
                format!(
                    "{n} elements need more than max_compute_workgroups_per_dimension = {max} \
                     workgroups of {size}; use map_elements (which chunks) or split the input"
                ),
            )),
        }
    }

    fn encoder(&self, label: &str) -> wgpu::CommandEncoder {
        self.device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) })
    }

    /// Appends a copy of the first `n` elements of `src` to a mappable buffer, submits
    /// `enc`, waits, and returns them. Errors name `label`: wgpu reports mistakes in the
    /// recorded commands only when `enc` is finished, here.
    fn finish_and_read<T: Pod>(
        &self,
        label: &str,
        mut enc: wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        n: usize,
    ) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); n];
        let bytes = (n * size_of::<T>()) as u64;
        // Copies and mappings move whole 4-byte words.
        let padded = bytes.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
        if padded == 0 {
            return Ok(out);
        }
        if padded > src.size() {
            return Err(gpu_error(
                label,
                format!("{bytes} B requested from a {} B buffer", src.size()),
            ));
        }
        let staging = self.scoped(label, || {
            let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: padded,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            enc.copy_buffer_to_buffer(src, 0, &staging, 0, padded);
            self.queue.submit([enc.finish()]);
            staging
        })?;
        let (tx, rx) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            // The receiver only goes away if this function already returned an error.
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| gpu_error(label, format!("waiting for the device: {e}")))?;
        rx.recv()
            .map_err(|_| gpu_error(label, "the mapping callback never ran"))?
            .map_err(|e| gpu_error(label, format!("mapping the result: {e}")))?;
        {
            let view = staging
                .get_mapped_range(..)
                .map_err(|e| gpu_error(label, format!("mapping the result: {e}")))?;
            bytemuck::cast_slice_mut::<T, u8>(&mut out).copy_from_slice(&view[..bytes as usize]);
        }
        staging.unmap();
        Ok(out)
    }
}

/// Records one compute pass of `k`: `bindings[i]` at `@group(0) @binding(i)`, over
/// `groups` = `[x, y]` workgroups.
pub(crate) fn record_pass(
    device: &wgpu::Device,
    enc: &mut wgpu::CommandEncoder,
    k: &Kernel,
    label: &str,
    bindings: &[&wgpu::Buffer],
    groups: [u32; 2],
) {
    let group = bind_group(device, k, label, bindings);
    record_bound(enc, k, label, &group, groups);
}

/// The bind group of `bindings` for `k` (`bindings[i]` at `@group(0) @binding(i)`), for callers
/// that run the same kernel on the same buffers again and keep the group.
pub(crate) fn bind_group(
    device: &wgpu::Device,
    k: &Kernel,
    label: &str,
    bindings: &[&wgpu::Buffer],
) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry<'_>> = bindings
        .iter()
        .zip(0u32..)
        .map(|(b, i)| wgpu::BindGroupEntry {
            binding: i,
            resource: b.as_entire_binding(),
        })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout: &k.pipeline.get_bind_group_layout(0),
        entries: &entries,
    })
}

/// Records one compute pass of `k` with `group` bound at group 0, over `groups` = `[x, y]`
/// workgroups. Every kernel dispatch of drivegen is recorded here.
pub(crate) fn record_bound(
    enc: &mut wgpu::CommandEncoder,
    k: &Kernel,
    label: &str,
    group: &wgpu::BindGroup,
    groups: [u32; 2],
) {
    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some(label),
        timestamp_writes: None,
    });
    pass.set_pipeline(&k.pipeline);
    pass.set_bind_group(0, group, &[]);
    pass.dispatch_workgroups(groups[0], groups[1], 1);
}
