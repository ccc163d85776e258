//! InterPodAffinity's queueing hints: which pod and node events may satisfy the
//! affinity or lift the anti-affinity that rejected a pod.

use crate::api::labels::empty_labels;
use crate::framework::events::{ActionType as A, EventObject, EventResource as R};
use crate::framework::hints::access::{
    as_nodes, as_pods, node_labels, pod_labels, pod_namespace, pod_node_name, required,
    skip_or_queue,
};
use crate::framework::hints::{ClusterEventWithHint, HintResult};
use crate::framework::types::{AffinityTerm, PodInfo};
use k8s_openapi::api::core::v1::Pod;

/// InterPodAffinity's EnqueueExtensions.
pub(super) fn queueing_hints() -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::with_hint(
            R::Pod,
            A::ADD | A::UPDATE_POD_LABEL | A::DELETE,
            |_, pod, old, new| ipa_after_pod_change(pod, old, new),
        ),
        ClusterEventWithHint::with_hint(
            R::Node,
            A::ADD | A::UPDATE_NODE_LABEL,
            |_, pod, old, new| ipa_after_node_change(pod, old, new),
        ),
    ]
}

/// The incoming pod's term matched against another pod: its namespace selector was
/// resolved, so no namespace labels are needed.
fn term_matches(t: &AffinityTerm, p: &Pod) -> bool {
    (t.namespaces.contains(pod_namespace(p)) || t.namespace_selector.matches(empty_labels()))
        && t.selector.matches(pod_labels(p))
}

fn matches_all(terms: &[AffinityTerm], p: &Pod) -> bool {
    !terms.is_empty() && terms.iter().all(|t| term_matches(t, p))
}

/// The target's required terms; a term that did not parse makes the hint fail (Queue).
fn affinity_terms(pod: &PodInfo) -> Result<(&[AffinityTerm], &[AffinityTerm]), String> {
    if let Some(e) = &pod.parse_error {
        return Err(e.clone());
    }
    Ok((
        &pod.required_affinity_terms,
        &pod.required_anti_affinity_terms,
    ))
}

fn ipa_after_pod_change(
    pod: &PodInfo,
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> HintResult {
    let (original, modified) = as_pods(old, new)?;
    if modified.is_some_and(|p| pod_node_name(p).is_empty())
        || original.is_some_and(|p| pod_node_name(p).is_empty())
    {
        // Unscheduled pods neither attract nor repel.
        return skip_or_queue(false);
    }
    let (terms, anti_terms) = affinity_terms(pod)?;
    match (original, modified) {
        (Some(o), Some(m)) => skip_or_queue(
            (!matches_all(terms, o) && matches_all(terms, m))
                || (matches_all(anti_terms, o) && !matches_all(anti_terms, m)),
        ),
        (None, Some(m)) => skip_or_queue(matches_all(terms, m)),
        (Some(o), None) => skip_or_queue(matches_all(anti_terms, o)),
        (None, None) => Err("the event carries no pod".into()),
    }
}

fn ipa_after_node_change(
    pod: &PodInfo,
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> HintResult {
    let (original, modified) = as_nodes(old, new)?;
    let modified = required(modified, "node")?;
    let (terms, anti_terms) = affinity_terms(pod)?;
    let after = node_labels(modified);
    for t in terms {
        let key = &t.topology_key;
        match original {
            // A new node in some domain of the affinity's topology.
            None if after.contains_key(key) => return skip_or_queue(true),
            None => {}
            Some(o) => {
                let before = node_labels(o);
                match (before.get(key), after.get(key)) {
                    (None, Some(_)) => return skip_or_queue(true),
                    (Some(b), Some(a)) if a != b => return skip_or_queue(true),
                    _ => {}
                }
            }
        }
    }
    for t in anti_terms {
        let key = &t.topology_key;
        match original {
            // Any new node may host a pod with anti-affinity.
            None => return skip_or_queue(true),
            Some(o) => {
                let before = node_labels(o);
                match (before.get(key), after.get(key)) {
                    (Some(_), None) => return skip_or_queue(true),
                    (Some(b), Some(a)) if a != b => return skip_or_queue(true),
                    _ => {}
                }
            }
        }
    }
    skip_or_queue(false)
}
