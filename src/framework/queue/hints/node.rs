//! Registrations and hints of the node-level plugins: NodeResourcesFit, TaintToleration,
//! NodeAffinity, NodeUnschedulable, NodeName and NodePorts.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};

use super::{ClusterEventWithHint, HintResult, as_nodes, as_pods, required, skip_or_queue};
use crate::api::node_affinity::{NodeSelectorMatcher, RequiredNodeAffinity};
use crate::api::pod_resources::{self, is_scalar_resource_name};
use crate::api::taints::{find_untolerated, is_no_schedule_or_no_execute, tolerations_tolerate};
use crate::config::PluginArgs;
use crate::framework::node_info::{HostPortInfo, NodeInfo};
use crate::framework::profile::Framework;
use crate::framework::queue::events::{ActionType as A, EventResource as R};
use crate::framework::types::{PodInfo, Resource};
use crate::plugins::node_unschedulable::TAINT_NODE_UNSCHEDULABLE;
use crate::plugins::noderesources::fit::{Fit, pre_filter_resource};

fn uid(p: &Pod) -> &str {
    p.metadata.uid.as_deref().unwrap_or("")
}

fn pod_node_name(p: &Pod) -> &str {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("")
}

fn nominated(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .unwrap_or("")
}

fn tolerations(p: &Pod) -> &[Toleration] {
    p.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[])
}

fn taints(n: &Node) -> &[Taint] {
    n.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[])
}

fn unschedulable(n: &Node) -> bool {
    n.spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
}

// ---- NodeResourcesFit ----

pub(super) fn fit(_: &Framework) -> Vec<ClusterEventWithHint> {
    // InPlacePodVerticalScaling is on (GA): scale-downs of other pods may free room.
    vec![
        ClusterEventWithHint::with_hint(
            R::Pod,
            A::DELETE | A::UPDATE_POD_SCALE_DOWN,
            |_, pod, old, new| fit_after_pod_event(pod, old, new),
        ),
        ClusterEventWithHint::with_hint(
            R::Node,
            A::ADD | A::UPDATE_NODE_ALLOCATABLE,
            |_, pod, old, new| fit_after_node_change(pod, old, new),
        ),
    ]
}

fn fit_after_pod_event(
    pod: &PodInfo,
    old: Option<&super::EventObject>,
    new: Option<&super::EventObject>,
) -> HintResult {
    let (original, modified) = as_pods(old, new)?;
    let Some(modified) = modified else {
        // A deleted pod frees room only if it was on (or nominated to) a node.
        let original = required(original, "pod")?;
        return skip_or_queue(
            !(pod_node_name(original).is_empty() && nominated(original).is_empty()),
        );
    };
    let original = required(original, "old pod")?;
    skip_or_queue(scale_down_helps(pod, original, modified))
}

/// Requests of a pod as `SetMaxResource` over an empty Resource.
fn max_resource(p: &Pod) -> Resource {
    let mut r = Resource::default();
    for (name, q) in &pod_resources::pod_requests(p, None) {
        match name.as_str() {
            pod_resources::CPU => r.milli_cpu = r.milli_cpu.max(q.milli_value()),
            pod_resources::MEMORY => r.memory = r.memory.max(q.value()),
            pod_resources::EPHEMERAL_STORAGE => {
                r.ephemeral_storage = r.ephemeral_storage.max(q.value())
            }
            n if is_scalar_resource_name(n) => {
                let e = r.scalar_resources.entry(n.to_string()).or_default();
                *e = (*e).max(q.value());
            }
            _ => {}
        }
    }
    r
}

/// The scaled-down pod is the target itself, or a bound pod that now requests less of a
/// resource the target asks for.
fn scale_down_helps(target: &PodInfo, original: &Pod, modified: &Pod) -> bool {
    if uid(modified) == target.uid {
        return true;
    }
    if pod_node_name(modified).is_empty() {
        return false;
    }
    let (o, m) = (max_resource(original), max_resource(modified));
    pod_resources::pod_requests(&target.pod, None)
        .iter()
        .filter(|(_, q)| !q.is_zero())
        .any(|(name, _)| match name.as_str() {
            pod_resources::CPU => o.milli_cpu > m.milli_cpu,
            pod_resources::MEMORY => o.memory > m.memory,
            pod_resources::EPHEMERAL_STORAGE => o.ephemeral_storage > m.ephemeral_storage,
            n => is_scalar_resource_name(n) && o.scalar(n) > m.scalar(n),
        })
}

fn fit_after_node_change(
    pod: &PodInfo,
    old: Option<&super::EventObject>,
    new: Option<&super::EventObject>,
) -> HintResult {
    let (original, modified) = as_nodes(old, new)?;
    let request = pre_filter_resource(pod);
    // An empty node of this shape: would the pod fit at all?
    let fits = modified.is_some_and(|n| {
        Fit::default()
            .fits_request(&request, &NodeInfo::new(Arc::clone(n)))
            .is_empty()
    });
    if !fits {
        return skip_or_queue(false);
    }
    let Some(original) = original else {
        return skip_or_queue(true);
    };
    let modified = required(modified, "node")?;
    skip_or_queue(requested_resources_increased(
        &request,
        &NodeInfo::new(Arc::clone(original)).allocatable,
        &NodeInfo::new(Arc::clone(modified)).allocatable,
    ))
}

/// `haveAnyRequestedResourcesIncreased`: more pods allowed, or more of something the pod
/// requests.
fn requested_resources_increased(req: &Resource, before: &Resource, after: &Resource) -> bool {
    if after.allowed_pod_number > before.allowed_pod_number {
        return true;
    }
    if req.milli_cpu == 0
        && req.memory == 0
        && req.ephemeral_storage == 0
        && req.scalar_resources.is_empty()
    {
        return false;
    }
    if (req.milli_cpu > 0 && after.milli_cpu > before.milli_cpu)
        || (req.memory > 0 && after.memory > before.memory)
        || (req.ephemeral_storage > 0 && after.ephemeral_storage > before.ephemeral_storage)
    {
        return true;
    }
    req.scalar_resources
        .iter()
        .filter(|(_, v)| **v != 0)
        .any(|(name, _)| after.scalar(name) > before.scalar(name))
}

// ---- TaintToleration ----

pub(super) fn taint_toleration(_: &Framework) -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::with_hint(
            R::Node,
            A::ADD | A::UPDATE_NODE_TAINT,
            |_, pod, old, new| {
                let (original, modified) = as_nodes(old, new)?;
                let modified = required(modified, "node")?;
                let tol = tolerations(&pod.pod);
                let untolerated = |n: &Node| {
                    find_untolerated(taints(n), tol, is_no_schedule_or_no_execute).is_some()
                };
                let was = original.is_none_or(|n| untolerated(n));
                skip_or_queue(was && !untolerated(modified))
            },
        ),
        ClusterEventWithHint::with_hint(R::Pod, A::UPDATE_POD_TOLERATION, |_, pod, old, new| {
            let (_, modified) = as_pods(old, new)?;
            skip_or_queue(uid(required(modified, "pod")?) == pod.uid)
        }),
    ]
}

// ---- NodeAffinity ----

/// The scheduler-enforced `addedAffinity` of the profile's NodeAffinity args.
fn added_node_selector(fwk: &Framework) -> Option<NodeSelectorMatcher> {
    match fwk.plugin_args.get(crate::plugins::node_affinity::NAME) {
        Some(PluginArgs::NodeAffinity(a)) => a
            .added_affinity
            .as_ref()
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(NodeSelectorMatcher::new),
        _ => None,
    }
}

fn required_affinity_errors(pod: &Pod) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|ns| NodeSelectorMatcher::new(ns).parse_errors())
        .unwrap_or_default()
}

fn node_selector_matches(pod: &Pod, node: &Node) -> bool {
    let labels = node.metadata.labels.as_ref();
    pod.spec
        .as_ref()
        .and_then(|s| s.node_selector.as_ref())
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

pub(super) fn node_affinity(fwk: &Framework) -> Vec<ClusterEventWithHint> {
    let added = added_node_selector(fwk);
    vec![ClusterEventWithHint::with_hint(
        R::Node,
        A::ADD | A::UPDATE_NODE_LABEL,
        move |_, pod, old, new| {
            let (original, modified) = as_nodes(old, new)?;
            let modified = required(modified, "node")?;
            if added.as_ref().is_some_and(|m| !m.matches_node(modified)) {
                return skip_or_queue(false);
            }
            let required = RequiredNodeAffinity::from_pod(&pod.pod);
            if !required.matches_node(modified) {
                // Terms that did not parse count as an error (Queue) once the nodeSelector
                // matched and no other term did.
                let errs = required_affinity_errors(&pod.pod);
                if !errs.is_empty() && node_selector_matches(&pod.pod, modified) {
                    return Err(errs.join(", "));
                }
                return skip_or_queue(false);
            }
            // Added and matching, or updated from not matching to matching.
            skip_or_queue(original.is_none_or(|o| !required.matches_node(o)))
        },
    )]
}

// ---- NodeUnschedulable ----

pub(super) fn node_unschedulable(_: &Framework) -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::with_hint(
            R::Node,
            A::ADD | A::UPDATE_NODE_TAINT,
            |_, _, old, new| {
                let (original, modified) = as_nodes(old, new)?;
                let modified = required(modified, "node")?;
                skip_or_queue(match original {
                    Some(o) => unschedulable(o) && !unschedulable(modified),
                    None => !unschedulable(modified),
                })
            },
        ),
        ClusterEventWithHint::with_hint(R::Pod, A::UPDATE_POD_TOLERATION, |_, pod, old, new| {
            let (_, modified) = as_pods(old, new)?;
            let modified = required(modified, "pod")?;
            if uid(modified) != pod.uid {
                return skip_or_queue(false);
            }
            let taint = Taint {
                key: TAINT_NODE_UNSCHEDULABLE.to_string(),
                effect: crate::api::taints::EFFECT_NO_SCHEDULE.to_string(),
                ..Default::default()
            };
            skip_or_queue(tolerations_tolerate(tolerations(modified), &taint))
        }),
    ]
}

// ---- NodeName ----

pub(super) fn node_name(_: &Framework) -> Vec<ClusterEventWithHint> {
    vec![ClusterEventWithHint::new(R::Node, A::ADD)]
}

// ---- NodePorts ----

pub(super) fn node_ports(_: &Framework) -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::with_hint(R::Pod, A::DELETE, |_, pod, old, _| {
            let (deleted, _) = as_pods(old, None)?;
            let deleted = required(deleted, "pod")?;
            if pod_node_name(deleted).is_empty() && nominated(deleted).is_empty() {
                return skip_or_queue(false);
            }
            let ports = pod_resources::host_ports(deleted);
            if ports.is_empty() {
                return skip_or_queue(false);
            }
            let mut in_use = HostPortInfo::default();
            for p in &ports {
                in_use.add(&p.ip, &p.protocol, p.port);
            }
            // Queue only when the deleted pod held a port the target wants.
            skip_or_queue(
                pod.host_ports
                    .iter()
                    .any(|p| in_use.check_conflict(&p.ip, &p.protocol, p.port)),
            )
        }),
        ClusterEventWithHint::new(R::Node, A::ADD),
    ]
}
