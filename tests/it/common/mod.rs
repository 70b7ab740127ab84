#![allow(dead_code)]
pub mod build_config;
pub mod cli;
pub mod gpu;
pub mod nusc_fixture;
pub mod oracle;
pub mod random;
pub mod raster;
