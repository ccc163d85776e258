//! Logs: kubestep's own tracing output (warnings from the config or theme included).
//!
//! The Logs tab: how far back it is scrolled (the lines are the app's `logs`, which
//! every part of the app writes to).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::tabs::{TabInfo, TabPane};
use super::{fit, span};
use crate::app::{App, scroll_by};

/// The Logs tab's state.
#[derive(Debug, Default)]
pub struct LogsTab {
    /// Lines scrolled back from the newest.
    pub scroll: usize,
}

impl TabPane for LogsTab {
    const INFO: TabInfo = TabInfo {
        title: "Logs",
        command: "tab-logs",
        help: "Logs",
        keys: &["6"],
    };

    fn of(app: &App) -> &Self {
        &app.logs_tab
    }

    fn draw(&self, f: &mut Frame, area: Rect, app: &App) {
        let t = &app.theme;
        let h = area.height as usize;
        // Newest at the bottom; scrolling moves back in time.
        let lines = app.logs.tail(h + self.scroll);
        let end = lines.len().saturating_sub(self.scroll.min(lines.len()));
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

    /// Up moves back in time.
    fn move_selection(app: &mut App, d: isize) {
        app.logs_tab.scroll = scroll_by(app.logs_tab.scroll, -d);
    }
}
