//! STSBench detectors on hand-built tracks: for every scenario kind, values on each side of
//! its thresholds (the default `configs/stsbench.toml`), with the expected verdicts derived by
//! hand in the comments, including the three published bugs that are fixed.

use drivegen::config::StageConfig;
use drivegen::maplayers::{MapLayers, Polygon};
use drivegen::stsbench::catalog::Scenario::{self, *};
use drivegen::stsbench::mine::{merge_runs, mine_scene, verified_negatives, window_starts};
use drivegen::stsbench::rules::{check, Ctx, Verdict, View};
use drivegen::stsbench::{Role, StsConfig};
use drivegen::tracks::{candidate_pairs, Kind, Track};

const W: usize = 6;

fn cfg() -> StsConfig {
    StsConfig::load(None).unwrap()
}

/// A track over keyframes 0..6 at 2 Hz.
fn track(id: &str, kind: Kind, xy: &[[f64; 2]], yaw: &[f64], speed: &[f64]) -> Track {
    let class = match kind {
        Kind::Vehicle => "car",
        Kind::Human => "pedestrian",
        Kind::Other => "barrier",
    };
    let n = xy.len();
    Track::new(
        id,
        class,
        kind,
        (0..n as u32).collect(),
        (0..n).map(|k| 0.5 * k as f64).collect(),
        xy.to_vec(),
        yaw.to_vec(),
        speed.to_vec(),
    )
}

fn line(x0: f64, dx: f64, y: f64) -> Vec<[f64; 2]> {
    (0..W).map(|k| [x0 + dx * k as f64, y]).collect()
}

fn c(v: f64) -> Vec<f64> {
    vec![v; W]
}

/// An ego parked far away (so pedestrian "near the ego" rules hold only when placed so).
fn ego_at(x: f64, y: f64) -> Track {
    track("ego", Kind::Vehicle, &line(x, 0.0, y), &c(0.0), &c(0.0))
}

fn single(sc: Scenario, a: &Track, ego: &Track) -> Verdict {
    let ctx = Ctx {
        a: View::new(a, 0, W),
        b: None,
        ego: Some(View::new(ego, 0, W)),
    };
    check(&cfg(), sc, &ctx, true)
}

fn pair(sc: Scenario, a: &Track, b: &Track) -> Verdict {
    let ego = ego_at(0.0, 0.0);
    let ctx = Ctx {
        a: View::new(a, 0, W),
        b: Some(View::new(b, 0, W)),
        ego: Some(View::new(&ego, 0, W)),
    };
    check(&cfg(), sc, &ctx, true)
}

fn car_speeds(v: &[f64]) -> Track {
    // Positions consistent enough; speed rules read the speed series.
    track("a", Kind::Vehicle, &line(0.0, 1.0, 0.0), &c(0.0), v)
}

fn yes(v: Verdict) -> bool {
    v == Verdict::Holds
}

#[test]
fn accelerate() {
    let e = ego_at(0.0, 0.0);
    // Steps of +1 > 0.1 and a gain of 5 > 3.
    assert!(yes(single(
        ACCELERATE,
        &car_speeds(&[2.0, 3.0, 4.0, 5.0, 6.0, 7.0]),
        &e
    )));
    // One step of +0.05 is not above 0.1.
    assert!(!yes(single(
        ACCELERATE,
        &car_speeds(&[2.0, 3.0, 4.0, 5.0, 5.05, 6.0]),
        &e
    )));
    // Gain 2.9 vs 3.1 around min_gain 3.0 (steps 0.58 and 0.62).
    assert!(!yes(single(
        ACCELERATE,
        &car_speeds(&[2.0, 2.58, 3.16, 3.74, 4.32, 4.9]),
        &e
    )));
    assert!(yes(single(
        ACCELERATE,
        &car_speeds(&[2.0, 2.62, 3.24, 3.86, 4.48, 5.1]),
        &e
    )));
    // A pedestrian is gated out.
    let mut p = car_speeds(&[2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    p.kind = Kind::Human;
    assert!(!yes(single(ACCELERATE, &p, &e)));
}

#[test]
fn decelerate_needs_a_negative_step() {
    let e = ego_at(0.0, 0.0);
    // Steps −1, drop 5 > 3, still 5 m/s > 1.5 at the end.
    assert!(yes(single(
        DECELERATE,
        &car_speeds(&[10.0, 9.0, 8.0, 7.0, 6.0, 5.0]),
        &e
    )));
    // A step of +0.05: the published rule (Δv < +0.1) accepted it; the fixed one (< −0.1) does not.
    assert!(!yes(single(
        DECELERATE,
        &car_speeds(&[10.0, 9.0, 9.05, 8.0, 7.0, 6.0]),
        &e
    )));
    // A step of −0.05 is not below −0.1 either.
    assert!(!yes(single(
        DECELERATE,
        &car_speeds(&[10.0, 9.0, 8.95, 8.0, 7.0, 6.0]),
        &e
    )));
    // Ends at 1.4 ≤ 1.5: that is a stop, not a deceleration.
    assert!(!yes(single(
        DECELERATE,
        &car_speeds(&[7.0, 6.0, 5.0, 4.0, 3.0, 1.4]),
        &e
    )));
}

#[test]
fn stop() {
    let e = ego_at(0.0, 0.0);
    // Drop 4.5 > 3 and final 0.5 < 0.55.
    assert!(yes(single(
        STOP,
        &car_speeds(&[5.0, 4.0, 3.0, 2.0, 1.0, 0.5]),
        &e
    )));
    // Final 0.6 ≥ 0.55.
    assert!(!yes(single(
        STOP,
        &car_speeds(&[5.0, 4.0, 3.0, 2.0, 1.0, 0.6]),
        &e
    )));
    // Drop 2.9 ≤ 3.
    assert!(!yes(single(
        STOP,
        &car_speeds(&[3.4, 3.0, 2.0, 1.5, 1.0, 0.5]),
        &e
    )));
}

fn turning(y0: f64, dy: f64) -> Track {
    let yaw: Vec<f64> = (0..W)
        .map(|k| drivegen::geometry::wrap_pi(y0 + dy * k as f64 / 5.0))
        .collect();
    track("a", Kind::Vehicle, &line(0.0, 2.0, 0.0), &yaw, &c(4.0))
}

#[test]
fn turns_wrap_their_yaw_change() {
    let e = ego_at(0.0, 0.0);
    // +0.85 rad > 0.8: left; +0.75: nothing.
    assert!(yes(single(LEFT_TURN, &turning(0.0, 0.85), &e)));
    assert!(!yes(single(LEFT_TURN, &turning(0.0, 0.75), &e)));
    assert!(!yes(single(RIGHT_TURN, &turning(0.0, 0.85), &e)));
    // Across ±π: 3.0 → 3.85 − 2π; the wrapped change is +0.85.
    assert!(yes(single(LEFT_TURN, &turning(3.0, 0.85), &e)));
    assert!(!yes(single(RIGHT_TURN, &turning(3.0, 0.85), &e)));
    assert!(yes(single(RIGHT_TURN, &turning(0.3, -0.85), &e)));
    // |1.8| > 1.7 is a U-turn; 1.6 is not.
    assert!(yes(single(U_TURN, &turning(0.0, 1.8), &e)));
    assert!(yes(single(U_TURN, &turning(0.0, -1.8), &e)));
    assert!(!yes(single(U_TURN, &turning(0.0, 1.6), &e)));
}

#[test]
fn reverse() {
    let e = ego_at(0.0, 0.0);
    // Facing +x (yaw 0) while moving towards −x: heading gap π > 1 rad in all 6 > 3 frames.
    let back = track("a", Kind::Vehicle, &line(0.0, -1.0, 0.0), &c(0.0), &c(2.0));
    assert!(yes(single(REVERSE, &back, &e)));
    // Mean speed 1.4 ≤ 1.5.
    let slow = track("a", Kind::Vehicle, &line(0.0, -0.7, 0.0), &c(0.0), &c(1.4));
    assert!(!yes(single(REVERSE, &slow, &e)));
    // Driving forwards.
    let fwd = track("a", Kind::Vehicle, &line(0.0, 1.0, 0.0), &c(0.0), &c(2.0));
    assert!(!yes(single(REVERSE, &fwd, &e)));
    // Backwards in only 3 of 6 frames (not more than half): forward, then back.
    let xy = vec![
        [0.0, 0.0],
        [1.0, 0.0],
        [2.0, 0.0],
        [3.0, 0.0],
        [2.0, 0.0],
        [1.0, 0.0],
    ];
    // Headings: 0,0,0 (→ next), π (3→4), π (4→5), π (last uses 4→5) → 3 frames off, not > 3.
    let mixed = track("a", Kind::Vehicle, &xy, &c(0.0), &c(2.0));
    assert!(!yes(single(REVERSE, &mixed, &e)));
}

#[test]
fn overtake_and_pass() {
    // The other drives +x at 5 m/s (2.5 m per keyframe); the actor 3 m to its left at 7 m/s
    // starts 2 m behind: x_r = −2, −1, 0, 1, 2, 3 (behind → ahead), d ≤ √(3² + 3²) = 4.24 < 5.
    let b = track("b", Kind::Vehicle, &line(0.0, 2.5, 0.0), &c(0.0), &c(5.0));
    let a = track("a", Kind::Vehicle, &line(-2.0, 3.5, 3.0), &c(0.0), &c(7.0));
    assert!(yes(pair(OVERTAKE_AGENT, &a, &b)));
    // 4.5 m to the side: d = √(3² + 4.5²) = 5.41 at the end, not < 5.
    let wide = track("a", Kind::Vehicle, &line(-2.0, 3.5, 4.5), &c(0.0), &c(7.0));
    assert!(!yes(pair(OVERTAKE_AGENT, &wide, &b)));
    // Heading 21° off (> 20°), or the other a pedestrian: no.
    let skew = track(
        "a",
        Kind::Vehicle,
        &line(-2.0, 3.5, 3.0),
        &c(21f64.to_radians()),
        &c(7.0),
    );
    assert!(!yes(pair(OVERTAKE_AGENT, &skew, &b)));
    let ped = track("b", Kind::Human, &line(0.0, 2.5, 0.0), &c(0.0), &c(5.0));
    assert!(!yes(pair(OVERTAKE_AGENT, &a, &ped)));
    // Passing a standing vehicle: x from −4 to +4 at y = 3, max d = 5 < 10, other at 0 m/s.
    let parked = track("b", Kind::Vehicle, &line(0.0, 0.0, 0.0), &c(0.0), &c(0.0));
    let passer = track("a", Kind::Vehicle, &line(-4.0, 1.6, 3.0), &c(0.0), &c(3.2));
    assert!(yes(pair(PASS_AGENT, &passer, &parked)));
    assert!(!yes(pair(OVERTAKE_AGENT, &passer, &parked)));
    // The other at 2.1 m/s (≥ 2) is not standing.
    let creeping = track("b", Kind::Vehicle, &line(0.0, 0.0, 0.0), &c(0.0), &c(2.1));
    assert!(!yes(pair(PASS_AGENT, &passer, &creeping)));
    // Humans: d < 1.5 and speeds > 0.5. x_r = −0.6 … +0.4, y = 1.0: max d = √(0.36 + 1) = 1.17.
    let hb = track("b", Kind::Human, &line(0.0, 0.5, 0.0), &c(0.0), &c(1.0));
    let ha = track("a", Kind::Human, &line(-0.6, 0.7, 1.0), &c(0.0), &c(1.4));
    assert!(yes(pair(OVERTAKE_AGENT, &ha, &hb)));
    let ha_far = track("a", Kind::Human, &line(-0.6, 0.7, 1.4), &c(0.0), &c(1.4));
    // max d = √(0.36 + 1.96) = 1.52 ≥ 1.5.
    assert!(!yes(pair(OVERTAKE_AGENT, &ha_far, &hb)));
}

#[test]
fn follow_and_lead() {
    let lead = track("b", Kind::Vehicle, &line(10.0, 2.5, 0.0), &c(0.0), &c(5.0));
    let follower = track("a", Kind::Vehicle, &line(0.0, 2.5, 0.5), &c(0.0), &c(5.0));
    // x_r = −10, |y_r| = 0.5 < 2, d = 10.01 < 20, Δv = 0 < 3, speeds 5 > 2.
    assert!(yes(pair(FOLLOW_AGENT, &follower, &lead)));
    assert!(!yes(pair(LEAD_AGENT, &follower, &lead)));
    assert!(yes(pair(LEAD_AGENT, &lead, &follower)));
    // 21 m behind: d ≥ 20.
    let far = track("a", Kind::Vehicle, &line(-11.0, 2.5, 0.0), &c(0.0), &c(5.0));
    assert!(!yes(pair(FOLLOW_AGENT, &far, &lead)));
    // 2.1 m to the side: |y_r| ≥ 2.
    let side = track("a", Kind::Vehicle, &line(0.0, 2.5, 2.1), &c(0.0), &c(5.0));
    assert!(!yes(pair(FOLLOW_AGENT, &side, &lead)));
    // Speed difference 3.2 ≥ 3.
    let fast = track("a", Kind::Vehicle, &line(0.0, 2.5, 0.0), &c(0.0), &c(8.2));
    assert!(!yes(pair(FOLLOW_AGENT, &fast, &lead)));
}

#[test]
fn wait_for_pedestrian() {
    let car = track("a", Kind::Vehicle, &line(0.0, 0.0, 0.0), &c(0.0), &c(0.3));
    let mut ped = track("b", Kind::Human, &line(8.0, 0.0, 1.0), &c(1.57), &c(1.2));
    // No ped_crossing layer: the rule cannot be decided.
    assert_eq!(
        pair(WAIT_PED_CROSS, &car, &ped),
        Verdict::NeedsMap(drivegen::maplayers::Layer::PedCrossing)
    );
    // On a crosswalk in one frame (any suffices), mean speed 0.3 < 0.55, max d = 8.06 < 10.
    ped.layers.ped_crossing = Some(vec![false, false, true, false, false, false]);
    assert!(yes(pair(WAIT_PED_CROSS, &car, &ped)));
    ped.layers.ped_crossing = Some(vec![false; W]);
    assert!(!yes(pair(WAIT_PED_CROSS, &car, &ped)));
    // Mean speed 0.6 ≥ 0.55.
    ped.layers.ped_crossing = Some(vec![true; W]);
    let rolling = track("a", Kind::Vehicle, &line(0.0, 0.0, 0.0), &c(0.0), &c(0.6));
    assert!(!yes(pair(WAIT_PED_CROSS, &rolling, &ped)));
}

#[test]
fn stationary_relations_wrap_yaw() {
    let b = track("b", Kind::Vehicle, &line(0.0, 0.0, 0.0), &c(0.0), &c(0.1));
    let at =
        |x: f64, y: f64, yaw: f64| track("a", Kind::Vehicle, &line(x, 0.0, y), &c(yaw), &c(0.1));
    // (−4, 0.5): x_r < −1, |y_r| < 2, d = 4.03 < 5, yaw diff 0.
    assert!(yes(pair(STATIONARY_BEHIND_AGENT, &at(-4.0, 0.5, 0.0), &b)));
    assert!(yes(pair(
        STATIONARY_IN_FRONT_OF_AGENT,
        &at(4.0, 0.5, 0.0),
        &b
    )));
    // 5.1 m behind: d ≥ 5.
    assert!(!yes(pair(STATIONARY_BEHIND_AGENT, &at(-5.1, 0.0, 0.0), &b)));
    // 16° off (≥ 15°) vs 14°.
    assert!(!yes(pair(
        STATIONARY_BEHIND_AGENT,
        &at(-4.0, 0.0, 16f64.to_radians()),
        &b
    )));
    assert!(yes(pair(
        STATIONARY_BEHIND_AGENT,
        &at(-4.0, 0.0, 14f64.to_radians()),
        &b
    )));
    // Beside: (0.5, ±2.5): |x_r| < 1, |y_r| > 1, d = 2.55.
    assert!(yes(pair(STATIONARY_LEFT_OF_AGENT, &at(0.5, 2.5, 0.0), &b)));
    assert!(yes(pair(
        STATIONARY_RIGHT_OF_AGENT,
        &at(0.5, -2.5, 0.0),
        &b
    )));
    assert!(!yes(pair(STATIONARY_LEFT_OF_AGENT, &at(1.2, 2.5, 0.0), &b)));
    // Speed 0.35 ≥ 0.3.
    let moving = track("a", Kind::Vehicle, &line(-4.0, 0.0, 0.0), &c(0.0), &c(0.35));
    assert!(!yes(pair(STATIONARY_BEHIND_AGENT, &moving, &b)));
    // Both facing −x, on either side of ±π (179.4° and −179.4°): the raw difference is 358.9°
    // (the published rule rejected it), the wrapped one 1.1°. Behind a −x-facing car is +x.
    let bb = track(
        "b",
        Kind::Vehicle,
        &line(0.0, 0.0, 0.0),
        &c(std::f64::consts::PI - 0.01),
        &c(0.1),
    );
    let aa = track(
        "a",
        Kind::Vehicle,
        &line(4.0, 0.0, 0.0),
        &c(-std::f64::consts::PI + 0.01),
        &c(0.1),
    );
    assert!(yes(pair(STATIONARY_BEHIND_AGENT, &aa, &bb)));
}

#[test]
fn moving_beside() {
    let b = track("b", Kind::Vehicle, &line(0.0, 2.5, 0.0), &c(0.0), &c(5.0));
    let a = track("a", Kind::Vehicle, &line(0.5, 2.5, 3.0), &c(0.0), &c(5.0));
    assert!(yes(pair(MOVING_LEFT_OF_AGENT, &a, &b)));
    assert!(!yes(pair(MOVING_RIGHT_OF_AGENT, &a, &b)));
    let r = track("a", Kind::Vehicle, &line(0.5, 2.5, -3.0), &c(0.0), &c(5.0));
    assert!(yes(pair(MOVING_RIGHT_OF_AGENT, &r, &b)));
    // Speeds 1.4 ≤ 1.5.
    let slow_b = track("b", Kind::Vehicle, &line(0.0, 0.7, 0.0), &c(0.0), &c(1.4));
    let slow_a = track("a", Kind::Vehicle, &line(0.5, 0.7, 3.0), &c(0.0), &c(1.4));
    assert!(!yes(pair(MOVING_LEFT_OF_AGENT, &slow_a, &slow_b)));
    // 5.1 m to the side: d ≥ 5.
    let wide = track("a", Kind::Vehicle, &line(0.5, 2.5, 5.1), &c(0.0), &c(5.0));
    assert!(!yes(pair(MOVING_LEFT_OF_AGENT, &wide, &b)));
}

#[test]
fn pedestrian_pairs() {
    let b = track("b", Kind::Human, &line(0.0, 0.65, 0.0), &c(0.0), &c(1.3));
    // 0.8 m beside, same heading: max d 0.8 < 1, speeds 1.3 > 1.1.
    let a = track("a", Kind::Human, &line(0.0, 0.65, 0.8), &c(0.0), &c(1.3));
    assert!(yes(pair(WALK_ALONGSIDE, &a, &b)));
    let apart = track("a", Kind::Human, &line(0.0, 0.65, 1.1), &c(0.0), &c(1.3));
    assert!(!yes(pair(WALK_ALONGSIDE, &apart, &b)));
    // Opposite: x difference 3.2 − 1.3k, y 1: max d = √(3.3² + 1) = 3.45 < 5, yaw diff 180°.
    let bo = track("b", Kind::Human, &line(-1.6, 0.65, 0.0), &c(0.0), &c(1.3));
    let ao = track(
        "a",
        Kind::Human,
        &line(1.6, -0.65, 1.0),
        &c(std::f64::consts::PI),
        &c(1.3),
    );
    assert!(yes(pair(WALK_OPPOSITE, &ao, &bo)));
    assert!(!yes(pair(WALK_ALONGSIDE, &ao, &bo)));
    // Heading difference 140° ≤ 150°.
    let ao2 = track(
        "a",
        Kind::Human,
        &line(1.6, -0.65, 1.0),
        &c(140f64.to_radians()),
        &c(1.3),
    );
    assert!(!yes(pair(WALK_OPPOSITE, &ao2, &bo)));
}

fn ped(speed: f64) -> Track {
    track(
        "p",
        Kind::Human,
        &line(10.0, speed / 2.0, 0.0),
        &c(1.57),
        &c(speed),
    )
}

#[test]
fn pedestrian_actions() {
    let near = ego_at(0.0, 0.0);
    let far = ego_at(-45.0, 0.0);
    let mut p = ped(1.0);
    assert_eq!(
        single(CROSS, &p, &near),
        Verdict::NeedsMap(drivegen::maplayers::Layer::PedCrossing)
    );
    p.layers.ped_crossing = Some(vec![true; W]);
    p.layers.drivable_area = Some(vec![true; W]);
    p.layers.walkway = Some(vec![false; W]);
    // On the crosswalk throughout, 1.0 > 0.5 m/s, ego 10–12.5 m away (< 40).
    assert!(yes(single(CROSS, &p, &near)));
    // Ego 55 m away.
    assert!(!yes(single(CROSS, &p, &far)));
    assert!(!yes(single(JAYWALK, &p, &near)));
    // One frame off the crosswalk: no crossing; still on a crosswalk once: no jaywalking.
    p.layers.ped_crossing = Some(vec![true, true, true, false, true, true]);
    assert!(!yes(single(CROSS, &p, &near)));
    assert!(!yes(single(JAYWALK, &p, &near)));
    p.layers.ped_crossing = Some(vec![false; W]);
    assert!(yes(single(JAYWALK, &p, &near)));
    p.layers.drivable_area = Some(vec![true, true, false, true, true, true]);
    assert!(!yes(single(JAYWALK, &p, &near)));
    // RUN: 3.0 > 2.5 near the ego; 2.4 no.
    assert!(yes(single(RUN, &ped(3.0), &near)));
    assert!(!yes(single(RUN, &ped(2.4), &near)));
    assert!(!yes(single(RUN, &ped(3.0), &far)));
    // STAND: max 0.05 < 0.1; 0.15 no.
    assert!(yes(single(STAND, &ped(0.05), &near)));
    assert!(!yes(single(STAND, &ped(0.15), &near)));
    // WALK: on the walkway, 1.1 < 1.3 < 1.6.
    let mut w = ped(1.3);
    assert_eq!(
        single(WALK, &w, &near),
        Verdict::NeedsMap(drivegen::maplayers::Layer::Walkway)
    );
    w.layers.walkway = Some(vec![true; W]);
    assert!(yes(single(WALK, &w, &near)));
    let mut fast = ped(1.7);
    fast.layers.walkway = Some(vec![true; W]);
    assert!(!yes(single(WALK, &fast, &near)));
}

fn rect(token: &str, x0: f64, y0: f64, x1: f64, y1: f64) -> Polygon {
    Polygon::new(
        token.into(),
        vec![[x0, y0], [x1, y0], [x1, y1], [x0, y1]],
        vec![],
    )
}

/// Two lanes along +x (y ∈ [−3.5, 0] and [0, 3.5]), each cut into 10 m segments.
fn two_lanes() -> MapLayers {
    let mut lanes = Vec::new();
    for (k, (y0, y1)) in [(-3.5, 0.0), (0.0, 3.5)].into_iter().enumerate() {
        for s in 0..6 {
            let x0 = -10.0 + 10.0 * f64::from(s);
            lanes.push(rect(&format!("lane{k}-{s}"), x0, y0, x0 + 10.0, y1));
        }
    }
    MapLayers {
        lane: Some(lanes),
        ..Default::default()
    }
}

#[test]
fn lane_change_needs_a_lateral_crossing() {
    let map = two_lanes();
    let lat = cfg().lane_change.max_boundary_angle_deg.to_radians();
    let e = ego_at(0.0, 0.0);
    // Straight down the right lane at y = −1.75 through three 10 m segments: the lane id
    // changes twice (the published rule fired), but only across end edges: no lane change.
    let straight = track(
        "a",
        Kind::Vehicle,
        &line(-5.0, 8.0, -1.75),
        &c(0.0),
        &c(16.0),
    )
    .with_map(&map, lat);
    assert_eq!(straight.layers.lane.as_ref().unwrap()[0], Some(0));
    assert_ne!(
        straight.layers.lane.as_ref().unwrap()[0],
        straight.layers.lane.as_ref().unwrap()[5]
    );
    assert!(!yes(single(LANE_CHANGE, &straight, &e)));
    // Drifting from y = −1.75 to +1.75 within one segment row: crosses y = 0 (an edge parallel
    // to the heading) between frames 2 and 3.
    let xy: Vec<[f64; 2]> = (0..W)
        .map(|k| [-8.0 + 1.5 * k as f64, -1.75 + 0.7 * k as f64])
        .collect();
    let drift = track("a", Kind::Vehicle, &xy, &c(0.0), &c(3.0)).with_map(&map, lat);
    assert_eq!(
        drift.layers.lane_change.as_ref().unwrap(),
        &vec![false, false, true, false, false]
    );
    assert!(yes(single(LANE_CHANGE, &drift, &e)));
    // Without a lane layer the rule is not guessed.
    let bare = track("a", Kind::Vehicle, &xy, &c(0.0), &c(3.0)).with_map(&MapLayers::none(), lat);
    assert_eq!(
        single(LANE_CHANGE, &bare, &e),
        Verdict::NeedsMap(drivegen::maplayers::Layer::Lane)
    );
}

#[test]
fn windows_and_runs() {
    // Keyframes 0..=8 with 9 missing… 0,1,2,3,4,5,6,7 then 10,11,…,15: windows of 6 need
    // consecutive keyframes: starts 0,1,2 and 8 (frames 10..=15).
    let frames: Vec<u32> = (0..8).chain(10..16).collect();
    assert_eq!(window_starts(&frames, 6), vec![0, 1, 2, 8]);
    // Runs [1,2,3,4] → centre 2 (left of the two centres), [6,7] → 6, [9] → 9.
    let starts = [0, 1, 2, 3, 4, 6, 7, 9];
    let pos = [false, true, true, true, true, true, true, true];
    assert_eq!(merge_runs(&starts, &pos), vec![2, 6, 9]);
    // An odd run of 3 keeps its middle.
    assert_eq!(merge_runs(&[0, 1, 2], &[true, true, true]), vec![1]);
}

#[test]
fn negatives_that_hold_are_removed() {
    let cfg = cfg();
    let map = two_lanes();
    let lat = cfg.lane_change.max_boundary_angle_deg.to_radians();
    // Accelerating while changing lanes: LANE_CHANGE (head of ACCELERATE's list) must go.
    let xy: Vec<[f64; 2]> = (0..W)
        .map(|k| [-8.0 + 1.5 * k as f64, -1.75 + 0.7 * k as f64])
        .collect();
    let a = track(
        "a",
        Kind::Vehicle,
        &xy,
        &c(0.0),
        &[2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
    )
    .with_map(&map, lat);
    let e = ego_at(0.0, 0.0);
    let ctx = Ctx {
        a: View::new(&a, 0, W),
        b: None,
        ego: Some(View::new(&e, 0, W)),
    };
    // The ego's manoeuvres other than the positive, in catalog order, without the lane change
    // that holds.
    let negs = verified_negatives(&cfg, Role::Ego, ACCELERATE, &ctx);
    assert_eq!(
        negs,
        vec![DECELERATE, STOP, LEFT_TURN, RIGHT_TURN, U_TURN, REVERSE]
    );
    // An agent never decelerates in the catalog, so its questions never offer it.
    assert!(!verified_negatives(&cfg, Role::Agent, ACCELERATE, &ctx).contains(&DECELERATE));
    // Without a map the lane change cannot be ruled out, so it is removed too.
    let bare = track(
        "a",
        Kind::Vehicle,
        &line(0.0, 1.0, 0.0),
        &c(0.0),
        &[2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
    );
    let ctx = Ctx {
        a: View::new(&bare, 0, W),
        b: None,
        ego: Some(View::new(&e, 0, W)),
    };
    assert!(!verified_negatives(&cfg, Role::Ego, ACCELERATE, &ctx).contains(&LANE_CHANGE));
    // A pedestrian walking at median 1.3 m/s: WALK is no distractor for RUN (0.5 ≤ 1.3 ≤ 1.66).
    let p = ped(1.3);
    let ctx = Ctx {
        a: View::new(&p, 0, W),
        b: None,
        ego: Some(View::new(&e, 0, W)),
    };
    let negs = verified_negatives(&cfg, Role::Agent, STAND, &ctx);
    assert!(!negs.contains(&WALK));
    assert!(negs.contains(&RUN));
    // Only pedestrian scenarios: a vehicle's manoeuvre would be ruled out by the class alone.
    assert!(
        negs.iter().all(|n| [CROSS, JAYWALK, RUN, WALK].contains(n)),
        "{negs:?}"
    );
}

#[test]
fn mining_a_scene_finds_both_roles_of_a_relation() {
    let cfg = cfg();
    // 8 keyframes: the ego follows a car 10 m ahead at 5 m/s; the car leads the ego.
    let n = 8;
    let ego = Track::new(
        "ego",
        "ego",
        Kind::Vehicle,
        (0..n).collect(),
        (0..n).map(|k| 0.5 * f64::from(k)).collect(),
        (0..n).map(|k| [2.5 * f64::from(k), 0.0]).collect(),
        vec![0.0; 8],
        vec![5.0; 8],
    );
    let car = Track::new(
        "car1",
        "car",
        Kind::Vehicle,
        (0..n).collect(),
        (0..n).map(|k| 0.5 * f64::from(k)).collect(),
        (0..n).map(|k| [10.0 + 2.5 * f64::from(k), 0.0]).collect(),
        vec![0.0; 8],
        vec![5.0; 8],
    );
    let far = Track::new(
        "car2",
        "car",
        Kind::Vehicle,
        (0..n).collect(),
        (0..n).map(|k| 0.5 * f64::from(k)).collect(),
        (0..n).map(|k| [500.0, 2.5 * f64::from(k)]).collect(),
        vec![1.57; 8],
        vec![5.0; 8],
    );
    let m = mine_scene(&cfg, &[ego, car, far]);
    // 3 windows (starts 0, 1, 2) all positive → merged to start 1: frames 1..=6.
    let got: Vec<(Role, Scenario, usize, Option<usize>, u32)> = m
        .instances
        .iter()
        .map(|i| (i.role, i.scenario, i.actor, i.other, i.frames[0]))
        .collect();
    assert!(
        got.contains(&(Role::EgoAgent, FOLLOW_AGENT, 0, Some(1), 1)),
        "{got:?}"
    );
    assert!(
        got.contains(&(Role::AgentEgo, LEAD_EGO, 1, Some(0), 1)),
        "{got:?}"
    );
    // The far car takes part in no pair scenario.
    assert!(
        !got.iter()
            .any(|g| g.3 == Some(2) || (g.2 == 2 && g.3.is_some())),
        "{got:?}"
    );
}

#[test]
fn neighbour_search_equals_brute_force() {
    // 100 tracks over 4 keyframes on a pseudo-random scatter, some on identical positions.
    let mut s = 12345u64;
    let mut rnd = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 33) as f64) / f64::from(1u32 << 31)
    };
    let mut tracks = Vec::new();
    for i in 0..100 {
        let xy: Vec<[f64; 2]> = (0..4)
            .map(|_| {
                if i % 10 == 0 {
                    [5.0, 5.0]
                } else {
                    [rnd() * 200.0, rnd() * 200.0]
                }
            })
            .collect();
        tracks.push(Track::new(
            &format!("t{i}"),
            "car",
            Kind::Vehicle,
            vec![0, 1, 2, 3],
            vec![0.0; 4],
            xy,
            vec![0.0; 4],
            vec![0.0; 4],
        ));
    }
    let got = candidate_pairs(&tracks, 20.0);
    let mut want = Vec::new();
    for i in 0..tracks.len() {
        for j in i + 1..tracks.len() {
            let close = (0..4).any(|k| {
                let (p, q) = (tracks[i].xy[k], tracks[j].xy[k]);
                (p[0] - q[0]).hypot(p[1] - q[1]) <= 20.0
            });
            if close {
                want.push((i, j));
            }
        }
    }
    assert_eq!(got, want);
    assert!(got.contains(&(0, 10)));
}

#[test]
fn speeds_from_positions_by_hand() {
    // 1 m, 2 m, 3 m steps every 0.5 s: 2, 4, 6 m/s; the last extrapolates 3·6 − 3·4 + 2 = 8.
    let t = [0.0, 0.5, 1.0, 1.5];
    let xy = [[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [6.0, 0.0]];
    assert_eq!(
        drivegen::tracks::speeds_from_positions(&t, &xy),
        vec![2.0, 4.0, 6.0, 8.0]
    );
}

#[test]
fn config_errors_name_the_file_and_key() {
    let text =
        drivegen::stsbench::config::DEFAULT_TOML.replace("min_gain = 3.0", "min_gain = -3.0");
    let e = StsConfig::from_toml(&text, std::path::Path::new("my.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("my.toml") && e.contains("accelerate.min_gain"),
        "{e}"
    );
    let text =
        drivegen::stsbench::config::DEFAULT_TOML.replace("[stop]", "[stop]\nmin_dropp = 1.0");
    let e = StsConfig::from_toml(&text, std::path::Path::new("my.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("my.toml") && e.contains("min_dropp"), "{e}");
    let text = drivegen::stsbench::config::DEFAULT_TOML.replace("\"U_TURN\", ", "\"UTURN\", ");
    let e = StsConfig::from_toml(&text, std::path::Path::new("my.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("UTURN"), "{e}");
    // The catalog: 54 role × type combinations. What a question may offer follows from the
    // role and the classes named, so it is the same set whatever the answer.
    let n: usize = Role::ALL.iter().map(|r| r.scenarios().len()).sum();
    assert_eq!(n, 54);
    use drivegen::stsbench::rules::plausible;
    use Kind::{Human, Vehicle};
    assert_eq!(
        plausible(Role::Agent, Human, None),
        vec![CROSS, JAYWALK, RUN, STAND, WALK]
    );
    assert_eq!(
        plausible(Role::AgentAgent, Human, Some(Human)),
        vec![OVERTAKE_AGENT, PASS_AGENT, WALK_ALONGSIDE, WALK_OPPOSITE]
    );
    // A vehicle and a pedestrian share one catalogued scenario: nothing to offer beside it.
    assert_eq!(
        plausible(Role::EgoAgent, Vehicle, Some(Human)),
        vec![WAIT_PED_CROSS]
    );
    assert_eq!(plausible(Role::AgentEgo, Vehicle, Some(Vehicle)).len(), 10);
    assert_eq!(plausible(Role::Agent, Vehicle, None).len(), 7);
}

#[test]
fn lane_change_in_the_same_step_as_a_segment_change() {
    let map = two_lanes();
    let lat = cfg().lane_change.max_boundary_angle_deg.to_radians();
    // From (−2, −1.75) to (6, 1.75): crosses the segment end x = 0 first (at y ≈ −0.88, still
    // in the right lane), then the lane divider y = 0 at x = 2: a lane change.
    let xy = vec![
        [-18.0, -1.75],
        [-10.0 + 1e-3, -1.75],
        [-2.0, -1.75],
        [6.0, 1.75],
        [14.0, 1.75],
        [22.0, 1.75],
    ];
    let tr = track("a", Kind::Vehicle, &xy, &c(0.0), &c(16.0)).with_map(&map, lat);
    assert_eq!(
        tr.layers.lane_change.as_ref().unwrap(),
        &vec![false, false, true, false, false]
    );
    // Crossing only end edges (one or two segments in one step) is no change.
    let xy: Vec<[f64; 2]> = (0..W).map(|k| [-9.0 + 11.0 * k as f64, 1.75]).collect();
    let tr = track("a", Kind::Vehicle, &xy, &c(0.0), &c(22.0)).with_map(&map, lat);
    assert_eq!(tr.layers.lane_change.as_ref().unwrap(), &vec![false; 5]);
}
