//! ClusterState: the objects of a cluster by kind, and the scheduler's views built from
//! them (Snapshot of nodes with their bound pods, listers, nominated pods, pending pods).

mod enums;
mod lean;
pub mod locate;
pub mod manifest;
pub mod object;
pub mod stream;

use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

pub use manifest::{Located, ManifestError};
pub use object::{Object, ObjectError};

use crate::features::{Features, Gate};
use crate::framework::listers::{ListerValue, Listers};
use crate::framework::nominator::Nominator;
use crate::framework::{PodInfo, Snapshot};

/// An object as the cluster keeps it, for change notifications.
#[derive(Debug, Clone)]
pub enum Stored {
    Node(Arc<Node>),
    /// Bound pods are packed (see `framework::pod_pack`).
    Pod(Arc<PodInfo>),
    Other {
        kind: String,
        value: serde_json::Value,
    },
}

/// A lister entry as a change notification carries it.
fn stored_value(v: &ListerValue) -> Stored {
    Stored::Other {
        kind: v.kind().to_string(),
        value: v.to_json(),
    }
}

impl Stored {
    fn of(obj: &Object) -> Stored {
        match obj {
            Object::Node(n) => Stored::Node(Arc::new((**n).clone())),
            Object::Pod(p) => Stored::Pod(Arc::new(PodInfo::new(Arc::new((**p).clone())))),
            Object::PackedPod(pi) => Stored::Pod(pi.clone()),
            Object::Custom { kind, value, .. } => Stored::Other {
                kind: kind.clone(),
                value: value.clone(),
            },
            other => Stored::Other {
                kind: other.kind().to_string(),
                value: other.to_value(),
            },
        }
    }
}

/// What an add, update or delete did: the object before and after.
#[derive(Debug, Clone)]
pub struct Change {
    pub kind: String,
    pub key: String,
    pub old: Option<Stored>,
    pub new: Option<Stored>,
}

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(transparent)]
    Manifest(#[from] Box<ManifestError>),
    #[error("{file}:{line}: duplicate {kind} {key} (first defined at {first})")]
    Duplicate {
        file: String,
        line: usize,
        kind: String,
        key: String,
        first: String,
    },
    /// Nothing read at all: an empty file or standard input (a `kubectl get` that failed
    /// and printed nothing), or an empty List. Read as a cluster it would say "nothing
    /// pending", which is not what the input says.
    #[error(
        "{file}: no objects in it (empty, or an empty List); if a command wrote it, did that command fail?"
    )]
    Empty { file: String },
}

/// The cluster as kubestep sees it.
#[derive(Debug, Clone, Default)]
pub struct ClusterState {
    /// Nodes in the order they were added (the node tree order derives from it).
    nodes: Vec<Arc<Node>>,
    node_index: std::collections::HashMap<String, usize>,
    /// Pods by `namespace/name`, with what the scheduler derives from each (bound pods
    /// packed), and when each was added.
    pods: BTreeMap<String, (u64, Arc<PodInfo>)>,
    /// The same pods by when they were added, so listing in that order and deleting are
    /// cheap. Shares the pods rather than repeating keys: a large cluster has many.
    pod_order: BTreeMap<u64, Arc<PodInfo>>,
    next_seq: u64,
    pub listers: Listers,
    /// What loading skipped or adjusted, for the user to read.
    pub notes: Vec<String>,
}

impl ClusterState {
    /// Loads and merges manifest files, in order: lean (see `lean.rs`), streamed, gzip
    /// or not; `-` is standard input.
    pub fn load(paths: &[&Path]) -> Result<ClusterState, ClusterError> {
        let mut objects = Vec::new();
        let mut notes = Vec::new();
        for p in paths {
            let name = p.display().to_string();
            let input = stream::open(&name).map_err(Box::new)?;
            let shown = stream::display_name(&name);
            let (objs, n) = stream::load(input, &shown, true).map_err(Box::new)?;
            if objs.is_empty() && n.0.is_empty() {
                return Err(ClusterError::Empty {
                    file: shown.to_string(),
                });
            }
            objects.extend(objs);
            notes.extend(n.0);
        }
        let mut cs = ClusterState::from_objects(objects)?;
        cs.notes.splice(0..0, notes);
        Ok(cs)
    }

    pub fn from_objects(objects: Vec<Located<Object>>) -> Result<ClusterState, ClusterError> {
        let mut cs = ClusterState::default();
        // Where each object was first seen (file number, line), to name both places of
        // a duplicate.
        let mut files: Vec<String> = Vec::new();
        let mut seen: FxHashMap<(String, String), Place> = FxHashMap::default();
        // Pods are stored together at the end: the maps are built from them in one
        // pass, not by 150,000 inserts of long keys. `None`: a finished pod.
        let mut pods: Vec<(String, Place, Option<Arc<PodInfo>>)> =
            Vec::with_capacity(objects.len());
        for Located {
            value: mut obj,
            file,
            line,
        } in objects
        {
            obj.normalize();
            let f = match files.iter().rposition(|f| *f == file) {
                Some(f) => f,
                None => {
                    files.push(file);
                    files.len() - 1
                }
            };
            let key = obj.key();
            if matches!(obj, Object::Pod(_) | Object::PackedPod(_)) {
                let pi = match stored_pod(obj) {
                    Some(Ok(pi)) => Some(pi),
                    Some(Err(phase)) => {
                        cs.notes.push(finished_pod_note(&key, &phase));
                        None
                    }
                    None => None,
                };
                pods.push((key, (f, line), pi));
                continue;
            }
            let id = (obj.kind().to_string(), key);
            if let Some(&first) = seen.get(&id) {
                return Err(duplicate(&files, first, (f, line), id));
            }
            seen.insert(id, (f, line));
            cs.add(obj);
        }
        let mut keys = rustc_hash::FxHashSet::default();
        keys.reserve(pods.len());
        for (key, at, _) in &pods {
            if !keys.insert(key.as_str()) {
                let first = pods.iter().find(|p| p.0 == *key).map_or(*at, |p| p.1);
                return Err(duplicate(&files, first, *at, ("Pod".into(), key.clone())));
            }
        }
        drop(keys);
        cs.put_new_pods(
            pods.into_iter()
                .filter_map(|(key, _, pi)| Some((key, pi?)))
                .collect(),
        );
        cs.resolve_priorities();
        Ok(cs)
    }

    /// Adds or replaces an object.
    pub fn add(&mut self, obj: Object) {
        self.upsert(obj);
    }

    /// Adds or replaces an object and says what changed (for the queue's event handling).
    pub fn upsert(&mut self, obj: Object) -> Option<Change> {
        let key = obj.key();
        let kind = obj.kind().to_string();
        // Nodes and pods are shared between the cluster, the change and the snapshot
        // rather than copied: they are most of a large cluster's memory.
        let (new, old) = match obj {
            Object::Node(n) => {
                let n = Arc::new(*n);
                let new = Stored::Node(n.clone());
                let old = match self.node_index.get(&key) {
                    Some(&i) => Some(Stored::Node(std::mem::replace(&mut self.nodes[i], n))),
                    None => {
                        self.node_index.insert(key.clone(), self.nodes.len());
                        self.nodes.push(n);
                        None
                    }
                };
                (new, old)
            }
            obj @ (Object::Pod(_) | Object::PackedPod(_)) => {
                let pi = match stored_pod(obj)? {
                    Ok(pi) => pi,
                    Err(phase) => {
                        // To the scheduler's informer, a pod that finishes is deleted.
                        self.notes.push(finished_pod_note(&key, &phase));
                        return self.remove("Pod", &key);
                    }
                };
                let new = Stored::Pod(pi.clone());
                (new, self.put_pod(&key, pi).map(Stored::Pod))
            }
            other => {
                let new = Stored::of(&other);
                (new, self.listers_insert(other, &key))
            }
        };
        Some(Change {
            kind,
            key,
            old,
            new: Some(new),
        })
    }

    /// Stores pods not stored yet, in this order, in every view (as `put_pod` each).
    fn put_new_pods(&mut self, pods: Vec<(String, Arc<PodInfo>)>) {
        if !self.pods.is_empty() || !self.listers.pods.is_empty() {
            for (key, pi) in pods {
                self.put_pod(&key, pi);
            }
            return;
        }
        let first = self.next_seq;
        self.next_seq += pods.len() as u64;
        self.listers
            .set_pods(pods.iter().map(|(k, pi)| (k.clone(), pi.clone())));
        self.pod_order = (first..)
            .zip(pods.iter().map(|(_, pi)| pi.clone()))
            .collect();
        self.pods = (first..)
            .zip(pods)
            .map(|(seq, (key, pi))| (key, (seq, pi)))
            .collect();
    }

    /// Stores a pod in every view (the pod lister shares the stored object); the pod it
    /// replaced, which keeps its place in the order.
    fn put_pod(&mut self, key: &str, pi: Arc<PodInfo>) -> Option<Arc<PodInfo>> {
        self.listers
            .set(key.to_string(), ListerValue::Pod(pi.clone()));
        let seq = match self.pods.get(key) {
            Some((seq, _)) => *seq,
            None => {
                self.next_seq += 1;
                self.next_seq - 1
            }
        };
        self.pod_order.insert(seq, pi.clone());
        self.pods
            .insert(key.to_string(), (seq, pi))
            .map(|(_, old)| old)
    }

    fn listers_insert(&mut self, obj: Object, key: &str) -> Option<Stored> {
        use ListerValue as V;
        let value = match obj {
            Object::Namespace(o) => V::Namespace(Arc::new(*o)),
            Object::PersistentVolume(o) => V::PersistentVolume(Arc::new(*o)),
            Object::PersistentVolumeClaim(o) => V::PersistentVolumeClaim(Arc::new(*o)),
            Object::StorageClass(o) => V::StorageClass(Arc::new(*o)),
            Object::CSINode(o) => V::CSINode(Arc::new(*o)),
            Object::PodDisruptionBudget(o) => V::PodDisruptionBudget(Arc::new(*o)),
            Object::PriorityClass(o) => V::PriorityClass(Arc::new(*o)),
            Object::Service(o) => V::Service(Arc::new(*o)),
            Object::ReplicaSet(o) => V::ReplicaSet(Arc::new(*o)),
            Object::StatefulSet(o) => V::StatefulSet(Arc::new(*o)),
            Object::ReplicationController(o) => V::ReplicationController(Arc::new(*o)),
            Object::Custom { kind, value, .. } => V::Custom(kind, Arc::new(value)),
            Object::Node(_) | Object::Pod(_) | Object::PackedPod(_) => return None,
        };
        self.listers
            .set(key.to_string(), value)
            .map(|old| stored_value(&old))
    }

    /// Removes an object by kind and key (`namespace/name` or `name`).
    pub fn remove(&mut self, kind: &str, key: &str) -> Option<Change> {
        let old = match kind {
            "Node" => {
                let i = self.node_index.remove(key)?;
                let n = self.nodes.remove(i);
                self.node_index = self
                    .nodes
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n.metadata.name.clone().unwrap_or_default(), i))
                    .collect();
                Some(Stored::Node(n))
            }
            "Pod" => {
                let (seq, p) = self.pods.remove(key)?;
                self.listers.unset("Pod", key);
                self.pod_order.remove(&seq);
                Some(Stored::Pod(p))
            }
            other => self.listers.unset(other, key).map(|v| stored_value(&v)),
        }?;
        Some(Change {
            kind: kind.to_string(),
            key: key.to_string(),
            old: Some(old),
            new: None,
        })
    }

    /// What the Priority admission plugin would have set: `spec.priority` from the pod's
    /// PriorityClass (or the global default class) when the manifest left it out.
    pub fn resolve_priorities(&mut self) {
        if self.listers.priority_classes.is_empty() {
            return;
        }
        let keys: Vec<String> = self.pods.keys().cloned().collect();
        for key in keys {
            let Some((_, pi)) = self.pods.get(&key) else {
                continue;
            };
            let Some((pi, class)) = self.resolve_priority_of(pi) else {
                continue;
            };
            let value = pi.priority;
            self.put_pod(&key, pi);
            self.notes.push(format!(
                "Pod {key}: priority {value} from PriorityClass {class}"
            ));
        }
    }

    /// Sets `spec.priority` (and `preemptionPolicy`) from the pod's PriorityClass, or the
    /// global default class, when the pod has none; returns the class used.
    pub fn resolve_priority(&self, pod: &mut Pod) -> Option<String> {
        let spec = pod.spec.as_mut()?;
        if spec.priority.is_some() {
            return None;
        }
        let classes = &self.listers.priority_classes;
        let class = match &spec.priority_class_name {
            Some(n) => classes.get(n)?,
            None => classes.values().find(|c| c.global_default == Some(true))?,
        };
        spec.priority = Some(class.value);
        if spec.preemption_policy.is_none() {
            spec.preemption_policy = class.preemption_policy.clone();
        }
        class.metadata.name.clone()
    }

    /// [`resolve_priority`](Self::resolve_priority) for a pod as stored (packed or not):
    /// the pod with its priority and the class used, if it had none.
    pub fn resolve_priority_of(&self, pi: &PodInfo) -> Option<(Arc<PodInfo>, String)> {
        if pi.has_priority() || pi.pod().spec.is_none() {
            return None;
        }
        let mut p = pi.pod().clone();
        let class = self.resolve_priority(&mut p)?;
        Some((Arc::new(pi.with_resolved_priority(p)), class))
    }

    /// The version the cluster's newest kubelet reports (kubelets are never newer than
    /// their API server), when any node says.
    pub fn kubelet_version(&self) -> Option<crate::features::Choice> {
        kubelet_version_of(self.nodes().iter().map(|n| n.as_ref()))
    }

    pub fn nodes(&self) -> &[Arc<Node>] {
        &self.nodes
    }

    /// A pod, whole (a packed pod is read back and kept: to read what the scheduler
    /// reads of many pods, use [`pod_info`](Self::pod_info)).
    pub fn pod(&self, key: &str) -> Option<&Pod> {
        self.pods.get(key).map(|(_, pi)| pi.pod())
    }

    pub fn pod_info(&self, key: &str) -> Option<&Arc<PodInfo>> {
        self.pods.get(key).map(|(_, pi)| pi)
    }

    /// A pod with everything it has, containers included.
    pub fn full_pod(&self, key: &str) -> Option<Arc<Pod>> {
        self.pods.get(key).map(|(_, pi)| pi.full_pod())
    }

    pub fn pod_infos(&self) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.pod_order.values()
    }

    /// Pods not bound to a node, in the order they were added.
    pub fn pending_pods(&self) -> impl Iterator<Item = &Arc<Pod>> {
        self.pod_infos()
            .filter_map(|p| p.whole().filter(|p| node_name(p).is_empty()))
    }

    /// Nodes with their bound pods, in node-tree order (counted as 1.35's default gates
    /// count them).
    pub fn snapshot(&self) -> Snapshot {
        let bound = self
            .pod_infos()
            .filter(|p| !p.node_name().is_empty())
            .cloned();
        Snapshot::new(self.nodes.clone(), bound)
    }

    /// The snapshot as a scheduler with these features counts it.
    pub fn snapshot_for(&self, features: &Features) -> Snapshot {
        let mut s = self.snapshot();
        s.set_pod_level_resize(features.enabled(Gate::InPlacePodLevelResourcesVerticalScaling));
        s
    }

    /// Pending pods that preemption nominated to a node.
    pub fn nominator(&self) -> Nominator {
        let mut n = Nominator::default();
        for p in self.pod_infos().filter(|p| p.node_name().is_empty()) {
            let nnn = p.nominated_node_name();
            if !nnn.is_empty() {
                n.add(p.clone(), nnn);
            }
        }
        n
    }
}

/// The PodInfo a pod object is stored as: a bound pod packed, a pending one whole (the
/// scheduling cycle reads its containers). A finished pod is never stored (the
/// scheduler's informer does not see it): `Err` of its phase. `None`: not a pod.
fn stored_pod(obj: Object) -> Option<Result<Arc<PodInfo>, String>> {
    let phase = match &obj {
        Object::PackedPod(pi) => pi.phase(),
        Object::Pod(p) => p
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or(""),
        _ => "",
    };
    if phase == "Succeeded" || phase == "Failed" {
        return Some(Err(phase.to_string()));
    }
    Some(Ok(match obj {
        Object::PackedPod(pi) if pi.node_name().is_empty() => Arc::new(PodInfo::new(pi.full_pod())),
        Object::PackedPod(pi) => pi,
        Object::Pod(p) => {
            let pi = PodInfo::new(Arc::new(*p));
            let bound = !pi.node_name().is_empty();
            Arc::new(if bound { pi.packed() } else { pi })
        }
        _ => return None,
    }))
}

/// Where an object was read: file number (among the files read), line.
type Place = (usize, usize);

/// The error for an object given twice: at `at`, first at `first`.
fn duplicate(
    files: &[String],
    first: Place,
    at: Place,
    (kind, key): (String, String),
) -> ClusterError {
    let file = |f: usize| files.get(f).cloned().unwrap_or_default();
    ClusterError::Duplicate {
        file: file(at.0),
        line: at.1,
        kind,
        key,
        first: format!("{}:{}", file(first.0), first.1),
    }
}

fn finished_pod_note(key: &str, phase: &str) -> String {
    format!("ignored Pod {key}: phase {phase}")
}

pub fn node_name(p: &Pod) -> &str {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("")
}

/// The newest `status.nodeInfo.kubeletVersion` among `nodes`, as a version choice.
pub fn kubelet_version_of<'a>(
    nodes: impl Iterator<Item = &'a Node>,
) -> Option<crate::features::Choice> {
    crate::features::Choice::from_kubelets(nodes.filter_map(|n| {
        let v = &n.status.as_ref()?.node_info.as_ref()?.kubelet_version;
        Some((n.metadata.name.as_deref().unwrap_or(""), v.as_str()))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLUSTER: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: bound}
spec: {nodeName: n1, containers: [{name: c, resources: {requests: {cpu: 500m}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: pending, namespace: team}
spec: {priorityClassName: high, containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: done}
spec: {nodeName: n1, containers: [{name: c}]}
status: {phase: Succeeded}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"#;

    #[test]
    fn loads_views() {
        let (objs, _) = manifest::parse_str(CLUSTER, "c.yaml").unwrap();
        let cs = ClusterState::from_objects(objs).unwrap();
        let snap = cs.snapshot();
        assert_eq!(snap.get("n1").unwrap().pods.len(), 1);
        assert_eq!(snap.get("n1").unwrap().requested.milli_cpu, 500);
        let pending: Vec<_> = cs
            .pending_pods()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(pending, ["pending"]);
        assert_eq!(
            cs.pod("team/pending")
                .unwrap()
                .spec
                .as_ref()
                .unwrap()
                .priority,
            Some(1000)
        );
        assert!(cs.notes.iter().any(|n| n.contains("phase Succeeded")));
        let listed: Vec<&String> = cs.listers.pods.keys().collect();
        assert_eq!(listed, ["default/bound", "team/pending"]);
        let lister_priority = cs.listers.pods["team/pending"].priority;
        assert_eq!(lister_priority, 1000);
    }

    #[test]
    fn bound_pods_are_kept_packed_and_come_back_whole() {
        let (objs, _) = manifest::parse_str(CLUSTER, "c.yaml").unwrap();
        let cs = ClusterState::from_objects(objs).unwrap();
        let bound = cs.pod_info("default/bound").unwrap();
        assert!(bound.is_packed());
        assert_eq!(bound.resource.resource.milli_cpu, 500);
        let whole = cs.full_pod("default/bound").unwrap();
        assert_eq!(whole.spec.as_ref().unwrap().containers[0].name, "c");
        assert_eq!(cs.pod("default/bound"), Some(&*whole));
        // The lister shares the stored (packed) pod rather than holding a copy.
        assert!(Arc::ptr_eq(&cs.listers.pods["default/bound"], bound));
        // Pending pods are read by the scheduling cycle: whole, even when they come packed
        // (as a recording's events do).
        assert!(!cs.pod_info("team/pending").unwrap().is_packed());
        let mut cs2 = cs.clone();
        let pending = cs.full_pod("team/pending").unwrap();
        cs2.upsert(Object::Pod(Box::new((*pending).clone())).packed());
        let stored = cs2.pod_info("team/pending").unwrap();
        assert!(!stored.is_packed());
        assert_eq!(stored.pod().spec.as_ref().unwrap().containers.len(), 1);
        // Packed pods keep the priority the PriorityClass resolution gives them.
        let mut p = bound.pod().clone();
        p.spec.as_mut().unwrap().priority_class_name = Some("high".into());
        p.spec.as_mut().unwrap().priority = None;
        let (admitted, class) = cs
            .resolve_priority_of(&bound.with_resolved_priority(p))
            .unwrap();
        assert_eq!((admitted.priority, class.as_str()), (1000, "high"));
        assert!(admitted.is_packed());
    }

    #[test]
    fn duplicates_are_errors() {
        let text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\n";
        let (objs, _) = manifest::parse_str(text, "d.yaml").unwrap();
        let e = ClusterState::from_objects(objs).unwrap_err().to_string();
        assert_eq!(e, "d.yaml:5: duplicate Node n1 (first defined at d.yaml:1)");
    }

    #[test]
    fn duplicate_pods_name_both_files_even_when_one_has_finished() {
        let pod = |phase: &str| {
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: ns}}\nspec: {{containers: []}}\nstatus: {{phase: {phase}}}\n"
            )
        };
        let (mut objs, _) = manifest::parse_str(
            &format!("{}---\n{}", pod("Running"), pod("Pending")),
            "a.yaml",
        )
        .unwrap();
        let e = ClusterState::from_objects(objs.clone())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "a.yaml:7: duplicate Pod ns/p (first defined at a.yaml:1)"
        );
        let (more, _) = manifest::parse_str(&pod("Succeeded"), "b.yaml").unwrap();
        objs.truncate(1);
        objs.extend(more);
        let e = ClusterState::from_objects(objs).unwrap_err().to_string();
        assert_eq!(
            e,
            "b.yaml:1: duplicate Pod ns/p (first defined at a.yaml:1)"
        );
    }
}
