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
