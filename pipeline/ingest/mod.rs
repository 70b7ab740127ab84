//! Ingest: source datasets → the canonical scene store.

pub mod nuscenes;

pub mod carla;
pub mod frenetix;
pub mod limits;
pub mod source;
pub mod sources;
pub mod waymo;

pub use source::{ingest, reject, utf8_name, SceneIds, SceneSource};
