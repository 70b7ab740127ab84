//! The integration tests, one binary with a folder per area (linking wgpu, arrow and parquet
//! once instead of once per file). Each module drives the built `drivegen` binary or the
//! library the way a user does; `common` holds fixtures shared between them, and
//! `tests/oracles/` the Python references they run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod cli;
mod corrupt;
mod egomotion;
mod families;
mod gpu;
mod hostile;
mod ingest;
mod release;
mod visibility;
