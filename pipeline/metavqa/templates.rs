//! Question text with object references that are numbered only after the question set of an
//! image is known (`docs/metavqa.md` §3.3: labels are renumbered per question set), and the
//! option format.

use super::relations::Pos;

/// A piece of question or option text.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    T(String),
    /// A reference to scene-graph node `i`, rendered `<label>`.
    O(usize),
}

/// Text with object references.
pub(crate) type Text = Vec<Piece>;

/// Plain text.
pub(crate) fn t(s: impl Into<String>) -> Text {
    vec![Piece::T(s.into())]
}

/// `<label of i>`.
pub(crate) fn o(i: usize) -> Text {
    vec![Piece::O(i)]
}

/// Concatenation.
pub(crate) fn cat(parts: Vec<Text>) -> Text {
    parts.into_iter().flatten().collect()
}

/// `<a>, <b>, …` (no brackets).
pub(crate) fn list(ids: &[usize]) -> Text {
    let mut v = Vec::new();
    for (k, &i) in ids.iter().enumerate() {
        if k > 0 {
            v.push(Piece::T(", ".into()));
        }
        v.push(Piece::O(i));
    }
    v
}

/// `[<a>, <b>]`, `[]` when empty.
pub(crate) fn bracketed(ids: &[usize]) -> Text {
    cat(vec![t("["), list(ids), t("]")])
}

/// Renders `text` with `label(i)` for node `i`.
pub fn render(text: &Text, label: &dyn Fn(usize) -> u32) -> String {
    let mut s = String::new();
    for p in text {
        match p {
            Piece::T(x) => s.push_str(x),
            Piece::O(i) => {
                s.push('<');
                s.push_str(&label(*i).to_string());
                s.push('>');
            }
        }
    }
    s
}

/// The node indices `text` refers to, in order of appearance.
pub(crate) fn refs(text: &Text) -> impl Iterator<Item = usize> + '_ {
    text.iter().filter_map(|p| match p {
        Piece::O(i) => Some(*i),
        Piece::T(_) => None,
    })
}

/// A bin's option text, e.g. `Very close (0-2m)`.
pub(crate) fn bin_text(name: &str, range: &str) -> String {
    format!("{} ({range})", capitalise(name))
}

/// First letter upper case.
pub(crate) fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The option text of a position or heading sector.
pub(crate) fn pos_text(p: Pos) -> String {
    p.text().to_string()
}
