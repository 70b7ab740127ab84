//! Clips/s of EgoDyn kinematics + oracle (resampling, gradient + Savitzky–Golay stages,
//! validation, features, the 14 answers with their evidence).
//!
//! `cargo bench --bench egomotion` also writes the clips it measures to
//! `target/egodyn-bench-clips.json`; the numpy/scipy implementation measures the same clips:
//! `.venv-oracles/bin/python benches/reference/egomotion.py bench --clips target/egodyn-bench-clips.json`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, Criterion, Throughput};
use drivegen::config::StageConfig;
use drivegen::egomotion::clips::{PoseSample, RawClip};
use drivegen::egomotion::config::EgodynConfig;
use drivegen::egomotion::Engine;
use drivegen::geometry::wrap_pi;
use drivegen::qa::record::SplitMix64;
use rayon::prelude::*;

const T0_US: i64 = 1_533_151_603_000_000;

/// A random 3 s drive sampled at ~12 Hz with jitter (the generator of
/// tests/it/egomotion/egomotion_reference.rs).
fn random_clip(seed: u64) -> RawClip {
    let mut rng = SplitMix64::new(seed);
    let mut u = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let v0 = u() * 18.0;
    let (va, vf, vp) = (u() * 6.0, 0.3 + u() * 2.0, u() * 6.3);
    let ramp = (u() - 0.6) * 6.0;
    let (wa, wf, wp, wb) = (u() * 0.4, 0.2 + u() * 1.5, u() * 6.3, (u() - 0.5) * 0.3);
    let offset_us = (u() * 40_000.0) as i64;
    let (mut x, mut y, mut h) = (
        u() * 1000.0,
        u() * 1000.0,
        (u() - 0.5) * std::f64::consts::TAU,
    );
    let mut samples = Vec::new();
    let (mut next, mut k) = (offset_us, 0);
    for ms in 0..=3040 {
        let t = ms as f64 / 1000.0;
        if ms * 1000 >= next {
            samples.push(PoseSample {
                timestamp_us: T0_US + ms * 1000,
                x,
                y,
                yaw: wrap_pi(h),
            });
            k += 1;
            next = offset_us + k * 83_333 + ((u() - 0.5) * 8_000.0) as i64;
        }
        let v = (v0 + va * (vf * t + vp).sin() + ramp * t).max(0.0);
        let w = wa * (wf * t + wp).sin() + wb;
        x += v * h.cos() * 0.001;
        y += v * h.sin() * 0.001;
        h += w * 0.001;
    }
    RawClip {
        clip_id: format!("bench-{seed}"),
        scene_id: "bench".into(),
        source: "synthetic".into(),
        anchor_timestamp_us: samples.last().map_or(T0_US, |s| s.timestamp_us),
        anchor_frame_idx: None,
        duration_s: 3.0,
        samples,
        images: Vec::new(),
    }
}

fn write_clips(clips: &[RawClip]) {
    let json = serde_json::json!({
        "clips": clips.iter().map(|c| serde_json::json!({
            "ts_us": c.samples.iter().map(|s| s.timestamp_us).collect::<Vec<_>>(),
            "x": c.samples.iter().map(|s| s.x).collect::<Vec<_>>(),
            "y": c.samples.iter().map(|s| s.y).collect::<Vec<_>>(),
            "yaw": c.samples.iter().map(|s| s.yaw).collect::<Vec<_>>(),
            "duration": c.duration_s,
        })).collect::<Vec<_>>()
    });
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let _ = std::fs::create_dir_all(&target);
    let _ = std::fs::write(target.join("egodyn-bench-clips.json"), json.to_string());
}

fn bench(c: &mut Criterion) {
    let engine = Engine::new(EgodynConfig::default_config().unwrap()).unwrap();
    let clips: Vec<RawClip> = (0..1000).map(random_clip).collect();
    write_clips(&clips);
    let mut g = c.benchmark_group("egomotion");
    g.throughput(Throughput::Elements(clips.len() as u64));
    g.bench_function("kinematics+oracle", |b| {
        b.iter(|| {
            for c in &clips {
                let (k, f) = engine.process(black_box(c)).unwrap();
                black_box(engine.oracle.answers(&k, &f));
            }
        })
    });
    g.bench_function("kinematics+classes", |b| {
        b.iter(|| {
            for c in &clips {
                let (k, f) = engine.process(black_box(c)).unwrap();
                black_box(engine.oracle.classes(&k, &f));
            }
        })
    });
    g.bench_function("kinematics+oracle/parallel", |b| {
        b.iter(|| {
            clips.par_iter().for_each(|c| {
                let (k, f) = engine.process(black_box(c)).unwrap();
                black_box(engine.oracle.answers(&k, &f));
            })
        })
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
