//! A pod's signature for OpportunisticBatching (see `batch`): the fragments plugins sign
//! and what they come to. Vocabulary plugins use, apart from the batching that uses it.

use std::sync::Arc;

use serde_json::Value;

/// Signer names: the keys of a pod's signature (upstream's, so two plugins that look at
/// the same part of the pod give one entry).
pub mod signer {
    pub const IMAGE_NAMES: &str = "v1.Pod.Spec.CanonicalImageNames()";
    pub const LABELS: &str = "v1.Pod.Labels";
    pub const NODE_NAME: &str = "v1.Pod.Spec.NodeName";
    pub const NODE_AFFINITY: &str = "v1.Pod.Spec.Affinity.NodeAffinity";
    pub const NODE_SELECTOR: &str = "v1.Pod.Spec.Affinity.NodeSelector";
    pub const HOST_PORTS: &str = "v1.Pod.Spec.HostPorts()";
    pub const RESOURCES: &str = "v1.Pod.Spec.ContainerRequestsAndOverheads()";
    pub const SCHEDULER_NAME: &str = "v1.Pod.Spec.SchedulerName";
    pub const TOLERATIONS: &str = "v1.Pod.Spec.Tolerations";
    pub const VOLUMES: &str = "v1.Pod.Spec.Volumes.NonSyntheticSources()";
}

/// One part of a pod's signature, as a plugin gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct SignFragment {
    pub key: &'static str,
    pub value: Value,
}

/// A plugin's SignPod answer: the fragments, or why the pod cannot be signed.
pub type SignResult = Result<Vec<SignFragment>, String>;

/// What a pod's signature came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signature {
    /// Pods with equal signatures get the same filter and score results on the same nodes.
    Signed(Arc<str>),
    /// A plugin cannot sign this pod (upstream logs it at V(5)).
    Unsignable {
        plugin: &'static str,
        reason: String,
    },
    /// The profile never signs: it has extenders, or plugins without SignPod.
    Disabled(String),
}

impl Signature {
    pub fn signed(&self) -> Option<&Arc<str>> {
        match self {
            Signature::Signed(s) => Some(s),
            _ => None,
        }
    }

    /// Why the pod has no signature, in words (`None` when it has one).
    pub fn why_not(&self) -> Option<String> {
        match self {
            Signature::Signed(_) => None,
            Signature::Unsignable { plugin, reason } => Some(format!("{plugin}: {reason}")),
            Signature::Disabled(why) => Some(why.clone()),
        }
    }
}
