//! Fixtures for tests of this crate and of the crates above it: pods, nodes and listers
//! from JSON, and the smallest valid framework, made of two fixture plugins so the
//! framework's own tests need no real plugin. They panic on bad
//! JSON: they are only ever given a test's own literals.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::config::{PluginRef, PluginSet, Plugins, Profile};
use crate::listers::Listers;
use crate::plugin::{BindPlugin, Handle, Plugin, QueueSortPlugin};
use crate::profile::{Framework, Registry};
use crate::queued::QueuedPodInfo;
use crate::{CycleState, NodeInfo, PodInfo, Status};

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

/// The instant test environments start at.
pub fn test_now() -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_900_000_000).expect("a valid instant")
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

/// Orders pods by when they were queued (a fixture QueueSort).
struct Fifo;

impl Plugin for Fifo {
    fn name(&self) -> &'static str {
        "Fifo"
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        Some(self)
    }
}

impl QueueSortPlugin for Fifo {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        a.timestamp < b.timestamp
    }
}

/// Binds without doing anything (a fixture Bind plugin).
struct Noop;

impl Plugin for Noop {
    fn name(&self) -> &'static str {
        "Noop"
    }
    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        Some(self)
    }
}

impl BindPlugin for Noop {
    fn bind(&self, _h: &Handle, _s: &mut CycleState, _p: &PodInfo, _node: &str) -> Status {
        Status::success()
    }
}

/// The smallest valid framework: a queue sort and a binder, both fixtures.
pub fn minimal_framework() -> Framework {
    let mut registry = Registry::default();
    registry.register("Fifo", |_| Ok(Arc::new(Fifo)));
    registry.register("Noop", |_| Ok(Arc::new(Noop)));
    let set = |name: &str| PluginSet {
        enabled: vec![PluginRef {
            name: name.into(),
            weight: 0,
        }],
        disabled: vec![],
    };
    let profile = Profile {
        scheduler_name: "default-scheduler".into(),
        percentage_of_nodes_to_score: None,
        plugins: Plugins {
            queue_sort: set("Fifo"),
            bind: set("Noop"),
            ..Default::default()
        },
        plugin_config: Vec::new(),
    };
    match Framework::new(&registry, &profile, &Default::default()) {
        Ok(f) => f,
        Err(e) => unreachable!("the minimal profile is valid: {e}"),
    }
}
