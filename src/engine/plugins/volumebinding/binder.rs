//! The volume binder (upstream `binder.go`): sorts a pod's claims into bound, unbound
//! immediate and unbound delayed (WaitForFirstConsumer) ones, and for a node finds whether
//! the bound PVs fit it and how each delayed claim would be satisfied: by a static binding
//! to an available PV, or by dynamic provisioning.
//!
//! Upstream reads PVs and PVCs through assume caches that also hold what earlier cycles
//! assumed; kubestep reads the listers, and the cluster applies a bound pod's volume
//! updates as upstream's PreBind writes them to the API server.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Node, ObjectReference, PersistentVolume, PersistentVolumeClaim, Pod, Volume,
};
use k8s_openapi::api::storage::v1::CSINode;

use crate::api::csi_translation::{InTreePlugin, translate_pv};
use crate::api::node_affinity::{node_labels, node_name};
use crate::api::volume::{
    ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, BINDING_MODE_WAIT_FOR_FIRST_CONSUMER,
    NOT_SUPPORTED_PROVISIONER, check_node_affinity, find_matching_volume, is_pvc_fully_bound,
    is_volume_bound_to_claim, match_topology_selector_terms, migrated_plugins, pod_volumes,
    pv_class, pv_name, pvc_class, pvc_key, pvc_storage_request, pvc_volume_name, selected_node,
    volume_claim, volume_is_for_pod,
};
use crate::framework::listers::Listers;

/// Why volume binding is impossible on a node. Filter reports them in this order.
pub const ERR_REASON_NODE_CONFLICT: &str = "node(s) didn't match PersistentVolume's node affinity";
pub const ERR_REASON_BIND_CONFLICT: &str =
    "node(s) didn't find available persistent volumes to bind";
pub const ERR_REASON_NOT_ENOUGH_SPACE: &str = "node(s) did not have enough free storage";
pub const ERR_REASON_PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";

/// A proposed binding of a claim to a pre-provisioned PV.
#[derive(Debug, Clone)]
pub struct BindingInfo {
    pub pvc: Arc<PersistentVolumeClaim>,
    pub pv: Arc<PersistentVolume>,
}

/// A claim to be provisioned dynamically, with the CSIStorageCapacity that admitted it
/// (for capacity scoring), if one had to.
#[derive(Debug, Clone)]
pub struct DynamicProvision {
    pub pvc: Arc<PersistentVolumeClaim>,
    pub node_capacity: Option<super::capacity::NodeCapacity>,
}

/// How a pod's unbound claims are satisfied on one node.
#[derive(Debug, Clone, Default)]
pub struct PodVolumes {
    pub static_bindings: Vec<BindingInfo>,
    pub dynamic_provisions: Vec<DynamicProvision>,
}

/// A pod's claims by binding state, and the candidate PVs of the delayed claims' classes.
#[derive(Debug, Clone, Default)]
pub struct PodVolumeClaims {
    pub bound_claims: Vec<Arc<PersistentVolumeClaim>>,
    pub unbound_claims_delay_binding: Vec<Arc<PersistentVolumeClaim>>,
    pub unbound_claims_immediate: Vec<Arc<PersistentVolumeClaim>>,
    /// Storage class → every PV of that class (bound or not), by name.
    pub unbound_volumes_delay_binding: BTreeMap<String, Vec<Arc<PersistentVolume>>>,
}

/// `findMatchingVolumes`' answer: all claims matched, the bindings, the claims left over.
type MatchedVolumes = (bool, Vec<BindingInfo>, Vec<Arc<PersistentVolumeClaim>>);

/// The binder over the cluster's objects.
pub struct VolumeBinder<'a> {
    pub listers: &'a Listers,
}

impl<'a> VolumeBinder<'a> {
    pub fn new(listers: &'a Listers) -> VolumeBinder<'a> {
        VolumeBinder { listers }
    }

    /// `isVolumeBound`: `None` for a volume that uses no claim.
    fn is_volume_bound(
        &self,
        pod: &Pod,
        vol: &Volume,
    ) -> Result<Option<(bool, Arc<PersistentVolumeClaim>)>, String> {
        let Some((name, ephemeral)) = volume_claim(pod, vol) else {
            return Ok(None);
        };
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let Some(pvc) = self.listers.pvc(ns, &name) else {
            return Err(format!(
                "error getting PVC \"{ns}/{name}\": persistentvolumeclaims \"{name}\" not found"
            ));
        };
        if ephemeral {
            volume_is_for_pod(pod, pvc)?;
        }
        Ok(Some((is_pvc_fully_bound(pvc), pvc.clone())))
    }

    /// `arePodVolumesBound`: every claim of the pod is fully bound.
    pub fn are_pod_volumes_bound(&self, pod: &Pod) -> bool {
        pod_volumes(pod)
            .iter()
            .all(|v| matches!(self.is_volume_bound(pod, v), Ok(None) | Ok(Some((true, _)))))
    }

    /// `IsDelayBindingMode`: the claim's class exists and waits for the first consumer.
    fn is_delay_binding_mode(&self, pvc: &PersistentVolumeClaim) -> Result<bool, String> {
        let class_name = pvc_class(pvc);
        if class_name.is_empty() {
            return Ok(false);
        }
        let Some(class) = self.listers.storage_classes.get(class_name) else {
            return Ok(false);
        };
        match class.volume_binding_mode.as_deref() {
            None => Err(format!(
                "VolumeBindingMode not set for StorageClass {class_name:?}"
            )),
            Some(m) => Ok(m == BINDING_MODE_WAIT_FOR_FIRST_CONSUMER),
        }
    }

    /// `GetPodVolumeClaims`. A pre-bound claim (volumeName set, binding not completed)
    /// counts as unbound immediate.
    pub fn get_pod_volume_claims(&self, pod: &Pod) -> Result<PodVolumeClaims, String> {
        let mut out = PodVolumeClaims::default();
        for vol in pod_volumes(pod) {
            let Some((bound, pvc)) = self.is_volume_bound(pod, vol)? else {
                continue;
            };
            if bound {
                out.bound_claims.push(pvc);
            } else if self.is_delay_binding_mode(&pvc)? && pvc_volume_name(&pvc).is_empty() {
                out.unbound_claims_delay_binding.push(pvc);
            } else {
                out.unbound_claims_immediate.push(pvc);
            }
        }
        for pvc in &out.unbound_claims_delay_binding {
            let class = pvc_class(pvc).to_string();
            let pvs = self
                .listers
                .pvs
                .values()
                .filter(|pv| pv_class(pv) == class)
                .cloned()
                .collect();
            out.unbound_volumes_delay_binding.insert(class, pvs);
        }
        Ok(out)
    }

    /// `FindPodVolumes`: the node's conflict reasons (empty when it fits) and, when it
    /// fits, how the unbound claims would be satisfied on it.
    pub fn find_pod_volumes(
        &self,
        claims: &PodVolumeClaims,
        node: &Node,
    ) -> Result<(PodVolumes, Vec<&'static str>), String> {
        let mut pod_volumes = PodVolumes::default();
        let mut unbound_satisfied = true;
        let mut bound_satisfied = true;
        let mut sufficient_storage = true;
        let mut bound_pvs_found = true;

        if !claims.bound_claims.is_empty() {
            (bound_satisfied, bound_pvs_found) =
                self.check_bound_claims(&claims.bound_claims, node)?;
        }

        'unbound: {
            if claims.unbound_claims_delay_binding.is_empty() {
                break 'unbound;
            }
            let mut to_find = Vec::new();
            let mut to_provision = Vec::new();
            for claim in &claims.unbound_claims_delay_binding {
                match selected_node(claim) {
                    // Provisioning was already started for another node.
                    Some(n) if n != node_name(node) => {
                        unbound_satisfied = false;
                        break 'unbound;
                    }
                    Some(_) => to_provision.push(claim.clone()),
                    None => to_find.push(claim.clone()),
                }
            }
            if !to_find.is_empty() {
                let (found, bindings, unbound) = self.find_matching_volumes(
                    to_find,
                    &claims.unbound_volumes_delay_binding,
                    node,
                )?;
                unbound_satisfied = found;
                pod_volumes.static_bindings = bindings;
                to_provision.extend(unbound);
            }
            if !to_provision.is_empty() {
                let (satisfied, sufficient, provisions) =
                    self.check_volume_provisions(&to_provision, node)?;
                unbound_satisfied = satisfied;
                sufficient_storage = sufficient;
                pod_volumes.dynamic_provisions = provisions;
            }
        }

        let mut reasons = Vec::new();
        if !bound_satisfied {
            reasons.push(ERR_REASON_NODE_CONFLICT);
        }
        if !unbound_satisfied {
            reasons.push(ERR_REASON_BIND_CONFLICT);
        }
        if !sufficient_storage {
            reasons.push(ERR_REASON_NOT_ENOUGH_SPACE);
        }
        if !bound_pvs_found {
            reasons.push(ERR_REASON_PV_NOT_EXIST);
        }
        Ok((pod_volumes, reasons))
    }

    /// `checkBoundClaims`: (node affinity satisfied, all PVs found). Stops at the first
    /// claim that fails either.
    fn check_bound_claims(
        &self,
        claims: &[Arc<PersistentVolumeClaim>],
        node: &Node,
    ) -> Result<(bool, bool), String> {
        // A missing CSINode is not an error (in-tree PVs are then not translated).
        let csi_node = self
            .listers
            .csi_nodes
            .get(node_name(node))
            .map(|n| n.as_ref());
        for pvc in claims {
            let Some(pv) = self.listers.pvs.get(pvc_volume_name(pvc)) else {
                return Ok((true, false));
            };
            let pv = try_translate_pv_to_csi(pv, csi_node)?;
            if !check_node_affinity(&pv, node_labels(node)) {
                return Ok((false, true));
            }
        }
        Ok((true, true))
    }

    /// `findMatchingVolumes`: claims smallest request first, each taking the smallest
    /// fitting PV not chosen yet. Returns whether all found one, the bindings, and the
    /// claims left for provisioning.
    fn find_matching_volumes(
        &self,
        mut claims: Vec<Arc<PersistentVolumeClaim>>,
        candidates: &BTreeMap<String, Vec<Arc<PersistentVolume>>>,
        node: &Node,
    ) -> Result<MatchedVolumes, String> {
        claims.sort_by_key(|c| pvc_storage_request(c).unwrap_or_default());
        let mut chosen = BTreeSet::new();
        let mut found_all = true;
        let mut bindings = Vec::new();
        let mut unbound = Vec::new();
        for pvc in claims {
            let pvs = candidates
                .get(pvc_class(&pvc))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            match find_matching_volume(&pvc, pvs, Some(node_labels(node)), &chosen, true)? {
                Some(pv) => {
                    chosen.insert(pv_name(&pv).to_string());
                    bindings.push(BindingInfo { pvc, pv });
                }
                None => {
                    unbound.push(pvc);
                    found_all = false;
                }
            }
        }
        Ok((found_all, bindings, unbound))
    }

    /// `checkVolumeProvisions`: (provisioning possible, enough storage, provisions). The
    /// class must name a provisioner and allow the node's topology; capacity is checked
    /// for CSI drivers that opt into storage capacity tracking (capacity.rs).
    fn check_volume_provisions(
        &self,
        claims: &[Arc<PersistentVolumeClaim>],
        node: &Node,
    ) -> Result<(bool, bool, Vec<DynamicProvision>), String> {
        let mut provisions = Vec::new();
        for claim in claims {
            let class_name = pvc_class(claim);
            if class_name.is_empty() {
                return Err(format!("no class for claim {:?}", pvc_key(claim)));
            }
            let Some(class) = self.listers.storage_classes.get(class_name) else {
                return Err(format!("failed to find storage class {class_name:?}"));
            };
            let provisioner = class.provisioner.as_str();
            if provisioner.is_empty() || provisioner == NOT_SUPPORTED_PROVISIONER {
                return Ok((false, true, Vec::new()));
            }
            let terms = class.allowed_topologies.as_deref().unwrap_or(&[]);
            if !match_topology_selector_terms(terms, node_labels(node)) {
                return Ok((false, true, Vec::new()));
            }
            let Some(node_capacity) = super::capacity::has_enough_capacity(
                self.listers,
                provisioner,
                claim,
                class_name,
                node,
            ) else {
                return Ok((true, false, Vec::new()));
            };
            provisions.push(DynamicProvision {
                pvc: claim.clone(),
                node_capacity,
            });
        }
        Ok((true, true, provisions))
    }

    /// `AssumePodVolumes`: true when every claim is already bound (nothing to do).
    /// Otherwise the bindings get the PV as PreBind would write it (claimRef set) and the
    /// provisioned claims get the selected-node annotation.
    pub fn assume_pod_volumes(&self, pod: &Pod, node: &str, pv: &mut PodVolumes) -> bool {
        if self.are_pod_volumes_bound(pod) {
            return true;
        }
        for b in &mut pv.static_bindings {
            b.pv = Arc::new(bind_volume_to_claim(&b.pv, &b.pvc));
        }
        for p in &mut pv.dynamic_provisions {
            let mut claim = (*p.pvc).clone();
            claim
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(ANN_SELECTED_NODE.into(), node.into());
            p.pvc = Arc::new(claim);
        }
        false
    }
}

/// `GetBindVolumeToClaim`: the PV with its claimRef pointing at the claim, marked bound by
/// the controller unless it was pre-bound by a user.
pub fn bind_volume_to_claim(
    pv: &PersistentVolume,
    pvc: &PersistentVolumeClaim,
) -> PersistentVolume {
    let prebound = is_volume_bound_to_claim(pv, pvc);
    let mut out = pv.clone();
    let spec = out.spec.get_or_insert_with(Default::default);
    let r = spec.claim_ref.as_ref();
    let same = r.is_some_and(|r| {
        r.name == pvc.metadata.name
            && r.namespace == pvc.metadata.namespace
            && r.uid == pvc.metadata.uid
    });
    if !same {
        spec.claim_ref = Some(ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("PersistentVolumeClaim".into()),
            name: pvc.metadata.name.clone(),
            namespace: pvc.metadata.namespace.clone(),
            uid: pvc.metadata.uid.clone(),
            resource_version: pvc.metadata.resource_version.clone(),
            field_path: None,
        });
    }
    if !prebound {
        out.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .entry(ANN_BOUND_BY_CONTROLLER.into())
            .or_insert_with(|| "yes".into());
    }
    out
}

/// `tryTranslatePVToCSI`: an in-tree PV whose plugin the node lists as migrated is judged
/// as its CSI translation (whose node affinity uses the driver's zone key).
pub fn try_translate_pv_to_csi(
    pv: &Arc<PersistentVolume>,
    csi_node: Option<&CSINode>,
) -> Result<Arc<PersistentVolume>, String> {
    let Some(plugin) = InTreePlugin::of_pv(pv) else {
        return Ok(pv.clone());
    };
    let migrated = csi_node.is_some_and(|n| migrated_plugins(n).contains(plugin.in_tree_name()));
    if !plugin.migration_on() || !migrated {
        return Ok(pv.clone());
    }
    translate_pv(pv)
        .map(Arc::new)
        .map_err(|e| format!("could not translate pv: {e}"))
}
