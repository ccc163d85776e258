//! The internal, fully defaulted form of `KubeSchedulerConfiguration` (upstream's
//! `pkg/scheduler/apis/config` types), which both accepted API versions convert to.
//!
//! Serializing these types gives the `kubescheduler.config.k8s.io/v1` JSON shape, which
//! decodes back to the same value.

use std::collections::BTreeMap;

use serde::Serialize;

use super::args::PluginArgs;
use super::duration::Duration;
use super::field::FieldPath;
use super::node::Pos;

/// The API group of the scheduler configuration.
pub const GROUP: &str = "kubescheduler.config.k8s.io";
/// The kind of the configuration object.
pub const KIND: &str = "KubeSchedulerConfiguration";
/// The profile name used when the only profile has none (`v1.DefaultSchedulerName`).
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// The versions of `kubescheduler.config.k8s.io` we accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ApiVersion {
    #[default]
    V1,
    /// Removed upstream in 1.29; accepted here and converted like v1.
    V1Beta3,
}

impl ApiVersion {
    /// The version name alone (`v1`).
    pub fn version(self) -> &'static str {
        match self {
            ApiVersion::V1 => "v1",
            ApiVersion::V1Beta3 => "v1beta3",
        }
    }
    /// The full `apiVersion` string (`kubescheduler.config.k8s.io/v1`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V1 => "kubescheduler.config.k8s.io/v1",
            ApiVersion::V1Beta3 => "kubescheduler.config.k8s.io/v1beta3",
        }
    }
    pub fn from_version(v: &str) -> Option<ApiVersion> {
        match v {
            "v1" => Some(ApiVersion::V1),
            "v1beta3" => Some(ApiVersion::V1Beta3),
            _ => None,
        }
    }
}

impl Serialize for ApiVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Where each field of a decoded file was written: its path (as printed in errors) to its
/// line and column. It is metadata about the source, not configuration: two configurations
/// compare equal whatever their source maps hold.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    /// The name used in messages (usually the file name).
    pub name: String,
    pub positions: BTreeMap<FieldPath, Pos>,
    /// Every plugin name the file wrote (`profiles[0].plugins.filter.enabled[1].name`,
    /// `profiles[0].pluginConfig[0].name`), so errors found when profiles are built can
    /// point at the entry that named the plugin.
    pub plugin_names: Vec<(FieldPath, String)>,
}

impl PartialEq for SourceMap {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl SourceMap {
    /// Where `path` (or the closest enclosing field that the file wrote) is.
    pub fn position_of(&self, path: &FieldPath) -> Option<Pos> {
        let mut p = Some(path.clone());
        while let Some(cur) = p {
            if cur.is_root() {
                return None;
            }
            if let Some(pos) = self.positions.get(&cur) {
                return Some(*pos);
            }
            p = cur.parent();
        }
        None
    }

    /// The entry of profile `profile` that names `plugin`: under `plugins.<point>` when
    /// the point is given (`filter`, `preScore`, ...), else its `pluginConfig` entry, else
    /// the first entry anywhere in the profile.
    pub fn plugin_entry(
        &self,
        profile: usize,
        plugin: &str,
        point: Option<&str>,
    ) -> Option<&FieldPath> {
        let prefix = format!("profiles[{profile}].");
        let named: Vec<&FieldPath> = self
            .plugin_names
            .iter()
            .filter(|(p, n)| n == plugin && p.as_str().starts_with(&prefix))
            .map(|(p, _)| p)
            .collect();
        let under = |part: &str| {
            let part = format!("{prefix}{part}");
            named
                .iter()
                .copied()
                .find(|p| p.as_str().starts_with(&part))
        };
        point
            .and_then(|pt| under(&format!("plugins.{pt}.")))
            .or_else(|| under("pluginConfig["))
            .or_else(|| named.first().copied())
    }
}

/// The scheduler configuration after decoding, defaulting and validation.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeSchedulerConfiguration {
    pub api_version: ApiVersion,
    pub parallelism: i32,
    pub leader_election: LeaderElectionConfiguration,
    pub client_connection: ClientConnectionConfiguration,
    pub enable_profiling: bool,
    pub enable_contention_profiling: bool,
    /// Global; `Some(0)` after defaulting (0 means adaptive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentage_of_nodes_to_score: Option<i32>,
    pub pod_initial_backoff_seconds: i64,
    pub pod_max_backoff_seconds: i64,
    pub profiles: Vec<Profile>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extenders: Vec<Extender>,
    pub delay_cache_until_active: bool,
    #[serde(skip)]
    pub source: SourceMap,
    /// The Kubernetes version and feature gates it was defaulted and validated for, and
    /// that the scheduler built from it follows.
    #[serde(skip)]
    pub features: crate::features::Features,
}

impl KubeSchedulerConfiguration {
    /// The profile that schedules pods with this `spec.schedulerName`.
    pub fn profile(&self, scheduler_name: &str) -> Option<&Profile> {
        self.profiles
            .iter()
            .find(|p| p.scheduler_name == scheduler_name)
    }

    /// The configuration as a `kubescheduler.config.k8s.io` JSON document that decodes back
    /// to an equal configuration.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        if let serde_json::Value::Object(m) = &mut v {
            m.insert(
                "kind".to_string(),
                serde_json::Value::String(KIND.to_string()),
            );
        }
        v
    }
}

/// Leader election settings (component-base `LeaderElectionConfiguration`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderElectionConfiguration {
    pub leader_elect: bool,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
    pub resource_lock: String,
    pub resource_name: String,
    pub resource_namespace: String,
}

impl Default for LeaderElectionConfiguration {
    fn default() -> Self {
        LeaderElectionConfiguration {
            leader_elect: true,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            resource_lock: "leases".to_string(),
            resource_name: "kube-scheduler".to_string(),
            resource_namespace: "kube-system".to_string(),
        }
    }
}

/// API server client settings (component-base `ClientConnectionConfiguration`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientConnectionConfiguration {
    pub kubeconfig: String,
    pub accept_content_types: String,
    pub content_type: String,
    pub qps: f32,
    pub burst: i32,
}

impl Default for ClientConnectionConfiguration {
    fn default() -> Self {
        ClientConnectionConfiguration {
            kubeconfig: String::new(),
            accept_content_types: String::new(),
            content_type: "application/vnd.kubernetes.protobuf".to_string(),
            qps: 50.0,
            burst: 100,
        }
    }
}

/// One scheduling profile.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    pub scheduler_name: String,
    /// Overrides the global value when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentage_of_nodes_to_score: Option<i32>,
    /// The user's plugins merged with the default set.
    pub plugins: Plugins,
    /// The user's entries (defaulted), then default args for every other enabled plugin
    /// that has an args type, in name order.
    pub plugin_config: Vec<PluginConfig>,
}

impl Profile {
    /// The args configured for a plugin, if any.
    pub fn plugin_args(&self, name: &str) -> Option<&PluginArgs> {
        self.plugin_config
            .iter()
            .find(|c| c.name == name)
            .map(|c| &c.args)
    }
}

/// The plugin sets of every extension point.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plugins {
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub pre_enqueue: PluginSet,
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub queue_sort: PluginSet,
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub pre_filter: PluginSet,
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub filter: PluginSet,
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub post_filter: PluginSet,
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub pre_score: PluginSet,
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub score: PluginSet,
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub reserve: PluginSet,
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub permit: PluginSet,
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub pre_bind: PluginSet,
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub bind: PluginSet,
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub post_bind: PluginSet,
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub multi_point: PluginSet,
    /// From 1.36: the plugins that propose placements for a pod group (at most one).
    /// kubestep runs no pod-group cycles; the set is decoded, defaulted and checked.
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub placement_generate: PluginSet,
    /// From 1.36: the plugins that rank a pod group's placements (weighted as Score's).
    #[serde(skip_serializing_if = "PluginSet::is_empty")]
    pub placement_score: PluginSet,
}

/// The extension points, in the order the framework runs them, with their JSON names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExtensionPoint {
    PreEnqueue,
    QueueSort,
    PreFilter,
    Filter,
    PostFilter,
    PreScore,
    Score,
    Reserve,
    Permit,
    PreBind,
    Bind,
    PostBind,
    MultiPoint,
    /// From 1.36 (`Semantics::placement_plugin_sets`).
    PlacementGenerate,
    /// From 1.36 (`Semantics::placement_plugin_sets`).
    PlacementScore,
}

impl ExtensionPoint {
    /// Every plugin set, in the order of upstream's `Plugins` fields (the placement sets
    /// exist from 1.36 only: see [`is_placement`](Self::is_placement)).
    pub const ALL: [ExtensionPoint; 15] = [
        ExtensionPoint::PreEnqueue,
        ExtensionPoint::QueueSort,
        ExtensionPoint::PreFilter,
        ExtensionPoint::Filter,
        ExtensionPoint::PostFilter,
        ExtensionPoint::PreScore,
        ExtensionPoint::Score,
        ExtensionPoint::Reserve,
        ExtensionPoint::Permit,
        ExtensionPoint::PreBind,
        ExtensionPoint::Bind,
        ExtensionPoint::PostBind,
        ExtensionPoint::MultiPoint,
        ExtensionPoint::PlacementGenerate,
        ExtensionPoint::PlacementScore,
    ];

    /// The pod-group placement sets (`placementGenerate`, `placementScore`), from 1.36.
    pub fn is_placement(self) -> bool {
        matches!(
            self,
            ExtensionPoint::PlacementGenerate | ExtensionPoint::PlacementScore
        )
    }

    /// The field name in the configuration (`preFilter`).
    pub fn json_name(self) -> &'static str {
        match self {
            ExtensionPoint::PreEnqueue => "preEnqueue",
            ExtensionPoint::QueueSort => "queueSort",
            ExtensionPoint::PreFilter => "preFilter",
            ExtensionPoint::Filter => "filter",
            ExtensionPoint::PostFilter => "postFilter",
            ExtensionPoint::PreScore => "preScore",
            ExtensionPoint::Score => "score",
            ExtensionPoint::Reserve => "reserve",
            ExtensionPoint::Permit => "permit",
            ExtensionPoint::PreBind => "preBind",
            ExtensionPoint::Bind => "bind",
            ExtensionPoint::PostBind => "postBind",
            ExtensionPoint::MultiPoint => "multiPoint",
            ExtensionPoint::PlacementGenerate => "placementGenerate",
            ExtensionPoint::PlacementScore => "placementScore",
        }
    }
}

impl Plugins {
    pub fn get(&self, point: ExtensionPoint) -> &PluginSet {
        match point {
            ExtensionPoint::PreEnqueue => &self.pre_enqueue,
            ExtensionPoint::QueueSort => &self.queue_sort,
            ExtensionPoint::PreFilter => &self.pre_filter,
            ExtensionPoint::Filter => &self.filter,
            ExtensionPoint::PostFilter => &self.post_filter,
            ExtensionPoint::PreScore => &self.pre_score,
            ExtensionPoint::Score => &self.score,
            ExtensionPoint::Reserve => &self.reserve,
            ExtensionPoint::Permit => &self.permit,
            ExtensionPoint::PreBind => &self.pre_bind,
            ExtensionPoint::Bind => &self.bind,
            ExtensionPoint::PostBind => &self.post_bind,
            ExtensionPoint::MultiPoint => &self.multi_point,
            ExtensionPoint::PlacementGenerate => &self.placement_generate,
            ExtensionPoint::PlacementScore => &self.placement_score,
        }
    }

    pub fn get_mut(&mut self, point: ExtensionPoint) -> &mut PluginSet {
        match point {
            ExtensionPoint::PreEnqueue => &mut self.pre_enqueue,
            ExtensionPoint::QueueSort => &mut self.queue_sort,
            ExtensionPoint::PreFilter => &mut self.pre_filter,
            ExtensionPoint::Filter => &mut self.filter,
            ExtensionPoint::PostFilter => &mut self.post_filter,
            ExtensionPoint::PreScore => &mut self.pre_score,
            ExtensionPoint::Score => &mut self.score,
            ExtensionPoint::Reserve => &mut self.reserve,
            ExtensionPoint::Permit => &mut self.permit,
            ExtensionPoint::PreBind => &mut self.pre_bind,
            ExtensionPoint::Bind => &mut self.bind,
            ExtensionPoint::PostBind => &mut self.post_bind,
            ExtensionPoint::MultiPoint => &mut self.multi_point,
            ExtensionPoint::PlacementGenerate => &mut self.placement_generate,
            ExtensionPoint::PlacementScore => &mut self.placement_score,
        }
    }

    /// Sorted, de-duplicated names enabled at any point including multiPoint (upstream's
    /// `pluginsNames`, which decides which plugins get default args).
    pub fn enabled_names(&self) -> Vec<String> {
        let mut names: Vec<String> = ExtensionPoint::ALL
            .iter()
            .flat_map(|p| self.get(*p).enabled.iter().map(|r| r.name.clone()))
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

/// Enabled and disabled plugins of one extension point.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PluginSet {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub enabled: Vec<PluginRef>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disabled: Vec<PluginRef>,
}

impl PluginSet {
    pub fn is_empty(&self) -> bool {
        self.enabled.is_empty() && self.disabled.is_empty()
    }
}

/// A plugin named in a plugin set; `weight` 0 means unset (the framework uses 1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PluginRef {
    pub name: String,
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub weight: i32,
}

impl PluginRef {
    pub fn new(name: &str, weight: i32) -> Self {
        PluginRef {
            name: name.to_string(),
            weight,
        }
    }
}

fn is_zero_i32(w: &i32) -> bool {
    *w == 0
}

/// Arguments for one plugin.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PluginConfig {
    pub name: String,
    #[serde(skip_serializing_if = "PluginArgs::is_absent")]
    pub args: PluginArgs,
}

/// A scheduler extender (an HTTP webhook consulted at filter, prioritize, preempt, bind).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Extender {
    pub url_prefix: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub filter_verb: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub preempt_verb: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub prioritize_verb: String,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub weight: i64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub bind_verb: String,
    #[serde(rename = "enableHTTPS")]
    pub enable_https: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_config: Option<ExtenderTlsConfig>,
    /// Zero means "use the extender client's default" (5s upstream).
    #[serde(rename = "httpTimeout")]
    pub http_timeout: Duration,
    pub node_cache_capable: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub managed_resources: Vec<ExtenderManagedResource>,
    pub ignorable: bool,
}

fn is_zero_i64(w: &i64) -> bool {
    *w == 0
}

/// An extended resource an extender manages.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtenderManagedResource {
    pub name: String,
    pub ignored_by_scheduler: bool,
}

/// TLS settings of an extender. The `*_data` fields hold the decoded bytes (base64 in JSON).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtenderTlsConfig {
    pub insecure: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub server_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cert_file: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key_file: String,
    #[serde(rename = "caFile", skip_serializing_if = "String::is_empty")]
    pub ca_file: String,
    #[serde(serialize_with = "ser_base64", skip_serializing_if = "Vec::is_empty")]
    pub cert_data: Vec<u8>,
    #[serde(serialize_with = "ser_base64", skip_serializing_if = "Vec::is_empty")]
    pub key_data: Vec<u8>,
    #[serde(
        rename = "caData",
        serialize_with = "ser_base64",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub ca_data: Vec<u8>,
}

fn ser_base64<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&base64_encode(v))
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (what Go's encoding/json uses for `[]byte`).
pub fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(B64[(n >> 18) as usize & 63] as char);
        out.push(B64[(n >> 12) as usize & 63] as char);
        out.push(if chunk.len() > 1 {
            B64[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if chunk.len() > 2 {
            B64[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

/// Standard base64 with padding; the error names the first bad byte as Go does
/// (`illegal base64 data at input byte N`).
pub fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    let bytes = s.as_bytes();
    let err = |i: usize| format!("illegal base64 data at input byte {i}");
    // Go's decoder skips \r and \n.
    let clean: Vec<(usize, u8)> = bytes
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, b)| *b != b'\r' && *b != b'\n')
        .collect();
    if !clean.len().is_multiple_of(4) {
        return Err(err(clean.last().map(|(i, _)| *i).unwrap_or(0)));
    }
    let val = |c: u8| B64.iter().position(|&x| x == c).map(|p| p as u32);
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    let quads = clean.len() / 4;
    for (q, quad) in clean.chunks(4).enumerate() {
        let last = q + 1 == quads;
        let mut n = 0u32;
        let mut pad = 0;
        for (k, (i, c)) in quad.iter().enumerate() {
            if *c == b'=' {
                if !last || k < 2 {
                    return Err(err(*i));
                }
                pad += 1;
                n <<= 6;
            } else {
                if pad > 0 {
                    return Err(err(*i));
                }
                n = (n << 6) | val(*c).ok_or_else(|| err(*i))?;
            }
        }
        out.push((n >> 16) as u8);
        if pad < 2 {
            out.push((n >> 8) as u8);
        }
        if pad < 1 {
            out.push(n as u8);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trip() {
        for s in [&b""[..], b"a", b"ab", b"abc", b"abcd", b"\x00\xff\x10"] {
            assert_eq!(base64_decode(&base64_encode(s)).unwrap(), s);
        }
        assert_eq!(base64_encode(b"hello"), "aGVsbG8=");
        assert!(base64_decode("a").is_err());
        assert!(base64_decode("a=bc").is_err());
        assert!(base64_decode("ab!c").is_err());
    }
}
