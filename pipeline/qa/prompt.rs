//! The text a model reads, rendered from a question's structure.
//!
//! A question is stored as parts (the lines before it, its stem, the lines after it, a note per
//! option) plus the family's option layout; the prompt is rendered from those parts and the
//! record's `choices` whenever a record is written ([`crate::qa::record::columns`]). Nothing
//! holds a rendered prompt that a later step could leave stale: whatever reorders the options
//! (the seeded shuffle, letter balancing) only reorders `choices`, and the text follows.
//!
//! Each family keeps its paper's layout:
//!
//! | layout | options as shown |
//! |---|---|
//! | `egodyn` | `{stem} [c1 / c2 / …]` on one line, the answer instruction after it |
//! | `metavqa` | `{stem} Choose the best answer from option (A) through (D): (A) c1; (B) c2; ….` |
//! | `stsbench` | one `A. c1.` line per option, then `Definitions:` and `- {note}.` per option |
//! | `sig` | one `A. c1` line per option |
//! | `drivebench` | `{stem} Please select the correct answer from the following options: A. c1. B. c2.` |

use std::collections::BTreeMap;

use crate::qa::record::letter;

/// How a family shows its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Layout {
    /// EgoDyn-Bench: the options inline in brackets after the question.
    #[default]
    EgoDyn,
    /// MetaVQA: an instruction naming the letters, then `(A) x; (B) y.`.
    MetaVqa,
    /// STSBench: a lettered line per option, then a definition per option in shown order.
    StsBench,
    /// SIG: a lettered line per option.
    Sig,
    /// DriveBench: DriveLM's one-line `A. x. B. y.` after a fixed instruction.
    DriveBench,
}

impl Layout {
    pub const ALL: [Layout; 5] = [
        Layout::EgoDyn,
        Layout::MetaVqa,
        Layout::StsBench,
        Layout::Sig,
        Layout::DriveBench,
    ];

    /// Whether the prompt letters its options and asks for a letter (every layout but
    /// EgoDyn's, which asks for the option itself).
    pub fn lettered(self) -> bool {
        self != Layout::EgoDyn
    }

    /// The name stored in the `prompt_layout` column.
    pub fn name(self) -> &'static str {
        self.family().name()
    }

    /// The family whose published layout this is; each family has its own.
    pub fn family(self) -> super::Family {
        use super::Family;
        match self {
            Layout::EgoDyn => Family::Egodyn,
            Layout::MetaVqa => Family::Metavqa,
            Layout::StsBench => Family::Stsbench,
            Layout::Sig => Family::Sig,
            Layout::DriveBench => Family::Drivebench,
        }
    }

    pub fn from_name(s: &str) -> Option<Layout> {
        Layout::ALL.into_iter().find(|l| l.name() == s)
    }
}

/// DriveBench's instruction between the question and its options (DriveLM's wording).
pub(crate) const DRIVEBENCH_INSTRUCTION: &str =
    "Please select the correct answer from the following options:";

/// The heading of STSBench's per-option definitions.
pub(crate) const STSBENCH_DEFINITIONS: &str = "Definitions:";

/// MetaVQA's answer instruction for `n` options (`docs/metavqa.md` §5: "(A) through (D)", "between
/// (A) and (B)").
pub(crate) fn metavqa_instruction(n: usize) -> String {
    let last = letter(n.saturating_sub(1)).unwrap_or_default();
    if n == 2 {
        "Choose the best answer between option (A) and (B):".into()
    } else {
        format!("Choose the best answer from option (A) through ({last}):")
    }
}

/// A question's parts, everything of its prompt but the options' order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Prompt {
    pub layout: Layout,
    /// Text shown before the question (context, who is who); may hold several lines.
    pub preamble: String,
    /// The question itself, without its options.
    pub stem: String,
    /// Text shown after the options (the answer instruction); may hold several lines.
    pub postamble: String,
    /// Per option text, a note shown with it (STSBench's definitions). Keyed by the option
    /// rather than by position, so reordering the options cannot detach a note from its option.
    pub notes: BTreeMap<String, String>,
}

impl Prompt {
    pub fn new(layout: Layout, stem: impl Into<String>) -> Self {
        Self {
            layout,
            stem: stem.into(),
            ..Default::default()
        }
    }

    pub(crate) fn preamble(mut self, text: impl Into<String>) -> Self {
        self.preamble = text.into();
        self
    }

    pub fn postamble(mut self, text: impl Into<String>) -> Self {
        self.postamble = text.into();
        self
    }

    pub fn note(mut self, choice: impl Into<String>, text: impl Into<String>) -> Self {
        self.notes.insert(choice.into(), text.into());
        self
    }

    /// The notes aligned with `choices` (empty where an option has none): the stored column.
    pub(crate) fn notes_for(&self, choices: &[String]) -> Vec<String> {
        choices
            .iter()
            .map(|c| self.notes.get(c).cloned().unwrap_or_default())
            .collect()
    }

    /// The definitions STSBench shows after its options, one line per option in `choices`
    /// order (none for other layouts' prompts, which have no notes).
    pub(crate) fn note_lines(&self, choices: &[String]) -> Vec<String> {
        let notes: Vec<String> = choices
            .iter()
            .filter_map(|c| self.notes.get(c))
            .map(|n| format!("- {n}."))
            .collect();
        if notes.is_empty() {
            return notes;
        }
        std::iter::once(STSBENCH_DEFINITIONS.to_string())
            .chain(notes)
            .collect()
    }

    /// The prompt a model reads, with the options in `choices` order.
    pub fn render(&self, choices: &[String]) -> String {
        let lettered = |fmt: &dyn Fn(&str, &str) -> String| -> Vec<String> {
            choices
                .iter()
                .enumerate()
                .map(|(i, c)| fmt(&letter(i).unwrap_or_default(), c))
                .collect()
        };
        let mut lines: Vec<String> = Vec::new();
        if !self.preamble.is_empty() {
            lines.push(self.preamble.clone());
        }
        match self.layout {
            Layout::EgoDyn => lines.push(format!("{} [{}]", self.stem, choices.join(" / "))),
            Layout::MetaVqa => lines.push(format!(
                "{} {} {}.",
                self.stem,
                metavqa_instruction(choices.len()),
                lettered(&|l, c| format!("({l}) {c}")).join("; ")
            )),
            Layout::StsBench => {
                lines.push(self.stem.clone());
                lines.extend(lettered(&|l, c| format!("{l}. {c}.")));
                lines.extend(self.note_lines(choices));
            }
            Layout::Sig => {
                lines.push(self.stem.clone());
                lines.extend(lettered(&|l, c| format!("{l}. {c}")));
            }
            Layout::DriveBench => lines.push(format!(
                "{} {DRIVEBENCH_INSTRUCTION} {}",
                self.stem,
                lettered(&|l, c| format!("{l}. {c}.")).join(" ")
            )),
        }
        if !self.postamble.is_empty() {
            lines.push(self.postamble.clone());
        }
        lines.join("\n")
    }
}

/// A number as prompts that define their answer words show it: at most three decimals, no
/// trailing zeros, never `-0`.
pub(crate) fn short_number(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// `'word'`: an answer word as a definition names it.
pub(crate) fn quoted(word: &str) -> String {
    format!("'{word}'")
}

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn and_list(parts: &[String]) -> String {
    match parts {
        [] => String::new(),
        [a] => a.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_layout_shows_the_options_in_order() {
        let ch = c(&["left", "right", "straight"]);
        let p = Prompt::new(Layout::EgoDyn, "Which way?")
            .preamble("The image shows …")
            .postamble("Answer with one option.");
        assert_eq!(
            p.render(&ch),
            "The image shows …\nWhich way? [left / right / straight]\nAnswer with one option."
        );
        let p = Prompt::new(Layout::MetaVqa, "Where is <1>?");
        assert_eq!(
            p.render(&ch[..2]),
            "Where is <1>? Choose the best answer between option (A) and (B): (A) left; (B) right."
        );
        let p = Prompt::new(Layout::DriveBench, "What is it?");
        assert_eq!(
            p.render(&ch),
            "What is it? Please select the correct answer from the following options: A. left. B. right. C. straight."
        );
        let p = Prompt::new(Layout::StsBench, "Which occurs?")
            .note("right", "turning right: the heading turns clockwise")
            .note("left", "turning left: anticlockwise")
            .postamble("Answer with the letter.");
        assert_eq!(
            p.render(&c(&["right", "left"])),
            "Which occurs?\nA. right.\nB. left.\nDefinitions:\n- turning right: the heading turns clockwise.\n- turning left: anticlockwise.\nAnswer with the letter."
        );
    }

    #[test]
    fn layout_names_round_trip() {
        for l in Layout::ALL {
            assert_eq!(Layout::from_name(l.name()), Some(l));
        }
        assert_eq!(Layout::from_name("nope"), None);
    }
}
