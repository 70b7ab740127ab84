#![allow(dead_code)]
pub mod nusc_fixture;
pub mod oracle;
