//! `drivegen gpu-info`: the adapters wgpu finds and the one drivegen would use.

use std::process::ExitCode;

use crate::Result;

pub fn run() -> Result<ExitCode> {
    print!("{}", crate::gpu::adapter_report()?);
    Ok(ExitCode::SUCCESS)
}
