//! The grounding program: the label of the white-boxed object.

use serde_json::json;

use super::{sample, Gen, Labels};
use crate::metavqa::templates::t;
use crate::metavqa::types::QuestionType as Q;

impl Gen<'_> {
    pub(super) fn grounding(&mut self) {
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
