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

use crate::build::svg::esc;
use crate::qa::record::SplitMix64;
use crate::release::read::{ReleaseQuestions, SplitSetting};

/// Correctness of each row, per split, aligned with `release.splits[split]` (an unanswered or
/// unparsable question is false).
pub type Correct = BTreeMap<String, Vec<bool>>;

/// Bootstrap resamples per table.
pub const RESAMPLES: usize = 1000;

/// Seed of the bootstrap generator. Every table restarts from it, so a table's intervals do not
/// depend on which other families or types were scored before it, and the same answers always
/// give the same intervals.
pub const BOOTSTRAP_SEED: u64 = 0x6472_6976_6567_656e; // "drivegen"

/// A figure with its 95 % bootstrap interval.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Estimate {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
}

/// One corruption setting of a table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SettingScore {
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
pub struct RobustnessTable {
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
pub struct FamilyRobustness {
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
}

/// A setting's answers to one base row (normally one row, but duplicates are all counted).
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    right: u32,
    n: u32,
}

/// The rows one table is computed from: bases sorted by id, and per present setting the tallies
/// aligned with them.
struct Rows<'a> {
    bases: Vec<&'a Base>,
    settings: Vec<(&'a SplitSetting, Vec<Tally>)>,
    has_text: bool,
}

/// All figures of one (re)sample; None where a figure is undefined.
struct Figures {
    clean: Option<f64>,
    text: Option<f64>,
    visual: Option<f64>,
    settings: Vec<(Option<f64>, Option<f64>)>,
    mrr: Option<f64>,
    mrr_without_blackout: Option<f64>,
}

/// Robustness figures per family that appears in a robustness split with answers in `correct`.
pub fn robustness(
    release: &ReleaseQuestions,
    correct: &Correct,
) -> BTreeMap<String, FamilyRobustness> {
    let answered = |split: &str, i: usize| {
        correct
            .get(split)
            .and_then(|c| c.get(i))
            .copied()
            .unwrap_or(false)
    };
    // family -> base id -> base; family -> setting index -> base id -> tally.
    let mut bases: BTreeMap<String, BTreeMap<String, Base>> = BTreeMap::new();
    let mut tallies: BTreeMap<String, BTreeMap<usize, BTreeMap<String, Tally>>> = BTreeMap::new();
    for (k, s) in release.settings.iter().enumerate() {
        if !correct.contains_key(&s.split)
            || s.split == release.main
            || release.text_only.as_deref() == Some(s.split.as_str())
        {
            continue;
        }
        let Some(rows) = release.splits.get(&s.split) else {
            continue;
        };
        let tags = release.tags.get(&s.split);
        for (i, r) in rows.iter().enumerate() {
            // A row without a recorded base repeats itself, as releases before the column did.
            let base_id = tags
                .and_then(|t| t.get(i))
                .map(|t| t.base_qa_id.as_str())
                .filter(|b| !b.is_empty())
                .unwrap_or(&r.qa_id);
            let b = bases
                .entry(r.family.clone())
                .or_default()
                .entry(base_id.to_string())
                .or_default();
            if b.question_type.is_empty() {
                b.question_type.clone_from(&r.question_type);
            }
            if b.chance.is_none() {
                b.chance = chance_of(r.choices.len());
            }
            let t = tallies
                .entry(r.family.clone())
                .or_default()
                .entry(k)
                .or_default()
                .entry(base_id.to_string())
                .or_default();
            t.n += 1;
            t.right += u32::from(answered(&s.split, i));
        }
    }
    // The main split's copy of a base row is the reference for its type and choices.
    if let Some(rows) = release.splits.get(&release.main) {
        for (i, r) in rows.iter().enumerate() {
            if let Some(b) = bases.get_mut(&r.family).and_then(|f| f.get_mut(&r.qa_id)) {
                b.clean = Some(answered(&release.main, i));
                b.question_type.clone_from(&r.question_type);
                b.chance = chance_of(r.choices.len());
            }
        }
    }
    let text_split = release
        .text_only
        .as_deref()
        .filter(|t| correct.contains_key(*t));
    if let Some((t, rows)) = text_split.and_then(|t| release.splits.get(t).map(|r| (t, r))) {
        for (i, r) in rows.iter().enumerate() {
            if let Some(b) = bases.get_mut(&r.family).and_then(|f| f.get_mut(&r.qa_id)) {
                b.text = Some(answered(t, i));
            }
        }
    }

    let mut out = BTreeMap::new();
    for (family, fb) in &bases {
        let Some(ft) = tallies.get(family) else {
            continue;
        };
        let rows_where = |keep: &dyn Fn(&Base) -> bool| {
            let ids: Vec<&String> = fb
                .keys()
                .filter(|id| fb.get(*id).is_some_and(keep))
                .collect();
            let settings = ft
                .iter()
                .filter_map(|(k, by_base)| {
                    let tally: Vec<Tally> = ids
                        .iter()
                        .map(|id| by_base.get(*id).copied().unwrap_or_default())
                        .collect();
                    let s = release.settings.get(*k)?;
                    tally.iter().any(|t| t.n > 0).then_some((s, tally))
                })
                .collect();
            Rows {
                bases: ids.iter().filter_map(|id| fb.get(*id)).collect(),
                settings,
                has_text: text_split.is_some(),
            }
        };
        let whole = table(&rows_where(&|_| true));
        let types: BTreeSet<&str> = fb.values().map(|b| b.question_type.as_str()).collect();
        let by_type = types
            .into_iter()
            .map(|ty| {
                let t = table(&rows_where(&|b| b.question_type == ty));
                (ty.to_string(), t)
            })
            .collect();
        out.insert(
            family.clone(),
            FamilyRobustness {
                table: whole,
                by_type,
            },
        );
    }
    out
}

fn chance_of(choices: usize) -> Option<f64> {
    (choices > 0).then(|| 1.0 / choices as f64)
}

/// Figures of one sample, each base row counted `w[i]` times.
fn figures(rows: &Rows<'_>, w: &[u32]) -> Figures {
    let mean = |pick: &dyn Fn(&Base) -> Option<bool>| {
        let (mut right, mut n) = (0u64, 0u64);
        for (b, &k) in rows.bases.iter().zip(w) {
            if let Some(c) = pick(b) {
                n += u64::from(k);
                right += u64::from(k) * u64::from(c);
            }
        }
        (n > 0).then(|| right as f64 / n as f64)
    };
    let clean = mean(&|b| b.clean);
    let text = if rows.has_text {
        mean(&|b| b.text)
    } else {
        None
    };
    let settings: Vec<(Option<f64>, Option<f64>)> = rows
        .settings
        .iter()
        .map(|(_, tally)| {
            let (mut right, mut n) = (0u64, 0u64);
            for (t, &k) in tally.iter().zip(w) {
                right += u64::from(k) * u64::from(t.right);
                n += u64::from(k) * u64::from(t.n);
            }
            let acc = (n > 0).then(|| right as f64 / n as f64);
            let rr = match (acc, clean) {
                (Some(a), Some(c)) if c > 0.0 => Some(a / c),
                _ => None,
            };
            (acc, rr)
        })
        .collect();
    let mrr_over = |keep: &dyn Fn(&SplitSetting) -> bool| {
        let rrs: Vec<f64> = rows
            .settings
            .iter()
            .zip(&settings)
            .filter(|((s, _), _)| keep(s))
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
    let mut draws = Vec::with_capacity(RESAMPLES);
    if n > 0 {
        for _ in 0..RESAMPLES {
            let mut w = vec![0u32; n];
            for _ in 0..n {
                if let Some(k) = w.get_mut(rng.below(n as u64) as usize) {
                    *k += 1;
                }
            }
            draws.push(figures(rows, &w));
        }
    }
    let est = |pick: &dyn Fn(&Figures) -> Option<f64>| {
        pick(&point).map(|v| interval(v, draws.iter().filter_map(pick).collect()))
    };
    let settings = rows
        .settings
        .iter()
        .enumerate()
        .map(|(j, (s, tally))| {
            let acc = |f: &Figures| f.settings.get(j).and_then(|x| x.0);
            let rr = |f: &Figures| f.settings.get(j).and_then(|x| x.1);
            let score = SettingScore {
                split: s.split.clone(),
                corruption: s.corruption.clone(),
                severity: s.severity,
                blackout: s.blackout,
                rows: tally.iter().map(|t| t.n as usize).sum(),
                accuracy: est(&acc).unwrap_or_default(),
                rr: est(&rr),
            };
            (s.setting.clone(), score)
        })
        .collect();
    let chances: Vec<f64> = rows.bases.iter().filter_map(|b| b.chance).collect();
    RobustnessTable {
        rows: n,
        chance: if chances.is_empty() {
            0.0
        } else {
            chances.iter().sum::<f64>() / chances.len() as f64
        },
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
    v.sort_by(|a, b| {
        (a.1.blackout, &a.1.corruption, a.1.severity, a.0).cmp(&(
            b.1.blackout,
            &b.1.corruption,
            b.1.severity,
            b.0,
        ))
    });
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

/// A markdown report: per family, a table of its settings and lines for the headline figures.
pub fn summary(r: &BTreeMap<String, FamilyRobustness>) -> String {
    let mut s = String::new();
    for (family, f) in r {
        let t = &f.table;
        let _ = writeln!(s, "### {family} ({} re-asked rows)\n", t.rows);
        s.push_str("| setting | severity | rows | accuracy [95% CI] | RR [95% CI] |\n");
        s.push_str("|---|---:|---:|---|---|\n");
        for (name, st) in ordered(t) {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                label(name, st),
                st.severity,
                st.rows,
                fmt_est(&st.accuracy),
                fmt_opt(st.rr.as_ref()),
            );
        }
        let _ = writeln!(s, "\n- clean: {}", fmt_est(&t.clean));
        let _ = writeln!(s, "- text-only: {}", fmt_opt(t.text_only.as_ref()));
        let _ = writeln!(
            s,
            "- visual reliance: {}",
            fmt_opt(t.visual_reliance.as_ref())
        );
        let _ = writeln!(s, "- mRR: {}", fmt_opt(t.mrr.as_ref()));
        let _ = writeln!(
            s,
            "- mRR without Camera Crash/Frame Lost: {}",
            fmt_opt(t.mrr_without_blackout.as_ref())
        );
        let _ = writeln!(s, "- chance: {:.3}\n", t.chance);
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
        let colour = if st.blackout {
            BLACKOUT_COLOUR
        } else {
            SETTING_COLOUR
        };
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
    let y = |v: f64| top + plot_h * (1.0 - v.clamp(0.0, 1.0));
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11"><text x="{left}" y="16" font-size="13" font-weight="bold">{}</text>"#,
        esc(family)
    );
    for k in 0..=5 {
        let v = f64::from(k) / 5.0;
        let _ = write!(
            s,
            r##"<line x1="{left}" y1="{yy:.1}" x2="{x2:.1}" y2="{yy:.1}" stroke="#e4e4e4"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{v:.1}</text>"##,
            yy = y(v),
            x2 = width - 12.0,
            tx = left - 4.0,
            ty = y(v) + 4.0,
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{left}" y1="{top}" x2="{left}" y2="{y0}" stroke="#444"/><line x1="{left}" y1="{y0}" x2="{x2:.1}" y2="{y0}" stroke="#444"/>"##,
        y0 = top + plot_h,
        x2 = width - 12.0,
    );
    for (i, (name, e, colour)) in bars.iter().enumerate() {
        let x = left + gap / 2.0 + (bar_w + gap) * i as f64;
        let cx = x + bar_w / 2.0;
        let _ = write!(
            s,
            r##"<rect x="{x:.1}" y="{yv:.1}" width="{bar_w}" height="{h:.1}" fill="{colour}"><title>{}: {}</title></rect><line x1="{cx:.1}" y1="{ylo:.1}" x2="{cx:.1}" y2="{yhi:.1}" stroke="#222"/><line x1="{c0:.1}" y1="{ylo:.1}" x2="{c1:.1}" y2="{ylo:.1}" stroke="#222"/><line x1="{c0:.1}" y1="{yhi:.1}" x2="{c1:.1}" y2="{yhi:.1}" stroke="#222"/><text transform="translate({lx:.1},{ly:.1}) rotate(45)">{}</text>"##,
            esc(name),
            esc(&fmt_est(e)),
            esc(name),
            yv = y(e.value),
            h = plot_h * e.value.clamp(0.0, 1.0),
            ylo = y(e.lo),
            yhi = y(e.hi),
            c0 = cx - 4.0,
            c1 = cx + 4.0,
            lx = x + 4.0,
            ly = top + plot_h + 12.0,
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{left}" y1="{yc:.1}" x2="{x2:.1}" y2="{yc:.1}" stroke="#c0392b" stroke-dasharray="5,4"/><text x="{tx:.1}" y="{ty:.1}" text-anchor="end" fill="#c0392b">chance {:.2}</text></svg>"##,
        t.chance,
        yc = y(t.chance),
        x2 = width - 12.0,
        tx = width - 12.0,
        ty = y(t.chance) - 3.0,
    );
    s
}

/// A standalone HTML page (no external resources): per family, its chart and headline figures.
pub fn html(title: &str, r: &BTreeMap<String, FamilyRobustness>) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{t}</title>\n<style>body{{font-family:sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse;margin:.5em 0 2em}}td,th{{border:1px solid #ccc;padding:2px 8px;text-align:left}}</style>\n</head>\n<body>\n<h1>{t}</h1>\n<p>Accuracy per setting over the re-asked rows, with 95&nbsp;% paired bootstrap intervals; grey bars black views out; the dashed line is chance.</p>\n",
        t = esc(title)
    );
    for (family, f) in r {
        let t = &f.table;
        let _ = writeln!(
            s,
            "<h2>{} ({} re-asked rows)</h2>\n{}",
            esc(family),
            t.rows,
            chart(family, t)
        );
        s.push_str("<table>\n");
        let lines = [
            ("clean", fmt_est(&t.clean)),
            ("text-only", fmt_opt(t.text_only.as_ref())),
            ("visual reliance", fmt_opt(t.visual_reliance.as_ref())),
            ("mRR", fmt_opt(t.mrr.as_ref())),
            (
                "mRR without Camera Crash/Frame Lost",
                fmt_opt(t.mrr_without_blackout.as_ref()),
            ),
            ("chance", format!("{:.3}", t.chance)),
        ];
        for (k, v) in lines {
            let _ = writeln!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
        }
        s.push_str("</table>\n");
    }
    s.push_str("</body>\n</html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qa::QaRecord;
    use crate::release::read::RowSetting;

    fn rec(id: &str, family: &str, ty: &str, choices: usize) -> QaRecord {
        QaRecord {
            qa_id: id.into(),
            family: family.into(),
            question_type: ty.into(),
            choices: (0..choices).map(|k| format!("option {k}")).collect(),
            ..Default::default()
        }
    }

    fn setting(split: &str, name: &str, corruption: &str, blackout: bool) -> SplitSetting {
        SplitSetting {
            split: split.into(),
            setting: name.into(),
            corruption: corruption.into(),
            severity: 3,
            blackout,
        }
    }

    /// Base rows q1..q4 of `fam` (q1, q2 of type `ta`, q3, q4 of `tb`; q1 has 2 choices, the
    /// others 4), q5 of `other` never re-asked, q6 of `fam2`. Fog and Camera Crash re-ask
    /// q1..q4 and q6, in a different order than the main split.
    fn release() -> ReleaseQuestions {
        let main = vec![
            rec("q1", "fam", "ta", 2),
            rec("q2", "fam", "ta", 4),
            rec("q3", "fam", "tb", 4),
            rec("q4", "fam", "tb", 4),
            rec("q5", "other", "tc", 3),
            rec("q6", "fam2", "td", 2),
        ];
        let mut splits = BTreeMap::new();
        let mut tags = BTreeMap::new();
        splits.insert("test".to_string(), main.clone());
        splits.insert("test_text_only".to_string(), main.clone());
        for (split, name) in [
            ("test_fog", "fog"),
            ("test_camera_crash", "camera_crash"),
            ("test_snow", "snow"),
        ] {
            let order = ["q3", "q1", "q4", "q2", "q6"];
            let rows: Vec<QaRecord> = order
                .iter()
                .filter_map(|b| main.iter().find(|r| r.qa_id == *b))
                .map(|r| QaRecord {
                    qa_id: format!("{}_{name}", r.qa_id),
                    ..r.clone()
                })
                .collect();
            let t = order
                .iter()
                .map(|b| RowSetting {
                    setting: name.into(),
                    base_qa_id: b.to_string(),
                })
                .collect();
            splits.insert(split.to_string(), rows);
            tags.insert(split.to_string(), t);
        }
        ReleaseQuestions {
            main: "test".into(),
            splits,
            tags,
            settings: vec![
                setting("test_fog", "fog", "fog", false),
                setting("test_camera_crash", "camera_crash", "camera_crash", true),
                setting("test_snow", "snow", "snow", false),
            ],
            text_only: Some("test_text_only".into()),
        }
    }

    /// Snow has no answers. Correct by base: main q1..q4 = T T T F; text-only T F F F;
    /// fog T F T F; camera crash F F F T. Setting rows are listed q3 q1 q4 q2 q6.
    fn correct() -> Correct {
        let mut c = Correct::new();
        c.insert("test".into(), vec![true, true, true, false, true, true]);
        c.insert(
            "test_text_only".into(),
            vec![true, false, false, false, false, false],
        );
        c.insert("test_fog".into(), vec![true, true, false, false, true]);
        c.insert(
            "test_camera_crash".into(),
            vec![false, false, true, false, false],
        );
        c
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    fn contains(e: &Estimate) {
        assert!(e.lo <= e.value && e.value <= e.hi, "{e:?}");
    }

    #[test]
    fn hand_computed_figures() {
        let r = robustness(&release(), &correct());
        assert_eq!(r.keys().collect::<Vec<_>>(), ["fam", "fam2"]);
        let f = &r["fam"];
        let t = &f.table;
        assert_eq!(t.rows, 4);
        close(t.clean.value, 0.75);
        close(t.text_only.as_ref().unwrap().value, 0.25);
        close(t.visual_reliance.as_ref().unwrap().value, 0.5);
        close(t.chance, (0.5 + 0.25 * 3.0) / 4.0);
        assert_eq!(
            t.settings.keys().collect::<Vec<_>>(),
            ["camera_crash", "fog"]
        );
        let fog = &t.settings["fog"];
        let crash = &t.settings["camera_crash"];
        assert_eq!(
            (fog.rows, fog.split.as_str(), fog.blackout),
            (4, "test_fog", false)
        );
        assert!(crash.blackout);
        close(fog.accuracy.value, 0.5);
        close(crash.accuracy.value, 0.25);
        close(fog.rr.as_ref().unwrap().value, 0.5 / 0.75);
        close(crash.rr.as_ref().unwrap().value, 0.25 / 0.75);
        close(t.mrr.as_ref().unwrap().value, 0.5);
        close(t.mrr_without_blackout.as_ref().unwrap().value, 0.5 / 0.75);

        let ta = &f.by_type["ta"];
        assert_eq!(ta.rows, 2);
        close(ta.clean.value, 1.0);
        close(ta.settings["fog"].accuracy.value, 0.5);
        close(ta.settings["camera_crash"].accuracy.value, 0.0);
        close(ta.settings["camera_crash"].rr.as_ref().unwrap().value, 0.0);
        close(ta.mrr.as_ref().unwrap().value, 0.25);
        close(ta.mrr_without_blackout.as_ref().unwrap().value, 0.5);
        close(ta.visual_reliance.as_ref().unwrap().value, 0.5);
        close(ta.chance, 0.375);
        let tb = &f.by_type["tb"];
        close(tb.clean.value, 0.5);
        close(tb.mrr.as_ref().unwrap().value, 1.0);
        close(tb.text_only.as_ref().unwrap().value, 0.0);
        close(tb.chance, 0.25);
        assert_eq!(f.by_type.keys().collect::<Vec<_>>(), ["ta", "tb"]);
    }

    #[test]
    fn intervals_contain_the_value_and_are_deterministic() {
        let (rel, c) = (release(), correct());
        let a = robustness(&rel, &c);
        assert_eq!(a, robustness(&rel, &c));
        let tables = a
            .values()
            .flat_map(|f| std::iter::once(&f.table).chain(f.by_type.values()));
        for t in tables {
            contains(&t.clean);
            let opts = [
                &t.text_only,
                &t.visual_reliance,
                &t.mrr,
                &t.mrr_without_blackout,
            ];
            opts.into_iter().flatten().for_each(contains);
            for s in t.settings.values() {
                contains(&s.accuracy);
                s.rr.iter().for_each(contains);
            }
        }
        // Four rows leave room for the resamples to vary.
        let t = &a["fam"].table;
        assert!(t.clean.lo < t.clean.hi, "{:?}", t.clean);
    }

    #[test]
    fn percentile_rule() {
        let e = interval(0.5, (0..1000).map(f64::from).rev().collect());
        assert_eq!((e.lo, e.hi), (24.0, 975.0));
        let one = interval(0.5, vec![0.25]);
        assert_eq!((one.lo, one.hi), (0.25, 0.25));
        let none = interval(0.5, Vec::new());
        assert_eq!((none.lo, none.hi), (0.5, 0.5));
    }

    #[test]
    fn zero_clean_accuracy_leaves_ratios_undefined() {
        let mut c = correct();
        c.insert("test".into(), vec![false; 6]);
        let r = robustness(&release(), &c);
        let t = &r["fam"].table;
        assert_eq!(t.clean.value, 0.0);
        assert!(t.settings.values().all(|s| s.rr.is_none()));
        assert!(t.mrr.is_none() && t.mrr_without_blackout.is_none());
        close(t.visual_reliance.as_ref().unwrap().value, -0.25);
    }

    #[test]
    fn missing_splits_are_skipped() {
        let mut c = correct();
        c.remove("test_text_only");
        c.remove("test_camera_crash");
        let r = robustness(&release(), &c);
        let t = &r["fam"].table;
        assert!(t.text_only.is_none() && t.visual_reliance.is_none());
        assert_eq!(t.settings.keys().collect::<Vec<_>>(), ["fog"]);
        assert!(t.mrr_without_blackout.is_some());
        c.remove("test_fog");
        assert!(robustness(&release(), &c).is_empty());
    }

    #[test]
    fn json_keys_are_flat() {
        let r = robustness(&release(), &correct());
        let v = serde_json::to_value(&r["fam"]).unwrap();
        for k in [
            "rows",
            "chance",
            "clean",
            "text_only",
            "visual_reliance",
            "mrr",
            "mrr_without_blackout",
            "settings",
            "by_type",
        ] {
            assert!(v.get(k).is_some(), "{k} missing in {v}");
        }
        assert!(v.get("table").is_none());
        assert!(v["clean"]["lo"].is_number());
        assert!(v["settings"]["fog"]["rr"]["value"].is_number());
        assert_eq!(v["settings"]["fog"]["blackout"], false);
        assert!(v["by_type"]["ta"].get("by_type").is_none());
    }

    #[test]
    fn reports() {
        let r = robustness(&release(), &correct());
        let md = summary(&r);
        let fog = md.find("| fog |").unwrap();
        let crash = md.find("| camera_crash (blackout) |").unwrap();
        assert!(fog < crash, "{md}");
        assert!(md.contains("- clean: 0.750 ["), "{md}");
        assert!(md.contains("- mRR: 0.500 ["), "{md}");
        let page = html("a<b", &r);
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.trim_end().ends_with("</html>"));
        assert!(page.contains("<title>a&lt;b</title>"));
        assert_eq!(page.matches("<svg").count(), 2);
        assert_eq!(page.matches("</svg>").count(), 2);
        assert!(page.contains("stroke-dasharray"));
        // Standalone: nothing is loaded from elsewhere.
        assert!(!page.contains("src=") && !page.contains("href="));
    }
}
