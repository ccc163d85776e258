//! Explain: for the pod shown, the outcome and the exact kube-scheduler message, the
//! reasons grouped by plugin with node counts and names (upstream's first failure per
//! node, from the attempt's matrix), preemption (nominated node, victims) and what-if
//! hints, both from re-running the engine on the current cluster (in the background:
//! "computing hints…" until it is done). `text` is also what `y` copies.
//!
//! The Explain tab; `worker.rs` asks the background worker for the explanation and takes
//! its answer.

pub mod worker;

use std::collections::BTreeMap;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::{TabInfo, TabPane, moment_attempts};
use crate::components::{span, wrap_hanging};
use crate::action::Command;
use crate::app::{App, scroll_by};
use crate::components::tabs::filter::order::first_failure;
use crate::framework::cycle::FilterCell;
use crate::step_shown;

/// Characters of node names listed per reason when copying (the screen lists what fits
/// in three lines) before "+N more".
const COPY_NAMES: usize = 4000;

/// The Explain tab's state: the background worker's explanation and the scroll.
#[derive(Debug, Default)]
pub struct ExplainTab {
    /// The explanation of the pod shown, or the one asked for (see `worker.rs`).
    pub cache: Option<worker::ExplainCache>,
    pub scroll: usize,
}

impl TabPane for ExplainTab {
    const INFO: TabInfo = TabInfo {
        title: "Explain",
        command: "tab-explain",
        help: "Explain",
        keys: &["4"],
    };

    const KEYS: &'static [(Command, &'static [&'static str])] = &[(Command::Copy, &["y"])];

    /// `y`, from any tab: the explanation, to the clipboard.
    fn own_command(app: &mut App, c: Command) -> bool {
        if c != Command::Copy {
            return false;
        }
        app.clipboard = Some(text(app, None).join("\n"));
        app.info("explanation copied to the clipboard (OSC 52)");
        true
    }

    fn draw(&self, f: &mut Frame, area: Rect, app: &App) {
        draw(f, area, app)
    }

    /// The attempt of the step shown and the latest attempt of the pod explained.
    fn attempts(app: &App) -> Option<Vec<u64>> {
        let mut ids = moment_attempts(app)?;
        if let Some(pod) = app.subject_pod()
            && let Some(a) = app
                .session
                .history
                .attempts
                .iter()
                .rev()
                .find(|a| a.pod == pod)
        {
            ids.push(a.id);
        }
        Some(ids)
    }

    /// Asks the background worker for the explanation when it is missing or stale.
    fn after_update(app: &mut App) {
        app.ensure_explain();
    }

    fn move_selection(app: &mut App, d: isize) {
        app.tabs.explain.scroll = scroll_by(app.tabs.explain.scroll, d);
    }
}

/// The explanation as plain lines (drawn with styles by `draw`, copied as is); node
/// names per reason fill about three lines of `width` (`None`: copying, many more).
pub fn text(app: &App, width: Option<usize>) -> Vec<String> {
    let names_room = width.map_or(COPY_NAMES, |w| w.saturating_sub(8) * 3);
    let mut out = Vec::new();
    let Some(pod) = app.subject_pod() else {
        let step = app.keymap.key(crate::action::Command::Step);
        out.push(format!("no pod yet: step one with {step}"));
        return out;
    };
    // The attempt shown if it is this pod's, else the pod's latest attempt.
    let attempt = app.moment_attempt().filter(|a| a.pod == pod).or_else(|| {
        let id = app
            .session
            .history
            .attempts
            .iter()
            .rev()
            .find(|a| a.pod == pod)?
            .id;
        step_shown::attempt(&app.session, app.full_detail(id), id, app.moment())
    });
    let record = app.session.record(&pod);
    match record {
        Some(r) => out.push(format!(
            "{pod}: {:?}{}",
            r.status,
            r.node
                .as_ref()
                .map(|n| format!(" on {n}"))
                .unwrap_or_default()
        )),
        None => out.push(pod.clone()),
    }
    if let Some(a) = attempt {
        out.push(format!(
            "attempt {} ({}): {}",
            a.id,
            a.profile,
            a.outcome.unwrap_or("in progress")
        ));
        if let Some(m) = a.message {
            out.push(String::new());
            out.push(m.to_string());
        }
        if let Some(mx) = a.matrix {
            // plugin → reason → nodes, from each node's first failure.
            let mut groups: BTreeMap<&str, BTreeMap<String, Vec<&str>>> = BTreeMap::new();
            // Only the nodes upstream's search examined: the rest it never judged.
            for r in (0..mx.nodes.len()).filter(|&r| mx.was_examined(r)) {
                let Some(c) = first_failure(mx, r, mx.plugins.len()) else {
                    continue;
                };
                let reason = match mx.cell(r, c) {
                    FilterCell::Reject { reasons, .. } => match mx.note(r, c) {
                        Some(n) => format!("{} — {n}", reasons.join(", ")),
                        None => reasons.join(", "),
                    },
                    FilterCell::Error { message } => format!("error: {message}"),
                    _ => continue,
                };
                groups
                    .entry(mx.plugins[c])
                    .or_default()
                    .entry(reason)
                    .or_default()
                    .push(a.names.get(mx.nodes[r]));
            }
            if !groups.is_empty() {
                out.push(String::new());
                out.push("Reasons by plugin (upstream's first failure per node):".into());
                for (plugin, reasons) in &groups {
                    let n: usize = reasons.values().map(Vec::len).sum();
                    out.push(format!("  {plugin}: {n} node(s)"));
                    for (reason, nodes) in reasons {
                        out.push(format!(
                            "    {reason} — {}: {}",
                            nodes.len(),
                            listed(nodes, names_room)
                        ));
                    }
                }
            }
        }
    } else {
        out.push("not attempted yet".into());
    }
    match &app.tabs.explain.cache {
        Some(c) if c.pod == pod && c.outcome.is_none() => {
            out.push(String::new());
            out.push("Re-run on the current cluster (kubestep explain):".into());
            out.push("  computing hints…".into());
        }
        Some(c)
            if c.pod == pod
                && let Some(o) = &c.outcome =>
        {
            out.push(String::new());
            match &o.result {
                Ok(e) => {
                    out.push("Re-run on the current cluster (kubestep explain):".into());
                    match (&e.bound, &e.message) {
                        (Some(n), _) => out.push(format!(
                            "  would bind to {n} ({} feasible)",
                            e.feasible.len()
                        )),
                        (None, Some(m)) => out.push(format!("  {m}")),
                        // Gated or already bound: the engine's own words.
                        (None, None) => {
                            out.push(format!("  {}", kubestep_engine::explain::text::verdict(e)))
                        }
                    }
                    if let Some(n) = &e.nominated_node {
                        out.push(format!("  preemption: nominated node {n}"));
                    }
                    if !e.victims.is_empty() {
                        out.push(format!("  preemption victims: {}", e.victims.join(", ")));
                    } else if e.message.is_some() && e.nominated_node.is_none() {
                        out.push("  preemption: no candidate node".into());
                    }
                    if !e.closest.is_empty() {
                        out.push(String::new());
                        out.push("How close the rejected nodes came:".into());
                        out.extend(e.closest.iter().map(|c| format!("  {}", c.summary)));
                    }
                    if !o.hints.is_empty() {
                        out.push(String::new());
                        out.push(
                            "What-if (kubestep's hints, each confirmed by re-running the engine):"
                                .into(),
                        );
                        for h in &o.hints {
                            out.push(format!("  ✓ {}", h.text));
                        }
                    }
                }
                Err(e) => out.push(format!("re-run failed: {e}")),
            }
        }
        _ => {
            out.push(String::new());
            out.push("(engine re-run and what-if hints: open this tab while paused)".into());
        }
    }
    out
}

/// `nodes` sorted, as many as fit in `room` characters, then `+N more`.
fn listed(nodes: &[&str], room: usize) -> String {
    let mut sorted = nodes.to_vec();
    sorted.sort_unstable();
    let mut out = String::new();
    for (i, n) in sorted.iter().enumerate() {
        let more = sorted.len() - i;
        // Keep room for the count of those left out.
        let tail = if more > 1 { 12 } else { 0 };
        if i > 0 && out.chars().count() + n.chars().count() + 2 + tail > room {
            out.push_str(&format!(", +{more} more"));
            return out;
        }
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(n);
    }
    out
}

fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let width = area.width as usize;
    let lines: Vec<Line> = text(app, Some(width))
        .into_iter()
        .enumerate()
        .flat_map(|(i, l)| {
            let style = if i == 0 || l.starts_with("0/") || l.ends_with(':') && !l.starts_with(' ')
            {
                t.title
            } else if l.starts_with("  ✓") {
                t.what_if
            } else {
                t.base
            };
            // Continuations under the line's own text, not at column 0.
            wrap_hanging(&l, width, 2)
                .into_iter()
                .map(move |part| Line::from(span(part, style)))
        })
        .collect();
    f.render_widget(
        Paragraph::new(lines).scroll((app.tabs.explain.scroll.min(u16::MAX as usize) as u16, 0)),
        area,
    );
}
