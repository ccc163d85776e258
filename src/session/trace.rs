//! The stable JSON form of what a session did and shows (documented in docs/trace.md):
//! one object per line, each with a `type`. The last line of a headless run is the summary.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use super::history::{AttemptRecord, StepRecord};
use super::{PodRecord, Session, StopReason};
use crate::framework::StateTree;
use crate::framework::cycle::FilterCell;

pub const TRACE_VERSION: u32 = 1;

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
    let events = |e: &[crate::framework::queue::events::EventType]| -> Vec<String> {
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
            json!({"pod": w.pod.key, "node": w.node, "since": w.since, "waitingOn": plugins, "allowedBy": w.allowed})
        })
        .collect();
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

pub fn state(session: &Session) -> Value {
    let trees = match &session.current {
        Some(a) => a.cycle.state.render(),
        None => session
            .core
            .parked
            .values()
            .next()
            .map(|a| a.cycle.state.render())
            .unwrap_or_default(),
    };
    json!({"type": "state", "pod": session.current.as_ref().map(|a| a.pod().key.clone()), "entries": trees.iter().map(tree_json).collect::<Vec<_>>()})
}

/// The attempt to show: the one in progress, else the most recent.
fn attempt_record(session: &Session) -> Option<AttemptRecord> {
    if let Some(a) = &session.current {
        let names = session
            .core
            .sched
            .snapshot
            .list()
            .iter()
            .map(|n| n.name().to_string())
            .collect();
        return Some(AttemptRecord {
            id: a.id,
            pod: a.pod().key.clone(),
            profile: session.core.sched.frameworks[a.profile]
                .profile_name
                .clone(),
            started: a.qpi.timestamp,
            pre_enqueue: a.qpi.pre_enqueue,
            matrix: a.cycle.matrix.clone(),
            scores: a.cycle.scores.clone(),
            node_names: std::sync::Arc::new(names),
            outcome: None,
            node: a.node.clone(),
            message: None,
        });
    }
    session.history.attempts.back().map(|a| (**a).clone())
}

pub fn filter(session: &Session) -> Value {
    let Some(a) = attempt_record(session) else {
        return json!({"type": "filter", "pod": null});
    };
    let name = |i: usize| a.node_names.get(i).cloned().unwrap_or_default();
    let mut nodes = BTreeMap::new();
    if let Some(m) = &a.matrix {
        for (row, &idx) in m.nodes.iter().enumerate() {
            let cells: BTreeMap<&str, FilterCell> = m
                .plugins
                .iter()
                .enumerate()
                .map(|(col, p)| (*p, m.cell(row, col)))
                .collect();
            nodes.insert(name(idx), cells);
        }
    }
    json!({"type": "filter", "pod": a.pod, "attempt": a.id, "nodes": nodes})
}

pub fn scores(session: &Session) -> Value {
    let Some(a) = attempt_record(session) else {
        return json!({"type": "scores", "pod": null});
    };
    let Some(t) = &a.scores else {
        return json!({"type": "scores", "pod": a.pod, "nodes": null});
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
            a.node_names.get(idx).cloned().unwrap_or_default(),
            json!({"plugins": plugins, "total": t.totals.get(i)}),
        );
    }
    json!({"type": "scores", "pod": a.pod, "attempt": a.id, "nodes": nodes, "chosen": t.chosen.map(|c| a.node_names.get(t.nodes[c]).cloned())})
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
