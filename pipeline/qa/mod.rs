//! Question–answer records shared by every question family (EgoDyn, MetaVQA, STSBench, SIG,
//! DriveBench); see `docs/qa-schema.md`.

pub(crate) mod compact;
pub mod ipc;
pub(crate) mod prompt;
pub mod record;

pub use prompt::{Layout, Prompt};
pub use record::QaRecord;
pub use record::{
    check_invariants, from_batch, letter, letter_index, option_order, qa_id, qa_schema,
    row_problem, set_answer, shuffle_choices, to_batch, Family, OptionOrder,
};
