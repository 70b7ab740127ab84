//! Frames/s of the four ingest adapters on one small synthetic world (2 scenes of 10 s,
//! 160×90 images, keyframe images only), written once per format in setup: nuScenes
//! (throughput counted in keyframes, the frames the store gets), Waymo v2 and Bench2Drive
//! (10 Hz frames) and Frenetix (10 Hz ego-only rows). Each iteration writes a fresh store.
//!
//! `cargo bench --bench ingest`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, BatchSize, Criterion, Throughput};
use drivegen::config::StageConfig;
use drivegen::ingest::nuscenes::{IngestOptions, SceneRules};
use drivegen::ingest::sources::SourcesConfig;
use drivegen::ingest::{carla, frenetix, waymo};
use drivegen::store::Store;
use drivegen::synth::waymo::WaymoSynthOptions;
use drivegen::synth::SynthOptions;
use drivegen::taxonomy::Taxonomy;

struct Corpus {
    dir: tempfile::TempDir,
    base: SynthOptions,
    taxonomy: Taxonomy,
    config: SourcesConfig,
}

impl Corpus {
    fn root(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A fresh, not yet existing store folder.
    fn fresh_out(&self) -> PathBuf {
        let out = self.dir.path().join("out");
        let _ = std::fs::remove_dir_all(&out);
        out
    }
}

fn corpus() -> Corpus {
    let dir = tempfile::tempdir().unwrap();
    let base = SynthOptions {
        scenes: 2,
        duration_s: 10.0,
        image_width: 160,
        image_height: 90,
        write_sweeps: false,
        ..Default::default()
    };
    let d = dir.path();
    drivegen::synth::write_nuscenes(&d.join("nusc"), &base).unwrap();
    drivegen::synth::waymo::write(
        &d.join("waymo"),
        &WaymoSynthOptions {
            base: base.clone(),
            ..Default::default()
        },
    )
    .unwrap();
    drivegen::synth::bench2drive::write(&d.join("b2d"), &base).unwrap();
    drivegen::synth::frenetix::write(&d.join("frenetix"), &base).unwrap();
    Corpus {
        dir,
        base,
        taxonomy: Taxonomy::load(None).unwrap(),
        config: SourcesConfig::load(None).unwrap(),
    }
}

fn frames_in(store: &Path) -> u64 {
    Store::open(store).unwrap().meta().counts.frames
}

fn bench(c: &mut Criterion) {
    let k = corpus();
    let nusc = |out: PathBuf| {
        drivegen::ingest::nuscenes::ingest(&IngestOptions {
            root: k.root("nusc"),
            version: k.base.version.clone(),
            out,
            taxonomy: k.taxonomy.clone(),
            rules: SceneRules::default(),
            chunk_scenes: 2,
            links: Default::default(),
        })
        .unwrap();
    };
    let waymo = |out: PathBuf| {
        waymo::run(&waymo::Options {
            root: k.root("waymo"),
            out,
            taxonomy: k.taxonomy.clone(),
            config: k.config.clone(),
            links: Default::default(),
        })
        .unwrap();
    };
    let b2d = |out: PathBuf| {
        carla::run(&carla::Options {
            root: k.root("b2d"),
            out,
            taxonomy: k.taxonomy.clone(),
            config: k.config.clone(),
            links: Default::default(),
        })
        .unwrap();
    };
    let fren = |out: PathBuf| {
        frenetix::run(&frenetix::Options {
            root: k.root("frenetix"),
            out,
            config: k.config.clone(),
            links: Default::default(),
        })
        .unwrap();
    };
    let adapters: [(&str, &dyn Fn(PathBuf)); 4] = [
        ("nuscenes", &nusc),
        ("waymo_v2", &waymo),
        ("bench2drive", &b2d),
        ("frenetix", &fren),
    ];
    let mut g = c.benchmark_group("ingest");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    for (name, run) in adapters {
        // The throughput is the frames the adapter actually stores.
        let out = k.fresh_out();
        run(out.clone());
        let frames = frames_in(&out);
        assert!(frames > 0, "{name}: no frames ingested");
        eprintln!("{name}: {frames} frames per ingest");
        g.throughput(Throughput::Elements(frames));
        g.bench_function(name, |b| {
            b.iter_batched(|| k.fresh_out(), run, BatchSize::PerIteration)
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
fn main() {
    if !measuring() {
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}

/// `cargo test --all-targets` runs bench targets without `--bench`; they measure nothing
/// there, so they return at once instead of building their corpora.
fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}
