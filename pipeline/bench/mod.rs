//! `drivegen bench`: throughput of the codecs and the GPU stages against their CPU twins and the Python
//! methods they replace, on the same inputs, printed as a table (copied into BENCHMARKS.md).
//! The criterion benches under `benches/` cover the CPU-only stages.

pub(crate) mod codecs;
pub(crate) mod visibility;
