//! Writes the synthetic world as a nuScenes v1.0 dataroot: the 13 JSON tables, camera JPEGs
//! (keyframes under `samples/`, the ~12 Hz rest under `sweeps/`), LIDAR_TOP point clouds at
//! 20 Hz (object returns on keyframes, ground only on sweeps) and one map mask per location.
//!
//! Timing follows nuScenes: a sample is the LIDAR_TOP keyframe; every camera runs at its own
//! phase a few tens of milliseconds before the lidar, and its keyframe image is the frame
//! nearest the sample; a sweep belongs to the sample that follows it. Every sample_data has its
//! own ego_pose at its own timestamp.
//!
//! The parts: this file holds the corpus-wide constants, [`write`](fn@write) and the map masks;
//! `plan` fixes every scene's timestamps and files, `images` builds, renders and measures the
//! scenes a chunk at a time, `rows` turns a scene into its table rows, `lidar` makes the point
//! clouds and `tables` holds the rows and streams them to the JSON files.

mod images;
mod lidar;
mod plan;
mod rows;
mod tables;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::rig::{self, CAMERAS};
use super::tokens::token;
use super::world::{SceneWorld, PLACES};
use super::{SynthOptions, SynthSummary};
use crate::formats::nuscenes::*;
use crate::store::atomic::write_atomic;
use crate::{Error, Result};
use images::Chunk;
use rows::SceneRows;
use tables::{fixed_tables, TableStreams, Tables};

pub(crate) use images::solids_at;
pub(crate) use plan::scene_start_us;

/// The first keyframe of the corpus: 2018-07-24 03:28:47.647951 UTC, when nuScenes-mini was
/// being recorded.
pub(crate) const T0_US: i64 = 1_532_402_927_647_951;
/// Scenes start at least this far apart (µs), and 30 s more than a scene lasts.
pub(crate) const SCENE_SPACING_US: i64 = 90_000_000;
/// Objects farther than this from the ego are not annotated (m).
pub(crate) const ANNOTATION_RANGE: f64 = 60.0;

/// A sensor channel of the rig: the six cameras, then the lidar.
const LIDAR: usize = 6;
/// LIDAR_TOP sweep rate (Hz), nuScenes' 20 Hz.
const LIDAR_HZ: f64 = 20.0;

fn channel_name(ch: usize) -> &'static str {
    if ch == LIDAR {
        rig::LIDAR_TOP_CHANNEL
    } else {
        CAMERAS[ch].channel
    }
}

/// One map mask per location used, covering that location's roads at 1 m per pixel
/// (`log_locations`: each log's location and token).
fn write_map_masks(
    out: &Path,
    seed: u64,
    log_locations: &[(String, String)],
    worlds: &[SceneWorld],
    t: &mut Tables,
) -> Result<()> {
    for place in PLACES {
        let logs: Vec<String> = log_locations
            .iter()
            .filter(|(location, _)| location == place.location)
            .map(|(_, token)| token.clone())
            .collect();
        if logs.is_empty() {
            continue;
        }
        let map_tok = token(seed, &format!("map/{}", place.location));
        let filename = format!("maps/{map_tok}.png");
        let roads: Vec<_> = worlds
            .iter()
            .filter(|w| w.place.location == place.location)
            .flat_map(|w| w.roads.iter())
            .collect();
        write_atomic(&out.join(&filename), &map_png(&roads)?)?;
        t.map.push(Map {
            token: map_tok,
            log_tokens: logs,
            category: "semantic_prior".into(),
            filename,
        });
    }
    Ok(())
}

/// Writes the dataroot.
pub(crate) fn write(out: &Path, opts: &SynthOptions) -> Result<SynthSummary> {
    opts.validate()?;
    let _owned = crate::store::owner::Owned::claim(out, "synthetic corpus", "the corpus")?;
    let started = Instant::now();
    let seed = opts.seed;
    let mut t = fixed_tables(seed);

    let mut lidar_files = 0usize;
    let mut images = 0usize;
    let mut job_count = 0usize;
    let render_ns = AtomicU64::new(0);
    let size = (opts.image_width, opts.image_height);
    // Worlds are built, drawn and written a few scenes at a time, and their table rows go to
    // disk after each chunk, so memory stays flat however many scenes are asked for. Only the
    // road layout of each world is kept, for the map masks and layers written at the end.
    let chunk = (2 * rayon::current_num_threads()).max(1);
    let mut streams = TableStreams::create(&out.join(&opts.version))?;
    let mut log_locations: Vec<(String, String)> = Vec::new();
    let mut layouts: Vec<SceneWorld> = Vec::new();
    let bar = crate::progress::bar(opts.scenes as u64, "synth scenes");
    for start in (0..opts.scenes).step_by(chunk) {
        let end = (start + chunk).min(opts.scenes);
        let c = Chunk::build(opts, start..end)?;
        let jobs = c.jobs();
        job_count += jobs.len();
        c.render_images(out, opts, &jobs, &render_ns)?;
        let kf = c.keyframe_coverage(&jobs);
        for (local, (world, plan)) in c.worlds.iter().zip(&c.plans).enumerate() {
            let scene = SceneRows::new(seed, start + local, world, plan, size);
            let log_tok = scene.push_scene(&mut t);
            log_locations.push((world.place.location.to_string(), log_tok));
            let cs_tok = scene.push_calibrated_sensors(&mut t);
            images += scene.push_sample_data(&mut t, &cs_tok);
            let clouds = scene.push_annotations(&mut t, &kf[local]);
            lidar_files += scene.write_point_clouds(out, clouds)?;
        }
        streams.flush(&mut t)?;
        layouts.extend(c.worlds.into_iter().map(SceneWorld::layout_only));
        bar.inc((end - start) as u64);
    }
    bar.finish_and_clear();
    let worlds = layouts;

    write_map_masks(out, seed, &log_locations, &worlds, &mut t)?;
    // The road layout as map-expansion polygons (STSBench's map layers).
    super::map::write_expansions(out, seed, &worlds)?;

    streams.flush(&mut t)?;
    let n = streams.finish()?;
    let summary = SynthSummary {
        out: out.to_path_buf(),
        version: opts.version.clone(),
        scenes: n["scene"],
        samples: n["sample"],
        sample_data: n["sample_data"],
        ego_poses: n["ego_pose"],
        instances: n["instance"],
        annotations: n["sample_annotation"],
        images,
        lidar_files,
        render_ms_per_image: if job_count == 0 {
            0.0
        } else {
            render_ns.load(Ordering::Relaxed) as f64 / 1e6 / job_count as f64
        },
        elapsed_s: started.elapsed().as_secs_f64(),
    };
    Ok(summary)
}

/// A road mask (255 between the kerbs) at 1 m per pixel over the roads' bounding box, with the
/// box's minimum at the bottom-left as in nuScenes' map masks.
fn map_png(roads: &[&super::world::Road]) -> Result<Vec<u8>> {
    const RES: f64 = 1.0;
    const MAX_SIDE: u32 = 4096;
    let mut lo = [f64::INFINITY; 2];
    let mut hi = [f64::NEG_INFINITY; 2];
    for r in roads {
        for (s, d) in [
            (r.s_min, -r.half_width()),
            (r.s_min, r.half_width()),
            (r.s_max, -r.half_width()),
            (r.s_max, r.half_width()),
        ] {
            let p = r.point(s, d);
            for a in 0..2 {
                lo[a] = lo[a].min(p[a]);
                hi[a] = hi[a].max(p[a]);
            }
        }
    }
    if !lo[0].is_finite() {
        lo = [0.0; 2];
        hi = [1.0; 2];
    }
    let wpx = (((hi[0] - lo[0]) / RES).ceil() as u32).clamp(1, MAX_SIDE);
    let hpx = (((hi[1] - lo[1]) / RES).ceil() as u32).clamp(1, MAX_SIDE);
    let mut img = image::GrayImage::new(wpx, hpx);
    for (x, y, px) in img.enumerate_pixels_mut() {
        let p = [
            lo[0] + (f64::from(x) + 0.5) * RES,
            lo[1] + (f64::from(hpx - 1 - y) + 0.5) * RES,
        ];
        if roads.iter().any(|r| r.on_carriageway(p, 0.0)) {
            px.0 = [255];
        }
    }
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .map_err(|e| Error::Tool {
            tool: "png encoder".into(),
            detail: e.to_string(),
        })?;
    Ok(out)
}
