//! drivegen: a GPU-accelerated generator of vision-language benchmark datasets for
//! autonomous driving.
//!
//! Data flows one way, and each stage reads tables and writes tables:
//!
//! 1. [`synth`] writes the built-in synthetic corpus in the nuScenes v1.0 layout.
//! 2. [`ingest`] reads a source dataset (nuScenes, …) into the canonical Arrow [`store`].
//! 3. [`egomotion`] resamples ego poses, smooths them (Savitzky–Golay), cuts 3 s clips and
//!    answers the EgoDyn questions.
//! 4. [`gpu`] opens the wgpu device and runs the WGSL kernels of `kernels/`; [`cpu`] holds
//!    their plain-Rust twins.
//! 5. [`visibility`] projects every box into every camera and measures what the z-buffer shows.
//! 6. [`som`] places Set-of-Mark labels (anchors, layout) and draws boxes and numbers into the
//!    camera images.
//! 7. [`chain`] runs the stages above as one checkpointed, resumable, shardable build and
//!    writes the release ([`balance`], [`release`]) and its report.

pub mod audit;
pub mod balance;
pub mod bench;
pub mod chain;
pub mod config;
pub mod corrupt;
pub mod cpu;
pub mod egomotion;
pub mod error;
pub mod export;
pub mod geometry;
pub mod gpu;
pub mod images;
pub mod ingest;
pub mod inspect;
pub mod jpeg;
pub mod progress;
pub mod qa;
pub mod release;
pub mod robustness;
pub mod schemas;
pub mod score;
pub mod shard;
pub mod som;
pub mod store;
pub mod synth;
pub mod taxonomy;
pub mod validate;
pub mod view;
pub mod visibility;

pub use error::{Error, Result};

// STSBench scenario mining and SIG grids, with the map layers and track series they read.
pub mod maplayers;
/// The MetaVQA question family (scene graphs, 30 question types, Set-of-Mark images).
pub mod metavqa;
#[cfg(test)]
mod mirrors;
pub mod sig;
pub mod stsbench;
pub mod tracks;
