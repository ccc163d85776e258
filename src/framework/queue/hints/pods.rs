//! Registrations and hints of the plugins that look at other pods: InterPodAffinity and
//! PodTopologySpread.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use super::{
    ClusterEventWithHint, EventObject, HintResult, as_nodes, as_pods, required, skip_or_queue,
};
use crate::api::labels::{Labels, empty_labels};
use crate::config::PluginArgs;
use crate::framework::plugin::Handle;
use crate::framework::profile::Framework;
use crate::framework::queue::events::{ActionType as A, EventResource as R};
use crate::framework::types::{AffinityTerm, PodInfo};
use crate::plugins::podtopologyspread::PodTopologySpread;
use crate::plugins::podtopologyspread::common::{DO_NOT_SCHEDULE, SpreadConstraint};

fn labels(p: &Pod) -> &Labels {
    p.metadata.labels.as_ref().unwrap_or(empty_labels())
}

fn node_labels(n: &Node) -> &Labels {
    n.metadata.labels.as_ref().unwrap_or(empty_labels())
}

fn namespace(p: &Pod) -> &str {
    p.metadata.namespace.as_deref().unwrap_or("")
}

fn uid(p: &Pod) -> &str {
    p.metadata.uid.as_deref().unwrap_or("")
}

fn node_name(p: &Pod) -> &str {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("")
}

// ---- InterPodAffinity ----

pub(super) fn inter_pod_affinity(_: &Framework) -> Vec<ClusterEventWithHint> {
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
    (t.namespaces.contains(namespace(p)) || t.namespace_selector.matches(empty_labels()))
        && t.selector.matches(labels(p))
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
    if modified.is_some_and(|p| node_name(p).is_empty())
        || original.is_some_and(|p| node_name(p).is_empty())
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

// ---- PodTopologySpread ----

fn spread_plugin(fwk: &Framework) -> PodTopologySpread {
    match fwk.plugin_args.get(crate::plugins::podtopologyspread::NAME) {
        Some(PluginArgs::PodTopologySpread(a)) => {
            PodTopologySpread::new(a.default_constraints.clone(), a.is_system_defaulted())
        }
        _ => PodTopologySpread::default(),
    }
}

pub(super) fn pod_topology_spread(fwk: &Framework) -> Vec<ClusterEventWithHint> {
    let pl = Arc::new(spread_plugin(fwk));
    let for_nodes = Arc::clone(&pl);
    vec![
        ClusterEventWithHint::with_hint(
            R::Pod,
            A::ADD | A::UPDATE_POD_LABEL | A::UPDATE_POD_TOLERATION | A::DELETE,
            move |h, pod, old, new| pts_after_pod_change(&pl, h, pod, old, new),
        ),
        ClusterEventWithHint::with_hint(
            R::Node,
            A::ADD | A::DELETE | A::UPDATE_NODE_LABEL | A::UPDATE_NODE_TAINT,
            move |h, pod, old, new| pts_after_node_change(&for_nodes, h, pod, old, new),
        ),
    ]
}

/// The hard constraints (own, or the defaults with the selector of the pod's services
/// and controllers).
fn hard_constraints(
    pl: &PodTopologySpread,
    h: &Handle,
    pod: &PodInfo,
) -> Result<Vec<SpreadConstraint>, String> {
    pl.constraints_for(h.listers, pod, DO_NOT_SCHEDULE, "hard")
}

/// The other pod counts for the target's spreading: it is the target, or a bound pod in
/// the target's namespace.
fn involved(incoming: &Pod, target: &PodInfo) -> bool {
    uid(incoming) == target.uid
        || (!node_name(incoming).is_empty() && namespace(incoming) == target.namespace)
}

fn pts_after_pod_change(
    pl: &PodTopologySpread,
    h: &Handle,
    pod: &PodInfo,
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> HintResult {
    let (original, modified) = as_pods(old, new)?;
    if modified.is_some_and(|p| !involved(p, pod)) || original.is_some_and(|p| !involved(p, pod)) {
        return skip_or_queue(false);
    }
    let constraints = hard_constraints(pl, h, pod)?;
    let any_matches = |l: &Labels| constraints.iter().any(|c| c.selector.matches(l));
    match (original, modified) {
        (Some(o), Some(m)) => {
            let tolerations = |p: &Pod| {
                p.spec
                    .as_ref()
                    .and_then(|s| s.tolerations.clone())
                    .unwrap_or_default()
            };
            if uid(m) == pod.uid
                && tolerations(m) != tolerations(o)
                && constraints.iter().any(|c| c.honor_node_taints)
            {
                return skip_or_queue(true);
            }
            if labels(o) == labels(m) {
                return skip_or_queue(false);
            }
            skip_or_queue(
                constraints
                    .iter()
                    .any(|c| c.selector.matches(labels(o)) != c.selector.matches(labels(m))),
            )
        }
        (None, Some(m)) => skip_or_queue(any_matches(labels(m))),
        (Some(o), None) => skip_or_queue(any_matches(labels(o))),
        (None, None) => Err("the event carries no pod".into()),
    }
}

fn pts_after_node_change(
    pl: &PodTopologySpread,
    h: &Handle,
    pod: &PodInfo,
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> HintResult {
    let (original, modified) = as_nodes(old, new)?;
    let constraints = hard_constraints(pl, h, pod)?;
    let has_keys = |n: &Node| {
        let l = node_labels(n);
        constraints.iter().all(|c| l.contains_key(&c.topology_key))
    };
    let orig_matching = original.is_some_and(|n| has_keys(n));
    let mod_matching = modified.is_some_and(|n| has_keys(n));
    match (original, modified) {
        (Some(o), Some(m)) => {
            if orig_matching != mod_matching {
                return skip_or_queue(true);
            }
            let key_changed = constraints.iter().any(|c| {
                node_labels(o).get(&c.topology_key) != node_labels(m).get(&c.topology_key)
            });
            let taints = |n: &Node| {
                n.spec
                    .as_ref()
                    .and_then(|s| s.taints.clone())
                    .unwrap_or_default()
            };
            skip_or_queue(mod_matching && (key_changed || taints(o) != taints(m)))
        }
        (None, Some(_)) => skip_or_queue(mod_matching),
        (Some(_), None) => skip_or_queue(orig_matching),
        (None, None) => Err("the event carries no node".into()),
    }
}
