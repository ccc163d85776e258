//! Strict decoding of a parsed document into the configuration types, as kube-scheduler's
//! codec does: the apiVersion/kind are checked first, unknown and duplicate fields are
//! errors, values must have the right JSON type, `null` means "not set", and every
//! `pluginConfig[].args` is decoded by its plugin's name. Defaults that upstream applies to
//! unset pointer fields are filled here (a decoded object starts from its defaults); the
//! rest of defaulting is in `defaults.rs`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm,
    TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use super::args::*;
use super::duration::Duration;
use super::field::{FieldPath, go_quote};
use super::node::{Node, Pos, Value};
use super::types::*;
use crate::features::{Features, Semantics};

/// The scheme name upstream prints in "no kind is registered" errors.
const SCHEME_NAME: &str = "pkg/scheduler/apis/config/scheme/scheme.go:29";

/// A decoding error: where, and the message (which names the field).
pub type DecodeError = super::error::LocatedMessage;

/// A configuration as decoded, before profile defaulting: profiles still tell whether a
/// scheduler name was given, and plugins are the user's own.
pub struct Decoded {
    pub config: KubeSchedulerConfiguration,
    pub profiles: Vec<DecodedProfile>,
    pub positions: BTreeMap<FieldPath, Pos>,
    pub plugin_names: Vec<(FieldPath, String)>,
}

pub struct DecodedProfile {
    pub scheduler_name: Option<String>,
    pub percentage_of_nodes_to_score: Option<i32>,
    pub plugins: Plugins,
    pub plugin_config: Vec<PluginConfig>,
}

/// Decodes a whole document. Returns every decoding error found.
pub fn decode(root: &Node, features: &Features) -> Result<Decoded, Vec<DecodeError>> {
    let mut d = Dec {
        semantics: features.semantics,
        ..Dec::default()
    };
    let api_version = d.type_meta(root)?;
    let mut cfg = KubeSchedulerConfiguration {
        api_version,
        parallelism: 16,
        leader_election: LeaderElectionConfiguration {
            leader_elect: true,
            lease_duration: Duration::ZERO,
            renew_deadline: Duration::ZERO,
            retry_period: Duration::ZERO,
            resource_lock: String::new(),
            resource_name: String::new(),
            resource_namespace: String::new(),
        },
        client_connection: ClientConnectionConfiguration {
            kubeconfig: String::new(),
            accept_content_types: String::new(),
            content_type: String::new(),
            qps: 0.0,
            burst: 0,
        },
        enable_profiling: true,
        enable_contention_profiling: true,
        percentage_of_nodes_to_score: Some(0),
        pod_initial_backoff_seconds: 1,
        pod_max_backoff_seconds: 10,
        profiles: Vec::new(),
        extenders: Vec::new(),
        delay_cache_until_active: false,
        source: SourceMap::default(),
        features: features.clone(),
    };
    let mut profiles = Vec::new();
    let mut leader_elect: Option<bool> = None;
    let mut contention: Option<bool> = None;
    let root_path = FieldPath::root();
    if let Some(fields) = d.fields(
        root,
        &root_path,
        &[
            "apiVersion",
            "kind",
            "parallelism",
            "leaderElection",
            "clientConnection",
            "enableProfiling",
            "enableContentionProfiling",
            "percentageOfNodesToScore",
            "podInitialBackoffSeconds",
            "podMaxBackoffSeconds",
            "profiles",
            "extenders",
            "delayCacheUntilActive",
        ],
    ) {
        for (k, v) in fields {
            let p = root_path.child(k);
            match k {
                "parallelism" => set(&mut cfg.parallelism, d.i32(v, &p)),
                "leaderElection" => {
                    leader_elect = d.leader_election(v, &p, &mut cfg.leader_election);
                }
                "clientConnection" => d.client_connection(v, &p, &mut cfg.client_connection),
                "enableProfiling" => set(&mut cfg.enable_profiling, d.bool(v, &p)),
                "enableContentionProfiling" => contention = d.bool(v, &p),
                "percentageOfNodesToScore" => {
                    if let Some(x) = d.i32(v, &p) {
                        cfg.percentage_of_nodes_to_score = Some(x);
                    }
                }
                "podInitialBackoffSeconds" => {
                    set(&mut cfg.pod_initial_backoff_seconds, d.i64(v, &p));
                }
                "podMaxBackoffSeconds" => set(&mut cfg.pod_max_backoff_seconds, d.i64(v, &p)),
                "profiles" => {
                    profiles = d
                        .list(v, &p, |d, n, p| Some(d.profile(n, p, api_version)))
                        .unwrap_or_default();
                }
                "extenders" => {
                    cfg.extenders = d
                        .list(v, &p, |d, n, p| Some(d.extender(n, p)))
                        .unwrap_or_default();
                }
                "delayCacheUntilActive" => set(&mut cfg.delay_cache_until_active, d.bool(v, &p)),
                _ => {}
            }
        }
    }
    if let Some(le) = leader_elect {
        cfg.leader_election.leader_elect = le;
    }
    // Contention profiling defaults to on only when profiling is on.
    cfg.enable_contention_profiling = contention.unwrap_or(cfg.enable_profiling);
    if d.errors.is_empty() {
        Ok(Decoded {
            config: cfg,
            profiles,
            positions: d.positions,
            plugin_names: d.plugin_names,
        })
    } else {
        Err(d.errors)
    }
}

fn set<T>(slot: &mut T, v: Option<T>) {
    if let Some(v) = v {
        *slot = v;
    }
}

#[derive(Default)]
struct Dec {
    /// What the version's schema has (fields that exist only from some version on).
    semantics: Semantics,
    errors: Vec<DecodeError>,
    positions: BTreeMap<FieldPath, Pos>,
    plugin_names: Vec<(FieldPath, String)>,
}

/// The Go types named in "cannot unmarshal" messages.
const GO_TYPEMETA: &str = "struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }";

impl Dec {
    fn err(&mut self, pos: Pos, message: String) {
        self.errors.push(DecodeError { pos, message });
    }

    fn type_err(&mut self, node: &Node, path: &FieldPath, go_type: &str) {
        let what = match &node.value {
            Value::Int(i) => format!("number {i}"),
            Value::Float(f) => format!("number {f}"),
            other => other.json_kind().to_string(),
        };
        let msg = if path.is_root() {
            format!("json: cannot unmarshal {what} into Go value of type {go_type}")
        } else {
            format!("{path}: json: cannot unmarshal {what} into Go value of type {go_type}")
        };
        self.err(node.pos, msg);
    }

    /// Reads apiVersion and kind and checks that they name a configuration we decode.
    fn type_meta(&mut self, root: &Node) -> Result<ApiVersion, Vec<DecodeError>> {
        let fail = |pos: Pos, message: String| Err(vec![DecodeError { pos, message }]);
        let Value::Map(entries) = &root.value else {
            if root.value == Value::Null {
                return fail(root.pos, "Object 'Kind' is missing in 'null'".to_string());
            }
            let kind = root.value.json_kind();
            return fail(
                root.pos,
                format!(
                    "couldn't get version/kind; json parse error: json: cannot unmarshal {kind} into Go value of type {GO_TYPEMETA}"
                ),
            );
        };
        let mut api_version = (String::new(), root.pos);
        let mut kind = (String::new(), root.pos);
        for (k, v) in entries {
            let slot = match k.name.as_str() {
                "apiVersion" => &mut api_version,
                "kind" => &mut kind,
                _ => continue,
            };
            match &v.value {
                Value::Str(s) => *slot = (s.clone(), k.pos),
                Value::Null => *slot = (String::new(), k.pos),
                other => {
                    return fail(
                        v.pos,
                        format!(
                            "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go struct field .{} of type string",
                            other.json_kind(),
                            k.name
                        ),
                    );
                }
            }
        }
        let summary = || {
            let mut s = serde_json::to_string(&root.to_json()).unwrap_or_default();
            if s.len() > 120 {
                let mut cut = 117;
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                s.truncate(cut);
                s.push_str("...");
            }
            s
        };
        if kind.0.is_empty() {
            return fail(
                kind.1,
                format!("Object 'Kind' is missing in '{}'", summary()),
            );
        }
        if api_version.0.is_empty() {
            return fail(
                api_version.1,
                format!("Object 'apiVersion' is missing in '{}'", summary()),
            );
        }
        let (group, version) = match api_version.0.matches('/').count() {
            0 => ("", api_version.0.as_str()),
            1 => api_version.0.split_once('/').unwrap_or_default(),
            _ => {
                return fail(
                    api_version.1,
                    format!("unexpected GroupVersion string: {}", api_version.0),
                );
            }
        };
        let registered_version = if group == GROUP {
            ApiVersion::from_version(version)
        } else {
            None
        };
        let registered_kind = kind.0 == KIND || is_args_kind(&kind.0);
        match registered_version {
            Some(v) if registered_kind => {
                if kind.0 == KIND {
                    Ok(v)
                } else {
                    fail(
                        kind.1,
                        format!(
                            "couldn't decode as KubeSchedulerConfiguration, got {}, Kind={}: ",
                            api_version.0, kind.0
                        ),
                    )
                }
            }
            _ => fail(
                kind.1,
                format!(
                    "no kind {} is registered for version {} in scheme {}",
                    go_quote(&kind.0),
                    go_quote(&api_version.0),
                    go_quote(SCHEME_NAME)
                ),
            ),
        }
    }

    /// The fields of an object (`None` for null). Unknown and duplicate keys are reported;
    /// of duplicates the last wins, as with encoding/json.
    fn fields<'n>(
        &mut self,
        node: &'n Node,
        path: &FieldPath,
        known: &[&'static str],
    ) -> Option<Vec<(&'static str, &'n Node)>> {
        let entries = match &node.value {
            Value::Null => return None,
            Value::Map(entries) => entries,
            _ => {
                self.type_err(node, path, "object");
                return None;
            }
        };
        let mut out: Vec<(&'static str, &'n Node)> = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let p = path.child(&k.name);
            let Some(name) = known.iter().copied().find(|n| *n == k.name) else {
                self.err(
                    k.pos,
                    format!(
                        "strict decoding error: unknown field {}",
                        go_quote(p.as_str())
                    ),
                );
                continue;
            };
            if let Some(slot) = out.iter_mut().find(|(n, _)| *n == name) {
                self.err(
                    k.pos,
                    format!(
                        "strict decoding error: duplicate field {}",
                        go_quote(p.as_str())
                    ),
                );
                slot.1 = v;
                continue;
            }
            self.positions.insert(p, k.pos);
            out.push((name, v));
        }
        Some(out)
    }

    fn list<T>(
        &mut self,
        node: &Node,
        path: &FieldPath,
        mut item: impl FnMut(&mut Self, &Node, &FieldPath) -> Option<T>,
    ) -> Option<Vec<T>> {
        match &node.value {
            Value::Null => None,
            Value::Seq(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, n) in items.iter().enumerate() {
                    let p = path.index(i);
                    self.positions.insert(p.clone(), n.pos);
                    if let Some(v) = item(self, n, &p) {
                        out.push(v);
                    }
                }
                Some(out)
            }
            _ => {
                self.type_err(node, path, "array");
                None
            }
        }
    }

    fn int(
        &mut self,
        node: &Node,
        path: &FieldPath,
        go_type: &str,
        min: i128,
        max: i128,
    ) -> Option<i128> {
        let v = match &node.value {
            Value::Null => return None,
            Value::Int(i) => *i,
            // sigs.k8s.io/yaml writes integral floats as integers (1.0 becomes 1).
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e30 => *f as i128,
            _ => {
                self.type_err(node, path, go_type);
                return None;
            }
        };
        if v < min || v > max {
            self.type_err(node, path, go_type);
            return None;
        }
        Some(v)
    }

    fn i32(&mut self, node: &Node, path: &FieldPath) -> Option<i32> {
        self.int(node, path, "int32", i32::MIN.into(), i32::MAX.into())
            .map(|v| v as i32)
    }

    fn i64(&mut self, node: &Node, path: &FieldPath) -> Option<i64> {
        self.int(node, path, "int64", i64::MIN.into(), i64::MAX.into())
            .map(|v| v as i64)
    }

    fn f32(&mut self, node: &Node, path: &FieldPath) -> Option<f32> {
        match &node.value {
            Value::Null => None,
            Value::Int(i) => Some(*i as f32),
            Value::Float(f) if f.is_finite() && f.abs() <= f64::from(f32::MAX) => Some(*f as f32),
            _ => {
                self.type_err(node, path, "float32");
                None
            }
        }
    }

    fn bool(&mut self, node: &Node, path: &FieldPath) -> Option<bool> {
        match &node.value {
            Value::Null => None,
            Value::Bool(b) => Some(*b),
            _ => {
                self.type_err(node, path, "bool");
                None
            }
        }
    }

    fn string(&mut self, node: &Node, path: &FieldPath) -> Option<String> {
        match &node.value {
            Value::Null => None,
            Value::Str(s) => Some(s.clone()),
            _ => {
                self.type_err(node, path, "string");
                None
            }
        }
    }

    fn strings(&mut self, node: &Node, path: &FieldPath) -> Option<Vec<String>> {
        self.list(node, path, |d, n, p| {
            Some(d.string(n, p).unwrap_or_default())
        })
    }

    fn string_map(&mut self, node: &Node, path: &FieldPath) -> Option<BTreeMap<String, String>> {
        match &node.value {
            Value::Null => None,
            Value::Map(entries) => {
                let mut out = BTreeMap::new();
                for (k, v) in entries {
                    let p = path.child(&k.name);
                    if out.contains_key(&k.name) {
                        self.err(
                            k.pos,
                            format!(
                                "strict decoding error: duplicate field {}",
                                go_quote(p.as_str())
                            ),
                        );
                    }
                    let s = self.string(v, &p).unwrap_or_default();
                    out.insert(k.name.clone(), s);
                }
                Some(out)
            }
            _ => {
                self.type_err(node, path, "map[string]string");
                None
            }
        }
    }

    fn duration(&mut self, node: &Node, path: &FieldPath) -> Option<Duration> {
        match &node.value {
            Value::Null => None,
            Value::Str(s) => match Duration::parse(s) {
                Ok(d) => Some(d),
                Err(e) => {
                    self.err(node.pos, format!("{path}: {e}"));
                    None
                }
            },
            _ => {
                self.type_err(node, path, "string");
                None
            }
        }
    }

    fn bytes(&mut self, node: &Node, path: &FieldPath) -> Option<Vec<u8>> {
        match &node.value {
            Value::Null => None,
            Value::Str(s) => match base64_decode(s) {
                Ok(b) => Some(b),
                Err(e) => {
                    self.err(node.pos, format!("{path}: {e}"));
                    None
                }
            },
            _ => {
                self.type_err(node, path, "[]uint8");
                None
            }
        }
    }

    // ---- configuration objects ----

    fn leader_election(
        &mut self,
        node: &Node,
        path: &FieldPath,
        le: &mut LeaderElectionConfiguration,
    ) -> Option<bool> {
        let mut leader_elect = None;
        let fields = self.fields(
            node,
            path,
            &[
                "leaderElect",
                "leaseDuration",
                "renewDeadline",
                "retryPeriod",
                "resourceLock",
                "resourceName",
                "resourceNamespace",
            ],
        )?;
        for (k, v) in fields {
            let p = path.child(k);
            match k {
                "leaderElect" => leader_elect = self.bool(v, &p),
                "leaseDuration" => set(&mut le.lease_duration, self.duration(v, &p)),
                "renewDeadline" => set(&mut le.renew_deadline, self.duration(v, &p)),
                "retryPeriod" => set(&mut le.retry_period, self.duration(v, &p)),
                "resourceLock" => set(&mut le.resource_lock, self.string(v, &p)),
                "resourceName" => set(&mut le.resource_name, self.string(v, &p)),
                "resourceNamespace" => set(&mut le.resource_namespace, self.string(v, &p)),
                _ => {}
            }
        }
        leader_elect
    }

    fn client_connection(
        &mut self,
        node: &Node,
        path: &FieldPath,
        cc: &mut ClientConnectionConfiguration,
    ) {
        let Some(fields) = self.fields(
            node,
            path,
            &[
                "kubeconfig",
                "acceptContentTypes",
                "contentType",
                "qps",
                "burst",
            ],
        ) else {
            return;
        };
        for (k, v) in fields {
            let p = path.child(k);
            match k {
                "kubeconfig" => set(&mut cc.kubeconfig, self.string(v, &p)),
                "acceptContentTypes" => set(&mut cc.accept_content_types, self.string(v, &p)),
                "contentType" => set(&mut cc.content_type, self.string(v, &p)),
                "qps" => set(&mut cc.qps, self.f32(v, &p)),
                "burst" => set(&mut cc.burst, self.i32(v, &p)),
                _ => {}
            }
        }
    }

    fn profile(&mut self, node: &Node, path: &FieldPath, api: ApiVersion) -> DecodedProfile {
        let mut prof = DecodedProfile {
            scheduler_name: None,
            percentage_of_nodes_to_score: None,
            plugins: Plugins::default(),
            plugin_config: Vec::new(),
        };
        let Some(fields) = self.fields(
            node,
            path,
            &[
                "schedulerName",
                "percentageOfNodesToScore",
                "plugins",
                "pluginConfig",
            ],
        ) else {
            return prof;
        };
        for (k, v) in fields {
            let p = path.child(k);
            match k {
                "schedulerName" => prof.scheduler_name = self.string(v, &p),
                "percentageOfNodesToScore" => prof.percentage_of_nodes_to_score = self.i32(v, &p),
                "plugins" => prof.plugins = self.plugins(v, &p),
                "pluginConfig" => {
                    prof.plugin_config = self
                        .list(v, &p, |d, n, p| Some(d.plugin_config(n, p, api)))
                        .unwrap_or_default();
                }
                _ => {}
            }
        }
        prof
    }

    fn plugins(&mut self, node: &Node, path: &FieldPath) -> Plugins {
        let mut plugins = Plugins::default();
        // The placement sets are fields from 1.36 on; before, strict decoding refuses them.
        let placement = self.semantics.placement_plugin_sets;
        let names: Vec<&'static str> = ExtensionPoint::ALL
            .iter()
            .filter(|p| placement || !p.is_placement())
            .map(|p| p.json_name())
            .collect();
        let Some(fields) = self.fields(node, path, &names) else {
            return plugins;
        };
        for (k, v) in fields {
            let p = path.child(k);
            if let Some(point) = ExtensionPoint::ALL.iter().find(|e| e.json_name() == k) {
                *plugins.get_mut(*point) = self.plugin_set(v, &p);
            }
        }
        plugins
    }

    fn plugin_set(&mut self, node: &Node, path: &FieldPath) -> PluginSet {
        let mut set = PluginSet::default();
        let Some(fields) = self.fields(node, path, &["enabled", "disabled"]) else {
            return set;
        };
        for (k, v) in fields {
            let p = path.child(k);
            let list = self
                .list(v, &p, |d, n, p| Some(d.plugin_ref(n, p)))
                .unwrap_or_default();
            match k {
                "enabled" => set.enabled = list,
                _ => set.disabled = list,
            }
        }
        set
    }

    fn plugin_ref(&mut self, node: &Node, path: &FieldPath) -> PluginRef {
        let mut r = PluginRef::default();
        if let Some(fields) = self.fields(node, path, &["name", "weight"]) {
            for (k, v) in fields {
                let p = path.child(k);
                match k {
                    "name" => {
                        set(&mut r.name, self.string(v, &p));
                        self.plugin_names.push((p, r.name.clone()));
                    }
                    _ => set(&mut r.weight, self.i32(v, &p)),
                }
            }
        }
        r
    }

    fn plugin_config(&mut self, node: &Node, path: &FieldPath, api: ApiVersion) -> PluginConfig {
        let mut name = String::new();
        let mut args_node = None;
        if let Some(fields) = self.fields(node, path, &["name", "args"]) {
            for (k, v) in fields {
                let p = path.child(k);
                match k {
                    "name" => {
                        set(&mut name, self.string(v, &p));
                        self.plugin_names.push((p, name.clone()));
                    }
                    _ => args_node = Some(v),
                }
            }
        }
        let args = self.plugin_args(&name, args_node, &path.child("args"), api);
        PluginConfig { name, args }
    }

    /// Decodes `args` by the plugin's name, as `PluginConfig.decodeNestedObjects` does.
    fn plugin_args(
        &mut self,
        name: &str,
        node: Option<&Node>,
        path: &FieldPath,
        api: ApiVersion,
    ) -> PluginArgs {
        let Some(mut args) = PluginArgs::undefaulted(name) else {
            // Out-of-tree, or a plugin without args: kept raw.
            return PluginArgs::Other(node.map(Node::to_json).unwrap_or(serde_json::Value::Null));
        };
        let expected_kind = format!("{name}Args");
        let Some(node) = node else {
            return args;
        };
        let entries = match &node.value {
            Value::Null => return args,
            Value::Map(e) => e,
            other => {
                self.err(
                    node.pos,
                    format!(
                        "{path}: decoding args for plugin {name}: couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type {GO_TYPEMETA}",
                        other.json_kind()
                    ),
                );
                return args;
            }
        };
        // The object's own apiVersion/kind, completed from the configuration's version.
        let mut kind = String::new();
        let mut api_version = String::new();
        for (k, v) in entries {
            match (k.name.as_str(), &v.value) {
                ("kind", Value::Str(s)) => kind = s.clone(),
                ("apiVersion", Value::Str(s)) => api_version = s.clone(),
                ("kind" | "apiVersion", Value::Null) => {}
                ("kind" | "apiVersion", other) => {
                    self.err(
                        v.pos,
                        format!(
                            "{path}: decoding args for plugin {name}: couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go struct field .{} of type string",
                            other.json_kind(),
                            k.name
                        ),
                    );
                    return args;
                }
                _ => {}
            }
        }
        if kind.is_empty() {
            kind = expected_kind.clone();
        }
        let (mut group, mut version) = match api_version.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), api_version.clone()),
        };
        if version.is_empty() && (group.is_empty() || group == GROUP) {
            group = GROUP.to_string();
            version = api.version().to_string();
        }
        let gv = if group.is_empty() {
            version.clone()
        } else {
            format!("{group}/{version}")
        };
        let registered = group == GROUP
            && ApiVersion::from_version(&version).is_some()
            && (kind == KIND || is_args_kind(&kind));
        if !registered {
            self.err(
                node.pos,
                format!(
                    "{path}: decoding args for plugin {name}: no kind {} is registered for version {} in scheme {}",
                    go_quote(&kind),
                    go_quote(&gv),
                    go_quote(SCHEME_NAME)
                ),
            );
            return args;
        }
        if kind != expected_kind {
            self.err(
                node.pos,
                format!(
                    "{path}: args for plugin {name} were not of type {expected_kind}.{GROUP}, got {kind}.{GROUP}"
                ),
            );
            return args;
        }
        match &mut args {
            PluginArgs::DefaultPreemption(a) => self.default_preemption_args(node, path, a),
            PluginArgs::InterPodAffinity(a) => self.inter_pod_affinity_args(node, path, a),
            PluginArgs::NodeAffinity(a) => self.node_affinity_args(node, path, a),
            PluginArgs::NodeResourcesBalancedAllocation(a) => {
                self.balanced_allocation_args(node, path, a)
            }
            PluginArgs::NodeResourcesFit(a) => self.fit_args(node, path, a),
            PluginArgs::PodTopologySpread(a) => self.pod_topology_spread_args(node, path, a),
            PluginArgs::VolumeBinding(a) => self.volume_binding_args(node, path, a),
            PluginArgs::DynamicResources(a) => self.dynamic_resources_args(node, path, a),
            PluginArgs::Other(_) => {}
        }
        args
    }

    fn default_preemption_args(
        &mut self,
        node: &Node,
        path: &FieldPath,
        a: &mut DefaultPreemptionArgs,
    ) {
        let known = [
            "apiVersion",
            "kind",
            "minCandidateNodesPercentage",
            "minCandidateNodesAbsolute",
        ];
        for (k, v) in self.fields(node, path, &known).unwrap_or_default() {
            let p = path.child(k);
            match k {
                "minCandidateNodesPercentage" => {
                    set(&mut a.min_candidate_nodes_percentage, self.i32(v, &p));
                }
                "minCandidateNodesAbsolute" => {
                    set(&mut a.min_candidate_nodes_absolute, self.i32(v, &p));
                }
                _ => {}
            }
        }
    }

    fn inter_pod_affinity_args(
        &mut self,
        node: &Node,
        path: &FieldPath,
        a: &mut InterPodAffinityArgs,
    ) {
        let known = [
            "apiVersion",
            "kind",
            "hardPodAffinityWeight",
            "ignorePreferredTermsOfExistingPods",
        ];
        for (k, v) in self.fields(node, path, &known).unwrap_or_default() {
            let p = path.child(k);
            match k {
                "hardPodAffinityWeight" => set(&mut a.hard_pod_affinity_weight, self.i32(v, &p)),
                "ignorePreferredTermsOfExistingPods" => {
                    set(
                        &mut a.ignore_preferred_terms_of_existing_pods,
                        self.bool(v, &p),
                    );
                }
                _ => {}
            }
        }
    }

    fn node_affinity_args(&mut self, node: &Node, path: &FieldPath, a: &mut NodeAffinityArgs) {
        let known = ["apiVersion", "kind", "addedAffinity"];
        for (k, v) in self.fields(node, path, &known).unwrap_or_default() {
            if k == "addedAffinity" {
                a.added_affinity = self.node_affinity(v, &path.child(k));
            }
        }
    }

    fn resource_specs(&mut self, node: &Node, path: &FieldPath) -> Option<Vec<ResourceSpec>> {
        self.list(node, path, |d, n, p| {
            let mut r = ResourceSpec::new("", 0);
            for (k, v) in d.fields(n, p, &["name", "weight"]).unwrap_or_default() {
                let fp = p.child(k);
                match k {
                    "name" => set(&mut r.name, d.string(v, &fp)),
                    _ => set(&mut r.weight, d.i64(v, &fp)),
                }
            }
            Some(r)
        })
    }

    fn shape(&mut self, node: &Node, path: &FieldPath) -> Option<Vec<UtilizationShapePoint>> {
        self.list(node, path, |d, n, p| {
            let mut pt = UtilizationShapePoint {
                utilization: 0,
                score: 0,
            };
            for (k, v) in d
                .fields(n, p, &["utilization", "score"])
                .unwrap_or_default()
            {
                let fp = p.child(k);
                match k {
                    "utilization" => set(&mut pt.utilization, d.i32(v, &fp)),
                    _ => set(&mut pt.score, d.i32(v, &fp)),
                }
            }
            Some(pt)
        })
    }

    fn balanced_allocation_args(
        &mut self,
        node: &Node,
        path: &FieldPath,
        a: &mut NodeResourcesBalancedAllocationArgs,
    ) {
        a.resources.clear();
        let known = ["apiVersion", "kind", "resources"];
        for (k, v) in self.fields(node, path, &known).unwrap_or_default() {
            if k == "resources" {
                a.resources = self.resource_specs(v, &path.child(k)).unwrap_or_default();
            }
        }
    }

    fn fit_args(&mut self, node: &Node, path: &FieldPath, a: &mut NodeResourcesFitArgs) {
        let known = [
            "apiVersion",
            "kind",
            "ignoredResources",
            "ignoredResourceGroups",
            "scoringStrategy",
        ];
        for (k, v) in self.fields(node, path, &known).unwrap_or_default() {
            let p = path.child(k);
            match k {
                "ignoredResources" => a.ignored_resources = self.strings(v, &p).unwrap_or_default(),
                "ignoredResourceGroups" => {
                    a.ignored_resource_groups = self.strings(v, &p).unwrap_or_default();
                }
                "scoringStrategy" => {
                    if let Some(s) = self.scoring_strategy(v, &p) {
                        a.scoring_strategy = s;
                    }
                }
                _ => {}
            }
        }
    }

    fn scoring_strategy(&mut self, node: &Node, path: &FieldPath) -> Option<ScoringStrategy> {
        let fields = self.fields(
            node,
            path,
            &["type", "resources", "requestedToCapacityRatio"],
        )?;
        // A given strategy starts empty: an omitted type stays "" and is rejected later.
        let mut s = ScoringStrategy {
            type_: ScoringStrategyType::Other(String::new()),
            resources: Vec::new(),
            requested_to_capacity_ratio: None,
        };
        for (k, v) in fields {
            let p = path.child(k);
            match k {
                "type" => {
                    if let Some(t) = self.string(v, &p) {
                        s.type_ = ScoringStrategyType::parse(&t);
                    }
                }
                "resources" => s.resources = self.resource_specs(v, &p).unwrap_or_default(),
                _ => {
                    if let Some(f) = self.fields(v, &p, &["shape"]) {
                        let mut param = RequestedToCapacityRatioParam::default();
                        for (k2, v2) in f {
                            param.shape = self.shape(v2, &p.child(k2)).unwrap_or_default();
                        }
                        s.requested_to_capacity_ratio = Some(param);
                    }
                }
            }
        }
        Some(s)
    }

    fn pod_topology_spread_args(
        &mut self,
        node: &Node,
        path: &FieldPath,
        a: &mut PodTopologySpreadArgs,
    ) {
        let known = ["apiVersion", "kind", "defaultConstraints", "defaultingType"];
        for (k, v) in self.fields(node, path, &known).unwrap_or_default() {
            let p = path.child(k);
            match k {
                "defaultConstraints" => {
                    a.default_constraints = self
                        .list(v, &p, |d, n, p| Some(d.topology_spread_constraint(n, p)))
                        .unwrap_or_default();
                }
                "defaultingType" => {
                    if let Some(t) = self.string(v, &p) {
                        a.defaulting_type = PodTopologySpreadConstraintsDefaulting::parse(&t);
                    }
                }
                _ => {}
            }
        }
    }

    fn volume_binding_args(&mut self, node: &Node, path: &FieldPath, a: &mut VolumeBindingArgs) {
        let known = ["apiVersion", "kind", "bindTimeoutSeconds", "shape"];
        for (k, v) in self.fields(node, path, &known).unwrap_or_default() {
            let p = path.child(k);
            match k {
                "bindTimeoutSeconds" => set(&mut a.bind_timeout_seconds, self.i64(v, &p)),
                "shape" => a.shape = self.shape(v, &p),
                _ => {}
            }
        }
    }

    fn dynamic_resources_args(
        &mut self,
        node: &Node,
        path: &FieldPath,
        a: &mut DynamicResourcesArgs,
    ) {
        // `bindingTimeout` is a field from 1.35 on; before, strict decoding refuses it.
        let known: &[&str] = if self.semantics.dynamic_resources_binding_timeout_field {
            &["apiVersion", "kind", "filterTimeout", "bindingTimeout"]
        } else {
            &["apiVersion", "kind", "filterTimeout"]
        };
        for (k, v) in self.fields(node, path, known).unwrap_or_default() {
            let p = path.child(k);
            match k {
                "filterTimeout" => {
                    if let Some(t) = self.duration(v, &p) {
                        a.filter_timeout = Some(t);
                    }
                }
                "bindingTimeout" => {
                    if let Some(t) = self.duration(v, &p) {
                        a.binding_timeout = Some(t);
                    }
                }
                _ => {}
            }
        }
    }

    // ---- core/v1 types used in args ----

    fn node_affinity(&mut self, node: &Node, path: &FieldPath) -> Option<NodeAffinity> {
        let fields = self.fields(
            node,
            path,
            &[
                "requiredDuringSchedulingIgnoredDuringExecution",
                "preferredDuringSchedulingIgnoredDuringExecution",
            ],
        )?;
        let mut na = NodeAffinity::default();
        for (k, v) in fields {
            let p = path.child(k);
            if k == "requiredDuringSchedulingIgnoredDuringExecution" {
                if let Some(f) = self.fields(v, &p, &["nodeSelectorTerms"]) {
                    let mut ns = NodeSelector::default();
                    for (k2, v2) in f {
                        ns.node_selector_terms = self
                            .list(v2, &p.child(k2), |d, n, p| Some(d.node_selector_term(n, p)))
                            .unwrap_or_default();
                    }
                    na.required_during_scheduling_ignored_during_execution = Some(ns);
                }
            } else {
                na.preferred_during_scheduling_ignored_during_execution =
                    self.list(v, &p, |d, n, p| {
                        let mut t = PreferredSchedulingTerm::default();
                        for (k2, v2) in d
                            .fields(n, p, &["weight", "preference"])
                            .unwrap_or_default()
                        {
                            let fp = p.child(k2);
                            match k2 {
                                "weight" => set(&mut t.weight, d.i32(v2, &fp)),
                                _ => t.preference = d.node_selector_term(v2, &fp),
                            }
                        }
                        Some(t)
                    });
            }
        }
        Some(na)
    }

    fn node_selector_term(&mut self, node: &Node, path: &FieldPath) -> NodeSelectorTerm {
        let mut t = NodeSelectorTerm::default();
        for (k, v) in self
            .fields(node, path, &["matchExpressions", "matchFields"])
            .unwrap_or_default()
        {
            let p = path.child(k);
            let reqs = self.list(v, &p, |d, n, p| {
                let mut r = NodeSelectorRequirement::default();
                for (k2, v2) in d
                    .fields(n, p, &["key", "operator", "values"])
                    .unwrap_or_default()
                {
                    let fp = p.child(k2);
                    match k2 {
                        "key" => set(&mut r.key, d.string(v2, &fp)),
                        "operator" => set(&mut r.operator, d.string(v2, &fp)),
                        _ => r.values = d.strings(v2, &fp),
                    }
                }
                Some(r)
            });
            match k {
                "matchExpressions" => t.match_expressions = reqs,
                _ => t.match_fields = reqs,
            }
        }
        t
    }

    fn topology_spread_constraint(
        &mut self,
        node: &Node,
        path: &FieldPath,
    ) -> TopologySpreadConstraint {
        let mut c = TopologySpreadConstraint::default();
        let known = [
            "maxSkew",
            "topologyKey",
            "whenUnsatisfiable",
            "labelSelector",
            "minDomains",
            "nodeAffinityPolicy",
            "nodeTaintsPolicy",
            "matchLabelKeys",
        ];
        for (k, v) in self.fields(node, path, &known).unwrap_or_default() {
            let p = path.child(k);
            match k {
                "maxSkew" => set(&mut c.max_skew, self.i32(v, &p)),
                "topologyKey" => set(&mut c.topology_key, self.string(v, &p)),
                "whenUnsatisfiable" => set(&mut c.when_unsatisfiable, self.string(v, &p)),
                "labelSelector" => c.label_selector = self.label_selector(v, &p),
                "minDomains" => c.min_domains = self.i32(v, &p),
                "nodeAffinityPolicy" => c.node_affinity_policy = self.string(v, &p),
                "nodeTaintsPolicy" => c.node_taints_policy = self.string(v, &p),
                _ => c.match_label_keys = self.strings(v, &p),
            }
        }
        c
    }

    fn label_selector(&mut self, node: &Node, path: &FieldPath) -> Option<LabelSelector> {
        let fields = self.fields(node, path, &["matchLabels", "matchExpressions"])?;
        let mut s = LabelSelector::default();
        for (k, v) in fields {
            let p = path.child(k);
            match k {
                "matchLabels" => s.match_labels = self.string_map(v, &p),
                _ => {
                    s.match_expressions = self.list(v, &p, |d, n, p| {
                        let mut r = LabelSelectorRequirement::default();
                        for (k2, v2) in d
                            .fields(n, p, &["key", "operator", "values"])
                            .unwrap_or_default()
                        {
                            let fp = p.child(k2);
                            match k2 {
                                "key" => set(&mut r.key, d.string(v2, &fp)),
                                "operator" => set(&mut r.operator, d.string(v2, &fp)),
                                _ => r.values = d.strings(v2, &fp),
                            }
                        }
                        Some(r)
                    });
                }
            }
        }
        Some(s)
    }

    // ---- extenders ----

    fn extender(&mut self, node: &Node, path: &FieldPath) -> Extender {
        let mut e = Extender::default();
        let known = [
            "urlPrefix",
            "filterVerb",
            "preemptVerb",
            "prioritizeVerb",
            "weight",
            "bindVerb",
            "enableHTTPS",
            "tlsConfig",
            "httpTimeout",
            "nodeCacheCapable",
            "managedResources",
            "ignorable",
        ];
        for (k, v) in self.fields(node, path, &known).unwrap_or_default() {
            let p = path.child(k);
            match k {
                "urlPrefix" => set(&mut e.url_prefix, self.string(v, &p)),
                "filterVerb" => set(&mut e.filter_verb, self.string(v, &p)),
                "preemptVerb" => set(&mut e.preempt_verb, self.string(v, &p)),
                "prioritizeVerb" => set(&mut e.prioritize_verb, self.string(v, &p)),
                "weight" => set(&mut e.weight, self.i64(v, &p)),
                "bindVerb" => set(&mut e.bind_verb, self.string(v, &p)),
                "enableHTTPS" => set(&mut e.enable_https, self.bool(v, &p)),
                "tlsConfig" => e.tls_config = self.tls_config(v, &p),
                "httpTimeout" => set(&mut e.http_timeout, self.duration(v, &p)),
                "nodeCacheCapable" => set(&mut e.node_cache_capable, self.bool(v, &p)),
                "managedResources" => {
                    e.managed_resources = self
                        .list(v, &p, |d, n, p| {
                            let mut r = ExtenderManagedResource::default();
                            for (k2, v2) in d
                                .fields(n, p, &["name", "ignoredByScheduler"])
                                .unwrap_or_default()
                            {
                                let fp = p.child(k2);
                                match k2 {
                                    "name" => set(&mut r.name, d.string(v2, &fp)),
                                    _ => set(&mut r.ignored_by_scheduler, d.bool(v2, &fp)),
                                }
                            }
                            Some(r)
                        })
                        .unwrap_or_default();
                }
                "ignorable" => set(&mut e.ignorable, self.bool(v, &p)),
                _ => {}
            }
        }
        e
    }

    fn tls_config(&mut self, node: &Node, path: &FieldPath) -> Option<ExtenderTlsConfig> {
        let known = [
            "insecure",
            "serverName",
            "certFile",
            "keyFile",
            "caFile",
            "certData",
            "keyData",
            "caData",
        ];
        let fields = self.fields(node, path, &known)?;
        let mut t = ExtenderTlsConfig::default();
        for (k, v) in fields {
            let p = path.child(k);
            match k {
                "insecure" => set(&mut t.insecure, self.bool(v, &p)),
                "serverName" => set(&mut t.server_name, self.string(v, &p)),
                "certFile" => set(&mut t.cert_file, self.string(v, &p)),
                "keyFile" => set(&mut t.key_file, self.string(v, &p)),
                "caFile" => set(&mut t.ca_file, self.string(v, &p)),
                "certData" => set(&mut t.cert_data, self.bytes(v, &p)),
                "keyData" => set(&mut t.key_data, self.bytes(v, &p)),
                _ => set(&mut t.ca_data, self.bytes(v, &p)),
            }
        }
        Some(t)
    }
}

fn is_args_kind(kind: &str) -> bool {
    kind.strip_suffix("Args")
        .is_some_and(|p| PLUGINS_WITH_ARGS.contains(&p))
}
