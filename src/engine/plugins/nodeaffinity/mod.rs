//! NodeAffinity: the pod's nodeSelector and required node affinity (plus the scheduler's
//! `addedAffinity`) filter nodes; preferred terms score them. `metadata.name` In terms
//! narrow the search at PreFilter.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{NodeAffinity as NodeAffinitySpec, PreferredSchedulingTerm};

use super::helper::default_normalize;
use crate::api::node_affinity::{
    NodeSelectorMatcher, PreferredSchedulingTerms, RequiredNodeAffinity,
};
use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::hints::access::{as_nodes, required, skip_or_queue};
use crate::framework::plugin::{
    FilterPlugin, Handle, NodeScore, Plugin, PreFilterPlugin, PreFilterResult, PreScorePlugin,
    ScorePlugin,
};
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, StateTree, Status};
use k8s_openapi::api::core::v1::{Node, Pod};

pub const NAME: &str = "NodeAffinity";
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";
pub const ERR_REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";
const PRE_FILTER_STATE_KEY: &str = "PreFilterNodeAffinity";
const PRE_SCORE_STATE_KEY: &str = "PreScoreNodeAffinity";

#[derive(Debug, Default)]
pub struct NodeAffinity {
    added_node_selector: Option<NodeSelectorMatcher>,
    added_pref_sched_terms: Option<PreferredSchedulingTerms>,
}

impl NodeAffinity {
    /// Builds the plugin from `NodeAffinityArgs.addedAffinity`.
    pub fn new(added: Option<&NodeAffinitySpec>) -> Result<NodeAffinity, String> {
        let mut pl = NodeAffinity::default();
        let Some(added) = added else { return Ok(pl) };
        if let Some(ns) = &added.required_during_scheduling_ignored_during_execution {
            let m = NodeSelectorMatcher::new(ns);
            let errs = m.parse_errors();
            if !errs.is_empty() {
                return Err(format!(
                    "parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: {}",
                    errs.join(", ")
                ));
            }
            pl.added_node_selector = Some(m);
        }
        if let Some(terms) = added
            .preferred_during_scheduling_ignored_during_execution
            .as_ref()
            .filter(|t| !t.is_empty())
        {
            let t = PreferredSchedulingTerms::new(terms).map_err(|e| {
                format!(
                    "parsing addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: {e}"
                )
            })?;
            pl.added_pref_sched_terms = Some(t);
        }
        Ok(pl)
    }
}

#[derive(Debug, Clone)]
struct PreFilterState {
    required: RequiredNodeAffinity,
    summary: Vec<String>,
}

impl RenderState for PreFilterState {
    fn render(&self) -> StateTree {
        StateTree::list(
            "requiredNodeSelectorAndAffinity",
            self.summary.iter().cloned(),
        )
    }
}

#[derive(Debug, Clone)]
struct PreScoreState {
    preferred: Option<PreferredSchedulingTerms>,
    summary: Vec<String>,
}

impl RenderState for PreScoreState {
    fn render(&self) -> StateTree {
        StateTree::list("preferredNodeAffinity", self.summary.iter().cloned())
    }
}

fn pod_node_affinity(pod: &PodInfo) -> Option<&NodeAffinitySpec> {
    pod.pod()
        .spec
        .as_ref()?
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()
}

fn preferred_terms(pod: &PodInfo) -> Option<&Vec<PreferredSchedulingTerm>> {
    pod_node_affinity(pod)?
        .preferred_during_scheduling_ignored_during_execution
        .as_ref()
}

fn describe_required(pod: &PodInfo) -> Vec<String> {
    let mut out = Vec::new();
    let spec = pod.pod().spec.as_ref();
    for (k, v) in spec
        .and_then(|s| s.node_selector.as_ref())
        .into_iter()
        .flatten()
    {
        out.push(format!("nodeSelector {k}={v}"));
    }
    let terms = pod_node_affinity(pod).and_then(|a| {
        a.required_during_scheduling_ignored_during_execution
            .as_ref()
    });
    for (i, t) in terms
        .map(|t| t.node_selector_terms.as_slice())
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        let mut parts = Vec::new();
        for e in t.match_expressions.iter().flatten() {
            parts.push(format!(
                "{} {} {:?}",
                e.key,
                e.operator,
                e.values.as_deref().unwrap_or(&[])
            ));
        }
        for e in t.match_fields.iter().flatten() {
            parts.push(format!(
                "field {} {} {:?}",
                e.key,
                e.operator,
                e.values.as_deref().unwrap_or(&[])
            ));
        }
        out.push(format!("term[{i}]: {}", parts.join(" AND ")));
    }
    out
}

impl Plugin for NodeAffinity {
    fn sign_pod(&self, pod: &PodInfo) -> Option<crate::framework::signature::SignResult> {
        Some(Ok(crate::plugins::signers::node_affinity(pod)))
    }
    fn name(&self) -> &'static str {
        NAME
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(queueing_hints(self.added_node_selector.clone()))
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
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

impl PreFilterPlugin for NodeAffinity {
    fn pre_filter(
        &self,
        _h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (Option<PreFilterResult>, Status) {
        let required = pod_node_affinity(pod).and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
        let has_node_selector = pod
            .pod()
            .spec
            .as_ref()
            .is_some_and(|s| s.node_selector.is_some());
        if required.is_none() && self.added_node_selector.is_none() && !has_node_selector {
            return (None, Status::skip());
        }
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState {
                required: RequiredNodeAffinity::from_pod(pod.pod()),
                summary: describe_required(pod),
            },
        );
        let Some(required) = required.filter(|r| !r.node_selector_terms.is_empty()) else {
            return (None, Status::success());
        };
        // Union over terms of the intersection of each term's metadata.name In values; any
        // term without one means every node is possible.
        let mut names: Option<BTreeSet<String>> = None;
        for t in &required.node_selector_terms {
            let mut term_names: Option<BTreeSet<String>> = None;
            for r in t.match_fields.iter().flatten() {
                if r.key == "metadata.name" && r.operator == "In" {
                    let s: BTreeSet<String> = r.values.iter().flatten().cloned().collect();
                    term_names = Some(match term_names {
                        None => s,
                        Some(prev) => prev.intersection(&s).cloned().collect(),
                    });
                }
            }
            let Some(term_names) = term_names else {
                return (None, Status::success());
            };
            names.get_or_insert_with(BTreeSet::new).extend(term_names);
        }
        match names {
            Some(n) if n.is_empty() => (None, Status::unresolvable(ERR_REASON_CONFLICT)),
            Some(n) => (
                Some(PreFilterResult {
                    node_names: Some(n),
                }),
                Status::success(),
            ),
            None => (None, Status::success()),
        }
    }
}

impl FilterPlugin for NodeAffinity {
    fn filter(&self, _h: &Handle, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if let Some(sel) = &self.added_node_selector
            && !sel.matches(node.name(), node.labels())
        {
            return Status::unresolvable(ERR_REASON_ENFORCED);
        }
        let matched = match state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) {
            Ok(s) => s.required.matches(node.name(), node.labels()),
            Err(_) => RequiredNodeAffinity::from_pod(pod.pod()).matches(node.name(), node.labels()),
        };
        if matched {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON_POD)
        }
    }
}

impl PreScorePlugin for NodeAffinity {
    fn pre_score(
        &self,
        _h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[&NodeInfo],
    ) -> Status {
        let preferred = match preferred_terms(pod).map(|t| PreferredSchedulingTerms::new(t)) {
            None => None,
            Some(Ok(t)) => Some(t),
            Some(Err(e)) => return Status::error(e),
        };
        if preferred.is_none() && self.added_pref_sched_terms.is_none() {
            return Status::skip();
        }
        let summary = preferred_terms(pod)
            .into_iter()
            .flatten()
            .map(|t| {
                let exprs: Vec<String> = t
                    .preference
                    .match_expressions
                    .iter()
                    .flatten()
                    .map(|e| {
                        format!(
                            "{} {} {:?}",
                            e.key,
                            e.operator,
                            e.values.as_deref().unwrap_or(&[])
                        )
                    })
                    .collect();
                format!("weight {}: {}", t.weight, exprs.join(" AND "))
            })
            .collect();
        state.write(PRE_SCORE_STATE_KEY, PreScoreState { preferred, summary });
        Status::success()
    }
}

impl ScorePlugin for NodeAffinity {
    fn score(
        &self,
        _h: &Handle,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> (i64, Status) {
        let mut count = 0;
        if let Some(t) = &self.added_pref_sched_terms {
            count += t.score(node.name(), node.labels());
        }
        match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Ok(s) => {
                if let Some(p) = &s.preferred {
                    count += p.score(node.name(), node.labels());
                }
            }
            Err(_) => match preferred_terms(pod).map(|t| PreferredSchedulingTerms::new(t)) {
                Some(Ok(p)) => count += p.score(node.name(), node.labels()),
                Some(Err(e)) => return (0, Status::error(e)),
                None => {}
            },
        }
        (count, Status::success())
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
        default_normalize(scores, false);
        Status::success()
    }
}

// ---- queueing hints (EnqueueExtensions) ----

fn required_affinity_errors(pod: &Pod) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|ns| NodeSelectorMatcher::new(ns).parse_errors())
        .unwrap_or_default()
}

fn node_selector_matches(pod: &Pod, node: &Node) -> bool {
    let labels = node.metadata.labels.as_ref();
    pod.spec
        .as_ref()
        .and_then(|s| s.node_selector.as_ref())
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// NodeAffinity's EnqueueExtensions; `added` is the profile's enforced addedAffinity.
fn queueing_hints(added: Option<NodeSelectorMatcher>) -> Vec<ClusterEventWithHint> {
    vec![ClusterEventWithHint::with_hint(
        R::Node,
        A::ADD | A::UPDATE_NODE_LABEL,
        move |_, pod, old, new| {
            let (original, modified) = as_nodes(old, new)?;
            let modified = required(modified, "node")?;
            if added.as_ref().is_some_and(|m| !m.matches_node(modified)) {
                return skip_or_queue(false);
            }
            let required = RequiredNodeAffinity::from_pod(pod.pod());
            if !required.matches_node(modified) {
                // Terms that did not parse count as an error (Queue) once the nodeSelector
                // matched and no other term did.
                let errs = required_affinity_errors(pod.pod());
                if !errs.is_empty() && node_selector_matches(pod.pod(), modified) {
                    return Err(errs.join(", "));
                }
                return skip_or_queue(false);
            }
            // Added and matching, or updated from not matching to matching.
            skip_or_queue(original.is_none_or(|o| !required.matches_node(o)))
        },
    )]
}

/// Built from `NodeAffinityArgs` (its `addedAffinity`); NodeAffinity words a wrong args
/// type its own way.
pub fn factory(
    ctx: &crate::framework::factory::FactoryContext,
) -> crate::framework::factory::Built {
    use crate::framework::factory::BuildError;
    let args: crate::config::NodeAffinityArgs = ctx.args().map_err(|e| match e {
        BuildError::WrongArgs { want, got } => {
            BuildError::Plugin(format!("args are not of type {want}, got {got}"))
        }
        e => e,
    })?;
    Ok(std::sync::Arc::new(NodeAffinity::new(
        args.added_affinity.as_ref(),
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{Snapshot, listers::Listers};
    use crate::plugins::testing::{Env, node, pod};
    use serde_json::json;

    fn run_pre_filter(
        pl: &NodeAffinity,
        p: &PodInfo,
    ) -> (Option<PreFilterResult>, Status, CycleState) {
        let env = Env::new(Snapshot::default(), Listers::default());
        let mut state = CycleState::new();
        let (r, s) = pl.pre_filter(&env.handle(), &mut state, p);
        (r, s, state)
    }

    #[test]
    fn skip_without_any_node_constraint() {
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
        assert!(run_pre_filter(&NodeAffinity::default(), &p).1.is_skip());
        let empty_selector =
            pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [], "nodeSelector": {}}}));
        assert!(
            run_pre_filter(&NodeAffinity::default(), &empty_selector)
                .1
                .is_success()
        );
    }

    #[test]
    fn metadata_name_terms_narrow_nodes() {
        let p = pod(
            json!({"metadata": {"name": "p"}, "spec": {"containers": [], "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]}]}}}}}),
        );
        let (r, s, state) = run_pre_filter(&NodeAffinity::default(), &p);
        assert!(s.is_success());
        assert_eq!(
            r.unwrap()
                .node_names
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        let env = Env::new(Snapshot::default(), Listers::default());
        let n = node(json!({"metadata": {"name": "z"}}));
        assert_eq!(
            NodeAffinity::default()
                .filter(&env.handle(), &state, &p, &n)
                .message(),
            ERR_REASON_POD
        );
    }

    #[test]
    fn conflicting_terms() {
        let p = pod(
            json!({"metadata": {"name": "p"}, "spec": {"containers": [], "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]},
                                 {"key": "metadata.name", "operator": "In", "values": ["b"]}]}]}}}}}),
        );
        assert_eq!(
            run_pre_filter(&NodeAffinity::default(), &p).1.message(),
            ERR_REASON_CONFLICT
        );
    }

    #[test]
    fn added_affinity_enforced_and_scored() {
        let added: NodeAffinitySpec = serde_json::from_value(json!({
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "os", "operator": "In", "values": ["linux"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}))
        .unwrap();
        let pl = NodeAffinity::new(Some(&added)).unwrap();
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
        let (_, s, state) = run_pre_filter(&pl, &p);
        assert!(s.is_success());
        let env = Env::new(Snapshot::default(), Listers::default());
        let h = env.handle();
        let win = node(json!({"metadata": {"name": "w", "labels": {"os": "windows"}}}));
        assert_eq!(
            pl.filter(&h, &state, &p, &win).message(),
            ERR_REASON_ENFORCED
        );
        let ssd =
            node(json!({"metadata": {"name": "s", "labels": {"os": "linux", "disk": "ssd"}}}));
        assert!(pl.filter(&h, &state, &p, &ssd).is_success());
        let mut st = CycleState::new();
        assert!(pl.pre_score(&h, &mut st, &p, &[]).is_success());
        assert_eq!(pl.score(&h, &st, &p, &ssd).0, 50);
    }
}
