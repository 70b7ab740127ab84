//! drivegen: a GPU-accelerated generator of vision-language benchmark datasets for
//! autonomous driving.
//!
//! Data flows one way, floor by floor; each stage reads tables and writes tables, and a module
//! uses only the floors below it (`ARCHITECTURE.md` draws the whole house).
//!
//! 1. **Ground**: [`error`], [`config`] (TOML loading), [`progress`], [`geometry`], [`jpeg`],
//!    [`svg`] (report plots), [`taxonomy`], [`schemas`]; [`store`] (the scene store, capped
//!    input reads and every file-system guarantee) with [`shard`]; [`gpu`] (the device, opened
//!    once per process, and the kernel table) with [`cpu`] (the shared twin of point
//!    projection).
//! 2. **Source layouts**: [`formats`] (nuScenes tables, Waymo v2 columns, CARLA frames, and
//!    the one [`formats::Format`]).
//! 3. **Sources**: [`synth`] writes the built-in synthetic corpus in any layout; [`ingest`]
//!    reads a dataset root into the canonical Arrow [`store`]; [`images`] reads the camera
//!    images a store points at.
//! 4. **Stages** (store → tables): [`egomotion`] (EgoDyn clips, kinematics, oracle), [`visibility`]
//!    (projection, z-buffer, the Set-of-Mark anchors), [`som`] (marks from the visibility
//!    table), [`metavqa`], [`sig`] and [`stsbench`] (with [`tracks`] and [`maplayers`]),
//!    [`corrupt`] (DriveBench's corruptions and their questions); [`qa`] is their common record.
//! 5. **Release**: [`balance`], [`audit`] (blind baselines), [`robustness`] (what a setting
//!    re-asks), [`release`] (Parquet shards, manifest, card).
//! 6. **Readers of a release**: [`validate`], [`score`], [`export`], [`view`], [`inspect`].
//! 7. **The build**: [`chain`] runs all of it as one checkpointed, resumable, shardable build
//!    with its report; [`bench`](mod@bench) times the stages.
//! 8. **The command line**: [`cli`], one file per command; the binary only calls [`cli::main`].

// The docs are the contributors' map of the whole house (`cargo doc --document-private-items`
// in the test script), so a public item's doc may link to the crate-private items it is built
// from; broken links stay denied.
#![allow(rustdoc::private_intra_doc_links)]

pub mod audit;
pub mod balance;
pub(crate) mod bench;
pub(crate) mod chain;
pub mod cli;
pub mod config;
pub mod corrupt;
pub mod cpu;
pub mod egomotion;
pub(crate) mod error;
pub(crate) mod export;
pub mod formats;
pub mod geometry;
pub mod gpu;
pub mod images;
pub mod ingest;
pub(crate) mod inspect;
pub mod jpeg;
pub(crate) mod progress;
pub mod qa;
pub mod release;
pub(crate) mod robustness;
pub mod schemas;
pub mod score;
pub(crate) mod shard;
pub mod som;
pub mod store;
pub(crate) mod svg;
pub mod synth;
pub mod taxonomy;
pub mod validate;
pub(crate) mod view;
pub mod visibility;

pub use error::{Error, Result};
pub mod maplayers;
pub mod metavqa;
#[cfg(test)]
mod mirrors;
pub mod sig;
pub mod stsbench;
pub mod tracks;
