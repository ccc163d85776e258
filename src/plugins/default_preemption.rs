//! DefaultPreemption: when no node fits, PostFilter looks for a node where evicting pods
//! of lower priority makes room, nominates the pod there and names the victims.
//!
//! The search itself is the framework's [`Evaluator`]; this plugin supplies the policy:
//! who may preempt, which pods on a node go, and how many candidates to look for.
//!
//! kubestep differs from upstream only where upstream is random or asynchronous:
//! * The dry run's starting offset comes from [`DefaultPreemption::seed`] (`seed % n`),
//!   where upstream draws `rand.Int31n(n)`.
//! * Preemption is synchronous: the driver evicts the victims listed in the
//!   `PostFilterResult` (and clears lower-priority nominations on that node) before the
//!   next cycle, so PreEnqueue never has an in-flight preemption to wait for.

use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;

use crate::framework::plugin::{
    Handle, Plugin, PostFilterPlugin, PostFilterResult, PreEnqueuePlugin,
};
use crate::framework::preemption::{
    Evaluator, Interface, NodeVictims, PdbInfo, sort_by_importance,
};
use crate::framework::{CycleState, NodeInfo, NodeToStatus, PodInfo, Status};

pub const NAME: &str = "DefaultPreemption";
/// Where the plugin leaves its account of the attempt (kubestep's addition).
pub const STATE_KEY: &str = "PostFilterDefaultPreemption";

pub const ERR_REASON_PREEMPTION_POLICY_NEVER: &str = "not eligible due to preemptionPolicy=Never.";
pub const ERR_REASON_TERMINATING_POD_ON_NOMINATED_NODE: &str =
    "not eligible due to a terminating pod on the nominated node.";
pub const ERR_REASON_NO_VICTIMS: &str = "No preemption victims found for incoming pod";
/// Every non-empty PostFilter message starts with this.
pub const MESSAGE_PREFIX: &str = "preemption: ";

/// Default `minCandidateNodesPercentage`.
pub const DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE: i32 = 10;
/// Default `minCandidateNodesAbsolute`.
pub const DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE: i32 = 100;

#[derive(Debug, Clone)]
pub struct DefaultPreemption {
    pub min_candidate_nodes_percentage: i32,
    pub min_candidate_nodes_absolute: i32,
    /// Where the dry run starts among the n potential nodes: `seed % n`. Upstream draws
    /// this offset at random; a fixed seed makes runs repeatable (default 0: the first
    /// potential node in snapshot order).
    pub seed: u64,
    /// The instant a pod without `status.startTime` counts as having started (upstream
    /// reads the wall clock). The default, the end of time, orders such pods as
    /// upstream's clock does whenever the recorded start times lie in the past.
    pub now: Timestamp,
}

impl Default for DefaultPreemption {
    fn default() -> Self {
        DefaultPreemption::new(
            DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE,
            DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE,
        )
    }
}

impl DefaultPreemption {
    pub fn new(
        min_candidate_nodes_percentage: i32,
        min_candidate_nodes_absolute: i32,
    ) -> DefaultPreemption {
        DefaultPreemption {
            min_candidate_nodes_percentage,
            min_candidate_nodes_absolute,
            seed: 0,
            now: Timestamp::MAX,
        }
    }

    pub fn with_seed(mut self, seed: u64) -> DefaultPreemption {
        self.seed = seed;
        self
    }

    pub fn with_now(mut self, now: Timestamp) -> DefaultPreemption {
        self.now = now;
        self
    }

    /// How many candidates the dry run looks for among `num_nodes` potential nodes:
    /// the percentage of them, at least the absolute minimum, at most all of them.
    pub fn calculate_num_candidates(&self, num_nodes: usize) -> usize {
        let nodes = i64::try_from(num_nodes).unwrap_or(i64::MAX);
        let mut n = nodes.saturating_mul(i64::from(self.min_candidate_nodes_percentage)) / 100;
        n = n.max(i64::from(self.min_candidate_nodes_absolute));
        n = n.min(nodes);
        usize::try_from(n).unwrap_or(0)
    }

    /// A victim must have lower priority than the preemptor (upstream's default
    /// `IsEligiblePod` adds nothing to that).
    fn is_preemption_allowed(victim: &PodInfo, preemptor: &PodInfo) -> bool {
        victim.priority < preemptor.priority
    }
}

/// Terminating, with its first DisruptionTarget condition True for reason
/// PreemptionByScheduler.
fn pod_terminating_by_preemption(pod: &Pod) -> bool {
    if pod.metadata.deletion_timestamp.is_none() {
        return false;
    }
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_deref());
    match conditions
        .unwrap_or(&[])
        .iter()
        .find(|c| c.type_ == "DisruptionTarget")
    {
        Some(c) => c.status == "True" && c.reason.as_deref() == Some("PreemptionByScheduler"),
        None => false,
    }
}

fn preemption_policy_never(pod: &PodInfo) -> bool {
    pod.pod
        .spec
        .as_ref()
        .and_then(|s| s.preemption_policy.as_deref())
        == Some("Never")
}

/// Splits pods (keeping their order) into those whose eviction would break a
/// PodDisruptionBudget and the others. Each budget that covers a pod (and does not list it
/// among its disrupted pods already) loses one allowed disruption; a pod that drives any
/// budget below zero is violating.
pub fn filter_pods_with_pdb_violation(
    pods: &[Arc<PodInfo>],
    pdbs: &[PdbInfo],
) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
    let mut allowed: Vec<i32> = pdbs.iter().map(|p| p.disruptions_allowed).collect();
    let mut violating = Vec::new();
    let mut non_violating = Vec::new();
    for pod in pods {
        let mut violated = false;
        // A pod without labels matches no budget.
        if !pod.labels().is_empty() {
            for (i, pdb) in pdbs.iter().enumerate() {
                if !pdb.selects(pod) || pdb.disrupted_pods.contains(&pod.name) {
                    continue;
                }
                // int32 arithmetic, as upstream.
                allowed[i] = allowed[i].wrapping_sub(1);
                if allowed[i] < 0 {
                    violated = true;
                }
            }
        }
        if violated {
            violating.push(pod.clone());
        } else {
            non_violating.push(pod.clone());
        }
    }
    (violating, non_violating)
}

/// Removes a pod from the node copy and tells the PreFilter extensions.
fn remove_pod(
    h: &Handle,
    state: &mut CycleState,
    preemptor: &PodInfo,
    victim: &Arc<PodInfo>,
    node: &mut NodeInfo,
) -> Result<(), Status> {
    if node.remove_pod(&victim.key).is_none() {
        return Err(Status::error(format!(
            "no corresponding pod {} in pods of node {}",
            victim.name,
            node.name()
        )));
    }
    let s = h
        .framework
        .run_pre_filter_extension_remove_pod(h, state, preemptor, victim, node);
    if s.is_success() {
        Ok(())
    } else {
        Err(Status::error(s.message()))
    }
}

/// Adds a pod back to the node copy and tells the PreFilter extensions.
fn add_pod(
    h: &Handle,
    state: &mut CycleState,
    preemptor: &PodInfo,
    pod: &Arc<PodInfo>,
    node: &mut NodeInfo,
) -> Result<(), Status> {
    node.add_pod(pod.clone());
    let s = h
        .framework
        .run_pre_filter_extension_add_pod(h, state, preemptor, pod, node);
    if s.is_success() {
        Ok(())
    } else {
        Err(Status::error(s.message()))
    }
}

impl DefaultPreemption {
    /// `SelectVictimsOnNode` with errors as `Err`.
    fn select_victims(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &mut NodeInfo,
        pdbs: &[PdbInfo],
        now: Timestamp,
    ) -> Result<NodeVictims, Status> {
        // First remove every pod that may be preempted and see whether the pod fits then.
        let mut potential: Vec<Arc<PodInfo>> = Vec::new();
        for p in node.pods.clone() {
            if Self::is_preemption_allowed(&p, pod) {
                remove_pod(h, state, pod, &p, node)?;
                potential.push(p);
            }
        }
        if potential.is_empty() {
            return Err(Status::unresolvable(ERR_REASON_NO_VICTIMS));
        }
        // Affinity of the preemptor to the pods just removed is not considered, as
        // upstream: such a pod fails here.
        let s = h
            .framework
            .run_filter_plugins_with_nominated_pods(h, state, pod, node);
        if !s.is_success() {
            return Err(s);
        }
        // Reprieve as many as possible, most important first: those whose eviction
        // would violate a PodDisruptionBudget, then the others.
        sort_by_importance(&mut potential, now);
        let (violating, non_violating) = filter_pods_with_pdb_violation(&potential, pdbs);
        let mut victims: Vec<Arc<PodInfo>> = Vec::new();
        let mut reprieve = |p: &Arc<PodInfo>,
                            state: &mut CycleState,
                            node: &mut NodeInfo|
         -> Result<bool, Status> {
            add_pod(h, state, pod, p, node)?;
            let fits = h
                .framework
                .run_filter_plugins_with_nominated_pods(h, state, pod, node)
                .is_success();
            if !fits {
                remove_pod(h, state, pod, p, node)?;
                victims.push(p.clone());
            }
            Ok(fits)
        };
        let mut num_violating: i64 = 0;
        for p in &violating {
            if !reprieve(p, state, node)? {
                num_violating += 1;
            }
        }
        for p in &non_violating {
            reprieve(p, state, node)?;
        }
        if !violating.is_empty() && !non_violating.is_empty() {
            sort_by_importance(&mut victims, now);
        }
        Ok(NodeVictims {
            pods: victims,
            num_pdb_violations: num_violating,
        })
    }
}

impl Interface for DefaultPreemption {
    fn get_offset_and_num_candidates(&self, num_nodes: usize) -> (usize, usize) {
        let offset = match u64::try_from(num_nodes) {
            Ok(n) if n > 0 => usize::try_from(self.seed % n).unwrap_or(0),
            _ => 0,
        };
        (offset, self.calculate_num_candidates(num_nodes))
    }

    fn pod_eligible_to_preempt_others(
        &self,
        h: &Handle,
        pod: &PodInfo,
        nominated_node_status: &Status,
    ) -> Result<(), String> {
        if preemption_policy_never(pod) {
            return Err(ERR_REASON_PREEMPTION_POLICY_NEVER.to_string());
        }
        let nominated = pod.nominated_node_name();
        if nominated.is_empty() {
            return Ok(());
        }
        // A nominated node the filters cannot fix anyway: look elsewhere.
        if nominated_node_status.code() == crate::framework::Code::UnschedulableAndUnresolvable {
            return Ok(());
        }
        if let Some(node) = h.snapshot.get(nominated) {
            let waiting = node.pods.iter().any(|p| {
                Self::is_preemption_allowed(p, pod) && pod_terminating_by_preemption(&p.pod)
            });
            if waiting {
                return Err(ERR_REASON_TERMINATING_POD_ON_NOMINATED_NODE.to_string());
            }
        }
        Ok(())
    }

    fn select_victims_on_node(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &mut NodeInfo,
        pdbs: &[PdbInfo],
        now: Timestamp,
    ) -> (NodeVictims, Status) {
        match self.select_victims(h, state, pod, node, pdbs, now) {
            Ok(v) => (v, Status::success()),
            Err(s) => (NodeVictims::default(), s),
        }
    }
}

impl Plugin for DefaultPreemption {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        Some(self)
    }
}

impl PreEnqueuePlugin for DefaultPreemption {
    /// Upstream gates a pod while its asynchronous preemption is still evicting victims.
    /// kubestep preempts synchronously (the driver evicts the victims before the pod is
    /// queued again), so there is never such a pod.
    fn pre_enqueue(&self, _h: &Handle, _pod: &PodInfo) -> Status {
        Status::success()
    }
}

impl PostFilterPlugin for DefaultPreemption {
    fn post_filter(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let evaluator = Evaluator {
            plugin_name: NAME,
            handle: *h,
            interface: self,
            now: self.now,
        };
        let (result, status, trace) = evaluator.preempt(state, pod, statuses);
        state.write(STATE_KEY, trace);
        let msg = status.message();
        if msg.is_empty() {
            (result, status)
        } else {
            (
                result,
                Status::new(status.code(), format!("{MESSAGE_PREFIX}{msg}")),
            )
        }
    }
}
