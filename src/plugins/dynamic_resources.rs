//! DynamicResources (DRA), as far as kubestep models it: pods without resource claims
//! pass through as they do upstream (PreFilter skips, Score is 0, and PostFilter answers
//! "no new claims to deallocate", which shows up in every failure message). Pods that do
//! reference claims are rejected with a clear kubestep reason, since ResourceClaims,
//! DeviceClasses and ResourceSlices are not simulated.

use crate::framework::plugin::{
    FilterPlugin, Handle, NodeScore, Plugin, PostFilterPlugin, PostFilterResult, PreEnqueuePlugin,
    PreFilterPlugin, PreFilterResult, ScorePlugin,
};
use crate::framework::queue::events::{ActionType as A, EventResource as R};
use crate::framework::queue::hints::ClusterEventWithHint;
use crate::framework::{
    CycleState, NodeInfo, NodeToStatus, PodInfo, RenderState, StateTree, Status,
};
use crate::plugins::helper::default_normalize;

pub const NAME: &str = "DynamicResources";
const STATE_KEY: &str = "DynamicResources";
pub const UNSUPPORTED: &str =
    "kubestep does not simulate dynamic resource allocation: the pod references resource claims";

#[derive(Debug, Default)]
pub struct DynamicResources;

/// The claims the pod references (always empty for pods kubestep schedules).
#[derive(Debug, Clone, Default)]
struct StateData {
    claims: Vec<String>,
}

impl RenderState for StateData {
    fn render(&self) -> StateTree {
        StateTree::list("claims", self.claims.iter().cloned())
    }
}

fn claim_names(pod: &PodInfo) -> Vec<String> {
    pod.pod
        .spec
        .as_ref()
        .and_then(|s| s.resource_claims.as_ref())
        .into_iter()
        .flatten()
        .map(|c| c.name.clone())
        .collect()
}

fn state(cs: &CycleState) -> Result<&StateData, Status> {
    cs.read::<StateData>(STATE_KEY)
        .map_err(|e| Status::error(e.to_string()))
}

impl Plugin for DynamicResources {
    fn name(&self) -> &'static str {
        NAME
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(queueing_hints())
    }
    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl PreEnqueuePlugin for DynamicResources {
    fn pre_enqueue(&self, _h: &Handle, _pod: &PodInfo) -> Status {
        Status::success()
    }
}

impl PreFilterPlugin for DynamicResources {
    fn pre_filter(
        &self,
        _h: &Handle,
        cs: &mut CycleState,
        pod: &PodInfo,
    ) -> (Option<PreFilterResult>, Status) {
        let claims = claim_names(pod);
        let empty = claims.is_empty();
        cs.write(STATE_KEY, StateData { claims });
        if empty {
            (None, Status::skip())
        } else {
            (None, Status::unresolvable(UNSUPPORTED))
        }
    }
}

impl FilterPlugin for DynamicResources {
    fn filter(&self, _h: &Handle, cs: &CycleState, _pod: &PodInfo, _node: &NodeInfo) -> Status {
        match state(cs) {
            Err(s) => s,
            Ok(_) => Status::success(),
        }
    }
}

impl PostFilterPlugin for DynamicResources {
    fn post_filter(
        &self,
        _h: &Handle,
        cs: &mut CycleState,
        _pod: &PodInfo,
        _statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        match state(cs) {
            Err(s) => (None, s),
            Ok(s) if s.claims.is_empty() => {
                (None, Status::unschedulable("no new claims to deallocate"))
            }
            Ok(_) => (None, Status::unschedulable(UNSUPPORTED)),
        }
    }
}

impl ScorePlugin for DynamicResources {
    fn score(
        &self,
        _h: &Handle,
        cs: &CycleState,
        _pod: &PodInfo,
        _node: &NodeInfo,
    ) -> (i64, Status) {
        match state(cs) {
            Err(s) => (0, s),
            Ok(_) => (0, Status::success()),
        }
    }

    fn has_normalize(&self) -> bool {
        true
    }

    fn normalize_score(
        &self,
        _h: &Handle,
        _cs: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore],
    ) -> Status {
        default_normalize(scores, false);
        Status::success()
    }
}

// ---- queueing hints (EnqueueExtensions) ----

/// kubestep does not simulate claims, slices or device classes (pods with claims are
/// rejected for good), so the claim and pod hints are not modelled: they answer Queue.
fn queueing_hints() -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::new(
            R::Node,
            A::ADD | A::UPDATE_NODE_LABEL | A::UPDATE_NODE_ALLOCATABLE,
        ),
        ClusterEventWithHint::new(R::ResourceClaim, A::ADD | A::UPDATE),
        ClusterEventWithHint::new(R::Pod, A::UPDATE_POD_GENERATED_RESOURCE_CLAIM),
        ClusterEventWithHint::new(R::DeviceClass, A::ADD | A::UPDATE),
        ClusterEventWithHint::new(R::ResourceSlice, A::ADD | A::UPDATE),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{Code, Snapshot, listers::Listers};
    use crate::plugins::testing::{Env, pod};
    use serde_json::json;

    #[test]
    fn no_claims_skip_and_post_filter_message() {
        let env = Env::new(Snapshot::default(), Listers::default());
        let h = env.handle();
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
        let mut cs = CycleState::new();
        // Without PreFilter having run, PostFilter fails with upstream's "not found".
        assert_eq!(
            DynamicResources
                .post_filter(&h, &mut cs, &p, &NodeToStatus::default())
                .1
                .message(),
            "not found"
        );
        assert!(DynamicResources.pre_filter(&h, &mut cs, &p).1.is_skip());
        let (_, s) = DynamicResources.post_filter(&h, &mut cs, &p, &NodeToStatus::default());
        assert_eq!(
            (s.code(), s.message().as_str()),
            (Code::Unschedulable, "no new claims to deallocate")
        );
    }

    #[test]
    fn claims_are_reported_unsupported() {
        let env = Env::new(Snapshot::default(), Listers::default());
        let p = pod(
            json!({"metadata": {"name": "p"}, "spec": {"containers": [], "resourceClaims": [{"name": "gpu"}]}}),
        );
        let (_, s) = DynamicResources.pre_filter(&env.handle(), &mut CycleState::new(), &p);
        assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
        assert_eq!(s.message(), UNSUPPORTED);
    }
}
