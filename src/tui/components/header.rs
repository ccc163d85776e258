//! Header / status line: the Kubernetes version followed, source, profile, time, speed,
//! running or paused, the pod and extension point shown, queue counts, and whether this
//! is a past moment.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::span;
use crate::app::App;
use kubestep_live::link::Health;

/// Virtual time since the session started, `+HH:MM:SS.s`.
pub fn session_time(app: &App, at: jiff::Timestamp) -> String {
    let d = crate::session::clock::since(at, app.start);
    let s = d.as_secs();
    format!(
        "+{:02}:{:02}:{:02}.{}",
        s / 3600,
        (s % 3600) / 60,
        s % 60,
        d.subsec_millis() / 100
    )
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let moment = app.moment();
    let at = match (app.cursor, moment) {
        (Some(_), Some(s)) => s.at,
        _ => app.session.now(),
    };
    let counts = match (app.cursor, moment) {
        (Some(_), Some(s)) => s.queue,
        _ => app.queue.counts,
    };
    let profile = app
        .moment_attempt()
        .map(|a| a.profile.to_string())
        .unwrap_or_else(|| app.session.frameworks()[0].profile_name.clone());
    // Live mode's session clock follows the wall clock.
    let clock = if app.session.clock().is_virtual() && !app.is_live() {
        "virtual"
    } else {
        "wall"
    };
    // Most telling first: a narrow terminal cuts the end. The version whose semantics
    // decide is never cut: scores of another version's rules would mislead.
    let mut spans: Vec<Span> = vec![
        span(" kubestep ", t.title),
        span(format!("{} ", version_label(app)), t.header),
    ];
    match (&app.live, app.running) {
        (Some(l), running) => {
            let (label, style) = if running {
                ("▶ live", t.running)
            } else {
                ("⏸ paused", t.paused)
            };
            spans.push(span(format!("{label} {} ", l.mode()), style));
            let (health, text) = &l.health;
            let style = match health {
                Health::Connected => t.header,
                Health::Recovering => t.warning,
                Health::Denied => t.error,
            };
            spans.push(span(format!("│ {text} "), style));
        }
        (None, true) => spans.push(span(format!("▶ running {} ", app.speed_label()), t.running)),
        (None, false) => spans.push(span(format!("⏸ paused {} ", app.speed_label()), t.paused)),
    }
    // Problems (config, theme, keys, bad input lines) right after the state: the edge
    // of a narrow terminal cuts the end, never this.
    if !app.warnings.is_empty() {
        spans.push(span(format!("│ ⚠ {} ", app.warnings.len()), t.warning));
    }
    let time_at = spans.len();
    // Where a replay's virtual time runs to.
    let end = match (app.end, &app.live) {
        (Some(e), None) => format!(" / {}", session_time(app, e)),
        _ => String::new(),
    };
    spans.push(span(
        format!("│ {clock} {}{end} ", session_time(app, at)),
        t.header,
    ));
    if let (Some(c), Some(last)) = (app.cursor, app.session.history.last()) {
        spans.push(span(format!("│ ⏪ step {c}/{} ", last.seq), t.warning));
    }
    let pod_at = moment.map(|_| spans.len());
    if let Some(s) = moment {
        let plugin = s
            .plugin
            .as_deref()
            .map(|p| format!(" {p}"))
            .unwrap_or_default();
        spans.push(span(
            format!(
                "│ {} @ {}{plugin} ",
                s.pod.as_deref().unwrap_or("-"),
                s.point.as_str()
            ),
            t.header,
        ));
    }
    // Live shadow mode parks the pods kubestep would bind until the cluster's scheduler
    // binds them: counted apart from unschedulable, as the queue pane lists them. It
    // holds nothing at Permit (waits are simulated), so that count gives way.
    let awaiting = app.shadow() || counts.awaiting > 0;
    let waiting = !app.shadow() || counts.waiting > 0;
    // Full labels, or short ones (narrow terminals).
    let counts_with = |labels: [&str; 7]| {
        let n = [
            counts.active,
            counts.backoff,
            counts.unschedulable,
            counts.awaiting,
            counts.gated,
            counts.waiting,
            counts.bound,
        ];
        let parts: Vec<String> = labels
            .iter()
            .zip(n)
            .enumerate()
            .filter(|(i, _)| match i {
                3 => awaiting,
                5 => waiting,
                _ => true,
            })
            .map(|(_, (l, n))| format!("{l} {n}"))
            .collect();
        format!("│ {} ", parts.join(" "))
    };
    let full = counts_with([
        "active", "backoff", "unsched", "awaiting", "gated", "waiting", "bound",
    ]);
    let used: usize = spans.iter().map(Span::width).sum();
    // A narrow terminal gets the short labels rather than a number cut in half.
    let counts_text = if used + full.chars().count() <= area.width as usize {
        full
    } else {
        let short = counts_with(["act", "bo", "uns", "aw", "gate", "wait", "bound"]);
        if used + short.chars().count() > area.width as usize && clock == "virtual" {
            // Still too wide (80 columns): the counts matter more than the replay clock's
            // label (a live session keeps "wall", which says the clock is real).
            spans[time_at] = span(format!("│ {} ", session_time(app, at)), t.header);
        }
        short
    };
    // Counts are shown whole or not at all; the pod and point shown give way to them
    // first (the Cycle pane names them too), the rest may be cut by the edge.
    let used: usize = spans.iter().map(Span::width).sum();
    let over = (used + counts_text.chars().count()).saturating_sub(area.width as usize);
    if let Some(i) = pod_at.filter(|_| over > 0) {
        let keep = spans[i].width().saturating_sub(over + 1);
        if keep >= 8 {
            let text = super::fit(spans[i].content.trim_end(), keep);
            spans[i] = span(format!("{text} "), t.header);
        }
    }
    let used: usize = spans.iter().map(Span::width).sum();
    if used + counts_text.chars().count() > area.width as usize {
        let spans = fit_spans(spans, area.width as usize);
        f.render_widget(Paragraph::new(Line::from(spans)).style(t.header), area);
        return;
    }
    spans.push(span(counts_text, t.header));
    if !app.session.breakpoints.is_empty() {
        spans.push(span(
            format!("│ ● {} bp ", app.session.breakpoints.len()),
            t.header,
        ));
    }
    spans.push(span(format!("│ {} │ {profile} ", app.source), t.header));
    let spans = fit_spans(spans, area.width as usize);
    f.render_widget(Paragraph::new(Line::from(spans)).style(t.header), area);
}

/// `k8s v1.36`, with `+gates` when feature gates differ from the version's defaults and
/// `unchecked` for a version no real scheduler checked (the Logs pane has the details).
pub fn version_label(app: &App) -> String {
    let f = &app.session.config().features;
    let mut label = format!("k8s {}", f.kube_version());
    if !f.gates.non_default().is_empty() {
        label.push_str("+gates");
    }
    if f.choice.caveat().is_some() {
        label.push_str(" unchecked");
    }
    label
}

/// `spans` cut to `w` columns, the cut marked with `…` (a pod name or plugin cut by the
/// screen's edge must not read as a whole one).
fn fit_spans(spans: Vec<Span<'static>>, w: usize) -> Vec<Span<'static>> {
    let total: usize = spans.iter().map(Span::width).sum();
    if total <= w {
        return spans;
    }
    let mut out = Vec::new();
    let mut used = 0;
    for s in spans {
        let n = s.content.chars().count();
        if used + n < w {
            used += n;
            out.push(s);
            continue;
        }
        let text = super::fit(s.content.trim_end(), w - used);
        out.push(Span::styled(text, s.style));
        break;
    }
    out
}
