//! The plain-Rust twin of `kernels/project_points.wgsl`, the one kernel no stage owns.
//!
//! Every other kernel's twin lives with its stage, beside the GPU driver that dispatches it
//! (the z-buffer in `visibility::raster`, the anchors in `visibility::anchor`, the marks in
//! `som::draw`, the corruptions in `corrupt`); `gpu::KERNELS` names each kernel's twin and
//! file. This twin repeats the kernel's f32 arithmetic in the same order, so the two compare
//! within a tight, documented tolerance; it is the fallback when no adapter is usable and the
//! ground truth the GPU results are tested against. The `#[repr(C)]` structs the kernel reads
//! and writes are defined next to it, and the GPU side reuses them: one memory layout.

pub mod project_points;

pub use project_points::{project_points, ProjectParams, Projected};

/// Defines `fn $name(args) -> R` that runs `$any(args)` compiled for AVX2 where the CPU has it,
/// and as it is elsewhere. `$any` should be `#[inline(always)]`, so that its loops are
/// vectorised for AVX2 in the clone. The twins add and multiply in the same order either way
/// (Rust never fuses a multiply and an add on its own), so both builds give the same bits.
macro_rules! avx2_clone {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($a:ident: $t:ty),* $(,)?) $(-> $r:ty)? = $any:ident;) => {
        $(#[$m])*
        $vis fn $name($($a: $t),*) $(-> $r)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                unsafe fn avx2($($a: $t),*) $(-> $r)? {
                    $any($($a),*)
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU was just found to have AVX2.
                    return unsafe { avx2($($a),*) };
                }
            }
            $any($($a),*)
        }
    };
}
pub(crate) use avx2_clone;
