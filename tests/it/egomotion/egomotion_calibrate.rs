//! Re-calibration: percentile thresholds recomputed from the pool, everything else kept, the
//! written config accepted by `egomotion`, and the α sweep's flip fractions.

use super::support;

use std::path::PathBuf;

use drivegen::config::StageConfig;
use drivegen::egomotion::calibrate::{self, alpha_levels};
use drivegen::egomotion::config::EgodynConfig;
use drivegen::egomotion::kinematics::percentile;
use drivegen::egomotion::oracle::Rule;
use drivegen::egomotion::{self, Engine};
use drivegen::store::Store;

fn scratch(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("egodyn-cal-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn thresholds(cfg: &EgodynConfig, id: &str) -> Vec<f64> {
    match &cfg.questions.iter().find(|q| q.id == id).unwrap().rule {
        Rule::MultiThreshold { thresholds, .. } => thresholds.clone(),
        r => panic!("{id}: {r:?}"),
    }
}

#[test]
fn recalibrates_percentile_thresholds_only() {
    let dir = scratch("run");
    let store_dir = dir.join("store");
    let scenes: Vec<_> = (0..6)
        .map(|i| {
            let a = 0.3 + 0.5 * i as f64;
            support::scene(
                &format!("decel-{i}"),
                7.0,
                10.0,
                5,
                &*support::decel(25.0, a),
            )
        })
        .chain((0..4).map(|i| {
            support::scene(
                &format!("turn-{i}"),
                7.0,
                10.0,
                5,
                &*support::turn(6.0 + i as f64, 0.1 * (i + 1) as f64, 0.5),
            )
        }))
        .collect();
    support::write_store(&store_dir, &scenes);
    let (cfg_out, report) = (dir.join("egodyn.recal.toml"), dir.join("report.md"));
    let s = calibrate::run(&store_dir, None, &cfg_out, &report, Some((0.5, 1.5, 0.1))).unwrap();
    assert!(s.to_string().contains("braking_intensity"));

    // The expected thresholds, from the pool computed independently of calibrate.
    let old = EgodynConfig::default_config().unwrap();
    let engine = Engine::new(old.clone()).unwrap();
    let store = Store::open(&store_dir).unwrap();
    let mut min_accel = Vec::new();
    let mut jerk = Vec::new();
    for scene in store.scenes().unwrap() {
        let (clips, _) = engine.scene_clips(&scene.unwrap(), "synthetic");
        for c in clips {
            min_accel.push(c.features.min_accel);
            jerk.push(c.features.mean_abs_jerk);
        }
    }
    assert_eq!(s.clips, min_accel.len());
    let new = EgodynConfig::load(Some(&cfg_out)).unwrap();
    let want_brake: Vec<f64> = [25.0, 50.0, 75.0]
        .iter()
        .map(|p| percentile(&min_accel, *p))
        .collect();
    let want_jerk: Vec<f64> = [33.0, 67.0].iter().map(|p| percentile(&jerk, *p)).collect();
    assert_eq!(thresholds(&new, "braking_intensity"), want_brake);
    assert_eq!(thresholds(&new, "driving_smoothness"), want_jerk);
    // Physics-anchored and semantic thresholds are untouched; so is everything else.
    for q in [
        "speed_regime",
        "turn_direction",
        "lateral_accel",
        "heading_change",
        "stop_and_go",
        "brake_then_turn",
    ] {
        let a = old.questions.iter().find(|x| x.id == q).unwrap();
        let b = new.questions.iter().find(|x| x.id == q).unwrap();
        assert_eq!(a, b, "{q}");
    }
    assert_eq!(
        (&old.clips, &old.kinematics, &old.prompt),
        (&new.clips, &new.kinematics, &new.prompt)
    );

    // egomotion accepts the written config; about a quarter of the clips per braking class.
    let out = dir.join("out");
    let run = egomotion::run(&egomotion::Options::new(&store_dir, &out, Some(&cfg_out)).unwrap())
        .unwrap();
    let braking = &run
        .labels
        .iter()
        .find(|(q, _)| q == "braking_intensity")
        .unwrap()
        .1;
    let n = run.clips as f64;
    for (label, count) in braking {
        let share = *count as f64 / n;
        assert!((0.15..=0.35).contains(&share), "{label}: {share}");
    }

    // The report: old vs new thresholds, both label distributions, the α sweep.
    let md = std::fs::read_to_string(&report).unwrap();
    for needle in [
        "## Thresholds",
        "## Label distribution",
        "## Sensitivity",
        "α=0.5",
        "α=1.5",
        "heading_change_implies_turning",
    ] {
        assert!(md.contains(needle), "{needle} missing from the report");
    }
    assert_eq!(s.alphas.len(), 11);
    let one = s.alphas.iter().position(|a| *a == 1.0).unwrap();
    for (q, fl) in &s.flips {
        assert_eq!(fl[one], 0.0, "{q} flips at α = 1");
        assert!(fl.iter().all(|f| (0.0..=1.0).contains(f)));
    }
    // Halving every threshold moves braking labels; the peak rule has nothing to scale.
    let flips = |q: &str| &s.flips.iter().find(|(x, _)| x == q).unwrap().1;
    assert!(flips("braking_intensity")[0] > 0.0);
    assert!(flips("speed_peak_half").iter().all(|f| *f == 0.0));
}

#[test]
fn alpha_levels_are_inclusive() {
    let a = alpha_levels(0.5, 1.5, 0.1).unwrap();
    assert_eq!(a.len(), 11);
    assert_eq!((a[0], a[2], a[5], a[10]), (0.5, 0.7, 1.0, 1.5));
    assert!(alpha_levels(1.5, 0.5, 0.1).is_err());
    assert!(alpha_levels(0.5, 1.5, 0.0).is_err());
}

#[test]
fn empty_store_is_an_error() {
    let dir = scratch("empty");
    support::write_store(
        &dir.join("store"),
        &[support::scene(
            "short",
            1.0,
            10.0,
            5,
            &*support::straight(3.0, 0.0),
        )],
    );
    let e = calibrate::run(
        &dir.join("store"),
        None,
        &dir.join("c.toml"),
        &dir.join("r.md"),
        None,
    );
    assert!(e.is_err());
    assert!(!dir.join("c.toml").exists());
}
