//! Logs: kubestep's own tracing output (warnings from the config or theme included).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::{fit, span};
use crate::app::App;

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let h = area.height as usize;
    // Newest at the bottom; scrolling moves back in time.
    let lines = app.logs.tail(h + app.logs_scroll);
    let end = lines.len().saturating_sub(app.logs_scroll.min(lines.len()));
    let start = end.saturating_sub(h);
    let out: Vec<Line> = lines[start..end]
        .iter()
        .map(|l| {
            let style = if l.starts_with("WARN") {
                t.warning
            } else if l.starts_with("ERROR") {
                t.error
            } else {
                t.base
            };
            Line::from(span(fit(l, area.width as usize), style))
        })
        .collect();
    if out.is_empty() {
        f.render_widget(Paragraph::new(span("no log lines yet", t.muted)), area);
    } else {
        f.render_widget(Paragraph::new(out), area);
    }
}
