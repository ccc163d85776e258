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
//!   next cycle, so PreEnqueue never has an in-flight preemption to wait for. The victims
//!   listed include any already terminating (upstream sends them no second delete, but
//!   counts them as victims all the same).
//! * A pod without `status.startTime` counts as started at [`DefaultPreemption::now`]
//!   where upstream reads the clock (see `framework::preemption::more_important_pod`).

use std::sync::Arc;

use jiff::Timestamp;

use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::hints::QueueingHint;
use crate::framework::plugin::{
    Handle, Plugin, PostFilterPlugin, PostFilterResult, PreEnqueuePlugin,
};
use crate::framework::preemption::{Evaluator, Interface, PdbInfo, sort_by_importance};
use crate::framework::types::NodeVictims;
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

#[derive(Debug)]
pub struct DefaultPreemption {
    pub min_candidate_nodes_percentage: i32,
    pub min_candidate_nodes_absolute: i32,
    /// Where the dry run starts among the n potential nodes: `seed % n`. Upstream draws
    /// this offset at random; a fixed seed makes runs repeatable (default 0: the first
    /// potential node in snapshot order). Atomic so `kubestep replay --seed` can set it on
    /// a built profile.
    pub seed: std::sync::atomic::AtomicU64,
    /// The instant a pod without `status.startTime` counts as having started (upstream
    /// reads the wall clock). The default, the end of time, orders such pods as
    /// upstream's clock does whenever the recorded start times lie in the past.
    pub now: Timestamp,
}

impl Clone for DefaultPreemption {
    fn clone(&self) -> Self {
        DefaultPreemption {
            min_candidate_nodes_percentage: self.min_candidate_nodes_percentage,
            min_candidate_nodes_absolute: self.min_candidate_nodes_absolute,
            seed: std::sync::atomic::AtomicU64::new(self.seed()),
            now: self.now,
        }
    }
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
            seed: std::sync::atomic::AtomicU64::new(0),
            now: Timestamp::MAX,
        }
    }

    pub fn with_seed(self, seed: u64) -> DefaultPreemption {
        self.set_seed(seed);
        self
    }

    pub fn seed(&self) -> u64 {
        self.seed.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn set_seed(&self, seed: u64) {
        self.seed.store(seed, std::sync::atomic::Ordering::Relaxed);
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

fn preemption_policy_never(pod: &PodInfo) -> bool {
    pod.pod()
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
            Ok(n) if n > 0 => usize::try_from(self.seed() % n).unwrap_or(0),
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
            let waiting = node
                .pods
                .iter()
                .any(|p| Self::is_preemption_allowed(p, pod) && p.is_terminating_by_preemption());
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
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(queueing_hints())
    }
    fn set_seed(&self, seed: u64) {
        DefaultPreemption::set_seed(self, seed);
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

// ---- queueing hints (EnqueueExtensions) ----

/// With asynchronous preemption, a pod waits at PreEnqueue while its victims go; the
/// plugin leaves requeueing to the plugins that rejected it, so its hint always skips.
fn queueing_hints() -> Vec<ClusterEventWithHint> {
    vec![ClusterEventWithHint::with_hint(
        R::Pod,
        A::DELETE,
        |_, _, _, _| Ok(QueueingHint::QueueSkip),
    )]
}

/// Built from validated `DefaultPreemptionArgs` (how many candidates the dry run seeks).
pub fn factory(
    ctx: &crate::framework::factory::FactoryContext,
) -> crate::framework::factory::Built {
    let args: crate::config::DefaultPreemptionArgs = ctx.args()?;
    let root = crate::config::FieldPath::root();
    crate::framework::factory::BuildError::check(
        crate::config::validation::validate_default_preemption_args(&root, &args),
    )?;
    Ok(std::sync::Arc::new(DefaultPreemption::new(
        args.min_candidate_nodes_percentage,
        args.min_candidate_nodes_absolute,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{self, ExtensionPoint as ConfigPoint};
    use crate::framework::Snapshot;
    use crate::framework::cycle::{CycleEnv, CycleOutcome, Detail, SchedulingCycle};
    use crate::framework::listers::Listers;
    use crate::framework::nominator::Nominator;
    use crate::framework::profile::Framework;
    use crate::plugins::registry::in_tree;
    use crate::plugins::testing::{node_obj, pod};
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use serde_json::{Value, json};
    use std::path::PathBuf;

    /// A cluster, the pod to schedule and the profile, ready to run a cycle.
    struct World {
        framework: Framework,
        snapshot: Snapshot,
        listers: Listers,
        nominator: Nominator,
        pod: Arc<PodInfo>,
    }

    struct Ran {
        outcome: CycleOutcome,
        state: CycleState,
    }

    impl World {
        fn run(&self) -> Ran {
            let env = CycleEnv {
                framework: &self.framework,
                snapshot: &self.snapshot,
                listers: &self.listers,
                nominator: &self.nominator,
                waiting: &crate::framework::waiting::NO_WAITING,
                now: jiff::Timestamp::UNIX_EPOCH,
                percentage_of_nodes_to_score: 100,
                pool: None,
                extenders: &[],
            };
            let mut cycle = SchedulingCycle::new(self.pod.clone(), Detail::Decision, 0);
            let outcome = cycle.run(&env).clone();
            Ran {
                outcome,
                state: cycle.state,
            }
        }
    }

    /// The profile with the plugins kubestep does not have (yet) left out everywhere.
    fn framework_for(profile: &config::Profile) -> Framework {
        let registry = in_tree();
        let known: Vec<&str> = registry.names().collect();
        let mut profile = profile.clone();
        for point in ConfigPoint::ALL {
            profile
                .plugins
                .get_mut(point)
                .enabled
                .retain(|p| known.contains(&p.name.as_str()));
        }
        Framework::new(&registry, &profile, &Default::default()).expect("valid profile")
    }

    fn default_framework() -> Framework {
        let cfg = config::default_configuration();
        framework_for(&cfg.profiles[0])
    }

    fn case_dir(id: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/conformance/cases")
            .join(id)
    }

    fn pod_from(mut v: Value) -> Arc<PodInfo> {
        let ns = v["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_string();
        let name = v["metadata"]["name"].as_str().unwrap_or("").to_string();
        v["metadata"]["namespace"] = json!(ns);
        if v["metadata"].get("uid").is_none() {
            v["metadata"]["uid"] = json!(format!("{ns}/{name}"));
        }
        pod(v)
    }

    /// Loads a conformance case (cluster, pending pod, configuration).
    fn load_case(id: &str) -> (World, Value) {
        let dir = case_dir(id);
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).expect("case file");
        let docs: Vec<Value> = serde_saphyr::from_multiple(&read("cluster.yaml")).expect("yaml");
        let mut listers = Listers::default();
        let mut nodes = Vec::new();
        let mut pods = Vec::new();
        for d in docs {
            let name = d["metadata"]["name"].as_str().unwrap_or("").to_string();
            let ns = d["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default")
                .to_string();
            let key = format!("{ns}/{name}");
            match d["kind"].as_str().unwrap_or("") {
                "Node" => nodes.push(node_obj(d)),
                "Pod" => pods.push(pod_from(d)),
                "Namespace" => {
                    listers
                        .namespaces
                        .insert(name, Arc::new(serde_json::from_value(d).unwrap()));
                }
                "PodDisruptionBudget" => {
                    let mut pdb: PodDisruptionBudget = serde_json::from_value(d).unwrap();
                    pdb.metadata.namespace = Some(ns);
                    listers.pdbs.insert(key, Arc::new(pdb));
                }
                "PersistentVolumeClaim" => {
                    listers
                        .pvcs
                        .insert(key, Arc::new(serde_json::from_value(d).unwrap()));
                }
                "PersistentVolume" => {
                    listers
                        .pvs
                        .insert(name, Arc::new(serde_json::from_value(d).unwrap()));
                }
                "StorageClass" => {
                    listers
                        .storage_classes
                        .insert(name, Arc::new(serde_json::from_value(d).unwrap()));
                }
                "CSINode" => {
                    listers
                        .csi_nodes
                        .insert(name, Arc::new(serde_json::from_value(d).unwrap()));
                }
                other => panic!("unexpected kind {other}"),
            }
        }
        let target: Value = serde_saphyr::from_str(&read("pod.yaml")).expect("pod yaml");
        let cfg = match std::fs::read_to_string(dir.join("config.yaml")) {
            Ok(text) => config::parse_str(&text, "config.yaml").expect("config"),
            Err(_) => config::default_configuration(),
        };
        let profile = cfg.profile("default-scheduler").expect("profile");
        let expected: Value = serde_json::from_str(&read("expected.json")).expect("expected.json");
        let world = World {
            framework: framework_for(profile),
            snapshot: Snapshot::new(nodes, pods),
            listers,
            nominator: Nominator::default(),
            pod: pod_from(target),
        };
        (world, expected)
    }

    /// (nominated node, sorted victims, message) of a cycle, as expected.json has them.
    fn summary(r: &Ran) -> (Value, Vec<String>, Value) {
        match &r.outcome {
            CycleOutcome::Unschedulable {
                fit_error,
                post_filter,
                ..
            } => {
                let (nominated, mut victims) = match post_filter {
                    Some(pf) if !pf.nominated_node_name.is_empty() => {
                        (json!(pf.nominated_node_name), pf.victims.clone())
                    }
                    _ => (Value::Null, Vec::new()),
                };
                victims.sort();
                (nominated, victims, json!(fit_error.message()))
            }
            _ => (Value::Null, Vec::new(), Value::Null),
        }
    }

    fn expected_summary(e: &Value) -> (Value, Vec<String>, Value) {
        let victims = e["victims"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        (e["nominatedNode"].clone(), victims, e["message"].clone())
    }

    // ---- conformance cases (expected results recorded from kube-scheduler v1.35.4) ----

    fn check_case(id: &str) {
        let (w, e) = load_case(id);
        let r = w.run();
        assert_eq!(summary(&r), expected_summary(&e), "case {id}");
    }

    /// Every public case in which preemption evicts pods and that needs no plugin kubestep
    /// lacks: nominated node, victims and message (four of them with PodDisruptionBudgets:
    /// 0016, 0134, 0180, 0288).
    #[test]
    fn conformance_cases_with_victims() {
        for id in [
            "0016", "0045", "0104", "0109", "0111", "0126", "0134", "0173", "0180", "0187", "0227",
            "0241", "0247", "0275", "0285", "0288", "0300",
        ] {
            check_case(id);
        }
    }

    /// Cases where preemption finds no candidate or may not preempt: the exact message.
    #[test]
    fn conformance_cases_without_candidates() {
        for id in [
            "0011", "0030", "0032", "0085", "0102", "0105", "0196", "0219", "0226", "0258", "0263",
        ] {
            check_case(id);
        }
    }

    #[test]
    fn case_with_pdb_prefers_the_node_without_violations() {
        let (w, _) = load_case("0016");
        let r = w.run();
        let t = r
            .state
            .read::<crate::framework::preemption::PreemptionTrace>(STATE_KEY)
            .expect("trace");
        assert_eq!(t.potential_nodes, 2);
        assert_eq!(t.num_candidates, 2);
        assert_eq!(t.selected.as_deref(), Some("node-10"));
        // Candidates come non-violating first.
        let violations: Vec<i64> = t.candidates.iter().map(|c| c.num_pdb_violations).collect();
        let mut sorted = violations.clone();
        sorted.sort();
        assert_eq!(violations, sorted);
    }

    // ---- hand-built clusters ----

    const T1: &str = "2024-01-01T00:00:00Z";
    const T2: &str = "2024-01-02T00:00:00Z";

    fn node_with(name: &str, cpu: &str, taint: bool) -> Arc<k8s_openapi::api::core::v1::Node> {
        let mut v = json!({"metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}});
        if taint {
            v["spec"] = json!({"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]});
        }
        node_obj(v)
    }

    /// A pod with a priority, a cpu request, optionally bound and started.
    fn p(name: &str, prio: i32, cpu: &str, node: Option<&str>, start: Option<&str>) -> Value {
        let mut v = json!({"metadata": {"name": name, "namespace": "default"},
            "spec": {"priority": prio, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu}}}]}});
        if let Some(n) = node {
            v["spec"]["nodeName"] = json!(n);
        }
        if let Some(t) = start {
            v["status"] = json!({"startTime": t});
        }
        v
    }

    fn labelled(mut v: Value, key: &str, value: &str) -> Value {
        v["metadata"]["labels"] = json!({key: value});
        v
    }

    fn pdb(name: &str, app: &str, allowed: i32, disrupted: &[&str]) -> Arc<PodDisruptionBudget> {
        let disrupted: serde_json::Map<String, Value> = disrupted
            .iter()
            .map(|n| (n.to_string(), json!(T1)))
            .collect();
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": app}}},
                "status": {"disruptionsAllowed": allowed, "disruptedPods": disrupted,
                    "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}}))
            .unwrap(),
        )
    }

    fn world(
        nodes: Vec<Arc<k8s_openapi::api::core::v1::Node>>,
        pods: Vec<Value>,
        target: Value,
    ) -> World {
        World {
            framework: default_framework(),
            snapshot: Snapshot::new(nodes, pods.into_iter().map(pod_from)),
            listers: Listers::default(),
            nominator: Nominator::default(),
            pod: pod_from(target),
        }
    }

    fn with_pdbs(mut w: World, pdbs: Vec<Arc<PodDisruptionBudget>>) -> World {
        for b in pdbs {
            let key = format!("default/{}", b.metadata.name.as_deref().unwrap_or(""));
            w.listers.pdbs.insert(key, b);
        }
        w
    }

    /// The PostFilter result and the whole failure message.
    fn outcome(r: &Ran) -> (Option<PostFilterResult>, String) {
        match &r.outcome {
            CycleOutcome::Unschedulable {
                fit_error,
                post_filter,
                ..
            } => (post_filter.clone(), fit_error.message()),
            other => panic!("expected Unschedulable, got {other:?}"),
        }
    }

    fn nominated(node: &str, victims: &[&str]) -> Option<PostFilterResult> {
        Some(PostFilterResult {
            nominated_node_name: node.into(),
            override_nomination: true,
            victims: victims.iter().map(|v| format!("default/{v}")).collect(),
        })
    }

    fn cleared() -> Option<PostFilterResult> {
        nominated("", &[])
    }

    fn trace(r: &Ran) -> &crate::framework::preemption::PreemptionTrace {
        r.state.read(STATE_KEY).expect("preemption trace")
    }

    #[test]
    fn victims_are_the_fewest_lower_priority_pods_most_important_first() {
        let w = world(
            vec![node_with("n1", "4", false)],
            vec![
                p("a", 1, "1", Some("n1"), Some(T1)),
                p("b", 2, "1", Some("n1"), Some(T2)),
                p("c", 3, "2", Some("n1"), Some(T1)),
            ],
            p("pending", 10, "2", None, None),
        );
        let r = w.run();
        // c (the most important) is reprieved; b and a go, b first.
        assert_eq!(
            outcome(&r),
            (
                nominated("n1", &["b", "a"]),
                "0/1 nodes are available: 1 Insufficient cpu.".to_string()
            )
        );
        let t = trace(&r);
        assert_eq!(t.selected.as_deref(), Some("n1"));
        let rendered = format!("{:?}", crate::framework::RenderState::render(t));
        assert!(rendered.contains("selected: n1"), "{rendered}");
    }

    #[test]
    fn pods_of_equal_or_higher_priority_are_never_victims() {
        let w = world(
            vec![node_with("n1", "2", false)],
            vec![
                p("same", 10, "1", Some("n1"), Some(T1)),
                p("higher", 11, "1", Some("n1"), Some(T1)),
            ],
            p("pending", 10, "1", None, None),
        );
        assert_eq!(
            outcome(&w.run()),
            (
                cleared(),
                "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, \
                 preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
                    .to_string()
            )
        );
    }

    #[test]
    fn unresolvable_nodes_are_not_tried_and_remaining_failures_are_reported() {
        let w = world(
            vec![node_with("n1", "4", true), node_with("n2", "4", false)],
            vec![
                p("low1", 1, "1", Some("n1"), Some(T1)),
                p("high", 100, "3", Some("n2"), Some(T1)),
                p("low2", 1, "1", Some("n2"), Some(T1)),
            ],
            p("pending", 10, "2", None, None),
        );
        let r = w.run();
        assert_eq!(
            outcome(&r),
            (
                cleared(),
                "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s). \
                 no new claims to deallocate, preemption: 0/2 nodes are available: \
                 1 Insufficient cpu, 1 Preemption is not helpful for scheduling."
                    .to_string()
            )
        );
        let t = trace(&r);
        assert_eq!(t.potential_nodes, 1);
        assert_eq!(t.examined.len(), 1);
        assert_eq!(t.examined[0].0, "n2");
    }

    #[test]
    fn no_potential_nodes_means_preemption_is_not_helpful_anywhere() {
        let w = world(
            vec![node_with("n1", "4", true), node_with("n2", "4", true)],
            vec![p("low", 1, "1", Some("n1"), Some(T1))],
            p("pending", 10, "1", None, None),
        );
        assert_eq!(
            outcome(&w.run()),
            (
                cleared(),
                "0/2 nodes are available: 2 node(s) had untolerated taint(s). no new claims to \
                 deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful \
                 for scheduling."
                    .to_string()
            )
        );
    }

    #[test]
    fn candidates_that_violate_a_pdb_lose() {
        let cluster = |disrupted: &[&str]| {
            with_pdbs(
                world(
                    vec![node_with("n1", "2", false), node_with("n2", "2", false)],
                    vec![
                        labelled(p("db", 1, "2", Some("n1"), Some(T1)), "app", "db"),
                        labelled(p("web", 2, "2", Some("n2"), Some(T1)), "app", "web"),
                    ],
                    p("pending", 10, "2", None, None),
                ),
                vec![pdb("db-pdb", "db", 0, disrupted)],
            )
        };
        // Evicting db would break its budget: n2 wins although its victim matters more.
        let r = cluster(&[]).run();
        assert_eq!(outcome(&r).0, nominated("n2", &["web"]));
        let t = trace(&r);
        let order: Vec<(&str, i64)> = t
            .candidates
            .iter()
            .map(|c| (c.node.as_str(), c.num_pdb_violations))
            .collect();
        assert_eq!(order, [("n2", 0), ("n1", 1)]);
        // A pod the budget already counts as disrupted does not violate it again.
        let r = cluster(&["db"]).run();
        assert_eq!(outcome(&r).0, nominated("n1", &["db"]));
    }

    #[test]
    fn pdb_violating_pods_are_reprieved_first() {
        let cluster = |pdbs| {
            with_pdbs(
                world(
                    vec![node_with("n1", "2", false)],
                    vec![
                        labelled(p("guarded", 1, "1", Some("n1"), Some(T1)), "app", "db"),
                        p("important", 5, "1", Some("n1"), Some(T1)),
                    ],
                    p("pending", 10, "1", None, None),
                ),
                pdbs,
            )
        };
        // Without a budget the more important pod stays.
        assert_eq!(
            outcome(&cluster(vec![]).run()).0,
            nominated("n1", &["guarded"])
        );
        // With one, the guarded pod is reprieved first and the other one goes.
        let r = cluster(vec![pdb("db-pdb", "db", 0, &[])]).run();
        assert_eq!(outcome(&r).0, nominated("n1", &["important"]));
        assert_eq!(trace(&r).candidates[0].num_pdb_violations, 0);
    }

    #[test]
    fn dry_run_stops_at_enough_candidates_and_starts_at_the_seeded_offset() {
        let w = world(
            vec![
                node_with("n1", "1", false),
                node_with("n2", "1", false),
                node_with("n3", "1", false),
            ],
            vec![
                p("v1", 1, "1", Some("n1"), Some(T1)),
                p("v2", 1, "1", Some("n2"), Some(T1)),
                p("v3", 1, "1", Some("n3"), Some(T1)),
            ],
            p("pending", 10, "1", None, None),
        );
        let r = w.run();
        let statuses = match &r.outcome {
            CycleOutcome::Unschedulable { fit_error, .. } => {
                fit_error.diagnosis.node_to_status.clone()
            }
            other => panic!("{other:?}"),
        };
        let h = crate::framework::Handle {
            framework: &w.framework,
            snapshot: &w.snapshot,
            listers: &w.listers,
            nominator: &w.nominator,
            waiting: &crate::framework::waiting::NO_WAITING,
            now: jiff::Timestamp::UNIX_EPOCH,
            extenders: &[],
            simulation: false,
            pool: None,
        };
        let run = |pl: DefaultPreemption| {
            let mut state = r.state.clone();
            let (res, s) = pl.post_filter(&h, &mut state, &w.pod, &statuses);
            assert!(s.is_success(), "{s}");
            let t: &crate::framework::preemption::PreemptionTrace =
                state.read(STATE_KEY).expect("trace");
            let examined: Vec<String> = t.examined.iter().map(|(n, _)| n.clone()).collect();
            (res.map(|r| r.nominated_node_name), examined)
        };
        // One candidate is enough: the search stops at the first node it tries.
        let one = || DefaultPreemption::new(0, 1);
        assert_eq!(run(one()), (Some("n1".into()), vec!["n1".to_string()]));
        assert_eq!(
            run(one().with_seed(1)),
            (Some("n2".into()), vec!["n2".to_string()])
        );
        assert_eq!(
            run(one().with_seed(5)),
            (Some("n3".into()), vec!["n3".to_string()])
        );
        // With the defaults every node is tried; the tie goes to the first candidate.
        let (node, examined) = run(DefaultPreemption::default().with_seed(1));
        assert_eq!(node.as_deref(), Some("n2"));
        assert_eq!(examined, ["n2", "n3", "n1"]);
    }

    #[test]
    fn large_dry_runs_stop_where_a_sequential_one_would() {
        // Above 32 potential nodes the dry run computes in parallel waves; the outcome must
        // still be that of examining nodes one by one from the offset.
        let names: Vec<String> = (0..40).map(|i| format!("n{i:02}")).collect();
        let mut pods: Vec<Value> = names
            .iter()
            .map(|n| p(&format!("v-{n}"), 1, "1", Some(n), Some(T1)))
            .collect();
        // n38 cannot help: its pod outranks the preemptor.
        pods[38] = p("boss", 100, "1", Some("n38"), Some(T1));
        let w = world(
            names.iter().map(|n| node_with(n, "1", false)).collect(),
            pods,
            p("pending", 10, "1", None, None),
        );
        let r = w.run();
        let statuses = match &r.outcome {
            CycleOutcome::Unschedulable { fit_error, .. } => {
                fit_error.diagnosis.node_to_status.clone()
            }
            other => panic!("{other:?}"),
        };
        let h = crate::framework::Handle {
            framework: &w.framework,
            snapshot: &w.snapshot,
            listers: &w.listers,
            nominator: &w.nominator,
            waiting: &crate::framework::waiting::NO_WAITING,
            now: jiff::Timestamp::UNIX_EPOCH,
            extenders: &[],
            simulation: false,
            pool: None,
        };
        let mut state = r.state.clone();
        let pl = DefaultPreemption::new(10, 5).with_seed(37);
        let (res, s) = pl.post_filter(&h, &mut state, &w.pod, &statuses);
        assert!(s.is_success());
        assert_eq!(res.map(|r| r.nominated_node_name).as_deref(), Some("n37"));
        let t: &crate::framework::preemption::PreemptionTrace =
            state.read(STATE_KEY).expect("trace");
        let examined: Vec<&str> = t.examined.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(examined, ["n37", "n38", "n39", "n00", "n01", "n02"]);
        assert_eq!(t.candidates.len(), 5);
    }

    #[test]
    fn zero_candidates_wanted_finds_none() {
        // minCandidateNodesAbsolute 0 and 10% of 3 nodes is 0: upstream's candidate lists
        // have no room, so even nodes that would work end up "not helpful".
        let w = world(
            vec![node_with("n1", "1", false), node_with("n2", "1", false)],
            vec![
                p("v1", 1, "1", Some("n1"), Some(T1)),
                p("big", 100, "1", Some("n2"), Some(T1)),
            ],
            p("pending", 10, "1", None, None),
        );
        let r = w.run();
        let statuses = match &r.outcome {
            CycleOutcome::Unschedulable { fit_error, .. } => {
                fit_error.diagnosis.node_to_status.clone()
            }
            other => panic!("{other:?}"),
        };
        let h = crate::framework::Handle {
            framework: &w.framework,
            snapshot: &w.snapshot,
            listers: &w.listers,
            nominator: &w.nominator,
            waiting: &crate::framework::waiting::NO_WAITING,
            now: jiff::Timestamp::UNIX_EPOCH,
            extenders: &[],
            simulation: false,
            pool: None,
        };
        let mut state = r.state.clone();
        let (res, s) = DefaultPreemption::new(10, 0).post_filter(&h, &mut state, &w.pod, &statuses);
        assert_eq!(res, cleared());
        assert_eq!(
            s.message(),
            "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming \
             pod, 1 Preemption is not helpful for scheduling."
        );
    }

    #[test]
    fn nominated_pods_of_higher_priority_keep_their_room() {
        let mut w = world(
            vec![node_with("n1", "4", false)],
            vec![p("low", 1, "2", Some("n1"), Some(T1))],
            p("pending", 10, "3", None, None),
        );
        // Without the nomination, evicting `low` would make room.
        assert_eq!(outcome(&w.run()).0, nominated("n1", &["low"]));
        w.nominator
            .add(pod_from(p("waiting", 50, "2", None, None)), "n1");
        assert_eq!(
            outcome(&w.run()),
            (
                cleared(),
                "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, \
                 preemption: 0/1 nodes are available: 1 Insufficient cpu."
                    .to_string()
            )
        );
    }

    #[test]
    fn preemption_policy_never_is_not_eligible() {
        let mut target = p("pending", 10, "1", None, None);
        target["spec"]["preemptionPolicy"] = json!("Never");
        let w = world(
            vec![node_with("n1", "1", false)],
            vec![p("low", 1, "1", Some("n1"), Some(T1))],
            target,
        );
        let r = w.run();
        assert_eq!(
            outcome(&r),
            (
                None,
                "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, \
                 preemption: not eligible due to preemptionPolicy=Never."
                    .to_string()
            )
        );
        assert_eq!(
            trace(&r).ineligible.as_deref(),
            Some(ERR_REASON_PREEMPTION_POLICY_NEVER)
        );
    }

    #[test]
    fn a_terminating_victim_on_the_nominated_node_blocks_preemption() {
        let terminating = |prio: i32, reason: &str| {
            let mut v = p("leaving", prio, "1", Some("n1"), Some(T1));
            v["metadata"]["deletionTimestamp"] = json!(T2);
            v["status"]["conditions"] = json!([
                {"type": "DisruptionTarget", "status": "True", "reason": reason}]);
            v
        };
        let mut target = p("pending", 10, "1", None, None);
        target["status"] = json!({"nominatedNodeName": "n1"});
        let pl = DefaultPreemption::default();
        let check = |victim: Value, n1_status: Status| {
            let w = world(
                vec![node_with("n1", "1", false)],
                vec![victim],
                target.clone(),
            );
            let h = crate::framework::Handle {
                framework: &w.framework,
                snapshot: &w.snapshot,
                listers: &w.listers,
                nominator: &w.nominator,
                waiting: &crate::framework::waiting::NO_WAITING,
                now: jiff::Timestamp::UNIX_EPOCH,
                extenders: &[],
                simulation: false,
                pool: None,
            };
            pl.pod_eligible_to_preempt_others(&h, &w.pod, &n1_status)
        };
        let blocked = Err(ERR_REASON_TERMINATING_POD_ON_NOMINATED_NODE.to_string());
        let insufficient = Status::unschedulable("Insufficient cpu");
        assert_eq!(
            check(
                terminating(1, "PreemptionByScheduler"),
                insufficient.clone()
            ),
            blocked
        );
        // Not ours to wait for: a pod of higher priority, or one deleted for another reason.
        assert_eq!(
            check(
                terminating(20, "PreemptionByScheduler"),
                insufficient.clone()
            ),
            Ok(())
        );
        assert_eq!(
            check(
                terminating(1, "DeletionByTaintManager"),
                insufficient.clone()
            ),
            Ok(())
        );
        // A nominated node the filters reject for good is no reason to wait.
        assert_eq!(
            check(
                terminating(1, "PreemptionByScheduler"),
                Status::unresolvable("node(s) had untolerated taint(s)")
            ),
            Ok(())
        );

        // Through the whole cycle: the message, and no change to the nomination.
        let w = world(
            vec![node_with("n1", "1", false)],
            vec![terminating(1, "PreemptionByScheduler")],
            target.clone(),
        );
        assert_eq!(
            outcome(&w.run()),
            (
                None,
                "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, \
                 preemption: not eligible due to a terminating pod on the nominated node."
                    .to_string()
            )
        );
    }

    #[test]
    fn pdb_violation_split_keeps_order_and_shares_budgets() {
        let pods: Vec<Arc<PodInfo>> = [
            labelled(p("a", 1, "1", Some("n1"), None), "app", "db"),
            p("nolabels", 1, "1", Some("n1"), None),
            labelled(p("b", 1, "1", Some("n1"), None), "app", "db"),
            labelled(p("c", 1, "1", Some("n1"), None), "app", "db"),
            labelled(p("d", 1, "1", Some("n1"), None), "app", "db"),
        ]
        .into_iter()
        .map(pod_from)
        .collect();
        let mut other_ns = (*pdb("elsewhere", "db", 0, &[])).clone();
        other_ns.metadata.namespace = Some("other".into());
        let pdbs: Vec<PdbInfo> = [pdb("db-pdb", "db", 1, &["c"]), Arc::new(other_ns)]
            .iter()
            .map(|b| PdbInfo::new(b))
            .collect();
        let (violating, non_violating) = filter_pods_with_pdb_violation(&pods, &pdbs);
        let names = |v: &[Arc<PodInfo>]| v.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
        // a uses the one allowed disruption; c is already disrupted; b and d break it.
        assert_eq!(names(&violating), ["b", "d"]);
        assert_eq!(names(&non_violating), ["a", "nolabels", "c"]);
    }

    #[test]
    fn number_of_candidates() {
        let n = |pct, abs, nodes| DefaultPreemption::new(pct, abs).calculate_num_candidates(nodes);
        assert_eq!(n(10, 100, 1000), 100);
        assert_eq!(n(10, 100, 5000), 500);
        assert_eq!(n(10, 100, 50), 50);
        assert_eq!(n(40, 3, 10), 4);
        assert_eq!(n(0, 1, 5), 1);
        assert_eq!(n(10, 0, 5), 0);
        assert_eq!(
            DefaultPreemption::default().get_offset_and_num_candidates(7),
            (0, 7)
        );
        assert_eq!(
            DefaultPreemption::default()
                .with_seed(9)
                .get_offset_and_num_candidates(7),
            (2, 7)
        );
    }

    #[test]
    fn registered_at_pre_enqueue_and_post_filter_after_dynamic_resources() {
        let f = default_framework();
        let names = |ep| f.plugins(ep).iter().map(|e| e.name).collect::<Vec<_>>();
        use crate::framework::ExtensionPoint as EP;
        assert_eq!(names(EP::PostFilter), ["DynamicResources", NAME]);
        assert!(names(EP::PreEnqueue).contains(&NAME));
        let env = crate::plugins::testing::Env::new(Snapshot::default(), Listers::default());
        let target = pod_from(p("x", 1, "1", None, None));
        assert!(
            DefaultPreemption::default()
                .pre_enqueue(&env.handle(), &target)
                .is_success()
        );
    }

    #[test]
    fn factory_reads_and_validates_args() {
        let factory = in_tree().get(NAME).expect("registered");
        let features = crate::framework::features::Features::default();
        let ctx = |args| crate::framework::profile::FactoryContext {
            args,
            profile_name: "default-scheduler",
            features: &features,
        };
        assert!(factory(&ctx(None)).is_ok());
        let good = config::PluginArgs::DefaultPreemption(config::DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 50,
            min_candidate_nodes_absolute: 0,
        });
        assert!(factory(&ctx(Some(&good))).is_ok());
        let bad = config::PluginArgs::DefaultPreemption(config::DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 0,
            min_candidate_nodes_absolute: 0,
        });
        assert!(factory(&ctx(Some(&bad))).is_err());
    }
}
