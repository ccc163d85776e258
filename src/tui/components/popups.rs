//! Popups: the breakpoint list and command output, and the keys while a popup or a
//! prompt is open.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::panes::PAGE;
use super::{pane, span};
use crate::action::Command;
use crate::app::{App, Mode};

/// A command while a popup or a prompt is open: it has every key (a prompt's text
/// arrives as input, not as commands).
pub fn command(app: &mut App, c: Command) {
    let breakpoints = app.session.breakpoints.len();
    match &mut app.mode {
        Mode::Normal => {}
        Mode::Prompt { .. } | Mode::ConfirmQuit => {
            if c == Command::Cancel {
                app.mode = Mode::Normal;
            }
        }
        Mode::Help(_) => super::help::command(app, c),
        Mode::Output { scroll, .. } => match c {
            Command::Up => *scroll = scroll.saturating_sub(1),
            Command::Down => *scroll += 1,
            Command::PageUp => *scroll = scroll.saturating_sub(PAGE),
            Command::PageDown => *scroll += PAGE,
            Command::Top => *scroll = 0,
            _ => app.mode = Mode::Normal,
        },
        Mode::Breakpoints { selected } => match c {
            Command::Up => *selected = selected.saturating_sub(1),
            Command::Down => *selected = (*selected + 1).min(breakpoints.saturating_sub(1)),
            _ => app.mode = Mode::Normal,
        },
    }
}

/// A centred rectangle of at most `w`×`h`.
pub fn centered(r: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(r.width);
    let h = h.min(r.height);
    Rect::new(r.x + (r.width - w) / 2, r.y + (r.height - h) / 2, w, h)
}

pub fn breakpoints(f: &mut Frame, app: &App, selected: usize) {
    let t = &app.theme;
    let area = centered(f.area(), 60, 14);
    // `d` and Delete are the list's own keys (see `App::action_for_key`).
    let mut lines = vec![Line::from(span(
        format!(
            "{} toggles on the selected point, plugin or pod · d deletes · {} closes",
            app.keymap.key(Command::Breakpoint),
            app.keymap.key(Command::Cancel)
        ),
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
        // Wrapped: the hint line is wider than the popup.
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(pane(app, " Breakpoints ", true)),
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
        Paragraph::new(body).block(pane(
            app,
            format!(" :{title} · {} closes ", app.keymap.key(Command::Cancel)),
            true,
        )),
        area,
    );
}
