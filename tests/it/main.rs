//! The integration tests, one binary with a module per area (linking wgpu, arrow and parquet
//! once instead of once per file). Each module drives the built `drivegen` binary or the
//! library the way a user does; `common` holds fixtures shared between them, and
//! `tests/oracles/` the Python references they run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod egomotion_support;

mod anchor_rules;
mod bad_images;
mod balance;
mod blind_one_scene;
mod build;
mod build_sources;
mod cli;
mod codecs;
mod corrupt_cli;
mod corrupt_codec;
mod corrupt_kernels;
mod corrupt_reference;
mod demo;
mod devkit_ingest;
mod devkit_links;
mod egomotion_calibrate;
mod egomotion_oracle;
mod egomotion_output;
mod egomotion_reference;
mod egomotion_savgol;
mod export;
mod export_lmms_eval;
mod hostile;
mod hub;
mod ingest_carla;
mod ingest_nuscenes;
mod ingest_waymo;
mod kernels;
mod kernels_zbuffer;
mod metavqa_corpus;
mod metavqa_hand;
mod progress;
mod promises;
mod release;
mod render_once;
mod robustness;
mod schemas;
mod score;
mod sig_corpus;
mod sig_grid;
mod som;
mod store_images;
mod stsbench_corpus;
mod stsbench_rules;
mod synth;
mod three_formats;
mod validate;
mod visibility_corpus;
mod visibility_distortion;
mod visibility_exact;
mod visibility_units;
