//! Windows/s of STSBench mining (every role, every scenario, verified negatives) in a dense
//! scene: the ego and 100 tracks (70 vehicles in 4 lanes both ways, 30 pedestrians on the
//! sidewalks) over 40 keyframes, and how the candidate-pair count grows with the track count
//! (the kiddo radius search: linear in tracks at a fixed density, not quadratic).
//!
//! `cargo bench --bench stsbench`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{criterion_group, Criterion, Throughput};
use drivegen::config::StageConfig;
use drivegen::qa::record::SplitMix64;
use drivegen::stsbench::mine::mine_scene;
use drivegen::stsbench::StsConfig;
use drivegen::tracks::{candidate_pairs, Kind, Track};

const FRAMES: u32 = 40;

/// The ego and `n` tracks spread along a road `n × 4` m long (a fixed density).
fn dense_scene(n: usize, seed: u64) -> Vec<Track> {
    let mut rng = SplitMix64::new(seed);
    let mut u = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let length = n as f64 * 4.0;
    let t: Vec<f64> = (0..FRAMES).map(|k| 0.5 * f64::from(k)).collect();
    let make = |id: &str, class: &str, kind: Kind, x0: f64, y: f64, v: f64, yaw: f64, a: f64| {
        let mut xy = Vec::new();
        let mut speed = Vec::new();
        let mut s = 0.0;
        for k in 0..FRAMES {
            let tk = 0.5 * f64::from(k);
            let vk = (v + a * tk).max(0.0);
            speed.push(vk);
            xy.push([x0 + s * yaw.cos(), y + s * yaw.sin()]);
            s += 0.5 * vk;
        }
        Track::new(
            id,
            class,
            kind,
            (0..FRAMES).collect(),
            t.clone(),
            xy,
            vec![yaw; FRAMES as usize],
            speed,
        )
    };
    let mut out = vec![make("ego", "ego", Kind::Vehicle, 0.0, -1.75, 8.0, 0.0, 0.0)];
    for i in 0..n {
        let id = format!("t{i}");
        if i % 10 < 7 {
            let lane = (u() * 4.0).floor();
            let forward = lane < 2.0;
            let y = (lane - 1.5) * 3.5;
            let v = if u() < 0.2 { 0.0 } else { 3.0 + u() * 10.0 };
            let yaw = if forward { 0.0 } else { std::f64::consts::PI };
            let a = (u() - 0.5) * 2.0;
            out.push(make(&id, "car", Kind::Vehicle, u() * length, y, v, yaw, a));
        } else {
            let side = if u() < 0.5 { -9.0 } else { 9.0 };
            let yaw = if u() < 0.5 { 0.0 } else { std::f64::consts::PI };
            let v = if u() < 0.3 { 0.0 } else { 0.8 + u() * 1.0 };
            out.push(make(
                &id,
                "pedestrian",
                Kind::Human,
                u() * length,
                side + u(),
                v,
                yaw,
                0.0,
            ));
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let cfg = StsConfig::load(None).unwrap();
    let scene = dense_scene(100, 7);
    let probe = mine_scene(&cfg, &scene);
    println!(
        "dense scene: {} tracks, {} frames, {} windows, {} instances",
        scene.len(),
        FRAMES,
        probe.windows,
        probe.instances.len()
    );
    for n in [50, 100, 200, 400, 800] {
        let s = dense_scene(n, 7);
        println!(
            "candidate pairs within {} m, {n} tracks: {}",
            cfg.pair_radius(),
            candidate_pairs(&s, cfg.pair_radius()).len()
        );
    }
    let mut g = c.benchmark_group("stsbench");
    g.sample_size(10);
    g.throughput(Throughput::Elements(probe.windows));
    g.bench_function("mine_scene_100_tracks", |b| {
        b.iter(|| black_box(mine_scene(&cfg, black_box(&scene))))
    });
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
