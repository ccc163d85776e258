//! PreFilter, its AddPod / RemovePod extensions, and Filter: required affinity and
//! anti-affinity, counted per topology pair (topologyKey, node's value).

use std::collections::HashMap;
use std::sync::Arc;

use super::{
    ERR_REASON_AFFINITY_RULES_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, InterPodAffinity, describe_term,
    merge_term_namespaces,
};
use crate::api::labels::{Labels, empty_labels};
use crate::framework::plugin::{
    FilterPlugin, Handle, PreFilterExtensions, PreFilterPlugin, PreFilterResult,
};
use crate::framework::types::AffinityTerm;
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, StateTree, Status};

pub const PRE_FILTER_STATE_KEY: &str = "PreFilterInterPodAffinity";

/// Counts by topology pair, stored as topologyKey → value → count so that lookups by a
/// node's labels need no allocation. Pairs whose count drops to zero are removed, so the
/// map is empty exactly when upstream's is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopologyToMatchedTermCount {
    by_key: HashMap<String, HashMap<String, i64>>,
}

impl TopologyToMatchedTermCount {
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    pub fn get(&self, key: &str, value: &str) -> i64 {
        self.by_key
            .get(key)
            .and_then(|m| m.get(value))
            .copied()
            .unwrap_or(0)
    }

    fn add(&mut self, key: &str, value: &str, delta: i64) {
        let values = match self.by_key.get_mut(key) {
            Some(m) => m,
            None => self.by_key.entry(key.to_string()).or_default(),
        };
        let n = match values.get_mut(value) {
            Some(n) => {
                *n += delta;
                *n
            }
            None => {
                values.insert(value.to_string(), delta);
                delta
            }
        };
        if n == 0 {
            values.remove(value);
            if values.is_empty() {
                self.by_key.remove(key);
            }
        }
    }

    /// Adds `delta` at (key, the node's value for key), if the node has that label.
    pub fn update(&mut self, node_labels: &Labels, key: &str, delta: i64) {
        if let Some(value) = node_labels.get(key) {
            self.add(key, value, delta);
        }
    }

    /// Whether any (key, value) of the node's labels has a positive count.
    fn any_positive_on(&self, node_labels: &Labels) -> bool {
        self.by_key.iter().any(|(key, values)| {
            node_labels
                .get(key)
                .and_then(|v| values.get(v))
                .is_some_and(|&n| n > 0)
        })
    }

    /// `key=value: count`, sorted.
    pub fn sorted_pairs(&self) -> Vec<String> {
        let mut v: Vec<(&String, &String, i64)> = self
            .by_key
            .iter()
            .flat_map(|(k, m)| m.iter().map(move |(v, n)| (k, v, *n)))
            .collect();
        v.sort();
        v.into_iter()
            .map(|(k, val, n)| format!("{k}={val}: {n}"))
            .collect()
    }

    /// For each term if `pod` matches all of them (and there is at least one).
    fn update_with_affinity_terms(
        &mut self,
        terms: &[AffinityTerm],
        pod: &PodInfo,
        node_labels: &Labels,
        delta: i64,
    ) {
        if pod_matches_all_affinity_terms(terms, pod) {
            for t in terms {
                self.update(node_labels, &t.topology_key, delta);
            }
        }
    }

    /// For each term that `pod` (with its namespace's labels) matches.
    fn update_with_anti_affinity_terms(
        &mut self,
        terms: &[AffinityTerm],
        pod: &PodInfo,
        ns_labels: &Labels,
        node_labels: &Labels,
        delta: i64,
    ) {
        for t in terms {
            if t.matches(pod, ns_labels) {
                self.update(node_labels, &t.topology_key, delta);
            }
        }
    }
}

/// Whether `pod` matches every one of the incoming pod's terms (false for no terms). The
/// incoming pod's namespace selectors were resolved at PreFilter, so no namespace labels.
pub fn pod_matches_all_affinity_terms(terms: &[AffinityTerm], pod: &PodInfo) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod, empty_labels()))
}

/// The incoming pod's required terms, with namespace selectors resolved.
#[derive(Debug, Clone)]
pub struct IncomingRequiredTerms {
    pub affinity: Vec<AffinityTerm>,
    pub anti_affinity: Vec<AffinityTerm>,
    /// The pod matches all its own affinity terms (it may start a group).
    pub matches_own_affinity: bool,
}

#[derive(Debug, Clone)]
pub struct PreFilterState {
    /// Existing pods whose required anti-affinity terms match the incoming pod.
    pub existing_anti_affinity_counts: TopologyToMatchedTermCount,
    /// Existing pods matching all the incoming pod's required affinity terms.
    pub affinity_counts: TopologyToMatchedTermCount,
    /// Existing pods matching the incoming pod's required anti-affinity terms.
    pub anti_affinity_counts: TopologyToMatchedTermCount,
    pub terms: Arc<IncomingRequiredTerms>,
    /// The incoming pod's namespace labels.
    pub namespace_labels: Arc<Labels>,
}

impl PreFilterState {
    /// Accounts for `p` being added (`delta` 1) to or removed (-1) from `node`.
    /// `incoming` is the pod being scheduled.
    fn update_with_pod(&mut self, incoming: &PodInfo, p: &PodInfo, node: &NodeInfo, delta: i64) {
        let labels = node.labels();
        self.existing_anti_affinity_counts
            .update_with_anti_affinity_terms(
                &p.required_anti_affinity_terms,
                incoming,
                &self.namespace_labels,
                labels,
                delta,
            );
        self.affinity_counts
            .update_with_affinity_terms(&self.terms.affinity, p, labels, delta);
        self.anti_affinity_counts.update_with_anti_affinity_terms(
            &self.terms.anti_affinity,
            p,
            empty_labels(),
            labels,
            delta,
        );
    }
}

impl RenderState for PreFilterState {
    fn render(&self) -> StateTree {
        let terms = |ts: &[AffinityTerm]| ts.iter().map(describe_term).collect::<Vec<_>>();
        let mut ns_labels: Vec<String> = self
            .namespace_labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        ns_labels.sort();
        StateTree::node(
            "preFilterState",
            vec![
                StateTree::list(
                    "existingAntiAffinityCounts",
                    self.existing_anti_affinity_counts.sorted_pairs(),
                ),
                StateTree::list("affinityCounts", self.affinity_counts.sorted_pairs()),
                StateTree::list(
                    "antiAffinityCounts",
                    self.anti_affinity_counts.sorted_pairs(),
                ),
                StateTree::list("requiredAffinityTerms", terms(&self.terms.affinity)),
                StateTree::list(
                    "requiredAntiAffinityTerms",
                    terms(&self.terms.anti_affinity),
                ),
                StateTree::kv("podMatchesOwnAffinity", self.terms.matches_own_affinity),
                StateTree::list("namespaceLabels", ns_labels),
            ],
        )
    }
}

fn read_error(e: impl std::fmt::Display) -> Status {
    Status::error(format!(
        "error reading {PRE_FILTER_STATE_KEY:?} from cycleState: {e}"
    ))
}

impl InterPodAffinity {
    /// Counts, over the nodes with pods that have required anti-affinity, the existing
    /// pods' terms that match the incoming pod.
    fn existing_anti_affinity_counts(
        h: &Handle,
        pod: &PodInfo,
        ns_labels: &Labels,
    ) -> TopologyToMatchedTermCount {
        let mut counts = TopologyToMatchedTermCount::default();
        for node in h.snapshot.have_pods_with_required_anti_affinity() {
            let labels = node.labels();
            for existing in &node.pods_with_required_anti_affinity {
                counts.update_with_anti_affinity_terms(
                    &existing.required_anti_affinity_terms,
                    pod,
                    ns_labels,
                    labels,
                    1,
                );
            }
        }
        counts
    }

    /// Counts, over every node, the existing pods matching the incoming pod's required
    /// affinity (all terms) and anti-affinity (each term).
    fn incoming_affinity_anti_affinity_counts(
        h: &Handle,
        terms: &IncomingRequiredTerms,
    ) -> (TopologyToMatchedTermCount, TopologyToMatchedTermCount) {
        let mut affinity = TopologyToMatchedTermCount::default();
        let mut anti_affinity = TopologyToMatchedTermCount::default();
        if terms.affinity.is_empty() && terms.anti_affinity.is_empty() {
            return (affinity, anti_affinity);
        }
        for node in h.snapshot.list() {
            let labels = node.labels();
            for existing in &node.pods {
                affinity.update_with_affinity_terms(&terms.affinity, existing, labels, 1);
                anti_affinity.update_with_anti_affinity_terms(
                    &terms.anti_affinity,
                    existing,
                    empty_labels(),
                    labels,
                    1,
                );
            }
        }
        (affinity, anti_affinity)
    }
}

impl PreFilterPlugin for InterPodAffinity {
    fn pre_filter(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (Option<PreFilterResult>, Status) {
        if let Some(e) = &pod.parse_error {
            return (None, Status::unresolvable(format!("parsing pod: {e}")));
        }
        let mut affinity = pod.required_affinity_terms.clone();
        for t in &mut affinity {
            merge_term_namespaces(t, h.listers);
        }
        let mut anti_affinity = pod.required_anti_affinity_terms.clone();
        for t in &mut anti_affinity {
            merge_term_namespaces(t, h.listers);
        }
        let matches_own_affinity = pod_matches_all_affinity_terms(&affinity, pod);
        let terms = IncomingRequiredTerms {
            affinity,
            anti_affinity,
            matches_own_affinity,
        };
        let namespace_labels = h.listers.namespace_labels(&pod.namespace).clone();
        let existing = Self::existing_anti_affinity_counts(h, pod, &namespace_labels);
        let (affinity_counts, anti_affinity_counts) =
            Self::incoming_affinity_anti_affinity_counts(h, &terms);
        if existing.is_empty() && terms.affinity.is_empty() && terms.anti_affinity.is_empty() {
            return (None, Status::skip());
        }
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState {
                existing_anti_affinity_counts: existing,
                affinity_counts,
                anti_affinity_counts,
                terms: Arc::new(terms),
                namespace_labels: Arc::new(namespace_labels),
            },
        );
        (None, Status::success())
    }

    fn extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for InterPodAffinity {
    fn add_pod(
        &self,
        _h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        added: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        match state.read_mut::<PreFilterState>(PRE_FILTER_STATE_KEY) {
            Ok(s) => {
                s.update_with_pod(pod, added, node, 1);
                Status::success()
            }
            Err(e) => read_error(e),
        }
    }

    fn remove_pod(
        &self,
        _h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        removed: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        match state.read_mut::<PreFilterState>(PRE_FILTER_STATE_KEY) {
            Ok(s) => {
                s.update_with_pod(pod, removed, node, -1);
                Status::success()
            }
            Err(e) => read_error(e),
        }
    }
}

/// The incoming pod's required affinity: every term's key must be on the node and every
/// term's pair must have a matching pod, except for the first pod of a group (no pod
/// matches anywhere and the pod matches its own terms).
fn satisfy_pod_affinity(s: &PreFilterState, labels: &Labels) -> bool {
    let mut pods_exist = true;
    for t in &s.terms.affinity {
        let Some(value) = labels.get(&t.topology_key) else {
            return false;
        };
        if s.affinity_counts.get(&t.topology_key, value) <= 0 {
            pods_exist = false;
        }
    }
    pods_exist || (s.affinity_counts.is_empty() && s.terms.matches_own_affinity)
}

/// The incoming pod's required anti-affinity: no matching pod in the node's domain of
/// any term whose key the node has.
fn satisfy_pod_anti_affinity(s: &PreFilterState, labels: &Labels) -> bool {
    if s.anti_affinity_counts.is_empty() {
        return true;
    }
    !s.terms.anti_affinity.iter().any(|t| {
        labels
            .get(&t.topology_key)
            .is_some_and(|v| s.anti_affinity_counts.get(&t.topology_key, v) > 0)
    })
}

/// Existing pods' required anti-affinity: none of the node's (label, value) pairs may
/// hold a pod whose term matches the incoming pod.
fn satisfy_existing_pods_anti_affinity(s: &PreFilterState, labels: &Labels) -> bool {
    s.existing_anti_affinity_counts.is_empty()
        || !s.existing_anti_affinity_counts.any_positive_on(labels)
}

impl FilterPlugin for InterPodAffinity {
    fn filter(&self, _h: &Handle, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let s = match state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) {
            Ok(s) => s,
            Err(e) => return read_error(e),
        };
        let labels = node.labels();
        if !satisfy_pod_affinity(s, labels) {
            return Status::unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH);
        }
        if !satisfy_pod_anti_affinity(s, labels) {
            return Status::unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH);
        }
        if !satisfy_existing_pods_anti_affinity(s, labels) {
            return Status::unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
        }
        Status::success()
    }
}
