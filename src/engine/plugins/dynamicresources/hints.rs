//! The events DynamicResources registers (upstream `EventsToRegister`, QueueingHints on)
//! and its two hints: a claim change and a pod's generated-claim update.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::ResourceClaim;

use super::objects;
use crate::framework::events::{ActionType as A, EventObject, EventResource as R};
use crate::framework::hints::access::{as_objects, as_pods, required, skip_or_queue};
use crate::framework::hints::{ClusterEventWithHint, HintResult};
use crate::framework::plugin::Handle;
use crate::framework::types::PodInfo;

/// Node additions and label or allocatable changes (slices may select nodes by label),
/// claims added or changed, the pod getting its generated claim's name, classes and
/// slices added or changed.
pub(crate) fn events() -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::new(
            R::Node,
            A::ADD | A::UPDATE_NODE_LABEL | A::UPDATE_NODE_ALLOCATABLE,
        ),
        ClusterEventWithHint::with_hint(R::ResourceClaim, A::ADD | A::UPDATE, after_claim_change),
        ClusterEventWithHint::with_hint(
            R::Pod,
            A::UPDATE_POD_GENERATED_RESOURCE_CLAIM,
            after_pod_change,
        ),
        ClusterEventWithHint::new(R::DeviceClass, A::ADD | A::UPDATE),
        ClusterEventWithHint::new(R::ResourceSlice, A::ADD | A::UPDATE),
    ]
}

/// A claim was added or changed. A deallocation may free devices for anyone; otherwise
/// only the pod's own claims matter, and only when created or when their status changed.
/// A pod whose claims are not all there yet stays where it is.
fn after_claim_change(
    h: &Handle,
    pod: &PodInfo,
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> HintResult {
    let (old, new) = as_objects::<ResourceClaim>(old, new)?;
    let new = required(new, "ResourceClaim")?;
    let Ok(claims) = objects::pod_claims(h.listers, pod.pod(), &BTreeMap::new(), "pod") else {
        return skip_or_queue(false);
    };
    let was_allocated = old
        .as_ref()
        .is_some_and(|o| o.status.as_ref().is_some_and(|s| s.allocation.is_some()));
    let is_allocated = new.status.as_ref().is_some_and(|s| s.allocation.is_some());
    if was_allocated && !is_allocated {
        return skip_or_queue(true);
    }
    let uid = new.metadata.uid.as_deref().unwrap_or("");
    let key = format!(
        "{}/{}",
        new.metadata.namespace.as_deref().unwrap_or("default"),
        new.metadata.name.as_deref().unwrap_or("")
    );
    let uses = claims
        .iter()
        .any(|c| c.claim.metadata.uid.as_deref() == Some(uid) || (uid.is_empty() && c.key == key));
    if !uses {
        return skip_or_queue(false);
    }
    match old {
        None => skip_or_queue(true),
        Some(o) => skip_or_queue(o.status != new.status),
    }
}

/// The pod itself was updated with the names of its generated claims: it may go ahead
/// once every claim it names exists.
fn after_pod_change(
    h: &Handle,
    pod: &PodInfo,
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> HintResult {
    let (_, modified) = as_pods(old, new)?;
    let modified = required(modified, "pod")?;
    if modified.metadata.uid.as_deref().unwrap_or("") != pod.uid {
        return skip_or_queue(false);
    }
    skip_or_queue(objects::pod_claims(h.listers, modified, &BTreeMap::new(), "pod").is_ok())
}
