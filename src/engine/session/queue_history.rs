//! The queue and the pods waiting at Permit as they were after each step, so time travel
//! can show them. Kept only when a driver asks (the terminal UI does; replay and bench
//! do not pay for it), shared by the steps that left them as they were, and bounded by a
//! row budget as the rest of history is bounded by steps.
//!
//! Bound pods are not copied into each moment: a bound pod whose record has not changed
//! since a moment was bound then (`PodRecord::version`), so the present tells.
//!
//! Steps run at full speed keep their queue as a change from the moment before: the rows
//! of the pods that moved (the queue's move log, the records changed, the pod popped),
//! checked against the queue's and the records' counts (a copy whole when they disagree,
//! or when the changes since the last whole copy hold as many rows as it). A moment is
//! rebuilt from the whole copy before it and the changes after, rows in the queue's
//! order (`QueueOrder`, PrioritySort's; with another QueueSort every moment is whole).

use std::collections::VecDeque;
use std::sync::Arc;

use jiff::Timestamp;

use super::{Core, PodRecord, Session};
use crate::backend::queue::QueueName;
use crate::framework::queued::QueuedPodInfo;

/// Where a queued pod was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// Popped: being scheduled.
    InFlight,
    Active {
        priority: i32,
    },
    Backoff {
        /// When the backoff ends (`None`: no backoff).
        until: Option<Timestamp>,
        /// The error backoff queue (the last attempt ended in an Error).
        error: bool,
    },
    Unschedulable {
        message: String,
    },
    Gated {
        plugin: String,
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedPod {
    pub pod: String,
    pub place: Place,
    pub attempts: u32,
    /// Where the row goes in the queue's order, for a moment rebuilt from changes.
    pub order: QueueOrder,
}

/// A queued pod's place in `SchedulingQueue::for_each_queued`'s order, as a key: in
/// flight first, then activeQ (PrioritySort: priority, then timestamp, then the order
/// timestamps were given), backoffQ (expiry, then activeQ's order), the error backoff
/// queue (expiry, then that order), unschedulable and gated (timestamp).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct QueueOrder {
    class: u8,
    expiry: Option<Timestamp>,
    neg_priority: i64,
    timestamp: Option<Timestamp>,
    seq: u64,
}

/// One plugin a pod waits on at Permit (or has been allowed by), or the PreBind plugin
/// it waits in (`pre_bind`: what it waits for; no person can allow or reject it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingPlugin {
    pub pod: String,
    pub node: String,
    pub plugin: String,
    pub allowed: bool,
    pub deadline: Option<Timestamp>,
    pub pre_bind: Option<String>,
}

/// The queue after a step, until the next moment's step.
#[derive(Debug, Clone)]
pub struct QueueMoment {
    /// The first step this is the queue of.
    pub seq: u64,
    pub queued: Vec<QueuedPod>,
    pub waiting: Vec<WaitingPlugin>,
    /// Records of pods neither queued nor bound (waiting at Permit, awaiting another
    /// binder, unschedulable out of the queue).
    pub others: Vec<PodRecord>,
    /// `Core::records_version` then: bound records not changed since were bound then.
    pub records_version: u64,
    /// Pods bound then (the step's count), to tell how many were deleted since.
    pub bound: usize,
    /// The last attempt started by then.
    pub last_attempt: u64,
    /// `SchedulingQueue::version` then.
    pub queue_version: u64,
}

impl QueueMoment {
    fn rows(&self) -> usize {
        self.queued.len() + self.waiting.len() + self.others.len() + 1
    }
}

/// What became of a pod since the moment before.
#[derive(Debug, Clone)]
enum Change {
    Queued(QueuedPod),
    Other(PodRecord),
    /// Neither queued nor unbound (bound, or deleted).
    Gone,
}

/// A moment kept as its changes from the one before.
#[derive(Debug, Clone)]
struct Delta {
    seq: u64,
    changes: Vec<(String, Change)>,
    waiting: Vec<WaitingPlugin>,
    records_version: u64,
    bound: usize,
    last_attempt: u64,
    queue_version: u64,
}

#[derive(Debug, Clone)]
enum Kept {
    Whole(Arc<QueueMoment>),
    Delta(Arc<Delta>),
}

impl Kept {
    fn seq(&self) -> u64 {
        match self {
            Kept::Whole(m) => m.seq,
            Kept::Delta(d) => d.seq,
        }
    }

    fn rows(&self) -> usize {
        match self {
            Kept::Whole(m) => m.rows(),
            Kept::Delta(d) => d.changes.len() + d.waiting.len() + 1,
        }
    }
}

/// The queue as of the last moment kept, by pod (true: queued; false: another
/// record), to tell what a change adds or removes.
#[derive(Debug, Clone, Default)]
struct Tracked {
    pods: std::collections::HashMap<String, bool>,
    queued: usize,
    /// Unbound records minus rows at the last whole copy: the counts' check.
    unbound_gap: isize,
    /// Rows of changes since the last whole copy, and that copy's rows.
    delta_rows: usize,
    whole_rows: usize,
}

impl Tracked {
    fn of(m: &QueueMoment, unbound: usize) -> Tracked {
        let mut pods = std::collections::HashMap::with_capacity(m.queued.len() + m.others.len());
        for q in &m.queued {
            pods.insert(q.pod.clone(), true);
        }
        for r in &m.others {
            pods.insert(r.pod.clone(), false);
        }
        Tracked {
            queued: m.queued.len(),
            unbound_gap: unbound as isize - pods.len() as isize,
            pods,
            delta_rows: 0,
            whole_rows: m.rows(),
        }
    }

    fn apply(&mut self, key: &str, c: &Change) {
        let was = match c {
            Change::Gone => self.pods.remove(key),
            Change::Queued(_) => self.pods.insert(key.to_string(), true),
            Change::Other(_) => self.pods.insert(key.to_string(), false),
        };
        if was == Some(true) {
            self.queued -= 1;
        }
        if matches!(c, Change::Queued(_)) {
            self.queued += 1;
        }
    }
}

/// The kept moments, oldest first.
#[derive(Debug, Clone)]
pub struct QueueHistory {
    /// Whether to keep them at all.
    pub keep: bool,
    /// Rows (queued pods, waiting plugins, other records) kept across all moments.
    pub max_rows: usize,
    /// Running at full speed: steps keep their queue as changes from the moment before
    /// (copying a 10,000-pod queue at every step would cost more than scheduling).
    pub coarse: bool,
    moments: VecDeque<Kept>,
    rows: usize,
    tracked: Tracked,
}

impl Default for QueueHistory {
    fn default() -> Self {
        QueueHistory {
            keep: false,
            max_rows: 500_000,
            coarse: false,
            moments: VecDeque::new(),
            rows: 0,
            tracked: Tracked::default(),
        }
    }
}

/// Bytes a kept row takes, roughly (a pod's name, its place, the allocations): the
/// row budget is the step budget's share at this size.
pub const ROW_BYTES: usize = 160;

impl QueueHistory {
    pub fn with_max_rows(max_rows: usize) -> QueueHistory {
        QueueHistory {
            max_rows,
            ..Default::default()
        }
    }

    /// The queue as it was after step `seq`; `None` when that moment is no longer kept
    /// (or was before keeping started).
    pub fn at(&self, seq: u64) -> Option<Arc<QueueMoment>> {
        let i = self.moments.partition_point(|m| m.seq() <= seq);
        self.rebuild(i.checked_sub(1)?)
    }

    /// Moment `i` whole: the whole copy at or before it, with the changes after it.
    fn rebuild(&self, i: usize) -> Option<Arc<QueueMoment>> {
        let base = (0..=i)
            .rev()
            .find(|&j| matches!(self.moments[j], Kept::Whole(_)))?;
        let Kept::Whole(whole) = &self.moments[base] else {
            return None;
        };
        if base == i {
            return Some(whole.clone());
        }
        let mut queued: std::collections::HashMap<&str, &QueuedPod> =
            whole.queued.iter().map(|q| (q.pod.as_str(), q)).collect();
        let mut others: std::collections::BTreeMap<&str, &PodRecord> =
            whole.others.iter().map(|r| (r.pod.as_str(), r)).collect();
        let mut last = None;
        for k in &self.moments.range(base + 1..=i).collect::<Vec<_>>() {
            let Kept::Delta(d) = k else { continue };
            for (key, c) in &d.changes {
                queued.remove(key.as_str());
                others.remove(key.as_str());
                match c {
                    Change::Queued(q) => {
                        queued.insert(key.as_str(), q);
                    }
                    Change::Other(r) => {
                        others.insert(key.as_str(), r);
                    }
                    Change::Gone => {}
                }
            }
            last = Some(d);
        }
        let d = last?;
        let mut queued: Vec<QueuedPod> = queued.into_values().cloned().collect();
        queued.sort_by(|a, b| a.order.cmp(&b.order).then_with(|| a.pod.cmp(&b.pod)));
        Some(Arc::new(QueueMoment {
            seq: d.seq,
            queued,
            waiting: d.waiting.clone(),
            others: others.into_values().cloned().collect(),
            records_version: d.records_version,
            bound: d.bound,
            last_attempt: d.last_attempt,
            queue_version: d.queue_version,
        }))
    }

    /// How many moments are kept as changes (the rest are whole copies).
    pub fn kept_as_changes(&self) -> usize {
        self.moments
            .iter()
            .filter(|m| matches!(m, Kept::Delta(_)))
            .count()
    }

    /// The oldest step whose queue is still kept.
    pub fn oldest(&self) -> Option<u64> {
        self.moments.front().map(Kept::seq)
    }

    pub fn len(&self) -> usize {
        self.moments.len()
    }

    pub fn is_empty(&self) -> bool {
        self.moments.is_empty()
    }

    /// Keeps `m`, then forgets the oldest moments beyond the budget and those no kept
    /// step needs (`first_step`: the oldest step history still has).
    fn push(&mut self, m: Kept, first_step: u64) {
        // The same step noted again (its attempt parked after it): the later look wins.
        if self.moments.back().is_some_and(|b| b.seq() == m.seq()) {
            match (&m, self.moments.back()) {
                // A change replaces a change (the tracked state already has both).
                (Kept::Delta(_), Some(Kept::Delta(_))) | (Kept::Whole(_), _) => {
                    if let Some(old) = self.moments.pop_back() {
                        self.rows -= old.rows();
                    }
                }
                // A change after a whole copy of the same step: keep both, the later wins.
                _ => {}
            }
        }
        self.rows += m.rows();
        self.moments.push_back(m);
        // Forgets whole segments (a whole copy and the changes after it), oldest first,
        // so the oldest kept is always whole.
        while self.moments.len() > 1 {
            let over = self.rows > self.max_rows;
            let next_whole =
                (1..self.moments.len()).find(|&j| matches!(self.moments[j], Kept::Whole(_)));
            match next_whole {
                Some(j) if over || self.moments[j].seq() <= first_step => {
                    for old in self.moments.drain(..j) {
                        self.rows -= old.rows();
                    }
                }
                None if over => {
                    // One segment over the budget: its newest moment alone, whole.
                    if let Some(whole) = self.rebuild(self.moments.len() - 1) {
                        self.moments.clear();
                        self.rows = whole.rows();
                        self.moments.push_back(Kept::Whole(whole));
                    }
                    break;
                }
                _ => break,
            }
        }
    }
}

/// A queued pod, borrowed from the queue until a moment copies it.
struct Row<'a> {
    pod: &'a str,
    to: QueueName,
    qpi: Option<&'a QueuedPodInfo>,
    until: Option<Timestamp>,
}

impl Row<'_> {
    fn place(&self) -> Place {
        match (self.to, self.qpi) {
            (QueueName::Active, Some(q)) => Place::Active {
                priority: q.pod_info.priority,
            },
            (QueueName::Backoff | QueueName::ErrorBackoff, _) => Place::Backoff {
                until: self.until,
                error: self.to == QueueName::ErrorBackoff,
            },
            (QueueName::Unschedulable, Some(q)) => Place::Unschedulable {
                message: q.last_failure.clone().unwrap_or_default(),
            },
            (QueueName::Gated, Some(q)) => Place::Gated {
                plugin: q.gating_plugin.clone().unwrap_or_default(),
                message: q.gating_message.clone().unwrap_or_default(),
            },
            _ => Place::InFlight,
        }
    }

    fn order(&self) -> QueueOrder {
        let Some(q) = self.qpi else {
            return QueueOrder::default();
        };
        let (class, expiry, neg_priority, timestamp) = match self.to {
            QueueName::InFlight => return QueueOrder::default(),
            QueueName::Active => (1, None, -i64::from(q.pod_info.priority), Some(q.timestamp)),
            QueueName::Backoff => (
                2,
                self.until,
                -i64::from(q.pod_info.priority),
                Some(q.timestamp),
            ),
            QueueName::ErrorBackoff => (3, self.until, 0, None),
            QueueName::Unschedulable | QueueName::Gated => (4, None, 0, Some(q.timestamp)),
        };
        QueueOrder {
            class,
            expiry,
            neg_priority,
            timestamp,
            seq: q.seq,
        }
    }
}

/// The row of one queued pod now (`None`: not queued, or held at Permit).
fn row_of<'a>(core: &'a Core, key: &'a str, uid: &str) -> Option<Row<'a>> {
    let to = core.queue.queue_of(uid)?;
    if to == QueueName::InFlight {
        let held = core
            .pods
            .get(key)
            .is_some_and(|r| r.status == super::PodStatus::Waiting);
        return (!held).then_some(Row {
            pod: key,
            to,
            qpi: None,
            until: None,
        });
    }
    let q = core.queue.get(uid)?;
    let until = match to {
        QueueName::Backoff | QueueName::ErrorBackoff => core.queue.backoff_expiry(q),
        _ => None,
    };
    Some(Row {
        pod: key,
        to,
        qpi: Some(q),
        until,
    })
}

fn attempts(core: &Core, pod: &str) -> u32 {
    core.pods.get(pod).map_or(0, |r| r.attempts)
}

/// The queue now, borrowed: in flight first, then as `SchedulingQueue::view` lists it.
fn rows(core: &Core) -> Vec<Row<'_>> {
    // A pod held at Permit is in flight for the queue; its record lists it as waiting.
    let held = |key: &str| {
        core.pods
            .get(key)
            .is_some_and(|r| r.status == super::PodStatus::Waiting)
    };
    let mut out: Vec<Row> = core
        .queue
        .in_flight_pods()
        .filter(|p| !held(&p.key))
        .map(|p| Row {
            pod: &p.key,
            to: QueueName::InFlight,
            qpi: None,
            until: None,
        })
        .collect();
    core.queue.for_each_queued(|to, q| {
        let until = match to {
            QueueName::Backoff | QueueName::ErrorBackoff => core.queue.backoff_expiry(q),
            _ => None,
        };
        out.push(Row {
            pod: &q.pod_info.key,
            to,
            qpi: Some(q),
            until,
        });
    });
    out
}

fn waiting(core: &Core) -> Vec<WaitingPlugin> {
    let mut out = Vec::new();
    for a in core.parked.values() {
        if let Some(h) = a.open_pre_bind_wait() {
            out.push(WaitingPlugin {
                pod: a.pod().key.clone(),
                node: a.node.clone().unwrap_or_default(),
                plugin: h.plugin.to_string(),
                allowed: false,
                deadline: Some(h.deadline),
                pre_bind: Some(h.message.clone()),
            });
        }
    }
    if core.waiting.is_empty() {
        return out;
    }
    for w in core.waiting.list() {
        if w.outcome.is_some() {
            continue;
        }
        for (plugin, deadline) in &w.pending {
            out.push(WaitingPlugin {
                pod: w.pod.key.clone(),
                node: w.node.clone(),
                plugin: plugin.clone(),
                allowed: false,
                deadline: Some(*deadline),
                pre_bind: None,
            });
        }
        for plugin in &w.allowed {
            out.push(WaitingPlugin {
                pod: w.pod.key.clone(),
                node: w.node.clone(),
                plugin: plugin.clone(),
                allowed: true,
                deadline: None,
                pre_bind: None,
            });
        }
    }
    out
}

impl Session {
    /// The queue as it is now, in the form history keeps (`seq` is the next step's).
    pub fn queue_now(&self) -> QueueMoment {
        let core = &self.core;
        let now = rows(core);
        self.moment_of(&now, waiting(core))
    }

    fn moment_of(&self, now: &[Row], waiting: Vec<WaitingPlugin>) -> QueueMoment {
        let core = &self.core;
        let queued_keys: std::collections::HashSet<&str> = now.iter().map(|r| r.pod).collect();
        let others = core
            .unbound
            .iter()
            .filter(|k| !queued_keys.contains(k.as_str()))
            .filter_map(|k| core.pods.get(k).cloned())
            .collect();
        let queued = now
            .iter()
            .map(|r| QueuedPod {
                pod: r.pod.to_string(),
                place: r.place(),
                attempts: attempts(core, r.pod),
                order: r.order(),
            })
            .collect();
        QueueMoment {
            seq: self.history.peek_seq(),
            queued,
            waiting,
            others,
            records_version: core.records_version,
            bound: core.bound,
            last_attempt: self.next_attempt.saturating_sub(1),
            queue_version: core.queue.version,
        }
    }

    /// Keeps the queue as it is now as the latest step's, whole (after a stretch at full
    /// speed: the present then needs no rebuilding).
    pub fn note_queue_now(&mut self) {
        let Some(seq) = self.history.last().map(|s| s.seq) else {
            return;
        };
        let coarse = std::mem::take(&mut self.history.queues.coarse);
        self.note_queue(seq);
        self.history.queues.coarse = coarse;
    }

    /// After step `seq`: keeps the queue as it is now when it differs from the last kept
    /// moment (else that moment goes on being the queue of this step too): whole, or at
    /// full speed as its changes.
    pub(super) fn note_queue(&mut self, seq: u64) {
        if !self.history.queues.keep || self.history.step_budget == 0 {
            self.core.touched = None;
            return;
        }
        // What moved since the last look: the records changed, the pods popped, and the
        // queue's own log of moves between its queues.
        let mut touched = self.core.touched.replace(Vec::new()).unwrap_or_default();
        let moves = self.core.queue.take_moves();
        // The queue's log keeps its last 10,000 moves: more in one step may have lost
        // some, so that step is copied whole.
        let lost = moves.len() >= 10_000;
        touched.extend(moves.into_iter().map(|m| m.pod));
        let core = &self.core;
        let last_attempt = self.next_attempt.saturating_sub(1);
        let waiting = waiting(core);
        let queues = &self.history.queues;
        // Versions first: most steps change neither the queue nor any record.
        let last = queues.moments.back();
        let (records_version, queue_version) = match last {
            Some(Kept::Whole(m)) => (m.records_version, m.queue_version),
            Some(Kept::Delta(d)) => (d.records_version, d.queue_version),
            None => (u64::MAX, u64::MAX),
        };
        let last_attempt_then = match last {
            Some(Kept::Whole(m)) => m.last_attempt,
            Some(Kept::Delta(d)) => d.last_attempt,
            None => u64::MAX,
        };
        let same_waiting = match last {
            Some(Kept::Whole(m)) => m.waiting == waiting,
            Some(Kept::Delta(d)) => d.waiting == waiting,
            None => false,
        };
        if records_version == core.records_version
            && queue_version == core.queue.version
            && last_attempt_then == last_attempt
            && same_waiting
            && touched.is_empty()
        {
            return;
        }
        let first = self.history.steps.front().map_or(seq, |s| s.seq);
        if let Some(d) = self
            .queue_delta(seq, touched, waiting.clone())
            .filter(|_| !lost)
        {
            let rows = d.changes.len() + d.waiting.len() + 1;
            let q = &mut self.history.queues;
            for (key, c) in &d.changes {
                q.tracked.apply(key, c);
            }
            q.tracked.delta_rows += rows;
            q.push(Kept::Delta(Arc::new(d)), first);
            return;
        }
        let core = &self.core;
        let now = rows(core);
        let mut m = self.moment_of(&now, waiting);
        m.seq = seq;
        let unbound = core.unbound.len();
        let q = &mut self.history.queues;
        q.tracked = Tracked::of(&m, unbound);
        q.push(Kept::Whole(Arc::new(m)), first);
    }

    /// The changes since the last moment, when this step may be kept so: at full speed,
    /// after a whole copy, under PrioritySort, while the changes since that copy are
    /// fewer rows than it, and when the counts agree with the queue's and the records'.
    fn queue_delta(
        &self,
        seq: u64,
        mut touched: Vec<String>,
        waiting: Vec<WaitingPlugin>,
    ) -> Option<Delta> {
        let q = &self.history.queues;
        let core = &self.core;
        if !q.coarse || q.moments.is_empty() || q.tracked.delta_rows >= q.tracked.whole_rows {
            return None;
        }
        // Rows are ordered by PrioritySort's key (see `QueueOrder`).
        let sort = core.sched.frameworks.first().and_then(|f| {
            f.plugins(crate::framework::profile::ExtensionPoint::QueueSort)
                .first()
                .map(|e| e.name)
        });
        if sort != Some(crate::plugins::queuesort::NAME) {
            return None;
        }
        touched.sort_unstable();
        touched.dedup();
        let mut tracked_queued = q.tracked.queued as isize;
        let mut tracked_pods = q.tracked.pods.len() as isize;
        let mut changes = Vec::with_capacity(touched.len());
        for key in touched {
            let record = core.pods.get(&key);
            let row = record.and_then(|r| row_of(core, &key, &r.uid));
            let change = match (row, record) {
                (Some(r), _) => Change::Queued(QueuedPod {
                    pod: key.clone(),
                    place: r.place(),
                    attempts: attempts(core, &key),
                    order: r.order(),
                }),
                (None, Some(r)) if core.unbound.contains(&key) => Change::Other(r.clone()),
                _ => Change::Gone,
            };
            match q.tracked.pods.get(&key) {
                Some(true) => tracked_queued -= 1,
                Some(false) => {}
                None => tracked_pods += 1,
            }
            match change {
                Change::Queued(_) => tracked_queued += 1,
                Change::Gone => tracked_pods -= 1,
                Change::Other(_) => {}
            }
            changes.push((key, change));
        }
        // Something moved that nobody told: copy the queue whole.
        let held = core
            .queue
            .in_flight_pods()
            .filter(|p| {
                core.pods
                    .get(&p.key)
                    .is_some_and(|r| r.status == super::PodStatus::Waiting)
            })
            .count();
        let in_flight = core.queue.in_flight_pods().count() - held;
        let queued_now = (core.queue.len() + in_flight) as isize;
        let gap = core.unbound.len() as isize - tracked_pods;
        if tracked_queued != queued_now || gap != q.tracked.unbound_gap {
            return None;
        }
        Some(Delta {
            seq,
            changes,
            waiting,
            records_version: core.records_version,
            bound: core.bound,
            last_attempt: self.next_attempt.saturating_sub(1),
            queue_version: core.queue.version,
        })
    }
}
