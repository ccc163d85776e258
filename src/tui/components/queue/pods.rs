//! The queue pane's rows, rebuilt after the session changes (never per frame): the pods
//! still to decide by sub-queue (and the bound ones on request), at the moment shown, and
//! their order (filter, sort); the waiting pane's rows come with them (one per pod and
//! plugin waited on).

use std::collections::HashMap;

use jiff::Timestamp;

use crate::components::text::{fuzzy, short_duration};
use crate::session::attempt::SIMULATED_PERMIT;
use crate::session::queue_history::{Place, QueueMoment, WaitingPlugin};
use crate::session::{PodStatus, Session};

/// Where a pod is, as the queue pane groups them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum QState {
    InFlight,
    Active,
    Backoff,
    Unschedulable,
    Gated,
    Waiting,
    /// Evaluated, but bound by someone else (the cluster's scheduler in live shadow
    /// mode, the recording in replay): pending until that binding arrives.
    Deferred,
    Bound,
    Other,
}

impl QState {
    pub fn label(self) -> &'static str {
        match self {
            QState::InFlight => "in flight",
            QState::Active => "activeQ",
            QState::Backoff => "backoffQ",
            QState::Unschedulable => "unschedulable",
            QState::Gated => "gated",
            QState::Waiting => "waiting",
            QState::Deferred => "awaiting binding",
            QState::Bound => "bound",
            QState::Other => "other",
        }
    }

    /// A one-character marker, so the state never relies on colour.
    pub fn symbol(self) -> &'static str {
        match self {
            QState::InFlight => "▶",
            QState::Active => "●",
            QState::Backoff => "◔",
            QState::Unschedulable => "✗",
            QState::Gated => "⊘",
            QState::Waiting => "⏸",
            QState::Deferred => "◌",
            QState::Bound => "✓",
            QState::Other => "·",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueRow {
    pub pod: String,
    pub state: QState,
    /// Backoff time left, the last reason, the gating plugin, the node...
    pub info: String,
    pub attempts: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueSort {
    #[default]
    ByQueue,
    ByName,
    ByAttempts,
}

impl QueueSort {
    pub fn next(self) -> QueueSort {
        match self {
            QueueSort::ByQueue => QueueSort::ByName,
            QueueSort::ByName => QueueSort::ByAttempts,
            QueueSort::ByAttempts => QueueSort::ByQueue,
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            QueueSort::ByQueue => "queue",
            QueueSort::ByName => "name",
            QueueSort::ByAttempts => "attempts",
        }
    }
}

fn left(expiry: Option<Timestamp>, now: Timestamp) -> String {
    match expiry {
        Some(t) => short_duration(crate::session::clock::since(t, now)),
        None => "-".into(),
    }
}

/// The pods of a moment of the queue (now, or a past one from history) still to decide,
/// grouped by where they were, and the bound ones too when `bound` asks for them; `at`
/// is that moment's time (backoff left is counted to it). Bound pods come from the
/// present records: in the past, those whose record has not changed since (`past`),
/// and the number of pods bound then whose record changed or went since (0 when bound
/// pods are not listed). A large cluster's bound pods are most of its pods: without
/// `bound` their rows are not built at all.
pub fn queue_rows(
    s: &Session,
    m: &QueueMoment,
    at: Timestamp,
    past: bool,
    bound: bool,
) -> (Vec<QueueRow>, usize) {
    let mut rows = Vec::new();
    let mut bound_then = 0;
    let mut chosen: Option<HashMap<&str, &str>> = None;
    for q in &m.queued {
        let (state, info) = match &q.place {
            Place::InFlight => (QState::InFlight, "being scheduled".to_string()),
            Place::Active { priority } => (QState::Active, format!("priority {priority}")),
            Place::Backoff { until, error } => {
                let what = if *error { "error backoff" } else { "backoff" };
                (QState::Backoff, format!("{what} {} left", left(*until, at)))
            }
            // Live shadow mode: a pod kubestep would bind waits, with no rejector, for
            // the cluster's scheduler to bind it (or for an event to run it again).
            Place::Unschedulable { message } if message.is_empty() => {
                let chosen = chosen.get_or_insert_with(|| last_choices(s, m.last_attempt));
                // Counted as awaiting binding in the header, so listed as such even when
                // the attempt that chose its node has left the history.
                let info = match chosen.get(q.pod.as_str()) {
                    Some(n) => format!("kubestep picks {n}"),
                    None => "awaiting the cluster's binding".to_string(),
                };
                (QState::Deferred, info)
            }
            Place::Unschedulable { message } => (QState::Unschedulable, message.clone()),
            Place::Gated { plugin, message } => (QState::Gated, format!("{plugin}: {message}")),
        };
        rows.push(QueueRow {
            pod: q.pod.clone(),
            state,
            info,
            attempts: q.attempts,
        });
    }
    for r in &m.others {
        let (state, info) = match r.status {
            // A simulated wait (live shadow mode) carries the plugin's message; a real
            // one shows its node.
            PodStatus::Waiting => match r.message.as_deref() {
                Some(m) if m.contains(SIMULATED_PERMIT) => (QState::Waiting, m.to_string()),
                _ => (QState::Waiting, r.node.clone().unwrap_or_default()),
            },
            // Out of the queue yet unbound: deferred to another binder.
            PodStatus::Unschedulable => {
                (QState::Unschedulable, r.message.clone().unwrap_or_default())
            }
            PodStatus::Pending => {
                let chosen = chosen.get_or_insert_with(|| last_choices(s, m.last_attempt));
                let info = match chosen.get(r.pod.as_str()) {
                    Some(n) => format!("kubestep picks {n}"),
                    None => r.message.clone().unwrap_or_default(),
                };
                (QState::Deferred, info)
            }
            _ => continue,
        };
        rows.push(QueueRow {
            pod: r.pod.clone(),
            state,
            info,
            attempts: r.attempts,
        });
    }
    if !bound {
        return (rows, 0);
    }
    let bound = s
        .records()
        .values()
        .filter(|r| r.status == PodStatus::Bound && (!past || r.version <= m.records_version));
    for r in bound {
        bound_then += 1;
        rows.push(QueueRow {
            pod: r.pod.clone(),
            state: QState::Bound,
            info: r.node.clone().unwrap_or_default(),
            attempts: r.attempts,
        });
    }
    (rows, m.bound.saturating_sub(bound_then))
}

/// Each pod's node in its latest attempt that chose one, among attempts up to `last`.
fn last_choices(s: &Session, last: u64) -> HashMap<&str, &str> {
    let mut out = HashMap::new();
    for a in s.history.attempts.iter().rev().filter(|a| a.id <= last) {
        if let Some(n) = &a.node {
            out.entry(a.pod.as_str()).or_insert(n.as_str());
        }
    }
    out
}

/// Indices into `rows` after filtering and sorting.
pub fn queue_order(rows: &[QueueRow], filter: &str, sort: QueueSort) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..rows.len())
        .filter(|&i| filter.is_empty() || fuzzy(filter, &rows[i].pod))
        .collect();
    match sort {
        QueueSort::ByQueue => idx.sort_by_key(|&i| rows[i].state),
        QueueSort::ByName => idx.sort_by(|&a, &b| rows[a].pod.cmp(&rows[b].pod)),
        QueueSort::ByAttempts => idx.sort_by(|&a, &b| rows[b].attempts.cmp(&rows[a].attempts)),
    }
    idx
}

/// One waiting pod and one plugin it waits on (or has been allowed by).
pub type WaitingRow = WaitingPlugin;
