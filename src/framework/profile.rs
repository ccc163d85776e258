//! Framework: one configured profile — its plugins at each extension point, in order, with
//! score weights — built as upstream's `NewFramework` does (multiPoint expansion included).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::hints::ProfileHints;
use super::plugin::Plugin;
use super::types::PodInfo;
use crate::config::{PluginArgs, PluginSet, Profile};
pub use crate::factory::{BuildError, FactoryContext, PluginFactory, Registry};
use crate::new_framework as build;
pub use crate::new_framework::{FrameworkError, Placement};

/// A plugin enabled at an extension point.
#[derive(Clone)]
pub struct PluginEntry {
    pub name: &'static str,
    pub plugin: Arc<dyn Plugin>,
}

impl std::fmt::Debug for PluginEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The extension points, in the order kube-scheduler's framework lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum ExtensionPoint {
    PreFilter,
    Filter,
    PostFilter,
    Reserve,
    PreScore,
    Score,
    PreBind,
    Bind,
    PostBind,
    Permit,
    PreEnqueue,
    QueueSort,
}

impl ExtensionPoint {
    pub const ALL: [ExtensionPoint; 12] = [
        ExtensionPoint::PreFilter,
        ExtensionPoint::Filter,
        ExtensionPoint::PostFilter,
        ExtensionPoint::Reserve,
        ExtensionPoint::PreScore,
        ExtensionPoint::Score,
        ExtensionPoint::PreBind,
        ExtensionPoint::Bind,
        ExtensionPoint::PostBind,
        ExtensionPoint::Permit,
        ExtensionPoint::PreEnqueue,
        ExtensionPoint::QueueSort,
    ];

    /// Upstream's interface name, used in its error messages.
    pub fn interface_name(self) -> &'static str {
        match self {
            ExtensionPoint::PreFilter => "PreFilterPlugin",
            ExtensionPoint::Filter => "FilterPlugin",
            ExtensionPoint::PostFilter => "PostFilterPlugin",
            ExtensionPoint::Reserve => "ReservePlugin",
            ExtensionPoint::PreScore => "PreScorePlugin",
            ExtensionPoint::Score => "ScorePlugin",
            ExtensionPoint::PreBind => "PreBindPlugin",
            ExtensionPoint::Bind => "BindPlugin",
            ExtensionPoint::PostBind => "PostBindPlugin",
            ExtensionPoint::Permit => "PermitPlugin",
            ExtensionPoint::PreEnqueue => "PreEnqueuePlugin",
            ExtensionPoint::QueueSort => "QueueSortPlugin",
        }
    }

    pub(crate) fn implemented_by(self, p: &dyn Plugin) -> bool {
        match self {
            ExtensionPoint::PreFilter => p.as_pre_filter().is_some(),
            ExtensionPoint::Filter => p.as_filter().is_some(),
            ExtensionPoint::PostFilter => p.as_post_filter().is_some(),
            ExtensionPoint::Reserve => p.as_reserve().is_some(),
            ExtensionPoint::PreScore => p.as_pre_score().is_some(),
            ExtensionPoint::Score => p.as_score().is_some(),
            ExtensionPoint::PreBind => p.as_pre_bind().is_some(),
            ExtensionPoint::Bind => p.as_bind().is_some(),
            ExtensionPoint::PostBind => p.as_post_bind().is_some(),
            ExtensionPoint::Permit => p.as_permit().is_some(),
            ExtensionPoint::PreEnqueue => p.as_pre_enqueue().is_some(),
            ExtensionPoint::QueueSort => p.as_queue_sort().is_some(),
        }
    }

    pub(crate) fn config_set(self, p: &crate::config::Plugins) -> &PluginSet {
        match self {
            ExtensionPoint::PreFilter => &p.pre_filter,
            ExtensionPoint::Filter => &p.filter,
            ExtensionPoint::PostFilter => &p.post_filter,
            ExtensionPoint::Reserve => &p.reserve,
            ExtensionPoint::PreScore => &p.pre_score,
            ExtensionPoint::Score => &p.score,
            ExtensionPoint::PreBind => &p.pre_bind,
            ExtensionPoint::Bind => &p.bind,
            ExtensionPoint::PostBind => &p.post_bind,
            ExtensionPoint::Permit => &p.permit,
            ExtensionPoint::PreEnqueue => &p.pre_enqueue,
            ExtensionPoint::QueueSort => &p.queue_sort,
        }
    }
}

/// A configured profile, ready to run.
#[derive(Clone)]
pub struct Framework {
    pub profile_name: String,
    pub percentage_of_nodes_to_score: Option<i32>,
    points: BTreeMap<ExtensionPoint, Vec<PluginEntry>>,
    score_weights: BTreeMap<&'static str, i64>,
    /// The pod-group placement points (1.36; empty before): listed, never run.
    placement: build::Placement,
    pub plugin_args: BTreeMap<String, PluginArgs>,
    /// The Kubernetes version and gates its plugins were built for.
    pub features: Arc<crate::features::Features>,
    /// The profile's queueing-hint maps, without and with extenders, built on first use:
    /// a framework never changes after `new`, so the map is built once (as upstream does
    /// at startup) instead of at every cluster event.
    hint_maps: [std::sync::OnceLock<Arc<ProfileHints>>; 2],
    /// The PreFilter, Filter, PreScore and Score plugins without SignPod, by name (`None`:
    /// every one signs), found once.
    unsigned: std::sync::OnceLock<Option<String>>,
}

impl std::fmt::Debug for Framework {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Framework")
            .field("profile", &self.profile_name)
            .field("points", &self.points)
            .finish()
    }
}

impl Framework {
    pub fn new(
        registry: &Registry,
        profile: &Profile,
        features: &crate::features::Features,
    ) -> Result<Framework, FrameworkError> {
        let args = build::plugin_args(profile)?;
        let instances = build::instantiate(registry, profile, &args, features)?;
        let plugins = &profile.plugins;
        let name = &profile.scheduler_name;
        // Upstream's order: every point's explicit list (the placement points last), then
        // multiPoint into each, then the checks.
        let mut points = build::explicit_points(plugins, &instances)?;
        let mut placement = build::explicit_placement(plugins, &instances, features)?;
        build::expand_multi_point(plugins, &instances, &mut points)?;
        build::expand_placement(plugins, &instances, &mut placement, features)?;
        build::check_required(&points, name)?;
        build::check_placement_generate(&placement, name)?;
        let score_weights = build::score_weights(plugins, &instances, &points, features)?;
        let placement = if features.semantics.placement_plugin_sets {
            build::placement(plugins, &instances, placement)?
        } else {
            build::Placement::default()
        };
        Ok(Framework {
            profile_name: profile.scheduler_name.clone(),
            percentage_of_nodes_to_score: profile.percentage_of_nodes_to_score,
            points,
            score_weights,
            placement,
            plugin_args: args,
            features: Arc::new(features.clone()),
            hint_maps: Default::default(),
            unsigned: Default::default(),
        })
    }

    /// The profile's QueueingHintMap; `extenders` adds the registration under which
    /// extenders reject nodes.
    pub fn queueing_hints(&self, extenders: bool) -> Arc<ProfileHints> {
        Arc::clone(
            self.hint_maps[usize::from(extenders)]
                .get_or_init(|| Arc::new(ProfileHints::build(self, extenders))),
        )
    }

    pub fn plugins(&self, ep: ExtensionPoint) -> &[PluginEntry] {
        self.points.get(&ep).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Every plugin instance, once per extension point it serves.
    pub fn all_plugins(&self) -> impl Iterator<Item = &Arc<dyn Plugin>> {
        self.points.values().flatten().map(|e| &e.plugin)
    }

    /// Every plugin instance once, with its name, in a stable order.
    pub fn unique_plugins(&self) -> Vec<(&'static str, &Arc<dyn Plugin>)> {
        let mut out: Vec<(&'static str, &Arc<dyn Plugin>)> = Vec::new();
        for e in self.points.values().flatten() {
            if !out.iter().any(|(n, _)| *n == e.name) {
                out.push((e.name, &e.plugin));
            }
        }
        out
    }

    /// Plugins that keep this profile from batching (OpportunisticBatching), named.
    pub fn unsigned_plugins(&self) -> Option<&str> {
        self.unsigned
            .get_or_init(|| {
                // A plugin with SignPod answers for any pod, an empty one too.
                let probe = PodInfo::new(Arc::new(Default::default()));
                let mut names: Vec<&str> = Vec::new();
                for ep in super::batch::SIGNED_POINTS {
                    for e in self.plugins(ep) {
                        if e.plugin.sign_pod(&probe).is_none() && !names.contains(&e.name) {
                            names.push(e.name);
                        }
                    }
                }
                (!names.is_empty()).then(|| names.join(", "))
            })
            .as_deref()
    }

    /// The pod-group placement points and their plugins (from 1.36); kubestep runs no
    /// pod-group cycle, so this is what the profile would run there, for display.
    pub fn placement(&self) -> &build::Placement {
        &self.placement
    }

    pub fn score_weight(&self, name: &str) -> i64 {
        self.score_weights.get(name).copied().unwrap_or(1)
    }

    /// Names of the Filter plugins in order (positions for CycleState's skip mask).
    pub fn filter_order(&self) -> Vec<&'static str> {
        self.plugins(ExtensionPoint::Filter)
            .iter()
            .map(|e| e.name)
            .collect()
    }

    pub fn has_filter_plugins(&self) -> bool {
        !self.plugins(ExtensionPoint::Filter).is_empty()
    }

    pub fn has_score_plugins(&self) -> bool {
        !self.plugins(ExtensionPoint::Score).is_empty()
    }

    pub fn has_post_filter_plugins(&self) -> bool {
        !self.plugins(ExtensionPoint::PostFilter).is_empty()
    }

    /// Every extension point with its plugin names, for display.
    pub fn list_plugins(&self) -> Vec<(ExtensionPoint, Vec<&'static str>)> {
        self.points
            .iter()
            .map(|(ep, v)| (*ep, v.iter().map(|e| e.name).collect()))
            .collect()
    }
}
