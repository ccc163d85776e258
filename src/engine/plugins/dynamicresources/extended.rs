//! DRAExtendedResource: a container's extended resource (`example.com/gpu`, or
//! `deviceclass.resource.kubernetes.io/<class>`) served by the devices of a DeviceClass on
//! nodes that do not advertise it. NodeResourcesFit leaves such a resource to this plugin
//! (`delegated`); PreFilter stands a claim in for the pod's extended resources (upstream's
//! in-memory `<extended-resources>` claim), Filter gives it one request per container and
//! resource on each node that needs devices, and PreBind creates it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, ContainerExtendedResourceRequest, Pod};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::{
    Device, DeviceClass, DeviceRequest, ExactDeviceRequest, ResourceClaim, ResourceSlice,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::api::pod_resources::is_extended_resource_name;
use crate::framework::Resource;
use crate::framework::listers::Listers;

/// Upstream `resourceapi.ResourceDeviceClassPrefix`: the implicit extended resource of a
/// DeviceClass is this prefix and the class's name.
pub const IMPLICIT_PREFIX: &str = "deviceclass.resource.kubernetes.io/";
/// Upstream `resourceapi.ExtendedResourceClaimAnnotation`.
pub const CLAIM_ANNOTATION: &str = "resource.kubernetes.io/extended-resource-claim";
/// The name of the claim before PreBind creates it (upstream's `specialClaimInMemName`).
pub const IN_MEMORY_NAME: &str = "<extended-resources>";

/// `IsDRAExtendedResourceName`: an extended resource name, or a DeviceClass's implicit one.
pub fn is_dra_extended_resource_name(name: &str) -> bool {
    is_extended_resource_name(name) || name.starts_with(IMPLICIT_PREFIX)
}

/// Which DeviceClass serves an extended resource (upstream's `ExtendedResourceCache`):
/// every class serves its implicit name; an explicit `extendedResourceName` claimed by
/// several classes goes to the newest (by creationTimestamp, then the smaller name).
#[derive(Debug, Default, Clone)]
pub struct ClassResolver {
    by_resource: BTreeMap<String, Arc<DeviceClass>>,
}

impl ClassResolver {
    /// From the classes in name order, as an informer adds them.
    pub fn new<'a>(classes: impl IntoIterator<Item = &'a DeviceClass>) -> ClassResolver {
        let mut by_resource: BTreeMap<String, Arc<DeviceClass>> = BTreeMap::new();
        for c in classes {
            let name = c.metadata.name.clone().unwrap_or_default();
            let explicit = c.spec.extended_resource_name.clone();
            if let Some(held) = explicit.as_ref().and_then(|e| by_resource.get(e)) {
                let created = |c: &DeviceClass| c.metadata.creation_timestamp.as_ref().map(|t| t.0);
                let held_name = held.metadata.name.as_deref().unwrap_or("");
                // Upstream returns early here, so the losing class gets no implicit
                // name either.
                match created(c).cmp(&created(held)) {
                    std::cmp::Ordering::Less => continue,
                    std::cmp::Ordering::Equal if name.as_str() >= held_name => continue,
                    _ => {}
                }
            }
            let c = Arc::new(c.clone());
            if let Some(e) = explicit {
                by_resource.insert(e, c.clone());
            }
            by_resource.insert(format!("{IMPLICIT_PREFIX}{name}"), c);
        }
        ClassResolver { by_resource }
    }

    /// The cluster's DeviceClasses.
    pub fn of(listers: &Listers) -> ClassResolver {
        let classes = super::objects::all_classes(listers);
        ClassResolver::new(classes.values())
    }

    pub fn get(&self, resource: &str) -> Option<&DeviceClass> {
        self.by_resource.get(resource).map(|c| &**c)
    }

    /// Any of `names` is served by a class.
    pub fn serves_any<'a>(&self, mut names: impl Iterator<Item = &'a String>) -> bool {
        !self.by_resource.is_empty()
            && names.any(|n| is_dra_extended_resource_name(n) && self.by_resource.contains_key(n))
    }
}

/// `shouldDelegateResourceToDRA`: Fit leaves `name` to DynamicResources on a node that
/// does not advertise it when a DeviceClass serves it.
pub fn delegated(resolver: &ClassResolver, name: &str, allocatable: &Resource) -> bool {
    allocatable.scalar(name) <= 0 && resolver.get(name).is_some()
}

/// The pod's own claim for its extended resources, from an earlier attempt's PreBind
/// (upstream's `findExtendedResourceClaim`).
pub fn find_claim<'a>(
    pod: &Pod,
    claims: impl IntoIterator<Item = (&'a String, &'a Arc<ResourceClaim>)>,
) -> Option<(String, Arc<ResourceClaim>)> {
    let (name, uid) = (pod.metadata.name.as_deref(), pod.metadata.uid.as_deref());
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    claims
        .into_iter()
        .filter(|(_, c)| c.metadata.namespace.as_deref().unwrap_or("default") == ns)
        .find(|(_, c)| {
            let marked = c
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(CLAIM_ANNOTATION))
                .is_some_and(|v| v == "true");
            marked
                && c.metadata.owner_references.iter().flatten().any(|o| {
                    Some(o.name.as_str()) == name
                        && o.controller == Some(true)
                        && Some(o.uid.as_str()) == uid
                })
        })
        .map(|(k, c)| (k.clone(), c.clone()))
}

/// The name PreBind creates the claim under: upstream lets the API server complete
/// `<pod>-extended-resources-` (cut to 58 characters, as its name generator cuts a
/// generateName); kubestep derives the five characters from the pod's uid, so a replay
/// names it the same every time and live mode knows the name it wrote.
pub fn created_name(pod_name: &str, pod_uid: &str) -> String {
    const MAX_BASE: usize = 58;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    // FNV-1a: stable across runs and platforms.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in pod_uid.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3);
    }
    let suffix: String = (0..5)
        .map(|i| ALPHABET[((h >> (i * 8)) % ALPHABET.len() as u64) as usize] as char)
        .collect();
    let base: String = format!("{pod_name}-extended-resources-")
        .chars()
        .take(MAX_BASE)
        .collect();
    format!("{base}{suffix}")
}

/// Upstream's in-memory claim: no requests yet, owned by the pod, marked as the pod's
/// extended-resource claim.
pub fn in_memory_claim(pod: &Pod) -> ResourceClaim {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let mut c = ResourceClaim::default();
    c.metadata.namespace = Some(
        pod.metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
    );
    c.metadata.name = Some(IN_MEMORY_NAME.into());
    c.metadata.uid = Some(format!("kubestep-extended-resources-{uid}"));
    c.metadata.generate_name = Some(format!("{name}-extended-resources-"));
    c.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name,
        uid,
        controller: Some(true),
        ..Default::default()
    }]);
    c.metadata.annotations = Some([(CLAIM_ANNOTATION.to_string(), "true".to_string())].into());
    c
}

/// A container's whole-unit request of `resource` (none when absent, zero or fractional).
fn container_count(c: &Container, resource: &str) -> Option<i64> {
    let q = c.resources.as_ref()?.requests.as_ref()?.get(resource)?;
    let q = crate::api::quantity::Quantity::parse(&q.0).ok()?;
    let n = q.nanos();
    (n != 0 && n % 1_000_000_000 == 0).then_some((n / 1_000_000_000) as i64)
}

/// One container's request for `resource` (`createResourceRequestAndMappings`): what the
/// long-lived containers after it already request is reused first; the rest becomes a
/// request `container-<i>-request-<j>` (j: the resource's place among the container's
/// requests, sorted).
fn container_request(
    index: usize,
    c: &Container,
    resource: &str,
    class: &str,
    reusable: &[Option<DeviceRequest>],
    mappings: &mut Vec<ContainerExtendedResourceRequest>,
) -> Option<DeviceRequest> {
    let want = container_count(c, resource)?;
    let mut sum = 0;
    for r in reusable.iter().flatten() {
        sum += r.exactly.as_ref().and_then(|e| e.count).unwrap_or(0);
        mappings.push(mapping(c, resource, &r.name));
        if sum >= want {
            return None;
        }
    }
    let keys: BTreeSet<&String> = c.resources.as_ref()?.requests.as_ref()?.keys().collect();
    let j = keys.iter().position(|k| *k == resource).unwrap_or(0);
    let name = format!("container-{index}-request-{j}");
    mappings.push(mapping(c, resource, &name));
    Some(DeviceRequest {
        name,
        exactly: Some(ExactDeviceRequest {
            device_class_name: class.to_string(),
            allocation_mode: Some("ExactCount".into()),
            count: Some(want - sum),
            ..Default::default()
        }),
        ..Default::default()
    })
}

fn mapping(c: &Container, resource: &str, request: &str) -> ContainerExtendedResourceRequest {
    ContainerExtendedResourceRequest {
        container_name: c.name.clone(),
        resource_name: resource.to_string(),
        request_name: request.to_string(),
    }
}

/// The device requests for the extended resources a node must serve with devices, and
/// which container's resource each request stands for (`createRequestsAndMappings`).
/// Init containers that run to completion share one request, the largest; sidecars and
/// app containers each get their own.
pub fn requests_and_mappings(
    pod: &Pod,
    resources: &BTreeSet<String>,
    resolver: &ClassResolver,
) -> (Vec<DeviceRequest>, Vec<ContainerExtendedResourceRequest>) {
    let Some(spec) = pod.spec.as_ref() else {
        return Default::default();
    };
    let inits = spec.init_containers.as_deref().unwrap_or(&[]);
    let containers: Vec<&Container> = inits.iter().chain(&spec.containers).collect();
    let short_lived = |i: usize| {
        i < inits.len() && containers[i].restart_policy.as_deref() != Some("Always")
    };
    let (mut requests, mut mappings) = (Vec::new(), Vec::new());
    for resource in resources {
        let Some(class) = resolver.get(resource) else {
            continue;
        };
        let class = class.metadata.name.as_deref().unwrap_or("");
        let mut long: Vec<Option<DeviceRequest>> = vec![None; containers.len()];
        let mut long_maps = Vec::new();
        for (i, c) in containers.iter().enumerate().filter(|(i, _)| !short_lived(*i)) {
            long[i] = container_request(i, c, resource, class, &[], &mut long_maps);
        }
        let mut largest: Option<DeviceRequest> = None;
        let mut short_names = BTreeSet::new();
        let mut short_maps = Vec::new();
        for (i, c) in containers.iter().enumerate().filter(|(i, _)| short_lived(*i)) {
            let Some(r) = container_request(i, c, resource, class, &long[i..], &mut short_maps)
            else {
                continue;
            };
            short_names.insert(r.name.clone());
            let count = |r: &DeviceRequest| r.exactly.as_ref().and_then(|e| e.count).unwrap_or(0);
            if largest.as_ref().is_none_or(|l| count(l) < count(&r)) {
                largest = Some(r);
            }
        }
        if let Some(l) = &largest
            && short_names.len() > 1
        {
            for m in &mut short_maps {
                if short_names.contains(&m.request_name) {
                    m.request_name = l.name.clone();
                }
            }
        }
        requests.extend(largest);
        requests.extend(long.into_iter().flatten());
        mappings.extend(long_maps);
        mappings.extend(short_maps);
    }
    requests.sort_by(|a, b| a.name.cmp(&b.name));
    (requests, mappings)
}

/// What NodeResourcesFit and BalancedAllocation score for a resource a DeviceClass serves
/// on a node that does not advertise it (`getDRAPreScoredParams` and
/// `calculateDRAResourceTotals`): the node's devices of that class, and how many of them
/// claims hold. Read once per cycle; counted per node.
#[derive(Debug, Clone)]
pub struct DeviceTotals {
    /// Per configured resource, the class serving it.
    classes: Vec<Option<DeviceClass>>,
    slices: Arc<Vec<ResourceSlice>>,
    held: BTreeSet<(String, String, String)>,
}

impl DeviceTotals {
    /// `None` when no configured resource is served by a class (the common case).
    pub fn of(listers: &Listers, resources: &[String]) -> Option<DeviceTotals> {
        if !resources.iter().any(|r| is_dra_extended_resource_name(r)) {
            return None;
        }
        let resolver = ClassResolver::of(listers);
        let classes: Vec<Option<DeviceClass>> = resources
            .iter()
            .map(|r| {
                is_dra_extended_resource_name(r)
                    .then(|| resolver.get(r).cloned())
                    .flatten()
            })
            .collect();
        if classes.iter().all(Option::is_none) {
            return None;
        }
        // Devices held whole or in part (a shared device with capacity consumed).
        let held = super::objects::all_claims(listers)
            .values()
            .filter_map(|c| c.status.as_ref()?.allocation.clone())
            .flat_map(|a| a.devices.into_iter().flat_map(|d| d.results.into_iter().flatten()))
            .filter(|r| r.admin_access != Some(true))
            .map(|r| (r.driver, r.pool, r.device))
            .collect();
        Some(DeviceTotals {
            classes,
            slices: Arc::new(super::objects::slices(listers)),
            held,
        })
    }

    /// (devices of the class on the node, of which held) for resource `i`; `None` when
    /// a class does not serve it.
    pub fn on_node(&self, i: usize, node: &Node) -> Option<(i64, i64)> {
        let class = self.classes.get(i)?.as_ref()?;
        let (mut total, mut held) = (0, 0);
        for (s, d) in self.node_devices(node) {
            // A selector that fails to evaluate leaves the resource out, as upstream's
            // error does.
            if !class_matches(class, &s.spec.driver, d).ok()? {
                continue;
            }
            total += 1;
            let id = (s.spec.driver.clone(), s.spec.pool.name.clone(), d.name.clone());
            if self.held.contains(&id) {
                held += 1;
            }
        }
        Some((total, held))
    }

    /// The class serving resource `i` has CEL selectors and the node has devices to test
    /// them on (where 1.36's NodeResourcesBalancedAllocation crashes).
    pub fn evaluates_selectors(&self, i: usize, node: &Node) -> Option<&str> {
        let class = self.classes.get(i)?.as_ref()?;
        let has_cel = class.spec.selectors.iter().flatten().any(|s| s.cel.is_some());
        (has_cel && self.node_devices(node).next().is_some())
            .then(|| class.metadata.name.as_deref().unwrap_or(""))
    }

    /// The devices published for the node, as `calculateDRAResourceTotals` selects them.
    fn node_devices<'a>(&'a self, node: &'a Node) -> impl Iterator<Item = (&'a ResourceSlice, &'a Device)> + 'a {
        use super::pools::node_matches;
        let name = node.metadata.name.as_deref().unwrap_or("");
        self.slices.iter().flat_map(move |s| {
            let sp = &s.spec;
            let devices: Vec<&Device> = if sp.per_device_node_selection.unwrap_or(false) {
                sp.devices
                    .iter()
                    .flatten()
                    .filter(|d| {
                        let all = d.all_nodes.unwrap_or(false);
                        let dn = d.node_name.as_deref().unwrap_or("");
                        all || (!dn.is_empty() && dn == name)
                            || d.node_selector.as_ref().is_some_and(|sel| {
                                node_matches(node, None, false, Some(sel))
                            })
                    })
                    .collect()
            } else {
                let all = sp.all_nodes.unwrap_or(false);
                let sn = sp.node_name.as_deref().unwrap_or("");
                // Upstream's order of checks, kept: a slice naming no node at all counts
                // for every node.
                if !all && sn != name && sp.node_selector.is_some() {
                    if !node_matches(node, None, false, sp.node_selector.as_ref()) {
                        return Vec::new();
                    }
                } else if !all && !sn.is_empty() && sn != name {
                    return Vec::new();
                }
                sp.devices.iter().flatten().collect()
            };
            devices.into_iter().map(move |d| (s, d)).collect::<Vec<_>>()
        })
    }
}

fn class_matches(class: &DeviceClass, driver: &str, d: &Device) -> Result<bool, String> {
    for sel in class.spec.selectors.iter().flatten() {
        let Some(c) = &sel.cel else { continue };
        let expr = super::cel::compile(&c.expression)?;
        if !super::cel::matches(&expr, driver, d, false)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A request of the extended-resource claim in a person's words: which containers'
/// resource it stands for, how many devices, through which DeviceClass (the whole claim
/// when `request` is empty).
pub fn describe_request(
    claim: &ResourceClaim,
    mappings: &[ContainerExtendedResourceRequest],
    request: &str,
) -> Option<String> {
    if request.is_empty() {
        // Per resource: devices wanted in all, the class, the containers.
        let requests = claim.spec.devices.as_ref()?.requests.as_ref()?;
        let mut per: BTreeMap<&str, (i64, &str, BTreeSet<&str>)> = BTreeMap::new();
        for r in requests {
            let Some(e) = &r.exactly else { continue };
            for m in mappings.iter().filter(|m| m.request_name == r.name) {
                let p = per.entry(&m.resource_name).or_insert((0, &e.device_class_name, BTreeSet::new()));
                p.2.insert(&m.container_name);
            }
            if let Some(m) = mappings.iter().find(|m| m.request_name == r.name) {
                per.entry(&m.resource_name).or_default().0 += e.count.unwrap_or(1);
            }
        }
        let parts: Vec<String> = per
            .iter()
            .map(|(res, (n, class, cs))| {
                let cs: Vec<&str> = cs.iter().copied().collect();
                format!("{res}: {n} device(s) through DeviceClass {class} for container {}", cs.join(", "))
            })
            .collect();
        return Some(format!(
            "the pod's extended resources the node does not advertise ({})",
            parts.join("; ")
        ));
    }
    let r = claim
        .spec
        .devices
        .as_ref()?
        .requests
        .as_ref()?
        .iter()
        .find(|r| r.name == request)?;
    let e = r.exactly.as_ref()?;
    let mapped: Vec<&ContainerExtendedResourceRequest> =
        mappings.iter().filter(|m| m.request_name == request).collect();
    let resource = mapped.first().map(|m| m.resource_name.as_str()).unwrap_or("");
    let containers: Vec<&str> = mapped.iter().map(|m| m.container_name.as_str()).collect();
    Some(format!(
        "extended resource {resource} of container {} ({} device(s) through DeviceClass {}, as the node does not advertise it)",
        containers.join(", "),
        e.count.unwrap_or(1),
        e.device_class_name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, explicit: Option<&str>, created: Option<&str>) -> DeviceClass {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "creationTimestamp": created},
            "spec": {"extendedResourceName": explicit},
        }))
        .unwrap()
    }

    #[test]
    fn the_newest_class_serves_an_explicit_name_and_every_class_its_implicit_one() {
        let a = class("a", Some("example.com/gpu"), Some("2026-01-01T00:00:00Z"));
        let b = class("b", Some("example.com/gpu"), Some("2026-02-01T00:00:00Z"));
        let c = class("c", None, None);
        let r = ClassResolver::new([&a, &b, &c]);
        assert_eq!(r.get("example.com/gpu").unwrap().metadata.name.as_deref(), Some("b"));
        assert!(r.get("deviceclass.resource.kubernetes.io/c").is_some());
        // Processed after a newer holder of its name, "a" gets no mapping at all.
        let r = ClassResolver::new([&b, &a]);
        assert!(r.get("deviceclass.resource.kubernetes.io/a").is_none());
        // Same time: the smaller name.
        let x = class("x", Some("example.com/n"), None);
        let y = class("y", Some("example.com/n"), None);
        let r = ClassResolver::new([&y, &x]);
        assert_eq!(r.get("example.com/n").unwrap().metadata.name.as_deref(), Some("x"));
    }

    #[test]
    fn init_containers_share_the_largest_request_and_reuse_what_later_containers_ask() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "uid": "u"},
            "spec": {
                "initContainers": [
                    {"name": "i0", "resources": {"requests": {"example.com/gpu": "1"}}},
                    {"name": "i1", "resources": {"requests": {"example.com/gpu": "3", "cpu": "1"}}},
                ],
                "containers": [
                    {"name": "app", "resources": {"requests": {"example.com/gpu": "2"}}},
                ],
            },
        }))
        .unwrap();
        let r = ClassResolver::new([&class("gpu", Some("example.com/gpu"), None)]);
        let (reqs, maps) =
            requests_and_mappings(&pod, &["example.com/gpu".to_string()].into(), &r);
        let got: Vec<(String, i64)> = reqs
            .iter()
            .map(|r| (r.name.clone(), r.exactly.as_ref().unwrap().count.unwrap()))
            .collect();
        // i0's one is covered by the app's two; i1 wants one more than that.
        assert_eq!(
            got,
            vec![("container-1-request-1".into(), 1), ("container-2-request-0".into(), 2)]
        );
        let m: Vec<(&str, &str)> = maps
            .iter()
            .map(|m| (m.container_name.as_str(), m.request_name.as_str()))
            .collect();
        assert_eq!(
            m,
            vec![
                ("app", "container-2-request-0"),
                ("i0", "container-2-request-0"),
                ("i1", "container-2-request-0"),
                ("i1", "container-1-request-1"),
            ]
        );
    }

    #[test]
    fn created_names_are_stable() {
        let a = created_name("trainer-0", "uid-1");
        assert_eq!(a, created_name("trainer-0", "uid-1"));
        assert!(a.starts_with("trainer-0-extended-resources-") && a.len() == 34);
        assert_ne!(a, created_name("trainer-0", "uid-2"));
        // A long pod name is cut as the API server cuts a generateName.
        let long = created_name(&"p".repeat(100), "u");
        assert_eq!(long.len(), 63);
        assert!(long.starts_with(&"p".repeat(58)));
    }
}
