//! Manoeuvre coverage: every EgoDyn answer class appears in the first scenes of the corpus,
//! recomputed from the written ego poses by a port of the published rules (not the crate's),
//! so the generator is checked independently of the oracle it feeds.

use super::*;

fn grad(f: &[f64], dt: f64) -> Vec<f64> {
    let n = f.len();
    (0..n)
        .map(|i| {
            if i == 0 {
                (f[1] - f[0]) / dt
            } else if i == n - 1 {
                (f[n - 1] - f[n - 2]) / dt
            } else {
                (f[i + 1] - f[i - 1]) / (2.0 * dt)
            }
        })
        .collect()
}

fn savgol5(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let at = |i: isize| -> f64 {
        let j = if i < 0 {
            -i
        } else if i >= n as isize {
            2 * (n as isize - 1) - i
        } else {
            i
        };
        x[j as usize]
    };
    (0..n as isize)
        .map(|i| {
            (-3.0 * at(i - 2) + 12.0 * at(i - 1) + 17.0 * at(i) + 12.0 * at(i + 1)
                - 3.0 * at(i + 2))
                / 35.0
        })
        .collect()
}

fn interp(t: &[f64], y: &[f64], g: f64) -> f64 {
    let n = t.len();
    let i = match t.iter().position(|&x| x > g) {
        Some(0) => 0,
        Some(i) => i - 1,
        None => n - 2,
    }
    .min(n - 2);
    y[i] + (y[i + 1] - y[i]) * (g - t[i]) / (t[i + 1] - t[i])
}

fn rms(x: &[f64]) -> f64 {
    (x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64).sqrt()
}

/// The 14 answers of one clip (frames: t, x, y, yaw), and the scalar each thresholded answer
/// came from (NaN for the rule-based ones).
fn egodyn_answers(frames: &[(f64, f64, f64, f64)]) -> ([&'static str; 14], [f64; 14]) {
    let t: Vec<f64> = frames.iter().map(|f| f.0).collect();
    let xs: Vec<f64> = frames.iter().map(|f| f.1).collect();
    let ys: Vec<f64> = frames.iter().map(|f| f.2).collect();
    let mut yaw: Vec<f64> = frames.iter().map(|f| f.3).collect();
    for i in 1..yaw.len() {
        let d = drivegen::geometry::wrap_pi(yaw[i] - yaw[i - 1]);
        yaw[i] = yaw[i - 1] + d;
    }
    let dt = 0.1;
    let grid: Vec<f64> = (0..31).map(|i| t[0] + 3.0 * i as f64 / 30.0).collect();
    let gx: Vec<f64> = grid.iter().map(|&g| interp(&t, &xs, g)).collect();
    let gy: Vec<f64> = grid.iter().map(|&g| interp(&t, &ys, g)).collect();
    let gyaw: Vec<f64> = grid.iter().map(|&g| interp(&t, &yaw, g)).collect();
    let (vx, vy) = (grad(&gx, dt), grad(&gy, dt));
    let speed = savgol5(
        &vx.iter()
            .zip(&vy)
            .map(|(a, b)| a.hypot(*b))
            .collect::<Vec<_>>(),
    );
    let accel = savgol5(&grad(&speed, dt));
    let yaw_rate = savgol5(&grad(&gyaw, dt));
    let jerk = savgol5(&grad(&accel, dt));
    let max = |v: &[f64]| v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let min = |v: &[f64]| v.iter().cloned().fold(f64::INFINITY, f64::min);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let lat: Vec<f64> = speed
        .iter()
        .zip(&yaw_rate)
        .map(|(v, w)| v * w.abs())
        .collect();
    let abs_jerk: Vec<f64> = jerk.iter().map(|j| j.abs()).collect();
    let heading: f64 = gyaw.windows(2).map(|w| (w[1] - w[0]).abs()).sum();
    let k_w = (0..31).fold(0, |k, i| {
        if yaw_rate[i].abs() > yaw_rate[k].abs() {
            i
        } else {
            k
        }
    });
    let w = yaw_rate[k_w];
    let min_a = min(&accel);
    let turn = if w > 0.04 {
        "left"
    } else if w < -0.04 {
        "right"
    } else {
        "straight"
    };
    let braking = if min_a < -1.59 {
        "emergency"
    } else if min_a < -0.89 {
        "moderate"
    } else if min_a < -0.18 {
        "low"
    } else {
        "none"
    };
    let vmax = max(&speed);
    let regime = if vmax < 0.5 {
        "stopped"
    } else if vmax < 5.0 {
        "slow"
    } else if vmax < 13.9 {
        "urban"
    } else {
        "highway"
    };
    let mj = mean(&abs_jerk);
    let smooth = if mj < 1.25 {
        "smooth"
    } else if mj < 2.15 {
        "moderate"
    } else {
        "aggressive"
    };
    let ma = mean(&accel);
    let trend = if ma > 0.25 {
        "accelerating"
    } else if ma < -0.25 {
        "decelerating"
    } else {
        "steady"
    };
    let yn = |b: bool| if b { "yes" } else { "no" };
    let abs_a: Vec<f64> = accel.iter().map(|a| a.abs()).collect();
    let (l, la) = (rms(&abs_a), rms(&lat));
    let axis = if l < 0.2 && la < 0.2 {
        "none"
    } else if l < 1e-9 || la / l > 1.0 {
        "lateral"
    } else {
        "longitudinal"
    };
    let mut btt = false;
    'outer: for i in 0..31 {
        if accel[i] < -1.5 {
            for j in 0..31 {
                if yaw_rate[j].abs() > 0.1 && grid[j] >= grid[i] + 1e-6 && grid[j] <= grid[i] + 2.0
                {
                    btt = true;
                    break 'outer;
                }
            }
        }
    }
    let k_v = (0..31).fold(0, |k, i| if speed[i] > speed[k] { i } else { k });
    let (peak, mv) = (speed[k_v], mean(&speed));
    let no_peak = if mv.abs() > 1e-6 {
        (peak - mv) / mv.abs() < 0.05
    } else {
        peak < 0.05
    };
    let peak_half = if no_peak {
        "no_peak"
    } else if k_v < 15 {
        "first_half"
    } else {
        "second_half"
    };
    let mut stopped = speed[0] < 0.5;
    let mut cycles = 0;
    for &v in &speed[1..] {
        if !stopped && v < 0.5 {
            stopped = true;
        } else if stopped && v > 2.0 {
            cycles += 1;
            stopped = false;
        }
    }
    let (a1, a2) = (rms(&accel[..15]), rms(&accel[15..]));
    let m = a1.max(a2);
    let contrast = if m < 1e-9 || (a1 - a2).abs() / m < 0.2 {
        "similar"
    } else if a1 > a2 {
        "first_half"
    } else {
        "second_half"
    };
    let nan = f64::NAN;
    let values = [
        w,
        min_a,
        vmax,
        mj,
        ma,
        mv,
        heading,
        (max(&abs_jerk) / 20.0).max(min_a / -3.924),
        nan,
        max(&lat),
        nan,
        nan,
        nan,
        nan,
    ];
    let answers = [
        turn,
        braking,
        regime,
        smooth,
        trend,
        yn(mv < 5.0),
        yn(heading >= 0.2618),
        yn(max(&abs_jerk) > 20.0 || min_a < -3.924),
        axis,
        yn(max(&lat) > 2.0),
        yn(btt),
        peak_half,
        yn(cycles >= 1),
        contrast,
    ];
    (answers, values)
}

/// Thresholds of the scalar questions (ascending), for margins.
const THRESHOLDS: [&[f64]; 14] = [
    &[-0.04, 0.04],
    &[-1.59, -0.89, -0.18],
    &[0.5, 5.0, 13.9],
    &[1.25, 2.15],
    &[-0.25, 0.25],
    &[5.0],
    &[0.2618],
    &[1.0],
    &[],
    &[2.0],
    &[],
    &[],
    &[],
    &[],
];

/// How far `x` is inside its class, relative to the nearest threshold's magnitude.
fn margin(q: usize, x: f64) -> f64 {
    THRESHOLDS[q]
        .iter()
        .map(|t| (x - t).abs() / t.abs())
        .fold(f64::INFINITY, f64::min)
}

const QUESTIONS: [(&str, &[&str]); 14] = [
    ("turn", &["left", "right", "straight"]),
    ("braking", &["emergency", "moderate", "low", "none"]),
    ("speed_regime", &["stopped", "slow", "urban", "highway"]),
    ("smoothness", &["smooth", "moderate", "aggressive"]),
    ("speed_trend", &["accelerating", "decelerating", "steady"]),
    ("mean_speed_low", &["yes", "no"]),
    ("heading_change", &["yes", "no"]),
    ("extreme", &["yes", "no"]),
    ("motion_axis", &["longitudinal", "lateral", "none"]),
    ("high_lateral", &["yes", "no"]),
    ("brake_then_turn", &["yes", "no"]),
    ("speed_peak_half", &["first_half", "second_half", "no_peak"]),
    ("stop_and_go", &["yes", "no"]),
    ("contrastive", &["first_half", "second_half", "similar"]),
];

#[test]
fn ego_manoeuvres_cover_every_egodyn_answer() {
    let dir = corpus();
    let t = load(dir);
    let sd_ix = index(&t.sample_data, |s| &s.token);
    let ep_ix = index(&t.ego_pose, |s| &s.token);
    let cs_ix = index(&t.calibrated_sensor, |s| &s.token);
    let sensor_ix = index(&t.sensor, |s| &s.token);
    let sample_ix = index(&t.sample, |s| &s.token);
    let front: HashMap<&str, &SampleData> = t
        .sample_data
        .iter()
        .filter(|sd| {
            sd.is_key_frame
                && t.sensor[sensor_ix
                    [&t.calibrated_sensor[cs_ix[sd.calibrated_sensor_token.as_str()]].sensor_token]]
                    .channel
                    == "CAM_FRONT"
        })
        .map(|sd| (sd.sample_token.as_str(), sd))
        .collect();
    let mut seen: Vec<BTreeMap<&str, BTreeSet<usize>>> = vec![BTreeMap::new(); 14];
    // The best margin by which each scalar class was reached.
    let mut best: Vec<BTreeMap<&str, f64>> = vec![BTreeMap::new(); 14];
    let (mut hard_brake, mut left, mut right, mut stop, mut highway) =
        (false, false, false, false, false);
    for (si, sc) in t.scene.iter().enumerate() {
        // The independent plain check: finite differences over the CAM_FRONT ego poses.
        let mut cur = *front.get(sc.first_sample_token.as_str()).unwrap();
        while !cur.prev.is_empty() {
            cur = &t.sample_data[sd_ix[cur.prev.as_str()]];
        }
        let mut poses = Vec::new();
        loop {
            let ep = &t.ego_pose[ep_ix[cur.ego_pose_token.as_str()]];
            poses.push((
                ep.timestamp as f64 * 1e-6,
                ep.translation[0],
                ep.translation[1],
                yaw_of(ep.rotation),
            ));
            if cur.next.is_empty() {
                break;
            }
            cur = &t.sample_data[sd_ix[cur.next.as_str()]];
        }
        let v: Vec<(f64, f64)> = poses
            .windows(2)
            .map(|w| {
                (
                    0.5 * (w[0].0 + w[1].0),
                    (w[1].1 - w[0].1).hypot(w[1].2 - w[0].2) / (w[1].0 - w[0].0),
                )
            })
            .collect();
        for w in v.windows(7) {
            let a = (w[6].1 - w[0].1) / (w[6].0 - w[0].0);
            hard_brake |= a < -3.0;
        }
        stop |= v.windows(24).any(|w| w.iter().all(|x| x.1 == 0.0));
        highway |= v.iter().any(|x| x.1 > 14.5);
        for w in poses.windows(13) {
            let rate = drivegen::geometry::wrap_pi(w[12].3 - w[0].3) / (w[12].0 - w[0].0);
            left |= rate > 0.3;
            right |= rate < -0.3;
        }

        // The EgoDyn clips: 3 s back from each keyframe along the CAM_FRONT chain.
        let mut s = &t.sample[sample_ix[&sc.first_sample_token]];
        let mut lines = Vec::new();
        loop {
            let t_end = s.timestamp as f64 * 1e-6;
            let mut frames = Vec::new();
            let mut sd = *front.get(s.token.as_str()).unwrap();
            loop {
                let ts = sd.timestamp as f64 * 1e-6;
                if ts < t_end - 3.0 {
                    break;
                }
                if ts <= t_end {
                    let ep = &t.ego_pose[ep_ix[sd.ego_pose_token.as_str()]];
                    frames.push((
                        ts,
                        ep.translation[0],
                        ep.translation[1],
                        yaw_of(ep.rotation),
                    ));
                }
                if sd.prev.is_empty() {
                    break;
                }
                sd = &t.sample_data[sd_ix[sd.prev.as_str()]];
            }
            frames.reverse();
            if frames.len() >= 20 && frames[frames.len() - 1].0 - frames[0].0 >= 2.7 {
                let (ans, values) = egodyn_answers(&frames);
                for (q, a) in ans.iter().enumerate() {
                    seen[q].entry(a).or_default().insert(si);
                    if values[q].is_finite() {
                        let m = best[q].entry(a).or_insert(0.0);
                        *m = m.max(margin(q, values[q]));
                    }
                }
                lines.push(format!(
                    "{:5.1}s {}",
                    t_end - 1_532_402_927.647951 - 90.0 * si as f64,
                    ans.join(" ")
                ));
            }
            if s.next.is_empty() {
                break;
            }
            s = &t.sample[sample_ix[&s.next]];
        }
        eprintln!("scene {si} ({}):\n  {}", sc.description, lines.join("\n  "));
    }
    assert!(
        hard_brake && left && right && stop && highway,
        "brake {hard_brake} left {left} right {right} stop {stop} highway {highway}"
    );
    let mut missing = Vec::new();
    for (q, (name, classes)) in QUESTIONS.iter().enumerate() {
        eprintln!("{name}: {:?} margins {:?}", seen[q], best[q]);
        for (c, m) in &best[q] {
            if *m < 0.1 {
                missing.push(format!(
                    "{name}={c} (only reached within {:.0} % of a threshold)",
                    100.0 * m
                ));
            }
        }
        for c in *classes {
            if !seen[q].contains_key(c) {
                missing.push(format!("{name}={c}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "answer classes never produced by the first three scenes: {missing:?}"
    );
}
