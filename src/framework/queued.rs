//! QueuedPodInfo: a pod as the scheduling queue holds it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use jiff::Timestamp;

use super::cycle_state::{RenderState, StateTree};
use super::types::PodInfo;

#[derive(Debug, Clone)]
pub struct QueuedPodInfo {
    pub pod_info: Arc<PodInfo>,
    /// When the pod was added to the queue (or last failed); QueueSort ties break on it.
    pub timestamp: Timestamp,
    pub attempts: u32,
    pub initial_attempt_timestamp: Option<Timestamp>,
    pub unschedulable_plugins: BTreeSet<String>,
    pub pending_plugins: BTreeSet<String>,
    pub gating_plugin: Option<String>,
}

impl QueuedPodInfo {
    pub fn new(pod_info: Arc<PodInfo>, timestamp: Timestamp) -> QueuedPodInfo {
        QueuedPodInfo {
            pod_info,
            timestamp,
            attempts: 0,
            initial_attempt_timestamp: None,
            unschedulable_plugins: BTreeSet::new(),
            pending_plugins: BTreeSet::new(),
            gating_plugin: None,
        }
    }
}

/// Upstream's reserved CycleState key for pods a plugin asks the queue to move to the
/// active queue once the cycle is over (Coscheduling names a gang's siblings there).
pub const PODS_TO_ACTIVATE_KEY: &str = "kubernetes.io/pods-to-activate";

/// The pods to activate after this cycle, by `namespace/name` (upstream `PodsToActivate`).
/// The queue takes them from the cycle's state; pods it does not hold as unschedulable or
/// backing off are left alone, as upstream's `Activate` does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodsToActivate {
    pub pods: BTreeMap<String, Arc<k8s_openapi::api::core::v1::Pod>>,
}

impl RenderState for PodsToActivate {
    fn render(&self) -> StateTree {
        StateTree::list("pods", self.pods.keys().cloned())
    }
}
