//! Choosing the wgpu adapter.
//!
//! Rules:
//! 1. Candidates are the adapters with compute shaders (GLES 3.0 contexts have none) whose
//!    name contains `DRIVEGEN_ADAPTER`, case-insensitively, when that is set and not blank.
//!    With a filter nothing else is considered, so a typo is an error, not a silent fallback.
//! 2. Vulkan first: the best candidate by device type (discrete, integrated, virtual, other,
//!    CPU, i.e. lavapipe last). Only when Vulkan has no candidate at all are the GL adapters
//!    enumerated and ranked the same way. GL goes second because EGL start-up is slow and
//!    noisy, and a GPU with a GL driver has a Vulkan one too in practice; a GPU that really
//!    is reachable only through GL can still be picked by name with `DRIVEGEN_ADAPTER`, or
//!    the backend forced with wgpu's `WGPU_BACKEND=gl`.

use std::fmt::{self, Write as _};

use wgpu::{Backend, Backends, DeviceType, DownlevelFlags};

use crate::{Error, Result};

/// The environment variable that picks an adapter by name.
pub(crate) const ADAPTER_ENV: &str = "DRIVEGEN_ADAPTER";

/// What drivegen reports about an adapter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterSummary {
    pub name: String,
    pub backend: Backend,
    pub device_type: DeviceType,
    pub driver: String,
    pub driver_info: String,
}

impl From<&wgpu::AdapterInfo> for AdapterSummary {
    fn from(info: &wgpu::AdapterInfo) -> Self {
        Self {
            name: info.name.clone(),
            backend: info.backend,
            device_type: info.device_type,
            driver: info.driver.clone(),
            driver_info: info.driver_info.clone(),
        }
    }
}

impl fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} [{:?}, {:?}",
            self.name, self.backend, self.device_type
        )?;
        if !self.driver.is_empty() {
            write!(f, ", driver {} {}", self.driver, self.driver_info)?;
        }
        write!(f, "]")
    }
}

/// An enumerated adapter with the instance that owns it.
pub(super) struct Candidate {
    pub instance: wgpu::Instance,
    pub adapter: wgpu::Adapter,
    pub summary: AdapterSummary,
    pub compute: bool,
}

/// Opens an instance for `backends` and lists its adapters; nothing when wgpu's own
/// `WGPU_BACKEND` (e.g. `gl` or `vulkan`) excludes them, which is how to force a backend.
fn enumerate(backends: Backends) -> Vec<Candidate> {
    let backends = backends & Backends::from_env().unwrap_or(Backends::all());
    if backends.is_empty() {
        return Vec::new();
    }
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    // Debug builds ask for validation layers; WGPU_VALIDATION etc. can override.
    desc.flags = wgpu::InstanceFlags::from_env_or_default();
    let instance = wgpu::Instance::new(desc);
    pollster::block_on(instance.enumerate_adapters(backends))
        .into_iter()
        .map(|adapter| Candidate {
            summary: AdapterSummary::from(&adapter.get_info()),
            compute: adapter
                .get_downlevel_capabilities()
                .flags
                .contains(DownlevelFlags::COMPUTE_SHADERS),
            instance: instance.clone(),
            adapter,
        })
        .collect()
}

fn type_rank(t: DeviceType) -> u8 {
    match t {
        DeviceType::DiscreteGpu => 0,
        DeviceType::IntegratedGpu => 1,
        DeviceType::VirtualGpu => 2,
        DeviceType::Other => 3,
        DeviceType::Cpu => 4,
    }
}

fn backend_rank(b: Backend) -> u8 {
    match b {
        Backend::Vulkan => 0,
        Backend::Gl => 1,
        _ => 2,
    }
}

/// The `DRIVEGEN_ADAPTER` filter, lower-cased; blank counts as unset.
fn wanted() -> Option<String> {
    std::env::var(ADAPTER_ENV)
        .ok()
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
}

/// Index of the best candidate of `cands` (rule 1 and the ranking of rule 2), or why there
/// is none.
fn choose(cands: &[Candidate], wanted: Option<&str>) -> std::result::Result<usize, String> {
    let best = cands
        .iter()
        .enumerate()
        .filter(|(_, c)| c.compute)
        .filter(|(_, c)| wanted.is_none_or(|w| c.summary.name.to_lowercase().contains(w)))
        .min_by_key(|(i, c)| {
            (
                type_rank(c.summary.device_type),
                backend_rank(c.summary.backend),
                *i,
            )
        });
    if let Some((i, _)) = best {
        return Ok(i);
    }
    let found = if cands.is_empty() {
        "no adapters".to_string()
    } else {
        let list: Vec<String> = cands
            .iter()
            .map(|c| {
                let note = if c.compute {
                    ""
                } else {
                    " (no compute shaders)"
                };
                format!("{}{note}", c.summary)
            })
            .collect();
        list.join("; ")
    };
    Err(match wanted {
        Some(w) => format!(
            "{ADAPTER_ENV} ({w:?}, case-insensitive) matches no usable adapter; found: {found}"
        ),
        None => format!(
            "tried the Vulkan and GL backends{} and found {found}; install \
             mesa-vulkan-drivers libvulkan1 (the lavapipe CPU fallback) or a GPU driver",
            match std::env::var("WGPU_BACKEND") {
                Ok(b) => format!(" (limited by WGPU_BACKEND={b:?})"),
                Err(_) => String::new(),
            }
        ),
    })
}

/// Rule 2 over `cands`, whose first `n_vulkan` entries are the Vulkan adapters.
fn pick(
    cands: &[Candidate],
    n_vulkan: usize,
    wanted: Option<&str>,
) -> std::result::Result<usize, String> {
    choose(&cands[..n_vulkan], wanted).or_else(|_| choose(cands, wanted))
}

/// The adapter drivegen uses, with the instance it came from.
pub(super) fn select() -> Result<Candidate> {
    let wanted = wanted();
    let mut cands = enumerate(Backends::VULKAN);
    let n_vulkan = cands.len();
    if choose(&cands, wanted.as_deref()).is_err() {
        cands.extend(enumerate(Backends::GL));
    }
    let i = pick(&cands, n_vulkan, wanted.as_deref()).map_err(Error::NoAdapter)?;
    Ok(cands.swap_remove(i))
}

/// A human-readable report of every adapter on both backends, its key compute limits, and
/// the one [`super::Gpu::open`] would choose (backs `drivegen gpu-info`).
pub fn adapter_report() -> Result<String> {
    let wanted = wanted();
    let mut cands = enumerate(Backends::VULKAN);
    let n_vulkan = cands.len();
    cands.extend(enumerate(Backends::GL));
    let chosen = pick(&cands, n_vulkan, wanted.as_deref());
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(out, "{} wgpu adapter(s) found (Vulkan, GL):", cands.len());
    for (i, c) in cands.iter().enumerate() {
        let mark = if chosen == Ok(i) { "*" } else { " " };
        let l = c.adapter.limits();
        let s = &c.summary;
        let _ = writeln!(out, "{mark} [{i}] {}", s.name);
        let _ = writeln!(
            out,
            "      backend {:?}, type {:?}, driver {:?} {:?}, compute shaders: {}",
            s.backend,
            s.device_type,
            s.driver,
            s.driver_info,
            if c.compute { "yes" } else { "no" }
        );
        let _ = writeln!(
            out,
            "      max_storage_buffer_binding_size {} B, max_buffer_size {} B",
            l.max_storage_buffer_binding_size, l.max_buffer_size
        );
        let _ = writeln!(
            out,
            "      max_compute_workgroup_size_x {}, max_compute_invocations_per_workgroup {}, \
             max_compute_workgroups_per_dimension {}",
            l.max_compute_workgroup_size_x,
            l.max_compute_invocations_per_workgroup,
            l.max_compute_workgroups_per_dimension
        );
    }
    let filter = match &wanted {
        Some(w) => format!("{ADAPTER_ENV}={w:?}"),
        None => format!("{ADAPTER_ENV} unset"),
    };
    let _ = match chosen {
        Ok(i) => writeln!(out, "drivegen would use [{i}] ({filter})"),
        Err(why) => writeln!(out, "drivegen would fail ({filter}): {why}"),
    };
    Ok(out)
}
