//! Packed pods. A bound pod's containers (and their statuses) are most of its memory:
//! k8s-openapi's `Container` is 2 kB in place before any of its strings or maps. The
//! scheduler reads them only through what `PodInfo` derives once (requests, host ports,
//! images), so a bound pod keeps them as JSON text and they come back only when someone
//! wants to see the whole pod (display, a pod re-run by `explain`, an extender). Its
//! annotations, tolerations and spread constraints go with them, as a second text that
//! pods with the same ones share (a ReplicaSet's pods): no plugin reads them of a pod
//! already on a node, but re-running that pod does.
//! The cluster keeps pending pods whole (the scheduling cycle reads their containers);
//! a recording's events are all packed until they are applied.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, EphemeralContainer, Pod, Toleration, TopologySpreadConstraint,
};
use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};

use super::types::PodInfo;

/// A packed pod's text: what packing took out of it, and the part it shares with pods
/// that have the same annotations, tolerations and spread constraints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    own: Arc<str>,
    shared: Option<Arc<str>>,
}

/// What packing takes out of a pod that is its own, under the field names the API uses.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Parts {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    containers: Vec<Container>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    init_containers: Option<Vec<Container>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ephemeral_containers: Option<Vec<EphemeralContainer>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    container_statuses: Option<Vec<ContainerStatus>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    init_container_statuses: Option<Vec<ContainerStatus>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ephemeral_container_statuses: Option<Vec<ContainerStatus>>,
}

/// What packing takes out of a pod that its siblings have the same.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Shared {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tolerations: Option<Vec<Toleration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
}

impl Parts {
    fn take(pod: &mut Pod) -> (Parts, Shared) {
        let mut parts = Parts::default();
        let mut shared = Shared {
            annotations: pod.metadata.annotations.take(),
            ..Shared::default()
        };
        if let Some(s) = pod.spec.as_mut() {
            shared.tolerations = s.tolerations.take();
            shared.topology_spread_constraints = s.topology_spread_constraints.take();
            parts.containers = std::mem::take(&mut s.containers);
            parts.init_containers = s.init_containers.take();
            parts.ephemeral_containers = s.ephemeral_containers.take();
        }
        if let Some(s) = pod.status.as_mut() {
            parts.container_statuses = s.container_statuses.take();
            parts.init_container_statuses = s.init_container_statuses.take();
            parts.ephemeral_container_statuses = s.ephemeral_container_statuses.take();
        }
        (parts, shared)
    }

    fn put(self, shared: Shared, pod: &mut Pod) {
        pod.metadata.annotations = shared.annotations;
        if let Some(s) = pod.spec.as_mut() {
            s.tolerations = shared.tolerations;
            s.topology_spread_constraints = shared.topology_spread_constraints;
            s.containers = self.containers;
            s.init_containers = self.init_containers;
            s.ephemeral_containers = self.ephemeral_containers;
        }
        if let Some(s) = pod.status.as_mut() {
            s.container_statuses = self.container_statuses;
            s.init_container_statuses = self.init_container_statuses;
            s.ephemeral_container_statuses = self.ephemeral_container_statuses;
        }
    }
}

impl Shared {
    fn is_empty(&self) -> bool {
        self.annotations.is_none()
            && self.tolerations.is_none()
            && self.topology_spread_constraints.is_none()
    }
}

/// One copy of each shared text: a ReplicaSet's pods have the same tolerations and
/// spread constraints, so 150,000 running pods hold a few hundred texts, not 150,000
/// (60 MB on the benchmark's cluster). Texts no pod holds any more are swept when the
/// set has doubled since the last sweep (live mode sees pods come and go).
fn shared_text(text: String) -> Arc<str> {
    #[derive(Default)]
    struct Texts {
        set: FxHashSet<Arc<str>>,
        after_sweep: usize,
    }
    static TEXTS: LazyLock<Mutex<Texts>> = LazyLock::new(Mutex::default);
    let mut t = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(a) = t.set.get(text.as_str()) {
        return a.clone();
    }
    if t.set.len() >= 2 * t.after_sweep.max(1024) {
        t.set.retain(|a| Arc::strong_count(a) > 1);
        t.after_sweep = t.set.len();
    }
    let a: Arc<str> = text.into();
    t.set.insert(a.clone());
    a
}

impl PodInfo {
    /// This pod packed: everything derived from its containers stays as it was computed
    /// from the whole pod.
    pub fn packed(mut self) -> PodInfo {
        if self.packed.is_some() {
            return self;
        }
        // In place when this PodInfo holds the only reference (as when just parsed): a
        // `Pod` is kilobytes to move.
        let pod = Arc::make_mut(&mut self.pod);
        let (parts, shared) = Parts::take(pod);
        let shared_json = if shared.is_empty() {
            Ok(None)
        } else {
            serde_json::to_string(&shared).map(Some)
        };
        match (serde_json::to_string(&parts), shared_json) {
            (Ok(own), Ok(shared)) => {
                self.packed = Some(Packed {
                    own: own.into(),
                    shared: shared.map(shared_text),
                });
                // Images are read only for the pod being scheduled (ImageLocality).
                self.images = Arc::from([]);
            }
            // Not expected for types that came from JSON; keep the pod whole rather than
            // lose anything.
            _ => parts.put(shared, pod),
        }
        self
    }

    pub fn is_packed(&self) -> bool {
        self.packed.is_some()
    }

    /// The whole pod, containers included: the stored pod itself unless it is packed.
    pub fn full_pod(&self) -> Arc<Pod> {
        let Some(packed) = &self.packed else {
            return self.pod.clone();
        };
        let mut pod = (*self.pod).clone();
        // The texts were written by `packed` from these very types, so they read back.
        let shared = match &packed.shared {
            Some(json) => serde_json::from_str::<Shared>(json).unwrap_or_default(),
            None => Shared::default(),
        };
        if let Ok(parts) = serde_json::from_str::<Parts>(&packed.own) {
            parts.put(shared, &mut pod);
        }
        Arc::new(pod)
    }

    /// The same pod once the Priority admission plugin has filled in its priority: `pod`
    /// is this pod (packed or not) with `spec.priority`, perhaps `preemptionPolicy`, set.
    /// Nothing else derived from the pod depends on them.
    pub fn with_resolved_priority(&self, pod: Pod) -> PodInfo {
        PodInfo {
            priority: pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0),
            pod: Arc::new(pod),
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(node: Option<&str>) -> PodInfo {
        let mut v = json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u",
                "annotations": {"a": "b"}},
            "spec": {"tolerations": [{"key": "k", "operator": "Exists"}],
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule"}],
                "containers": [{"name": "c", "image": "nginx",
                "ports": [{"containerPort": 80, "hostPort": 8080}],
                "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}],
                "initContainers": [{"name": "i", "image": "busybox",
                "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"containerStatuses": [{"name": "c", "image": "nginx", "imageID": "",
                "ready": true, "restartCount": 2}]}});
        if let Some(n) = node {
            v["spec"]["nodeName"] = json!(n);
        }
        PodInfo::new(Arc::new(serde_json::from_value(v).unwrap()))
    }

    #[test]
    fn a_bound_pod_packs_and_keeps_what_the_scheduler_derived() {
        let whole = pod(Some("n1"));
        let packed = whole.clone().packed();
        assert!(packed.is_packed());
        let spec = packed.pod.spec.as_ref().unwrap();
        assert!(spec.containers.is_empty() && spec.init_containers.is_none());
        assert!(spec.tolerations.is_none() && spec.topology_spread_constraints.is_none());
        assert!(packed.pod.metadata.annotations.is_none());
        assert!(
            packed
                .pod
                .status
                .as_ref()
                .unwrap()
                .container_statuses
                .is_none()
        );
        assert_eq!(packed.resource, whole.resource);
        assert_eq!(packed.resource.resource.milli_cpu, 1000);
        assert_eq!(packed.host_ports, whole.host_ports);
        assert_eq!(packed.key, "ns/p");
        assert_eq!(*packed.full_pod(), *whole.pod);
    }

    #[test]
    fn pods_with_the_same_tolerations_share_one_text() {
        let a = pod(Some("n1")).packed();
        let mut b = pod(Some("n2"));
        Arc::make_mut(&mut b.pod).metadata.name = Some("q".into());
        let b = b.packed();
        let (Some(pa), Some(pb)) = (&a.packed, &b.packed) else {
            panic!("both packed")
        };
        assert!(Arc::ptr_eq(
            pa.shared.as_ref().unwrap(),
            pb.shared.as_ref().unwrap()
        ));
        let full = b.full_pod();
        assert_eq!(full.metadata.name.as_deref(), Some("q"));
        let tolerations = full.spec.as_ref().and_then(|s| s.tolerations.as_ref());
        assert_eq!(tolerations.map(Vec::len), Some(1));
    }

    #[test]
    fn a_whole_pod_is_its_own_full_pod() {
        let whole = pod(None);
        assert!(!whole.is_packed());
        assert!(Arc::ptr_eq(&whole.full_pod(), &whole.pod));
        let packed = whole.clone().packed();
        assert_eq!(*packed.full_pod(), *whole.pod);
    }

    #[test]
    fn priority_changes_on_a_packed_pod() {
        let packed = pod(Some("n1")).packed();
        let mut p = (*packed.pod).clone();
        p.spec.as_mut().unwrap().priority = Some(1000);
        let packed = packed.with_resolved_priority(p);
        assert_eq!(packed.priority, 1000);
        assert_eq!(packed.pod.spec.as_ref().unwrap().priority, Some(1000));
        assert_eq!(packed.full_pod().spec.as_ref().unwrap().containers.len(), 1);
    }
}
