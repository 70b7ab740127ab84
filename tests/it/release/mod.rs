//! Building and publishing: `drivegen build` and its sources, balancing, the release and what
//! it promises, its validation, scoring, exports, the Hub view, robustness splits, render-once,
//! the demo and the published schemas.

mod balance;
mod blind_one_scene;
mod build;
mod build_sources;
mod demo;
mod end_to_end;
mod export;
mod export_lmms_eval;
mod hub;
mod promises;
mod render_once;
mod robustness;
mod schemas;
mod score;
mod validate;
