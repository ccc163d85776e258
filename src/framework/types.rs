//! Resource, PodInfo and affinity terms: the scheduler's precomputed view of a pod.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodAffinityTerm, WeightedPodAffinityTerm};

use crate::api::labels::{Labels, Selector};
use crate::api::pod_resources::{self, HostPort, ResourceList};

/// Amounts of compute resources, as upstream `framework.Resource`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resource {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub allowed_pod_number: i64,
    pub scalar_resources: BTreeMap<String, i64>,
}

impl Resource {
    /// `NewResource(rl)`: cpu in millicores, the rest in units; unknown names dropped.
    pub fn from_list(rl: &ResourceList) -> Resource {
        let mut r = Resource::default();
        for (name, q) in rl {
            match name.as_str() {
                pod_resources::CPU => r.milli_cpu = r.milli_cpu.saturating_add(q.milli_value()),
                pod_resources::MEMORY => r.memory = r.memory.saturating_add(q.value()),
                pod_resources::PODS => {
                    r.allowed_pod_number = r.allowed_pod_number.saturating_add(q.value())
                }
                pod_resources::EPHEMERAL_STORAGE => {
                    r.ephemeral_storage = r.ephemeral_storage.saturating_add(q.value())
                }
                n if pod_resources::is_scalar_resource_name(n) => {
                    let e = r.scalar_resources.entry(n.to_string()).or_default();
                    *e = e.saturating_add(q.value());
                }
                _ => {}
            }
        }
        r
    }

    pub fn scalar(&self, name: &str) -> i64 {
        self.scalar_resources.get(name).copied().unwrap_or(0)
    }

    /// Adds (`sign` = 1) or subtracts (`sign` = -1) another resource.
    pub fn add_signed(&mut self, other: &Resource, sign: i64) {
        self.milli_cpu += sign * other.milli_cpu;
        self.memory += sign * other.memory;
        self.ephemeral_storage += sign * other.ephemeral_storage;
        for (k, v) in &other.scalar_resources {
            *self.scalar_resources.entry(k.clone()).or_default() += sign * v;
        }
    }
}

/// What a pod takes from a node: its requests, and the cpu / memory it counts for when
/// scoring (with 100m / 200Mi for containers that name none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodResource {
    pub resource: Resource,
    pub non0_cpu: i64,
    pub non0_mem: i64,
    /// The same under InPlacePodLevelResourcesVerticalScaling, for the rare pod whose
    /// pod-level resources are being resized and count differently then.
    pub resized: Option<Box<PodResource>>,
}

impl PodResource {
    pub fn calculate(pod: &Pod) -> PodResource {
        let plain = Self::with(pod, pod_resources::pod_requests);
        if !pod_resources::has_pod_level_status(pod) {
            return plain;
        }
        let resized = Self::with(pod, pod_resources::pod_requests_resized);
        PodResource {
            resized: (resized != plain).then(|| Box::new(resized)),
            ..plain
        }
    }

    fn with(pod: &Pod, requests_of: fn(&Pod, Option<&ResourceList>) -> ResourceList) -> Self {
        let requests = requests_of(pod, None);
        let pod_level = pod_resources::is_pod_level_requests_set(pod);
        let nm = pod_resources::non_missing_container_requests(&requests, pod_level);
        let non0 = requests_of(pod, Some(&nm));
        PodResource {
            resource: Resource::from_list(&requests),
            non0_cpu: non0
                .get(pod_resources::CPU)
                .map(|q| q.milli_value())
                .unwrap_or(0),
            non0_mem: non0
                .get(pod_resources::MEMORY)
                .map(|q| q.value())
                .unwrap_or(0),
            resized: None,
        }
    }

    /// What the pod counts for, with or without pod-level in-place resize.
    pub fn counted(&self, pod_level_resize: bool) -> &PodResource {
        match &self.resized {
            Some(r) if pod_level_resize => r,
            _ => self,
        }
    }
}

/// A parsed pod (anti-)affinity term.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AffinityTerm {
    pub namespaces: BTreeSet<String>,
    pub selector: Selector,
    pub topology_key: String,
    pub namespace_selector: Selector,
}

impl AffinityTerm {
    pub fn new(pod_namespace: &str, term: &PodAffinityTerm) -> Result<AffinityTerm, String> {
        let selector = Selector::from_label_selector(term.label_selector.as_ref())?;
        let namespace_selector = Selector::from_label_selector(term.namespace_selector.as_ref())?;
        let listed = term.namespaces.as_deref().unwrap_or(&[]);
        let namespaces = if listed.is_empty() && term.namespace_selector.is_none() {
            BTreeSet::from([pod_namespace.to_string()])
        } else {
            listed.iter().cloned().collect()
        };
        Ok(AffinityTerm {
            namespaces,
            selector,
            topology_key: term.topology_key.clone(),
            namespace_selector,
        })
    }

    /// Whether `pod` (with its namespace's labels) is selected by this term.
    pub fn matches(&self, pod: &PodInfo, ns_labels: &Labels) -> bool {
        self.matches_parts(&pod.namespace, pod.labels(), ns_labels)
    }

    /// `matches` for a pod given by its namespace and labels.
    pub fn matches_parts(&self, namespace: &str, labels: &Labels, ns_labels: &Labels) -> bool {
        (self.namespaces.contains(namespace) || self.namespace_selector.matches(ns_labels))
            && self.selector.matches(labels)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WeightedAffinityTerm {
    pub term: AffinityTerm,
    pub weight: i32,
}

/// The message of upstream's `utilerrors.NewAggregate`: one error as is, several
/// (distinct) ones joined with ", " inside brackets.
fn aggregate_error(errs: &[String]) -> Option<String> {
    let mut distinct: Vec<&str> = Vec::new();
    for e in errs {
        if !distinct.contains(&e.as_str()) {
            distinct.push(e);
        }
    }
    match distinct.len() {
        0 => None,
        1 => Some(distinct[0].to_string()),
        _ => Some(format!("[{}]", distinct.join(", "))),
    }
}

/// A pod with what the scheduler derives from it once (`framework.PodInfo`).
#[derive(Debug, Clone)]
pub struct PodInfo {
    /// The pod: whole, or packed when bound (see `pod_pack`); read it through
    /// [`pod`](Self::pod) or the accessors plugins use.
    pub(crate) body: Body,
    /// `namespace/name`
    pub key: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub priority: i32,
    pub required_affinity_terms: Vec<AffinityTerm>,
    pub required_anti_affinity_terms: Vec<AffinityTerm>,
    pub preferred_affinity_terms: Vec<WeightedAffinityTerm>,
    pub preferred_anti_affinity_terms: Vec<WeightedAffinityTerm>,
    /// Errors parsing the affinity terms (upstream keeps the pod and reports them later).
    pub parse_error: Option<String>,
    pub resource: PodResource,
    pub host_ports: Vec<HostPort>,
    /// Images of init containers then containers, tagged ":latest" when untagged (what
    /// ImageLocality looks up on nodes).
    pub images: Arc<[String]>,
}

#[derive(Debug, Clone)]
pub(crate) enum Body {
    Whole(Arc<Pod>),
    Packed(super::pod_pack::Packed),
}

/// Upstream `podWithAffinity`: any pod (anti-)affinity at all.
pub(crate) fn affinity_of(pod: &Pod) -> bool {
    let a = pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
    a.is_some_and(|a| a.pod_affinity.is_some() || a.pod_anti_affinity.is_some())
}

/// Upstream `podWithRequiredAntiAffinity`.
pub(crate) fn required_anti_affinity_of(pod: &Pod) -> bool {
    let a = pod
        .spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.pod_anti_affinity.as_ref());
    a.is_some_and(|a| {
        a.required_during_scheduling_ignored_during_execution
            .as_ref()
            .is_some_and(|t| !t.is_empty())
    })
}

/// Appends ":latest" to an image without a tag, as upstream's ImageLocality does.
pub fn normalized_image_name(name: &str) -> String {
    let colon = name.rfind(':').map(|i| i as i64).unwrap_or(-1);
    let slash = name.rfind('/').map(|i| i as i64).unwrap_or(-1);
    if colon <= slash {
        format!("{name}:latest")
    } else {
        name.to_string()
    }
}

impl PodInfo {
    pub fn new(pod: Arc<Pod>) -> PodInfo {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let priority = pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
        let affinity = pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
        let pa = affinity.and_then(|a| a.pod_affinity.as_ref());
        let paa = affinity.and_then(|a| a.pod_anti_affinity.as_ref());
        let mut errs = Vec::new();
        let required =
            |terms: Option<&Vec<PodAffinityTerm>>, what: &str, errs: &mut Vec<String>| {
                terms
                    .into_iter()
                    .flatten()
                    .map(|t| AffinityTerm::new(&namespace, t))
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap_or_else(|e| {
                        errs.push(format!("{what}: {e}"));
                        Vec::new()
                    })
            };
        let weighted =
            |terms: Option<&Vec<WeightedPodAffinityTerm>>, what: &str, errs: &mut Vec<String>| {
                terms
                    .into_iter()
                    .flatten()
                    .map(|t| {
                        AffinityTerm::new(&namespace, &t.pod_affinity_term).map(|term| {
                            WeightedAffinityTerm {
                                term,
                                weight: t.weight,
                            }
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap_or_else(|e| {
                        errs.push(format!("{what}: {e}"));
                        Vec::new()
                    })
            };
        let required_affinity_terms = required(
            pa.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            }),
            "requiredAffinityTerms",
            &mut errs,
        );
        let required_anti_affinity_terms = required(
            paa.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            }),
            "requiredAntiAffinityTerms",
            &mut errs,
        );
        let preferred_affinity_terms = weighted(
            pa.and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            }),
            "preferredAffinityTerms",
            &mut errs,
        );
        let preferred_anti_affinity_terms = weighted(
            paa.and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            }),
            "preferredAntiAffinityTerms",
            &mut errs,
        );
        let resource = PodResource::calculate(&pod);
        let host_ports = pod_resources::host_ports(&pod);
        let images = pod
            .spec
            .as_ref()
            .map(|s| {
                s.init_containers
                    .iter()
                    .flatten()
                    .chain(s.containers.iter())
                    .map(|c| normalized_image_name(c.image.as_deref().unwrap_or("")))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
            .into();
        PodInfo {
            images,
            key: format!("{namespace}/{name}"),
            namespace,
            name,
            uid,
            priority,
            required_affinity_terms,
            required_anti_affinity_terms,
            preferred_affinity_terms,
            preferred_anti_affinity_terms,
            parse_error: aggregate_error(&errs),
            resource,
            host_ports,
            body: Body::Whole(pod),
        }
    }

    /// The same pod placed on `node` (what the scheduler assumes before binding), reusing
    /// everything derived from the spec.
    pub fn bound_to(&self, node: &str) -> PodInfo {
        let mut pod = self.pod().clone();
        pod.spec.get_or_insert_with(Default::default).node_name = Some(node.to_string());
        PodInfo {
            body: Body::Whole(Arc::new(pod)),
            ..self.clone()
        }
    }

    /// PVC names this pod mounts, as `namespace/claim`.
    pub fn pvc_keys(&self) -> impl Iterator<Item = String> + '_ {
        self.volumes()
            .iter()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .map(|c| format!("{}/{}", self.namespace, c.claim_name))
    }
}

/// The victims a plugin picked on one node (upstream's `SelectVictimsOnNode` results).
#[derive(Debug, Clone, Default)]
pub struct NodeVictims {
    pub pods: Vec<Arc<PodInfo>>,
    pub num_pdb_violations: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod_info(v: serde_json::Value) -> PodInfo {
        PodInfo::new(Arc::new(serde_json::from_value(v).unwrap()))
    }

    #[test]
    fn resources_and_keys() {
        let pi = pod_info(
            json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "1Gi", "example.com/gpu": "2"}}},
            {"name": "b"}]}}),
        );
        assert_eq!(pi.key, "ns/p");
        assert_eq!(pi.resource.resource.milli_cpu, 250);
        assert_eq!(pi.resource.resource.scalar("example.com/gpu"), 2);
        assert_eq!(pi.resource.non0_cpu, 350);
        assert_eq!(pi.resource.non0_mem, (1 << 30) + 200 * 1024 * 1024);
    }

    #[test]
    fn affinity_term_namespaces() {
        let pi = pod_info(
            json!({"metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web"}}, "spec": {"containers": [],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"},
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone", "namespaceSelector": {}}]}}}}),
        );
        assert!(pi.has_required_anti_affinity());
        let t = &pi.required_anti_affinity_terms;
        assert_eq!(t[0].namespaces, BTreeSet::from(["ns".to_string()]));
        assert!(t[1].namespaces.is_empty());
        assert!(t[0].matches(&pi, &Labels::new()));
        assert!(t[1].matches(&pi, &Labels::new()));
    }

    #[test]
    fn several_parse_errors_aggregate_in_brackets() {
        let bad = json!({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}, "topologyKey": "zone"});
        let pi = pod_info(json!({"metadata": {"name": "p"}, "spec": {"containers": [],
            "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [bad.clone()]},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [bad]}}}}));
        assert_eq!(
            pi.parse_error.as_deref().unwrap(),
            "[requiredAffinityTerms: \"Bad\" is not a valid label selector operator, requiredAntiAffinityTerms: \"Bad\" is not a valid label selector operator]"
        );
    }

    #[test]
    fn bad_selector_is_a_parse_error_not_a_panic() {
        let pi = pod_info(json!({"metadata": {"name": "p"}, "spec": {"containers": [],
            "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}, "topologyKey": "zone"}]}}}}));
        assert!(
            pi.parse_error
                .as_deref()
                .unwrap()
                .starts_with("requiredAffinityTerms")
        );
    }
}
