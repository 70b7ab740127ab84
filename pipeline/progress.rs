//! Progress for long work, on standard error.
//!
//! On a terminal a step shows one bar that redraws itself. Anywhere else (a Slurm log, CI, a
//! pipe) a bar would be hidden or would fill the log with redraws, so the step prints plain
//! lines instead: one each time it passes another tenth of its work, or a minute after the
//! last line, and one when it ends. `DRIVEGEN_PROGRESS=0` shows neither, `lines` shows lines
//! on a terminal too.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Hidden,
    Bar,
    Lines,
}

/// The mode `DRIVEGEN_PROGRESS` asks for (`0`, `lines`), else the one stderr suits.
pub(crate) fn mode() -> Mode {
    match std::env::var("DRIVEGEN_PROGRESS").as_deref() {
        Ok("0") => Mode::Hidden,
        Ok("lines") => Mode::Lines,
        _ if std::io::stderr().is_terminal() => Mode::Bar,
        _ => Mode::Lines,
    }
}

/// A plain line is printed at least this often while work advances.
const LINE_EVERY: Duration = Duration::from_secs(60);

/// The progress of one step: a bar on a terminal, plain lines elsewhere.
pub(crate) struct Bar {
    pb: ProgressBar,
    lines: Option<Mutex<Lines>>,
}

struct Lines {
    what: String,
    len: u64,
    pos: u64,
    start: Instant,
    last: Instant,
    /// The tenths of the work already reported.
    tenths: u64,
}

impl Lines {
    fn advance(&mut self, n: u64) {
        self.pos = self.pos.saturating_add(n);
        let tenths = self.share(10);
        if tenths > self.tenths || self.last.elapsed() >= LINE_EVERY {
            self.tenths = tenths;
            self.print("");
        }
    }

    /// The work done, in `parts` of the whole (all of it when there is none).
    fn share(&self, parts: u64) -> u64 {
        (self.pos.min(self.len) * parts)
            .checked_div(self.len)
            .unwrap_or(parts)
    }

    fn print(&mut self, tail: &str) {
        self.last = Instant::now();
        let pct = self.share(100);
        // A failed write to stderr has nowhere to be reported.
        let _ = writeln!(
            std::io::stderr().lock(),
            "{}: {}/{} ({pct}%), {:.1} s{tail}",
            self.what,
            self.pos,
            self.len,
            self.start.elapsed().as_secs_f64()
        );
    }
}

impl Bar {
    /// Advances by `n` steps.
    pub fn inc(&self, n: u64) {
        self.pb.inc(n);
        if let Some(l) = &self.lines {
            l.lock().unwrap_or_else(|e| e.into_inner()).advance(n);
        }
    }

    /// Ends the step: the bar disappears; plain lines end with one saying so, unless the
    /// last line already reported all of the work.
    pub(crate) fn finish_and_clear(&self) {
        self.pb.finish_and_clear();
        if let Some(l) = &self.lines {
            let mut l = l.lock().unwrap_or_else(|e| e.into_inner());
            if l.pos < l.len || l.tenths < 10 {
                l.print(", done");
            }
            l.tenths = 10;
            l.pos = l.len.max(l.pos);
        }
    }
}

/// A step of `len` units labelled `what` (e.g. "ingest scenes").
pub(crate) fn bar(len: u64, what: &str) -> Bar {
    bar_in(mode(), len, what)
}

fn bar_in(mode: Mode, len: u64, what: &str) -> Bar {
    let pb = ProgressBar::new(len);
    if mode != Mode::Bar {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    let style = ProgressStyle::with_template(
        "{prefix:>16} [{elapsed_precise}] {bar:40} {pos}/{len} {per_sec} eta {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    pb.set_style(style);
    pb.set_prefix(what.to_string());
    let lines = (mode == Mode::Lines).then(|| {
        let now = Instant::now();
        Mutex::new(Lines {
            what: what.to_string(),
            len,
            pos: 0,
            start: now,
            last: now,
            tenths: 0,
        })
    });
    Bar { pb, lines }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(len: u64, pos: u64) -> Lines {
        let now = Instant::now();
        Lines {
            what: "t".into(),
            len,
            pos,
            start: now,
            last: now,
            tenths: 0,
        }
    }

    #[test]
    fn shares_are_whole_parts_and_never_pass_the_end() {
        assert_eq!(lines(7, 3).share(10), 4);
        assert_eq!(lines(7, 3).share(100), 42);
        assert_eq!(lines(7, 9).share(100), 100);
        assert_eq!(lines(0, 0).share(10), 10);
    }

    #[test]
    fn a_line_comes_at_each_new_tenth_only() {
        let mut l = lines(100, 0);
        l.advance(5);
        assert_eq!(l.tenths, 0, "no tenth passed yet");
        l.advance(5);
        assert_eq!(l.tenths, 1);
        l.advance(35);
        assert_eq!(l.tenths, 4);
        l.advance(1000);
        assert_eq!(l.tenths, 10);
    }
}

/// `text` safe to print on a terminal: control characters other than newline and tab, which a
/// release or a dataset may hold (an escape sequence can rewrite the screen or the window
/// title), are shown escaped (`\u{1b}`) instead of being sent.
pub(crate) fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() && c != '\n' && c != '\t' {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod printable_tests {
    #[test]
    fn escapes_are_shown_not_sent() {
        assert_eq!(super::printable("a\nb\tc"), "a\nb\tc");
        assert_eq!(
            super::printable("x\u{1b}]0;owned\u{7}y"),
            "x\\u{1b}]0;owned\\u{7}y"
        );
        assert_eq!(super::printable("\u{9b}2J"), "\\u{9b}2J");
    }
}
