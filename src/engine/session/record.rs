//! The session's record of each pod: what it is now (the summary's rows).

use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;

/// What a pod is, from the session's point of view (the summary's `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PodStatus {
    Pending,
    Gated,
    Unschedulable,
    Waiting,
    Bound,
    /// For a scheduler this configuration has no profile for.
    Ignored,
}

#[derive(Debug, Clone, Serialize)]
pub struct PodRecord {
    pub pod: String,
    #[serde(skip)]
    pub uid: String,
    pub node: Option<String>,
    pub status: PodStatus,
    pub message: Option<String>,
    #[serde(skip)]
    pub attempts: u32,
    /// `Core::records_version` when the record last changed (time travel: a record that
    /// has not changed since a moment was already like this then).
    #[serde(skip)]
    pub version: u64,
}

pub fn pod_key(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or("default"),
        p.metadata.name.as_deref().unwrap_or("")
    )
}
