//! Storage helpers the volume plugins share, as component-helpers' `storage/volume` and
//! `storage/ephemeral`, cloud-provider's zone-label parsing and the lister "not found"
//! texts: storage classes of claims and volumes, PV node affinity, PV ↔ PVC matching.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    PersistentVolume, PersistentVolumeClaim, Pod, TopologySelectorTerm, Volume,
};

use super::labels::{Labels, Operator, Requirement, Selector, empty_labels};
use super::node_affinity::NodeSelectorMatcher;
use super::quantity::Quantity;

/// PVC annotation: the PV controller finished binding the claim.
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// PV / PVC annotation: the binding was made by the controller (not pre-bound by a user).
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// PVC annotation the scheduler sets to ask for provisioning on a node.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The class annotation that predates `storageClassName` (still read first).
pub const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
/// CSINode annotation listing the in-tree plugins migrated to CSI on the node.
pub const MIGRATED_PLUGINS_ANNOTATION: &str = "storage.alpha.kubernetes.io/migrated-plugins";
/// A provisioner name that means "no dynamic provisioning".
pub const NOT_SUPPORTED_PROVISIONER: &str = "kubernetes.io/no-provisioner";

pub const BINDING_MODE_WAIT_FOR_FIRST_CONSUMER: &str = "WaitForFirstConsumer";
pub const READ_WRITE_ONCE_POD: &str = "ReadWriteOncePod";
pub const CLAIM_LOST: &str = "Lost";
pub const VOLUME_AVAILABLE: &str = "Available";
pub const VOLUME_MODE_FILESYSTEM: &str = "Filesystem";
pub const RESOURCE_STORAGE: &str = "storage";
/// CSIDriver and CSIStorageCapacity objects are kept as JSON in the listers' `custom`
/// (their newer fields, such as 1.36's `preventPodSchedulingIfMissing`, included).
pub const CSI_DRIVER_KIND: &str = "CSIDriver";
pub const CSI_STORAGE_CAPACITY_KIND: &str = "CSIStorageCapacity";

pub const LABEL_FAILURE_DOMAIN_BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
pub const LABEL_FAILURE_DOMAIN_BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";
pub const LABEL_TOPOLOGY_REGION: &str = "topology.kubernetes.io/region";
/// Separator of the zones in a multi-zone PV label value (`a__b`).
pub const LABEL_MULTI_ZONE_DELIMITER: &str = "__";

/// Lister resource names, as they appear in apimachinery's NotFound texts.
pub const RESOURCE_PVC: &str = "persistentvolumeclaim";
pub const RESOURCE_PV: &str = "persistentvolume";
pub const RESOURCE_STORAGE_CLASS: &str = "storageclass.storage.k8s.io";
pub const RESOURCE_CSI_NODE: &str = "csinode.storage.k8s.io";

/// apimachinery's NotFound message, e.g. `persistentvolumeclaim "data" not found`.
pub fn not_found(resource: &str, name: &str) -> String {
    format!("{resource} {name:?} not found")
}

/// The pod's volumes.
pub fn pod_volumes(pod: &Pod) -> &[Volume] {
    pod.spec
        .as_ref()
        .and_then(|s| s.volumes.as_deref())
        .unwrap_or(&[])
}

fn annotation<'a>(
    meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// `GetPersistentVolumeClaimClass`: the beta annotation first, then `storageClassName`.
pub fn pvc_class(pvc: &PersistentVolumeClaim) -> &str {
    if let Some(c) = annotation(&pvc.metadata, BETA_STORAGE_CLASS_ANNOTATION) {
        return c;
    }
    pvc.spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or("")
}

/// `GetPersistentVolumeClass`: the beta annotation first, then `storageClassName`.
pub fn pv_class(pv: &PersistentVolume) -> &str {
    if let Some(c) = annotation(&pv.metadata, BETA_STORAGE_CLASS_ANNOTATION) {
        return c;
    }
    pv.spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or("")
}

pub fn pvc_name(pvc: &PersistentVolumeClaim) -> &str {
    pvc.metadata.name.as_deref().unwrap_or("")
}

pub fn pvc_namespace(pvc: &PersistentVolumeClaim) -> &str {
    pvc.metadata.namespace.as_deref().unwrap_or("")
}

/// `namespace/name` of a claim.
pub fn pvc_key(pvc: &PersistentVolumeClaim) -> String {
    format!("{}/{}", pvc_namespace(pvc), pvc_name(pvc))
}

pub fn pv_name(pv: &PersistentVolume) -> &str {
    pv.metadata.name.as_deref().unwrap_or("")
}

/// The PV a claim names (`spec.volumeName`), or "".
pub fn pvc_volume_name(pvc: &PersistentVolumeClaim) -> &str {
    pvc.spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or("")
}

pub fn pvc_access_modes(pvc: &PersistentVolumeClaim) -> &[String] {
    pvc.spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or(&[])
}

pub fn pv_access_modes(pv: &PersistentVolume) -> &[String] {
    pv.spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or(&[])
}

pub fn pvc_phase(pvc: &PersistentVolumeClaim) -> &str {
    pvc.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

pub fn pv_phase(pv: &PersistentVolume) -> &str {
    pv.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

pub fn pv_labels(pv: &PersistentVolume) -> &Labels {
    pv.metadata.labels.as_ref().unwrap_or(empty_labels())
}

/// The claim's `resources.requests.storage`, if it asks for an amount.
pub fn pvc_storage_request(pvc: &PersistentVolumeClaim) -> Option<Quantity> {
    pvc.spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get(RESOURCE_STORAGE))
        .map(|q| Quantity::parse(&q.0).unwrap_or_default())
}

/// The volume's `capacity.storage` (zero when absent).
pub fn pv_storage_capacity(pv: &PersistentVolume) -> Quantity {
    pv.spec
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get(RESOURCE_STORAGE))
        .map(|q| Quantity::parse(&q.0).unwrap_or_default())
        .unwrap_or_default()
}

/// `IsPVCFullyBound` as the binder sees it: a volume name and the bind-completed
/// annotation.
pub fn is_pvc_fully_bound(pvc: &PersistentVolumeClaim) -> bool {
    !pvc_volume_name(pvc).is_empty() && annotation(&pvc.metadata, ANN_BIND_COMPLETED).is_some()
}

pub fn selected_node(pvc: &PersistentVolumeClaim) -> Option<&str> {
    annotation(&pvc.metadata, ANN_SELECTED_NODE)
}

/// `CheckNodeAffinity`: a PV with required node affinity fits only nodes whose labels
/// match it. The node is seen by its labels only, so `matchFields` terms are ignored, as
/// upstream builds a node object with no name for this check.
pub fn check_node_affinity(pv: &PersistentVolume, node_labels: &Labels) -> bool {
    let Some(required) = pv
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
    else {
        return true;
    };
    NodeSelectorMatcher::new(required).matches("", node_labels)
}

/// `IsVolumeBoundToClaim`: the PV's claimRef names the claim (and its UID, if set).
pub fn is_volume_bound_to_claim(pv: &PersistentVolume, pvc: &PersistentVolumeClaim) -> bool {
    let Some(r) = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    if r.name.as_deref().unwrap_or("") != pvc_name(pvc)
        || r.namespace.as_deref().unwrap_or("") != pvc_namespace(pvc)
    {
        return false;
    }
    let uid = r.uid.as_deref().unwrap_or("");
    uid.is_empty() || uid == pvc.metadata.uid.as_deref().unwrap_or("")
}

fn has_claim_ref(pv: &PersistentVolume) -> bool {
    pv.spec.as_ref().is_some_and(|s| s.claim_ref.is_some())
}

/// `CheckVolumeModeMismatches`: an unset mode is Filesystem on both sides.
pub fn volume_mode_mismatches(pvc: &PersistentVolumeClaim, pv: &PersistentVolume) -> bool {
    let want = pvc
        .spec
        .as_ref()
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or(VOLUME_MODE_FILESYSTEM);
    let have = pv
        .spec
        .as_ref()
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or(VOLUME_MODE_FILESYSTEM);
    want != have
}

/// `CheckAccessModes`: the PV offers every mode the claim asks for.
pub fn check_access_modes(pvc: &PersistentVolumeClaim, pv: &PersistentVolume) -> bool {
    let have = pv_access_modes(pv);
    pvc_access_modes(pvc).iter().all(|m| have.contains(m))
}

/// `FindMatchingVolume` on the scheduler path (VolumeAttributesClass is GA in 1.35).
///
/// Returns the PV pre-bound to the claim if any (or `None` when it does not fit the node),
/// otherwise the smallest available PV of the claim's class that fits: capacity, volume
/// mode, attributes class, not being deleted, phase Available, the claim's selector, node
/// affinity and access modes. Among equal sizes the first in `volumes` wins.
pub fn find_matching_volume(
    claim: &PersistentVolumeClaim,
    volumes: &[Arc<PersistentVolume>],
    node_labels: Option<&Labels>,
    excluded: &BTreeSet<String>,
    delay_binding: bool,
) -> Result<Option<Arc<PersistentVolume>>, String> {
    let spec = claim.spec.as_ref();
    let requested = pvc_storage_request(claim).unwrap_or_default();
    let requested_class = pvc_class(claim);
    let selector = match spec.and_then(|s| s.selector.as_ref()) {
        Some(ls) => Some(Selector::from_label_selector(Some(ls)).map_err(|e| {
            format!(
                "error creating internal label selector for claim: {}: {e}",
                pvc_key(claim)
            )
        })?),
        None => None,
    };
    let claim_vac = spec
        .and_then(|s| s.volume_attributes_class_name.as_deref())
        .unwrap_or("");

    let mut smallest: Option<(&Arc<PersistentVolume>, Quantity)> = None;
    for volume in volumes {
        if excluded.contains(pv_name(volume)) {
            continue;
        }
        let bound_to_claim = is_volume_bound_to_claim(volume, claim);
        if has_claim_ref(volume) && !bound_to_claim {
            continue;
        }
        let qty = pv_storage_capacity(volume);
        if qty < requested {
            continue;
        }
        if volume_mode_mismatches(claim, volume) {
            continue;
        }
        let volume_vac = volume
            .spec
            .as_ref()
            .and_then(|s| s.volume_attributes_class_name.as_deref())
            .unwrap_or("");
        if claim_vac != volume_vac {
            continue;
        }
        if volume.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let affinity_ok = node_labels.is_none_or(|l| check_node_affinity(volume, l));
        if bound_to_claim {
            // A pre-bound PV that does not fit the node means no match at all.
            return Ok(affinity_ok.then(|| volume.clone()));
        }
        if node_labels.is_none() && delay_binding {
            continue;
        }
        if pv_phase(volume) != VOLUME_AVAILABLE {
            continue;
        }
        if selector
            .as_ref()
            .is_some_and(|s| !s.matches(pv_labels(volume)))
        {
            continue;
        }
        if pv_class(volume) != requested_class {
            continue;
        }
        if !affinity_ok {
            continue;
        }
        if node_labels.is_some() && !check_access_modes(claim, volume) {
            continue;
        }
        if smallest.as_ref().is_none_or(|(_, q)| *q > qty) {
            smallest = Some((volume, qty));
        }
    }
    Ok(smallest.map(|(v, _)| v.clone()))
}

/// `ephemeral.VolumeClaimName`: the claim of a generic ephemeral volume is `<pod>-<volume>`.
pub fn ephemeral_claim_name(pod_name: &str, volume: &Volume) -> String {
    format!("{pod_name}-{}", volume.name)
}

/// The claim a pod volume uses and whether it is a generic ephemeral volume's claim;
/// `None` for a volume that uses no claim.
pub fn volume_claim(pod: &Pod, volume: &Volume) -> Option<(String, bool)> {
    volume_claim_of(pod.metadata.name.as_deref().unwrap_or(""), volume)
}

/// [`volume_claim`] for a pod given by its name.
pub fn volume_claim_of(pod_name: &str, volume: &Volume) -> Option<(String, bool)> {
    if let Some(c) = &volume.persistent_volume_claim {
        Some((c.claim_name.clone(), false))
    } else if volume.ephemeral.is_some() {
        Some((ephemeral_claim_name(pod_name, volume), true))
    } else {
        None
    }
}

/// `ephemeral.VolumeIsForPod`: the claim must be controlled by the pod.
pub fn volume_is_for_pod(pod: &Pod, pvc: &PersistentVolumeClaim) -> Result<(), String> {
    let m = &pod.metadata;
    let name = |f: &Option<String>| f.as_deref().unwrap_or("").to_string();
    volume_is_for([&name(&m.namespace), &name(&m.name), &name(&m.uid)], pvc)
}

/// [`volume_is_for_pod`] for a pod given by its namespace, name and UID.
pub fn volume_is_for(
    [pod_ns, pod_name, pod_uid]: [&str; 3],
    pvc: &PersistentVolumeClaim,
) -> Result<(), String> {
    let controlled = pvc
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .is_some_and(|r| r.uid == pod_uid);
    if pvc_namespace(pvc) != pod_ns || !controlled {
        return Err(format!(
            "PVC {}/{} was not created for pod {}/{} (pod is not owner)",
            pvc_namespace(pvc),
            pvc_name(pvc),
            pod_ns,
            pod_name
        ));
    }
    Ok(())
}

/// `LabelZonesToSet`: a `__`-separated zone list; an empty element is an error.
pub fn label_zones_to_set(value: &str) -> Result<BTreeSet<String>, String> {
    let mut out = BTreeSet::new();
    for z in value.split(LABEL_MULTI_ZONE_DELIMITER) {
        let z = z.trim();
        if z.is_empty() {
            return Err(format!(
                "{LABEL_MULTI_ZONE_DELIMITER:?} separated list ({value:?}) must not contain an empty string"
            ));
        }
        out.insert(z.to_string());
    }
    Ok(out)
}

/// `MatchTopologySelectorTerms`: no terms match everything; terms are ORed; an empty or
/// invalid term matches nothing.
pub fn match_topology_selector_terms(terms: &[TopologySelectorTerm], labels: &Labels) -> bool {
    if terms.is_empty() {
        return true;
    }
    terms.iter().any(|t| {
        let exprs = t.match_label_expressions.as_deref().unwrap_or(&[]);
        if exprs.is_empty() {
            return false;
        }
        let reqs: Result<Vec<Requirement>, String> = exprs
            .iter()
            .map(|e| Requirement::new(&e.key, Operator::In, e.values.clone()))
            .collect();
        reqs.is_ok_and(|r| Selector::from_requirements(r).matches(labels))
    })
}

/// The in-tree plugins the CSINode's migrated-plugins annotation lists.
pub fn migrated_plugins(csi_node: &k8s_openapi::api::storage::v1::CSINode) -> BTreeSet<&str> {
    annotation(&csi_node.metadata, MIGRATED_PLUGINS_ANNOTATION)
        .filter(|s| !s.is_empty())
        .map(|s| s.split(',').collect())
        .unwrap_or_default()
}

/// A label map from pairs.
#[cfg(test)]
pub fn labels_of(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pv(v: serde_json::Value) -> Arc<PersistentVolume> {
        Arc::new(serde_json::from_value(v).unwrap())
    }
    fn pvc(v: serde_json::Value) -> PersistentVolumeClaim {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn classes_prefer_the_beta_annotation() {
        let c = pvc(json!({"metadata": {"name": "c", "annotations": {
            "volume.beta.kubernetes.io/storage-class": "old"}}, "spec": {"storageClassName": "new"}}));
        assert_eq!(pvc_class(&c), "old");
        let v = pv(json!({"metadata": {"name": "v"}, "spec": {"storageClassName": "fast"}}));
        assert_eq!(pv_class(&v), "fast");
    }

    #[test]
    fn matching_prefers_prebound_then_smallest() {
        let claim = pvc(
            json!({"metadata": {"name": "c", "namespace": "d", "uid": "u1"},
            "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "5Gi"}}}}),
        );
        let mk = |name: &str, size: &str, extra: serde_json::Value| {
            let mut v = json!({"metadata": {"name": name}, "spec": {"storageClassName": "local",
                "accessModes": ["ReadWriteOnce"], "capacity": {"storage": size}},
                "status": {"phase": "Available"}});
            if let (Some(spec), Some(extra)) = (v["spec"].as_object_mut(), extra.as_object()) {
                spec.extend(extra.clone());
            }
            pv(v)
        };
        let small = mk("small", "4Gi", json!({}));
        let mid = mk("mid", "6Gi", json!({}));
        let big = mk("big", "10Gi", json!({}));
        let other = mk(
            "other",
            "5Gi",
            json!({"claimRef": {"name": "x", "namespace": "d"}}),
        );
        let vols = vec![big.clone(), small, mid.clone(), other];
        let labels = Labels::new();
        let m = find_matching_volume(&claim, &vols, Some(&labels), &BTreeSet::new(), true)
            .unwrap()
            .unwrap();
        assert_eq!(pv_name(&m), "mid");
        let excluded = BTreeSet::from(["mid".to_string()]);
        let m = find_matching_volume(&claim, &vols, Some(&labels), &excluded, true)
            .unwrap()
            .unwrap();
        assert_eq!(pv_name(&m), "big");
        // Pre-bound to the claim wins even over a smaller fit.
        let pre = mk(
            "pre",
            "9Gi",
            json!({"claimRef": {"name": "c", "namespace": "d", "uid": "u1"}}),
        );
        let vols = vec![mid, pre];
        let m = find_matching_volume(&claim, &vols, Some(&labels), &BTreeSet::new(), true)
            .unwrap()
            .unwrap();
        assert_eq!(pv_name(&m), "pre");
    }

    #[test]
    fn matching_checks_affinity_mode_selector_and_phase() {
        let claim = pvc(json!({"metadata": {"name": "c", "namespace": "d"},
            "spec": {"storageClassName": "local", "accessModes": ["ReadWriteMany"],
                "selector": {"matchLabels": {"tier": "gold"}},
                "resources": {"requests": {"storage": "1Gi"}}}}));
        let base = json!({"metadata": {"name": "v", "labels": {"tier": "gold"}},
            "spec": {"storageClassName": "local", "accessModes": ["ReadWriteMany"],
                "capacity": {"storage": "1Gi"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}},
            "status": {"phase": "Available"}});
        let n1 = labels_of(&[("kubernetes.io/hostname", "n1")]);
        let n2 = labels_of(&[("kubernetes.io/hostname", "n2")]);
        let vols = vec![pv(base.clone())];
        let none = BTreeSet::new();
        assert!(
            find_matching_volume(&claim, &vols, Some(&n1), &none, true)
                .unwrap()
                .is_some()
        );
        assert!(
            find_matching_volume(&claim, &vols, Some(&n2), &none, true)
                .unwrap()
                .is_none()
        );
        for (path, value) in [
            ("/status/phase", json!("Released")),
            ("/metadata/labels/tier", json!("silver")),
            ("/spec/accessModes", json!(["ReadWriteOnce"])),
            ("/spec/volumeMode", json!("Block")),
            ("/spec/storageClassName", json!("other")),
        ] {
            let mut v = base.clone();
            let (parent, key) = path.rsplit_once('/').unwrap();
            v.pointer_mut(parent).unwrap()[key] = value;
            let vols = vec![pv(v)];
            assert!(
                find_matching_volume(&claim, &vols, Some(&n1), &none, true)
                    .unwrap()
                    .is_none(),
                "{path}"
            );
        }
    }

    #[test]
    fn zone_sets_and_topology_terms() {
        assert_eq!(
            label_zones_to_set("a__b").unwrap(),
            BTreeSet::from(["a".to_string(), "b".to_string()])
        );
        assert!(label_zones_to_set("a____b").is_err());
        let terms: Vec<TopologySelectorTerm> = serde_json::from_value(json!([
            {"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}]))
        .unwrap();
        assert!(match_topology_selector_terms(
            &terms,
            &labels_of(&[("zone", "b")])
        ));
        assert!(!match_topology_selector_terms(
            &terms,
            &labels_of(&[("zone", "c")])
        ));
        assert!(match_topology_selector_terms(&[], &Labels::new()));
    }

    #[test]
    fn ephemeral_ownership() {
        let pod: Pod = serde_json::from_value(
            json!({"metadata": {"name": "p", "namespace": "d", "uid": "pu"}}),
        )
        .unwrap();
        let owned = pvc(
            json!({"metadata": {"name": "p-v", "namespace": "d", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pu", "controller": true}]}}),
        );
        assert!(volume_is_for_pod(&pod, &owned).is_ok());
        let foreign = pvc(json!({"metadata": {"name": "p-v", "namespace": "d"}}));
        assert_eq!(
            volume_is_for_pod(&pod, &foreign).unwrap_err(),
            "PVC d/p-v was not created for pod d/p (pod is not owner)"
        );
        assert_eq!(
            not_found(RESOURCE_PVC, "x"),
            "persistentvolumeclaim \"x\" not found"
        );
    }
}
