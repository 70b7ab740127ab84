//! GPU host code for the corruption kernels (filled in below).
