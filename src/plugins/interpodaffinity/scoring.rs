//! PreScore, Score and NormalizeScore: preferred terms of the incoming pod, and the
//! required affinity and preferred terms of existing pods, summed per topology pair.

use std::collections::HashMap;
use std::sync::Arc;

use super::{InterPodAffinity, describe_term, merge_term_namespaces};
use crate::api::labels::{Labels, empty_labels};
use crate::framework::plugin::{Handle, MAX_NODE_SCORE, NodeScore, PreScorePlugin, ScorePlugin};
use crate::framework::types::{AffinityTerm, WeightedAffinityTerm};
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, StateTree, Status};

pub const PRE_SCORE_STATE_KEY: &str = "PreScoreInterPodAffinity";

/// topologyKey → topology value → score.
type ScoreMap = HashMap<String, HashMap<String, i64>>;

#[derive(Debug, Clone)]
pub struct PreScoreState {
    pub topology_score: Arc<ScoreMap>,
    /// The incoming pod's preferred terms, namespace selectors resolved (for display).
    pub preferred_affinity_terms: Arc<Vec<WeightedAffinityTerm>>,
    pub preferred_anti_affinity_terms: Arc<Vec<WeightedAffinityTerm>>,
}

impl RenderState for PreScoreState {
    fn render(&self) -> StateTree {
        let mut pairs: Vec<(&String, &String, i64)> = self
            .topology_score
            .iter()
            .flat_map(|(k, m)| m.iter().map(move |(v, n)| (k, v, *n)))
            .collect();
        pairs.sort();
        let terms = |ts: &[WeightedAffinityTerm]| {
            ts.iter()
                .map(|t| format!("weight {}: {}", t.weight, describe_term(&t.term)))
                .collect::<Vec<_>>()
        };
        StateTree::node(
            "preScoreState",
            vec![
                StateTree::list(
                    "topologyScore",
                    pairs.into_iter().map(|(k, v, n)| format!("{k}={v}: {n}")),
                ),
                StateTree::list(
                    "preferredAffinityTerms",
                    terms(&self.preferred_affinity_terms),
                ),
                StateTree::list(
                    "preferredAntiAffinityTerms",
                    terms(&self.preferred_anti_affinity_terms),
                ),
            ],
        )
    }
}

/// Adds `weight * multiplier` (32-bit, as upstream) at (term key, node's value) when
/// `pod` matches the term and the node has the key.
fn process_term(
    m: &mut ScoreMap,
    term: &AffinityTerm,
    weight: i32,
    pod: &PodInfo,
    ns_labels: &Labels,
    node_labels: &Labels,
    multiplier: i32,
) {
    if !term.matches(pod, ns_labels) {
        return;
    }
    let Some(value) = node_labels.get(&term.topology_key) else {
        return;
    };
    let values = match m.get_mut(&term.topology_key) {
        Some(v) => v,
        None => m.entry(term.topology_key.clone()).or_default(),
    };
    let add = i64::from(weight.wrapping_mul(multiplier));
    match values.get_mut(value) {
        Some(n) => *n = n.wrapping_add(add),
        None => {
            values.insert(value.clone(), add);
        }
    }
}

fn process_terms(
    m: &mut ScoreMap,
    terms: &[WeightedAffinityTerm],
    pod: &PodInfo,
    ns_labels: &Labels,
    node_labels: &Labels,
    multiplier: i32,
) {
    for t in terms {
        process_term(
            m,
            &t.term,
            t.weight,
            pod,
            ns_labels,
            node_labels,
            multiplier,
        );
    }
}

fn has_preferred_constraints(pod: &PodInfo) -> bool {
    let Some(a) = pod.pod.spec.as_ref().and_then(|s| s.affinity.as_ref()) else {
        return false;
    };
    let affinity = a.pod_affinity.as_ref().is_some_and(|pa| {
        pa.preferred_during_scheduling_ignored_during_execution
            .as_ref()
            .is_some_and(|t| !t.is_empty())
    });
    let anti = a.pod_anti_affinity.as_ref().is_some_and(|pa| {
        pa.preferred_during_scheduling_ignored_during_execution
            .as_ref()
            .is_some_and(|t| !t.is_empty())
    });
    affinity || anti
}

struct Incoming<'a> {
    pod: &'a PodInfo,
    preferred_affinity: &'a [WeightedAffinityTerm],
    preferred_anti_affinity: &'a [WeightedAffinityTerm],
    ns_labels: &'a Labels,
}

impl InterPodAffinity {
    fn process_existing_pod(
        &self,
        m: &mut ScoreMap,
        incoming: &Incoming,
        existing: &PodInfo,
        node_labels: &Labels,
    ) {
        if node_labels.is_empty() {
            return;
        }
        // The incoming pod's preferred terms (namespace selectors already resolved).
        process_terms(
            m,
            incoming.preferred_affinity,
            existing,
            empty_labels(),
            node_labels,
            1,
        );
        process_terms(
            m,
            incoming.preferred_anti_affinity,
            existing,
            empty_labels(),
            node_labels,
            -1,
        );
        // The existing pod's terms, matched against the incoming pod and its namespace's
        // labels.
        if self.hard_pod_affinity_weight > 0 {
            for t in &existing.required_affinity_terms {
                process_term(
                    m,
                    t,
                    self.hard_pod_affinity_weight,
                    incoming.pod,
                    incoming.ns_labels,
                    node_labels,
                    1,
                );
            }
        }
        process_terms(
            m,
            &existing.preferred_affinity_terms,
            incoming.pod,
            incoming.ns_labels,
            node_labels,
            1,
        );
        process_terms(
            m,
            &existing.preferred_anti_affinity_terms,
            incoming.pod,
            incoming.ns_labels,
            node_labels,
            -1,
        );
    }
}

impl PreScorePlugin for InterPodAffinity {
    fn pre_score(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[&NodeInfo],
    ) -> Status {
        let has_constraints = has_preferred_constraints(pod);
        if self.ignore_preferred_terms_of_existing_pods && !has_constraints {
            return Status::skip();
        }
        if let Some(e) = &pod.parse_error {
            return Status::error(format!("failed to parse pod: {e}"));
        }
        let mut preferred_affinity = pod.preferred_affinity_terms.clone();
        for t in &mut preferred_affinity {
            merge_term_namespaces(&mut t.term, h.listers);
        }
        let mut preferred_anti_affinity = pod.preferred_anti_affinity_terms.clone();
        for t in &mut preferred_anti_affinity {
            merge_term_namespaces(&mut t.term, h.listers);
        }
        let ns_labels = h.listers.namespace_labels(&pod.namespace);
        let incoming = Incoming {
            pod,
            preferred_affinity: &preferred_affinity,
            preferred_anti_affinity: &preferred_anti_affinity,
            ns_labels,
        };
        let mut m = ScoreMap::new();
        // Without preferred terms of its own, only pods with affinity can contribute.
        if has_constraints {
            for node in h.snapshot.list() {
                for existing in &node.pods {
                    self.process_existing_pod(&mut m, &incoming, existing, node.labels());
                }
            }
        } else {
            for node in h.snapshot.have_pods_with_affinity() {
                for existing in &node.pods_with_affinity {
                    self.process_existing_pod(&mut m, &incoming, existing, node.labels());
                }
            }
        }
        if m.is_empty() {
            return Status::skip();
        }
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                topology_score: Arc::new(m),
                preferred_affinity_terms: Arc::new(preferred_affinity),
                preferred_anti_affinity_terms: Arc::new(preferred_anti_affinity),
            },
        );
        Status::success()
    }
}

fn get_pre_score_state(state: &CycleState) -> Result<&PreScoreState, Status> {
    state
        .read::<PreScoreState>(PRE_SCORE_STATE_KEY)
        .map_err(|e| {
            Status::error(format!(
                "failed to read {PRE_SCORE_STATE_KEY:?} from cycleState: {e}"
            ))
        })
}

impl ScorePlugin for InterPodAffinity {
    /// The sum of the pair scores of the node's values; negative for anti-affinity.
    fn score(
        &self,
        _h: &Handle,
        state: &CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
    ) -> (i64, Status) {
        let s = match get_pre_score_state(state) {
            Ok(s) => s,
            Err(e) => return (0, e),
        };
        let labels = node.labels();
        let mut score = 0i64;
        for (key, values) in s.topology_score.iter() {
            if let Some(v) = labels.get(key) {
                score = score.wrapping_add(values.get(v).copied().unwrap_or(0));
            }
        }
        (score, Status::success())
    }

    fn has_normalize(&self) -> bool {
        true
    }

    /// Scales to [0, 100] between the lowest and highest score, in floating point,
    /// truncated.
    fn normalize_score(
        &self,
        _h: &Handle,
        state: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore],
    ) -> Status {
        let s = match get_pre_score_state(state) {
            Ok(s) => s,
            Err(e) => return e,
        };
        if s.topology_score.is_empty() {
            return Status::success();
        }
        let mut min = i64::MAX;
        let mut max = i64::MIN;
        for ns in scores.iter() {
            max = max.max(ns.score);
            min = min.min(ns.score);
        }
        let diff = max.wrapping_sub(min);
        for ns in scores.iter_mut() {
            let mut f = 0.0f64;
            if diff > 0 {
                f = MAX_NODE_SCORE as f64 * (ns.score.wrapping_sub(min) as f64 / diff as f64);
            }
            ns.score = f as i64;
        }
        Status::success()
    }
}
