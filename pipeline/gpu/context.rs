//! The opened device: [`Gpu`].

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use super::adapter::{self, AdapterSummary};
use super::compute::Kernel;
use super::gpu_error;
use crate::{Error, Result};

/// One wgpu device and its queue, with the compiled kernels cached.
///
/// `Gpu` is `Send + Sync`: open it once and share it; kernels may be run from several
/// threads at the same time.
pub struct Gpu {
    // Kept so the instance outlives the device on every backend.
    pub(super) _instance: wgpu::Instance,
    pub(super) adapter: wgpu::Adapter,
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    pub(super) summary: AdapterSummary,
    /// Compiled pipelines by kernel name, so repeated calls don't recompile.
    pub(super) kernels: Mutex<HashMap<&'static str, Arc<Kernel>>>,
    /// Upper bound on the elements per dispatch set by [`Gpu::set_max_chunk`]; 0 = none.
    pub(super) max_chunk: AtomicUsize,
}

impl Gpu {
    /// Opens the adapter chosen by the rules of [`adapter`] (`DRIVEGEN_ADAPTER`, then the best
    /// device type, Vulkan before GL) with all of its limits.
    pub fn open() -> Result<Gpu> {
        let chosen = adapter::select()?;
        let adapter = chosen.adapter;
        let desc = wgpu::DeviceDescriptor {
            label: Some("drivegen"),
            required_features: wgpu::Features::empty(),
            // The adapter's own limits, not WebGPU's defaults (128 MiB storage bindings):
            // the chunking in `compute` then uses all the device allows.
            required_limits: adapter.limits(),
            ..Default::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc)).map_err(|e| {
            Error::NoAdapter(format!("{}: cannot open a device: {e}", chosen.summary))
        })?;
        // Every call of ours runs inside error scopes; anything else is logged rather than
        // panicking, which is wgpu's default.
        device.on_uncaptured_error(Arc::new(|e| log::error!("wgpu: {e}")));
        log::debug!("gpu: using {}", chosen.summary);
        Ok(Gpu {
            _instance: chosen.instance,
            adapter,
            device,
            queue,
            summary: chosen.summary,
            kernels: Mutex::new(HashMap::new()),
            max_chunk: AtomicUsize::new(0),
        })
    }

    /// Name, backend, device type and driver of the adapter in use.
    pub fn info(&self) -> AdapterSummary {
        self.summary.clone()
    }

    /// The limits the device was opened with.
    pub fn limits(&self) -> wgpu::Limits {
        self.device.limits()
    }

    /// The wgpu adapter, for what the helpers here do not cover.
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.adapter
    }

    /// The wgpu device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The wgpu queue.
    pub(crate) fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// Runs `f` inside validation and out-of-memory error scopes and turns what they caught
    /// into an [`Error::Gpu`] naming `what`. Scopes are per thread, so concurrent callers do
    /// not see each other's errors.
    pub(crate) fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T> {
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let value = f();
        // Scopes must be popped in reverse order.
        let oom = pollster::block_on(oom.pop());
        let validation = pollster::block_on(validation.pop());
        match oom.or(validation) {
            Some(e) => Err(gpu_error(what, e)),
            None => Ok(value),
        }
    }
}

impl fmt::Debug for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gpu")
            .field("adapter", &self.summary)
            .finish_non_exhaustive()
    }
}
