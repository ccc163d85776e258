//! The screen's parts. The panes that take the focus are components (`panes.rs`: the
//! `PaneComponent` trait and their registry), and so are the main pane's tabs (`tabs/`:
//! the `TabPane` trait, their registry, and a file or folder per tab): each holds its
//! state, its keys, its handling of the commands meant for it and its drawing, a pure
//! function of `&App` (read-only) into a frame area. Engine state is in the Session.

pub mod footer;
pub mod header;
pub mod help;
pub mod panes;
pub mod popups;
pub mod queue;
pub mod tabs;
pub mod text;
pub mod timeline;
pub mod waiting;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::app::App;
pub use text::{Elider, fit, pad, wrap, wrap_hanging, wrap_line_hanging};

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
