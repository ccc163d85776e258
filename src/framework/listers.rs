//! Listers: the non-node objects plugins look up (upstream's informer listers).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Namespace, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};

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
    pub pods: BTreeMap<String, Arc<Pod>>,
    /// Out-of-tree kinds (e.g. scheduling.x-k8s.io PodGroup) as raw JSON, by kind then key.
    pub custom: BTreeMap<String, BTreeMap<String, Arc<serde_json::Value>>>,
}

pub fn ns_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

impl Listers {
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
    ) -> impl Iterator<Item = &'a Arc<Pod>> {
        Listers::in_namespace(&self.pods, namespace).filter(move |p| {
            p.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(key))
                .is_some_and(|v| v == value)
        })
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
