//! How `Framework::new` builds a profile, as upstream's `NewFramework`: each enabled
//! plugin once from its args, the explicit lists per extension point, multiPoint
//! expanded around them, then the checks (one QueueSort, a Bind, score weights).
//!
//! From 1.36 (`Semantics::placement_plugin_sets`) a profile also has the pod-group
//! placement points, PlacementGenerate and PlacementScore. kubestep runs no pod-group
//! cycle, so nothing runs them. What of them can show is an error: their explicit lists
//! are checked as the other points' are (a plugin that does not exist or does not extend
//! the point, one listed twice, more than one PlacementGenerate plugin, weights), in
//! upstream's order. multiPoint expansion puts NodeResourcesFit into PlacementScore as
//! upstream's does; no output of kubestep shows that list (it is kept in [`Placement`]
//! for library users and tests), and with kubestep's plugins it raises no error that an
//! earlier point would not raise first.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::config::{PluginArgs, PluginRef, PluginSet, Plugins, Profile};
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
    #[error(
        "at most one placement generate plugin is allowed for profile with scheduler name {0:?}"
    )]
    PlacementGenerateCount(String),
    /// The weights of one set overflow; `prefix` names the set from 1.36 on
    /// ([`SCORE_PLUGINS`], [`PLACEMENT_SCORE_PLUGINS`]) and is empty before.
    #[error("{prefix}total score of Score plugins could overflow")]
    ScoreOverflow { prefix: &'static str },
    #[error("score plugin {0:?} is not configured with weight")]
    NoWeight(String),
    #[error("placement score plugin {0:?} is not configured with weight")]
    PlacementNoWeight(String),
}

/// What 1.36's NewFramework puts before a Score weight error.
pub const SCORE_PLUGINS: &str = "score plugins: ";
/// What 1.36's NewFramework puts before a PlacementScore weight error.
pub const PLACEMENT_SCORE_PLUGINS: &str = "placement score plugins: ";

impl FrameworkError {
    /// The plugin the error is about, when one is.
    pub fn plugin(&self) -> Option<&str> {
        match self {
            FrameworkError::NoWeight(p) | FrameworkError::PlacementNoWeight(p) => Some(p),
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

/// A pod-group placement extension point (1.36), which kubestep lists but never runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PlacementPoint {
    Generate,
    Score,
}

impl PlacementPoint {
    const ALL: [PlacementPoint; 2] = [PlacementPoint::Generate, PlacementPoint::Score];
}

/// Any point a list is built for: the framework's, or a placement point.
#[derive(Clone, Copy, Debug)]
enum Point {
    Framework(ExtensionPoint),
    Placement(PlacementPoint),
}

impl Point {
    fn set(self, plugins: &Plugins) -> &PluginSet {
        match self {
            Point::Framework(ep) => ep.config_set(plugins),
            Point::Placement(PlacementPoint::Generate) => &plugins.placement_generate,
            Point::Placement(PlacementPoint::Score) => &plugins.placement_score,
        }
    }

    /// Upstream's interface name, for messages.
    fn interface(self) -> &'static str {
        match self {
            Point::Framework(ep) => ep.interface_name(),
            Point::Placement(PlacementPoint::Generate) => "PlacementGeneratePlugin",
            Point::Placement(PlacementPoint::Score) => "PlacementScorePlugin",
        }
    }

    fn implemented_by(self, p: &dyn Plugin) -> bool {
        match self {
            Point::Framework(ep) => ep.implemented_by(p),
            Point::Placement(PlacementPoint::Generate) => p.is_placement_generate(),
            Point::Placement(PlacementPoint::Score) => p.is_placement_score(),
        }
    }
}

/// The placement points of a profile in a version that has them (1.36): the plugins at
/// each, in order, as upstream's `ListPlugins` would list them. Nothing runs them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    pub generate: Vec<&'static str>,
    /// With each plugin's weight.
    pub score: Vec<(&'static str, i64)>,
}

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
    if features.semantics.placement_plugin_sets {
        for pp in PlacementPoint::ALL {
            let set = Point::Placement(pp).set(plugins);
            needed.extend(set.enabled.iter().map(|p| p.name.as_str()));
        }
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

/// One point's explicitly enabled plugins, in the configured order.
fn explicit_list(
    at: Point,
    plugins: &Plugins,
    instances: &Instances,
) -> Result<Vec<PluginEntry>, FrameworkError> {
    let point = at.interface();
    let mut list: Vec<PluginEntry> = Vec::new();
    for p in &at.set(plugins).enabled {
        let plugin = p.name.clone();
        let Some(e) = entry(instances, &p.name) else {
            return Err(FrameworkError::NotExist { point, plugin });
        };
        if !at.implemented_by(e.plugin.as_ref()) {
            return Err(FrameworkError::NotExtending { plugin, point });
        }
        if list.iter().any(|x| x.name == e.name) {
            return Err(FrameworkError::AlreadyRegistered { plugin, point });
        }
        list.push(e);
    }
    Ok(list)
}

/// Each extension point's explicitly enabled plugins, in the configured order.
pub(crate) fn explicit_points(
    plugins: &Plugins,
    instances: &Instances,
) -> Result<Points, FrameworkError> {
    let mut points = Points::new();
    for ep in ExtensionPoint::ALL {
        points.insert(ep, explicit_list(Point::Framework(ep), plugins, instances)?);
    }
    Ok(points)
}

/// The placement points' explicit lists (after every other point's, as upstream's
/// extension point order has them); empty where the version has no placement sets.
pub(crate) fn explicit_placement(
    plugins: &Plugins,
    instances: &Instances,
    features: &Features,
) -> Result<[Vec<PluginEntry>; 2], FrameworkError> {
    let mut out: [Vec<PluginEntry>; 2] = Default::default();
    if features.semantics.placement_plugin_sets {
        for (pp, list) in PlacementPoint::ALL.into_iter().zip(out.iter_mut()) {
            *list = explicit_list(Point::Placement(pp), plugins, instances)?;
        }
    }
    Ok(out)
}

/// multiPoint's plugins join a point they implement, unless disabled there: plugins
/// also enabled explicitly keep the explicit order and go first, then multiPoint-only
/// ones, then the remaining explicit ones. `None`: the point disables every plugin
/// (`*`), and keeps its explicit list.
fn expand_list(
    at: Point,
    plugins: &Plugins,
    instances: &Instances,
) -> Result<Option<Vec<PluginEntry>>, FrameworkError> {
    let set = at.set(plugins);
    if set.disabled.iter().any(|p| p.name == "*") {
        return Ok(None);
    }
    let point = at.interface();
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
        if !at.implemented_by(inst.as_ref()) || disabled.contains(name) {
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
    Ok(Some(ordered.filter_map(|n| entry(instances, n)).collect()))
}

/// multiPoint expanded into every extension point (see `expand_list`).
pub(crate) fn expand_multi_point(
    plugins: &Plugins,
    instances: &Instances,
    points: &mut Points,
) -> Result<(), FrameworkError> {
    if plugins.multi_point.enabled.is_empty() {
        return Ok(());
    }
    for ep in ExtensionPoint::ALL {
        if let Some(list) = expand_list(Point::Framework(ep), plugins, instances)? {
            points.insert(ep, list);
        }
    }
    Ok(())
}

/// multiPoint expanded into the placement points too, when the version has them.
pub(crate) fn expand_placement(
    plugins: &Plugins,
    instances: &Instances,
    lists: &mut [Vec<PluginEntry>; 2],
    features: &Features,
) -> Result<(), FrameworkError> {
    if !features.semantics.placement_plugin_sets || plugins.multi_point.enabled.is_empty() {
        return Ok(());
    }
    for (pp, slot) in PlacementPoint::ALL.into_iter().zip(lists.iter_mut()) {
        if let Some(list) = expand_list(Point::Placement(pp), plugins, instances)? {
            *slot = list;
        }
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

/// Weights of the plugins that extend a point: the first mention wins
/// (the point's own entries, then multiPoint's), a weight of 0 means 1, and the total
/// must not overflow (upstream's `getValidScoreWeights`).
fn valid_weights<'p>(
    mentions: impl Iterator<Item = &'p PluginRef>,
    instances: &Instances,
    at: Point,
    overflow_prefix: &'static str,
) -> Result<BTreeMap<&'static str, i64>, FrameworkError> {
    let mut weights: BTreeMap<&'static str, i64> = BTreeMap::new();
    let mut total: i64 = 0;
    for p in mentions {
        let Some((name, inst)) = instances.get_key_value(p.name.as_str()) else {
            continue;
        };
        if !at.implemented_by(inst.as_ref()) || weights.contains_key(name) {
            continue;
        }
        let w = if p.weight == 0 {
            1
        } else {
            i64::from(p.weight)
        };
        weights.insert(name, w);
        if w.saturating_mul(MAX_NODE_SCORE) > MAX_TOTAL_SCORE - total {
            let prefix = overflow_prefix;
            return Err(FrameworkError::ScoreOverflow { prefix });
        }
        total += w * MAX_NODE_SCORE;
    }
    Ok(weights)
}

/// What a Score weight error begins with: "score plugins: " from 1.36, nothing before.
fn score_overflow_prefix(features: &Features) -> &'static str {
    if features.semantics.score_overflow_prefix {
        SCORE_PLUGINS
    } else {
        ""
    }
}

/// Score weights (see `valid_weights`); every Score plugin has one. From 1.36 an
/// overflow is reported as the Score plugins'.
pub(crate) fn score_weights(
    plugins: &Plugins,
    instances: &Instances,
    points: &Points,
    features: &Features,
) -> Result<BTreeMap<&'static str, i64>, FrameworkError> {
    let prefix = score_overflow_prefix(features);
    let mentions = plugins
        .score
        .enabled
        .iter()
        .chain(plugins.multi_point.enabled.iter());
    let at = Point::Framework(ExtensionPoint::Score);
    let weights = valid_weights(mentions, instances, at, prefix)?;
    for e in points.get(&ExtensionPoint::Score).into_iter().flatten() {
        if weights.get(e.name).copied().unwrap_or(0) == 0 {
            return Err(FrameworkError::NoWeight(e.name.to_string()));
        }
    }
    Ok(weights)
}

/// At most one PlacementGenerate plugin (checked after QueueSort and Bind).
pub(crate) fn check_placement_generate(
    lists: &[Vec<PluginEntry>; 2],
    profile: &str,
) -> Result<(), FrameworkError> {
    if lists[0].len() > 1 {
        return Err(FrameworkError::PlacementGenerateCount(profile.to_string()));
    }
    Ok(())
}

/// PlacementScore weights, as Score's (checked after them), then what the framework
/// keeps of the placement points.
pub(crate) fn placement(
    plugins: &Plugins,
    instances: &Instances,
    lists: [Vec<PluginEntry>; 2],
) -> Result<Placement, FrameworkError> {
    let [generate, score] = lists;
    let mentions = plugins
        .placement_score
        .enabled
        .iter()
        .chain(plugins.multi_point.enabled.iter());
    let at = Point::Placement(PlacementPoint::Score);
    let weights = valid_weights(mentions, instances, at, PLACEMENT_SCORE_PLUGINS)?;
    let mut scored = Vec::with_capacity(score.len());
    for e in &score {
        match weights.get(e.name).copied().unwrap_or(0) {
            0 => return Err(FrameworkError::PlacementNoWeight(e.name.to_string())),
            w => scored.push((e.name, w)),
        }
    }
    Ok(Placement {
        generate: generate.iter().map(|e| e.name).collect(),
        score: scored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PluginRef;
    use crate::cycle_state::CycleState;
    use crate::features::KubeVersion;
    use crate::node_info::NodeInfo;
    use crate::plugin::{BindPlugin, Handle, QueueSortPlugin, ScorePlugin};
    use crate::profile::Framework;
    use crate::queued::QueuedPodInfo;
    use crate::status::Status;
    use crate::types::PodInfo;

    /// A fixture plugin: `kind` says which points it extends.
    struct Fixture {
        name: &'static str,
        kind: &'static str,
    }

    impl Plugin for Fixture {
        fn name(&self) -> &'static str {
            self.name
        }
        fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
            (self.kind == "sort").then_some(self)
        }
        fn as_bind(&self) -> Option<&dyn BindPlugin> {
            (self.kind == "bind").then_some(self)
        }
        fn as_score(&self) -> Option<&dyn ScorePlugin> {
            (self.kind == "score").then_some(self)
        }
        fn is_placement_score(&self) -> bool {
            self.kind == "score"
        }
        fn is_placement_generate(&self) -> bool {
            self.kind == "generate"
        }
    }

    impl QueueSortPlugin for Fixture {
        fn less(&self, _: &QueuedPodInfo, _: &QueuedPodInfo) -> bool {
            false
        }
    }

    impl BindPlugin for Fixture {
        fn bind(&self, _: &Handle, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
            Status::success()
        }
    }

    impl ScorePlugin for Fixture {
        fn score(&self, _: &Handle, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> (i64, Status) {
            (0, Status::success())
        }
    }

    fn registry() -> Registry {
        let mut r = Registry::default();
        r.register("Sort", |_| {
            Ok(Arc::new(Fixture {
                name: "Sort",
                kind: "sort",
            }))
        });
        r.register("Bind", |_| {
            Ok(Arc::new(Fixture {
                name: "Bind",
                kind: "bind",
            }))
        });
        r.register("Fit", |_| {
            Ok(Arc::new(Fixture {
                name: "Fit",
                kind: "score",
            }))
        });
        r.register("GenA", |_| {
            Ok(Arc::new(Fixture {
                name: "GenA",
                kind: "generate",
            }))
        });
        r.register("GenB", |_| {
            Ok(Arc::new(Fixture {
                name: "GenB",
                kind: "generate",
            }))
        });
        r
    }

    fn set(names: &[(&str, i32)]) -> PluginSet {
        PluginSet {
            enabled: names.iter().map(|(n, w)| PluginRef::new(n, *w)).collect(),
            disabled: Vec::new(),
        }
    }

    /// A profile with `plugins` added to a multiPoint of Sort, Bind and Fit (weight 4).
    fn build(v: KubeVersion, plugins: Plugins) -> Result<Framework, FrameworkError> {
        let profile = Profile {
            scheduler_name: "p".into(),
            percentage_of_nodes_to_score: None,
            plugins: Plugins {
                multi_point: set(&[("Sort", 0), ("Bind", 0), ("Fit", 4)]),
                ..plugins
            },
            plugin_config: Vec::new(),
        };
        Framework::new(&registry(), &profile, &Features::version(v))
    }

    #[test]
    fn multi_point_lists_placement_score_plugins_from_1_36() {
        let f = build(KubeVersion::V1_35, Plugins::default()).unwrap();
        assert_eq!(f.placement(), &Placement::default());
        let f = build(KubeVersion::V1_36, Plugins::default()).unwrap();
        assert_eq!(
            f.placement(),
            &Placement {
                generate: vec![],
                score: vec![("Fit", 4)],
            }
        );
        // A placementScore entry overrides multiPoint's weight; a disabled one drops it.
        let f = build(
            KubeVersion::V1_36,
            Plugins {
                placement_score: set(&[("Fit", 7)]),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(f.placement().score, vec![("Fit", 7)]);
        assert_eq!(f.score_weight("Fit"), 4);
        let mut off = Plugins::default();
        off.placement_score.disabled = vec![PluginRef::new("Fit", 0)];
        let f = build(KubeVersion::V1_36, off).unwrap();
        assert!(f.placement().score.is_empty());
    }

    #[test]
    fn placement_lists_are_checked_as_the_other_points_from_1_36() {
        let only = |generate: &[(&str, i32)], score: &[(&str, i32)]| Plugins {
            placement_generate: set(generate),
            placement_score: set(score),
            ..Default::default()
        };
        let err = |p: Plugins| build(KubeVersion::V1_36, p).unwrap_err().to_string();
        assert_eq!(
            err(only(&[("GenA", 0), ("GenB", 0)], &[])),
            r#"at most one placement generate plugin is allowed for profile with scheduler name "p""#
        );
        assert_eq!(
            err(only(&[], &[("Bind", 0)])),
            r#"plugin "Bind" does not extend PlacementScorePlugin plugin"#
        );
        assert_eq!(
            err(only(&[("Nope", 0)], &[])),
            r#"PlacementGeneratePlugin "Nope" does not exist"#
        );
        assert_eq!(
            err(only(&[("GenA", 0), ("GenA", 0)], &[])),
            r#"plugin "GenA" already registered as "PlacementGeneratePlugin""#
        );
        let one = build(KubeVersion::V1_36, only(&[("GenA", 0)], &[])).unwrap();
        assert_eq!(one.placement().generate, vec!["GenA"]);
        // The typed error names the plugin and the point, for locating it in the file.
        let e = build(KubeVersion::V1_36, only(&[], &[("Bind", 0)])).unwrap_err();
        assert_eq!(
            (e.plugin(), e.point()),
            (Some("Bind"), Some("PlacementScorePlugin"))
        );
        // Before 1.36 a profile has no placement points: its sets (which decoding refuses)
        // are neither built nor checked.
        let f = build(
            KubeVersion::V1_35,
            only(&[("GenA", 0), ("GenB", 0)], &[("Nope", 0)]),
        );
        assert_eq!(f.unwrap().placement(), &Placement::default());
    }

    #[test]
    fn score_overflow_names_the_score_plugins_from_1_36() {
        // Weights are int32: overflowing the int64 total takes some 43 million plugins of
        // the largest weight, so the message is checked as each version words it.
        for (v, want) in [
            (
                KubeVersion::V1_35,
                "total score of Score plugins could overflow",
            ),
            (
                KubeVersion::V1_36,
                "score plugins: total score of Score plugins could overflow",
            ),
        ] {
            let prefix = score_overflow_prefix(&Features::version(v));
            assert_eq!(
                FrameworkError::ScoreOverflow { prefix }.to_string(),
                want,
                "{v}"
            );
        }
        let prefix = PLACEMENT_SCORE_PLUGINS;
        assert_eq!(
            FrameworkError::ScoreOverflow { prefix }.to_string(),
            "placement score plugins: total score of Score plugins could overflow"
        );
        // The largest weights a profile can give do not overflow.
        let plugins = Plugins {
            score: set(&[("Fit", i32::MAX)]),
            ..Default::default()
        };
        assert!(build(KubeVersion::V1_36, plugins).is_ok());
    }
}
