//! The plugin interfaces, one trait per extension point, as kube-scheduler's framework.
//!
//! A plugin implements `Plugin` and returns itself from the `as_*` methods of the points it
//! extends; the framework builds each point's list from those answers (that is how
//! multiPoint expansion decides where a plugin goes).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

use super::cycle_state::CycleState;
use super::diagnosis::NodeToStatus;
use super::hints::ClusterEventWithHint;
use super::listers::Listers;
use super::node_info::NodeInfo;
use super::nominator::Nominator;
use super::profile::Framework;
use super::queued::QueuedPodInfo;
use super::snapshot::Snapshot;
use super::status::Status;
use super::types::PodInfo;
use super::waiting::WaitingPods;
// Where Permit waits are kept decides their cap; plugins name it from here.
pub use super::waiting::MAX_PERMIT_TIMEOUT;

/// A plugin's own state between cycles, as `Plugin::save_state` gives it.
pub type PluginState = Arc<dyn std::any::Any + Send + Sync>;

/// Scores are in [MIN_NODE_SCORE, MAX_NODE_SCORE] after NormalizeScore.
pub const MAX_NODE_SCORE: i64 = 100;
pub const MIN_NODE_SCORE: i64 = 0;

/// What plugins can see of the scheduler: the framework they run in, the snapshot taken
/// for this cycle, object listers, nominated pods, waiting pods, the time and the
/// extenders.
#[derive(Clone, Copy)]
pub struct Handle<'a> {
    pub framework: &'a Framework,
    pub snapshot: &'a Snapshot,
    pub listers: &'a Listers,
    pub nominator: &'a Nominator,
    pub waiting: &'a WaitingPods,
    /// The engine's clock at this step (the wall clock live, a virtual one in replay and
    /// tests). Plugins whose upstream reads `time.Now()` (Coscheduling's group backoff and
    /// failure times) read this instead, so runs stay repeatable.
    pub now: Timestamp,
    /// The configured scheduler extenders (upstream `Handle.Extenders`).
    pub extenders: &'a [std::sync::Arc<dyn crate::extender::Extender>],
    /// The caller only asks what a plugin would answer (live shadow mode's Permit): the
    /// plugin must leave its own state and the waiting pods as they are.
    pub simulation: bool,
    /// Where long parallel work runs (upstream `Handle.Parallelizer`); `None` runs it here.
    pub pool: Option<&'a rayon::ThreadPool>,
}

/// Nodes a PreFilter plugin narrows the search to; `None` means all nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreFilterResult {
    pub node_names: Option<BTreeSet<String>>,
}

impl PreFilterResult {
    pub fn all_nodes(&self) -> bool {
        self.node_names.is_none()
    }

    /// Upstream `Merge`: all ∪ all = all; all with X = X; X with Y = X ∩ Y.
    pub fn merge(&self, other: Option<&PreFilterResult>) -> PreFilterResult {
        let Some(other) = other else {
            return self.clone();
        };
        match (&self.node_names, &other.node_names) {
            (None, None) => PreFilterResult::default(),
            (None, Some(x)) | (Some(x), None) => PreFilterResult {
                node_names: Some(x.clone()),
            },
            (Some(a), Some(b)) => PreFilterResult {
                node_names: Some(a.intersection(b).cloned().collect()),
            },
        }
    }
}

/// Where preemption nominated the pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostFilterResult {
    pub nominated_node_name: String,
    /// True when the result sets (or clears) the nomination (upstream ModeOverride).
    pub override_nomination: bool,
    /// Pods the plugin evicted, as `namespace/name` (preemption victims).
    pub victims: Vec<String>,
}

/// A node's score from one plugin, as passed to NormalizeScore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeScore<'a> {
    pub name: &'a str,
    pub score: i64,
}

pub trait Plugin: Send + Sync {
    fn name(&self) -> &'static str;
    /// Seeds what upstream leaves to chance (e.g. the preemption dry run's offset), so a
    /// replay with the same seed repeats itself. Most plugins have nothing to seed.
    fn set_seed(&self, _seed: u64) {}
    /// Whether a pod this plugin rejected may pass later with nothing in the cluster
    /// changed, time alone having passed (a backoff, a timeout the plugin keeps). The
    /// queue retries such pods on its leftover flush; others wait for an event.
    fn verdict_moves_with_clock(&self) -> bool {
        false
    }
    /// What the plugin itself remembers between cycles (not CycleState), so that a past
    /// attempt can be re-run on a copy of the profile as it was; `None` for plugins that
    /// remember nothing (most).
    fn save_state(&self) -> Option<PluginState> {
        None
    }
    /// Takes back what `save_state` gave.
    fn restore_state(&self, _state: &PluginState) {}
    /// The cluster events that may make a pod this plugin rejected schedulable, each with
    /// its hint (upstream `EnqueueExtensions.EventsToRegister`). `None`: the plugin does not
    /// say, so every event of every resource retries its pods.
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        None
    }
    /// SignPod (OpportunisticBatching): what this plugin looks at in the pod, so that pods
    /// with equal signatures get equal results; `Some(Err)` when it cannot sign this pod.
    /// `None`: the plugin has no SignPod, and a profile running it at PreFilter, Filter,
    /// PreScore or Score never batches (as upstream, for out-of-tree plugins).
    fn sign_pod(&self, _pod: &PodInfo) -> Option<super::signature::SignResult> {
        None
    }
    /// SignPod where the answer depends on cluster objects (Fit under
    /// DRAExtendedResource asks which DeviceClasses exist); the rest sign from the pod.
    fn sign_pod_in(
        &self,
        pod: &PodInfo,
        _listers: &super::listers::Listers,
    ) -> Option<super::signature::SignResult> {
        self.sign_pod(pod)
    }
    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        None
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        None
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        None
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        None
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        None
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        None
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        None
    }
    fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
        None
    }
    fn as_permit(&self) -> Option<&dyn PermitPlugin> {
        None
    }
    fn as_pre_bind(&self) -> Option<&dyn PreBindPlugin> {
        None
    }
    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        None
    }
    fn as_post_bind(&self) -> Option<&dyn PostBindPlugin> {
        None
    }
    /// Upstream's plugin is a PlacementGeneratePlugin (1.36's pod-group cycle). kubestep
    /// runs no pod-group cycles: the framework only lists such plugins, as NewFramework does.
    fn is_placement_generate(&self) -> bool {
        false
    }
    /// Upstream's plugin is a PlacementScorePlugin (1.36; NodeResourcesFit is one). Listed
    /// only, as [`is_placement_generate`](Self::is_placement_generate).
    fn is_placement_score(&self) -> bool {
        false
    }
}

pub trait PreEnqueuePlugin: Plugin {
    fn pre_enqueue(&self, h: &Handle, pod: &PodInfo) -> Status;
}

pub trait QueueSortPlugin: Plugin {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool;
    /// Lets a plugin whose order depends on cluster objects (Coscheduling reads PodGroup
    /// creation times, as upstream reads them from its informer cache) take a fresh look at
    /// them. The queue calls it when objects change, before ordering. Default: nothing.
    fn refresh(&self, _listers: &Listers) {}
}

pub trait PreFilterPlugin: Plugin {
    fn pre_filter(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (Option<PreFilterResult>, Status);
    /// AddPod / RemovePod, used to evaluate nominated pods and preemption victims.
    fn extensions(&self) -> Option<&dyn PreFilterExtensions> {
        None
    }
}

pub trait PreFilterExtensions {
    fn add_pod(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        added: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status;
    fn remove_pod(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        removed: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status;
}

pub trait FilterPlugin: Plugin {
    fn filter(&self, h: &Handle, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status;

    /// kubestep's addition: after this plugin rejected `node`, more than its upstream
    /// reason in words (what exactly was missing), read from what Filter left in
    /// CycleState. Asked only when the full verdict matrix is built (explain, the TUI).
    fn rejection_note(&self, _state: &CycleState, _node: &str) -> Option<String> {
        None
    }
}

pub trait PostFilterPlugin: Plugin {
    fn post_filter(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status);
}

pub trait PreScorePlugin: Plugin {
    fn pre_score(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
    ) -> Status;
}

pub trait ScorePlugin: Plugin {
    fn score(
        &self,
        h: &Handle,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> (i64, Status);
    /// Scores a batch of nodes into `out` (same length as `nodes`); returns the first
    /// failure as (position, status). The cycle calls this rather than `score`, so a plugin
    /// can read its CycleState once per batch instead of once per node; the results must
    /// be what `score` gives node by node.
    fn score_nodes(
        &self,
        h: &Handle,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Option<(usize, Status)> {
        score_each(self, h, state, pod, nodes, out)
    }
    /// Whether the plugin has ScoreExtensions (NormalizeScore).
    fn has_normalize(&self) -> bool {
        false
    }
    fn normalize_score(
        &self,
        _h: &Handle,
        _state: &CycleState,
        _pod: &PodInfo,
        _scores: &mut [NodeScore],
    ) -> Status {
        Status::success()
    }
}

pub trait ReservePlugin: Plugin {
    fn reserve(&self, h: &Handle, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status;
    fn unreserve(&self, h: &Handle, state: &mut CycleState, pod: &PodInfo, node: &str);

    /// kubestep's: Reserve and Unreserve would do nothing for this pod (a no-op upstream
    /// too), so the session records no step for them, as if the plugin had none.
    fn nothing_to_reserve(&self, _state: &CycleState) -> bool {
        false
    }

    /// kubestep's: what Reserve holds ends by itself once the cluster shows the work of
    /// the pod's binding cycle (an allocation in flight ends when its claim shows one).
    /// Such a Reserve also runs for a pod the recording binds, on the recorded node, as
    /// the real scheduler's did before its writes reached the recording; a Reserve whose
    /// hold only Unreserve or the binding cycle releases does not.
    fn holds_until_observed(&self) -> bool {
        false
    }
}

pub trait PermitPlugin: Plugin {
    /// Success, a rejection, or Wait with how long to wait.
    fn permit(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> (Status, Duration);
}

pub trait PreBindPlugin: Plugin {
    /// Success, Skip (nothing to do for this pod) or Error.
    fn pre_bind_pre_flight(
        &self,
        h: &Handle,
        state: &CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status;
    /// Success, Error, a rejection, or Wait: upstream's plugin blocks inside PreBind
    /// (DynamicResources polling device binding conditions); kubestep parks the attempt
    /// there and asks `pre_bind_poll` at each look `pre_bind_polling` gives.
    fn pre_bind(&self, h: &Handle, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status;

    /// When a Wait from `pre_bind` is looked at again and when it gives up.
    fn pre_bind_polling(&self) -> PreBindPolling {
        PreBindPolling::default()
    }

    /// One look of a PreBind wait: Success (go on), Wait (still open: the message says
    /// what for), or the failure that ends it.
    fn pre_bind_poll(
        &self,
        _h: &Handle,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _node: &str,
    ) -> Status {
        Status::success()
    }

    /// kubestep's: PreBind has nothing to do for this pod (its pre-flight skips it), and
    /// the session records no step for it, as if the plugin had no PreBind.
    fn nothing_to_bind(&self, _state: &CycleState) -> bool {
        false
    }
}

/// How a PreBind plugin's wait is polled (upstream's `wait.PollUntilContextTimeout`):
/// at once, then every `every`, until `timeout` after the wait began, when the attempt
/// fails with `timeout_message` as an error.
#[derive(Debug, Clone)]
pub struct PreBindPolling {
    pub every: Duration,
    pub timeout: Duration,
    pub timeout_message: &'static str,
    /// The Normal event the plugin records on the pod as the wait begins (reason), with
    /// the wait's message as its note.
    pub event_reason: &'static str,
}

impl Default for PreBindPolling {
    fn default() -> Self {
        PreBindPolling {
            every: Duration::from_secs(5),
            timeout: Duration::from_secs(600),
            timeout_message: "timed out waiting",
            event_reason: "",
        }
    }
}

pub trait BindPlugin: Plugin {
    fn bind(&self, h: &Handle, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status;
}

pub trait PostBindPlugin: Plugin {
    fn post_bind(&self, h: &Handle, state: &mut CycleState, pod: &PodInfo, node: &str);
}

/// `score` node by node, the first failure as (position, status): what `score_nodes` does
/// unless a plugin batches.
pub fn score_each<P: ScorePlugin + ?Sized>(
    plugin: &P,
    h: &Handle,
    state: &CycleState,
    pod: &PodInfo,
    nodes: &[&NodeInfo],
    out: &mut [i64],
) -> Option<(usize, Status)> {
    let mut failed = None;
    for (i, (node, slot)) in nodes.iter().zip(out.iter_mut()).enumerate() {
        let (v, s) = plugin.score(h, state, pod, node);
        *slot = v;
        if failed.is_none() && !s.is_success() {
            failed = Some((i, s));
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> Option<BTreeSet<String>> {
        Some(names.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn merge_rules() {
        let all = PreFilterResult::default();
        let ab = PreFilterResult {
            node_names: set(&["a", "b"]),
        };
        let bc = PreFilterResult {
            node_names: set(&["b", "c"]),
        };
        assert!(all.merge(Some(&all)).all_nodes());
        assert_eq!(all.merge(Some(&ab)), ab);
        assert_eq!(ab.merge(Some(&bc)).node_names, set(&["b"]));
        assert_eq!(ab.merge(None), ab);
    }
}
