//! The Cycle pane: the extension points of the attempt shown with their verdicts as of
//! the step shown. Its cursor picks a point: `b` breaks there, Enter shows the step that
//! ran it. `verdicts.rs` works out the rows, `draw.rs` draws them.

mod draw;
pub mod verdicts;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::panes::PaneComponent;
use crate::app::{App, step};
use crate::layout;
use crate::session::{Breakpoint, Point};

/// The Cycle pane's state: the point its cursor is on (an index into `Point::ALL`).
#[derive(Debug, Default)]
pub struct CyclePane {
    pub selected: usize,
}

impl CyclePane {
    fn point(&self) -> Point {
        Point::ALL[self.selected.min(Point::ALL.len() - 1)]
    }
}

impl PaneComponent for CyclePane {
    fn of(app: &App) -> &Self {
        &app.timeline
    }

    fn draw(&self, f: &mut Frame, area: Rect, app: &App) {
        draw::draw(f, area, app)
    }

    fn move_selection(app: &mut App, d: isize) {
        app.timeline.selected = step(app.timeline.selected, d, Point::ALL.len())
    }

    /// Enter: the step of the attempt shown that ran the point under the cursor.
    fn select(app: &mut App) {
        let point = app.timeline.point();
        let Some(id) = app.moment().and_then(|s| s.attempt) else {
            return;
        };
        let seq = app
            .session
            .history
            .steps
            .iter()
            .rev()
            .find(|s| s.attempt == Some(id) && s.point == point)
            .map(|s| s.seq);
        match seq {
            Some(seq) => {
                let last = app.session.history.last().map(|s| s.seq);
                app.cursor = (Some(seq) != last).then_some(seq);
                app.refresh();
            }
            None => app.info(format!("{} has not run in this attempt", point.as_str())),
        }
    }

    fn breakpoint(app: &App) -> Option<Breakpoint> {
        Some(Breakpoint::Point(app.timeline.point()))
    }

    fn click(app: &mut App, area: Rect, _x: u16, y: u16) {
        if let Some(i) = layout::row_at(area, 0, 0, y, app.timeline.selected) {
            app.timeline.selected = i.min(Point::ALL.len() - 1);
        }
    }

    /// The cursor starts on the step shown (▶), so `b` breaks where the person looks.
    fn focused(app: &mut App) {
        if let Some(p) = app.moment().map(|s| s.point) {
            app.timeline.selected = Point::ALL.iter().position(|x| *x == p).unwrap_or(0);
        }
    }
}
