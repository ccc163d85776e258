//! NodeDeclaredFeatures: a pod that uses a feature the kubelet must support (inferred from
//! its spec) only fits nodes that list the feature in `status.declaredFeatures`.
//!
//! Which features a pod can require, how a node's list is read and the Filter's reason
//! changed in 1.36 (`Semantics::node_declared_features`); the gate decides whether the
//! plugin does anything at all.

use k8s_openapi::api::core::v1::{Node, PodSpec};
use serde_json::json;

use crate::features::{Gate, NodeDeclaredFeaturesRules as Rules};
use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::factory::{Built, FactoryContext};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::hints::access::{as_nodes, as_pods, pod_uid, required, skip_or_queue};
use crate::framework::plugin::{FilterPlugin, Handle, Plugin, PreFilterPlugin, PreFilterResult};
use crate::framework::signature::{SignFragment, SignResult};
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, StateTree, Status};

pub const NAME: &str = "NodeDeclaredFeatures";
const PRE_FILTER_STATE_KEY: &str = "PreFilterNodeDeclaredFeatures";
/// The Filter's reason from 1.36 (it no longer names the features).
pub const ERR_REASON_UNSATISFIED: &str = "node(s) didn't match Pod's required features";
/// 1.35's reason, followed by the unsatisfied features.
pub const ERR_REASON_UNSATISFIED_1_35: &str =
    "node declared features check failed - unsatisfied requirements: ";
/// Upstream's `FeaturesSignerName` (the framework's own signer list lacks it).
const FEATURES_SIGNER: &str = "v1.Pod.Spec.RequiredFeatures()";

pub const RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS: &str = "RestartAllContainersOnContainerExits";
pub const USER_NAMESPACES_HOST_NETWORK_SUPPORT: &str = "UserNamespacesHostNetworkSupport";

/// 1.36's feature registry, sorted by name: a node's list is matched against it by one
/// sorted walk (upstream `TryMap`). The three features no pod requires when it is
/// scheduled still belong here: they move the walk.
const REGISTRY_1_36: [&str; 5] = [
    "ExtendWebSocketsToKubelet",
    "InPlacePodLevelResourcesVerticalScaling",
    "InPlacePodVerticalScalingInitContainers",
    RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS,
    USER_NAMESPACES_HOST_NETWORK_SUPPORT,
];

/// `rules` is `None` when the gate is off: upstream then builds a plugin that skips
/// PreFilter, passes every node and registers no events.
#[derive(Debug, Default)]
pub struct NodeDeclaredFeatures {
    rules: Option<Rules>,
}

/// The gate says whether the plugin works; the version's rules say how.
pub fn factory(ctx: &FactoryContext) -> Built {
    let rules = ctx
        .features
        .enabled(Gate::NodeDeclaredFeatures)
        .then_some(ctx.features.semantics.node_declared_features);
    Ok(std::sync::Arc::new(NodeDeclaredFeatures { rules }))
}

/// The features the pod requires, sorted (upstream `InferForPodScheduling` over the pod's
/// spec). No feature has a maximum version yet, so the scheduler's own version (which
/// upstream passes) changes nothing.
pub fn required_features(spec: Option<&PodSpec>, rules: Rules) -> Vec<&'static str> {
    let Some(spec) = spec else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let restarts_all = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .flat_map(|c| c.restart_policy_rules.iter().flatten())
        .any(|r| r.action == "RestartAllContainers");
    if restarts_all {
        out.push(RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS);
    }
    // 1.35's registry had no such feature.
    if rules == Rules::V1_36 && spec.host_network == Some(true) && spec.host_users == Some(false) {
        out.push(USER_NAMESPACES_HOST_NETWORK_SUPPORT);
    }
    out
}

fn declared(node: &Node) -> &[String] {
    node.status
        .as_ref()
        .and_then(|s| s.declared_features.as_deref())
        .unwrap_or(&[])
}

/// What the node supports as 1.36 reads it (upstream `TryMap`): walking the node's list
/// beside the sorted registry keeps the known names and drops unknown ones. It assumes the
/// list is sorted, as API validation requires; an unsorted list loses entries here exactly
/// as it does upstream.
fn known_declared(list: &[String]) -> Vec<&'static str> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < list.len() && j < REGISTRY_1_36.len() {
        let (have, known) = (list[i].as_str(), REGISTRY_1_36[j]);
        match have.cmp(known) {
            std::cmp::Ordering::Equal => {
                out.push(known);
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
        }
    }
    out
}

/// The required features the node lacks, sorted.
fn unsatisfied(reqs: &[&'static str], node: &Node, rules: Rules) -> Vec<&'static str> {
    let list = declared(node);
    match rules {
        // 1.35 kept every name the node listed, in any order.
        Rules::V1_35 => reqs
            .iter()
            .copied()
            .filter(|r| !list.iter().any(|d| d == r))
            .collect(),
        Rules::V1_36 => {
            let known = known_declared(list);
            reqs.iter()
                .copied()
                .filter(|r| !known.contains(r))
                .collect()
        }
    }
}

#[derive(Debug, Clone)]
struct PreFilterState(Vec<&'static str>);

impl RenderState for PreFilterState {
    fn render(&self) -> StateTree {
        StateTree::list("requiredFeatures", self.0.iter().copied())
    }
}

impl Plugin for NodeDeclaredFeatures {
    fn name(&self) -> &'static str {
        NAME
    }
    fn sign_pod(&self, pod: &PodInfo) -> Option<SignResult> {
        // With the gate off upstream's plugin has no version, and inferring without one
        // fails: such a pod is never signed.
        let Some(rules) = self.rules else {
            return Some(Err("target version cannot be nil".into()));
        };
        let reqs = required_features(pod.pod().spec.as_ref(), rules);
        Some(Ok(vec![SignFragment {
            key: FEATURES_SIGNER,
            value: json!(reqs),
        }]))
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        // Gate off: an empty list, not `None` (which would mean every event).
        Some(self.rules.map(queueing_hints).unwrap_or_default())
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for NodeDeclaredFeatures {
    fn pre_filter(
        &self,
        _h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (Option<PreFilterResult>, Status) {
        let Some(rules) = self.rules else {
            return (None, Status::skip());
        };
        let reqs = required_features(pod.pod().spec.as_ref(), rules);
        if reqs.is_empty() {
            return (None, Status::skip());
        }
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(reqs));
        (None, Status::success())
    }
}

impl FilterPlugin for NodeDeclaredFeatures {
    fn filter(&self, _h: &Handle, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(rules) = self.rules else {
            return Status::success();
        };
        let Ok(PreFilterState(reqs)) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return Status::error(format!(
                "error reading {PRE_FILTER_STATE_KEY:?} from cycle-state: not found"
            ));
        };
        let missing = unsatisfied(reqs, node.node(), rules);
        if missing.is_empty() {
            return Status::success();
        }
        match rules {
            // Upstream joins in map order, which varies; sorted here. 1.35 can require
            // only one feature, so the order never shows.
            Rules::V1_35 => Status::unresolvable(format!(
                "{ERR_REASON_UNSATISFIED_1_35}{}",
                missing.join(", ")
            )),
            Rules::V1_36 => Status::unresolvable(ERR_REASON_UNSATISFIED),
        }
    }
}

// ---- queueing hints (EnqueueExtensions) ----

/// NodeDeclaredFeatures' EnqueueExtensions: a node that appears or changes its declared
/// features (UpdateNodeDeclaredFeature, emitted with the gate on), and the pod's own
/// update when it changes what the pod requires.
fn queueing_hints(rules: Rules) -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::with_hint(
            R::Node,
            A::ADD | A::UPDATE_NODE_DECLARED_FEATURE,
            |_, _, old, new| {
                let (original, modified) = as_nodes(old, new)?;
                let modified = required(modified, "node")?;
                // The lists are kept sorted, so comparing them in order is enough.
                skip_or_queue(original.is_none_or(|o| declared(o) != declared(modified)))
            },
        ),
        ClusterEventWithHint::with_hint(R::Pod, A::UPDATE, move |_, pod, old, new| {
            let (original, modified) = as_pods(old, new)?;
            let modified = required(modified, "pod")?;
            if pod_uid(modified) != pod.uid {
                return skip_or_queue(false);
            }
            let original = required(original, "old pod")?;
            let before = required_features(original.spec.as_ref(), rules);
            let after = required_features(modified.spec.as_ref(), rules);
            skip_or_queue(before != after)
        }),
    ]
}

#[cfg(test)]
mod tests;
