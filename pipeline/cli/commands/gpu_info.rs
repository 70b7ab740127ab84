//! `drivegen gpu-info`: the adapters wgpu finds and the one drivegen would use.

use std::process::ExitCode;

use drivegen::Result;

pub fn run() -> Result<ExitCode> {
    print!("{}", drivegen::gpu::adapter_report()?);
    Ok(ExitCode::SUCCESS)
}
