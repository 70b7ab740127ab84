//! Robustness figures over a release's re-asked rows (`docs/robustness.md` §5): per family and
//! per question type, the clean accuracy of the re-asked rows, each setting's accuracy and its
//! relative robustness RR = accuracy ÷ clean, mRR (mean RR over the settings, as RoboBEV and
//! DriveBench report it, and the same without the blackout settings), text-only accuracy,
//! visual reliance = clean − text-only, and what guessing scores.
//!
//! Every figure carries a 95 % paired bootstrap interval: the re-asked base rows are resampled
//! with replacement and one resample feeds every figure of a table, so intervals of ratios and
//! differences account for the rows the figures share.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::qa::record::SplitMix64;
use crate::release::read::SplitSetting;
use crate::svg::esc;

/// Bootstrap resamples per table.
pub(crate) const RESAMPLES: usize = 1000;

/// Seed of the bootstrap generator. Every table restarts from it, so a table's intervals do not
/// depend on which other families or types were scored before it, and the same answers always
/// give the same intervals.
pub(crate) const BOOTSTRAP_SEED: u64 = 0x6472_6976_6567_656e; // "drivegen"

/// A figure with its 95 % bootstrap interval.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub(crate) struct Estimate {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
}

/// One corruption setting of a table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct SettingScore {
    pub split: String,
    pub corruption: String,
    pub severity: u8,
    pub blackout: bool,
    /// The table's rows asked in this setting.
    pub rows: usize,
    pub accuracy: Estimate,
    /// None when the clean accuracy is 0.
    pub rr: Option<Estimate>,
}

/// The figures of one family, or of one question type within it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct RobustnessTable {
    /// Re-asked base rows (distinct `base_qa_id`s).
    pub rows: usize,
    /// Mean of 1 / number of choices over the base rows.
    pub chance: f64,
    /// Main-split accuracy on the base rows (0 when the main split holds none of them).
    pub clean: Estimate,
    pub text_only: Option<Estimate>,
    pub visual_reliance: Option<Estimate>,
    pub mrr: Option<Estimate>,
    pub mrr_without_blackout: Option<Estimate>,
    /// By setting name.
    pub settings: BTreeMap<String, SettingScore>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct FamilyRobustness {
    #[serde(flatten)]
    pub table: RobustnessTable,
    pub by_type: BTreeMap<String, RobustnessTable>,
}

/// What is known of one base row.
#[derive(Debug, Clone, Default)]
struct Base {
    question_type: String,
    clean: Option<bool>,
    text: Option<bool>,
    chance: Option<f64>,
    /// Its re-asked rows' answers, indexed like `release.settings`.
    tally: Vec<Tally>,
}

/// Correct answers over answered rows (normally one row, but duplicates all count).
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    right: u32,
    n: u32,
}

/// The rows of one table: bases sorted by id, and the settings that re-ask any of them.
struct Rows<'a> {
    bases: Vec<&'a Base>,
    settings: Vec<(usize, &'a SplitSetting)>,
}

/// All figures of one (re)sample; None where a figure is undefined.
struct Figures {
    clean: Option<f64>,
    text: Option<f64>,
    visual: Option<f64>,
    /// (accuracy, RR) aligned with `Rows::settings`.
    settings: Vec<(Option<f64>, Option<f64>)>,
    mrr: Option<f64>,
    mrr_without_blackout: Option<f64>,
}

/// What the robustness figures take of one answered row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Answered<'a> {
    pub family: &'a str,
    pub qa_id: &'a str,
    /// The main split's row it repeats (empty: itself, as releases before the column did).
    pub base_qa_id: &'a str,
    pub question_type: &'a str,
    pub choices: usize,
    /// Answered right (an unanswered or unparsable question is not).
    pub right: bool,
}

/// Collects the robustness figures' compact facts (one [`Base`] per re-asked base row) from
/// answered rows read a batch at a time, so no split is held. The rows of the robustness
/// splits must come before those of the main split and the text-only control, whose rows only
/// fill in bases a robustness split re-asked.
pub(crate) struct Collector<'s> {
    settings: &'s [SplitSetting],
    main: String,
    text_only: Option<String>,
    /// Split -> the indices of `settings` it is asked in, looked up once per row.
    setting_of: BTreeMap<String, Vec<usize>>,
    /// family -> base id -> base.
    families: BTreeMap<String, BTreeMap<String, Base>>,
}

impl<'s> Collector<'s> {
    /// Feed it only the splits with answers: a robustness split without any is left out.
    pub(crate) fn new(settings: &'s [SplitSetting], main: &str, text_only: Option<&str>) -> Self {
        let mut setting_of: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (k, s) in settings.iter().enumerate() {
            setting_of.entry(s.split.clone()).or_default().push(k);
        }
        Self {
            settings,
            main: main.to_string(),
            text_only: text_only.map(String::from),
            setting_of,
            families: BTreeMap::new(),
        }
    }

    /// The row of split `split`.
    pub(crate) fn add(&mut self, split: &str, r: Answered<'_>) {
        if split == self.main {
            if let Some(b) = self.base_mut(r.family, r.qa_id) {
                b.clean = Some(r.right);
                b.question_type = r.question_type.to_string();
                b.chance = chance_of(r.choices);
            }
            return;
        }
        if self.text_only.as_deref() == Some(split) {
            if let Some(b) = self.base_mut(r.family, r.qa_id) {
                b.text = Some(r.right);
            }
            return;
        }
        let n = self.settings.len();
        for &k in self.setting_of.get(split).into_iter().flatten() {
            let base_id = if r.base_qa_id.is_empty() {
                r.qa_id
            } else {
                r.base_qa_id
            };
            let b = self
                .families
                .entry(r.family.to_string())
                .or_default()
                .entry(base_id.to_string())
                .or_insert_with(|| Base {
                    question_type: r.question_type.to_string(),
                    chance: chance_of(r.choices),
                    tally: vec![Tally::default(); n],
                    ..Base::default()
                });
            if let Some(t) = b.tally.get_mut(k) {
                t.n += 1;
                t.right += u32::from(r.right);
            }
        }
    }

    fn base_mut(&mut self, family: &str, qa_id: &str) -> Option<&mut Base> {
        self.families.get_mut(family)?.get_mut(qa_id)
    }

    /// Robustness figures per family that appears in a robustness split with answers.
    pub(crate) fn finish(self) -> BTreeMap<String, FamilyRobustness> {
        let settings = self.settings;
        let mut out = BTreeMap::new();
        for (family, fb) in &self.families {
            let rows_where = |keep: &dyn Fn(&Base) -> bool| {
                let bases: Vec<&Base> = fb.values().filter(|b| keep(b)).collect();
                let asks = |k: usize| {
                    bases
                        .iter()
                        .any(|b| b.tally.get(k).is_some_and(|t| t.n > 0))
                };
                let settings = (settings.iter().enumerate())
                    .filter(|(k, _)| asks(*k))
                    .collect();
                Rows { bases, settings }
            };
            let types: BTreeSet<&str> = fb.values().map(|b| b.question_type.as_str()).collect();
            let of_type = |ty: &str| table(&rows_where(&|b| b.question_type == ty));
            let by_type = types
                .into_iter()
                .map(|ty| (ty.to_string(), of_type(ty)))
                .collect();
            let table = table(&rows_where(&|_| true));
            out.insert(family.clone(), FamilyRobustness { table, by_type });
        }
        out
    }
}

fn chance_of(choices: usize) -> Option<f64> {
    (choices > 0).then(|| 1.0 / choices as f64)
}

/// Figures of one sample, each base row counted `w[i]` times.
fn figures(rows: &Rows<'_>, w: &[u32]) -> Figures {
    let ratio = |tally: &dyn Fn(&Base) -> Option<Tally>| {
        let (mut right, mut n) = (0u64, 0u64);
        for (b, &k) in rows.bases.iter().zip(w) {
            if let Some(t) = tally(b) {
                right += u64::from(k) * u64::from(t.right);
                n += u64::from(k) * u64::from(t.n);
            }
        }
        (n > 0).then(|| right as f64 / n as f64)
    };
    let one = |c: Option<bool>| {
        c.map(|c| Tally {
            right: u32::from(c),
            n: 1,
        })
    };
    let clean = ratio(&|b| one(b.clean));
    let text = ratio(&|b| one(b.text));
    let settings: Vec<(Option<f64>, Option<f64>)> = (rows.settings.iter())
        .map(|(k, _)| {
            let acc = ratio(&|b| b.tally.get(*k).copied());
            (acc, acc.zip(clean.filter(|c| *c > 0.0)).map(|(a, c)| a / c))
        })
        .collect();
    let mrr_over = |keep: &dyn Fn(&SplitSetting) -> bool| {
        let rrs: Vec<f64> = (rows.settings.iter().zip(&settings))
            .filter(|((_, s), _)| keep(s))
            .filter_map(|(_, (_, rr))| *rr)
            .collect();
        (!rrs.is_empty()).then(|| rrs.iter().sum::<f64>() / rrs.len() as f64)
    };
    Figures {
        clean,
        text,
        visual: clean.zip(text).map(|(c, t)| c - t),
        mrr: mrr_over(&|_| true),
        mrr_without_blackout: mrr_over(&|s| !s.blackout),
        settings,
    }
}

/// The percentile interval of `draws` around `value`. With R sorted draws, lo is the draw at
/// index ⌊0.025·(R−1)⌋ and hi the one at ⌈0.975·(R−1)⌉, computed in integers so that no
/// rounding moves an index; no draws gives the degenerate interval [value, value].
fn interval(value: f64, mut draws: Vec<f64>) -> Estimate {
    if draws.is_empty() {
        return Estimate {
            value,
            lo: value,
            hi: value,
        };
    }
    draws.sort_by(f64::total_cmp);
    let last = draws.len() - 1;
    let at = |i: usize| draws.get(i.min(last)).copied().unwrap_or(value);
    Estimate {
        value,
        lo: at(last * 25 / 1000),
        hi: at((last * 975).div_ceil(1000)),
    }
}

fn table(rows: &Rows<'_>) -> RobustnessTable {
    let n = rows.bases.len();
    let point = figures(rows, &vec![1; n]);
    let mut rng = SplitMix64::new(BOOTSTRAP_SEED);
    let draws: Vec<Figures> = (0..RESAMPLES)
        .filter(|_| n > 0)
        .map(|_| {
            let mut w = vec![0u32; n];
            (0..n).for_each(|_| w[rng.below(n as u64) as usize] += 1);
            figures(rows, &w)
        })
        .collect();
    let est = |pick: &dyn Fn(&Figures) -> Option<f64>| {
        pick(&point).map(|v| interval(v, draws.iter().filter_map(pick).collect()))
    };
    let settings = (rows.settings.iter().enumerate())
        .map(|(j, (k, s))| {
            let acc = |f: &Figures| f.settings.get(j).and_then(|x| x.0);
            let rr = |f: &Figures| f.settings.get(j).and_then(|x| x.1);
            let asked = rows.bases.iter().filter_map(|b| b.tally.get(*k));
            let score = SettingScore {
                split: s.split.clone(),
                corruption: s.corruption.clone(),
                severity: s.severity,
                blackout: s.blackout,
                rows: asked.map(|t| t.n as usize).sum(),
                accuracy: est(&acc).unwrap_or_default(),
                rr: est(&rr),
            };
            (s.setting.clone(), score)
        })
        .collect();
    let chances: Vec<f64> = rows.bases.iter().filter_map(|b| b.chance).collect();
    RobustnessTable {
        rows: n,
        chance: chances.iter().sum::<f64>() / chances.len().max(1) as f64,
        clean: est(&|f| f.clean).unwrap_or_default(),
        text_only: est(&|f| f.text),
        visual_reliance: est(&|f| f.visual),
        mrr: est(&|f| f.mrr),
        mrr_without_blackout: est(&|f| f.mrr_without_blackout),
        settings,
    }
}

/// Settings in reporting order: those that keep their views first, blackouts last.
fn ordered(t: &RobustnessTable) -> Vec<(&String, &SettingScore)> {
    let mut v: Vec<_> = t.settings.iter().collect();
    v.sort_by_key(|(name, s)| (s.blackout, s.corruption.clone(), s.severity, *name));
    v
}

fn label(name: &str, s: &SettingScore) -> String {
    if s.blackout {
        format!("{name} (blackout)")
    } else {
        name.to_string()
    }
}

fn fmt_est(e: &Estimate) -> String {
    format!("{:.3} [{:.3}, {:.3}]", e.value, e.lo, e.hi)
}

fn fmt_opt(e: Option<&Estimate>) -> String {
    e.map_or_else(|| "n/a".to_string(), fmt_est)
}

/// The figures reported under each family's settings, in both reports.
fn headline(t: &RobustnessTable) -> [(&'static str, String); 6] {
    [
        ("clean", fmt_est(&t.clean)),
        ("text-only", fmt_opt(t.text_only.as_ref())),
        ("visual reliance", fmt_opt(t.visual_reliance.as_ref())),
        ("mRR", fmt_opt(t.mrr.as_ref())),
        (
            "mRR without Camera Crash/Frame Lost",
            fmt_opt(t.mrr_without_blackout.as_ref()),
        ),
        ("chance", format!("{:.3}", t.chance)),
    ]
}

/// A markdown report: per family, a table of its settings and lines for the headline figures.
pub(crate) fn summary(r: &BTreeMap<String, FamilyRobustness>) -> String {
    let mut s = String::new();
    for (family, f) in r {
        let t = &f.table;
        let _ = writeln!(s, "### {family} ({} re-asked rows)\n", t.rows);
        s.push_str("| setting | severity | rows | accuracy [95% CI] | RR [95% CI] |\n");
        s.push_str("|---|---:|---:|---|---|\n");
        for (name, st) in ordered(t) {
            let (acc, rr) = (fmt_est(&st.accuracy), fmt_opt(st.rr.as_ref()));
            let (name, severity, n) = (label(name, st), st.severity, st.rows);
            let _ = writeln!(s, "| {name} | {severity} | {n} | {acc} | {rr} |");
        }
        s.push('\n');
        for (k, v) in headline(t) {
            let _ = writeln!(s, "- {k}: {v}");
        }
        s.push('\n');
    }
    s
}

const CLEAN_COLOUR: &str = "#3a7d44";
const SETTING_COLOUR: &str = "#4a7ebb";
const BLACKOUT_COLOUR: &str = "#8a8a8a";
const TEXT_COLOUR: &str = "#d08c30";

/// One bar chart: clean, the settings, text-only; error bars for the intervals and a dashed
/// line at chance, on a fixed 0–1 axis so that families compare at a glance.
fn chart(family: &str, t: &RobustnessTable) -> String {
    let mut bars: Vec<(String, &Estimate, &str)> = vec![("clean".into(), &t.clean, CLEAN_COLOUR)];
    for (name, st) in ordered(t) {
        let colour = [SETTING_COLOUR, BLACKOUT_COLOUR][usize::from(st.blackout)];
        bars.push((label(name, st), &st.accuracy, colour));
    }
    if let Some(e) = &t.text_only {
        bars.push(("text-only".into(), e, TEXT_COLOUR));
    }
    let (left, top, plot_h, bar_w, gap) = (44.0, 30.0, 200.0, 26.0, 12.0);
    let longest = bars.iter().map(|b| b.0.chars().count()).max().unwrap_or(0);
    // Labels are rotated 45°, so they reach down by about their length / √2.
    let bottom = 20.0 + 6.5 * longest as f64 * 0.71;
    let width = (left + (bar_w + gap) * bars.len() as f64 + 24.0).max(260.0);
    let height = top + plot_h + bottom;
    let (y0, right) = (top + plot_h, width - 12.0);
    let y = |v: f64| top + plot_h * (1.0 - v.clamp(0.0, 1.0));
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11"><text x="{left}" y="16" font-size="13" font-weight="bold">{}</text>"#,
        esc(family)
    );
    for k in 0..=5 {
        let v = f64::from(k) / 5.0;
        let (yy, tx, ty) = (y(v), left - 4.0, y(v) + 4.0);
        let _ = write!(
            s,
            r##"<line x1="{left}" y1="{yy:.1}" x2="{right:.1}" y2="{yy:.1}" stroke="#e4e4e4"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{v:.1}</text>"##
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{left}" y1="{top}" x2="{left}" y2="{y0}" stroke="#444"/><line x1="{left}" y1="{y0}" x2="{right:.1}" y2="{y0}" stroke="#444"/>"##
    );
    for (i, (name, e, colour)) in bars.iter().enumerate() {
        let x = left + gap / 2.0 + (bar_w + gap) * i as f64;
        let (cx, lx, ly) = (x + bar_w / 2.0, x + 4.0, y0 + 12.0);
        let (c0, c1) = (cx - 4.0, cx + 4.0);
        let (yv, h, ylo, yhi) = (y(e.value), y0 - y(e.value), y(e.lo), y(e.hi));
        let (name, tip) = (esc(name), esc(&fmt_est(e)));
        let _ = write!(
            s,
            r##"<rect x="{x:.1}" y="{yv:.1}" width="{bar_w}" height="{h:.1}" fill="{colour}"><title>{name}: {tip}</title></rect><line x1="{cx:.1}" y1="{ylo:.1}" x2="{cx:.1}" y2="{yhi:.1}" stroke="#222"/><line x1="{c0:.1}" y1="{ylo:.1}" x2="{c1:.1}" y2="{ylo:.1}" stroke="#222"/><line x1="{c0:.1}" y1="{yhi:.1}" x2="{c1:.1}" y2="{yhi:.1}" stroke="#222"/><text transform="translate({lx:.1},{ly:.1}) rotate(45)">{name}</text>"##
        );
    }
    let (yc, chance) = (y(t.chance), t.chance);
    let _ = write!(
        s,
        r##"<line x1="{left}" y1="{yc:.1}" x2="{right:.1}" y2="{yc:.1}" stroke="#c0392b" stroke-dasharray="5,4"/><text x="{right:.1}" y="{ty:.1}" text-anchor="end" fill="#c0392b">chance {chance:.2}</text></svg>"##,
        ty = yc - 3.0
    );
    s
}

/// A standalone HTML page (no external resources): per family, its chart and headline figures.
pub(crate) fn html(title: &str, r: &BTreeMap<String, FamilyRobustness>) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{t}</title>\n<style>body{{font-family:sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse;margin:.5em 0 2em}}td,th{{border:1px solid #ccc;padding:2px 8px;text-align:left}}</style>\n</head>\n<body>\n<h1>{t}</h1>\n<p>Accuracy per setting over the re-asked rows, with 95&nbsp;% paired bootstrap intervals; grey bars black views out; the dashed line is chance.</p>\n",
        t = esc(title)
    );
    s.push_str(&plots(r, "h2"));
    s.push_str("</body>\n</html>\n");
    s
}

/// Per family a heading (`level`, e.g. `h2`), its plot and its headline figures: the body of
/// [`html`], and the robustness section of the build's report.
pub(crate) fn plots(r: &BTreeMap<String, FamilyRobustness>, level: &str) -> String {
    let mut s = String::new();
    for (family, f) in r {
        let t = &f.table;
        let (name, svg) = (esc(family), chart(family, t));
        let _ = writeln!(
            s,
            "<{level}>{name} ({} re-asked rows)</{level}>\n{svg}",
            t.rows
        );
        s.push_str("<table>\n");
        for (k, v) in headline(t) {
            let _ = writeln!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
        }
        s.push_str("</table>\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qa::QaRecord;
    use crate::release::read::{ReleaseQuestions, RowSetting};

    /// Correctness of each row, per split, aligned with `release.splits[split]`.
    type Correct = BTreeMap<String, Vec<bool>>;

    /// The figures of an in-memory release, its rows fed as `drivegen score` feeds them: the
    /// robustness splits with answers first, then the main split and the text-only control.
    fn robustness(
        release: &ReleaseQuestions,
        correct: &Correct,
    ) -> BTreeMap<String, FamilyRobustness> {
        let mut c = Collector::new(
            &release.settings,
            &release.main,
            release.text_only.as_deref(),
        );
        let settings = release.settings.iter().map(|s| s.split.as_str());
        let order = settings
            .chain([release.main.as_str()])
            .chain(release.text_only.as_deref());
        for split in order.filter(|s| correct.contains_key(*s)) {
            let rows = release.splits.get(split).into_iter().flatten();
            let tags = release.tags.get(split);
            for (i, r) in rows.enumerate() {
                c.add(
                    split,
                    Answered {
                        family: &r.family,
                        qa_id: &r.qa_id,
                        base_qa_id: tags.and_then(|t| t.get(i)).map_or("", |t| &t.base_qa_id),
                        question_type: &r.question_type,
                        choices: r.choices.len(),
                        right: correct[split].get(i) == Some(&true),
                    },
                );
            }
        }
        c.finish()
    }

    fn rec(id: &str, family: &str, ty: &str, choices: usize) -> QaRecord {
        let choices = (0..choices).map(|k| k.to_string()).collect();
        let (qa_id, family, question_type) = (id.into(), family.into(), ty.into());
        QaRecord {
            qa_id,
            family,
            question_type,
            choices,
            ..Default::default()
        }
    }

    /// Bases q1..q4 of `fam` (q1, q2 of type `ta` with 2 and 4 choices, q3, q4 of `tb` with
    /// 4), q5 of `other` (never re-asked), q6 of `fam2`; fog, camera crash (blackout) and snow
    /// re-ask q3 q1 q4 q2 q6 in that order.
    fn release() -> ReleaseQuestions {
        let main = vec![
            rec("q1", "fam", "ta", 2),
            rec("q2", "fam", "ta", 4),
            rec("q3", "fam", "tb", 4),
            rec("q4", "fam", "tb", 4),
            rec("q5", "other", "tc", 3),
            rec("q6", "fam2", "td", 2),
        ];
        let mut rel = ReleaseQuestions {
            main: "test".into(),
            text_only: Some("test_text_only".into()),
            ..Default::default()
        };
        rel.splits.insert("test_text_only".into(), main.clone());
        for (name, blackout) in [("fog", false), ("camera_crash", true), ("snow", false)] {
            let (split, order) = (format!("test_{name}"), [2, 0, 3, 1, 5]);
            let rows = (order.iter())
                .map(|&i| QaRecord {
                    qa_id: format!("{}_{name}", main[i].qa_id),
                    ..main[i].clone()
                })
                .collect();
            let tags = (order.iter())
                .map(|&i| RowSetting {
                    setting: name.into(),
                    base_qa_id: main[i].qa_id.clone(),
                })
                .collect();
            rel.splits.insert(split.clone(), rows);
            rel.tags.insert(split.clone(), tags);
            let (setting, corruption, severity) = (name.into(), name.into(), 3);
            rel.settings.push(SplitSetting {
                split,
                setting,
                corruption,
                severity,
                blackout,
            });
        }
        rel.splits.insert("test".into(), main);
        rel
    }

    /// Snow has no answers. By base q1..q4: main 1110, text-only 1000, fog 1010, crash 0001.
    fn correct() -> Correct {
        let bits = [
            ("test", "111011"),
            ("test_text_only", "100000"),
            ("test_fog", "11001"),
            ("test_camera_crash", "00100"),
        ];
        let bools = |v: &str| v.chars().map(|c| c == '1').collect();
        bits.into_iter()
            .map(|(k, v)| (k.to_string(), bools(v)))
            .collect()
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    fn val(e: &Option<Estimate>) -> f64 {
        e.as_ref().unwrap().value
    }

    #[test]
    fn hand_computed_figures() {
        let r = robustness(&release(), &correct());
        assert_eq!(r.keys().collect::<Vec<_>>(), ["fam", "fam2"]);
        let f = &r["fam"];
        let (t, ta, tb) = (&f.table, &f.by_type["ta"], &f.by_type["tb"]);
        assert_eq!(f.by_type.len(), 2);
        assert_eq!((t.rows, ta.rows), (4, 2));
        let names: Vec<_> = t.settings.keys().collect();
        assert_eq!(names, ["camera_crash", "fog"]);
        let (fog, crash) = (&t.settings["fog"], &t.settings["camera_crash"]);
        assert_eq!(
            (fog.rows, fog.split.as_str(), fog.blackout, crash.blackout),
            (4, "test_fog", false, true)
        );
        let fig = |t: &RobustnessTable| {
            let s = |n: &str| (t.settings[n].accuracy.value, val(&t.settings[n].rr));
            let (f, c) = (s("fog"), s("camera_crash"));
            let mut v = vec![t.clean.value, val(&t.text_only), val(&t.visual_reliance)];
            v.extend([
                f.0,
                f.1,
                c.0,
                c.1,
                val(&t.mrr),
                val(&t.mrr_without_blackout),
            ]);
            v.push(t.chance);
            v
        };
        // clean, text-only, reliance, fog (acc, RR), crash (acc, RR), mRR, without, chance.
        let (two, one) = (0.5 / 0.75, 0.25 / 0.75);
        let want = [
            [0.75, 0.25, 0.5, 0.5, two, 0.25, one, 0.5, two, 0.3125],
            [1.0, 0.5, 0.5, 0.5, 0.5, 0.0, 0.0, 0.25, 0.5, 0.375],
            [0.5, 0.0, 0.5, 0.5, 1.0, 0.5, 1.0, 1.0, 1.0, 0.25],
        ];
        for (t, w) in [t, ta, tb].into_iter().zip(want) {
            fig(t).into_iter().zip(w).for_each(|(a, b)| close(a, b));
        }
    }

    #[test]
    fn intervals_are_deterministic_percentiles_around_the_value() {
        let (rel, c) = (release(), correct());
        let r = robustness(&rel, &c);
        assert_eq!(r, robustness(&rel, &c));
        let tables = r
            .values()
            .flat_map(|f| [&f.table].into_iter().chain(f.by_type.values()));
        for t in tables {
            let mut all = vec![&t.text_only, &t.visual_reliance, &t.mrr];
            all.push(&t.mrr_without_blackout);
            all.extend(t.settings.values().map(|s| &s.rr));
            let sure = t.settings.values().map(|s| &s.accuracy).chain([&t.clean]);
            for e in all.into_iter().flatten().chain(sure) {
                assert!(e.lo <= e.value && e.value <= e.hi, "{e:?}");
            }
        }
        let clean = &r["fam"].table.clean;
        assert!(clean.lo < clean.hi, "{clean:?}");
        let e = interval(0.5, (0..1000).map(f64::from).rev().collect());
        assert_eq!((e.lo, e.hi), (24.0, 975.0));
        let none = interval(0.5, Vec::new());
        assert_eq!((none.lo, none.hi), (0.5, 0.5));
    }

    #[test]
    fn undefined_figures_and_missing_splits() {
        let mut c = correct();
        c.insert("test".into(), vec![false; 6]);
        let r = robustness(&release(), &c);
        let t = &r["fam"].table;
        assert_eq!(t.clean.value, 0.0);
        assert!(t.settings.values().all(|s| s.rr.is_none()));
        assert!(t.mrr.is_none() && t.mrr_without_blackout.is_none());
        close(val(&t.visual_reliance), -0.25);

        let mut c = correct();
        c.remove("test_text_only");
        c.remove("test_camera_crash");
        let r = robustness(&release(), &c);
        let t = &r["fam"].table;
        assert!(t.text_only.is_none() && t.visual_reliance.is_none());
        assert_eq!(t.settings.keys().collect::<Vec<_>>(), ["fog"]);
        close(val(&t.mrr), val(&t.mrr_without_blackout));
        c.remove("test_fog");
        assert!(robustness(&release(), &c).is_empty());
    }

    #[test]
    fn json_and_reports() {
        let r = robustness(&release(), &correct());
        let v = serde_json::to_value(&r["fam"]).unwrap();
        let keys = "rows chance clean text_only visual_reliance mrr mrr_without_blackout settings";
        for k in keys.split(' ').chain(["by_type"]) {
            assert!(v.get(k).is_some(), "{k} missing in {v}");
        }
        assert!(v.get("table").is_none() && v["by_type"]["ta"].get("by_type").is_none());
        assert!(v["clean"]["lo"].is_number() && v["settings"]["fog"]["rr"]["hi"].is_number());

        let md = summary(&r);
        let fog = md.find("| fog |").unwrap();
        let crash = md.find("| camera_crash (blackout) |").unwrap();
        assert!(fog < crash && md.contains("- clean: 0.750 ["), "{md}");
        assert!(md.contains("- mRR: 0.500 ["), "{md}");
        let page = html("a<b", &r);
        assert!(page.starts_with("<!DOCTYPE html>") && page.trim_end().ends_with("</html>"));
        assert!(page.contains("<title>a&lt;b</title>"));
        assert_eq!(page.matches("<svg").count(), 2);
        assert_eq!(page.matches("</svg>").count(), 2);
        assert!(page.contains("stroke-dasharray"));
        // Standalone: nothing is loaded from elsewhere.
        assert!(!page.contains("src=") && !page.contains("href="));
    }
}
