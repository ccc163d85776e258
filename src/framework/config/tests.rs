//! Tests of the whole pipeline: text in, defaulted configuration or located errors out.

use super::*;

const HEAD: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

fn parse(body: &str) -> KubeSchedulerConfiguration {
    let text = format!("{HEAD}{body}");
    parse_str(&text, "scheduler.yaml").unwrap_or_else(|e| panic!("{e}\n--- input ---\n{text}"))
}

fn parse_err(body: &str) -> ConfigError {
    let text = format!("{HEAD}{body}");
    match parse_str(&text, "scheduler.yaml") {
        Ok(_) => panic!("expected an error for\n{text}"),
        Err(e) => e,
    }
}

/// The error lines without the file/position prefix.
fn msgs(e: &ConfigError) -> Vec<String> {
    e.messages()
}

fn names(set: &PluginSet) -> Vec<(String, i32)> {
    set.enabled
        .iter()
        .map(|p| (p.name.clone(), p.weight))
        .collect()
}

fn expect(list: &[(&str, i32)]) -> Vec<(String, i32)> {
    list.iter().map(|(n, w)| (n.to_string(), *w)).collect()
}

const DEFAULT_MULTIPOINT: [(&str, i32); 19] = [
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
];

// ---------- defaults ----------

#[test]
fn default_plugins_are_the_19_of_v1_35() {
    let p = default_plugins(&Default::default());
    assert_eq!(names(&p.multi_point), expect(&DEFAULT_MULTIPOINT));
    for point in ExtensionPoint::ALL {
        if point != ExtensionPoint::MultiPoint {
            assert!(p.get(point).is_empty(), "{point:?}");
        }
    }
}

#[test]
fn empty_config_gets_upstream_defaults() {
    let c = default_configuration();
    assert_eq!(c.api_version, ApiVersion::V1);
    assert_eq!(c.parallelism, 16);
    assert_eq!(c.percentage_of_nodes_to_score, Some(0));
    assert_eq!(c.pod_initial_backoff_seconds, 1);
    assert_eq!(c.pod_max_backoff_seconds, 10);
    assert!(c.extenders.is_empty());
    assert!(c.enable_profiling && c.enable_contention_profiling);
    assert!(!c.delay_cache_until_active);
    assert_eq!(c.leader_election, LeaderElectionConfiguration::default());
    assert_eq!(c.leader_election.resource_lock, "leases");
    assert_eq!(c.client_connection.qps, 50.0);
    assert_eq!(c.client_connection.burst, 100);
    assert_eq!(c.profiles.len(), 1);
    let p = &c.profiles[0];
    assert_eq!(p.scheduler_name, "default-scheduler");
    assert_eq!(p.percentage_of_nodes_to_score, None);
    assert_eq!(p.plugins, default_plugins(&Default::default()));
    // Default args for every enabled plugin with an args type, in name order.
    let pc: Vec<&str> = p.plugin_config.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        pc,
        [
            "DefaultPreemption",
            "DynamicResources",
            "InterPodAffinity",
            "NodeAffinity",
            "NodeResourcesBalancedAllocation",
            "NodeResourcesFit",
            "PodTopologySpread",
            "VolumeBinding"
        ]
    );
    for c in &p.plugin_config {
        assert_eq!(
            Some(&c.args),
            PluginArgs::default_for(&c.name, &Default::default()).as_ref()
        );
    }
    assert_eq!(parse(""), c);
    assert_eq!(parse("profiles: []\n"), c);
    assert_eq!(parse("profiles:\n- {}\n"), c);
}

#[test]
fn args_defaults() {
    assert_eq!(
        DefaultPreemptionArgs::default(),
        DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 100
        }
    );
    assert_eq!(InterPodAffinityArgs::default().hard_pod_affinity_weight, 1);
    assert!(!InterPodAffinityArgs::default().ignore_preferred_terms_of_existing_pods);
    assert_eq!(NodeAffinityArgs::default().added_affinity, None);
    let fit = NodeResourcesFitArgs::default();
    assert_eq!(
        fit.scoring_strategy.type_,
        ScoringStrategyType::LeastAllocated
    );
    assert_eq!(fit.scoring_strategy.resources, default_resource_spec());
    assert!(
        fit.ignored_resources.is_empty()
            && fit.scoring_strategy.requested_to_capacity_ratio.is_none()
    );
    assert_eq!(
        NodeResourcesBalancedAllocationArgs::default().resources,
        default_resource_spec()
    );
    let pts = PodTopologySpreadArgs::default();
    assert_eq!(
        pts.defaulting_type,
        PodTopologySpreadConstraintsDefaulting::System
    );
    let eff = pts.effective_constraints();
    assert_eq!(eff.len(), 2);
    assert_eq!(
        (eff[0].topology_key.as_str(), eff[0].max_skew),
        ("kubernetes.io/hostname", 3)
    );
    assert_eq!(
        (eff[1].topology_key.as_str(), eff[1].max_skew),
        ("topology.kubernetes.io/zone", 5)
    );
    assert!(
        eff.iter()
            .all(|c| c.when_unsatisfiable == "ScheduleAnyway" && c.label_selector.is_none())
    );
    assert_eq!(
        VolumeBindingArgs::default(),
        VolumeBindingArgs {
            bind_timeout_seconds: 600,
            shape: None
        }
    );
    let dra = |v| DynamicResourcesArgs::defaulted(&crate::features::Features::version(v));
    use crate::features::KubeVersion::*;
    assert_eq!(
        dra(V1_35),
        DynamicResourcesArgs {
            filter_timeout: Some(Duration::from_secs(10)),
            binding_timeout: None
        }
    );
    // 1.36 turns DRADeviceBindingConditions on, so bindingTimeout gets its default.
    assert_eq!(
        dra(V1_36),
        DynamicResourcesArgs {
            filter_timeout: Some(Duration::from_secs(10)),
            binding_timeout: Some(Duration::from_secs(600))
        }
    );
}

#[test]
fn a_version_decodes_defaults_and_validates_as_its_scheduler() {
    use crate::features::{Features, KubeVersion::*};
    let text = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- pluginConfig:\n  - name: DynamicResources\n    args:\n      bindingTimeout: 5m\n";
    // 1.34 has no such field: strict decoding refuses it.
    let e = parse_str_for(text, "c.yaml", &Features::version(V1_34)).unwrap_err();
    assert!(e.to_string().contains("bindingTimeout"), "{e}");
    // 1.35: a field whose gates are off.
    let e = parse_str_for(text, "c.yaml", &Features::version(V1_35)).unwrap_err();
    assert!(e.to_string().contains("feature gate is disabled"), "{e}");
    // 1.36: its gates are on.
    let c = parse_str_for(text, "c.yaml", &Features::version(V1_36)).unwrap();
    assert_eq!(c.features.kube_version(), V1_36);
    let names = |v| {
        default_configuration_for(&Features::version(v)).profiles[0]
            .plugins
            .multi_point
            .enabled
            .iter()
            .map(|p| p.name.clone())
            .collect::<Vec<_>>()
    };
    assert!(!names(V1_35).contains(&"NodeDeclaredFeatures".to_string()));
    assert_eq!(
        names(V1_36).last().map(String::as_str),
        Some("NodeDeclaredFeatures")
    );
}

fn args_of<'a>(c: &'a KubeSchedulerConfiguration, name: &str) -> &'a PluginArgs {
    c.profiles[0].plugin_args(name).expect(name)
}

#[test]
fn user_args_are_defaulted() {
    let c = parse(
        "profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
        - name: example.com/gpu
          weight: 5
  - name: NodeResourcesBalancedAllocation
    args:
      resources:
      - name: cpu
      - name: memory
        weight: 0
  - name: DefaultPreemption
    args:
      minCandidateNodesAbsolute: 7
  - name: InterPodAffinity
    args:
      ignorePreferredTermsOfExistingPods: true
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: DoNotSchedule
  - name: VolumeBinding
    args:
      bindTimeoutSeconds: 0
  - name: DynamicResources
    args:
      filterTimeout: 1m30s
  - name: NodeAffinity
    args: null
",
    );
    let PluginArgs::NodeResourcesFit(fit) = args_of(&c, "NodeResourcesFit") else {
        panic!()
    };
    assert_eq!(
        fit.scoring_strategy.type_,
        ScoringStrategyType::MostAllocated
    );
    assert_eq!(
        fit.scoring_strategy.resources,
        vec![
            ResourceSpec::new("cpu", 1),
            ResourceSpec::new("example.com/gpu", 5)
        ]
    );
    let PluginArgs::NodeResourcesBalancedAllocation(b) =
        args_of(&c, "NodeResourcesBalancedAllocation")
    else {
        panic!()
    };
    assert_eq!(b.resources, default_resource_spec());
    assert_eq!(
        args_of(&c, "DefaultPreemption"),
        &PluginArgs::DefaultPreemption(DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 7
        })
    );
    assert_eq!(
        args_of(&c, "InterPodAffinity"),
        &PluginArgs::InterPodAffinity(InterPodAffinityArgs {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: true
        })
    );
    let PluginArgs::PodTopologySpread(pts) = args_of(&c, "PodTopologySpread") else {
        panic!()
    };
    assert_eq!(
        pts.defaulting_type,
        PodTopologySpreadConstraintsDefaulting::List
    );
    assert_eq!(pts.effective_constraints().len(), 1);
    assert_eq!(
        pts.effective_constraints()[0].when_unsatisfiable,
        "DoNotSchedule"
    );
    assert!(!pts.is_system_defaulted());
    assert_eq!(
        args_of(&c, "VolumeBinding"),
        &PluginArgs::VolumeBinding(VolumeBindingArgs {
            bind_timeout_seconds: 0,
            shape: None
        })
    );
    assert_eq!(
        args_of(&c, "DynamicResources"),
        &PluginArgs::DynamicResources(DynamicResourcesArgs {
            filter_timeout: Some(Duration::from_secs(90)),
            binding_timeout: None
        })
    );
    assert_eq!(
        args_of(&c, "NodeAffinity"),
        &PluginArgs::NodeAffinity(NodeAffinityArgs::default())
    );
    // User entries keep their order; nothing is appended since every args plugin is listed.
    assert_eq!(c.profiles[0].plugin_config.len(), 8);
    assert_eq!(c.profiles[0].plugin_config[0].name, "NodeResourcesFit");
}

#[test]
fn fit_scoring_strategy_without_type_or_resources() {
    let c = parse(
        "profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy: {}
",
    );
    let PluginArgs::NodeResourcesFit(fit) = args_of(&c, "NodeResourcesFit") else {
        panic!()
    };
    // Upstream leaves the type empty (and appends the default resources); config validation
    // does not look at fit args, the plugin constructor rejects the type.
    assert_eq!(
        fit.scoring_strategy.type_,
        ScoringStrategyType::Other(String::new())
    );
    assert_eq!(fit.scoring_strategy.resources, default_resource_spec());
    let errs = validate_node_resources_fit_args(fit, &FieldPath::root(), &c.features);
    assert_eq!(
        errs.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        vec![
            r#"scoringStrategy.type: Unsupported value: "": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio""#
        ]
    );
}

#[test]
fn fit_args_quirk_and_located_errors() {
    let c = parse(
        "profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      ignoredResourceGroups: [example.com/x]
      scoringStrategy:
        type: Foo
        resources:
        - name: cpu
          weight: 101
        requestedToCapacityRatio:
          shape:
          - {utilization: 50, score: 5}
          - {utilization: 40, score: 11}
",
    );
    let path = c.plugin_config_path(0, "NodeResourcesFit").unwrap();
    assert_eq!(path.as_str(), "profiles[0].pluginConfig[0]");
    let PluginArgs::NodeResourcesFit(fit) = args_of(&c, "NodeResourcesFit") else {
        panic!()
    };
    let errs = validate_node_resources_fit_args(fit, &path.child("args"), &c.features);
    let e = c.locate_errors(errs);
    let text = e.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        vec![
            r#"scheduler.yaml:7:31: profiles[0].pluginConfig[0].args.ignoredResourceGroups[0]: Invalid value: "example.com/x": resource group name can't contain '/'"#,
            r#"scheduler.yaml:9:9: profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Foo": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio""#,
            "scheduler.yaml:12:11: profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]",
            // Upstream reports the shape under scoringStrategy (not requestedToCapacityRatio),
            // so the closest written field is scoringStrategy.
            "scheduler.yaml:8:7: profiles[0].pluginConfig[0].args.scoringStrategy.shape[1].utilization: Invalid value: 40: values must be sorted in increasing order",
            "scheduler.yaml:8:7: profiles[0].pluginConfig[0].args.scoringStrategy.shape[1].score: Invalid value: 11: not in valid range [0, 10]",
        ]
    );
    // A bad label name as ignored resource.
    let bad = NodeResourcesFitArgs {
        ignored_resources: vec!["-x".into()],
        ..Default::default()
    };
    assert_eq!(
        validate_node_resources_fit_args(&bad, &FieldPath::root(), &Default::default())
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>(),
        vec![
            r#"ignoredResources[0]: Invalid value: "-x": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#
        ]
    );
}

#[test]
fn fit_args_ratio_goes_with_its_type_from_1_36() {
    use crate::features::{Features, KubeVersion::*};
    let with = |strategy: &str| {
        format!(
            "{HEAD}profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
{strategy}"
        )
    };
    // Config validation leaves fit args to the plugin (upstream keys its validator by the
    // args kind), so each version parses them and the plugin's validation speaks.
    let errs = |text: &str, v| {
        let features = Features::version(v);
        let c = parse_str_for(text, "scheduler.yaml", &features).unwrap();
        let path = c.plugin_config_path(0, "NodeResourcesFit").unwrap();
        let PluginArgs::NodeResourcesFit(fit) = args_of(&c, "NodeResourcesFit") else {
            panic!()
        };
        let errs = validate_node_resources_fit_args(fit, &path.child("args"), &features);
        if errs.is_empty() {
            Vec::new()
        } else {
            c.locate_errors(errs)
                .to_string()
                .lines()
                .map(String::from)
                .collect()
        }
    };
    // The ratio's type without the ratio.
    let bare = with("        type: RequestedToCapacityRatio\n");
    assert_eq!(errs(&bare, V1_35), Vec::<String>::new());
    assert_eq!(
        errs(&bare, V1_36),
        [
            "scheduler.yaml:7:7: profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is RequestedToCapacityRatio"
        ]
    );
    // A ratio with another type: 1.35 checks its shape (under scoringStrategy), 1.36
    // forbids it and looks no further.
    let stray = with(
        "        type: MostAllocated
        requestedToCapacityRatio:
          shape:
          - {utilization: 50, score: 5}
          - {utilization: 40, score: 11}
",
    );
    assert_eq!(
        errs(&stray, V1_35),
        [
            "scheduler.yaml:7:7: profiles[0].pluginConfig[0].args.scoringStrategy.shape[1].utilization: Invalid value: 40: values must be sorted in increasing order",
            "scheduler.yaml:7:7: profiles[0].pluginConfig[0].args.scoringStrategy.shape[1].score: Invalid value: 11: not in valid range [0, 10]",
        ]
    );
    assert_eq!(
        errs(&stray, V1_36),
        [
            "scheduler.yaml:9:9: profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio"
        ]
    );
    // With its type, the shape's errors sit under requestedToCapacityRatio from 1.36 (and
    // now point at the shape the file wrote).
    let bad_shape = with(
        "        type: RequestedToCapacityRatio
        requestedToCapacityRatio:
          shape: []
",
    );
    assert_eq!(
        errs(&bad_shape, V1_35),
        [
            "scheduler.yaml:7:7: profiles[0].pluginConfig[0].args.scoringStrategy.shape: Required value: at least one point must be specified"
        ]
    );
    assert_eq!(
        errs(&bad_shape, V1_36),
        [
            "scheduler.yaml:10:11: profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified"
        ]
    );
    // A well-formed ratio passes in both.
    let good = with(
        "        type: RequestedToCapacityRatio
        requestedToCapacityRatio:
          shape:
          - {utilization: 0, score: 0}
          - {utilization: 100, score: 10}
",
    );
    assert_eq!(errs(&good, V1_35), Vec::<String>::new());
    assert_eq!(errs(&good, V1_36), Vec::<String>::new());
}

#[test]
fn placement_plugin_sets_are_fields_from_1_36() {
    use crate::features::{Features, KubeVersion::*};
    let text = format!(
        "{HEAD}profiles:
- plugins:
    placementScore:
      enabled:
      - name: NodeResourcesFit
        weight: 3
    placementGenerate:
      disabled:
      - name: '*'
"
    );
    // Before 1.36 they are unknown fields, refused as any is.
    for v in [V1_34, V1_35] {
        let e = parse_str_for(&text, "scheduler.yaml", &Features::version(v)).unwrap_err();
        assert_eq!(
            e.messages(),
            [
                r#"strict decoding error: unknown field "profiles[0].plugins.placementScore""#,
                r#"strict decoding error: unknown field "profiles[0].plugins.placementGenerate""#,
            ],
            "{v}"
        );
    }
    // 1.36 decodes them and merges them with the defaults (which have none).
    let c = parse_str_for(&text, "scheduler.yaml", &Features::version(V1_36)).unwrap();
    let p = &c.profiles[0].plugins;
    assert_eq!(
        names(&p.placement_score),
        expect(&[("NodeResourcesFit", 3)])
    );
    assert_eq!(p.placement_generate.disabled, vec![PluginRef::new("*", 0)]);
    // They are shown after multiPoint, as upstream's Plugins orders its fields, and the
    // configuration written out reads back the same.
    let json = c.to_json();
    let keys: Vec<&str> = json["profiles"][0]["plugins"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["multiPoint", "placementGenerate", "placementScore"]);
    let again = parse_str_for(&json.to_string(), "again.json", &Features::version(V1_36)).unwrap();
    assert_eq!(again, c);
    // Their plugin names are not checked against removed plugins (nor are they upstream).
    let removed = format!(
        "{HEAD}profiles:\n- plugins:\n    placementScore:\n      enabled:\n      - name: EBSLimits\n"
    );
    assert!(parse_str_for(&removed, "s.yaml", &Features::version(V1_36)).is_ok());
    // A plugin named only there gets its default args, as one enabled anywhere does.
    let only_there = format!(
        "{HEAD}profiles:
- plugins:
    multiPoint:
      disabled:
      - name: '*'
    queueSort:
      enabled:
      - name: PrioritySort
    bind:
      enabled:
      - name: DefaultBinder
    placementScore:
      enabled:
      - name: NodeResourcesFit
"
    );
    let c = parse_str_for(&only_there, "s.yaml", &Features::version(V1_36)).unwrap();
    assert!(c.profiles[0].plugin_args("NodeResourcesFit").is_some());
    // Empty sets are not shown, so 1.35's output is as before.
    let v135 = default_configuration_for(&Features::version(V1_35)).to_json();
    assert!(
        v135["profiles"][0]["plugins"]
            .get("placementScore")
            .is_none()
    );
}

// ---------- merging ----------

#[test]
fn disable_one_default_plugin() {
    let c = parse(
        "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: ImageLocality\n      - name: NodeResourcesFit\n",
    );
    let mp = &c.profiles[0].plugins.multi_point;
    let want: Vec<_> = DEFAULT_MULTIPOINT
        .iter()
        .filter(|(n, _)| *n != "ImageLocality" && *n != "NodeResourcesFit")
        .copied()
        .collect();
    assert_eq!(names(mp), expect(&want));
    assert_eq!(
        mp.disabled,
        vec![
            PluginRef::new("ImageLocality", 0),
            PluginRef::new("NodeResourcesFit", 0)
        ]
    );
    // No default args for a plugin that is not enabled anywhere.
    assert!(c.profiles[0].plugin_args("NodeResourcesFit").is_none());
}

#[test]
fn disable_all_and_enable_custom() {
    let c = parse(
        "profiles:
- plugins:
    multiPoint:
      enabled:
      - name: PrioritySort
      - name: DefaultBinder
      - name: Coscheduling
      disabled:
      - name: '*'
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
",
    );
    let p = &c.profiles[0];
    assert_eq!(
        names(&p.plugins.multi_point),
        expect(&[
            ("PrioritySort", 0),
            ("DefaultBinder", 0),
            ("Coscheduling", 0)
        ])
    );
    assert_eq!(p.plugins.multi_point.disabled, vec![PluginRef::new("*", 0)]);
    assert_eq!(p.plugin_config.len(), 1);
    assert_eq!(
        p.plugin_args("Coscheduling").unwrap().as_other().unwrap()["permitWaitingTimeSeconds"],
        10
    );
}

#[test]
fn override_weight_at_score_keeps_multipoint() {
    let c = parse(
        "profiles:
- plugins:
    score:
      enabled:
      - name: NodeResourcesFit
        weight: 5
      disabled:
      - name: ImageLocality
",
    );
    let p = &c.profiles[0].plugins;
    assert_eq!(names(&p.multi_point), expect(&DEFAULT_MULTIPOINT));
    assert_eq!(names(&p.score), expect(&[("NodeResourcesFit", 5)]));
    assert_eq!(p.score.disabled, vec![PluginRef::new("ImageLocality", 0)]);
}

#[test]
fn multipoint_override_replaces_in_place_and_custom_is_appended() {
    let c = parse(
        "profiles:
- plugins:
    multiPoint:
      enabled:
      - name: MyPlugin
        weight: 4
      - name: TaintToleration
      - name: InterPodAffinity
        weight: 10
",
    );
    let mut want: Vec<(&str, i32)> = DEFAULT_MULTIPOINT.to_vec();
    for (n, w) in &mut want {
        match *n {
            "TaintToleration" => *w = 0,
            "InterPodAffinity" => *w = 10,
            _ => {}
        }
    }
    want.push(("MyPlugin", 4));
    assert_eq!(names(&c.profiles[0].plugins.multi_point), expect(&want));
}

#[test]
fn explicit_points_are_the_users() {
    let c = parse(
        "profiles:
- plugins:
    filter:
      enabled:
      - name: MyFilter
      disabled:
      - name: NodePorts
    preEnqueue:
      disabled:
      - name: '*'
",
    );
    let p = &c.profiles[0].plugins;
    assert_eq!(names(&p.filter), expect(&[("MyFilter", 0)]));
    assert_eq!(p.filter.disabled, vec![PluginRef::new("NodePorts", 0)]);
    assert_eq!(p.pre_enqueue.disabled, vec![PluginRef::new("*", 0)]);
    assert!(p.pre_enqueue.enabled.is_empty());
}

#[test]
fn two_profiles() {
    let c = parse(
        "profiles:
- schedulerName: default-scheduler
- schedulerName: no-scoring
  percentageOfNodesToScore: 30
  plugins:
    preScore:
      disabled: [{name: '*'}]
    score:
      disabled: [{name: '*'}]
",
    );
    assert_eq!(c.profiles.len(), 2);
    assert_eq!(
        c.profile("no-scoring")
            .unwrap()
            .percentage_of_nodes_to_score,
        Some(30)
    );
    assert!(c.profile("nope").is_none());
}

// ---------- validation ----------

fn one_error(body: &str) -> String {
    let e = parse_err(body);
    let m = msgs(&e);
    assert_eq!(m.len(), 1, "{e}");
    m[0].clone()
}

#[test]
fn global_validation() {
    assert_eq!(
        one_error("parallelism: 0\n"),
        "parallelism: Invalid value: 0: should be an integer value greater than zero"
    );
    assert_eq!(
        one_error("percentageOfNodesToScore: 101\n"),
        "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"
    );
    assert_eq!(
        one_error("profiles:\n- percentageOfNodesToScore: -1\n"),
        "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"
    );
    assert_eq!(
        one_error("podInitialBackoffSeconds: 0\npodMaxBackoffSeconds: 10\n"),
        "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"
    );
    assert_eq!(
        one_error("podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 4\n"),
        "podMaxBackoffSeconds: Invalid value: 4: must be greater than or equal to PodInitialBackoffSeconds"
    );
    assert_eq!(
        one_error("profiles:\n- schedulerName: a\n- {}\n"),
        "profiles[1].schedulerName: Required value"
    );
    assert_eq!(
        one_error("profiles:\n- schedulerName: a\n- schedulerName: a\n"),
        r#"profiles[1].schedulerName: Duplicate value: {}: "a" is also the schedulerName of profiles[0]"#
    );
    assert_eq!(
        one_error("clientConnection:\n  burst: -1\n"),
        "clientConnection.burst: Invalid value: -1: must be non-negative"
    );
    assert_eq!(
        one_error("leaderElection:\n  resourceLock: endpoints\n"),
        r#"leaderElection.resourceLock: Invalid value: "endpoints": resourceLock value must be "leases""#
    );
    assert_eq!(
        one_error("leaderElection:\n  leaseDuration: 5s\n"),
        r#"leaderElection.leaseDuration: Invalid value: "10s": must be greater than `RenewDeadline`"#
    );
    // Leader election off: nothing checked.
    parse("leaderElection:\n  leaderElect: false\n  resourceLock: endpoints\n");
}

#[test]
fn validation_reports_every_error_with_lines() {
    let e = parse_err(
        "parallelism: -1\npodInitialBackoffSeconds: -2\nprofiles:\n- schedulerName: ''\n",
    );
    assert_eq!(
        e.to_string(),
        "scheduler.yaml:3:1: parallelism: Invalid value: -1: should be an integer value greater than zero\n\
         scheduler.yaml:6:3: profiles[0].schedulerName: Required value\n\
         scheduler.yaml:4:1: podInitialBackoffSeconds: Invalid value: -2: must be greater than 0"
    );
    assert_eq!(e.field_errors().len(), 3);
}

#[test]
fn queue_sort_must_match_across_profiles() {
    let e = parse_err(
        "profiles:
- schedulerName: a
  plugins:
    queueSort:
      enabled: [{name: PrioritySort}, {name: Other}]
- schedulerName: b
",
    );
    assert_eq!(
        msgs(&e),
        vec![
            "profiles[0].plugins.queueSort.Enabled: Invalid value: 2: only one queue sort plugin can be enabled",
            "profiles[1].plugins.queueSort: Invalid value: {\"Disabled\":null,\"Enabled\":null}: must be the same for all profiles",
        ]
    );
}

#[test]
fn removed_plugins_are_rejected() {
    let e = parse_err(
        "profiles:
- plugins:
    filter:
      enabled:
      - name: NodePorts
      - name: EBSLimits
  pluginConfig:
  - name: GCEPDLimits
",
    );
    let v = r#"was invalid in version "kubescheduler.config.k8s.io/v1" (KubeSchedulerConfiguration is version "kubescheduler.config.k8s.io/v1")"#;
    assert_eq!(
        msgs(&e),
        vec![
            format!("profiles[0].plugins.filter.enabled[1]: Invalid value: \"EBSLimits\": {v}"),
            format!("profiles[0].pluginConfig[0]: Invalid value: \"GCEPDLimits\": {v}"),
        ]
    );
    // In multiPoint they are not checked here (the framework reports unknown plugins).
    parse("profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: AzureDiskLimits}]\n");
}

#[test]
fn duplicate_plugin_config() {
    assert_eq!(
        one_error("profiles:\n- pluginConfig:\n  - name: Foo\n  - name: Foo\n"),
        r#"profiles[0].pluginConfig[1]: Duplicate value: "Foo""#
    );
}

fn args_errors(plugin: &str, args: &str) -> Vec<String> {
    let body = format!("profiles:\n- pluginConfig:\n  - name: {plugin}\n    args:\n{args}");
    msgs(&parse_err(&body))
}

const A: &str = "profiles[0].pluginConfig[0].args";

#[test]
fn default_preemption_args_validation() {
    assert_eq!(
        args_errors(
            "DefaultPreemption",
            "      minCandidateNodesPercentage: 101\n      minCandidateNodesAbsolute: -1\n"
        ),
        vec![
            format!(
                "{A}.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"
            ),
            format!(
                "{A}.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"
            ),
        ]
    );
}

#[test]
fn inter_pod_affinity_args_validation() {
    assert_eq!(
        args_errors("InterPodAffinity", "      hardPodAffinityWeight: 101\n"),
        vec![format!(
            "{A}.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"
        )]
    );
}

#[test]
fn balanced_allocation_args_validation() {
    assert_eq!(
        args_errors(
            "NodeResourcesBalancedAllocation",
            "      resources:\n      - {name: cpu, weight: 2}\n      - {name: cpu}\n"
        ),
        vec![
            format!("{A}.resources[0].weight: Invalid value: 2: must be 1"),
            format!("{A}.resources[1].name: Duplicate value: \"cpu\""),
        ]
    );
}

#[test]
fn pod_topology_spread_args_validation() {
    assert_eq!(
        args_errors(
            "PodTopologySpread",
            "      defaultConstraints:
      - maxSkew: 0
        topologyKey: ''
        whenUnsatisfiable: Foo
        labelSelector: {}
      - maxSkew: 1
        topologyKey: zone
        whenUnsatisfiable: ''
      - maxSkew: 1
        topologyKey: zone
        whenUnsatisfiable: ''
"
        ),
        vec![
            format!(
                "{A}.defaultingType: Invalid value: \"System\": when .defaultConstraints are not empty"
            ),
            format!(
                "{A}.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)"
            ),
            format!("{A}.defaultConstraints[0].topologyKey: Required value: can not be empty"),
            format!(
                "{A}.defaultConstraints[0].whenUnsatisfiable: Unsupported value: \"Foo\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
            ),
            format!(
                "{A}.defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
            ),
            format!(
                "{A}.defaultConstraints[1].whenUnsatisfiable: Required value: can not be empty"
            ),
            format!(
                "{A}.defaultConstraints[2].whenUnsatisfiable: Required value: can not be empty"
            ),
            format!("{A}.defaultConstraints[2]: Duplicate value: \"{{zone, }}\""),
        ]
    );
    assert_eq!(
        args_errors("PodTopologySpread", "      defaultingType: Foo\n"),
        vec![format!(
            "{A}.defaultingType: Unsupported value: \"Foo\": supported values: \"System\", \"List\""
        )]
    );
}

#[test]
fn node_affinity_args_validation() {
    let errs = args_errors(
        "NodeAffinity",
        "      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: a, operator: In}
            - {key: b, operator: Exists, values: [x]}
            - {key: '-c', operator: Foo}
            - {key: d, operator: Lt, values: ['1', x]}
            matchFields:
            - {key: metadata.name, operator: In, values: [a, b]}
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 1
          preference:
            matchExpressions:
            - {key: e, operator: In, values: ['-bad-']}
        - weight: 0
          preference:
            matchExpressions:
            - {key: f, operator: Foo}
",
    );
    let r = format!(
        "{A}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
    );
    let p = format!("{A}.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]");
    assert_eq!(
        errs,
        vec![
            format!(
                "{r}.matchExpressions[0].values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
            ),
            format!(
                "{r}.matchExpressions[1].values: Invalid value: [\"x\"]: values set must be empty for exists and does not exist"
            ),
            format!(
                "{r}.matchExpressions[2].operator: Unsupported value: \"Foo\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\""
            ),
            format!(
                "{r}.matchExpressions[3].values: Invalid value: [\"1\",\"x\"]: for 'Gt', 'Lt' operators, exactly one value is required"
            ),
            format!(
                "{r}.matchExpressions[3].values[1]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"
            ),
            format!(
                "{r}.matchFields[0].values: Invalid value: [\"a\",\"b\"]: must have one element"
            ),
            format!(
                "{p}.matchExpressions[0].values[0][e]: Invalid value: \"-bad-\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ),
        ]
    );
}

#[test]
fn volume_binding_args_validation() {
    assert_eq!(
        args_errors(
            "VolumeBinding",
            "      bindTimeoutSeconds: -1\n      shape: []\n"
        ),
        vec![
            format!(
                "{A}.bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value"
            ),
            format!(
                "{A}.shape: Invalid value: []: unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"
            ),
        ]
    );
    assert_eq!(
        args_errors(
            "VolumeBinding",
            "      shape: [{utilization: 0, score: 10}]\n"
        ),
        vec![format!(
            "{A}.shape: Invalid value: [{{\"Score\":10,\"Utilization\":0}}]: unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"
        )]
    );
}

#[test]
fn dynamic_resources_args_validation() {
    assert_eq!(
        args_errors(
            "DynamicResources",
            "      filterTimeout: -1s\n      bindingTimeout: 5m\n"
        ),
        vec![
            format!("{A}.filterTimeout: Invalid value: \"-1s\": must be zero or positive"),
            format!(
                "{A}.bindingTimeout: Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled"
            ),
        ]
    );
    let c = parse(
        "profiles:\n- pluginConfig:\n  - name: DynamicResources\n    args: {filterTimeout: 0s}\n",
    );
    assert_eq!(
        args_of(&c, "DynamicResources"),
        &PluginArgs::DynamicResources(DynamicResourcesArgs {
            filter_timeout: Some(Duration::ZERO),
            binding_timeout: None
        })
    );
}

#[test]
fn extender_validation() {
    let e = parse_err(
        "extenders:
- urlPrefix: http://a
  prioritizeVerb: prioritize
  bindVerb: bind
  managedResources:
  - name: example.com/foo
  - name: cpu
- urlPrefix: http://b
  bindVerb: bind
  weight: 1
  managedResources:
  - name: example.com/foo
",
    );
    assert_eq!(
        msgs(&e),
        vec![
            "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
            "extenders[0].managedResources[1].name: Invalid value: \"cpu\": is an invalid extended resource name",
            "extenders[1].managedResources[0].name: Invalid value: \"example.com/foo\": duplicate extender managed resource name",
            "extenders: Invalid value: \"found 2 extenders implementing bind\": only one extender can implement bind",
        ]
    );
}

#[test]
fn extender_fields_are_decoded() {
    let c = parse(
        "extenders:
- urlPrefix: https://ext:8888/sched
  filterVerb: filter
  preemptVerb: preempt
  prioritizeVerb: prioritize
  weight: 3
  bindVerb: bind
  enableHTTPS: true
  httpTimeout: 2s
  nodeCacheCapable: true
  ignorable: true
  managedResources:
  - name: example.com/gpu
    ignoredByScheduler: true
  tlsConfig:
    insecure: true
    serverName: ext
    caData: aGVsbG8=
",
    );
    let e = &c.extenders[0];
    assert_eq!(e.url_prefix, "https://ext:8888/sched");
    assert_eq!(
        (
            e.filter_verb.as_str(),
            e.preempt_verb.as_str(),
            e.prioritize_verb.as_str(),
            e.bind_verb.as_str()
        ),
        ("filter", "preempt", "prioritize", "bind")
    );
    assert_eq!(e.weight, 3);
    assert!(e.enable_https && e.node_cache_capable && e.ignorable);
    assert_eq!(e.http_timeout, Duration::from_secs(2));
    assert_eq!(
        e.managed_resources,
        vec![ExtenderManagedResource {
            name: "example.com/gpu".into(),
            ignored_by_scheduler: true
        }]
    );
    let tls = e.tls_config.as_ref().unwrap();
    assert!(tls.insecure);
    assert_eq!(tls.server_name, "ext");
    assert_eq!(tls.ca_data, b"hello");
}

// ---------- decoding: versions, JSON, errors ----------

#[test]
fn v1beta3_is_accepted() {
    let text = "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\nprofiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      apiVersion: kubescheduler.config.k8s.io/v1beta3\n      kind: InterPodAffinityArgs\n      hardPodAffinityWeight: 5\n";
    let c = parse_str(text, "s.yaml").unwrap();
    assert_eq!(c.api_version, ApiVersion::V1Beta3);
    assert_eq!(c.profiles[0].plugins, default_plugins(&Default::default()));
    assert_eq!(
        args_of(&c, "InterPodAffinity"),
        &PluginArgs::InterPodAffinity(InterPodAffinityArgs {
            hard_pod_affinity_weight: 5,
            ignore_preferred_terms_of_existing_pods: false
        })
    );
    let mut d = default_configuration();
    d.api_version = ApiVersion::V1Beta3;
    assert_eq!(
        parse_str(
            "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
            "x"
        )
        .unwrap(),
        d
    );
    // Removed plugins are rejected in v1beta3 configurations as well.
    let e = parse_str("apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\nprofiles:\n- pluginConfig:\n  - name: CinderLimits\n", "x").unwrap_err();
    assert!(
        msgs(&e)[0].ends_with(
            r#"(KubeSchedulerConfiguration is version "kubescheduler.config.k8s.io/v1beta3")"#
        ),
        "{e}"
    );
}

#[test]
fn json_input() {
    let text = r#"{
  "apiVersion": "kubescheduler.config.k8s.io/v1",
  "kind": "KubeSchedulerConfiguration",
  "parallelism": 8,
  "profiles": [
    {"schedulerName": "json-scheduler",
     "plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 7}]}},
     "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}
  ]
}"#;
    let c = parse_str(text, "s.json").unwrap();
    assert_eq!(c.parallelism, 8);
    assert_eq!(c.profiles[0].scheduler_name, "json-scheduler");
    assert_eq!(
        names(&c.profiles[0].plugins.score),
        expect(&[("ImageLocality", 7)])
    );
    let e = parse_str(
        &text.replace(
            "\"parallelism\": 8",
            "\"parallelism\": 8, \"Parallelism\": 2",
        ),
        "s.json",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "s.json:4:21: strict decoding error: unknown field \"Parallelism\""
    );
}

#[test]
fn syntax_error_names_file_and_line() {
    let e = parse_str("apiVersion: x\nkind: [a,\n  b\nfoo: : :\n", "bad.yaml").unwrap_err();
    let ConfigError::Syntax { pos, .. } = &e else {
        panic!("{e:?}")
    };
    assert!(pos.line >= 2, "{e}");
    assert!(
        e.to_string()
            .starts_with(&format!("bad.yaml:{}:", pos.line)),
        "{e}"
    );
    let e = parse_str("{\"a\": 1,,}", "bad.json").unwrap_err();
    assert!(
        matches!(e, ConfigError::Syntax { .. }) && e.to_string().starts_with("bad.json:1:"),
        "{e}"
    );
}

#[test]
fn unknown_and_duplicate_fields() {
    let e = parse_err(
        "parallelism: 2
parallelism: 3
profiles:
- schedulerName: a
  plugins:
    score:
      enabled:
      - name: X
        wieght: 3
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        typo: x
",
    );
    assert_eq!(
        e.to_string(),
        "scheduler.yaml:4:1: strict decoding error: duplicate field \"parallelism\"\n\
         scheduler.yaml:11:9: strict decoding error: unknown field \"profiles[0].plugins.score.enabled[0].wieght\"\n\
         scheduler.yaml:16:9: strict decoding error: unknown field \"profiles[0].pluginConfig[0].args.scoringStrategy.typo\""
    );
}

#[test]
fn wrong_types() {
    let e = parse_err(
        "parallelism: x\nprofiles: {}\nextenders:\n- urlPrefix: 1\n  httpTimeout: 5\n- httpTimeout: 3d\n",
    );
    assert_eq!(
        msgs(&e),
        vec![
            "parallelism: json: cannot unmarshal string into Go value of type int32",
            "profiles: json: cannot unmarshal object into Go value of type array",
            "extenders[0].urlPrefix: json: cannot unmarshal number 1 into Go value of type string",
            "extenders[0].httpTimeout: json: cannot unmarshal number 5 into Go value of type string",
            "extenders[1].httpTimeout: time: unknown unit \"d\" in duration \"3d\"",
        ]
    );
    assert_eq!(
        one_error("parallelism: 3000000000\n"),
        "parallelism: json: cannot unmarshal number 3000000000 into Go value of type int32"
    );
    // Integral floats are integers after YAML-to-JSON conversion.
    assert_eq!(parse("parallelism: 4.0\n").parallelism, 4);
}

#[test]
fn bad_api_version_or_kind() {
    let cases = [
        ("", "Object 'Kind' is missing in 'null'"),
        (
            "kind: KubeSchedulerConfiguration\n",
            "Object 'apiVersion' is missing in '{\"kind\":\"KubeSchedulerConfiguration\"}'",
        ),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Foo\n",
            "no kind \"Foo\" is registered for version \"kubescheduler.config.k8s.io/v1\" in scheme \"pkg/scheduler/apis/config/scheme/scheme.go:29\"",
        ),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1beta2\nkind: KubeSchedulerConfiguration\n",
            "no kind \"KubeSchedulerConfiguration\" is registered for version \"kubescheduler.config.k8s.io/v1beta2\" in scheme \"pkg/scheduler/apis/config/scheme/scheme.go:29\"",
        ),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: NodeResourcesFitArgs\n",
            "couldn't decode as KubeSchedulerConfiguration, got kubescheduler.config.k8s.io/v1, Kind=NodeResourcesFitArgs: ",
        ),
    ];
    for (text, want) in cases {
        let e = parse_str(text, "s.yaml").unwrap_err();
        assert!(matches!(e, ConfigError::Decode { .. }), "{e:?}");
        assert_eq!(msgs(&e), vec![want.to_string()], "{text}");
    }
    let e = parse_str("apiVersion: v1\nkind: Pod\n", "pod.yaml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "pod.yaml:2:1: no kind \"Pod\" is registered for version \"v1\" in scheme \"pkg/scheduler/apis/config/scheme/scheme.go:29\""
    );
}

#[test]
fn args_type_meta() {
    let ok = parse(
        "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args:\n      kind: DefaultPreemptionArgs\n      apiVersion: kubescheduler.config.k8s.io/v1\n      minCandidateNodesPercentage: 20\n",
    );
    assert_eq!(
        args_of(&ok, "DefaultPreemption"),
        &PluginArgs::DefaultPreemption(DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 20,
            min_candidate_nodes_absolute: 100
        })
    );
    assert_eq!(
        one_error(
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      kind: InterPodAffinityArgs\n"
        ),
        format!(
            "{A}: args for plugin NodeResourcesFit were not of type NodeResourcesFitArgs.kubescheduler.config.k8s.io, got InterPodAffinityArgs.kubescheduler.config.k8s.io"
        )
    );
    assert_eq!(
        one_error(
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      apiVersion: example.com/v1\n"
        ),
        format!(
            "{A}: decoding args for plugin NodeResourcesFit: no kind \"NodeResourcesFitArgs\" is registered for version \"example.com/v1\" in scheme \"pkg/scheduler/apis/config/scheme/scheme.go:29\""
        )
    );
    assert!(
        one_error("profiles:\n- pluginConfig:\n  - name: VolumeBinding\n    args: 5\n")
            .starts_with(&format!(
                "{A}: decoding args for plugin VolumeBinding: couldn't get version/kind"
            ))
    );
}

#[test]
fn huge_and_hostile_inputs_are_bounded() {
    let big = format!("{HEAD}# {}\n", "x".repeat(node::MAX_INPUT_BYTES));
    assert!(matches!(
        parse_str(&big, "big.yaml"),
        Err(ConfigError::Syntax { .. })
    ));
    let deep = format!(
        "{HEAD}profiles: {}{}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert!(parse_str(&deep, "deep.yaml").is_err());
    let mut bomb = format!("{HEAD}extenders:\n- urlPrefix: a\nx0: &a0 [1,1,1,1,1,1,1,1,1,1]\n");
    for i in 1..12 {
        let p = i - 1;
        bomb.push_str(&format!(
            "x{i}: &a{i} [*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p}]\n"
        ));
    }
    assert!(parse_str(&bomb, "bomb.yaml").is_err());
}

#[test]
fn load_file_reads_and_reports_the_path() {
    let dir = std::env::temp_dir().join(format!("kubestep-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ok = dir.join("ok.yaml");
    std::fs::write(&ok, format!("{HEAD}parallelism: 3\n")).unwrap();
    assert_eq!(load_file(&ok).unwrap().parallelism, 3);
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, format!("{HEAD}parallelism: 0\n")).unwrap();
    let e = load_file(&bad).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:3:1: parallelism: Invalid value: 0: should be an integer value greater than zero",
            bad.display()
        )
    );
    let missing = dir.join("missing.yaml");
    assert!(matches!(load_file(&missing), Err(ConfigError::Io { .. })));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn fixtures_load() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/config");
    let c = load_file(&dir.join("multi-profile.yaml")).unwrap();
    assert_eq!(c.profiles.len(), 2);
    assert_eq!(c.profiles[1].scheduler_name, "gang-scheduler");
    let j = load_file(&dir.join("minimal.json")).unwrap();
    assert_eq!(j, default_configuration());
}

#[test]
fn serialized_config_decodes_to_itself() {
    let c = parse(
        "percentageOfNodesToScore: 40
profiles:
- schedulerName: a
  plugins:
    multiPoint:
      enabled: [{name: Custom, weight: 3}]
      disabled: [{name: ImageLocality}]
    filter:
      disabled: [{name: '*'}]
  pluginConfig:
  - name: Custom
    args: {x: [1, 2]}
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions: [{key: zone, operator: In, values: [a]}]
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, matchLabelKeys: [app]}
- schedulerName: b
  percentageOfNodesToScore: 5
extenders:
- urlPrefix: http://x
  filterVerb: f
  httpTimeout: 1m
  tlsConfig: {certData: AAEC}
",
    );
    let json = serde_json::to_string_pretty(&c.to_json()).unwrap();
    let again = parse_str(&json, "again.json").unwrap_or_else(|e| panic!("{e}\n{json}"));
    assert_eq!(again, c);
}

// ---------- properties ----------

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
            let _ = parse_str(&s, "fuzz.yaml");
        }

        #[test]
        fn yamlish_text_never_panics(s in "[a-zA-Z:{}\\[\\],&*!|>'\"#0-9 \\n-]{0,300}") {
            let _ = parse_str(&format!("{HEAD}{s}"), "fuzz.yaml");
            let _ = parse_str(&s, "fuzz.yaml");
        }

        #[test]
        fn valid_settings_round_trip(
            parallelism in 1i32..1000,
            pct in proptest::option::of(0i32..=100),
            initial in 1i64..100,
            extra in 0i64..100,
            names in proptest::collection::btree_set("[a-z][a-z0-9-]{0,10}", 1..4),
            weight in 0i32..50,
            hard in 0i32..=100,
            as_json in any::<bool>(),
        ) {
            let mut y = format!("{HEAD}parallelism: {parallelism}\npodInitialBackoffSeconds: {initial}\npodMaxBackoffSeconds: {}\n", initial + extra);
            if let Some(p) = pct {
                y.push_str(&format!("percentageOfNodesToScore: {p}\n"));
            }
            y.push_str("profiles:\n");
            for n in &names {
                y.push_str(&format!("- schedulerName: '{n}'\n  plugins:\n    score:\n      enabled:\n      - name: NodeAffinity\n        weight: {weight}\n  pluginConfig:\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: {hard}\n"));
            }
            let c = parse_str(&y, "p.yaml").map_err(|e| TestCaseError::fail(format!("{e}\n{y}")))?;
            prop_assert_eq!(c.parallelism, parallelism);
            prop_assert_eq!(c.percentage_of_nodes_to_score, Some(pct.unwrap_or(0)));
            prop_assert_eq!(c.pod_initial_backoff_seconds, initial);
            prop_assert_eq!(c.pod_max_backoff_seconds, initial + extra);
            let got: Vec<&str> = c.profiles.iter().map(|p| p.scheduler_name.as_str()).collect();
            let want: Vec<&str> = names.iter().map(String::as_str).collect();
            prop_assert_eq!(got, want);
            for p in &c.profiles {
                prop_assert_eq!(&p.plugins.score.enabled, &vec![PluginRef::new("NodeAffinity", weight)]);
                prop_assert_eq!(
                    p.plugin_args("InterPodAffinity"),
                    Some(&PluginArgs::InterPodAffinity(InterPodAffinityArgs { hard_pod_affinity_weight: hard, ignore_preferred_terms_of_existing_pods: false }))
                );
            }
            // Serializing and decoding again gives the same configuration.
            let text = if as_json {
                serde_json::to_string(&c.to_json()).unwrap()
            } else {
                serde_json::to_string_pretty(&c.to_json()).unwrap()
            };
            let again = parse_str(&text, "again.json").map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(again, c);
        }
    }
}
