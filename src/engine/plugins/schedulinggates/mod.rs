//! SchedulingGates: a pod with `spec.schedulingGates` waits at PreEnqueue until they are
//! all removed.

use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::hints::access::queue_if_own_update;
use crate::framework::plugin::{Handle, Plugin, PreEnqueuePlugin};
use crate::framework::{PodInfo, Status};

pub const NAME: &str = "SchedulingGates";

#[derive(Debug, Default)]
pub struct SchedulingGates;

impl Plugin for SchedulingGates {
    fn name(&self) -> &'static str {
        NAME
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(queueing_hints())
    }
    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
}

impl PreEnqueuePlugin for SchedulingGates {
    fn pre_enqueue(&self, _h: &Handle, pod: &PodInfo) -> Status {
        let gates = pod
            .pod()
            .spec
            .as_ref()
            .and_then(|s| s.scheduling_gates.as_deref())
            .unwrap_or(&[]);
        if gates.is_empty() {
            return Status::success();
        }
        let names: Vec<&str> = gates.iter().map(|g| g.name.as_str()).collect();
        Status::unresolvable(format!(
            "waiting for scheduling gates: [{}]",
            names.join(" ")
        ))
    }
}

// ---- queueing hints (EnqueueExtensions) ----

/// SchedulingGates' EnqueueExtensions: only the pod's own gates going away release it.
fn queueing_hints() -> Vec<ClusterEventWithHint> {
    vec![ClusterEventWithHint::with_hint(
        R::Pod,
        A::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
        |_, pod, old, new| queue_if_own_update(pod, old, new),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{Snapshot, listers::Listers};
    use crate::plugins::testing::{Env, pod};
    use serde_json::json;

    #[test]
    fn gated_pods_wait() {
        let env = Env::new(Snapshot::default(), Listers::default());
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [],
            "schedulingGates": [{"name": "a"}, {"name": "example.com/b"}]}}));
        let s = SchedulingGates.pre_enqueue(&env.handle(), &p);
        assert_eq!(
            s.message(),
            "waiting for scheduling gates: [a example.com/b]"
        );
        let free = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
        assert!(
            SchedulingGates
                .pre_enqueue(&env.handle(), &free)
                .is_success()
        );
    }
}
