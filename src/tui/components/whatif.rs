//! What-if and compare: the plugin list with edits (disable, weight), and the pod re-run
//! under both configurations side by side. Marked WHAT-IF: none of it is in the history.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::{fit, pad, span};
use crate::explain::Explanation;
use crate::tui::action::Pane;
use crate::tui::app::App;
use crate::tui::layout;

/// One side of the comparison as lines.
pub fn side(e: &Result<Explanation, String>) -> Vec<String> {
    let e = match e {
        Ok(e) => e,
        Err(err) => return vec![format!("error: {err}")],
    };
    let mut out = Vec::new();
    match (&e.bound, &e.message) {
        (Some(n), _) => out.push(format!("→ {n}")),
        (None, Some(m)) => out.push(m.clone()),
        _ => out.push("no decision".into()),
    }
    out.push(format!("feasible {}/{}", e.feasible.len(), e.num_nodes));
    if let Some(scores) = &e.scores {
        let mut ranked: Vec<(&String, i64)> = scores.iter().map(|(n, s)| (n, s.total)).collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        for (n, total) in ranked.iter().take(8) {
            let star = if e.selected.contains(n) { "★" } else { " " };
            out.push(format!("{star}{total:>5} {n}"));
        }
    }
    out
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let w = &app.whatif;
    let [left, right] = Layout::horizontal([
        Constraint::Length(40.min(area.width / 3)),
        Constraint::Min(10),
    ])
    .areas(area);
    let focused = app.focus == Pane::Main;
    let visible = left.height.saturating_sub(1) as usize;
    let offset = layout::offset(w.selected, visible);
    let mut lines = vec![Line::from(span(
        "x toggle · K/C-↑ C-↓ weight · R run",
        t.muted,
    ))];
    for (i, p) in w.plugins.iter().enumerate().skip(offset).take(visible) {
        let off = w.edits.disabled.contains(&p.name);
        let weight = match (p.weight, w.edits.weights.get(&p.name)) {
            (Some(b), Some(n)) => format!("w{b}→{n}"),
            (Some(b), None) => format!("w{b}"),
            _ => String::new(),
        };
        let mark = if off { "[ ]" } else { "[x]" };
        let style = if off || w.edits.weights.contains_key(&p.name) {
            t.what_if
        } else {
            t.base
        };
        let mut line = Line::from(span(
            format!(
                "{mark} {} {weight}",
                pad(&p.name, (left.width as usize).saturating_sub(12))
            ),
            style,
        ));
        if focused && i == w.selected {
            line = line.style(t.selection);
        }
        lines.push(line);
    }
    f.render_widget(Paragraph::new(lines), left);

    let Some(result) = &w.result else {
        f.render_widget(
            Paragraph::new(vec![
                Line::from(span("WHAT-IF", t.what_if)),
                Line::from(span(
                    "Edit plugins on the left, then R re-runs the pod shown (or the selected queue pod) under the session's configuration and the edited one, side by side. Nothing enters the session's history.",
                    t.muted,
                )),
            ])
            .wrap(Wrap { trim: false }),
            right,
        );
        return;
    };
    let c = match result {
        Ok(c) => c,
        Err(e) => {
            f.render_widget(Paragraph::new(span(e.clone(), t.error)), right);
            return;
        }
    };
    let [top, cols] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(right);
    f.render_widget(
        Paragraph::new(span(
            format!("WHAT-IF · {} (not in history)", c.pod),
            t.what_if,
        )),
        top,
    );
    let [a, b] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(cols);
    for (area, label, res, style) in [
        (a, &c.base_label, &c.base, t.title),
        (b, &c.alt_label, &c.alt, t.what_if),
    ] {
        let block = Block::default()
            .borders(Borders::LEFT)
            .border_style(t.border);
        let inner = block.inner(area);
        f.render_widget(block, area);
        let mut l = vec![Line::from(span(fit(label, inner.width as usize), style))];
        l.extend(side(res).into_iter().map(|s| Line::from(span(s, t.base))));
        f.render_widget(Paragraph::new(l).wrap(Wrap { trim: false }), inner);
    }
}
