//! SIG grids on hand-placed vehicles (cells, order, relations derived by hand in the comments),
//! the relation questions, and the SIG metrics (MLSM, SRGS, SRD) on hand-made grids.

use crate::common;

use drivegen::config::StageConfig;
use drivegen::score::sig::{hungarian, mlsm, parse_key, parse_sig, srd, srgs};
use drivegen::sig::config::Binning;
use drivegen::sig::frame::{build, Candidate};
use drivegen::sig::grid::{cell, directional, proximal, self_cell};
use drivegen::sig::qa::{frame_questions, mc_options, ImageRef};
use drivegen::sig::SigConfig;
use serde_json::json;

fn cfg() -> SigConfig {
    SigConfig::load(None).unwrap()
}

fn cand(id: &str, class: &str, lateral: f64, forward: f64, u: f64) -> Candidate {
    Candidate {
        track_id: id.into(),
        class: class.into(),
        colour: None,
        lateral_m: lateral,
        forward_m: forward,
        u,
    }
}

fn approx(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-9, "{a} vs {b}");
}

#[test]
fn cells_and_labels() {
    let c = cfg();
    // 10 columns over [−20, 20) m: 4 m each; 10 rows over [0, 50) m: 5 m each.
    assert_eq!(self_cell(&c.grid), [5, 0]);
    assert_eq!(cell(&c.grid, -6.0, 12.0), Some([3, 2]));
    assert_eq!(cell(&c.grid, 19.99, 49.99), Some([9, 9]));
    assert_eq!(cell(&c.grid, 20.0, 10.0), None);
    assert_eq!(cell(&c.grid, 0.0, -0.1), None);
    let mut g = c.grid.clone();
    g.binning = Binning::Sqrt;
    // √(12.5 / 50) = 0.5 → row 5.
    assert_eq!(cell(&g, 0.0, 12.5), Some([5, 5]));
    // Sectors: axes, diagonals, and 26.6° (front-right) vs 18.4° (front) off the front axis.
    assert_eq!(directional(0.0, -1.0), Some(0));
    assert_eq!(directional(-1.0, -1.0), Some(1));
    assert_eq!(directional(-1.0, 0.0), Some(2));
    assert_eq!(directional(-1.0, 1.0), Some(3));
    assert_eq!(directional(0.0, 1.0), Some(4));
    assert_eq!(directional(1.0, 1.0), Some(5));
    assert_eq!(directional(1.0, 0.0), Some(6));
    assert_eq!(directional(1.0, -1.0), Some(7));
    assert_eq!(directional(1.0, 2.0), Some(5));
    assert_eq!(directional(1.0, 3.0), Some(4));
    assert_eq!(directional(0.0, 0.0), None);
    let bins = c.relations.proximal_bins;
    assert_eq!(proximal(&bins, std::f64::consts::SQRT_2), 0);
    assert_eq!(proximal(&bins, 1.5), 1);
    assert_eq!(proximal(&bins, 2.83), 1);
    assert_eq!(proximal(&bins, 4.24), 2);
    assert_eq!(proximal(&bins, 5.1), 3);
    assert_eq!(proximal(&bins, 10.3), 4);
}

fn scene() -> drivegen::sig::SigFrame {
    build(
        &cfg(),
        &[
            cand("A", "car", -6.0, 12.0, 300.0),
            cand("B", "truck", 5.0, 27.0, 1200.0),
            cand("C", "bus", -19.0, 49.0, 100.0),
            cand("D", "pedestrian", 1.0, 5.0, 700.0),
            cand("E", "car", 25.0, 10.0, 1500.0),
            cand("F", "trailer", 0.5, 2.0, 800.0),
        ],
    )
}

#[test]
fn hand_placed_grid() {
    let s = scene();
    // The pedestrian is no vehicle; E is outside the lateral extent; order by u among the rest:
    // C (100) bus 1, A (300) car 2, F (800, a trailer → truck) truck 3, B (1200) truck 4.
    assert_eq!(s.outside, 1);
    let keys: Vec<(&str, &str, [u32; 2])> = s
        .objects
        .iter()
        .map(|o| (o.key.as_str(), o.track_id.as_str(), o.cell))
        .collect();
    assert_eq!(
        keys,
        vec![
            ("bus 1", "C", [0, 9]),
            ("car 2", "A", [3, 2]),
            ("truck 3", "F", [5, 0]),
            ("truck 4", "B", [6, 5])
        ]
    );
    assert_eq!(
        s.sig_json(),
        json!({"vehicles": {"bus 1": [0, 9], "car 2": [3, 2], "truck 3": [5, 0], "truck 4": [6, 5]},
               "traffic_lanes": {}, "traffic_signs": {}, "traffic_lights": {}, "self": [5, 0]})
    );
    let rel = |a: &str, b: &str| {
        s.relations
            .iter()
            .find(|r| r.subject == a && r.object == b)
            .unwrap()
    };
    // car 2 − self = (−2, 2): front left (3), distance 2.83: close to (1).
    assert_eq!(
        (
            rel("car 2", "self").directional,
            rel("car 2", "self").proximal
        ),
        (Some(3), 1)
    );
    // truck 4 − car 2 = (3, 3): front right (5), 4.24: at a distance from (2).
    assert_eq!(
        (
            rel("truck 4", "car 2").directional,
            rel("truck 4", "car 2").proximal
        ),
        (Some(5), 2)
    );
    assert_eq!(rel("car 2", "truck 4").directional, Some(1));
    // bus 1 − self = (−5, 9): 29° left of the front axis → front left; 10.3 → far away from.
    assert_eq!(
        (
            rel("bus 1", "self").directional,
            rel("bus 1", "self").proximal
        ),
        (Some(3), 4)
    );
    // self − truck 4 = (−1, −5): 11° off the back axis → back; 5.10 → far from (3).
    assert_eq!(
        (
            rel("self", "truck 4").directional,
            rel("self", "truck 4").proximal
        ),
        (Some(0), 3)
    );
    // truck 3 shares the self cell: no direction, adjacent.
    assert_eq!(
        (
            rel("truck 3", "self").directional,
            rel("truck 3", "self").proximal
        ),
        (None, 0)
    );
    // 5 nodes → 20 ordered relations.
    assert_eq!(s.relations.len(), 20);
}

#[test]
fn relation_questions() {
    let s = scene();
    let img = ImageRef {
        source: "synthetic",
        scene_id: "s",
        frame_idx: 3,
        camera: "CAM_FRONT",
        camera_frame_id: "img",
    };
    let qs = frame_questions(&cfg(), &img, &s, 7, "h").unwrap();
    assert_eq!(qs.len(), 8);
    let recs: Vec<_> = qs.iter().map(|q| q.record.clone()).collect();
    drivegen::qa::check_invariants(&recs).unwrap();
    let labels = |rel: &str| -> &[&str] {
        if rel == "directional" {
            &drivegen::sig::grid::DIRECTIONAL
        } else {
            &drivegen::sig::grid::PROXIMAL
        }
    };
    for q in &qs {
        let r = s
            .relations
            .iter()
            .find(|r| r.subject == q.subject && r.object == q.object)
            .unwrap();
        let want = if q.relation == "directional" {
            r.directional.unwrap()
        } else {
            r.proximal
        };
        assert_eq!(q.label_id, want);
        assert_eq!(q.record.answer, labels(q.relation)[want as usize]);
        let n = if q.record.question_type.ends_with("fill") {
            labels(q.relation).len()
        } else {
            4
        };
        assert_eq!(q.record.choices.len(), n);
        // Subjects come after their objects in node order, so truck 3 (no direction) is not asked
        // about self.
        assert!(!(q.subject == "truck 3" && q.object == "self"));
    }
}

/// Multiple-choice options are listed in order (directions clockwise from anywhere, distances
/// near to far) and the set offered says nothing about which is right: with balanced answers,
/// each option of every set is the answer equally often, and so is each letter.
#[test]
fn mc_options_are_ordered_and_do_not_give_the_answer_away() {
    use drivegen::qa::record::SplitMix64;
    use std::collections::BTreeMap;
    let seed = common::random::seed();
    let mut pick = SplitMix64::new(seed);
    for (m, cyclic) in [(8u8, true), (5u8, false)] {
        let mut by_set: BTreeMap<Vec<u8>, BTreeMap<u8, usize>> = BTreeMap::new();
        let mut letters = [0usize; 4];
        let draws = 4000;
        for c in 0..m {
            for _ in 0..draws {
                let ids = mc_options(c, 4, cyclic, &mut pick);
                assert_eq!(ids.len(), 4);
                let at = ids
                    .iter()
                    .position(|&i| i == c)
                    .expect("the answer is offered");
                letters[at] += 1;
                for w in ids.windows(2) {
                    if cyclic {
                        assert_eq!(w[1], (w[0] + 1) % m, "{ids:?} is not clockwise");
                    } else {
                        assert!(w[0] < w[1], "{ids:?} is not near to far");
                    }
                }
                let mut set = ids.clone();
                set.sort_unstable();
                *by_set.entry(set).or_default().entry(c).or_default() += 1;
            }
        }
        let total = f64::from(m) * draws as f64;
        for l in letters {
            let share = l as f64 / total;
            assert!(
                (share - 0.25).abs() < 0.02,
                "letters {letters:?} (seed {seed})"
            );
        }
        for (set, answers) in &by_set {
            assert_eq!(answers.len(), 4, "{set:?}: answers {answers:?}");
            let n: usize = answers.values().sum();
            for (c, k) in answers {
                let share = *k as f64 / n as f64;
                assert!(
                    (share - 0.25).abs() < 0.05,
                    "{set:?}: answer {c} in {share:.3} of its rows (seed {seed})"
                );
            }
        }
    }
}

#[test]
fn key_parsing() {
    assert_eq!(
        parse_key("white car 1"),
        (Some("white".into()), Some("car".into()), Some(1))
    );
    assert_eq!(
        parse_key("truck 12"),
        (None, Some("truck".into()), Some(12))
    );
    assert_eq!(
        parse_key("dark blue van 3"),
        (Some("dark blue".into()), Some("van".into()), Some(3))
    );
}

#[test]
fn hungarian_is_optimal() {
    // Brute force over all assignments of 3 rows to 4 columns.
    let cost = vec![
        vec![4.0, 1.0, 3.0, 9.0],
        vec![2.0, 0.0, 5.0, 1.0],
        vec![3.0, 2.0, 2.0, 8.0],
    ];
    let a = hungarian(&cost);
    let total: f64 = a.iter().enumerate().map(|(i, j)| cost[i][j.unwrap()]).sum();
    let mut best = f64::INFINITY;
    for x in 0..4 {
        for y in 0..4 {
            for z in 0..4 {
                if x != y && y != z && x != z {
                    best = best.min(cost[0][x] + cost[1][y] + cost[2][z]);
                }
            }
        }
    }
    // 1 (row 0 → col 1) + 1 (row 1 → col 3) + 2 (row 2 → col 2) = 4.
    approx(best, 4.0);
    approx(total, best);
    // More rows than columns: two rows stay unmatched.
    let t = hungarian(&[vec![5.0], vec![1.0], vec![3.0]]);
    assert_eq!(t, vec![None, Some(0), None]);
}

fn grid(v: serde_json::Value) -> drivegen::score::sig::Grid {
    parse_sig(&v).unwrap()
}

#[test]
fn mlsm_by_hand() {
    let m = cfg().metrics;
    let truth = grid(json!({"vehicles": {"car 1": [2, 3], "truck 2": [6, 5]}, "self": [4, 0]}));
    // Self one column right: everything shifts by −1. car 1 lands on [2, 3] (d 0); "car 2" on
    // [7, 5], 1 from truck 2 but of another type.
    let pred = grid(json!({"vehicles": {"car 1": [3, 3], "car 2": [8, 5]}, "self": [5, 0]}));
    let r = mlsm(&m, &truth, &pred);
    // Every α: TP 1, FP 1, FN 1 → P = R = 1/2, AssA = 1/3, F1 = 1/2, at every level.
    for p in [r.type_level, r.order_level, r.colour_level, r.mean] {
        approx(p.precision, 0.5);
        approx(p.recall, 0.5);
        approx(p.assa, 1.0 / 3.0);
        approx(p.f1, 0.5);
    }
    // truck 2 predicted 2 cells off: α = 1 has 1 TP, α = 2 and 3 have 2.
    let pred = grid(json!({"vehicles": {"car 1": [3, 3], "truck 2": [9, 5]}, "self": [5, 0]}));
    let r = mlsm(&m, &truth, &pred);
    // P = R = (1/2 + 1 + 1)/3 = 5/6; AssA = (1/3 + 1 + 1)/3 = 7/9; F1 = 5/6.
    approx(r.type_level.precision, 5.0 / 6.0);
    approx(r.type_level.recall, 5.0 / 6.0);
    approx(r.type_level.assa, 7.0 / 9.0);
    approx(r.type_level.f1, 5.0 / 6.0);
    // Wrong order on car 1 ("car 3"): levels 2 and 3 lose it: α=1: 0 TP; α=2,3: 1 TP.
    let pred = grid(json!({"vehicles": {"car 3": [3, 3], "truck 2": [9, 5]}, "self": [5, 0]}));
    let r = mlsm(&m, &truth, &pred);
    approx(r.type_level.precision, 5.0 / 6.0);
    approx(r.order_level.precision, (0.0 + 0.5 + 0.5) / 3.0);
    approx(r.order_level.assa, (0.0 + 1.0 / 3.0 + 1.0 / 3.0) / 3.0);
    // Two empty grids agree perfectly.
    let e = grid(json!({"vehicles": {}, "self": [5, 0]}));
    approx(mlsm(&m, &e, &e).mean.f1, 1.0);
}

#[test]
fn srgs_by_hand() {
    let m = cfg().metrics;
    let truth = grid(json!({"vehicles": {"car 1": [5, 3]}, "self": [5, 0]}));
    let pred = grid(json!({"vehicles": {"car 1": [5, 4]}, "self": [5, 0]}));
    // Nodes: car 1 off by 1 → D_N = 1. Edges (0, 3) vs (0, 4) and back: 1 each, same labels →
    // D_E = 2. D_max = (3 + 3) + (3·2 + 3·2) = 18. S = 1 − 3/18.
    approx(srgs(&m, &truth, &pred, 1.0, 1.0), 1.0 - 3.0 / 18.0);
    approx(srgs(&m, &truth, &truth, 1.0, 1.0), 1.0);
    // An extra predicted car 2 at [0, 9]: deleted (its best pairing costs 7.8 + 1 > 6).
    // D_N = 1 + 3 = 4; D_E = 2 matched edges (1 each) + 4 deleted edges × 3 = 14.
    // D_max = (3·2 + 3·1) + (3·6 + 3·2) = 33. S = 1 − 18/33; WS (γ 0.6, β 0.4) =
    // 1 − (2.4 + 5.6)/(5.4 + 9.6) = 7/15.
    let pred2 = grid(json!({"vehicles": {"car 1": [5, 4], "car 2": [0, 9]}, "self": [5, 0]}));
    approx(srgs(&m, &truth, &pred2, 1.0, 1.0), 1.0 - 18.0 / 33.0);
    approx(srgs(&m, &truth, &pred2, m.ws_gamma, m.ws_beta), 7.0 / 15.0);
    // A car on the other side of the ego: the edge labels flip (front ↔ back), each edge costs
    // |(0,3) − (0,−3)| = 6 + 1, capped at deletion + insertion = 6; the node costs 6 (= the
    // cap, so matching or not is the same). D = 6 + 2·6 = 18 = D_max: S = 0.
    let pred3 = grid(json!({"vehicles": {"car 1": [5, -3]}, "self": [5, 0]}));
    approx(srgs(&m, &truth, &pred3, 1.0, 1.0), 0.0);
}

#[test]
fn srd_by_hand() {
    // Directional steps: 0↔1 = 1, 4↔4 = 0, 7↔3 = 4 → MAE 5/3, MSE 17/3, Acc 1/3.
    let d = srd(&[0, 4, 7], &[1, 4, 3], true);
    approx(d.mae, 5.0 / 3.0);
    approx(d.mse, 17.0 / 3.0);
    approx(d.acc, 1.0 / 3.0);
    // Cyclic: 0 ↔ 7 is one step, not seven.
    approx(srd(&[0], &[7], true).mae, 1.0);
    // Proximal: 0↔3 = 3, 4↔4 = 0 → MAE 1.5, MSE 4.5, Acc 0.5.
    let p = srd(&[0, 4], &[3, 4], false);
    approx(p.mae, 1.5);
    approx(p.mse, 4.5);
    approx(p.acc, 0.5);
}

#[test]
fn config_errors_name_the_file_and_key() {
    let text = drivegen::sig::config::DEFAULT_TOML.replace(
        "proximal_bins = [1.5, 3.0, 5.0, 7.0]",
        "proximal_bins = [1.5, 3.0, 2.0, 7.0]",
    );
    let e = SigConfig::from_toml(&text, std::path::Path::new("g.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("g.toml") && e.contains("relations.proximal_bins"),
        "{e}"
    );
    let text = drivegen::sig::config::DEFAULT_TOML.replace("bus = \"bus\"", "bus = \"coach\"");
    let e = SigConfig::from_toml(&text, std::path::Path::new("g.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("objects.types.bus") && e.contains("coach"),
        "{e}"
    );
}
