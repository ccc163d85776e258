//! Listers: the non-node objects plugins look up (upstream's informer listers).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Namespace, PersistentVolume, PersistentVolumeClaim, ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};

use crate::PodInfo;
use crate::api::labels::{Labels, empty_labels};

/// Objects by key: `namespace/name` for namespaced kinds, `name` otherwise.
#[derive(Debug, Clone, Default)]
pub struct Listers {
    pub namespaces: BTreeMap<String, Arc<Namespace>>,
    pub pvcs: BTreeMap<String, Arc<PersistentVolumeClaim>>,
    pub pvs: BTreeMap<String, Arc<PersistentVolume>>,
    pub storage_classes: BTreeMap<String, Arc<StorageClass>>,
    pub csi_nodes: BTreeMap<String, Arc<CSINode>>,
    pub pdbs: BTreeMap<String, Arc<PodDisruptionBudget>>,
    pub priority_classes: BTreeMap<String, Arc<PriorityClass>>,
    pub services: BTreeMap<String, Arc<Service>>,
    pub replica_sets: BTreeMap<String, Arc<ReplicaSet>>,
    pub stateful_sets: BTreeMap<String, Arc<StatefulSet>>,
    pub replication_controllers: BTreeMap<String, Arc<ReplicationController>>,
    /// Every pod the scheduler's informer holds, pending and bound (finished pods never
    /// appear), as loaded: upstream's pod lister. Out-of-tree plugins count pods with it
    /// (Coscheduling counts a gang's members); placements are in the snapshot, not here.
    pub pods: BTreeMap<String, Arc<PodInfo>>,
    /// Out-of-tree kinds (e.g. scheduling.x-k8s.io PodGroup) as raw JSON, by kind then key.
    pub custom: BTreeMap<String, BTreeMap<String, Arc<serde_json::Value>>>,
    /// Changes made through [`Listers::set`] and [`Listers::unset`], when recording.
    log: ListerLog,
}

/// One lister entry, typed by kind.
#[derive(Debug, Clone)]
pub enum ListerValue {
    Namespace(Arc<Namespace>),
    PersistentVolumeClaim(Arc<PersistentVolumeClaim>),
    PersistentVolume(Arc<PersistentVolume>),
    StorageClass(Arc<StorageClass>),
    CSINode(Arc<CSINode>),
    PodDisruptionBudget(Arc<PodDisruptionBudget>),
    PriorityClass(Arc<PriorityClass>),
    Service(Arc<Service>),
    ReplicaSet(Arc<ReplicaSet>),
    StatefulSet(Arc<StatefulSet>),
    ReplicationController(Arc<ReplicationController>),
    Pod(Arc<PodInfo>),
    /// An out-of-tree kind, by name.
    Custom(String, Arc<serde_json::Value>),
}

impl ListerValue {
    pub fn kind(&self) -> &str {
        match self {
            ListerValue::Namespace(_) => "Namespace",
            ListerValue::PersistentVolumeClaim(_) => "PersistentVolumeClaim",
            ListerValue::PersistentVolume(_) => "PersistentVolume",
            ListerValue::StorageClass(_) => "StorageClass",
            ListerValue::CSINode(_) => "CSINode",
            ListerValue::PodDisruptionBudget(_) => "PodDisruptionBudget",
            ListerValue::PriorityClass(_) => "PriorityClass",
            ListerValue::Service(_) => "Service",
            ListerValue::ReplicaSet(_) => "ReplicaSet",
            ListerValue::StatefulSet(_) => "StatefulSet",
            ListerValue::ReplicationController(_) => "ReplicationController",
            ListerValue::Pod(_) => "Pod",
            ListerValue::Custom(kind, _) => kind,
        }
    }

    /// The object as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        fn j<T: serde::Serialize>(v: &Arc<T>) -> serde_json::Value {
            serde_json::to_value(&**v).unwrap_or_default()
        }
        match self {
            ListerValue::Namespace(o) => j(o),
            ListerValue::PersistentVolumeClaim(o) => j(o),
            ListerValue::PersistentVolume(o) => j(o),
            ListerValue::StorageClass(o) => j(o),
            ListerValue::CSINode(o) => j(o),
            ListerValue::PodDisruptionBudget(o) => j(o),
            ListerValue::PriorityClass(o) => j(o),
            ListerValue::Service(o) => j(o),
            ListerValue::ReplicaSet(o) => j(o),
            ListerValue::StatefulSet(o) => j(o),
            ListerValue::ReplicationController(o) => j(o),
            ListerValue::Pod(o) => serde_json::to_value(o.pod()).unwrap_or_default(),
            ListerValue::Custom(_, v) => (**v).clone(),
        }
    }
}

/// A change to the listers: an entry set (`Some`) or removed (`None`), by kind and key.
#[derive(Debug, Clone)]
pub struct ListerOp {
    pub kind: String,
    pub key: String,
    pub value: Option<ListerValue>,
}

/// Where lister changes are recorded; copies record nothing.
#[derive(Debug, Default)]
struct ListerLog(Option<Vec<ListerOp>>);

impl Clone for ListerLog {
    fn clone(&self) -> Self {
        ListerLog(None)
    }
}

pub fn ns_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

impl Listers {
    /// Sets an entry; returns the one it replaced.
    pub fn set(&mut self, key: String, value: ListerValue) -> Option<ListerValue> {
        if let Some(log) = self.log.0.as_mut() {
            log.push(ListerOp {
                kind: value.kind().to_string(),
                key: key.clone(),
                value: Some(value.clone()),
            });
        }
        fn put<T>(m: &mut BTreeMap<String, Arc<T>>, k: String, v: Arc<T>) -> Option<Arc<T>> {
            m.insert(k, v)
        }
        use ListerValue as V;
        match value {
            V::Namespace(o) => put(&mut self.namespaces, key, o).map(V::Namespace),
            V::PersistentVolumeClaim(o) => {
                put(&mut self.pvcs, key, o).map(V::PersistentVolumeClaim)
            }
            V::PersistentVolume(o) => put(&mut self.pvs, key, o).map(V::PersistentVolume),
            V::StorageClass(o) => put(&mut self.storage_classes, key, o).map(V::StorageClass),
            V::CSINode(o) => put(&mut self.csi_nodes, key, o).map(V::CSINode),
            V::PodDisruptionBudget(o) => put(&mut self.pdbs, key, o).map(V::PodDisruptionBudget),
            V::PriorityClass(o) => put(&mut self.priority_classes, key, o).map(V::PriorityClass),
            V::Service(o) => put(&mut self.services, key, o).map(V::Service),
            V::ReplicaSet(o) => put(&mut self.replica_sets, key, o).map(V::ReplicaSet),
            V::StatefulSet(o) => put(&mut self.stateful_sets, key, o).map(V::StatefulSet),
            V::ReplicationController(o) => {
                put(&mut self.replication_controllers, key, o).map(V::ReplicationController)
            }
            V::Pod(o) => put(&mut self.pods, key, o).map(V::Pod),
            V::Custom(kind, o) => {
                let old = self.custom.entry(kind.clone()).or_default().insert(key, o);
                old.map(|o| V::Custom(kind, o))
            }
        }
    }

    /// Sets many pods at once: built in one pass when the lister has none yet and
    /// records nothing (a large cluster's load), else one `set` each.
    pub fn set_pods(&mut self, pods: impl Iterator<Item = (String, Arc<PodInfo>)>) {
        if self.pods.is_empty() && self.log.0.is_none() {
            self.pods = pods.collect();
            return;
        }
        for (key, pod) in pods {
            self.set(key, ListerValue::Pod(pod));
        }
    }

    /// Removes an entry by kind and key; returns it.
    pub fn unset(&mut self, kind: &str, key: &str) -> Option<ListerValue> {
        use ListerValue as V;
        let old = match kind {
            "Namespace" => self.namespaces.remove(key).map(V::Namespace),
            "PersistentVolumeClaim" => self.pvcs.remove(key).map(V::PersistentVolumeClaim),
            "PersistentVolume" => self.pvs.remove(key).map(V::PersistentVolume),
            "StorageClass" => self.storage_classes.remove(key).map(V::StorageClass),
            "CSINode" => self.csi_nodes.remove(key).map(V::CSINode),
            "PodDisruptionBudget" => self.pdbs.remove(key).map(V::PodDisruptionBudget),
            "PriorityClass" => self.priority_classes.remove(key).map(V::PriorityClass),
            "Service" => self.services.remove(key).map(V::Service),
            "ReplicaSet" => self.replica_sets.remove(key).map(V::ReplicaSet),
            "StatefulSet" => self.stateful_sets.remove(key).map(V::StatefulSet),
            "ReplicationController" => self
                .replication_controllers
                .remove(key)
                .map(V::ReplicationController),
            "Pod" => self.pods.remove(key).map(V::Pod),
            other => self
                .custom
                .get_mut(other)
                .and_then(|m| m.remove(key))
                .map(|o| V::Custom(other.to_string(), o)),
        };
        if old.is_some()
            && let Some(log) = self.log.0.as_mut()
        {
            log.push(ListerOp {
                kind: kind.to_string(),
                key: key.to_string(),
                value: None,
            });
        }
        old
    }

    /// Starts recording changes; copies never record.
    pub fn record_changes(&mut self) {
        self.log.0.get_or_insert_with(Vec::new);
    }

    /// The changes recorded since the last call.
    pub fn take_changes(&mut self) -> Vec<ListerOp> {
        self.log.0.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Makes a recorded change again (on a copy taken before it was made).
    pub fn apply(&mut self, op: &ListerOp) {
        match &op.value {
            Some(v) => {
                self.set(op.key.clone(), v.clone());
            }
            None => {
                self.unset(&op.kind, &op.key);
            }
        }
    }

    /// A rough size in bytes, for memory budgets.
    pub fn approx_bytes(&self) -> usize {
        let entries = self.namespaces.len()
            + self.pvcs.len()
            + self.pvs.len()
            + self.storage_classes.len()
            + self.csi_nodes.len()
            + self.pdbs.len()
            + self.priority_classes.len()
            + self.services.len()
            + self.replica_sets.len()
            + self.stateful_sets.len()
            + self.replication_controllers.len()
            + self.pods.len()
            + self.custom.values().map(BTreeMap::len).sum::<usize>();
        // An entry: its key (heap and String), the Arc and B-tree bookkeeping.
        let keys: usize = self.pods.keys().map(String::len).sum();
        entries * 112 + keys
    }

    /// Labels of a namespace; a namespace that is not known has none.
    pub fn namespace_labels(&self, ns: &str) -> &Labels {
        self.namespaces
            .get(ns)
            .and_then(|n| n.metadata.labels.as_ref())
            .unwrap_or(empty_labels())
    }

    pub fn pvc(&self, namespace: &str, name: &str) -> Option<&Arc<PersistentVolumeClaim>> {
        self.pvcs.get(&ns_key(namespace, name))
    }

    pub fn pdbs_in(&self, namespace: &str) -> impl Iterator<Item = &Arc<PodDisruptionBudget>> {
        let prefix = format!("{namespace}/");
        self.pdbs
            .range(prefix.clone()..)
            .take_while(move |(k, _)| k.starts_with(&prefix))
            .map(|(_, v)| v)
    }

    /// Pods of a namespace whose label `key` has the value `value` (upstream's
    /// `podLister.Pods(ns).List(SelectorFromSet{key: value})`), in key order.
    pub fn pods_with_label<'a>(
        &'a self,
        namespace: &str,
        key: &'a str,
        value: &'a str,
    ) -> impl Iterator<Item = &'a Arc<PodInfo>> {
        Listers::in_namespace(&self.pods, namespace)
            .filter(move |p| p.labels().get(key).is_some_and(|v| v == value))
    }

    /// One out-of-tree object (e.g. kind `PodGroup`, key `namespace/name`) as JSON.
    pub fn custom_object(&self, kind: &str, key: &str) -> Option<&Arc<serde_json::Value>> {
        self.custom.get(kind)?.get(key)
    }

    /// Every out-of-tree object of a kind, by key.
    pub fn custom_objects(
        &self,
        kind: &str,
    ) -> impl Iterator<Item = (&String, &Arc<serde_json::Value>)> {
        self.custom.get(kind).into_iter().flatten()
    }

    pub fn in_namespace<'a, T>(
        map: &'a BTreeMap<String, Arc<T>>,
        namespace: &str,
    ) -> impl Iterator<Item = &'a Arc<T>> {
        let prefix = format!("{namespace}/");
        map.range(prefix.clone()..)
            .take_while(move |(k, _)| k.starts_with(&prefix))
            .map(|(_, v)| v)
    }
}
