//! Header / status line: the Kubernetes version followed, source, profile, time, speed,
//! running or paused, the pod and extension point shown, queue counts, and whether this
//! is a past moment. The queue counts stay at 80 columns: the other parts shorten first.

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
    let state_at = spans.len();
    let short_state = match (&app.live, app.running) {
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
            // Live mode's words say what kubestep does to the cluster: they stay.
            None
        }
        (None, true) => {
            spans.push(span(format!("▶ running {} ", app.speed_label()), t.running));
            let speed = if app.sprint {
                "to bp"
            } else {
                app.speed_label()
            };
            Some(span(format!("▶ {speed} "), t.running))
        }
        (None, false) => {
            spans.push(span(format!("⏸ paused {} ", app.speed_label()), t.paused));
            Some(span(format!("⏸ {} ", app.speed_label()), t.paused))
        }
    };
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
    let pod = moment.map(|s| {
        let plugin = s
            .plugin
            .as_deref()
            .map(|p| format!(" {p}"))
            .unwrap_or_default();
        format!(
            "│ {} @ {}{plugin} ",
            s.pod.as_deref().unwrap_or("-"),
            s.point.as_str()
        )
    });
    // Live shadow mode parks the pods kubestep would bind until the cluster's scheduler
    // binds them: counted apart from unschedulable, as the queue pane lists them. It
    // holds nothing at Permit (waits are simulated), so that count gives way.
    let awaiting = app.shadow() || counts.awaiting > 0;
    let waiting = !app.shadow() || counts.waiting > 0;
    // Full labels, or short ones (narrow terminals); without the queues that are
    // empty, bound aside, at the narrowest.
    let counts_with = |labels: [&str; 7], zeros: bool| {
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
            .filter(|(i, (_, n))| match i {
                3 => awaiting && (zeros || *n > 0),
                5 => waiting && (zeros || *n > 0),
                6 => true,
                _ => zeros || *n > 0,
            })
            .map(|(_, (l, n))| format!("{l} {n}"))
            .collect();
        format!("│ {} ", parts.join(" "))
    };
    const FULL: [&str; 7] = [
        "active", "backoff", "unsched", "awaiting", "gated", "waiting", "bound",
    ];
    const SHORT: [&str; 7] = ["act", "bo", "uns", "aw", "gate", "wait", "bound"];
    let width = area.width as usize;
    let used = |spans: &[Span]| spans.iter().map(Span::width).sum::<usize>();
    let pod_w = pod.as_ref().map_or(0, |p| p.chars().count());
    // The queue counts are shown whole, at 80 columns too: the other parts give way to
    // them, the cheapest first. With the pod and point shown, a narrow terminal gets
    // the short labels rather than a number cut in half, then loses the replay clock's
    // label and where the replay ends (a live session keeps "wall", which says the
    // clock is real).
    let mut counts_text = counts_with(FULL, true);
    if used(&spans) + pod_w + counts_text.chars().count() > width {
        counts_text = counts_with(SHORT, true);
        if used(&spans) + pod_w + counts_text.chars().count() > width && clock == "virtual" {
            spans[time_at] = span(format!("│ {} ", session_time(app, at)), t.header);
        }
    }
    // Then, for the counts and for the start of the pod and point shown: the
    // program's name, the words of the state (its symbol stays). The pod and point go
    // last (the Cycle pane names them too): cut, or left out when not even the start
    // of a name would show.
    let counts_w = counts_text.chars().count();
    let mut steps: Vec<(usize, Span)> = vec![(0, span(" ", t.title))];
    if let Some(short) = short_state {
        steps.push((state_at, short));
    }
    let short_by =
        |spans: &[Span], extra: usize| (used(spans) + counts_w + extra).saturating_sub(width);
    let saves: usize = steps
        .iter()
        .map(|(i, s)| spans[*i].width().saturating_sub(s.width()))
        .sum();
    // The pod's start is worth the steps only when they make room for it.
    let pod_need = pod_w.min(MIN_POD);
    let extra = if short_by(&spans, pod_need) <= saves {
        pod_need
    } else {
        0
    };
    for (i, s) in steps {
        if short_by(&spans, extra) == 0 {
            break;
        }
        spans[i] = s;
    }
    // Last, the queues that are empty (a past step's `⏪ step 28/29` at 80 columns).
    if short_by(&spans, 0) > 0 {
        counts_text = counts_with(SHORT, false);
    }
    let counts_w = counts_text.chars().count();
    let room = width.saturating_sub(used(&spans) + counts_w);
    if let Some(p) = pod {
        if pod_w <= room {
            spans.push(span(p, t.header));
        } else if room >= MIN_POD {
            let text = super::fit(p.trim_end(), room - 1);
            spans.push(span(format!("{text} "), t.header));
        }
    }
    if used(&spans) + counts_w > width {
        let spans = fit_spans(spans, width);
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
    let spans = fit_spans(spans, width);
    f.render_widget(Paragraph::new(Line::from(spans)).style(t.header), area);
}

/// The fewest columns a part cut by the screen's edge keeps (`│ dem…`).
const MIN_PART: usize = 6;

/// The fewest columns the pod and point shown keep when cut (`│ ml/llm-fine… `): fewer
/// would name no pod.
const MIN_POD: usize = 16;

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
/// screen's edge must not read as a whole one); a part with less room than a word
/// (`│ …`) is left out rather than shown as a stub.
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
        if w - used >= MIN_PART {
            let text = super::fit(s.content.trim_end(), w - used);
            out.push(Span::styled(text, s.style));
        }
        break;
    }
    out
}
