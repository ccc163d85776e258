//! InterPodAffinity's queueing hints: which pod and node events may satisfy the
//! affinity or lift the anti-affinity that rejected a pod.

use crate::api::labels::empty_labels;
use crate::framework::events::{ActionType as A, EventObject, EventResource as R};
use crate::framework::hints::access::{
    as_nodes, as_pods, node_labels, pod_labels, pod_namespace, pod_node_name, pod_nominated,
    pod_uid, required, skip_or_queue,
};
use crate::framework::hints::{ClusterEventWithHint, HintResult};
use crate::framework::types::{AffinityTerm, PodInfo};
use k8s_openapi::api::core::v1::Pod;

/// InterPodAffinity's EnqueueExtensions; `sees_nominated` is the version's
/// `hints_see_nominated_pods` (1.36).
pub(super) fn queueing_hints(sees_nominated: bool) -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::with_hint(
            R::Pod,
            A::ADD | A::UPDATE_POD_LABEL | A::DELETE,
            move |_, pod, old, new| ipa_after_pod_change(sees_nominated, pod, old, new),
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

/// Whether another pod is not placed anywhere, so neither attracts nor repels: no node,
/// and (from 1.36) no nominated node either.
fn unplaced(p: &Pod, sees_nominated: bool) -> bool {
    pod_node_name(p).is_empty() && (!sees_nominated || pod_nominated(p).is_empty())
}

/// The deleted pod's own required anti-affinity terms, parsed in its namespace.
fn anti_terms_of(p: &Pod) -> Result<Vec<AffinityTerm>, String> {
    let terms = p
        .spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    terms
        .into_iter()
        .flatten()
        .map(|t| AffinityTerm::new(pod_namespace(p), t))
        .collect()
}

fn ipa_after_pod_change(
    sees_nominated: bool,
    pod: &PodInfo,
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> HintResult {
    let (original, modified) = as_pods(old, new)?;
    // From 1.36: the pod's own label update (the only update registered) may take it out
    // of another pod's anti-affinity.
    if sees_nominated
        && original.is_some()
        && let Some(m) = modified
        && pod_uid(m) == pod.uid
    {
        return skip_or_queue(true);
    }
    if modified.is_some_and(|p| unplaced(p, sees_nominated))
        || original.is_some_and(|p| unplaced(p, sees_nominated))
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
        (Some(o), None) => {
            if matches_all(anti_terms, o) {
                return skip_or_queue(true);
            }
            if !sees_nominated {
                return skip_or_queue(false);
            }
            // From 1.36 also the other way round: the pod matched the deleted pod's
            // required anti-affinity.
            let theirs = anti_terms_of(o)?;
            skip_or_queue(matches_all(&theirs, pod.pod()))
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Snapshot;
    use crate::framework::events::EventPod;
    use crate::framework::hints::QueueingHint::{self, Queue, QueueSkip};
    use crate::framework::listers::Listers;
    use crate::plugins::testing::{Env, pod};
    use serde_json::{Value, json};
    use std::sync::Arc;

    /// The target: labelled app=web, wanting a pod app=cache near it and no app=db pod.
    fn target() -> Arc<PodInfo> {
        pod(
            json!({"metadata": {"name": "t", "namespace": "ns", "uid": "t",
            "labels": {"app": "web"}}, "spec": {"containers": [], "affinity": {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "zone"}]},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}}}}),
        )
    }

    fn other(name: &str, labels: Value, node: &str, nominated: &str, spec: Value) -> EventObject {
        let mut v = json!({"metadata": {"name": name, "namespace": "ns", "uid": name,
            "labels": labels}, "spec": spec});
        if !node.is_empty() {
            v["spec"]["nodeName"] = json!(node);
        }
        if !nominated.is_empty() {
            v["status"] = json!({"nominatedNodeName": nominated});
        }
        EventObject::Pod(EventPod::from(Arc::new(serde_json::from_value(v).unwrap())))
    }

    fn ask(
        sees: bool,
        t: &PodInfo,
        old: Option<&EventObject>,
        new: Option<&EventObject>,
    ) -> QueueingHint {
        ipa_after_pod_change(sees, t, old, new).unwrap()
    }

    #[test]
    fn nominated_pods_count_as_placed_from_1_36() {
        let t = target();
        let nominated_cache = other(
            "c",
            json!({"app": "cache"}),
            "",
            "n1",
            json!({"containers": []}),
        );
        let bound_cache = other(
            "c",
            json!({"app": "cache"}),
            "n1",
            "",
            json!({"containers": []}),
        );
        let pending_cache = other(
            "c",
            json!({"app": "cache"}),
            "",
            "",
            json!({"containers": []}),
        );
        // (1.35, 1.36) for an added pod matching the target's affinity.
        for (event, want) in [
            (&nominated_cache, [QueueSkip, Queue]),
            (&bound_cache, [Queue, Queue]),
            (&pending_cache, [QueueSkip, QueueSkip]),
        ] {
            assert_eq!(
                [
                    ask(false, &t, None, Some(event)),
                    ask(true, &t, None, Some(event))
                ],
                want
            );
        }
        // A nominated app=db pod deleted: it matched the target's anti-affinity.
        let nominated_db = other(
            "d",
            json!({"app": "db"}),
            "",
            "n1",
            json!({"containers": []}),
        );
        assert_eq!(ask(false, &t, Some(&nominated_db), None), QueueSkip);
        assert_eq!(ask(true, &t, Some(&nominated_db), None), Queue);
    }

    #[test]
    fn own_label_update_queues_from_1_36() {
        let t = target();
        let before = other(
            "t",
            json!({"app": "web"}),
            "",
            "",
            json!({"containers": []}),
        );
        let after = other(
            "t",
            json!({"app": "api"}),
            "",
            "",
            json!({"containers": []}),
        );
        assert_eq!(ask(false, &t, Some(&before), Some(&after)), QueueSkip);
        assert_eq!(ask(true, &t, Some(&before), Some(&after)), Queue);
        // Another unscheduled pod's label update still does nothing.
        let x0 = other("x", json!({"app": "db"}), "", "", json!({"containers": []}));
        let x1 = other(
            "x",
            json!({"app": "cache"}),
            "",
            "",
            json!({"containers": []}),
        );
        assert_eq!(ask(true, &t, Some(&x0), Some(&x1)), QueueSkip);
    }

    #[test]
    fn deleted_pod_whose_anti_affinity_the_target_matches_queues_from_1_36() {
        let t = target();
        let repels_web = json!({"containers": [], "affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]}}});
        let gone = other("g", json!({"app": "batch"}), "n1", "", repels_web.clone());
        assert_eq!(ask(false, &t, Some(&gone), None), QueueSkip);
        assert_eq!(ask(true, &t, Some(&gone), None), Queue);
        // Its anti-affinity selects pods of its own namespace only.
        let elsewhere = {
            let EventObject::Pod(p) = &gone else {
                unreachable!()
            };
            let mut p = p.pod().clone();
            p.metadata.namespace = Some("other".into());
            EventObject::Pod(EventPod::from(Arc::new(p)))
        };
        assert_eq!(ask(true, &t, Some(&elsewhere), None), QueueSkip);
        // Neither side's anti-affinity: nothing.
        let plain = other(
            "p",
            json!({"app": "batch"}),
            "n1",
            "",
            json!({"containers": []}),
        );
        assert_eq!(ask(true, &t, Some(&plain), None), QueueSkip);
        // The deleted pod's terms that do not parse make the hint fail (Queue).
        let bad = json!({"containers": [], "affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {
                "matchExpressions": [{"key": "a", "operator": "Bad"}]}, "topologyKey": "zone"}]}}});
        let broken = other("b", json!({"app": "batch"}), "n1", "", bad);
        assert!(ipa_after_pod_change(true, &t, Some(&broken), None).is_err());
    }

    #[test]
    fn the_factory_sets_the_hints_of_the_version() {
        use crate::framework::factory::FactoryContext;
        use crate::framework::features::{Features, KubeVersion};
        use crate::framework::hints::run_hint;
        let env = Env::new(Snapshot::default(), Listers::default());
        let t = target();
        let before = other(
            "t",
            json!({"app": "web"}),
            "",
            "",
            json!({"containers": []}),
        );
        let after = other(
            "t",
            json!({"app": "api"}),
            "",
            "",
            json!({"containers": []}),
        );
        let event = crate::framework::events::ClusterEvent::new(
            R::Pod,
            A::UPDATE_POD_LABEL,
            Some(before),
            Some(after),
        );
        for (v, want) in [(KubeVersion::V1_35, QueueSkip), (KubeVersion::V1_36, Queue)] {
            let features = Features::version(v);
            let ctx = FactoryContext {
                args: None,
                profile_name: "p",
                features: &features,
            };
            let pl = super::super::factory(&ctx).unwrap();
            let regs = pl.events_to_register().unwrap();
            let hint = regs[0].hint.as_ref().unwrap();
            assert_eq!(run_hint(hint, &env.handle(), &t, &event), want, "{v}");
        }
    }
}
