//! What-if edits of fields: the pod's requests, tolerations and nodeSelector, a node's
//! labels, taints and allocatable. Typed at the What-if tab's prompt (`e`), checked as
//! they are entered (every message names the field), and applied to copies — of the pod,
//! and of the cluster when a node changes — that only the what-if re-run sees.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::cluster::{ClusterState, Object};

/// What the prompt accepts, for its message when a line is not understood.
pub const USAGE: &str = "pod request cpu|memory=Q [container NAME] · pod toleration KEY[=VALUE]:EFFECT · pod selector KEY=VALUE · node NAME label KEY=VALUE · node NAME untaint KEY[:EFFECT] · node NAME allocatable cpu|memory=Q";

const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// One field edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldEdit {
    /// A container's request (the first container without a name).
    Request {
        resource: Resource,
        quantity: String,
        container: Option<String>,
    },
    Toleration {
        key: String,
        value: Option<String>,
        effect: String,
    },
    /// Adds or changes a nodeSelector label.
    Selector { key: String, value: String },
    NodeLabel {
        node: String,
        key: String,
        value: String,
    },
    /// Removes the node's taints with this key (and effect, when given).
    Untaint {
        node: String,
        key: String,
        effect: Option<String>,
    },
    Allocatable {
        node: String,
        resource: Resource,
        quantity: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Cpu,
    Memory,
}

impl Resource {
    pub fn as_str(self) -> &'static str {
        match self {
            Resource::Cpu => "cpu",
            Resource::Memory => "memory",
        }
    }
}

impl FieldEdit {
    pub fn describe(&self) -> String {
        match self {
            FieldEdit::Request {
                resource,
                quantity,
                container,
            } => format!(
                "pod {} request {quantity}{}",
                resource.as_str(),
                container
                    .as_ref()
                    .map(|c| format!(" (container {c})"))
                    .unwrap_or_default()
            ),
            FieldEdit::Toleration { key, value, effect } => match value {
                Some(v) => format!("pod toleration {key}={v}:{effect}"),
                None => format!("pod toleration {key}:{effect}"),
            },
            FieldEdit::Selector { key, value } => format!("pod nodeSelector {key}={value}"),
            FieldEdit::NodeLabel { node, key, value } => format!("node {node} label {key}={value}"),
            FieldEdit::Untaint { node, key, effect } => match effect {
                Some(e) => format!("node {node} taint {key}:{e} removed"),
                None => format!("node {node} taints {key} removed"),
            },
            FieldEdit::Allocatable {
                node,
                resource,
                quantity,
            } => format!("node {node} allocatable {} {quantity}", resource.as_str()),
        }
    }
}

/// `RESOURCE=QUANTITY`, the quantity checked as Kubernetes parses it.
fn resource_quantity(field: &str, s: &str) -> Result<(Resource, String), String> {
    let (r, q) = s
        .split_once('=')
        .ok_or_else(|| format!("{field}: expected cpu=QUANTITY or memory=QUANTITY, got {s:?}"))?;
    let resource = match r {
        "cpu" => Resource::Cpu,
        "memory" => Resource::Memory,
        other => {
            return Err(format!(
                "{field}: {other:?} is not a resource kubestep edits (cpu, memory)"
            ));
        }
    };
    let field = format!("{field} {r}");
    match crate::api::quantity::Quantity::parse(q) {
        Ok(v) if v.nanos() < 0 => Err(format!("{field}: {q:?} is negative")),
        Ok(_) => Ok((resource, q.to_string())),
        Err(e) => Err(format!("{field}: {q:?} is not a quantity ({e})")),
    }
}

/// `KEY=VALUE` with a non-empty key.
fn key_value(field: &str, s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{field}: expected KEY=VALUE, got {s:?}")),
    }
}

fn effect(field: &str, e: &str) -> Result<String, String> {
    if EFFECTS.contains(&e) {
        Ok(e.to_string())
    } else {
        Err(format!(
            "{field}: effect {e:?} must be NoSchedule, PreferNoSchedule or NoExecute"
        ))
    }
}

fn node<'a>(cluster: &'a ClusterState, name: &str) -> Result<&'a Arc<Node>, String> {
    cluster
        .nodes()
        .iter()
        .find(|n| n.metadata.name.as_deref() == Some(name))
        .ok_or_else(|| {
            format!(
                "node {name}: no such node ({} nodes in the cluster)",
                cluster.nodes().len()
            )
        })
}

/// Reads one edit; nodes must exist in `cluster`.
pub fn parse(line: &str, cluster: &ClusterState) -> Result<FieldEdit, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["pod", "request", rq, rest @ ..] => {
            let (resource, quantity) = resource_quantity("pod request", rq)?;
            let container = match rest {
                [] => None,
                ["container", name] => Some(name.to_string()),
                _ => {
                    return Err(format!(
                        "pod request: expected `container NAME` after the quantity, got {:?}",
                        rest.join(" ")
                    ));
                }
            };
            Ok(FieldEdit::Request {
                resource,
                quantity,
                container,
            })
        }
        ["pod", "toleration", t] => {
            let field = "pod toleration";
            let (kv, e) = t.rsplit_once(':').ok_or_else(|| {
                format!("{field}: expected KEY[=VALUE]:EFFECT, got {t:?} (no effect)")
            })?;
            let effect = effect(field, e)?;
            let (key, value) = match kv.split_once('=') {
                Some((k, v)) => (k, Some(v.to_string())),
                None => (kv, None),
            };
            if key.is_empty() {
                return Err(format!(
                    "{field}: expected KEY[=VALUE]:EFFECT, got {t:?} (no key)"
                ));
            }
            Ok(FieldEdit::Toleration {
                key: key.to_string(),
                value,
                effect,
            })
        }
        ["pod", "selector", kv] => {
            let (key, value) = key_value("pod nodeSelector", kv)?;
            Ok(FieldEdit::Selector { key, value })
        }
        ["node", name, "label", kv] => {
            node(cluster, name)?;
            let (key, value) = key_value(&format!("node {name} label"), kv)?;
            Ok(FieldEdit::NodeLabel {
                node: name.to_string(),
                key,
                value,
            })
        }
        ["node", name, "untaint", t] => {
            let field = format!("node {name} untaint");
            let n = node(cluster, name)?;
            let (key, effect) = match t.split_once(':') {
                Some((k, e)) => (k, Some(effect(&field, e)?)),
                None => (*t, None),
            };
            let has = n
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .into_iter()
                .flatten()
                .any(|x| x.key == key && effect.as_ref().is_none_or(|e| *e == x.effect));
            if !has {
                return Err(format!("{field}: the node has no taint {t}"));
            }
            Ok(FieldEdit::Untaint {
                node: name.to_string(),
                key: key.to_string(),
                effect,
            })
        }
        ["node", name, "allocatable", rq] => {
            node(cluster, name)?;
            let (resource, quantity) = resource_quantity(&format!("node {name} allocatable"), rq)?;
            Ok(FieldEdit::Allocatable {
                node: name.to_string(),
                resource,
                quantity,
            })
        }
        _ => Err(format!("what-if edit {line:?} not understood: {USAGE}")),
    }
}

/// The pod and the cluster with `edits` applied, in order. The cluster is copied only
/// when a node changes.
pub fn apply(
    edits: &[FieldEdit],
    cluster: &ClusterState,
    pod: &Pod,
) -> Result<(Option<ClusterState>, Pod), String> {
    let mut pod = pod.clone();
    let mut changed: Option<ClusterState> = None;
    for e in edits {
        match e {
            FieldEdit::Request {
                resource,
                quantity,
                container,
            } => {
                let spec = pod.spec.get_or_insert_with(Default::default);
                let names: Vec<String> = spec.containers.iter().map(|c| c.name.clone()).collect();
                let c = match container {
                    Some(name) => spec.containers.iter_mut().find(|c| &c.name == name),
                    None => spec.containers.first_mut(),
                };
                let Some(c) = c else {
                    return Err(format!(
                        "pod request {}: no container {} (containers: {})",
                        resource.as_str(),
                        container.as_deref().unwrap_or("at all"),
                        names.join(", ")
                    ));
                };
                c.resources
                    .get_or_insert_with(Default::default)
                    .requests
                    .get_or_insert_with(Default::default)
                    .insert(resource.as_str().to_string(), Quantity(quantity.clone()));
            }
            FieldEdit::Toleration { key, value, effect } => {
                let spec = pod.spec.get_or_insert_with(Default::default);
                spec.tolerations
                    .get_or_insert_with(Vec::new)
                    .push(Toleration {
                        key: Some(key.clone()),
                        operator: Some(if value.is_some() { "Equal" } else { "Exists" }.into()),
                        value: value.clone(),
                        effect: Some(effect.clone()),
                        toleration_seconds: None,
                    });
            }
            FieldEdit::Selector { key, value } => {
                let spec = pod.spec.get_or_insert_with(Default::default);
                spec.node_selector
                    .get_or_insert_with(Default::default)
                    .insert(key.clone(), value.clone());
            }
            FieldEdit::NodeLabel { node: name, .. }
            | FieldEdit::Untaint { node: name, .. }
            | FieldEdit::Allocatable { node: name, .. } => {
                let c = changed.get_or_insert_with(|| cluster.clone());
                let mut n = (**node(c, name)?).clone();
                edit_node(&mut n, e);
                c.upsert(Object::Node(Box::new(n)));
            }
        }
    }
    Ok((changed, pod))
}

fn edit_node(n: &mut Node, e: &FieldEdit) {
    match e {
        FieldEdit::NodeLabel { key, value, .. } => {
            n.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert(key.clone(), value.clone());
        }
        FieldEdit::Untaint { key, effect, .. } => {
            if let Some(t) = n.spec.as_mut().and_then(|s| s.taints.as_mut()) {
                t.retain(|x| !(x.key == *key && effect.as_ref().is_none_or(|e| *e == x.effect)));
            }
        }
        FieldEdit::Allocatable {
            resource, quantity, ..
        } => {
            n.status
                .get_or_insert_with(Default::default)
                .allocatable
                .get_or_insert_with(Default::default)
                .insert(resource.as_str().to_string(), Quantity(quantity.clone()));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> ClusterState {
        let (objs, _) = crate::cluster::manifest::parse_str(crate::DEMO_CLUSTER, "demo").unwrap();
        ClusterState::from_objects(objs).unwrap()
    }

    const NODE: &str = "ip-10-0-3-31.eu-west-1.compute.internal";

    #[test]
    fn reads_every_kind_of_edit() {
        let c = cluster();
        assert_eq!(
            parse("pod request cpu=500m container app", &c).unwrap(),
            FieldEdit::Request {
                resource: Resource::Cpu,
                quantity: "500m".into(),
                container: Some("app".into())
            }
        );
        assert_eq!(
            parse("pod toleration gpu=true:NoSchedule", &c)
                .unwrap()
                .describe(),
            "pod toleration gpu=true:NoSchedule"
        );
        assert_eq!(
            parse("pod toleration gpu:NoExecute", &c)
                .unwrap()
                .describe(),
            "pod toleration gpu:NoExecute"
        );
        assert_eq!(
            parse("pod selector disk=ssd", &c).unwrap().describe(),
            "pod nodeSelector disk=ssd"
        );
        assert_eq!(
            parse(&format!("node {NODE} label zone=b"), &c)
                .unwrap()
                .describe(),
            format!("node {NODE} label zone=b")
        );
        assert_eq!(
            parse(&format!("node {NODE} allocatable memory=64Gi"), &c)
                .unwrap()
                .describe(),
            format!("node {NODE} allocatable memory 64Gi")
        );
        let untaint = parse(&format!("node {NODE} untaint nvidia.com/gpu"), &c).unwrap();
        assert_eq!(
            untaint.describe(),
            format!("node {NODE} taints nvidia.com/gpu removed")
        );
    }

    #[test]
    fn bad_input_names_the_field() {
        let c = cluster();
        let err = |s: &str| parse(s, &c).unwrap_err();
        assert!(err("pod request cpu=5x").starts_with("pod request cpu: \"5x\" is not a quantity"));
        assert!(err("pod request cpu=-1").contains("is negative"));
        assert!(err("pod request gpu=1").contains("not a resource kubestep edits"));
        assert!(err("node nope label a=b").starts_with("node nope: no such node"));
        assert!(err("pod toleration gpu=true").contains("no effect"));
        assert!(
            err("pod toleration gpu=true:Sometimes")
                .contains("must be NoSchedule, PreferNoSchedule or NoExecute")
        );
        assert!(err(&format!("node {NODE} untaint nope")).contains("has no taint nope"));
        assert!(err("pod selector disk").contains("expected KEY=VALUE"));
        assert!(err("frobnicate").contains("not understood"));
        assert!(err("").contains("not understood"));
    }

    #[test]
    fn edits_apply_to_copies() {
        let c = cluster();
        // As the What-if tab takes it: whole, even when the cluster keeps it packed.
        let pod = c.pod_infos().next().unwrap().full_pod();
        let edits = vec![
            parse("pod request memory=1Gi", &c).unwrap(),
            parse("pod selector disk=ssd", &c).unwrap(),
            parse(&format!("node {NODE} untaint nvidia.com/gpu"), &c).unwrap(),
            parse(&format!("node {NODE} allocatable cpu=64"), &c).unwrap(),
        ];
        let (changed, p) = apply(&edits, &c, &pod).unwrap();
        let spec = p.spec.as_ref().unwrap();
        let req = spec.containers[0]
            .resources
            .as_ref()
            .unwrap()
            .requests
            .as_ref()
            .unwrap();
        assert_eq!(req["memory"].0, "1Gi");
        assert_eq!(spec.node_selector.as_ref().unwrap()["disk"], "ssd");
        let changed = changed.unwrap();
        let n = node(&changed, NODE).unwrap();
        assert!(
            n.spec
                .as_ref()
                .unwrap()
                .taints
                .as_ref()
                .is_none_or(|t| t.iter().all(|t| t.key != "nvidia.com/gpu"))
        );
        assert_eq!(
            n.status.as_ref().unwrap().allocatable.as_ref().unwrap()["cpu"].0,
            "64"
        );
        // The originals are untouched.
        let orig = node(&c, NODE).unwrap();
        assert!(
            orig.spec
                .as_ref()
                .unwrap()
                .taints
                .as_ref()
                .unwrap()
                .iter()
                .any(|t| t.key == "nvidia.com/gpu")
        );
        assert_ne!(*pod, p);
        // A container that is not there is named.
        let bad = vec![parse("pod request cpu=1 container nope", &c).unwrap()];
        assert!(
            apply(&bad, &c, &pod)
                .unwrap_err()
                .contains("no container nope")
        );
    }
}
