//! MetaVQA throughput on the synthetic corpus (1 scene of 20 s at 1600×900: 40 keyframes,
//! 240 camera images):
//!
//! * `metavqa/generate`: scene graphs + all 30 question types + numbering, shuffling and
//!   records, in memory, over every camera image with kept objects (rayon, all cores);
//! * `metavqa/stage_no_images`: `metavqa::run` without images (reads the store and the
//!   visibility table, writes `metavqa_qa.arrow`);
//! * then one timed run each of the whole stage with marked images, drawn on the CPU twin and
//!   on the GPU (when an adapter opens), PNG encoding included.
//!
//! `cargo bench --bench metavqa`; the figures also go to `target/metavqa-bench.md`.
//! `DRIVEGEN_BENCH_IMAGES=no` skips the runs with images.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use criterion::{Criterion, Throughput};
use drivegen::config::StageConfig;
use drivegen::gpu::DeviceChoice;
use drivegen::metavqa::input::scene_kept;
use drivegen::metavqa::rollout::Rollouts;
use drivegen::metavqa::stage::{image_questions, scene_graphs};
use drivegen::metavqa::{self, MetavqaConfig, Options};
use drivegen::som::SomConfig;
use drivegen::store::Store;
use drivegen::visibility;
use drivegen::visibility::table::KeptScenes;
use rayon::prelude::*;

fn corpus(dir: &Path) -> (PathBuf, PathBuf) {
    let root = dir.join("root");
    let opts = drivegen::synth::SynthOptions {
        scenes: 1,
        duration_s: 20.0,
        write_sweeps: false,
        ..Default::default()
    };
    drivegen::synth::write_nuscenes(&root, &opts).unwrap();
    let store = dir.join("store");
    drivegen::ingest::nuscenes::ingest(&drivegen::ingest::nuscenes::IngestOptions {
        root,
        version: opts.version.clone(),
        out: store.clone(),
        taxonomy: drivegen::taxonomy::Taxonomy::load(None).unwrap(),
        rules: Default::default(),
        chunk_scenes: 1,
        links: Default::default(),
    })
    .unwrap();
    let vis = dir.join("vis.arrow");
    let opts = visibility::Options::new(&store, &vis, None).unwrap();
    drivegen::visibility::run(&opts).unwrap();
    (store, vis)
}

fn options(store: &Path, vis: &Path, out: &Path, device: DeviceChoice, images: bool) -> Options {
    Options {
        store: store.to_path_buf(),
        visibility: vis.to_path_buf(),
        out: out.to_path_buf(),
        config: MetavqaConfig::default_config().unwrap(),
        som: SomConfig::default_config().unwrap(),
        device: drivegen::gpu::Device::open(device).unwrap(),
        images,
        scene: None,
    }
}

fn main() {
    if !measuring() {
        return;
    }
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
    let dir = tempfile::tempdir().unwrap();
    let (store, vis) = corpus(dir.path());
    let cfg = MetavqaConfig::default_config().unwrap();
    let ro = Rollouts::new(&cfg);
    let scenes: Vec<_> = Store::open(&store)
        .unwrap()
        .scenes()
        .unwrap()
        .map(|s| s.unwrap())
        .collect();
    let mut table = KeptScenes::open(&vis, None).unwrap();
    let kept: std::collections::HashMap<_, _> = scenes
        .iter()
        .map(|s| {
            let id = s.scene.scene_id.clone();
            let rows = scene_kept(&mut table, &id).unwrap();
            (id, rows)
        })
        .collect();
    let graphs: usize = scenes
        .iter()
        .map(|s| {
            scene_graphs(s, &kept[&s.scene.scene_id], &cfg, &vis)
                .unwrap()
                .len()
        })
        .sum();
    let questions: usize = scenes
        .iter()
        .flat_map(|s| scene_graphs(s, &kept[&s.scene.scene_id], &cfg, &vis).unwrap())
        .map(|g| image_questions(&g, &cfg, &ro).unwrap().records.len())
        .sum();
    let mut c = Criterion::default()
        .sample_size(20)
        .measurement_time(std::time::Duration::from_secs(8))
        .configure_from_args();
    let mut group = c.benchmark_group("metavqa");
    group.throughput(Throughput::Elements(graphs as u64));
    group.bench_function("generate", |b| {
        b.iter(|| {
            let n: usize = scenes
                .iter()
                .map(|s| {
                    let gs = scene_graphs(s, &kept[&s.scene.scene_id], &cfg, &vis).unwrap();
                    gs.par_iter()
                        .map(|g| image_questions(g, &cfg, &ro).unwrap().records.len())
                        .sum::<usize>()
                })
                .sum();
            assert_eq!(n, questions);
        })
    });
    let out = dir.path().join("out");
    group.sample_size(10);
    group.bench_function("stage_no_images", |b| {
        b.iter(|| metavqa::run(&options(&store, &vis, &out, DeviceChoice::Cpu, false)).unwrap())
    });
    group.finish();
    let mut report = format!(
        "MetaVQA on the synthetic corpus: {} camera images with kept objects, {questions} questions\n\n| run | s | camera images/s | questions/s |\n|---|---|---|---|\n",
        graphs
    );
    let runs: &[(&str, DeviceChoice)] =
        if std::env::var("DRIVEGEN_BENCH_IMAGES").is_ok_and(|v| v == "no") {
            &[]
        } else {
            &[
                ("images, CPU draw", DeviceChoice::Cpu),
                ("images, GPU draw", DeviceChoice::Gpu),
            ]
        };
    for &(name, device) in runs {
        let o = options(
            &store,
            &vis,
            &dir.path().join(name.replace([' ', ','], "_")),
            device,
            true,
        );
        let t = Instant::now();
        match metavqa::run(&o) {
            Ok(s) => {
                let secs = t.elapsed().as_secs_f64();
                report.push_str(&format!(
                    "| {name} ({} images written) | {secs:.2} | {:.1} | {:.0} |\n",
                    s.images_written,
                    graphs as f64 / secs,
                    s.questions as f64 / secs
                ));
            }
            Err(e) => report.push_str(&format!("| {name} | – | skipped: {e} | |\n")),
        }
    }
    print!("\n{report}");
    let target =
        PathBuf::from(std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into()));
    std::fs::write(target.join("metavqa-bench.md"), report).unwrap();
    c.final_summary();
}

/// `cargo test --all-targets` runs bench targets without `--bench`; they measure nothing
/// there, so they return at once instead of building their corpora.
fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}
