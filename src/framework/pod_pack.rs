//! Packed pods. A bound pod is most of a large cluster's memory, and the scheduler
//! reads little of it: k8s-openapi's `Pod` is 2.4 kB in place before any of its strings,
//! lists or maps (its `Container` alone 2 kB). So a bound pod keeps, besides what
//! `PodInfo` derives once (requests, ports, affinity terms), only the fields plugins read
//! of a pod already on a node (labels, node name, volumes, start time, a few flags), and
//! the rest of the pod as JSON text. It comes back whole only when someone wants the
//! whole pod (display, a pod re-run by `explain`, an extender, an update's events).
//! Labels, node names and the part of the text that a ReplicaSet's pods have alike
//! (annotations, tolerations, spread constraints) are shared: one copy per distinct value.
//! The cluster keeps pending pods whole (the scheduling cycle reads all of them); a
//! recording's events are all packed until they are applied.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Toleration, TopologySpreadConstraint, Volume};
use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};

use super::types::{Body, PodInfo};
use crate::api::labels::{Labels, empty_labels};

/// A bound pod as the cluster keeps it.
#[derive(Debug, Clone)]
pub struct Packed {
    /// The pod as JSON, without its labels and without what `shared` holds.
    own: Arc<str>,
    /// Annotations, tolerations and spread constraints as JSON, shared.
    shared: Option<Arc<str>>,
    labels: Option<Arc<Labels>>,
    node_name: Arc<str>,
    scheduler_name: Arc<str>,
    nominated_node_name: Option<Arc<str>>,
    phase: Option<Arc<str>>,
    volumes: Option<Arc<[Volume]>>,
    start_time: Option<Timestamp>,
    flags: u8,
    /// The whole pod once someone asked for it.
    whole: OnceLock<Arc<Pod>>,
}

const TERMINATING: u8 = 1;
const AFFINITY: u8 = 2;
const REQUIRED_ANTI_AFFINITY: u8 = 4;
const PREEMPTED: u8 = 8;
const PRIORITY_SET: u8 = 16;

/// What a ReplicaSet's pods have alike, under the field names the API uses.
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

impl Shared {
    fn take(pod: &mut Pod) -> Shared {
        let spec = pod.spec.as_mut();
        let (tolerations, topology_spread_constraints) = match spec {
            Some(s) => (s.tolerations.take(), s.topology_spread_constraints.take()),
            None => (None, None),
        };
        Shared {
            annotations: pod.metadata.annotations.take(),
            tolerations,
            topology_spread_constraints,
        }
    }

    fn put(self, pod: &mut Pod) {
        pod.metadata.annotations = self.annotations;
        if let Some(s) = pod.spec.as_mut() {
            s.tolerations = self.tolerations;
            s.topology_spread_constraints = self.topology_spread_constraints;
        }
    }

    fn is_empty(&self) -> bool {
        self.annotations.is_none()
            && self.tolerations.is_none()
            && self.topology_spread_constraints.is_none()
    }
}

/// One copy of each distinct value. Values no pod holds any more are swept when the set
/// has doubled since the last sweep (live mode sees pods come and go).
struct Interned<T: ?Sized> {
    set: FxHashSet<Arc<T>>,
    after_sweep: usize,
}

impl<T: ?Sized + Hash + Eq> Interned<T> {
    fn new() -> Mutex<Interned<T>> {
        Mutex::new(Interned {
            set: FxHashSet::default(),
            after_sweep: 0,
        })
    }

    /// The shared copy of `value` (moved in when it is the first).
    fn get<V: Borrow<T> + Into<Arc<T>>>(this: &Mutex<Interned<T>>, value: V) -> Arc<T> {
        let mut t = this.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(a) = t.set.get(value.borrow()) {
            return a.clone();
        }
        if t.set.len() >= 2 * t.after_sweep.max(1024) {
            t.set.retain(|a| Arc::strong_count(a) > 1);
            t.after_sweep = t.set.len();
        }
        let a: Arc<T> = value.into();
        t.set.insert(a.clone());
        a
    }
}

static TEXTS: LazyLock<Mutex<Interned<str>>> = LazyLock::new(Interned::new);
static LABELS: LazyLock<Mutex<Interned<Labels>>> = LazyLock::new(Interned::new);

/// Shared text: node names (30 pods a node) and shared parts (a ReplicaSet's pods).
fn text<V: Borrow<str> + Into<Arc<str>>>(s: V) -> Arc<str> {
    Interned::get(&TEXTS, s)
}

/// Shared labels: a ReplicaSet's pods have the same.
fn labels(l: Labels) -> Arc<Labels> {
    Interned::get(&LABELS, l)
}

/// How many packed bound pods were read back and kept whole (a recording's pending pods
/// are packed too, and taken whole by design), for tests that show a path never does.
static KEPT_WHOLE: AtomicUsize = AtomicUsize::new(0);

pub fn bound_pods_kept_whole() -> usize {
    KEPT_WHOLE.load(Ordering::Relaxed)
}

/// Terminating, with its first DisruptionTarget condition True for reason
/// PreemptionByScheduler.
pub fn terminating_by_preemption(pod: &Pod) -> bool {
    if pod.metadata.deletion_timestamp.is_none() {
        return false;
    }
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_deref());
    match conditions
        .unwrap_or(&[])
        .iter()
        .find(|c| c.type_ == "DisruptionTarget")
    {
        Some(c) => c.status == "True" && c.reason.as_deref() == Some("PreemptionByScheduler"),
        None => false,
    }
}

/// The pod as packing writes it: its JSON without labels and without what `Shared`
/// holds, and the shared part (`None` when empty). `None` if either cannot be written
/// (not expected of types read from JSON). In place when `whole` is the only reference
/// (as when just parsed): a `Pod` is kilobytes to copy.
fn texts_of(whole: &mut Arc<Pod>) -> Option<(String, Option<String>)> {
    let pod = Arc::make_mut(whole);
    let shared = Shared::take(pod);
    let pod_labels = pod.metadata.labels.take();
    let own = serde_json::to_string(&*pod);
    let shared_json = if shared.is_empty() {
        Ok(None)
    } else {
        serde_json::to_string(&shared).map(Some)
    };
    shared.put(pod);
    pod.metadata.labels = pod_labels;
    Some((own.ok()?, shared_json.ok()?))
}

impl Packed {
    fn whole(&self) -> &Arc<Pod> {
        self.whole.get_or_init(|| {
            if !self.node_name.is_empty() {
                KEPT_WHOLE.fetch_add(1, Ordering::Relaxed);
            }
            Arc::new(self.unpack())
        })
    }

    /// The whole pod again. The texts were written by `texts_of` from these very types, so
    /// they read back; if one ever did not, the pod keeps what could be read and the
    /// failure is logged rather than the process stopped.
    fn unpack(&self) -> Pod {
        let mut pod = serde_json::from_str::<Pod>(&self.own).unwrap_or_else(|e| {
            tracing::error!("a packed pod does not read back: {e}");
            Pod::default()
        });
        pod.metadata.labels = self.labels.as_deref().cloned();
        if let Some(json) = &self.shared {
            match serde_json::from_str::<Shared>(json) {
                Ok(s) => s.put(&mut pod),
                Err(e) => tracing::error!("a packed pod's shared part does not read back: {e}"),
            }
        }
        pod
    }
}

impl PodInfo {
    /// The bytes of a packed pod's texts (a packed pod's size is known for free); `None`
    /// for a whole pod.
    pub fn packed_bytes(&self) -> Option<usize> {
        match &self.body {
            Body::Packed(p) => Some(p.own.len() + p.shared.as_ref().map_or(0, |s| s.len())),
            Body::Whole(_) => None,
        }
    }

    /// This pod packed: everything derived from it stays as it was computed from the
    /// whole pod.
    pub fn packed(mut self) -> PodInfo {
        let Body::Whole(whole) = &mut self.body else {
            return self;
        };
        match texts_of(whole) {
            Some((own, shared)) => self.packed_as(own, shared),
            // Kept whole rather than lose anything.
            None => self,
        }
    }

    /// This pod packed with its texts (see `texts_of`). What plugins read is taken
    /// through the accessors, so a packed pod answers as the whole one did.
    fn packed_as(mut self, own: String, shared: Option<String>) -> PodInfo {
        let mut flags = 0;
        for (flag, on) in [
            (TERMINATING, self.is_terminating()),
            (AFFINITY, self.has_affinity()),
            (REQUIRED_ANTI_AFFINITY, self.has_required_anti_affinity()),
            (PREEMPTED, self.is_terminating_by_preemption()),
            (PRIORITY_SET, self.has_priority()),
        ] {
            if on {
                flags |= flag;
            }
        }
        let some = |s: &str| (!s.is_empty()).then(|| text(s));
        let volumes = self.volumes();
        let mut packed = Packed {
            own: own.into(),
            shared: shared.map(text),
            labels: None,
            node_name: text(self.node_name()),
            scheduler_name: text(self.scheduler_name()),
            nominated_node_name: some(self.nominated_node_name()),
            phase: some(self.phase()),
            volumes: (!volumes.is_empty()).then(|| Arc::from(volumes)),
            start_time: self.start_time(),
            flags,
            whole: OnceLock::new(),
        };
        if let Body::Whole(whole) = &mut self.body {
            // Moved out when this is the only reference to the pod, copied otherwise.
            packed.labels = match Arc::get_mut(whole) {
                Some(p) => p.metadata.labels.take(),
                None => whole.metadata.labels.clone(),
            }
            .map(labels);
        }
        self.body = Body::Packed(packed);
        // Images are read only for the pod being scheduled (ImageLocality).
        self.images = Arc::from([]);
        self
    }

    pub fn is_packed(&self) -> bool {
        matches!(self.body, Body::Packed(_))
    }

    /// The whole pod: the stored pod itself, or a packed pod read back from its text
    /// and kept (a parse, and the memory packing saved: plugins read a bound pod
    /// through the accessors below, and the pod being scheduled is whole).
    pub fn pod(&self) -> &Pod {
        match &self.body {
            Body::Whole(p) => p,
            Body::Packed(p) => p.whole(),
        }
    }

    /// [`pod`](Self::pod) as a shared pointer; a packed pod's is read back for the caller
    /// alone (dropped with it) unless it was already kept.
    pub fn full_pod(&self) -> Arc<Pod> {
        match &self.body {
            Body::Whole(p) => p.clone(),
            Body::Packed(p) => match p.whole.get() {
                Some(w) => w.clone(),
                None => Arc::new(p.unpack()),
            },
        }
    }

    /// The stored pod when it is whole.
    pub fn whole(&self) -> Option<&Arc<Pod>> {
        match &self.body {
            Body::Whole(p) => Some(p),
            Body::Packed(_) => None,
        }
    }

    pub fn labels(&self) -> &Labels {
        let l = match &self.body {
            Body::Whole(p) => p.metadata.labels.as_ref(),
            Body::Packed(p) => p.labels.as_deref(),
        };
        l.unwrap_or(empty_labels())
    }

    pub fn node_name(&self) -> &str {
        match &self.body {
            Body::Whole(p) => p
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .unwrap_or(""),
            Body::Packed(p) => &p.node_name,
        }
    }

    pub fn nominated_node_name(&self) -> &str {
        match &self.body {
            Body::Whole(p) => p
                .status
                .as_ref()
                .and_then(|s| s.nominated_node_name.as_deref())
                .unwrap_or(""),
            Body::Packed(p) => p.nominated_node_name.as_deref().unwrap_or(""),
        }
    }

    pub fn scheduler_name(&self) -> &str {
        let name = match &self.body {
            Body::Whole(p) => p.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()),
            Body::Packed(p) => Some(&*p.scheduler_name),
        };
        name.filter(|s| !s.is_empty())
            .unwrap_or("default-scheduler")
    }

    /// `status.phase`, empty when it has none.
    pub fn phase(&self) -> &str {
        let phase = match &self.body {
            Body::Whole(p) => p.status.as_ref().and_then(|s| s.phase.as_deref()),
            Body::Packed(p) => p.phase.as_deref(),
        };
        phase.unwrap_or("")
    }

    /// Whether `spec.priority` is set (by the Priority admission plugin, or in a file).
    pub fn has_priority(&self) -> bool {
        self.flag(PRIORITY_SET, |p| {
            p.spec.as_ref().is_some_and(|s| s.priority.is_some())
        })
    }

    /// The pod's volumes, as its spec lists them.
    pub fn volumes(&self) -> &[Volume] {
        match &self.body {
            Body::Whole(p) => crate::api::volume::pod_volumes(p),
            Body::Packed(p) => p.volumes.as_deref().unwrap_or(&[]),
        }
    }

    /// The pod's `status.startTime`, if it has one.
    pub fn start_time(&self) -> Option<Timestamp> {
        match &self.body {
            Body::Whole(p) => p
                .status
                .as_ref()
                .and_then(|s| s.start_time.as_ref())
                .map(|t| t.0),
            Body::Packed(p) => p.start_time,
        }
    }

    fn flag(&self, flag: u8, whole: impl FnOnce(&Pod) -> bool) -> bool {
        match &self.body {
            Body::Whole(p) => whole(p),
            Body::Packed(p) => p.flags & flag != 0,
        }
    }

    pub fn is_terminating(&self) -> bool {
        self.flag(TERMINATING, |p| p.metadata.deletion_timestamp.is_some())
    }

    /// Upstream `podWithAffinity`: any pod (anti-)affinity at all.
    pub fn has_affinity(&self) -> bool {
        self.flag(AFFINITY, super::types::affinity_of)
    }

    /// Upstream `podWithRequiredAntiAffinity`.
    pub fn has_required_anti_affinity(&self) -> bool {
        self.flag(
            REQUIRED_ANTI_AFFINITY,
            super::types::required_anti_affinity_of,
        )
    }

    /// Terminating because the scheduler preempted it (see
    /// [`terminating_by_preemption`]).
    pub fn is_terminating_by_preemption(&self) -> bool {
        self.flag(PREEMPTED, terminating_by_preemption)
    }

    /// The same pod once the Priority admission plugin has filled in its priority: `pod`
    /// is this pod (whole) with `spec.priority`, perhaps `preemptionPolicy`, set.
    /// Nothing else derived from the pod depends on them.
    pub fn with_resolved_priority(&self, pod: Pod) -> PodInfo {
        let pi = PodInfo {
            priority: pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0),
            body: Body::Whole(Arc::new(pod)),
            ..self.clone()
        };
        if self.is_packed() { pi.packed() } else { pi }
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

    fn packed_of(pi: &PodInfo) -> &Packed {
        match &pi.body {
            Body::Packed(p) => p,
            Body::Whole(_) => panic!("packed"),
        }
    }

    #[test]
    fn a_bound_pod_packs_and_keeps_what_the_scheduler_derived() {
        let whole = pod(Some("n1"));
        let packed = whole.clone().packed();
        assert!(packed.is_packed());
        assert!(packed.whole().is_none());
        assert_eq!(packed.resource, whole.resource);
        assert_eq!(packed.resource.resource.milli_cpu, 1000);
        assert_eq!(packed.host_ports, whole.host_ports);
        assert_eq!(packed.key, "ns/p");
        assert_eq!(packed.node_name(), "n1");
        assert_eq!(packed.scheduler_name(), "default-scheduler");
        assert!(!packed.is_terminating() && !packed.has_affinity());
        // Read back, it is the pod it was, containers, tolerations and all.
        assert_eq!(*packed.full_pod(), **whole.whole().unwrap());
        assert_eq!(packed.pod(), &**whole.whole().unwrap());
    }

    #[test]
    fn what_plugins_read_of_a_packed_pod_needs_no_unpacking() {
        let v = json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u",
                "labels": {"app": "web"}, "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": "n1", "schedulerName": "other", "priority": 5,
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {}, "topologyKey": "zone"}]}},
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}],
                "containers": [{"name": "c"}]},
            "status": {"phase": "Running", "startTime": "2025-12-31T00:00:00Z",
                "nominatedNodeName": "n2",
                "conditions": [{"type": "DisruptionTarget", "status": "True",
                    "reason": "PreemptionByScheduler"}]}});
        let whole = PodInfo::new(Arc::new(serde_json::from_value(v).unwrap()));
        let packed = whole.clone().packed();
        let p = packed_of(&packed);
        for pi in [&whole, &packed] {
            assert_eq!(pi.labels().get("app").map(String::as_str), Some("web"));
            assert_eq!(pi.node_name(), "n1");
            assert_eq!(pi.scheduler_name(), "other");
            assert_eq!(pi.nominated_node_name(), "n2");
            assert_eq!(pi.phase(), "Running");
            assert!(pi.has_priority());
            assert!(pi.is_terminating() && pi.is_terminating_by_preemption());
            assert!(pi.has_affinity() && pi.has_required_anti_affinity());
            assert_eq!(pi.volumes().len(), 1);
            assert_eq!(pi.pvc_keys().collect::<Vec<_>>(), ["ns/c"]);
            assert_eq!(
                pi.start_time(),
                Some("2025-12-31T00:00:00Z".parse().unwrap())
            );
        }
        assert!(p.whole.get().is_none(), "read without unpacking");
        assert_eq!(packed.pod(), &**whole.whole().unwrap());
        assert!(p.whole.get().is_some());
    }

    #[test]
    fn pods_alike_share_labels_node_name_and_text() {
        let a = pod(Some("n1")).packed();
        let mut b = pod(Some("n1"));
        if let Body::Whole(w) = &mut b.body {
            Arc::make_mut(w).metadata.name = Some("q".into());
        }
        let b = b.packed();
        let (pa, pb) = (packed_of(&a), packed_of(&b));
        assert!(Arc::ptr_eq(
            pa.shared.as_ref().unwrap(),
            pb.shared.as_ref().unwrap()
        ));
        assert!(Arc::ptr_eq(&pa.node_name, &pb.node_name));
        let full = b.full_pod();
        assert_eq!(full.metadata.name.as_deref(), Some("q"));
        let tolerations = full.spec.as_ref().and_then(|s| s.tolerations.as_ref());
        assert_eq!(tolerations.map(Vec::len), Some(1));
    }

    #[test]
    fn labels_are_shared_and_kept_apart_from_none() {
        let with = |labels: Option<serde_json::Value>| {
            let mut v = json!({"metadata": {"name": "p", "namespace": "ns"},
                "spec": {"nodeName": "n1", "containers": []}});
            if let Some(l) = labels {
                v["metadata"]["labels"] = l;
            }
            PodInfo::new(Arc::new(serde_json::from_value(v).unwrap())).packed()
        };
        let (a, b) = (with(Some(json!({"x": "1"}))), with(Some(json!({"x": "1"}))));
        let (la, lb) = (&packed_of(&a).labels, &packed_of(&b).labels);
        assert!(Arc::ptr_eq(la.as_ref().unwrap(), lb.as_ref().unwrap()));
        assert_eq!(with(None).pod().metadata.labels, None);
        assert_eq!(
            with(Some(json!({}))).pod().metadata.labels,
            Some(Labels::new())
        );
    }

    #[test]
    fn a_whole_pod_is_its_own_full_pod() {
        let whole = pod(None);
        assert!(!whole.is_packed());
        assert!(Arc::ptr_eq(&whole.full_pod(), whole.whole().unwrap()));
    }

    #[test]
    fn priority_changes_on_a_packed_pod() {
        let packed = pod(Some("n1")).packed();
        let mut p = packed.pod().clone();
        p.spec.as_mut().unwrap().priority = Some(1000);
        let packed = packed.with_resolved_priority(p);
        assert!(packed.is_packed() && packed.has_priority());
        assert_eq!(packed.priority, 1000);
        assert_eq!(packed.pod().spec.as_ref().unwrap().priority, Some(1000));
        assert_eq!(packed.full_pod().spec.as_ref().unwrap().containers.len(), 1);
    }
}
