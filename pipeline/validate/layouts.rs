//! Reads the options back out of a prompt as a model sees it, one parser per family's layout.
//!
//! Deliberately written apart from [`crate::qa::prompt`]: these parsers look for each
//! family's published option markers in the text and never call the renderer, so a renderer
//! that puts the options in the wrong order (or a step that edits a rendered prompt) is caught
//! rather than reproduced.

/// The options `question` shows, in order, read with `family`'s layout.
pub fn shown_options(family: &str, question: &str) -> Result<Vec<String>, String> {
    use crate::qa::Family;
    match Family::parse(family) {
        Some(Family::Egodyn) => bracketed(question),
        Some(Family::Metavqa) => parenthesised(question),
        Some(Family::Stsbench) => lettered_lines(question, true),
        Some(Family::Sig) => lettered_lines(question, false),
        Some(Family::Drivebench) => inline_letters(question),
        None => Err(format!("no option layout is known for family {family:?}")),
    }
}

fn letter(i: usize) -> char {
    char::from(b'A' + (i % 26) as u8)
}

/// EgoDyn: one line ends with `[a / b / c]`.
fn bracketed(q: &str) -> Result<Vec<String>, String> {
    let lines: Vec<&str> = q.lines().filter(|l| l.ends_with(']')).collect();
    let [line] = lines.as_slice() else {
        return Err(format!(
            "expected one line ending in `[… / …]`, found {}",
            lines.len()
        ));
    };
    let open = line
        .rfind(" [")
        .ok_or("the option line has no ` [` before its options")?;
    let inner = &line[open + 2..line.len() - 1];
    Ok(inner.split(" / ").map(str::to_string).collect())
}

/// MetaVQA: `… option (A) through (D): (A) a; (B) b; (C) c; (D) d.` (two options: `between
/// option (A) and (B):`). The instruction's letters must agree with the options shown.
fn parenthesised(q: &str) -> Result<Vec<String>, String> {
    let start = q.rfind(": (A) ").ok_or("no `: (A) ` starts the options")?;
    let head = &q[..start];
    let body = q[start + 6..]
        .strip_suffix('.')
        .ok_or("the options do not end with `.`")?;
    let out = split_at_markers(body, |l| format!("; ({l}) "));
    let n = out.len();
    let said = if n == 2 {
        head.ends_with("between option (A) and (B)")
    } else {
        head.ends_with(&format!("from option (A) through ({})", letter(n - 1)))
    };
    if !said {
        return Err(format!(
            "the instruction does not name the {n} options shown (A to {})",
            letter(n - 1)
        ));
    }
    Ok(out)
}

/// STSBench and SIG: consecutive lines `A. a`, `B. b`, … (STSBench ends each with `.`).
fn lettered_lines(q: &str, period: bool) -> Result<Vec<String>, String> {
    let lines: Vec<&str> = q.lines().collect();
    let first = lines
        .iter()
        .position(|l| l.starts_with("A. "))
        .ok_or("no line starts with `A. `")?;
    let mut out = Vec::new();
    for (i, l) in lines[first..].iter().enumerate() {
        let Some(text) = l.strip_prefix(&format!("{}. ", letter(i))) else {
            break;
        };
        let text = if period {
            text.strip_suffix('.')
                .ok_or_else(|| format!("option line {:?} does not end with `.`", l))?
        } else {
            text
        };
        out.push(text.to_string());
        if i == 25 {
            break;
        }
    }
    if lines
        .iter()
        .skip(first + out.len())
        .any(|l| l.starts_with(&format!("{}. ", letter(out.len()))))
    {
        return Err("the option lines are not consecutive".into());
    }
    Ok(out)
}

/// DriveBench: `… from the following options: A. a. B. b. C. c.`.
fn inline_letters(q: &str) -> Result<Vec<String>, String> {
    const LEAD: &str = "from the following options: A. ";
    let start = q
        .rfind(LEAD)
        .ok_or("no `from the following options: A. `")?;
    let body = q[start + LEAD.len()..]
        .strip_suffix('.')
        .ok_or("the options do not end with `.`")?;
    Ok(split_at_markers(body, |l| format!(". {l}. ")))
}

/// `body` (the first option onwards, its own marker already stripped) cut at the markers of the
/// second, third, … option, in letter order: the options, up to 26.
fn split_at_markers(body: &str, marker: impl Fn(char) -> String) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = body;
    for i in 1..26 {
        let m = marker(letter(i));
        let Some(at) = rest.find(&m) else { break };
        out.push(rest[..at].to_string());
        rest = &rest[at + m.len()..];
    }
    out.push(rest.to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_family_reads_back() {
        assert_eq!(
            shown_options("egodyn", "Frames.\nTurning? [left / right]\nAnswer.").unwrap(),
            ["left", "right"]
        );
        assert_eq!(
            shown_options(
                "metavqa",
                "Is <1> (A) left? Choose the best answer from option (A) through (C): (A) x; (B) y (2m); (C) z."
            )
            .unwrap(),
            ["x", "y (2m)", "z"]
        );
        assert!(shown_options(
            "metavqa",
            "Q? Choose the best answer from option (A) through (D): (A) x; (B) y; (C) z."
        )
        .is_err());
        assert_eq!(
            shown_options(
                "stsbench",
                "Ctx.\nWhich?\nA. one.\nB. two.\nDefinitions:\n- one: x."
            )
            .unwrap(),
            ["one", "two"]
        );
        assert_eq!(
            shown_options("sig", "Grid.\nWhere?\nA. left of\nB. right of\nAnswer.").unwrap(),
            ["left of", "right of"]
        );
        assert_eq!(
            shown_options(
                "drivebench",
                "What? Please select the correct answer from the following options: A. Fog. B. Snow. C. 3."
            )
            .unwrap(),
            ["Fog", "Snow", "3"]
        );
    }
}
