//! PreScore, Score and NormalizeScore: preferred terms of the incoming pod, and the
//! required affinity and preferred terms of existing pods, summed per topology pair.

use std::sync::Arc;

use super::{InterPodAffinity, describe_term, merge_term_namespaces};
use crate::api::labels::empty_labels;
use crate::framework::plugin::{Handle, MAX_NODE_SCORE, NodeScore, PreScorePlugin, ScorePlugin};
use crate::framework::snapshot_index::{NodeCounts, TopologyIndex};
use crate::framework::types::WeightedAffinityTerm;
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, Snapshot, StateTree, Status};

pub const PRE_SCORE_STATE_KEY: &str = "PreScoreInterPodAffinity";

/// The scores of one topology key, by value id of the snapshot's index for that key. A
/// pair exists once a term added to it, even if its sum is zero.
#[derive(Debug, Clone)]
struct KeyScores {
    topology: Arc<TopologyIndex>,
    dense: Vec<i64>,
    present: Vec<bool>,
}

/// topologyKey → topology value → score (keys with at least one pair).
#[derive(Debug, Clone, Default)]
pub struct TopologyScores {
    by_key: Vec<(String, KeyScores)>,
}

impl TopologyScores {
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// Adds `add` (wrapping, as upstream's repeated 64-bit additions) once per pod at
    /// (key, value of the pod's node) for the nodes of `nodes` that have the key.
    fn add(&mut self, snapshot: &Snapshot, key: &str, nodes: &NodeCounts, add: i64) {
        let created = !self.by_key.iter().any(|(k, _)| k == key);
        let i = match self.by_key.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                let topology = snapshot.topology(key);
                let len = topology.len();
                self.by_key.push((
                    key.to_string(),
                    KeyScores {
                        topology,
                        dense: vec![0; len],
                        present: vec![false; len],
                    },
                ));
                self.by_key.len() - 1
            }
        };
        let Some((_, ks)) = self.by_key.get_mut(i) else {
            return;
        };
        let mut added = false;
        for (&pos, &n) in nodes {
            let Some(id) = ks.topology.node_value(pos as usize) else {
                continue;
            };
            if let (Some(v), Some(p)) = (ks.dense.get_mut(id), ks.present.get_mut(id)) {
                *v = v.wrapping_add(add.wrapping_mul(i64::from(n)));
                *p = true;
                added = true;
            }
        }
        // A key is listed only once it has a pair.
        if created && !added {
            self.by_key.remove(i);
        }
    }

    /// The sum (wrapping) of the scores at the node's values.
    fn score(&self, snapshot: &Snapshot, node: &NodeInfo) -> i64 {
        let mut score = 0i64;
        for (key, ks) in &self.by_key {
            let id = match ks.topology.value_of(snapshot, node) {
                Some(id) => id,
                None => node.labels().get(key).and_then(|v| ks.topology.id(v)),
            };
            if let Some(v) = id.and_then(|id| ks.dense.get(id)) {
                score = score.wrapping_add(*v);
            }
        }
        score
    }

    /// (key, value, score) of every pair, sorted.
    pub fn sorted_pairs(&self) -> Vec<(&str, &str, i64)> {
        let mut pairs: Vec<(&str, &str, i64)> = self
            .by_key
            .iter()
            .flat_map(|(k, ks)| {
                ks.present
                    .iter()
                    .zip(&ks.dense)
                    .enumerate()
                    .filter(|(_, (p, _))| **p)
                    .map(move |(id, (_, &n))| (k.as_str(), ks.topology.value(id), n))
            })
            .collect();
        pairs.sort();
        pairs
    }
}

#[derive(Debug, Clone)]
pub struct PreScoreState {
    pub topology_score: Arc<TopologyScores>,
    /// The incoming pod's preferred terms, namespace selectors resolved (for display).
    pub preferred_affinity_terms: Arc<Vec<WeightedAffinityTerm>>,
    pub preferred_anti_affinity_terms: Arc<Vec<WeightedAffinityTerm>>,
}

impl RenderState for PreScoreState {
    fn render(&self) -> StateTree {
        let pairs = self.topology_score.sorted_pairs();
        let terms = |ts: &[WeightedAffinityTerm]| {
            ts.iter()
                .map(|t| format!("weight {}: {}", t.weight, describe_term(&t.term)))
                .collect::<Vec<_>>()
        };
        StateTree::node(
            "preScoreState",
            vec![
                StateTree::list(
                    "topologyScore",
                    pairs.into_iter().map(|(k, v, n)| format!("{k}={v}: {n}")),
                ),
                StateTree::list(
                    "preferredAffinityTerms",
                    terms(&self.preferred_affinity_terms),
                ),
                StateTree::list(
                    "preferredAntiAffinityTerms",
                    terms(&self.preferred_anti_affinity_terms),
                ),
            ],
        )
    }
}

fn has_preferred_constraints(pod: &PodInfo) -> bool {
    let Some(a) = pod.pod().spec.as_ref().and_then(|s| s.affinity.as_ref()) else {
        return false;
    };
    let affinity = a.pod_affinity.as_ref().is_some_and(|pa| {
        pa.preferred_during_scheduling_ignored_during_execution
            .as_ref()
            .is_some_and(|t| !t.is_empty())
    });
    let anti = a.pod_anti_affinity.as_ref().is_some_and(|pa| {
        pa.preferred_during_scheduling_ignored_during_execution
            .as_ref()
            .is_some_and(|t| !t.is_empty())
    });
    affinity || anti
}

/// A term's weight times its multiplier (1 for affinity, -1 for anti-affinity), in 32
/// bits as upstream.
fn weighted(weight: i32, multiplier: i32) -> i64 {
    i64::from(weight.wrapping_mul(multiplier))
}

impl PreScorePlugin for InterPodAffinity {
    /// Sums, per topology pair, the incoming pod's preferred terms over the existing pods
    /// they match, and the existing pods' required affinity (at hardPodAffinityWeight)
    /// and preferred terms that match the incoming pod. Pods come from the snapshot's pod
    /// index: each group of equal pods (or equal terms) is matched once and counts once
    /// per member on each node.
    fn pre_score(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[&NodeInfo],
    ) -> Status {
        let has_constraints = has_preferred_constraints(pod);
        if self.ignore_preferred_terms_of_existing_pods && !has_constraints {
            return Status::skip();
        }
        if let Some(e) = &pod.parse_error {
            return Status::error(format!("failed to parse pod: {e}"));
        }
        let mut preferred_affinity = pod.preferred_affinity_terms.clone();
        for t in &mut preferred_affinity {
            merge_term_namespaces(&mut t.term, h.listers);
        }
        let mut preferred_anti_affinity = pod.preferred_anti_affinity_terms.clone();
        for t in &mut preferred_anti_affinity {
            merge_term_namespaces(&mut t.term, h.listers);
        }
        let ns_labels = h.listers.namespace_labels(&pod.namespace);
        let index = h.snapshot.pod_index();
        let mut m = TopologyScores::default();
        // The incoming pod's preferred terms (namespace selectors already resolved)
        // against every existing pod.
        if has_constraints {
            for g in h.snapshot.pod_groups().iter() {
                for (terms, multiplier) in
                    [(&preferred_affinity, 1), (&preferred_anti_affinity, -1)]
                {
                    for t in terms.iter() {
                        if t.term
                            .matches_parts(g.namespace(), g.labels(), empty_labels())
                        {
                            let add = weighted(t.weight, multiplier);
                            m.add(h.snapshot, &t.term.topology_key, &g.nodes, add);
                        }
                    }
                }
            }
        }
        // The existing pods' terms, matched against the incoming pod and its namespace's
        // labels (only pods with affinity have any).
        if self.hard_pod_affinity_weight > 0 {
            for g in index.affinity_terms() {
                if g.term.matches(pod, ns_labels) {
                    let add = weighted(self.hard_pod_affinity_weight, 1);
                    m.add(h.snapshot, &g.term.topology_key, &g.nodes, add);
                }
            }
        }
        for (groups, multiplier) in [
            (index.preferred_affinity_terms(), 1),
            (index.preferred_anti_affinity_terms(), -1),
        ] {
            for g in groups {
                if g.term.term.matches(pod, ns_labels) {
                    let add = weighted(g.term.weight, multiplier);
                    m.add(h.snapshot, &g.term.term.topology_key, &g.nodes, add);
                }
            }
        }
        if m.is_empty() {
            return Status::skip();
        }
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                topology_score: Arc::new(m),
                preferred_affinity_terms: Arc::new(preferred_affinity),
                preferred_anti_affinity_terms: Arc::new(preferred_anti_affinity),
            },
        );
        Status::success()
    }
}

fn get_pre_score_state(state: &CycleState) -> Result<&PreScoreState, Status> {
    state
        .read::<PreScoreState>(PRE_SCORE_STATE_KEY)
        .map_err(|e| {
            Status::error(format!(
                "failed to read {PRE_SCORE_STATE_KEY:?} from cycleState: {e}"
            ))
        })
}

impl ScorePlugin for InterPodAffinity {
    /// The sum of the pair scores of the node's values; negative for anti-affinity.
    fn score(
        &self,
        h: &Handle,
        state: &CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
    ) -> (i64, Status) {
        let s = match get_pre_score_state(state) {
            Ok(s) => s,
            Err(e) => return (0, e),
        };
        (s.topology_score.score(h.snapshot, node), Status::success())
    }

    fn has_normalize(&self) -> bool {
        true
    }

    /// Scales to [0, 100] between the lowest and highest score, in floating point,
    /// truncated.
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
        if s.topology_score.is_empty() {
            return Status::success();
        }
        let mut min = i64::MAX;
        let mut max = i64::MIN;
        for ns in scores.iter() {
            max = max.max(ns.score);
            min = min.min(ns.score);
        }
        let diff = max.wrapping_sub(min);
        for ns in scores.iter_mut() {
            let mut f = 0.0f64;
            if diff > 0 {
                f = MAX_NODE_SCORE as f64 * (ns.score.wrapping_sub(min) as f64 / diff as f64);
            }
            ns.score = f as i64;
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
    use crate::plugins::testing::{Env, pod};
    use serde_json::{Value, json};

    fn nodes() -> Vec<Value> {
        vec![
            labelled_node("n1", json!({"zone": "a", "host": "n1"})),
            labelled_node("n2", json!({"zone": "a", "host": "n2"})),
            labelled_node("n3", json!({"zone": "b", "host": "n3"})),
            labelled_node("n4", json!({"host": "n4"})),
            json!({"metadata": {"name": "n5"}}),
        ]
    }

    fn namespaces() -> Listers {
        let mut l = Listers::default();
        for (name, labels) in [
            ("default", json!({"team": "x"})),
            ("other", json!({"team": "y"})),
        ] {
            l.namespaces.insert(
                name.into(),
                Arc::new(
                    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))
                        .unwrap(),
                ),
            );
        }
        l
    }

    fn term(app: &str, key: &str) -> Value {
        json!({"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key})
    }

    fn weighted(w: i32, t: Value) -> Value {
        json!({"weight": w, "podAffinityTerm": t})
    }

    fn incoming(labels: Value, affinity: Value) -> Arc<PodInfo> {
        pod(json!({"metadata": {"name": "in", "labels": labels},
            "spec": {"containers": [], "affinity": affinity}}))
    }

    /// PreScore, Score and NormalizeScore over every node.
    fn run(env: &Env, pl: &InterPodAffinity, p: &PodInfo) -> (Status, Vec<i64>, Vec<i64>) {
        let h = env.handle();
        let nodes: Vec<&NodeInfo> = env.snapshot.list().iter().collect();
        let mut state = CycleState::new();
        let s = pl.pre_score(&h, &mut state, p, &nodes);
        if !s.is_success() {
            return (s, vec![], vec![]);
        }
        let raw: Vec<i64> = nodes.iter().map(|n| pl.score(&h, &state, p, n).0).collect();
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

    #[test]
    fn preferred_terms_of_the_incoming_pod() {
        let env = cluster(
            nodes(),
            vec![
                bound_pod("db", "default", "n1", json!({"app": "db"}), json!({})),
                bound_pod("w", "default", "n3", json!({"app": "web"}), json!({})),
                bound_pod("w2", "other", "n2", json!({"app": "web"}), json!({})),
            ],
            namespaces(),
        );
        let p = incoming(
            json!({}),
            json!({
                "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(10, term("db", "zone"))]},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(4, term("web", "host"))]}}),
        );
        let (s, raw, norm) = run(&env, &InterPodAffinity::default(), &p);
        assert!(s.is_success());
        assert_eq!(raw, [10, 10, -4, 0, 0]);
        // 100 * (s - min) / (max - min), truncated: 4/14 → 28.
        assert_eq!(norm, [100, 100, 0, 28, 28]);
    }

    #[test]
    fn existing_pods_required_affinity_weighs_hard_pod_affinity_weight() {
        let existing = bound_pod(
            "fan",
            "default",
            "n3",
            json!({}),
            json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("web", "zone")]}}}),
        );
        let env = cluster(nodes(), vec![existing], namespaces());
        let p = incoming(json!({"app": "web"}), json!(null));
        let (_, raw, norm) = run(&env, &InterPodAffinity::new(5, false), &p);
        assert_eq!(raw, [0, 0, 5, 0, 0]);
        assert_eq!(norm, [0, 0, 100, 0, 0]);
        // Weight 0 disables it, leaving nothing to score.
        assert!(run(&env, &InterPodAffinity::new(0, false), &p).0.is_skip());
        // Ignoring existing pods' preferences skips pods without preferred terms.
        assert!(run(&env, &InterPodAffinity::new(5, true), &p).0.is_skip());
    }

    #[test]
    fn existing_pods_preferred_terms_use_the_incoming_namespace_labels() {
        let mut anti = term("web", "zone");
        anti["namespaceSelector"] = json!({"matchLabels": {"team": "x"}});
        let existing = bound_pod(
            "loner",
            "other",
            "n1",
            json!({}),
            json!({"affinity": {
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(7, anti)]},
                "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(3, term("web", "host"))]}}}),
        );
        // The same pod on a node without labels contributes nothing.
        let mut unlabelled = existing.clone();
        unlabelled["metadata"]["name"] = json!("loner2");
        unlabelled["spec"]["nodeName"] = json!("n5");
        let env = cluster(nodes(), vec![existing, unlabelled], namespaces());
        // In "default" (team=x): the anti term applies; the affinity term only lists "other".
        let p = incoming(json!({"app": "web"}), json!(null));
        let (_, raw, norm) = run(&env, &InterPodAffinity::default(), &p);
        assert_eq!(raw, [-7, -7, 0, 0, 0]);
        assert_eq!(norm, [0, 0, 100, 100, 100]);
        // In "other": the affinity term (its own namespace) applies, not the anti term.
        let p = pod(
            json!({"metadata": {"name": "in", "namespace": "other", "labels": {"app": "web"}},
            "spec": {"containers": []}}),
        );
        let (_, raw, norm) = run(&env, &InterPodAffinity::default(), &p);
        assert_eq!(raw, [3, 0, 0, 0, 0]);
        assert_eq!(norm, [100, 0, 0, 0, 0]);
    }

    #[test]
    fn matching_terms_that_cancel_out_still_score() {
        let env = cluster(
            nodes(),
            vec![bound_pod(
                "db",
                "default",
                "n1",
                json!({"app": "db"}),
                json!({}),
            )],
            namespaces(),
        );
        let p = incoming(
            json!({}),
            json!({
                "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(5, term("db", "zone"))]},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(5, term("db", "zone"))]}}),
        );
        let (s, raw, norm) = run(&env, &InterPodAffinity::default(), &p);
        assert!(s.is_success());
        assert_eq!(raw, [0; 5]);
        assert_eq!(norm, [0; 5]);
        // The pair stays listed with its zero sum.
        let nodes: Vec<&NodeInfo> = env.snapshot.list().iter().collect();
        let mut state = CycleState::new();
        let pl = InterPodAffinity::default();
        assert!(
            pl.pre_score(&env.handle(), &mut state, &p, &nodes)
                .is_success()
        );
        let st = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY).unwrap();
        assert_eq!(st.topology_score.sorted_pairs(), [("zone", "a", 0)]);
    }

    #[test]
    fn skips_and_errors() {
        let env = cluster(
            nodes(),
            vec![bound_pod(
                "db",
                "default",
                "n1",
                json!({"app": "db"}),
                json!({}),
            )],
            namespaces(),
        );
        let pl = InterPodAffinity::default();
        // No preferred terms and no pods with affinity.
        assert!(
            run(&env, &pl, &incoming(json!({"app": "db"}), json!(null)))
                .0
                .is_skip()
        );
        // Preferred terms that match nothing.
        let p = incoming(
            json!({}),
            json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(5, term("x", "zone"))]}}),
        );
        assert!(run(&env, &pl, &p).0.is_skip());
        let bad = incoming(
            json!({}),
            json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(5,
                json!({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, "topologyKey": "zone"}))]}}),
        );
        let (s, _, _) = run(&env, &pl, &bad);
        assert_eq!(s.code(), Code::Error);
        assert!(
            s.message()
                .starts_with("failed to parse pod: preferredAffinityTerms: ")
        );
        let (_, s) = pl.score(
            &env.handle(),
            &CycleState::new(),
            &bad,
            &env.snapshot.list()[0],
        );
        assert_eq!(
            s.message(),
            "failed to read \"PreScoreInterPodAffinity\" from cycleState: not found"
        );
    }
}
