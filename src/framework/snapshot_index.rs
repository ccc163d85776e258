//! Indexes the snapshot keeps so that PreFilter can count pods per topology domain
//! without walking (and chasing pointers through) every pod of every node:
//!
//! - [`TopologyIndex`]: for one label key, every node's value as a small integer, the
//!   values sorted. Built on first use; dropped when the node set changes.
//! - [`PodGroups`]: the pods grouped by what label selectors and affinity terms look at
//!   (namespace, labels, terminating), each group with how many of its pods each node
//!   holds. Walks every pod to build, so it is built only for a pod whose affinity terms
//!   or spread constraints select pods.
//! - [`PodIndex`]: the pods' affinity terms (required anti-affinity, required affinity,
//!   preferred affinity and anti-affinity with their weights) grouped by equal term, with
//!   how many of them each node holds; built from the pods with affinity only.
//!
//! Both are built on first use, then kept up to date as pods are added and removed.
//!
//! Counting over groups gives exactly the sums a walk over the pods gives: every pod of
//! a group (every occurrence of a term) is matched the same way.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, PoisonError, RwLock};

use rustc_hash::{FxHashMap, FxHasher};
use smallvec::SmallVec;

use super::Snapshot;
use super::node_info::NodeInfo;
use super::types::{AffinityTerm, PodInfo, WeightedAffinityTerm};
use crate::api::labels::Labels;

/// Every node's value for one label key.
pub struct TopologyIndex {
    key: String,
    /// Distinct values, sorted; a value's id is its position.
    values: Vec<String>,
    ids: FxHashMap<String, u32>,
    /// By snapshot position: the id of the node's value, or `NO_VALUE`.
    node_value: Vec<u32>,
    /// The snapshot epoch the positions belong to.
    epoch: u64,
}

const NO_VALUE: u32 = u32::MAX;

impl TopologyIndex {
    /// Indexes `nodes`, the list of a snapshot at `epoch`.
    pub fn build(key: &str, nodes: &[NodeInfo], epoch: u64) -> TopologyIndex {
        let mut values: Vec<String> = nodes
            .iter()
            .filter_map(|n| n.labels().get(key).cloned())
            .collect();
        values.sort_unstable();
        values.dedup();
        let ids: FxHashMap<String, u32> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (v.clone(), i as u32))
            .collect();
        let node_value = nodes
            .iter()
            .map(|n| {
                n.labels()
                    .get(key)
                    .and_then(|v| ids.get(v.as_str()))
                    .copied()
                    .unwrap_or(NO_VALUE)
            })
            .collect();
        TopologyIndex {
            key: key.to_string(),
            values,
            ids,
            node_value,
            epoch,
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// Number of distinct values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The value with this id.
    pub fn value(&self, id: usize) -> &str {
        self.values.get(id).map_or("", String::as_str)
    }

    /// The id of a value, if some node has it.
    pub fn id(&self, value: &str) -> Option<usize> {
        self.ids.get(value).map(|&i| i as usize)
    }

    /// The id of the value of the node at this snapshot position, if it has the key.
    pub fn node_value(&self, pos: usize) -> Option<usize> {
        match self.node_value.get(pos) {
            Some(&v) if v != NO_VALUE => Some(v as usize),
            _ => None,
        }
    }

    /// Number of nodes indexed.
    pub fn num_nodes(&self) -> usize {
        self.node_value.len()
    }

    /// For a NodeInfo of `snapshot` when this index is still that of its node list:
    /// `Some` of the id of the node's value (`None` inside: the node lacks the key).
    /// `None` when the index cannot tell (another snapshot, or a copy of a node); the
    /// caller then reads the node's labels.
    pub fn value_of(&self, snapshot: &Snapshot, node: &NodeInfo) -> Option<Option<usize>> {
        if self.epoch != snapshot.epoch() {
            return None;
        }
        let pos = snapshot.position_of(node)?;
        Some(self.node_value(pos))
    }
}

impl fmt::Debug for TopologyIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TopologyIndex({:?}: {} values over {} nodes)",
            self.key,
            self.values.len(),
            self.node_value.len()
        )
    }
}

/// Snapshot position → number of pods (or term occurrences) there; entries are > 0.
pub type NodeCounts = FxHashMap<u32, u32>;

/// Pods that look the same to label selectors and affinity terms.
#[derive(Debug, Clone)]
pub struct PodGroup {
    /// The pod that made the group: its namespace, labels and terminating state are the
    /// group's. Shared rather than copied, for on a large cluster most pods have labels
    /// of their own (a pod name, a job) and so a group each.
    first: Arc<PodInfo>,
    pub nodes: NodeCounts,
}

impl PodGroup {
    pub fn namespace(&self) -> &str {
        &self.first.namespace
    }
    pub fn labels(&self) -> &Labels {
        self.first.labels()
    }
    pub fn terminating(&self) -> bool {
        self.first.is_terminating()
    }
}

/// Equal (required or weighted) affinity terms of pods.
#[derive(Debug, Clone)]
pub struct TermGroup<T = AffinityTerm> {
    pub term: T,
    pub nodes: NodeCounts,
}

/// A group of the pod index: what it counts per node, and its hash in the table.
trait Group {
    fn nodes_mut(&mut self) -> &mut NodeCounts;
    fn hash_key(&self) -> u64;
}

impl Group for PodGroup {
    fn nodes_mut(&mut self) -> &mut NodeCounts {
        &mut self.nodes
    }
    fn hash_key(&self) -> u64 {
        pod_group_hash(self.namespace(), self.labels(), self.terminating())
    }
}

impl<T: Hash> Group for TermGroup<T> {
    fn nodes_mut(&mut self) -> &mut NodeCounts {
        &mut self.nodes
    }
    fn hash_key(&self) -> u64 {
        term_hash(&self.term)
    }
}

/// Groups with a hash → candidates table; a group is removed once it holds nothing.
#[derive(Debug, Clone)]
struct Groups<G> {
    list: Vec<G>,
    by_hash: FxHashMap<u64, SmallVec<[u32; 1]>>,
}

impl<G> Default for Groups<G> {
    fn default() -> Self {
        Groups {
            list: Vec::new(),
            by_hash: FxHashMap::default(),
        }
    }
}

impl<G: Group> Groups<G> {
    /// Adds `delta` at `pos` in the group (of hash `hash`) that `is_it` recognises,
    /// created by `make` when adding; a group is dropped once empty.
    fn update(
        &mut self,
        hash: u64,
        is_it: impl Fn(&G) -> bool,
        make: impl FnOnce() -> G,
        pos: u32,
        delta: i32,
    ) {
        let found = self.by_hash.get(&hash).and_then(|c| {
            c.iter()
                .copied()
                .find(|&i| self.list.get(i as usize).is_some_and(&is_it))
        });
        let i = match found {
            Some(i) => i as usize,
            None if delta > 0 => {
                self.list.push(make());
                let i = self.list.len() - 1;
                self.by_hash.entry(hash).or_default().push(i as u32);
                i
            }
            None => return,
        };
        let Some(g) = self.list.get_mut(i) else {
            return;
        };
        let counts = g.nodes_mut();
        let n = counts.get(&pos).map_or(0, |&n| i64::from(n)) + i64::from(delta);
        if n > 0 {
            counts.insert(pos, n as u32);
        } else {
            counts.remove(&pos);
        }
        if counts.is_empty() {
            self.remove(i, hash);
        }
    }

    /// Removes group `i` (of hash `hash`); the last group takes its place.
    fn remove(&mut self, i: usize, hash: u64) {
        unlink(&mut self.by_hash, hash, i as u32);
        let last = self.list.len() - 1;
        if i != last
            && let Some(moved) = self.list.get(last)
            && let Some(c) = self.by_hash.get_mut(&moved.hash_key())
        {
            for x in c.iter_mut() {
                if *x == last as u32 {
                    *x = i as u32;
                }
            }
        }
        self.list.swap_remove(i);
    }
}

fn unlink(by_hash: &mut FxHashMap<u64, SmallVec<[u32; 1]>>, hash: u64, i: u32) {
    if let Some(c) = by_hash.get_mut(&hash) {
        c.retain(|x| *x != i);
        if c.is_empty() {
            by_hash.remove(&hash);
        }
    }
}

fn pod_group_hash(namespace: &str, labels: &Labels, terminating: bool) -> u64 {
    let mut h = FxHasher::default();
    namespace.hash(&mut h);
    labels.hash(&mut h);
    terminating.hash(&mut h);
    h.finish()
}

fn term_hash(term: &impl Hash) -> u64 {
    let mut h = FxHasher::default();
    term.hash(&mut h);
    h.finish()
}

/// The snapshot's pods, grouped (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct PodGroups {
    /// By namespace: a spread constraint counts pods of its pod's namespace only, and on a
    /// large cluster most groups are other namespaces'.
    by_namespace: FxHashMap<String, Groups<PodGroup>>,
}

impl PodGroups {
    /// Accounts for `pod` being added (`delta` 1) to or removed (-1) from the node at
    /// snapshot position `pos`.
    pub fn update(&mut self, pos: usize, pod: &Arc<PodInfo>, delta: i32) {
        let labels = pod.labels();
        let terminating = pod.is_terminating();
        let groups = match self.by_namespace.get_mut(pod.namespace.as_str()) {
            Some(g) => g,
            None if delta > 0 => self.by_namespace.entry(pod.namespace.clone()).or_default(),
            None => return,
        };
        groups.update(
            pod_group_hash(&pod.namespace, labels, terminating),
            |g| {
                g.terminating() == terminating
                    && g.namespace() == pod.namespace
                    && g.labels() == labels
            },
            || PodGroup {
                first: pod.clone(),
                nodes: NodeCounts::default(),
            },
            pos as u32,
            delta,
        );
        if groups.list.is_empty() {
            self.by_namespace.remove(pod.namespace.as_str());
        }
    }

    /// Every pod, grouped by namespace, labels and whether it is terminating (in no
    /// particular order).
    pub fn iter(&self) -> impl Iterator<Item = &PodGroup> {
        self.by_namespace.values().flat_map(|g| g.list.iter())
    }

    /// The groups of namespace `ns`.
    pub fn in_namespace(&self, ns: &str) -> &[PodGroup] {
        self.by_namespace.get(ns).map_or(&[], |g| &g.list)
    }

    /// How many groups there are.
    pub fn len(&self) -> usize {
        self.by_namespace.values().map(|g| g.list.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_namespace.is_empty()
    }
}

/// The snapshot's pods' affinity terms, grouped (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct PodIndex {
    anti_affinity_terms: Groups<TermGroup>,
    affinity_terms: Groups<TermGroup>,
    preferred_affinity_terms: Groups<TermGroup<WeightedAffinityTerm>>,
    preferred_anti_affinity_terms: Groups<TermGroup<WeightedAffinityTerm>>,
}

/// Adds `delta` at `pos` for each of `terms` in `groups`.
fn update_terms<T: Hash + Eq + Clone>(
    groups: &mut Groups<TermGroup<T>>,
    terms: &[T],
    pos: u32,
    delta: i32,
) {
    for t in terms {
        groups.update(
            term_hash(t),
            |g| g.term == *t,
            || TermGroup {
                term: t.clone(),
                nodes: NodeCounts::default(),
            },
            pos,
            delta,
        );
    }
}

impl PodIndex {
    /// Accounts for `pod` being added (`delta` 1) to or removed (-1) from the node at
    /// snapshot position `pos`.
    pub fn update(&mut self, pos: usize, pod: &Arc<PodInfo>, delta: i32) {
        let pos = pos as u32;
        update_terms(
            &mut self.anti_affinity_terms,
            &pod.required_anti_affinity_terms,
            pos,
            delta,
        );
        update_terms(
            &mut self.affinity_terms,
            &pod.required_affinity_terms,
            pos,
            delta,
        );
        update_terms(
            &mut self.preferred_affinity_terms,
            &pod.preferred_affinity_terms,
            pos,
            delta,
        );
        update_terms(
            &mut self.preferred_anti_affinity_terms,
            &pod.preferred_anti_affinity_terms,
            pos,
            delta,
        );
    }

    /// Every required anti-affinity term of every pod, grouped by equal term.
    pub fn anti_affinity_terms(&self) -> &[TermGroup] {
        &self.anti_affinity_terms.list
    }

    /// Every required affinity term of every pod, grouped by equal term.
    pub fn affinity_terms(&self) -> &[TermGroup] {
        &self.affinity_terms.list
    }

    /// Every preferred affinity term (with its weight) of every pod, grouped.
    pub fn preferred_affinity_terms(&self) -> &[TermGroup<WeightedAffinityTerm>] {
        &self.preferred_affinity_terms.list
    }

    /// Every preferred anti-affinity term (with its weight) of every pod, grouped.
    pub fn preferred_anti_affinity_terms(&self) -> &[TermGroup<WeightedAffinityTerm>] {
        &self.preferred_anti_affinity_terms.list
    }
}

/// Topology indexes by key, built on first use (shared by clones of the snapshot).
#[derive(Default)]
pub(super) struct TopologyCache(RwLock<FxHashMap<String, Arc<TopologyIndex>>>);

impl TopologyCache {
    pub(super) fn get(&self, key: &str, nodes: &[NodeInfo], epoch: u64) -> Arc<TopologyIndex> {
        {
            let map = self.0.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(ix) = map.get(key)
                && ix.epoch == epoch
            {
                return ix.clone();
            }
        }
        let ix = Arc::new(TopologyIndex::build(key, nodes, epoch));
        let mut map = self.0.write().unwrap_or_else(PoisonError::into_inner);
        map.insert(key.to_string(), ix.clone());
        ix
    }

    pub(super) fn clear(&mut self) {
        self.0
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

impl Clone for TopologyCache {
    fn clone(&self) -> Self {
        let map = self.0.read().unwrap_or_else(PoisonError::into_inner);
        TopologyCache(RwLock::new(map.clone()))
    }
}

impl fmt::Debug for TopologyCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let map = self.0.read().unwrap_or_else(PoisonError::into_inner);
        f.debug_list().entries(map.values()).finish()
    }
}

/// What the snapshot's pods are indexed by: built from the nodes, then kept up to date.
pub trait PodCounting: Clone + Default {
    /// The pods of a node that the index counts.
    fn pods_of(node: &NodeInfo) -> &[Arc<PodInfo>];
    fn update(&mut self, pos: usize, pod: &Arc<PodInfo>, delta: i32);

    fn build(nodes: &[NodeInfo]) -> Self {
        let mut ix = Self::default();
        for (pos, n) in nodes.iter().enumerate() {
            for p in Self::pods_of(n) {
                ix.update(pos, p, 1);
            }
        }
        ix
    }
}

impl PodCounting for PodIndex {
    /// Only pods with affinity have terms.
    fn pods_of(node: &NodeInfo) -> &[Arc<PodInfo>] {
        &node.pods_with_affinity
    }
    fn update(&mut self, pos: usize, pod: &Arc<PodInfo>, delta: i32) {
        PodIndex::update(self, pos, pod, delta);
    }
}

impl PodCounting for PodGroups {
    fn pods_of(node: &NodeInfo) -> &[Arc<PodInfo>] {
        &node.pods
    }
    fn update(&mut self, pos: usize, pod: &Arc<PodInfo>, delta: i32) {
        PodGroups::update(self, pos, pod, delta);
    }
}

/// An index built on first use and then maintained; `None` until then.
pub(super) struct IndexCell<T>(RwLock<Option<Arc<T>>>);

impl<T> Default for IndexCell<T> {
    fn default() -> Self {
        IndexCell(RwLock::new(None))
    }
}

impl<T: PodCounting> IndexCell<T> {
    /// The index, built now if it was not; the flag says whether this call built it.
    pub(super) fn get(&self, nodes: &[NodeInfo]) -> (Arc<T>, bool) {
        {
            let slot = self.0.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(ix) = slot.as_ref() {
                return (ix.clone(), false);
            }
        }
        let mut slot = self.0.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(ix) = slot.as_ref() {
            return (ix.clone(), false);
        }
        let ix = Arc::new(T::build(nodes));
        *slot = Some(ix.clone());
        (ix, true)
    }

    pub(super) fn is_built(&self) -> bool {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// Keeps a built index up to date (an unbuilt one stays unbuilt).
    pub(super) fn update(&mut self, pos: usize, pod: &Arc<PodInfo>, delta: i32) {
        let slot = self.0.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(ix) = slot.as_mut() {
            Arc::make_mut(ix).update(pos, pod, delta);
        }
    }

    pub(super) fn clear(&mut self) {
        *self.0.get_mut().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

impl<T> Clone for IndexCell<T> {
    fn clone(&self) -> Self {
        let slot = self.0.read().unwrap_or_else(PoisonError::into_inner);
        IndexCell(RwLock::new(slot.clone()))
    }
}

impl fmt::Debug for IndexCell<PodIndex> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slot = self.0.read().unwrap_or_else(PoisonError::into_inner);
        match slot.as_ref() {
            Some(ix) => write!(
                f,
                "PodIndex({} anti-affinity terms)",
                ix.anti_affinity_terms.list.len()
            ),
            None => write!(f, "PodIndex(not built)"),
        }
    }
}

impl fmt::Debug for IndexCell<PodGroups> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slot = self.0.read().unwrap_or_else(PoisonError::into_inner);
        match slot.as_ref() {
            Some(ix) => write!(f, "PodGroups({})", ix.len()),
            None => write!(f, "PodGroups(not built)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Snapshot;
    use k8s_openapi::api::core::v1::Node;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn node(name: &str, zone: Option<&str>) -> Arc<Node> {
        let mut labels = json!({"kubernetes.io/hostname": name});
        if let Some(z) = zone {
            labels["zone"] = json!(z);
        }
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap(),
        )
    }

    fn pod(name: &str, ns: &str, node: &str, app: &str, anti: bool) -> Arc<PodInfo> {
        let mut v = json!({"metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
            "spec": {"nodeName": node, "containers": []}});
        if anti {
            v["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "zone"},
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "zone"}],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 3, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "zone"}}]},
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "zone"}}]}});
        }
        Arc::new(PodInfo::new(Arc::new(serde_json::from_value(v).unwrap())))
    }

    type View = (
        BTreeMap<(String, String, bool), BTreeMap<u32, u32>>,
        BTreeMap<String, BTreeMap<u32, u32>>,
    );

    /// The indexes' content, independent of group order.
    fn view((groups, ix): (&PodGroups, &PodIndex)) -> View {
        let sorted = |m: &NodeCounts| m.iter().map(|(&k, &v)| (k, v)).collect::<BTreeMap<_, _>>();
        let pods = groups
            .iter()
            .map(|g| {
                let key = (
                    g.namespace().to_string(),
                    format!("{:?}", g.labels()),
                    g.terminating(),
                );
                (key, sorted(&g.nodes))
            })
            .collect();
        let mut terms = BTreeMap::new();
        for (kind, list) in [
            ("anti", ix.anti_affinity_terms()),
            ("affinity", ix.affinity_terms()),
        ] {
            for g in list {
                terms.insert(format!("{kind} {:?}", g.term), sorted(&g.nodes));
            }
        }
        for (kind, list) in [
            ("preferred", ix.preferred_affinity_terms()),
            ("preferred anti", ix.preferred_anti_affinity_terms()),
        ] {
            for g in list {
                terms.insert(format!("{kind} {:?}", g.term), sorted(&g.nodes));
            }
        }
        (pods, terms)
    }

    #[test]
    fn topology_values_are_sorted_ids() {
        let s = Snapshot::new(
            vec![
                node("n1", Some("b")),
                node("n2", Some("a")),
                node("n3", None),
            ],
            [],
        );
        let t = s.topology("zone");
        assert_eq!(t.len(), 2);
        assert_eq!((t.value(0), t.value(1)), ("a", "b"));
        let by_name = |name: &str| t.node_value(s.position(name).unwrap());
        assert_eq!(by_name("n1"), Some(1));
        assert_eq!(by_name("n2"), Some(0));
        assert_eq!(by_name("n3"), None);
        assert_eq!(t.id("b"), Some(1));
        assert_eq!(t.id("c"), None);
    }

    #[test]
    fn value_of_knows_only_the_snapshot_own_nodes_of_its_epoch() {
        let mut s = Snapshot::new(vec![node("n1", Some("a")), node("n2", None)], []);
        let t = s.topology("zone");
        let n1 = s.get("n1").unwrap();
        assert_eq!(s.position_of(n1), s.position("n1"));
        assert_eq!(t.value_of(&s, n1), Some(Some(0)));
        assert_eq!(t.value_of(&s, s.get("n2").unwrap()), Some(None));
        // A copy of a node (as preemption makes) is not known by position.
        let copy = n1.clone();
        assert_eq!(s.position_of(&copy), None);
        assert_eq!(t.value_of(&s, &copy), None);
        // Once the nodes change, the old index no longer answers.
        s.upsert_node(node("n3", Some("b")));
        assert_eq!(t.value_of(&s, s.get("n1").unwrap()), None);
        let t = s.topology("zone");
        assert_eq!(t.value_of(&s, s.get("n3").unwrap()), Some(Some(1)));
        // Nor after a node was handed out for editing.
        let _ = s.get_mut("n1");
        assert_eq!(t.value_of(&s, s.get("n1").unwrap()), None);
    }

    #[test]
    fn maintained_index_equals_a_rebuilt_one() {
        let nodes = vec![
            node("n1", Some("a")),
            node("n2", Some("b")),
            node("n3", None),
        ];
        let mut s = Snapshot::new(nodes, [pod("p0", "d", "n1", "web", true)]);
        let _ = (s.pod_index(), s.pod_groups());
        let mut placed = Vec::new();
        // A deterministic mix of adds and removes, emptying groups along the way.
        for i in 0..60 {
            let node = ["n1", "n2", "n3"][i % 3];
            let app = ["web", "db", "cache", "web"][i % 4];
            let ns = ["d", "e"][i % 2];
            let p = pod(&format!("p{}", i + 1), ns, node, app, i % 5 < 2);
            placed.push((node.to_string(), p.key.clone()));
            s.add_pod(p);
            if i % 3 == 2 {
                let (node, key) = placed.remove((i * 7) % placed.len());
                assert!(s.remove_pod(&node, &key).is_some());
            }
            let rebuilt = (PodGroups::build(s.list()), PodIndex::build(s.list()));
            assert_eq!(
                view((&s.pod_groups(), &s.pod_index())),
                view((&rebuilt.0, &rebuilt.1)),
                "after step {i}"
            );
        }
        for (node, key) in placed {
            s.remove_pod(&node, &key);
        }
        s.remove_pod("n1", "d/p0");
        let ix = s.pod_index();
        assert!(s.pod_groups().is_empty());
        assert!(ix.anti_affinity_terms().is_empty());
        assert!(ix.affinity_terms().is_empty());
        assert!(ix.preferred_affinity_terms().is_empty());
        assert!(ix.preferred_anti_affinity_terms().is_empty());
    }

    #[test]
    fn node_changes_rebuild_the_indexes() {
        let mut s = Snapshot::new(
            vec![node("n1", Some("a"))],
            [pod("p", "d", "n2", "web", true)],
        );
        assert_eq!(s.topology("zone").num_nodes(), 1);
        assert!(s.pod_groups().is_empty());
        // The orphan pod lands with its node; positions change.
        s.upsert_node(node("n2", Some("b")));
        assert_eq!(s.topology("zone").num_nodes(), 2);
        let ix = s.pod_index();
        assert_eq!(
            view((&s.pod_groups(), &ix)),
            view((&PodGroups::build(s.list()), &PodIndex::build(s.list())))
        );
        let pos = s.position("n2").unwrap() as u32;
        assert_eq!(ix.anti_affinity_terms()[0].nodes.get(&pos), Some(&2));
        // A clone keeps its own copy once either side changes.
        let mut c = s.clone();
        c.remove_pod("n2", "d/p");
        assert_eq!(s.pod_groups().len(), 1);
        assert!(c.pod_groups().is_empty());
    }
}
