//! The device shared by the GPU tests of one test binary.

use std::sync::OnceLock;

use drivegen::gpu::Gpu;

/// The shared device, or `None` (after saying so) when `DRIVEGEN_GPU_TESTS=no`. Failing to
/// open one panics: GPU tests must never pass silently on a machine without an adapter.
pub fn gpu() -> Option<&'static Gpu> {
    if std::env::var("DRIVEGEN_GPU_TESTS").is_ok_and(|v| v.eq_ignore_ascii_case("no")) {
        eprintln!("DRIVEGEN_GPU_TESTS=no: skipping a GPU test");
        return None;
    }
    static GPU: OnceLock<Gpu> = OnceLock::new();
    Some(GPU.get_or_init(|| {
        // Mesa's window-system probing complains on stderr without it; set before any
        // driver code runs (all GPU tests come through here first).
        if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
            std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
        }
        let gpu = Gpu::open()
            .unwrap_or_else(|e| panic!("{e}\n(set DRIVEGEN_GPU_TESTS=no to skip GPU tests)"));
        eprintln!("GPU tests run on {}", gpu.info());
        gpu
    }))
}
