//! How the Waiting pane is drawn: one row per pod and plugin, with the time left (a live
//! countdown on the session clock); at a past step, who waited then (marked ⏪).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};

use crate::action::Pane;
use crate::app::App;
use crate::components::text::short_duration;
use crate::components::{Elider, pane, span};
use crate::layout;

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let focused = app.focus == Pane::Waiting;
    // Shadow mode writes nothing: its waits are kubestep's simulation, never the cluster's.
    let simulated = if app.shadow() { "· simulated " } else { "" };
    // PreBind waits (device binding conditions) are counted apart: no key ends them. A
    // past step's count holds both kinds of wait.
    let pre_bind = app
        .waiting
        .rows
        .iter()
        .filter(|r| r.pre_bind.is_some())
        .count();
    let count = match &app.queue.past {
        Some(p) => p.waiting.saturating_sub(pre_bind),
        None => app.pods_waiting(),
    };
    let pre_bind = if pre_bind > 0 {
        format!("· PreBind {pre_bind} ")
    } else {
        String::new()
    };
    // Unstyled: the pane's title style (focused or not) applies.
    let mut title = vec![span(
        format!(" Waiting at Permit {count} {pre_bind}{simulated}"),
        ratatui::style::Style::default(),
    )];
    if let Some(p) = &app.queue.past {
        title.push(span(format!("⏪ step {} ", p.seq), t.warning));
    }
    let block = pane(app, Line::from(title), focused);
    let inner = block.inner(area);
    f.render_widget(block, area);
    if app.waiting.rows.is_empty() {
        let empty = match &app.queue.past {
            Some(p) if !p.kept => "not kept for this step",
            Some(_) => "no pod waited at Permit then",
            None if app.shadow() => {
                "shadow mode holds nothing at Permit: pods a Permit plugin would hold are listed in the queue as waiting (simulated)"
            }
            None => "no pod waits at Permit",
        };
        let p = Paragraph::new(span(empty, t.muted)).wrap(Wrap { trim: true });
        f.render_widget(p, inner);
        return;
    }
    // Countdowns at a past step are as they stood then.
    let now = app.shown_time();
    let visible = layout::visible_rows(area, 0, 0);
    let offset = layout::offset(app.waiting.selected, visible);
    let w = inner.width as usize;
    let names = Elider::of(app.waiting.rows.iter().map(|r| r.pod.as_str()));
    let lines: Vec<Line> = app
        .waiting
        .rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(visible)
        .map(|(i, r)| {
            let (mark, left, style) = if r.allowed {
                ("✓", "allowed".to_string(), t.verdict_pass)
            } else {
                let left = r
                    .deadline
                    .map(|d| short_duration(crate::session::clock::since(d, now)))
                    .unwrap_or_default();
                ("⏸", left, t.queue_waiting)
            };
            let plugin = if w < 44 {
                crate::components::tabs::filter::draw::abbrev(&r.plugin)
            } else {
                r.plugin.clone()
            };
            let at = if r.pre_bind.is_some() { " PreBind" } else { "" };
            let tail = format!(" {plugin}{at} {left}");
            let name_w = w.saturating_sub(tail.chars().count() + 2);
            let mut line = Line::from(vec![
                span(format!("{mark} "), style),
                span(names.shorten(&r.pod, name_w), t.base),
                span(tail, t.muted),
            ]);
            if i == app.waiting.selected && focused {
                line = line.style(t.selection);
            }
            line
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}
