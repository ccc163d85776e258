//! The in-tree plugins of kube-scheduler v1.35, one module per plugin named as upstream,
//! two out-of-tree Permit plugins users can enable (Coscheduling from
//! kubernetes-sigs/scheduler-plugins, and kubestep's own ManualApproval), and the registry
//! that maps plugin names to them: the table below declares each plugin's module and
//! its entries.

use crate::framework::factory::{PluginFactory, plain};

pub mod helper;
pub mod registry;
pub mod signers;

/// Declares each plugin's module with its registry entries (name, factory), so that adding
/// a plugin is its folder plus one line in the table below.
macro_rules! in_tree {
    ($($module:ident: $(($name:expr, $factory:expr)),+;)+) => {
        $(pub mod $module;)+
        /// Every plugin kubestep implements: kube-scheduler's in-tree plugins, and the
        /// out-of-tree ones a profile may enable (Coscheduling, ManualApproval).
        const IN_TREE: &[(&str, PluginFactory)] = &[$($(($name, $factory)),+),+];
    };
}

in_tree! {
    queuesort: (queuesort::NAME, plain::<queuesort::PrioritySort>);
    schedulinggates: (schedulinggates::NAME, plain::<schedulinggates::SchedulingGates>);
    nodeunschedulable: (nodeunschedulable::NAME, plain::<nodeunschedulable::NodeUnschedulable>);
    nodename: (nodename::NAME, plain::<nodename::NodeName>);
    tainttoleration: (tainttoleration::NAME, plain::<tainttoleration::TaintToleration>);
    nodeaffinity: (nodeaffinity::NAME, nodeaffinity::factory);
    nodeports: (nodeports::NAME, plain::<nodeports::NodePorts>);
    noderesources: (noderesources::fit::NAME, noderesources::fit::factory),
        (noderesources::balanced_allocation::NAME, noderesources::balanced_allocation::factory);
    podtopologyspread: (podtopologyspread::NAME, podtopologyspread::factory);
    interpodaffinity: (interpodaffinity::NAME, interpodaffinity::factory);
    imagelocality: (imagelocality::NAME, imagelocality::factory);
    volumerestrictions: (volumerestrictions::NAME, plain::<volumerestrictions::VolumeRestrictions>);
    nodevolumelimits: (nodevolumelimits::NAME, nodevolumelimits::csi::factory);
    volumebinding: (volumebinding::NAME, volumebinding::factory);
    volumezone: (volumezone::NAME, plain::<volumezone::VolumeZone>);
    dynamicresources: (dynamicresources::NAME, dynamicresources::factory);
    defaultpreemption: (defaultpreemption::NAME, defaultpreemption::factory);
    defaultbinder: (defaultbinder::NAME, plain::<defaultbinder::DefaultBinder>);
    nodedeclaredfeatures: (nodedeclaredfeatures::NAME, nodedeclaredfeatures::factory);
    coscheduling: (coscheduling::NAME, coscheduling::factory);
    manualapproval: (manualapproval::NAME, manualapproval::factory);
}

#[cfg(test)]
pub mod conformance_cases;
#[cfg(test)]
mod hint_map_tests;
#[cfg(test)]
pub mod testing;
