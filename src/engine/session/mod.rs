//! Session: the engine running over time — cluster, scheduler, queue, waiting pods and a
//! clock — with every moment inspectable and steerable: step an extension point or one
//! plugin, finish a pod, continue to a breakpoint, advance time, allow or reject waiting
//! pods. The TUI, the headless debugger, replay and live mode all drive this API.

mod access;
pub mod attempt;
pub mod breakpoints;
pub mod clock;
pub mod detail;
pub mod divergence;
pub mod error;
pub mod feed;
pub mod history;
pub mod queue_history;
pub mod realign;
mod replay;
pub mod scheduler;
pub mod scheduler_log;
pub mod script;
pub mod trace;
pub mod world;
mod world_size;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;

use crate::cluster::{Change, ClusterState, Object, Stored};
use crate::config::KubeSchedulerConfiguration;
use crate::framework::CycleOutcome;
use crate::framework::batch::BatchProbe;
use crate::framework::queue::{self, SchedulingQueue};
use crate::framework::waiting::WaitingPods;
use crate::framework::{Code, Handle, PodInfo, Status};
use scheduler::{Scheduler, SetupError};

pub use attempt::{Attempt, AttemptResult, Failure, StepEvent};
pub use breakpoints::{Breakpoint, Outcome};
pub use clock::Clock;
pub use divergence::Divergence;
pub use error::{ActuatorError, CommandError, PermitError, WriteOp};
pub use feed::Feed;
pub use history::{AttemptRecord, History, Point, QueueCounts, StepRecord, fold_point_code};
pub use world::{Frozen, WorldHistory};

/// What a pod is, from the session's point of view (the summary's `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PodStatus {
    Pending,
    Gated,
    Unschedulable,
    Waiting,
    Bound,
    /// For a scheduler this configuration has no profile for.
    Ignored,
}

#[derive(Debug, Clone, Serialize)]
pub struct PodRecord {
    pub pod: String,
    #[serde(skip)]
    pub uid: String,
    pub node: Option<String>,
    pub status: PodStatus,
    pub message: Option<String>,
    #[serde(skip)]
    pub attempts: u32,
    /// `Core::records_version` when the record last changed (time travel: a record that
    /// has not changed since a moment was already like this then).
    #[serde(skip)]
    pub version: u64,
}

/// What scheduling decisions do to the cluster. In replay the session applies them to its
/// own copy; in live active mode they become API calls; in shadow mode nothing is written.
pub trait Actuator: Send {
    /// Bind `pod` to `node`. `Ok` means it is bound.
    fn bind(&mut self, pod: &PodInfo, node: &str) -> Result<(), ActuatorError>;
    /// Evict a preemption victim (`Ok` too when it is already gone).
    fn delete(
        &mut self,
        victim: &PodInfo,
        preemptor: &PodInfo,
        node: &str,
    ) -> Result<(), ActuatorError>;
    /// Set (or with `None` clear) `status.nominatedNodeName`. After a failed attempt it
    /// comes just before `failed`, which may write both at once.
    fn nominate(&mut self, pod: &PodInfo, node: Option<&str>) -> Result<(), ActuatorError>;
    /// NominatedNodeNameForExpectation: at the start of the binding cycle, a pod that will
    /// wait at Permit or has PreBind work gets `status.nominatedNodeName` set to the node it
    /// is about to be bound to (a signal for autoscalers). Written only when it differs.
    fn nominate_for_binding(&mut self, _pod: &PodInfo, _node: &str) -> Result<(), ActuatorError> {
        Ok(())
    }
    /// Write an object's status (`object` is the whole object after the write, with
    /// apiVersion and kind): DynamicResources' ResourceClaim allocation and reservation.
    /// What the session applies locally it applies itself, after this.
    fn update_status(&mut self, _object: &serde_json::Value) -> Result<(), ActuatorError> {
        Ok(())
    }
    /// The attempt failed with this message (FailedScheduling event, PodScheduled=False);
    /// `error` when it was not about fit (the condition's reason is then SchedulerError).
    fn failed(&mut self, _pod: &PodInfo, _message: &str, _error: bool) {}
    /// True when the session must apply binds and deletions to its own cluster copy
    /// (replay); false when they come back as watch events (live).
    fn applies_locally(&self) -> bool {
        true
    }
}

/// The default actuator: decisions only change the session's own cluster.
#[derive(Debug, Default)]
pub struct LocalActuator;

impl Actuator for LocalActuator {
    fn bind(&mut self, _pod: &PodInfo, _node: &str) -> Result<(), ActuatorError> {
        Ok(())
    }
    fn delete(&mut self, _v: &PodInfo, _p: &PodInfo, _node: &str) -> Result<(), ActuatorError> {
        Ok(())
    }
    fn nominate(&mut self, _pod: &PodInfo, _node: Option<&str>) -> Result<(), ActuatorError> {
        Ok(())
    }
}

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

/// Everything but the pod being stepped.
pub struct Core {
    pub clock: Clock,
    pub cluster: ClusterState,
    pub sched: Scheduler,
    pub queue: SchedulingQueue,
    pub waiting: WaitingPods,
    /// Attempts held at Permit, by pod UID.
    pub parked: BTreeMap<String, Attempt>,
    pub pods: BTreeMap<String, PodRecord>,
    pub actuator: Box<dyn Actuator>,
    /// What past attempts ran on (see `world.rs`).
    pub world: WorldHistory,
    /// The packed pod the last local binding stored (the attempt keeps it, not the
    /// whole pending pod).
    bound_packed: Option<Arc<PodInfo>>,
    /// Pods the source (a recording) binds, by UID, with the node it binds them to:
    /// kubestep runs their scheduling cycle and compares its decision, but does not
    /// reserve or bind them.
    pub externally_bound: BTreeMap<String, String>,
    /// Of those, the ones kubestep found a node for, by UID, with the recorded node they
    /// are assumed on in the snapshot until the recorded binding (or their deletion).
    assumed_for_recording: HashMap<String, String>,
    /// Cluster changes still to come (a recording's events, or watch events).
    pub feed: Feed,
    /// UIDs of preemption victims kubestep deleted from its own copy of the cluster (replay):
    /// the recording, where they lived on, must not bring them back.
    pub evicted: BTreeSet<String>,
    /// kubestep's decision differed from the recorded binding, for bindings applied so far.
    pub divergences: Vec<Divergence>,
    /// Differences found at decision time, reported once the recorded binding happens.
    pub pending_divergences: BTreeMap<String, Divergence>,
    /// Cluster changes applied, for the trace.
    pub changes: Vec<(Timestamp, String)>,
    /// Pods recorded as Bound (kept as records change, so steps can count cheaply).
    bound: usize,
    /// Counts changes to `pods` (a record set, or removed).
    pub records_version: u64,
    /// Pods whose record is neither Bound nor Ignored: the ones the queue pane lists
    /// besides the queue, found without walking every bound pod.
    pub unbound: std::collections::BTreeSet<String>,
    /// Node names in snapshot order for attempt records, shared while the node list
    /// stays the same (keyed by the snapshot's epoch).
    node_names: (u64, Arc<Vec<String>>),
}

/// Why `continue` / `advance` stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum StopReason {
    Breakpoint(String),
    /// Nothing more can happen at the current time.
    Idle,
    /// `advance` reached its target time.
    Reached,
    /// A pod was attempted over and over at one virtual instant without anything
    /// changing: the run cannot go on (see `Spin`).
    Stuck(String),
}

/// Attempts each pod ended at the current virtual instant. On the virtual clock a loop of
/// attempts that never lets time pass would run forever; past `SPIN_LIMIT` the session
/// stops and says which pod and extension point went round.
#[derive(Default)]
struct Spin {
    at: Option<Timestamp>,
    counts: HashMap<Arc<str>, u32>,
}

/// Far more attempts of one pod at one instant than any real sequence of events gives.
pub const SPIN_LIMIT: u32 = 1000;

/// How far one advance of the current attempt goes.
#[derive(Clone, Copy)]
enum By {
    Plugin,
    Point,
    Attempt,
}

pub struct Session {
    pub core: Core,
    pub current: Option<Attempt>,
    pub history: History,
    pub breakpoints: Vec<Breakpoint>,
    next_attempt: u64,
    /// A `continue_attempts` ran out of budget: the next call goes on (no resume).
    mid_continue: bool,
    /// How much headless runs print.
    pub trace_level: trace::TraceLevel,
    spin: Spin,
    /// Set when the spin guard stopped the run; every later run stops at once.
    pub stuck: Option<String>,
    /// Attempts recomputed in full lately, and the copies of the profiles that do it.
    details: detail::Details,
}

/// A Handle from the parts of `Core` it needs, so the queue can be borrowed beside it.
fn handle_of<'a>(
    sched: &'a Scheduler,
    cluster: &'a ClusterState,
    waiting: &'a WaitingPods,
    now: Timestamp,
    profile: usize,
) -> Handle<'a> {
    Handle {
        framework: &sched.frameworks[profile],
        snapshot: &sched.snapshot,
        listers: &cluster.listers,
        nominator: &sched.nominator,
        waiting,
        now,
        extenders: &sched.extenders,
        simulation: false,
        pool: sched.pool(),
    }
}

impl Core {
    pub fn handle(&self, profile: usize) -> Handle<'_> {
        handle_of(
            &self.sched,
            &self.cluster,
            &self.waiting,
            self.clock.now(),
            profile,
        )
    }

    fn profile_of(&self, pod: &PodInfo) -> Option<usize> {
        self.sched
            .frameworks
            .iter()
            .position(|f| f.profile_name == pod.scheduler_name())
    }

    fn record(
        &mut self,
        pod: &PodInfo,
        status: PodStatus,
        node: Option<&str>,
        message: Option<String>,
    ) {
        let r = self
            .pods
            .entry(pod.key.clone())
            .or_insert_with(|| PodRecord {
                pod: pod.key.clone(),
                uid: pod.uid.clone(),
                node: None,
                status: PodStatus::Pending,
                message: None,
                attempts: 0,
                version: 0,
            });
        if r.status == PodStatus::Bound {
            self.bound -= 1;
        }
        if status == PodStatus::Bound {
            self.bound += 1;
        }
        let changed = r.version == 0
            || r.status != status
            || r.node.as_deref() != node
            || r.message != message;
        r.status = status;
        r.node = node.map(str::to_string);
        r.message = message;
        if changed {
            self.records_version += 1;
            r.version = self.records_version;
        }
        if matches!(status, PodStatus::Bound | PodStatus::Ignored) {
            self.unbound.remove(&pod.key);
        } else {
            self.unbound.insert(pod.key.clone());
        }
    }

    /// Node names in snapshot order (what attempt records' indices refer to).
    pub fn node_names(&mut self) -> Arc<Vec<String>> {
        let epoch = self.sched.snapshot.epoch();
        if self.node_names.0 != epoch {
            let names = self
                .sched
                .snapshot
                .list()
                .iter()
                .map(|n| n.name().to_string())
                .collect();
            self.node_names = (epoch, Arc::new(names));
        }
        self.node_names.1.clone()
    }

    /// A record as it stands now: a pod held back at PreEnqueue (on arrival, or when a
    /// retry found it gated again) is Gated, with the gating plugin's message.
    fn overlay(&self, r: &PodRecord) -> PodRecord {
        let mut r = r.clone();
        if matches!(r.status, PodStatus::Pending | PodStatus::Unschedulable)
            && let Some(q) = self.queue.get(&r.uid)
            && q.gated()
        {
            r.status = PodStatus::Gated;
            r.message = q.gating_message.clone();
        }
        r
    }

    /// The binding decided at Bind: carried out by the actuator, then (in replay)
    /// applied to the session's cluster.
    fn bind_pod(
        &mut self,
        pod: &PodInfo,
        assumed: Option<Arc<PodInfo>>,
        node: &str,
    ) -> Result<(), ActuatorError> {
        self.actuator.bind(pod, node)?;
        if self.actuator.applies_locally() {
            // What was derived from the pod stays valid: only its node changes (the
            // assumed pod is that, packed).
            let bound = match assumed.filter(|a| a.node_name() == node) {
                Some(a) => a,
                None => Arc::new(pod.bound_to(node).packed()),
            };
            self.bound_packed = Some(bound.clone());
            let change = self.cluster.upsert(Object::PackedPod(bound));
            self.apply_change(change);
        }
        Ok(())
    }

    /// Carries out the API writes plugins left in the attempt's CycleState (see
    /// `ObjectWrites`): through the actuator, then in the session's own cluster when it
    /// applies changes locally. Returns the first failure, as `what: error`.
    fn carry_out_writes(&mut self, state: &mut crate::framework::CycleState) -> Result<(), String> {
        use crate::framework::queued::{OBJECT_WRITES_KEY, ObjectWrites};
        let has_pending = state
            .read::<ObjectWrites>(OBJECT_WRITES_KEY)
            .is_ok_and(|w| !w.pending.is_empty());
        if !has_pending {
            return Ok(());
        }
        let Ok(ws) = state.read_mut::<ObjectWrites>(OBJECT_WRITES_KEY) else {
            return Ok(());
        };
        let mut first = Ok(());
        for w in std::mem::take(&mut ws.pending) {
            let r = self
                .actuator
                .update_status(&w.object)
                .map_err(|e| e.to_string());
            if r.is_ok() {
                w.written.store(true, std::sync::atomic::Ordering::Release);
                if self.actuator.applies_locally()
                    && let Ok(Some(obj)) = crate::cluster::object::from_value((*w.object).clone())
                {
                    let change = self.cluster.upsert(obj);
                    self.apply_change(change);
                }
            }
            let err = r.err();
            if first.is_ok()
                && let Some(e) = &err
            {
                first = Err(format!("{}: {e}", w.what));
            }
            ws.done.push((w, err));
        }
        first
    }

    /// A pod the recording binds to `node` and kubestep found a node for: assumed there in
    /// the snapshot, as the real scheduler's cache held it between its cycle and the
    /// binding, so the pods scheduled meanwhile see its resources taken. A node kubestep's
    /// snapshot does not have yet holds nothing.
    fn assume_until_recorded_binding(&mut self, pod: &PodInfo, node: &str) {
        if self.sched.snapshot.get(node).is_none() {
            return;
        }
        self.sched.assume_pod(Arc::new(pod.bound_to(node).packed()));
        self.assumed_for_recording
            .insert(pod.uid.clone(), node.to_string());
    }

    fn finish_bound(&mut self, pod: &PodInfo, node: &str) {
        self.queue.done(&pod.uid);
        self.record(pod, PodStatus::Bound, Some(node), None);
    }

    /// `handleSchedulingFailure`: nominate, evict victims, and requeue the pod.
    fn handle_failure(&mut self, qpi: &crate::framework::queued::QueuedPodInfo, f: &Failure) {
        let pod = &qpi.pod_info;
        let now = self.clock.now();
        // The nomination first, so that an actuator can write it and the failure in one
        // status update, as kube-scheduler does.
        if let Some(n) = &f.nominated {
            let node = (!n.is_empty()).then_some(n.as_str());
            let _ = self.actuator.nominate(pod, node);
        }
        self.actuator.failed(pod, &f.message, f.error);
        // A nomination that changes nothing (cleared on a pod that has none) writes
        // nothing: kube-scheduler's status patch is empty then, and a new pod version
        // at every retry would only fill history.
        let unchanged = f.nominated.as_deref().is_some_and(|n| {
            n.is_empty()
                && !self.sched.nominator.contains(&pod.uid)
                && self
                    .cluster
                    .pod_info(&pod.key)
                    .is_none_or(|p| p.nominated_node_name().is_empty())
        });
        if let Some(n) = f.nominated.as_ref().filter(|_| !unchanged) {
            let node = (!n.is_empty()).then_some(n.as_str());
            let mut nominated = (*pod.pod()).clone();
            nominated
                .status
                .get_or_insert_with(Default::default)
                .nominated_node_name = node.map(str::to_string);
            let pi = Arc::new(PodInfo::new(Arc::new(nominated)));
            Arc::make_mut(&mut self.sched.nominator).add(pi.clone(), node.unwrap_or(""));
            if self.actuator.applies_locally() && self.cluster.pod_info(&pod.key).is_some() {
                self.cluster
                    .upsert(Object::Pod(Box::new((*pi.pod()).clone())));
            }
        }
        if !f.victims.is_empty() {
            self.evict(pod, f.nominated.as_deref().unwrap_or(""), &f.victims);
        }
        let still_pending = self
            .cluster
            .pod_info(&pod.key)
            .is_some_and(|p| p.node_name().is_empty());
        if still_pending {
            if let Some(i) = self.profile_of(pod) {
                let h = handle_of(&self.sched, &self.cluster, &self.waiting, now, i);
                let fwk = &self.sched.frameworks[i];
                self.queue.add_unschedulable_if_not_present(
                    &h,
                    fwk,
                    qpi.clone(),
                    f.unschedulable_plugins.clone(),
                    f.pending_plugins.clone(),
                    f.error,
                    f.message.clone(),
                    now,
                );
            }
            self.record(pod, PodStatus::Unschedulable, None, Some(f.message.clone()));
        }
        self.queue.done(&pod.uid);
    }

    /// Preemption: waiting victims are rejected, the others deleted.
    fn evict(&mut self, preemptor: &PodInfo, node: &str, victims: &[String]) {
        for key in victims {
            let Some(victim) = self.cluster.pod_info(key).cloned() else {
                continue;
            };
            if self
                .waiting
                .reject(&victim.uid, "DefaultPreemption", "preempted")
            {
                continue;
            }
            if self.actuator.delete(&victim, preemptor, node).is_ok()
                && self.actuator.applies_locally()
            {
                self.evicted.insert(victim.uid.clone());
                let change = self.cluster.remove("Pod", key);
                self.apply_change(change);
            }
        }
    }

    /// Brings the scheduler's views up to date with a cluster change and tells the queue.
    pub fn apply_change(&mut self, change: Option<Change>) {
        let Some(c) = change else { return };
        let now = self.clock.now();
        if c.kind != "Node" {
            self.refresh_queue_sort();
        }
        let events = match (&c.old, &c.new) {
            (old, new) if c.kind == "Pod" => {
                let old_pod = match old {
                    Some(Stored::Pod(p)) => Some(p.clone()),
                    _ => None,
                };
                let new_pod = match new {
                    Some(Stored::Pod(p)) => Some(p.clone()),
                    _ => None,
                };
                self.apply_pod_change(old_pod.as_deref(), new_pod.clone(), now);
                queue::events_for_pod_change(old_pod.as_ref(), new_pod.as_ref())
            }
            (old, new) if c.kind == "Node" => {
                let old_node = match old {
                    Some(Stored::Node(n)) => Some(n.clone()),
                    _ => None,
                };
                match new {
                    Some(Stored::Node(n)) => self.sched.snapshot.upsert_node(n.clone()),
                    _ => {
                        self.sched.snapshot.remove_node(&c.key);
                    }
                }
                let new_node = match new {
                    Some(Stored::Node(n)) => Some(n.clone()),
                    _ => None,
                };
                queue::events_for_node_change(old_node.as_deref(), new_node.as_deref())
            }
            (old, new) => {
                let v = |s: &Option<Stored>| match s {
                    Some(Stored::Other { value, .. }) => Some(value.clone()),
                    _ => None,
                };
                queue::events_for_object(&c.kind, v(old).as_ref(), v(new).as_ref())
            }
        };
        for e in &events {
            let h = handle_of(&self.sched, &self.cluster, &self.waiting, now, 0);
            self.queue.on_event(&h, &self.sched.frameworks, e, now);
        }
    }

    fn apply_pod_change(
        &mut self,
        old: Option<&PodInfo>,
        new: Option<Arc<PodInfo>>,
        now: Timestamp,
    ) {
        if let Some(o) = old {
            let n = o.node_name();
            if !n.is_empty() {
                self.sched.snapshot.remove_pod(n, &o.key);
            }
        }
        let Some(pi) = new else {
            // Deleted: out of the queue, out of the waiting map, out of nominations.
            if let Some(pi) = old {
                if let Some(n) = self.assumed_for_recording.remove(&pi.uid) {
                    self.sched.snapshot.remove_pod(&n, &pi.key);
                }
                self.queue.delete(&pi.uid);
                self.waiting.reject(&pi.uid, "", "removed");
                self.forget_nomination(&pi.uid);
                if self.pods.remove(&pi.key).map(|r| r.status) == Some(PodStatus::Bound) {
                    self.bound -= 1;
                }
                self.records_version += 1;
                self.unbound.remove(&pi.key);
                self.pending_divergences.remove(&pi.uid);
            }
            return;
        };
        let n = pi.node_name().to_string();
        let assumed_on = if n.is_empty() {
            None
        } else {
            self.assumed_for_recording.remove(&pi.uid)
        };
        if !n.is_empty() {
            // Bound (or assumed by us): replace whatever the snapshot held for it.
            if let Some(a) = assumed_on.filter(|a| *a != n) {
                self.sched.snapshot.remove_pod(&a, &pi.key);
            }
            self.sched.snapshot.remove_pod(&n, &pi.key);
            self.sched.snapshot.add_pod(pi.clone());
            self.forget_nomination(&pi.uid);
            self.record(&pi, PodStatus::Bound, Some(&n), None);
            self.queue.delete(&pi.uid);
            // A recorded binding: kubestep's different decision, if any, is now a fact.
            if let Some(d) = self.pending_divergences.remove(&pi.uid) {
                self.divergences.push(d);
            }
            return;
        }
        // kube-scheduler skips updates of an assumed pod: it waits for its binding.
        if self.assumed_for_recording.contains_key(&pi.uid) {
            return;
        }
        let Some(i) = self.profile_of(&pi) else {
            self.record(
                &pi,
                PodStatus::Ignored,
                None,
                Some(format!(
                    "no profile for schedulerName {:?}",
                    pi.scheduler_name()
                )),
            );
            return;
        };
        let h = handle_of(&self.sched, &self.cluster, &self.waiting, now, i);
        let fwk = &self.sched.frameworks[i];
        if old.is_some() {
            self.queue.update(&h, fwk, pi.clone(), now);
        } else {
            self.queue.add(&h, fwk, pi.clone(), now);
        }
        let nnn = pi.nominated_node_name().to_string();
        if !nnn.is_empty() {
            Arc::make_mut(&mut self.sched.nominator).add(pi.clone(), &nnn);
        }
        if !self.pods.contains_key(&pi.key) {
            self.record(&pi, PodStatus::Pending, None, None);
        }
    }

    /// What an attempt starting now needs to be run again exactly (see `world.rs`).
    fn freeze(
        &mut self,
        profile: usize,
        start_node_index: usize,
        batch: Option<BatchProbe>,
    ) -> Option<Frozen> {
        if !self.world.enabled() {
            return None;
        }
        let world = self
            .world
            .freeze(&mut self.sched.snapshot, &mut self.cluster.listers);
        let mut states = Vec::new();
        for (name, plugin) in self.sched.frameworks[profile].unique_plugins() {
            if let Some(st) = plugin.save_state() {
                states.push((name, st));
            }
        }
        Some(Frozen {
            world,
            now: self.clock.now(),
            start_node_index,
            batch,
            nominator: self.sched.nominator.clone(),
            waiting: (!self.waiting.is_empty()).then(|| Arc::new(self.waiting.fork())),
            plugin_states: Arc::new(states),
        })
    }

    /// Drops a pod's nomination (copying the nominations only when one goes).
    fn forget_nomination(&mut self, uid: &str) {
        if self.sched.nominator.contains(uid) {
            Arc::make_mut(&mut self.sched.nominator).remove(uid);
        }
    }

    /// Pods a plugin asked to activate (PodsToActivate in the attempt's CycleState) move
    /// to the active queue, and the request is cleared, as upstream does after each cycle.
    fn activate_requested(&mut self, a: &mut Attempt) {
        use crate::framework::queued::{PODS_TO_ACTIVATE_KEY, PodsToActivate};
        let Ok(req) = a.cycle.state.read::<PodsToActivate>(PODS_TO_ACTIVATE_KEY) else {
            return;
        };
        if req.pods.is_empty() {
            return;
        }
        let uids: Vec<String> = req
            .pods
            .values()
            .filter_map(|p| p.metadata.uid.clone())
            .collect();
        a.cycle
            .state
            .write(PODS_TO_ACTIVATE_KEY, PodsToActivate::default());
        let now = self.clock.now();
        let h = handle_of(&self.sched, &self.cluster, &self.waiting, now, a.profile);
        self.queue
            .activate(&h, &self.sched.frameworks[a.profile], &uids, now);
    }

    /// QueueSort plugins whose order depends on cluster objects re-read them.
    fn refresh_queue_sort(&self) {
        for fwk in &self.sched.frameworks {
            for e in fwk.plugins(crate::framework::ExtensionPoint::QueueSort) {
                if let Some(q) = e.plugin.as_queue_sort() {
                    q.refresh(&self.cluster.listers);
                }
            }
        }
    }

    pub fn counts(&self) -> QueueCounts {
        // Kept cheap: it runs after every step, and recordings hold tens of thousands of pods.
        let q = self.queue.sizes();
        let c = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        QueueCounts {
            active: c(q.active),
            backoff: c(q.backoff),
            unschedulable: c(q.unschedulable),
            gated: c(q.gated),
            waiting: c(self.waiting.len()),
            bound: c(self.bound),
            awaiting: c(q.awaiting_binding),
        }
    }
}

pub fn pod_key(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or("default"),
        p.metadata.name.as_deref().unwrap_or("")
    )
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
            assumed_for_recording: HashMap::new(),
            feed: Feed::default(),
            evicted: BTreeSet::new(),
            divergences: Vec::new(),
            pending_divergences: BTreeMap::new(),
            changes: Vec::new(),
            bound: 0,
            records_version: 0,
            unbound: Default::default(),
            node_names: (u64::MAX, Arc::new(Vec::new())),
        };
        // Changes are recorded from here on, so any attempt's world can be rebuilt.
        if core.world.enabled() {
            core.sched.snapshot.record_changes();
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
            .find(|(uid, _)| {
                self.core
                    .waiting
                    .get(uid)
                    .is_none_or(|w| w.outcome.is_some())
            })
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
        let id = self.next_attempt;
        self.next_attempt += 1;
        let start = self.core.sched.next_start_node_index;
        let cycle_count = self.core.queue.scheduling_cycle();
        let probe = self
            .core
            .sched
            .batches
            .get(profile)
            .map(|b| b.probe(cycle_count));
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
        self.note_queue(seq);
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
                    (Some("Waiting"), Some(node.clone()), None)
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
        for e in events {
            a.note_step(&e);
            steps.push(self.push_step(Some(&a), e));
        }
        if a.is_done() || a.is_waiting() {
            self.record_attempt(&a);
            if a.is_done() {
                self.note_spin(&a);
            }
            if a.is_waiting() {
                let node = a.node.clone().unwrap_or_default();
                let msg = Some("waiting at Permit".to_string());
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

    /// Counts a finished attempt towards the spin guard.
    fn note_spin(&mut self, a: &Attempt) {
        let now = self.now();
        if self.spin.at != Some(now) {
            self.spin.at = Some(now);
            self.spin.counts.clear();
        }
        let n = self.spin.counts.entry(a.key.clone()).or_default();
        *n += 1;
        if *n <= SPIN_LIMIT || self.stuck.is_some() {
            return;
        }
        let last = a
            .points
            .iter()
            .rev()
            .find(|p| !matches!(p.code, Code::Success | Code::Skip))
            .or(a.points.last());
        let point = last.map_or("QueueSort", |p| p.point.as_str());
        let code = last.map_or(Code::Success, |p| p.code);
        self.stuck = Some(format!(
            "pod {} was attempted {n} times at {now} without time passing; its last attempt ended at {point} ({code:?}); the replay cannot make progress",
            a.key
        ));
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

    /// Runs until a breakpoint or until nothing more can happen at the current time.
    /// The clock does not move.
    pub fn continue_(&mut self) -> StopReason {
        let mut resume = true;
        loop {
            if let Some(r) = self.continue_from(usize::MAX, resume) {
                return r;
            }
            resume = false;
        }
    }

    /// `continue_` for at most `max` attempts (or, with breakpoints set, extension
    /// points): `None` when the budget ran out first, to be called again without
    /// `resume`.
    pub fn continue_attempts(&mut self, max: usize) -> Option<StopReason> {
        let resume = !std::mem::take(&mut self.mid_continue);
        let r = self.continue_from(max, resume);
        self.mid_continue = r.is_none();
        r
    }

    /// `continue_attempts` with the caller keeping track of stops: `resume` is true on the
    /// first call after one (the TUI at full speed).
    pub fn continue_attempts_from(&mut self, max: usize, resume: bool) -> Option<StopReason> {
        self.continue_from(max, resume)
    }

    fn continue_from(&mut self, max: usize, resume: bool) -> Option<StopReason> {
        let mut first = resume;
        for _ in 0..max {
            if let Some(m) = &self.stuck {
                return Some(StopReason::Stuck(m.clone()));
            }
            self.expire_waits();
            if !first && let Some(b) = self.break_before() {
                return Some(StopReason::Breakpoint(b));
            }
            first = false;
            // Nothing to stop at: run whole attempts.
            let by = if self.breakpoints.is_empty() {
                By::Attempt
            } else {
                By::Point
            };
            let Some(steps) = self.advance_by(by) else {
                return Some(StopReason::Idle);
            };
            if let Some(b) = self.break_after(&steps) {
                return Some(StopReason::Breakpoint(b));
            }
        }
        None
    }

    /// `continue_` with a step budget, so a driver that must stay responsive (the TUI)
    /// can run a little at a time: `None` when the budget ran out first. `resume` is true
    /// on the first call after a stop, so the breakpoint stopped at does not stop it again.
    pub fn continue_steps(&mut self, max_steps: usize, resume: bool) -> Option<StopReason> {
        let mut first = resume;
        for _ in 0..max_steps {
            if let Some(m) = &self.stuck {
                return Some(StopReason::Stuck(m.clone()));
            }
            self.expire_waits();
            if !first && let Some(b) = self.break_before() {
                return Some(StopReason::Breakpoint(b));
            }
            first = false;
            let Some(steps) = self.advance_current(false) else {
                return Some(StopReason::Idle);
            };
            if let Some(b) = self.break_after(&steps) {
                return Some(StopReason::Breakpoint(b));
            }
        }
        None
    }

    /// Lets `d` of time pass with the scheduler running: timers fire in time order
    /// (backoff, unschedulable flushes, Permit timeouts), and scheduling continues between
    /// them. Stops early at a breakpoint.
    pub fn advance(&mut self, d: Duration) -> StopReason {
        let target = clock::add(self.now(), d);
        let mut resume = true;
        loop {
            match self.advance_until(target, usize::MAX, resume) {
                Some(r) => return r,
                None => resume = false,
            }
        }
    }

    /// `advance` to `target` at most `max` attempts at a time (with breakpoints set,
    /// extension points) between timers: `None` when the budget ran out first, to be
    /// called again with the same target and `resume` false, so a driver can show each
    /// attempt as it ends. `resume` is true on the first call after a stop, as for
    /// `continue_steps`.
    pub fn advance_until(
        &mut self,
        target: Timestamp,
        max: usize,
        resume: bool,
    ) -> Option<StopReason> {
        let mut resume = resume;
        loop {
            // After the queue went idle and timers fired, scheduling starts afresh.
            match self.continue_from(max, std::mem::replace(&mut resume, true)) {
                None => return None,
                Some(StopReason::Idle) => {}
                Some(other) => return Some(other),
            }
            let next = self.next_timer().filter(|t| *t <= target).unwrap_or(target);
            self.core.clock.set(next);
            self.fire_timers();
            if next >= target && !self.has_work() {
                return Some(StopReason::Reached);
            }
        }
    }

    /// When something next happens on its own (a backoff ending, a Permit deadline, ...).
    pub fn next_timer(&self) -> Option<Timestamp> {
        let now = self.now();
        [
            self.core.queue.next_timer(now),
            self.core.waiting.next_deadline(),
            self.core.feed.next_at(),
        ]
        .into_iter()
        .flatten()
        .filter(|t| *t > now)
        .min()
    }

    fn fire_timers(&mut self) {
        self.expire_waits();
        let now = self.now();
        let c = &mut self.core;
        let h = handle_of(&c.sched, &c.cluster, &c.waiting, now, 0);
        c.queue.flush_all(&h, &c.sched.frameworks, now);
    }

    fn expire_waits(&mut self) {
        let now = self.now();
        self.core.waiting.expire(now);
    }

    /// Allows a waiting pod: for one plugin, or for every plugin it waits on.
    pub fn allow(&mut self, pod: &str, plugin: Option<&str>) -> Result<(), PermitError> {
        let wp = self.waiting_pod(pod)?;
        let plugins: Vec<String> = match plugin {
            Some(p) => vec![p.to_string()],
            None => wp.pending.keys().cloned().collect(),
        };
        for p in &plugins {
            if !self.core.waiting.allow(&wp.pod.uid, p) {
                return Err(PermitError::NotWaitingOn {
                    pod: pod.to_string(),
                    plugin: p.clone(),
                    waiting_on: wp.pending.keys().cloned().collect(),
                });
            }
        }
        Ok(())
    }

    /// Rejects a waiting pod, with a message (shown as the rejection reason).
    pub fn reject(
        &mut self,
        pod: &str,
        plugin: Option<&str>,
        message: &str,
    ) -> Result<(), PermitError> {
        let wp = self.waiting_pod(pod)?;
        let plugin = plugin
            .map(str::to_string)
            .or_else(|| wp.pending.keys().next().cloned())
            .unwrap_or_default();
        let msg = if message.is_empty() {
            "rejected by the user"
        } else {
            message
        };
        if self.core.waiting.reject(&wp.pod.uid, &plugin, msg) {
            Ok(())
        } else {
            Err(PermitError::NoLongerWaiting {
                pod: pod.to_string(),
            })
        }
    }

    fn waiting_pod(&self, key: &str) -> Result<crate::framework::waiting::WaitingPod, PermitError> {
        let uid = self
            .core
            .pods
            .get(key)
            .map(|r| r.uid.clone())
            .ok_or_else(|| PermitError::NoSuchPod {
                pod: key.to_string(),
            })?;
        self.core
            .waiting
            .get(&uid)
            .filter(|w| w.outcome.is_none())
            .ok_or_else(|| PermitError::NotWaiting {
                pod: key.to_string(),
            })
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
