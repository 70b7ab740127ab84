//! The corruption CPU twins on one thread, one 1600×900 image each: the figures behind
//! `drivegen bench corrupt`'s CPU column without its thread pool, so a change to one twin is
//! measured alone. Fog is also split into its plasma map and the composite.
//!
//! `cargo bench --bench corrupt`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput};
use drivegen::config::StageConfig;
use drivegen::corrupt::bench::test_image;
use drivegen::corrupt::weather::{fog_map_cpu, FogPlan};
use drivegen::corrupt::{apply_cpu, plan_frame, CorruptConfig, Corruption, View};

const TWINS: [Corruption; 8] = [
    Corruption::Brightness,
    Corruption::Saturate,
    Corruption::MotionBlur,
    Corruption::ZoomBlur,
    Corruption::Snow,
    Corruption::Fog,
    Corruption::Dark,
    Corruption::Rain,
];

fn main() {
    // `cargo test --all-targets` runs bench targets without `--bench`: nothing to measure.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let mut c = Criterion::default().configure_from_args().sample_size(10);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let cfg = CorruptConfig::default_config().unwrap();
    let img = test_image(1600, 900);
    let view = [View {
        image_id: "bench",
        camera: "CAM_FRONT",
        image: &img,
    }];
    let mut g = c.benchmark_group("corrupt_cpu_1thread");
    g.throughput(Throughput::Elements(1));
    for corruption in TWINS {
        let sev = cfg.default_severity(corruption);
        let plan = plan_frame(&cfg, corruption, sev, 0, "bench", &view)
            .unwrap()
            .remove(0)
            .plan;
        g.bench_function(corruption.name(), |b| {
            b.iter(|| pool.install(|| apply_cpu(&img, &plan)))
        });
    }
    let key = drivegen::corrupt::rng::Key::new(0, "bench", Corruption::Fog.index(), 5);
    let fog = FogPlan::new(&cfg, 5, key, 1600, 900);
    g.bench_function("fog_map", |b| b.iter(|| pool.install(|| fog_map_cpu(&fog))));
    g.finish();
    c.final_summary();
}
