//! QueuedPodInfo: a pod as the scheduling queue holds it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use jiff::Timestamp;

use super::cycle_state::{RenderState, StateTree};
use super::events::EventType;
use super::types::PodInfo;

#[derive(Debug, Clone)]
pub struct QueuedPodInfo {
    pub pod_info: Arc<PodInfo>,
    /// When the pod was added to the queue (or last failed); QueueSort ties break on it.
    pub timestamp: Timestamp,
    /// Scheduling attempts (pops) so far.
    pub attempts: u32,
    /// Failed attempts with rejector plugins; drives the backoff.
    pub unschedulable_count: u32,
    /// Failed attempts in a row that ended in an Error (no rejector); when non-zero it
    /// drives the backoff instead of `unschedulable_count`.
    pub consecutive_errors_count: u32,
    /// When the pod first entered activeQ.
    pub initial_attempt_timestamp: Option<Timestamp>,
    /// Plugins that rejected the pod in its last attempt (or gated it at PreEnqueue).
    pub unschedulable_plugins: BTreeSet<String>,
    /// Plugins that answered Pending in its last attempt.
    pub pending_plugins: BTreeSet<String>,
    /// The PreEnqueue plugin that holds the pod back, if any.
    pub gating_plugin: Option<String>,
    /// The events the gating plugin registered: only those can release the pod.
    pub gating_plugin_events: Vec<EventType>,
    /// The gating plugin's message.
    pub gating_message: Option<String>,
    /// The message of the last failed attempt.
    pub last_failure: Option<String>,
    /// Wall time the last PreEnqueue run took (the debugger's timeline shows it).
    pub pre_enqueue: std::time::Duration,
    /// Order in which timestamps were given out: breaks ties between pods queued at the
    /// same instant of the virtual clock (upstream's clock never repeats).
    pub seq: u64,
    /// Set when the last attempt failed with nothing changed while it ran and no
    /// rejector whose verdict moves with the clock: the queue's event count then. While
    /// the count stays there a retry would fail the same way, so the leftover flush
    /// leaves the pod for the next event (a quiet replay must not spin until its far
    /// future).
    pub quiet_since: Option<u64>,
}

impl QueuedPodInfo {
    pub fn new(pod_info: Arc<PodInfo>, timestamp: Timestamp) -> QueuedPodInfo {
        QueuedPodInfo {
            pod_info,
            timestamp,
            attempts: 0,
            unschedulable_count: 0,
            consecutive_errors_count: 0,
            initial_attempt_timestamp: None,
            unschedulable_plugins: BTreeSet::new(),
            pending_plugins: BTreeSet::new(),
            gating_plugin: None,
            gating_plugin_events: Vec::new(),
            gating_message: None,
            last_failure: None,
            pre_enqueue: std::time::Duration::ZERO,
            seq: 0,
            quiet_since: None,
        }
    }

    pub fn uid(&self) -> &str {
        &self.pod_info.uid
    }

    /// Held back by a PreEnqueue plugin.
    pub fn gated(&self) -> bool {
        self.gating_plugin.is_some()
    }

    /// Live shadow mode: in unschedulable with no failure, a pod kubestep would bind,
    /// parked until the cluster's scheduler binds it (`park_awaiting_binding`).
    pub fn awaits_binding(&self) -> bool {
        !self.gated() && self.last_failure.is_none()
    }

    /// Unschedulable and Pending plugins together: the plugins whose hints decide.
    pub fn rejector_plugins(&self) -> BTreeSet<String> {
        self.unschedulable_plugins
            .union(&self.pending_plugins)
            .cloned()
            .collect()
    }

    pub fn has_rejectors(&self) -> bool {
        !self.unschedulable_plugins.is_empty() || !self.pending_plugins.is_empty()
    }
}

/// Upstream's reserved CycleState key for pods a plugin asks the queue to move to the
/// active queue once the cycle is over (Coscheduling names a gang's siblings there).
pub const PODS_TO_ACTIVATE_KEY: &str = "kubernetes.io/pods-to-activate";

/// The pods to activate after this cycle, by `namespace/name` (upstream `PodsToActivate`).
/// The queue takes them from the cycle's state; pods it does not hold as unschedulable or
/// backing off are left alone, as upstream's `Activate` does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodsToActivate {
    pub pods: BTreeMap<String, Arc<k8s_openapi::api::core::v1::Pod>>,
}

impl RenderState for PodsToActivate {
    fn render(&self) -> StateTree {
        StateTree::list("pods", self.pods.keys().cloned())
    }
}

/// kubestep's CycleState key for the API writes a plugin made in a step. Upstream plugins
/// call the API server themselves (DynamicResources writes ResourceClaim status at PreBind,
/// Unreserve and PostFilter); here the session carries the writes out after the step:
/// through its actuator (live active mode), and in its own cluster when it applies
/// changes locally (replay).
pub const OBJECT_WRITES_KEY: &str = "kubestep.io/object-writes";

/// The writes of this attempt: pending until the session carries them out.
#[derive(Debug, Clone, Default)]
pub struct ObjectWrites {
    pub pending: Vec<ObjectWrite>,
    /// Carried out, with the error when the write failed.
    pub done: Vec<(ObjectWrite, Option<String>)>,
}

/// What a write does to its object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ObjectOp {
    /// Update the status (with the finalizers, for a claim) of an existing object.
    #[default]
    UpdateStatus,
    /// Create the object, then write its status.
    Create,
    /// Delete the object (its finalizers dropped first, as upstream's `deleteClaim`).
    Delete,
}

/// One object's new state after a write.
#[derive(Debug, Clone)]
pub struct ObjectWrite {
    pub op: ObjectOp,
    /// What was being done, as upstream's error names it (`add allocation and reservation
    /// to claim default/c`); a failed write's error follows it.
    pub what: String,
    /// The whole object after the write, with apiVersion and kind.
    pub object: Arc<serde_json::Value>,
    /// Set once the write happened: a plugin may rely on what it wrote only then.
    pub written: Arc<std::sync::atomic::AtomicBool>,
}

impl ObjectWrites {
    /// Adds a write to the cycle's pending ones.
    pub fn push(state: &mut super::CycleState, w: ObjectWrite) {
        if state.read::<ObjectWrites>(OBJECT_WRITES_KEY).is_err() {
            state.write(OBJECT_WRITES_KEY, ObjectWrites::default());
        }
        if let Ok(ws) = state.read_mut::<ObjectWrites>(OBJECT_WRITES_KEY) {
            ws.pending.push(w);
        }
    }
}

impl RenderState for ObjectWrites {
    fn render(&self) -> StateTree {
        let done = self.done.iter().map(|(w, e)| match e {
            None => format!("{}: written", w.what),
            Some(e) => format!("{}: failed: {e}", w.what),
        });
        let pending = self.pending.iter().map(|w| format!("{}: pending", w.what));
        StateTree::list("writes", done.chain(pending))
    }
}
