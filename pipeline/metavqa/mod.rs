//! The MetaVQA question family (`docs/metavqa.md`): spatial, embodied and grounding
//! questions about Set-of-Mark labelled camera images.
//!
//! * [`graph`]: the scene graph of one keyframe camera image (kept objects in the ego's BEV
//!   frame).
//! * [`relations`]: the box-extent sidedness rule, heading sectors, bins, box overlap and the
//!   crash sweeps.
//! * [`types`]: the 30 question types.
//! * [`questions`]: their query programs, eligibility rules and distractors.
//! * [`templates`]: question text with object references, numbered per question set.
//! * [`rollout`]: the ego rollout table behind the embodied questions.
//! * [`marks`]: the Set-of-Mark images of a question set.
//! * [`input`]: the visibility table's kept rows.
//! * [`stage`]: `drivegen metavqa` ([`run`]).
//! * [`config`]: the settings of `configs/metavqa.toml`.

pub(crate) mod config;
pub mod graph;
pub mod input;
pub(crate) mod marks;
pub mod questions;
pub mod relations;
pub mod rollout;
pub mod stage;
pub mod templates;
pub mod types;

pub use config::MetavqaConfig;
pub use stage::{run, Options, Summary};
