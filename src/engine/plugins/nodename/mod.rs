//! NodeName: a pod that names a node fits only that node.

use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::plugin::{FilterPlugin, Handle, Plugin};
use crate::framework::{CycleState, NodeInfo, PodInfo, Status};

pub const NAME: &str = "NodeName";
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

#[derive(Debug, Default)]
pub struct NodeName;

impl Plugin for NodeName {
    fn sign_pod(&self, pod: &PodInfo) -> Option<crate::framework::signature::SignResult> {
        Some(Ok(vec![crate::plugins::signers::node_name(pod)]))
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

impl FilterPlugin for NodeName {
    fn filter(&self, _h: &Handle, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let want = pod.node_name();
        if want.is_empty() || want == node.name() {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON)
        }
    }
}

// ---- queueing hints (EnqueueExtensions) ----

/// NodeName's EnqueueExtensions.
fn queueing_hints() -> Vec<ClusterEventWithHint> {
    vec![ClusterEventWithHint::new(R::Node, A::ADD)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{filter, node, pod};
    use serde_json::json;

    #[test]
    fn matches_only_the_named_node() {
        let p =
            pod(json!({"metadata": {"name": "p"}, "spec": {"nodeName": "a", "containers": []}}));
        assert!(filter(&NodeName, &p, &node(json!({"metadata": {"name": "a"}}))).is_success());
        assert_eq!(
            filter(&NodeName, &p, &node(json!({"metadata": {"name": "b"}}))).message(),
            ERR_REASON
        );
        let free = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
        assert!(filter(&NodeName, &free, &node(json!({"metadata": {"name": "b"}}))).is_success());
    }
}
