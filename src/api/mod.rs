//! Helpers over k8s-openapi types: quantities, resource lists, label selectors,
//! taints and tolerations, node affinity.

pub mod labels;
pub mod node_affinity;
pub mod pod_resources;
pub mod quantity;
pub mod taints;
