//! A small SVG writer for the suite's charts: grouped vertical bars, one colour per series, a
//! legend, a y axis on a linear or a log scale, each bar labelled with its value. Text only,
//! no dependency: the charts are files a Markdown page shows with `![...](...)`.

use std::fmt::Write;

/// One group of bars (a workload, a percentile): a value per series, `None` where the series
/// has none.
pub struct Group {
    pub label: String,
    pub values: Vec<Option<f64>>,
}

pub struct Chart<'a> {
    pub title: &'a str,
    /// The series' names, in the order of each group's values.
    pub series: &'a [&'a str],
    pub groups: &'a [Group],
    /// A log scale (for values that span decades).
    pub log: bool,
    pub unit: &'a str,
}

/// Colours that stay apart in print and for common colour blindness (Okabe and Ito's set).
const PALETTE: [&str; 8] = [
    "#999999", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A value as a bar's label: three significant figures or so.
fn short(value: f64) -> String {
    if value >= 100_000.0 {
        format!("{:.0}k", value / 1000.0)
    } else if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
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
    let bar = 18.0;
    let gap = 28.0;
    let group_width = bar * series as f64 + gap;
    let (left, right, top) = (70.0, 20.0, 50.0);
    let plot_h = 300.0;
    let legend_rows = series.div_ceil(3);
    let bottom = 40.0 + 20.0 * legend_rows as f64;
    let plot_w = group_width * chart.groups.len().max(1) as f64;
    let width = (left + plot_w + right).max(left + 3.0 * 230.0);
    let height = top + plot_h + bottom;

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{left}" y="22" font-size="14" font-weight="bold">{}</text>"#,
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
    for (gi, group) in chart.groups.iter().enumerate() {
        let x0 = left + gap / 2.0 + gi as f64 * group_width;
        for (si, value) in group.values.iter().enumerate() {
            let x = x0 + si as f64 * bar;
            let Some(v) = value else {
                continue;
            };
            let h = plot_h * scale(*v);
            let y = top + plot_h - h;
            let colour = PALETTE[si % PALETTE.len()];
            let _ = writeln!(
                out,
                r##"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{h:.1}" fill="{colour}" stroke="#333" stroke-width="0.5"><title>{}: {}</title></rect>"##,
                bar - 2.0,
                escape(chart.series.get(si).copied().unwrap_or("")),
                short(*v)
            );
            let (tx, ty) = (x + bar / 2.0 + 3.0, y - 3.0);
            let _ = writeln!(
                out,
                r#"<text x="{tx:.1}" y="{ty:.1}" font-size="9" transform="rotate(-90 {tx:.1} {ty:.1})">{}</text>"#,
                short(*v)
            );
        }
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x0 + bar * series as f64 / 2.0,
            top + plot_h + 16.0,
            escape(&group.label)
        );
    }
    // Legend.
    for (si, name) in chart.series.iter().enumerate() {
        let (row, col) = (si / 3, si % 3);
        let x = left + col as f64 * 230.0;
        let y = top + plot_h + 36.0 + row as f64 * 20.0;
        let _ = writeln!(
            out,
            r##"<rect x="{x:.1}" y="{:.1}" width="12" height="12" fill="{}" stroke="#333" stroke-width="0.5"/><text x="{:.1}" y="{:.1}">{}</text>"##,
            y - 10.0,
            PALETTE[si % PALETTE.len()],
            x + 16.0,
            y,
            escape(name)
        );
    }
    out.push_str("</svg>\n");
    out
}
