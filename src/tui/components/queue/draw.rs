//! How the Queue pane is drawn: every pod by where it is (in flight, activeQ, backoffQ
//! with time left, unschedulable with the last reason, gated, waiting, bound); at a past
//! step, the queue as it was then (title marked ⏪).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::pods::{QState, QueueRow};
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
    // A past queue history no longer keeps has no counts: "0/0" would read as empty.
    let mut title = match &q.past {
        Some(p) if !p.kept => " Queue ".to_string(),
        _ => format!(" Queue {}/{} ", q.order.len(), q.rows.len()),
    };
    if !q.filter.is_empty() {
        title.push_str(&format!("/{} ", q.filter));
    }
    if q.sort != Default::default() {
        title.push_str(&format!("by {} ", q.sort.label()));
    }
    // Unstyled: the pane's title style (focused or not) applies.
    let mut title = vec![span(title, ratatui::style::Style::default())];
    if let Some(p) = &q.past {
        title.push(span(format!("⏪ step {} ", p.seq), t.warning));
        if p.unlisted_bound > 0 {
            title.push(span(
                format!("+{} bound then, changed since ", p.unlisted_bound),
                t.muted,
            ));
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
            Some(p) if !p.kept => format!(
                "the queue at step {} is not kept (history keeps the latest changes, and none of the steps run at full speed); {} returns to now",
                p.seq,
                app.keymap.label(crate::action::Command::Live)
            ),
            _ if q.rows.is_empty() => "no pods".into(),
            _ => "no pod matches the filter".into(),
        };
        let p = Paragraph::new(span(msg, t.muted)).wrap(ratatui::widgets::Wrap { trim: true });
        f.render_widget(p, inner);
    } else {
        f.render_widget(Paragraph::new(lines), inner);
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
