//! Cycle timeline: every extension point in order with its verdict (symbol and code)
//! and time for the attempt shown, as of the step shown (marked `▶`): `–` passed over,
//! `…` not reached yet (or running), `⏸` held at Permit with the time waited.

use std::time::Duration;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use crate::action::Pane;
use crate::app::App;
use crate::components::text::short_duration;
use crate::components::timeline::verdicts::{self, After, Attempt, PointRow, Verdict};
use crate::components::{pad, pane, span};
use crate::framework::Code;
use crate::layout;
use crate::session::{Point, StepRecord};
use crate::step_shown;
use crate::theme::Theme;

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

/// A status code as the timeline names it; `short` fits seven columns.
pub fn code_label(c: Code, short: bool) -> &'static str {
    match (c, short) {
        (Code::Success, _) => "Success",
        (Code::Unschedulable, false) => "Unschedulable",
        (Code::Unschedulable, true) => "Unsched",
        (Code::UnschedulableAndUnresolvable, false) => "Unresolvable",
        (Code::UnschedulableAndUnresolvable, true) => "Unresol",
        (Code::Error, _) => "Error",
        (Code::Wait, _) => "Wait",
        (Code::Skip, _) => "Skip",
        (Code::Pending, _) => "Pending",
    }
}

/// Symbol, label, style and time of a verdict.
fn cells(t: &Theme, v: Verdict, short: bool) -> (&'static str, &'static str, Style, String) {
    match v {
        Verdict::Ran(c, d) => (
            code_symbol(c),
            code_label(c, short),
            code_style(t, c),
            d.map(micros).unwrap_or_default(),
        ),
        Verdict::Running(d) => ("…", "running", t.queue_waiting, micros(d)),
        Verdict::Waiting(d) => ("⏸", "Wait", t.queue_waiting, short_duration(d)),
        Verdict::Waited(c, d) => (
            code_symbol(c),
            code_label(c, short),
            code_style(t, c),
            short_duration(d),
        ),
        Verdict::Pending => ("…", "pending", t.muted, String::new()),
        Verdict::NotRun => ("–", "not run", t.verdict_skip, String::new()),
    }
}

/// The timeline's inputs for the step shown: its attempt's steps so far and what the
/// attempt did next.
fn attempt_rows(app: &App, step: &StepRecord) -> Vec<PointRow> {
    let steps = step_shown::attempt_steps(&app.session, step);
    let parked_then = steps
        .iter()
        .any(|s| s.point == Point::Permit && s.plugin.is_none() && s.code == Code::Wait)
        && !steps.iter().any(|s| s.point == Point::WaitOnPermit);
    let id = step.attempt;
    let after = if parked_then {
        After::Parked
    } else if let Some(next) = step_shown::next_attempt_step(&app.session, step) {
        After::Continues(next.point)
    } else if let Some(a) = app.session.current.as_ref().filter(|a| Some(a.id) == id) {
        After::Continues(a.point())
    } else if app.session.parked().values().any(|a| Some(a.id) == id) {
        After::Parked
    } else {
        After::Ended
    };
    let now = match app.cursor {
        Some(_) => step.at,
        None => app.session.now(),
    };
    verdicts::rows(&Attempt {
        steps: &steps,
        after,
        pre_enqueue: app.moment_attempt().map(|a| a.pre_enqueue),
        now,
    })
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let focused = app.focus == Pane::Timeline;
    let step = app.moment();
    let past = if app.cursor.is_some() { "⏪ " } else { "" };
    let title = match step.and_then(|s| s.attempt) {
        Some(a) => format!(" Cycle · {past}attempt {a} "),
        None => " Cycle ".to_string(),
    };
    let block = pane(app, title, focused);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(step) = step else {
        let hint = format!(
            "no step yet: press {}",
            app.keymap.key(crate::action::Command::Step)
        );
        f.render_widget(Paragraph::new(span(hint, t.muted)), inner);
        return;
    };
    let rows = attempt_rows(app, step);
    let visible = layout::visible_rows(area, 0, 0);
    let sel = if focused {
        app.timeline.selected
    } else {
        rows.iter().position(|r| r.here).unwrap_or(0)
    };
    let offset = layout::offset(sel, visible);
    let w = inner.width as usize;
    // marker + symbol, name, label, time; the name gives way first, then the label.
    const TIME: usize = 6;
    let long = w >= 2 + 1 + 14 + 1 + 13 + 1 + TIME;
    let label_w = if long { 13 } else { 7 };
    let name_w = w.saturating_sub(2 + 1 + 1 + label_w + 1 + TIME).min(14);
    let with_label = name_w >= 8;
    let name_w = if with_label {
        name_w
    } else {
        w.saturating_sub(2 + 1 + 1 + TIME)
    };
    let lines: Vec<Line> = rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(visible)
        .map(|(i, r)| {
            let bp = app
                .session
                .breakpoints
                .contains(&crate::session::Breakpoint::Point(r.point));
            let marker = if r.here {
                "▶"
            } else if bp {
                "●"
            } else {
                " "
            };
            let (sym, label, style, time) = cells(t, r.verdict, !long);
            let reached = !matches!(r.verdict, Verdict::Pending | Verdict::NotRun);
            let name_style = if reached { t.base } else { t.muted };
            let mut spans = vec![
                span(format!("{marker}{sym} "), style),
                span(pad(r.point.as_str(), name_w), name_style),
            ];
            if with_label {
                spans.push(span(format!(" {}", pad(label, label_w)), style));
            }
            spans.push(span(format!(" {time:>TIME$}"), t.muted));
            let mut line = Line::from(spans);
            if r.here {
                line = line.style(t.title);
            }
            if focused && i == app.timeline.selected {
                line = line.style(t.selection);
            }
            line
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}
