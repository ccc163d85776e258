//! NodeToStatus, Diagnosis and FitError: why a pod fits nowhere, and upstream's
//! "0/N nodes are available: ..." message built from them.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;

use super::status::{Code, Status};

/// Per-node statuses, plus the status of every node not listed. A search rejects
/// thousands of nodes per pod, so inserts are hashed; listing sorts.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeToStatus {
    map: FxHashMap<String, Status>,
    absent: Status,
}

impl Default for NodeToStatus {
    /// Upstream `NewDefaultNodeToStatus`: absent nodes are UnschedulableAndUnresolvable
    /// with no reasons.
    fn default() -> Self {
        NodeToStatus {
            map: FxHashMap::default(),
            absent: Status::code_only(Code::UnschedulableAndUnresolvable),
        }
    }
}

impl NodeToStatus {
    pub fn new(absent: Status) -> NodeToStatus {
        NodeToStatus {
            map: FxHashMap::default(),
            absent,
        }
    }

    pub fn get(&self, node: &str) -> &Status {
        self.map.get(node).unwrap_or(&self.absent)
    }

    pub fn set(&mut self, node: impl Into<String>, status: Status) {
        self.map.insert(node.into(), status);
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn absent(&self) -> &Status {
        &self.absent
    }

    pub fn set_absent(&mut self, s: Status) {
        self.absent = s;
    }

    /// Explicit entries, sorted by node name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Status)> {
        let mut entries: Vec<(&str, &Status)> =
            self.map.iter().map(|(k, v)| (k.as_str(), v)).collect();
        entries.sort_unstable_by_key(|&(k, _)| k);
        entries.into_iter()
    }

    pub fn contains(&self, node: &str) -> bool {
        self.map.contains_key(node)
    }

    /// Nodes (from `all`, in that order) whose status has this code.
    pub fn nodes_with_code<'a>(
        &self,
        all: impl Iterator<Item = &'a str>,
        code: Code,
    ) -> Vec<&'a str> {
        all.filter(|n| self.get(n).code() == code).collect()
    }
}

/// What went wrong on each node, and which plugins said so.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diagnosis {
    pub node_to_status: NodeToStatus,
    pub unschedulable_plugins: BTreeSet<String>,
    pub pending_plugins: BTreeSet<String>,
    pub pre_filter_msg: String,
    pub post_filter_msg: String,
}

impl Diagnosis {
    pub fn add_plugin_status(&mut self, s: &Status) {
        if s.plugin().is_empty() {
            return;
        }
        // Thousands of nodes name the same few plugins: allocate only for a new one.
        let set = if s.is_rejected() {
            &mut self.unschedulable_plugins
        } else if s.code() == Code::Pending {
            &mut self.pending_plugins
        } else {
            return;
        };
        if !set.contains(s.plugin()) {
            set.insert(s.plugin().to_string());
        }
    }
}

/// The pod fits no node.
#[derive(Debug, Clone, PartialEq)]
pub struct FitError {
    pub num_all_nodes: usize,
    pub diagnosis: Diagnosis,
}

/// Upstream `NoNodeAvailableMsg`.
pub const NO_NODE_AVAILABLE_MSG: &str = "nodes are available";

impl FitError {
    /// Byte for byte upstream's `FitError.Error()`.
    pub fn message(&self) -> String {
        let d = &self.diagnosis;
        let mut msg = format!("0/{} {NO_NODE_AVAILABLE_MSG}:", self.num_all_nodes);
        if !d.pre_filter_msg.is_empty() {
            msg.push_str(&format!(" {}.", d.pre_filter_msg));
        } else {
            let histogram = reason_histogram(&d.node_to_status, self.num_all_nodes);
            if !histogram.is_empty() {
                msg.push_str(&format!(" {}.", histogram.join(", ")));
            }
        }
        if !d.post_filter_msg.is_empty() {
            msg.push_str(&format!(" {}", d.post_filter_msg));
        }
        msg
    }
}

/// "<count> <reason>" entries sorted as Go's `sort.Strings` sorts them (bytewise, count
/// included, so "10 x" comes before "2 y").
pub fn reason_histogram(statuses: &NodeToStatus, num_all_nodes: usize) -> Vec<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for s in statuses.map.values() {
        for r in s.reasons() {
            *counts.entry(r).or_default() += 1;
        }
    }
    if statuses.len() < num_all_nodes {
        for r in statuses.absent().reasons() {
            *counts.entry(r).or_default() += num_all_nodes - statuses.len();
        }
    }
    let mut out: Vec<String> = counts
        .into_iter()
        .map(|(r, c)| format!("{c} {r}"))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_sorts_like_go() {
        let mut d = Diagnosis::default();
        for i in 0..10 {
            d.node_to_status
                .set(format!("a{i}"), Status::unschedulable("Insufficient cpu"));
        }
        d.node_to_status.set(
            "b",
            Status::unresolvable("node(s) had untolerated taint(s)"),
        );
        d.node_to_status.set(
            "c",
            Status::unresolvable("node(s) had untolerated taint(s)"),
        );
        d.post_filter_msg = "no new claims to deallocate, preemption: x.".into();
        let e = FitError {
            num_all_nodes: 12,
            diagnosis: d,
        };
        assert_eq!(
            e.message(),
            "0/12 nodes are available: 10 Insufficient cpu, 2 node(s) had untolerated taint(s). no new claims to deallocate, preemption: x."
        );
    }

    #[test]
    fn absent_nodes_count_with_absent_reasons() {
        let mut nts = NodeToStatus::new(Status::unresolvable(
            "node(s) didn't satisfy plugin(s) [NodeAffinity]",
        ));
        nts.set("n1", Status::unschedulable("Insufficient cpu"));
        let d = Diagnosis {
            node_to_status: nts,
            ..Default::default()
        };
        let e = FitError {
            num_all_nodes: 25,
            diagnosis: d,
        };
        assert_eq!(
            e.message(),
            "0/25 nodes are available: 1 Insufficient cpu, 24 node(s) didn't satisfy plugin(s) [NodeAffinity]."
        );
    }

    #[test]
    fn prefilter_message_replaces_histogram() {
        let d = Diagnosis {
            pre_filter_msg: "pod has unbound immediate PersistentVolumeClaims".into(),
            post_filter_msg: "not found".into(),
            ..Default::default()
        };
        let e = FitError {
            num_all_nodes: 4,
            diagnosis: d,
        };
        assert_eq!(
            e.message(),
            "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"
        );
    }
}
