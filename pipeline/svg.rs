//! Tiny SVG charts for the build report and the robustness scores: grouped vertical bars and
//! horizontal bars, and the escaping both use. Plain text, no dependency, and the same data
//! always gives the same markup.

use std::fmt::Write as _;

/// Escapes text for SVG/HTML.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One series of a grouped bar chart.
pub(crate) struct Series<'a> {
    pub name: &'a str,
    pub colour: &'a str,
    pub values: Vec<f64>,
}

/// Grouped vertical bars: one group per category, one bar per series.
pub(crate) fn grouped_bars(title: &str, categories: &[String], series: &[Series<'_>]) -> String {
    let (group_w, bar_gap, left, top, plot_h, bottom) = (64.0, 4.0, 48.0, 28.0, 160.0, 70.0);
    let n = series.len().max(1) as f64;
    let width = left + group_w * categories.len().max(1) as f64 + 16.0;
    let height = top + plot_h + bottom;
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(
        s,
        r#"<text x="{left}" y="16" font-size="13" font-weight="bold">{}</text>"#,
        esc(title)
    );
    // Axis and the max tick.
    let _ = write!(
        s,
        r##"<line x1="{left}" y1="{top}" x2="{left}" y2="{y0}" stroke="#444"/><line x1="{left}" y1="{y0}" x2="{x1:.0}" y2="{y0}" stroke="#444"/><text x="{tx}" y="{ty}" text-anchor="end">{max}</text><text x="{tx}" y="{y0}" text-anchor="end">0</text>"##,
        y0 = top + plot_h,
        x1 = width - 8.0,
        tx = left - 4.0,
        ty = top + 4.0,
        max = fmt_num(max),
    );
    let bar_w = (group_w - 2.0 * bar_gap) / n;
    for (i, c) in categories.iter().enumerate() {
        let gx = left + group_w * i as f64 + bar_gap;
        for (j, se) in series.iter().enumerate() {
            let v = se.values.get(i).copied().unwrap_or(0.0);
            let h = plot_h * v / max;
            let _ = write!(
                s,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{}"><title>{}: {}</title></rect>"#,
                se.colour,
                esc(se.name),
                fmt_num(v),
                x = gx + bar_w * j as f64,
                y = top + plot_h - h,
                w = bar_w - 1.0,
            );
        }
        let _ = write!(
            s,
            r#"<text transform="translate({x:.1},{y:.1}) rotate(35)">{}</text>"#,
            esc(&shorten(c, 18)),
            x = gx + 4.0,
            y = top + plot_h + 12.0,
        );
    }
    for (j, se) in series.iter().enumerate() {
        let x = left + 110.0 * j as f64 + 120.0;
        let _ = write!(
            s,
            r#"<rect x="{x}" y="6" width="10" height="10" fill="{}"/><text x="{}" y="15">{}</text>"#,
            se.colour,
            x + 14.0,
            esc(se.name)
        );
    }
    s.push_str("</svg>");
    s
}

/// Horizontal bars, one per labelled value.
pub(crate) fn hbars(title: &str, items: &[(String, f64)], unit: &str) -> String {
    let (left, row_h, top, plot_w) = (150.0, 18.0, 26.0, 360.0);
    let height = top + row_h * items.len() as f64 + 8.0;
    let max = items.iter().map(|i| i.1).fold(0.0_f64, f64::max).max(1e-9);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{height:.0}" font-family="sans-serif" font-size="11"><text x="4" y="16" font-size="13" font-weight="bold">{}</text>"#,
        esc(title),
        w = left + plot_w + 90.0,
    );
    for (i, (label, v)) in items.iter().enumerate() {
        let y = top + row_h * i as f64;
        let w = plot_w * v / max;
        let _ = write!(
            s,
            r##"<text x="{lx}" y="{ty:.1}" text-anchor="end">{}</text><rect x="{left}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="#4a7ebb"/><text x="{vx:.1}" y="{ty:.1}">{} {}</text>"##,
            esc(&shorten(label, 24)),
            fmt_num(*v),
            esc(unit),
            lx = left - 6.0,
            ty = y + row_h * 0.7,
            h = row_h - 4.0,
            vx = left + w + 4.0,
        );
    }
    s.push_str("</svg>");
    s
}

fn fmt_num(v: f64) -> String {
    if v >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).collect::<String>() + "…"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_largest_value_and_escape_labels() {
        let svg = grouped_bars(
            "a<b",
            &["x".into(), "y".into()],
            &[Series {
                name: "before",
                colour: "#888",
                values: vec![2.0, 4.0],
            }],
        );
        assert!(svg.contains("a&lt;b"));
        // The larger bar fills the 160 px plot; the smaller one half of it.
        assert!(svg.contains(r#"height="160.0""#), "{svg}");
        assert!(svg.contains(r#"height="80.0""#), "{svg}");
        let h = hbars("t", &[("s".into(), 1.5)], "s");
        assert!(h.contains("1.50 s"), "{h}");
    }
}
