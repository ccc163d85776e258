//! Validation of a defaulted configuration (`validation/validation.go` and
//! `validation/validation_pluginargs.go`), with upstream's field paths and messages; what a
//! feature gate changes follows the configuration's `features`.

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm};
use serde_json::json;

use super::args::*;
use super::field::{
    BadValue, FieldError, FieldPath, is_qualified_name, is_valid_label_value, validate_label_name,
};
use super::types::*;
use crate::features::{Features, Gate};

/// Plugins removed from the scheduler, rejected with the version they became invalid in.
const INVALID_PLUGINS_BY_VERSION: [(&str, &[&str]); 1] = [(
    "kubescheduler.config.k8s.io/v1",
    &[
        "AzureDiskLimits",
        "CinderLimits",
        "EBSLimits",
        "GCEPDLimits",
    ],
)];

/// The version in which `name` was removed, looking at versions up to `api_version`
/// (`isPluginInvalid`).
fn invalid_plugin_version(api_version: &str, name: &str) -> Option<&'static str> {
    for (version, plugins) in INVALID_PLUGINS_BY_VERSION {
        if plugins.contains(&name) {
            return Some(version);
        }
        if api_version == version {
            break;
        }
    }
    None
}

fn invalid_plugin_error(
    path: FieldPath,
    api_version: &str,
    name: &str,
    version: &str,
) -> FieldError {
    FieldError::invalid(
        path,
        BadValue::Str(name.to_string()),
        format!(
            "was invalid in version {} (KubeSchedulerConfiguration is version {})",
            super::field::go_quote(version),
            super::field::go_quote(api_version)
        ),
    )
}

/// `ValidateKubeSchedulerConfiguration`: every error found, in upstream's order.
pub fn validate(cc: &KubeSchedulerConfiguration) -> Vec<FieldError> {
    let mut errs = Vec::new();
    // component-base client connection and leader election checks
    if cc.client_connection.burst < 0 {
        errs.push(FieldError::invalid(
            FieldPath::new("clientConnection").child("burst"),
            BadValue::Int(cc.client_connection.burst.into()),
            "must be non-negative",
        ));
    }
    let le = &cc.leader_election;
    let lep = FieldPath::new("leaderElection");
    if le.leader_elect {
        let dur = |d: super::duration::Duration| BadValue::Json(json!(d.to_string()));
        if le.lease_duration.nanos <= 0 {
            errs.push(FieldError::invalid(
                lep.child("leaseDuration"),
                dur(le.lease_duration),
                "must be greater than zero",
            ));
        }
        if le.renew_deadline.nanos <= 0 {
            errs.push(FieldError::invalid(
                lep.child("renewDeadline"),
                dur(le.renew_deadline),
                "must be greater than zero",
            ));
        }
        if le.retry_period.nanos <= 0 {
            errs.push(FieldError::invalid(
                lep.child("retryPeriod"),
                dur(le.retry_period),
                "must be greater than zero",
            ));
        }
        if le.lease_duration.nanos <= le.renew_deadline.nanos {
            errs.push(FieldError::invalid(
                lep.child("leaseDuration"),
                dur(le.renew_deadline),
                "must be greater than `RenewDeadline`",
            ));
        }
        if le.resource_lock.is_empty() {
            errs.push(FieldError::required(lep.child("resourceLock"), ""));
        }
        if le.resource_namespace.is_empty() {
            errs.push(FieldError::required(lep.child("resourceNamespace"), ""));
        }
        if le.resource_name.is_empty() {
            errs.push(FieldError::required(lep.child("resourceName"), ""));
        }
        if le.resource_lock != "leases" {
            errs.push(FieldError::invalid(
                lep.child("resourceLock"),
                BadValue::Str(le.resource_lock.clone()),
                r#"resourceLock value must be "leases""#,
            ));
        }
    }

    let profiles_path = FieldPath::new("profiles");
    if cc.parallelism <= 0 {
        errs.push(FieldError::invalid(
            FieldPath::new("parallelism"),
            BadValue::Int(cc.parallelism.into()),
            "should be an integer value greater than zero",
        ));
    }
    if cc.profiles.is_empty() {
        errs.push(FieldError::required(profiles_path.clone(), ""));
    } else {
        let mut seen: Vec<&str> = Vec::new();
        for (i, profile) in cc.profiles.iter().enumerate() {
            let path = profiles_path.index(i);
            errs.extend(validate_profile(
                &path,
                cc.api_version.as_str(),
                profile,
                &cc.features,
            ));
            if let Some(first) = seen
                .iter()
                .position(|n| *n == profile.scheduler_name.as_str())
            {
                // Upstream passes a *field.Path as the value, which encodes as "{}": its
                // words are kept, and kubestep says which profile has the name already.
                let mut e =
                    FieldError::duplicate(path.child("schedulerName"), BadValue::Json(json!({})));
                e.detail = format!(
                    "{} is also the schedulerName of {}",
                    super::field::go_quote(&profile.scheduler_name),
                    profiles_path.index(first)
                );
                errs.push(e);
            }
            seen.push(&profile.scheduler_name);
        }
        errs.extend(validate_common_queue_sort(&profiles_path, &cc.profiles));
    }
    if let Some(e) = validate_percentage(
        FieldPath::new("percentageOfNodesToScore"),
        cc.percentage_of_nodes_to_score,
    ) {
        errs.push(e);
    }
    if cc.pod_initial_backoff_seconds <= 0 {
        errs.push(FieldError::invalid(
            FieldPath::new("podInitialBackoffSeconds"),
            BadValue::Int(cc.pod_initial_backoff_seconds),
            "must be greater than 0",
        ));
    }
    if cc.pod_max_backoff_seconds < cc.pod_initial_backoff_seconds {
        errs.push(FieldError::invalid(
            FieldPath::new("podMaxBackoffSeconds"),
            BadValue::Int(cc.pod_max_backoff_seconds),
            "must be greater than or equal to PodInitialBackoffSeconds",
        ));
    }
    errs.extend(validate_extenders(
        &FieldPath::new("extenders"),
        &cc.extenders,
    ));
    errs
}

fn validate_percentage(path: FieldPath, v: Option<i32>) -> Option<FieldError> {
    match v {
        Some(p) if !(0..=100).contains(&p) => Some(FieldError::invalid(
            path,
            BadValue::Int(p.into()),
            "not in valid range [0-100]",
        )),
        _ => None,
    }
}

fn validate_profile(
    path: &FieldPath,
    api_version: &str,
    profile: &Profile,
    features: &Features,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if profile.scheduler_name.is_empty() {
        errs.push(FieldError::required(path.child("schedulerName"), ""));
    }
    if let Some(e) = validate_percentage(
        path.child("percentageOfNodesToScore"),
        profile.percentage_of_nodes_to_score,
    ) {
        errs.push(e);
    }
    errs.extend(validate_plugin_config(path, api_version, profile, features));
    errs
}

fn validate_plugin_config(
    path: &FieldPath,
    api_version: &str,
    profile: &Profile,
    features: &Features,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    // Removed plugins at each explicit extension point (multiPoint is not checked upstream,
    // nor are the placement sets of 1.36).
    let plugins_path = path.child("plugins");
    for point in ExtensionPoint::ALL {
        if point == ExtensionPoint::MultiPoint || point.is_placement() {
            continue;
        }
        let set_path = plugins_path.child(point.json_name()).child("enabled");
        for (i, p) in profile.plugins.get(point).enabled.iter().enumerate() {
            if let Some(v) = invalid_plugin_version(api_version, &p.name) {
                errs.push(invalid_plugin_error(
                    set_path.index(i),
                    api_version,
                    &p.name,
                    v,
                ));
            }
        }
    }

    let mut seen: Vec<&str> = Vec::new();
    for (i, pc) in profile.plugin_config.iter().enumerate() {
        let pc_path = path.child("pluginConfig").index(i);
        if seen.contains(&pc.name.as_str()) {
            errs.push(FieldError::duplicate(
                pc_path.clone(),
                BadValue::Str(pc.name.clone()),
            ));
        } else {
            seen.push(&pc.name);
        }
        if let Some(v) = invalid_plugin_version(api_version, &pc.name) {
            errs.push(invalid_plugin_error(pc_path, api_version, &pc.name, v));
            continue;
        }
        // NodeResourcesFit is absent here on purpose: upstream keys its validator by
        // "NodeResourcesFitArgs", so fit args are validated by the plugin constructor.
        let validated = [
            "DefaultPreemption",
            "InterPodAffinity",
            "NodeAffinity",
            "NodeResourcesBalancedAllocation",
            "PodTopologySpread",
            "VolumeBinding",
            "DynamicResources",
        ];
        if !validated.contains(&pc.name.as_str()) {
            continue;
        }
        let args_path = pc_path.child("args");
        match (pc.name.as_str(), &pc.args) {
            ("DefaultPreemption", PluginArgs::DefaultPreemption(a)) => {
                errs.extend(validate_default_preemption_args(&args_path, a))
            }
            ("InterPodAffinity", PluginArgs::InterPodAffinity(a)) => {
                errs.extend(validate_inter_pod_affinity_args(&args_path, a))
            }
            ("NodeAffinity", PluginArgs::NodeAffinity(a)) => {
                errs.extend(validate_node_affinity_args(&args_path, a))
            }
            ("NodeResourcesBalancedAllocation", PluginArgs::NodeResourcesBalancedAllocation(a)) => {
                errs.extend(validate_node_resources_balanced_allocation_args(
                    &args_path, a,
                ))
            }
            ("PodTopologySpread", PluginArgs::PodTopologySpread(a)) => {
                errs.extend(validate_pod_topology_spread_args(&args_path, a))
            }
            ("VolumeBinding", PluginArgs::VolumeBinding(a)) => {
                errs.extend(validate_volume_binding_args(&args_path, a, features))
            }
            ("DynamicResources", PluginArgs::DynamicResources(a)) => {
                errs.extend(validate_dynamic_resources_args(&args_path, a, features))
            }
            (_, args) => errs.push(FieldError::invalid(
                args_path,
                BadValue::Json(serde_json::to_value(args).unwrap_or_default()),
                "has to match plugin args",
            )),
        }
    }
    errs
}

/// Upstream's JSON of an internal PluginSet (Go field names, no JSON tags).
fn plugin_set_value(s: &PluginSet) -> serde_json::Value {
    let list = |v: &[PluginRef]| {
        if v.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::Value::Array(
                v.iter()
                    .map(|p| json!({"Name": p.name, "Weight": p.weight}))
                    .collect(),
            )
        }
    };
    json!({"Enabled": list(&s.enabled), "Disabled": list(&s.disabled)})
}

fn validate_common_queue_sort(path: &FieldPath, profiles: &[Profile]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let canon = &profiles[0].plugins.queue_sort;
    let queue_sort_name = canon.enabled.first().map(|p| p.name.as_str()).unwrap_or("");
    if canon.enabled.len() > 1 {
        errs.push(FieldError::invalid(
            path.index(0)
                .child("plugins")
                .child("queueSort")
                .child("Enabled"),
            BadValue::Int(canon.enabled.len() as i64),
            "only one queue sort plugin can be enabled",
        ));
    }
    let mut queue_sort_args: Option<&PluginArgs> = None;
    if !queue_sort_name.is_empty() {
        for pc in &profiles[0].plugin_config {
            if pc.name == queue_sort_name {
                queue_sort_args = Some(&pc.args);
            }
        }
    }
    for (i, profile) in profiles.iter().enumerate().skip(1) {
        let curr = &profile.plugins.queue_sort;
        if curr != canon {
            errs.push(FieldError::invalid(
                path.index(i).child("plugins").child("queueSort"),
                BadValue::Json(plugin_set_value(curr)),
                "must be the same for all profiles",
            ));
        }
        for pc in &profile.plugin_config {
            let same = match queue_sort_args {
                Some(a) => *a == pc.args,
                None => pc.args.is_absent(),
            };
            if pc.name == queue_sort_name && !same {
                errs.push(FieldError::invalid(
                    path.index(i).child("pluginConfig").child("args"),
                    BadValue::Json(serde_json::to_value(&pc.args).unwrap_or_default()),
                    "queueSort must be the same for all profiles",
                ));
            }
        }
    }
    errs
}

fn validate_extenders(path: &FieldPath, extenders: &[Extender]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut binders = 0;
    let mut managed: Vec<&str> = Vec::new();
    for (i, e) in extenders.iter().enumerate() {
        let p = path.index(i);
        if !e.prioritize_verb.is_empty() && e.weight <= 0 {
            errs.push(FieldError::invalid(
                p.child("weight"),
                BadValue::Int(e.weight),
                "must have a positive weight applied to it",
            ));
        }
        if !e.bind_verb.is_empty() {
            binders += 1;
        }
        for (j, r) in e.managed_resources.iter().enumerate() {
            let name_path = p.child("managedResources").index(j).child("name");
            errs.extend(validate_extended_resource_name(&name_path, &r.name));
            if managed.contains(&r.name.as_str()) {
                errs.push(FieldError::invalid(
                    name_path,
                    BadValue::Str(r.name.clone()),
                    "duplicate extender managed resource name",
                ));
            }
            managed.push(&r.name);
        }
    }
    if binders > 1 {
        errs.push(FieldError::invalid(
            path.clone(),
            BadValue::Str(format!("found {binders} extenders implementing bind")),
            "only one extender can implement bind",
        ));
    }
    errs
}

/// `IsExtendedResourceName`: not a native (`kubernetes.io/` or unprefixed) resource and not
/// `requests.*`, and `requests.<name>` is a qualified name.
pub fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    if native || name.starts_with("requests.") {
        return false;
    }
    is_qualified_name(&format!("requests.{name}")).is_empty()
}

fn validate_extended_resource_name(path: &FieldPath, name: &str) -> Vec<FieldError> {
    let errs: Vec<FieldError> = is_qualified_name(name)
        .into_iter()
        .map(|m| FieldError::invalid(path.clone(), BadValue::named_str(name), m))
        .collect();
    if !errs.is_empty() {
        return errs;
    }
    if !is_extended_resource_name(name) {
        return vec![FieldError::invalid(
            path.clone(),
            BadValue::Str(name.to_string()),
            "is an invalid extended resource name",
        )];
    }
    Vec::new()
}

// ---- plugin args ----

/// `ValidateDefaultPreemptionArgs`.
pub fn validate_default_preemption_args(
    path: &FieldPath,
    a: &DefaultPreemptionArgs,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let pct = path.child("minCandidateNodesPercentage");
    let abs = path.child("minCandidateNodesAbsolute");
    if !(0..=100).contains(&a.min_candidate_nodes_percentage) {
        errs.push(FieldError::invalid(
            pct.clone(),
            BadValue::Int(a.min_candidate_nodes_percentage.into()),
            "not in valid range [0, 100]",
        ));
    }
    if a.min_candidate_nodes_absolute < 0 {
        errs.push(FieldError::invalid(
            abs.clone(),
            BadValue::Int(a.min_candidate_nodes_absolute.into()),
            "not in valid range [0, inf)",
        ));
    }
    if a.min_candidate_nodes_percentage == 0 && a.min_candidate_nodes_absolute == 0 {
        errs.push(FieldError::invalid(
            pct,
            BadValue::Int(0),
            "cannot be zero at the same time as minCandidateNodesAbsolute",
        ));
        errs.push(FieldError::invalid(
            abs,
            BadValue::Int(0),
            "cannot be zero at the same time as minCandidateNodesPercentage",
        ));
    }
    errs
}

/// `ValidateInterPodAffinityArgs`.
pub fn validate_inter_pod_affinity_args(
    path: &FieldPath,
    a: &InterPodAffinityArgs,
) -> Vec<FieldError> {
    let w = a.hard_pod_affinity_weight;
    if !(0..=100).contains(&w) {
        return vec![FieldError::invalid(
            path.child("hardPodAffinityWeight"),
            BadValue::Int(w.into()),
            "not in valid range [0, 100]",
        )];
    }
    Vec::new()
}

/// `ValidatePodTopologySpreadArgs`.
pub fn validate_pod_topology_spread_args(
    path: &FieldPath,
    a: &PodTopologySpreadArgs,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let dt_path = path.child("defaultingType");
    match &a.defaulting_type {
        PodTopologySpreadConstraintsDefaulting::Other(v) => {
            errs.push(FieldError::not_supported(
                dt_path,
                BadValue::named_str(v),
                &["System", "List"],
            ));
        }
        PodTopologySpreadConstraintsDefaulting::System if !a.default_constraints.is_empty() => {
            errs.push(FieldError::invalid(
                dt_path,
                BadValue::named_str("System"),
                "when .defaultConstraints are not empty",
            ));
        }
        _ => {}
    }
    let dc_path = path.child("defaultConstraints");
    for (i, c) in a.default_constraints.iter().enumerate() {
        let p = dc_path.index(i);
        if c.max_skew <= 0 {
            errs.push(FieldError::invalid(
                p.child("maxSkew"),
                BadValue::Int(c.max_skew.into()),
                "not in valid range (0, inf)",
            ));
        }
        let tk = p.child("topologyKey");
        if c.topology_key.is_empty() {
            errs.push(FieldError::required(tk, "can not be empty"));
        } else {
            errs.extend(validate_label_name(&c.topology_key, &tk));
        }
        let wu = p.child("whenUnsatisfiable");
        if c.when_unsatisfiable.is_empty() {
            errs.push(FieldError::required(wu, "can not be empty"));
        } else if c.when_unsatisfiable != "DoNotSchedule"
            && c.when_unsatisfiable != "ScheduleAnyway"
        {
            errs.push(FieldError::not_supported(
                wu,
                BadValue::named_str(&c.when_unsatisfiable),
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
        if c.label_selector.is_some() {
            errs.push(FieldError::forbidden(
                p.child("labelSelector"),
                "constraint must not define a selector, as they deduced for each pod",
            ));
        }
        if a.default_constraints[..i].iter().any(|o| {
            o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
        }) {
            errs.push(FieldError::duplicate(
                dc_path.index(i),
                BadValue::Str(format!("{{{}, {}}}", c.topology_key, c.when_unsatisfiable)),
            ));
        }
    }
    errs
}

fn validate_function_shape(shape: &[UtilizationShapePoint], path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if shape.is_empty() {
        errs.push(FieldError::required(
            path.clone(),
            "at least one point must be specified",
        ));
        return errs;
    }
    for i in 1..shape.len() {
        if shape[i - 1].utilization >= shape[i].utilization {
            errs.push(FieldError::invalid(
                path.index(i).child("utilization"),
                BadValue::Int(shape[i].utilization.into()),
                "values must be sorted in increasing order",
            ));
            break;
        }
    }
    for (i, pt) in shape.iter().enumerate() {
        if !(0..=100).contains(&pt.utilization) {
            errs.push(FieldError::invalid(
                path.index(i).child("utilization"),
                BadValue::Int(pt.utilization.into()),
                "not in valid range [0, 100]",
            ));
        }
        if !(0..=MAX_CUSTOM_PRIORITY_SCORE).contains(&pt.score) {
            errs.push(FieldError::invalid(
                path.index(i).child("score"),
                BadValue::Int(pt.score.into()),
                format!("not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"),
            ));
        }
    }
    errs
}

fn validate_resources(resources: &[ResourceSpec], path: &FieldPath) -> Vec<FieldError> {
    resources
        .iter()
        .enumerate()
        .filter(|(_, r)| r.weight <= 0 || r.weight > 100)
        .map(|(i, r)| {
            FieldError::invalid(
                path.index(i).child("weight"),
                BadValue::Int(r.weight),
                format!("resource weight of {} not in valid range (0, 100]", r.name),
            )
        })
        .collect()
}

/// `ValidateNodeResourcesBalancedAllocationArgs`.
pub fn validate_node_resources_balanced_allocation_args(
    path: &FieldPath,
    a: &NodeResourcesBalancedAllocationArgs,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, r) in a.resources.iter().enumerate() {
        let p = path.child("resources").index(i);
        if seen.contains(&r.name.as_str()) {
            errs.push(FieldError::duplicate(
                p.child("name"),
                BadValue::Str(r.name.clone()),
            ));
        } else {
            seen.push(&r.name);
        }
        if r.weight != 1 {
            errs.push(FieldError::invalid(
                p.child("weight"),
                BadValue::Int(r.weight),
                "must be 1",
            ));
        }
    }
    errs
}

const NODE_SELECTOR_OPERATORS: [&str; 6] = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];

/// Parse errors of one node selector term, as `newNodeSelectorTerm` reports them.
fn node_selector_term_errors(term: &NodeSelectorTerm, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(exprs) = term.match_expressions.as_ref().filter(|e| !e.is_empty()) {
        let p = path.child("matchExpressions");
        for (i, e) in exprs.iter().enumerate() {
            errs.extend(label_requirement_errors(e, &p.index(i)));
        }
    }
    if let Some(fields) = term.match_fields.as_ref().filter(|e| !e.is_empty()) {
        let p = path.child("matchFields");
        for (i, e) in fields.iter().enumerate() {
            let ep = p.index(i);
            match e.operator.as_str() {
                "In" | "NotIn" => {
                    if e.values.as_ref().map_or(0, Vec::len) != 1 {
                        errs.push(FieldError::invalid(
                            ep.child("values"),
                            BadValue::str_list(e.values.as_deref()),
                            "must have one element",
                        ));
                    }
                }
                op => errs.push(FieldError::not_supported(
                    ep.child("operator"),
                    BadValue::named_str(op),
                    &["In", "NotIn"],
                )),
            }
        }
    }
    errs
}

/// `labels.NewRequirement` checks for a node selector requirement.
fn label_requirement_errors(e: &NodeSelectorRequirement, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !NODE_SELECTOR_OPERATORS.contains(&e.operator.as_str()) {
        errs.push(FieldError::not_supported(
            path.child("operator"),
            BadValue::named_str(&e.operator),
            &NODE_SELECTOR_OPERATORS,
        ));
        return errs;
    }
    let key_errs = is_qualified_name(&e.key);
    if !key_errs.is_empty() {
        errs.push(FieldError::invalid(
            path.child("key"),
            BadValue::Str(e.key.clone()),
            key_errs.join("; "),
        ));
    }
    let vals: &[String] = e.values.as_deref().unwrap_or(&[]);
    let values_path = path.child("values");
    let vals_value = BadValue::str_list(e.values.as_deref());
    match e.operator.as_str() {
        "In" | "NotIn" => {
            if vals.is_empty() {
                errs.push(FieldError::invalid(
                    values_path.clone(),
                    vals_value,
                    "for 'in', 'notin' operators, values set can't be empty",
                ));
            }
        }
        "Exists" | "DoesNotExist" => {
            if !vals.is_empty() {
                errs.push(FieldError::invalid(
                    values_path.clone(),
                    vals_value,
                    "values set must be empty for exists and does not exist",
                ));
            }
        }
        _ => {
            if vals.len() != 1 {
                errs.push(FieldError::invalid(
                    values_path.clone(),
                    vals_value,
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                ));
            }
            for (i, v) in vals.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(FieldError::invalid(
                        values_path.index(i),
                        BadValue::Str(v.clone()),
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
        }
    }
    for (i, v) in vals.iter().enumerate() {
        let msgs = is_valid_label_value(v);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                values_path.index(i).key(&e.key),
                BadValue::Str(v.clone()),
                msgs.join("; "),
            ));
        }
    }
    errs
}

fn is_empty_term(t: &NodeSelectorTerm) -> bool {
    t.match_expressions.as_ref().is_none_or(Vec::is_empty)
        && t.match_fields.as_ref().is_none_or(Vec::is_empty)
}

/// `ValidateNodeAffinityArgs`.
pub fn validate_node_affinity_args(path: &FieldPath, a: &NodeAffinityArgs) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(aff) = &a.added_affinity else {
        return errs;
    };
    if let Some(ns) = &aff.required_during_scheduling_ignored_during_execution {
        let p = path
            .child("addedAffinity")
            .child("requiredDuringSchedulingIgnoredDuringExecution")
            .child("nodeSelectorTerms");
        for (i, term) in ns.node_selector_terms.iter().enumerate() {
            if !is_empty_term(term) {
                errs.extend(node_selector_term_errors(term, &p.index(i)));
            }
        }
    }
    if let Some(terms) = &aff.preferred_during_scheduling_ignored_during_execution {
        let p = path
            .child("addedAffinity")
            .child("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in terms.iter().enumerate() {
            if term.weight == 0 || is_empty_term(&term.preference) {
                continue;
            }
            errs.extend(node_selector_term_errors(&term.preference, &p.index(i)));
        }
    }
    errs
}

/// `ValidateVolumeBindingArgs`: `shape` only with StorageCapacityScoring.
pub fn validate_volume_binding_args(
    path: &FieldPath,
    a: &VolumeBindingArgs,
    features: &Features,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if a.bind_timeout_seconds < 0 {
        errs.push(FieldError::invalid(
            path.child("bindTimeoutSeconds"),
            BadValue::Int(a.bind_timeout_seconds),
            "invalid BindTimeoutSeconds, should not be a negative value",
        ));
    }
    if features.enabled(Gate::StorageCapacityScoring) {
        errs.extend(validate_function_shape(
            a.shape.as_deref().unwrap_or(&[]),
            &path.child("shape"),
        ));
    } else if let Some(shape) = &a.shape {
        let v: Vec<serde_json::Value> = shape
            .iter()
            .map(|p| json!({"Utilization": p.utilization, "Score": p.score}))
            .collect();
        errs.push(FieldError::invalid(
            path.child("shape"),
            BadValue::Json(serde_json::Value::Array(v)),
            "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
        ));
    }
    errs
}

/// `ValidateNodeResourcesFitArgs`. Not part of configuration validation (upstream's quirk):
/// the NodeResourcesFit plugin calls it when it is built, usually with the root path.
/// `ValidateNodeResourcesFitArgs` of `features`' version: from 1.36
/// (`Semantics::strict_fit_args`) `requestedToCapacityRatio` goes with its type only, and
/// its shape's errors are reported under it. (1.36 also requires `scoringStrategy`, which
/// v1 defaulting always sets.)
pub fn validate_node_resources_fit_args(
    a: &NodeResourcesFitArgs,
    path: &FieldPath,
    features: &Features,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let res_path = path.child("ignoredResources");
    for (i, r) in a.ignored_resources.iter().enumerate() {
        errs.extend(validate_label_name(r, &res_path.index(i)));
    }
    let group_path = path.child("ignoredResourceGroups");
    for (i, g) in a.ignored_resource_groups.iter().enumerate() {
        let p = group_path.index(i);
        if g.contains('/') {
            errs.push(FieldError::invalid(
                p.clone(),
                BadValue::Str(g.clone()),
                "resource group name can't contain '/'",
            ));
        }
        errs.extend(validate_label_name(g, &p));
    }
    let sp = path.child("scoringStrategy");
    let s = &a.scoring_strategy;
    if let ScoringStrategyType::Other(t) = &s.type_ {
        errs.push(FieldError::not_supported(
            sp.child("type"),
            BadValue::named_str(t),
            &ScoringStrategyType::SUPPORTED,
        ));
    }
    errs.extend(validate_resources(&s.resources, &sp.child("resources")));
    let ratio = s.requested_to_capacity_ratio.as_ref();
    if !features.semantics.strict_fit_args {
        // Through 1.35 any shape given is checked, whatever the type, under scoringStrategy.
        if let Some(r) = ratio {
            errs.extend(validate_function_shape(&r.shape, &sp.child("shape")));
        }
        return errs;
    }
    let rp = sp.child("requestedToCapacityRatio");
    match (&s.type_, ratio) {
        (ScoringStrategyType::RequestedToCapacityRatio, Some(r)) => {
            errs.extend(validate_function_shape(&r.shape, &rp.child("shape")))
        }
        (ScoringStrategyType::RequestedToCapacityRatio, None) => errs.push(FieldError::required(
            rp,
            "must be specified when type is RequestedToCapacityRatio",
        )),
        (_, Some(_)) => errs.push(FieldError::forbidden(
            rp,
            "must be nil when type is not RequestedToCapacityRatio",
        )),
        (_, None) => {}
    }
    errs
}

/// `ValidateDynamicResourcesArgs`: each timeout only with its gates.
pub fn validate_dynamic_resources_args(
    path: &FieldPath,
    a: &DynamicResourcesArgs,
    features: &Features,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if features.enabled(Gate::DRASchedulerFilterTimeout) {
        if let Some(t) = a.filter_timeout.filter(|t| t.nanos < 0) {
            errs.push(FieldError::invalid(
                path.child("filterTimeout"),
                BadValue::Json(json!(t.to_string())),
                "must be zero or positive",
            ));
        }
    } else if a.filter_timeout.is_some() {
        errs.push(FieldError::forbidden(
            path.child("filterTimeout"),
            "DRASchedulingFilterTimeout feature gate is disabled",
        ));
    }
    if binding_timeout_enabled(features) {
        if let Some(t) = a.binding_timeout.filter(|t| t.nanos < 1_000_000_000) {
            errs.push(FieldError::invalid(
                path.child("bindingTimeout"),
                BadValue::Json(json!(t.to_string())),
                "must be at least 1 second",
            ));
        }
    } else if a.binding_timeout.is_some() {
        errs.push(FieldError::forbidden(
            path.child("bindingTimeout"),
            "DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled",
        ));
    }
    errs
}
