//! Ingest: source datasets → the canonical scene store.

pub mod nuscenes;
