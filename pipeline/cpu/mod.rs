//! Plain-Rust twins of the WGSL kernels in `kernels/`.
//!
//! Every kernel has a twin here that repeats its f32 arithmetic in the same order, so that
//! the two can be compared within a tight, documented tolerance. The twins are the fallback
//! when no adapter is usable and the ground truth the GPU results are tested against. The
//! `#[repr(C)]` structs a kernel reads and writes are defined next to its twin, and the GPU
//! side reuses them, so both sides share one memory layout.

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
