//! QueuedPodInfo: a pod as the scheduling queue holds it.

use std::collections::BTreeSet;
use std::sync::Arc;

use jiff::Timestamp;

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
