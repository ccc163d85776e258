//! The whole screen from `&App`: header, the panes (the queue, the cycle timeline, the
//! waiting pods and the main pane with its tabs, each drawn by its component), the
//! footer, and any popup.

use ratatui::Frame;

use super::action::Pane;
use super::app::{App, Mode};
use super::components as c;
use super::layout;

pub fn draw(f: &mut Frame, app: &App) {
    let size = (f.area().width, f.area().height);
    let footer = c::footer::height(app, size.0);
    let a = layout::areas(size, app.left_width_for(size.0), footer);
    c::header::draw(f, a.header, app);
    c::panes::draw(f, Pane::Queue, a.queue, app);
    c::panes::draw(f, Pane::Timeline, a.timeline, app);
    c::panes::draw(f, Pane::Waiting, a.waiting, app);
    c::panes::draw(f, Pane::Main, a.main, app);
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
