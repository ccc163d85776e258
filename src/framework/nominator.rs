//! Nominated pods: pods that preemption made room for, by the node they wait for.

use std::collections::HashMap;
use std::sync::Arc;

use super::types::PodInfo;

#[derive(Debug, Clone, Default)]
pub struct Nominator {
    by_node: HashMap<String, Vec<Arc<PodInfo>>>,
    node_of: HashMap<String, String>,
}

impl Nominator {
    /// Records (or moves) a pod's nomination; an empty node removes it.
    pub fn add(&mut self, pod: Arc<PodInfo>, node: &str) {
        self.remove(&pod.uid);
        if node.is_empty() {
            return;
        }
        self.node_of.insert(pod.uid.clone(), node.to_string());
        self.by_node.entry(node.to_string()).or_default().push(pod);
    }

    pub fn remove(&mut self, uid: &str) {
        if let Some(node) = self.node_of.remove(uid)
            && let Some(list) = self.by_node.get_mut(&node)
        {
            list.retain(|p| p.uid != uid);
            if list.is_empty() {
                self.by_node.remove(&node);
            }
        }
    }

    pub fn nominated_pods_for_node(&self, node: &str) -> &[Arc<PodInfo>] {
        self.by_node.get(node).map(Vec::as_slice).unwrap_or(&[])
    }

    pub fn nominated_node(&self, uid: &str) -> Option<&str> {
        self.node_of.get(uid).map(String::as_str)
    }

    pub fn contains(&self, uid: &str) -> bool {
        self.node_of.contains_key(uid)
    }

    pub fn is_empty(&self) -> bool {
        self.by_node.is_empty()
    }
}
