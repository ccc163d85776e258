//! The bottom line: a prompt being typed, the last message, or key hints.

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{fit, span, wrap_hanging};
use crate::action::Command;
use crate::app::{App, Level, Mode};
use crate::theme::Theme;
use ratatui::style::Style;

const HINTS: [(Command, &str); 8] = [
    (Command::Step, "step"),
    (Command::StepPlugin, "plugin"),
    (Command::FinishPod, "finish"),
    (Command::ContinuePause, "run"),
    (Command::Back, "back"),
    (super::waiting::ALLOW, "allow"),
    (Command::Help, "help"),
    (Command::Quit, "quit"),
];

/// The most lines a message takes at the bottom; the rest is in Logs.
const MOST: usize = 3;

/// Rows the bottom line needs on a screen `width` wide: one, or more for a message that
/// would be cut mid-sentence.
pub fn height(app: &App, width: u16) -> u16 {
    let text = match (&app.mode, &app.status) {
        (Mode::Prompt { .. }, _) => return 1,
        (Mode::ConfirmQuit, _) => confirm_quit(app),
        (_, Some((_, msg))) => msg.clone(),
        (_, None) => return 1,
    };
    message_lines(&text, width).len() as u16
}

/// What quitting with pods at Permit (or in PreBind's wait) asks.
fn confirm_quit(app: &App) -> String {
    let (permit, pre_bind) = (app.pods_waiting(), app.pods_waiting_pre_bind());
    let who = match (permit, pre_bind) {
        (n, 0) => format!("{n} pod(s) wait at Permit"),
        (0, m) => format!("{m} pod(s) wait at PreBind for device binding conditions"),
        (n, m) => format!("{n} pod(s) wait at Permit and {m} at PreBind"),
    };
    if app.is_live() {
        format!(
            "{who}: quitting rejects them (\"{}\"). Quit? (y/N)",
            kubestep_live::mirror::SHUTDOWN_MESSAGE
        )
    } else {
        format!("{who}. Quit anyway? (y/N)")
    }
}

/// A message wrapped to `width`, in at most `MOST` lines (the last cut with `…`).
fn message_lines(msg: &str, width: u16) -> Vec<String> {
    let w = width as usize;
    if msg.chars().count() <= w {
        return vec![msg.to_string()];
    }
    let mut lines = wrap_hanging(msg, w, 2);
    if lines.len() > MOST {
        lines.truncate(MOST);
        if let Some(last) = lines.last_mut() {
            *last = fit(&format!("{last} …"), w);
        }
    }
    lines
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let line = match &app.mode {
        Mode::Prompt { kind, text } => {
            let label = kind.label();
            let x = area.x + (label.chars().count() + text.chars().count()) as u16;
            f.set_cursor_position(Position::new(x.min(area.right().saturating_sub(1)), area.y));
            Line::from(vec![span(label, t.key), span(text.clone(), t.base)])
        }
        Mode::ConfirmQuit => return message(f, area, &confirm_quit(app), t.warning, t),
        _ => match &app.status {
            Some((level, msg)) => {
                let style = match level {
                    Level::Info => t.base,
                    Level::Warning => t.warning,
                    Level::Error => t.error,
                };
                return message(f, area, msg, style, t);
            }
            None => {
                let mut spans: Vec<Span> = Vec::new();
                for (c, label) in HINTS {
                    let first = app
                        .keymap
                        .keys_for(c)
                        .first()
                        .map(|k| k.label())
                        .unwrap_or_default();
                    if first.is_empty() {
                        continue;
                    }
                    spans.push(span(first, t.key));
                    spans.push(span(format!(" {label}  "), t.muted));
                }
                Line::from(spans)
            }
        },
    };
    f.render_widget(Paragraph::new(line).style(t.base), area);
}

fn message(f: &mut Frame, area: Rect, msg: &str, style: Style, t: &Theme) {
    let lines: Vec<Line> = message_lines(msg, area.width)
        .into_iter()
        .map(|l| Line::from(span(l, style)))
        .collect();
    f.render_widget(Paragraph::new(lines).style(t.base), area);
}
