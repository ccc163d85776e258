//! How close the rejected nodes came. For each reason a Filter plugin gave, the best
//! margin among the nodes that gave it, computed once here from what Filter read (the
//! explanation's snapshot and the cycle's CycleState). The text output prints `summary`
//! and the JSON carries the numbers beside it, so the two can never disagree.

use std::collections::BTreeMap;

use serde::Serialize;

use super::PluginStatus;
use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm};

use crate::api::node_affinity::{NodeSelectorTermMatcher, is_empty_term};
use crate::api::pod_resources::{self, HUGEPAGES_PREFIX};
use crate::api::taints::{is_no_schedule_or_no_execute, tolerations_tolerate};
use crate::framework::hints::access::pod_tolerations;
use crate::framework::{CycleState, NodeInfo, PodInfo, Resource, Snapshot};
use crate::plugins::{nodeaffinity, nodeports, noderesources::fit, tainttoleration};

/// At most this many distinct taints are listed for one reason; the rest are counted.
const MAX_TAINTS_LISTED: usize = 5;

/// One Filter reason and how close its nodes came to passing it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Closest {
    pub plugin: String,
    /// The upstream reason, as in `filter` and the `0/N nodes are available` message.
    pub reason: String,
    /// The nodes whose Filter status carries this reason: the nodes compared.
    pub nodes: usize,
    #[serde(flatten)]
    pub fact: Fact,
    /// The fact in words (what the text output prints).
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Fact {
    /// NodeResourcesFit's `Insufficient <resource>` and `Too many pods`. Amounts are in
    /// the resource's base unit (`unit`): free = allocatable − requested of the node's
    /// NodeInfo (nominated pods Filter may add on top are not counted).
    Resource {
        resource: String,
        unit: &'static str,
        needs: i64,
        most_free: i64,
        /// The node with the most free (the first by name among equals).
        node: String,
        /// The largest allocatable among the compared nodes: below `needs`, no node of
        /// them could hold the pod even empty.
        largest_allocatable: i64,
    },
    /// NodeAffinity's "didn't match Pod's node affinity/selector": each nodeSelector
    /// label and how many compared nodes lack it, and each required node affinity term
    /// (the terms are ORed) with each of its requirements and how many compared nodes
    /// fail it.
    Selector {
        unmet: Vec<LabelCount>,
        terms: Vec<TermCount>,
    },
    /// NodePorts: each host port the pod asks for and how many compared nodes already
    /// have it in use (same protocol, a conflicting IP).
    Ports { ports: Vec<PortCount> },
    /// TaintToleration: the NoSchedule/NoExecute taints the pod does not tolerate on the
    /// compared nodes, most common first (a node with two counts for both).
    Taints {
        taints: Vec<TaintCount>,
        /// Distinct untolerated taints beyond those listed.
        more: usize,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaintCount {
    pub key: String,
    pub value: String,
    pub effect: String,
    pub nodes: usize,
}

/// A host port of the pod and the number of compared nodes where it is taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortCount {
    pub port: i32,
    pub protocol: String,
    pub ip: String,
    pub nodes: usize,
}

/// One requiredDuringScheduling term: how many compared nodes it rules out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TermCount {
    /// Compared nodes the whole term (its requirements ANDed) does not match.
    pub nodes: usize,
    pub requirements: Vec<RequirementCount>,
    /// Why the term can match no node at all (upstream treats an invalid term so).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}

/// A requirement of a term (`matchExpressions` or `matchFields`) as the pod spells it,
/// and the number of compared nodes that fail it on its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequirementCount {
    pub requirement: String,
    pub nodes: usize,
}

/// A nodeSelector label and the number of compared nodes without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LabelCount {
    pub key: String,
    pub value: String,
    pub nodes: usize,
}

impl TaintCount {
    pub fn label(&self) -> String {
        if self.value.is_empty() {
            format!("{}:{}", self.key, self.effect)
        } else {
            format!("{}={}:{}", self.key, self.value, self.effect)
        }
    }
}

/// The facts for every reason in `filter` (node → its Filter status) that one is known
/// for, the reasons given by the most nodes first.
pub fn closest(
    filter: &BTreeMap<String, PluginStatus>,
    snapshot: &Snapshot,
    state: &CycleState,
    pod: &PodInfo,
) -> Vec<Closest> {
    let mut by_reason: BTreeMap<(&str, &str), Vec<&NodeInfo>> = BTreeMap::new();
    for (node, s) in filter {
        let Some(ni) = snapshot.get(node) else {
            continue;
        };
        for r in &s.reasons {
            by_reason
                .entry((s.plugin.as_str(), r.as_str()))
                .or_default()
                .push(ni);
        }
    }
    let fallback;
    let request = match fit::pod_request(state) {
        Some(r) => r,
        None => {
            fallback = fit::pre_filter_resource(pod);
            &fallback
        }
    };
    let mut out: Vec<Closest> = by_reason
        .into_iter()
        .filter_map(|((plugin, reason), nodes)| {
            let fact = match plugin {
                fit::NAME => resource_fact(reason, request, &nodes)?,
                tainttoleration::NAME => taint_fact(pod, &nodes)?,
                nodeports::NAME => ports_fact(pod, &nodes)?,
                nodeaffinity::NAME if reason == nodeaffinity::ERR_REASON_POD => {
                    selector_fact(pod, &nodes)?
                }
                _ => return None,
            };
            let summary = format!("{reason} on {}: {}", count(nodes.len()), words(&fact));
            Some(Closest {
                plugin: plugin.to_string(),
                reason: reason.to_string(),
                nodes: nodes.len(),
                fact,
                summary,
            })
        })
        .collect();
    out.sort_by_key(|c| std::cmp::Reverse(c.nodes));
    out
}

fn count(n: usize) -> String {
    if n == 1 {
        "1 node".into()
    } else {
        format!("{n} nodes")
    }
}

/// The resource a NodeResourcesFit reason is about, and its unit.
fn resource_of(reason: &str) -> Option<(&str, &'static str)> {
    if reason == "Too many pods" {
        return Some((pod_resources::PODS, "pods"));
    }
    let name = reason.strip_prefix("Insufficient ")?;
    let unit = match name {
        pod_resources::CPU => "millicores",
        pod_resources::MEMORY | pod_resources::EPHEMERAL_STORAGE => "bytes",
        n if n.starts_with(HUGEPAGES_PREFIX) => "bytes",
        _ => "units",
    };
    Some((name, unit))
}

fn amounts(resource: &str, r: &Resource) -> i64 {
    match resource {
        pod_resources::CPU => r.milli_cpu,
        pod_resources::MEMORY => r.memory,
        pod_resources::EPHEMERAL_STORAGE => r.ephemeral_storage,
        pod_resources::PODS => r.allowed_pod_number,
        n => r.scalar(n),
    }
}

fn resource_fact(reason: &str, request: &Resource, nodes: &[&NodeInfo]) -> Option<Fact> {
    let (resource, unit) = resource_of(reason)?;
    let (needs, free_on) = if resource == pod_resources::PODS {
        // A pod takes one slot; the node's pods are its count in use.
        (
            1,
            Box::new(|n: &NodeInfo| n.allocatable.allowed_pod_number - n.pods.len() as i64)
                as Box<dyn Fn(&NodeInfo) -> i64>,
        )
    } else {
        (
            amounts(resource, request),
            Box::new(move |n: &NodeInfo| {
                amounts(resource, &n.allocatable) - amounts(resource, &n.requested)
            }) as Box<dyn Fn(&NodeInfo) -> i64>,
        )
    };
    let mut best: Option<(&NodeInfo, i64)> = None;
    let mut largest_allocatable = i64::MIN;
    for &n in nodes {
        let free = free_on(n);
        if best.is_none_or(|(_, f)| free > f) {
            best = Some((n, free));
        }
        largest_allocatable = largest_allocatable.max(amounts(resource, &n.allocatable));
    }
    let (node, most_free) = best?;
    Some(Fact::Resource {
        resource: resource.to_string(),
        unit,
        needs,
        most_free,
        node: node.name().to_string(),
        largest_allocatable,
    })
}

fn taint_fact(pod: &PodInfo, nodes: &[&NodeInfo]) -> Option<Fact> {
    let tolerations = pod_tolerations(pod.pod());
    // In order of first appearance, so equal counts keep a stable, readable order.
    let mut counts: Vec<TaintCount> = Vec::new();
    for n in nodes {
        for t in n.taints() {
            if !is_no_schedule_or_no_execute(t) || tolerations_tolerate(tolerations, t) {
                continue;
            }
            let value = t.value.clone().unwrap_or_default();
            match counts
                .iter_mut()
                .find(|c| c.key == t.key && c.value == value && c.effect == t.effect)
            {
                Some(c) => c.nodes += 1,
                None => counts.push(TaintCount {
                    key: t.key.clone(),
                    value,
                    effect: t.effect.clone(),
                    nodes: 1,
                }),
            }
        }
    }
    if counts.is_empty() {
        return None;
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.nodes));
    let more = counts.len().saturating_sub(MAX_TAINTS_LISTED);
    counts.truncate(MAX_TAINTS_LISTED);
    Some(Fact::Taints {
        taints: counts,
        more,
    })
}

fn ports_fact(pod: &PodInfo, nodes: &[&NodeInfo]) -> Option<Fact> {
    let ports: Vec<PortCount> = pod
        .host_ports
        .iter()
        .map(|p| PortCount {
            port: p.port,
            protocol: p.protocol.clone(),
            ip: p.ip.clone(),
            nodes: nodes
                .iter()
                .filter(|n| n.used_ports.check_conflict(&p.ip, &p.protocol, p.port))
                .count(),
        })
        .collect();
    (!ports.is_empty()).then_some(Fact::Ports { ports })
}

fn selector_fact(pod: &PodInfo, nodes: &[&NodeInfo]) -> Option<Fact> {
    let spec = pod.pod().spec.as_ref()?;
    let unmet: Vec<LabelCount> = spec
        .node_selector
        .iter()
        .flatten()
        .map(|(key, value)| LabelCount {
            key: key.clone(),
            value: value.clone(),
            nodes: nodes
                .iter()
                .filter(|n| n.labels().get(key) != Some(value))
                .count(),
        })
        .collect();
    let terms: Vec<TermCount> = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|ns| {
            ns.node_selector_terms
                .iter()
                .filter(|t| !is_empty_term(t))
                .map(|t| term_fact(t, nodes))
                .collect()
        })
        .unwrap_or_default();
    (!unmet.is_empty() || !terms.is_empty()).then_some(Fact::Selector { unmet, terms })
}

/// Each requirement is matched as a term of its own, by the same matcher Filter uses, so
/// a count here can never disagree with the verdict.
fn term_fact(term: &NodeSelectorTerm, nodes: &[&NodeInfo]) -> TermCount {
    let fails = |m: &NodeSelectorTermMatcher| {
        nodes
            .iter()
            .filter(|n| !m.matches(n.name(), n.labels()))
            .count()
    };
    let whole = NodeSelectorTermMatcher::new(term);
    let alone = |field: bool, r: &NodeSelectorRequirement| {
        let single = vec![r.clone()];
        let t = if field {
            NodeSelectorTerm {
                match_fields: Some(single),
                ..Default::default()
            }
        } else {
            NodeSelectorTerm {
                match_expressions: Some(single),
                ..Default::default()
            }
        };
        RequirementCount {
            requirement: spell(r, field),
            nodes: fails(&NodeSelectorTermMatcher::new(&t)),
        }
    };
    let exprs = term
        .match_expressions
        .iter()
        .flatten()
        .map(|r| alone(false, r));
    let fields = term.match_fields.iter().flatten().map(|r| alone(true, r));
    let invalid = whole.parse_errors();
    TermCount {
        nodes: fails(&whole),
        requirements: exprs.chain(fields).collect(),
        invalid: (!invalid.is_empty()).then(|| invalid.join(", ")),
    }
}

/// A requirement as written in the pod spec: `zone In [a, b]`, `gpu Exists`.
fn spell(r: &NodeSelectorRequirement, field: bool) -> String {
    let values = r.values.as_deref().unwrap_or(&[]);
    let mut s = format!("{} {}", r.key, r.operator);
    if !values.is_empty() || !matches!(r.operator.as_str(), "Exists" | "DoesNotExist") {
        s.push_str(&format!(" [{}]", values.join(", ")));
    }
    if field {
        s.push_str(" (field)");
    }
    s
}

fn selector_words(unmet: &[LabelCount], terms: &[TermCount]) -> String {
    let mut parts = Vec::new();
    let missing: Vec<String> = unmet
        .iter()
        .filter(|l| l.nodes > 0)
        .map(|l| format!("{}={} ({} without it)", l.key, l.value, count(l.nodes)))
        .collect();
    if !missing.is_empty() {
        parts.push(format!("nodeSelector {}", missing.join(", ")));
    }
    let term_words = |t: &TermCount| -> String {
        if let Some(why) = &t.invalid {
            return format!("invalid, matches no node ({why})");
        }
        let failing: Vec<String> = t
            .requirements
            .iter()
            .filter(|r| r.nodes > 0)
            .map(|r| format!("{} (fails on {})", r.requirement, count(r.nodes)))
            .collect();
        if failing.is_empty() {
            "matches every one of them".into()
        } else {
            failing.join(", ")
        }
    };
    match terms {
        [] => {}
        [t] => parts.push(format!("required node affinity: {}", term_words(t))),
        many => {
            let each: Vec<String> = many
                .iter()
                .enumerate()
                .map(|(i, t)| format!("term {}: {}", i + 1, term_words(t)))
                .collect();
            parts.push(format!(
                "required node affinity, no term matches ({})",
                each.join("; ")
            ));
        }
    }
    if parts.is_empty() {
        // Only the scheduler-enforced or a changed node could get here; say what we know.
        "every one of them has the pod's nodeSelector labels".into()
    } else {
        parts.join("; ")
    }
}

fn words(f: &Fact) -> String {
    match f {
        Fact::Resource {
            resource,
            unit,
            needs,
            most_free,
            node,
            largest_allocatable,
        } => {
            let q = |v: i64, round: Round| quantity(v, resource, unit, round);
            if *largest_allocatable <= 0 && *most_free <= 0 {
                // Nothing to compare: no node of them offers the resource at all.
                return format!(
                    "the pod needs {}; none of them has any allocatable",
                    q(*needs, Round::Up)
                );
            }
            let mut s = format!(
                "the pod needs {}; the most free on any of them is {} ({node})",
                q(*needs, Round::Up),
                q(*most_free, Round::Down),
            );
            if largest_allocatable < needs {
                s.push_str(&format!(
                    "; none of them has that much allocatable (the largest: {})",
                    q(*largest_allocatable, Round::Down)
                ));
            }
            s
        }
        Fact::Selector { unmet, terms } => selector_words(unmet, terms),
        Fact::Ports { ports } => {
            let taken: Vec<String> = ports
                .iter()
                .filter(|p| p.nodes > 0)
                .map(|p| {
                    let ip = if p.ip.is_empty() || p.ip == "0.0.0.0" {
                        String::new()
                    } else {
                        format!(" on {}", p.ip)
                    };
                    format!(
                        "{}/{}{ip} (in use on {})",
                        p.port,
                        p.protocol,
                        count(p.nodes)
                    )
                })
                .collect();
            format!("the pod asks for host port {}", taken.join(", "))
        }
        Fact::Taints { taints, more } => {
            let mut parts: Vec<String> = taints
                .iter()
                .map(|t| format!("{} ({})", t.label(), count(t.nodes)))
                .collect();
            if *more > 0 {
                parts.push(format!("{more} other taints"));
            }
            format!("the pod tolerates none of {}", parts.join(", "))
        }
    }
}

/// Which way a shown amount is rounded: a request up and a free amount down, so a shown
/// "needs" is never below a shown "free" that did not fit.
#[derive(Clone, Copy)]
enum Round {
    Up,
    Down,
}

/// An amount as kubectl users read it: cpu in cores (millicores below one core), bytes
/// in Gi/Mi/Ki, pod slots and other resources as counts.
fn quantity(v: i64, resource: &str, unit: &str, round: Round) -> String {
    match unit {
        "millicores" => cpu(v),
        "bytes" => bytes(v, round),
        "pods" => {
            if v == 1 {
                "1 pod slot".into()
            } else {
                format!("{v} pod slots")
            }
        }
        _ => format!("{v} {resource}"),
    }
}

/// Millicores are exact to three decimals of a core, so no rounding is needed.
fn cpu(m: i64) -> String {
    if m.abs() < 1000 {
        return format!("{m}m cpu");
    }
    let cores = if m % 1000 == 0 {
        (m / 1000).to_string()
    } else {
        let s = format!("{}.{:03}", m / 1000, (m % 1000).abs());
        s.trim_end_matches('0').to_string()
    };
    let unit = if m == 1000 { "core" } else { "cores" };
    format!("{cores} {unit}")
}

fn bytes(b: i64, round: Round) -> String {
    if b < 0 {
        // A node over-committed: the magnitude rounds the other way.
        let flip = match round {
            Round::Up => Round::Down,
            Round::Down => Round::Up,
        };
        return format!("-{}", bytes(-b, flip));
    }
    const UNITS: [(&str, i64); 4] = [
        ("Ti", 1 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ];
    let Some(&(suffix, size)) = UNITS.iter().find(|(_, s)| b >= *s) else {
        return format!("{b} bytes");
    };
    // Hundredths of the unit, rounded the asked way.
    let whole = i128::from(b) * 100;
    let size = i128::from(size);
    let h = match round {
        Round::Down => whole / size,
        Round::Up => (whole + size - 1) / size,
    };
    let s = format!("{}.{:02}", h / 100, h % 100);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_in_cores_or_millicores() {
        assert_eq!(cpu(70_000), "70 cores");
        assert_eq!(cpu(31_800), "31.8 cores");
        assert_eq!(cpu(1000), "1 core");
        assert_eq!(cpu(1_250), "1.25 cores");
        assert_eq!(cpu(250), "250m cpu");
        assert_eq!(cpu(-200), "-200m cpu");
    }

    #[test]
    fn bytes_round_so_a_miss_stays_visible() {
        let gi = 1i64 << 30;
        assert_eq!(bytes(64 * gi, Round::Up), "64Gi");
        assert_eq!(bytes(gi + gi / 2, Round::Down), "1.5Gi");
        // One byte short of 1Gi free reads below 1Gi, never "1Gi".
        assert_eq!(bytes(gi - 1, Round::Down), "1023.99Mi");
        assert_eq!(bytes(gi + 1, Round::Up), "1.01Gi");
        assert_eq!(bytes(512, Round::Down), "512 bytes");
        assert_eq!(bytes(-(gi / 2), Round::Down), "-512Mi");
    }
}

#[cfg(test)]
mod cluster_tests {
    use super::*;
    use crate::explain::fixture;

    #[test]
    fn insufficient_cpu_names_the_node_with_the_most_free() {
        let e = fixture::explain(&fixture::cluster(60, 4, true), "2");
        let cpu = e
            .closest
            .iter()
            .find(|c| c.reason == "Insufficient cpu")
            .expect("a cpu fact");
        assert_eq!(cpu.plugin, "NodeResourcesFit");
        // The tainted nodes stopped at TaintToleration: they are not compared.
        assert_eq!(cpu.nodes, 56);
        assert_eq!(
            cpu.fact,
            Fact::Resource {
                resource: "cpu".into(),
                unit: "millicores",
                needs: 2000,
                most_free: 1800,
                node: "n-007".into(),
                largest_allocatable: 4000,
            }
        );
        assert_eq!(
            cpu.summary,
            "Insufficient cpu on 56 nodes: the pod needs 2 cores; the most free on any of them is 1.8 cores (n-007)"
        );
        // The reasons given by the most nodes come first.
        assert_eq!(e.closest[0].reason, "Insufficient cpu");
    }

    #[test]
    fn untolerated_taints_are_named_and_counted() {
        let e = fixture::explain(&fixture::cluster(60, 4, true), "2");
        let t = e
            .closest
            .iter()
            .find(|c| c.plugin == "TaintToleration")
            .expect("a taint fact");
        assert_eq!(t.nodes, 4);
        assert_eq!(
            t.summary,
            "node(s) had untolerated taint(s) on 4 nodes: the pod tolerates none of dedicated=infra:NoSchedule (4 nodes)"
        );
    }

    #[test]
    fn a_request_beyond_every_node_says_so() {
        let e = fixture::explain(&fixture::cluster(10, 0, true), "70");
        let cpu = &e.closest[0];
        assert_eq!(
            cpu.summary,
            "Insufficient cpu on 10 nodes: the pod needs 70 cores; the most free on any of them is 1.8 cores (n-007); none of them has that much allocatable (the largest: 4 cores)"
        );
    }

    #[test]
    fn each_node_selector_label_counts_the_nodes_without_it() {
        let mut pod = fixture::pod("sel", "100m");
        pod.spec.as_mut().unwrap().node_selector = Some(
            [("disktype", "ssd"), ("kubernetes.io/hostname", "n-003")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        let cfg = crate::config::default_configuration();
        let c = fixture::cluster(10, 0, true);
        let e = crate::explain::explain(&c, &cfg, std::sync::Arc::new(pod)).unwrap();
        assert_eq!(e.closest.len(), 1, "{:?}", e.closest);
        assert_eq!(
            e.closest[0].summary,
            "node(s) didn't match Pod's node affinity/selector on 10 nodes: nodeSelector disktype=ssd (10 nodes without it), kubernetes.io/hostname=n-003 (9 nodes without it)"
        );
    }

    #[test]
    fn each_required_affinity_term_and_requirement_counts_the_nodes_it_rules_out() {
        let mut pod = fixture::pod("aff", "100m");
        pod.spec.as_mut().unwrap().affinity = Some(
            serde_json::from_value(serde_json::json!({"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In",
                     "values": ["n-001", "n-002"]},
                    {"key": "gpu", "operator": "Exists"}]},
                {"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["n-009"]}],
                 "matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "NotIn",
                     "values": ["n-009"]}]},
                {"matchExpressions": [{"key": "zone", "operator": "Bogus"}]}
            ]}}}))
            .unwrap(),
        );
        let cfg = crate::config::default_configuration();
        let c = fixture::cluster(10, 0, true);
        let e = crate::explain::explain(&c, &cfg, std::sync::Arc::new(pod)).unwrap();
        assert!(!e.fits());
        assert_eq!(e.closest.len(), 1, "{:?}", e.closest);
        let Fact::Selector { unmet, terms } = &e.closest[0].fact else {
            panic!("{:?}", e.closest[0].fact)
        };
        assert!(unmet.is_empty());
        let counts: Vec<(usize, Vec<usize>)> = terms
            .iter()
            .map(|t| (t.nodes, t.requirements.iter().map(|r| r.nodes).collect()))
            .collect();
        assert_eq!(
            counts,
            vec![(10, vec![8, 10]), (10, vec![1, 9]), (10, vec![10])]
        );
        assert!(terms[2].invalid.as_deref().unwrap().contains("Bogus"));
        assert_eq!(
            e.closest[0].summary,
            "node(s) didn't match Pod's node affinity/selector on 10 nodes: required node affinity, no term matches (\
             term 1: kubernetes.io/hostname In [n-001, n-002] (fails on 8 nodes), gpu Exists (fails on 10 nodes); \
             term 2: kubernetes.io/hostname NotIn [n-009] (fails on 1 node), metadata.name In [n-009] (field) (fails on 9 nodes); \
             term 3: invalid, matches no node (operator: Unsupported value: \"Bogus\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\"))"
        );
        // The JSON carries the same counts beside the words.
        let j = serde_json::to_value(&e.closest[0]).unwrap();
        assert_eq!(j["kind"], "selector");
        assert_eq!(
            j["terms"][1]["requirements"][1]["requirement"],
            "metadata.name In [n-009] (field)"
        );
        assert_eq!(j["terms"][1]["requirements"][1]["nodes"], 9);
    }

    #[test]
    fn a_single_term_beside_a_node_selector_is_named_with_it() {
        let mut pod = fixture::pod("both", "100m");
        let spec = pod.spec.as_mut().unwrap();
        spec.node_selector = Some([("disktype".to_string(), "ssd".to_string())].into());
        spec.affinity = Some(
            serde_json::from_value(serde_json::json!({"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                        "values": ["n-004"]}]}]}}}))
            .unwrap(),
        );
        let cfg = crate::config::default_configuration();
        let c = fixture::cluster(10, 0, true);
        let e = crate::explain::explain(&c, &cfg, std::sync::Arc::new(pod)).unwrap();
        assert_eq!(
            e.closest[0].summary,
            "node(s) didn't match Pod's node affinity/selector on 10 nodes: nodeSelector disktype=ssd (10 nodes without it); required node affinity: kubernetes.io/hostname In [n-004] (fails on 9 nodes)"
        );
    }

    #[test]
    fn a_pod_that_fits_everywhere_has_no_facts() {
        let e = fixture::explain(&fixture::cluster(10, 0, true), "100m");
        assert!(e.fits());
        assert!(e.closest.is_empty());
    }
}
