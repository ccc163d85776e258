//! The in-tree plugins of kube-scheduler v1.35, one module per plugin named as upstream,
//! two out-of-tree Permit plugins users can enable (Coscheduling from
//! kubernetes-sigs/scheduler-plugins, and kubestep's own ManualApproval), and the registry
//! that maps plugin names to them.

pub mod coscheduling;
pub mod defaultbinder;
pub mod defaultpreemption;
pub mod dynamicresources;
pub mod helper;
pub mod imagelocality;
pub mod interpodaffinity;
pub mod manualapproval;
pub mod nodeaffinity;
pub mod nodename;
pub mod nodeports;
pub mod noderesources;
pub mod nodeunschedulable;
pub mod nodevolumelimits;
pub mod podtopologyspread;
pub mod queuesort;
pub mod registry;
pub mod schedulinggates;
pub mod signers;
pub mod tainttoleration;
pub mod volumebinding;
pub mod volumerestrictions;
pub mod volumezone;

#[cfg(test)]
pub mod conformance_cases;
#[cfg(test)]
mod hint_map_tests;
#[cfg(test)]
pub mod testing;
