//! PodTopologySpread's queueing hints: which pod and node events may change the
//! counts or domains of a rejected pod's hard constraints.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use super::PodTopologySpread;
use super::common::{DO_NOT_SCHEDULE, SpreadConstraint};
use crate::api::labels::Labels;
use crate::framework::events::{ActionType as A, EventObject, EventResource as R};
use crate::framework::hints::access::{
    as_nodes, as_pods, node_labels, pod_labels, pod_namespace, pod_node_name, pod_nominated,
    pod_uid, skip_or_queue,
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

/// The other pod counts for the target's spreading: it is the target, or a placed pod in
/// the target's namespace; placed is bound, or from 1.36 (`sees_nominated`) nominated.
fn involved(incoming: &Pod, target: &PodInfo, sees_nominated: bool) -> bool {
    if pod_uid(incoming) == target.uid {
        return true;
    }
    let placed = !pod_node_name(incoming).is_empty()
        || (sees_nominated && !pod_nominated(incoming).is_empty());
    placed && pod_namespace(incoming) == target.namespace
}

fn pts_after_pod_change(
    pl: &PodTopologySpread,
    h: &Handle,
    pod: &PodInfo,
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> HintResult {
    let (original, modified) = as_pods(old, new)?;
    let seen = pl.hints_see_nominated_pods;
    if modified.is_some_and(|p| !involved(p, pod, seen))
        || original.is_some_and(|p| !involved(p, pod, seen))
    {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Snapshot;
    use crate::framework::events::EventPod;
    use crate::framework::hints::QueueingHint::{Queue, QueueSkip};
    use crate::framework::listers::Listers;
    use crate::plugins::testing::{Env, pod};
    use serde_json::json;

    fn other(ns: &str, node: &str, nominated: &str) -> EventObject {
        let mut v = json!({"metadata": {"name": "o", "namespace": ns, "uid": "o",
            "labels": {"app": "web"}}, "spec": {"containers": []}});
        if !node.is_empty() {
            v["spec"]["nodeName"] = json!(node);
        }
        if !nominated.is_empty() {
            v["status"] = json!({"nominatedNodeName": nominated});
        }
        EventObject::Pod(EventPod::from(Arc::new(serde_json::from_value(v).unwrap())))
    }

    #[test]
    fn nominated_pods_are_involved_from_1_36() {
        let env = Env::new(Snapshot::default(), Listers::default());
        let t = pod(
            json!({"metadata": {"name": "t", "namespace": "ns", "uid": "t",
            "labels": {"app": "web"}}, "spec": {"containers": [],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}}}]}}),
        );
        let ask = |sees: bool, new: &EventObject| {
            let pl = PodTopologySpread::default().with_hints_seeing_nominated_pods(sees);
            pts_after_pod_change(&pl, &env.handle(), &t, None, Some(new)).unwrap()
        };
        // (1.35, 1.36) for an added app=web pod.
        for (event, want) in [
            (other("ns", "", "n1"), [QueueSkip, Queue]),
            (other("ns", "n1", ""), [Queue, Queue]),
            (other("ns", "", ""), [QueueSkip, QueueSkip]),
            (other("elsewhere", "", "n1"), [QueueSkip, QueueSkip]),
        ] {
            assert_eq!([ask(false, &event), ask(true, &event)], want);
        }
    }

    #[test]
    fn the_factory_sets_the_hints_of_the_version() {
        use crate::framework::events::ClusterEvent;
        use crate::framework::factory::FactoryContext;
        use crate::framework::features::{Features, KubeVersion};
        use crate::framework::hints::run_hint;
        let env = Env::new(Snapshot::default(), Listers::default());
        let t = pod(
            json!({"metadata": {"name": "t", "namespace": "ns", "uid": "t",
            "labels": {"app": "web"}}, "spec": {"containers": [],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}}}]}}),
        );
        let event = ClusterEvent::new(R::Pod, A::ADD, None, Some(other("ns", "", "n1")));
        for (v, want) in [(KubeVersion::V1_35, QueueSkip), (KubeVersion::V1_36, Queue)] {
            let features = Features::version(v);
            let ctx = FactoryContext {
                args: None,
                profile_name: "p",
                features: &features,
            };
            let pl = super::super::factory(&ctx).unwrap();
            let regs = pl.events_to_register().unwrap();
            let hint = regs[0].hint.as_ref().unwrap();
            assert_eq!(run_hint(hint, &env.handle(), &t, &event), want, "{v}");
        }
    }
}
