//! Cycle timeline: every extension point in order with its status and time for the
//! attempt shown, the step shown marked `▶`, points not reached `·`.

use std::time::Duration;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::{pad, pane, span};
use crate::framework::Code;
use crate::session::Point;
use crate::tui::action::Pane;
use crate::tui::app::App;
use crate::tui::layout;
use crate::tui::moment;
use crate::tui::theme::Theme;

pub fn code_symbol(c: Code) -> &'static str {
    match c {
        Code::Success => "✓",
        Code::Unschedulable | Code::UnschedulableAndUnresolvable => "✗",
        Code::Error => "!",
        Code::Wait => "⏸",
        Code::Skip => "–",
        Code::Pending => "…",
    }
}

pub fn code_style(t: &Theme, c: Code) -> ratatui::style::Style {
    match c {
        Code::Success => t.verdict_pass,
        Code::Unschedulable | Code::UnschedulableAndUnresolvable => t.verdict_fail,
        Code::Error => t.verdict_error,
        Code::Wait | Code::Pending => t.queue_waiting,
        Code::Skip => t.verdict_skip,
    }
}

/// How much a status says about a point: Skip < Success < Pending < Wait < rejections < Error.
fn rank(c: Code) -> u8 {
    match c {
        Code::Skip => 0,
        Code::Success => 1,
        Code::Pending => 2,
        Code::Wait => 3,
        Code::Unschedulable => 4,
        Code::UnschedulableAndUnresolvable => 5,
        Code::Error => 6,
    }
}

pub fn micros(d: Duration) -> String {
    let us = d.as_micros();
    if us >= 10_000 {
        format!("{}ms", us / 1000)
    } else if us >= 1000 {
        format!("{:.1}ms", us as f64 / 1000.0)
    } else {
        format!("{us}µs")
    }
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let focused = app.focus == Pane::Timeline;
    let step = app.moment();
    let title = match step.and_then(|s| s.attempt) {
        Some(a) => format!(" Cycle · attempt {a} "),
        None => " Cycle ".to_string(),
    };
    let block = pane(app, title, focused);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(step) = step else {
        f.render_widget(Paragraph::new(span("no step yet: press n", t.muted)), inner);
        return;
    };
    let steps = moment::attempt_steps(&app.session, step);
    // Per point: the last status and the summed time.
    let mut per: Vec<(Point, Option<Code>, Duration)> = Point::ALL
        .iter()
        .map(|p| (*p, None, Duration::ZERO))
        .collect();
    for s in &steps {
        if let Some(e) = per.iter_mut().find(|e| e.0 == s.point) {
            // The point's verdict is its worst plugin status (Skip only if all skipped).
            e.1 = match e.1 {
                Some(prev) if rank(prev) >= rank(s.code) => Some(prev),
                _ => Some(s.code),
            };
            e.2 += s.duration;
        }
    }
    let visible = layout::visible_rows(area, 0, 0);
    let sel = if focused {
        app.timeline_selected
    } else {
        Point::ALL
            .iter()
            .position(|p| *p == step.point)
            .unwrap_or(0)
    };
    let offset = layout::offset(sel, visible);
    let w = inner.width as usize;
    let lines: Vec<Line> = per
        .iter()
        .enumerate()
        .skip(offset)
        .take(visible)
        .map(|(i, (p, code, d))| {
            let here = *p == step.point;
            let bp = app
                .session
                .breakpoints
                .contains(&crate::session::Breakpoint::Point(*p));
            let marker = if here {
                "▶"
            } else if bp {
                "●"
            } else {
                " "
            };
            let (sym, style) = match code {
                Some(c) => (code_symbol(*c), code_style(t, *c)),
                None => ("·", t.muted),
            };
            let dur = if code.is_some() {
                micros(*d)
            } else {
                String::new()
            };
            let name_w = w.saturating_sub(4 + 8);
            let name_style = if code.is_some() { t.base } else { t.muted };
            let mut line = Line::from(vec![
                span(format!("{marker}{sym} "), style),
                span(pad(p.as_str(), name_w), name_style),
                span(format!("{dur:>8}"), t.muted),
            ]);
            if here {
                line = line.style(t.title);
            }
            if focused && i == app.timeline_selected {
                line = line.style(t.selection);
            }
            line
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}
