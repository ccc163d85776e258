//! NodeResourcesBalancedAllocation: prefers nodes whose resource usage stays balanced
//! across resources once the pod is placed (through 1.35), or whose balance the pod
//! improves most (from 1.36: `features::BalancedFormula`).

use std::borrow::Cow;
use std::sync::Arc;

use super::resource_allocation::{
    DeviceTotals, ResourceAllocationScorer, ResourceSpec, Strategy, default_resources,
};
use crate::features::{BalancedDraCrash, BalancedFormula};
use crate::framework::plugin::{Handle, Plugin, PreScorePlugin, ScorePlugin};
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, StateTree, Status};

pub const NAME: &str = "NodeResourcesBalancedAllocation";
const PRE_SCORE_STATE_KEY: &str = "PreScoreNodeResourcesBalancedAllocation";

#[derive(Debug)]
pub struct BalancedAllocation {
    scorer: ResourceAllocationScorer,
    /// Where kube-scheduler's plugin crashes under DRAExtendedResource.
    dra_crash: BalancedDraCrash,
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
            dra_crash: BalancedDraCrash::AnyExtendedName,
        }
    }

    /// DRAExtendedResource: configured resources a DeviceClass serves count devices, and
    /// the version's crash in doing so.
    pub fn with_dra_extended(mut self, on: bool, crash: BalancedDraCrash) -> BalancedAllocation {
        self.scorer.dra_extended = on;
        self.dra_crash = crash;
        self
    }

    /// kube-scheduler's NodeResourcesBalancedAllocation dereferences a nil pointer here
    /// (upstream bug): the real scheduler would crash, so kubestep stops the attempt
    /// with an error saying so instead of scoring what the real one never scores.
    fn crash(what: String) -> Status {
        Status::error(format!(
            "kube-scheduler crashes here: NodeResourcesBalancedAllocation {what} with DRAExtendedResource on (a nil pointer in the real plugin); it decides nothing for this pod"
        ))
    }

    /// 1.36: a node where scoring a resource evaluates a DeviceClass's CEL selectors.
    fn crash_on(&self, node: &NodeInfo, requests: &[i64], dra: Option<&DeviceTotals>) -> Option<Status> {
        let dra = dra.filter(|_| self.dra_crash == BalancedDraCrash::ClassSelectors)?;
        self.scorer.resources.iter().enumerate().find_map(|(i, r)| {
            if requests[i] == 0 || node.allocatable.scalar(&r.name) != 0 {
                return None;
            }
            let class = dra.evaluates_selectors(i, node.node())?;
            Some(Self::crash(format!(
                "evaluates DeviceClass {class}'s selectors for {} on node {}",
                r.name,
                node.name()
            )))
        })
    }
}

/// The pod's requests and the devices serving configured resources.
type ScoreInput<'a> = (Cow<'a, [i64]>, Option<Arc<DeviceTotals>>);

#[derive(Debug, Clone)]
struct PreScoreState {
    pod_requests: Vec<i64>,
    names: Vec<String>,
    dra: Option<Arc<DeviceTotals>>,
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
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[&NodeInfo],
    ) -> Status {
        let pod_requests = self.scorer.pod_requests(pod);
        // Best-effort pods (no requests at all) are not scored.
        if pod_requests.iter().all(|&r| r == 0) {
            return Status::skip();
        }
        if self.scorer.dra_extended && self.dra_crash == BalancedDraCrash::AnyExtendedName {
            let named = self.scorer.resources.iter().find(|r| {
                crate::plugins::dynamicresources::extended::is_dra_extended_resource_name(&r.name)
            });
            if let Some(r) = named {
                return Self::crash(format!("looks up which DeviceClass serves {}", r.name));
            }
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
                dra: self.scorer.device_totals(h.listers),
            },
        );
        Status::success()
    }
}

impl BalancedAllocation {
    /// The pod's requests as PreScore stored them, computed afresh if it did not run;
    /// `None` for a pod that requests nothing, which scores 0 everywhere.
    fn score_requests<'a>(
        &self,
        h: &Handle,
        state: &'a CycleState,
        pod: &PodInfo,
    ) -> Option<ScoreInput<'a>> {
        if let Ok(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            return Some((Cow::Borrowed(&s.pod_requests), s.dra.clone()));
        }
        let r = self.scorer.pod_requests(pod);
        (!r.iter().all(|&v| v == 0))
            .then(|| (Cow::Owned(r), self.scorer.device_totals(h.listers)))
    }
}

impl ScorePlugin for BalancedAllocation {
    fn score(
        &self,
        h: &Handle,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> (i64, Status) {
        let Some((r, dra)) = self.score_requests(h, state, pod) else {
            return (0, Status::success());
        };
        if let Some(st) = self.crash_on(node, &r, dra.as_deref()) {
            return (0, st);
        }
        (self.scorer.score(node, &r, dra.as_deref()), Status::success())
    }

    fn score_nodes(
        &self,
        h: &Handle,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Option<(usize, Status)> {
        match self.score_requests(h, state, pod) {
            Some((r, dra)) => {
                if let Some(found) = nodes
                    .iter()
                    .enumerate()
                    .find_map(|(i, n)| Some((i, self.crash_on(n, &r, dra.as_deref())?)))
                {
                    out.fill(0);
                    return Some(found);
                }
                self.scorer.score_all(nodes, &r, dra.as_deref(), out)
            }
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
    Ok(std::sync::Arc::new(
        BalancedAllocation::new(args.resources, ctx.features.semantics.balanced_allocation)
            .with_dra_extended(
                ctx.features
                    .enabled(crate::features::Gate::DRAExtendedResource),
                ctx.features.semantics.balanced_allocation_dra_crash,
            ),
    ))
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
