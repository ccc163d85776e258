//! PreFilter, its AddPod / RemovePod extensions, and Filter: hard (DoNotSchedule)
//! constraints.

use std::sync::Arc;

use smallvec::SmallVec;

use super::common::{
    DomainCounts, MatchingPerNode, PodNodeRequirements, SpreadConstraint, node_has_all_keys,
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
    pub tp_value_to_match_num: Vec<DomainCounts>,
}

impl PreFilterState {
    /// The global minimum for the skew: the smallest domain count, or 0 when there are
    /// fewer domains than `minDomains`.
    pub fn min_match_num(&self, i: usize, min_domains: i32) -> i64 {
        let domains = self
            .tp_value_to_match_num
            .get(i)
            .map_or(0, DomainCounts::len);
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
        let per_constraint = self
            .constraints
            .iter()
            .zip(self.tp_value_to_match_num.iter_mut())
            .zip(self.critical_paths.iter_mut());
        for ((c, counts), paths) in per_constraint {
            if !c.selector.matches(updated.labels()) || !self.requirements.node_included(c, node) {
                continue;
            }
            let value = labels.get(&c.topology_key).map_or("", String::as_str);
            let n = counts.add(value, delta);
            paths.update(value, n);
        }
    }
}

fn sorted_counts(m: &DomainCounts) -> Vec<(&str, i64)> {
    m.sorted()
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
        let nodes = h.snapshot.list();
        let topology: Vec<_> = constraints
            .iter()
            .map(|c| h.snapshot.topology(&c.topology_key))
            .collect();
        let matching = MatchingPerNode::count(
            &h.snapshot.pod_groups(),
            nodes.len(),
            &constraints,
            &pod.namespace,
        );
        let everywhere: Vec<bool> = constraints
            .iter()
            .map(|c| requirements.includes_every_node(c))
            .collect();
        let mut counts: Vec<DomainCounts> = topology
            .iter()
            .map(|t| DomainCounts::with_topology(t.clone()))
            .collect();
        let mut ids: SmallVec<[usize; 4]> = SmallVec::new();
        'nodes: for (pos, node) in nodes.iter().enumerate() {
            // Nodes without every topology key count for no constraint.
            ids.clear();
            for t in &topology {
                match t.node_value(pos) {
                    Some(id) => ids.push(id),
                    None => continue 'nodes,
                }
            }
            for (i, c) in constraints.iter().enumerate() {
                if !everywhere[i] && !requirements.node_included(c, node) {
                    continue;
                }
                counts[i].add_id(ids[i], matching.matching(i, pos));
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
    fn filter(&self, h: &Handle, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let s = match get_pre_filter_state(state) {
            Ok(s) => s,
            Err(e) => return e,
        };
        for (i, c) in s.constraints.iter().enumerate() {
            let counts = s.tp_value_to_match_num.get(i);
            // The node's value id when the counts' index knows this node, else its label.
            let known = counts
                .and_then(DomainCounts::topology)
                .and_then(|t| t.value_of(h.snapshot, node));
            let match_num = match known {
                Some(Some(id)) => counts.and_then(|m| m.get_id(id)).unwrap_or(0),
                Some(None) => return Status::unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH),
                None => match node.labels().get(&c.topology_key) {
                    Some(value) => counts.and_then(|m| m.get(value.as_str())).unwrap_or(0),
                    None => return Status::unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH),
                },
            };
            let min_match = s.min_match_num(i, c.min_domains);
            let self_match = i64::from(s.self_match.get(i).copied().unwrap_or(false));
            let skew = match_num + self_match - min_match;
            if skew > i64::from(c.max_skew) {
                return Status::unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH);
            }
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
    use crate::plugins::podtopologyspread::common::LABEL_HOSTNAME;
    use crate::plugins::testing::{Env, pod};
    use serde_json::{Value, json};

    fn web(name: &str, node: &str) -> Value {
        bound_pod(name, "default", node, json!({"app": "web"}), json!({}))
    }

    /// Zones a (n1, n2), b (n3), c (n4); n5 without a zone.
    fn nodes() -> Vec<Value> {
        vec![
            labelled_node("n1", json!({"zone": "a", LABEL_HOSTNAME: "n1"})),
            labelled_node("n2", json!({"zone": "a", LABEL_HOSTNAME: "n2"})),
            labelled_node("n3", json!({"zone": "b", LABEL_HOSTNAME: "n3"})),
            labelled_node(
                "n4",
                json!({"zone": "c", LABEL_HOSTNAME: "n4", "disk": "hdd"}),
            ),
            labelled_node("n5", json!({LABEL_HOSTNAME: "n5"})),
        ]
    }

    fn incoming(constraints: Value, extra_spec: Value) -> Arc<PodInfo> {
        let mut v = json!({"metadata": {"name": "in", "labels": {"app": "web"}},
            "spec": {"containers": [], "topologySpreadConstraints": constraints}});
        for (k, val) in extra_spec.as_object().into_iter().flatten() {
            v["spec"][k] = val.clone();
        }
        pod(v)
    }

    fn zone_constraint(extra: Value) -> Value {
        let mut c = json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}});
        for (k, val) in extra.as_object().into_iter().flatten() {
            c[k] = val.clone();
        }
        json!([c])
    }

    fn pre_filter(env: &Env, pl: &PodTopologySpread, p: &PodInfo) -> (Status, CycleState) {
        let mut state = CycleState::new();
        let (r, s) = pl.pre_filter(&env.handle(), &mut state, p);
        assert!(r.is_none());
        (s, state)
    }

    /// Filter verdicts for every node, as (name, code).
    fn verdicts(env: &Env, state: &CycleState, p: &PodInfo) -> Vec<(String, Code)> {
        let pl = PodTopologySpread::default();
        env.snapshot
            .list()
            .iter()
            .map(|n| {
                let s = pl.filter(&env.handle(), state, p, n);
                (n.name().to_string(), s.code())
            })
            .collect()
    }

    fn codes(v: &[(String, Code)]) -> Vec<Code> {
        v.iter().map(|(_, c)| *c).collect()
    }

    use Code::{Success as Ok_, Unschedulable as U, UnschedulableAndUnresolvable as UU};

    #[test]
    fn critical_paths_keep_the_two_smallest() {
        let mut p = CriticalPaths::default();
        for (v, n) in [("a", 3), ("b", 1), ("c", 2), ("d", 5)] {
            p.update(v, n);
        }
        assert_eq!(p.0[0].topology_value, "b");
        assert_eq!(p.0[1].topology_value, "c");
        // An existing path growing past the other swaps them.
        p.update("b", 4);
        assert_eq!((p.0[0].topology_value.as_str(), p.0[0].match_num), ("c", 2));
        assert_eq!((p.0[1].topology_value.as_str(), p.0[1].match_num), ("b", 4));
        // A new smaller value pushes the minimum down.
        p.update("e", 0);
        assert_eq!(p.0[0].topology_value, "e");
        assert_eq!(p.0[1].topology_value, "c");
    }

    #[test]
    fn skew_against_the_global_minimum() {
        // a: 2 matching pods, b: 1, c: 0 (plus pods that must not count).
        let env = cluster(
            nodes(),
            vec![
                web("w1", "n1"),
                web("w2", "n2"),
                web("w3", "n3"),
                bound_pod("other-ns", "x", "n4", json!({"app": "web"}), json!({})),
                bound_pod("db", "default", "n4", json!({"app": "db"}), json!({})),
            ],
            Listers::default(),
        );
        let p = incoming(zone_constraint(json!({})), json!({}));
        let (s, state) = pre_filter(&env, &PodTopologySpread::default(), &p);
        assert!(s.is_success());
        let st = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY).unwrap();
        assert_eq!(
            sorted_counts(&st.tp_value_to_match_num[0]),
            [("a", 2), ("b", 1), ("c", 0)]
        );
        assert_eq!(st.critical_paths[0].0[0].match_num, 0);
        let v = verdicts(&env, &state, &p);
        // n1, n2: 2+1-0 > 1; n3: 1+1-0 > 1; n4: 0+1-0 ok; n5: no zone label.
        assert_eq!(codes(&v), [U, U, U, Ok_, UU]);
        let pl = PodTopologySpread::default();
        assert_eq!(
            pl.filter(&env.handle(), &state, &p, &env.snapshot.list()[4])
                .message(),
            super::super::ERR_REASON_NODE_LABEL_NOT_MATCH
        );
        assert_eq!(
            pl.filter(&env.handle(), &state, &p, &env.snapshot.list()[0])
                .message(),
            super::super::ERR_REASON_CONSTRAINTS_NOT_MATCH
        );
    }

    #[test]
    fn pod_not_matching_its_own_selector_adds_nothing() {
        let env = cluster(nodes(), vec![web("w1", "n1")], Listers::default());
        let p = pod(json!({"metadata": {"name": "in"},
            "spec": {"containers": [], "topologySpreadConstraints": zone_constraint(json!({}))}}));
        let (_, state) = pre_filter(&env, &PodTopologySpread::default(), &p);
        // a: 1, b: 0, c: 0 → a: 1+0-0 = 1 is allowed.
        assert_eq!(codes(&verdicts(&env, &state, &p)), [Ok_, Ok_, Ok_, Ok_, UU]);
    }

    #[test]
    fn min_domains_makes_the_minimum_zero() {
        // Every zone has one pod: the minimum is 1, and a placement gives skew 1.
        let pods = vec![web("w1", "n1"), web("w3", "n3"), web("w4", "n4")];
        let env = cluster(nodes(), pods, Listers::default());
        let p = incoming(zone_constraint(json!({})), json!({}));
        let (_, state) = pre_filter(&env, &PodTopologySpread::default(), &p);
        assert_eq!(codes(&verdicts(&env, &state, &p)), [Ok_, Ok_, Ok_, Ok_, UU]);
        // With minDomains 4 (> 3 domains), the minimum counts as 0: skew 2 everywhere.
        let p = incoming(zone_constraint(json!({"minDomains": 4})), json!({}));
        let (_, state) = pre_filter(&env, &PodTopologySpread::default(), &p);
        assert_eq!(codes(&verdicts(&env, &state, &p)), [U, U, U, U, UU]);
        let st = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY).unwrap();
        assert_eq!(st.min_match_num(0, 4), 0);
        assert_eq!(st.min_match_num(0, 3), 1);
    }

    #[test]
    fn node_affinity_policy_decides_which_nodes_count() {
        // Zone c (n4) is the only empty zone; the pod's nodeSelector excludes it.
        let pods = vec![web("w1", "n1"), web("w3", "n3")];
        let env = cluster(nodes(), pods, Listers::default());
        let select_ssd = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "NotIn", "values": ["hdd"]}]}]}}}});
        // Honor (default): zone c does not count, the minimum is 1.
        let p = incoming(zone_constraint(json!({})), select_ssd.clone());
        let (_, state) = pre_filter(&env, &PodTopologySpread::default(), &p);
        let st = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY).unwrap();
        assert_eq!(
            sorted_counts(&st.tp_value_to_match_num[0]),
            [("a", 1), ("b", 1)]
        );
        assert_eq!(codes(&verdicts(&env, &state, &p)), [Ok_, Ok_, Ok_, Ok_, UU]);
        // Ignore: zone c counts with 0 pods, so a and b are too full.
        let p = incoming(
            zone_constraint(json!({"nodeAffinityPolicy": "Ignore"})),
            select_ssd,
        );
        let (_, state) = pre_filter(&env, &PodTopologySpread::default(), &p);
        assert_eq!(codes(&verdicts(&env, &state, &p)), [U, U, U, Ok_, UU]);
    }

    #[test]
    fn node_taints_policy_honor_skips_untolerated_nodes() {
        let mut ns = nodes();
        ns[3]["spec"] =
            json!({"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]});
        let env = cluster(
            ns,
            vec![web("w1", "n1"), web("w3", "n3")],
            Listers::default(),
        );
        // Ignore (default): the tainted zone c counts, with 0 pods.
        let p = incoming(zone_constraint(json!({})), json!({}));
        let (_, state) = pre_filter(&env, &PodTopologySpread::default(), &p);
        assert_eq!(codes(&verdicts(&env, &state, &p)), [U, U, U, Ok_, UU]);
        // Honor: it does not.
        let p = incoming(
            zone_constraint(json!({"nodeTaintsPolicy": "Honor"})),
            json!({}),
        );
        let (_, state) = pre_filter(&env, &PodTopologySpread::default(), &p);
        assert_eq!(codes(&verdicts(&env, &state, &p)), [Ok_, Ok_, Ok_, Ok_, UU]);
        // Honor, but the pod tolerates the taint: it counts again.
        let p = incoming(
            zone_constraint(json!({"nodeTaintsPolicy": "Honor"})),
            json!({"tolerations": [{"key": "dedicated", "operator": "Exists"}]}),
        );
        let (_, state) = pre_filter(&env, &PodTopologySpread::default(), &p);
        assert_eq!(codes(&verdicts(&env, &state, &p)), [U, U, U, Ok_, UU]);
    }

    #[test]
    fn nodes_missing_any_key_are_not_counted() {
        // Two constraints: zone and disk; only n4 has both keys.
        let env = cluster(nodes(), vec![web("w1", "n1")], Listers::default());
        let mut cs = zone_constraint(json!({"maxSkew": 5}));
        cs.as_array_mut().unwrap().push(
            json!({"maxSkew": 5, "topologyKey": "disk", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}}}),
        );
        let p = incoming(cs, json!({}));
        let (_, state) = pre_filter(&env, &PodTopologySpread::default(), &p);
        let st = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY).unwrap();
        assert_eq!(sorted_counts(&st.tp_value_to_match_num[0]), [("c", 0)]);
        assert_eq!(sorted_counts(&st.tp_value_to_match_num[1]), [("hdd", 0)]);
        // n1..n3 lack "disk", n5 lacks both keys.
        assert_eq!(codes(&verdicts(&env, &state, &p)), [UU, UU, UU, Ok_, UU]);
    }

    #[test]
    fn empty_selector_counts_no_pods_but_matches_the_pod() {
        let pods = vec![web("w1", "n1"), web("w2", "n1"), web("w3", "n2")];
        let env = cluster(nodes(), pods, Listers::default());
        let p = incoming(zone_constraint(json!({"labelSelector": {}})), json!({}));
        let (_, state) = pre_filter(&env, &PodTopologySpread::default(), &p);
        let st = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY).unwrap();
        assert!(st.self_match[0]);
        assert_eq!(codes(&verdicts(&env, &state, &p)), [Ok_, Ok_, Ok_, Ok_, UU]);
    }

    #[test]
    fn skip_without_hard_constraints_and_errors() {
        let env = cluster(nodes(), vec![], Listers::default());
        let pl = PodTopologySpread::default();
        let soft = json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}}}]);
        let (s, state) = pre_filter(&env, &pl, &incoming(soft, json!({})));
        assert!(s.is_skip());
        assert!(state.read::<PreFilterState>(PRE_FILTER_STATE_KEY).is_err());
        // No constraints and no Service / controller: the system defaults are soft anyway.
        let bare = pod(
            json!({"metadata": {"name": "b", "labels": {"app": "web"}}, "spec": {"containers": []}}),
        );
        assert!(pre_filter(&env, &pl, &bare).0.is_skip());
        let bad = incoming(
            zone_constraint(
                json!({"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Nope"}]}}),
            ),
            json!({}),
        );
        let (s, _) = pre_filter(&env, &pl, &bad);
        assert_eq!(s.code(), Code::Error);
        assert_eq!(
            s.message(),
            "get constraints from pod: obtaining pod's hard topology spread constraints: \"Nope\" is not a valid label selector operator"
        );
        let s = pl.filter(
            &env.handle(),
            &CycleState::new(),
            &bad,
            &env.snapshot.list()[0],
        );
        assert_eq!(s.code(), Code::Error);
        assert_eq!(
            s.message(),
            "reading \"PreFilterPodTopologySpread\" from cycleState: not found"
        );
    }

    #[test]
    fn default_constraints_select_pods_of_the_same_service() {
        let listers = super::super::common::web_service_listers();
        let env = cluster(nodes(), vec![web("w1", "n1"), web("w3", "n3")], listers);
        let pl = PodTopologySpread::new(
            serde_json::from_value(json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]))
                .unwrap(),
            false,
        );
        let bare = pod(
            json!({"metadata": {"name": "b", "labels": {"app": "web"}}, "spec": {"containers": []}}),
        );
        let (s, state) = pre_filter(&env, &pl, &bare);
        assert!(s.is_success());
        assert_eq!(codes(&verdicts(&env, &state, &bare)), [U, U, U, Ok_, UU]);
        // A pod no Service selects gets no default constraints.
        let lone = pod(
            json!({"metadata": {"name": "l", "labels": {"app": "x"}}, "spec": {"containers": []}}),
        );
        assert!(pre_filter(&env, &pl, &lone).0.is_skip());
    }

    #[test]
    fn add_and_remove_pod_update_counts_and_paths() {
        let env = cluster(
            nodes(),
            vec![web("w1", "n1"), web("w3", "n3")],
            Listers::default(),
        );
        let p = incoming(zone_constraint(json!({})), json!({}));
        let (_, mut state) = pre_filter(&env, &PodTopologySpread::default(), &p);
        let h = env.handle();
        let pl = PodTopologySpread::default();
        let n4 = &env.snapshot.list()[3];
        // Adding a matching pod to zone c: the minimum becomes 1, and a / b open up.
        let added = pod(web("new", "n4"));
        assert!(pl.add_pod(&h, &mut state, &p, &added, n4).is_success());
        {
            let st = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY).unwrap();
            assert_eq!(
                sorted_counts(&st.tp_value_to_match_num[0]),
                [("a", 1), ("b", 1), ("c", 1)]
            );
            assert_eq!(st.min_match_num(0, 1), 1);
        }
        assert_eq!(codes(&verdicts(&env, &state, &p)), [Ok_, Ok_, Ok_, Ok_, UU]);
        // Pods of other namespaces, not matching, or on nodes missing the key change nothing.
        let other_ns = pod(bound_pod("o", "x", "n4", json!({"app": "web"}), json!({})));
        let db = pod(bound_pod(
            "d",
            "default",
            "n4",
            json!({"app": "db"}),
            json!({}),
        ));
        let before = state
            .read::<PreFilterState>(PRE_FILTER_STATE_KEY)
            .unwrap()
            .clone();
        pl.add_pod(&h, &mut state, &p, &other_ns, n4);
        pl.add_pod(&h, &mut state, &p, &db, n4);
        pl.add_pod(&h, &mut state, &p, &added, &env.snapshot.list()[4]);
        let after = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY).unwrap();
        assert_eq!(after.tp_value_to_match_num, before.tp_value_to_match_num);
        // Removing it again restores the original verdicts.
        assert!(pl.remove_pod(&h, &mut state, &p, &added, n4).is_success());
        assert_eq!(codes(&verdicts(&env, &state, &p)), [U, U, U, Ok_, UU]);
        // Without state, the extensions fail.
        let s = pl.add_pod(&h, &mut CycleState::new(), &p, &added, n4);
        assert_eq!(s.code(), Code::Error);
    }

    #[test]
    fn state_renders() {
        let env = cluster(nodes(), vec![web("w1", "n1")], Listers::default());
        let p = incoming(zone_constraint(json!({})), json!({}));
        let (_, state) = pre_filter(&env, &PodTopologySpread::default(), &p);
        let tree = state.render();
        let text = format!("{tree:?}");
        assert!(text.contains("zone maxSkew=1 minDomains=1 selector=app=web"));
        assert!(text.contains("\\\"a\\\": 1"));
    }
}
