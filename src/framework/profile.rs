//! Framework: one configured profile — its plugins at each extension point, in order, with
//! score weights — built as upstream's `NewFramework` does (multiPoint expansion included).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::hints::ProfileHints;
use super::plugin::{MAX_NODE_SCORE, Plugin};
use super::types::PodInfo;
use crate::config::{PluginArgs, PluginSet, Profile};
pub use crate::factory::{BuildError, FactoryContext, PluginFactory, Registry};

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

    fn implemented_by(self, p: &dyn Plugin) -> bool {
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

    fn config_set(self, p: &crate::config::Plugins) -> &PluginSet {
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
    pub plugin_args: BTreeMap<String, PluginArgs>,
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

/// Upstream `MaxTotalScore` (math.MaxInt64).
const MAX_TOTAL_SCORE: i64 = i64::MAX;

impl Framework {
    pub fn new(registry: &Registry, profile: &Profile) -> Result<Framework, String> {
        let plugins = &profile.plugins;
        let mut needed = BTreeSet::new();
        for ep in ExtensionPoint::ALL {
            needed.extend(
                ep.config_set(plugins)
                    .enabled
                    .iter()
                    .map(|p| p.name.as_str()),
            );
        }
        needed.extend(plugins.multi_point.enabled.iter().map(|p| p.name.as_str()));

        let mut args: BTreeMap<String, PluginArgs> = BTreeMap::new();
        for pc in &profile.plugin_config {
            if args.insert(pc.name.clone(), pc.args.clone()).is_some() {
                return Err(format!("repeated config for plugin {}", pc.name));
            }
        }

        let mut instances: BTreeMap<&str, (&'static str, Arc<dyn Plugin>)> = BTreeMap::new();
        for name in registry.names() {
            if !needed.contains(name) {
                continue;
            }
            let factory = registry
                .get(name)
                .ok_or_else(|| format!("plugin {name:?} not registered"))?;
            let ctx = FactoryContext {
                args: args.get(name),
                profile_name: &profile.scheduler_name,
            };
            let p = factory(&ctx).map_err(|e| format!("initializing plugin {name:?}: {e}"))?;
            instances.insert(name, (name, p));
        }

        let mut points: BTreeMap<ExtensionPoint, Vec<PluginEntry>> = BTreeMap::new();
        for ep in ExtensionPoint::ALL {
            let mut list: Vec<PluginEntry> = Vec::new();
            for p in &ep.config_set(plugins).enabled {
                let Some((name, inst)) = instances.get(p.name.as_str()) else {
                    return Err(format!(
                        "{} {:?} does not exist",
                        ep.interface_name(),
                        p.name
                    ));
                };
                if !ep.implemented_by(inst.as_ref()) {
                    return Err(format!(
                        "plugin {:?} does not extend {} plugin",
                        p.name,
                        ep.interface_name()
                    ));
                }
                if list.iter().any(|e| e.name == *name) {
                    return Err(format!(
                        "plugin {:?} already registered as {:?}",
                        p.name,
                        ep.interface_name()
                    ));
                }
                list.push(PluginEntry {
                    name,
                    plugin: inst.clone(),
                });
            }
            points.insert(ep, list);
        }

        if !plugins.multi_point.enabled.is_empty() {
            for ep in ExtensionPoint::ALL {
                let set = ep.config_set(plugins);
                if set.disabled.iter().any(|p| p.name == "*") {
                    continue;
                }
                let disabled: BTreeSet<&str> =
                    set.disabled.iter().map(|p| p.name.as_str()).collect();
                let enabled: Vec<&str> = set.enabled.iter().map(|p| p.name.as_str()).collect();
                let mut overrides: Vec<&str> = Vec::new();
                let mut multi: Vec<&str> = Vec::new();
                for mp in &plugins.multi_point.enabled {
                    let Some((_, inst)) = instances.get(mp.name.as_str()) else {
                        return Err(format!(
                            "{} {:?} does not exist",
                            ep.interface_name(),
                            mp.name
                        ));
                    };
                    if !ep.implemented_by(inst.as_ref()) || disabled.contains(mp.name.as_str()) {
                        continue;
                    }
                    if enabled.contains(&mp.name.as_str()) {
                        if !overrides.contains(&mp.name.as_str()) {
                            overrides.push(&mp.name);
                        }
                        continue;
                    }
                    if multi.contains(&mp.name.as_str()) {
                        return Err(format!(
                            "plugin {:?} already registered as {:?}",
                            mp.name,
                            ep.interface_name()
                        ));
                    }
                    multi.push(&mp.name);
                }
                // Overridden plugins (explicit order), then multiPoint-only ones, then the
                // remaining explicit ones.
                let ordered = enabled
                    .iter()
                    .filter(|n| overrides.contains(n))
                    .chain(multi.iter())
                    .chain(enabled.iter().filter(|n| !overrides.contains(n)));
                let mut list = Vec::new();
                for n in ordered {
                    if let Some((name, inst)) = instances.get(n) {
                        list.push(PluginEntry {
                            name,
                            plugin: inst.clone(),
                        });
                    }
                }
                points.insert(ep, list);
            }
        }

        let queue_sort = points.get(&ExtensionPoint::QueueSort).map_or(0, Vec::len);
        if queue_sort != 1 {
            return Err(format!(
                "only one queue sort plugin required for profile with scheduler name {:?}, but got {queue_sort}",
                profile.scheduler_name
            ));
        }
        if points.get(&ExtensionPoint::Bind).is_none_or(Vec::is_empty) {
            return Err(format!(
                "at least one bind plugin is needed for profile with scheduler name {:?}",
                profile.scheduler_name
            ));
        }

        // The first mention wins: explicit score weights, then multiPoint's.
        let mut score_weights: BTreeMap<&'static str, i64> = BTreeMap::new();
        let mut total: i64 = 0;
        for p in plugins
            .score
            .enabled
            .iter()
            .chain(plugins.multi_point.enabled.iter())
        {
            let Some((name, inst)) = instances.get(p.name.as_str()) else {
                continue;
            };
            if inst.as_score().is_none() || score_weights.contains_key(name) {
                continue;
            }
            let w = if p.weight == 0 {
                1
            } else {
                i64::from(p.weight)
            };
            score_weights.insert(name, w);
            if w.saturating_mul(MAX_NODE_SCORE) > MAX_TOTAL_SCORE - total {
                return Err("total score of Score plugins could overflow".to_string());
            }
            total += w * MAX_NODE_SCORE;
        }
        for e in points.get(&ExtensionPoint::Score).into_iter().flatten() {
            if score_weights.get(e.name).copied().unwrap_or(0) == 0 {
                return Err(format!(
                    "score plugin {:?} is not configured with weight",
                    e.name
                ));
            }
        }

        Ok(Framework {
            profile_name: profile.scheduler_name.clone(),
            percentage_of_nodes_to_score: profile.percentage_of_nodes_to_score,
            points,
            score_weights,
            plugin_args: args,
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
