//! PreFilter, its AddPod / RemovePod extensions, and Filter: hard (DoNotSchedule)
//! constraints.

use std::collections::HashMap;
use std::sync::Arc;

use super::common::{
    PodNodeRequirements, SpreadConstraint, count_pods_match_selector, node_has_all_keys,
};
use super::{ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH, PodTopologySpread};
use crate::framework::plugin::{
    FilterPlugin, Handle, PreFilterExtensions, PreFilterPlugin, PreFilterResult,
};
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, StateTree, Status};

pub const PRE_FILTER_STATE_KEY: &str = "PreFilterPodTopologySpread";

/// Upstream starts both critical paths at MaxInt32.
const CRITICAL_PATH_UNSET: i64 = i32::MAX as i64;

/// One critical path: a topology value and its number of matching pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriticalPath {
    pub topology_value: String,
    pub match_num: i64,
}

/// The two domains with the fewest matching pods, as upstream keeps them: `[0]` always holds
/// the minimum; `[1]` is at least that but, after AddPod / RemovePod, not necessarily the
/// second smallest (enough because preemption only changes one node at a time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriticalPaths(pub [CriticalPath; 2]);

impl Default for CriticalPaths {
    fn default() -> Self {
        let unset = || CriticalPath {
            topology_value: String::new(),
            match_num: CRITICAL_PATH_UNSET,
        };
        CriticalPaths([unset(), unset()])
    }
}

impl CriticalPaths {
    pub fn update(&mut self, value: &str, num: i64) {
        let p = &mut self.0;
        let existing = if value == p[0].topology_value {
            Some(0)
        } else if value == p[1].topology_value {
            Some(1)
        } else {
            None
        };
        match existing {
            Some(i) => {
                p[i].match_num = num;
                if p[0].match_num > p[1].match_num {
                    p.swap(0, 1);
                }
            }
            None => {
                if num < p[0].match_num {
                    p[1] = p[0].clone();
                    p[0] = CriticalPath {
                        topology_value: value.to_string(),
                        match_num: num,
                    };
                } else if num < p[1].match_num {
                    p[1] = CriticalPath {
                        topology_value: value.to_string(),
                        match_num: num,
                    };
                }
            }
        }
    }
}

/// What PreFilter computed for the hard constraints.
#[derive(Debug, Clone)]
pub struct PreFilterState {
    /// Shared between clones: they never change within a cycle.
    pub constraints: Arc<Vec<SpreadConstraint>>,
    /// Whether the incoming pod's own labels match each constraint's selector.
    pub self_match: Arc<Vec<bool>>,
    pub requirements: Arc<PodNodeRequirements>,
    pub namespace: Arc<str>,
    /// Per constraint.
    pub critical_paths: Vec<CriticalPaths>,
    /// Per constraint: topology value → matching pods in that domain.
    pub tp_value_to_match_num: Vec<HashMap<String, i64>>,
}

impl PreFilterState {
    /// The global minimum for the skew: the smallest domain count, or 0 when there are
    /// fewer domains than `minDomains`.
    pub fn min_match_num(&self, i: usize, min_domains: i32) -> i64 {
        let domains = self.tp_value_to_match_num.get(i).map_or(0, HashMap::len);
        if (domains as i64) < i64::from(min_domains) {
            return 0;
        }
        self.critical_paths
            .get(i)
            .map_or(CRITICAL_PATH_UNSET, |p| p.0[0].match_num)
    }

    fn update_with_pod(&mut self, updated: &PodInfo, node: &NodeInfo, delta: i64) {
        if updated.namespace.as_str() != &*self.namespace {
            return;
        }
        let labels = node.labels();
        if !node_has_all_keys(labels, &self.constraints) {
            return;
        }
        for (i, c) in self.constraints.iter().enumerate() {
            if !c.selector.matches(updated.labels()) || !self.requirements.node_included(c, node) {
                continue;
            }
            let value = labels.get(&c.topology_key).map_or("", String::as_str);
            let counts = &mut self.tp_value_to_match_num[i];
            let n = match counts.get_mut(value) {
                Some(n) => {
                    *n += delta;
                    *n
                }
                None => {
                    counts.insert(value.to_string(), delta);
                    delta
                }
            };
            self.critical_paths[i].update(value, n);
        }
    }
}

fn sorted_counts(m: &HashMap<String, i64>) -> Vec<(&str, i64)> {
    let mut v: Vec<(&str, i64)> = m.iter().map(|(k, n)| (k.as_str(), *n)).collect();
    v.sort();
    v
}

impl RenderState for PreFilterState {
    fn render(&self) -> StateTree {
        let constraints = self.constraints.iter().enumerate().map(|(i, c)| {
            let paths = self.critical_paths.get(i).map(|p| {
                StateTree::list(
                    "criticalPaths",
                    p.0.iter()
                        .filter(|p| p.match_num != CRITICAL_PATH_UNSET)
                        .map(|p| format!("{:?}: {}", p.topology_value, p.match_num)),
                )
            });
            let counts = self.tp_value_to_match_num.get(i).map(|m| {
                StateTree::list(
                    "tpValueToMatchNum",
                    sorted_counts(m)
                        .into_iter()
                        .map(|(v, n)| format!("{v:?}: {n}")),
                )
            });
            let mut children = vec![StateTree::kv(
                "selfMatch",
                self.self_match.get(i).copied().unwrap_or(false),
            )];
            children.extend(paths);
            children.extend(counts);
            StateTree::node(format!("[{i}] {}", c.describe()), children)
        });
        StateTree::list("constraints (DoNotSchedule)", constraints)
    }
}

pub(super) fn get_pre_filter_state(state: &CycleState) -> Result<&PreFilterState, Status> {
    state
        .read::<PreFilterState>(PRE_FILTER_STATE_KEY)
        .map_err(|e| {
            Status::error(format!(
                "reading {PRE_FILTER_STATE_KEY:?} from cycleState: {e}"
            ))
        })
}

fn get_pre_filter_state_mut(state: &mut CycleState) -> Result<&mut PreFilterState, Status> {
    state
        .read_mut::<PreFilterState>(PRE_FILTER_STATE_KEY)
        .map_err(|e| {
            Status::error(format!(
                "reading {PRE_FILTER_STATE_KEY:?} from cycleState: {e}"
            ))
        })
}

impl PodTopologySpread {
    /// Counts matching pods per domain over every node that has all topology keys and
    /// passes each constraint's inclusion policies. `None` when the pod has no hard
    /// constraints.
    fn cal_pre_filter_state(
        &self,
        h: &Handle,
        pod: &PodInfo,
    ) -> Result<Option<PreFilterState>, String> {
        let constraints = self
            .constraints_for(h.listers, pod, super::common::DO_NOT_SCHEDULE, "hard")
            .map_err(|e| format!("get constraints from pod: {e}"))?;
        if constraints.is_empty() {
            return Ok(None);
        }
        let requirements = PodNodeRequirements::new(pod);
        let mut counts: Vec<HashMap<String, i64>> = vec![HashMap::new(); constraints.len()];
        for node in h.snapshot.list() {
            let labels = node.labels();
            if !node_has_all_keys(labels, &constraints) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !requirements.node_included(c, node) {
                    continue;
                }
                let value = labels.get(&c.topology_key).map_or("", String::as_str);
                let n = count_pods_match_selector(&node.pods, &c.selector, &pod.namespace);
                match counts[i].get_mut(value) {
                    Some(total) => *total += n,
                    None => {
                        counts[i].insert(value.to_string(), n);
                    }
                }
            }
        }
        // Upstream walks a Go map (random order); the minimum does not depend on the
        // order, and we walk the values sorted so that ties always pick the same domains.
        let critical_paths = counts
            .iter()
            .map(|m| {
                let mut p = CriticalPaths::default();
                for (value, n) in sorted_counts(m) {
                    p.update(value, n);
                }
                p
            })
            .collect();
        let self_match = constraints
            .iter()
            .map(|c| c.selector.matches(pod.labels()))
            .collect();
        Ok(Some(PreFilterState {
            constraints: Arc::new(constraints),
            self_match: Arc::new(self_match),
            requirements: Arc::new(requirements),
            namespace: Arc::from(pod.namespace.as_str()),
            critical_paths,
            tp_value_to_match_num: counts,
        }))
    }
}

impl PreFilterPlugin for PodTopologySpread {
    fn pre_filter(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (Option<PreFilterResult>, Status) {
        match self.cal_pre_filter_state(h, pod) {
            Err(e) => (None, Status::error(e)),
            Ok(None) => (None, Status::skip()),
            Ok(Some(s)) => {
                state.write(PRE_FILTER_STATE_KEY, s);
                (None, Status::success())
            }
        }
    }

    fn extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for PodTopologySpread {
    fn add_pod(
        &self,
        _h: &Handle,
        state: &mut CycleState,
        _pod: &PodInfo,
        added: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        match get_pre_filter_state_mut(state) {
            Ok(s) => {
                s.update_with_pod(added, node, 1);
                Status::success()
            }
            Err(e) => e,
        }
    }

    fn remove_pod(
        &self,
        _h: &Handle,
        state: &mut CycleState,
        _pod: &PodInfo,
        removed: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        match get_pre_filter_state_mut(state) {
            Ok(s) => {
                s.update_with_pod(removed, node, -1);
                Status::success()
            }
            Err(e) => e,
        }
    }
}

impl FilterPlugin for PodTopologySpread {
    fn filter(&self, _h: &Handle, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let s = match get_pre_filter_state(state) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let labels = node.labels();
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = labels.get(&c.topology_key) else {
                return Status::unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH);
            };
            let min_match = s.min_match_num(i, c.min_domains);
            let self_match = i64::from(s.self_match.get(i).copied().unwrap_or(false));
            let match_num = s
                .tp_value_to_match_num
                .get(i)
                .and_then(|m| m.get(value.as_str()))
                .copied()
                .unwrap_or(0);
            let skew = match_num + self_match - min_match;
            if skew > i64::from(c.max_skew) {
                return Status::unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH);
            }
        }
        Status::success()
    }
}
