//! The in-tree registry, from the table in plugins/mod.rs (one line per plugin module:
//! names and factories). Each plugin's module builds it from its own args (`factory`);
//! plugins without args use `plain`.

use crate::config::{PluginRef, PluginSet, Plugins, Profile};
use crate::framework::profile::{Framework, Registry};

use super::*;

pub fn in_tree() -> Registry {
    let mut r = Registry::default();
    for (name, factory) in IN_TREE {
        r.register(name, *factory);
    }
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
            queue_sort: set(queuesort::NAME),
            bind: set(defaultbinder::NAME),
            ..Default::default()
        },
        plugin_config: Vec::new(),
    };
    match Framework::new(&in_tree(), &profile, &Default::default()) {
        Ok(f) => f,
        Err(e) => unreachable!("the minimal profile is valid: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{PLUGINS_WITH_ARGS, PluginArgs};
    use crate::framework::factory::FactoryContext;

    static FEATURES: std::sync::LazyLock<crate::framework::features::Features> =
        std::sync::LazyLock::new(Default::default);

    fn build(name: &str, args: Option<&PluginArgs>) -> Result<(), String> {
        let factory = in_tree()
            .get(name)
            .ok_or(format!("{name} not registered"))?;
        let ctx = FactoryContext {
            args,
            profile_name: "default-scheduler",
            features: &FEATURES,
        };
        factory(&ctx).map(drop).map_err(|e| e.to_string())
    }

    #[test]
    fn each_plugin_with_args_reads_its_own_and_refuses_others() {
        for name in PLUGINS_WITH_ARGS {
            let own = PluginArgs::default_for(name, &FEATURES).expect("an args type");
            assert_eq!(build(name, None), Ok(()), "{name} without args");
            assert_eq!(build(name, Some(&own)), Ok(()), "{name} with its defaults");
            // Another plugin's args: the factory names its own args kind.
            let other = if name == "VolumeBinding" {
                PluginArgs::default_for("DefaultPreemption", &FEATURES)
            } else {
                PluginArgs::default_for("VolumeBinding", &FEATURES)
            };
            let err = build(name, other.as_ref()).expect_err(name);
            let kind = own.kind().unwrap_or_default();
            assert!(
                err.contains(&format!("of type {kind}, got ")),
                "{name}: {err}"
            );
        }
    }

    #[test]
    fn fit_is_listed_under_placement_score_from_1_36() {
        use crate::config::{default_configuration_for, parse_str_for};
        use crate::framework::features::{Features, KubeVersion::*};
        use crate::session::scheduler::frameworks;
        let placement = |v| {
            let cfg = default_configuration_for(&Features::version(v));
            frameworks(&cfg).unwrap()[0].placement().clone()
        };
        assert!(placement(V1_35).score.is_empty());
        assert_eq!(placement(V1_36).score, vec![("NodeResourcesFit", 1)]);
        assert!(placement(V1_36).generate.is_empty());
        // A plugin that is no PlacementScorePlugin, refused where the file names it.
        let text = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    placementScore:
      enabled:
      - name: ImageLocality
";
        let cfg = parse_str_for(text, "s.yaml", &Features::version(V1_36)).unwrap();
        let e = frameworks(&cfg).err().unwrap();
        assert_eq!(
            e.to_string(),
            "s.yaml:7:9: profiles[0].plugins.placementScore.enabled[0].name \
             (default-scheduler): plugin \"ImageLocality\" does not extend PlacementScorePlugin plugin"
        );
    }

    #[test]
    fn fit_args_are_checked_as_the_version_does() {
        use crate::config::parse_str_for;
        use crate::framework::features::{Features, KubeVersion::*};
        use crate::session::scheduler::frameworks;
        let text = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: LeastAllocated
        requestedToCapacityRatio:
          shape:
          - {utilization: 0, score: 10}
";
        let build = |v| {
            let cfg = parse_str_for(text, "s.yaml", &Features::version(v)).unwrap();
            frameworks(&cfg).map(drop).map_err(|e| e.to_string())
        };
        // 1.35 checks the shape and otherwise ignores it.
        assert_eq!(build(V1_35), Ok(()));
        assert_eq!(
            build(V1_36),
            Err("s.yaml:9:9: profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio: \
                 Forbidden: must be nil when type is not RequestedToCapacityRatio"
                .into())
        );
    }

    #[test]
    fn every_registered_plugin_builds_without_args() {
        for name in in_tree().names() {
            assert_eq!(build(name, None), Ok(()), "{name}");
        }
    }
}
