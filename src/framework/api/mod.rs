//! Helpers over k8s-openapi types: quantities, resource lists, label selectors,
//! taints and tolerations, node affinity, storage (PV / PVC helpers, CSI translation).

pub mod csi_translation;
pub mod dra;
pub mod labels;
pub mod node_affinity;
pub mod pod_resources;
pub mod quantity;
pub mod taints;
pub mod volume;
