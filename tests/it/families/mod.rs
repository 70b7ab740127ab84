//! The question families other than EgoDyn: MetaVQA, SIG, STSBench and Set-of-Mark, each on
//! hand-built scenes and on the synthetic corpus.

mod metavqa_corpus;
mod metavqa_hand;
mod sig_corpus;
mod sig_grid;
mod som;
mod stsbench_corpus;
mod stsbench_rules;
