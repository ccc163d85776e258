//! NodePorts: a pod's host ports must be free on the node.

use crate::api::pod_resources;
use crate::api::pod_resources::HostPort;
use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::hints::access::{
    as_pods, pod_node_name, pod_nominated, required, skip_or_queue,
};
use crate::framework::node_info::HostPortInfo;
use crate::framework::plugin::{FilterPlugin, Handle, Plugin, PreFilterPlugin, PreFilterResult};
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, StateTree, Status};

pub const NAME: &str = "NodePorts";
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";
const PRE_FILTER_STATE_KEY: &str = "PreFilterNodePorts";

#[derive(Debug, Default)]
pub struct NodePorts;

#[derive(Debug, Clone)]
struct PreFilterState(Vec<HostPort>);

impl RenderState for PreFilterState {
    fn render(&self) -> StateTree {
        StateTree::list(
            "wantPorts",
            self.0
                .iter()
                .map(|p| format!("{}/{} on {}", p.port, p.protocol, p.ip)),
        )
    }
}

impl Plugin for NodePorts {
    fn sign_pod(&self, pod: &PodInfo) -> Option<crate::framework::signature::SignResult> {
        Some(Ok(vec![crate::plugins::signers::host_ports(pod)]))
    }
    fn name(&self) -> &'static str {
        NAME
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(queueing_hints())
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for NodePorts {
    fn pre_filter(
        &self,
        _h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (Option<PreFilterResult>, Status) {
        if pod.host_ports.is_empty() {
            return (None, Status::skip());
        }
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(pod.host_ports.clone()));
        (None, Status::success())
    }
}

impl FilterPlugin for NodePorts {
    fn filter(&self, _h: &Handle, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Ok(PreFilterState(want)) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return Status::error(format!(
                "reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"
            ));
        };
        if want
            .iter()
            .any(|p| node.used_ports.check_conflict(&p.ip, &p.protocol, p.port))
        {
            return Status::unschedulable(ERR_REASON);
        }
        Status::success()
    }
}

// ---- queueing hints (EnqueueExtensions) ----

/// NodePorts' EnqueueExtensions.
fn queueing_hints() -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::with_hint(R::Pod, A::DELETE, |_, pod, old, _| {
            let (deleted, _) = as_pods(old, None)?;
            let deleted = required(deleted, "pod")?;
            if pod_node_name(deleted).is_empty() && pod_nominated(deleted).is_empty() {
                return skip_or_queue(false);
            }
            let ports = pod_resources::host_ports(deleted);
            if ports.is_empty() {
                return skip_or_queue(false);
            }
            let mut in_use = HostPortInfo::default();
            for p in &ports {
                in_use.add(&p.ip, &p.protocol, p.port);
            }
            // Queue only when the deleted pod held a port the target wants.
            skip_or_queue(
                pod.host_ports
                    .iter()
                    .any(|p| in_use.check_conflict(&p.ip, &p.protocol, p.port)),
            )
        }),
        ClusterEventWithHint::new(R::Node, A::ADD),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{Code, Snapshot, listers::Listers};
    use crate::plugins::testing::{Env, node, pod};
    use serde_json::json;

    #[test]
    fn conflicting_host_port_is_unschedulable() {
        let env = Env::new(Snapshot::default(), Listers::default());
        let h = env.handle();
        let mut n = node(json!({"metadata": {"name": "n"}}));
        n.add_pod(pod(json!({"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 1, "hostPort": 8080}]}]}})));
        let p = pod(
            json!({"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 1, "hostPort": 8080, "hostIP": "10.0.0.1"}]}]}}),
        );
        let mut state = CycleState::new();
        assert!(NodePorts.pre_filter(&h, &mut state, &p).1.is_success());
        let s = NodePorts.filter(&h, &state, &p, &n);
        assert_eq!(
            (s.code(), s.message().as_str()),
            (Code::Unschedulable, ERR_REASON)
        );
        let none = pod(json!({"metadata": {"name": "c"}, "spec": {"containers": [{"name": "c"}]}}));
        assert!(
            NodePorts
                .pre_filter(&h, &mut CycleState::new(), &none)
                .1
                .is_skip()
        );
    }
}
