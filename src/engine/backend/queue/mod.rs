//! The scheduling queue, as kube-scheduler v1.35's `PriorityQueue` with QueueingHints
//! and SchedulerPopFromBackoffQ on (their defaults), driven by a virtual clock: nothing
//! sleeps, every method is told the time, and [`SchedulingQueue::next_timer`] says when
//! the backoff or leftover flush will next have work.
//!
//! * **activeQ**: pods ready to schedule, in the order of the QueueSort plugin (ties on
//!   equal timestamps go to the pod queued first).
//! * **backoffQ**: pods waiting out their backoff, by expiry (one-second windows, then
//!   activeQ order); pods whose last attempt ended in an Error wait in a second queue.
//! * **unschedulable**: pods waiting for a cluster event their rejector plugins' queueing
//!   hints accept, and pods a PreEnqueue plugin gates (released only by that plugin's
//!   events).
//! * **in flight**: popped pods whose attempt is not over; cluster events that arrive
//!   meanwhile are replayed against them when they fail.
//!
//! The nominator (pods nominated by preemption) lives outside the queue in kubestep.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

use crate::framework::plugin::{Handle, QueueSortPlugin};
use crate::framework::profile::{ExtensionPoint, Framework};
use crate::framework::queued::QueuedPodInfo;
use crate::framework::types::PodInfo;

pub mod backoff;
mod moves;
mod ordered;
#[cfg(test)]
mod tests;
mod timers;
pub mod view;

pub use crate::framework::events::{
    ActionType, ClusterEvent, EventObject, EventResource, EventType, PreCheck,
    events_for_node_change, events_for_object, events_for_pod_change,
};
pub use crate::framework::hints::{
    ClusterEventWithHint, ProfileHints, QueueingHint, QueueingHintFn,
};
pub use view::{QueueMove, QueueName, QueueView};

use crate::framework::events::{self, FORCE_ACTIVATE, SCHEDULE_ATTEMPT_FAILURE};
use backoff::backoff_expiry;
use ordered::OrderedQueue;

/// Default `podInitialBackoffSeconds`.
pub const DEFAULT_POD_INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// Default `podMaxBackoffSeconds`.
pub const DEFAULT_POD_MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How long a pod may wait in unschedulable before the leftover flush moves it.
pub const DEFAULT_POD_MAX_IN_UNSCHEDULABLE: Duration = Duration::from_secs(5 * 60);
/// Period of the unschedulable leftover flush.
pub const UNSCHEDULABLE_FLUSH_PERIOD: Duration = Duration::from_secs(30);
/// Label of an unscheduled pod added to the queue.
const UNSCHEDULED_POD_ADD: &str = "UnschedulablePodAdd";
/// Label of an unscheduled pod the queue did not know being updated.
const UNSCHEDULED_POD_UPDATE: &str = "UnschedulablePodUpdate";
/// How many moves the log keeps when nobody takes them.
const MAX_MOVES: usize = 10_000;

/// Where an event sends a pod (upstream `queueingStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    Skip,
    AfterBackoff,
    Immediately,
}

#[derive(Debug, Clone)]
struct InFlight {
    /// The latest version of the pod (updates while in flight land here).
    pod: Arc<PodInfo>,
    /// The id the first event after the pop got.
    first_event: u64,
    popped_at: Timestamp,
    /// `events_seen` at the pop: equal at the failure, nothing changed while it ran.
    events_seen: u64,
}

/// The queue. See the module documentation.
#[derive(Clone)]
pub struct SchedulingQueue {
    /// Bumped by every call that may change the queue: a moment of history whose version
    /// is the queue's is known unchanged without comparing every pod.
    pub version: u64,
    initial_backoff: Duration,
    max_backoff: Duration,
    max_in_unschedulable: Duration,
    extenders: bool,
    active: OrderedQueue,
    backoff: OrderedQueue,
    error_backoff: OrderedQueue,
    unschedulable: BTreeMap<String, QueuedPodInfo>,
    in_flight: BTreeMap<String, InFlight>,
    in_flight_events: VecDeque<(u64, Arc<ClusterEvent>)>,
    next_event_id: u64,
    /// Cluster events and pod changes told so far, whether or not they moved a pod: a
    /// pod whose `quiet_since` equals it has seen nothing new since its last attempt.
    events_seen: u64,
    scheduling_cycle: u64,
    next_seq: u64,
    /// The first instant the queue was told: the unschedulable flush ticks every 30s
    /// from there.
    started: Option<Timestamp>,
    last_backoff_tick: Option<Timestamp>,
    last_unschedulable_tick: Option<Timestamp>,
    moves: VecDeque<QueueMove>,
}

/// How many pods are where (see [`SchedulingQueue::sizes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueSizes {
    pub active: usize,
    pub backoff: usize,
    pub unschedulable: usize,
    pub gated: usize,
    /// Live shadow mode: pods kubestep would bind, parked in unschedulable until the
    /// cluster's scheduler binds them.
    pub awaiting_binding: usize,
}

/// A profile and its queueing-hint map.
type Profile<'a> = (&'a Framework, Arc<ProfileHints>);

fn queue_sort(fwk: &Framework) -> Option<&dyn QueueSortPlugin> {
    fwk.plugins(ExtensionPoint::QueueSort)
        .first()
        .and_then(|e| e.plugin.as_queue_sort())
}

/// activeQ order: the QueueSort plugin, then the order timestamps were given out.
fn active_order(
    less: Option<&dyn QueueSortPlugin>,
    a: &QueuedPodInfo,
    b: &QueuedPodInfo,
) -> Ordering {
    if let Some(l) = less {
        if l.less(a, b) {
            return Ordering::Less;
        }
        if l.less(b, a) {
            return Ordering::Greater;
        }
    }
    a.seq.cmp(&b.seq)
}

fn handle_for<'a>(h: &Handle<'a>, fwk: &'a Framework) -> Handle<'a> {
    Handle {
        framework: fwk,
        ..*h
    }
}

impl SchedulingQueue {
    pub fn new(initial_backoff: Duration, max_backoff: Duration) -> Self {
        SchedulingQueue {
            initial_backoff,
            max_backoff,
            max_in_unschedulable: DEFAULT_POD_MAX_IN_UNSCHEDULABLE,
            extenders: false,
            active: OrderedQueue::default(),
            backoff: OrderedQueue::default(),
            error_backoff: OrderedQueue::default(),
            unschedulable: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            in_flight_events: VecDeque::new(),
            next_event_id: 0,
            events_seen: 0,
            scheduling_cycle: 0,
            next_seq: 0,
            started: None,
            last_backoff_tick: None,
            last_unschedulable_tick: None,
            moves: VecDeque::new(),
            version: 0,
        }
    }

    /// Changes how long pods may stay unschedulable before the leftover flush.
    pub fn with_max_in_unschedulable(mut self, d: Duration) -> Self {
        self.max_in_unschedulable = d;
        self
    }

    /// With extenders configured, pods they reject (plugin `Extender`) move on any event.
    pub fn set_extenders(&mut self, configured: bool) {
        self.extenders = configured;
    }

    /// The queueing-hint map of a profile.
    pub fn hints(&self, fwk: &Framework) -> Arc<ProfileHints> {
        fwk.queueing_hints(self.extenders)
    }

    fn start(&mut self, now: Timestamp) {
        self.version += 1;
        self.started.get_or_insert(now);
    }

    fn take_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    fn record(&mut self, qpi: &QueuedPodInfo, to: QueueName, event: &str, at: Timestamp) {
        if self.moves.len() >= MAX_MOVES {
            self.moves.pop_front();
        }
        self.moves.push_back(QueueMove {
            at,
            pod: qpi.pod_info.key.clone(),
            uid: qpi.uid().to_string(),
            to,
            event: event.to_string(),
        });
    }

    /// The moves between queues since the last call, oldest first.
    pub fn take_moves(&mut self) -> Vec<QueueMove> {
        self.moves.drain(..).collect()
    }

    fn expiry(&self, qpi: &QueuedPodInfo) -> Option<Timestamp> {
        backoff_expiry(qpi, self.initial_backoff, self.max_backoff)
    }

    /// When the pod's backoff ends (`None`: no backoff).
    pub fn backoff_expiry(&self, qpi: &QueuedPodInfo) -> Option<Timestamp> {
        self.expiry(qpi)
    }

    fn in_any_queue(&self, uid: &str) -> bool {
        self.active.contains(uid)
            || self.backoff.contains(uid)
            || self.error_backoff.contains(uid)
            || self.unschedulable.contains_key(uid)
    }

    // ---- the public API ----

    /// A new pending pod. PreEnqueue plugins of `fwk` (the pod's profile) run here; a
    /// gated pod goes to unschedulable with its gating plugin and message.
    pub fn add(&mut self, h: &Handle, fwk: &Framework, pod: Arc<PodInfo>, now: Timestamp) {
        self.start(now);
        self.events_seen += 1;
        let mut qpi = QueuedPodInfo::new(pod, now);
        qpi.seq = self.take_seq();
        self.move_to_active(h, fwk, qpi, UNSCHEDULED_POD_ADD, now);
    }

    /// The pod's spec changed (e.g. scheduling gates removed) — upstream `Update`. In
    /// flight, the change is recorded for the failure replay; in activeQ or backoffQ the
    /// pod is replaced; in unschedulable, the update's events are run through the hints;
    /// unknown, the pod is added.
    pub fn update(&mut self, h: &Handle, fwk: &Framework, new: Arc<PodInfo>, now: Timestamp) {
        self.start(now);
        self.events_seen += 1;
        let uid = new.uid.clone();
        if let Some(inf) = self.in_flight.get_mut(&uid) {
            let old = std::mem::replace(&mut inf.pod, Arc::clone(&new));
            for e in events::pod_update_events(&old.full_pod(), &new.full_pod(), &fwk.features) {
                self.push_in_flight_event(Arc::new(e));
            }
            return;
        }
        let less = queue_sort(fwk);
        if let Some(mut qpi) = self.active.remove(&uid) {
            qpi.pod_info = new;
            self.active.insert(qpi, |a, b| active_order(less, a, b));
            return;
        }
        if let Some(mut qpi) = self
            .backoff
            .remove(&uid)
            .or_else(|| self.error_backoff.remove(&uid))
        {
            qpi.pod_info = new;
            self.insert_backoff(fwk, qpi);
            return;
        }
        if let Some(qpi) = self.unschedulable.get_mut(&uid) {
            let old = std::mem::replace(&mut qpi.pod_info, Arc::clone(&new));
            let hints = self.hints(fwk);
            for e in events::pod_update_events(&old.full_pod(), &new.full_pod(), &fwk.features) {
                let Some(qpi) = self.unschedulable.remove(&uid) else {
                    break;
                };
                let strategy = self.worth_requeuing(h, fwk, &hints, &qpi, &e);
                let to = self.requeue(h, fwk, qpi, strategy, &e.label, now);
                if matches!(to, QueueName::Active | QueueName::Backoff) {
                    break;
                }
            }
            return;
        }
        let mut qpi = QueuedPodInfo::new(new, now);
        qpi.seq = self.take_seq();
        self.move_to_active(h, fwk, qpi, UNSCHEDULED_POD_UPDATE, now);
    }

    /// A change kube-scheduler keeps but does not act on (a pending pod's status alone,
    /// which v1.35 strips before deciding whether an update matters): the queued copy is
    /// replaced wherever the pod is, and nothing moves or is recorded as an event.
    pub fn refresh(&mut self, fwk: &Framework, new: Arc<PodInfo>) {
        let uid = new.uid.clone();
        if let Some(inf) = self.in_flight.get_mut(&uid) {
            inf.pod = Arc::clone(&new);
        }
        if let Some(qpi) = self.unschedulable.get_mut(&uid) {
            qpi.pod_info = new;
            return;
        }
        let less = queue_sort(fwk);
        if let Some(mut qpi) = self.active.remove(&uid) {
            qpi.pod_info = new;
            self.active.insert(qpi, |a, b| active_order(less, a, b));
            return;
        }
        if let Some(mut qpi) = self
            .backoff
            .remove(&uid)
            .or_else(|| self.error_backoff.remove(&uid))
        {
            qpi.pod_info = new;
            self.insert_backoff(fwk, qpi);
        }
    }

    /// The pod is gone (deleted, or bound by someone else): drop it from every queue.
    pub fn delete(&mut self, uid: &str) {
        self.version += 1;
        self.events_seen += 1;
        self.active.remove(uid);
        self.backoff.remove(uid);
        self.error_backoff.remove(uid);
        self.unschedulable.remove(uid);
    }

    /// Pops the activeQ head by the QueueSort plugin of `fwk` (all profiles share it),
    /// honouring SchedulerPopFromBackoffQ (pop from backoffQ when activeQ is empty),
    /// marking it in flight and counting the attempt. (The order was fixed as pods
    /// entered the queue, by that same plugin.)
    pub fn pop(&mut self, _fwk: &Framework, now: Timestamp) -> Option<QueuedPodInfo> {
        self.start(now);
        loop {
            let mut qpi = match self.active.pop_front() {
                Some(q) => q,
                None => {
                    let q = self.backoff.pop_front()?;
                    self.record(&q, QueueName::Active, events::POP_FROM_BACKOFF_Q, now);
                    q
                }
            };
            let uid = qpi.uid().to_string();
            if self.in_flight.contains_key(&uid) {
                tracing::warn!(pod = %qpi.pod_info.key, "pod already in flight; discarding the duplicate");
                continue;
            }
            qpi.attempts += 1;
            qpi.quiet_since = None;
            self.in_flight.insert(
                uid,
                InFlight {
                    pod: Arc::clone(&qpi.pod_info),
                    first_event: self.next_event_id,
                    popped_at: now,
                    events_seen: self.events_seen,
                },
            );
            self.scheduling_cycle += 1;
            qpi.unschedulable_plugins.clear();
            qpi.pending_plugins.clear();
            qpi.gating_plugin = None;
            qpi.gating_plugin_events.clear();
            qpi.gating_message = None;
            return Some(qpi);
        }
    }

    /// After a failed attempt: rejector (unschedulable) plugins and pending plugins from
    /// the Diagnosis, or `error = true` when the cycle failed with an Error. Upstream
    /// `AddUnschedulableIfNotPresent` with QueueingHints on (replays events that arrived
    /// while the pod was in flight). Ends the in-flight tracking of the pod.
    #[allow(clippy::too_many_arguments)]
    pub fn add_unschedulable_if_not_present(
        &mut self,
        h: &Handle,
        fwk: &Framework,
        mut qpi: QueuedPodInfo,
        unschedulable_plugins: BTreeSet<String>,
        pending_plugins: BTreeSet<String>,
        error: bool,
        message: String,
        now: Timestamp,
    ) {
        self.start(now);
        let uid = qpi.uid().to_string();
        if self.in_any_queue(&uid) {
            tracing::warn!(pod = %qpi.pod_info.key, "pod is already present in the scheduling queue");
            self.done(&uid);
            return;
        }
        // The latest version of the pod, as upstream re-reads it from the informer.
        if let Some(inf) = self.in_flight.get(&uid) {
            qpi.pod_info = Arc::clone(&inf.pod);
        }
        if error {
            qpi.unschedulable_plugins.clear();
            qpi.pending_plugins.clear();
        } else {
            qpi.unschedulable_plugins = unschedulable_plugins;
            qpi.pending_plugins = pending_plugins;
        }
        if qpi.has_rejectors() {
            qpi.unschedulable_count += 1;
            qpi.consecutive_errors_count = 0;
        } else {
            qpi.consecutive_errors_count += 1;
        }
        qpi.timestamp = now;
        qpi.seq = self.take_seq();
        qpi.last_failure = Some(message);
        qpi.quiet_since = self.quiet_failure(fwk, &qpi, error);
        let hints = self.hints(fwk);
        let strategy = self.in_flight_strategy(h, fwk, &hints, &qpi);
        self.requeue(h, fwk, qpi, strategy, SCHEDULE_ATTEMPT_FAILURE, now);
        self.done(&uid);
    }

    /// `Some(events_seen)` when the failed attempt saw no change while it ran and none of
    /// its rejectors can change its verdict with time alone (an extender may answer
    /// otherwise at any moment): retrying it before the next event would repeat it.
    fn quiet_failure(&self, fwk: &Framework, qpi: &QueuedPodInfo, error: bool) -> Option<u64> {
        let unchanged = self
            .in_flight
            .get(qpi.uid())
            .is_some_and(|inf| inf.events_seen == self.events_seen);
        let clocked = qpi.rejector_plugins().iter().any(|name| {
            fwk.all_plugins()
                .any(|p| p.name() == name && p.verdict_moves_with_clock())
        });
        (unchanged && !error && qpi.has_rejectors() && !self.extenders && !clocked)
            .then_some(self.events_seen)
    }

    /// Whether a retry of this unschedulable pod would repeat its last attempt (see
    /// `quiet_failure`): the leftover flush leaves it for the next event.
    pub fn is_quiet(&self, qpi: &QueuedPodInfo) -> bool {
        qpi.quiet_since == Some(self.events_seen)
    }

    /// Live shadow mode: a pod kubestep would bind, left for the cluster's own scheduler
    /// to bind. Upstream would have assumed it; here it waits in unschedulable, with no
    /// rejector plugin, so that any cluster event (or the leftover flush) runs it again
    /// after its backoff and its answer follows the cluster. Unlike an Error, it does
    /// not retry on its own: its answer cannot change until the cluster does. An event
    /// that arrived while it was in flight sends it to backoff at once.
    pub fn park_awaiting_binding(
        &mut self,
        h: &Handle,
        fwk: &Framework,
        mut qpi: QueuedPodInfo,
        now: Timestamp,
    ) {
        self.start(now);
        let uid = qpi.uid().to_string();
        if self.in_any_queue(&uid) {
            self.done(&uid);
            return;
        }
        if let Some(inf) = self.in_flight.get(&uid) {
            qpi.pod_info = Arc::clone(&inf.pod);
        }
        let missed_event = self.in_flight.get(&uid).is_some_and(|inf| {
            self.in_flight_events
                .iter()
                .any(|(id, _)| *id >= inf.first_event)
        });
        qpi.unschedulable_plugins.clear();
        qpi.pending_plugins.clear();
        // Backs off as an unschedulable pod does, not as an Error.
        qpi.unschedulable_count += 1;
        qpi.consecutive_errors_count = 0;
        qpi.timestamp = now;
        qpi.seq = self.take_seq();
        qpi.last_failure = None;
        let strategy = if missed_event {
            Strategy::AfterBackoff
        } else {
            Strategy::Skip
        };
        self.requeue(h, fwk, qpi, strategy, SCHEDULE_ATTEMPT_FAILURE, now);
        self.done(&uid);
    }

    /// The attempt is over (bound, or requeued): stop tracking in-flight events for it.
    pub fn done(&mut self, uid: &str) {
        self.version += 1;
        if self.in_flight.remove(uid).is_none() {
            return;
        }
        match self.in_flight.values().map(|i| i.first_event).min() {
            None => self.in_flight_events.clear(),
            Some(first) => {
                while self
                    .in_flight_events
                    .front()
                    .is_some_and(|(id, _)| *id < first)
                {
                    self.in_flight_events.pop_front();
                }
            }
        }
    }

    /// A cluster change: move unschedulable (and gated) pods whose rejector plugins'
    /// hints say Queue / QueueImmediately, exactly as upstream
    /// `MoveAllToActiveOrBackoffQueue` and `isPodWorthRequeuing`; also recorded for
    /// in-flight pods. Each pod is judged by its own profile among `frameworks`.
    pub fn on_event(
        &mut self,
        h: &Handle,
        frameworks: &[Framework],
        event: &ClusterEvent,
        now: Timestamp,
    ) {
        self.start(now);
        self.events_seen += 1;
        if self.unschedulable.is_empty() && self.in_flight.is_empty() {
            // No pod to move, none to record the event for.
            return;
        }
        let profiles: Vec<Profile> = frameworks.iter().map(|f| (f, self.hints(f))).collect();
        let et = event.event_type();
        if !event.is_wildcard() && !profiles.iter().any(|(_, p)| p.interested_in(&et)) {
            return;
        }
        let mut candidates: Vec<&QueuedPodInfo> = self
            .unschedulable
            .values()
            .filter(|q| {
                event
                    .pre_check
                    .as_ref()
                    .is_none_or(|c| c.allows(&q.pod_info))
            })
            .collect();
        candidates.sort_by(|a, b| a.timestamp.cmp(&b.timestamp).then(a.seq.cmp(&b.seq)));
        let uids = candidates.iter().map(|q| q.uid().to_string()).collect();
        self.move_pods(h, &profiles, uids, event, now);
    }

    /// PodsToActivate / ForceActivate: unschedulable pods go through PreEnqueue to
    /// activeQ, backoffQ pods straight there; for an in-flight pod the activation is
    /// recorded so that it is requeued when its attempt fails.
    pub fn activate(&mut self, h: &Handle, fwk: &Framework, uids: &[String], now: Timestamp) {
        self.start(now);
        for uid in uids {
            if let Some(qpi) = self.unschedulable.remove(uid) {
                self.move_to_active(h, fwk, qpi, FORCE_ACTIVATE, now);
                continue;
            }
            if let Some(qpi) = self
                .backoff
                .remove(uid)
                .or_else(|| self.error_backoff.remove(uid))
            {
                self.enter_active(fwk, qpi, FORCE_ACTIVATE, now);
                continue;
            }
            if let Some(inf) = self.in_flight.get(uid) {
                let e = ClusterEvent::force_activate(Some(inf.pod.full_pod()));
                self.push_in_flight_event(Arc::new(e));
            }
        }
    }

    /// Read-only view for the debugger: active (in pop order), backoff (with expiry),
    /// unschedulable (with last message and rejector plugins), gated (with gating plugin
    /// and message), in-flight.
    pub fn view(&self, fwk: &Framework, now: Timestamp) -> QueueView {
        view::build(self, fwk, now)
    }

    /// How many pods wait in activeQ, the backoff queues (both), unschedulable (not
    /// gated, not parked for the cluster's binding), gated and parked: what `view` would
    /// list, without building it (the session reports these after every step).
    pub fn sizes(&self) -> QueueSizes {
        let (mut gated, mut awaiting) = (0, 0);
        for p in self.unschedulable.values() {
            if p.gated() {
                gated += 1;
            } else if p.awaits_binding() {
                awaiting += 1;
            }
        }
        QueueSizes {
            active: self.active.len(),
            backoff: self.backoff.len() + self.error_backoff.len(),
            unschedulable: self.unschedulable.len() - gated - awaiting,
            gated,
            awaiting_binding: awaiting,
        }
    }

    /// Pods waiting in the queue (activeQ, backoffQ and unschedulable, gated included).
    /// Whether `pop` would return a pod now (activeQ, or backoffQ with PopFromBackoffQ).
    pub fn has_poppable(&self) -> bool {
        self.active.len() > 0 || self.backoff.len() > 0
    }

    pub fn len(&self) -> usize {
        self.active.len() + self.backoff.len() + self.error_backoff.len() + self.unschedulable.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pops so far (upstream's scheduling cycle counter).
    pub fn scheduling_cycle(&self) -> u64 {
        self.scheduling_cycle
    }

    pub fn is_in_flight(&self, uid: &str) -> bool {
        self.in_flight.contains_key(uid)
    }

    /// The queued pod with this UID (not in flight), wherever it waits.
    pub fn get(&self, uid: &str) -> Option<&QueuedPodInfo> {
        self.active
            .get(uid)
            .or_else(|| self.backoff.get(uid))
            .or_else(|| self.error_backoff.get(uid))
            .or_else(|| self.unschedulable.get(uid))
    }

    /// Which queue holds the pod.
    pub fn queue_of(&self, uid: &str) -> Option<QueueName> {
        if self.active.contains(uid) {
            Some(QueueName::Active)
        } else if self.backoff.contains(uid) {
            Some(QueueName::Backoff)
        } else if self.error_backoff.contains(uid) {
            Some(QueueName::ErrorBackoff)
        } else if let Some(q) = self.unschedulable.get(uid) {
            Some(if q.gated() {
                QueueName::Gated
            } else {
                QueueName::Unschedulable
            })
        } else if self.in_flight.contains_key(uid) {
            Some(QueueName::InFlight)
        } else {
            None
        }
    }
}

impl Default for SchedulingQueue {
    fn default() -> Self {
        SchedulingQueue::new(DEFAULT_POD_INITIAL_BACKOFF, DEFAULT_POD_MAX_BACKOFF)
    }
}
