//! The programs about two objects, or an object and us: `pick_closer`, `relative_distance`,
//! `_position`, `_heading`, the relative crash predictions and the ego crash predictions.

use serde_json::json;

use super::{sample, yes_no, Gen, Labels, SAME_DISTANCE};
use crate::metavqa::relations::{crash_dynamic, crash_still, wrap_deg};
use crate::metavqa::templates::{cat, o, t};
use crate::metavqa::types::QuestionType as Q;

impl Gen<'_> {
    /// `pick_closer`: which of two objects is nearer to us, or neither within `same_distance_m`.
    pub(super) fn pick_closer(&mut self) {
        let q = Q::PickCloser;
        let cfg = self.cfg;
        let rules = &cfg.rules;
        let pair = self.sample_all(2);
        let [a, b] = pair[..] else { return };
        let (da, db) = (self.g.nodes[a].distance, self.g.nodes[b].distance);
        let correct = if (da - db).abs() <= rules.same_distance_m {
            2
        } else if da < db {
            0
        } else {
            1
        };
        self.push(
            q,
            String::new(),
            Labels::Qa,
            vec![a, b],
            cat(vec![
                t("Which object is closer to us, object "),
                o(a),
                t(" or object "),
                o(b),
                t("?"),
            ]),
            (vec![o(a), o(b), t(SAME_DISTANCE)], correct),
            "closer_bev_distance",
            json!({"same_distance_m": rules.same_distance_m}),
            json!({"distance_m": [da, db]}),
        );
    }

    /// `relative_distance`: the distance bin between two objects' centres.
    pub(super) fn relative_distance(&mut self) {
        let q = Q::RelativeDistance;
        let pair = self.sample_all(2);
        let [a, b] = pair[..] else { return };
        let (ca, cb) = (self.g.nodes[a].center, self.g.nodes[b].center);
        let d = (ca[0] - cb[0]).hypot(ca[1] - cb[1]);
        let bin = crate::metavqa::relations::bin(d, &self.cfg.bins.distance_edges_m);
        let opts = self.distance_options(bin);
        let params = self.bins_params();
        self.push(
            q,
            String::new(),
            Labels::Qa,
            vec![a, b],
            cat(vec![
                t("How close are object "),
                o(a),
                t(" and object "),
                o(b),
                t(" positioned?"),
            ]),
            opts,
            "centre_distance_bin",
            params,
            json!({"distance_m": d}),
        );
    }

    /// `relative_position`: where one object lies relative to another, along our heading.
    pub(super) fn relative_position(&mut self) {
        let q = Q::RelativePosition;
        let pair = self.sample_all(2);
        let [a, b] = pair[..] else { return };
        let p = self.g.relation(b, a);
        let opts = self.positions(p);
        self.push(
            q,
            String::new(),
            Labels::Qa,
            vec![a, b],
            cat(vec![
                t("How is object "),
                o(a),
                t(" positioned relative to object "),
                o(b),
                t("?"),
            ]),
            opts,
            "box_extent_sidedness(object2, object1) along our heading",
            json!({}),
            json!({"position": p.code(), "quads_m": [self.g.nodes[a].quad, self.g.nodes[b].quad]}),
        );
    }

    /// `relative_heading`: whether two objects with headings point roughly the same way.
    pub(super) fn relative_heading(&mut self) {
        let q = Q::RelativeHeading;
        let cfg = self.cfg;
        let rules = &cfg.rules;
        let pool = self.g.with_heading();
        let pair = sample(&mut self.rng, &pool, 2);
        let [a, b] = pair[..] else { return };
        let diff = wrap_deg((self.g.nodes[a].yaw - self.g.nodes[b].yaw).to_degrees());
        let yes = diff.abs() < rules.same_heading_deg;
        self.push(
            q,
            String::new(),
            Labels::Qa,
            vec![a, b],
            cat(vec![
                t("Is object "),
                o(a),
                t(" heading toward roughly the same direction as object "),
                o(b),
                t("?"),
            ]),
            yes_no(yes),
            "abs(wrapped heading difference) < same_heading_deg",
            json!({"same_heading_deg": rules.same_heading_deg}),
            json!({"heading_difference_deg": diff}),
        );
    }

    /// `relative_predict_crash_still`: whether an object driving on along its heading hits
    /// another that stays still.
    pub(super) fn relative_crash_still(&mut self) {
        let q = Q::RelativePredictCrashStill;
        let n = self.n();
        let cfg = self.cfg;
        let rules = &cfg.rules;
        let movers = self.g.with_heading();
        let Some(&a) = sample(&mut self.rng, &movers, 1).first() else {
            return;
        };
        let others: Vec<usize> = (0..n).filter(|&i| i != a).collect();
        let Some(&b) = sample(&mut self.rng, &others, 1).first() else {
            return;
        };
        let (na, nb) = (&self.g.nodes[a], &self.g.nodes[b]);
        let hit = crash_still(
            &na.quad,
            na.yaw,
            &nb.quad,
            rules.crash_steps,
            rules.crash_step_m,
        );
        self.push(
            q,
            String::new(),
            Labels::Qa,
            vec![a, b],
            cat(vec![
                t("Suppose object "),
                o(a),
                t(" proceeds along its current heading. Will it collide into object "),
                o(b),
                t(" if object "),
                o(b),
                t(" stays still?"),
            ]),
            yes_no(hit.is_some()),
            "sweep(object1, crash_steps × crash_step_m) ∩ object2 (SAT)",
            json!({"crash_steps": rules.crash_steps, "crash_step_m": rules.crash_step_m}),
            json!({"first_overlap_step": hit}),
        );
    }

    /// `relative_predict_crash_dynamic`: whether two objects driving on along their headings at
    /// the same speed meet.
    pub(super) fn relative_crash_dynamic(&mut self) {
        let q = Q::RelativePredictCrashDynamic;
        let cfg = self.cfg;
        let rules = &cfg.rules;
        let pool = self.g.with_heading();
        let pair = sample(&mut self.rng, &pool, 2);
        let [a, b] = pair[..] else { return };
        let (na, nb) = (&self.g.nodes[a], &self.g.nodes[b]);
        let hit = crash_dynamic(
            &na.quad,
            na.yaw,
            &nb.quad,
            nb.yaw,
            rules.crash_steps,
            rules.crash_step_m,
        );
        self.push(
            q,
            String::new(),
            Labels::Qa,
            vec![a, b],
            cat(vec![
                t("Suppose object "),
                o(a),
                t(" and object "),
                o(b),
                t(" proceed along their current headings with the same speed. Will they collide into each other?"),
            ]),
            yes_no(hit.is_some()),
            "sweep(object1) ∩ sweep(object2) at the same step (SAT)",
            json!({"crash_steps": rules.crash_steps, "crash_step_m": rules.crash_step_m}),
            json!({"first_overlap_step": hit}),
        );
    }

    /// `predict_crash_ego_still` and `predict_crash_ego_dynamic`: whether an object driving on
    /// along its heading hits us; the two differ only in whether we move and in the wording.
    pub(super) fn ego_crash(&mut self, q: Q) {
        let cfg = self.cfg;
        let rules = &cfg.rules;
        let pool = self.g.with_heading();
        let Some(&a) = sample(&mut self.rng, &pool, 1).first() else {
            return;
        };
        let na = &self.g.nodes[a];
        let (hit, stem_tail, rule) = if q == Q::PredictCrashEgoStill {
            (
                crash_still(
                    &na.quad,
                    na.yaw,
                    &self.g.ego,
                    rules.crash_steps,
                    rules.crash_step_m,
                ),
                " proceeds along its current heading. Will it collide into us if we stay still?",
                "sweep(object) ∩ ego box (SAT)",
            )
        } else {
            (
                crash_dynamic(&na.quad, na.yaw, &self.g.ego, 0.0, rules.crash_steps, rules.crash_step_m),
                " and we proceed along our current headings with the same speed. Will we collide into each other?",
                "sweep(object) ∩ sweep(ego) at the same step (SAT)",
            )
        };
        self.push(
            q,
            String::new(),
            Labels::Qa,
            vec![a],
            cat(vec![t("Suppose object "), o(a), t(stem_tail)]),
            yes_no(hit.is_some()),
            rule,
            json!({"crash_steps": rules.crash_steps, "crash_step_m": rules.crash_step_m, "ego_box": self.g.ego}),
            json!({"first_overlap_step": hit}),
        );
    }
}
