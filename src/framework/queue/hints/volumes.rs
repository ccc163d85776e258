//! Registrations and hints of the volume plugins: VolumeBinding, VolumeZone,
//! VolumeRestrictions and NodeVolumeLimits (CSILimits).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod, Volume};
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
};

use super::{ClusterEventWithHint, EventObject, as_objects, as_pods, required, skip_or_queue};
use crate::api::csi_translation::{InTreePlugin, translate_inline};
use crate::api::quantity::Quantity;
use crate::api::volume::{
    BINDING_MODE_WAIT_FOR_FIRST_CONSUMER, MIGRATED_PLUGINS_ANNOTATION, pod_volumes,
};
use crate::framework::profile::Framework;
use crate::framework::queue::events::{ActionType as A, EventResource as R};
use crate::framework::types::PodInfo;
use crate::plugins::volume_restrictions::{is_volume_conflict, needs_restrictions_check};
use crate::plugins::volume_zone::pv_topologies;

fn meta_name(m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    m.name.as_deref().unwrap_or("")
}

fn meta_namespace(m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    m.namespace.as_deref().unwrap_or("")
}

/// The claim a volume uses: its PVC, or the claim generated for an ephemeral volume
/// (`<pod>-<volume>`).
fn claim_name(pod: &PodInfo, v: &Volume) -> Option<String> {
    if let Some(c) = &v.persistent_volume_claim {
        return Some(c.claim_name.clone());
    }
    v.ephemeral
        .as_ref()
        .map(|_| format!("{}-{}", pod.name, v.name))
}

/// The pod uses this PVC (directly or as a generated ephemeral claim).
fn uses_claim(pod: &PodInfo, pvc: &PersistentVolumeClaim) -> bool {
    meta_namespace(&pvc.metadata) == pod.namespace
        && pod_volumes(&pod.pod)
            .iter()
            .filter_map(|v| claim_name(pod, v))
            .any(|n| n == meta_name(&pvc.metadata))
}

/// The pod mounts this PVC directly (generated claims excluded).
fn mounts_claim(pod: &PodInfo, pvc: &PersistentVolumeClaim) -> bool {
    meta_namespace(&pvc.metadata) == pod.namespace
        && pod_volumes(&pod.pod).iter().any(|v| {
            v.persistent_volume_claim
                .as_ref()
                .is_some_and(|c| c.claim_name == meta_name(&pvc.metadata))
        })
}

fn new_pvc(
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> Result<PersistentVolumeClaim, String> {
    let (_, n) = as_objects::<PersistentVolumeClaim>(old, new)?;
    required(n, "PersistentVolumeClaim")
}

// ---- VolumeBinding ----

pub(super) fn volume_binding(_: &Framework) -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::with_hint(R::StorageClass, A::ADD | A::UPDATE, |_, _, old, new| {
            let (o, n) = as_objects::<StorageClass>(old, new)?;
            let n = required(n, "StorageClass")?;
            // A new class may help; an update only through its allowed topologies.
            skip_or_queue(o.is_none_or(|o| {
                o.allowed_topologies.unwrap_or_default()
                    != n.allowed_topologies.clone().unwrap_or_default()
            }))
        }),
        ClusterEventWithHint::with_hint(
            R::PersistentVolumeClaim,
            A::ADD | A::UPDATE,
            |_, pod, old, new| skip_or_queue(uses_claim(pod, &new_pvc(old, new)?)),
        ),
        ClusterEventWithHint::new(R::PersistentVolume, A::ADD | A::UPDATE),
        ClusterEventWithHint::new(R::Node, A::ADD | A::UPDATE_NODE_LABEL),
        ClusterEventWithHint::with_hint(R::CsiNode, A::ADD | A::UPDATE, |_, _, old, new| {
            let (o, n) = as_objects::<CSINode>(old, new)?;
            let Some(o) = o else {
                return skip_or_queue(true);
            };
            let n = required(n, "CSINode")?;
            let migrated = |c: &CSINode| {
                c.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(MIGRATED_PLUGINS_ANNOTATION))
                    .cloned()
                    .unwrap_or_default()
            };
            skip_or_queue(migrated(&o) != migrated(&n))
        }),
        ClusterEventWithHint::with_hint(R::CsiDriver, A::UPDATE, |_, pod, old, new| {
            let (o, n) = as_objects::<CSIDriver>(old, new)?;
            let (o, n) = (required(o, "old CSIDriver")?, required(n, "CSIDriver")?);
            let capacity = |d: &CSIDriver| d.spec.storage_capacity.unwrap_or(false);
            let name = meta_name(&n.metadata);
            let uses_driver = pod_volumes(&pod.pod)
                .iter()
                .any(|v| v.csi.as_ref().is_some_and(|c| c.driver == name));
            // Storage capacity tracking turned off for a driver the pod uses.
            skip_or_queue(uses_driver && capacity(&o) && !capacity(&n))
        }),
        ClusterEventWithHint::with_hint(
            R::CsiStorageCapacity,
            A::ADD | A::UPDATE,
            |_, _, old, new| {
                let (o, n) = as_objects::<CSIStorageCapacity>(old, new)?;
                let Some(o) = o else {
                    return skip_or_queue(true);
                };
                let n = required(n, "CSIStorageCapacity")?;
                let (before, after) = (volume_limit(&o), volume_limit(&n));
                skip_or_queue(after.is_some_and(|a| before.is_none_or(|b| a.value() > b.value())))
            },
        ),
    ]
}

/// The largest volume the capacity allows: `maximumVolumeSize`, else `capacity`.
fn volume_limit(c: &CSIStorageCapacity) -> Option<Quantity> {
    c.maximum_volume_size
        .as_ref()
        .or(c.capacity.as_ref())
        .and_then(|q| Quantity::parse(&q.0).ok())
}

// ---- VolumeZone ----

pub(super) fn volume_zone(_: &Framework) -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::with_hint(R::StorageClass, A::ADD, |_, _, old, new| {
            let (_, n) = as_objects::<StorageClass>(old, new)?;
            let n = required(n, "StorageClass")?;
            skip_or_queue(
                n.volume_binding_mode.as_deref() == Some(BINDING_MODE_WAIT_FOR_FIRST_CONSUMER),
            )
        }),
        ClusterEventWithHint::new(R::Node, A::ADD | A::UPDATE_NODE_LABEL),
        ClusterEventWithHint::with_hint(
            R::PersistentVolumeClaim,
            A::ADD | A::UPDATE,
            |_, pod, old, new| skip_or_queue(mounts_claim(pod, &new_pvc(old, new)?)),
        ),
        ClusterEventWithHint::with_hint(
            R::PersistentVolume,
            A::ADD | A::UPDATE,
            |_, _, old, new| {
                let (o, n) = as_objects::<PersistentVolume>(old, new)?;
                let Some(o) = o else {
                    return skip_or_queue(true);
                };
                let n = required(n, "PersistentVolume")?;
                skip_or_queue(pv_topologies(&o) != pv_topologies(&n))
            },
        ),
    ]
}

// ---- VolumeRestrictions ----

pub(super) fn volume_restrictions(_: &Framework) -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::with_hint(R::Pod, A::DELETE, |_, pod, old, new| {
            let (deleted, _) = as_pods(old, new)?;
            let deleted = required(deleted, "pod")?;
            if deleted.metadata.namespace.as_deref().unwrap_or("") != pod.namespace {
                return skip_or_queue(false);
            }
            // The deleted pod held a disk the target conflicts on...
            let conflicted = pod_volumes(&pod.pod)
                .iter()
                .filter(|v| needs_restrictions_check(v))
                .any(|v| is_volume_conflict(v, deleted));
            // ...or a claim the target uses (maybe ReadWriteOncePod).
            skip_or_queue(conflicted || shares_claim(&pod.pod, deleted))
        }),
        ClusterEventWithHint::new(R::Node, A::ADD),
        ClusterEventWithHint::with_hint(R::PersistentVolumeClaim, A::ADD, |_, pod, old, new| {
            skip_or_queue(mounts_claim(pod, &new_pvc(old, new)?))
        }),
    ]
}

fn shares_claim(a: &Pod, b: &Pod) -> bool {
    let claims = |p: &Pod| -> Vec<String> {
        pod_volumes(p)
            .iter()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .map(|c| c.claim_name.clone())
            .collect()
    };
    let mine = claims(a);
    claims(b).iter().any(|c| mine.contains(c))
}

// ---- NodeVolumeLimits (CSILimits) ----

pub(super) fn csi_limits(_: &Framework) -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::new(R::CsiNode, A::ADD),
        ClusterEventWithHint::with_hint(R::CsiNode, A::UPDATE, |_, _, old, new| {
            let (o, n) = as_objects::<CSINode>(old, new)?;
            let (o, n) = (required(o, "old CSINode")?, required(n, "CSINode")?);
            let limits = |c: &CSINode| -> BTreeMap<String, i32> {
                c.spec
                    .drivers
                    .iter()
                    .map(|d| {
                        let count = d.allocatable.as_ref().and_then(|a| a.count).unwrap_or(0);
                        (d.name.clone(), count)
                    })
                    .collect()
            };
            let before = limits(&o);
            // Some driver's volume limit went up.
            skip_or_queue(
                limits(&n)
                    .iter()
                    .any(|(d, l)| *l > before.get(d).copied().unwrap_or(0)),
            )
        }),
        ClusterEventWithHint::with_hint(R::Pod, A::DELETE, |_, _, old, new| {
            let (deleted, _) = as_pods(old, new)?;
            let deleted = required(deleted, "pod")?;
            let vols = pod_volumes(deleted);
            let placed = deleted
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_some_and(|n| !n.is_empty())
                || deleted
                    .status
                    .as_ref()
                    .and_then(|s| s.nominated_node_name.as_deref())
                    .is_some_and(|n| !n.is_empty());
            skip_or_queue(
                placed
                    && vols.iter().any(|v| {
                        v.persistent_volume_claim.is_some()
                            || v.ephemeral.is_some()
                            || InTreePlugin::of_inline(v).is_some()
                    }),
            )
        }),
        ClusterEventWithHint::with_hint(R::PersistentVolumeClaim, A::ADD, |_, pod, old, new| {
            skip_or_queue(uses_claim(pod, &new_pvc(old, new)?))
        }),
        ClusterEventWithHint::with_hint(R::VolumeAttachment, A::DELETE, |_, pod, old, new| {
            let (deleted, _) = as_objects::<VolumeAttachment>(old, new)?;
            let deleted = required(deleted, "VolumeAttachment")?;
            for v in pod_volumes(&pod.pod) {
                if v.persistent_volume_claim.is_some() {
                    return skip_or_queue(true);
                }
                if InTreePlugin::of_inline(v).is_none() {
                    continue;
                }
                let csi = translate_inline(v, &pod.namespace).map_err(|e| {
                    format!("converting volume({}) from inline to csi: {e}", v.name)
                })?;
                if csi.driver == deleted.spec.attacher {
                    return skip_or_queue(true);
                }
            }
            skip_or_queue(false)
        }),
    ]
}
