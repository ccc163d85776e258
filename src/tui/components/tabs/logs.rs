//! Logs: kubestep's own tracing output (warnings from the config or theme included).
//! Long lines wrap, hanging under the text after the level; the newest line is at the
//! bottom and the tab follows new lines until scrolled up (`G` follows again, `g` goes to
//! the oldest line kept).
//!
//! The Logs tab: where it is scrolled to (the lines are the app's `logs`, which every
//! part of the app writes to).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use crate::components::span;
use super::{TabInfo, TabPane};
use crate::action::Command;
use crate::app::App;
use crate::logs::{LEVEL_WIDTH, LogBuffer};
use crate::theme::Theme;

/// The Logs tab's state.
#[derive(Debug, Default)]
pub struct LogsTab {
    /// The first line shown, as `LogBuffer` numbers lines; `None` follows the newest.
    pub top: Option<u64>,
}

impl TabPane for LogsTab {
    const INFO: TabInfo = TabInfo {
        title: "Logs",
        command: "tab-logs",
        help: "Logs",
        keys: &["6"],
    };

    fn draw(&self, f: &mut Frame, area: Rect, app: &App) {
        let t = &app.theme;
        let (w, h) = (area.width as usize, area.height as usize);
        if app.logs.is_empty() {
            f.render_widget(Paragraph::new(span("no log lines yet", t.muted)), area);
            return;
        }
        let mut out: Vec<Line> = match self.top {
            None => {
                // The newest rows, the oldest of them possibly the end of a long line.
                let lines = app.logs.tail(h);
                let mut rows: Vec<Line> = lines.iter().flat_map(|l| styled(t, l, w)).collect();
                rows.drain(..rows.len().saturating_sub(h));
                rows
            }
            Some(top) => {
                // A row for where the view is; the lines from `top` above it.
                let (first, lines) = app.logs.from(top, h);
                let mut rows: Vec<Line> = lines
                    .iter()
                    .flat_map(|l| styled(t, l, w))
                    .take(h.saturating_sub(1))
                    .collect();
                let (_, end) = app.logs.bounds();
                rows.push(Line::from(span(
                    format!(
                        "line {} of {end} · {} follows new lines",
                        first + 1,
                        app.keymap.key(Command::Bottom)
                    ),
                    t.muted,
                )));
                rows
            }
        };
        out.truncate(h);
        f.render_widget(Paragraph::new(out), area);
    }

    /// Up scrolls back (and stops following), down towards the newest; reaching the
    /// newest follows again.
    fn move_selection(app: &mut App, d: isize) {
        let (w, h) = body(app);
        app.tabs.logs.top = scrolled(&app.logs, app.tabs.logs.top, d, w, h);
    }
}

/// The Logs tab's text area on the app's screen: the main pane inside its border.
fn body(app: &App) -> (usize, usize) {
    let m = app.areas().main;
    (
        m.width.saturating_sub(2) as usize,
        m.height.saturating_sub(2) as usize,
    )
}

/// Where the view starts after moving `d` lines from `top` in a `w`×`h` area: `None`
/// (following) once it reaches the lines shown when following.
pub fn scrolled(logs: &LogBuffer, top: Option<u64>, d: isize, w: usize, h: usize) -> Option<u64> {
    let (first, _) = logs.bounds();
    let last_top = follow_top(logs, w, h);
    let cur = top.unwrap_or(last_top).max(first) as i128;
    let next = (cur + d as i128).clamp(first as i128, last_top as i128) as u64;
    (next < last_top).then_some(next)
}

/// The first line shown whole when following: the newest lines that fit in `h` rows (at
/// least the newest line).
fn follow_top(logs: &LogBuffer, w: usize, h: usize) -> u64 {
    let (_, end) = logs.bounds();
    let lines = logs.tail(h.max(1));
    let mut rows = 0;
    let mut top = end;
    for l in lines.iter().rev() {
        rows += wrap(l, w).len();
        if rows > h && top < end {
            break;
        }
        top -= 1;
    }
    top
}

fn styled<'a>(t: &Theme, l: &str, w: usize) -> Vec<Line<'a>> {
    let style: Style = if l.starts_with("WARN") {
        t.warning
    } else if l.starts_with("ERROR") {
        t.error
    } else {
        t.base
    };
    wrap(l, w)
        .into_iter()
        .map(|r| Line::from(span(r, style)))
        .collect()
}

/// A log line in rows of at most `w` characters, broken at spaces where it can be (a
/// longer word is split), each row after the first indented to hang under the text after
/// the level.
pub fn wrap(line: &str, w: usize) -> Vec<String> {
    let w = w.max(1);
    // Too narrow to indent: plain rows.
    let indent = if w > LEVEL_WIDTH * 2 { LEVEL_WIDTH } else { 0 };
    let mut rows = Vec::new();
    let mut rest: Vec<char> = line.chars().collect();
    let mut room = w;
    loop {
        if rest.len() <= room {
            rows.push(rest.iter().collect::<String>());
            break;
        }
        // Break after the last space that fits, else in the middle of the word (never
        // between the level and the text: that would leave the level alone on a row).
        let after = if rows.is_empty() { indent } else { 0 };
        let cut = rest[..=room]
            .iter()
            .rposition(|c| *c == ' ')
            .filter(|&i| i > after)
            .unwrap_or(room);
        let row: String = rest[..cut].iter().collect();
        rows.push(row.trim_end().to_string());
        let skip = rest[cut..].iter().take_while(|c| **c == ' ').count();
        rest.drain(..cut + skip);
        if rest.is_empty() {
            break;
        }
        if rows.len() == 1 {
            room = w - indent;
        }
    }
    let pad = " ".repeat(indent);
    rows.into_iter()
        .enumerate()
        .map(|(i, r)| if i == 0 { r } else { format!("{pad}{r}") })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_wrap_under_the_text_after_the_level() {
        let rows = wrap("WARN  config c.toml: line 2: theme: expected a string", 24);
        assert_eq!(
            rows,
            [
                "WARN  config c.toml:",
                "      line 2: theme:",
                "      expected a string",
            ]
        );
        // A word longer than a row is split, nothing is lost.
        let rows = wrap("INFO  https://example.test/a/very/long/path", 20);
        assert_eq!(
            rows.concat().replace(' ', ""),
            "INFOhttps://example.test/a/very/long/path"
        );
        assert!(rows.iter().all(|r| r.chars().count() <= 20), "{rows:?}");
        // Short lines and empty ones are one row.
        assert_eq!(wrap("INFO  ok", 80), ["INFO  ok"]);
        assert_eq!(wrap("", 80), [""]);
        // No width at all still ends.
        assert!(!wrap("INFO  abc", 0).is_empty());
    }

    #[test]
    fn scrolling_up_stops_following_and_the_bottom_follows_again() {
        let logs = LogBuffer::default();
        for i in 0..30 {
            logs.push(format!("INFO  line {i}"));
        }
        // 10 rows: following shows lines 20..30.
        assert_eq!(follow_top(&logs, 40, 10), 20);
        let top = scrolled(&logs, None, -1, 40, 10);
        assert_eq!(top, Some(19));
        // New lines do not move a view scrolled back.
        logs.push("INFO  line 30".into());
        assert_eq!(scrolled(&logs, top, 0, 40, 10), Some(19));
        // g: the oldest line; G: following.
        assert_eq!(scrolled(&logs, top, isize::MIN / 2, 40, 10), Some(0));
        assert_eq!(scrolled(&logs, top, isize::MAX / 2, 40, 10), None);
        // Down to where following starts: following again.
        assert_eq!(scrolled(&logs, Some(19), 2, 40, 10), None);
        // A log that fits has nothing to scroll.
        let short = LogBuffer::default();
        short.push("INFO  one".into());
        assert_eq!(scrolled(&short, None, -1, 40, 10), None);
    }
}
