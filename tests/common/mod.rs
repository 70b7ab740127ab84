#![allow(dead_code)]
pub mod gpu;
pub mod nusc_fixture;
pub mod oracle;
pub mod random;
