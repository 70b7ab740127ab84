//! The single-object programs: `identify_color`, `_type`, `_distance`, `_position` and
//! `_heading`.

use serde_json::json;

use super::{sample, Gen, Labels};
use crate::metavqa::relations::Pos;
use crate::metavqa::templates::{cat, o, pos_text, t};
use crate::metavqa::types::QuestionType as Q;

impl Gen<'_> {
    /// `identify_color`: one coloured object's colour. Distractors come from the image's other
    /// colours first, then from the configured palette.
    pub(super) fn identify_color(&mut self) {
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
    pub(super) fn identify_type(&mut self) {
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
    pub(super) fn identify_distance(&mut self) {
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
    pub(super) fn identify_position(&mut self) {
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
    pub(super) fn identify_heading(&mut self) {
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
            json!({"clockwise_deg": crate::metavqa::relations::clockwise_deg(yaw), "sector": s.code()}),
        );
    }
}
