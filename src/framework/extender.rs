//! The scheduler extender interface (upstream `framework.Extender`): what the scheduling
//! cycle, preemption and binding need from an extender, and the record of each call. The
//! HTTP implementation lives in `crate::extender`; the framework knows only this trait.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde::{Deserialize, Deserializer, Serialize};

use crate::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use crate::types::NodeVictims;
use crate::types::PodInfo;

/// The lowest score an extender may give.
pub const MIN_EXTENDER_PRIORITY: i64 = 0;
/// The highest score an extender may give (scaled to MaxNodeScore by the scheduler).
pub const MAX_EXTENDER_PRIORITY: i64 = 10;

/// The name put among a diagnosis' unschedulable plugins when extenders rejected nodes
/// (upstream `framework.ExtenderName`).
pub const EXTENDER_NAME: &str = "Extender";

/// What went wrong talking to an extender; the message is upstream's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ExtenderError(pub String);

/// A configured extender.
pub trait Extender: std::fmt::Debug + Send + Sync {
    /// How kubestep labels this extender next to plugins (`extender:<urlPrefix>`).
    fn name(&self) -> &str;
    fn url_prefix(&self) -> &str;
    fn weight(&self) -> i64;
    fn is_filter(&self) -> bool;
    fn is_prioritizer(&self) -> bool;
    fn is_binder(&self) -> bool;
    fn supports_preemption(&self) -> bool;
    /// Scheduling goes on without this extender when it cannot be reached.
    fn is_ignorable(&self) -> bool;
    fn is_node_cache_capable(&self) -> bool;
    /// Whether the pod concerns this extender (its managed resources).
    fn is_interested(&self, pod: &Pod) -> bool;
    /// The nodes that pass, and the ones that failed with why.
    fn filter(&self, pod: &Pod, nodes: &[&NodeInfo]) -> Result<FilterResult, ExtenderError>;
    /// Scores (0..=10) for the nodes and this extender's weight.
    fn prioritize(
        &self,
        pod: &Pod,
        nodes: &[&NodeInfo],
    ) -> Result<(Vec<HostPriority>, i64), ExtenderError>;
    /// The candidates (node → victims) the extender keeps.
    fn process_preemption(
        &self,
        pod: &Pod,
        victims: &BTreeMap<String, NodeVictims>,
        snapshot: &Snapshot,
    ) -> Result<BTreeMap<String, NodeVictims>, ExtenderError>;
    /// Binds the pod to the node.
    fn bind(&self, pod: &PodInfo, node: &str) -> Result<(), ExtenderError>;
}

/// A node that passed an extender's filter.
#[derive(Debug, Clone)]
pub enum Filtered {
    /// The node at this position of the list sent (`nodeCacheCapable` extenders name
    /// the nodes that pass).
    Input(usize),
    /// A node object the extender returned (other extenders return whole nodes, and
    /// upstream goes on with these objects, without the pods the scheduler knows of).
    Returned(Box<Node>),
}

/// What a filter call decided.
#[derive(Debug, Clone, Default)]
pub struct FilterResult {
    pub nodes: Vec<Filtered>,
    pub failed: BTreeMap<String, String>,
    pub failed_and_unresolvable: BTreeMap<String, String>,
}

/// One node's score from a prioritize call (0..=10).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPriority {
    #[serde(rename = "Host", default, deserialize_with = "null_default")]
    pub host: String,
    #[serde(rename = "Score", default, deserialize_with = "null_default")]
    pub score: i64,
}

/// JSON `null` leaves a Go field at its zero value.
pub fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Upstream `hasExtenderFilters`.
pub fn has_filters(extenders: &[Arc<dyn Extender>]) -> bool {
    extenders.iter().any(|e| e.is_filter())
}

/// Whether an extender scores nodes (part of upstream `hasScoring`).
pub fn has_prioritizers(extenders: &[Arc<dyn Extender>]) -> bool {
    extenders.iter().any(|e| e.is_prioritizer())
}

/// Upstream `extendersBinding`: the first interested binder extender binds the pod.
/// `None` when none did (the framework's Bind plugins bind it); an ignorable extender's
/// failure passes the turn to the next one.
pub fn extenders_binding(
    extenders: &[Arc<dyn Extender>],
    pod: &PodInfo,
    node: &str,
) -> Option<Result<(), ExtenderError>> {
    for e in extenders {
        if !e.is_binder() || !e.is_interested(pod.pod()) {
            continue;
        }
        match e.bind(pod, node) {
            Err(err) if e.is_ignorable() => {
                tracing::info!(extender = e.name(), %err, "skipping extender in bind as it returned error and has ignorable flag set");
            }
            r => return Some(r),
        }
    }
    None
}

/// The tie-breakers of nodes that extenders scored. Upstream draws `rand.Int()` for each
/// such node, in feasible-node order; kubestep draws from splitmix64 seeded with the
/// FNV-1a hash of the pod's `namespace/name`, so a pod meets the same ties the same way
/// on every run.
#[derive(Debug, Clone)]
pub struct TieBreaker {
    state: u64,
}

impl TieBreaker {
    pub fn for_pod(pod_key: &str) -> TieBreaker {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in pod_key.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        TieBreaker { state: h }
    }

    /// The next non-negative 63-bit number (Go's `rand.Int` range).
    pub fn next_value(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) >> 1
    }
}

/// One call to an extender during a cycle, as the debugger and `explain` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtenderCall {
    /// `extender:<urlPrefix>`.
    pub extender: String,
    /// `filter`, `prioritize` or `preempt`.
    pub verb: &'static str,
    /// How many nodes (or candidates) were sent.
    pub nodes: usize,
    pub outcome: CallOutcome,
}

/// How an extender call ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "result", rename_all = "camelCase")]
pub enum CallOutcome {
    #[serde(rename_all = "camelCase")]
    Filtered {
        passed: Vec<String>,
        failed: BTreeMap<String, String>,
        failed_and_unresolvable: BTreeMap<String, String>,
        /// Nodes sent that the answer neither passed nor failed: they leave the search
        /// without a status, as upstream.
        dropped: Vec<String>,
    },
    #[serde(rename_all = "camelCase")]
    Prioritized {
        weight: i64,
        scores: Vec<HostPriority>,
    },
    #[serde(rename_all = "camelCase")]
    Preempted { candidates: Vec<String> },
    /// The call failed; `ignored` when the extender is ignorable and scheduling went on
    /// without it (prioritize errors are always ignored).
    #[serde(rename_all = "camelCase")]
    Error { message: String, ignored: bool },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tie_breakers_are_repeatable_per_pod() {
        let mut a = TieBreaker::for_pod("default/p");
        let mut b = TieBreaker::for_pod("default/p");
        let mut c = TieBreaker::for_pod("default/q");
        let (x, y, z) = (a.next_value(), b.next_value(), c.next_value());
        assert_eq!(x, y);
        assert_ne!(x, z);
        assert!(x < 1 << 63);
        assert_ne!(a.next_value(), x);
    }
}
