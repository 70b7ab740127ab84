//! The programs about sets of labels: `describe_sector`, `describe_distance`, `order_*`,
//! `identify_*most` and `describe_scenario`.

use serde_json::{json, Value};

use super::{sample, shuffle, Gen, Labels};
use crate::metavqa::relations::Pos;
use crate::metavqa::templates::{bracketed, cat, list, o, t, Text};
use crate::metavqa::types::QuestionType as Q;

impl Gen<'_> {
    /// `describe_sector`: one question per configured sector, listing the objects in it.
    pub(super) fn describe_sectors(&mut self) {
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
    pub(super) fn describe_distances(&mut self) {
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

    pub(super) fn order(&mut self, q: Q) {
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

    pub(super) fn extreme(&mut self, q: Q) {
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
    pub(super) fn scenario(&mut self) {
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
}
