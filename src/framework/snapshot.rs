//! Snapshot: every NodeInfo in upstream's node-tree order, with the indexes plugins use.
//!
//! kubestep schedules one pod at a time, so the snapshot doubles as the scheduler cache:
//! pods are added and removed in place, and only node changes rebuild the order.

use std::collections::HashMap;

use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::core::v1::Node;

use super::node_info::NodeInfo;
use super::snapshot_index::{IndexCell, PodGroups, PodIndex, TopologyCache, TopologyIndex};
use super::types::PodInfo;

#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    nodes: Vec<NodeInfo>,
    index: FxHashMap<String, usize>,
    /// Indices (in list order) of nodes with pods that have (anti-)affinity.
    with_affinity: Vec<usize>,
    with_required_anti_affinity: Vec<usize>,
    /// `namespace/claim` → number of scheduled pods using it.
    used_pvcs: HashMap<String, i32>,
    /// Image name → number of nodes that have it.
    image_nodes: FxHashMap<Arc<str>, usize>,
    /// Pods whose node is not (yet) in the snapshot, kept until it appears.
    orphans: HashMap<String, Vec<Arc<PodInfo>>>,
    /// Upstream's node tree: zones in order of first appearance, names in insertion order.
    tree: Vec<(String, Vec<String>)>,
    /// Nodes' topology values by label key, built on first use.
    topology: TopologyCache,
    /// Pods' affinity terms, and pods grouped for counting: each built on first use and
    /// then kept up to date.
    pod_index: IndexCell<PodIndex>,
    pod_groups: IndexCell<PodGroups>,
    /// Changes (to a value never used before) whenever the nodes may have changed, so that
    /// what was derived from their list and labels can tell whether it still applies.
    epoch: u64,
    /// The changes made, when someone asked to record them (see [`SnapshotOp`]).
    log: OpLog,
    /// InPlacePodLevelResourcesVerticalScaling, for every NodeInfo.
    pod_level_resize: bool,
}

/// A change to a snapshot, recorded so that the snapshot as of any past moment can be
/// rebuilt: a copy taken earlier, with the same changes applied in the same order, is
/// the same snapshot (the lazily built pod index included, whose grouping depends on
/// when it was built).
#[derive(Debug, Clone)]
pub enum SnapshotOp {
    AddPod(Arc<PodInfo>),
    /// The pod removed (its node and key say from where).
    RemovePod(Arc<PodInfo>),
    UpsertNode(Arc<Node>),
    RemoveNode(String),
    BuildPodIndex,
    BuildPodGroups,
}

/// What [`Snapshot::add_pod_undoable`] changed, to put back.
pub struct UndoAdd {
    node: Option<(usize, NodeInfo)>,
    pod_index: IndexCell<PodIndex>,
    pod_groups: IndexCell<PodGroups>,
    with_affinity: Vec<usize>,
    with_required_anti_affinity: Vec<usize>,
    used_pvcs: HashMap<String, i32>,
    orphans: Option<HashMap<String, Vec<Arc<PodInfo>>>>,
}

/// Where changes are recorded; copies of a snapshot record nothing.
#[derive(Debug, Default)]
struct OpLog(std::sync::Mutex<Option<Vec<SnapshotOp>>>);

impl Clone for OpLog {
    fn clone(&self) -> Self {
        OpLog::default()
    }
}

impl OpLog {
    fn push(&self, op: impl FnOnce() -> SnapshotOp) {
        let mut log = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(v) = log.as_mut() {
            v.push(op());
        }
    }
}

/// Source of `Snapshot::epoch` values, unique across snapshots.
static NEXT_EPOCH: AtomicU64 = AtomicU64::new(1);

/// Upstream's zone key for the node tree: region and zone (beta labels first).
pub fn zone_key(node: &Node) -> String {
    let Some(labels) = node.metadata.labels.as_ref() else {
        return String::new();
    };
    let get = |beta: &str, ga: &str| {
        labels
            .get(beta)
            .or_else(|| labels.get(ga))
            .cloned()
            .unwrap_or_default()
    };
    let zone = get(
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/zone",
    );
    let region = get(
        "failure-domain.beta.kubernetes.io/region",
        "topology.kubernetes.io/region",
    );
    if zone.is_empty() && region.is_empty() {
        return String::new();
    }
    format!("{region}:\x00:{zone}")
}

/// Interleaves the tree's zones: the first node of each zone, then the second of each...
fn tree_order(tree: &[(String, Vec<String>)]) -> Vec<&str> {
    let max = tree.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    let mut out = Vec::new();
    for depth in 0..max {
        for (_, v) in tree {
            if let Some(n) = v.get(depth) {
                out.push(n.as_str());
            }
        }
    }
    out
}

impl Snapshot {
    /// Builds a snapshot from nodes in insertion order and the pods bound to them.
    pub fn new(nodes: Vec<Arc<Node>>, pods: impl IntoIterator<Item = Arc<PodInfo>>) -> Snapshot {
        let mut s = Snapshot::default();
        for n in &nodes {
            s.tree_add(n);
        }
        s.nodes = nodes.into_iter().map(NodeInfo::new).collect();
        s.reindex();
        for p in pods {
            s.add_pod(p);
        }
        s
    }

    /// Counts pods as the scheduler's gates say (set once, before the first cycle).
    pub fn set_pod_level_resize(&mut self, on: bool) {
        self.pod_level_resize = on;
        for n in &mut self.nodes {
            n.set_pod_level_resize(on);
        }
    }

    fn tree_add(&mut self, node: &Node) {
        let zone = zone_key(node);
        let name = node.metadata.name.clone().unwrap_or_default();
        match self.tree.iter_mut().find(|(z, _)| *z == zone) {
            Some((_, names)) => names.push(name),
            None => self.tree.push((zone, vec![name])),
        }
    }

    fn tree_remove(&mut self, node: &Node) {
        let zone = zone_key(node);
        let name = node.metadata.name.as_deref().unwrap_or_default();
        if let Some(zi) = self.tree.iter().position(|(z, _)| *z == zone) {
            self.tree[zi].1.retain(|n| n != name);
            if self.tree[zi].1.is_empty() {
                self.tree.remove(zi);
            }
        }
    }

    /// Puts `nodes` in tree order and rebuilds the indexes.
    fn reindex(&mut self) {
        let mut by_name: HashMap<String, NodeInfo> = std::mem::take(&mut self.nodes)
            .into_iter()
            .map(|n| (n.name().to_string(), n))
            .collect();
        let order: Vec<String> = tree_order(&self.tree)
            .into_iter()
            .map(str::to_string)
            .collect();
        self.nodes = order.iter().filter_map(|n| by_name.remove(n)).collect();
        self.rebuild_indexes();
    }

    fn rebuild_indexes(&mut self) {
        self.nodes_changed();
        self.index = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name().to_string(), i))
            .collect();
        self.with_affinity = (0..self.nodes.len())
            .filter(|&i| !self.nodes[i].pods_with_affinity.is_empty())
            .collect();
        self.with_required_anti_affinity = (0..self.nodes.len())
            .filter(|&i| !self.nodes[i].pods_with_required_anti_affinity.is_empty())
            .collect();
        self.image_nodes.clear();
        for n in &self.nodes {
            for name in n.images.keys() {
                *self.image_nodes.entry(name.clone()).or_default() += 1;
            }
        }
    }

    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    pub fn list(&self) -> &[NodeInfo] {
        &self.nodes
    }

    pub fn get(&self, name: &str) -> Option<&NodeInfo> {
        self.index.get(name).map(|&i| &self.nodes[i])
    }

    pub fn position(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    pub fn have_pods_with_affinity(&self) -> impl Iterator<Item = &NodeInfo> {
        self.with_affinity.iter().map(|&i| &self.nodes[i])
    }

    pub fn have_pods_with_required_anti_affinity(&self) -> impl Iterator<Item = &NodeInfo> {
        self.with_required_anti_affinity
            .iter()
            .map(|&i| &self.nodes[i])
    }

    /// Positions or labels of nodes may have changed: the lazily built indexes start
    /// over, under a new epoch.
    fn nodes_changed(&mut self) {
        self.topology.clear();
        self.pod_index.clear();
        self.pod_groups.clear();
        self.epoch = NEXT_EPOCH.fetch_add(1, Ordering::Relaxed);
    }

    /// Identifies the current node list (see the field).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The position in [`Snapshot::list`] of this very NodeInfo (not of a copy of it).
    pub fn position_of(&self, node: &NodeInfo) -> Option<usize> {
        let size = std::mem::size_of::<NodeInfo>().max(1);
        let offset = (node as *const NodeInfo as usize).checked_sub(self.nodes.as_ptr() as usize)?;
        let pos = offset / size;
        self.nodes
            .get(pos)
            .is_some_and(|n| std::ptr::eq(n, node))
            .then_some(pos)
    }

    /// Every node's value for a label key (see [`TopologyIndex`]).
    pub fn topology(&self, key: &str) -> Arc<TopologyIndex> {
        self.topology.get(key, &self.nodes, self.epoch)
    }

    /// The pods grouped for counting (see [`PodIndex`]). Positions are indices into
    /// [`Snapshot::list`].
    pub fn pod_index(&self) -> Arc<PodIndex> {
        let (ix, built) = self.pod_index.get(&self.nodes);
        if built {
            self.log.push(|| SnapshotOp::BuildPodIndex);
        }
        ix
    }

    /// The pods grouped for counting (see [`PodGroups`]). Positions are indices into
    /// [`Snapshot::list`].
    pub fn pod_groups(&self) -> Arc<PodGroups> {
        let (ix, built) = self.pod_groups.get(&self.nodes);
        if built {
            self.log.push(|| SnapshotOp::BuildPodGroups);
        }
        ix
    }

    /// Which of the pod indexes have been built (they are built on first use): the
    /// affinity terms' and the pod groups.
    pub fn pod_indexes_built(&self) -> (bool, bool) {
        (self.pod_index.is_built(), self.pod_groups.is_built())
    }

    /// Forgets the pod indexes built since `before` (a [`Snapshot::pod_indexes_built`]):
    /// they are built again on next use.
    pub fn drop_pod_indexes_built_since(&mut self, before: (bool, bool)) {
        if !before.0 {
            self.pod_index.clear();
        }
        if !before.1 {
            self.pod_groups.clear();
        }
    }

    /// Starts recording changes (see [`SnapshotOp`]); copies never record.
    pub fn record_changes(&mut self) {
        let log = self
            .log
            .0
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        log.get_or_insert_with(Vec::new);
    }

    /// The changes recorded since the last call.
    pub fn take_changes(&mut self) -> Vec<SnapshotOp> {
        let log = self
            .log
            .0
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Makes a recorded change again (on a copy taken before it was made).
    pub fn apply(&mut self, op: &SnapshotOp) {
        match op {
            SnapshotOp::AddPod(p) => self.add_pod(p.clone()),
            SnapshotOp::RemovePod(p) => {
                self.remove_pod(p.node_name(), &p.key);
            }
            SnapshotOp::UpsertNode(n) => self.upsert_node(n.clone()),
            SnapshotOp::RemoveNode(name) => {
                self.remove_node(name);
            }
            SnapshotOp::BuildPodIndex => {
                self.pod_index();
            }
            SnapshotOp::BuildPodGroups => {
                self.pod_groups();
            }
        }
    }

    /// Adds a pod in a way that [`Snapshot::undo_add`] takes back exactly, leaving every
    /// list and index as it was (re-running a past attempt assumes its pod on a rebuilt
    /// snapshot that must stay as it was for the next one).
    pub fn add_pod_undoable(&mut self, pod: Arc<PodInfo>) -> UndoAdd {
        let i = self.index.get(pod.node_name()).copied();
        let undo = UndoAdd {
            node: i.map(|i| (i, self.nodes[i].clone())),
            pod_index: self.pod_index.clone(),
            pod_groups: self.pod_groups.clone(),
            with_affinity: self.with_affinity.clone(),
            with_required_anti_affinity: self.with_required_anti_affinity.clone(),
            used_pvcs: self.used_pvcs.clone(),
            orphans: i.is_none().then(|| self.orphans.clone()),
        };
        let log = std::mem::take(&mut self.log);
        self.add_pod(pod);
        self.log = log;
        undo
    }

    /// Takes back an [`Snapshot::add_pod_undoable`].
    pub fn undo_add(&mut self, undo: UndoAdd) {
        if let Some((i, ni)) = undo.node {
            self.nodes[i] = ni;
        }
        self.pod_index = undo.pod_index;
        self.pod_groups = undo.pod_groups;
        self.with_affinity = undo.with_affinity;
        self.with_required_anti_affinity = undo.with_required_anti_affinity;
        self.used_pvcs = undo.used_pvcs;
        if let Some(o) = undo.orphans {
            self.orphans = o;
        }
    }

    /// A rough size in bytes, for memory budgets.
    pub fn approx_bytes(&self) -> usize {
        let pods: usize = self.nodes.iter().map(|n| n.pods.len()).sum();
        self.nodes.iter().map(NodeInfo::approx_bytes).sum::<usize>()
            + self.index.len() * 64
            + (self.with_affinity.capacity() + self.with_required_anti_affinity.capacity()) * 8
            + if self.pod_groups.is_built() {
                pods * 96
            } else {
                0
            }
    }

    /// `StorageInfos().IsPVCUsedByPods`.
    pub fn is_pvc_used_by_pods(&self, key: &str) -> bool {
        self.used_pvcs.get(key).is_some_and(|&c| c > 0)
    }

    /// How many nodes list this image name.
    pub fn image_num_nodes(&self, image: &str) -> usize {
        self.image_nodes.get(image).copied().unwrap_or(0)
    }

    /// Adds a pod to the node named in its spec (assume or bind).
    pub fn add_pod(&mut self, pod: Arc<PodInfo>) {
        self.log.push(|| SnapshotOp::AddPod(pod.clone()));
        let node = pod.node_name().to_string();
        let Some(&i) = self.index.get(&node) else {
            self.orphans.entry(node).or_default().push(pod);
            return;
        };
        for k in pod.pvc_keys() {
            *self.used_pvcs.entry(k).or_default() += 1;
        }
        self.pod_index.update(i, &pod, 1);
        self.pod_groups.update(i, &pod, 1);
        self.nodes[i].add_pod(pod);
        self.refresh_lists(i);
    }

    /// Removes a pod from a node; returns it if it was there.
    pub fn remove_pod(&mut self, node: &str, key: &str) -> Option<Arc<PodInfo>> {
        let removed = self.remove_pod_unlogged(node, key)?;
        self.log.push(|| SnapshotOp::RemovePod(removed.clone()));
        Some(removed)
    }

    fn remove_pod_unlogged(&mut self, node: &str, key: &str) -> Option<Arc<PodInfo>> {
        let Some(&i) = self.index.get(node) else {
            let list = self.orphans.get_mut(node)?;
            let pos = list.iter().position(|p| p.key == key)?;
            return Some(list.swap_remove(pos));
        };
        let removed = self.nodes[i].remove_pod(key)?;
        self.pod_index.update(i, &removed, -1);
        self.pod_groups.update(i, &removed, -1);
        for k in removed.pvc_keys() {
            if let Some(c) = self.used_pvcs.get_mut(&k) {
                *c -= 1;
                if *c <= 0 {
                    self.used_pvcs.remove(&k);
                }
            }
        }
        self.refresh_lists(i);
        Some(removed)
    }

    fn refresh_lists(&mut self, i: usize) {
        let n = &self.nodes[i];
        set_membership(&mut self.with_affinity, i, !n.pods_with_affinity.is_empty());
        set_membership(
            &mut self.with_required_anti_affinity,
            i,
            !n.pods_with_required_anti_affinity.is_empty(),
        );
    }

    /// Adds or replaces a node (keeping its pods), then restores tree order.
    pub fn upsert_node(&mut self, node: Arc<Node>) {
        self.log.push(|| SnapshotOp::UpsertNode(node.clone()));
        let name = node.metadata.name.clone().unwrap_or_default();
        match self.index.get(&name) {
            Some(&i) => {
                if zone_key(self.nodes[i].node()) != zone_key(&node) {
                    let old = self.nodes[i].node_arc().clone();
                    self.tree_remove(&old);
                    self.tree_add(&node);
                }
                self.nodes[i].set_node(node)
            }
            None => {
                self.tree_add(&node);
                let mut ni = NodeInfo::new(node);
                ni.set_pod_level_resize(self.pod_level_resize);
                for p in self.orphans.remove(&name).unwrap_or_default() {
                    for k in p.pvc_keys() {
                        *self.used_pvcs.entry(k).or_default() += 1;
                    }
                    ni.add_pod(p);
                }
                self.nodes.push(ni);
            }
        }
        self.reindex();
    }

    /// Removes a node; its pods are kept aside in case it comes back.
    pub fn remove_node(&mut self, name: &str) -> Option<NodeInfo> {
        let i = self.index.get(name).copied()?;
        self.log.push(|| SnapshotOp::RemoveNode(name.to_string()));
        let ni = self.nodes.remove(i);
        let node = ni.node_arc().clone();
        self.tree_remove(&node);
        for p in &ni.pods {
            for k in p.pvc_keys() {
                if let Some(c) = self.used_pvcs.get_mut(&k) {
                    *c -= 1;
                }
            }
            self.orphans
                .entry(name.to_string())
                .or_default()
                .push(p.clone());
        }
        self.reindex();
        Some(ni)
    }

    /// Mutable access for in-place what-if edits (callers keep accounting consistent).
    pub fn get_mut(&mut self, name: &str) -> Option<&mut NodeInfo> {
        // The node may change in any way.
        self.nodes_changed();
        self.index.get(name).map(|&i| &mut self.nodes[i])
    }
}

fn set_membership(list: &mut Vec<usize>, i: usize, member: bool) {
    match (list.binary_search(&i), member) {
        (Ok(pos), false) => {
            list.remove(pos);
        }
        (Err(pos), true) => list.insert(pos, i),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, zone: Option<&str>) -> Arc<Node> {
        let labels = match zone {
            Some(z) => json!({"topology.kubernetes.io/zone": z}),
            None => json!({}),
        };
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap(),
        )
    }

    #[test]
    fn zones_are_interleaved() {
        let s = Snapshot::new(
            vec![
                node("a1", Some("a")),
                node("a2", Some("a")),
                node("b1", Some("b")),
                node("a3", Some("a")),
                node("c1", Some("c")),
            ],
            [],
        );
        let names: Vec<&str> = s.list().iter().map(|n| n.name()).collect();
        assert_eq!(names, ["a1", "b1", "c1", "a2", "a3"]);
        assert_eq!(s.get("a3").unwrap().name(), "a3");
        let mut s = s;
        s.remove_node("a1");
        let names: Vec<&str> = s.list().iter().map(|n| n.name()).collect();
        assert_eq!(names, ["a2", "b1", "c1", "a3"]);
        s.upsert_node(node("b2", Some("b")));
        let names: Vec<&str> = s.list().iter().map(|n| n.name()).collect();
        assert_eq!(names, ["a2", "b1", "c1", "a3", "b2"]);
    }

    #[test]
    fn affinity_lists_follow_pods() {
        let mut s = Snapshot::new(vec![node("n1", None), node("n2", None)], []);
        let v = json!({"metadata": {"name": "p", "namespace": "d"}, "spec": {"nodeName": "n2", "containers": [],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {}, "topologyKey": "k"}]}}}});
        let p = Arc::new(PodInfo::new(Arc::new(serde_json::from_value(v).unwrap())));
        s.add_pod(p);
        assert_eq!(
            s.have_pods_with_required_anti_affinity()
                .map(|n| n.name())
                .collect::<Vec<_>>(),
            ["n2"]
        );
        s.remove_pod("n2", "d/p").unwrap();
        assert_eq!(s.have_pods_with_affinity().count(), 0);
    }

    #[test]
    fn pods_on_unknown_nodes_wait_for_them() {
        let mut s = Snapshot::new(vec![node("n1", None)], []);
        let v = json!({"metadata": {"name": "p", "namespace": "d"}, "spec": {"nodeName": "n9", "containers": []}});
        s.add_pod(Arc::new(PodInfo::new(Arc::new(
            serde_json::from_value(v).unwrap(),
        ))));
        assert_eq!(s.num_nodes(), 1);
        s.upsert_node(node("n9", None));
        assert_eq!(s.get("n9").unwrap().pods.len(), 1);
    }
}
