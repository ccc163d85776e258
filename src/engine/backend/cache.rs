//! The scheduler's cache, as upstream's `backend/cache`: the NodeInfos of the cluster as
//! the scheduler sees them, which is the cluster's bound pods plus the pods it assumed onto
//! a node ahead of their binding. Cluster changes, assume and forget all go through here;
//! plugins read the result as the framework's `Snapshot`.
//!
//! Upstream copies the cache into a fresh snapshot at the start of each cycle. Here the
//! snapshot is updated in place between cycles, which holds the same NodeInfos at every
//! cycle's start without the copy.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;

use crate::framework::PodInfo;
use crate::framework::snapshot::{Snapshot, SnapshotOp};

pub struct Cache {
    snapshot: Snapshot,
    /// Pods assumed onto a node whose binding the cluster has not shown yet: uid → node.
    assumed: HashMap<String, String>,
}

impl Cache {
    pub fn new(snapshot: Snapshot) -> Cache {
        Cache {
            snapshot,
            assumed: HashMap::new(),
        }
    }

    /// What plugins read (upstream's `Snapshot`, a lister of NodeInfos).
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// `AssumePod`: the pod (its `spec.nodeName` set) counts on its node from now on, as
    /// if bound. A node the cache does not hold keeps it aside until the node comes.
    pub fn assume_pod(&mut self, pod: Arc<PodInfo>) {
        self.assumed
            .insert(pod.uid.clone(), pod.node_name().to_string());
        self.snapshot.add_pod(pod);
    }

    /// `ForgetPod`: an assumed pod whose binding will not happen leaves its node.
    pub fn forget_pod(&mut self, pod: &PodInfo) {
        if let Some(node) = self.assumed.remove(&pod.uid) {
            self.snapshot.remove_pod(&node, &pod.key);
        }
    }

    /// `IsAssumedPod`: upstream's event handlers ignore updates of such a pod until its
    /// binding arrives.
    pub fn is_assumed_pod(&self, uid: &str) -> bool {
        self.assumed.contains_key(uid)
    }

    /// A pod added, updated or deleted in the cluster (`AddPod`, `UpdatePod`, `RemovePod`).
    /// A bound pod replaces any assumed copy, on whichever node it was assumed; a deleted
    /// pod leaves its node, and its assumed place too.
    pub fn on_pod_change(&mut self, old: Option<&PodInfo>, new: Option<&Arc<PodInfo>>) {
        if let Some(o) = old
            && !o.node_name().is_empty()
        {
            self.snapshot.remove_pod(o.node_name(), &o.key);
        }
        match new {
            None => {
                if let Some(o) = old {
                    self.forget_pod(o);
                }
            }
            Some(n) if !n.node_name().is_empty() => {
                if let Some(a) = self.assumed.remove(&n.uid)
                    && a != n.node_name()
                {
                    self.snapshot.remove_pod(&a, &n.key);
                }
                self.snapshot.remove_pod(n.node_name(), &n.key);
                self.snapshot.add_pod(n.clone());
            }
            // Still pending: nothing of it is on a node unless assumed, which stays.
            Some(_) => {}
        }
    }

    /// A node added or updated (`AddNode`, `UpdateNode`): its pods stay.
    pub fn upsert_node(&mut self, node: Arc<Node>) {
        self.snapshot.upsert_node(node);
    }

    /// `RemoveNode`: its pods are kept aside in case it comes back, as upstream keeps a
    /// node's pods while the node is gone.
    pub fn remove_node(&mut self, name: &str) {
        self.snapshot.remove_node(name);
    }

    /// From now on every change is logged, for history to rebuild any cycle's world.
    pub fn record_changes(&mut self) {
        self.snapshot.record_changes();
    }

    /// The changes logged since the last call.
    pub fn take_changes(&mut self) -> Vec<SnapshotOp> {
        self.snapshot.take_changes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::testing::{node_obj, pod};
    use serde_json::json;

    fn node(name: &str) -> Arc<Node> {
        node_obj(json!({"metadata": {"name": name}}))
    }

    fn pending(name: &str) -> Arc<PodInfo> {
        pod(json!({"metadata": {"name": name}}))
    }

    fn placed(name: &str, on: &str) -> Arc<PodInfo> {
        Arc::new(pending(name).bound_to(on))
    }

    fn pods_on(c: &Cache, node: &str) -> Vec<String> {
        let ni = c.snapshot().get(node).expect("node in the snapshot");
        ni.pods.iter().map(|p| p.key.clone()).collect()
    }

    fn cache() -> Cache {
        Cache::new(Snapshot::new(vec![node("a"), node("b")], Vec::new()))
    }

    #[test]
    fn an_assumed_pod_counts_on_its_node_until_forgotten() {
        let mut c = cache();
        let p = placed("p", "a");
        c.assume_pod(p.clone());
        assert!(c.is_assumed_pod(&p.uid));
        assert_eq!(pods_on(&c, "a"), vec![p.key.clone()]);
        c.forget_pod(&p);
        assert!(!c.is_assumed_pod(&p.uid));
        assert!(pods_on(&c, "a").is_empty());
        // Forgetting twice is harmless (upstream ignores the error).
        c.forget_pod(&p);
        assert!(!c.is_assumed_pod(&p.uid));
    }

    #[test]
    fn a_binding_to_another_node_moves_the_assumed_pod_there() {
        let mut c = cache();
        c.assume_pod(placed("p", "a"));
        let bound = placed("p", "b");
        c.on_pod_change(None, Some(&bound));
        assert!(pods_on(&c, "a").is_empty());
        assert_eq!(pods_on(&c, "b"), vec![bound.key.clone()]);
        assert!(!c.is_assumed_pod(&bound.uid));
    }

    #[test]
    fn a_binding_on_the_assumed_node_replaces_the_copy_once() {
        let mut c = cache();
        c.assume_pod(placed("p", "a"));
        let bound = placed("p", "a");
        c.on_pod_change(None, Some(&bound));
        assert_eq!(pods_on(&c, "a").len(), 1);
        assert!(!c.is_assumed_pod(&bound.uid));
    }

    #[test]
    fn deleting_an_assumed_pod_frees_its_place() {
        let mut c = cache();
        let pending = pending("p");
        c.assume_pod(placed("p", "a"));
        c.on_pod_change(Some(&pending), None);
        assert!(pods_on(&c, "a").is_empty());
        assert!(!c.is_assumed_pod(&pending.uid));
    }

    #[test]
    fn an_update_of_a_pending_pod_keeps_its_assumed_place() {
        let mut c = cache();
        let pending = pending("p");
        c.assume_pod(placed("p", "a"));
        c.on_pod_change(Some(&pending), Some(&pending));
        assert_eq!(pods_on(&c, "a").len(), 1);
        assert!(c.is_assumed_pod(&pending.uid));
    }

    #[test]
    fn a_removed_node_keeps_its_pods_for_its_return() {
        let mut c = cache();
        c.on_pod_change(None, Some(&placed("p", "a")));
        c.remove_node("a");
        assert!(c.snapshot().get("a").is_none());
        c.upsert_node(node("a"));
        assert_eq!(pods_on(&c, "a").len(), 1);
    }
}
