//! What-if hints (kubestep's own): small changes to an unschedulable pod — a toleration,
//! a lower cpu or memory request, no nodeSelector — each tried by re-running the same
//! scheduling cycle on a copy of the pod. A hint is only given when the re-run confirms it.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::closest::Fact;
use super::{Explainer, Explanation, explain};
use crate::cluster::ClusterState;
use crate::config::KubeSchedulerConfiguration;

/// At most this many taints are tried, so hints stay quick on big clusters.
const MAX_TAINTS: usize = 3;

/// A confirmed hint.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Hint {
    /// E.g. "would fit 2 nodes with toleration gpu=true:NoSchedule".
    pub text: String,
    /// Nodes the changed pod fits that the original did not.
    pub nodes: Vec<String>,
}

/// Hints for `pod`, whose explanation over `cluster` is `base`. Empty when it fits.
pub fn what_if(
    cluster: &ClusterState,
    config: &KubeSchedulerConfiguration,
    pod: &Arc<Pod>,
    base: &Explanation,
) -> Vec<Hint> {
    if base.fits() || base.pre_enqueue.is_some() {
        return Vec::new();
    }
    match Explainer::new(cluster, config, pod) {
        Ok(x) => what_if_with(&x, cluster, config, pod, base),
        Err(_) => Vec::new(),
    }
}

/// As `what_if`, re-running on `explainer` (built for `pod`), so nothing is rebuilt.
pub fn what_if_with(
    explainer: &Explainer,
    cluster: &ClusterState,
    config: &KubeSchedulerConfiguration,
    pod: &Arc<Pod>,
    base: &Explanation,
) -> Vec<Hint> {
    if base.fits() || base.pre_enqueue.is_some() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let fits_before: BTreeSet<&str> = base.feasible.iter().map(String::as_str).collect();
    let newly_fitting = |e: &Explanation| -> Vec<String> {
        e.feasible
            .iter()
            .filter(|n| !fits_before.contains(n.as_str()))
            .cloned()
            .collect()
    };
    let rerun = |p: Pod| explainer.explain(Arc::new(p)).ok();

    for (key, value, effect) in untolerated_taints(base) {
        let mut p = (**pod).clone();
        let spec = p.spec.get_or_insert_with(Default::default);
        spec.tolerations
            .get_or_insert_with(Vec::new)
            .push(Toleration {
                key: Some(key.clone()),
                operator: Some(if value.is_empty() { "Exists" } else { "Equal" }.into()),
                value: (!value.is_empty()).then(|| value.clone()),
                effect: Some(effect.clone()),
                toleration_seconds: None,
            });
        if let Some(e) = rerun(p) {
            let nodes = newly_fitting(&e);
            if !nodes.is_empty() {
                let t = if value.is_empty() {
                    format!("{key}:{effect}")
                } else {
                    format!("{key}={value}:{effect}")
                };
                out.push(Hint {
                    text: format!("would fit {} with toleration {t}", count_nodes(&nodes)),
                    nodes,
                });
            }
        }
    }

    for resource in ["cpu", "memory"] {
        let Some((node, free)) = best_free(base, resource) else {
            continue;
        };
        let Some(p) = with_request(pod, resource, free) else {
            continue;
        };
        if let Some(e) = rerun(p)
            && e.feasible.contains(&node)
        {
            let amount = if resource == "cpu" {
                format!("{free}m")
            } else {
                format!("{}Mi", free / (1024 * 1024))
            };
            out.push(Hint {
                text: format!("would fit {node} with {resource} ≤ {amount}"),
                nodes: newly_fitting(&e),
            });
        }
    }

    let has_selector = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_selector.as_ref())
        .is_some_and(|s| !s.is_empty());
    if has_selector && rejected_by(base, crate::plugins::nodeaffinity::NAME) {
        let mut p = (**pod).clone();
        if let Some(s) = p.spec.as_mut() {
            s.node_selector = None;
        }
        if let Some(e) = rerun(p) {
            let nodes = newly_fitting(&e);
            if !nodes.is_empty() {
                out.push(Hint {
                    text: format!(
                        "would fit {} without spec.nodeSelector",
                        count_nodes(&nodes)
                    ),
                    nodes,
                });
            }
        }
    }
    out.extend(freed_devices(cluster, config, pod, base));
    out
}

/// At most this many nodes are tried with their devices freed.
const MAX_DEVICE_NODES: usize = 3;

/// DynamicResources: for nodes where the matching devices are held by other claims, the
/// pod re-run with those claims deallocated (their status cleared on a copy of the
/// cluster). Claims kubestep itself allocated in a replay are not cluster objects and
/// are not tried.
fn freed_devices(
    cluster: &ClusterState,
    config: &KubeSchedulerConfiguration,
    pod: &Arc<Pod>,
    base: &Explanation,
) -> Vec<Hint> {
    use crate::api::dra::CLAIM;
    let mut out = Vec::new();
    for (node, held) in base.held_devices.iter().take(MAX_DEVICE_NODES) {
        let claims: BTreeSet<&str> = held.iter().map(|(_, c)| c.as_str()).collect();
        let mut copy = cluster.clone();
        let mut changed = false;
        for key in &claims {
            let Some(v) = cluster.listers.custom_object(CLAIM, key) else {
                continue;
            };
            let mut v = (**v).clone();
            if let Some(st) = v.get_mut("status").and_then(|s| s.as_object_mut()) {
                st.remove("allocation");
                st.remove("reservedFor");
                st.remove("devices");
            }
            if let Ok(Some(o)) = crate::cluster::object::from_value(v) {
                let _ = copy.upsert(o);
                changed = true;
            }
        }
        if !changed {
            continue;
        }
        let Ok(e) = explain(&copy, config, pod.clone()) else {
            continue;
        };
        if e.feasible.contains(node) {
            let devices: Vec<&str> = held.iter().map(|(d, _)| d.as_str()).collect();
            out.push(Hint {
                text: format!(
                    "would fit {node} if {} were free (held by claim {})",
                    devices.join(", "),
                    claims.iter().copied().collect::<Vec<_>>().join(", ")
                ),
                nodes: vec![node.clone()],
            });
        }
    }
    out
}

fn count_nodes(nodes: &[String]) -> String {
    match nodes {
        [one] => one.clone(),
        _ => format!("{} nodes", nodes.len()),
    }
}

fn rejected_by(e: &Explanation, plugin: &str) -> bool {
    e.filter.values().any(|s| s.plugin == plugin)
}

/// NoSchedule / NoExecute taints the pod does not tolerate on nodes TaintToleration
/// rejected, most common first: the explanation's own count of them.
fn untolerated_taints(e: &Explanation) -> Vec<(String, String, String)> {
    e.closest
        .iter()
        .filter(|c| c.plugin == crate::plugins::tainttoleration::NAME)
        .flat_map(|c| match &c.fact {
            Fact::Taints { taints, .. } => taints.as_slice(),
            _ => &[],
        })
        .take(MAX_TAINTS)
        .map(|t| (t.key.clone(), t.value.clone(), t.effect.clone()))
        .collect()
}

/// Among nodes NodeResourcesFit rejected for `resource`, the one with the most room left,
/// and that room (millicores for cpu, bytes for memory), as the explanation found it.
fn best_free(e: &Explanation, resource: &str) -> Option<(String, i64)> {
    let reason = format!("Insufficient {resource}");
    e.closest
        .iter()
        .filter(|c| c.plugin == crate::plugins::noderesources::fit::NAME && c.reason == reason)
        .find_map(|c| match &c.fact {
            Fact::Resource {
                most_free, node, ..
            } if *most_free > 0 => Some((node.clone(), *most_free)),
            _ => None,
        })
}

/// The pod with its `resource` request lowered to `total` (millicores or bytes), taken
/// off the containers in order.
fn with_request(pod: &Pod, resource: &str, total: i64) -> Option<Pod> {
    let mut p = pod.clone();
    let containers = &mut p.spec.as_mut()?.containers;
    let value = |q: &Quantity| {
        let v = crate::api::quantity::Quantity::parse(&q.0).ok()?;
        Some(if resource == "cpu" {
            v.milli_value()
        } else {
            v.value()
        })
    };
    let current: i64 = containers
        .iter()
        .filter_map(|c| c.resources.as_ref()?.requests.as_ref()?.get(resource))
        .filter_map(value)
        .sum();
    let mut excess = current - total;
    if excess <= 0 {
        return None;
    }
    for c in containers.iter_mut() {
        let Some(q) = c
            .resources
            .as_mut()
            .and_then(|r| r.requests.as_mut())
            .and_then(|r| r.get_mut(resource))
        else {
            continue;
        };
        let v = value(q).unwrap_or(0);
        let cut = v.min(excess);
        let left = v - cut;
        *q = Quantity(if resource == "cpu" {
            format!("{left}m")
        } else {
            left.to_string()
        });
        excess -= cut;
        if excess == 0 {
            break;
        }
    }
    Some(p)
}
