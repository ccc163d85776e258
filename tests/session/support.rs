//! Small builders for session tests: manifests as YAML text, a session over them.

use std::time::Duration;

use kubestep::cluster::{ClusterState, manifest};
use kubestep::config;
use kubestep::session::{LocalActuator, PodRecord, PodStatus, Session, SessionOptions};

pub fn node(name: &str, cpu: &str) -> String {
    format!(
        "apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels:
    kubernetes.io/hostname: {name}
status:
  allocatable: {{cpu: \"{cpu}\", memory: 64Gi, pods: \"110\"}}
  capacity: {{cpu: \"{cpu}\", memory: 64Gi, pods: \"110\"}}
"
    )
}

/// A pod requesting `cpu`; `extra_meta` and `extra_spec` are YAML lines indented for
/// `metadata:` and `spec:`.
pub fn pod(key: &str, cpu: &str, extra_meta: &str, extra_spec: &str) -> String {
    let (ns, name) = key.split_once('/').unwrap_or(("default", key));
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  uid: uid-{ns}-{name}
{extra_meta}spec:
{extra_spec}  containers:
  - name: c
    image: registry.example.com/app:1.0
    resources:
      requests: {{cpu: \"{cpu}\", memory: 1Gi}}
"
    )
}

pub fn docs(parts: &[String]) -> String {
    parts.join("---\n")
}

pub fn session(objects: &str, config_yaml: Option<&str>) -> Session {
    let (objs, _notes) = manifest::parse_str(objects, "test.yaml").expect("test manifest");
    let cluster = ClusterState::from_objects(objs).expect("test cluster");
    let cfg = match config_yaml {
        Some(y) => config::parse_str(y, "config.yaml").expect("test config"),
        None => config::default_configuration(),
    };
    let mut s = Session::new(
        cluster,
        cfg,
        SessionOptions::default(),
        Box::new(LocalActuator),
    )
    .expect("session");
    // These tests read the per-plugin step lines.
    s.trace_level = kubestep::session::trace::TraceLevel::Steps;
    s
}

pub fn record(s: &Session, key: &str) -> PodRecord {
    s.pod(key)
        .unwrap_or_else(|| panic!("no pod {key} in the session"))
}

pub fn status(s: &Session, key: &str) -> PodStatus {
    record(s, key).status
}

pub fn node_of(s: &Session, key: &str) -> Option<String> {
    record(s, key).node.clone()
}

/// Runs `continue` until idle; returns the steps' JSON lines.
pub fn run(s: &mut Session) -> Vec<serde_json::Value> {
    s.run_command(&kubestep::session::script::Command::Continue)
        .expect("continue")
        .output
}

pub fn advance(s: &mut Session, secs: u64) {
    s.advance(Duration::from_secs(secs));
}

/// Seconds since the session's start.
pub fn elapsed(s: &Session) -> f64 {
    kubestep::session::clock::since(s.now(), jiff::Timestamp::UNIX_EPOCH).as_secs_f64()
}

/// Requested milli-cpu on a node, as the snapshot accounts it (assumed pods included).
pub fn requested_milli_cpu(s: &Session, node: &str) -> i64 {
    s.snapshot()
        .get(node)
        .map(|ni| ni.requested.milli_cpu)
        .unwrap_or_else(|| panic!("no node {node}"))
}

pub const GANG_CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    queueSort:
      enabled: [{name: Coscheduling}]
      disabled: [{name: PrioritySort}]
    preFilter:
      enabled: [{name: Coscheduling}]
    postFilter:
      enabled: [{name: Coscheduling}]
    reserve:
      enabled: [{name: Coscheduling}]
    permit:
      enabled: [{name: Coscheduling}]
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 30
      podGroupRejectPercentage: 30
";

pub const APPROVAL_CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    permit:
      enabled: [{name: ManualApproval}]
  pluginConfig:
  - name: ManualApproval
    args:
      timeoutSeconds: 120
";

/// A session at a chosen Kubernetes version (its default gates).
pub fn session_at(objects: &str, config_yaml: Option<&str>, version: &str) -> Session {
    use kubestep::features::{Features, KubeVersion};
    let features = Features::version(KubeVersion::parse(version).expect("version"));
    let (objs, _notes) = manifest::parse_str(objects, "test.yaml").expect("test manifest");
    let cluster = ClusterState::from_objects(objs).expect("test cluster");
    let cfg = match config_yaml {
        Some(y) => config::parse_str_for(y, "config.yaml", &features).expect("test config"),
        None => config::default_configuration_for(&features),
    };
    let mut s = Session::new(
        cluster,
        cfg,
        SessionOptions::default(),
        Box::new(LocalActuator),
    )
    .expect("session");
    s.trace_level = kubestep::session::trace::TraceLevel::Steps;
    s
}

/// Adds one object (a manifest) to a running session, as a watch event would.
pub fn apply(s: &mut Session, manifest_text: &str) {
    let (objs, _) = manifest::parse_str(manifest_text, "added.yaml").expect("manifest");
    for o in objs {
        s.apply(o.value);
    }
}
