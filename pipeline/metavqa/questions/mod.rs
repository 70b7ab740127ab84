//! The query programs of the 30 question types (`docs/metavqa.md` §5) on one image's scene
//! graph.
//!
//! [`generate`] walks the types in [`QuestionType::ALL`](crate::metavqa::types::QuestionType::ALL) order and draws objects, parameters
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
//!
//! The parts: this file holds the drafts, the generator and the option helpers every program
//! shares; the programs are grouped as `docs/metavqa.md` §5 lists them:
//!
//! * `single`: one object's colour, type, distance, position and heading (`identify_*`);
//! * `pairs`: two objects, or an object and us (`pick_closer`, `relative_*`, the crash
//!   predictions);
//! * `sets`: sets of labels (`order_*`, `identify_*most`, `describe_*`);
//! * `embodied`: what our action does (`embodied_*`);
//! * `grounding`: the label of the white-boxed object;
//! * `words`: what the answer words mean in the config's values ([`definitions`]).

mod embodied;
mod grounding;
mod pairs;
mod sets;
mod single;
mod words;

use serde_json::{json, Value};

use super::config::MetavqaConfig;
use super::graph::SceneGraph;
use super::relations::Pos;
use super::rollout::Rollouts;
use super::templates::{bin_text, pos_text, t, Text};
use super::types::QuestionType as Q;
use crate::qa::record::SplitMix64;
use crate::qa::{Layout, Prompt};

pub(crate) use words::definitions;

/// `pick_closer`'s third option.
pub(crate) const SAME_DISTANCE: &str = "about the same distance";

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
}

#[cfg(test)]
mod tests {
    use super::words::action_words;
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
