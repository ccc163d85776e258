//! Popups: the breakpoint list and command output.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph};

use super::{pane, span};
use crate::app::App;

/// A centred rectangle of at most `w`×`h`.
pub fn centered(r: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(r.width);
    let h = h.min(r.height);
    Rect::new(r.x + (r.width - w) / 2, r.y + (r.height - h) / 2, w, h)
}

pub fn breakpoints(f: &mut Frame, app: &App, selected: usize) {
    let t = &app.theme;
    let area = centered(f.area(), 60, 14);
    let mut lines = vec![Line::from(span(
        "b toggles on the selected point, plugin or pod · d deletes · Esc closes",
        t.muted,
    ))];
    if app.session.breakpoints.is_empty() {
        lines.push(Line::from(span("no breakpoints", t.muted)));
    }
    for (i, b) in app.session.breakpoints.iter().enumerate() {
        let mut l = Line::from(span(format!("● {}", b.describe()), t.base));
        if i == selected {
            l = l.style(t.selection);
        }
        lines.push(l);
    }
    f.render_widget(Clear, area);
    f.render_widget(
        Paragraph::new(lines).block(pane(app, " Breakpoints ", true)),
        area,
    );
}

pub fn output(f: &mut Frame, app: &App, title: &str, lines: &[String], scroll: usize) {
    let t = &app.theme;
    let area = centered(f.area(), 100, 40);
    let body: Vec<Line> = lines
        .iter()
        .skip(scroll)
        .map(|l| Line::from(span(l.clone(), t.base)))
        .collect();
    f.render_widget(Clear, area);
    f.render_widget(
        Paragraph::new(body).block(pane(app, format!(" :{title} · Esc closes "), true)),
        area,
    );
}
