//! The console's charts as inline SVG, drawn on the server: no script, no build step. Each chart
//! has a `viewBox` and scales to its container's width, so it fits a 400 px phone and a desktop
//! alike; every figure is also in a table or a `<title>` beside it for screen readers.

use super::esc;
use std::fmt::Write;

/// Colours of the series, in order (modes beyond them reuse them).
const PALETTE: [&str; 8] = [
    "#2f6fdf", "#e07b24", "#2aa876", "#c43d5b", "#7a5bd1", "#8c8c2a", "#1f9bb4", "#a0522d",
];

pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

const W: f64 = 600.0;
const H: f64 = 220.0;
const LEFT: f64 = 48.0;
const BOTTOM: f64 = 24.0;
const TOP: f64 = 10.0;

/// Stacked columns: one per label (a day), one segment per series (a mode), values in dollars.
/// `series` are the series' names, in colour order; `columns[i].1[j]` is series j on label i.
pub fn stacked_columns(title: &str, series: &[String], columns: &[(String, Vec<f64>)]) -> String {
    let max = columns
        .iter()
        .map(|(_, v)| v.iter().sum::<f64>())
        .fold(0.0_f64, f64::max);
    let scale_max = nice_ceiling(max);
    let plot_h = H - BOTTOM - TOP;
    let plot_w = W - LEFT - 8.0;
    let step = plot_w / columns.len().max(1) as f64;
    let bar_w = (step * 0.7).max(1.0);
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{}" preserveAspectRatio="xMidYMid meet"><title>{}</title>"#,
        esc(title),
        esc(title)
    );
    // Gridlines at 0, half and the top of the scale, labelled in dollars.
    for frac in [0.0, 0.5, 1.0] {
        let y = TOP + plot_h * (1.0 - frac);
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" x2="{W}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end" fill="#555">${:.2}</text>"##,
            LEFT - 4.0,
            y + 4.0,
            scale_max * frac
        );
    }
    for (i, (label, values)) in columns.iter().enumerate() {
        let x = LEFT + step * i as f64 + (step - bar_w) / 2.0;
        let mut y = TOP + plot_h;
        for (j, v) in values.iter().enumerate() {
            if *v <= 0.0 || scale_max <= 0.0 {
                continue;
            }
            let h = plot_h * v / scale_max;
            y -= h;
            let name = series.get(j).map(String::as_str).unwrap_or("");
            let _ = write!(
                out,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{bar_w:.1}" height="{h:.1}" fill="{}"><title>{} {}: ${v:.2}</title></rect>"#,
                colour(j),
                esc(label),
                esc(name)
            );
        }
        // Every fifth label, and the last, so that 30 days stay readable on a phone.
        if i % 5 == 0 || i + 1 == columns.len() {
            let _ = write!(
                out,
                r##"<text x="{:.1}" y="{}" font-size="11" text-anchor="middle" fill="#555">{}</text>"##,
                x + bar_w / 2.0,
                H - 6.0,
                esc(label.get(5..).unwrap_or(label))
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// Horizontal bars with their counts: calls by outcome.
pub fn bars(title: &str, items: &[(String, u64)]) -> String {
    let max = items.iter().map(|(_, n)| *n).max().unwrap_or(0).max(1) as f64;
    let row = 26.0;
    let h = (row * items.len().max(1) as f64) + 6.0;
    let label_w = 110.0;
    let plot_w = W - label_w - 60.0;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="chart" viewBox="0 0 {W} {h}" role="img" aria-label="{}"><title>{}</title>"#,
        esc(title),
        esc(title)
    );
    for (i, (label, n)) in items.iter().enumerate() {
        let y = 4.0 + row * i as f64;
        let w = (plot_w * *n as f64 / max).max(if *n > 0 { 2.0 } else { 0.0 });
        let _ = write!(
            out,
            r##"<text x="{}" y="{:.1}" font-size="13" text-anchor="end" fill="#333">{}</text><rect x="{label_w}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="{}"/><text x="{:.1}" y="{:.1}" font-size="13" fill="#333">{n}</text>"##,
            label_w - 6.0,
            y + 15.0,
            esc(label),
            row - 8.0,
            colour(i),
            label_w + w + 6.0,
            y + 15.0
        );
    }
    out.push_str("</svg>");
    out
}

/// The smallest of 1, 2, 5 × 10ⁿ at or above `v` (a scale's top that reads well); 1 for 0.
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|c| *c >= v - 1e-9)
        .unwrap_or(10.0 * mag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_end_on_round_numbers() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(0.36), 0.5);
        assert_eq!(nice_ceiling(1.0), 1.0);
        assert_eq!(nice_ceiling(13.0), 20.0);
        assert_eq!(nice_ceiling(51.0), 100.0);
    }

    #[test]
    fn charts_escape_their_labels_and_draw_one_bar_per_value() {
        let svg = bars("Calls", &[("<b>".into(), 3), ("failed".into(), 0)]);
        assert!(svg.contains("&lt;b&gt;") && !svg.contains("<b>"));
        assert_eq!(svg.matches("<rect").count(), 2);
        let svg = stacked_columns(
            "Revenue",
            &["a".into(), "b".into()],
            &[
                ("2026-11-26".into(), vec![0.18, 0.25]),
                ("2026-11-27".into(), vec![0.0, 0.45]),
            ],
        );
        // Zero segments are not drawn.
        assert_eq!(svg.matches("<rect").count(), 3);
        assert!(svg.contains("viewBox"));
    }
}
