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

pub mod audit;
pub mod balance;
pub mod bench;
pub mod chain;
pub mod cli;
pub mod config;
pub mod corrupt;
pub mod cpu;
pub mod egomotion;
pub mod error;
pub mod export;
pub mod formats;
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
pub mod svg;
pub mod synth;
pub mod taxonomy;
pub mod validate;
pub mod view;
pub mod visibility;

pub use error::{Error, Result};
pub mod maplayers;
pub mod metavqa;
#[cfg(test)]
mod mirrors;
pub mod sig;
pub mod stsbench;
pub mod tracks;
