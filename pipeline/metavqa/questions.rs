//! The query programs of the 30 question types (`docs/metavqa.md` §5) on one image's scene
//! graph.
//!
//! [`generate`] walks the types in [`QuestionType::ALL`] order and draws objects, parameters
//! and distractors from one seeded generator per image, so an image's questions depend only on
//! its graph, the config and the seed. Each question is a [`Draft`]: text with object
//! references ([`super::templates`]), canonical options with the index of the correct one, the
//! rule, its parameters and the measured evidence. Numbering, option shuffling and the record
//! come later ([`super::stage`]).
//!
//! Rules where we deliberately differ from the published code (`docs/metavqa.md` §8): the
//! correct option
//! is found by value after shuffling (`pick_closer`), heading differences are wrapped to
//! (−180°, 180°], bins are half-open everywhere, `order_*` and `identify_*most` need their
//! keys at least `order_min_gap_m` apart so exactly one option is right, and the embodied
//! options are shuffled like every other type's.

use serde_json::{json, Value};

use super::config::MetavqaConfig;
use super::graph::SceneGraph;
use super::relations::{crash_dynamic, crash_still, wrap_deg, Pos, HEADING_SECTORS};
use super::rollout::{Rollouts, SIDENESS};
use super::templates::{bin_text, bracketed, cat, list, o, pos_text, t, Text};
use super::types::QuestionType as Q;
use crate::qa::prompt::{and_list, quoted, short_number as num};
use crate::qa::record::SplitMix64;
use crate::qa::{Layout, Prompt};

/// `pick_closer`'s third option.
pub const SAME_DISTANCE: &str = "about the same distance";

/// Which labels a question's image carries (`docs/metavqa.md` §3.3).
#[derive(Debug, Clone, PartialEq)]
pub enum Labels {
    /// Every kept object, labelled by its index (0..N−1).
    Full,
    /// Only the objects the image's question set refers to, renumbered 0..k−1.
    Qa,
    /// Every kept object with the given random label; the target boxed in white.
    Random { labels: Vec<u32>, target: usize },
    /// The question does not depend on the image's marks.
    Unmarked,
}

/// One question before numbering and shuffling.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub qtype: Q,
    /// Distinguishes questions of one type on one image (sector, bin, config, index).
    pub variant: String,
    pub labels: Labels,
    /// Nodes the question is about.
    pub objects: Vec<usize>,
    pub stem: Text,
    /// Canonical options; `correct` indexes the right one.
    pub options: Vec<Text>,
    pub correct: usize,
    pub rule: &'static str,
    pub params: Value,
    pub evidence: Value,
    /// What the answer words mean in the config's values ([`definitions`], plus the speed
    /// range and action of an embodied question): the end of the prompt's preamble.
    pub definitions: String,
}

impl Draft {
    /// The question's prompt parts for its rendered `stem`: the definitions as the preamble.
    pub fn prompt(&self, stem: impl Into<String>) -> Prompt {
        Prompt::new(Layout::MetaVqa, stem).preamble(self.definitions.clone())
    }
}

/// Questions a type could not be asked, and why (reported in the summary).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Skips {
    /// `identify_color` on images whose objects carry no colour.
    pub no_color: u64,
    /// Embodied configs whose rollouts tie between two answers.
    pub tied_rollouts: u64,
}

struct Gen<'a> {
    g: &'a SceneGraph,
    cfg: &'a MetavqaConfig,
    ro: &'a Rollouts,
    rng: SplitMix64,
    out: Vec<Draft>,
    skips: Skips,
    /// Every type name (configured and present), sorted: describe_scenario's vocabulary.
    kinds: Vec<String>,
}

fn shuffle<T>(rng: &mut SplitMix64, v: &mut [T]) {
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

/// `k` distinct items of `pool` in draw order (all of them, shuffled, when fewer).
fn sample<T: Clone>(rng: &mut SplitMix64, pool: &[T], k: usize) -> Vec<T> {
    let mut v = pool.to_vec();
    let k = k.min(v.len());
    for i in 0..k {
        let j = i + rng.below((v.len() - i) as u64) as usize;
        v.swap(i, j);
    }
    v.truncate(k);
    v
}

fn yes_no(yes: bool) -> (Vec<Text>, usize) {
    (vec![t("Yes"), t("No")], usize::from(!yes))
}

fn opt_f64(v: Option<f64>) -> Value {
    v.map_or(Value::Null, |x| json!(x))
}

/// Draws the questions of `g`.
pub fn generate(
    g: &SceneGraph,
    cfg: &MetavqaConfig,
    ro: &Rollouts,
    seed: u64,
) -> (Vec<Draft>, Skips) {
    let mut kinds: Vec<String> = cfg.class_names.values().cloned().collect();
    kinds.extend(g.nodes.iter().map(|x| x.type_name.clone()));
    kinds.sort();
    kinds.dedup();
    let mut gen = Gen {
        g,
        cfg,
        ro,
        rng: SplitMix64::new(seed),
        out: Vec::new(),
        skips: Skips::default(),
        kinds,
    };
    for q in Q::ALL {
        if cfg.weight(q) > 0.0 {
            gen.ask(q);
        }
    }
    (gen.out, gen.skips)
}

impl Gen<'_> {
    fn n(&self) -> usize {
        self.g.nodes.len()
    }

    fn all(&self) -> Vec<usize> {
        (0..self.n()).collect()
    }

    /// `k` distinct nodes in draw order.
    fn sample_all(&mut self, k: usize) -> Vec<usize> {
        let all = self.all();
        sample(&mut self.rng, &all, k)
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        qtype: Q,
        variant: String,
        labels: Labels,
        objects: Vec<usize>,
        stem: Text,
        (options, correct): (Vec<Text>, usize),
        rule: &'static str,
        params: Value,
        evidence: Value,
    ) {
        self.out.push(Draft {
            qtype,
            variant,
            labels,
            objects,
            stem,
            options,
            correct,
            rule,
            params,
            evidence,
            definitions: definitions(qtype, self.cfg),
        });
    }

    fn distance_options(&self, answer: usize) -> (Vec<Text>, usize) {
        let b = &self.cfg.bins;
        let opts = b
            .distance_names
            .iter()
            .zip(&b.distance_ranges)
            .map(|(n, r)| t(bin_text(n, r)))
            .collect();
        (opts, answer)
    }

    fn bins_params(&self) -> Value {
        json!({
            "distance_edges_m": self.cfg.bins.distance_edges_m,
            "distance_names": self.cfg.bins.distance_names,
        })
    }

    /// The answer text plus up to 3 distractors: `preferred` first (shuffled), then `rest`.
    fn text_options(
        &mut self,
        answer: &str,
        preferred: Vec<String>,
        rest: Vec<String>,
    ) -> (Vec<Text>, usize) {
        let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
        let mut chosen: Vec<String> = vec![answer.to_string()];
        for mut group in [preferred, rest] {
            shuffle(&mut self.rng, &mut group);
            for c in group {
                if chosen.len() < 4 && !chosen.iter().any(|x| same(x, &c)) {
                    chosen.push(c);
                }
            }
        }
        (chosen.into_iter().map(t).collect(), 0)
    }

    fn positions(&mut self, answer: Pos) -> (Vec<Text>, usize) {
        let others: Vec<Pos> = Pos::ALL.into_iter().filter(|p| *p != answer).collect();
        let mut opts = vec![t(pos_text(answer))];
        for p in sample(&mut self.rng, &others, 3) {
            opts.push(t(pos_text(p)));
        }
        (opts, 0)
    }

    /// Asks the questions of type `q` its graph supports, drawing from the shared generator in
    /// a fixed order so an image's questions stay reproducible.
    fn ask(&mut self, q: Q) {
        match q {
            Q::IdentifyColor => self.identify_color(),
            Q::IdentifyType => self.identify_type(),
            Q::IdentifyDistance => self.identify_distance(),
            Q::IdentifyPosition => self.identify_position(),
            Q::IdentifyHeading => self.identify_heading(),
            Q::PickCloser => self.pick_closer(),
            Q::RelativeDistance => self.relative_distance(),
            Q::RelativePosition => self.relative_position(),
            Q::RelativeHeading => self.relative_heading(),
            Q::RelativePredictCrashStill => self.relative_crash_still(),
            Q::RelativePredictCrashDynamic => self.relative_crash_dynamic(),
            Q::PredictCrashEgoStill | Q::PredictCrashEgoDynamic => self.ego_crash(q),
            Q::OrderClosest
            | Q::OrderLeftmost
            | Q::OrderRightmost
            | Q::OrderFrontmost
            | Q::OrderBackmost => self.order(q),
            Q::IdentifyClosest
            | Q::IdentifyLeftmost
            | Q::IdentifyRightmost
            | Q::IdentifyFrontmost
            | Q::IdentifyBackmost => self.extreme(q),
            Q::DescribeSector => self.describe_sectors(),
            Q::DescribeDistance => self.describe_distances(),
            Q::DescribeScenario => self.scenario(),
            Q::EmbodiedDistance | Q::EmbodiedSideness | Q::EmbodiedCollision => {
                for k in 0..self.cfg.rules.embodied_per_image {
                    self.embodied(q, k);
                }
            }
            Q::Grounding => self.grounding(),
        }
    }

    /// `identify_color`: one coloured object's colour. Distractors come from the image's other
    /// colours first, then from the configured palette.
    fn identify_color(&mut self) {
        let q = Q::IdentifyColor;
        let n = self.n();
        let cfg = self.cfg;
        let rules = &cfg.rules;
        let colored: Vec<usize> = (0..n)
            .filter(|&i| self.g.nodes[i].color.is_some())
            .collect();
        let Some(&i) = sample(&mut self.rng, &colored, 1).first() else {
            if n > 0 {
                self.skips.no_color += 1;
            }
            return;
        };
        let answer = self.g.nodes[i].color.clone().unwrap_or_default();
        let mut present: Vec<String> = self
            .g
            .nodes
            .iter()
            .filter_map(|x| x.color.clone())
            .collect();
        present.sort();
        present.dedup();
        let rest = rules.colors.clone();
        let opts = self.text_options(&answer, present, rest);
        self.push(
            q,
            String::new(),
            Labels::Qa,
            vec![i],
            cat(vec![t("Specify the color of object "), o(i), t(".")]),
            opts,
            "node_color",
            json!({"colors": rules.colors}),
            json!({"color": answer}),
        );
    }

    /// `identify_type`: one object's type name. Distractors come from the image's other types
    /// first, then from every configured display name.
    fn identify_type(&mut self) {
        let q = Q::IdentifyType;
        let Some(&i) = self.sample_all(1).first() else {
            return;
        };
        let answer = self.g.nodes[i].type_name.clone();
        let mut present: Vec<String> = self.g.nodes.iter().map(|x| x.type_name.clone()).collect();
        present.sort();
        present.dedup();
        let mut rest: Vec<String> = self.cfg.class_names.values().cloned().collect();
        rest.sort();
        rest.dedup();
        let opts = self.text_options(&answer, present, rest);
        let class = self.g.nodes[i].class.clone();
        self.push(
            q,
            String::new(),
            Labels::Qa,
            vec![i],
            cat(vec![t("Specify the type of object "), o(i), t(".")]),
            opts,
            "node_class",
            json!({}),
            json!({"class": class, "type": answer}),
        );
    }

    /// `identify_distance`: the distance bin of one object from us.
    fn identify_distance(&mut self) {
        let q = Q::IdentifyDistance;
        let Some(&i) = self.sample_all(1).first() else {
            return;
        };
        let nd = &self.g.nodes[i];
        let (d, b) = (nd.distance, nd.distance_bin);
        let opts = self.distance_options(b);
        let params = self.bins_params();
        self.push(
            q,
            String::new(),
            Labels::Qa,
            vec![i],
            cat(vec![
                t("Please tell me how far object "),
                o(i),
                t(" is from us."),
            ]),
            opts,
            "bev_distance_bin",
            params,
            json!({"distance_m": d}),
        );
    }

    /// `identify_position`: the sector one object occupies around the ego box.
    fn identify_position(&mut self) {
        let q = Q::IdentifyPosition;
        let Some(&i) = self.sample_all(1).first() else {
            return;
        };
        let p = self.g.nodes[i].sector;
        let opts = self.positions(p);
        let c = self.g.nodes[i].center;
        self.push(
            q,
            String::new(),
            Labels::Qa,
            vec![i],
            cat(vec![
                t("Please tell me the relative position of object "),
                o(i),
                t(" with respect to us."),
            ]),
            opts,
            "box_extent_sidedness(ego, object)",
            json!({"ego_box": self.g.ego}),
            json!({"position": p.code(), "center_m": c, "quad_m": self.g.nodes[i].quad}),
        );
    }

    /// `identify_heading`: the heading sector of one object that has a heading. The options are
    /// the four diagonal or the four axis sectors, whichever set holds the answer.
    fn identify_heading(&mut self) {
        let q = Q::IdentifyHeading;
        let pool = self.g.with_heading();
        let Some(&i) = sample(&mut self.rng, &pool, 1).first() else {
            return;
        };
        let s = self.g.nodes[i].heading_sector;
        let set: [Pos; 4] = if s.is_diagonal() {
            [Pos::Rf, Pos::Rb, Pos::Lb, Pos::Lf]
        } else {
            [Pos::F, Pos::R, Pos::B, Pos::L]
        };
        let correct = set.iter().position(|p| *p == s).unwrap_or(0);
        let opts = set.iter().map(|p| t(pos_text(*p))).collect();
        let yaw = self.g.nodes[i].yaw;
        self.push(
            q,
            String::new(),
            Labels::Qa,
            vec![i],
            cat(vec![
                t("Please describe the heading direction of object "),
                o(i),
                t("."),
            ]),
            (opts, correct),
            "heading_sector",
            json!({"heading_edges_deg": self.cfg.bins.heading_edges_deg}),
            json!({"clockwise_deg": super::relations::clockwise_deg(yaw), "sector": s.code()}),
        );
    }

    /// `pick_closer`: which of two objects is nearer to us, or neither within `same_distance_m`.
    fn pick_closer(&mut self) {
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
    fn relative_distance(&mut self) {
        let q = Q::RelativeDistance;
        let pair = self.sample_all(2);
        let [a, b] = pair[..] else { return };
        let (ca, cb) = (self.g.nodes[a].center, self.g.nodes[b].center);
        let d = (ca[0] - cb[0]).hypot(ca[1] - cb[1]);
        let bin = super::relations::bin(d, &self.cfg.bins.distance_edges_m);
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
    fn relative_position(&mut self) {
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
    fn relative_heading(&mut self) {
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
    fn relative_crash_still(&mut self) {
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
    fn relative_crash_dynamic(&mut self) {
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
    fn ego_crash(&mut self, q: Q) {
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

    /// `describe_sector`: one question per configured sector, listing the objects in it.
    fn describe_sectors(&mut self) {
        let q = Q::DescribeSector;
        let n = self.n();
        let cfg = self.cfg;
        let rules = &cfg.rules;
        for code in rules.describe_sectors.clone() {
            let Some(p) = Pos::from_code(&code) else {
                continue;
            };
            let members: Vec<usize> = (0..n).filter(|&i| self.g.nodes[i].sector == p).collect();
            let stem = t(format!(
                "What labeled objects fall into our {} sector?",
                p.text()
            ));
            self.describe(q, code.clone(), members, stem, json!({"sector": code}));
        }
    }

    /// `describe_distance`: one question per distance bin, listing the objects in it; the stem
    /// spells out every bin's range so the bin names need no definition.
    fn describe_distances(&mut self) {
        let q = Q::DescribeDistance;
        let n = self.n();
        let cfg = self.cfg;
        let b = &cfg.bins;
        let ranges: Vec<String> = b
            .distance_names
            .iter()
            .zip(&b.distance_ranges)
            .map(|(nm, r)| format!("\"{nm}\"({r})"))
            .collect();
        for (k, name) in b.distance_names.iter().enumerate() {
            let members: Vec<usize> = (0..n)
                .filter(|&i| self.g.nodes[i].distance_bin == k)
                .collect();
            let stem = t(format!(
                "What labeled objects fall within \"{name}\" range from us? We classify distance into: {}.",
                ranges.join("; ")
            ));
            self.describe(
                q,
                name.clone(),
                members,
                stem,
                json!({"bin": name, "distance_edges_m": b.distance_edges_m}),
            );
        }
    }

    /// The order key (ascending = the asked order) and the phrase.
    fn order_key(&self, q: Q, i: usize) -> f64 {
        let nd = &self.g.nodes[i];
        match q {
            Q::OrderClosest => nd.distance,
            Q::OrderLeftmost => -nd.center[1],
            Q::OrderRightmost => nd.center[1],
            Q::OrderFrontmost => -nd.center[0],
            _ => nd.center[0],
        }
    }

    fn order(&mut self, q: Q) {
        let mut pool = self.all();
        shuffle(&mut self.rng, &mut pool);
        let gap = self.cfg.rules.order_min_gap_m;
        let mut picked: Vec<usize> = Vec::new();
        for i in pool {
            let k = self.order_key(q, i);
            if picked
                .iter()
                .all(|&j| (self.order_key(q, j) - k).abs() >= gap)
            {
                picked.push(i);
                if picked.len() == 4 {
                    break;
                }
            }
        }
        if picked.len() < 4 {
            return;
        }
        let mut answer = picked.clone();
        answer.sort_by(|&a, &b| self.order_key(q, a).total_cmp(&self.order_key(q, b)));
        let mut perms: Vec<Vec<usize>> = vec![answer.clone()];
        while perms.len() < 4 {
            let mut p = picked.clone();
            shuffle(&mut self.rng, &mut p);
            if !perms.contains(&p) {
                perms.push(p);
            }
        }
        let tail = match q {
            Q::OrderClosest => "Please order them from closest to furthest from us.",
            Q::OrderLeftmost => {
                "Please order them from leftmost to rightmost in our coordinate system."
            }
            Q::OrderRightmost => {
                "Please order them from rightmost to leftmost in our coordinate system."
            }
            Q::OrderFrontmost => {
                "Please order them from furthest to the closest along our front direction."
            }
            _ => "Please order them from closest to the furthest along our front direction.",
        };
        let [a, b, c, d] = picked[..] else { return };
        let stem = cat(vec![
            t("Consider object "),
            o(a),
            t(", object "),
            o(b),
            t(", object "),
            o(c),
            t(", and object "),
            o(d),
            t(". "),
            t(tail),
        ]);
        let keys: Vec<f64> = picked.iter().map(|&i| self.order_key(q, i)).collect();
        self.push(
            q,
            String::new(),
            Labels::Qa,
            picked,
            stem,
            (perms.iter().map(|p| list(p)).collect(), 0),
            "sort by key ascending (distance, −y, y, −x or x in the ego frame)",
            json!({"order_min_gap_m": self.cfg.rules.order_min_gap_m}),
            json!({"keys_m": keys}),
        );
    }

    fn extreme(&mut self, q: Q) {
        let n = self.n();
        if n < 4 {
            return;
        }
        // Larger is "more": closest = −distance, leftmost = y, rightmost = −y, frontmost = x,
        // backmost = −x.
        let key = |i: usize| {
            let nd = &self.g.nodes[i];
            match q {
                Q::IdentifyClosest => -nd.distance,
                Q::IdentifyLeftmost => nd.center[1],
                Q::IdentifyRightmost => -nd.center[1],
                Q::IdentifyFrontmost => nd.center[0],
                _ => -nd.center[0],
            }
        };
        let mut by: Vec<usize> = self.all();
        by.sort_by(|&a, &b| key(b).total_cmp(&key(a)).then(a.cmp(&b)));
        let (best, second) = (key(by[0]), key(by[1]));
        if best - second < self.cfg.rules.order_min_gap_m {
            return;
        }
        let answer = by[0];
        let others: Vec<usize> = (0..n).filter(|&i| i != answer).collect();
        let mut opts = vec![o(answer)];
        for i in sample(&mut self.rng, &others, 3) {
            opts.push(o(i));
        }
        let what = match q {
            Q::IdentifyClosest => "closest to us",
            Q::IdentifyLeftmost => "the leftmost in our coordinate system",
            Q::IdentifyRightmost => "the rightmost in our coordinate system",
            Q::IdentifyFrontmost => "the furthest along our front direction",
            _ => "the closest along our front direction",
        };
        self.push(
            q,
            String::new(),
            Labels::Full,
            vec![answer],
            t(format!("For all labeled objects, which object is {what}?")),
            (opts, 0),
            "argmax of the key over all labels (−distance, y, −y, x or −x in the ego frame)",
            json!({"order_min_gap_m": self.cfg.rules.order_min_gap_m}),
            json!({"best_key_m": best, "second_key_m": second}),
        );
    }

    /// describe_sector / describe_distance: the labels in a set, against "[]" and label
    /// combinations of the same size that hold at least one label outside it.
    fn describe(&mut self, q: Q, variant: String, members: Vec<usize>, stem: Text, params: Value) {
        let n = self.n();
        if n == 0 {
            return;
        }
        let mut shown = if members.len() > 4 {
            sample(&mut self.rng, &members, 4)
        } else {
            members.clone()
        };
        shown.sort_unstable();
        let mut opts: Vec<Vec<usize>> = vec![shown.clone()];
        let mut texts = vec![bracketed(&shown)];
        if !shown.is_empty() {
            opts.push(Vec::new());
            texts.push(t("[]"));
        }
        let all = self.all();
        for _ in 0..64 {
            if opts.len() == 4 {
                break;
            }
            let k = if shown.is_empty() {
                1 + self.rng.below(n.min(3) as u64) as usize
            } else {
                shown.len()
            };
            let mut c = sample(&mut self.rng, &all, k);
            c.sort_unstable();
            if c.len() == k && c.iter().any(|i| !members.contains(i)) && !opts.contains(&c) {
                texts.push(bracketed(&c));
                opts.push(c);
            }
        }
        if opts.len() < 4 {
            return;
        }
        self.push(
            q,
            variant,
            Labels::Full,
            shown,
            stem,
            (texts, 0),
            "the labels whose attribute equals the asked value (at most 4 shown)",
            params,
            json!({"members": members}),
        );
    }

    fn scenario_line(&self, i: usize, alt: Option<(usize, usize)>) -> Text {
        let nd = &self.g.nodes[i];
        let b = &self.cfg.bins;
        // alt = (attribute, choice) replaces one attribute for a distractor.
        let pick = |attr: usize, v: usize| alt.filter(|a| a.0 == attr).map_or(v, |a| a.1);
        let kinds = &self.kinds;
        let ty = kinds[pick(
            0,
            kinds.iter().position(|k| *k == nd.type_name).unwrap_or(0),
        )]
        .clone();
        let sector = Pos::ALL[pick(
            1,
            Pos::ALL.iter().position(|p| *p == nd.sector).unwrap_or(0),
        )];
        let dist = &b.distance_names[pick(2, nd.distance_bin)];
        let color = nd
            .color
            .as_ref()
            .map(|c| format!("{} ", c.to_lowercase()))
            .unwrap_or_default();
        let heading = if nd.has_heading {
            let h = Pos::ALL[pick(
                3,
                Pos::ALL
                    .iter()
                    .position(|p| *p == nd.heading_sector)
                    .unwrap_or(0),
            )];
            format!("It heads toward our {} direction.", h.text())
        } else {
            "It doesn't have a heading.".into()
        };
        let art = if color.is_empty() && ty.starts_with(['A', 'E', 'I', 'O', 'U']) {
            "An"
        } else {
            "A"
        };
        cat(vec![
            o(i),
            t(format!(
                ": {art} {color}{} positioned in our {} sector at {dist} distance. {heading}",
                ty.to_lowercase(),
                sector.text()
            )),
        ])
    }

    /// describe_scenario (train-only in the paper, which gives it no options): the true
    /// description of every label, against descriptions with one attribute of one object
    /// changed.
    fn scenario(&mut self) {
        let n = self.n();
        if n == 0 {
            return;
        }
        let lines = |s: &Self, alt: Option<(usize, usize, usize)>| -> Text {
            let mut v = Vec::new();
            for i in 0..n {
                if i > 0 {
                    v.extend(t(" "));
                }
                v.extend(s.scenario_line(i, alt.filter(|a| a.0 == i).map(|a| (a.1, a.2))));
            }
            v
        };
        let truth = lines(self, None);
        let mut texts = vec![truth];
        let mut changes: Vec<Value> = Vec::new();
        let nkinds = self.kinds.len();
        let nbins = self.cfg.bins.distance_names.len();
        for _ in 0..64 {
            if texts.len() == 4 {
                break;
            }
            let i = self.rng.below(n as u64) as usize;
            let attrs = if self.g.nodes[i].has_heading { 4 } else { 3 };
            let attr = self.rng.below(attrs) as usize;
            let size = match attr {
                0 => nkinds,
                2 => nbins,
                _ => Pos::ALL.len(),
            };
            let v = self.rng.below(size as u64) as usize;
            let cand = lines(self, Some((i, attr, v)));
            if !texts.contains(&cand) {
                texts.push(cand);
                let name = ["type", "sector", "distance", "heading"][attr];
                changes.push(json!({"object": i, "attribute": name}));
            }
        }
        if texts.len() < 4 {
            return;
        }
        self.push(
            Q::DescribeScenario,
            String::new(),
            Labels::Full,
            self.all(),
            t("Please describe all labeled objects in the observation, in the order of their labels: their type, the sector of ours they are in, their distance from us and their heading. Which description is correct?"),
            (texts, 0),
            "per label: type, sector (§4.1), distance bin, heading sector; distractors change one attribute",
            json!({}),
            json!({"distractor_changes": changes}),
        );
    }

    fn embodied(&mut self, q: Q, k: u32) {
        let ro = self.ro;
        let cfg = self.cfg;
        let sb = self.rng.below(cfg.bins.speed_names.len() as u64) as usize;
        let a = self.rng.below(ro.action_names.len() as u64) as usize;
        let d = self.rng.below(ro.duration_steps.len() as u64) as usize;
        let secs = f64::from(ro.duration_steps[d]) * ro.dt_s;
        let prefix = format!(
            "Suppose our current speed is {} ({}), and we perform action \"{}\" for {secs:.1} seconds.",
            cfg.bins.speed_names[sb], cfg.bins.speed_ranges[sb], ro.action_names[a]
        );
        let variant = format!(
            "{k}:{}:{}:{}",
            cfg.bins.speed_names[sb], ro.action_names[a], ro.duration_steps[d]
        );
        let params = json!({
            "action": ro.action_names[a],
            "control": [cfg.rollout.actions[a].steer, cfg.rollout.actions[a].throttle],
            "duration_s": secs,
            "speeds_mps": cfg.rollout.speeds_mps[sb],
        });
        let cell = &ro.cells[a][d][sb];
        let before = self.out.len();
        match q {
            Q::EmbodiedDistance => {
                let Some(ans) = cell.distance else {
                    self.skips.tied_rollouts += 1;
                    return;
                };
                let opts = self.distance_options(ans);
                let ev = json!({"final_distance_bins": cell.distance_bins});
                self.push(
                    q,
                    variant,
                    Labels::Unmarked,
                    Vec::new(),
                    t(format!(
                        "{prefix} How far will we end up from our current position?"
                    )),
                    opts,
                    "most common final distance bin of the speed bin's bicycle-model rollouts",
                    params,
                    ev,
                );
            }
            Q::EmbodiedSideness => {
                let Some(ans) = cell.side else {
                    self.skips.tied_rollouts += 1;
                    return;
                };
                let opts = SIDENESS.iter().map(|p| t(pos_text(*p))).collect();
                let sides: Vec<&str> = cell.sides.iter().map(|&s| SIDENESS[s].code()).collect();
                self.push(
                    q,
                    variant,
                    Labels::Unmarked,
                    Vec::new(),
                    t(format!("{prefix} Which sector will we end up in?")),
                    (opts, ans),
                    "most common final sector of the rollouts' ego box w.r.t. the start box",
                    params,
                    json!({"final_sectors": sides}),
                );
            }
            _ => {
                let Some(&i) = self.sample_all(1).first() else {
                    return;
                };
                let (hit, times) = ro.collides(a, d, sb, &self.g.nodes[i].quad);
                let mean =
                    (!times.is_empty()).then(|| times.iter().sum::<f64>() / times.len() as f64);
                self.push(
                    q,
                    variant,
                    Labels::Qa,
                    vec![i],
                    cat(vec![
                        t(format!("{prefix} Will we run into object ")),
                        o(i),
                        t(", provided that it remains still?"),
                    ]),
                    yes_no(hit),
                    "any rollout's ego box (steps interpolated) ∩ object box (SAT)",
                    params,
                    json!({"hits": times.len(), "mean_hit_time_s": opt_f64(mean)}),
                );
            }
        }
        // The speed range and the action the question names, before what its answers mean.
        if let Some(draft) = self.out.get_mut(before) {
            let mut terms = vec![speed_ranges(cfg), action_words(cfg, a)];
            if q != Q::EmbodiedCollision {
                terms.push(
                    "The answer is the outcome for most starting speeds in that range.".into(),
                );
            }
            terms.push(std::mem::take(&mut draft.definitions));
            draft.definitions = join(terms);
        }
    }

    fn grounding(&mut self) {
        let n = self.n();
        let l = self.cfg.rules.grounding_labels as usize;
        if n == 0 || n > l {
            return;
        }
        let count = (self.cfg.rules.grounding_per_image as usize).min(n);
        let targets = self.sample_all(count);
        let universe: Vec<u32> = (0..l as u32).collect();
        for (k, target) in targets.into_iter().enumerate() {
            let labels = sample(&mut self.rng, &universe, n);
            let answer = labels[target];
            let frame: Vec<String> = labels
                .iter()
                .filter(|&&x| x != answer)
                .map(u32::to_string)
                .collect();
            let unused: Vec<String> = universe
                .iter()
                .filter(|x| !labels.contains(x))
                .map(u32::to_string)
                .collect();
            let opts = self.text_options(&answer.to_string(), frame, unused);
            self.push(
                Q::Grounding,
                k.to_string(),
                Labels::Random {
                    labels: labels.clone(),
                    target,
                },
                vec![target],
                t("What is the numerical label associated with the highlighted area?"),
                opts,
                "the random label of the object boxed in white",
                json!({"grounding_labels": l}),
                json!({"label": answer}),
            );
        }
    }
}

// --- What the answer words mean -------------------------------------------------------------
//
// Every prompt defines the words its answers use, in the config's values: the bins, the
// box-extent rule, the heading sectors and the thresholds behind yes/no answers. The text
// depends only on the question type and the config (plus, for embodied questions, the action
// they name), so it cannot tell an answer apart.

/// Sentences joined by spaces, empty ones left out.
fn join(parts: Vec<String>) -> String {
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `'a' means under 2 m, 'b' 2 to under 10 m, … and 'z' 30 m or more` (half-open bins).
fn bin_words(names: &[String], edges: &[f64], unit: &str) -> String {
    let parts: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let lo = k.checked_sub(1).and_then(|i| edges.get(i));
            let range = match (lo, edges.get(k)) {
                (None, Some(hi)) => format!("under {} {unit}", num(*hi)),
                (Some(lo), Some(hi)) => format!("{} to under {} {unit}", num(*lo), num(*hi)),
                (Some(lo), None) => format!("{} {unit} or more", num(*lo)),
                (None, None) => "any value".into(),
            };
            if k == 0 {
                format!("{} means {range}", quoted(name))
            } else {
                format!("{} {range}", quoted(name))
            }
        })
        .collect();
    and_list(&parts)
}

/// The distance bins.
fn distance_ranges(cfg: &MetavqaConfig) -> String {
    let b = &cfg.bins;
    format!(
        "Distance ranges: {}.",
        bin_words(&b.distance_names, &b.distance_edges_m, "m")
    )
}

/// The speed bins.
fn speed_ranges(cfg: &MetavqaConfig) -> String {
    let b = &cfg.bins;
    format!(
        "Speed ranges: {}.",
        bin_words(&b.speed_names, &b.speed_edges_mps, "m/s")
    )
}

/// Where distances from us are measured (the ego pose to the box centre).
fn distance_from_us(cfg: &MetavqaConfig) -> String {
    let off = cfg.ego.center_offset_m;
    let from = if off == 0.0 {
        "the centre of our own box".to_string()
    } else {
        format!(
            "our reference point, {} m behind the centre of our own box,",
            num(off)
        )
    };
    format!("Distances from us are measured on the ground from {from} to the centre of the object's box.")
}

/// Our own box.
fn our_box(cfg: &MetavqaConfig) -> String {
    format!(
        "our own box ({} m long, {} m wide)",
        num(cfg.ego.length_m),
        num(cfg.ego.width_m)
    )
}

/// The box-extent rule (`docs/metavqa.md` §4.1) against `reference`.
fn position_words(reference: &str) -> String {
    let w = |p: Pos| quoted(p.text());
    format!(
        "Positions are judged from above, across and along our heading: an object is {} of {reference} when every corner of its box lies at or beyond the leftmost point of that box, {} when at or beyond its rightmost point, {} when at or beyond its foremost point and {} when at or beyond its rearmost point; {}, {}, {} and {} mean a side and an end both hold (a single word means only that one holds), and {} means none holds.",
        w(Pos::L),
        w(Pos::R),
        w(Pos::F),
        w(Pos::B),
        w(Pos::Lf),
        w(Pos::Rf),
        w(Pos::Lb),
        w(Pos::Rb),
        w(Pos::M),
    )
}

/// The heading sectors (`docs/metavqa.md` §4.2) in the config's clockwise edges.
fn heading_words(cfg: &MetavqaConfig) -> String {
    let e = &cfg.bins.heading_edges_deg;
    let (Some(first), Some(last)) = (e.first(), e.last()) else {
        return String::new();
    };
    let mut parts = vec![format!(
        "{} means {}° round to under {}°",
        quoted(Pos::F.text()),
        num(*last),
        num(*first)
    )];
    for (k, p) in HEADING_SECTORS.iter().enumerate() {
        if let (Some(lo), Some(hi)) = (e.get(k), e.get(k + 1)) {
            parts.push(format!(
                "{} {}° to under {}°",
                quoted(p.text()),
                num(*lo),
                num(*hi)
            ));
        }
    }
    format!(
        "An object's heading is the direction it faces, measured clockwise from our heading: {}.",
        and_list(&parts)
    )
}

/// The classes without a heading, by display name.
fn no_heading_words(cfg: &MetavqaConfig) -> String {
    let names: Vec<String> = cfg
        .rules
        .classes_without_heading
        .iter()
        .map(|c| cfg.class_name(c).to_string())
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!("{} objects have no heading.", and_list(&names))
    }
}

/// The crash sweep of `crash_*` questions: `who` moved along `whose` heading(s).
fn crash_words(cfg: &MetavqaConfig, boxes: &str, motion: &str) -> String {
    let r = &cfg.rules;
    let step = r.crash_step_m;
    let far = f64::from(r.crash_steps.saturating_sub(1)) * step;
    format!(
        "'Yes' means {boxes}, seen from above, touch or overlap at some step when {motion}, in steps of {} m up to {} m, and 'No' that they never do.",
        num(step),
        num(far)
    )
}

/// The named action of an embodied question: its steering angle and acceleration.
fn action_words(cfg: &MetavqaConfig, a: usize) -> String {
    let ro = &cfg.rollout;
    let Some(act) = ro.actions.get(a) else {
        return String::new();
    };
    let deg = act.steer * ro.max_steer_deg;
    let steer = if deg > 0.0 {
        format!("turning the front wheels {}° to the left", num(deg))
    } else if deg < 0.0 {
        format!("turning the front wheels {}° to the right", num(-deg))
    } else {
        "keeping the front wheels straight".to_string()
    };
    let accel = if act.throttle > 0.0 {
        format!(
            "accelerating at {} m/s²",
            num(act.throttle * ro.max_accel_mps2)
        )
    } else if act.throttle < 0.0 {
        format!(
            "braking at {} m/s² (until we stop)",
            num(-act.throttle * ro.max_decel_mps2)
        )
    } else {
        "holding our speed".to_string()
    };
    format!("Action \"{}\" means {steer} while {accel}.", act.name)
}

/// What the answer words of question type `q` mean under `cfg`: empty for types whose answers
/// are self-evident (a colour, a class name, a mark number).
pub fn definitions(q: Q, cfg: &MetavqaConfig) -> String {
    let r = &cfg.rules;
    let parts: Vec<String> = match q {
        Q::IdentifyColor | Q::IdentifyType | Q::Grounding => Vec::new(),
        Q::IdentifyDistance | Q::DescribeDistance => {
            vec![distance_from_us(cfg), distance_ranges(cfg)]
        }
        Q::IdentifyPosition | Q::DescribeSector => vec![position_words(&our_box(cfg))],
        Q::IdentifyHeading => vec![heading_words(cfg)],
        Q::PickCloser => vec![
            distance_from_us(cfg),
            format!(
                "{} means the two distances differ by at most {} m.",
                quoted(SAME_DISTANCE),
                num(r.same_distance_m)
            ),
        ],
        Q::RelativeDistance => vec![
            "The distance between two objects is measured on the ground between the centres of their boxes.".into(),
            distance_ranges(cfg),
        ],
        Q::RelativePosition => vec![position_words("the other object's box")],
        Q::RelativeHeading => vec![format!(
            "'Yes' means the directions the two objects face differ by less than {}°, and 'No' that they do not.",
            num(r.same_heading_deg)
        )],
        Q::RelativePredictCrashStill => vec![crash_words(
            cfg,
            "the two objects' boxes",
            "the first is moved along its heading while the other stays where it is",
        )],
        Q::RelativePredictCrashDynamic => vec![crash_words(
            cfg,
            "the two objects' boxes",
            "both are moved along their headings by the same distance",
        )],
        Q::PredictCrashEgoStill => vec![crash_words(
            cfg,
            &format!("the object's box and {}", our_box(cfg)),
            "the object is moved along its heading while we stay where we are",
        )],
        Q::PredictCrashEgoDynamic => vec![crash_words(
            cfg,
            &format!("the object's box and {}", our_box(cfg)),
            "the object and we are moved along our headings by the same distance",
        )],
        Q::OrderClosest | Q::IdentifyClosest => vec![distance_from_us(cfg)],
        Q::OrderLeftmost | Q::OrderRightmost | Q::IdentifyLeftmost | Q::IdentifyRightmost => {
            vec!["Leftmost and rightmost compare how far the centres of the objects' boxes lie to our left or right, measured across our heading.".into()]
        }
        Q::OrderFrontmost | Q::OrderBackmost | Q::IdentifyFrontmost | Q::IdentifyBackmost => {
            vec!["Positions along our front direction compare how far the centres of the objects' boxes lie ahead of us, measured along our heading (negative behind us): the furthest has the largest value and the closest the smallest.".into()]
        }
        Q::DescribeScenario => vec![
            position_words(&our_box(cfg)),
            distance_from_us(cfg),
            distance_ranges(cfg),
            heading_words(cfg),
            no_heading_words(cfg),
        ],
        Q::EmbodiedDistance => vec![
            "How far we end up from our current position is measured on the ground between the centres of our box now and at the end.".into(),
            distance_ranges(cfg),
        ],
        Q::EmbodiedSideness => {
            let [left, front, right] = SIDENESS.map(|p| quoted(p.text()));
            vec![format!(
                "{left} means every corner of our box at the end lies at or beyond the leftmost point of our box now, across our current heading, {right} at or beyond its rightmost point, and {front} neither."
            )]
        }
        Q::EmbodiedCollision => vec![
            "'Yes' means our box touches or overlaps the object's box at some moment of the manoeuvre, for at least one starting speed in that range, and 'No' that it never does.".into(),
        ],
    };
    join(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StageConfig;
    use crate::metavqa::graph::{ego_quad, KeptMark, Node};
    use crate::metavqa::relations::{bin, heading_sector, position, quad};
    use crate::metavqa::templates::render;

    fn node(cfg: &MetavqaConfig, i: usize, center: [f64; 2], yaw: f64) -> Node {
        let q = quad(center, yaw, 4.0, 2.0);
        let distance = center[0].hypot(center[1]);
        Node {
            track_id: format!("t{i}"),
            annotation_id: format!("a{i}"),
            class: "car".into(),
            type_name: "Car".into(),
            color: None,
            center,
            yaw,
            has_heading: true,
            speed: None,
            length: 4.0,
            width: 2.0,
            quad: q,
            distance,
            sector: position(&ego_quad(cfg), &q),
            heading_sector: heading_sector(yaw, &cfg.bins.heading_edges_deg),
            distance_bin: bin(distance, &cfg.bins.distance_edges_m),
            speed_bin: None,
            mark: KeptMark::default(),
        }
    }

    fn graph(cfg: &MetavqaConfig, nodes: Vec<Node>) -> SceneGraph {
        SceneGraph {
            source: "synthetic".into(),
            scene_id: "s".into(),
            frame_idx: 0,
            camera: "CAM_FRONT".into(),
            camera_frame_id: "c".into(),
            width: 1600,
            height: 900,
            ego: ego_quad(cfg),
            nodes,
        }
    }

    #[test]
    fn definitions_state_the_config_values() {
        let cfg = MetavqaConfig::default_config().unwrap();
        for q in Q::ALL {
            let d = definitions(q, &cfg);
            let plain = matches!(q, Q::IdentifyColor | Q::IdentifyType | Q::Grounding);
            assert_eq!(d.is_empty(), plain, "{}: {d}", q.name());
            assert!(!d.contains('\n') && !d.contains(": (A) "), "{}", q.name());
            assert_eq!(d, definitions(q, &cfg), "deterministic");
        }
        assert_eq!(
            definitions(Q::IdentifyDistance, &cfg),
            "Distances from us are measured on the ground from our reference point, 1.3 m behind \
             the centre of our own box, to the centre of the object's box. Distance ranges: \
             'very close' means under 2 m, 'close' 2 to under 10 m, 'medium' 10 to under 30 m and \
             'far' 30 m or more."
        );
        let heading = definitions(Q::IdentifyHeading, &cfg);
        assert!(
            heading.contains("'front' means 345° round to under 15°"),
            "{heading}"
        );
        assert!(
            heading.contains("'right-front' 15° to under 75°"),
            "{heading}"
        );
        assert!(
            heading.contains("'left-front' 285° to under 345°"),
            "{heading}"
        );
        let pos = definitions(Q::IdentifyPosition, &cfg);
        assert!(
            pos.contains("our own box (4.084 m long, 1.73 m wide)"),
            "{pos}"
        );
        assert!(pos.contains("'next-to' means none holds"), "{pos}");
        assert!(definitions(Q::PickCloser, &cfg).contains("differ by at most 2 m"));
        assert!(definitions(Q::RelativeHeading, &cfg).contains("less than 20°"));
        assert!(definitions(Q::PredictCrashEgoStill, &cfg).contains("in steps of 1 m up to 49 m"));
        assert!(definitions(Q::DescribeScenario, &cfg)
            .contains("Traffic cone, Barrier and Trailer objects have no heading."));

        // Another config, other words and values.
        let text = super::super::config::DEFAULT_TOML
            .replace(
                "distance_edges_m = [2.0, 10.0, 30.0]",
                "distance_edges_m = [3.0, 12.5, 40.0]",
            )
            .replace("same_heading_deg = 20.0", "same_heading_deg = 12.5")
            .replace("heading_edges_deg = [15.0,", "heading_edges_deg = [22.5,");
        let other = MetavqaConfig::from_toml(&text, std::path::Path::new("x.toml")).unwrap();
        assert!(definitions(Q::RelativeDistance, &other).contains("'close' 3 to under 12.5 m"));
        assert!(definitions(Q::RelativeHeading, &other).contains("less than 12.5°"));
        assert!(definitions(Q::IdentifyHeading, &other).contains("345° round to under 22.5°"));
    }

    #[test]
    fn every_draft_carries_its_definitions_and_still_parses() {
        let cfg = MetavqaConfig::default_config().unwrap();
        let ro = Rollouts::new(&cfg);
        let nodes = vec![
            node(&cfg, 0, [8.0, 0.0], 0.0),
            node(&cfg, 1, [15.0, 6.0], 1.2),
            node(&cfg, 2, [25.0, -7.0], -2.0),
            node(&cfg, 3, [40.0, 12.0], 3.0),
            node(&cfg, 4, [-12.0, -3.0], 0.3),
        ];
        let g = graph(&cfg, nodes);
        let (drafts, _) = generate(&g, &cfg, &ro, 7);
        let mut seen = std::collections::BTreeSet::new();
        for d in &drafts {
            seen.insert(d.qtype);
            let label = |i: usize| i as u32;
            let stem = render(&d.stem, &label);
            let options: Vec<String> = d.options.iter().map(|o| render(o, &label)).collect();
            let p = d.prompt(stem.clone());
            assert_eq!(p.stem, stem);
            if matches!(
                d.qtype,
                Q::EmbodiedDistance | Q::EmbodiedSideness | Q::EmbodiedCollision
            ) {
                let action = d.params["action"].as_str().unwrap();
                assert!(d
                    .definitions
                    .starts_with("Speed ranges: 'slow' means under 4.47 m/s"));
                assert!(d
                    .definitions
                    .contains(&format!("Action \"{action}\" means")));
                assert!(d.definitions.ends_with(&definitions(d.qtype, &cfg)));
            } else {
                assert_eq!(d.definitions, definitions(d.qtype, &cfg));
            }
            assert!(p.preamble.ends_with(&d.definitions));
            let text = p.render(&options);
            assert_eq!(
                crate::validate::layouts::shown_options("metavqa", &text).unwrap(),
                options,
                "{text}"
            );
            if !d.definitions.is_empty() {
                assert!(text.starts_with(&format!("{}\n{stem} ", d.definitions)));
            }
        }
        for q in [
            Q::IdentifyDistance,
            Q::IdentifyPosition,
            Q::IdentifyHeading,
            Q::PickCloser,
            Q::RelativeHeading,
            Q::OrderLeftmost,
            Q::DescribeScenario,
            Q::EmbodiedSideness,
        ] {
            assert!(seen.contains(&q), "no {} drafted", q.name());
        }
        let slow_down = action_words(&cfg, 2);
        assert_eq!(
            slow_down,
            "Action \"SLOW_DOWN\" means keeping the front wheels straight while braking at 2.7 m/s² (until we stop)."
        );
        assert_eq!(
            action_words(&cfg, 0),
            "Action \"TURN_LEFT\" means turning the front wheels 6° to the left while accelerating at 4 m/s²."
        );
    }
}
