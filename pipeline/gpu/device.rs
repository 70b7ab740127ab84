//! Which device a stage runs on: [`DeviceChoice`] (what a user asks for) and [`Device`] (what
//! [`Device::open`], the one place that decides, gives every stage).
//!
//! `auto` means the fastest correct path: a hardware GPU when one opens, else the CPU twins. A
//! software Vulkan driver such as lavapipe computes the same results more slowly than the
//! twins, so `auto` passes over it (with a one-line note) in every command. `gpu` insists on a
//! wgpu adapter, lavapipe included (tests run the kernels there); `cpu` always runs the twins.

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use super::Gpu;
use crate::Result;

/// Where GPU stages run: `auto`, `gpu` or `cpu` (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceChoice {
    #[default]
    Auto,
    Gpu,
    Cpu,
}

impl DeviceChoice {
    /// The names `FromStr` accepts, in the order help lists them.
    pub const NAMES: [&'static str; 3] = ["auto", "gpu", "cpu"];
}

impl fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceChoice::Auto => "auto",
            DeviceChoice::Gpu => "gpu",
            DeviceChoice::Cpu => "cpu",
        })
    }
}

impl FromStr for DeviceChoice {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(DeviceChoice::Auto),
            "gpu" => Ok(DeviceChoice::Gpu),
            "cpu" => Ok(DeviceChoice::Cpu),
            other => Err(format!(
                "`{other}` is not a device; use one of {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// Where a stage's kernels run, resolved once from a [`DeviceChoice`] by [`Device::open`] and
/// then handed to every stage that can use it: each builds its own rasteriser or corruption
/// runner from this value and never opens an adapter of its own.
#[derive(Clone, Default)]
pub enum Device {
    /// The plain-Rust twins, on the CPU pool.
    #[default]
    Cpu,
    /// The wgpu device every stage of this process shares.
    Gpu(Arc<Gpu>),
}

impl Device {
    /// The device `choice` asks for. The adapter is opened at most once per process and shared,
    /// so a build that asks at every step prints its note once and never holds two devices.
    pub fn open(choice: DeviceChoice) -> Result<Device> {
        let device = match choice {
            DeviceChoice::Cpu => Device::Cpu,
            DeviceChoice::Gpu => Device::Gpu(shared()?),
            DeviceChoice::Auto => hardware().map_or(Device::Cpu, Device::Gpu),
        };
        match &device {
            Device::Gpu(g) => log::info!("device {choice}: the GPU {}", g.info()),
            Device::Cpu => log::info!("device {choice}: the CPU twins"),
        }
        Ok(device)
    }

    /// The GPU, or `None` for the CPU twins.
    pub fn gpu(&self) -> Option<&Gpu> {
        match self {
            Device::Gpu(g) => Some(g),
            Device::Cpu => None,
        }
    }

    /// The shared GPU handle, or `None` for the CPU twins.
    pub fn arc(&self) -> Option<Arc<Gpu>> {
        match self {
            Device::Gpu(g) => Some(g.clone()),
            Device::Cpu => None,
        }
    }

    /// `gpu` or `cpu`, as summaries and manifests name the device that ran.
    pub fn name(&self) -> &'static str {
        match self {
            Device::Gpu(_) => "gpu",
            Device::Cpu => "cpu",
        }
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Gpu(g) => write!(f, "Device::Gpu({})", g.info()),
            Device::Cpu => f.write_str("Device::Cpu"),
        }
    }
}

/// The process's one adapter, any kind (lavapipe included); an adapter that failed to open is
/// not retried, and every later request gets the same error text.
fn shared() -> Result<Arc<Gpu>> {
    static GPU: OnceLock<std::result::Result<Arc<Gpu>, String>> = OnceLock::new();
    GPU.get_or_init(|| {
        Gpu::open().map(Arc::new).map_err(|e| match e {
            crate::Error::NoAdapter(why) => why,
            other => other.report().to_string(),
        })
    })
    .clone()
    .map_err(crate::Error::NoAdapter)
}

/// The shared adapter when it is real hardware: `auto` passes over software drivers.
fn hardware() -> Option<Arc<Gpu>> {
    static NOTE: OnceLock<()> = OnceLock::new();
    // The adapter's type is known before a device is opened, and a software driver's device
    // holds tens of megabytes for the rest of the process: `auto` opens none it would not use.
    static SOFTWARE: OnceLock<Option<String>> = OnceLock::new();
    let software = SOFTWARE.get_or_init(|| match super::adapter::select() {
        Ok(c) if c.summary.device_type == wgpu::DeviceType::Cpu => Some(c.summary.to_string()),
        _ => None,
    });
    if let Some(name) = software {
        NOTE.get_or_init(|| log::warn!("{name} is a software adapter; `auto` runs the CPU twins"));
        return None;
    }
    match shared() {
        Ok(g) if g.info().device_type != wgpu::DeviceType::Cpu => Some(g),
        Ok(g) => {
            NOTE.get_or_init(|| {
                log::warn!(
                    "{} is a software adapter; `auto` runs the CPU twins",
                    g.info()
                )
            });
            None
        }
        Err(e) => {
            NOTE.get_or_init(|| {
                log::warn!("no usable GPU ({}); `auto` runs the CPU twins", e.report())
            });
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in DeviceChoice::NAMES {
            let d: DeviceChoice = name.parse().expect("a listed name parses");
            assert_eq!(d.to_string(), name);
        }
        assert!("tpu".parse::<DeviceChoice>().is_err());
    }
}
