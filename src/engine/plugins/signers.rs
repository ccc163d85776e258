//! The signature fragments several plugins share (upstream `framework/signers.go`): what
//! each plugin's SignPod says it looks at. Only equality matters, so a value is any JSON
//! that is equal exactly when upstream's would be (order-insensitive where upstream sorts).

use serde_json::{Value, json};

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, Pod};

use crate::framework::signature::{SignFragment, signer};
use crate::framework::types::PodInfo;

fn spec(pod: &Pod) -> Option<&k8s_openapi::api::core::v1::PodSpec> {
    pod.spec.as_ref()
}

fn fragment(key: &'static str, value: Value) -> SignFragment {
    SignFragment { key, value }
}

/// Host ports of all containers, init containers too: sorted, each once (the port number
/// only, as upstream).
pub fn host_ports(pod: &PodInfo) -> SignFragment {
    let mut ports: Vec<i32> = spec(pod.pod())
        .into_iter()
        .flat_map(|s| {
            s.containers
                .iter()
                .chain(s.init_containers.iter().flatten())
        })
        .flat_map(|c| c.ports.iter().flatten())
        .map(|p| p.host_port.unwrap_or(0))
        .filter(|&p| p != 0)
        .collect();
    ports.sort_unstable();
    ports.dedup();
    fragment(signer::HOST_PORTS, json!(ports))
}

/// Tolerations ordered by key then value, the order of equal ones kept.
pub fn tolerations(pod: &PodInfo) -> SignFragment {
    let mut t: Vec<_> = spec(pod.pod())
        .and_then(|s| s.tolerations.clone())
        .unwrap_or_default();
    t.sort_by(|a, b| (&a.key, &a.value).cmp(&(&b.key, &b.value)));
    fragment(
        signer::TOLERATIONS,
        serde_json::to_value(&t).unwrap_or(Value::Null),
    )
}

/// The volume sources other than ConfigMaps and Secrets (those never change where a pod
/// fits, and every pod has its own), sorted; names left out.
pub fn volumes(pod: &PodInfo) -> SignFragment {
    let mut out: Vec<String> = Vec::new();
    for v in spec(pod.pod())
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
    {
        if v.config_map.is_some() || v.secret.is_some() {
            continue;
        }
        let mut value = serde_json::to_value(v).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut value {
            m.remove("name");
        }
        out.push(value.to_string());
    }
    out.sort();
    fragment(signer::VOLUMES, json!(out))
}

fn requirements(reqs: Option<&Vec<NodeSelectorRequirement>>) -> Vec<String> {
    let mut out: Vec<String> = reqs
        .into_iter()
        .flatten()
        .map(|r| {
            let mut values = r.values.clone().unwrap_or_default();
            values.sort();
            json!({"key": r.key, "operator": r.operator, "values": values}).to_string()
        })
        .collect();
    out.sort();
    out
}

fn term(t: &NodeSelectorTerm) -> Value {
    json!({
        "matchExpressions": requirements(t.match_expressions.as_ref()),
        "matchFields": requirements(t.match_fields.as_ref()),
    })
}

/// Node affinity with every list sorted (null without any), and the node selector.
pub fn node_affinity(pod: &PodInfo) -> Vec<SignFragment> {
    let spec = spec(pod.pod());
    let aff = spec
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .map(|n| {
            let mut required: Vec<String> = n
                .required_during_scheduling_ignored_during_execution
                .iter()
                .flat_map(|r| r.node_selector_terms.iter())
                .map(|t| term(t).to_string())
                .collect();
            required.sort();
            let mut preferred: Vec<String> = n
                .preferred_during_scheduling_ignored_during_execution
                .iter()
                .flatten()
                .map(|p| json!({"weight": p.weight, "preference": term(&p.preference)}).to_string())
                .collect();
            preferred.sort();
            json!({"required": required, "preferred": preferred})
        })
        .unwrap_or(Value::Null);
    let selector = spec
        .and_then(|s| s.node_selector.as_ref())
        .map_or(Value::Null, |m| json!(m));
    vec![
        fragment(signer::NODE_AFFINITY, aff),
        fragment(signer::NODE_SELECTOR, selector),
    ]
}

/// `spec.nodeName`.
pub fn node_name(pod: &PodInfo) -> SignFragment {
    fragment(signer::NODE_NAME, json!(pod.node_name()))
}

/// The labels (null when the pod has none).
pub fn labels(pod: &PodInfo) -> SignFragment {
    let l = pod.pod().metadata.labels.as_ref();
    fragment(signer::LABELS, l.map_or(Value::Null, |m| json!(m)))
}

/// The images of all containers, normalized (":latest" added), sorted, each once.
pub fn image_names(pod: &PodInfo) -> SignFragment {
    let mut names: Vec<&str> = pod.images.iter().map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    fragment(signer::IMAGE_NAMES, json!(names))
}

/// What NodeResourcesFit's PreFilter computes as the pod's request.
pub fn resources(pod: &PodInfo) -> SignFragment {
    let r = super::noderesources::fit::pre_filter_resource(pod);
    fragment(
        signer::RESOURCES,
        json!({
            "milliCPU": r.milli_cpu,
            "memory": r.memory,
            "ephemeralStorage": r.ephemeral_storage,
            "allowedPodNumber": r.allowed_pod_number,
            "scalarResources": r.scalar_resources,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn pod(yaml: &str) -> PodInfo {
        let p: Pod = serde_saphyr::from_str(yaml).unwrap();
        PodInfo::new(Arc::new(p))
    }

    #[test]
    fn order_does_not_matter_where_upstream_sorts() {
        let a = pod(r#"
metadata: {name: a}
spec:
  containers:
  - {name: c, image: nginx, ports: [{containerPort: 80, hostPort: 81}, {containerPort: 80, hostPort: 80}]}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: zone, operator: In, values: [b, a]}]
        - matchExpressions: [{key: disk, operator: Exists}]
"#);
        let b = pod(r#"
metadata: {name: b}
spec:
  containers:
  - {name: c, image: "nginx:latest", ports: [{containerPort: 80, hostPort: 80}, {containerPort: 80, hostPort: 81}]}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: disk, operator: Exists}]
        - matchExpressions: [{key: zone, operator: In, values: [a, b]}]
"#);
        assert_eq!(host_ports(&a), host_ports(&b));
        assert_eq!(host_ports(&a).value, json!([80, 81]));
        assert_eq!(node_affinity(&a), node_affinity(&b));
        assert_eq!(image_names(&a), image_names(&b));
    }

    #[test]
    fn config_maps_and_secrets_are_not_part_of_the_signature() {
        let a = pod(r#"
metadata: {name: a}
spec:
  containers: [{name: c, image: x}]
  volumes:
  - {name: cfg-a, configMap: {name: a}}
  - {name: data, emptyDir: {}}
"#);
        let b = pod(r#"
metadata: {name: b}
spec:
  containers: [{name: c, image: x}]
  volumes:
  - {name: scratch, emptyDir: {}}
  - {name: tls, secret: {secretName: b}}
"#);
        assert_eq!(volumes(&a), volumes(&b));
        assert_eq!(volumes(&a).value, json!(["{\"emptyDir\":{}}"]));
    }

    #[test]
    fn no_node_affinity_differs_from_an_empty_one() {
        let none = pod("metadata: {name: a}\nspec: {containers: [{name: c}]}\n");
        let empty = pod(
            "metadata: {name: a}\nspec: {containers: [{name: c}], affinity: {nodeAffinity: {}}}\n",
        );
        assert_ne!(node_affinity(&none), node_affinity(&empty));
    }
}
