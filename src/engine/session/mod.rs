//! Session: the engine running over time — cluster, scheduler, queue, waiting pods and a
//! clock — with every moment inspectable and steerable: step an extension point or one
//! plugin, finish a pod, continue to a breakpoint, advance time, allow or reject waiting
//! pods. The TUI, the headless debugger, replay and live mode all drive this API.

mod access;
mod actuator;
pub mod attempt;
pub mod breakpoints;
pub mod clock;
mod core_state;
pub mod detail;
pub mod divergence;
pub mod error;
pub mod feed;
pub mod history;
mod permit;
pub mod pre_bind_wait;
pub mod queue_history;
pub mod realign;
mod record;
mod replay;
mod run;
pub mod scheduler;
pub mod scheduler_log;
pub mod script;
pub mod then;
pub mod trace;
pub mod world;
mod world_size;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use jiff::Timestamp;

use crate::backend::queue::{self, SchedulingQueue};
use crate::cluster::{Change, ClusterState, Object, Stored};
use crate::config::KubeSchedulerConfiguration;
use crate::framework::CycleOutcome;
use crate::framework::batch::BatchProbe;
use crate::framework::waiting::WaitingPods;
use crate::framework::{Code, Handle, PodInfo, Status};
use scheduler::{Scheduler, SetupError};

pub use actuator::{Actuator, LocalActuator};
pub use attempt::{Attempt, AttemptResult, Failure, StepEvent};
pub use breakpoints::{Breakpoint, Outcome};
pub use clock::Clock;
pub use core_state::Core;
use core_state::handle_of;
pub use divergence::Divergence;
pub use error::{ActuatorError, CommandError, PermitError, WriteOp};
pub use feed::Feed;
pub use history::{AttemptRecord, History, Point, QueueCounts, StepRecord, fold_point_code};
pub use record::{PodRecord, PodStatus, pod_key};
use run::Spin;
pub use run::{SPIN_LIMIT, StopReason};
pub use world::{Frozen, WorldHistory};

#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Bytes of history: the steps and attempts kept, and the checkpoints from which a
    /// kept attempt is run again when someone looks at it (0 = keep nothing).
    pub history_bytes: usize,
    pub start: Timestamp,
}

/// The default history (estimated bytes; the process grows by about twice that): keeps a
/// 5,000-node, 10,000-pod replay under 200 MB with thousands of attempts to travel back to.
pub const DEFAULT_HISTORY_BYTES: usize = 32 << 20;

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            history_bytes: DEFAULT_HISTORY_BYTES,
            start: Timestamp::UNIX_EPOCH,
        }
    }
}

/// How far one advance of the current attempt goes.
#[derive(Clone, Copy)]
enum By {
    Plugin,
    Point,
    Attempt,
}

pub struct Session {
    pub(crate) core: Core,
    pub current: Option<Attempt>,
    pub history: History,
    pub breakpoints: Vec<Breakpoint>,
    next_attempt: u64,
    /// A `continue_attempts` ran out of budget: the next call goes on (no resume).
    mid_continue: bool,
    /// Steps `continue_from` has taken, ever: `advance_until` counts its budget with it
    /// across the timers it fires.
    advanced: u64,
    /// `advance_until` ran out of budget right after firing timers, where its loop
    /// starts afresh: the next call resumes as it would have.
    fresh_after_timers: bool,
    /// How much headless runs print.
    pub trace_level: trace::TraceLevel,
    spin: Spin,
    /// Set when the spin guard stopped the run; every later run stops at once.
    pub stuck: Option<String>,
    /// Attempts recomputed in full lately, and the copies of the profiles that do it.
    details: detail::Details,
}

impl Session {
    /// A session over `cluster` with `config`. Pending pods enter the queue in the order
    /// the cluster lists them.
    pub fn new(
        cluster: ClusterState,
        config: KubeSchedulerConfiguration,
        opts: SessionOptions,
        actuator: Box<dyn Actuator>,
    ) -> Result<Session, SetupError> {
        let sched = Scheduler::new(config, &cluster)?;
        let initial =
            std::time::Duration::from_secs(sched.config.pod_initial_backoff_seconds.max(0) as u64);
        let max =
            std::time::Duration::from_secs(sched.config.pod_max_backoff_seconds.max(0) as u64);
        let mut core = Core {
            clock: Clock::virtual_at(opts.start),
            cluster,
            sched,
            queue: SchedulingQueue::new(initial, max),
            waiting: WaitingPods::default(),
            parked: BTreeMap::new(),
            pods: BTreeMap::new(),
            actuator,
            world: WorldHistory::new(opts.history_bytes / 4),
            bound_packed: None,
            externally_bound: BTreeMap::new(),
            feed: Feed::default(),
            evicted: BTreeSet::new(),
            divergences: Vec::new(),
            pending_divergences: BTreeMap::new(),
            changes: Vec::new(),
            bound: 0,
            records_version: 0,
            unbound: Default::default(),
            touched: None,
            node_names: (u64::MAX, Arc::new(Vec::new())),
        };
        // Changes are recorded from here on, so any attempt's world can be rebuilt.
        if core.world.enabled() {
            core.sched.cache.record_changes();
            core.cluster.listers.record_changes();
        }
        let pods: Vec<Arc<PodInfo>> = core.cluster.pod_infos().cloned().collect();
        for pi in pods {
            if pi.node_name().is_empty() {
                core.apply_pod_change(None, Some(pi), opts.start);
            } else {
                core.record(&pi, PodStatus::Bound, Some(pi.node_name()), None);
            }
        }
        Ok(Session {
            core,
            current: None,
            history: History::new(opts.history_bytes * 5 / 8, opts.history_bytes / 8),
            breakpoints: Vec::new(),
            next_attempt: 1,
            mid_continue: false,
            advanced: 0,
            fresh_after_timers: false,
            trace_level: Default::default(),
            spin: Spin::default(),
            stuck: None,
            details: Default::default(),
        })
    }

    pub fn now(&self) -> Timestamp {
        self.core.clock.now()
    }

    /// Whether something can be done at the current time.
    pub fn has_work(&mut self) -> bool {
        self.current.is_some()
            || self.resumable().is_some()
            || self.core.queue.has_poppable()
            || self.core.feed.has_due(self.now())
    }

    /// A parked attempt whose wait is over.
    fn resumable(&self) -> Option<String> {
        self.core
            .parked
            .iter()
            .find(|(_, a)| a.wait_decided(&self.core.waiting))
            .map(|(uid, _)| uid.clone())
    }

    /// Starts the next activity: a waiting pod whose wait ended, else the next pod from
    /// the queue. Returns false when there is nothing to do now.
    fn start_next(&mut self) -> bool {
        // Cluster changes whose time has come land between attempts, never inside one.
        self.apply_due();
        if let Some(uid) = self.resumable()
            && let Some(a) = self.core.parked.remove(&uid)
        {
            self.current = Some(a);
            return true;
        }
        let now = self.now();
        // The pop is QueueSort's work (the order was kept as pods entered): its time is
        // the QueueSort step's.
        let started = std::time::Instant::now();
        let Some(qpi) = self.core.queue.pop(&self.core.sched.frameworks[0], now) else {
            return false;
        };
        let popped_in = started.elapsed();
        let pod = qpi.pod_info.clone();
        let Some(profile) = self.core.profile_of(&pod) else {
            self.core.queue.done(&pod.uid);
            return true;
        };
        if let Some(r) = self.core.pods.get_mut(&pod.key) {
            r.attempts += 1;
        }
        // In flight now: the queue's history copies its row.
        if let Some(t) = self.core.touched.as_mut() {
            t.push(pod.key.clone());
        }
        let id = self.next_attempt;
        self.next_attempt += 1;
        let start = self.core.sched.next_start_node_index;
        let cycle_count = self.core.queue.scheduling_cycle();
        let probe = self
            .core
            .sched
            .batch_probe(profile, cycle_count, &qpi.pod_info);
        let mut attempt = Attempt::new(id, qpi, profile, start, probe.clone());
        attempt.frozen = self.core.freeze(profile, start, probe);
        attempt.first_seq = self.history.peek_seq();
        let msg = format!("popped {} (attempt {})", pod.key, attempt.qpi.attempts);
        let e = StepEvent {
            point: Point::QueueSort,
            plugin: None,
            status: Status::new(Code::Success, msg),
            duration: popped_in,
            rejected: None,
            changed: Vec::new(),
            queue: self.core.counts(),
        };
        attempt.note_step(&e);
        let _ = self.push_step(Some(&attempt), e);
        self.current = Some(attempt);
        true
    }

    fn push_step(&mut self, a: Option<&Attempt>, e: StepEvent) -> StepRecord {
        self.push_step_noting(a, e, true)
    }

    /// `push_step`; `note`: the queue is as it was after this step (steps of a run
    /// recorded together after it ended share the queue before it, but the last).
    fn push_step_noting(&mut self, a: Option<&Attempt>, e: StepEvent, note: bool) -> StepRecord {
        let seq = self.history.next_seq();
        let rec = StepRecord {
            seq,
            at: self.now(),
            attempt: a.map(|a| a.id),
            pod: a.map(|a| a.key.clone()),
            point: e.point,
            plugin: e.plugin,
            code: e.status.code(),
            reasons: StepRecord::split_status(e.status).1,
            rejected: e.rejected,
            duration: e.duration,
            queue: e.queue,
            changed: e.changed.into_boxed_slice(),
        };
        if self.history.wants_steps() {
            self.history.push(rec.clone());
        }
        if note {
            self.note_queue(seq);
        }
        rec
    }

    fn record_attempt(&mut self, a: &Attempt) {
        // kubestep found the pod unschedulable while the recording (or, in shadow mode,
        // the cluster's scheduler) binds it: the attempt says what kubestep decided, as
        // for any unschedulable pod; deferring is for pods kubestep would bind.
        let deferred_unschedulable = match (&a.result, &a.cycle.outcome) {
            (
                Some(AttemptResult::Deferred { node: None, .. }),
                Some(CycleOutcome::Unschedulable {
                    fit_error,
                    post_filter,
                    ..
                }),
            ) => Some((fit_error.message(), post_filter.as_ref())),
            _ => None,
        };
        let (mut nominated, mut victims) = (None, Vec::new());
        let (outcome, node, message) = if let Some((message, post_filter)) = deferred_unschedulable
        {
            (nominated, victims) = attempt::nomination(post_filter);
            (Some("Unschedulable"), None, Some(message))
        } else {
            match &a.result {
                Some(AttemptResult::Bound { node }) => (Some("Bound"), Some(node.clone()), None),
                Some(AttemptResult::Waiting { node }) => {
                    // A PreBind wait says what it waits for; Permit's waits are the map's.
                    let note = a.pre_bind_hold.as_ref().map(|_| a.wait_note());
                    (Some("Waiting"), Some(node.clone()), note)
                }
                Some(AttemptResult::Deferred {
                    node,
                    real_node,
                    moved,
                }) => (
                    Some("Deferred"),
                    node.clone(),
                    Some(attempt::binder_note(real_node, *moved)),
                ),
                Some(AttemptResult::Failed(f)) => {
                    (nominated, victims) = (f.nominated.clone(), f.victims.clone());
                    (
                        Some(if f.error { "Error" } else { "Unschedulable" }),
                        None,
                        Some(f.message.clone()),
                    )
                }
                None => (None, a.node.clone(), None),
            }
        };
        let last_seq = self.history.peek_seq().saturating_sub(1);
        // Parking now, or ended after parking: how it stood meanwhile stays readable.
        let parked = if a.is_waiting() {
            Some(history::Parked {
                seq: last_seq,
                node: node.clone(),
                message: message.clone(),
            })
        } else {
            self.history.attempt(a.id).and_then(|r| r.parked.clone())
        };
        self.history.push_attempt(AttemptRecord {
            id: a.id,
            pod: a.pod().key.clone(),
            pod_info: match &a.bound_packed {
                Some(p) => history::AttemptPod::BoundPacked(p.clone()),
                None => history::AttemptPod::Whole(a.pod().clone()),
            },
            profile_index: a.profile,
            profile: self.core.sched.frameworks[a.profile].profile_name.clone(),
            started: a.qpi.timestamp,
            at: a.frozen.as_ref().map_or(a.qpi.timestamp, |f| f.now),
            pre_enqueue: a.qpi.pre_enqueue,
            outcome: outcome.map(str::to_string),
            deferred: matches!(a.result, Some(AttemptResult::Deferred { .. })),
            node,
            message,
            nominated,
            victims,
            cycle: a.cycle_summary.clone(),
            points: a.points.clone(),
            post_cycle: a.post_cycle.clone(),
            first_seq: a.first_seq,
            last_seq,
            parked,
            frozen: a.frozen.clone(),
            pod_bytes: 0,
        });
        let world = &self.core.world;
        if world.enabled() {
            self.history
                .forget_attempts_while(|a| a.frozen.as_ref().is_some_and(|f| !world.has(f.world)));
        }
    }

    /// Runs one step (an extension point, or one plugin); `None` when idle.
    fn advance_current(&mut self, one_plugin: bool) -> Option<Vec<StepRecord>> {
        self.advance_by(if one_plugin { By::Plugin } else { By::Point })
    }

    fn advance_by(&mut self, by: By) -> Option<Vec<StepRecord>> {
        // A step taken by anything else ends an `advance_until` left between timers.
        self.fresh_after_timers = false;
        if self.current.is_none() && !self.start_next() {
            return None;
        }
        let Some(mut a) = self.current.take() else {
            return Some(Vec::new());
        };
        self.core.sched.now = self.now();
        let events = match by {
            By::Plugin => a.advance(&mut self.core, true),
            By::Point => a.advance(&mut self.core, false),
            By::Attempt => a.advance_to_end(&mut self.core),
        };
        self.core.activate_requested(&mut a);
        let mut steps = Vec::with_capacity(events.len());
        let n = events.len();
        for (i, e) in events.into_iter().enumerate() {
            a.note_step(&e);
            steps.push(self.push_step_noting(Some(&a), e, i + 1 == n));
        }
        if a.is_done() || a.is_waiting() {
            self.record_attempt(&a);
            if a.is_done() {
                self.note_spin(&a);
            }
            if a.is_waiting() {
                let node = a.node.clone().unwrap_or_default();
                let msg = Some(a.wait_note());
                self.core
                    .record(a.pod(), PodStatus::Waiting, Some(&node), msg);
                self.core.parked.insert(a.pod().uid.clone(), a);
                // The step that parked it: its queue has the pod waiting, not in flight.
                if let Some(last) = steps.last() {
                    self.note_queue(last.seq);
                }
            }
        } else {
            self.current = Some(a);
        }
        Some(steps)
    }

    /// Finishes the current extension point (starting the next pod if none is in flight).
    pub fn step(&mut self) -> Option<Vec<StepRecord>> {
        self.advance_current(false)
    }

    /// Runs one plugin of the current extension point.
    pub fn step_plugin(&mut self) -> Option<Vec<StepRecord>> {
        self.advance_current(true)
    }

    /// Runs the current pod to the end of its attempt (bound, waiting or failed).
    pub fn finish_pod(&mut self) -> Vec<StepRecord> {
        let mut out = Vec::new();
        if self.current.is_none() && !self.start_next() {
            return out;
        }
        while self.current.is_some() {
            match self.advance_current(false) {
                Some(s) => out.extend(s),
                None => break,
            }
        }
        out
    }

    /// Applies a cluster change (from a recording or a watch).
    pub fn apply(&mut self, obj: Object) {
        let c = self.core.cluster.upsert(obj);
        self.core.apply_change(c);
    }

    /// A pending pod's change that kube-scheduler does not act on (its status alone):
    /// the cluster and the queued copy take it, and nothing is requeued.
    pub fn apply_quietly(&mut self, obj: Object) {
        let key = obj.key();
        let _ = self.core.cluster.upsert(obj);
        let Some(pi) = self.core.cluster.pod_info(&key).cloned() else {
            return;
        };
        if let Some(i) = self.core.profile_of(&pi) {
            let fwk = &self.core.sched.frameworks[i];
            self.core.queue.refresh(fwk, pi);
        }
    }

    pub fn delete(&mut self, kind: &str, key: &str) {
        let c = self.core.cluster.remove(kind, key);
        self.core.apply_change(c);
    }

    /// Pods bound so far (by kubestep or, in a replay, by the recording), without
    /// walking them.
    pub fn bound_pods(&self) -> usize {
        self.core.bound
    }

    /// Every pod's status, sorted by key (the headless summary).
    pub fn summary(&self) -> Vec<PodRecord> {
        self.core
            .pods
            .values()
            .map(|r| self.core.overlay(r))
            .collect()
    }

    /// One pod's status (`namespace/name`).
    pub fn pod(&self, key: &str) -> Option<PodRecord> {
        self.core.pods.get(key).map(|r| self.core.overlay(r))
    }

    /// Where kubestep disagreed with the recorded bindings applied so far, by pod.
    pub fn divergences(&self) -> Vec<Divergence> {
        let mut d = self.core.divergences.clone();
        d.sort_by(|a, b| a.pod.cmp(&b.pod));
        d
    }
}

impl History {
    /// Steps recorded from `seq` on (steps are in seq order: look from the end).
    pub fn since(&self, seq: u64) -> Vec<StepRecord> {
        let kept = self.steps.iter().rev().take_while(|s| s.seq >= seq).count();
        self.steps
            .iter()
            .skip(self.steps.len() - kept)
            .cloned()
            .collect()
    }
}
