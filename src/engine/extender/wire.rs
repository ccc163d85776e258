//! The extender wire format (`k8s.io/kube-scheduler/extender/v1`).
//!
//! Upstream's structs carry no JSON tags, so Go writes every key with its Go field name
//! (`Pod`, `NodeNames`, `FailedAndUnresolvableNodes`, ...) and reads keys case-insensitively,
//! an exact match winning. Requests borrow the scheduler's objects; responses are owned
//! and decoded through [`decode`], which applies Go's key matching first.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::framework::extender::{HostPriority, null_default};
use serde_json::Value;

/// `v1.NodeList` as Go encodes one built in memory: no type meta, an empty `metadata`.
#[derive(Debug, Serialize)]
pub struct NodeListRef<'a> {
    pub metadata: EmptyObject,
    pub items: Vec<&'a Node>,
}

/// `{}`.
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct EmptyObject {}

/// Filter and prioritize arguments: the pod and either the nodes or (for
/// `nodeCacheCapable` extenders) only their names.
#[derive(Debug, Serialize)]
pub struct ExtenderArgs<'a> {
    #[serde(rename = "Pod")]
    pub pod: &'a Pod,
    #[serde(rename = "Nodes")]
    pub nodes: Option<NodeListRef<'a>>,
    #[serde(rename = "NodeNames")]
    pub node_names: Option<Vec<&'a str>>,
}

/// A returned `v1.NodeList`; only its items matter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeList {
    #[serde(default, deserialize_with = "null_default")]
    pub items: Vec<Node>,
}

/// What a filter call returns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExtenderFilterResult {
    /// Nodes that pass (extenders that are not `nodeCacheCapable`).
    #[serde(rename = "Nodes", default)]
    pub nodes: Option<NodeList>,
    /// Names of the nodes that pass (`nodeCacheCapable` extenders).
    #[serde(rename = "NodeNames", default)]
    pub node_names: Option<Vec<String>>,
    /// Rejected nodes and why.
    #[serde(
        rename = "FailedNodes",
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub failed_nodes: BTreeMap<String, String>,
    /// Rejected nodes that preemption cannot help; these win over `FailedNodes`.
    #[serde(
        rename = "FailedAndUnresolvableNodes",
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub failed_and_unresolvable_nodes: BTreeMap<String, String>,
    #[serde(
        rename = "Error",
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub error: String,
}

/// Victims on one node as sent to extenders that are not `nodeCacheCapable`.
#[derive(Debug, Serialize)]
pub struct VictimsRef<'a> {
    #[serde(rename = "Pods")]
    pub pods: Vec<&'a Pod>,
    #[serde(rename = "NumPDBViolations")]
    pub num_pdb_violations: i64,
}

/// A victim named by UID only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaPod {
    #[serde(rename = "UID", default, deserialize_with = "null_default")]
    pub uid: String,
}

/// Victims on one node, named by UID.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaVictims {
    #[serde(rename = "Pods", default, deserialize_with = "null_default")]
    pub pods: Vec<MetaPod>,
    #[serde(
        rename = "NumPDBViolations",
        default,
        deserialize_with = "null_default"
    )]
    pub num_pdb_violations: i64,
}

/// Preempt arguments: the victims per candidate node, as pods or (for
/// `nodeCacheCapable` extenders) as UIDs.
#[derive(Debug, Serialize)]
pub struct ExtenderPreemptionArgs<'a> {
    #[serde(rename = "Pod")]
    pub pod: &'a Pod,
    #[serde(rename = "NodeNameToVictims")]
    pub node_name_to_victims: Option<BTreeMap<&'a str, VictimsRef<'a>>>,
    #[serde(rename = "NodeNameToMetaVictims")]
    pub node_name_to_meta_victims: Option<BTreeMap<&'a str, MetaVictims>>,
}

/// What a preempt call returns: the candidates the extender keeps, with their victims.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExtenderPreemptionResult {
    #[serde(
        rename = "NodeNameToMetaVictims",
        default,
        deserialize_with = "null_default"
    )]
    pub node_name_to_meta_victims: BTreeMap<String, Option<MetaVictims>>,
}

/// Bind arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtenderBindingArgs {
    #[serde(rename = "PodName")]
    pub pod_name: String,
    #[serde(rename = "PodNamespace")]
    pub pod_namespace: String,
    #[serde(rename = "PodUID")]
    pub pod_uid: String,
    #[serde(rename = "Node")]
    pub node: String,
}

/// What a bind call returns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtenderBindingResult {
    #[serde(rename = "Error", default, deserialize_with = "null_default")]
    pub error: String,
}

/// Which Go field names each response type has, by nesting level.
pub trait GoFields {
    /// Renames keys of `v` to the field names they match case-insensitively.
    fn fold(v: &mut Value);
}

fn fold_keys(v: &mut Value, names: &[&str]) {
    let Value::Object(map) = v else { return };
    let keys: Vec<String> = map.keys().cloned().collect();
    for k in keys {
        if names.contains(&k.as_str()) {
            continue;
        }
        let Some(canon) = names.iter().find(|n| n.eq_ignore_ascii_case(&k)) else {
            continue;
        };
        // An exact match elsewhere in the object wins.
        let value = map.remove(&k);
        if let Some(value) = value
            && !map.contains_key(*canon)
        {
            map.insert((*canon).to_string(), value);
        }
    }
}

fn fold_each_value(v: Option<&mut Value>, f: impl Fn(&mut Value)) {
    match v {
        Some(Value::Object(m)) => m.values_mut().for_each(f),
        Some(Value::Array(a)) => a.iter_mut().for_each(f),
        _ => {}
    }
}

impl GoFields for ExtenderFilterResult {
    fn fold(v: &mut Value) {
        fold_keys(
            v,
            &[
                "Nodes",
                "NodeNames",
                "FailedNodes",
                "FailedAndUnresolvableNodes",
                "Error",
            ],
        );
        if let Some(list) = v.get_mut("Nodes") {
            fold_keys(list, &["items", "metadata"]);
            // Type meta is optional on the wire; kubestep's Node type rejects a blank one.
            fold_each_value(list.get_mut("items"), |node| {
                if let Value::Object(m) = node {
                    for k in ["apiVersion", "kind"] {
                        if m.get(k)
                            .is_some_and(|x| x.as_str().is_none_or(str::is_empty))
                        {
                            m.remove(k);
                        }
                    }
                }
            });
        }
    }
}

impl GoFields for Vec<HostPriority> {
    fn fold(v: &mut Value) {
        fold_each_value(Some(v), |hp| fold_keys(hp, &["Host", "Score"]));
    }
}

impl GoFields for ExtenderPreemptionResult {
    fn fold(v: &mut Value) {
        fold_keys(v, &["NodeNameToMetaVictims"]);
        fold_each_value(v.get_mut("NodeNameToMetaVictims"), |mv| {
            fold_keys(mv, &["Pods", "NumPDBViolations"]);
            fold_each_value(mv.get_mut("Pods"), |p| fold_keys(p, &["UID"]));
        });
    }
}

impl GoFields for ExtenderBindingResult {
    fn fold(v: &mut Value) {
        fold_keys(v, &["Error"]);
    }
}

/// Decodes a response as Go's `json.Decoder.Decode` would: `null` is the zero value, keys
/// match field names case-insensitively.
pub fn decode<T: GoFields + DeserializeOwned + Default>(mut v: Value) -> Result<T, String> {
    if v.is_null() {
        return Ok(T::default());
    }
    T::fold(&mut v);
    serde_json::from_value(v).map_err(|e| format!("json: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn args_use_go_field_names() {
        let pod = Pod::default();
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap();
        let args = ExtenderArgs {
            pod: &pod,
            nodes: Some(NodeListRef {
                metadata: EmptyObject {},
                items: vec![&node],
            }),
            node_names: None,
        };
        let v = serde_json::to_value(&args).unwrap();
        assert_eq!(v["NodeNames"], Value::Null);
        assert_eq!(v["Nodes"]["metadata"], json!({}));
        assert_eq!(v["Nodes"]["items"][0]["metadata"]["name"], "n1");
        assert!(v.get("Pod").is_some());
    }

    #[test]
    fn filter_result_keys_match_case_insensitively() {
        let r: ExtenderFilterResult = decode(json!({
            "nodenames": ["a"],
            "failedNodes": {"b": "no"},
            "FAILEDANDUNRESOLVABLENODES": {"c": "never"},
            "error": null,
        }))
        .unwrap();
        assert_eq!(r.node_names, Some(vec!["a".to_string()]));
        assert_eq!(r.failed_nodes["b"], "no");
        assert_eq!(r.failed_and_unresolvable_nodes["c"], "never");
        assert_eq!(r.error, "");
    }

    #[test]
    fn exact_key_wins_over_folded_one() {
        let r: ExtenderBindingResult = decode(json!({"error": "x", "Error": "y"})).unwrap();
        assert_eq!(r.error, "y");
    }

    #[test]
    fn null_and_blank_type_meta_decode() {
        let r: ExtenderFilterResult = decode(Value::Null).unwrap();
        assert_eq!(r, ExtenderFilterResult::default());
        let r: ExtenderFilterResult = decode(json!({
            "Nodes": {"Items": [{"kind": "", "metadata": {"name": "n"}}]}
        }))
        .unwrap();
        let items = r.nodes.unwrap().items;
        assert_eq!(items[0].metadata.name.as_deref(), Some("n"));
    }

    #[test]
    fn priorities_and_victims_decode() {
        let l: Vec<HostPriority> = decode(json!([{"host": "a", "score": 3}])).unwrap();
        assert_eq!(
            l,
            vec![HostPriority {
                host: "a".into(),
                score: 3
            }]
        );
        let r: ExtenderPreemptionResult = decode(json!({
            "nodeNameToMetaVictims": {"n": {"pods": [{"uid": "u1"}], "numPDBViolations": 2}}
        }))
        .unwrap();
        let mv = r.node_name_to_meta_victims["n"].clone().unwrap();
        assert_eq!(mv.pods[0].uid, "u1");
        assert_eq!(mv.num_pdb_violations, 2);
    }

    #[test]
    fn wrong_types_are_errors() {
        let e = decode::<Vec<HostPriority>>(json!([{"Host": "a", "Score": "high"}]));
        assert!(e.unwrap_err().starts_with("json: "));
    }
}
