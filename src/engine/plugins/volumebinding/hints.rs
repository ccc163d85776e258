//! VolumeBinding's queueing hints: which storage events may let a rejected pod's
//! claims bind.

use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};

use crate::api::quantity::Quantity;
use crate::api::volume::{MIGRATED_PLUGINS_ANNOTATION, pod_volumes};
use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::hints::access::{
    as_objects, meta_name, new_pvc, required, skip_or_queue, uses_claim,
};

/// VolumeBinding's EnqueueExtensions.
pub(super) fn queueing_hints() -> Vec<ClusterEventWithHint> {
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
            let uses_driver = pod_volumes(pod.pod())
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
