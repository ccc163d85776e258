//! Test helpers for plugin unit tests: build pods, nodes and a snapshot from JSON, and run
//! one plugin at one extension point.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::framework::listers::Listers;
use crate::framework::nominator::Nominator;
use crate::framework::plugin::{FilterPlugin, Handle};
use crate::framework::profile::Framework;
use crate::framework::{CycleState, NodeInfo, PodInfo, Snapshot, Status};

pub fn pod(v: serde_json::Value) -> Arc<PodInfo> {
    let mut pod: Pod = serde_json::from_value(v).expect("test pod JSON");
    if pod.metadata.namespace.is_none() {
        pod.metadata.namespace = Some("default".into());
    }
    if pod.metadata.uid.is_none() {
        pod.metadata.uid = pod.metadata.name.clone();
    }
    Arc::new(PodInfo::new(Arc::new(pod)))
}

pub fn node_obj(v: serde_json::Value) -> Arc<Node> {
    Arc::new(serde_json::from_value(v).expect("test node JSON"))
}

pub fn node(v: serde_json::Value) -> NodeInfo {
    NodeInfo::new(node_obj(v))
}

/// A framework-independent environment for calling plugins directly.
pub struct Env {
    pub framework: Framework,
    pub snapshot: Snapshot,
    pub listers: Listers,
    pub nominator: Nominator,
    pub waiting: crate::framework::waiting::WaitingPods,
    /// The clock plugins see; a fixed instant so tests repeat.
    pub now: jiff::Timestamp,
}

/// The instant test environments start at.
pub fn test_now() -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_900_000_000).expect("a valid instant")
}

impl Env {
    pub fn new(snapshot: Snapshot, listers: Listers) -> Env {
        Env {
            framework: crate::plugins::registry::minimal_framework(),
            snapshot,
            listers,
            nominator: Nominator::default(),
            waiting: Default::default(),
            now: test_now(),
        }
    }

    pub fn handle(&self) -> Handle<'_> {
        Handle {
            framework: &self.framework,
            snapshot: &self.snapshot,
            listers: &self.listers,
            nominator: &self.nominator,
            waiting: &self.waiting,
            now: self.now,
            extenders: &[],
            simulation: false,
            pool: None,
        }
    }
}

/// Runs a Filter plugin with an empty snapshot and state.
pub fn filter(p: &dyn FilterPlugin, pod: &PodInfo, node: &NodeInfo) -> Status {
    let env = Env::new(Snapshot::default(), Listers::default());
    p.filter(&env.handle(), &CycleState::new(), pod, node)
}

/// Listers from objects given as JSON with their `kind` (PersistentVolumeClaim,
/// PersistentVolume, StorageClass, CSINode, Pod, and PodGroup kept as JSON); namespaced
/// objects without a namespace are in `default`.
pub fn listers(objs: &[serde_json::Value]) -> Listers {
    fn parse<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> T {
        serde_json::from_value(v.clone()).expect("test object JSON")
    }
    let mut l = Listers::default();
    for v in objs {
        let name = v["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let kind = v["kind"].as_str().unwrap_or_default();
        match kind {
            "PersistentVolumeClaim" => {
                let mut v = v.clone();
                if v["metadata"]["namespace"].is_null() {
                    v["metadata"]["namespace"] = "default".into();
                }
                let ns = v["metadata"]["namespace"].as_str().unwrap_or_default();
                l.pvcs.insert(format!("{ns}/{name}"), Arc::new(parse(&v)));
            }
            "PersistentVolume" => {
                l.pvs.insert(name, Arc::new(parse(v)));
            }
            "StorageClass" => {
                l.storage_classes.insert(name, Arc::new(parse(v)));
            }
            "CSINode" => {
                l.csi_nodes.insert(name, Arc::new(parse(v)));
            }
            "Pod" => {
                let p = pod(v.clone());
                l.pods.insert(p.key.clone(), p.clone());
            }
            "PodGroup" => {
                let ns = v["metadata"]["namespace"].as_str().unwrap_or("default");
                l.custom
                    .entry(kind.to_string())
                    .or_default()
                    .insert(format!("{ns}/{name}"), Arc::new(v.clone()));
            }
            other => panic!("testing::listers: unsupported kind {other:?}"),
        }
    }
    l
}

/// Checks that a plugin's batch scoring gives, node for node, what `score` gives.
pub fn assert_score_nodes_agrees(
    p: &dyn crate::framework::plugin::ScorePlugin,
    h: &Handle,
    state: &CycleState,
    pod: &PodInfo,
    nodes: &[&NodeInfo],
) {
    let mut batch = vec![-1; nodes.len()];
    let failed = p.score_nodes(h, state, pod, nodes, &mut batch);
    let one_by_one: Vec<i64> = nodes.iter().map(|n| p.score(h, state, pod, n).0).collect();
    assert_eq!(batch, one_by_one);
    let first_failure = nodes
        .iter()
        .position(|n| !p.score(h, state, pod, n).1.is_success());
    assert_eq!(failed.map(|(i, _)| i), first_failure);
}
