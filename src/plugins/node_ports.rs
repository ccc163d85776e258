//! NodePorts: a pod's host ports must be free on the node.

use crate::api::pod_resources::HostPort;
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
    fn name(&self) -> &'static str {
        NAME
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
