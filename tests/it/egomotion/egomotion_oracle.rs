//! The oracle against independent truth.
//!
//! 1. Rule level: hand-built channels and features on each side of every threshold (and on it,
//!    where the reference's operator decides), for all 14 questions.
//! 2. End to end: analytic trajectories (constant speed, constant deceleration, constant yaw
//!    rate, stop then go, brake then turn) through clip extraction, resampling, kinematics and
//!    the oracle, with the kinematics and labels derived by hand below.
//! 3. The oracle's own labels satisfy the ten consistency rules (its WPCR is 1).

use super::support;

use std::collections::BTreeMap;

use drivegen::config::StageConfig;
use drivegen::egomotion::clips::grid;
use drivegen::egomotion::config::EgodynConfig;
use drivegen::egomotion::kinematics::{features, Features, Kinematics};
use drivegen::egomotion::oracle::consistency::violations;
use drivegen::egomotion::oracle::Oracle;
use drivegen::egomotion::{ClipResult, Engine};
use support::PoseFn;

const N: usize = 31;
const DT: f64 = 0.1;

fn oracle() -> Oracle {
    Oracle::new(&EgodynConfig::default_config().unwrap()).unwrap()
}

/// Kinematics from hand-made channels (yaw integrates the yaw rate, positions are unused).
fn kin(
    speed: Vec<f64>,
    accel: Vec<f64>,
    jerk: Vec<f64>,
    yaw_rate: Vec<f64>,
) -> (Kinematics, Features) {
    let t = grid(3.0, N);
    let mut yaw = vec![0.0; N];
    for i in 1..N {
        yaw[i] = yaw[i - 1] + yaw_rate[i] * DT;
    }
    let k = Kinematics {
        lat_accel: speed.iter().zip(&yaw_rate).map(|(v, w)| v * w).collect(),
        lat_accel_abs: speed
            .iter()
            .zip(&yaw_rate)
            .map(|(v, w)| v * w.abs())
            .collect(),
        x: vec![0.0; N],
        y: vec![0.0; N],
        t,
        yaw,
        speed,
        accel,
        jerk,
        yaw_rate,
    };
    let f = features(&k, 0.5);
    (k, f)
}

fn flat(v: f64) -> Vec<f64> {
    vec![v; N]
}

/// A channel of `base` with `v` at sample `i`.
fn spike(base: f64, i: usize, v: f64) -> Vec<f64> {
    let mut a = flat(base);
    a[i] = v;
    a
}

fn label(o: &Oracle, q: &str, k: &Kinematics, f: &Features) -> String {
    let q = o.question(q).unwrap();
    q.label(q.answer(k, f).class).to_string()
}

/// The label of a feature-only question with one feature set by hand.
fn label_feature(o: &Oracle, q: &str, set: impl Fn(&mut Features)) -> String {
    let (k, mut f) = kin(flat(10.0), flat(0.0), flat(0.0), flat(0.0));
    set(&mut f);
    label(o, q, &k, &f)
}

#[test]
fn question_texts_and_choices_are_table_6() {
    let o = oracle();
    let want: [(&str, &str, &[&str]); 14] = [
        ("turn_direction", "Is the vehicle turning left, right, or going straight?", &["left", "right", "straight"]),
        ("braking_intensity", "What is the intensity level of the vehicle's braking?", &["emergency", "moderate", "low", "none"]),
        ("speed_regime", "What is the vehicle's speed regime?", &["stopped", "slow", "urban", "highway"]),
        ("driving_smoothness", "How smooth is the driving based on jerk?", &["smooth", "moderate", "aggressive"]),
        ("speed_trend", "Is the vehicle accelerating, decelerating, or maintaining steady speed?", &["accelerating", "decelerating", "steady"]),
        ("mean_speed", "Is the mean speed below 5 m/s (18 km/h)?", &["yes", "no"]),
        ("heading_change", "Does the vehicle change heading by more than 15 degrees?", &["yes", "no"]),
        ("extreme_maneuver", "Does the vehicle perform an extreme maneuver (high jerk or hard braking)?", &["yes", "no"]),
        ("motion_axis", "Is the vehicle's motion primarily longitudinal (speeding up/slowing down) or lateral (turning)?", &["longitudinal", "lateral", "none"]),
        ("lateral_accel", "Does the vehicle experience high lateral acceleration?", &["yes", "no"]),
        ("stop_and_go", "Does the vehicle exhibit stop-and-go behavior?", &["yes", "no"]),
        ("brake_then_turn", "Does the vehicle brake and then turn (sequential maneuver)?", &["yes", "no"]),
        ("speed_peak_half", "Does the maximum speed occur in the first or second half of the sequence?", &["first_half", "second_half", "no_peak"]),
        ("contrastive_seq", "Comparing the first and second halves of the sequence, which half has more dynamic driving?", &["first_half", "second_half", "similar"]),
    ];
    assert_eq!(o.questions.len(), 14);
    for (q, (id, text, choices)) in o.questions.iter().zip(want) {
        assert_eq!(q.id, id);
        assert_eq!(q.text, text);
        assert_eq!(q.choices, choices);
    }
    let temporal: Vec<&str> = o
        .questions
        .iter()
        .filter(|q| q.temporal)
        .map(|q| q.id.as_str())
        .collect();
    assert_eq!(
        temporal,
        [
            "speed_trend",
            "brake_then_turn",
            "speed_peak_half",
            "contrastive_seq"
        ]
    );
    let types: std::collections::BTreeSet<&str> =
        o.questions.iter().map(|q| q.rule.type_name()).collect();
    assert_eq!(types.len(), 10, "all ten rule types are used: {types:?}");
}

#[test]
fn question_texts_follow_the_thresholds() {
    // A recalibrated (here α-scaled) config never contradicts its own question.
    let cfg = EgodynConfig::default_config().unwrap();
    let o = Oracle::with_alpha(&cfg, 0.5).unwrap();
    assert_eq!(
        o.question("mean_speed").unwrap().text,
        "Is the mean speed below 2.5 m/s (9 km/h)?"
    );
    assert_eq!(
        o.question("heading_change").unwrap().text,
        "Does the vehicle change heading by more than 7.5 degrees?"
    );
    let o = Oracle::with_alpha(&cfg, 1.3).unwrap();
    assert_eq!(
        o.question("mean_speed").unwrap().text,
        "Is the mean speed below 6.5 m/s (23.4 km/h)?"
    );
    assert_eq!(
        o.question("heading_change").unwrap().text,
        "Does the vehicle change heading by more than 19.5 degrees?"
    );
}

#[test]
fn turn_direction_deadzone() {
    let o = oracle();
    let z = || flat(0.0);
    for (w, want) in [
        (0.0401, "left"),
        (0.04, "straight"),
        (0.0399, "straight"),
        (-0.04, "straight"),
        (-0.0401, "right"),
    ] {
        let (k, f) = kin(flat(10.0), z(), z(), spike(0.0, 12, w));
        assert_eq!(label(&o, "turn_direction", &k, &f), want, "ω = {w}");
    }
    // The signed value of largest magnitude decides: +0.03 and −0.05 is a right turn.
    let mut w = spike(0.0, 5, 0.03);
    w[20] = -0.05;
    let (k, f) = kin(flat(10.0), z(), z(), w);
    assert_eq!(label(&o, "turn_direction", &k, &f), "right");
}

#[test]
fn braking_intensity_bins() {
    let o = oracle();
    for (a, want) in [
        (-1.5901, "emergency"),
        (-1.59, "moderate"),
        (-0.8901, "moderate"),
        (-0.89, "low"),
        (-0.1801, "low"),
        (-0.18, "none"),
        (0.5, "none"),
    ] {
        let (k, f) = kin(flat(10.0), spike(0.0, 17, a), flat(0.0), flat(0.0));
        assert_eq!(
            label(&o, "braking_intensity", &k, &f),
            want,
            "min accel {a}"
        );
    }
}

#[test]
fn feature_thresholds() {
    let o = oracle();
    for (v, want) in [
        (0.4999, "stopped"),
        (0.5, "slow"),
        (4.9999, "slow"),
        (5.0, "urban"),
        (13.8999, "urban"),
        (13.9, "highway"),
    ] {
        assert_eq!(
            label_feature(&o, "speed_regime", |f| f.max_speed = v),
            want,
            "max speed {v}"
        );
    }
    for (v, want) in [
        (1.2499, "smooth"),
        (1.25, "moderate"),
        (2.1499, "moderate"),
        (2.15, "aggressive"),
    ] {
        assert_eq!(
            label_feature(&o, "driving_smoothness", |f| f.mean_abs_jerk = v),
            want,
            "mean |jerk| {v}"
        );
    }
    for (v, want) in [(4.9999, "yes"), (5.0, "no")] {
        assert_eq!(
            label_feature(&o, "mean_speed", |f| f.mean_speed = v),
            want,
            "mean speed {v}"
        );
    }
    // Equality counts as a heading change (the code's >=; the paper says "exceeds").
    for (v, want) in [(0.2617, "no"), (0.2618, "yes")] {
        assert_eq!(
            label_feature(&o, "heading_change", |f| f.total_heading_change = v),
            want,
            "heading {v}"
        );
    }
    for (v, want) in [(20.0, "no"), (20.0001, "yes")] {
        assert_eq!(
            label_feature(&o, "extreme_maneuver", |f| f.max_abs_jerk = v),
            want,
            "max |jerk| {v}"
        );
    }
}

#[test]
fn extreme_maneuver_hard_braking_branch() {
    let o = oracle();
    for (a, want) in [(-3.924, "no"), (-3.9241, "yes")] {
        let (k, f) = kin(flat(10.0), spike(0.0, 3, a), flat(0.0), flat(0.0));
        assert_eq!(label(&o, "extreme_maneuver", &k, &f), want, "min accel {a}");
    }
}

#[test]
fn speed_trend_deadzone() {
    let o = oracle();
    // Constant accel channels: the mean of 31 equal binary-exact values is exact.
    for (a, want) in [
        (0.2501, "accelerating"),
        (0.25, "steady"),
        (0.0, "steady"),
        (-0.25, "steady"),
        (-0.2501, "decelerating"),
    ] {
        let (k, f) = kin(flat(10.0), flat(a), flat(0.0), flat(0.0));
        assert_eq!(label(&o, "speed_trend", &k, &f), want, "mean accel {a}");
    }
}

#[test]
fn lateral_accel_threshold() {
    let o = oracle();
    // v·|ω| = 10·0.2 = 2.0 exactly at one sample (not above the threshold), 2.0001 above it.
    for (w, want) in [(0.2, "no"), (-0.20001, "yes"), (0.20001, "yes")] {
        let (k, f) = kin(flat(10.0), flat(0.0), flat(0.0), spike(0.0, 9, w));
        assert_eq!(label(&o, "lateral_accel", &k, &f), want, "ω = {w}");
    }
}

#[test]
fn motion_axis_comparison() {
    let o = oracle();
    // RMS of a constant channel c is |c|; lateral = v·|ω| with v = 1.
    for (long, lat, want) in [
        (0.19, 0.19, "none"),
        (0.21, 0.1, "longitudinal"),
        (0.1, 0.21, "lateral"),
        (0.19, 0.21, "lateral"),
        (1.0, 1.0, "longitudinal"),
        (1.0, 1.0001, "lateral"),
        (0.0, 0.3, "lateral"),
    ] {
        let (k, f) = kin(flat(1.0), flat(long), flat(0.0), flat(lat));
        assert_eq!(
            label(&o, "motion_axis", &k, &f),
            want,
            "long {long}, lat {lat}"
        );
    }
}

#[test]
fn stop_and_go_state_machine() {
    let o = oracle();
    let profile = |pts: &[(usize, f64)]| {
        let mut v = flat(pts[0].1);
        for w in pts.windows(2) {
            for x in v.iter_mut().skip(w[1].0) {
                *x = w[1].1;
            }
        }
        v
    };
    for (v, want) in [
        (profile(&[(0, 0.4), (20, 2.1)]), "yes"), // starts stopped, then > 2.0
        (profile(&[(0, 0.4), (20, 2.0)]), "no"),  // 2.0 is not moving
        (profile(&[(0, 0.5), (20, 2.1)]), "no"),  // 0.5 is not stopped
        (profile(&[(0, 3.0), (10, 0.49), (20, 2.01)]), "yes"),
        (profile(&[(0, 3.0), (15, 0.4)]), "no"), // go → stop alone does not count
    ] {
        let (k, f) = kin(v, flat(0.0), flat(0.0), flat(0.0));
        assert_eq!(label(&o, "stop_and_go", &k, &f), want);
    }
}

#[test]
fn brake_then_turn_sequence() {
    let o = oracle();
    let case = |brake_at: usize, a: f64, turn_at: usize, w: f64| {
        let (k, f) = kin(
            flat(10.0),
            spike(0.0, brake_at, a),
            flat(0.0),
            spike(0.0, turn_at, w),
        );
        label(&o, "brake_then_turn", &k, &f)
    };
    assert_eq!(case(5, -1.51, 25, 0.11), "yes"); // gap exactly 2.0 s (t = 0.5 → 2.5)
    assert_eq!(case(5, -1.51, 25, -0.11), "yes"); // |ω| counts either way
    assert_eq!(case(5, -1.51, 26, 0.11), "no"); // gap 2.1 s > max gap
    assert_eq!(case(5, -1.51, 5, 0.11), "no"); // simultaneous is not "then"
    assert_eq!(case(5, -1.51, 6, 0.11), "yes"); // one sample later is
    assert_eq!(case(5, -1.5, 10, 0.11), "no"); // −1.5 is not braking
    assert_eq!(case(5, -1.51, 10, 0.1), "no"); // 0.1 is not turning
    assert_eq!(case(20, -1.6, 10, 0.2), "no"); // turn then brake
}

#[test]
fn speed_peak_half_prominence() {
    let o = oracle();
    // Baseline 10 with one peak p: mean = 10 + (p − 10)/31; prominent iff (p − mean)/mean ≥ 0.05.
    // p = 10.6: (10.6 − 10.01935)/10.01935 = 0.058 → a peak; p = 10.4: 0.0387 → none.
    for (i, p, want) in [
        (14, 10.6, "first_half"),
        (15, 10.6, "second_half"),
        (3, 10.4, "no_peak"),
    ] {
        let (k, f) = kin(spike(10.0, i, p), flat(0.0), flat(0.0), flat(0.0));
        assert_eq!(
            label(&o, "speed_peak_half", &k, &f),
            want,
            "peak {p} at {i}"
        );
    }
    // A zero mean: the peak itself must reach 0.05.
    let (k, f) = kin(flat(0.0), flat(0.0), flat(0.0), flat(0.0));
    assert_eq!(label(&o, "speed_peak_half", &k, &f), "no_peak");
}

#[test]
fn contrastive_halves() {
    let o = oracle();
    // Halves are samples 0..15 and 15..31; RMS of a constant half is its |value|.
    let halves = |a: f64, b: f64| {
        let mut v = flat(a);
        for x in v.iter_mut().skip(15) {
            *x = b;
        }
        v
    };
    for (a, b, want) in [
        (1.0, 1.0, "similar"),
        (1.0, 0.79, "first_half"), // relative difference 0.21
        (0.81, 1.0, "similar"),    // 0.19
        (0.5, 1.0, "second_half"),
        (-2.0, 1.0, "first_half"), // magnitudes compared
        (0.0, 0.0, "similar"),
    ] {
        let (k, f) = kin(flat(10.0), halves(a, b), flat(0.0), flat(0.0));
        assert_eq!(
            label(&o, "contrastive_seq", &k, &f),
            want,
            "halves {a}, {b}"
        );
    }
}

// ---------------------------------------------------------------- end to end, analytic

fn engine() -> Engine {
    Engine::new(EgodynConfig::default_config().unwrap()).unwrap()
}

/// The one clip of a 3 s scene at 10 Hz (keyframes every 0.5 s; only the last has 3 s of history).
fn clip(pose: &PoseFn) -> ClipResult {
    let e = engine();
    let s = support::scene("analytic", 3.0, 10.0, 5, pose);
    let (clips, rejects) = e.scene_clips(&s, "synthetic");
    assert_eq!(
        clips.len(),
        1,
        "rejects: {:?}",
        rejects.iter().map(|r| &r.0.reason).collect::<Vec<_>>()
    );
    // Keyframes at 0, 0.5, …, 2.5 s have < 20 poses or span < 2.7 s.
    assert_eq!(rejects.len(), 6);
    clips.into_iter().next().unwrap()
}

fn labels(c: &ClipResult) -> BTreeMap<String, String> {
    let e = engine();
    let answers = e.oracle.answers(&c.kin, &c.features);
    let classes: Vec<usize> = answers.iter().map(|a| a.class).collect();
    assert!(
        violations(&e.oracle, &classes).is_empty(),
        "oracle inconsistent: {:?}",
        violations(&e.oracle, &classes)
    );
    e.oracle
        .questions
        .iter()
        .zip(&answers)
        .map(|(q, a)| (q.id.clone(), q.label(a.class).to_string()))
        .collect()
}

fn expect(got: &BTreeMap<String, String>, want: &[(&str, &str)], what: &str) {
    for (q, l) in want {
        assert_eq!(got[*q], *l, "{what}: {q}");
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

#[test]
fn constant_speed() {
    // x = v·t along a fixed heading: every difference is v·dt exactly, so speed ≡ v, and
    // accel, jerk and yaw rate ≡ 0 (to rounding); the yaw never changes.
    for (v, regime, low) in [
        (0.3, "stopped", "yes"),
        (0.49, "stopped", "yes"),
        (0.51, "slow", "yes"),
        (4.99, "slow", "yes"),
        (5.01, "urban", "no"),
        (13.89, "urban", "no"),
        (13.91, "highway", "no"),
    ] {
        let c = clip(&support::straight(v, 2.5));
        assert!(
            c.kin.speed.iter().all(|s| close(*s, v, 1e-9)),
            "speed {v}: {:?}",
            c.kin.speed
        );
        assert!(c
            .kin
            .accel
            .iter()
            .chain(&c.kin.jerk)
            .chain(&c.kin.yaw_rate)
            .all(|x| x.abs() < 1e-9));
        assert!(close(c.features.max_speed, v, 1e-9) && close(c.features.mean_speed, v, 1e-9));
        assert!(c.features.total_heading_change.abs() < 1e-12);
        let l = labels(&c);
        expect(
            &l,
            &[
                ("turn_direction", "straight"),
                ("braking_intensity", "none"),
                ("speed_regime", regime),
                ("driving_smoothness", "smooth"),
                ("speed_trend", "steady"),
                ("mean_speed", low),
                ("heading_change", "no"),
                ("extreme_maneuver", "no"),
                ("motion_axis", "none"),
                ("lateral_accel", "no"),
                // v0 = v ≥ 0.5 is never stopped; below 0.5 it never exceeds 2.
                ("stop_and_go", "no"),
                ("brake_then_turn", "no"),
                // Peak − mean is rounding noise: far under 5 % of the mean.
                ("speed_peak_half", "no_peak"),
                // Both halves have |accel| ≈ 0 < 1e-9.
                ("contrastive_seq", "similar"),
            ],
            &format!("v = {v}"),
        );
    }
}

/// Hand-derived smoothed speed of a constant-speed turn. On a circle of radius R = v/ω the
/// central difference spans a chord 2R·sin(ω·dt), so the interior raw speed is
/// c1 = v·sin(ω·dt)/(ω·dt); the one-sided ends span R·2·sin(ω·dt/2): c0 = v·sin(ω·dt/2)/(ω·dt/2).
/// The mirror SG(5, 2) kernel (−3, 12, 17, 12, −3)/35 on [c0, c1, c1, …] gives
/// s0 = (17c0 + 18c1)/35, s1 = (12c0 + 23c1)/35, s2 = (−3c0 + 38c1)/35, then c1 (and the
/// mirror image at the end).
fn turn_speed(v: f64, w: f64) -> Vec<f64> {
    let c1 = v * (w * DT).sin() / (w * DT);
    let c0 = v * (w * DT / 2.0).sin() / (w * DT / 2.0);
    let mut s = vec![c1; N];
    let head = [
        (17.0 * c0 + 18.0 * c1) / 35.0,
        (12.0 * c0 + 23.0 * c1) / 35.0,
        (-3.0 * c0 + 38.0 * c1) / 35.0,
    ];
    for (i, h) in head.iter().enumerate() {
        s[i] = *h;
        s[N - 1 - i] = *h;
    }
    s
}

#[test]
fn constant_yaw_rate_turn() {
    for (v, w) in [
        (10.0, 0.041),
        (10.0, -0.041),
        (10.0, 0.039),
        (10.0, 0.087),
        (10.0, 0.0875),
        (10.0, 0.2),
        (10.0, 0.2001),
        (6.0, -0.5),
    ] {
        let c = clip(&support::turn(v, w, 3.0));
        let want = turn_speed(v, w);
        for (i, ((s, want_s), yr)) in c
            .kin
            .speed
            .iter()
            .zip(&want)
            .zip(&c.kin.yaw_rate)
            .enumerate()
        {
            assert!(
                close(*s, *want_s, 1e-9),
                "v {v} ω {w} speed[{i}] {s} vs {want_s}"
            );
            // The unwrapped yaw is linear, so every difference is ω exactly.
            assert!(close(*yr, w, 1e-9), "yaw rate[{i}] {yr}");
        }
        // Σ|Δψ| over 30 steps of ω·dt; max v·|ω| is at the ends, where s0 is largest.
        assert!(close(c.features.total_heading_change, 3.0 * w.abs(), 1e-9));
        let lat = want[0] * w.abs();
        assert!(
            close(c.features.max_lateral_accel, lat, 1e-9),
            "{} vs {lat}",
            c.features.max_lateral_accel
        );
        let l = labels(&c);
        let turn = if w > 0.04 {
            "left"
        } else if w < -0.04 {
            "right"
        } else {
            "straight"
        };
        let heading = if 3.0 * w.abs() >= 0.2618 { "yes" } else { "no" };
        let lateral = if lat > 2.0 { "yes" } else { "no" };
        expect(
            &l,
            &[
                ("turn_direction", turn),
                ("heading_change", heading),
                ("lateral_accel", lateral),
                ("speed_trend", "steady"),
                ("braking_intensity", "none"),
                ("stop_and_go", "no"),
            ],
            &format!("v {v} ω {w}"),
        );
        // The boundary cases really straddle their thresholds.
        if w == 0.087 {
            assert_eq!(heading, "no");
        }
        if w == 0.0875 {
            assert_eq!(heading, "yes");
        }
        if w == 0.2 {
            assert!(lat < 2.0 && lateral == "no", "{lat}");
        }
        if w == 0.2001 {
            assert!(lat > 2.0 && lateral == "yes", "{lat}");
        }
        // Lateral RMS v·|ω| against longitudinal ≈ 0: lateral when above the 0.2 deadzone.
        let axis = if c.kin.lat_accel_abs.iter().map(|x| x * x).sum::<f64>() / N as f64 >= 0.04 {
            "lateral"
        } else {
            "none"
        };
        assert_eq!(l["motion_axis"], axis, "v {v} ω {w}");
    }
}

#[test]
fn constant_deceleration() {
    // x = v0·t − a·t²/2. Central differences of a quadratic are exact, so the interior raw
    // speed is v0 − a·t; the one-sided ends are off by ∓a·dt/2. The SG kernel reproduces
    // lines, so smoothed speed is exact where its window avoids the two end samples
    // (3 ≤ i ≤ 27), accel is exactly −a where its stencils stay there (6 ≤ i ≤ 24) and jerk 0
    // for 9 ≤ i ≤ 21. The end effects overshoot the deceleration by under 4 %.
    let v0 = 15.0;
    for (a, braking, extreme) in [
        (0.5, "low", "no"),
        (1.2, "moderate", "no"),
        (2.0, "emergency", "no"),
        (4.5, "emergency", "yes"),
    ] {
        let c = clip(&support::decel(v0, a));
        for i in 3..=27 {
            assert!(
                close(c.kin.speed[i], v0 - a * i as f64 * DT, 1e-9),
                "a {a} speed[{i}]"
            );
        }
        for i in 6..=24 {
            assert!(
                close(c.kin.accel[i], -a, 1e-9),
                "a {a} accel[{i}] = {}",
                c.kin.accel[i]
            );
        }
        for i in 9..=21 {
            assert!(
                c.kin.jerk[i].abs() < 1e-8,
                "a {a} jerk[{i}] = {}",
                c.kin.jerk[i]
            );
        }
        assert!(
            c.features.min_accel <= -a && c.features.min_accel >= -1.04 * a,
            "min accel {}",
            c.features.min_accel
        );
        let l = labels(&c);
        expect(
            &l,
            &[
                ("braking_intensity", braking),
                ("extreme_maneuver", extreme),
                ("speed_trend", "decelerating"),
                ("turn_direction", "straight"),
                ("motion_axis", "longitudinal"),
                ("stop_and_go", "no"),
                ("brake_then_turn", "no"),
            ],
            &format!("a {a}"),
        );
        if a >= 1.2 {
            // The first sample is the fastest, ≥ 5 % above the mean (≈ v0 − 1.5a).
            assert_eq!(l["speed_peak_half"], "first_half");
        }
    }
}

#[test]
fn stop_then_go_and_go_then_stop() {
    // Standing for 1 s, then 3 m/s² for 2 s: v rises from 0 (< 0.5: stopped) to 6 (> 2:
    // moving): one stop→go cycle. Max speed ≈ 6 (urban), mean accel ≈ 2 (accelerating),
    // mean speed ≈ 2 (below 5), the peak at the end (second half).
    let c = clip(&Box::new(|t: f64| {
        (
            if t <= 1.0 {
                0.0
            } else {
                1.5 * (t - 1.0) * (t - 1.0)
            },
            0.0,
            0.0,
        )
    }));
    for i in 0..=6 {
        assert!(c.kin.speed[i].abs() < 1e-9, "standing speed[{i}]");
    }
    for i in 16..=24 {
        assert!(
            close(c.kin.accel[i], 3.0, 1e-9),
            "accel[{i}] = {}",
            c.kin.accel[i]
        );
    }
    expect(
        &labels(&c),
        &[
            ("stop_and_go", "yes"),
            ("speed_regime", "urban"),
            ("speed_trend", "accelerating"),
            ("mean_speed", "yes"),
            ("speed_peak_half", "second_half"),
            ("contrastive_seq", "second_half"),
            ("braking_intensity", "none"),
            ("motion_axis", "longitudinal"),
        ],
        "stop then go",
    );
    // The mirror image (braking 6 → 0 in 2 s, then standing): go→stop is not stop-and-go.
    let c = clip(&Box::new(|t: f64| {
        let tt = t.min(2.0);
        (6.0 * tt - 1.5 * tt * tt, 0.0, 0.0)
    }));
    expect(
        &labels(&c),
        &[
            ("stop_and_go", "no"),
            ("speed_trend", "decelerating"),
            ("braking_intensity", "emergency"),
            ("speed_peak_half", "first_half"),
            ("contrastive_seq", "first_half"),
        ],
        "go then stop",
    );
}

/// Braking at `a` for `tb` s from 10 m/s, then turning left at 0.3 rad/s at constant speed
/// (or the reverse order).
fn brake_turn(brake_first: bool) -> Box<PoseFn> {
    let (v0, a, tb, w) = (10.0f64, 2.5f64, 1.2f64, 0.3f64);
    if brake_first {
        Box::new(move |t: f64| {
            if t <= tb {
                return (v0 * t - a * t * t / 2.0, 0.0, 0.0);
            }
            let v = v0 - a * tb;
            let (x0, r, h) = (v0 * tb - a * tb * tb / 2.0, v / w, w * (t - tb));
            (x0 + r * h.sin(), r * (1.0 - h.cos()), h)
        })
    } else {
        Box::new(move |t: f64| {
            let r = v0 / w;
            if t <= tb {
                let h = w * t;
                return (r * h.sin(), r * (1.0 - h.cos()), h);
            }
            let h = w * tb;
            let s = v0 * (t - tb) - a * (t - tb) * (t - tb) / 2.0;
            (
                r * h.sin() + s * h.cos(),
                r * (1.0 - h.cos()) + s * h.sin(),
                h,
            )
        })
    }
}

#[test]
fn brake_then_turn_and_turn_then_brake() {
    // Braking at 2.5 m/s² (< −1.5) until 1.2 s, turning at 0.3 rad/s (> 0.1) from 1.2 s: the
    // first turning sample follows the braking ones within 2 s → yes. Heading 0.3·1.8 = 0.54
    // rad (yes), left, emergency braking (min accel ≤ −2.5 < −1.59).
    let c = clip(&brake_turn(true));
    for i in 16..=30 {
        assert!(close(c.kin.yaw_rate[i], 0.3, 1e-9), "yaw rate[{i}]");
    }
    expect(
        &labels(&c),
        &[
            ("brake_then_turn", "yes"),
            ("turn_direction", "left"),
            ("heading_change", "yes"),
            ("braking_intensity", "emergency"),
            ("speed_trend", "decelerating"),
        ],
        "brake then turn",
    );
    // Turning first and braking after: no braking sample is followed by a turning one.
    let c = clip(&brake_turn(false));
    expect(
        &labels(&c),
        &[
            ("brake_then_turn", "no"),
            ("turn_direction", "left"),
            ("heading_change", "yes"),
            ("braking_intensity", "emergency"),
        ],
        "turn then brake",
    );
}
