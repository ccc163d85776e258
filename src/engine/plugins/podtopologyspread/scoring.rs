//! PreScore, Score and NormalizeScore: soft (ScheduleAnyway) constraints. Fewer matching
//! pods in a node's domains is better.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::PodTopologySpread;
use super::common::{
    LABEL_HOSTNAME, MatchingPerNode, PodNodeRequirements, SCHEDULE_ANYWAY, SpreadConstraint,
    count_pods_match_selector, node_has_all_keys, pod_constraints,
};
use crate::framework::plugin::{Handle, MAX_NODE_SCORE, NodeScore, PreScorePlugin, ScorePlugin};
use crate::framework::snapshot_index::TopologyIndex;
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, Snapshot, StateTree, Status};

pub const PRE_SCORE_STATE_KEY: &str = "PreScorePodTopologySpread";
const INVALID_SCORE: i64 = -1;

#[derive(Debug, Clone)]
pub struct PreScoreState {
    pub constraints: Arc<Vec<SpreadConstraint>>,
    /// Filtered nodes missing some topology key (only when all keys are required).
    pub ignored_nodes: Arc<HashSet<String>>,
    /// Per constraint: topology value → matching pods, for the domains of the filtered
    /// nodes (hostname constraints are counted per node at Score instead).
    pub topology_value_to_pod_counts: Arc<Vec<HashMap<String, i64>>>,
    /// Per constraint: ln(number of domains + 2).
    pub topology_normalizing_weight: Arc<Vec<f64>>,
    pub namespace: Arc<str>,
}

impl RenderState for PreScoreState {
    fn render(&self) -> StateTree {
        let constraints = self.constraints.iter().enumerate().map(|(i, c)| {
            let mut children = vec![StateTree::kv(
                "topologyNormalizingWeight",
                self.topology_normalizing_weight
                    .get(i)
                    .copied()
                    .unwrap_or_default(),
            )];
            if c.topology_key == LABEL_HOSTNAME {
                children.push(StateTree::leaf("counts: per node, at Score"));
            } else if let Some(m) = self.topology_value_to_pod_counts.get(i) {
                let mut v: Vec<(&String, &i64)> = m.iter().collect();
                v.sort();
                children.push(StateTree::list(
                    "topologyValueToPodCounts",
                    v.into_iter().map(|(k, n)| format!("{k:?}: {n}")),
                ));
            }
            StateTree::node(format!("[{i}] {}", c.describe()), children)
        });
        let mut ignored: Vec<&String> = self.ignored_nodes.iter().collect();
        ignored.sort();
        StateTree::node(
            "preScoreState",
            vec![
                StateTree::list("constraints (ScheduleAnyway)", constraints),
                StateTree::list("ignoredNodes", ignored.into_iter().cloned()),
            ],
        )
    }
}

fn get_pre_score_state(state: &CycleState) -> Result<&PreScoreState, Status> {
    state
        .read::<PreScoreState>(PRE_SCORE_STATE_KEY)
        .map_err(|e| {
            Status::error(format!(
                "error reading {PRE_SCORE_STATE_KEY:?} from cycleState: {e}"
            ))
        })
}

/// `ln(size + 2)`: the weight of a topology with `size` domains, so that counts in small
/// topologies are not watered down by big ones.
fn topology_normalizing_weight(size: usize) -> f64 {
    (size as f64 + 2.0).ln()
}

fn score_for_count(count: i64, max_skew: i32, weight: f64) -> f64 {
    count as f64 * weight + f64::from(max_skew.wrapping_sub(1))
}

impl PreScorePlugin for PodTopologySpread {
    fn pre_score(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        filtered: &[&NodeInfo],
    ) -> Status {
        let all = h.snapshot.list();
        if all.is_empty() {
            return Status::skip();
        }
        // Nodes must carry every topology key unless the system defaults apply, so that
        // nodes without a zone still get hostname spreading.
        let require_all = !pod_constraints(pod).is_empty() || !self.system_defaulted;
        let constraints = match self.constraints_for(h.listers, pod, SCHEDULE_ANYWAY, "soft") {
            Ok(c) => c,
            Err(e) => return Status::error(format!("calculating preScoreState: {e}")),
        };
        if constraints.is_empty() {
            return Status::skip();
        }
        let mut counts: Vec<HashMap<String, i64>> = vec![HashMap::new(); constraints.len()];
        let mut ignored = HashSet::new();
        for node in filtered {
            let labels = node.labels();
            if require_all && !node_has_all_keys(labels, &constraints) {
                ignored.insert(node.name().to_string());
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if c.topology_key == LABEL_HOSTNAME {
                    continue;
                }
                let value = labels.get(&c.topology_key).map_or("", String::as_str);
                if !counts[i].contains_key(value) {
                    counts[i].insert(value.to_string(), 0);
                }
            }
        }
        let weights: Vec<f64> = constraints
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let size = if c.topology_key == LABEL_HOSTNAME {
                    filtered.len().saturating_sub(ignored.len())
                } else {
                    counts[i].len()
                };
                topology_normalizing_weight(size)
            })
            .collect();
        // Count over every node, but only for the domains registered above. Matching
        // pods per node come from the snapshot's pod groups, once per distinct selector
        // (as PreFilter counts): a ReplicaSet's pods are matched once, not one by one.
        let requirements = PodNodeRequirements::new(pod);
        let matching = MatchingPerNode::count(
            &h.snapshot.pod_groups(),
            all.len(),
            &constraints,
            &pod.namespace,
        );
        count_all_nodes(
            h.snapshot,
            &constraints,
            &requirements,
            &matching,
            require_all,
            &mut counts,
        );
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                constraints: Arc::new(constraints),
                ignored_nodes: Arc::new(ignored),
                topology_value_to_pod_counts: Arc::new(counts),
                topology_normalizing_weight: Arc::new(weights),
                namespace: Arc::from(pod.namespace.as_str()),
            },
        );
        Status::success()
    }
}

/// Where a domain's total is kept: its value id, with the `""` domain (an empty value, or
/// upstream's reading of a missing label) past the ids when no node has `""` as its value.
/// `None`: no node has this value.
fn slot_of(t: &TopologyIndex, value: &str) -> Option<usize> {
    match t.id(value) {
        Some(id) => Some(id),
        None if value.is_empty() => Some(t.len()),
        None => None,
    }
}

/// Adds to each domain registered in `counts` the matching pods of every node of the
/// snapshot in it. This walks all nodes in every cycle, so nodes are read by position
/// in the snapshot's topology indexes (built from the same node list) rather than by
/// label lookups and string hashes. A registered value no node has keeps its 0, as
/// upstream's would.
fn count_all_nodes(
    snapshot: &Snapshot,
    constraints: &[SpreadConstraint],
    requirements: &PodNodeRequirements,
    matching: &MatchingPerNode,
    require_all: bool,
    counts: &mut [HashMap<String, i64>],
) {
    let all = snapshot.list();
    let topology: Vec<_> = constraints
        .iter()
        .map(|c| snapshot.topology(&c.topology_key))
        .collect();
    debug_assert!(topology.iter().all(|t| t.num_nodes() == all.len()));
    let everywhere: Vec<bool> = constraints
        .iter()
        .map(|c| requirements.includes_every_node(c))
        .collect();
    let missing: Vec<usize> = topology
        .iter()
        .map(|t| slot_of(t, "").unwrap_or(t.len()))
        .collect();
    // Per constraint and slot: the total where a domain is registered (hostname
    // constraints register none: Score counts them node by node).
    let mut totals: Vec<Vec<Option<i64>>> = topology
        .iter()
        .zip(counts.iter())
        .map(|(t, registered)| {
            let mut slots = vec![None; t.len() + 1];
            for slot in registered.keys().filter_map(|v| slot_of(t, v)) {
                slots[slot] = Some(0);
            }
            slots
        })
        .collect();
    for (pos, node) in all.iter().enumerate() {
        if require_all && topology.iter().any(|t| t.node_value(pos).is_none()) {
            continue;
        }
        for (i, c) in constraints.iter().enumerate() {
            let slot = topology[i].node_value(pos).unwrap_or(missing[i]);
            let Some(total) = totals[i][slot].as_mut() else {
                continue;
            };
            if everywhere[i] || requirements.node_included(c, node) {
                *total += matching.matching(i, pos);
            }
        }
    }
    for ((registered, slots), t) in counts.iter_mut().zip(&totals).zip(&topology) {
        for (value, total) in registered.iter_mut() {
            *total += slot_of(t, value).and_then(|s| slots[s]).unwrap_or(0);
        }
    }
}

impl ScorePlugin for PodTopologySpread {
    fn score(
        &self,
        _h: &Handle,
        state: &CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
    ) -> (i64, Status) {
        let s = match get_pre_score_state(state) {
            Ok(s) => s,
            Err(e) => return (0, e),
        };
        if s.ignored_nodes.contains(node.name()) {
            return (0, Status::success());
        }
        let labels = node.labels();
        let mut score = 0.0f64;
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = labels.get(&c.topology_key) else {
                continue;
            };
            let count = if c.topology_key == LABEL_HOSTNAME {
                count_pods_match_selector(&node.pods, &c.selector, &s.namespace)
            } else {
                s.topology_value_to_pod_counts
                    .get(i)
                    .and_then(|m| m.get(value.as_str()))
                    .copied()
                    .unwrap_or(0)
            };
            let weight = s
                .topology_normalizing_weight
                .get(i)
                .copied()
                .unwrap_or_default();
            score += score_for_count(count, c.max_skew, weight);
        }
        // math.Round: halves away from zero, as f64::round.
        (score.round() as i64, Status::success())
    }

    fn has_normalize(&self) -> bool {
        true
    }

    fn normalize_score(
        &self,
        _h: &Handle,
        state: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore],
    ) -> Status {
        let s = match get_pre_score_state(state) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let mut min = i64::MAX;
        let mut max = 0i64;
        for ns in scores.iter_mut() {
            if s.ignored_nodes.contains(ns.name) {
                ns.score = INVALID_SCORE;
                continue;
            }
            min = min.min(ns.score);
            max = max.max(ns.score);
        }
        for ns in scores.iter_mut() {
            if ns.score == INVALID_SCORE {
                ns.score = 0;
                continue;
            }
            if max == 0 {
                ns.score = MAX_NODE_SCORE;
                continue;
            }
            ns.score = MAX_NODE_SCORE
                .wrapping_mul(max.wrapping_add(min).wrapping_sub(ns.score))
                .wrapping_div(max);
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::framework::listers::Listers;
    use crate::plugins::conformance_cases::{bound_pod, cluster, labelled_node};
    use crate::plugins::podtopologyspread::common::LABEL_TOPOLOGY_ZONE;
    use crate::plugins::testing::{Env, pod};
    use serde_json::{Value, json};

    fn web(name: &str, node: &str) -> Value {
        bound_pod(name, "default", node, json!({"app": "web"}), json!({}))
    }

    /// PreScore over `filtered`, then Score and NormalizeScore on those nodes.
    fn run(
        env: &Env,
        pl: &PodTopologySpread,
        p: &PodInfo,
        filtered: &[&str],
    ) -> (Status, Vec<i64>, Vec<i64>) {
        let h = env.handle();
        let nodes: Vec<&NodeInfo> = filtered
            .iter()
            .map(|n| env.snapshot.get(n).unwrap())
            .collect();
        let mut state = CycleState::new();
        let s = pl.pre_score(&h, &mut state, p, &nodes);
        if !s.is_success() {
            return (s, vec![], vec![]);
        }
        let raw: Vec<i64> = nodes
            .iter()
            .map(|n| {
                let (v, st) = pl.score(&h, &state, p, n);
                assert!(st.is_success());
                v
            })
            .collect();
        let mut scores: Vec<NodeScore> = nodes
            .iter()
            .zip(&raw)
            .map(|(n, &score)| NodeScore {
                name: n.name(),
                score,
            })
            .collect();
        assert!(pl.normalize_score(&h, &state, p, &mut scores).is_success());
        (s, raw, scores.iter().map(|s| s.score).collect())
    }

    fn explicit_cluster() -> Env {
        let host = |n: &str, zone: Option<&str>| {
            let mut l = json!({LABEL_HOSTNAME: n});
            if let Some(z) = zone {
                l["zone"] = json!(z);
            }
            labelled_node(n, l)
        };
        cluster(
            vec![
                host("n1", Some("a")),
                host("n2", Some("a")),
                host("n3", Some("b")),
                host("n4", Some("c")),
                host("n5", None),
            ],
            vec![web("w1", "n1"), web("w2", "n1"), web("w3", "n3")],
            Listers::default(),
        )
    }

    fn soft_pod() -> std::sync::Arc<PodInfo> {
        let c = |key: &str| {
            json!({"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "web"}}})
        };
        pod(json!({"metadata": {"name": "in", "labels": {"app": "web"}},
            "spec": {"containers": [], "topologySpreadConstraints": [c("zone"), c(LABEL_HOSTNAME)]}}))
    }

    #[test]
    fn explicit_constraints_ignore_nodes_missing_keys() {
        let env = explicit_cluster();
        let (s, raw, norm) = run(
            &env,
            &PodTopologySpread::default(),
            &soft_pod(),
            &["n1", "n2", "n3", "n4", "n5"],
        );
        assert!(s.is_success());
        // zone weight ln(3+2), hostname weight ln(5-1+2); n1: 2*ln5 + 2*ln6 = 6.80.
        assert_eq!(raw, [7, 3, 3, 0, 0]);
        // 100*(max+min-s)/max over non-ignored nodes, ignored n5 gets 0.
        assert_eq!(norm, [0, 57, 57, 100, 0]);
    }

    #[test]
    fn only_filtered_nodes_register_domains_but_all_nodes_count() {
        let env = explicit_cluster();
        let (_, raw, norm) = run(
            &env,
            &PodTopologySpread::default(),
            &soft_pod(),
            &["n1", "n3"],
        );
        // Two zones and two hosts: both weights ln(4).
        assert_eq!(raw, [6, 3]);
        assert_eq!(norm, [50, 100]);
    }

    #[test]
    fn system_defaults_score_nodes_without_a_zone() {
        let listers = super::super::common::web_service_listers();
        let node = |n: &str, zone: Option<&str>| {
            let mut l = json!({LABEL_HOSTNAME: n});
            if let Some(z) = zone {
                l[LABEL_TOPOLOGY_ZONE] = json!(z);
            }
            labelled_node(n, l)
        };
        let env = cluster(
            vec![
                node("m1", Some("z1")),
                node("m2", Some("z1")),
                node("m3", None),
            ],
            vec![web("w1", "m1"), web("w2", "m3"), web("w3", "m3")],
            listers,
        );
        let p = pod(
            json!({"metadata": {"name": "in", "labels": {"app": "web"}}, "spec": {"containers": []}}),
        );
        let pl = PodTopologySpread::default();
        let (s, raw, norm) = run(&env, &pl, &p, &["m1", "m2", "m3"]);
        assert!(s.is_success());
        // hostname: ln(5), maxSkew 3; zone: domains {z1, ""} → ln(4), maxSkew 5.
        // m1: 1*ln5+2 + 1*ln4+4 = 9.0; m2: 2 + 5.39 = 7.4; m3 (no zone): 2*ln5+2 = 5.2.
        assert_eq!(raw, [9, 7, 5]);
        assert_eq!(norm, [55, 77, 100]);
        // The same with List defaulting: every key is required, m3 is ignored.
        let list =
            PodTopologySpread::new(super::super::common::system_default_constraints(), false);
        let (_, raw, norm) = run(&env, &list, &p, &["m1", "m2", "m3"]);
        // hostname: ln(2+2); zone {z1}: ln(3); m1: ln4+2 + ln3+4 = 8.5, m2: 2 + ln3+4 = 7.1.
        assert_eq!(raw, [8, 7, 0]);
        assert_eq!(norm, [87, 100, 0]);
        // A pod nothing selects has no default constraints.
        let lone = pod(
            json!({"metadata": {"name": "l", "labels": {"app": "x"}}, "spec": {"containers": []}}),
        );
        assert!(run(&env, &pl, &lone, &["m1"]).0.is_skip());
    }

    /// The counts PreScore leaves for `filtered`: per constraint, value → pods.
    fn pre_score_counts(
        env: &Env,
        pl: &PodTopologySpread,
        p: &PodInfo,
        filtered: &[&str],
    ) -> Vec<Vec<(String, i64)>> {
        let nodes: Vec<&NodeInfo> = filtered
            .iter()
            .map(|n| env.snapshot.get(n).unwrap())
            .collect();
        let mut state = CycleState::new();
        assert!(pl.pre_score(&env.handle(), &mut state, p, &nodes).is_success());
        let s = get_pre_score_state(&state).unwrap();
        s.topology_value_to_pod_counts
            .iter()
            .map(|m| {
                let mut v: Vec<(String, i64)> = m.iter().map(|(k, n)| (k.clone(), *n)).collect();
                v.sort();
                v
            })
            .collect()
    }

    #[test]
    fn a_missing_key_and_an_empty_value_are_one_domain_and_excluded_nodes_do_not_count() {
        let listers = super::super::common::web_service_listers();
        let node = |n: &str, zone: Option<&str>, disk: &str| {
            let mut l = json!({LABEL_HOSTNAME: n, "disk": disk});
            if let Some(z) = zone {
                l[LABEL_TOPOLOGY_ZONE] = json!(z);
            }
            labelled_node(n, l)
        };
        let env = cluster(
            vec![
                node("m1", Some("z1"), "ssd"),
                node("m2", Some(""), "ssd"),
                node("m3", None, "ssd"),
                node("m4", None, "hdd"),
            ],
            vec![
                web("w1", "m1"),
                web("w2", "m2"),
                web("w3", "m3"),
                web("w4", "m4"),
                web("w5", "m4"),
            ],
            listers,
        );
        let pl = PodTopologySpread::default();
        let spec = |selector: Value| {
            pod(json!({"metadata": {"name": "in", "labels": {"app": "web"}},
                "spec": {"containers": [], "nodeSelector": selector}}))
        };
        // Upstream reads a missing zone label as "": m2 (zone "") and m3 and m4 (no zone)
        // are one domain. The default constraints honor node affinity, so with the pod's
        // nodeSelector disk=ssd m4's two pods count nowhere. Only m1 and m2 passed
        // Filter, yet every node counts for their domains.
        let zone = |c: &[Vec<(String, i64)>]| c[1].clone();
        let ssd = pre_score_counts(&env, &pl, &spec(json!({"disk": "ssd"})), &["m1", "m2"]);
        assert_eq!(zone(&ssd), [("".to_string(), 2), ("z1".to_string(), 1)]);
        let any = pre_score_counts(&env, &pl, &spec(json!({})), &["m1", "m2"]);
        assert_eq!(zone(&any), [("".to_string(), 4), ("z1".to_string(), 1)]);
        // Hostname constraints leave their counting to Score.
        assert!(any[0].is_empty());
    }

    #[test]
    fn all_zero_scores_normalize_to_max() {
        let env = explicit_cluster();
        let p = pod(json!({"metadata": {"name": "in", "labels": {"app": "web"}},
            "spec": {"containers": [], "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "none"}}}]}}));
        let (_, raw, norm) = run(&env, &PodTopologySpread::default(), &p, &["n2", "n4", "n5"]);
        assert_eq!(raw, [0, 0, 0]);
        assert_eq!(norm, [100, 100, 0]);
    }

    #[test]
    fn skips_and_errors() {
        let pl = PodTopologySpread::default();
        let empty = Env::new(Default::default(), Listers::default());
        assert!(run(&empty, &pl, &soft_pod(), &[]).0.is_skip());
        let env = explicit_cluster();
        let hard_only = pod(json!({"metadata": {"name": "in", "labels": {"app": "web"}},
            "spec": {"containers": [], "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]}}));
        assert!(run(&env, &pl, &hard_only, &["n1"]).0.is_skip());
        let bad = pod(json!({"metadata": {"name": "in"},
            "spec": {"containers": [], "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}]}}));
        let (s, _, _) = run(&env, &pl, &bad, &["n1"]);
        assert_eq!(s.code(), Code::Error);
        assert!(s.message().starts_with(
            "calculating preScoreState: obtaining pod's soft topology spread constraints: "
        ));
        let h = env.handle();
        let (_, s) = pl.score(&h, &CycleState::new(), &bad, &env.snapshot.list()[0]);
        assert_eq!(
            s.message(),
            "error reading \"PreScorePodTopologySpread\" from cycleState: not found"
        );
    }
}
