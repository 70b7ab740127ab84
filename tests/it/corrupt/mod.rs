//! The corruptions: kernels against their CPU twins, against the public reference, the codec
//! corruptions through ffmpeg, and `drivegen corrupt` end to end.

mod corrupt_batched;
mod corrupt_cli;
mod corrupt_codec;
mod corrupt_kernels;
mod corrupt_reference;
