//! The Queue pane: the pods still to decide (activeQ, backoffQ, unschedulable, in
//! flight, gated, waiting at Permit or PreBind) by where they are, and the bound ones
//! too on `d`; filtered (`/`) and sorted (`o`); Enter shows the pod. At a past step it
//! shows the queue, and the Waiting pane the pods held at Permit, as history kept them
//! after that step (`session::queue_history`), never the present's. `pods.rs` builds
//! the rows, `draw.rs` draws them.

pub mod draw;
pub mod pods;

use ratatui::Frame;
use ratatui::layout::Rect;

use draw::selected_text;
use pods::{QueueRow, QueueSort};

use super::panes::PaneComponent;
use crate::action::{Command, OwnCommand, Pane};
use crate::app::{App, Level, PromptOwner, clamp, step};
use crate::components::Elider;
use crate::layout;
use crate::session::{Breakpoint, QueueCounts};

/// The pane's own commands.
const OWN: [OwnCommand; 1] = [OwnCommand {
    name: "show-bound",
    help: "queue: list the bound pods too, or hide them again (at first the queue lists the pods still to decide)",
    group: "Queue and Filter tab",
    keys: &["d"],
    synonyms: &["hide bound", "scheduled", "done", "all pods", "hidden"],
}];
pub const SHOW_BOUND: Command = Command::Own(&OWN[0]);

/// The Queue pane's state (its rows are rebuilt after each change, never per frame).
#[derive(Debug, Default)]
pub struct QueuePane {
    /// The pods still to decide, and the bound ones when `show_bound`.
    pub rows: Vec<QueueRow>,
    /// Bound pods are listed (`d`); hidden at first.
    pub show_bound: bool,
    /// Pods bound at the moment shown, listed or not.
    pub bound: usize,
    /// Rows after filter and sort (indices into `rows`).
    pub order: Vec<usize>,
    pub filter: String,
    pub sort: QueueSort,
    pub selected: usize,
    /// The longest pod name among the rows, in characters (computed with the rows).
    pub longest: usize,
    /// How many pods are in each sub-queue now (the header's counts).
    pub counts: QueueCounts,
    /// Set while the queue and waiting panes show a past step.
    pub past: Option<PastQueue>,
    /// The rows' pod names to shorten, with the fingerprint of the names they are of.
    pub names: Elider,
    names_of: (usize, u64),
}

/// What the queue and waiting panes show of a past step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastQueue {
    pub seq: u64,
    /// History still holds this step's queue (it forgets the oldest beyond a budget).
    pub kept: bool,
    /// Pods bound then that the list cannot show: deleted, or changed, since.
    pub unlisted_bound: usize,
    /// Pods waiting at Permit then.
    pub waiting: usize,
}

impl QueuePane {
    pub fn selected_row(&self) -> Option<&QueueRow> {
        self.rows.get(*self.order.get(self.selected)?)
    }

    /// Rebuilds the queue and waiting rows for the step shown.
    pub fn refresh(app: &mut App) {
        let step = app
            .cursor
            .and_then(|c| app.session.history.step(c))
            .map(|s| (s.seq, s.at));
        let bound = app.queue.show_bound;
        let Some((seq, at)) = step else {
            let m = app.session.queue_now();
            let (rows, _) = pods::queue_rows(&app.session, &m, app.session.now(), false, bound);
            app.queue.rows = rows;
            app.queue.bound = m.bound;
            app.waiting.rows = m.waiting;
            app.queue.counts = app.session.counts();
            app.queue.past = None;
            return;
        };
        match app.session.history.queues.at(seq) {
            Some(m) => {
                let (rows, unlisted_bound) = pods::queue_rows(&app.session, &m, at, true, bound);
                app.queue.bound = m.bound;
                let mut waiting: Vec<&str> = m.waiting.iter().map(|w| w.pod.as_str()).collect();
                waiting.dedup();
                app.queue.past = Some(PastQueue {
                    seq,
                    kept: true,
                    unlisted_bound,
                    waiting: waiting.len(),
                });
                app.queue.rows = rows;
                app.waiting.rows = m.waiting.clone();
            }
            _ => {
                app.queue.past = Some(PastQueue {
                    seq,
                    kept: false,
                    unlisted_bound: 0,
                    waiting: 0,
                });
                app.queue.rows.clear();
                app.queue.bound = 0;
                app.waiting.rows.clear();
            }
        }
    }

    /// Orders the rows after they or the filter or the sort changed.
    pub fn refresh_order(&mut self) {
        self.longest = self
            .rows
            .iter()
            .map(|r| r.pod.chars().count())
            .max()
            .unwrap_or(0);
        self.order = pods::queue_order(&self.rows, &self.filter, self.sort);
        clamp(&mut self.selected, self.order.len());
        // The names change when pods come, go, bind (while bound pods are hidden) or
        // bound pods are shown: only then are they compared again.
        let of = (
            self.rows.len(),
            fingerprint(self.rows.iter().map(|r| r.pod.as_str())),
        );
        if of != self.names_of {
            self.names = Elider::of(self.rows.iter().map(|r| r.pod.as_str()));
            self.names_of = of;
        }
    }

    /// `d`: bound pods listed, or hidden again; the selected pod stays selected when it
    /// is still listed.
    fn toggle_bound(app: &mut App) {
        let pod = app.queue.selected_row().map(|r| r.pod.clone());
        app.queue.show_bound = !app.queue.show_bound;
        Self::refresh(app);
        app.queue.refresh_order();
        let q = &mut app.queue;
        if let Some(i) = pod.and_then(|p| q.order.iter().position(|&i| q.rows[i].pod == p)) {
            q.selected = i;
        }
        let msg = if q.show_bound {
            format!("queue: bound pods listed ({})", q.bound)
        } else {
            format!(
                "queue: bound pods hidden ({}); the queue lists the {} pod(s) still to decide",
                q.bound,
                q.rows.len()
            )
        };
        app.info(msg);
    }

    /// Puts the selected pod's full name and status on the status line when the pane's
    /// bottom border cannot hold it (a narrow left column).
    fn name_selected_if_cut(app: &mut App) {
        let room = app.areas().queue.width.saturating_sub(4) as usize;
        if let Some(row) = app.queue.selected_row() {
            let text = selected_text(row);
            if text.chars().count() > room {
                app.status = Some((Level::Info, text));
            }
        }
    }
}

/// An order-free fingerprint of names: the same set gives the same number.
fn fingerprint<'a>(names: impl Iterator<Item = &'a str>) -> u64 {
    use std::hash::{Hash, Hasher};
    names.fold(0u64, |acc, n| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        n.hash(&mut h);
        acc.wrapping_add(h.finish())
    })
}

impl PaneComponent for QueuePane {
    // The Filter tab has a filter and a sort of its own; the queue's are the fallback.
    const KEYS: &'static [(Command, &'static [&'static str])] =
        &[(Command::Filter, &["/"]), (Command::Sort, &["o"])];

    const COMMANDS: &'static [OwnCommand] = &OWN;

    fn of(app: &App) -> &Self {
        &app.queue
    }

    fn draw(&self, f: &mut Frame, area: Rect, app: &App) {
        draw::draw(f, area, app)
    }

    fn move_selection(app: &mut App, d: isize) {
        app.queue.selected = step(app.queue.selected, d, app.queue.order.len());
        Self::name_selected_if_cut(app);
    }

    fn select(app: &mut App) {
        if let Some(p) = app.queue.selected_row().map(|r| r.pod.clone()) {
            app.focus_pod(&p);
        }
    }

    fn breakpoint(app: &App) -> Option<Breakpoint> {
        let row = app.queue.selected_row()?;
        Some(Breakpoint::Pod(row.pod.clone()))
    }

    fn click(app: &mut App, area: Rect, _x: u16, y: u16) {
        if let Some(i) = layout::row_at(area, 0, 0, y, app.queue.selected) {
            app.queue.selected = i.min(app.queue.order.len().saturating_sub(1));
            Self::name_selected_if_cut(app);
        }
    }

    /// The filter applies as it is typed.
    fn prompt_input(app: &mut App, text: &str) {
        app.queue.filter = text.to_string();
        app.queue.refresh_order();
    }

    /// Esc clears the queue's filter before the tab shown's.
    fn focused_command(app: &mut App, c: Command) -> bool {
        if c != Command::Cancel || app.queue.filter.is_empty() {
            return false;
        }
        app.queue.filter.clear();
        app.queue.refresh_order();
        true
    }

    fn command(app: &mut App, c: Command) -> bool {
        match c {
            Command::Filter => {
                app.focus = Pane::Queue;
                let text = app.queue.filter.clone();
                app.prompt_for(PromptOwner::Pane(Pane::Queue), "filter pods /", text);
            }
            Command::Sort => {
                app.queue.sort = app.queue.sort.next();
                app.queue.refresh_order();
                app.info(format!("pods sorted by {}", app.queue.sort.label()));
            }
            _ if c == SHOW_BOUND => Self::toggle_bound(app),
            _ => return false,
        }
        true
    }
}
