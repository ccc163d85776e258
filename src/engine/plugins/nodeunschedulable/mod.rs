//! NodeUnschedulable: rejects nodes with `spec.unschedulable` unless the pod tolerates the
//! `node.kubernetes.io/unschedulable:NoSchedule` taint.

use k8s_openapi::api::core::v1::Taint;

use crate::api::taints::tolerations_tolerate;
use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::hints::access::{
    as_nodes, as_pods, pod_tolerations, pod_uid, required, skip_or_queue,
};
use crate::framework::plugin::{FilterPlugin, Handle, Plugin};
use crate::framework::{CycleState, NodeInfo, PodInfo, Status};
use k8s_openapi::api::core::v1::Node;

pub const NAME: &str = "NodeUnschedulable";
pub const ERR_REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

#[derive(Debug, Default)]
pub struct NodeUnschedulable;

impl Plugin for NodeUnschedulable {
    fn sign_pod(&self, pod: &PodInfo) -> Option<crate::framework::signature::SignResult> {
        Some(Ok(vec![crate::plugins::signers::tolerations(pod)]))
    }
    fn name(&self) -> &'static str {
        NAME
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(queueing_hints())
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl FilterPlugin for NodeUnschedulable {
    fn filter(&self, _h: &Handle, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if !node.unschedulable() {
            return Status::success();
        }
        let taint = Taint {
            key: TAINT_NODE_UNSCHEDULABLE.to_string(),
            effect: "NoSchedule".to_string(),
            ..Default::default()
        };
        if tolerations_tolerate(pod_tolerations(pod.pod()), &taint) {
            return Status::success();
        }
        Status::unresolvable(ERR_REASON_UNSCHEDULABLE)
    }
}

// ---- queueing hints (EnqueueExtensions) ----

fn unschedulable(n: &Node) -> bool {
    n.spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
}

/// NodeUnschedulable's EnqueueExtensions.
fn queueing_hints() -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::with_hint(
            R::Node,
            A::ADD | A::UPDATE_NODE_TAINT,
            |_, _, old, new| {
                let (original, modified) = as_nodes(old, new)?;
                let modified = required(modified, "node")?;
                skip_or_queue(match original {
                    Some(o) => unschedulable(o) && !unschedulable(modified),
                    None => !unschedulable(modified),
                })
            },
        ),
        ClusterEventWithHint::with_hint(R::Pod, A::UPDATE_POD_TOLERATION, |_, pod, old, new| {
            let (_, modified) = as_pods(old, new)?;
            let modified = required(modified, "pod")?;
            if pod_uid(modified) != pod.uid {
                return skip_or_queue(false);
            }
            let taint = Taint {
                key: TAINT_NODE_UNSCHEDULABLE.to_string(),
                effect: crate::api::taints::EFFECT_NO_SCHEDULE.to_string(),
                ..Default::default()
            };
            skip_or_queue(tolerations_tolerate(pod_tolerations(modified), &taint))
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{filter, node, pod};
    use serde_json::json;

    #[test]
    fn unschedulable_nodes_need_the_toleration() {
        let n = node(json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}}));
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
        assert_eq!(
            filter(&NodeUnschedulable, &p, &n).message(),
            ERR_REASON_UNSCHEDULABLE
        );
        let tolerant = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [],
            "tolerations": [{"key": TAINT_NODE_UNSCHEDULABLE, "operator": "Exists", "effect": "NoSchedule"}]}}));
        assert!(filter(&NodeUnschedulable, &tolerant, &n).is_success());
        let ok = node(json!({"metadata": {"name": "n"}}));
        assert!(filter(&NodeUnschedulable, &p, &ok).is_success());
    }
}
