//! Generated clusters modelled on kube-scheduler's scheduler_perf workloads: nodes and
//! pods made deterministically from a seed, as objects or as a recording. `kubestep bench`
//! times them; tests use them as fixtures.

use jiff::Timestamp;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde::Serialize;
use serde_json::json;

use crate::cluster::ClusterState;
use crate::cluster::object::Object;
use crate::config;
use crate::framework::PodInfo;
use crate::framework::cycle::{CycleOutcome, Detail};
use crate::recording::Header;
use crate::session::scheduler::Scheduler;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Workload {
    /// cpu/memory requests only (SchedulingBasic).
    Basic,
    /// Every pod has required anti-affinity to the others on kubernetes.io/hostname.
    AntiAffinity,
    /// Every pod spreads over zones with maxSkew 1, DoNotSchedule.
    TopologySpread,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Basic => "basic",
            Workload::AntiAffinity => "anti-affinity",
            Workload::TopologySpread => "topology-spread",
        }
    }
}

/// splitmix64: small, deterministic, good enough for generating fixtures.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next() % xs.len() as u64) as usize]
    }
    /// A number below `n` (0 for 0).
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

pub const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];

pub fn make_nodes(n: usize, seed: u64) -> Vec<Node> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let cpu = rng.pick(&[4, 8, 16, 32]);
            let mem = rng.pick(&[16, 32, 64, 128]);
            let name = format!("node-{i:05}");
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": {
                    "kubernetes.io/hostname": name,
                    "topology.kubernetes.io/zone": ZONES[i % ZONES.len()],
                    "kubernetes.io/os": "linux"}},
                "status": {"allocatable": {"cpu": cpu.to_string(), "memory": format!("{mem}Gi"), "pods": "110"}}
            }))
            .unwrap_or_default()
        })
        .collect()
}

/// The pods a workload measures, after its (untimed) init pods, as scheduler_perf does:
/// basic = cpu/memory requests only; anti-affinity = SchedulingPodAntiAffinity (every pod
/// labelled color=green, required anti-affinity to color=green on the hostname);
/// topology-spread = TopologySpreading (color=blue, maxSkew 5 over zones, DoNotSchedule).
pub fn make_pods(
    workload: Workload,
    n: usize,
    seed: u64,
    namespace: &str,
    offset: usize,
) -> Vec<Pod> {
    let mut rng = Rng(seed ^ 0x5EED);
    (0..n)
        .map(|i| {
            let (cpu, mem) = match workload {
                Workload::Basic => (*rng.pick(&["100m", "250m", "500m", "1"]), *rng.pick(&["128Mi", "256Mi", "512Mi", "1Gi", "2Gi"])),
                _ => ("100m", "500Mi"),
            };
            let mut spec = json!({"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                "ports": [{"containerPort": 80}],
                "resources": {"requests": {"cpu": cpu, "memory": mem}, "limits": {"cpu": cpu, "memory": mem}}}]});
            let labels = match workload {
                Workload::Basic => json!({"app": "basic"}),
                Workload::AntiAffinity => {
                    spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": "kubernetes.io/hostname",
                         "namespaces": ["sched-0", "sched-1"]}]}});
                    json!({"color": "green"})
                }
                Workload::TopologySpread => {
                    spec["topologySpreadConstraints"] = json!([{"maxSkew": 5, "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"color": "blue"}}}]);
                    json!({"color": "blue"})
                }
            };
            let i = i + offset;
            serde_json::from_value(json!({
                "metadata": {"name": format!("pod-{i:06}"), "namespace": namespace, "uid": format!("uid-{i}"), "labels": labels},
                "spec": spec
            }))
            .unwrap_or_default()
        })
        .collect()
}

/// Untimed pods scheduled before measuring, as scheduler_perf's initPods.
pub fn init_pods(workload: Workload) -> (Workload, usize) {
    match workload {
        Workload::Basic => (Workload::Basic, 0),
        Workload::AntiAffinity => (Workload::AntiAffinity, 1000),
        Workload::TopologySpread => (Workload::Basic, 5000),
    }
}

/// The workload as a recording: its nodes, its init pods already bound where kubestep's
/// decision path puts them (scheduler_perf schedules them untimed), and the measured pods
/// pending at the recording's start. `kubestep replay FILE --headless` on it is the
/// user's path that `kubestep bench` times.
pub fn workload_recording(
    workload: Workload,
    nodes: usize,
    pods: usize,
    cfg: config::KubeSchedulerConfiguration,
) -> Result<Vec<u8>, String> {
    use crate::recording::{EventType, Header, writer::Writer};
    let start = jiff::Timestamp::from_second(1_772_442_000).unwrap_or_default();
    let mut header = Header::new(start);
    header.description = Some(format!(
        "scheduler_perf-like {}: {nodes} nodes, {pods} pending pods",
        workload.name()
    ));
    // The version it was generated for, so its replay follows the same one.
    header.source.kubernetes_version = Some(cfg.features.k8s_version());
    let mut w = Writer::memory(&header);
    let mut cluster = ClusterState::default();
    let typed = |v: serde_json::Value, kind: &str| {
        let mut v = v;
        v["apiVersion"] = json!("v1");
        v["kind"] = json!(kind);
        v
    };
    for n in make_nodes(nodes, 42) {
        let v = serde_json::to_value(&n).map_err(|e| e.to_string())?;
        w.event(start, EventType::Added, &typed(v, "Node"))
            .map_err(|e| e.to_string())?;
        cluster.add(Object::Node(Box::new(n)));
    }
    let mut sched = Scheduler::new(cfg, &cluster).map_err(|e| e.to_string())?;
    let (init_kind, init_count) = init_pods(workload);
    for p in make_pods(init_kind, init_count, 3, "sched-0", 0) {
        let pi = Arc::new(PodInfo::new(Arc::new(p.clone())));
        let node = match sched
            .schedule_one(pi, Detail::Decision, &cluster.listers)
            .and_then(|c| c.outcome)
        {
            Some(CycleOutcome::Selected { node, .. }) => node,
            _ => continue,
        };
        let bound = crate::session::scheduler::with_node_name(&p, &node);
        let v = serde_json::to_value(&bound).map_err(|e| e.to_string())?;
        w.event(start, EventType::Added, &typed(v, "Pod"))
            .map_err(|e| e.to_string())?;
    }
    for p in make_pods(workload, pods, 7, "sched-1", init_count) {
        let v = serde_json::to_value(&p).map_err(|e| e.to_string())?;
        w.event(start, EventType::Added, &typed(v, "Pod"))
            .map_err(|e| e.to_string())?;
    }
    w.finish().map_err(|e| e.to_string())
}

/// A recording of `nodes` nodes running `pods - pending` pods, and `pending` more pods
/// arriving over the first minute, as JSON Lines.
pub fn synthetic(nodes: usize, pods: usize, pending: usize) -> String {
    let start = Timestamp::from_second(1_772_442_000).unwrap_or(Timestamp::UNIX_EPOCH);
    let mut header = Header::new(start);
    header.description = Some(format!("synthetic: {nodes} nodes, {pods} pods"));
    let mut out = serde_json::to_string(&header).unwrap_or_default();
    out.push('\n');
    let mut line = |at: Timestamp, obj: serde_json::Value| {
        out.push_str(&json!({"at": at, "type": "ADDED", "object": obj}).to_string());
        out.push('\n');
    };
    let ns = make_nodes(nodes, 42);
    let mut free: Vec<i64> = Vec::with_capacity(ns.len());
    for n in &ns {
        let cpu = n
            .status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref())
            .and_then(|a| a.get("cpu"))
            .and_then(|q| q.0.parse::<i64>().ok())
            .unwrap_or(4);
        free.push(cpu * 1000);
        let mut v = serde_json::to_value(n).unwrap_or_default();
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("Node");
        line(start, v);
    }
    let milli = |q: &str| match q.strip_suffix('m') {
        Some(m) => m.parse::<i64>().unwrap_or(0),
        None => q.parse::<i64>().unwrap_or(0) * 1000,
    };
    let running = pods.saturating_sub(pending);
    let mut next = 0usize;
    for (i, p) in make_pods(Workload::Basic, pods, 11, "bench", 0)
        .into_iter()
        .enumerate()
    {
        let mut v = serde_json::to_value(&p).unwrap_or_default();
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("Pod");
        // Running pods go to the next node with room for them.
        if i < running && !free.is_empty() {
            let cpu = milli(
                v["spec"]["containers"][0]["resources"]["requests"]["cpu"]
                    .as_str()
                    .unwrap_or("0"),
            );
            for _ in 0..free.len() {
                next = (next + 1) % free.len();
                if free[next] >= cpu {
                    free[next] -= cpu;
                    v["spec"]["nodeName"] = json!(ns[next].metadata.name);
                    break;
                }
            }
            line(start, v);
        } else {
            let k = (i - running) as i64;
            let at = start
                .checked_add(jiff::SignedDuration::from_millis(
                    60_000 * k / pending.max(1) as i64,
                ))
                .unwrap_or(start);
            line(at, v);
        }
    }
    out
}
