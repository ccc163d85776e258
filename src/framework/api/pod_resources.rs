//! Effective pod requests (component-helpers `PodRequests`) and host ports.
//!
//! Sums are kept exact (as quantities) and only rounded when turned into a `Resource`,
//! as upstream adds `resource.Quantity` values before calling `MilliValue()`.
//! Feature gates at their v1.35 defaults: InPlacePodVerticalScaling (status resources),
//! PodLevelResources and SidecarContainers on.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;

use super::quantity::Quantity;

/// Exact resource amounts by resource name.
pub type ResourceList = BTreeMap<String, Quantity>;

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
pub const PODS: &str = "pods";
pub const HUGEPAGES_PREFIX: &str = "hugepages-";

/// Upstream `DefaultMilliCPURequest` and `DefaultMemoryRequest`: what a container that
/// names no cpu / memory request counts as when spreading load.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// Converts a k8s-openapi resource list; invalid quantities count as zero here (they are
/// reported with their object and field when the cluster is loaded).
pub fn to_resource_list(rl: Option<&BTreeMap<String, K8sQuantity>>) -> ResourceList {
    rl.map(|m| {
        m.iter()
            .map(|(k, v)| (k.clone(), Quantity::parse(&v.0).unwrap_or_default()))
            .collect()
    })
    .unwrap_or_default()
}

fn add_into(dst: &mut ResourceList, src: &ResourceList) {
    for (k, v) in src {
        let e = dst.entry(k.clone()).or_default();
        *e = Quantity::from_nanos(e.nanos().saturating_add(v.nanos()));
    }
}

fn max_into(dst: &mut ResourceList, src: &ResourceList) {
    for (k, v) in src {
        match dst.get_mut(k) {
            Some(e) if *e >= *v => {}
            Some(e) => *e = *v,
            None => {
                dst.insert(k.clone(), *v);
            }
        }
    }
}

fn max_of(lists: &[&ResourceList]) -> ResourceList {
    let mut out = ResourceList::new();
    for l in lists {
        max_into(&mut out, l);
    }
    out
}

fn is_restartable(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

fn is_resize_infeasible(pod: &Pod) -> bool {
    let conds = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[]);
    conds
        .iter()
        .find(|c| c.type_ == "PodResizePending")
        .is_some_and(|c| c.reason.as_deref() == Some("Infeasible"))
}

/// What a container effectively requests given its status (in-place resize).
fn effective_requests(
    pod: &Pod,
    spec: ResourceList,
    status: Option<&ContainerStatus>,
) -> ResourceList {
    let Some(cs) = status else { return spec };
    let Some(res) = cs.resources.as_ref() else {
        return spec;
    };
    let actuated = to_resource_list(res.requests.as_ref());
    let allocated = to_resource_list(cs.allocated_resources.as_ref());
    if is_resize_infeasible(pod) {
        max_of(&[&actuated, &allocated])
    } else {
        max_of(&[&spec, &actuated, &allocated])
    }
}

/// The pod-level requests given the pod's resize status, when it has one.
fn pod_level_effective(pod: &Pod, spec: &ResourceList) -> Option<ResourceList> {
    let status = pod.status.as_ref()?;
    let actuated = to_resource_list(status.resources.as_ref()?.requests.as_ref());
    let allocated = to_resource_list(status.allocated_resources.as_ref());
    Some(if is_resize_infeasible(pod) {
        max_of(&[&actuated, &allocated])
    } else {
        max_of(&[spec, &actuated, &allocated])
    })
}

fn apply_non_missing(reqs: ResourceList, non_missing: &ResourceList) -> ResourceList {
    let mut out = reqs;
    for (k, v) in non_missing {
        out.entry(k.clone()).or_insert(*v);
    }
    out
}

fn is_supported_pod_level(name: &str) -> bool {
    name == CPU || name == MEMORY || name.starts_with(HUGEPAGES_PREFIX)
}

pub fn is_pod_level_requests_set(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .is_some_and(|r| r.keys().any(|k| is_supported_pod_level(k)))
}

/// `PodRequests` with the scheduler's usual options (status resources considered).
/// `non_missing` supplies defaults for containers that do not name a resource (used for
/// the non-zero requests).
pub fn pod_requests(pod: &Pod, non_missing: Option<&ResourceList>) -> ResourceList {
    pod_requests_with(pod, true, non_missing)
}

/// `PodRequests`; `use_status` takes in-place resize status into account (the scheduler
/// does so everywhere except NodeResourcesFit's PreFilter).
pub fn pod_requests_with(
    pod: &Pod,
    use_status: bool,
    non_missing: Option<&ResourceList>,
) -> ResourceList {
    requests(pod, use_status, false, non_missing)
}

/// `PodRequests` under InPlacePodLevelResourcesVerticalScaling (on from 1.36): a pod whose
/// pod-level resources are being resized in place counts each at the most of its spec,
/// actuated (`status.resources`) and allocated (`status.allocatedResources`) value, as
/// containers always did. Pods without pod-level status are counted as by
/// [`pod_requests`].
pub fn pod_requests_resized(pod: &Pod, non_missing: Option<&ResourceList>) -> ResourceList {
    requests(pod, true, true, non_missing)
}

/// [`pod_requests_resized`] when `pod_level_resize` (the gate), else [`pod_requests`].
pub fn pod_requests_for(
    pod: &Pod,
    non_missing: Option<&ResourceList>,
    pod_level_resize: bool,
) -> ResourceList {
    requests(pod, true, pod_level_resize, non_missing)
}

/// Whether [`pod_requests_resized`] can differ from [`pod_requests`] for this pod.
pub fn has_pod_level_status(pod: &Pod) -> bool {
    is_pod_level_requests_set(pod) && pod.status.as_ref().is_some_and(|s| s.resources.is_some())
}

fn requests(
    pod: &Pod,
    use_status: bool,
    pod_level_status: bool,
    non_missing: Option<&ResourceList>,
) -> ResourceList {
    let Some(spec) = pod.spec.as_ref() else {
        return ResourceList::new();
    };
    let statuses: BTreeMap<&str, &ContainerStatus> = pod
        .status
        .as_ref()
        .into_iter()
        .flat_map(|s| {
            s.container_statuses
                .iter()
                .flatten()
                .chain(s.init_container_statuses.iter().flatten())
        })
        .map(|cs| (cs.name.as_str(), cs))
        .collect();
    let container_reqs = |c: &Container, use_status: bool| {
        let spec_reqs = to_resource_list(c.resources.as_ref().and_then(|r| r.requests.as_ref()));
        let reqs = if use_status {
            effective_requests(pod, spec_reqs, statuses.get(c.name.as_str()).copied())
        } else {
            spec_reqs
        };
        match non_missing {
            Some(nm) if !nm.is_empty() => apply_non_missing(reqs, nm),
            _ => reqs,
        }
    };

    let mut reqs = ResourceList::new();
    for c in &spec.containers {
        add_into(&mut reqs, &container_reqs(c, use_status));
    }
    let mut restartable = ResourceList::new();
    let mut init_max = ResourceList::new();
    for c in spec.init_containers.iter().flatten() {
        let r = container_reqs(c, use_status && is_restartable(c));
        let usage = if is_restartable(c) {
            add_into(&mut reqs, &r);
            add_into(&mut restartable, &r);
            restartable.clone()
        } else {
            let mut tmp = r;
            add_into(&mut tmp, &restartable);
            tmp
        };
        max_into(&mut init_max, &usage);
    }
    max_into(&mut reqs, &init_max);

    if is_pod_level_requests_set(pod) {
        let pod_level = to_resource_list(spec.resources.as_ref().and_then(|r| r.requests.as_ref()));
        let effective = (use_status && pod_level_status)
            .then(|| pod_level_effective(pod, &pod_level))
            .flatten();
        for (k, v) in pod_level {
            if is_supported_pod_level(&k) {
                // Upstream indexes the effective list: a resource it lacks counts as zero.
                let v = match &effective {
                    Some(e) => e.get(&k).copied().unwrap_or_default(),
                    None => v,
                };
                reqs.insert(k, v);
            }
        }
    }
    if let Some(overhead) = spec.overhead.as_ref() {
        add_into(&mut reqs, &to_resource_list(Some(overhead)));
    }
    reqs
}

/// Defaults applied to containers that name no cpu / memory request
/// (`getNonMissingContainerRequests`).
pub fn non_missing_container_requests(
    requests: &ResourceList,
    pod_level_set: bool,
) -> ResourceList {
    let mut out = ResourceList::new();
    if !pod_level_set || !requests.contains_key(CPU) {
        out.insert(
            CPU.to_string(),
            Quantity::from_nanos(i128::from(DEFAULT_MILLI_CPU_REQUEST) * 1_000_000),
        );
    }
    if !pod_level_set || !requests.contains_key(MEMORY) {
        out.insert(
            MEMORY.to_string(),
            Quantity::from_nanos(i128::from(DEFAULT_MEMORY_REQUEST) * 1_000_000_000),
        );
    }
    out
}

/// A host port a pod wants (`util.GetHostPorts`), normalised: empty IP is 0.0.0.0 and
/// empty protocol is TCP.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostPort {
    pub ip: String,
    pub protocol: String,
    pub port: i32,
}

pub const DEFAULT_BIND_ALL_HOST_IP: &str = "0.0.0.0";

/// Host ports of restartable init containers, then of regular containers.
pub fn host_ports(pod: &Pod) -> Vec<HostPort> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| is_restartable(c));
    let mut out = Vec::new();
    for c in sidecars.chain(spec.containers.iter()) {
        for p in c.ports.iter().flatten() {
            let Some(hp) = p.host_port.filter(|&hp| hp > 0) else {
                continue;
            };
            let ip = p
                .host_ip
                .as_deref()
                .filter(|s| !s.is_empty())
                .unwrap_or(DEFAULT_BIND_ALL_HOST_IP);
            let protocol = p
                .protocol
                .as_deref()
                .filter(|s| !s.is_empty())
                .unwrap_or("TCP");
            out.push(HostPort {
                ip: ip.to_string(),
                protocol: protocol.to_string(),
                port: hp,
            });
        }
    }
    out
}

/// Extended, hugepages, `kubernetes.io/`-prefixed native resources and attachable volume
/// limits: the resources upstream tracks as scalars (`IsScalarResourceName`).
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || name.starts_with(HUGEPAGES_PREFIX)
        || is_prefixed_native_resource(name)
        || name.starts_with("attachable-volumes-")
}

pub fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

fn is_prefixed_native_resource(name: &str) -> bool {
    name.contains("kubernetes.io/")
}

/// An extended resource: fully qualified, outside the kubernetes.io domain, and not
/// starting with the `requests.` quota prefix.
pub fn is_extended_resource_name(name: &str) -> bool {
    if is_native_resource(name) || name.starts_with("requests.") {
        return false;
    }
    let quota_name = format!("requests.{name}");
    super::labels::validate_label_key(&quota_name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }
    fn milli(rl: &ResourceList, k: &str) -> i64 {
        rl.get(k).map(|q| q.milli_value()).unwrap_or(0)
    }

    #[test]
    fn sidecars_and_init_containers() {
        // containers 500m; sidecar 250m runs alongside; a later init container 1 needs
        // 1 + 250m while it runs.
        let p = pod(json!({"spec": {
        "containers": [{"name": "m", "resources": {"requests": {"cpu": "500m"}}}],
        "initContainers": [
            {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "250m"}}},
            {"name": "i", "resources": {"requests": {"cpu": "1"}}}
        ]}}));
        let r = pod_requests(&p, None);
        assert_eq!(milli(&r, CPU), 1250);
        let p = pod(json!({"spec": {
            "containers": [{"name": "m", "resources": {"requests": {"cpu": "2"}}}],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}]}}));
        assert_eq!(milli(&pod_requests(&p, None), CPU), 2000);
    }

    #[test]
    fn overhead_and_defaults() {
        let p = pod(json!({"spec": {
            "containers": [{"name": "a"}, {"name": "b", "resources": {"requests": {"cpu": "0"}}}],
            "overhead": {"cpu": "100m", "memory": "64Mi"}}}));
        let reqs = pod_requests(&p, None);
        assert_eq!(milli(&reqs, CPU), 100);
        let nm = non_missing_container_requests(&reqs, false);
        let non0 = pod_requests(&p, Some(&nm));
        // a gets the 100m default; b's explicit 0 stays 0; plus overhead.
        assert_eq!(milli(&non0, CPU), 200);
        assert_eq!(
            non0[MEMORY].value(),
            2 * 200 * 1024 * 1024 + 64 * 1024 * 1024
        );
    }

    #[test]
    fn pod_level_requests_override() {
        let p = pod(json!({"spec": {
            "resources": {"requests": {"cpu": "3"}},
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}));
        let r = pod_requests(&p, None);
        assert_eq!(milli(&r, CPU), 3000);
        assert_eq!(r[MEMORY].value(), 1 << 30);
    }

    /// A pod resizing its pod-level cpu from 1 to 3 (allocated 3, still running at 1).
    fn resizing(conditions: serde_json::Value) -> Pod {
        pod(json!({
            "spec": {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                "containers": [{"name": "a"}]},
            "status": {"resources": {"requests": {"cpu": "1"}},
                "allocatedResources": {"cpu": "3"}, "conditions": conditions}}))
    }

    #[test]
    fn pod_level_resize_counts_the_most_of_spec_actuated_and_allocated() {
        let p = resizing(json!([]));
        assert!(has_pod_level_status(&p));
        // Without the gate the spec counts; with it, the allocated 3 cpu.
        assert_eq!(milli(&pod_requests(&p, None), CPU), 1000);
        let r = pod_requests_resized(&p, None);
        assert_eq!(milli(&r, CPU), 3000);
        assert_eq!(r[MEMORY].value(), 1 << 30);
        let infeasible = resizing(
            json!([{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]),
        );
        // Infeasible: the spec no longer counts, only what runs and what is allocated; a
        // pod-level resource neither names counts as zero, as upstream's.
        let r = pod_requests_resized(&infeasible, None);
        assert_eq!(milli(&r, CPU), 3000);
        assert_eq!(milli(&r, MEMORY), 0);
        // A pod without pod-level status counts the same either way.
        let plain = pod(json!({"spec": {"resources": {"requests": {"cpu": "1"}},
            "containers": [{"name": "a"}]}}));
        assert!(!has_pod_level_status(&plain));
        assert_eq!(
            pod_requests_resized(&plain, None),
            pod_requests(&plain, None)
        );
    }

    #[test]
    fn exact_sums_before_rounding() {
        let p = pod(json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "0.0005"}}},
            {"name": "b", "resources": {"requests": {"cpu": "0.0005"}}}]}}));
        assert_eq!(milli(&pod_requests(&p, None), CPU), 1);
    }

    #[test]
    fn host_ports_sidecars_first() {
        let p = pod(json!({"spec": {
            "containers": [{"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81}]}],
            "initContainers": [{"name": "s", "restartPolicy": "Always", "ports": [{"containerPort": 9, "hostPort": 9100, "protocol": "UDP", "hostIP": "10.0.0.1"}]}]}}));
        let hp = host_ports(&p);
        assert_eq!(hp.len(), 2);
        assert_eq!(
            hp[0],
            HostPort {
                ip: "10.0.0.1".into(),
                protocol: "UDP".into(),
                port: 9100
            }
        );
        assert_eq!(
            hp[1],
            HostPort {
                ip: "0.0.0.0".into(),
                protocol: "TCP".into(),
                port: 8080
            }
        );
    }

    #[test]
    fn scalar_names() {
        assert!(is_scalar_resource_name("example.com/gpu"));
        assert!(is_scalar_resource_name("hugepages-2Mi"));
        assert!(is_scalar_resource_name("kubernetes.io/batch-cpu"));
        assert!(is_scalar_resource_name("attachable-volumes-csi-x"));
        assert!(!is_scalar_resource_name("cpu"));
        assert!(!is_scalar_resource_name("foo"));
    }
}
