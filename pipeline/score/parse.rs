//! EgoDyn's 4-stage answer parser (`docs/egodyn.md` §4.5), used for every family: a model's free
//! text → one of the question's choices, or nothing.
//!
//! Normalisation: lower case, trimmed, `*` and backticks removed, whitespace collapsed,
//! trailing `.,;:!?` stripped. Then, first hit wins:
//! 1. exact match with a choice;
//! 2. the same with `_` and spaces equivalent (`first half` ↔ `first_half`);
//! 3. the last non-empty line: exact, then `_`/space equivalent, then a whole-word match;
//! 4. a whole-word match anywhere, longest choice first (`no_peak` before `no`), also trying
//!    the spaced form of underscored choices.
//!
//! Multiple-choice families also accept a bare option letter (`B`, `(B)`, `B.`), tried after
//! stage 2, when the question has at most 26 options.

/// Which stage matched (for the report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Exact,
    Normalised,
    Letter,
    LastLine,
    WordBoundary,
}

pub(crate) fn normalise(s: &str) -> String {
    let lower = s.to_lowercase().replace(['*', '`'], "");
    let collapsed = lower.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed
        .trim_end_matches(['.', ',', ';', ':', '!', '?'])
        .trim()
        .to_string()
}

fn spaced(s: &str) -> String {
    s.replace('_', " ")
}

/// Whether `needle` occurs in `hay` with no word character (alphanumeric or `_`) on either
/// side.
fn word_match(hay: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut start = 0;
    while let Some(at) = hay[start..].find(needle) {
        let a = start + at;
        let b = a + needle.len();
        let before = hay[..a].chars().next_back();
        let after = hay[b..].chars().next();
        if !before.is_some_and(is_word) && !after.is_some_and(is_word) {
            return true;
        }
        start = a + hay[a..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

fn exact(text: &str, choices: &[String]) -> Option<usize> {
    choices.iter().position(|c| normalise(c) == text)
}

fn equivalent(text: &str, choices: &[String]) -> Option<usize> {
    let t = spaced(text);
    choices.iter().position(|c| spaced(&normalise(c)) == t)
}

fn letter(text: &str, n: usize) -> Option<usize> {
    let t = text.trim_start_matches('(').trim_end_matches(')');
    let mut cs = t.chars();
    let (Some(c), None) = (cs.next(), cs.next()) else {
        return None;
    };
    let k = (c as u32).checked_sub('a' as u32)? as usize;
    (c.is_ascii_lowercase() && k < n.min(26)).then_some(k)
}

/// Longest choice first; ties in choice order.
fn words(text: &str, choices: &[String]) -> Option<usize> {
    let mut order: Vec<usize> = (0..choices.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(choices[i].chars().count()));
    order.into_iter().find(|&i| {
        let c = normalise(&choices[i]);
        word_match(text, &c) || (c.contains('_') && word_match(text, &spaced(&c)))
    })
}

/// The choice a response names, and the stage that found it.
pub fn parse(response: &str, choices: &[String], letters: bool) -> Option<(usize, Stage)> {
    let text = normalise(response);
    if let Some(i) = exact(&text, choices) {
        return Some((i, Stage::Exact));
    }
    if let Some(i) = equivalent(&text, choices) {
        return Some((i, Stage::Normalised));
    }
    if letters {
        if let Some(i) = letter(&text, choices.len()) {
            return Some((i, Stage::Letter));
        }
    }
    if let Some(last) = response
        .lines()
        .rev()
        .map(normalise)
        .find(|l| !l.is_empty())
    {
        let hit = exact(&last, choices)
            .or_else(|| equivalent(&last, choices))
            .or_else(|| words(&last, choices));
        if let Some(i) = hit {
            return Some((i, Stage::LastLine));
        }
    }
    words(&text, choices).map(|i| (i, Stage::WordBoundary))
}
