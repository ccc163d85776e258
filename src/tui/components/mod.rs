//! One pane per file. Each `draw` is a pure function of `&App` (read-only) into a frame
//! area; engine state is in the Session. The main pane's tabs are components
//! (`tabs.rs`: the `TabPane` trait and the registry): each tab's file holds its state
//! type (a field of `App`), its drawing and its keys.

pub mod detail;
pub mod explain;
pub mod footer;
pub mod header;
pub mod help;
pub mod logs;
pub mod matrix;
pub mod popups;
pub mod queue;
pub mod scores;
pub mod state_tree;
pub mod tabs;
pub mod timeline;
pub mod waiting;
pub mod whatif;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::app::App;

/// A pane's bordered block; the focused pane's border and title use the focus slot.
pub fn pane<'a>(app: &App, title: impl Into<Line<'a>>, focused: bool) -> Block<'a> {
    let t = &app.theme;
    let border = if focused { t.focus } else { t.border };
    let title_style = if focused { t.focus } else { t.title };
    Block::default()
        .borders(Borders::ALL)
        .border_style(border)
        .title(title.into().style(title_style))
        .style(t.base)
}

/// Cuts `s` to `w` characters, marking the cut with `…`.
pub fn fit(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(w - 1).collect();
    out.push('…');
    out
}

/// Words of `s` in lines of at most `w` characters (a word longer than `w` is cut).
pub fn wrap(s: &str, w: usize) -> Vec<String> {
    let w = w.max(8);
    let mut out = Vec::new();
    let mut cur = String::new();
    for word in s.split_whitespace() {
        let n = cur.chars().count();
        if n > 0 && n + 1 + word.chars().count() > w {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out.into_iter().map(|l| fit(&l, w)).collect()
}

/// `s` padded or cut to exactly `w` characters.
pub fn pad(s: &str, w: usize) -> String {
    let f = fit(s, w);
    let n = f.chars().count();
    format!("{f}{}", " ".repeat(w.saturating_sub(n)))
}

pub fn span<'a>(s: impl Into<String>, style: Style) -> Span<'a> {
    Span::styled(s.into(), style)
}

/// A muted, wrapped note filling `area`: what a pane says when it has nothing to show.
pub fn note(f: &mut Frame, area: Rect, app: &App, text: &str) {
    let p = Paragraph::new(span(text, app.theme.muted)).wrap(Wrap { trim: false });
    f.render_widget(p, area);
}

/// The inner area of a bordered block.
pub fn inner(area: Rect) -> Rect {
    Block::default().borders(Borders::ALL).inner(area)
}
