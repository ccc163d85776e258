//! The bottom line: a prompt being typed, the last message, or key hints.

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::span;
use crate::action::Command;
use crate::app::{App, Level, Mode};

const HINTS: [(Command, &str); 8] = [
    (Command::Step, "step"),
    (Command::StepPlugin, "plugin"),
    (Command::FinishPod, "finish"),
    (Command::ContinuePause, "run"),
    (Command::Back, "back"),
    (Command::Allow, "allow"),
    (Command::Help, "help"),
    (Command::Quit, "quit"),
];

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let line = match &app.mode {
        Mode::Prompt { kind, text } => {
            let label = kind.label();
            let x = area.x + (label.chars().count() + text.chars().count()) as u16;
            f.set_cursor_position(Position::new(x.min(area.right().saturating_sub(1)), area.y));
            Line::from(vec![span(label, t.key), span(text.clone(), t.base)])
        }
        Mode::ConfirmQuit if app.is_live() => Line::from(span(
            format!(
                "{} pod(s) wait at Permit: quitting rejects them (\"{}\"). Quit? (y/N)",
                app.pods_waiting(),
                kubestep_live::mirror::SHUTDOWN_MESSAGE
            ),
            t.warning,
        )),
        Mode::ConfirmQuit => Line::from(span(
            format!(
                "{} pod(s) wait at Permit. Quit anyway? (y/N)",
                app.pods_waiting()
            ),
            t.warning,
        )),
        _ => match &app.status {
            Some((level, msg)) => {
                let style = match level {
                    Level::Info => t.base,
                    Level::Warning => t.warning,
                    Level::Error => t.error,
                };
                Line::from(span(msg.clone(), style))
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
