//! The in-tree registry: plugin name → factory that builds the plugin from its args.

use std::sync::Arc;

use super::*;
use crate::config::{
    self, FieldPath, PluginArgs, PluginRef, PluginSet, Plugins, Profile, ScoringStrategyType,
};
use crate::framework::plugin::{MAX_NODE_SCORE, Plugin};
use crate::framework::profile::{FactoryContext, Framework, Registry};
use noderesources::resource_allocation::{MAX_CUSTOM_PRIORITY_SCORE, ShapePoint, Strategy};

type Built = Result<Arc<dyn Plugin>, String>;

fn simple<P: Plugin + Default + 'static>(_: &FactoryContext) -> Built {
    Ok(Arc::new(P::default()))
}

/// Upstream's message when a plugin gets args of another type.
fn wrong_args(want: &str, got: &PluginArgs) -> String {
    format!(
        "want args to be of type {want}, got {}",
        got.kind().unwrap_or("unknown args")
    )
}

fn node_affinity(ctx: &FactoryContext) -> Built {
    let added = match ctx.args {
        None => None,
        Some(PluginArgs::NodeAffinity(a)) => a.added_affinity.as_ref(),
        Some(PluginArgs::Other(v)) if v.is_null() => None,
        Some(other) => {
            return Err(format!(
                "args are not of type NodeAffinityArgs, got {}",
                other.kind().unwrap_or("unknown args")
            ));
        }
    };
    Ok(Arc::new(node_affinity::NodeAffinity::new(added)?))
}

fn fit(ctx: &FactoryContext) -> Built {
    let args = match ctx.args {
        None => config::NodeResourcesFitArgs::default(),
        Some(a) if a.is_absent() => config::NodeResourcesFitArgs::default(),
        Some(PluginArgs::NodeResourcesFit(a)) => a.clone(),
        Some(other) => return Err(wrong_args("NodeResourcesFitArgs", other)),
    };
    let errs = config::validate_node_resources_fit_args(&args, &FieldPath::root());
    if !errs.is_empty() {
        return Err(errs
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join(", "));
    }
    let s = &args.scoring_strategy;
    let strategy = match &s.type_ {
        ScoringStrategyType::LeastAllocated => Strategy::LeastAllocated,
        ScoringStrategyType::MostAllocated => Strategy::MostAllocated,
        ScoringStrategyType::RequestedToCapacityRatio => {
            let shape = s
                .requested_to_capacity_ratio
                .as_ref()
                .map(|r| r.shape.as_slice())
                .unwrap_or(&[]);
            Strategy::RequestedToCapacityRatio(
                shape
                    .iter()
                    .map(|p| ShapePoint {
                        utilization: i64::from(p.utilization),
                        score: i64::from(p.score) * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE),
                    })
                    .collect(),
            )
        }
        ScoringStrategyType::Other(t) => {
            return Err(format!("scoring strategy {t} is not supported"));
        }
    };
    Ok(Arc::new(noderesources::Fit::new(
        noderesources::fit::FitArgs {
            ignored_resources: args.ignored_resources.clone(),
            ignored_resource_groups: args.ignored_resource_groups.clone(),
            strategy,
            resources: s.resources.clone(),
        },
    )))
}

fn balanced_allocation(ctx: &FactoryContext) -> Built {
    let resources = match ctx.args {
        None => noderesources::resource_allocation::default_resources(),
        Some(a) if a.is_absent() => noderesources::resource_allocation::default_resources(),
        Some(PluginArgs::NodeResourcesBalancedAllocation(a)) => a.resources.clone(),
        Some(other) => return Err(wrong_args("NodeResourcesBalancedAllocationArgs", other)),
    };
    Ok(Arc::new(noderesources::BalancedAllocation::new(resources)))
}

fn volume_binding(ctx: &FactoryContext) -> Built {
    let timeout = match ctx.args {
        None => config::VolumeBindingArgs::default().bind_timeout_seconds,
        Some(a) if a.is_absent() => config::VolumeBindingArgs::default().bind_timeout_seconds,
        Some(PluginArgs::VolumeBinding(a)) => a.bind_timeout_seconds,
        Some(other) => return Err(wrong_args("VolumeBindingArgs", other)),
    };
    Ok(Arc::new(volumebinding::VolumeBinding::new(timeout)))
}

fn default_preemption(ctx: &FactoryContext) -> Built {
    let args = match ctx.args {
        None => config::DefaultPreemptionArgs::default(),
        Some(a) if a.is_absent() => config::DefaultPreemptionArgs::default(),
        Some(PluginArgs::DefaultPreemption(a)) => a.clone(),
        Some(other) => return Err(wrong_args("DefaultPreemptionArgs", other)),
    };
    let errs = config::validation::validate_default_preemption_args(&FieldPath::root(), &args);
    if !errs.is_empty() {
        return Err(errs
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join(", "));
    }
    Ok(Arc::new(default_preemption::DefaultPreemption::new(
        args.min_candidate_nodes_percentage,
        args.min_candidate_nodes_absolute,
    )))
}

fn validation_error(errs: &[config::FieldError]) -> Option<String> {
    (!errs.is_empty()).then(|| {
        errs.iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    })
}

fn pod_topology_spread(ctx: &FactoryContext) -> Built {
    let args = match ctx.args {
        None => config::PodTopologySpreadArgs::default(),
        Some(a) if a.is_absent() => config::PodTopologySpreadArgs::default(),
        Some(PluginArgs::PodTopologySpread(a)) => a.clone(),
        Some(other) => return Err(wrong_args("PodTopologySpreadArgs", other)),
    };
    let errs = config::validation::validate_pod_topology_spread_args(&FieldPath::root(), &args);
    if let Some(e) = validation_error(&errs) {
        return Err(e);
    }
    Ok(Arc::new(podtopologyspread::PodTopologySpread::new(
        args.default_constraints.clone(),
        args.is_system_defaulted(),
    )))
}

fn inter_pod_affinity(ctx: &FactoryContext) -> Built {
    let args = match ctx.args {
        None => config::InterPodAffinityArgs::default(),
        Some(a) if a.is_absent() => config::InterPodAffinityArgs::default(),
        Some(PluginArgs::InterPodAffinity(a)) => a.clone(),
        Some(other) => return Err(wrong_args("InterPodAffinityArgs", other)),
    };
    let errs = config::validation::validate_inter_pod_affinity_args(&FieldPath::root(), &args);
    if let Some(e) = validation_error(&errs) {
        return Err(e);
    }
    Ok(Arc::new(interpodaffinity::InterPodAffinity::new(
        args.hard_pod_affinity_weight,
        args.ignore_preferred_terms_of_existing_pods,
    )))
}

fn coscheduling(ctx: &FactoryContext) -> Built {
    let args = coscheduling::CoschedulingArgs::from_plugin_args(ctx.args)?;
    Ok(Arc::new(coscheduling::Coscheduling::new(args)?))
}

fn manual_approval(ctx: &FactoryContext) -> Built {
    let args = manual_approval::ManualApprovalArgs::from_plugin_args(ctx.args)?;
    Ok(Arc::new(manual_approval::ManualApproval::new(&args)?))
}

/// Every plugin kubestep implements: kube-scheduler's in-tree plugins, and the out-of-tree
/// ones a profile may enable (Coscheduling, ManualApproval).
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
    r.register(node_affinity::NAME, node_affinity);
    r.register(node_ports::NAME, simple::<node_ports::NodePorts>);
    r.register(noderesources::fit::NAME, fit);
    r.register(
        noderesources::balanced_allocation::NAME,
        balanced_allocation,
    );
    r.register(podtopologyspread::NAME, pod_topology_spread);
    r.register(interpodaffinity::NAME, inter_pod_affinity);
    r.register(
        image_locality::NAME,
        simple::<image_locality::ImageLocality>,
    );
    r.register(
        volume_restrictions::NAME,
        simple::<volume_restrictions::VolumeRestrictions>,
    );
    r.register(
        nodevolumelimits::NAME,
        simple::<nodevolumelimits::CsiLimits>,
    );
    r.register(volumebinding::NAME, volume_binding);
    r.register(volume_zone::NAME, simple::<volume_zone::VolumeZone>);
    r.register(
        dynamic_resources::NAME,
        dynamic_resources::DynamicResources::from_args,
    );
    r.register(default_preemption::NAME, default_preemption);
    r.register(
        default_binder::NAME,
        simple::<default_binder::DefaultBinder>,
    );
    r.register(coscheduling::NAME, coscheduling);
    r.register(manual_approval::NAME, manual_approval);
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
        percentage_of_nodes_to_score: None,
        plugins: Plugins {
            queue_sort: set(queue_sort::NAME),
            bind: set(default_binder::NAME),
            ..Default::default()
        },
        plugin_config: Vec::new(),
    };
    match Framework::new(&in_tree(), &profile) {
        Ok(f) => f,
        Err(e) => unreachable!("the minimal profile is valid: {e}"),
    }
}
