//! Defaulting (`v1/defaults.go`, `v1/default_plugins.go`): the default plugin set, merging
//! the user's plugins into it, and default args for every enabled plugin that has an args
//! type.

use super::args::PluginArgs;
use super::decode::{Decoded, DecodedProfile};
use super::types::*;
use crate::features::{Features, Gate};

/// The default `multiPoint` set (`getDefaultPlugins`): the 18 base plugins, then what the
/// feature gates add (`applyFeatureGates`): NodeDeclaredFeatures at the end,
/// DynamicResources (weight 2) before DefaultPreemption, GangScheduling at the end.
pub fn default_plugins(features: &Features) -> Plugins {
    let mut enabled = vec![
        PluginRef::new("SchedulingGates", 0),
        PluginRef::new("PrioritySort", 0),
        PluginRef::new("NodeUnschedulable", 0),
        PluginRef::new("NodeName", 0),
        PluginRef::new("TaintToleration", 3),
        PluginRef::new("NodeAffinity", 2),
        PluginRef::new("NodePorts", 0),
        PluginRef::new("NodeResourcesFit", 1),
        PluginRef::new("VolumeRestrictions", 0),
        PluginRef::new("NodeVolumeLimits", 0),
        PluginRef::new("VolumeBinding", 0),
        PluginRef::new("VolumeZone", 0),
        PluginRef::new("PodTopologySpread", 2),
        PluginRef::new("InterPodAffinity", 2),
        PluginRef::new("DefaultPreemption", 0),
        PluginRef::new("NodeResourcesBalancedAllocation", 1),
        PluginRef::new("ImageLocality", 1),
        PluginRef::new("DefaultBinder", 0),
    ];
    if features.enabled(Gate::NodeDeclaredFeatures) {
        enabled.push(PluginRef::new("NodeDeclaredFeatures", 0));
    }
    // Deallocating an idle claim in PostFilter is preferred over evicting pods, so
    // DynamicResources goes before DefaultPreemption.
    if features.enabled(Gate::DynamicResourceAllocation)
        && let Some(i) = enabled.iter().position(|p| p.name == "DefaultPreemption")
    {
        enabled.insert(i, PluginRef::new("DynamicResources", 2));
    }
    if features.enabled(Gate::GangScheduling) {
        enabled.push(PluginRef::new("GangScheduling", 0));
    }
    Plugins {
        multi_point: PluginSet {
            enabled,
            disabled: Vec::new(),
        },
        ..Plugins::default()
    }
}

/// Merges the user's plugins into the defaults, point by point (`mergePlugins`).
pub fn merge_plugins(defaults: &Plugins, custom: &Plugins) -> Plugins {
    let mut out = Plugins::default();
    for point in ExtensionPoint::ALL {
        *out.get_mut(point) = merge_plugin_set(defaults.get(point), custom.get(point));
    }
    out
}

/// `mergePluginSet`:
/// * disabled = the custom disabled names, then the default disabled names (weights dropped);
/// * unless `"*"` is disabled, each default plugin that is not disabled is kept in order,
///   replaced in place by the custom entry of the same name if there is one (the last such
///   entry when the name repeats);
/// * every custom entry that replaced nothing is appended in order (duplicates included; the
///   framework rejects them later).
pub fn merge_plugin_set(defaults: &PluginSet, custom: &PluginSet) -> PluginSet {
    let disabled: Vec<PluginRef> = custom
        .disabled
        .iter()
        .chain(defaults.disabled.iter())
        .map(|p| PluginRef::new(&p.name, 0))
        .collect();
    let is_disabled = |name: &str| disabled.iter().any(|p| p.name == name);
    let mut replaced = vec![false; custom.enabled.len()];
    let mut enabled = Vec::new();
    if !is_disabled("*") {
        for def in &defaults.enabled {
            if is_disabled(&def.name) {
                continue;
            }
            match custom.enabled.iter().rposition(|c| c.name == def.name) {
                Some(i) => {
                    replaced[i] = true;
                    enabled.push(custom.enabled[i].clone());
                }
                None => enabled.push(def.clone()),
            }
        }
    }
    for (i, c) in custom.enabled.iter().enumerate() {
        if !replaced[i] {
            enabled.push(c.clone());
        }
    }
    PluginSet { enabled, disabled }
}

/// Defaults one profile (`setDefaults_KubeSchedulerProfile`).
pub fn default_profile(
    name: String,
    percentage: Option<i32>,
    plugins: &Plugins,
    mut plugin_config: Vec<PluginConfig>,
    features: &Features,
) -> Profile {
    let plugins = merge_plugins(&default_plugins(features), plugins);
    for pc in &mut plugin_config {
        pc.args.set_defaults(features);
    }
    for name in plugins.enabled_names() {
        if plugin_config.iter().any(|pc| pc.name == name) {
            continue;
        }
        if let Some(args) = PluginArgs::default_for(&name, features) {
            plugin_config.push(PluginConfig { name, args });
        }
    }
    Profile {
        scheduler_name: name,
        percentage_of_nodes_to_score: percentage,
        plugins,
        plugin_config,
    }
}

/// Completes a decoded configuration (`SetDefaults_KubeSchedulerConfiguration`).
pub fn set_defaults(decoded: Decoded) -> KubeSchedulerConfiguration {
    let Decoded {
        mut config,
        mut profiles,
        positions,
        plugin_names,
    } = decoded;
    if profiles.is_empty() {
        profiles.push(DecodedProfile {
            scheduler_name: None,
            percentage_of_nodes_to_score: None,
            plugins: Plugins::default(),
            plugin_config: Vec::new(),
        });
    }
    // Only a single profile gets the default name; validation requires names otherwise.
    if profiles.len() == 1 && profiles[0].scheduler_name.is_none() {
        profiles[0].scheduler_name = Some(DEFAULT_SCHEDULER_NAME.to_string());
    }
    let features = config.features.clone();
    config.profiles = profiles
        .into_iter()
        .map(|p| {
            default_profile(
                p.scheduler_name.unwrap_or_default(),
                p.percentage_of_nodes_to_score,
                &p.plugins,
                p.plugin_config,
                &features,
            )
        })
        .collect();

    let le = &mut config.leader_election;
    let defaults = LeaderElectionConfiguration::default();
    if le.resource_lock.is_empty() {
        le.resource_lock = defaults.resource_lock.clone();
    }
    if le.resource_namespace.is_empty() {
        le.resource_namespace = defaults.resource_namespace.clone();
    }
    if le.resource_name.is_empty() {
        le.resource_name = defaults.resource_name.clone();
    }
    if le.lease_duration.is_zero() {
        le.lease_duration = defaults.lease_duration;
    }
    if le.renew_deadline.is_zero() {
        le.renew_deadline = defaults.renew_deadline;
    }
    if le.retry_period.is_zero() {
        le.retry_period = defaults.retry_period;
    }
    let cc = &mut config.client_connection;
    let cdefaults = ClientConnectionConfiguration::default();
    if cc.content_type.is_empty() {
        cc.content_type = cdefaults.content_type;
    }
    if cc.qps == 0.0 {
        cc.qps = cdefaults.qps;
    }
    if cc.burst == 0 {
        cc.burst = cdefaults.burst;
    }
    config.source.positions = positions;
    config.source.plugin_names = plugin_names;
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(enabled: &[(&str, i32)], disabled: &[&str]) -> PluginSet {
        PluginSet {
            enabled: enabled.iter().map(|(n, w)| PluginRef::new(n, *w)).collect(),
            disabled: disabled.iter().map(|n| PluginRef::new(n, 0)).collect(),
        }
    }

    #[test]
    fn merge_replaces_in_place_and_appends() {
        let d = set(&[("A", 1), ("B", 2), ("C", 0)], &[]);
        let c = set(&[("X", 5), ("B", 7)], &["C"]);
        let m = merge_plugin_set(&d, &c);
        assert_eq!(m, set(&[("A", 1), ("B", 7), ("X", 5)], &["C"]));
    }

    #[test]
    fn merge_star_drops_defaults() {
        let d = set(&[("A", 1), ("B", 2)], &["Z"]);
        let c = set(&[("B", 3)], &["*"]);
        assert_eq!(merge_plugin_set(&d, &c), set(&[("B", 3)], &["*", "Z"]));
    }

    #[test]
    fn merge_duplicate_custom_uses_last_and_appends_first() {
        let d = set(&[("A", 1)], &[]);
        let c = set(&[("A", 4), ("A", 9)], &[]);
        assert_eq!(merge_plugin_set(&d, &c), set(&[("A", 9), ("A", 4)], &[]));
    }

    #[test]
    fn merge_disabled_weight_is_dropped() {
        let d = set(&[("A", 1)], &[]);
        let c = PluginSet {
            enabled: vec![],
            disabled: vec![PluginRef::new("A", 5)],
        };
        assert_eq!(merge_plugin_set(&d, &c), set(&[], &["A"]));
    }
}
