//! The stable JSON form of what a session did and shows (documented in docs/trace.md):
//! one object per line, each with a `type`. The last line of a headless run is the summary.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use std::sync::Arc;

use super::detail::AttemptDetail;
use super::history::{AttemptRecord, StepRecord};
use super::{PodRecord, Session, StopReason};
use crate::framework::StateTree;
use crate::framework::cycle::FilterCell;

pub const TRACE_VERSION: u32 = 1;

/// A trace line as a run hands it out: ready, or the record it is made from. Turning a
/// record into its line is pure, so a printer may do it on a thread of its own while
/// the scheduling goes on.
#[derive(Debug)]
pub enum TraceLine {
    Ready(Value),
    Step(StepRecord),
    Attempt(Arc<AttemptRecord>),
}

impl TraceLine {
    pub fn into_value(self) -> Value {
        match self {
            TraceLine::Ready(v) => v,
            TraceLine::Step(s) => step(&s),
            TraceLine::Attempt(a) => attempt(&a),
        }
    }
}

pub fn step(s: &StepRecord) -> Value {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    if let Value::Object(m) = &mut v {
        m.insert("type".into(), "step".into());
    }
    v
}

pub fn stop(session: &Session, reason: &StopReason) -> Value {
    let (kind, detail) = match reason {
        StopReason::Breakpoint(b) => ("breakpoint", Some(b.clone())),
        StopReason::Idle => ("idle", None),
        StopReason::Reached => ("reached", None),
        StopReason::Stuck(m) => ("stuck", Some(m.clone())),
    };
    json!({"type": "stop", "reason": kind, "breakpoint": detail, "at": session.now()})
}

pub fn error(line: usize, message: &str) -> Value {
    json!({"type": "error", "line": line, "message": message})
}

#[derive(Serialize)]
struct SummaryPod<'a> {
    pod: &'a str,
    node: Option<&'a str>,
    status: super::PodStatus,
    message: Option<&'a str>,
}

pub fn summary(records: &[PodRecord]) -> Value {
    let pods: Vec<SummaryPod> = records
        .iter()
        .map(|r| SummaryPod {
            pod: &r.pod,
            node: r.node.as_deref(),
            status: r.status,
            message: r.message.as_deref(),
        })
        .collect();
    json!({"summary": {"pods": pods, "divergences": []}})
}

/// The summary line of a session: every pod, and where kubestep disagreed with the
/// recorded bindings.
pub fn session_summary(session: &Session) -> Value {
    let mut v = summary(&session.summary());
    v["summary"]["divergences"] = json!(session.divergences());
    v
}

fn qpi(p: &crate::framework::queued::QueuedPodInfo) -> Value {
    json!({"pod": p.pod_info.key, "priority": p.pod_info.priority, "attempts": p.attempts, "timestamp": p.timestamp})
}

pub fn queue(session: &Session) -> Value {
    let v = session
        .core
        .queue
        .view(&session.core.sched.frameworks[0], session.now());
    let events = |e: &[crate::framework::events::EventType]| -> Vec<String> {
        e.iter().map(|t| format!("{t:?}")).collect()
    };
    json!({
        "type": "queue",
        "at": session.now(),
        "active": v.active.iter().map(qpi).collect::<Vec<_>>(),
        "backoff": v.backoff.iter().map(|b| {
            let mut o = qpi(&b.pod);
            o["expiry"] = json!(b.expiry);
            o["error"] = json!(b.error);
            o
        }).collect::<Vec<_>>(),
        "unschedulable": v.unschedulable.iter().map(|u| {
            let mut o = qpi(&u.pod);
            o["message"] = json!(u.message);
            o["plugins"] = json!(u.plugins);
            o["pendingPlugins"] = json!(u.pending_plugins);
            o["waitingFor"] = json!(events(&u.waiting_for));
            if u.quiet {
                o["retry"] = json!("at the next event: nothing changed since its last attempt");
            }
            o
        }).collect::<Vec<_>>(),
        "gated": v.gated.iter().map(|g| {
            let mut o = qpi(&g.pod);
            o["plugin"] = json!(g.plugin);
            o["message"] = json!(g.message);
            o["waitingFor"] = json!(events(&g.waiting_for));
            o
        }).collect::<Vec<_>>(),
        "inFlight": v.in_flight.iter().map(|f| json!({"pod": f.pod.key, "poppedAt": f.popped_at, "events": f.events})).collect::<Vec<_>>(),
    })
}

pub fn waiting(session: &Session) -> Value {
    let now = session.now();
    let pods: Vec<Value> = session
        .core
        .waiting
        .list()
        .iter()
        .map(|w| {
            let plugins: BTreeMap<&String, Value> = w
                .pending
                .iter()
                .map(|(p, d)| (p, json!({"deadline": d, "secondsLeft": super::clock::since(*d, now).as_secs_f64()})))
                .collect();
            json!({"pod": w.pod.key, "node": w.node, "point": "Permit", "since": w.since, "waitingOn": plugins, "allowedBy": w.allowed})
        })
        .collect();
    // Pods parked inside a PreBind plugin (device binding conditions): no one allows them.
    let pre_bind = session.core.parked.values().filter_map(|a| {
        let h = a.open_pre_bind_wait()?;
        let left = super::clock::since(h.deadline, now).as_secs_f64();
        Some(
            json!({"pod": a.pod().key, "node": a.node, "point": "PreBind", "since": h.since,
            "plugin": h.plugin, "waitingFor": h.message, "nextPoll": h.next_poll,
            "deadline": h.deadline, "secondsLeft": left}),
        )
    });
    let pods: Vec<Value> = pods.into_iter().chain(pre_bind).collect();
    json!({"type": "waiting", "at": now, "pods": pods})
}

fn tree_json(t: &StateTree) -> Value {
    if t.children.is_empty() {
        Value::String(t.label.clone())
    } else {
        json!({t.label.clone(): t.children.iter().map(tree_json).collect::<Vec<_>>()})
    }
}

/// The current (or last) attempt: pod, point, next plugin and per-point results.
pub fn cycle(session: &Session) -> Value {
    match &session.current {
        Some(a) => json!({
            "type": "cycle",
            "attempt": a.id,
            "pod": a.pod().key,
            "point": a.point(),
            "nextPlugin": a.next_plugin(&session.core),
            "node": a.node,
        }),
        None => {
            let last = session.history.attempts.back();
            json!({"type": "cycle", "attempt": last.map(|a| a.id), "pod": last.map(|a| a.pod.clone()), "point": null,
                   "outcome": last.and_then(|a| a.outcome.clone()), "node": last.and_then(|a| a.node.clone()),
                   "message": last.and_then(|a| a.message.clone())})
        }
    }
}

pub fn state(session: &mut Session) -> Value {
    let live = session
        .current
        .as_ref()
        .or_else(|| session.core.parked.values().next())
        .map(|a| (a.pod().key.clone(), a.cycle.state.render()));
    let (pod, trees) = match live {
        Some((pod, t)) => (Some(pod), t),
        None => match last_detail(session) {
            Some((a, d)) => (
                Some(a.pod.clone()),
                d.states.last().map(|s| (**s).clone()).unwrap_or_default(),
            ),
            None => (None, Vec::new()),
        },
    };
    json!({"type": "state", "pod": pod, "entries": trees.iter().map(tree_json).collect::<Vec<_>>()})
}

/// The attempt to show (the one in progress, else the most recent) and its detail.
fn shown_attempt(
    session: &mut Session,
) -> Option<(u64, String, Result<Arc<AttemptDetail>, String>)> {
    let (id, pod) = match &session.current {
        Some(a) => (a.id, a.pod().key.clone()),
        None => {
            let a = session.history.attempts.back()?;
            (a.id, a.pod.clone())
        }
    };
    let d = session.attempt_detail(id).map_err(|e| e.to_string());
    Some((id, pod, d))
}

fn last_detail(session: &mut Session) -> Option<(Arc<AttemptRecord>, Arc<AttemptDetail>)> {
    let a = session.history.attempts.back()?.clone();
    let d = session.attempt_detail(a.id).ok()?;
    Some((a, d))
}

/// Every Filter plugin's verdict on every candidate node, by node name.
fn filter_nodes(d: &AttemptDetail) -> BTreeMap<String, BTreeMap<&'static str, FilterCell>> {
    let name = |i: usize| d.node_names.get(i).cloned().unwrap_or_default();
    let mut nodes = BTreeMap::new();
    if let Some(m) = &d.matrix {
        for (row, &idx) in m.nodes.iter().enumerate() {
            let cells = m
                .plugins
                .iter()
                .enumerate()
                .map(|(col, p)| (*p, m.cell(row, col)))
                .collect();
            nodes.insert(name(idx), cells);
        }
    }
    nodes
}

/// The candidate nodes upstream's search never examined (it stopped once it had enough
/// feasible nodes): their cells are kubestep's, run only to fill the matrix.
fn not_evaluated(d: &AttemptDetail) -> Vec<String> {
    let Some(m) = &d.matrix else {
        return Vec::new();
    };
    let name = |i: usize| d.node_names.get(i).cloned().unwrap_or_default();
    let mut out: Vec<String> = (0..m.nodes.len())
        .filter(|&row| !m.was_examined(row))
        .map(|row| name(m.nodes[row]))
        .collect();
    out.sort();
    out
}

/// Raw, normalized and weighted scores by node name, and the chosen node.
fn score_nodes(d: &AttemptDetail) -> (Option<BTreeMap<String, Value>>, Option<String>) {
    let Some(t) = &d.scores else {
        return (None, None);
    };
    let mut nodes = BTreeMap::new();
    for (i, &idx) in t.nodes.iter().enumerate() {
        let plugins: BTreeMap<&str, Value> = t
            .plugins
            .iter()
            .map(|p| {
                (p.name, json!({"raw": p.raw.get(i), "normalized": p.normalized.get(i), "weight": p.weight, "weighted": p.normalized.get(i).map(|n| n * p.weight)}))
            })
            .collect();
        nodes.insert(
            d.node_names.get(idx).cloned().unwrap_or_default(),
            json!({"plugins": plugins, "total": t.totals.get(i)}),
        );
    }
    let chosen = t
        .chosen
        .and_then(|c| t.nodes.get(c))
        .and_then(|&i| d.node_names.get(i).cloned());
    (Some(nodes), chosen)
}

pub fn filter(session: &mut Session) -> Value {
    let Some((id, pod, d)) = shown_attempt(session) else {
        return json!({"type": "filter", "pod": null});
    };
    match d {
        Ok(d) => {
            json!({"type": "filter", "pod": pod, "attempt": id, "nodes": filter_nodes(&d), "notEvaluated": not_evaluated(&d), "mismatch": d.mismatch})
        }
        Err(e) => json!({"type": "filter", "pod": pod, "attempt": id, "nodes": null, "error": e}),
    }
}

pub fn scores(session: &mut Session) -> Value {
    let Some((id, pod, d)) = shown_attempt(session) else {
        return json!({"type": "scores", "pod": null});
    };
    match d {
        Ok(d) => {
            let (nodes, chosen) = score_nodes(&d);
            match nodes {
                Some(nodes) => {
                    json!({"type": "scores", "pod": pod, "attempt": id, "nodes": nodes, "chosen": chosen})
                }
                None => json!({"type": "scores", "pod": pod, "nodes": null}),
            }
        }
        Err(e) => json!({"type": "scores", "pod": pod, "attempt": id, "nodes": null, "error": e}),
    }
}

/// How much a headless run prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceLevel {
    /// One line per attempt: the default.
    #[default]
    Attempts,
    /// Also one line per step (an extension point, or one plugin of one).
    Steps,
    /// Steps, and after each attempt its detail (verdict matrix, scores, CycleState after
    /// each step), recomputed by re-running the attempt.
    Full,
}

/// One attempt: how it ended and each extension point's status and time.
pub fn attempt(a: &AttemptRecord) -> Value {
    let points: Vec<Value> = a
        .points
        .iter()
        .map(|p| json!({"point": p.point, "code": p.code, "micros": p.duration.as_micros() as u64}))
        .collect();
    let mut v = json!({
        "type": "attempt",
        "attempt": a.id,
        "pod": a.pod,
        "at": a.at,
        "result": a.outcome,
        "node": a.node,
        "message": a.message,
        "points": points,
    });
    if let Some(c) = &a.cycle {
        v["feasibleNodes"] = json!(c.feasible);
        v["evaluatedNodes"] = json!(c.evaluated);
    }
    if let Some(n) = a.nominated.as_deref().filter(|n| !n.is_empty()) {
        v["nominatedNode"] = json!(n);
        v["victims"] = json!(a.victims);
    }
    v
}

/// An attempt recomputed in full (`--trace full`).
pub fn detail(a: &AttemptRecord, d: &AttemptDetail) -> Value {
    let (scores, chosen) = score_nodes(d);
    let states: Vec<Value> = d
        .states
        .iter()
        .map(|s| Value::Array(s.iter().map(tree_json).collect()))
        .collect();
    json!({
        "type": "detail",
        "attempt": a.id,
        "pod": a.pod,
        "filter": filter_nodes(d),
        "notEvaluated": not_evaluated(d),
        "scores": scores,
        "chosen": chosen,
        "states": states,
        "mismatch": d.mismatch,
    })
}

pub fn pod(session: &Session, key: &str) -> Value {
    let rec = session.pod(key);
    let obj = session
        .core
        .cluster
        .full_pod(key)
        .map(|p| serde_json::to_value(&*p).unwrap_or_default());
    json!({"type": "pod", "pod": key, "record": rec, "object": obj})
}
