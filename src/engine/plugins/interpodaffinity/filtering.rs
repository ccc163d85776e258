//! PreFilter, its AddPod / RemovePod extensions, and Filter: required affinity and
//! anti-affinity, counted per topology pair (topologyKey, node's value).

use std::sync::Arc;

use compact_str::CompactString;
use rustc_hash::FxHashMap;

use super::{
    ERR_REASON_AFFINITY_RULES_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, InterPodAffinity, describe_term,
    merge_term_namespaces,
};
use crate::api::labels::{Labels, empty_labels};
use crate::framework::plugin::{
    FilterPlugin, Handle, PreFilterExtensions, PreFilterPlugin, PreFilterResult,
};
use crate::framework::snapshot_index::{NodeCounts, TopologyIndex};
use crate::framework::types::AffinityTerm;
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, Snapshot, StateTree, Status};

pub const PRE_FILTER_STATE_KEY: &str = "PreFilterInterPodAffinity";

/// The counts of one topology key by value: values the snapshot's nodes have are counted
/// in an array by value id, any other value (a node outside the snapshot) in a map.
#[derive(Debug, Clone, Default)]
struct ValueCounts {
    topology: Option<Arc<TopologyIndex>>,
    /// By value id of `topology`.
    dense: Vec<i64>,
    other: FxHashMap<CompactString, i64>,
    /// Values with a nonzero count.
    nonzero: usize,
}

impl ValueCounts {
    fn with_topology(topology: Arc<TopologyIndex>) -> ValueCounts {
        ValueCounts {
            dense: vec![0; topology.len()],
            topology: Some(topology),
            other: FxHashMap::default(),
            nonzero: 0,
        }
    }

    fn id(&self, value: &str) -> Option<usize> {
        self.topology.as_ref().and_then(|t| t.id(value))
    }

    fn get(&self, value: &str) -> i64 {
        match self.id(value) {
            Some(id) => self.dense.get(id).copied().unwrap_or(0),
            None => self.other.get(value).copied().unwrap_or(0),
        }
    }

    /// Adds `delta` at `value`, dropping it at zero.
    fn add(&mut self, value: &str, delta: i64) {
        let (before, after) = match self.id(value).and_then(|id| self.dense.get_mut(id)) {
            Some(n) => {
                let before = *n;
                *n += delta;
                (before, *n)
            }
            None => {
                let before = self.other.get(value).copied().unwrap_or(0);
                let after = before + delta;
                if after == 0 {
                    self.other.remove(value);
                } else {
                    self.other.insert(CompactString::from(value), after);
                }
                (before, after)
            }
        };
        match (before == 0, after == 0) {
            (true, false) => self.nonzero += 1,
            (false, true) => self.nonzero -= 1,
            _ => {}
        }
    }

    /// Adds the pods (> 0) at each snapshot position to the value of the node there (if
    /// it has the key); positions refer to the snapshot `topology` was built from.
    fn add_at_positions(&mut self, nodes: &NodeCounts) {
        let Some(t) = &self.topology else {
            return;
        };
        for (&pos, &n) in nodes {
            if let Some(slot) = t
                .node_value(pos as usize)
                .and_then(|id| self.dense.get_mut(id))
            {
                *slot += i64::from(n);
            }
        }
    }

    /// The count at the value `node` has for `key` (this counter's key); `None` when the
    /// node lacks the key. The index tells the value's id when it knows the node.
    fn count_on(&self, key: &str, snapshot: &Snapshot, node: &NodeInfo) -> Option<i64> {
        let known = self
            .topology
            .as_ref()
            .and_then(|t| t.value_of(snapshot, node));
        match known {
            Some(id) => id.map(|id| self.dense.get(id).copied().unwrap_or(0)),
            None => node.labels().get(key).map(|v| self.get(v)),
        }
    }

    fn recount_nonzero(&mut self) {
        self.nonzero = self.dense.iter().filter(|&&n| n != 0).count() + self.other.len();
    }

    fn pairs(&self) -> impl Iterator<Item = (&str, i64)> {
        let dense = self.topology.iter().flat_map(move |t| {
            self.dense
                .iter()
                .enumerate()
                .filter(|(_, n)| **n != 0)
                .map(move |(id, &n)| (t.value(id), n))
        });
        dense.chain(self.other.iter().map(|(v, &n)| (v.as_str(), n)))
    }
}

/// Counts by topology pair, stored as topologyKey → value → count so that lookups by a
/// node's labels need no allocation. Pairs whose count drops to zero are removed, so the
/// map is empty exactly when upstream's is.
#[derive(Debug, Clone, Default)]
pub struct TopologyToMatchedTermCount {
    /// Keys with at least one nonzero pair.
    by_key: FxHashMap<String, ValueCounts>,
}

impl PartialEq for TopologyToMatchedTermCount {
    fn eq(&self, other: &Self) -> bool {
        self.sorted_triples() == other.sorted_triples()
    }
}

impl Eq for TopologyToMatchedTermCount {}

impl TopologyToMatchedTermCount {
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    pub fn get(&self, key: &str, value: &str) -> i64 {
        self.by_key.get(key).map_or(0, |m| m.get(value))
    }

    fn add(&mut self, key: &str, value: &str, delta: i64) {
        let values = match self.by_key.get_mut(key) {
            Some(m) => m,
            None => self.by_key.entry(key.to_string()).or_default(),
        };
        values.add(value, delta);
        if values.nonzero == 0 {
            self.by_key.remove(key);
        }
    }

    /// Adds `delta` at (key, the node's value for key), if the node has that label.
    pub fn update(&mut self, node_labels: &Labels, key: &str, delta: i64) {
        if let Some(value) = node_labels.get(key) {
            self.add(key, value, delta);
        }
    }

    /// The count at (key, the node's value for key); `None` when the node lacks the key.
    fn count_on(&self, key: &str, snapshot: &Snapshot, node: &NodeInfo) -> Option<i64> {
        match self.by_key.get(key) {
            Some(values) => values.count_on(key, snapshot, node),
            None => node.labels().get(key).map(|_| 0),
        }
    }

    /// Whether any (key, the node's value for key) has a positive count.
    fn any_positive_on_node(&self, snapshot: &Snapshot, node: &NodeInfo) -> bool {
        self.by_key
            .iter()
            .any(|(key, values)| values.count_on(key, snapshot, node).is_some_and(|n| n > 0))
    }

    /// Whether any (key, value) of the node's labels has a positive count.
    #[cfg(test)]
    fn any_positive_on(&self, node_labels: &Labels) -> bool {
        self.by_key.iter().any(|(key, values)| {
            node_labels
                .get(key)
                .is_some_and(|v| values.get(v.as_str()) > 0)
        })
    }

    fn sorted_triples(&self) -> Vec<(&str, &str, i64)> {
        let mut v: Vec<(&str, &str, i64)> = self
            .by_key
            .iter()
            .flat_map(|(k, m)| m.pairs().map(move |(v, n)| (k.as_str(), v, n)))
            .collect();
        v.sort();
        v
    }

    /// `key=value: count`, sorted.
    pub fn sorted_pairs(&self) -> Vec<String> {
        self.sorted_triples()
            .into_iter()
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

/// Builds counts from the snapshot's pod index: groups of pods (or of equal terms) with
/// their number per node, added to the pairs of those nodes, all increments positive.
struct CountsBuilder<'a> {
    snapshot: &'a Snapshot,
    keys: Vec<(&'a str, ValueCounts)>,
}

impl<'a> CountsBuilder<'a> {
    fn new(snapshot: &'a Snapshot) -> CountsBuilder<'a> {
        CountsBuilder {
            snapshot,
            keys: Vec::new(),
        }
    }

    /// Adds, for every node in `nodes`, its count at (key, the node's value for key), if
    /// the node has that label.
    fn add(&mut self, key: &'a str, nodes: &NodeCounts) {
        let pos = match self.keys.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                let t = self.snapshot.topology(key);
                self.keys.push((key, ValueCounts::with_topology(t)));
                self.keys.len() - 1
            }
        };
        if let Some((_, values)) = self.keys.get_mut(pos) {
            values.add_at_positions(nodes);
        }
    }

    fn build(self) -> TopologyToMatchedTermCount {
        let by_key = self
            .keys
            .into_iter()
            .filter_map(|(k, mut v)| {
                v.recount_nonzero();
                (v.nonzero > 0).then(|| (k.to_string(), v))
            })
            .collect();
        TopologyToMatchedTermCount { by_key }
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
    /// Counts the existing pods' required anti-affinity terms that match the incoming
    /// pod, per topology pair of the nodes holding them (equal terms matched once).
    fn existing_anti_affinity_counts(
        h: &Handle,
        pod: &PodInfo,
        ns_labels: &Labels,
    ) -> TopologyToMatchedTermCount {
        let index = h.snapshot.pod_index();
        let mut counts = CountsBuilder::new(h.snapshot);
        for g in index.anti_affinity_terms() {
            if g.term.matches(pod, ns_labels) {
                counts.add(&g.term.topology_key, &g.nodes);
            }
        }
        counts.build()
    }

    /// Counts, over every node, the existing pods matching the incoming pod's required
    /// affinity (all terms) and anti-affinity (each term); pods with the same namespace
    /// and labels are matched once.
    fn incoming_affinity_anti_affinity_counts(
        h: &Handle,
        terms: &IncomingRequiredTerms,
    ) -> (TopologyToMatchedTermCount, TopologyToMatchedTermCount) {
        let mut affinity = CountsBuilder::new(h.snapshot);
        let mut anti_affinity = CountsBuilder::new(h.snapshot);
        if terms.affinity.is_empty() && terms.anti_affinity.is_empty() {
            return (affinity.build(), anti_affinity.build());
        }
        let groups = h.snapshot.pod_groups();
        for g in groups.iter() {
            let matches =
                |t: &AffinityTerm| t.matches_parts(g.namespace(), g.labels(), empty_labels());
            if !terms.affinity.is_empty() && terms.affinity.iter().all(matches) {
                for t in &terms.affinity {
                    affinity.add(&t.topology_key, &g.nodes);
                }
            }
            for t in &terms.anti_affinity {
                if matches(t) {
                    anti_affinity.add(&t.topology_key, &g.nodes);
                }
            }
        }
        (affinity.build(), anti_affinity.build())
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
fn satisfy_pod_affinity(s: &PreFilterState, snapshot: &Snapshot, node: &NodeInfo) -> bool {
    let mut pods_exist = true;
    for t in &s.terms.affinity {
        let Some(n) = s.affinity_counts.count_on(&t.topology_key, snapshot, node) else {
            return false;
        };
        if n <= 0 {
            pods_exist = false;
        }
    }
    pods_exist || (s.affinity_counts.is_empty() && s.terms.matches_own_affinity)
}

/// The incoming pod's required anti-affinity: no matching pod in the node's domain of
/// any term whose key the node has.
fn satisfy_pod_anti_affinity(s: &PreFilterState, snapshot: &Snapshot, node: &NodeInfo) -> bool {
    if s.anti_affinity_counts.is_empty() {
        return true;
    }
    !s.terms.anti_affinity.iter().any(|t| {
        s.anti_affinity_counts
            .count_on(&t.topology_key, snapshot, node)
            .is_some_and(|n| n > 0)
    })
}

/// Existing pods' required anti-affinity: none of the node's (label, value) pairs may
/// hold a pod whose term matches the incoming pod.
fn satisfy_existing_pods_anti_affinity(
    s: &PreFilterState,
    snapshot: &Snapshot,
    node: &NodeInfo,
) -> bool {
    s.existing_anti_affinity_counts.is_empty()
        || !s
            .existing_anti_affinity_counts
            .any_positive_on_node(snapshot, node)
}

impl FilterPlugin for InterPodAffinity {
    fn filter(&self, h: &Handle, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let s = match state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) {
            Ok(s) => s,
            Err(e) => return read_error(e),
        };
        if !satisfy_pod_affinity(s, h.snapshot, node) {
            return Status::unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH);
        }
        if !satisfy_pod_anti_affinity(s, h.snapshot, node) {
            return Status::unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH);
        }
        if !satisfy_existing_pods_anti_affinity(s, h.snapshot, node) {
            return Status::unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::framework::listers::Listers;
    use crate::plugins::conformance_cases::{bound_pod, cluster, labelled_node};
    use crate::plugins::testing::{Env, pod};
    use serde_json::{Value, json};

    use Code::{Success as Ok_, Unschedulable as U, UnschedulableAndUnresolvable as UU};

    /// n1, n2 in zone a; n3 in zone b; n4 without a zone.
    fn nodes() -> Vec<Value> {
        vec![
            labelled_node("n1", json!({"zone": "a", "host": "n1"})),
            labelled_node("n2", json!({"zone": "a", "host": "n2"})),
            labelled_node("n3", json!({"zone": "b", "host": "n3"})),
            labelled_node("n4", json!({"host": "n4"})),
        ]
    }

    fn namespaces() -> Listers {
        let mut l = Listers::default();
        for (name, labels) in [
            ("default", json!({"team": "x"})),
            ("other", json!({"team": "y"})),
        ] {
            l.namespaces.insert(
                name.into(),
                Arc::new(
                    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))
                        .unwrap(),
                ),
            );
        }
        l
    }

    fn term(app: &str, key: &str) -> Value {
        json!({"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key})
    }

    fn incoming(labels: Value, affinity: Value) -> Arc<PodInfo> {
        pod(json!({"metadata": {"name": "in", "labels": labels},
            "spec": {"containers": [], "affinity": affinity}}))
    }

    fn required(kind: &str, terms: Value) -> Value {
        json!({kind: {"requiredDuringSchedulingIgnoredDuringExecution": terms}})
    }

    fn pre_filter(env: &Env, p: &PodInfo) -> (Status, CycleState) {
        let mut state = CycleState::new();
        let (r, s) = InterPodAffinity::default().pre_filter(&env.handle(), &mut state, p);
        assert!(r.is_none());
        (s, state)
    }

    fn verdicts(env: &Env, state: &CycleState, p: &PodInfo) -> Vec<(Code, String)> {
        env.snapshot
            .list()
            .iter()
            .map(|n| {
                let s = InterPodAffinity::default().filter(&env.handle(), state, p, n);
                (s.code(), s.message())
            })
            .collect()
    }

    fn codes(v: &[(Code, String)]) -> Vec<Code> {
        v.iter().map(|(c, _)| *c).collect()
    }

    #[test]
    fn required_affinity_needs_a_matching_pod_in_the_domain() {
        let env = cluster(
            nodes(),
            vec![bound_pod(
                "db",
                "default",
                "n1",
                json!({"app": "db"}),
                json!({}),
            )],
            namespaces(),
        );
        let p = incoming(
            json!({"app": "web"}),
            required("podAffinity", json!([term("db", "zone")])),
        );
        let (s, state) = pre_filter(&env, &p);
        assert!(s.is_success());
        let v = verdicts(&env, &state, &p);
        assert_eq!(codes(&v), [Ok_, Ok_, UU, UU]);
        assert_eq!(
            v[2].1,
            crate::plugins::interpodaffinity::ERR_REASON_AFFINITY_RULES_NOT_MATCH
        );
    }

    #[test]
    fn all_affinity_terms_must_match_the_same_pod() {
        // db on n1 matches the first term only, cache on n3 the second only.
        let env = cluster(
            nodes(),
            vec![
                bound_pod("db", "default", "n1", json!({"app": "db"}), json!({})),
                bound_pod(
                    "c",
                    "default",
                    "n3",
                    json!({"app": "db", "tier": "cache"}),
                    json!({}),
                ),
            ],
            namespaces(),
        );
        let t2 =
            json!({"labelSelector": {"matchLabels": {"tier": "cache"}}, "topologyKey": "host"});
        let p = incoming(
            json!({}),
            required("podAffinity", json!([term("db", "zone"), t2])),
        );
        let (_, state) = pre_filter(&env, &p);
        // Only the cache pod matches both: pairs zone=b and host=n3.
        let st = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY).unwrap();
        assert_eq!(
            st.affinity_counts.sorted_pairs(),
            ["host=n3: 1", "zone=b: 1"]
        );
        assert_eq!(codes(&verdicts(&env, &state, &p)), [UU, UU, Ok_, UU]);
    }

    #[test]
    fn first_pod_of_a_group_may_go_anywhere_with_the_keys() {
        let env = cluster(nodes(), vec![], namespaces());
        let aff = required("podAffinity", json!([term("db", "zone")]));
        let p = incoming(json!({"app": "db"}), aff.clone());
        let (_, state) = pre_filter(&env, &p);
        assert_eq!(codes(&verdicts(&env, &state, &p)), [Ok_, Ok_, Ok_, UU]);
        // A pod that does not match its own terms stays pending.
        let p = incoming(json!({"app": "web"}), aff.clone());
        let (_, state) = pre_filter(&env, &p);
        assert_eq!(codes(&verdicts(&env, &state, &p)), [UU, UU, UU, UU]);
        // Once some pod matches anywhere, the exception is gone.
        let env = cluster(
            nodes(),
            vec![bound_pod(
                "db",
                "default",
                "n3",
                json!({"app": "db"}),
                json!({}),
            )],
            namespaces(),
        );
        let p = incoming(json!({"app": "db"}), aff);
        let (_, state) = pre_filter(&env, &p);
        assert_eq!(codes(&verdicts(&env, &state, &p)), [UU, UU, Ok_, UU]);
    }

    #[test]
    fn required_anti_affinity_of_the_incoming_pod() {
        let env = cluster(
            nodes(),
            vec![
                bound_pod("w", "default", "n1", json!({"app": "web"}), json!({})),
                bound_pod("w2", "other", "n3", json!({"app": "web"}), json!({})),
            ],
            namespaces(),
        );
        let p = incoming(
            json!({"app": "web"}),
            required("podAntiAffinity", json!([term("web", "zone")])),
        );
        let (_, state) = pre_filter(&env, &p);
        let v = verdicts(&env, &state, &p);
        // Only the pod in the incoming pod's namespace counts; n4 has no zone: no conflict.
        assert_eq!(codes(&v), [U, U, Ok_, Ok_]);
        assert_eq!(
            v[0].1,
            crate::plugins::interpodaffinity::ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH
        );
    }

    #[test]
    fn incoming_namespace_selector_is_resolved_through_namespaces() {
        let env = cluster(
            nodes(),
            vec![
                bound_pod("w", "default", "n1", json!({"app": "web"}), json!({})),
                bound_pod("w2", "other", "n3", json!({"app": "web"}), json!({})),
            ],
            namespaces(),
        );
        let mut t = term("web", "zone");
        t["namespaceSelector"] = json!({"matchLabels": {"team": "y"}});
        let p = incoming(json!({}), required("podAntiAffinity", json!([t])));
        let (_, state) = pre_filter(&env, &p);
        assert_eq!(codes(&verdicts(&env, &state, &p)), [Ok_, Ok_, U, Ok_]);
        let mut t = term("web", "zone");
        t["namespaceSelector"] = json!({});
        let p = incoming(json!({}), required("podAntiAffinity", json!([t])));
        let (_, state) = pre_filter(&env, &p);
        assert_eq!(codes(&verdicts(&env, &state, &p)), [U, U, U, Ok_]);
    }

    #[test]
    fn existing_pods_anti_affinity() {
        // The pod on n1 refuses app=web pods in its zone, from namespaces labelled team=x.
        let mut t = term("web", "zone");
        t["namespaceSelector"] = json!({"matchLabels": {"team": "x"}});
        let existing = bound_pod(
            "guard",
            "other",
            "n1",
            json!({"app": "guard"}),
            json!({"affinity": required("podAntiAffinity", json!([t]))}),
        );
        let env = cluster(nodes(), vec![existing], namespaces());
        let p = incoming(json!({"app": "web"}), json!(null));
        let (s, state) = pre_filter(&env, &p);
        assert!(s.is_success());
        let v = verdicts(&env, &state, &p);
        assert_eq!(codes(&v), [U, U, Ok_, Ok_]);
        assert_eq!(
            v[0].1,
            crate::plugins::interpodaffinity::ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH
        );
        // A pod in a namespace the selector does not pick, or with other labels: Skip.
        let other = pod(
            json!({"metadata": {"name": "o", "namespace": "other", "labels": {"app": "web"}},
            "spec": {"containers": []}}),
        );
        assert!(pre_filter(&env, &other).0.is_skip());
        let db = incoming(json!({"app": "db"}), json!(null));
        assert!(pre_filter(&env, &db).0.is_skip());
    }

    #[test]
    fn checks_run_in_order() {
        // n1 fails all three checks: affinity (UU) is reported.
        let mut guard_term = term("web", "zone");
        guard_term["namespaces"] = json!(["default"]);
        let env = cluster(
            nodes(),
            vec![
                bound_pod("db", "default", "n3", json!({"app": "db"}), json!({})),
                bound_pod("w", "default", "n1", json!({"app": "web"}), json!({})),
                bound_pod(
                    "guard",
                    "default",
                    "n2",
                    json!({}),
                    json!({"affinity": required("podAntiAffinity", json!([guard_term]))}),
                ),
            ],
            namespaces(),
        );
        let aff = json!({
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("db", "zone")]},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("web", "host")]}});
        let p = incoming(json!({"app": "web"}), aff);
        let (_, state) = pre_filter(&env, &p);
        assert_eq!(codes(&verdicts(&env, &state, &p)), [UU, UU, Ok_, UU]);
        // Without the affinity term: n1 fails anti-affinity, n2 the existing pod's rule.
        let p = incoming(
            json!({"app": "web"}),
            required("podAntiAffinity", json!([term("web", "host")])),
        );
        let (_, state) = pre_filter(&env, &p);
        assert_eq!(codes(&verdicts(&env, &state, &p)), [U, U, Ok_, Ok_]);
        let v = verdicts(&env, &state, &p);
        assert_eq!(
            v[0].1,
            crate::plugins::interpodaffinity::ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH
        );
        assert_eq!(
            v[1].1,
            crate::plugins::interpodaffinity::ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH
        );
    }

    #[test]
    fn skip_parse_errors_and_missing_state() {
        let env = cluster(nodes(), vec![], namespaces());
        let plain = incoming(json!({"app": "web"}), json!(null));
        assert!(pre_filter(&env, &plain).0.is_skip());
        // Preferred terms alone do not need Filter.
        let pref = incoming(
            json!({}),
            json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": term("db", "zone")}]}}),
        );
        assert!(pre_filter(&env, &pref).0.is_skip());
        let bad = incoming(
            json!({}),
            required(
                "podAffinity",
                json!([{"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Is"}]}, "topologyKey": "zone"}]),
            ),
        );
        let (s, _) = pre_filter(&env, &bad);
        assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
        assert_eq!(
            s.message(),
            "parsing pod: requiredAffinityTerms: \"Is\" is not a valid label selector operator"
        );
        let s = InterPodAffinity::default().filter(
            &env.handle(),
            &CycleState::new(),
            &plain,
            &env.snapshot.list()[0],
        );
        assert_eq!(s.code(), Code::Error);
        assert_eq!(
            s.message(),
            "error reading \"PreFilterInterPodAffinity\" from cycleState: not found"
        );
    }

    #[test]
    fn add_and_remove_pod() {
        let env = cluster(nodes(), vec![], namespaces());
        let h = env.handle();
        let pl = InterPodAffinity::default();
        let aff = json!({
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("db", "zone")]},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("web", "host")]}});
        let p = incoming(json!({"app": "web"}), aff);
        let (_, mut state) = pre_filter(&env, &p);
        // No db anywhere and the pod is not a db: nothing fits.
        assert_eq!(codes(&verdicts(&env, &state, &p)), [UU, UU, UU, UU]);
        let n3 = &env.snapshot.list()[2];
        let db = pod(bound_pod(
            "db",
            "default",
            "n3",
            json!({"app": "db"}),
            json!({}),
        ));
        assert!(pl.add_pod(&h, &mut state, &p, &db, n3).is_success());
        assert_eq!(codes(&verdicts(&env, &state, &p)), [UU, UU, Ok_, UU]);
        let web = pod(bound_pod(
            "w",
            "default",
            "n3",
            json!({"app": "web"}),
            json!({}),
        ));
        assert!(pl.add_pod(&h, &mut state, &p, &web, n3).is_success());
        assert_eq!(codes(&verdicts(&env, &state, &p)), [UU, UU, U, UU]);
        // A pod with anti-affinity against the incoming pod, on n1 (zone a).
        let n1 = &env.snapshot.list()[0];
        let guard = pod(bound_pod(
            "g",
            "default",
            "n1",
            json!({}),
            json!({"affinity": required("podAntiAffinity", json!([term("web", "zone")]))}),
        ));
        assert!(pl.add_pod(&h, &mut state, &p, &guard, n1).is_success());
        {
            let st = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY).unwrap();
            assert_eq!(
                st.existing_anti_affinity_counts.sorted_pairs(),
                ["zone=a: 1"]
            );
        }
        // Removing everything brings the counts back to empty maps.
        for (pi, n) in [(&web, n3), (&db, n3), (&guard, n1)] {
            assert!(pl.remove_pod(&h, &mut state, &p, pi, n).is_success());
        }
        let st = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY).unwrap();
        assert!(st.affinity_counts.is_empty());
        assert!(st.anti_affinity_counts.is_empty());
        assert!(st.existing_anti_affinity_counts.is_empty());
        assert_eq!(codes(&verdicts(&env, &state, &p)), [UU, UU, UU, UU]);
        let s = pl.remove_pod(&h, &mut CycleState::new(), &p, &db, n3);
        assert_eq!(s.code(), Code::Error);
    }

    #[test]
    fn counts_drop_pairs_at_zero() {
        let mut m = TopologyToMatchedTermCount::default();
        let labels: Labels = [("zone".to_string(), "a".to_string())].into();
        m.update(&labels, "zone", 1);
        m.update(&labels, "host", 1);
        assert_eq!(m.get("zone", "a"), 1);
        m.update(&labels, "zone", -1);
        assert!(m.is_empty());
        m.update(&labels, "zone", -1);
        assert_eq!(m.get("zone", "a"), -1);
        assert!(!m.any_positive_on(&labels));
    }
}
