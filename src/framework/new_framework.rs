//! How `Framework::new` builds a profile, as upstream's `NewFramework`: each enabled
//! plugin once from its args, the explicit lists per extension point, multiPoint
//! expanded around them, then the checks (one QueueSort, a Bind, score weights).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::config::{PluginArgs, Plugins, Profile};
use crate::factory::{BuildError, FactoryContext, Registry};
use crate::features::Features;
use crate::plugin::{MAX_NODE_SCORE, Plugin};
use crate::profile::{ExtensionPoint, PluginEntry};

/// Why a profile cannot become a framework (upstream's messages).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FrameworkError {
    #[error("repeated config for plugin {0}")]
    RepeatedConfig(String),
    #[error("initializing plugin {plugin:?}: {source}")]
    Init { plugin: String, source: BuildError },
    #[error("{point} {plugin:?} does not exist")]
    NotExist { point: &'static str, plugin: String },
    #[error("plugin {plugin:?} does not extend {point} plugin")]
    NotExtending { plugin: String, point: &'static str },
    #[error("plugin {plugin:?} already registered as {point:?}")]
    AlreadyRegistered { plugin: String, point: &'static str },
    #[error(
        "only one queue sort plugin required for profile with scheduler name {profile:?}, but got {got}"
    )]
    QueueSortCount { profile: String, got: usize },
    #[error("at least one bind plugin is needed for profile with scheduler name {0:?}")]
    NoBind(String),
    #[error("total score of Score plugins could overflow")]
    ScoreOverflow,
    #[error("score plugin {0:?} is not configured with weight")]
    NoWeight(String),
}

impl FrameworkError {
    /// The plugin the error is about, when one is.
    pub fn plugin(&self) -> Option<&str> {
        match self {
            FrameworkError::NoWeight(p) => Some(p),
            FrameworkError::Init { plugin, .. }
            | FrameworkError::NotExist { plugin, .. }
            | FrameworkError::NotExtending { plugin, .. }
            | FrameworkError::AlreadyRegistered { plugin, .. } => Some(plugin),
            _ => None,
        }
    }

    /// The extension point's interface (`FilterPlugin`) the error is about, when one is.
    pub fn point(&self) -> Option<&'static str> {
        match self {
            FrameworkError::NotExist { point, .. }
            | FrameworkError::NotExtending { point, .. }
            | FrameworkError::AlreadyRegistered { point, .. } => Some(point),
            _ => None,
        }
    }
}

/// Upstream `MaxTotalScore` (math.MaxInt64).
const MAX_TOTAL_SCORE: i64 = i64::MAX;

/// Each plugin's instance, by its name.
pub(crate) type Instances = BTreeMap<&'static str, Arc<dyn Plugin>>;
type Points = BTreeMap<ExtensionPoint, Vec<PluginEntry>>;

/// The `pluginConfig` args by plugin; a plugin configured twice is an error.
pub(crate) fn plugin_args(
    profile: &Profile,
) -> Result<BTreeMap<String, PluginArgs>, FrameworkError> {
    let mut args = BTreeMap::new();
    for pc in &profile.plugin_config {
        if args.insert(pc.name.clone(), pc.args.clone()).is_some() {
            return Err(FrameworkError::RepeatedConfig(pc.name.clone()));
        }
    }
    Ok(args)
}

/// Builds every registered plugin the profile enables anywhere, once.
pub(crate) fn instantiate(
    registry: &Registry,
    profile: &Profile,
    args: &BTreeMap<String, PluginArgs>,
    features: &Features,
) -> Result<Instances, FrameworkError> {
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
    let mut instances = Instances::new();
    // A plugin enabled but not registered is reported where it is named (`NotExist`).
    for (name, factory) in registry.iter().filter(|(n, _)| needed.contains(n)) {
        let ctx = FactoryContext {
            args: args.get(name),
            profile_name: &profile.scheduler_name,
            features,
        };
        let p = factory(&ctx).map_err(|source| FrameworkError::Init {
            plugin: name.to_string(),
            source,
        })?;
        instances.insert(name, p);
    }
    Ok(instances)
}

fn entry(instances: &Instances, name: &str) -> Option<PluginEntry> {
    instances.get_key_value(name).map(|(name, p)| PluginEntry {
        name,
        plugin: p.clone(),
    })
}

/// Each extension point's explicitly enabled plugins, in the configured order.
pub(crate) fn explicit_points(
    plugins: &Plugins,
    instances: &Instances,
) -> Result<Points, FrameworkError> {
    let mut points = Points::new();
    for ep in ExtensionPoint::ALL {
        let point = ep.interface_name();
        let mut list: Vec<PluginEntry> = Vec::new();
        for p in &ep.config_set(plugins).enabled {
            let plugin = p.name.clone();
            let Some(e) = entry(instances, &p.name) else {
                return Err(FrameworkError::NotExist { point, plugin });
            };
            if !ep.implemented_by(e.plugin.as_ref()) {
                return Err(FrameworkError::NotExtending { plugin, point });
            }
            if list.iter().any(|x| x.name == e.name) {
                return Err(FrameworkError::AlreadyRegistered { plugin, point });
            }
            list.push(e);
        }
        points.insert(ep, list);
    }
    Ok(points)
}

/// multiPoint's plugins join each point they implement, unless disabled there: plugins
/// also enabled explicitly keep the explicit order and go first, then multiPoint-only
/// ones, then the remaining explicit ones.
pub(crate) fn expand_multi_point(
    plugins: &Plugins,
    instances: &Instances,
    points: &mut Points,
) -> Result<(), FrameworkError> {
    if plugins.multi_point.enabled.is_empty() {
        return Ok(());
    }
    for ep in ExtensionPoint::ALL {
        let set = ep.config_set(plugins);
        if set.disabled.iter().any(|p| p.name == "*") {
            continue;
        }
        let point = ep.interface_name();
        let disabled: BTreeSet<&str> = set.disabled.iter().map(|p| p.name.as_str()).collect();
        let enabled: Vec<&str> = set.enabled.iter().map(|p| p.name.as_str()).collect();
        let mut overrides: Vec<&str> = Vec::new();
        let mut multi: Vec<&str> = Vec::new();
        for mp in &plugins.multi_point.enabled {
            let name = mp.name.as_str();
            let Some(inst) = instances.get(name) else {
                let plugin = mp.name.clone();
                return Err(FrameworkError::NotExist { point, plugin });
            };
            if !ep.implemented_by(inst.as_ref()) || disabled.contains(name) {
                continue;
            }
            if enabled.contains(&name) {
                if !overrides.contains(&name) {
                    overrides.push(name);
                }
                continue;
            }
            if multi.contains(&name) {
                let plugin = mp.name.clone();
                return Err(FrameworkError::AlreadyRegistered { plugin, point });
            }
            multi.push(name);
        }
        let ordered = enabled
            .iter()
            .filter(|n| overrides.contains(n))
            .chain(multi.iter())
            .chain(enabled.iter().filter(|n| !overrides.contains(n)));
        let list = ordered.filter_map(|n| entry(instances, n)).collect();
        points.insert(ep, list);
    }
    Ok(())
}

/// A profile has exactly one QueueSort plugin and at least one Bind plugin.
pub(crate) fn check_required(points: &Points, profile: &str) -> Result<(), FrameworkError> {
    let got = points.get(&ExtensionPoint::QueueSort).map_or(0, Vec::len);
    if got != 1 {
        let profile = profile.to_string();
        return Err(FrameworkError::QueueSortCount { profile, got });
    }
    if points.get(&ExtensionPoint::Bind).is_none_or(Vec::is_empty) {
        return Err(FrameworkError::NoBind(profile.to_string()));
    }
    Ok(())
}

/// Score weights: the first mention wins (explicit Score entries, then multiPoint's), a
/// weight of 0 means 1; the total must not overflow, and every Score plugin has one.
pub(crate) fn score_weights(
    plugins: &Plugins,
    instances: &Instances,
    points: &Points,
) -> Result<BTreeMap<&'static str, i64>, FrameworkError> {
    let mut weights: BTreeMap<&'static str, i64> = BTreeMap::new();
    let mut total: i64 = 0;
    let mentions = plugins
        .score
        .enabled
        .iter()
        .chain(plugins.multi_point.enabled.iter());
    for p in mentions {
        let Some((name, inst)) = instances.get_key_value(p.name.as_str()) else {
            continue;
        };
        if inst.as_score().is_none() || weights.contains_key(name) {
            continue;
        }
        let w = if p.weight == 0 {
            1
        } else {
            i64::from(p.weight)
        };
        weights.insert(name, w);
        if w.saturating_mul(MAX_NODE_SCORE) > MAX_TOTAL_SCORE - total {
            return Err(FrameworkError::ScoreOverflow);
        }
        total += w * MAX_NODE_SCORE;
    }
    for e in points.get(&ExtensionPoint::Score).into_iter().flatten() {
        if weights.get(e.name).copied().unwrap_or(0) == 0 {
            return Err(FrameworkError::NoWeight(e.name.to_string()));
        }
    }
    Ok(weights)
}
