//! Reading the source formats into the store: the nuScenes, Waymo v2 and CARLA/Bench2Drive
//! adapters, the synthetic corpus they are tested on, links, unusable images and the store's
//! image reader.

mod bad_images;
mod devkit_ingest;
mod devkit_links;
mod ingest_carla;
mod ingest_nuscenes;
mod ingest_waymo;
mod store_images;
mod synth;
mod three_formats;
