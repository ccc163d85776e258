//! The in-tree plugins of kube-scheduler v1.35, one module per plugin named as upstream,
//! two out-of-tree Permit plugins users can enable (Coscheduling from
//! kubernetes-sigs/scheduler-plugins, and kubestep's own ManualApproval), and the registry
//! that maps plugin names to them.

pub mod coscheduling;
pub mod default_binder;
pub mod default_preemption;
pub mod dynamic_resources;
pub mod helper;
pub mod image_locality;
pub mod interpodaffinity;
pub mod manual_approval;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_unschedulable;
pub mod noderesources;
pub mod nodevolumelimits;
pub mod podtopologyspread;
pub mod queue_sort;
pub mod registry;
pub mod scheduling_gates;
pub mod signers;
pub mod taint_toleration;
pub mod volume_restrictions;
pub mod volume_zone;
pub mod volumebinding;

#[cfg(test)]
pub mod conformance_cases;
#[cfg(test)]
mod hint_map_tests;
#[cfg(test)]
pub mod testing;
