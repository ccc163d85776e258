//! NodeInfo: a node with the pods on it and their aggregated resource accounting, kept
//! incrementally as upstream's scheduler cache does.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rustc_hash::FxHashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Taint};

use super::types::{PodInfo, PodResource, Resource};
use crate::api::labels::Labels;
use crate::api::node_affinity::node_labels;
use crate::api::pod_resources::{DEFAULT_BIND_ALL_HOST_IP, to_resource_list};

/// Host ports in use on a node: IP → {(protocol, port)} (upstream `HostPortInfo`, a set).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostPortInfo {
    by_ip: BTreeMap<String, BTreeSet<(String, i32)>>,
}

impl HostPortInfo {
    pub fn add(&mut self, ip: &str, protocol: &str, port: i32) {
        if port <= 0 {
            return;
        }
        self.by_ip
            .entry(sanitize_ip(ip).to_string())
            .or_default()
            .insert((sanitize_proto(protocol).to_string(), port));
    }

    pub fn remove(&mut self, ip: &str, protocol: &str, port: i32) {
        if port <= 0 {
            return;
        }
        let ip = sanitize_ip(ip);
        if let Some(set) = self.by_ip.get_mut(ip) {
            set.remove(&(sanitize_proto(protocol).to_string(), port));
            if set.is_empty() {
                self.by_ip.remove(ip);
            }
        }
    }

    /// 0.0.0.0 conflicts with the same (protocol, port) on any IP; another IP conflicts with
    /// itself and with 0.0.0.0.
    pub fn check_conflict(&self, ip: &str, protocol: &str, port: i32) -> bool {
        if port <= 0 {
            return false;
        }
        let ip = sanitize_ip(ip);
        let pp = (sanitize_proto(protocol).to_string(), port);
        if ip == DEFAULT_BIND_ALL_HOST_IP {
            return self.by_ip.values().any(|s| s.contains(&pp));
        }
        [DEFAULT_BIND_ALL_HOST_IP, ip]
            .iter()
            .any(|k| self.by_ip.get(*k).is_some_and(|s| s.contains(&pp)))
    }

    pub fn len(&self) -> usize {
        self.by_ip.values().map(|s| s.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_ip.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, i32)> {
        self.by_ip.iter().flat_map(|(ip, s)| {
            s.iter()
                .map(move |(p, port)| (ip.as_str(), p.as_str(), *port))
        })
    }
}

fn sanitize_ip(ip: &str) -> &str {
    if ip.is_empty() {
        DEFAULT_BIND_ALL_HOST_IP
    } else {
        ip
    }
}

fn sanitize_proto(p: &str) -> &str {
    if p.is_empty() { "TCP" } else { p }
}

/// A node and what is placed on it.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    node: Arc<Node>,
    name: String,
    pub pods: Vec<Arc<PodInfo>>,
    pub pods_with_affinity: Vec<Arc<PodInfo>>,
    pub pods_with_required_anti_affinity: Vec<Arc<PodInfo>>,
    pub used_ports: HostPortInfo,
    pub requested: Resource,
    pub non_zero_requested: Resource,
    pub allocatable: Resource,
    /// Image name (every name listed in status.images) → size in bytes. The names are
    /// shared with the snapshot's count of nodes per image (5,000 nodes list ~250,000).
    pub images: FxHashMap<Arc<str>, i64>,
    /// `namespace/claim` → number of pods on this node using it.
    pub pvc_ref_counts: HashMap<String, i32>,
    pub generation: u64,
    /// InPlacePodLevelResourcesVerticalScaling: pods count their pod-level resize status.
    pod_level_resize: bool,
}

impl NodeInfo {
    /// What a copy of this NodeInfo takes, heap included, roughly (the node object and
    /// the pods are shared, not copied).
    pub fn approx_bytes(&self) -> usize {
        const ALLOC: usize = 16;
        let ptr = std::mem::size_of::<usize>();
        std::mem::size_of::<NodeInfo>()
            + self.name.len()
            + ALLOC
            + (self.pods.capacity()
                + self.pods_with_affinity.capacity()
                + self.pods_with_required_anti_affinity.capacity())
                * ptr
            + 3 * ALLOC
            + self.images.keys().map(|k| k.len() + 48).sum::<usize>()
            + self
                .pvc_ref_counts
                .keys()
                .map(|k| k.len() + 48)
                .sum::<usize>()
            + self.used_ports.len() * 64
            + (self.requested.scalar_resources.len()
                + self.non_zero_requested.scalar_resources.len()
                + self.allocatable.scalar_resources.len())
                * 64
    }

    pub fn new(node: Arc<Node>) -> NodeInfo {
        let name = node.metadata.name.clone().unwrap_or_default();
        let status = node.status.as_ref();
        let allocatable = Resource::from_list(&to_resource_list(
            status.and_then(|s| s.allocatable.as_ref()),
        ));
        let mut images = FxHashMap::default();
        for img in status.and_then(|s| s.images.as_ref()).into_iter().flatten() {
            let size = img.size_bytes.unwrap_or(0);
            for n in img.names.iter().flatten() {
                images.insert(Arc::from(n.as_str()), size);
            }
        }
        NodeInfo {
            node,
            name,
            pods: Vec::new(),
            pods_with_affinity: Vec::new(),
            pods_with_required_anti_affinity: Vec::new(),
            used_ports: HostPortInfo::default(),
            requested: Resource::default(),
            non_zero_requested: Resource::default(),
            allocatable,
            images,
            pvc_ref_counts: HashMap::new(),
            generation: 0,
            pod_level_resize: false,
        }
    }

    pub fn node(&self) -> &Node {
        &self.node
    }

    pub fn node_arc(&self) -> &Arc<Node> {
        &self.node
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn labels(&self) -> &Labels {
        node_labels(&self.node)
    }

    pub fn taints(&self) -> &[Taint] {
        self.node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_deref())
            .unwrap_or(&[])
    }

    pub fn unschedulable(&self) -> bool {
        self.node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false)
    }

    /// Replaces the node object, keeping the pods (a node update).
    pub fn set_node(&mut self, node: Arc<Node>) {
        let pods = std::mem::take(&mut self.pods);
        let resize = self.pod_level_resize;
        *self = NodeInfo::new(node);
        self.pod_level_resize = resize;
        for p in pods {
            self.add_pod(p);
        }
    }

    pub fn add_pod(&mut self, pod: Arc<PodInfo>) {
        if pod.has_affinity() {
            self.pods_with_affinity.push(pod.clone());
        }
        if pod.has_required_anti_affinity() {
            self.pods_with_required_anti_affinity.push(pod.clone());
        }
        self.update(&pod, 1);
        self.pods.push(pod);
    }

    /// Removes the pod with this key. Like upstream, the last pod takes the removed one's
    /// place in the list (this order is visible to preemption).
    pub fn remove_pod(&mut self, key: &str) -> Option<Arc<PodInfo>> {
        fn take(list: &mut Vec<Arc<PodInfo>>, key: &str) -> Option<Arc<PodInfo>> {
            let i = list.iter().position(|p| p.key == key)?;
            Some(list.swap_remove(i))
        }
        take(&mut self.pods_with_affinity, key);
        take(&mut self.pods_with_required_anti_affinity, key);
        let removed = take(&mut self.pods, key)?;
        self.update(&removed, -1);
        Some(removed)
    }

    /// Counts pods under InPlacePodLevelResourcesVerticalScaling (or not): only pods
    /// resizing their pod-level resources count differently.
    pub fn set_pod_level_resize(&mut self, on: bool) {
        if self.pod_level_resize == on {
            return;
        }
        let resizing: Vec<Arc<PodInfo>> = self
            .pods
            .iter()
            .filter(|p| p.resource.resized.is_some())
            .cloned()
            .collect();
        for p in &resizing {
            self.count(&p.resource, -1);
        }
        self.pod_level_resize = on;
        for p in &resizing {
            self.count(&p.resource, 1);
        }
    }

    /// What one of this node's pods counts for in `requested`.
    pub fn pod_request<'p>(&self, pod: &'p PodInfo) -> &'p Resource {
        &pod.resource.counted(self.pod_level_resize).resource
    }

    fn count(&mut self, res: &PodResource, sign: i64) {
        let res = res.counted(self.pod_level_resize);
        self.requested.add_signed(&res.resource, sign);
        self.non_zero_requested.milli_cpu += sign * res.non0_cpu;
        self.non_zero_requested.memory += sign * res.non0_mem;
    }

    fn update(&mut self, pod: &PodInfo, sign: i64) {
        self.count(&pod.resource, sign);
        for hp in &pod.host_ports {
            if sign > 0 {
                self.used_ports.add(&hp.ip, &hp.protocol, hp.port);
            } else {
                self.used_ports.remove(&hp.ip, &hp.protocol, hp.port);
            }
        }
        for key in pod.pvc_keys() {
            if sign > 0 {
                *self.pvc_ref_counts.entry(key).or_default() += 1;
            } else if let Some(c) = self.pvc_ref_counts.get_mut(&key) {
                *c -= 1;
                if *c <= 0 {
                    self.pvc_ref_counts.remove(&key);
                }
            }
        }
        self.generation += 1;
    }

    pub fn has_pod(&self, key: &str) -> bool {
        self.pods.iter().any(|p| p.key == key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node() -> Arc<Node> {
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": "n1"}, "status": {
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "images": [{"names": ["nginx:1", "nginx@sha"], "sizeBytes": 100}]}}))
            .unwrap(),
        )
    }
    fn pod(name: &str, cpu: &str, host_port: i32) -> Arc<PodInfo> {
        let v = json!({"metadata": {"name": name, "namespace": "d"}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": cpu}}, "ports": [{"containerPort": 1, "hostPort": host_port}]}],
            "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]}});
        Arc::new(PodInfo::new(Arc::new(serde_json::from_value(v).unwrap())))
    }

    #[test]
    fn accounting_add_remove() {
        let mut ni = NodeInfo::new(node());
        assert_eq!(ni.allocatable.milli_cpu, 4000);
        assert_eq!(ni.allocatable.allowed_pod_number, 110);
        assert_eq!(ni.images.get("nginx@sha"), Some(&100));
        ni.add_pod(pod("a", "1", 80));
        ni.add_pod(pod("b", "500m", 0));
        assert_eq!(ni.requested.milli_cpu, 1500);
        assert_eq!(ni.non_zero_requested.memory, 2 * 200 * 1024 * 1024);
        assert!(ni.used_ports.check_conflict("", "TCP", 80));
        assert_eq!(ni.pvc_ref_counts.get("d/data"), Some(&2));
        ni.remove_pod("d/a").unwrap();
        assert_eq!(ni.requested.milli_cpu, 500);
        assert!(!ni.used_ports.check_conflict("0.0.0.0", "TCP", 80));
        assert_eq!(ni.pvc_ref_counts.get("d/data"), Some(&1));
        assert!(ni.remove_pod("d/zzz").is_none());
    }

    #[test]
    fn pods_resizing_pod_level_resources_count_as_the_gate_says() {
        let v = json!({"metadata": {"name": "r", "namespace": "d"},
            "spec": {"resources": {"requests": {"cpu": "1"}}, "containers": [{"name": "c"}]},
            "status": {"resources": {"requests": {"cpu": "1"}}, "allocatedResources": {"cpu": "3"}}});
        let resizing = Arc::new(PodInfo::new(Arc::new(serde_json::from_value(v).unwrap())));
        let mut ni = NodeInfo::new(node());
        ni.add_pod(resizing.clone());
        ni.add_pod(pod("a", "500m", 0));
        assert_eq!(ni.requested.milli_cpu, 1500);
        ni.set_pod_level_resize(true);
        assert_eq!(ni.requested.milli_cpu, 3500);
        assert_eq!(ni.pod_request(&resizing).milli_cpu, 3000);
        // A node update keeps the setting; removing the pod takes back what it counted.
        ni.set_node(node());
        assert_eq!(ni.requested.milli_cpu, 3500);
        ni.remove_pod("d/r").unwrap();
        assert_eq!(ni.requested.milli_cpu, 500);
        ni.set_pod_level_resize(false);
        assert_eq!(ni.requested.milli_cpu, 500);
    }

    #[test]
    fn host_port_conflicts() {
        let mut h = HostPortInfo::default();
        h.add("10.0.0.1", "TCP", 80);
        assert!(h.check_conflict("0.0.0.0", "TCP", 80));
        assert!(h.check_conflict("10.0.0.1", "", 80));
        assert!(!h.check_conflict("10.0.0.2", "TCP", 80));
        assert!(!h.check_conflict("10.0.0.1", "UDP", 80));
        h.add("", "UDP", 53);
        assert!(h.check_conflict("10.0.0.2", "UDP", 53));
    }
}
