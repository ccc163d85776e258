//! The whole screen from `&App`: header, queue, timeline, waiting pods, the main pane's
//! tab bar and the tab shown (from the registry, `components::tabs`), the footer, and
//! any popup.

use ratatui::Frame;
use ratatui::text::Line;

use super::action::{Pane, Tab};
use super::app::{App, Mode};
use super::components::{self as c, span};
use super::layout;

pub fn draw(f: &mut Frame, app: &App) {
    let size = (f.area().width, f.area().height);
    let footer = c::footer::height(app, size.0);
    let a = layout::areas(size, app.left_width_for(size.0), footer);
    c::header::draw(f, a.header, app);
    c::queue::draw(f, a.queue, app);
    c::timeline::draw(f, a.timeline, app);
    c::waiting::draw(f, a.waiting, app);
    main(f, a.main, app);
    c::footer::draw(f, a.footer, app);
    match &app.mode {
        Mode::Help(h) => c::help::draw(f, app, h),
        Mode::Breakpoints { selected } => c::popups::breakpoints(f, app, *selected),
        Mode::Output {
            title,
            lines,
            scroll,
        } => c::popups::output(f, app, title, lines, *scroll),
        _ => {}
    }
}

fn main(f: &mut Frame, area: ratatui::layout::Rect, app: &App) {
    let t = &app.theme;
    let focused = app.focus == Pane::Main;
    let mut spans = Vec::new();
    for (label, tab) in layout::tab_labels(area.width, app.tab)
        .into_iter()
        .zip(Tab::ALL)
    {
        let style = if tab == app.tab {
            t.selection
        } else if focused {
            t.focus
        } else {
            t.title
        };
        spans.push(span(label, style));
        spans.push(span("│", t.border));
    }
    let block = c::pane(app, Line::from(spans), focused);
    let inner = block.inner(area);
    f.render_widget(block, area);
    c::tabs::draw(f, inner, app);
}
