//! NodeResourcesBalancedAllocation: prefers nodes whose resource usage stays balanced
//! across resources once the pod is placed (through 1.35), or whose balance the pod
//! improves most (from 1.36: `features::BalancedFormula`).

use std::borrow::Cow;

use super::resource_allocation::{
    ResourceAllocationScorer, ResourceSpec, Strategy, default_resources,
};
use crate::features::BalancedFormula;
use crate::framework::plugin::{Handle, Plugin, PreScorePlugin, ScorePlugin};
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, StateTree, Status};

pub const NAME: &str = "NodeResourcesBalancedAllocation";
const PRE_SCORE_STATE_KEY: &str = "PreScoreNodeResourcesBalancedAllocation";

#[derive(Debug)]
pub struct BalancedAllocation {
    scorer: ResourceAllocationScorer,
}

impl Default for BalancedAllocation {
    fn default() -> Self {
        BalancedAllocation::new(default_resources(), BalancedFormula::WithPod)
    }
}

impl BalancedAllocation {
    pub fn new(resources: Vec<ResourceSpec>, formula: BalancedFormula) -> BalancedAllocation {
        BalancedAllocation {
            scorer: ResourceAllocationScorer::new(resources, Strategy::Balanced(formula), true),
        }
    }
}

#[derive(Debug, Clone)]
struct PreScoreState {
    pod_requests: Vec<i64>,
    names: Vec<String>,
}

impl RenderState for PreScoreState {
    fn render(&self) -> StateTree {
        StateTree::node(
            "podRequests",
            self.names
                .iter()
                .zip(&self.pod_requests)
                .map(|(n, v)| StateTree::kv(n, v))
                .collect(),
        )
    }
}

impl Plugin for BalancedAllocation {
    fn sign_pod(&self, pod: &PodInfo) -> Option<crate::framework::signature::SignResult> {
        Some(Ok(vec![crate::plugins::signers::resources(pod)]))
    }
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl PreScorePlugin for BalancedAllocation {
    fn pre_score(
        &self,
        _h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[&NodeInfo],
    ) -> Status {
        let pod_requests = self.scorer.pod_requests(pod);
        // Best-effort pods (no requests at all) are not scored.
        if pod_requests.iter().all(|&r| r == 0) {
            return Status::skip();
        }
        let names = self
            .scorer
            .resources
            .iter()
            .map(|r| r.name.clone())
            .collect();
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                pod_requests,
                names,
            },
        );
        Status::success()
    }
}

impl BalancedAllocation {
    /// The pod's requests as PreScore stored them, computed afresh if it did not run;
    /// `None` for a pod that requests nothing, which scores 0 everywhere.
    fn score_requests<'a>(&self, state: &'a CycleState, pod: &PodInfo) -> Option<Cow<'a, [i64]>> {
        if let Ok(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            return Some(Cow::Borrowed(&s.pod_requests));
        }
        let r = self.scorer.pod_requests(pod);
        (!r.iter().all(|&v| v == 0)).then_some(Cow::Owned(r))
    }
}

impl ScorePlugin for BalancedAllocation {
    fn score(
        &self,
        _h: &Handle,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> (i64, Status) {
        let score = self
            .score_requests(state, pod)
            .map_or(0, |r| self.scorer.score(node, &r));
        (score, Status::success())
    }

    fn score_nodes(
        &self,
        _h: &Handle,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Option<(usize, Status)> {
        match self.score_requests(state, pod) {
            Some(r) => self.scorer.score_all(nodes, &r, out),
            None => out.fill(0),
        }
        None
    }
}

/// Built from `NodeResourcesBalancedAllocationArgs` (the resources it balances).
pub fn factory(
    ctx: &crate::framework::factory::FactoryContext,
) -> crate::framework::factory::Built {
    let args: crate::config::NodeResourcesBalancedAllocationArgs = ctx.args()?;
    Ok(std::sync::Arc::new(BalancedAllocation::new(
        args.resources,
        ctx.features.semantics.balanced_allocation,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{Snapshot, listers::Listers};
    use crate::plugins::testing::{Env, node, pod};
    use serde_json::json;

    #[test]
    fn best_effort_skips_and_balance_scores() {
        let env = Env::new(Snapshot::default(), Listers::default());
        let h = env.handle();
        let be = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}));
        assert!(
            BalancedAllocation::default()
                .pre_score(&h, &mut CycleState::new(), &be, &[])
                .is_skip()
        );
        let p = pod(
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]}}),
        );
        let n = node(
            json!({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4", "memory": "4Gi"}}}),
        );
        let mut state = CycleState::new();
        assert!(
            BalancedAllocation::default()
                .pre_score(&h, &mut state, &p, &[])
                .is_success()
        );
        // fractions 0.5 and 0.25: std 0.125 -> 87
        assert_eq!(
            BalancedAllocation::default().score(&h, &state, &p, &n).0,
            87
        );
    }

    #[test]
    fn batch_scores_match_single_scores() {
        let env = Env::new(Snapshot::default(), Listers::default());
        let h = env.handle();
        let nodes = [
            node(
                json!({"metadata": {"name": "a"}, "status": {"allocatable": {"cpu": "4", "memory": "4Gi"}}}),
            ),
            node(
                json!({"metadata": {"name": "b"}, "status": {"allocatable": {"cpu": "1", "memory": "64Gi"}}}),
            ),
            node(json!({"metadata": {"name": "c"}, "status": {"allocatable": {"memory": "1Gi"}}})),
        ];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let p = pod(
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c",
            "resources": {"requests": {"cpu": "1500m", "memory": "3Gi"}}}]}}),
        );
        let b = BalancedAllocation::default();
        crate::plugins::testing::assert_score_nodes_agrees(&b, &h, &CycleState::new(), &p, &refs);
        let mut state = CycleState::new();
        b.pre_score(&h, &mut state, &p, &[]);
        crate::plugins::testing::assert_score_nodes_agrees(&b, &h, &state, &p, &refs);
    }
}
