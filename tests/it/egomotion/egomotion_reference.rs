//! drivegen's kinematics, features and labels against the numpy/scipy implementation of the
//! reference semantics (`benches/reference/egomotion.py`, run at test time) on random clips
//! with nuScenes-like jittered ~12 Hz poses.

use crate::common::oracle;

use std::io::Write;
use std::process::{Command, Stdio};

use drivegen::config::StageConfig;
use drivegen::egomotion::clips::{PoseSample, RawClip};
use drivegen::egomotion::config::EgodynConfig;
use drivegen::egomotion::kinematics::Features;
use drivegen::egomotion::Engine;
use drivegen::geometry::wrap_pi;
use drivegen::qa::record::SplitMix64;

/// A random drive: speed and yaw rate are sums of slow sinusoids (with stops and hard braking
/// in some clips), integrated at 1 ms, sampled at ~12 Hz with ±4 ms jitter.
fn random_clip(seed: u64) -> RawClip {
    let mut rng = SplitMix64::new(seed);
    let mut u = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let v0 = u() * 18.0;
    let (va, vf, vp) = (u() * 6.0, 0.3 + u() * 2.0, u() * 6.3);
    let ramp = (u() - 0.6) * 6.0;
    let (wa, wf, wp, wb) = (u() * 0.4, 0.2 + u() * 1.5, u() * 6.3, (u() - 0.5) * 0.3);
    let heading0 = (u() - 0.5) * std::f64::consts::TAU;
    let offset_us = (u() * 40_000.0) as i64;
    let mut samples = Vec::new();
    let (mut x, mut y, mut h) = (u() * 1000.0, u() * 1000.0, heading0);
    let mut next = offset_us;
    let mut k = 0;
    for ms in 0..=3100 {
        let t = ms as f64 / 1000.0;
        if ms * 1000 >= next {
            samples.push(PoseSample {
                timestamp_us: 1_533_151_603_000_000 + ms * 1000,
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
    samples.retain(|s| s.timestamp_us - samples_start() <= 3_000_000 + 40_000);
    RawClip {
        clip_id: format!("random-{seed}"),
        scene_id: "random".into(),
        source: "synthetic".into(),
        anchor_timestamp_us: samples.last().unwrap().timestamp_us,
        anchor_frame_idx: None,
        duration_s: 3.0,
        samples,
        images: Vec::new(),
    }
}

fn samples_start() -> i64 {
    1_533_151_603_000_000
}

#[test]
fn matches_numpy_scipy_reference() {
    let Some(python) = oracle::python("oracles") else {
        return;
    };
    let engine = Engine::new(EgodynConfig::default_config().unwrap()).unwrap();
    let clips: Vec<RawClip> = (0..400).map(random_clip).collect();
    let req = request(&clips);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/reference/egomotion.py"
    );
    let mut child = Command::new(python)
        .args([script, "check"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(req.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "reference failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let want = reply["clips"].as_array().unwrap();
    let mut label_counts =
        std::collections::BTreeMap::<String, std::collections::BTreeSet<String>>::new();
    let mut worst = 0.0f64;
    for (c, w) in clips.iter().zip(want) {
        let (k, f) = engine.process(c).unwrap();
        for (name, ours) in [
            ("t", &k.t),
            ("x", &k.x),
            ("y", &k.y),
            ("yaw", &k.yaw),
            ("speed", &k.speed),
            ("accel", &k.accel),
            ("jerk", &k.jerk),
            ("yaw_rate", &k.yaw_rate),
            ("lat_accel", &k.lat_accel),
        ] {
            let theirs: Vec<f64> = serde_json::from_value(w[name].clone()).unwrap();
            assert_eq!(ours.len(), theirs.len(), "{name}");
            let scale = theirs.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
                let rel = (a - b).abs() / scale;
                worst = worst.max(rel);
                assert!(rel <= 1e-9, "{} {name}[{i}]: {a} vs {b}", c.clip_id);
            }
        }
        for (name, ours) in Features::NAMES.iter().zip(f.values()) {
            let theirs = w["features"][name].as_f64().unwrap();
            assert!(
                (ours - theirs).abs() <= 1e-9 * (1.0 + theirs.abs()),
                "{} {name}: {ours} vs {theirs}",
                c.clip_id
            );
        }
        for (q, a) in engine
            .oracle
            .questions
            .iter()
            .zip(engine.oracle.answers(&k, &f))
        {
            let theirs = w["labels"][&q.id].as_str().unwrap();
            assert_eq!(q.label(a.class), theirs, "{} {}", c.clip_id, q.id);
            label_counts
                .entry(q.id.clone())
                .or_default()
                .insert(theirs.to_string());
        }
    }
    eprintln!("worst relative difference {worst:e}; labels seen: {label_counts:?}");
    // The random clips exercise every class of most questions.
    let classes: usize = label_counts.values().map(|s| s.len()).sum();
    assert!(classes >= 30, "{label_counts:?}");
}

/// The request the reference script reads, for `clips`.
fn request(clips: &[RawClip]) -> serde_json::Value {
    serde_json::json!({
        "clips": clips.iter().map(|c| serde_json::json!({
            "ts_us": c.samples.iter().map(|s| s.timestamp_us).collect::<Vec<_>>(),
            "x": c.samples.iter().map(|s| s.x).collect::<Vec<_>>(),
            "y": c.samples.iter().map(|s| s.y).collect::<Vec<_>>(),
            "yaw": c.samples.iter().map(|s| s.yaw).collect::<Vec<_>>(),
            "duration": c.duration_s,
        })).collect::<Vec<_>>()
    })
}
