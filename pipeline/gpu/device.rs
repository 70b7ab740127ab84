//! Which device a stage runs on: [`DeviceChoice`] and [`open`], the one place that decides.
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

/// The device `choice` asks for; `None` means the CPU twins.
///
/// `auto` opens the adapter once per process and reuses it, so a build that asks for it at
/// every step prints its note once and never holds two devices.
pub fn open(choice: DeviceChoice) -> Result<Option<Arc<Gpu>>> {
    let gpu = match choice {
        DeviceChoice::Cpu => None,
        DeviceChoice::Gpu => Some(Arc::new(Gpu::open()?)),
        DeviceChoice::Auto => hardware(),
    };
    match &gpu {
        Some(g) => log::info!("device {choice}: the GPU {}", g.info()),
        None => log::info!("device {choice}: the CPU twins"),
    }
    Ok(gpu)
}

fn hardware() -> Option<Arc<Gpu>> {
    static GPU: OnceLock<Option<Arc<Gpu>>> = OnceLock::new();
    GPU.get_or_init(|| match Gpu::open() {
        Ok(g) if g.info().device_type != wgpu::DeviceType::Cpu => Some(Arc::new(g)),
        Ok(g) => {
            log::warn!(
                "{} is a software adapter; `auto` runs the CPU twins",
                g.info()
            );
            None
        }
        Err(e) => {
            log::warn!("no usable GPU ({}); `auto` runs the CPU twins", e.report());
            None
        }
    })
    .clone()
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
