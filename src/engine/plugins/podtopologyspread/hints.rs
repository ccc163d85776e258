//! PodTopologySpread's queueing hints: which pod and node events may change the
//! counts or domains of a rejected pod's hard constraints.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use super::PodTopologySpread;
use super::common::{DO_NOT_SCHEDULE, SpreadConstraint};
use crate::api::labels::Labels;
use crate::framework::events::{ActionType as A, EventObject, EventResource as R};
use crate::framework::hints::access::{
    as_nodes, as_pods, node_labels, pod_labels, pod_namespace, pod_node_name, pod_uid,
    skip_or_queue,
};
use crate::framework::hints::{ClusterEventWithHint, HintResult};
use crate::framework::plugin::Handle;
use crate::framework::types::PodInfo;

/// PodTopologySpread's EnqueueExtensions; `pl` carries the profile's default constraints.
pub(super) fn queueing_hints(pl: PodTopologySpread) -> Vec<ClusterEventWithHint> {
    let pl = Arc::new(pl);
    let for_nodes = Arc::clone(&pl);
    vec![
        ClusterEventWithHint::with_hint(
            R::Pod,
            A::ADD | A::UPDATE_POD_LABEL | A::UPDATE_POD_TOLERATION | A::DELETE,
            move |h, pod, old, new| pts_after_pod_change(&pl, h, pod, old, new),
        ),
        ClusterEventWithHint::with_hint(
            R::Node,
            A::ADD | A::DELETE | A::UPDATE_NODE_LABEL | A::UPDATE_NODE_TAINT,
            move |h, pod, old, new| pts_after_node_change(&for_nodes, h, pod, old, new),
        ),
    ]
}

/// The hard constraints (own, or the defaults with the selector of the pod's services
/// and controllers).
fn hard_constraints(
    pl: &PodTopologySpread,
    h: &Handle,
    pod: &PodInfo,
) -> Result<Vec<SpreadConstraint>, String> {
    pl.constraints_for(h.listers, pod, DO_NOT_SCHEDULE, "hard")
}

/// The other pod counts for the target's spreading: it is the target, or a bound pod in
/// the target's namespace.
fn involved(incoming: &Pod, target: &PodInfo) -> bool {
    pod_uid(incoming) == target.uid
        || (!pod_node_name(incoming).is_empty() && pod_namespace(incoming) == target.namespace)
}

fn pts_after_pod_change(
    pl: &PodTopologySpread,
    h: &Handle,
    pod: &PodInfo,
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> HintResult {
    let (original, modified) = as_pods(old, new)?;
    if modified.is_some_and(|p| !involved(p, pod)) || original.is_some_and(|p| !involved(p, pod)) {
        return skip_or_queue(false);
    }
    let constraints = hard_constraints(pl, h, pod)?;
    let any_matches = |l: &Labels| constraints.iter().any(|c| c.selector.matches(l));
    match (original, modified) {
        (Some(o), Some(m)) => {
            let tolerations = |p: &Pod| {
                p.spec
                    .as_ref()
                    .and_then(|s| s.tolerations.clone())
                    .unwrap_or_default()
            };
            if pod_uid(m) == pod.uid
                && tolerations(m) != tolerations(o)
                && constraints.iter().any(|c| c.honor_node_taints)
            {
                return skip_or_queue(true);
            }
            if pod_labels(o) == pod_labels(m) {
                return skip_or_queue(false);
            }
            skip_or_queue(
                constraints.iter().any(|c| {
                    c.selector.matches(pod_labels(o)) != c.selector.matches(pod_labels(m))
                }),
            )
        }
        (None, Some(m)) => skip_or_queue(any_matches(pod_labels(m))),
        (Some(o), None) => skip_or_queue(any_matches(pod_labels(o))),
        (None, None) => Err("the event carries no pod".into()),
    }
}

fn pts_after_node_change(
    pl: &PodTopologySpread,
    h: &Handle,
    pod: &PodInfo,
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> HintResult {
    let (original, modified) = as_nodes(old, new)?;
    let constraints = hard_constraints(pl, h, pod)?;
    let has_keys = |n: &Node| {
        let l = node_labels(n);
        constraints.iter().all(|c| l.contains_key(&c.topology_key))
    };
    let orig_matching = original.is_some_and(|n| has_keys(n));
    let mod_matching = modified.is_some_and(|n| has_keys(n));
    match (original, modified) {
        (Some(o), Some(m)) => {
            if orig_matching != mod_matching {
                return skip_or_queue(true);
            }
            let key_changed = constraints.iter().any(|c| {
                node_labels(o).get(&c.topology_key) != node_labels(m).get(&c.topology_key)
            });
            let taints = |n: &Node| {
                n.spec
                    .as_ref()
                    .and_then(|s| s.taints.clone())
                    .unwrap_or_default()
            };
            skip_or_queue(mod_matching && (key_changed || taints(o) != taints(m)))
        }
        (None, Some(_)) => skip_or_queue(mod_matching),
        (Some(_), None) => skip_or_queue(orig_matching),
        (None, None) => Err("the event carries no node".into()),
    }
}
