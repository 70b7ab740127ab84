//! The WGSL kernels as a whole (every file registered and valid, each kernel against its CPU
//! twin) and the z-buffer kernel.

mod kernels;
mod kernels_zbuffer;
