//! What hint functions share: the objects of an event as typed values, and the fields of
//! pods, nodes and claims they compare.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod, Taint, Toleration, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;

use super::{EventObject, HintResult, QueueingHint};
use crate::api::labels::{Labels, empty_labels};
use crate::api::volume::pod_volumes;
use crate::types::PodInfo;

/// The objects before and after an event.
pub type OldNew<T> = (Option<T>, Option<T>);

/// Upstream `util.As` for pods: the objects must be pods (or absent).
pub fn as_pods<'a>(
    old: Option<&'a EventObject>,
    new: Option<&'a EventObject>,
) -> Result<OldNew<&'a Pod>, String> {
    let conv = |o: Option<&'a EventObject>| -> Result<_, String> {
        match o {
            None => Ok(None),
            Some(EventObject::Pod(p)) => Ok(Some(p.pod())),
            Some(other) => Err(format!("expected a Pod, got {}", other.describe())),
        }
    };
    Ok((conv(old)?, conv(new)?))
}

/// Upstream `util.As` for nodes.
pub fn as_nodes<'a>(
    old: Option<&'a EventObject>,
    new: Option<&'a EventObject>,
) -> Result<OldNew<&'a Arc<Node>>, String> {
    let conv = |o: Option<&'a EventObject>| -> Result<_, String> {
        match o {
            None => Ok(None),
            Some(EventObject::Node(n)) => Ok(Some(n)),
            Some(other) => Err(format!("expected a Node, got {}", other.describe())),
        }
    };
    Ok((conv(old)?, conv(new)?))
}

/// Upstream `util.As` for other kinds, decoded from JSON.
pub fn as_objects<T: DeserializeOwned>(
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> Result<OldNew<T>, String> {
    let conv = |o: Option<&EventObject>| -> Result<Option<T>, String> {
        match o {
            None => Ok(None),
            Some(EventObject::Other(v)) => serde_json::from_value(v.clone())
                .map(Some)
                .map_err(|e| e.to_string()),
            Some(other) => Err(format!("unexpected object {}", other.describe())),
        }
    };
    Ok((conv(old)?, conv(new)?))
}

/// A required object of an event (the new one of an add or update, the old one of a
/// delete).
pub fn required<T>(o: Option<T>, what: &str) -> Result<T, String> {
    o.ok_or_else(|| format!("the event carries no {what}"))
}

/// Queue when `queue`, else QueueSkip.
pub fn skip_or_queue(queue: bool) -> HintResult {
    Ok(if queue {
        QueueingHint::Queue
    } else {
        QueueingHint::QueueSkip
    })
}

/// Queue when the updated pod is the rejected pod itself (its own gates, labels or
/// tolerations changed), skip for any other pod.
pub fn queue_if_own_update(
    pod: &PodInfo,
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> HintResult {
    let (_, modified) = as_pods(old, new)?;
    skip_or_queue(pod_uid(required(modified, "pod")?) == pod.uid)
}

pub fn pod_uid(p: &Pod) -> &str {
    p.metadata.uid.as_deref().unwrap_or("")
}

pub fn pod_namespace(p: &Pod) -> &str {
    p.metadata.namespace.as_deref().unwrap_or("")
}

pub fn pod_labels(p: &Pod) -> &Labels {
    p.metadata.labels.as_ref().unwrap_or(empty_labels())
}

pub fn node_labels(n: &Node) -> &Labels {
    n.metadata.labels.as_ref().unwrap_or(empty_labels())
}

pub fn pod_node_name(p: &Pod) -> &str {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("")
}

pub fn pod_nominated(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .unwrap_or("")
}

pub fn pod_tolerations(p: &Pod) -> &[Toleration] {
    p.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[])
}

pub fn node_taints(n: &Node) -> &[Taint] {
    n.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[])
}

pub fn meta_name(m: &ObjectMeta) -> &str {
    m.name.as_deref().unwrap_or("")
}

pub fn meta_namespace(m: &ObjectMeta) -> &str {
    m.namespace.as_deref().unwrap_or("")
}

/// The claim a volume uses: its PVC, or the claim generated for an ephemeral volume
/// (`<pod>-<volume>`).
pub fn claim_name(pod: &PodInfo, v: &Volume) -> Option<String> {
    if let Some(c) = &v.persistent_volume_claim {
        return Some(c.claim_name.clone());
    }
    v.ephemeral
        .as_ref()
        .map(|_| format!("{}-{}", pod.name, v.name))
}

/// The pod uses this PVC (directly or as a generated ephemeral claim).
pub fn uses_claim(pod: &PodInfo, pvc: &PersistentVolumeClaim) -> bool {
    meta_namespace(&pvc.metadata) == pod.namespace
        && pod_volumes(pod.pod())
            .iter()
            .filter_map(|v| claim_name(pod, v))
            .any(|n| n == meta_name(&pvc.metadata))
}

/// The pod mounts this PVC directly (generated claims excluded).
pub fn mounts_claim(pod: &PodInfo, pvc: &PersistentVolumeClaim) -> bool {
    meta_namespace(&pvc.metadata) == pod.namespace
        && pod_volumes(pod.pod()).iter().any(|v| {
            v.persistent_volume_claim
                .as_ref()
                .is_some_and(|c| c.claim_name == meta_name(&pvc.metadata))
        })
}

pub fn new_pvc(
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> Result<PersistentVolumeClaim, String> {
    let (_, n) = as_objects::<PersistentVolumeClaim>(old, new)?;
    required(n, "PersistentVolumeClaim")
}
