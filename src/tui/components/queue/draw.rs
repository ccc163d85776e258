//! How the Queue pane is drawn: the pods still to decide by where they are (in flight,
//! activeQ, backoffQ with time left, unschedulable with the last reason, gated,
//! waiting) and, on `d`, the bound ones; the title counts what is listed and the bound
//! pods hidden or listed; at a past step, the queue as it was then (title marked ⏪).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::pods::{QState, QueueRow};
use super::{QueuePane, SHOW_BOUND};
use crate::action::Pane;
use crate::app::App;
use crate::components::{fit, pane, span};
use crate::layout;
use crate::theme::Theme;

pub fn state_style(t: &Theme, s: QState) -> ratatui::style::Style {
    match s {
        QState::InFlight => t.queue_in_flight,
        QState::Active => t.queue_active,
        QState::Backoff => t.queue_backoff,
        QState::Unschedulable => t.queue_unschedulable,
        QState::Gated => t.queue_gated,
        QState::Waiting => t.queue_waiting,
        QState::Deferred => t.queue_active,
        QState::Bound => t.queue_bound,
        QState::Other => t.muted,
    }
}

/// The selected row in words: its full name and status.
pub fn selected_text(row: &QueueRow) -> String {
    if row.info.is_empty() {
        row.pod.clone()
    } else {
        format!("{}: {}", row.pod, row.info)
    }
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let focused = app.focus == Pane::Queue;
    let q = &app.queue;
    let past = q.past.as_ref().map(|p| {
        let unlisted = if p.unlisted_bound > 0 {
            format!("+{} bound then, changed since ", p.unlisted_bound)
        } else {
            String::new()
        };
        (format!("⏪ step {} ", p.seq), unlisted)
    });
    let past_w = past
        .as_ref()
        .map_or(0, |(a, b)| a.chars().count() + b.chars().count());
    let key = app.keymap.key(SHOW_BOUND);
    let room = (area.width as usize).saturating_sub(2 + past_w);
    // Unstyled: the pane's title style (focused or not) applies.
    let mut title = vec![span(title(q, &key, room), ratatui::style::Style::default())];
    if let Some((at, unlisted)) = past {
        title.push(span(at, t.warning));
        if !unlisted.is_empty() {
            title.push(span(unlisted, t.muted));
        }
    }
    let mut block = pane(app, Line::from(title), focused);
    // The selected pod in full on the bottom border: names are cut in the rows (and
    // when it does not fit there either, moving the selection puts it on the status line).
    if let Some(row) = app.selected_queue_row() {
        let room = (area.width as usize).saturating_sub(2);
        block = block.title_bottom(Line::from(span(
            fit(&format!(" {} ", selected_text(row)), room),
            t.title,
        )));
    }
    let inner = block.inner(area);
    let visible = layout::visible_rows(area, 0, 0);
    let offset = layout::offset(q.selected, visible);
    let w = inner.width as usize;
    let (name_w, info_w) = columns(w, q.longest.max(8));
    let lines: Vec<Line> = q
        .order
        .iter()
        .enumerate()
        .skip(offset)
        .take(visible)
        .filter_map(|(i, &r)| {
            let row = q.rows.get(r)?;
            let selected = i == q.selected;
            let mut spans = vec![
                span(
                    format!("{} ", row.state.symbol()),
                    state_style(t, row.state),
                ),
                span(q.names.pad(&row.pod, name_w), t.base),
            ];
            if info_w > 0 {
                spans.push(span(format!(" {}", fit(&row.info, info_w)), t.muted));
            }
            let mut line = Line::from(spans);
            if selected && focused {
                line = line.style(t.selection);
            }
            Some(line)
        })
        .collect();
    let empty = lines.is_empty();
    f.render_widget(block, area);
    if empty {
        let msg = match &q.past {
            Some(p) if !p.kept => forgotten(app, p.seq),
            _ if q.rows.is_empty() && q.bound > 0 && !q.show_bound => format!(
                "no pod left to decide: the {} bound are hidden ({key} lists them)",
                q.bound
            ),
            _ if q.rows.is_empty() => "no pods".into(),
            _ if q.bound > 0 && !q.show_bound => format!(
                "no pod to decide matches the filter ({key} lists the {} bound too)",
                q.bound
            ),
            _ => "no pod matches the filter".into(),
        };
        let p = Paragraph::new(span(msg, t.muted)).wrap(ratatui::widgets::Wrap { trim: true });
        f.render_widget(p, inner);
    } else {
        f.render_widget(Paragraph::new(lines), inner);
    }
}

/// The title's text, in `room` columns if it can: how many pods are listed (how many
/// match the filter of them), and how many bound pods are hidden or listed, with the
/// key that shows or hides them; shorter forms for a narrow pane, the key first to go.
/// `Queue 300, 60000 bound hidden (d)`, `Queue 12/60300 incl. 60000 bound (d) /web`.
pub fn title(q: &QueuePane, key: &str, room: usize) -> String {
    // A past queue history no longer keeps has no counts: "0/0" would read as empty.
    if q.past.as_ref().is_some_and(|p| !p.kept) {
        return " Queue ".to_string();
    }
    let listed = q.rows.len();
    let count = if q.filter.is_empty() {
        listed.to_string()
    } else {
        format!("{}/{listed}", q.order.len())
    };
    let b = q.bound;
    let forms: Vec<String> = match (q.show_bound, b) {
        (false, 0) => vec![String::new()],
        (false, b) => vec![
            format!(", {b} bound hidden ({key})"),
            format!(" +{b} bound ({key})"),
            format!(" +{b} bound"),
        ],
        (true, b) => vec![
            format!(" incl. {b} bound ({key})"),
            format!(" incl. {b} bound"),
            format!(" ({b} bound)"),
        ],
    };
    let mut rest = String::new();
    if !q.filter.is_empty() {
        rest.push_str(&format!("/{} ", q.filter));
    }
    if q.sort != Default::default() {
        rest.push_str(&format!("by {} ", q.sort.label()));
    }
    let texts: Vec<String> = forms
        .iter()
        .map(|f| format!(" Queue {count}{f} {rest}"))
        .collect();
    let fits = texts.iter().find(|t| t.chars().count() <= room);
    match fits {
        Some(t) => t.clone(),
        None => {
            let last = texts.last().cloned().unwrap_or_default();
            // Cut, marked, but never below the count.
            let keep = room.max(format!(" Queue {count} ").chars().count());
            format!("{} ", fit(last.trim_end(), keep.saturating_sub(1)))
        }
    }
}

/// The name and status columns of a queue row `w` wide whose longest name is `longest`:
/// names whole with the status beside them when both fit; names losing their middle for
/// a status of [`MIN_INFO`] columns while at least [`MIN_NAME`] are left; else names
/// alone (the symbol gives the state, the bottom border the selected pod's status).
pub fn columns(w: usize, longest: usize) -> (usize, usize) {
    let room = w.saturating_sub(3);
    if longest + MIN_INFO <= room {
        return (longest, room - longest);
    }
    if room >= MIN_NAME + MIN_INFO {
        return (room - MIN_INFO, MIN_INFO);
    }
    (w.saturating_sub(2), 0)
}

const MIN_INFO: usize = 14;
const MIN_NAME: usize = 24;

/// Why a past step's queue is not shown: the budget that no longer keeps it.
fn forgotten(app: &App, seq: u64) -> String {
    let h = &app.session.history.queues;
    let from = h
        .oldest()
        .map(|s| format!(" and now begins at step {s}"))
        .unwrap_or_default();
    format!(
        "the queue at step {seq} is no longer kept: the queue's history holds up to {} rows (half the steps' share of --history){from}; raise --history to keep more; {} returns to now",
        h.max_rows,
        app.keymap.label(crate::action::Command::Live)
    )
}

/// The pane's words when a past step's queue is not kept (for tests: the pane wraps it).
pub fn empty_text(app: &App) -> String {
    match &app.queue.past {
        Some(p) if !p.kept => forgotten(app, p.seq),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::columns;

    #[test]
    fn names_first_then_status() {
        // 80 columns: a 30-column pane shows names alone.
        assert_eq!(columns(28, 34), (26, 0));
        // 120 columns: names lose their middle for a status column.
        assert_eq!(columns(46, 36), (29, 14));
        // Room for both whole.
        assert_eq!(columns(60, 30), (30, 27));
    }
}
