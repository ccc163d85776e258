//! What Filter and Score share: the parsed form of a spread constraint, the default
//! constraints and their selector, node eligibility and pod counting.

use std::sync::Arc;

use compact_str::CompactString;
use k8s_openapi::api::core::v1::{Toleration, TopologySpreadConstraint};
use rustc_hash::FxHashMap;

use super::PodTopologySpread;
use crate::api::labels::{Labels, Selector};
use crate::api::node_affinity::RequiredNodeAffinity;
use crate::api::taints::{find_untolerated, is_no_schedule_or_no_execute};
use crate::framework::listers::{Listers, ns_key};
use crate::framework::snapshot_index::{PodGroups, TopologyIndex};
use crate::framework::{NodeInfo, PodInfo};

pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";
pub const DO_NOT_SCHEDULE: &str = "DoNotSchedule";
pub const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";
pub const NODE_INCLUSION_POLICY_HONOR: &str = "Honor";

/// A constraint with its selector parsed and its optional fields defaulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpreadConstraint {
    pub max_skew: i32,
    pub topology_key: String,
    pub selector: Selector,
    /// `minDomains`, 1 when unset.
    pub min_domains: i32,
    /// `nodeAffinityPolicy` is Honor (the default when unset).
    pub honor_node_affinity: bool,
    /// `nodeTaintsPolicy` is Honor (the default when unset is Ignore).
    pub honor_node_taints: bool,
}

impl SpreadConstraint {
    pub fn describe(&self) -> String {
        let policy = |honor: bool| if honor { "Honor" } else { "Ignore" };
        format!(
            "{} maxSkew={} minDomains={} selector={} nodeAffinityPolicy={} nodeTaintsPolicy={}",
            self.topology_key,
            self.max_skew,
            self.min_domains,
            self.selector,
            policy(self.honor_node_affinity),
            policy(self.honor_node_taints)
        )
    }
}

/// What node eligibility needs from the incoming pod, computed once per cycle.
#[derive(Debug, Clone)]
pub struct PodNodeRequirements {
    pub required_affinity: RequiredNodeAffinity,
    pub tolerations: Vec<Toleration>,
}

impl PodNodeRequirements {
    pub fn new(pod: &PodInfo) -> PodNodeRequirements {
        PodNodeRequirements {
            required_affinity: RequiredNodeAffinity::from_pod(pod.pod()),
            tolerations: pod
                .pod()
                .spec
                .as_ref()
                .and_then(|s| s.tolerations.clone())
                .unwrap_or_default(),
        }
    }

    /// Whether the node counts for this constraint under its node inclusion policies
    /// (node affinity: the pod's nodeSelector and required node affinity; taints: no
    /// untolerated NoSchedule / NoExecute taint).
    pub fn node_included(&self, c: &SpreadConstraint, node: &NodeInfo) -> bool {
        if c.honor_node_affinity && !self.required_affinity.matches(node.name(), node.labels()) {
            return false;
        }
        if c.honor_node_taints
            && find_untolerated(
                node.taints(),
                &self.tolerations,
                is_no_schedule_or_no_execute,
            )
            .is_some()
        {
            return false;
        }
        true
    }

    /// Whether `node_included` holds for every node, whatever its labels and taints.
    pub fn includes_every_node(&self, c: &SpreadConstraint) -> bool {
        (!c.honor_node_affinity || self.required_affinity.matches_everything())
            && !c.honor_node_taints
    }
}

/// The hard (`DoNotSchedule`) or soft (`ScheduleAnyway`) part of a constraint list.
/// With `matchLabelKeys` (MatchLabelKeysInPodTopologySpread, on in v1.35), the pod's
/// values for those keys are added to the selector as `key=value` requirements; a nil
/// labelSelector stays a selector that matches nothing.
pub fn filter_constraints(
    constraints: &[TopologySpreadConstraint],
    pod_labels: &Labels,
    action: &str,
) -> Result<Vec<SpreadConstraint>, String> {
    let mut out = Vec::new();
    for c in constraints
        .iter()
        .filter(|c| c.when_unsatisfiable == action)
    {
        let mut selector = Selector::from_label_selector(c.label_selector.as_ref())?;
        let keys = c.match_label_keys.as_deref().unwrap_or(&[]);
        if !keys.is_empty() {
            let match_labels: Labels = keys
                .iter()
                .filter_map(|k| pod_labels.get(k).map(|v| (k.clone(), v.clone())))
                .collect();
            if !match_labels.is_empty() {
                selector = merge_label_set_with_selector(&match_labels, selector);
            }
        }
        out.push(SpreadConstraint {
            max_skew: c.max_skew,
            topology_key: c.topology_key.clone(),
            selector,
            min_domains: c.min_domains.unwrap_or(1),
            honor_node_affinity: c
                .node_affinity_policy
                .as_deref()
                .is_none_or(|p| p == NODE_INCLUSION_POLICY_HONOR),
            honor_node_taints: c
                .node_taints_policy
                .as_deref()
                .is_some_and(|p| p == NODE_INCLUSION_POLICY_HONOR),
        });
    }
    Ok(out)
}

fn merge_label_set_with_selector(set: &Labels, s: Selector) -> Selector {
    if s.is_nothing() {
        return s;
    }
    let mut merged = Selector::from_set(set);
    for r in s.requirements() {
        merged.add(r.clone());
    }
    merged
}

/// The two system default constraints (hostname maxSkew 3, zone maxSkew 5, both
/// ScheduleAnyway).
pub fn system_default_constraints() -> Vec<TopologySpreadConstraint> {
    let c = |key: &str, skew: i32| TopologySpreadConstraint {
        topology_key: key.to_string(),
        when_unsatisfiable: SCHEDULE_ANYWAY.to_string(),
        max_skew: skew,
        ..Default::default()
    };
    vec![c(LABEL_HOSTNAME, 3), c(LABEL_TOPOLOGY_ZONE, 5)]
}

/// Whether the node has every constraint's topology key.
pub fn node_has_all_keys(labels: &Labels, constraints: &[SpreadConstraint]) -> bool {
    constraints
        .iter()
        .all(|c| labels.contains_key(&c.topology_key))
}

/// Pods among `pods` in namespace `ns`, not terminating, whose labels the selector
/// matches. A selector without requirements counts nothing.
pub fn count_pods_match_selector(pods: &[Arc<PodInfo>], selector: &Selector, ns: &str) -> i64 {
    if selector.is_empty() {
        return 0;
    }
    pods.iter()
        .filter(|p| p.namespace == ns && !p.is_terminating() && selector.matches(p.labels()))
        .count() as i64
}

/// Pods per snapshot position that `count_pods_match_selector` would count, from the
/// snapshot's pod groups (each group matched once).
fn count_pods_per_node(
    index: &PodGroups,
    num_nodes: usize,
    selector: &Selector,
    ns: &str,
) -> Vec<i64> {
    let mut per_node = vec![0i64; num_nodes];
    if selector.is_empty() {
        return per_node;
    }
    for g in index.in_namespace(ns) {
        if !g.terminating() && selector.matches(g.labels()) {
            for (&pos, &n) in &g.nodes {
                if let Some(c) = per_node.get_mut(pos as usize) {
                    *c += i64::from(n);
                }
            }
        }
    }
    per_node
}

/// Matching pods per node for each of `constraints`, counted once per distinct selector
/// (constraints often share one: zone and hostname spreading of one app):
/// `matching(i, pos)` is constraint `i`'s count on the node at snapshot position `pos`.
pub struct MatchingPerNode {
    per_selector: Vec<Vec<i64>>,
    selector_of: Vec<usize>,
}

impl MatchingPerNode {
    pub fn count(
        index: &PodGroups,
        num_nodes: usize,
        constraints: &[SpreadConstraint],
        ns: &str,
    ) -> MatchingPerNode {
        let mut per_selector: Vec<Vec<i64>> = Vec::with_capacity(constraints.len());
        let mut selector_of: Vec<usize> = Vec::with_capacity(constraints.len());
        for (i, c) in constraints.iter().enumerate() {
            match constraints[..i]
                .iter()
                .position(|d| d.selector == c.selector)
            {
                Some(first) => selector_of.push(selector_of[first]),
                None => {
                    selector_of.push(per_selector.len());
                    per_selector.push(count_pods_per_node(index, num_nodes, &c.selector, ns));
                }
            }
        }
        MatchingPerNode {
            per_selector,
            selector_of,
        }
    }

    pub fn matching(&self, constraint: usize, pos: usize) -> i64 {
        self.selector_of
            .get(constraint)
            .and_then(|&s| self.per_selector[s].get(pos))
            .copied()
            .unwrap_or(0)
    }
}

/// Matching pods per domain (topology value) of one constraint. A domain, once
/// registered, stays listed even with no pods. The values of the snapshot's nodes are
/// kept in arrays by value id, any other value (a node outside the snapshot) in a map.
#[derive(Debug, Clone, Default)]
pub struct DomainCounts {
    topology: Option<Arc<TopologyIndex>>,
    /// By value id of `topology`.
    dense: Vec<i64>,
    registered: Vec<bool>,
    other: FxHashMap<CompactString, i64>,
    len: usize,
}

impl DomainCounts {
    pub fn with_topology(topology: Arc<TopologyIndex>) -> DomainCounts {
        DomainCounts {
            dense: vec![0; topology.len()],
            registered: vec![false; topology.len()],
            topology: Some(topology),
            other: FxHashMap::default(),
            len: 0,
        }
    }

    /// The index the value ids refer to.
    pub fn topology(&self) -> Option<&TopologyIndex> {
        self.topology.as_deref()
    }

    /// Number of domains.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn id(&self, value: &str) -> Option<usize> {
        self.topology.as_ref().and_then(|t| t.id(value))
    }

    pub fn get(&self, value: &str) -> Option<i64> {
        match self.id(value) {
            Some(id) => self.get_id(id),
            None => self.other.get(value).copied(),
        }
    }

    /// The count of the domain with this value id of the topology index.
    pub fn get_id(&self, id: usize) -> Option<i64> {
        match self.registered.get(id) {
            Some(true) => self.dense.get(id).copied(),
            _ => None,
        }
    }

    /// Adds `n` to the domain of `value` (registering it); returns its new count.
    pub fn add(&mut self, value: &str, n: i64) -> i64 {
        if let Some(id) = self.id(value) {
            return self.add_id(id, n);
        }
        match self.other.get_mut(value) {
            Some(c) => {
                *c += n;
                *c
            }
            None => {
                self.other.insert(CompactString::from(value), n);
                self.len += 1;
                n
            }
        }
    }

    /// `add` for the value with this id of the topology index.
    pub fn add_id(&mut self, id: usize, n: i64) -> i64 {
        let (Some(c), Some(r)) = (self.dense.get_mut(id), self.registered.get_mut(id)) else {
            return 0;
        };
        if !*r {
            *r = true;
            self.len += 1;
        }
        *c += n;
        *c
    }

    /// The domains and their counts, sorted by value.
    pub fn sorted(&self) -> Vec<(&str, i64)> {
        let mut v: Vec<(&str, i64)> = Vec::with_capacity(self.len);
        if let Some(t) = &self.topology {
            // Ids follow the sorted values.
            for (id, (&n, &r)) in self.dense.iter().zip(&self.registered).enumerate() {
                if r {
                    v.push((t.value(id), n));
                }
            }
        }
        if !self.other.is_empty() {
            v.extend(self.other.iter().map(|(k, &n)| (k.as_str(), n)));
            v.sort_unstable();
        }
        v
    }
}

impl PartialEq for DomainCounts {
    fn eq(&self, other: &Self) -> bool {
        self.sorted() == other.sorted()
    }
}

impl Eq for DomainCounts {}

impl PodTopologySpread {
    /// The pod's own constraints for `action`, or, when it has none, the default
    /// constraints for `action` with the selector derived from its controllers and
    /// services. `what` is "hard" or "soft", for error messages.
    pub(crate) fn constraints_for(
        &self,
        listers: &Listers,
        pod: &PodInfo,
        action: &str,
        what: &str,
    ) -> Result<Vec<SpreadConstraint>, String> {
        let own = pod_constraints(pod);
        if !own.is_empty() {
            return filter_constraints(own, pod.labels(), action)
                .map_err(|e| format!("obtaining pod's {what} topology spread constraints: {e}"));
        }
        let mut cs = filter_constraints(&self.default_constraints, pod.labels(), action)
            .map_err(|e| format!("setting default {what} topology spread constraints: {e}"))?;
        if cs.is_empty() {
            return Ok(cs);
        }
        let selector = default_selector(pod, listers);
        if selector.is_empty() {
            return Ok(Vec::new());
        }
        for c in &mut cs {
            c.selector = selector.clone();
        }
        Ok(cs)
    }
}

pub fn pod_constraints(pod: &PodInfo) -> &[TopologySpreadConstraint] {
    pod.pod()
        .spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_deref())
        .unwrap_or(&[])
}

/// The selector of the Services, ReplicationController, ReplicaSet or StatefulSet that
/// select the pod (upstream `helper.DefaultSelector`): the merged selectors of the
/// Services in the pod's namespace that match it, then its controller's selector (an RC's
/// map is merged into that set; a ReplicaSet's or StatefulSet's requirements are added).
pub fn default_selector(pod: &PodInfo, listers: &Listers) -> Selector {
    let mut set = Labels::new();
    for svc in Listers::in_namespace(&listers.services, &pod.namespace) {
        let Some(sel) = svc.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
            // A Service without a selector selects nothing.
            continue;
        };
        if sel.iter().all(|(k, v)| pod.labels().get(k) == Some(v)) {
            set.extend(sel.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    let mut selector = Selector::from_set(&set);
    let owner = pod
        .pod()
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    let Some(owner) = owner else {
        return selector;
    };
    let Some((group, version)) = parse_group_version(&owner.api_version) else {
        return selector;
    };
    let key = ns_key(&pod.namespace, &owner.name);
    let add_requirements = |selector: &mut Selector, ls| {
        if let Ok(other) = Selector::from_label_selector(Some(ls)) {
            for r in other.requirements() {
                selector.add(r.clone());
            }
        }
    };
    match (group, version, owner.kind.as_str()) {
        ("", "v1", "ReplicationController") => {
            if let Some(rc) = listers.replication_controllers.get(&key) {
                let rc_sel = rc.spec.as_ref().and_then(|s| s.selector.as_ref());
                set.extend(
                    rc_sel
                        .into_iter()
                        .flatten()
                        .map(|(k, v)| (k.clone(), v.clone())),
                );
                selector = Selector::from_set(&set);
            }
        }
        ("apps", "v1", "ReplicaSet") => {
            if let Some(spec) = listers.replica_sets.get(&key).and_then(|r| r.spec.as_ref()) {
                add_requirements(&mut selector, &spec.selector);
            }
        }
        ("apps", "v1", "StatefulSet") => {
            if let Some(spec) = listers
                .stateful_sets
                .get(&key)
                .and_then(|s| s.spec.as_ref())
            {
                add_requirements(&mut selector, &spec.selector);
            }
        }
        _ => {}
    }
    selector
}

/// `schema.ParseGroupVersion`: "" and "/" are the empty group version, "v" is the core
/// group, "g/v" a named group; more slashes are an error (`None`).
fn parse_group_version(gv: &str) -> Option<(&str, &str)> {
    if gv.is_empty() || gv == "/" {
        return Some(("", ""));
    }
    match gv.matches('/').count() {
        0 => Some(("", gv)),
        1 => gv.split_once('/'),
        _ => None,
    }
}

/// Listers holding one Service, default/web, selecting `app: web`: the system default
/// constraints then apply to web pods.
#[cfg(test)]
pub(crate) fn web_service_listers() -> crate::framework::listers::Listers {
    let mut listers = crate::framework::listers::Listers::default();
    let web = serde_json::json!({"metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}}});
    listers.services.insert(
        "default/web".into(),
        Arc::new(serde_json::from_value(web).expect("a Service")),
    );
    listers
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::pod;
    use serde_json::json;

    fn tsc(v: serde_json::Value) -> TopologySpreadConstraint {
        serde_json::from_value(v).unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_and_policies() {
        let cs = [
            tsc(
                json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}}}),
            ),
            tsc(
                json!({"maxSkew": 2, "topologyKey": "host", "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {}, "minDomains": 3, "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor"}),
            ),
        ];
        let hard = filter_constraints(&cs, &Labels::new(), DO_NOT_SCHEDULE).unwrap();
        assert_eq!(hard.len(), 1);
        assert_eq!(hard[0].min_domains, 1);
        assert!(hard[0].honor_node_affinity && !hard[0].honor_node_taints);
        let soft = filter_constraints(&cs, &Labels::new(), SCHEDULE_ANYWAY).unwrap();
        assert_eq!(soft[0].min_domains, 3);
        assert!(!soft[0].honor_node_affinity && soft[0].honor_node_taints);
        assert!(soft[0].selector.is_empty());
    }

    #[test]
    fn match_label_keys_merge_into_the_selector() {
        let pod_labels = labels(&[("app", "web"), ("hash", "abc")]);
        let c = |sel: serde_json::Value| {
            let mut v = json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                "matchLabelKeys": ["hash", "missing"]});
            if !sel.is_null() {
                v["labelSelector"] = sel;
            }
            filter_constraints(&[tsc(v)], &pod_labels, DO_NOT_SCHEDULE).unwrap()[0]
                .selector
                .clone()
        };
        let s = c(json!({"matchLabels": {"app": "web"}}));
        assert!(s.matches(&pod_labels));
        assert!(!s.matches(&labels(&[("app", "web"), ("hash", "other")])));
        // An empty selector becomes hash=abc, and counts pods again.
        let s = c(json!({}));
        assert!(!s.is_empty());
        assert!(s.matches(&labels(&[("hash", "abc")])));
        // A nil selector keeps matching nothing.
        assert!(c(serde_json::Value::Null).is_nothing());
    }

    #[test]
    fn invalid_selector_is_an_error() {
        let c = tsc(
            json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}}),
        );
        assert!(filter_constraints(&[c], &Labels::new(), DO_NOT_SCHEDULE).is_err());
    }

    #[test]
    fn counting_skips_other_namespaces_terminating_and_empty_selectors() {
        let pods = vec![
            pod(
                json!({"metadata": {"name": "a", "labels": {"app": "web"}}, "spec": {"containers": []}}),
            ),
            pod(
                json!({"metadata": {"name": "b", "namespace": "other", "labels": {"app": "web"}}, "spec": {"containers": []}}),
            ),
            pod(
                json!({"metadata": {"name": "c", "labels": {"app": "web"}, "deletionTimestamp": "2024-01-01T00:00:00Z"}, "spec": {"containers": []}}),
            ),
            pod(
                json!({"metadata": {"name": "d", "labels": {"app": "db"}}, "spec": {"containers": []}}),
            ),
        ];
        let web = Selector::from_set(&labels(&[("app", "web")]));
        assert_eq!(count_pods_match_selector(&pods, &web, "default"), 1);
        assert_eq!(
            count_pods_match_selector(&pods, &Selector::everything(), "default"),
            0
        );
        assert_eq!(
            count_pods_match_selector(&pods, &Selector::nothing(), "default"),
            0
        );
    }

    #[test]
    fn domain_counts_mix_indexed_and_other_values() {
        use crate::framework::Snapshot;
        let node = |name: &str, zone: &str| {
            Arc::new(
                serde_json::from_value(
                    json!({"metadata": {"name": name, "labels": {"zone": zone}}}),
                )
                .unwrap(),
            )
        };
        let snap = Snapshot::new(vec![node("n1", "b"), node("n2", "d")], []);
        let mut m = DomainCounts::with_topology(snap.topology("zone"));
        assert!(m.is_empty());
        assert_eq!(m.get("b"), None);
        assert_eq!(m.add("b", 0), 0);
        assert_eq!(m.add("c", 2), 2);
        assert_eq!(m.add("a", -1), -1);
        assert_eq!(m.add("c", 1), 3);
        assert_eq!(m.get("b"), Some(0));
        assert_eq!(m.get("d"), None);
        assert_eq!(m.len(), 3);
        assert_eq!(m.sorted(), [("a", -1), ("b", 0), ("c", 3)]);
        let mut plain = DomainCounts::default();
        for (v, n) in [("c", 3), ("a", -1), ("b", 0)] {
            plain.add(v, n);
        }
        assert_eq!(plain, m);
    }

    #[test]
    fn group_versions() {
        assert_eq!(parse_group_version("v1"), Some(("", "v1")));
        assert_eq!(parse_group_version("apps/v1"), Some(("apps", "v1")));
        assert_eq!(parse_group_version(""), Some(("", "")));
        assert_eq!(parse_group_version("a/b/c"), None);
    }

    fn listers_with(objs: serde_json::Value) -> Listers {
        let mut l = Listers::default();
        for o in objs.as_array().unwrap() {
            let ns = o["metadata"]["namespace"].as_str().unwrap_or("default");
            let key = ns_key(ns, o["metadata"]["name"].as_str().unwrap());
            match o["kind"].as_str().unwrap() {
                "Service" => {
                    l.services
                        .insert(key, Arc::new(serde_json::from_value(o.clone()).unwrap()));
                }
                "ReplicaSet" => {
                    l.replica_sets
                        .insert(key, Arc::new(serde_json::from_value(o.clone()).unwrap()));
                }
                "StatefulSet" => {
                    l.stateful_sets
                        .insert(key, Arc::new(serde_json::from_value(o.clone()).unwrap()));
                }
                "ReplicationController" => {
                    l.replication_controllers
                        .insert(key, Arc::new(serde_json::from_value(o.clone()).unwrap()));
                }
                k => panic!("unexpected kind {k}"),
            }
        }
        l
    }

    #[test]
    fn default_selector_from_services_and_controllers() {
        let listers = listers_with(json!([
            {"kind": "Service", "metadata": {"name": "s1"}, "spec": {"selector": {"app": "web"}}},
            {"kind": "Service", "metadata": {"name": "s2"}, "spec": {"selector": {"app": "db"}}},
            {"kind": "Service", "metadata": {"name": "s3"}, "spec": {}},
            {"kind": "Service", "metadata": {"name": "s4", "namespace": "x"}, "spec": {"selector": {"tier": "fe"}}},
            {"kind": "ReplicaSet", "metadata": {"name": "rs"}, "spec": {"selector": {"matchLabels": {"tier": "fe"}}}},
            {"kind": "StatefulSet", "metadata": {"name": "ss"}, "spec": {"selector": {"matchExpressions": [{"key": "ord", "operator": "Exists"}]}, "serviceName": "x", "template": {}}},
            {"kind": "ReplicationController", "metadata": {"name": "rc"}, "spec": {"selector": {"rc": "yes"}}},
        ]));
        let mk = |owner: serde_json::Value| {
            let mut v = json!({"metadata": {"name": "p", "labels": {"app": "web", "tier": "fe", "ord": "1", "rc": "yes"}},
                "spec": {"containers": []}});
            if !owner.is_null() {
                v["metadata"]["ownerReferences"] = json!([owner]);
            }
            pod(v)
        };
        let sel = default_selector(&mk(serde_json::Value::Null), &listers);
        assert_eq!(sel.to_string(), "app=web");
        let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true});
        assert_eq!(
            default_selector(&mk(rs), &listers).to_string(),
            "app=web,tier=fe"
        );
        let ss = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "ss", "uid": "u", "controller": true});
        assert_eq!(
            default_selector(&mk(ss), &listers).to_string(),
            "app=web,ord"
        );
        let rc = json!({"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "uid": "u", "controller": true});
        assert_eq!(
            default_selector(&mk(rc), &listers).to_string(),
            "app=web,rc=yes"
        );
        // Not the controller, or an unknown kind: services only.
        let not_ctrl =
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u"});
        assert_eq!(
            default_selector(&mk(not_ctrl), &listers).to_string(),
            "app=web"
        );
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "name": "rs", "uid": "u", "controller": true});
        assert_eq!(default_selector(&mk(job), &listers).to_string(), "app=web");
        // Nothing selects the pod: an empty selector.
        let lone = pod(
            json!({"metadata": {"name": "p", "labels": {"x": "y"}}, "spec": {"containers": []}}),
        );
        assert!(default_selector(&lone, &listers).is_empty());
    }
}
