//! Arguments of the in-tree plugins that have an args type, with upstream's defaults
//! (`types_pluginargs.go`, `v1/defaults.go`).
//!
//! `Default` for each args type is the args before gate-dependent defaulting;
//! `defaulted(features)` is what upstream appends for an enabled plugin that has no
//! `pluginConfig` entry.

use k8s_openapi::api::core::v1::{NodeAffinity, TopologySpreadConstraint};
use serde::{Serialize, Serializer};

use super::duration::Duration;
use crate::features::{Features, Gate};

/// `MaxCustomPriorityScore`: the top of a utilization shape's score axis.
pub const MAX_CUSTOM_PRIORITY_SCORE: i32 = 10;

/// The args of one plugin, typed by the plugin's name.
#[derive(Clone, Debug, PartialEq)]
pub enum PluginArgs {
    DefaultPreemption(DefaultPreemptionArgs),
    InterPodAffinity(InterPodAffinityArgs),
    NodeAffinity(NodeAffinityArgs),
    NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs),
    NodeResourcesFit(NodeResourcesFitArgs),
    PodTopologySpread(PodTopologySpreadArgs),
    VolumeBinding(VolumeBindingArgs),
    DynamicResources(DynamicResourcesArgs),
    /// Args of a plugin with no in-tree args type (out-of-tree plugins such as Coscheduling
    /// decode these themselves). `Null` when the entry had no args.
    Other(serde_json::Value),
}

/// The plugins that have an args type, i.e. `<Name>Args` is a registered kind.
pub const PLUGINS_WITH_ARGS: [&str; 8] = [
    "DefaultPreemption",
    "DynamicResources",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesFit",
    "PodTopologySpread",
    "VolumeBinding",
];

/// An in-tree args type and the `PluginArgs` variant that holds it, so a plugin's factory
/// can ask for its own args by type (`FactoryContext::args`).
pub trait TypedArgs: Clone + Default {
    /// The kind upstream names in its errors (`NodeResourcesFitArgs`).
    const KIND: &'static str;
    fn of(args: &PluginArgs) -> Option<&Self>;
    /// The args upstream gives an enabled plugin without a `pluginConfig` entry.
    fn defaulted(features: &Features) -> Self {
        let plugin = Self::KIND.trim_end_matches("Args");
        PluginArgs::default_for(plugin, features)
            .and_then(|a| Self::of(&a).cloned())
            .unwrap_or_default()
    }
}

macro_rules! typed_args {
    ($($variant:ident => $ty:ident),* $(,)?) => {$(
        impl TypedArgs for $ty {
            const KIND: &'static str = stringify!($ty);
            fn of(args: &PluginArgs) -> Option<&Self> {
                match args {
                    PluginArgs::$variant(a) => Some(a),
                    _ => None,
                }
            }
        }
    )*};
}

typed_args! {
    DefaultPreemption => DefaultPreemptionArgs,
    InterPodAffinity => InterPodAffinityArgs,
    NodeAffinity => NodeAffinityArgs,
    NodeResourcesBalancedAllocation => NodeResourcesBalancedAllocationArgs,
    NodeResourcesFit => NodeResourcesFitArgs,
    PodTopologySpread => PodTopologySpreadArgs,
    VolumeBinding => VolumeBindingArgs,
    DynamicResources => DynamicResourcesArgs,
}

impl PluginArgs {
    /// The defaulted args of a plugin that has an args type, or `None` for other plugins.
    pub fn default_for(plugin: &str, features: &Features) -> Option<PluginArgs> {
        let mut a = PluginArgs::undefaulted(plugin)?;
        a.set_defaults(features);
        Some(a)
    }

    /// The args before gate-dependent defaulting (`set_defaults` completes them).
    pub(crate) fn undefaulted(plugin: &str) -> Option<PluginArgs> {
        Some(match plugin {
            "DefaultPreemption" => PluginArgs::DefaultPreemption(Default::default()),
            "DynamicResources" => PluginArgs::DynamicResources(Default::default()),
            "InterPodAffinity" => PluginArgs::InterPodAffinity(Default::default()),
            "NodeAffinity" => PluginArgs::NodeAffinity(Default::default()),
            "NodeResourcesBalancedAllocation" => {
                PluginArgs::NodeResourcesBalancedAllocation(Default::default())
            }
            "NodeResourcesFit" => PluginArgs::NodeResourcesFit(Default::default()),
            "PodTopologySpread" => PluginArgs::PodTopologySpread(Default::default()),
            "VolumeBinding" => PluginArgs::VolumeBinding(Default::default()),
            _ => return None,
        })
    }

    /// The args kind (`NodeResourcesFitArgs`), or `None` for `Other`.
    pub fn kind(&self) -> Option<&'static str> {
        Some(match self {
            PluginArgs::DefaultPreemption(_) => "DefaultPreemptionArgs",
            PluginArgs::InterPodAffinity(_) => "InterPodAffinityArgs",
            PluginArgs::NodeAffinity(_) => "NodeAffinityArgs",
            PluginArgs::NodeResourcesBalancedAllocation(_) => "NodeResourcesBalancedAllocationArgs",
            PluginArgs::NodeResourcesFit(_) => "NodeResourcesFitArgs",
            PluginArgs::PodTopologySpread(_) => "PodTopologySpreadArgs",
            PluginArgs::VolumeBinding(_) => "VolumeBindingArgs",
            PluginArgs::DynamicResources(_) => "DynamicResourcesArgs",
            PluginArgs::Other(_) => return None,
        })
    }

    /// True for `Other(Null)`: an out-of-tree entry without args.
    pub fn is_absent(&self) -> bool {
        matches!(self, PluginArgs::Other(serde_json::Value::Null))
    }

    /// Applies the defaults that upstream's `SetDefaults_<Kind>` applies to an already
    /// decoded object (list- and zero-based rules; unset scalars were filled at decoding).
    pub fn set_defaults(&mut self, features: &Features) {
        match self {
            PluginArgs::NodeResourcesBalancedAllocation(a) => a.set_defaults(),
            PluginArgs::NodeResourcesFit(a) => a.set_defaults(),
            PluginArgs::PodTopologySpread(a) => a.set_defaults(),
            PluginArgs::VolumeBinding(a) => a.set_defaults(features),
            PluginArgs::DynamicResources(a) => a.set_defaults(features),
            _ => {}
        }
    }

    pub fn as_node_resources_fit(&self) -> Option<&NodeResourcesFitArgs> {
        match self {
            PluginArgs::NodeResourcesFit(a) => Some(a),
            _ => None,
        }
    }
    pub fn as_pod_topology_spread(&self) -> Option<&PodTopologySpreadArgs> {
        match self {
            PluginArgs::PodTopologySpread(a) => Some(a),
            _ => None,
        }
    }
    pub fn as_other(&self) -> Option<&serde_json::Value> {
        match self {
            PluginArgs::Other(v) => Some(v),
            _ => None,
        }
    }
}

impl Serialize for PluginArgs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PluginArgs::DefaultPreemption(a) => a.serialize(s),
            PluginArgs::InterPodAffinity(a) => a.serialize(s),
            PluginArgs::NodeAffinity(a) => a.serialize(s),
            PluginArgs::NodeResourcesBalancedAllocation(a) => a.serialize(s),
            PluginArgs::NodeResourcesFit(a) => a.serialize(s),
            PluginArgs::PodTopologySpread(a) => a.serialize(s),
            PluginArgs::VolumeBinding(a) => a.serialize(s),
            PluginArgs::DynamicResources(a) => a.serialize(s),
            PluginArgs::Other(v) => v.serialize(s),
        }
    }
}

/// `DefaultPreemptionArgs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DefaultPreemptionArgs {
    /// Default 10.
    pub min_candidate_nodes_percentage: i32,
    /// Default 100.
    pub min_candidate_nodes_absolute: i32,
}

impl Default for DefaultPreemptionArgs {
    fn default() -> Self {
        DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 100,
        }
    }
}

/// `InterPodAffinityArgs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InterPodAffinityArgs {
    /// Default 1.
    pub hard_pod_affinity_weight: i32,
    pub ignore_preferred_terms_of_existing_pods: bool,
}

impl Default for InterPodAffinityArgs {
    fn default() -> Self {
        InterPodAffinityArgs {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}

/// `NodeAffinityArgs`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeAffinityArgs {
    /// Applied to every pod in addition to its own node affinity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_affinity: Option<NodeAffinity>,
}

/// A resource and its weight in scoring.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResourceSpec {
    pub name: String,
    pub weight: i64,
}

impl ResourceSpec {
    pub fn new(name: &str, weight: i64) -> Self {
        ResourceSpec {
            name: name.to_string(),
            weight,
        }
    }
}

/// `cpu` and `memory`, weight 1 each: the default scoring resources.
pub fn default_resource_spec() -> Vec<ResourceSpec> {
    vec![ResourceSpec::new("cpu", 1), ResourceSpec::new("memory", 1)]
}

/// `NodeResourcesBalancedAllocationArgs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeResourcesBalancedAllocationArgs {
    /// Default cpu and memory; a weight of 0 becomes 1.
    pub resources: Vec<ResourceSpec>,
}

impl Default for NodeResourcesBalancedAllocationArgs {
    fn default() -> Self {
        NodeResourcesBalancedAllocationArgs {
            resources: default_resource_spec(),
        }
    }
}

impl NodeResourcesBalancedAllocationArgs {
    pub fn set_defaults(&mut self) {
        if self.resources.is_empty() {
            self.resources = default_resource_spec();
            return;
        }
        for r in &mut self.resources {
            if r.weight == 0 {
                r.weight = 1;
            }
        }
    }
}

/// A point of a utilization-to-score shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct UtilizationShapePoint {
    pub utilization: i32,
    pub score: i32,
}

/// The scoring strategy of NodeResourcesFit. Values other than the three known ones are
/// kept so that the plugin constructor can reject them as upstream does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScoringStrategyType {
    LeastAllocated,
    MostAllocated,
    RequestedToCapacityRatio,
    /// An unsupported value (including the empty string), rejected by
    /// `validate_node_resources_fit_args`.
    Other(String),
}

impl ScoringStrategyType {
    pub const SUPPORTED: [&'static str; 3] = [
        "LeastAllocated",
        "MostAllocated",
        "RequestedToCapacityRatio",
    ];

    pub fn parse(s: &str) -> Self {
        match s {
            "LeastAllocated" => ScoringStrategyType::LeastAllocated,
            "MostAllocated" => ScoringStrategyType::MostAllocated,
            "RequestedToCapacityRatio" => ScoringStrategyType::RequestedToCapacityRatio,
            other => ScoringStrategyType::Other(other.to_string()),
        }
    }
    pub fn as_str(&self) -> &str {
        match self {
            ScoringStrategyType::LeastAllocated => "LeastAllocated",
            ScoringStrategyType::MostAllocated => "MostAllocated",
            ScoringStrategyType::RequestedToCapacityRatio => "RequestedToCapacityRatio",
            ScoringStrategyType::Other(s) => s,
        }
    }
}

impl Serialize for ScoringStrategyType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// `RequestedToCapacityRatioParam`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RequestedToCapacityRatioParam {
    pub shape: Vec<UtilizationShapePoint>,
}

/// `ScoringStrategy`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoringStrategy {
    #[serde(rename = "type")]
    pub type_: ScoringStrategyType,
    /// Default cpu and memory; a weight of 0 becomes 1.
    pub resources: Vec<ResourceSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_to_capacity_ratio: Option<RequestedToCapacityRatioParam>,
}

impl Default for ScoringStrategy {
    fn default() -> Self {
        ScoringStrategy {
            type_: ScoringStrategyType::LeastAllocated,
            resources: default_resource_spec(),
            requested_to_capacity_ratio: None,
        }
    }
}

/// `NodeResourcesFitArgs`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeResourcesFitArgs {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_resources: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_resource_groups: Vec<String>,
    /// Default LeastAllocated over cpu and memory.
    pub scoring_strategy: ScoringStrategy,
}

impl NodeResourcesFitArgs {
    pub fn set_defaults(&mut self) {
        let s = &mut self.scoring_strategy;
        if s.resources.is_empty() {
            s.resources = default_resource_spec();
        }
        for r in &mut s.resources {
            if r.weight == 0 {
                r.weight = 1;
            }
        }
    }
}

/// How PodTopologySpread finds constraints for pods that define none.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum PodTopologySpreadConstraintsDefaulting {
    /// The built-in constraints (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway).
    #[default]
    System,
    /// `defaultConstraints` from the args.
    List,
    /// An unsupported value; validation rejects it.
    Other(String),
}

impl PodTopologySpreadConstraintsDefaulting {
    pub fn parse(s: &str) -> Self {
        match s {
            "System" => Self::System,
            "List" => Self::List,
            other => Self::Other(other.to_string()),
        }
    }
    pub fn as_str(&self) -> &str {
        match self {
            Self::System => "System",
            Self::List => "List",
            Self::Other(s) => s,
        }
    }
}

impl Serialize for PodTopologySpreadConstraintsDefaulting {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// `PodTopologySpreadArgs`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodTopologySpreadArgs {
    /// Must be empty with `System` defaulting.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub default_constraints: Vec<TopologySpreadConstraint>,
    pub defaulting_type: PodTopologySpreadConstraintsDefaulting,
}

/// The constraints kube-scheduler uses with `System` defaulting.
pub fn system_default_constraints() -> Vec<TopologySpreadConstraint> {
    vec![
        TopologySpreadConstraint {
            topology_key: "kubernetes.io/hostname".to_string(),
            when_unsatisfiable: "ScheduleAnyway".to_string(),
            max_skew: 3,
            ..Default::default()
        },
        TopologySpreadConstraint {
            topology_key: "topology.kubernetes.io/zone".to_string(),
            when_unsatisfiable: "ScheduleAnyway".to_string(),
            max_skew: 5,
            ..Default::default()
        },
    ]
}

impl PodTopologySpreadArgs {
    pub fn set_defaults(&mut self) {
        if let PodTopologySpreadConstraintsDefaulting::Other(s) = &self.defaulting_type
            && s.is_empty()
        {
            self.defaulting_type = PodTopologySpreadConstraintsDefaulting::System;
        }
    }

    /// The constraints the plugin applies to pods without their own: the system defaults
    /// with `System`, otherwise `default_constraints`.
    pub fn effective_constraints(&self) -> Vec<TopologySpreadConstraint> {
        match self.defaulting_type {
            PodTopologySpreadConstraintsDefaulting::System => system_default_constraints(),
            _ => self.default_constraints.clone(),
        }
    }

    /// True when the effective constraints are the system defaults (upstream's
    /// `systemDefaulted`, which changes how scoring treats nodes without the topology keys).
    pub fn is_system_defaulted(&self) -> bool {
        self.defaulting_type == PodTopologySpreadConstraintsDefaulting::System
    }
}

/// `VolumeBindingArgs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeBindingArgs {
    /// Default 600.
    pub bind_timeout_seconds: i64,
    /// `None` unless given (StorageCapacityScoring is off in 1.35, so a given shape is
    /// rejected by validation; `Some(vec![])` is rejected too, as upstream).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<UtilizationShapePoint>>,
}

impl Default for VolumeBindingArgs {
    fn default() -> Self {
        VolumeBindingArgs {
            bind_timeout_seconds: 600,
            shape: None,
        }
    }
}

impl VolumeBindingArgs {
    pub fn set_defaults(&mut self, features: &Features) {
        if features.enabled(Gate::StorageCapacityScoring)
            && self.shape.as_ref().is_none_or(|s| s.is_empty())
        {
            self.shape = Some(vec![
                UtilizationShapePoint {
                    utilization: 0,
                    score: MAX_CUSTOM_PRIORITY_SCORE,
                },
                UtilizationShapePoint {
                    utilization: 100,
                    score: 0,
                },
            ]);
        }
    }
}

/// `DynamicResourcesArgs`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamicResourcesArgs {
    /// Default 10s when DRASchedulerFilterTimeout is on; zero disables the timeout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter_timeout: Option<Duration>,
    /// Default 10m when DRADeviceBindingConditions and DRAResourceClaimDeviceStatus are on;
    /// setting it otherwise is an error (and in 1.34, an unknown field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binding_timeout: Option<Duration>,
}

/// `DynamicResourcesFilterTimeoutDefault`.
pub const DYNAMIC_RESOURCES_FILTER_TIMEOUT_DEFAULT: Duration = Duration::from_secs(10);
/// `DynamicResourcesBindingTimeoutDefault`.
pub const DYNAMIC_RESOURCES_BINDING_TIMEOUT_DEFAULT: Duration = Duration::from_secs(600);

impl DynamicResourcesArgs {
    /// `SetDefaults_DynamicResourcesArgs`: each timeout its gate turns on, when not given.
    pub fn set_defaults(&mut self, features: &Features) {
        if self.filter_timeout.is_none() && features.enabled(Gate::DRASchedulerFilterTimeout) {
            self.filter_timeout = Some(DYNAMIC_RESOURCES_FILTER_TIMEOUT_DEFAULT);
        }
        if self.binding_timeout.is_none() && binding_timeout_enabled(features) {
            self.binding_timeout = Some(DYNAMIC_RESOURCES_BINDING_TIMEOUT_DEFAULT);
        }
    }
}

/// Whether `bindingTimeout` is a setting (both gates on), as upstream's defaulting and
/// validation ask.
pub fn binding_timeout_enabled(features: &Features) -> bool {
    features.enabled(Gate::DRADeviceBindingConditions)
        && features.enabled(Gate::DRAResourceClaimDeviceStatus)
}
