//! The queue and the pods waiting at Permit as they were after each step, so time travel
//! can show them. Kept only when a driver asks (the terminal UI does; replay and bench
//! do not pay for it), shared by the steps that left them as they were, and bounded by a
//! row budget as the rest of history is bounded by steps.
//!
//! Bound pods are not copied into each moment: a bound pod whose record has not changed
//! since a moment was bound then (`PodRecord::version`), so the present tells.

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
    /// False for the steps run at full speed, whose queue was not kept (see
    /// `QueueHistory::coarse`).
    pub recorded: bool,
}

impl QueueMoment {
    fn rows(&self) -> usize {
        self.queued.len() + self.waiting.len() + self.others.len() + 1
    }
}

/// The kept moments, oldest first.
#[derive(Debug, Clone)]
pub struct QueueHistory {
    /// Whether to keep them at all.
    pub keep: bool,
    /// Rows (queued pods, waiting plugins, other records) kept across all moments.
    pub max_rows: usize,
    /// Running at full speed: steps keep no queue of their own (copying a 10,000-pod
    /// queue at every change would cost more than scheduling); the driver notes the
    /// queue when it stops (`Session::note_queue_now`).
    pub coarse: bool,
    moments: VecDeque<Arc<QueueMoment>>,
    rows: usize,
}

impl Default for QueueHistory {
    fn default() -> Self {
        QueueHistory {
            keep: false,
            max_rows: 500_000,
            coarse: false,
            moments: VecDeque::new(),
            rows: 0,
        }
    }
}

impl QueueHistory {
    /// The queue as it was after step `seq`; `None` when that moment is no longer kept
    /// (or was before keeping started).
    pub fn at(&self, seq: u64) -> Option<&Arc<QueueMoment>> {
        let i = self.moments.partition_point(|m| m.seq <= seq);
        self.moments.get(i.checked_sub(1)?)
    }

    /// The oldest step whose queue is still kept.
    pub fn oldest(&self) -> Option<u64> {
        self.moments.front().map(|m| m.seq)
    }

    pub fn len(&self) -> usize {
        self.moments.len()
    }

    pub fn is_empty(&self) -> bool {
        self.moments.is_empty()
    }

    /// Keeps `m`, then forgets the oldest moments beyond the budget and those no kept
    /// step needs (`first_step`: the oldest step history still has).
    fn push(&mut self, m: QueueMoment, first_step: u64) {
        // The same step noted again (its attempt parked after it): the later look wins.
        if self.moments.back().is_some_and(|b| b.seq == m.seq)
            && let Some(old) = self.moments.pop_back()
        {
            self.rows -= old.rows();
        }
        self.rows += m.rows();
        self.moments.push_back(Arc::new(m));
        while self.moments.len() > 1
            && (self.rows > self.max_rows || self.moments[1].seq <= first_step)
        {
            if let Some(old) = self.moments.pop_front() {
                self.rows -= old.rows();
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
            recorded: true,
        }
    }

    /// Keeps the queue as it is now as the latest step's (after a stretch at full speed).
    pub fn note_queue_now(&mut self) {
        let Some(seq) = self.history.last().map(|s| s.seq) else {
            return;
        };
        let coarse = std::mem::take(&mut self.history.queues.coarse);
        self.note_queue(seq);
        self.history.queues.coarse = coarse;
    }

    /// After step `seq`: keeps the queue as it is now when it differs from the last kept
    /// moment (else that moment goes on being the queue of this step too).
    pub(super) fn note_queue(&mut self, seq: u64) {
        if !self.history.queues.keep || self.history.step_budget == 0 {
            return;
        }
        let core = &self.core;
        let last_attempt = self.next_attempt.saturating_sub(1);
        if self.history.queues.coarse {
            // One placeholder per stretch at full speed.
            if self
                .history
                .queues
                .moments
                .back()
                .is_none_or(|m| m.recorded)
            {
                let first = self.history.steps.front().map_or(seq, |s| s.seq);
                let m = QueueMoment {
                    seq,
                    queued: Vec::new(),
                    waiting: Vec::new(),
                    others: Vec::new(),
                    records_version: core.records_version,
                    bound: core.bound,
                    last_attempt,
                    queue_version: 0,
                    recorded: false,
                };
                self.history.queues.push(m, first);
            }
            return;
        }
        let waiting = waiting(core);
        // Versions first: most steps change neither the queue nor any record.
        let unchanged = self.history.queues.moments.back().is_some_and(|last| {
            last.recorded
                && last.records_version == core.records_version
                && last.last_attempt == last_attempt
                && last.queue_version == core.queue.version
                && last.waiting == waiting
        });
        if unchanged {
            return;
        }
        let now = rows(core);
        let mut m = self.moment_of(&now, waiting);
        m.seq = seq;
        let first = self.history.steps.front().map_or(seq, |s| s.seq);
        self.history.queues.push(m, first);
    }
}
