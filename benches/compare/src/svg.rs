//! A small SVG writer for the suite's charts: grouped vertical bars, one colour per series (the
//! caller's, so a contender keeps its colour from chart to chart), a legend, a y axis on a
//! linear or a log scale, each bar labelled with its value and each missing bar marked `n/a`.
//! Text only, no dependency: the charts are files a Markdown page shows with `![...](...)`.

use std::fmt::Write;

/// One group of bars (a workload, a percentile): a value per series, `None` where the series
/// has none.
pub struct Group {
    pub label: String,
    pub values: Vec<Option<f64>>,
}

/// One series: its legend entry and the fill of its bars.
pub struct Series<'a> {
    pub label: &'a str,
    pub colour: &'a str,
}

pub struct Chart<'a> {
    pub title: &'a str,
    /// In the order of each group's values.
    pub series: &'a [Series<'a>],
    pub groups: &'a [Group],
    /// A log scale (for values that span decades).
    pub log: bool,
    pub unit: &'a str,
    /// What a missing bar means, printed under the legend when a group lacks one.
    pub missing: &'a str,
}

/// Colours that stay apart in print and for common colour blindness (Okabe and Ito's set).
pub const PALETTE: [&str; 8] = [
    "#999999", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A number with at most `decimals` decimals and no trailing zeros ("20", "2.5").
fn trimmed(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// A value as a bar's label or a tick's: about three significant figures, with k and M past a
/// thousand and a million, so that one chart never mixes "10000" with "100k".
fn short(value: f64) -> String {
    let magnitude = value.abs();
    let (scaled, suffix) = if magnitude >= 999_500.0 {
        (value / 1e6, "M")
    } else if magnitude >= 999.5 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    let decimals = match scaled.abs() {
        m if m >= 99.95 => 0,
        m if m >= 9.995 => 1,
        _ => 2,
    };
    format!("{}{suffix}", trimmed(scaled, decimals))
}

/// Linear-scale ticks: about five, at 1, 2 or 5 times a power of ten.
fn linear_ticks(max: f64) -> Vec<f64> {
    let raw = (max / 5.0).max(f64::MIN_POSITIVE);
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * power);
    (0..)
        .map(|i| i as f64 * step)
        .take_while(|t| *t <= max * 1.0001 + step)
        .collect()
}

/// The width of `text` at the 11 px sans-serif the charts use, roughly (for layout only).
fn text_width(text: &str) -> f64 {
    text.chars().count() as f64 * 6.4
}

pub fn bars(chart: &Chart<'_>) -> String {
    let values = || chart.groups.iter().flat_map(|g| g.values.iter().flatten());
    let max = values().fold(0f64, |m, &v| m.max(v)).max(1e-9);
    let min_positive = values()
        .filter(|v| **v > 0.0)
        .fold(f64::MAX, |m, &v| m.min(v));
    // The scale: value -> 0..1 of the plot's height.
    let (lo, hi) = if chart.log {
        let lo = 10f64.powf(min_positive.min(max).log10().floor());
        let hi = 10f64.powf(max.log10().ceil().max(lo.log10() + 1.0));
        (lo, hi)
    } else {
        let ticks = linear_ticks(max);
        (0.0, ticks.last().copied().unwrap_or(max))
    };
    let scale = |v: f64| -> f64 {
        if chart.log {
            if v <= 0.0 {
                0.0
            } else {
                ((v.log10() - lo.log10()) / (hi.log10() - lo.log10())).clamp(0.0, 1.0)
            }
        } else {
            (v / hi).clamp(0.0, 1.0)
        }
    };
    let ticks: Vec<f64> = if chart.log {
        let mut t = Vec::new();
        let mut v = lo;
        while v <= hi * 1.0001 {
            t.push(v);
            v *= 10.0;
        }
        t
    } else {
        linear_ticks(max)
    };

    let series = chart.series.len().max(1);
    let groups = chart.groups.len().max(1);
    // A label above a bar as tall as the plot stays below the title.
    let (left, right, top) = (70.0, 20.0, 76.0);
    let plot_h = 300.0;
    // The legend: as many columns as fit beside each other, each as wide as its widest label.
    let legend_column = chart
        .series
        .iter()
        .map(|s| text_width(s.label) + 34.0)
        .fold(150.0, f64::max);
    let min_plot_w = (text_width(chart.title) * 14.0 / 11.0).max(3.0 * legend_column);
    // Groups wide enough for their bars and for their label, then widened (bars too, up to
    // 28 px) until the plot is as wide as the title and the legend.
    let gap = 28.0;
    let widest_label = chart
        .groups
        .iter()
        .map(|g| text_width(&g.label))
        .fold(0.0, f64::max);
    let mut group_width = (18.0 * series as f64 + gap).max(widest_label + 12.0);
    if group_width * (groups as f64) < min_plot_w {
        group_width = min_plot_w / groups as f64;
    }
    let bar = ((group_width - gap) / series as f64).clamp(12.0, 28.0);
    let plot_w = group_width * groups as f64;
    let width = left + plot_w + right;
    let legend_columns = (((width - left) / legend_column).floor() as usize).clamp(1, series);
    let legend_rows = series.div_ceil(legend_columns);
    let missing_any = chart
        .groups
        .iter()
        .any(|g| g.values.len() < chart.series.len() || g.values.iter().any(Option::is_none));
    let bottom = 40.0 + 20.0 * legend_rows as f64 + if missing_any { 20.0 } else { 0.0 };
    let height = top + plot_h + bottom;

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{left}" y="24" font-size="14" font-weight="bold">{}</text>"#,
        escape(chart.title)
    );
    // Axis and grid.
    for t in &ticks {
        let y = top + plot_h * (1.0 - scale(*t));
        let _ = writeln!(
            out,
            r##"<line x1="{left}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#e0e0e0"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            left + plot_w,
            left - 6.0,
            y + 4.0,
            short(*t)
        );
    }
    let _ = writeln!(
        out,
        r##"<line x1="{left}" x2="{left}" y1="{top}" y2="{:.1}" stroke="#333"/><line x1="{left}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#333"/>"##,
        top + plot_h,
        left + plot_w,
        top + plot_h,
        top + plot_h
    );
    let _ = writeln!(
        out,
        r#"<text x="14" y="{:.1}" transform="rotate(-90 14 {:.1})" text-anchor="middle">{}</text>"#,
        top + plot_h / 2.0,
        top + plot_h / 2.0,
        escape(chart.unit)
    );
    // Bars.
    let colour = |si: usize| {
        chart
            .series
            .get(si)
            .map_or(PALETTE[si % PALETTE.len()], |s| s.colour)
    };
    for (gi, group) in chart.groups.iter().enumerate() {
        let bars_w = bar * series as f64;
        let x0 = left + gi as f64 * group_width + (group_width - bars_w) / 2.0;
        for si in 0..series {
            let x = x0 + si as f64 * bar;
            let tx = x + bar / 2.0 + 3.0;
            let Some(v) = group.values.get(si).copied().flatten() else {
                // A missing bar says so, at the axis: an empty slot is not a zero.
                let ty = top + plot_h - 3.0;
                let _ = writeln!(
                    out,
                    r##"<text x="{tx:.1}" y="{ty:.1}" font-size="9" fill="#777" transform="rotate(-90 {tx:.1} {ty:.1})">n/a</text>"##
                );
                continue;
            };
            let h = plot_h * scale(v);
            let y = top + plot_h - h;
            let _ = writeln!(
                out,
                r##"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{h:.1}" fill="{}" stroke="#333" stroke-width="0.5"><title>{}: {}</title></rect>"##,
                bar - 2.0,
                colour(si),
                escape(chart.series.get(si).map_or("", |s| s.label)),
                short(v)
            );
            let ty = y - 3.0;
            let _ = writeln!(
                out,
                r#"<text x="{tx:.1}" y="{ty:.1}" font-size="9" transform="rotate(-90 {tx:.1} {ty:.1})">{}</text>"#,
                short(v)
            );
        }
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x0 + bars_w / 2.0,
            top + plot_h + 16.0,
            escape(&group.label)
        );
    }
    // Legend.
    for (si, s) in chart.series.iter().enumerate() {
        let (row, col) = (si / legend_columns, si % legend_columns);
        let x = left + col as f64 * legend_column;
        let y = top + plot_h + 40.0 + row as f64 * 20.0;
        let _ = writeln!(
            out,
            r##"<rect x="{x:.1}" y="{:.1}" width="12" height="12" fill="{}" stroke="#333" stroke-width="0.5"/><text x="{:.1}" y="{:.1}">{}</text>"##,
            y - 10.0,
            colour(si),
            x + 16.0,
            y,
            escape(s.label)
        );
    }
    if missing_any {
        let _ = writeln!(
            out,
            r##"<text x="{left}" y="{:.1}" fill="#555">n/a: {}</text>"##,
            top + plot_h + 40.0 + legend_rows as f64 * 20.0,
            escape(chart.missing)
        );
    }
    out.push_str("</svg>\n");
    out
}
