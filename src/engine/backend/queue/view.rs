//! What the debugger shows of the queue: each sub-queue in order, with why its pods wait,
//! and a log of moves between queues.

use std::collections::BTreeSet;
use std::sync::Arc;

use jiff::Timestamp;

use super::SchedulingQueue;
use super::backoff::is_backing_off;
use crate::framework::events::EventType;
use crate::framework::profile::Framework;
use crate::framework::queued::QueuedPodInfo;
use crate::framework::types::PodInfo;

/// Where a pod is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum QueueName {
    Active,
    Backoff,
    /// backoffQ for pods whose last attempt ended in an Error.
    ErrorBackoff,
    Unschedulable,
    /// In unschedulable, held back by a PreEnqueue plugin.
    Gated,
    InFlight,
}

impl QueueName {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueName::Active => "activeQ",
            QueueName::Backoff => "backoffQ",
            QueueName::ErrorBackoff => "errorBackoffQ",
            QueueName::Unschedulable => "unschedulable",
            QueueName::Gated => "gated",
            QueueName::InFlight => "in flight",
        }
    }
}

/// A pod entering a queue, and the event that sent it there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueMove {
    pub at: Timestamp,
    /// `namespace/name`
    pub pod: String,
    pub uid: String,
    pub to: QueueName,
    /// `UnschedulablePodAdd`, `ScheduleAttemptFailure`, `BackoffComplete`, `NodeAdd`, ...
    pub event: String,
}

#[derive(Debug, Clone)]
pub struct BackoffEntry {
    pub pod: QueuedPodInfo,
    /// When the backoff ends (`None`: no backoff).
    pub expiry: Option<Timestamp>,
    /// Waiting in the error backoff queue (its last attempt ended in an Error).
    pub error: bool,
    /// Backoff over at `now` (the next flush moves it).
    pub completed: bool,
}

#[derive(Debug, Clone)]
pub struct UnschedulableEntry {
    pub pod: QueuedPodInfo,
    pub message: String,
    /// Unschedulable and Pending plugins of the last attempt.
    pub plugins: BTreeSet<String>,
    pub pending_plugins: BTreeSet<String>,
    /// The events those plugins registered: what may bring the pod back.
    pub waiting_for: Vec<EventType>,
    /// Nothing changed since its last attempt: the leftover flush leaves it for the next
    /// event rather than repeat that attempt.
    pub quiet: bool,
}

#[derive(Debug, Clone)]
pub struct GatedEntry {
    pub pod: QueuedPodInfo,
    pub plugin: String,
    pub message: String,
    /// The gating plugin's events: only those can release the pod.
    pub waiting_for: Vec<EventType>,
}

#[derive(Debug, Clone)]
pub struct InFlightEntry {
    pub pod: Arc<PodInfo>,
    pub popped_at: Timestamp,
    /// Labels of the events recorded since it was popped.
    pub events: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct QueueView {
    /// In pop order.
    pub active: Vec<QueuedPodInfo>,
    /// backoffQ in expiry order, then the error backoff queue in expiry order.
    pub backoff: Vec<BackoffEntry>,
    /// Oldest failure first.
    pub unschedulable: Vec<UnschedulableEntry>,
    /// Oldest first.
    pub gated: Vec<GatedEntry>,
    pub in_flight: Vec<InFlightEntry>,
    pub scheduling_cycle: u64,
}

pub(super) fn build(q: &SchedulingQueue, fwk: &Framework, now: Timestamp) -> QueueView {
    let hints = q.hints(fwk);
    let backoff_entry = |p: &QueuedPodInfo, error: bool| {
        let expiry = q.expiry(p);
        BackoffEntry {
            pod: p.clone(),
            expiry,
            error,
            completed: !is_backing_off(expiry, now),
        }
    };
    let mut waiting: Vec<&QueuedPodInfo> = q.unschedulable.values().collect();
    waiting.sort_by(|a, b| a.timestamp.cmp(&b.timestamp).then(a.seq.cmp(&b.seq)));
    let mut unschedulable = Vec::new();
    let mut gated = Vec::new();
    for p in waiting {
        match &p.gating_plugin {
            Some(g) => gated.push(GatedEntry {
                pod: p.clone(),
                plugin: g.clone(),
                message: p.gating_message.clone().unwrap_or_default(),
                waiting_for: p.gating_plugin_events.clone(),
            }),
            None => {
                let plugins = p.rejector_plugins();
                let mut waiting_for: Vec<EventType> = Vec::new();
                for plugin in &plugins {
                    for e in hints.plugin_events(plugin) {
                        if !waiting_for.contains(&e) {
                            waiting_for.push(e);
                        }
                    }
                }
                unschedulable.push(UnschedulableEntry {
                    pod: p.clone(),
                    message: p.last_failure.clone().unwrap_or_default(),
                    plugins,
                    pending_plugins: p.pending_plugins.clone(),
                    waiting_for,
                    quiet: q.is_quiet(p),
                });
            }
        }
    }
    let in_flight = q
        .in_flight
        .values()
        .map(|i| InFlightEntry {
            pod: Arc::clone(&i.pod),
            popped_at: i.popped_at,
            events: q
                .in_flight_events
                .iter()
                .filter(|(id, _)| *id >= i.first_event)
                .map(|(_, e)| e.label.clone())
                .collect(),
        })
        .collect();
    QueueView {
        active: q.active.iter().cloned().collect(),
        backoff: q
            .backoff
            .iter()
            .map(|p| backoff_entry(p, false))
            .chain(q.error_backoff.iter().map(|p| backoff_entry(p, true)))
            .collect(),
        unschedulable,
        gated,
        in_flight,
        scheduling_cycle: q.scheduling_cycle,
    }
}

impl SchedulingQueue {
    /// Every pod waiting in a queue, with where it waits, in `view`'s order but borrowed
    /// (nothing copied, no hints built): cheap enough to run after every step, which the
    /// debugger's history does to remember each moment's queue.
    pub fn for_each_queued<'a>(&'a self, mut f: impl FnMut(QueueName, &'a QueuedPodInfo)) {
        for p in self.active.iter() {
            f(QueueName::Active, p);
        }
        for p in self.backoff.iter() {
            f(QueueName::Backoff, p);
        }
        for p in self.error_backoff.iter() {
            f(QueueName::ErrorBackoff, p);
        }
        let mut waiting: Vec<&QueuedPodInfo> = self.unschedulable.values().collect();
        waiting.sort_by(|a, b| a.timestamp.cmp(&b.timestamp).then(a.seq.cmp(&b.seq)));
        for p in waiting {
            let to = if p.gated() {
                QueueName::Gated
            } else {
                QueueName::Unschedulable
            };
            f(to, p);
        }
    }

    /// Pods popped and not done yet (being scheduled, or held at Permit).
    pub fn in_flight_pods(&self) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.in_flight.values().map(|i| &i.pod)
    }
}
