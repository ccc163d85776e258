//! How the What-if tab is drawn: the plugin list with its edits, the field edits, and
//! the pod re-run as it really is and with the edits, side by side.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::WhatIfTab;
use crate::action::{Command, Pane};
use crate::app::App;
use crate::components::{Elider, fit, span, wrap};
use crate::explain::Explanation;
use crate::layout;

/// One side of the comparison as lines of at most `width` characters: node names
/// shortened so no two read alike (`Elider`), never a character to the border.
pub fn side(e: &Result<Explanation, String>, width: usize) -> Vec<String> {
    let e = match e {
        Ok(e) => e,
        Err(err) => return wrap(&format!("error: {err}"), width),
    };
    let mut ranked: Vec<(&String, i64)> = e
        .scores
        .iter()
        .flat_map(|s| s.iter().map(|(n, s)| (n, s.total)))
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked.truncate(8);
    let names = Elider::of(
        ranked
            .iter()
            .map(|(n, _)| n.as_str())
            .chain(e.bound.as_deref()),
    );
    let mut out = Vec::new();
    match (&e.bound, &e.message) {
        (Some(n), _) => {
            out.push("→ would bind to".into());
            out.push(names.shorten(n, width));
        }
        (None, Some(m)) => out.extend(wrap(m, width)),
        _ => out.push("no decision".into()),
    }
    out.push(format!("feasible {}/{}", e.feasible.len(), e.num_nodes));
    for (n, total) in ranked {
        let star = if e.selected.contains(n) { "★" } else { " " };
        let head = format!("{star}{total:>5} ");
        let room = width.saturating_sub(head.chars().count());
        out.push(format!("{head}{}", names.shorten(n, room)));
    }
    out
}

pub(super) fn draw(w: &WhatIfTab, f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    // Plugin names whole where they fit beside the results; a narrow pane stacks the
    // list over the results rather than cutting both to a few letters.
    let longest = w
        .plugins
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(0) as u16;
    let [left, right] = if area.width < 100 {
        let [top, _, bottom] = Layout::vertical([
            Constraint::Percentage(45),
            Constraint::Length(1),
            Constraint::Min(3),
        ])
        .areas(area);
        [top, bottom]
    } else {
        let [left, _, right] = Layout::horizontal([
            Constraint::Length((longest + 12).min(area.width * 11 / 20)),
            Constraint::Length(1),
            Constraint::Min(10),
        ])
        .areas(area);
        [left, right]
    };
    plugins(w, f, left, app);

    let keys = |c: Command| app.keymap.label(c);
    // The right side: what is edited, then the two sides (or how to get them).
    let title = match (&w.job, &w.result) {
        (Some((_, pod)), _) => format!("WHAT-IF · {pod} · re-running… (not in history)"),
        (None, Some(Ok(c))) => format!("WHAT-IF · {} (not in history)", c.pod),
        _ => "WHAT-IF (not in history)".to_string(),
    };
    let mut head = vec![Line::from(span(
        fit(&title, right.width as usize),
        t.what_if,
    ))];
    if w.edits.fields.is_empty() {
        let none = format!("no field edits ({} adds one)", keys(super::EDIT));
        head.push(Line::from(span(fit(&none, right.width as usize), t.muted)));
    }
    for e in &w.edits.fields {
        let edit = format!("✎ {}", e.describe());
        head.push(Line::from(span(
            fit(&edit, right.width as usize),
            t.what_if,
        )));
    }
    let [top, body] = Layout::vertical([
        Constraint::Length(head.len() as u16 + 1),
        Constraint::Min(1),
    ])
    .areas(right);
    f.render_widget(Paragraph::new(head), top);

    let Some(result) = &w.result else {
        let text = format!(
            "Edit the plugins in the list ({} toggles, {} / {} change a weight) or a field ({}), then {} re-runs the pod shown (or the selected queue pod) as it really is and with the edits, side by side, on copies. Nothing enters the session's history.",
            keys(super::TOGGLE),
            keys(super::WEIGHT_UP),
            keys(super::WEIGHT_DOWN),
            keys(super::EDIT),
            keys(super::RUN),
        );
        f.render_widget(
            Paragraph::new(span(text, t.muted)).wrap(Wrap { trim: false }),
            body,
        );
        return;
    };
    let c = match result {
        Ok(c) => c,
        Err(e) => {
            f.render_widget(
                Paragraph::new(span(e.clone(), t.error)).wrap(Wrap { trim: false }),
                body,
            );
            return;
        }
    };
    let [a, b] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(body);
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
        let lines = side(res, inner.width as usize);
        l.extend(lines.into_iter().map(|s| Line::from(span(s, t.base))));
        f.render_widget(Paragraph::new(l), inner);
    }
}

/// The plugin list with its edits (disabled, weight), under the keys that edit it.
fn plugins(w: &WhatIfTab, f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let focused = app.focus == Pane::Main;
    let keys = |c: Command| app.keymap.label(c);
    let hint = |text: String| Line::from(span(fit(&text, area.width as usize), t.muted));
    let mut lines = vec![
        hint(format!(
            "{} toggle · {}/{} weight",
            keys(super::TOGGLE),
            keys(super::WEIGHT_UP),
            keys(super::WEIGHT_DOWN)
        )),
        hint(format!(
            "{} edit field · {} undo · {} run",
            keys(super::EDIT),
            keys(super::UNDO),
            keys(super::RUN)
        )),
    ];
    let visible = area.height.saturating_sub(lines.len() as u16) as usize;
    let offset = layout::offset(w.selected, visible);
    let longest = w
        .plugins
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(0);
    let name_w = longest.min((area.width as usize).saturating_sub(12));
    let names = Elider::of(w.plugins.iter().map(|p| p.name.as_str()));
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
            format!("{mark} {} {weight}", names.pad(&p.name, name_w)),
            style,
        ));
        if focused && i == w.selected {
            line = line.style(t.selection);
        }
        lines.push(line);
    }
    f.render_widget(Paragraph::new(lines), area);
}
