//! Rows the tables show, rebuilt after the session changes (never per frame): the queue
//! by sub-queue, waiting pods per plugin, and the orders of the matrix and score rows.

use std::collections::HashMap;
use std::time::Duration;

use jiff::Timestamp;

use crate::framework::cycle::{FilterCell, FilterMatrix, ScoreTable};
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

pub fn short_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}.{}s", s, d.subsec_millis() / 100)
    }
}

fn left(expiry: Option<Timestamp>, now: Timestamp) -> String {
    match expiry {
        Some(t) => short_duration(crate::session::clock::since(t, now)),
        None => "-".into(),
    }
}

/// Every pod of a moment of the queue (now, or a past one from history), grouped by
/// where it was; `at` is that moment's time (backoff left is counted to it). Bound pods
/// come from the present records: in the past, those whose record has not changed since
/// (`past`), and the number of pods bound then whose record changed or went since.
pub fn queue_rows(
    s: &Session,
    m: &QueueMoment,
    at: Timestamp,
    past: bool,
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

/// Case-insensitive subsequence match: `chk` matches `shop/checkout`.
pub fn fuzzy(needle: &str, hay: &str) -> bool {
    let mut h = hay.chars().flat_map(char::to_lowercase);
    needle
        .chars()
        .flat_map(char::to_lowercase)
        .all(|c| h.any(|x| x == c))
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatrixSort {
    /// The order upstream examined the nodes in.
    #[default]
    Examined,
    /// Rejected nodes first.
    Rejected,
    /// Nodes the selected column's plugin rejected first.
    ByPlugin,
    /// Passing nodes first.
    Passing,
    Name,
}

impl MatrixSort {
    pub fn next(self) -> MatrixSort {
        match self {
            MatrixSort::Examined => MatrixSort::Rejected,
            MatrixSort::Rejected => MatrixSort::ByPlugin,
            MatrixSort::ByPlugin => MatrixSort::Passing,
            MatrixSort::Passing => MatrixSort::Name,
            MatrixSort::Name => MatrixSort::Examined,
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            MatrixSort::Examined => "examined",
            MatrixSort::Rejected => "rejected first",
            MatrixSort::ByPlugin => "by the selected plugin",
            MatrixSort::Passing => "passing first",
            MatrixSort::Name => "name",
        }
    }
}

/// Upstream's verdict for a node is its first failing plugin (it stops there); the
/// matrix has every plugin, so find the first non-pass among the filled columns.
pub fn first_failure(m: &FilterMatrix, row: usize, columns: usize) -> Option<usize> {
    (0..columns).find(|&c| {
        matches!(
            m.cell(row, c),
            FilterCell::Reject { .. } | FilterCell::Error { .. }
        )
    })
}

/// Whether a cell is a rejection (or an error) among the filled columns.
fn rejects(m: &FilterMatrix, row: usize, col: usize, columns: usize) -> bool {
    col < columns
        && matches!(
            m.cell(row, col),
            FilterCell::Reject { .. } | FilterCell::Error { .. }
        )
}

/// A node filter: `!` (or `✗`) keeps rejected nodes, `!PLUGIN` those that plugin
/// rejected (its name or abbreviation, fuzzy), anything else matches names (fuzzy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeFilter {
    All,
    /// `+`: only the nodes upstream's search examined.
    Examined,
    Name(String),
    Rejected,
    RejectedBy(Vec<usize>),
}

impl NodeFilter {
    pub fn parse(text: &str, plugins: &[&str]) -> NodeFilter {
        let t = text.trim();
        if t.is_empty() {
            return NodeFilter::All;
        }
        if t == "+" {
            return NodeFilter::Examined;
        }
        let Some(rest) = t.strip_prefix('!').or_else(|| t.strip_prefix('✗')) else {
            return NodeFilter::Name(t.to_string());
        };
        let rest = rest.trim();
        if rest.is_empty() {
            return NodeFilter::Rejected;
        }
        let exact: Vec<usize> = (0..plugins.len())
            .filter(|&c| {
                plugins[c].eq_ignore_ascii_case(rest)
                    || crate::components::matrix_view::abbrev(plugins[c]).eq_ignore_ascii_case(rest)
            })
            .collect();
        if !exact.is_empty() {
            return NodeFilter::RejectedBy(exact);
        }
        NodeFilter::RejectedBy(
            (0..plugins.len())
                .filter(|&c| fuzzy(rest, plugins[c]))
                .collect(),
        )
    }
}

/// Rows of the matrix after the filter and the sort; `col` is the selected column (for
/// `ByPlugin`). Computed when the rows are rebuilt, never per frame.
pub fn matrix_order(
    m: &FilterMatrix,
    names: impl Fn(usize) -> String,
    columns: usize,
    sort: MatrixSort,
    filter: &str,
    col: usize,
) -> Vec<usize> {
    let f = NodeFilter::parse(filter, &m.plugins);
    let mut rows: Vec<usize> = (0..m.nodes.len())
        .filter(|&r| match &f {
            NodeFilter::All => true,
            NodeFilter::Examined => m.was_examined(r),
            NodeFilter::Name(t) => fuzzy(t, &names(m.nodes[r])),
            // Rejected means rejected by upstream's search: a node it never examined was
            // not, whatever kubestep's own run of it says.
            NodeFilter::Rejected => m.was_examined(r) && first_failure(m, r, columns).is_some(),
            NodeFilter::RejectedBy(cols) => {
                m.was_examined(r) && cols.iter().any(|&c| rejects(m, r, c, columns))
            }
        })
        .collect();
    match sort {
        MatrixSort::Examined => {}
        MatrixSort::Rejected => rows.sort_by_key(|&r| first_failure(m, r, columns).is_none()),
        MatrixSort::ByPlugin => rows.sort_by_key(|&r| !rejects(m, r, col, columns)),
        MatrixSort::Passing => rows.sort_by_key(|&r| first_failure(m, r, columns).is_some()),
        MatrixSort::Name => rows.sort_by_cached_key(|&r| names(m.nodes[r])),
    }
    rows
}

/// How many examined nodes each plugin rejected (or errored on), among the filled
/// columns: the counts at the top of the matrix (the trace's `rejected` counts the same).
pub fn rejections_per_plugin(m: &FilterMatrix, columns: usize) -> Vec<usize> {
    (0..m.plugins.len())
        .map(|c| {
            (0..m.nodes.len())
                .filter(|&r| m.was_examined(r) && rejects(m, r, c, columns))
                .count()
        })
        .collect()
}

/// Feasible-node rows by rank (highest total first; ties keep feasible order), and the
/// best total.
pub fn score_order(t: &ScoreTable) -> Vec<usize> {
    let mut rows: Vec<usize> = (0..t.nodes.len()).collect();
    rows.sort_by(|&a, &b| {
        let ta = t.totals.get(a).copied().unwrap_or(0);
        let tb = t.totals.get(b).copied().unwrap_or(0);
        tb.cmp(&ta)
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzy_matching() {
        assert!(fuzzy("chk", "shop/checkout-1"));
        assert!(fuzzy("", "x"));
        assert!(!fuzzy("zz", "shop/checkout"));
        assert!(fuzzy("SHOP", "shop/x"));
    }

    #[test]
    fn durations() {
        assert_eq!(short_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(short_duration(Duration::from_secs(125)), "2m05s");
        assert_eq!(short_duration(Duration::from_secs(3700)), "1h01m");
    }
}
