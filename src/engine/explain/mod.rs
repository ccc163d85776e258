//! From a finished scheduling cycle to an explanation: the decision, the exact
//! kube-scheduler message, each node's verdict, and the score breakdown.

pub mod closest;
pub mod hints;
mod parts;
pub mod text;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;

use crate::cluster::ClusterState;
use crate::config::KubeSchedulerConfiguration;
use crate::framework::cycle::{CycleEnv, CycleOutcome, Detail, FilterCell, SchedulingCycle};
use crate::framework::extender::ExtenderCall;
use crate::framework::profile::ExtensionPoint;
use crate::framework::{Code, PodInfo, Status};
use crate::session::scheduler::{SetupError, extenders, frameworks};

#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(
        "pod {pod} has schedulerName {scheduler:?}, but the configuration has no such profile (profiles: {profiles})"
    )]
    NoProfile {
        pod: String,
        scheduler: String,
        profiles: String,
    },
}

/// A plugin's status as the conformance cases spell it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PluginStatus {
    pub plugin: String,
    pub code: Code,
    pub reasons: Vec<String>,
}

impl PluginStatus {
    fn from_status(s: &Status, plugin_fallback: &str) -> PluginStatus {
        let plugin = if s.plugin().is_empty() {
            plugin_fallback.to_string()
        } else {
            s.plugin().to_string()
        };
        PluginStatus {
            plugin,
            code: s.code(),
            reasons: s.reasons().iter().map(|r| r.to_string()).collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeScores {
    /// Final (normalized × weight) score per plugin.
    pub plugins: BTreeMap<String, i64>,
    pub total: i64,
    pub raw: BTreeMap<String, i64>,
    pub normalized: BTreeMap<String, i64>,
}

/// Everything `kubestep explain` reports for one pod.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The kube-scheduler minor version whose semantics decided (`v1.36`).
    pub k8s_version: String,
    /// The version, where it came from, and the gates set otherwise than its default, in
    /// the words every output uses.
    pub semantics: String,
    /// The feature gates set otherwise than the version's default.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    pub pod: String,
    pub profile: String,
    pub pre_enqueue: Option<PluginStatus>,
    pub prefilter: Option<PluginStatus>,
    pub feasible: Vec<String>,
    pub filter: BTreeMap<String, PluginStatus>,
    pub scores: Option<BTreeMap<String, NodeScores>>,
    pub selected: Vec<String>,
    /// The node kubestep would bind (upstream's heap pick among `selected`).
    pub bound: Option<String>,
    pub message: Option<String>,
    pub nominated_node: Option<String>,
    pub victims: Vec<String>,
    /// Every Filter plugin's verdict on every node examined (kubestep's addition).
    pub all_filters: BTreeMap<String, BTreeMap<String, FilterCell>>,
    /// Nodes upstream did not examine because enough feasible nodes were found first.
    pub not_evaluated: Vec<String>,
    pub num_nodes: usize,
    /// Score plugin weights in this profile, and the weights of scoring extenders.
    pub weights: BTreeMap<String, i64>,
    /// Every extender call of the cycle (filter, prioritize), in order.
    pub extenders: Vec<ExtenderCall>,
    /// kubestep's notes on Filter rejections beyond upstream's reason, by node then
    /// plugin (DynamicResources: the claim and request that could not be met, and why).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub notes: BTreeMap<String, BTreeMap<String, String>>,
    /// Per Filter reason, how close the nodes that gave it came (kubestep's addition):
    /// NodeResourcesFit's resources and pod slots, TaintToleration's taints.
    pub closest: Vec<closest::Closest>,
    /// The DynamicResources CycleState after the cycle, for a pod with resource claims:
    /// its claims, per node the devices chosen or what was missing, the allocation kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic_resources: Option<crate::framework::StateTree>,
    /// Per node DynamicResources rejected: the matching devices other claims hold, with
    /// the claim holding each (for the what-if hints).
    #[serde(skip)]
    pub held_devices: BTreeMap<String, Vec<(String, String)>>,
    /// What would make an unschedulable pod fit, each confirmed by re-running the cycle
    /// on a changed copy (`hints::what_if`); filled by the caller that asks for them.
    #[serde(rename = "whatIf", skip_serializing_if = "Vec::is_empty")]
    pub what_if: Vec<hints::Hint>,
}

impl Explanation {
    pub fn fits(&self) -> bool {
        // The same test as the text verdict: a cycle that ended with a message (an Error
        // status such as an unreachable extender included) did not fit.
        self.pre_enqueue.is_none() && self.message.is_none() && !self.selected.is_empty()
    }
}

/// Runs one scheduling cycle for `pod` over `cluster` and explains it.
pub fn explain(
    cluster: &ClusterState,
    config: &KubeSchedulerConfiguration,
    pod: Arc<Pod>,
) -> Result<Explanation, ExplainError> {
    Explainer::new(cluster, config, &pod)?.explain(pod)
}

/// What explaining one pod (and changed copies of it, for the what-if hints) runs on,
/// built once: the profiles, the extenders, the snapshot without the pod itself.
pub struct Explainer<'a> {
    cluster: &'a ClusterState,
    config: &'a KubeSchedulerConfiguration,
    exts: Vec<Arc<dyn crate::framework::extender::Extender>>,
    fwks: Vec<crate::framework::profile::Framework>,
    snapshot: crate::framework::Snapshot,
    nominator: crate::framework::nominator::Nominator,
    pool: Option<rayon::ThreadPool>,
}

impl<'a> Explainer<'a> {
    /// For `pod` and copies of it (same namespace and name): the pod, if the cluster
    /// has it, does not count against itself.
    pub fn new(
        cluster: &'a ClusterState,
        config: &'a KubeSchedulerConfiguration,
        pod: &Pod,
    ) -> Result<Explainer<'a>, ExplainError> {
        let mut x = Explainer::for_cluster(cluster, config)?;
        let key = format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or("default"),
            pod.metadata.name.as_deref().unwrap_or_default()
        );
        if let Some(own) = cluster.pod_info(&key) {
            if !own.node_name().is_empty() {
                x.snapshot.remove_pod(own.node_name(), &key);
            }
            x.nominator.remove(&own.uid);
        }
        if let Some(uid) = pod.metadata.uid.as_deref() {
            x.nominator.remove(uid);
        }
        Ok(x)
    }

    /// For the cluster's own pending pods (`pending`): nothing removed. A pod's own
    /// nomination does not count against it (Filter skips the pod's own UID).
    pub fn for_cluster(
        cluster: &'a ClusterState,
        config: &'a KubeSchedulerConfiguration,
    ) -> Result<Explainer<'a>, ExplainError> {
        Ok(Explainer {
            cluster,
            config,
            exts: extenders(config)?,
            fwks: frameworks(config)?,
            snapshot: cluster.snapshot_for(&config.features),
            nominator: cluster.nominator(),
            pool: pool(config),
        })
    }

    fn env(&self, fwk: &'a crate::framework::profile::Framework) -> CycleEnv<'_> {
        cycle_env(
            fwk,
            &self.snapshot,
            self.cluster,
            &self.nominator,
            self.config,
            self.pool.as_ref(),
            &self.exts,
        )
    }

    /// One cycle for `pod`, explained.
    pub fn explain(&self, pod: Arc<Pod>) -> Result<Explanation, ExplainError> {
        let pi = Arc::new(PodInfo::new(admitted(self.cluster, pod)));
        let fwk = profile_of(&self.fwks, &pi)?;
        let env = self.env(fwk);
        let pre_enqueue = gated(&env, &pi);
        let mut cycle = SchedulingCycle::new(pi.clone(), Detail::Full, 0);
        let outcome = cycle.run(&env).clone();
        if matches!(&outcome, CycleOutcome::Error(_)) && cycle.scores.is_none() {
            // A Filter Error ended the search: look again with the Error as that node's
            // verdict, so every node's verdict and the other nodes' ranking show beside it.
            let mut again = SchedulingCycle::new(pi.clone(), Detail::Full, 0);
            again.errors_reject = true;
            let second = again.run(&env).clone();
            if matches!(second, CycleOutcome::Error(_)) {
                // Not a Filter plugin's Error (an extender's, PreFilter's): as it ended.
                return Ok(build(
                    &cycle,
                    &outcome,
                    &env,
                    pre_enqueue,
                    !pi.node_name().is_empty(),
                ));
            }
            let mut e = build(
                &again,
                &outcome,
                &env,
                pre_enqueue,
                !pi.node_name().is_empty(),
            );
            // The ranking stands for what the nodes say; the attempt still ended in the Error.
            e.selected = selected(&again, &env);
            return Ok(e);
        }
        Ok(build(
            &cycle,
            &outcome,
            &env,
            pre_enqueue,
            !pi.node_name().is_empty(),
        ))
    }
}

/// The feasible nodes that share the best score, sorted.
fn selected(cycle: &SchedulingCycle, env: &CycleEnv) -> Vec<String> {
    let mut v: Vec<String> = cycle
        .best_nodes(env.snapshot)
        .into_iter()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// A pod from a manifest has not been through admission: the priority its
/// PriorityClass (or the global default class) would give it, as the API server does.
fn admitted(cluster: &ClusterState, pod: Arc<Pod>) -> Arc<Pod> {
    if pod.spec.as_ref().is_some_and(|s| s.priority.is_none()) {
        let mut p = (*pod).clone();
        if cluster.resolve_priority(&mut p).is_some() {
            return Arc::new(p);
        }
    }
    pod
}

/// The profile that schedules `pi` (by its schedulerName).
fn profile_of<'a>(
    fwks: &'a [crate::framework::profile::Framework],
    pi: &PodInfo,
) -> Result<&'a crate::framework::profile::Framework, ExplainError> {
    fwks.iter()
        .find(|f| f.profile_name == pi.scheduler_name())
        .ok_or_else(|| ExplainError::NoProfile {
            pod: pi.key.clone(),
            scheduler: pi.scheduler_name().to_string(),
            profiles: fwks
                .iter()
                .map(|f| f.profile_name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

fn pool(config: &KubeSchedulerConfiguration) -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(config.parallelism.clamp(1, 4) as usize)
        .build()
        .ok()
}

/// What a one-off cycle runs on: nothing waits at Permit, and a single cycle keeps no
/// time-based state, so the wall clock changes nothing.
fn cycle_env<'a>(
    fwk: &'a crate::framework::profile::Framework,
    snapshot: &'a crate::framework::Snapshot,
    cluster: &'a ClusterState,
    nominator: &'a crate::framework::nominator::Nominator,
    config: &KubeSchedulerConfiguration,
    pool: Option<&'a rayon::ThreadPool>,
    exts: &'a [Arc<dyn crate::framework::extender::Extender>],
) -> CycleEnv<'a> {
    CycleEnv {
        framework: fwk,
        snapshot,
        listers: &cluster.listers,
        nominator,
        waiting: &crate::framework::waiting::NO_WAITING,
        now: jiff::Timestamp::now(),
        percentage_of_nodes_to_score: config.percentage_of_nodes_to_score.unwrap_or(0),
        pool,
        extenders: exts,
    }
}

/// The first PreEnqueue plugin that holds the pod back, if one does.
fn gated(env: &CycleEnv, pi: &PodInfo) -> Option<PluginStatus> {
    let h = env.handle();
    env.framework
        .plugins(ExtensionPoint::PreEnqueue)
        .iter()
        .find_map(|e| {
            let s = e.plugin.as_pre_enqueue()?.pre_enqueue(&h, pi);
            (!s.is_success()).then(|| PluginStatus::from_status(&s.with_plugin(e.name), e.name))
        })
}

/// One pending pod's verdict on the cluster as it is (`explain --pending`).
#[derive(Debug, Clone, Serialize)]
pub struct PendingVerdict {
    /// The kube-scheduler minor version whose semantics decided (`v1.36`).
    #[serde(rename = "k8sVersion")]
    pub k8s_version: String,
    pub pod: String,
    /// `Schedulable`, `Unschedulable`, `Gated`, `Error`, or `Ignored` (no profile has
    /// its schedulerName).
    pub verdict: &'static str,
    /// The node the cycle chose, for a pod that fits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(rename = "feasibleNodes")]
    pub feasible_nodes: usize,
    /// The exact kube-scheduler message (or the gating plugin's), for a pod that does
    /// not fit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Where preemption would make room for an unschedulable pod (PostFilter's
    /// nomination), and the pods it would evict there.
    #[serde(rename = "nominatedNode", skip_serializing_if = "Option::is_none")]
    pub nominated_node: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub victims: Vec<String>,
    /// The pod's priority, as the scheduler resolved it.
    pub priority: i32,
}

impl PendingVerdict {
    /// Whether the scheduler would not place the pod now (unschedulable, gated, or an
    /// error): what `explain --pending`'s exit code reports.
    pub fn stuck(&self) -> bool {
        matches!(self.verdict, "Unschedulable" | "Gated" | "Error")
    }
}

/// Every pending pod of `cluster` (no node; finished pods are not kept), each decided
/// alone on the cluster as it is by the same cycle `explain` runs (none assumes
/// another's placement), in namespace/name order. `namespace`: only that namespace's
/// pods are decided (against the whole cluster).
pub fn pending_in(
    cluster: &ClusterState,
    config: &KubeSchedulerConfiguration,
    namespace: Option<&str>,
) -> Result<Vec<PendingVerdict>, ExplainError> {
    let x = Explainer::for_cluster(cluster, config)?;
    let mut pods: Vec<&Arc<PodInfo>> = cluster
        .pod_infos()
        .filter(|p| p.node_name().is_empty())
        .filter(|p| namespace.is_none_or(|ns| p.namespace == ns))
        .collect();
    pods.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(pods.into_iter().map(|p| x.decide(p)).collect())
}

impl Explainer<'_> {
    /// One cycle for a pending pod of the cluster, its verdict only.
    fn decide(&self, p: &Arc<PodInfo>) -> PendingVerdict {
        let verdict = |verdict, node, feasible_nodes, message| PendingVerdict {
            k8s_version: self.config.features.k8s_version(),
            pod: p.key.clone(),
            verdict,
            node,
            feasible_nodes,
            message,
            nominated_node: None,
            victims: Vec::new(),
            priority: p.priority,
        };
        // A pod no profile schedules is listed as such, not left out.
        let fwk = match profile_of(&self.fwks, p) {
            Ok(f) => f,
            Err(e) => return verdict("Ignored", None, 0, Some(e.to_string())),
        };
        let env = self.env(fwk);
        if let Some(g) = gated(&env, p) {
            let why = format!("{}: {}", g.plugin, g.reasons.join(", "));
            return verdict("Gated", None, 0, Some(why));
        }
        let mut cycle = SchedulingCycle::new(p.clone(), Detail::Decision, 0);
        match cycle.run(&env) {
            CycleOutcome::Selected {
                node,
                feasible_nodes,
                ..
            } => verdict("Schedulable", Some(node.clone()), *feasible_nodes, None),
            outcome @ CycleOutcome::Unschedulable { .. } => {
                let d = parts::Decision::of(outcome);
                PendingVerdict {
                    nominated_node: d.nominated_node,
                    victims: d.victims,
                    ..verdict("Unschedulable", None, 0, d.message)
                }
            }
            CycleOutcome::Error(s) => verdict("Error", None, 0, Some(s.message())),
        }
    }
}

fn build(
    cycle: &SchedulingCycle,
    outcome: &CycleOutcome,
    env: &CycleEnv,
    pre_enqueue: Option<PluginStatus>,
    already_bound: bool,
) -> Explanation {
    let snap = env.snapshot;
    let name = |i: usize| snap.list()[i].name().to_string();
    let mut feasible: Vec<String> = cycle.feasible.iter().map(|&i| name(i)).collect();
    feasible.sort();
    let prefilter_status = cycle.pre_filter.status();
    let prefilter = prefilter_status.is_rejected().then(|| {
        PluginStatus::from_status(
            &prefilter_status,
            &cycle.pre_filter.plugins_with_nodes.join(","),
        )
    });
    let filter = if prefilter.is_none() {
        parts::filter_verdicts(cycle, snap)
    } else {
        BTreeMap::new()
    };
    let (all_filters, notes) = parts::matrix(cycle, snap);
    let mut selected = selected(cycle, env);
    // Every Error ends the cycle before a host is selected (an extender's filter error,
    // a Score plugin's): no node was selected, whatever the nodes left at that point.
    if matches!(outcome, CycleOutcome::Error(_)) {
        selected.clear();
    }
    let attempted = pre_enqueue.is_none() && !already_bound;
    let decision = if attempted {
        parts::Decision::of(outcome)
    } else {
        parts::Decision::default()
    };
    let not_evaluated = if prefilter.is_some() {
        Vec::new()
    } else {
        parts::not_evaluated(cycle, snap, &filter)
    };
    let closest = closest::closest(&filter, snap, &cycle.state, &cycle.pod);
    let features = &env.framework.features;
    Explanation {
        k8s_version: features.k8s_version(),
        semantics: features.describe(),
        feature_gates: features.gates.non_default().clone(),
        pod: cycle.pod.key.clone(),
        profile: env.framework.profile_name.clone(),
        pre_enqueue,
        prefilter,
        feasible,
        filter,
        scores: parts::scores(cycle, snap),
        selected,
        bound: decision.bound,
        message: decision.message,
        nominated_node: decision.nominated_node,
        victims: decision.victims,
        all_filters,
        not_evaluated,
        num_nodes: snap.num_nodes(),
        weights: parts::weights(cycle, env),
        extenders: cycle.extender_calls.clone(),
        closest,
        notes,
        dynamic_resources: crate::plugins::dynamicresources::explain_state(
            &cycle.state,
            &cycle.pod,
        ),
        held_devices: crate::plugins::dynamicresources::held_devices(&cycle.state),
        what_if: Vec::new(),
    }
}

/// A cluster of many alike nodes for the explanation's tests: each node has 4 cores, 8Gi
/// and a bound pod of 3.5 cores, except, when `roomy`, `n-007` (2.2 cores bound, so 1.8
/// free), and the last `tainted` nodes (taint dedicated=infra:NoSchedule).
#[cfg(test)]
pub(crate) mod fixture {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use crate::cluster::ClusterState;
    use crate::cluster::object::Object;

    pub fn cluster(nodes: usize, tainted: usize, roomy: bool) -> ClusterState {
        let mut c = ClusterState::default();
        for i in 0..nodes {
            let name = format!("n-{i:03}");
            let taints = if i + tainted >= nodes {
                json!([{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}])
            } else {
                json!([])
            };
            let node = json!({
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "spec": {"taints": taints},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
            });
            c.add(Object::Node(Box::new(
                serde_json::from_value(node).unwrap(),
            )));
            let cpu = if roomy && name == "n-007" {
                "2200m"
            } else {
                "3500m"
            };
            let mut p = pod(&format!("run-{i:03}"), cpu);
            p.spec.as_mut().unwrap().node_name = Some(name);
            c.add(Object::Pod(Box::new(p)));
        }
        c
    }

    pub fn pod(name: &str, cpu: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"containers": [{"name": "c", "image": "x",
                "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
        }))
        .unwrap()
    }

    pub fn explain(c: &ClusterState, cpu: &str) -> super::Explanation {
        let cfg = crate::config::default_configuration();
        super::explain(c, &cfg, Arc::new(pod("new", cpu))).unwrap()
    }
}
