//! TaintToleration: Filter rejects nodes with an untolerated NoSchedule / NoExecute taint;
//! Score counts untolerated PreferNoSchedule taints (fewer is better, normalized reversed).

use k8s_openapi::api::core::v1::Toleration;

use super::helper::default_normalize;
use crate::api::taints::{
    EFFECT_PREFER_NO_SCHEDULE, find_untolerated, is_no_schedule_or_no_execute, tolerations_tolerate,
};
use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::hints::access::{
    as_nodes, as_pods, node_taints, pod_uid, required, skip_or_queue,
};
use crate::framework::plugin::{
    FilterPlugin, Handle, NodeScore, Plugin, PreScorePlugin, ScorePlugin,
};
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, StateTree, Status};
use k8s_openapi::api::core::v1::Node;

pub const NAME: &str = "TaintToleration";
pub const ERR_REASON_NOT_MATCH: &str = "node(s) had untolerated taint(s)";
const PRE_SCORE_STATE_KEY: &str = "PreScoreTaintToleration";

#[derive(Debug, Default)]
pub struct TaintToleration;

fn pod_tolerations(pod: &PodInfo) -> &[Toleration] {
    pod.pod()
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[])
}

pub fn format_toleration(t: &Toleration) -> String {
    let key = t.key.as_deref().unwrap_or("*");
    let op = t.operator.as_deref().unwrap_or("Equal");
    let effect = t
        .effect
        .as_deref()
        .filter(|e| !e.is_empty())
        .unwrap_or("(any)");
    match op {
        "Exists" => format!("{key} Exists :{effect}"),
        _ => format!("{key}={}:{effect}", t.value.as_deref().unwrap_or("")),
    }
}

#[derive(Debug, Clone)]
struct PreScoreState {
    tolerations_prefer_no_schedule: Vec<Toleration>,
}

impl RenderState for PreScoreState {
    fn render(&self) -> StateTree {
        StateTree::list(
            "tolerationsPreferNoSchedule",
            self.tolerations_prefer_no_schedule
                .iter()
                .map(format_toleration),
        )
    }
}

impl Plugin for TaintToleration {
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
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl FilterPlugin for TaintToleration {
    fn filter(&self, _h: &Handle, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        match find_untolerated(
            node.taints(),
            pod_tolerations(pod),
            is_no_schedule_or_no_execute,
        ) {
            None => Status::success(),
            Some(_) => Status::unresolvable(ERR_REASON_NOT_MATCH),
        }
    }
}

impl PreScorePlugin for TaintToleration {
    fn pre_score(
        &self,
        _h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[&NodeInfo],
    ) -> Status {
        let tolerations = pod_tolerations(pod)
            .iter()
            .filter(|t| {
                t.effect
                    .as_deref()
                    .is_none_or(|e| e.is_empty() || e == EFFECT_PREFER_NO_SCHEDULE)
            })
            .cloned()
            .collect();
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                tolerations_prefer_no_schedule: tolerations,
            },
        );
        Status::success()
    }
}

/// How many PreferNoSchedule taints of the node the tolerations leave untolerated.
fn intolerable_prefer_no_schedule(tolerations: &[Toleration], node: &NodeInfo) -> i64 {
    node.taints()
        .iter()
        .filter(|t| t.effect == EFFECT_PREFER_NO_SCHEDULE)
        .filter(|t| !tolerations_tolerate(tolerations, t))
        .count() as i64
}

impl ScorePlugin for TaintToleration {
    fn score(
        &self,
        _h: &Handle,
        state: &CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
    ) -> (i64, Status) {
        let Ok(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return (
                0,
                Status::error(format!(
                    "failed to read {PRE_SCORE_STATE_KEY:?} from cycleState: not found"
                )),
            );
        };
        (
            intolerable_prefer_no_schedule(&s.tolerations_prefer_no_schedule, node),
            Status::success(),
        )
    }

    fn score_nodes(
        &self,
        h: &Handle,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Option<(usize, Status)> {
        let Ok(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            out.fill(0);
            let first = nodes.first()?;
            return Some((0, self.score(h, state, pod, first).1));
        };
        for (node, slot) in nodes.iter().zip(out.iter_mut()) {
            *slot = intolerable_prefer_no_schedule(&s.tolerations_prefer_no_schedule, node);
        }
        None
    }

    fn has_normalize(&self) -> bool {
        true
    }

    fn normalize_score(
        &self,
        _h: &Handle,
        _state: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore],
    ) -> Status {
        default_normalize(scores, true);
        Status::success()
    }
}

// ---- queueing hints (EnqueueExtensions) ----

/// TaintToleration's EnqueueExtensions.
fn queueing_hints() -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::with_hint(
            R::Node,
            A::ADD | A::UPDATE_NODE_TAINT,
            |_, pod, old, new| {
                let (original, modified) = as_nodes(old, new)?;
                let modified = required(modified, "node")?;
                let tol = pod_tolerations(pod);
                let untolerated = |n: &Node| {
                    find_untolerated(node_taints(n), tol, is_no_schedule_or_no_execute).is_some()
                };
                let was = original.is_none_or(|n| untolerated(n));
                skip_or_queue(was && !untolerated(modified))
            },
        ),
        ClusterEventWithHint::with_hint(R::Pod, A::UPDATE_POD_TOLERATION, |_, pod, old, new| {
            let (_, modified) = as_pods(old, new)?;
            skip_or_queue(pod_uid(required(modified, "pod")?) == pod.uid)
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{Snapshot, listers::Listers};
    use crate::plugins::testing::{Env, filter, node, pod};
    use serde_json::json;

    #[test]
    fn filter_checks_no_schedule_and_no_execute_only() {
        let n = node(json!({"metadata": {"name": "n"}, "spec": {"taints": [
            {"key": "soft", "effect": "PreferNoSchedule"}, {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}}));
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
        assert_eq!(
            filter(&TaintToleration, &p, &n).message(),
            ERR_REASON_NOT_MATCH
        );
        let t = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [],
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu"}]}}));
        assert!(filter(&TaintToleration, &t, &n).is_success());
    }

    #[test]
    fn score_counts_untolerated_prefer_no_schedule() {
        let env = Env::new(Snapshot::default(), Listers::default());
        let h = env.handle();
        let n = node(json!({"metadata": {"name": "n"}, "spec": {"taints": [
            {"key": "a", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "PreferNoSchedule"}]}}));
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [],
            "tolerations": [{"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"},
                            {"key": "b", "operator": "Exists", "effect": "NoSchedule"}]}}));
        let mut state = CycleState::new();
        assert!(
            TaintToleration
                .pre_score(&h, &mut state, &p, &[])
                .is_success()
        );
        assert_eq!(TaintToleration.score(&h, &state, &p, &n).0, 1);
        let mut scores = vec![
            NodeScore {
                name: "x",
                score: 1,
            },
            NodeScore {
                name: "y",
                score: 0,
            },
        ];
        TaintToleration.normalize_score(&h, &state, &p, &mut scores);
        assert_eq!(scores.iter().map(|s| s.score).collect::<Vec<_>>(), [0, 100]);
    }

    #[test]
    fn batch_scores_match_single_scores() {
        let env = Env::new(Snapshot::default(), Listers::default());
        let h = env.handle();
        let nodes = [
            node(json!({"metadata": {"name": "a"}})),
            node(json!({"metadata": {"name": "b"}, "spec": {"taints": [
                {"key": "a", "effect": "PreferNoSchedule"}, {"key": "c", "effect": "PreferNoSchedule"}]}})),
        ];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [],
            "tolerations": [{"key": "a", "operator": "Exists"}]}}));
        // Without PreScore both paths report the missing state on the first node.
        crate::plugins::testing::assert_score_nodes_agrees(
            &TaintToleration,
            &h,
            &CycleState::new(),
            &p,
            &refs,
        );
        let mut state = CycleState::new();
        TaintToleration.pre_score(&h, &mut state, &p, &[]);
        crate::plugins::testing::assert_score_nodes_agrees(&TaintToleration, &h, &state, &p, &refs);
    }
}
