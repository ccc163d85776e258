//! Node / pod detail: for a node, allocatable vs requested bars, taints, labels and the
//! pods on it; for a pod, its record; then the object as YAML.
//!
//! The Detail tab: what it shows (a node or pod picked elsewhere, else the pod of the
//! moment) and how far it is scrolled.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use crate::components::span;
use super::{TabInfo, TabPane};
use crate::app::{App, scroll_by};
use crate::theme::Theme;
use crate::framework::node_info::NodeInfo;
use crate::session::then::PodThen;
use kubestep_engine::plugins::dynamicresources::describe;

/// What the Detail tab shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DetailTarget {
    Node(String),
    Pod(String),
}

/// The Detail tab's state.
#[derive(Debug, Default)]
pub struct DetailTab {
    /// Picked elsewhere (a node in Filter or Score, a pod in the queue or waiting).
    pub target: Option<DetailTarget>,
    pub scroll: usize,
    /// At a past step: the target as it was then (read from the world's versions once
    /// per step and target, drawn from here).
    pub then: Option<Then>,
}

/// The object shown, as it was at a past step.
#[derive(Debug)]
pub struct Then {
    pub seq: u64,
    pub target: DetailTarget,
    /// The step's attempt (session-wide number) and the step it began at: the world
    /// read is the one it started in.
    pub attempt: Option<(u64, u64)>,
    pub object: Result<ThenObject, String>,
}

#[derive(Debug)]
pub enum ThenObject {
    Pod(PodThen),
    Node(Option<Box<NodeInfo>>),
}

impl Then {
    /// Reads `target` as it was at step `seq`.
    fn read(app: &mut App, seq: u64, target: DetailTarget) -> Then {
        let s = &mut app.session;
        let attempt = s.attempt_start_of_step(seq);
        let object = match &target {
            DetailTarget::Pod(key) => s.pod_then(seq, key).map(ThenObject::Pod),
            DetailTarget::Node(name) => s
                .node_then(seq, name)
                .map(|n| ThenObject::Node(n.map(Box::new))),
        }
        .map_err(|e| e.to_string());
        Then {
            seq,
            target,
            attempt,
            object,
        }
    }
}

impl DetailTab {
    /// Shows `target` from its top.
    pub fn open(&mut self, target: DetailTarget) {
        self.target = Some(target);
        self.scroll = 0;
    }

    /// Enter on a node row (Filter, Score): that node, in this tab.
    pub fn show_node(app: &mut App, node: Option<String>) {
        if let Some(n) = node {
            app.tabs.detail.open(DetailTarget::Node(n));
            app.tab = crate::action::Tab::Detail;
        }
    }
}

impl TabPane for DetailTab {
    const INFO: TabInfo = TabInfo {
        title: "Detail",
        command: "tab-detail",
        help: "Node / pod detail",
        keys: &["5"],
    };

    fn draw(&self, f: &mut Frame, area: Rect, app: &App) {
        // YAML and long values wrap under their own key, not at column 0.
        let w = area.width as usize;
        let wrapped: Vec<Line> = lines(app)
            .into_iter()
            .flat_map(|l| crate::components::wrap_line_hanging(l, w, 2))
            .collect();
        f.render_widget(
            Paragraph::new(wrapped).scroll((self.scroll.min(u16::MAX as usize) as u16, 0)),
            area,
        );
    }

    fn move_selection(app: &mut App, d: isize) {
        app.tabs.detail.scroll = scroll_by(app.tabs.detail.scroll, d);
    }

    /// At a past step, reads what is shown as it was then (once per step and target).
    fn after_update(app: &mut App) {
        let (Some(seq), Some(t)) = (app.cursor, target(app)) else {
            app.tabs.detail.then = None;
            return;
        };
        let fresh = app
            .tabs
            .detail
            .then
            .as_ref()
            .is_some_and(|x| x.seq == seq && x.target == t);
        if !fresh {
            app.tabs.detail.then = Some(Then::read(app, seq, t));
        }
    }
}

const BAR: usize = 20;

fn bar<'a>(
    t: &Theme,
    label: &str,
    used: i64,
    total: i64,
    unit: &dyn Fn(i64) -> String,
) -> Line<'a> {
    let frac = if total > 0 {
        (used as f64 / total as f64).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let filled = (frac * BAR as f64).round() as usize;
    let style = if frac >= 0.9 {
        t.verdict_fail
    } else if frac >= 0.7 {
        t.score_low
    } else {
        t.verdict_pass
    };
    Line::from(vec![
        span(format!("{label:<10}"), t.title),
        span("█".repeat(filled), style),
        span("░".repeat(BAR - filled), t.muted),
        span(
            format!(" {} / {} ({:.0}%)", unit(used), unit(total), frac * 100.0),
            t.base,
        ),
    ])
}

fn mib(v: i64) -> String {
    format!("{}Mi", v / (1024 * 1024))
}

/// What the Detail tab shows when nothing was picked: the pod of the moment.
pub fn target(app: &App) -> Option<DetailTarget> {
    app.tabs
        .detail
        .target
        .clone()
        .or_else(|| app.subject_pod().map(DetailTarget::Pod))
}

pub fn lines(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut out: Vec<Line> = Vec::new();
    match target(app) {
        None => out.push(Line::from(span(
            format!(
                "nothing selected: {} on a node (matrix, scores) or a pod",
                app.keymap.key(crate::action::Command::Select)
            ),
            t.muted,
        ))),
        Some(DetailTarget::Node(name)) => {
            let then = past_then(app, &DetailTarget::Node(name.clone()));
            let ni = match then {
                Some(then) => {
                    out.push(Line::from(span(format!("Node {name}"), t.title)));
                    out.push(Line::from(span(as_of(then), t.warning)));
                    match &then.object {
                        Ok(ThenObject::Node(Some(ni))) => ni,
                        Ok(_) => {
                            out.push(Line::from(span(
                                format!("node {name} was not in the cluster then"),
                                t.warning,
                            )));
                            return out;
                        }
                        Err(e) => {
                            out.push(Line::from(span(e.clone(), t.warning)));
                            return out;
                        }
                    }
                }
                None => {
                    let Some(ni) = app.session.snapshot().get(&name) else {
                        out.push(Line::from(span(
                            format!("node {name} is no longer in the cluster"),
                            t.warning,
                        )));
                        return out;
                    };
                    out.push(Line::from(span(format!("Node {name}"), t.title)));
                    ni
                }
            };
            let (a, r) = (&ni.allocatable, &ni.requested);
            out.push(bar(t, "cpu", r.milli_cpu, a.milli_cpu, &|v| {
                format!("{v}m")
            }));
            out.push(bar(t, "memory", r.memory, a.memory, &mib));
            out.push(bar(
                t,
                "pods",
                ni.pods.len() as i64,
                a.allowed_pod_number,
                &|v| v.to_string(),
            ));
            for (res, total) in &a.scalar_resources {
                let used = r.scalar_resources.get(res).copied().unwrap_or(0);
                out.push(bar(t, res, used, *total, &|v| v.to_string()));
            }
            let taints: Vec<String> = ni
                .taints()
                .iter()
                .map(|x| {
                    format!(
                        "{}={}:{}",
                        x.key,
                        x.value.as_deref().unwrap_or(""),
                        x.effect
                    )
                })
                .collect();
            out.push(Line::from(vec![
                span("taints    ", t.title),
                span(
                    if taints.is_empty() {
                        "(none)".into()
                    } else {
                        taints.join(", ")
                    },
                    t.base,
                ),
            ]));
            if ni.unschedulable() {
                out.push(Line::from(span("spec.unschedulable: true", t.warning)));
            }
            out.push(Line::from(span("labels", t.title)));
            for (k, v) in ni.labels().iter() {
                out.push(Line::from(span(format!("  {k}={v}"), t.base)));
            }
            let dra = describe::node_lines(&app.session.cluster().listers, ni.node());
            if !dra.is_empty() {
                // Devices are read from the cluster as it is.
                let now = if app.cursor.is_some() { "now: " } else { "" };
                out.push(Line::from(span(format!("{now}dynamic resources"), t.title)));
                out.extend(
                    dra.into_iter()
                        .map(|l| Line::from(span(format!("  {l}"), t.base))),
                );
            }
            out.push(Line::from(span(
                format!("pods ({})", ni.pods.len()),
                t.title,
            )));
            for p in &ni.pods {
                let r = &p.resource.resource;
                out.push(Line::from(span(
                    format!("  {} cpu {}m mem {}", p.key, r.milli_cpu, mib(r.memory)),
                    t.base,
                )));
            }
            yaml(
                app,
                &mut out,
                serde_saphyr::to_string(ni.node()).map_err(|e| e.to_string()),
            );
        }
        Some(DetailTarget::Pod(key)) => {
            out.push(Line::from(span(format!("Pod {key}"), t.title)));
            // Time travel: what the history says of the pod at the step shown, and the
            // object as it was then; the record line is the present, and says so.
            let past = app.cursor.and_then(|_| app.moment());
            if let Some(step) = past {
                out.push(Line::from(span(
                    format!("⏪ at step {}: {}", step.seq, pod_then(app, &key, step)),
                    t.warning,
                )));
            }
            let now = if past.is_some() { "now: " } else { "" };
            if let Some(r) = app.session.record(&key) {
                out.push(Line::from(span(
                    format!(
                        "{now}status {:?}{} · the pod's attempts: {}{}",
                        r.status,
                        r.node
                            .as_ref()
                            .map(|n| format!(" on {n}"))
                            .unwrap_or_default(),
                        r.attempts,
                        r.message
                            .as_ref()
                            .map(|m| format!(" · {m}"))
                            .unwrap_or_default()
                    ),
                    t.base,
                )));
            }
            if let Some(then) = past_then(app, &DetailTarget::Pod(key.clone())) {
                out.push(Line::default());
                let pod = match &then.object {
                    Ok(ThenObject::Pod(PodThen::Popped(p))) => {
                        let by = match then.attempt {
                            Some((id, first)) => format!(" session attempt #{id} (step {first})"),
                            None => " its attempt".to_string(),
                        };
                        out.push(Line::from(span(
                            format!("⏪ as at step {}: the pod as{by} popped it", then.seq),
                            t.warning,
                        )));
                        Some(p.clone())
                    }
                    Ok(ThenObject::Pod(PodThen::Bound(p) | PodThen::Pending(p))) => {
                        out.push(Line::from(span(as_of(then), t.warning)));
                        Some(p.clone())
                    }
                    Ok(_) => {
                        out.push(Line::from(span(
                            format!("{}: not in the cluster", as_of(then)),
                            t.warning,
                        )));
                        None
                    }
                    Err(e) => {
                        out.push(Line::from(span(e.clone(), t.warning)));
                        None
                    }
                };
                if let Some(p) = pod {
                    yaml(
                        app,
                        &mut out,
                        serde_saphyr::to_string(p.as_ref()).map_err(|e| e.to_string()),
                    );
                }
                return out;
            }
            let pod = app.session.cluster().full_pod(&key);
            let claims = pod
                .as_ref()
                .map(|p| describe::pod_claim_lines(&app.session.cluster().listers, p))
                .unwrap_or_default();
            if !claims.is_empty() {
                out.push(Line::from(span(format!("{now}resource claims"), t.title)));
                out.extend(
                    claims
                        .into_iter()
                        .map(|l| Line::from(span(format!("  {l}"), t.base))),
                );
            }
            match pod {
                Some(p) => yaml(
                    app,
                    &mut out,
                    serde_saphyr::to_string(p.as_ref()).map_err(|e| e.to_string()),
                ),
                None => out.push(Line::from(span("no longer in the cluster", t.warning))),
            }
        }
    }
    out
}

/// What was read of the target at the step shown, when one is shown.
fn past_then<'a>(app: &'a App, target: &DetailTarget) -> Option<&'a Then> {
    let seq = app.cursor?;
    app.tabs
        .detail
        .then
        .as_ref()
        .filter(|t| t.seq == seq && &t.target == target)
}

/// Which version an object shown at a past step is: the world its attempt started in.
fn as_of(then: &Then) -> String {
    match then.attempt {
        Some((id, first)) if first < then.seq => format!(
            "⏪ as at step {}: the cluster when session attempt #{id} began (step {first}; it changes only between attempts)",
            then.seq
        ),
        Some((id, _)) => format!(
            "⏪ as at step {}: the cluster when session attempt #{id} began",
            then.seq
        ),
        None => format!("⏪ as at step {}", then.seq),
    }
}

/// The pod as the history has it at `step`: in the attempt of that step, or its latest
/// attempt begun before it (and how that one stood then), or not attempted yet.
/// Attempts are numbered across the session (`#9`); the pod's own count is apart.
fn pod_then(app: &App, key: &str, step: &crate::session::StepRecord) -> String {
    if step.pod.as_deref() == Some(key) {
        let a = step
            .attempt
            .map(|a| format!("in session attempt #{a} "))
            .unwrap_or_default();
        return format!("being scheduled {a}at {}", step.point.as_str());
    }
    let attempts = &app.session.history.attempts;
    match attempts
        .iter()
        .rev()
        .find(|a| a.pod == key && a.first_seq <= step.seq)
    {
        Some(a) => {
            let d = a.as_of(step);
            format!(
                "its latest attempt begun before it is session attempt #{}, which {}{}",
                a.id,
                match d.outcome {
                    Some("Waiting") => "was waiting".to_string(),
                    Some(o) => format!("ended {o}"),
                    None => "had not ended".to_string(),
                },
                d.node.map(|n| format!(" on {n}")).unwrap_or_default()
            )
        }
        None => "no attempt of it begun before this step (none yet, or none the history kept)"
            .to_string(),
    }
}

fn yaml(app: &App, out: &mut Vec<Line<'static>>, y: Result<String, String>) {
    let t = &app.theme;
    out.push(Line::default());
    match y {
        Ok(text) => out.extend(
            text.lines()
                .map(|l| Line::from(span(l.to_string(), t.muted))),
        ),
        Err(e) => out.push(Line::from(span(format!("YAML: {e}"), t.error))),
    }
}
