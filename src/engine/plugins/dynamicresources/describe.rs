//! The DRA objects of one pod or one node in words, for the terminal UI's Detail tab: the
//! same typed objects DynamicResources reads, so what Detail says is what Filter saw.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::{AllocationResult, ResourceClaim, ResourceSlice};

use super::objects::{self, pod_claims};
use crate::api::node_affinity::NodeSelectorMatcher;
use crate::framework::listers::Listers;

/// One line per claim of the pod: which claim, and its allocation and reservations.
pub fn pod_claim_lines(l: &Listers, pod: &Pod) -> Vec<String> {
    let wanted = pod
        .spec
        .as_ref()
        .and_then(|s| s.resource_claims.as_ref())
        .is_some_and(|c| !c.is_empty());
    if !wanted {
        return Vec::new();
    }
    let claims = match pod_claims(l, pod, &BTreeMap::new(), "pod") {
        Ok(c) => c,
        Err(e) => return vec![e],
    };
    claims
        .iter()
        .map(|c| {
            let made = match &c.from_template {
                None => String::new(),
                Some(t) if l.custom_object(objects::CLAIM, &c.key).is_some() => {
                    format!(" (made by kubestep from template {t})")
                }
                Some(t) => format!(" (not created yet: made from template {t} at PreBind)"),
            };
            let reserved = c
                .claim
                .status
                .as_ref()
                .and_then(|s| s.reserved_for.as_ref())
                .map_or(0, Vec::len);
            let state = match c.allocation() {
                Some(a) => format!(
                    "allocated {}{}",
                    devices(a),
                    if reserved > 0 {
                        format!(" · reserved for {reserved} pod(s)")
                    } else {
                        String::new()
                    }
                ),
                None => "not allocated".into(),
            };
            format!("claim {}{made}: {state}", c.key)
        })
        .collect()
}

/// The node's ResourceSlices (driver, pool, devices), then the claims allocated on it.
/// Detail draws it every frame, so only the slices naming the node and the claims with
/// a node-bound allocation are parsed; the rest are skipped on their raw JSON.
pub fn node_lines(l: &Listers, node: &Node) -> Vec<String> {
    let name = node.metadata.name.as_deref().unwrap_or("");
    let mut out: Vec<String> = l
        .custom_objects(objects::SLICE)
        .filter(|(_, v)| v["spec"]["nodeName"].as_str() == Some(name))
        .filter_map(|(_, v)| serde_json::from_value::<ResourceSlice>((**v).clone()).ok())
        .map(|s| {
            let n = s.spec.devices.as_ref().map_or(0, Vec::len);
            format!(
                "slice {}: driver {}, pool {}, {n} device(s)",
                s.metadata.name.as_deref().unwrap_or(""),
                s.spec.driver,
                s.spec.pool.name
            )
        })
        .collect();
    let allocated = l
        .custom_objects(objects::CLAIM)
        .filter(|(_, v)| !v["status"]["allocation"]["nodeSelector"].is_null());
    for (key, v) in allocated {
        let Ok(c) = serde_json::from_value::<ResourceClaim>((**v).clone()) else {
            continue;
        };
        let Some(a) = c.status.as_ref().and_then(|s| s.allocation.as_ref()) else {
            continue;
        };
        let here = a
            .node_selector
            .as_ref()
            .is_some_and(|ns| NodeSelectorMatcher::new(ns).matches_node(node));
        if here {
            out.push(format!("claim {key}: allocated {}", devices(a)));
        }
    }
    out
}

fn devices(a: &AllocationResult) -> String {
    let d: Vec<String> = a
        .devices
        .iter()
        .flat_map(|d| d.results.iter().flatten())
        .map(|r| format!("{}/{}/{}", r.driver, r.pool, r.device))
        .collect();
    if d.is_empty() {
        "(no devices)".into()
    } else {
        d.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterState;
    use crate::cluster::object::from_value;
    use serde_json::json;

    fn cluster(objs: Vec<serde_json::Value>) -> ClusterState {
        let mut c = ClusterState::default();
        for o in objs {
            c.add(from_value(o).unwrap().unwrap());
        }
        c
    }

    #[test]
    fn a_pod_and_a_node_name_their_claims_slices_and_devices() {
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}});
        let c = cluster(vec![
            node.clone(),
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n1-gpus"},
                "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                    "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}}),
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": "train", "namespace": "ml"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
                "status": {"allocation": {"devices": {"results": [
                    {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-1"}]},
                    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}},
                    "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}}),
        ]);
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ml"},
            "spec": {"containers": [], "resourceClaims": [
                {"name": "gpu", "resourceClaimName": "train"},
                {"name": "more", "resourceClaimName": "missing"}]}}))
        .unwrap();
        // The first missing claim is what Filter reports, so Detail says the same.
        assert_eq!(
            pod_claim_lines(&c.listers, &pod),
            vec!["could not find ResourceClaim \"ml/missing\"".to_string()]
        );
        let mut one = pod.clone();
        one.spec
            .as_mut()
            .unwrap()
            .resource_claims
            .as_mut()
            .unwrap()
            .pop();
        assert_eq!(
            pod_claim_lines(&c.listers, &one),
            vec!["claim ml/train: allocated gpu.example.com/n1/gpu-1 · reserved for 1 pod(s)"]
        );
        // A template's claim before kubestep made it.
        let mut c = c;
        c.add(from_value(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one", "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}}))
            .unwrap()
            .unwrap());
        let tpl: Pod = serde_json::from_value(json!({"metadata": {"name": "q", "namespace": "ml"},
            "spec": {"containers": [], "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one"}]}}))
        .unwrap();
        assert_eq!(
            pod_claim_lines(&c.listers, &tpl),
            vec![
                "claim ml/q-gpu (not created yet: made from template one at PreBind): not allocated"
            ]
        );
        let n: Node = serde_json::from_value(node).unwrap();
        assert_eq!(
            node_lines(&c.listers, &n),
            vec![
                "slice n1-gpus: driver gpu.example.com, pool n1, 2 device(s)",
                "claim ml/train: allocated gpu.example.com/n1/gpu-1",
            ]
        );
    }
}
