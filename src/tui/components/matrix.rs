//! Filter matrix: nodes × Filter plugins, ✓ pass, ✗ reject, – skipped (PreFilter said
//! Skip), ! error, · not run yet at this moment; `✗*` marks upstream's first failure on
//! a node (the real scheduler stops there). The selected cell's reason and the exact
//! kube-scheduler message are shown below. Only visible rows are built.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{fit, pad, span};
use crate::action::Pane;
use crate::app::App;
use crate::framework::cycle::FilterCell;
use crate::layout;
use crate::moment;
use crate::rows::first_failure;

/// Column width of one plugin.
const COL: usize = 4;

/// `NodeResourcesFit` → `NRF`: capitals of the name (short, still recognisable).
pub fn abbrev(name: &str) -> String {
    let caps: String = name.chars().filter(|c| c.is_ascii_uppercase()).collect();
    if caps.len() >= 2 {
        caps
    } else {
        name.chars().take(3).collect()
    }
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let msg = |f: &mut Frame, m: &str| super::note(f, area, app, m);
    let Some(step) = app.moment() else {
        return msg(f, "no attempt yet: press n to step the first pod");
    };
    let Some(a) = app.moment_attempt() else {
        return msg(f, "this step belongs to no attempt");
    };
    let Some(m) = a.matrix else {
        return msg(
            f,
            "no Filter matrix for this attempt (Filter did not run: PreFilter rejected the pod, or the pod is waiting)",
        );
    };
    let Some(cols) = moment::filter_columns(step, m) else {
        return msg(
            f,
            &format!(
                "{}: Filter has not run yet at this moment ({})",
                a.pod,
                step.point.as_str()
            ),
        );
    };
    let focused = app.focus == Pane::Main;
    let name_w = (area.width as usize / 3).clamp(12, 44);
    let vis_cols = (area.width as usize).saturating_sub(name_w + 1) / COL;
    let col_off = layout::offset(app.matrix.col, vis_cols.max(1));
    let shown: Vec<usize> = (col_off..m.plugins.len()).take(vis_cols).collect();

    let mut lines: Vec<Line> = Vec::new();
    let shown_of = if app.matrix.order.len() == m.nodes.len() {
        format!("{}", m.nodes.len())
    } else {
        format!("{}/{}", app.matrix.order.len(), m.nodes.len())
    };
    let mut head = vec![span(
        pad(
            &format!("Node ({shown_of}, {})", app.matrix.sort.label()),
            name_w + 1,
        ),
        t.title,
    )];
    for &c in &shown {
        let style = if c == app.matrix.col {
            t.selection
        } else {
            t.title
        };
        head.push(span(pad(&abbrev(m.plugins[c]), COL), style));
    }
    lines.push(Line::from(head));
    // How many nodes each plugin rejected (computed with the rows, not here).
    let mut counts = vec![span(pad("✗ per plugin", name_w + 1), t.muted)];
    for &c in &shown {
        let n = app.matrix.rejections.get(c).copied().unwrap_or(0);
        let text = match n {
            0 => "·".to_string(),
            n if n < 1000 => n.to_string(),
            n if n < 10_000 => format!("{}k", n / 1000),
            _ => "9k+".to_string(),
        };
        let style = if n > 0 { t.verdict_fail } else { t.muted };
        counts.push(span(pad(&text, COL), style));
    }
    lines.push(Line::from(counts));

    let visible = (area.height as usize).saturating_sub(4);
    let offset = layout::offset(app.matrix.row, visible);
    for (i, &r) in app
        .matrix
        .order
        .iter()
        .enumerate()
        .skip(offset)
        .take(visible)
    {
        let first = first_failure(m, r, cols);
        // Orders are rebuilt with the moment; a stale index is skipped, never indexed.
        let Some(&node) = m.nodes.get(r) else {
            continue;
        };
        let name = a.names.get(node);
        let sel_row = i == app.matrix.row;
        let mut spans: Vec<Span> = vec![span(
            format!("{} ", pad(name, name_w)),
            if sel_row && focused {
                t.selection
            } else {
                t.base
            },
        )];
        for &c in &shown {
            let (sym, mut style) = if c >= cols {
                ("·".to_string(), t.muted)
            } else {
                match m.cell(r, c) {
                    FilterCell::Pass => ("✓".to_string(), t.verdict_pass),
                    FilterCell::Skipped => ("–".to_string(), t.verdict_skip),
                    FilterCell::Reject { .. } if first == Some(c) => {
                        ("✗*".to_string(), t.first_failure)
                    }
                    FilterCell::Reject { .. } => ("✗".to_string(), t.verdict_fail),
                    FilterCell::Error { .. } if first == Some(c) => {
                        ("!*".to_string(), t.first_failure)
                    }
                    FilterCell::Error { .. } => ("!".to_string(), t.verdict_error),
                }
            };
            if sel_row && c == app.matrix.col && focused {
                style = style.patch(t.selection);
            }
            spans.push(span(pad(&sym, COL), style));
        }
        lines.push(Line::from(spans));
    }
    while lines.len() < visible + 2 {
        lines.push(Line::default());
    }

    // The selected cell, in words.
    let cell_line = app
        .matrix
        .order
        .get(app.matrix.row)
        .and_then(|&r| {
            let c = app.matrix.col;
            let plugin = m.plugins.get(c)?;
            let node = a.names.get(*m.nodes.get(r)?);
            let what = if c >= cols {
                "not run yet at this moment".to_string()
            } else {
                match m.cell(r, c) {
                    FilterCell::Pass => "✓ passed".to_string(),
                    FilterCell::Skipped => "– skipped (PreFilter returned Skip)".to_string(),
                    FilterCell::Reject { code, reasons } => {
                        let first = if first_failure(m, r, cols) == Some(c) {
                            " (upstream's first failure)"
                        } else {
                            ""
                        };
                        let note = m.note(r, c).map(|n| format!(" — {n}")).unwrap_or_default();
                        format!("✗ {code:?}: {}{first}{note}", reasons.join(", "))
                    }
                    FilterCell::Error { message } => format!("! Error: {message}"),
                }
            };
            Some(format!("{node} · {plugin}: {what}"))
        })
        .unwrap_or_else(|| "no node matches the filter".into());
    lines.push(Line::from(span(
        fit(&cell_line, area.width as usize),
        t.base,
    )));
    let summary = match (a.outcome, a.message) {
        (_, Some(msg)) => msg.to_string(),
        (Some(o), None) => format!(
            "{o}{}",
            a.node.map(|n| format!(" on {n}")).unwrap_or_default()
        ),
        (None, None) => format!("attempt in progress at {}", step.point.as_str()),
    };
    lines.push(Line::from(vec![span("Σ ", t.key), span(summary, t.title)]));
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}
