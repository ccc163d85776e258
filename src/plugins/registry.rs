//! The in-tree registry: plugin name → factory that reads the plugin's args.

use std::sync::Arc;

use super::*;
use crate::config::{PluginRef, PluginSet, Plugins, Profile};
use crate::framework::profile::{FactoryContext, Framework, Registry};

fn simple<P: crate::framework::plugin::Plugin + Default + 'static>(
    _: &FactoryContext,
) -> Result<Arc<dyn crate::framework::plugin::Plugin>, String> {
    Ok(Arc::new(P::default()))
}

/// Every in-tree plugin kubestep implements.
pub fn in_tree() -> Registry {
    let mut r = Registry::default();
    r.register(queue_sort::NAME, simple::<queue_sort::PrioritySort>);
    r.register(
        scheduling_gates::NAME,
        simple::<scheduling_gates::SchedulingGates>,
    );
    r.register(
        node_unschedulable::NAME,
        simple::<node_unschedulable::NodeUnschedulable>,
    );
    r.register(node_name::NAME, simple::<node_name::NodeName>);
    r.register(
        taint_toleration::NAME,
        simple::<taint_toleration::TaintToleration>,
    );
    r.register(node_affinity::NAME, simple::<node_affinity::NodeAffinity>);
    r.register(node_ports::NAME, simple::<node_ports::NodePorts>);
    r.register(noderesources::fit::NAME, simple::<noderesources::Fit>);
    r.register(
        noderesources::balanced_allocation::NAME,
        simple::<noderesources::BalancedAllocation>,
    );
    r.register(
        podtopologyspread::NAME,
        simple::<podtopologyspread::PodTopologySpread>,
    );
    r.register(
        interpodaffinity::NAME,
        simple::<interpodaffinity::InterPodAffinity>,
    );
    r.register(
        image_locality::NAME,
        simple::<image_locality::ImageLocality>,
    );
    r.register(
        dynamic_resources::NAME,
        simple::<dynamic_resources::DynamicResources>,
    );
    r.register(
        default_binder::NAME,
        simple::<default_binder::DefaultBinder>,
    );
    r
}

/// The smallest valid profile (a queue sort and a binder), for tests of single plugins.
pub fn minimal_framework() -> Framework {
    let set = |name: &str| PluginSet {
        enabled: vec![PluginRef {
            name: name.into(),
            weight: 0,
        }],
        disabled: vec![],
    };
    let profile = Profile {
        scheduler_name: "default-scheduler".into(),
        plugins: Plugins {
            queue_sort: set(queue_sort::NAME),
            bind: set(default_binder::NAME),
            ..Default::default()
        },
        ..Default::default()
    };
    match Framework::new(&in_tree(), &profile) {
        Ok(f) => f,
        Err(e) => unreachable!("the minimal profile is valid: {e}"),
    }
}
