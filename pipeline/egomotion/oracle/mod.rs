//! The deterministic oracle: the config's questions compiled against the rule registry.
//!
//! The oracle sits above the config (whose checks it compiles from) and below the prompts
//! (which show its question texts and definitions). Every answer carries its rule type, the
//! parameters it used (after α scaling) and the evidence (aggregated values, event indices and
//! times), so each label can be re-derived by hand from the clip's arrays.

pub mod consistency;
pub(crate) mod inputs;
pub(crate) mod rules;
pub(super) mod wording;

use serde_json::Value;

pub use rules::{Compiled, Condition, Event, Op, Rule};

pub(crate) use super::config::questions::fmt_num;
use super::config::{checked, Checked, EgodynConfig, QuestionConfig};
use super::kinematics::{Features, Kinematics};

/// One compiled question.
#[derive(Debug, Clone)]
pub struct Question {
    pub id: String,
    pub reference_id: String,
    pub category: String,
    pub temporal: bool,
    /// The question text with its placeholders filled from the (α-scaled) thresholds.
    pub text: String,
    /// The sentence defining the answer words from the (α-scaled) rule, shown after the
    /// options ([`wording::definitions`]); empty when the text states it all.
    pub definitions: String,
    pub choices: Vec<String>,
    /// The rule after α scaling.
    pub rule: Rule,
    compiled: Compiled,
    /// The parameters as recorded in every answer.
    pub params: Value,
}

/// One answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Index into the question's canonical `choices`.
    pub class: usize,
    pub evidence: Value,
}

/// The compiled question set of a config, at the config's α (or another one).
#[derive(Debug, Clone)]
pub struct Oracle {
    pub alpha: f64,
    pub questions: Vec<Question>,
}

impl Question {
    fn compile(q: &QuestionConfig, alpha: f64) -> Result<Self, String> {
        let ctx = |e: String| format!("question {}: {e}", q.id);
        let Checked { rule, parsed, text } = checked(q, alpha)?;
        let compiled = Compiled::from_parsed(&rule, parsed);
        let definitions = wording::definitions(&rule, &q.choices, q.text.contains('{'));
        let mut params = serde_json::to_value(&rule).map_err(|e| ctx(e.to_string()))?;
        if let Some(o) = params.as_object_mut() {
            o.insert("alpha".into(), serde_json::json!(alpha));
            o.insert(
                "alpha_scaled_keys".into(),
                serde_json::json!(q.rule.scaled_keys()),
            );
            o.insert("reference_id".into(), serde_json::json!(q.reference_id));
        }
        Ok(Self {
            id: q.id.clone(),
            reference_id: q.reference_id.clone(),
            category: q.category.clone(),
            temporal: q.temporal,
            text,
            definitions,
            choices: q.choices.clone(),
            rule,
            compiled,
            params,
        })
    }

    /// The class index only (no evidence).
    #[inline]
    pub(crate) fn classify(&self, k: &Kinematics, f: &Features) -> usize {
        self.compiled.evaluate(k, f, false).0
    }

    /// The answer with its evidence.
    pub fn answer(&self, k: &Kinematics, f: &Features) -> Answer {
        let (class, ev) = self.compiled.evaluate(k, f, true);
        Answer {
            class,
            evidence: ev.unwrap_or(Value::Null),
        }
    }

    /// The label string of a class.
    pub fn label(&self, class: usize) -> &str {
        self.choices.get(class).map_or("", String::as_str)
    }
}

impl Oracle {
    /// The config's questions at the config's α.
    pub fn new(cfg: &EgodynConfig) -> Result<Self, String> {
        Self::with_alpha(cfg, cfg.alpha)
    }

    /// The config's questions with every scalable threshold multiplied by `alpha`.
    pub fn with_alpha(cfg: &EgodynConfig, alpha: f64) -> Result<Self, String> {
        let questions = cfg
            .questions
            .iter()
            .map(|q| Question::compile(q, alpha))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { alpha, questions })
    }

    /// Every question's answer, in question order.
    pub fn answers(&self, k: &Kinematics, f: &Features) -> Vec<Answer> {
        self.questions.iter().map(|q| q.answer(k, f)).collect()
    }

    /// Every question's class, in question order.
    pub fn classes(&self, k: &Kinematics, f: &Features) -> Vec<usize> {
        self.questions.iter().map(|q| q.classify(k, f)).collect()
    }

    /// A question by id.
    pub fn question(&self, id: &str) -> Option<&Question> {
        self.questions.iter().find(|q| q.id == id)
    }
}
