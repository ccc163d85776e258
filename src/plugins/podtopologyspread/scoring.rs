//! PreScore, Score and NormalizeScore: soft (ScheduleAnyway) constraints. Fewer matching
//! pods in a node's domains is better.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::PodTopologySpread;
use super::common::{
    LABEL_HOSTNAME, PodNodeRequirements, SCHEDULE_ANYWAY, SpreadConstraint,
    count_pods_match_selector, node_has_all_keys, pod_constraints,
};
use crate::framework::plugin::{Handle, MAX_NODE_SCORE, NodeScore, PreScorePlugin, ScorePlugin};
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, StateTree, Status};

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
        // Count over every node, but only for the domains registered above.
        let requirements = PodNodeRequirements::new(pod);
        for node in all {
            let labels = node.labels();
            if require_all && !node_has_all_keys(labels, &constraints) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !requirements.node_included(c, node) {
                    continue;
                }
                let value = labels.get(&c.topology_key).map_or("", String::as_str);
                if let Some(total) = counts[i].get_mut(value) {
                    *total += count_pods_match_selector(&node.pods, &c.selector, &pod.namespace);
                }
            }
        }
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
