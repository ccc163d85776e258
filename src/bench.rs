//! Scheduling throughput benchmarks modelled on kube-scheduler's scheduler_perf workloads:
//! nodes and pending pods are generated deterministically, then the pods are scheduled one
//! after another, each placement assumed before the next (`kubestep bench`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use serde::Serialize;
use serde_json::json;

use crate::cluster::ClusterState;
use crate::cluster::object::Object;
use crate::config;
use crate::framework::PodInfo;
use crate::framework::cycle::{CycleOutcome, Detail};
use crate::scheduler::Scheduler;

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

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub workload: Workload,
    pub detail: Detail,
    pub nodes: usize,
    pub pods: usize,
    pub scheduled: usize,
    pub unschedulable: usize,
    pub seconds: f64,
    pub pods_per_second: f64,
    /// Filter verdicts and score entries kept across all cycles (full detail).
    pub cells_kept: u64,
    pub peak_rss_mib: Option<f64>,
    /// Mean microseconds per measured pod spent in each phase (from the cycle traces).
    pub phase_micros: std::collections::BTreeMap<String, f64>,
}

/// splitmix64: small, deterministic, good enough for generating fixtures.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next() % xs.len() as u64) as usize]
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

/// Peak resident memory of this process, from /proc (Linux only).
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

pub fn run(
    workload: Workload,
    nodes: usize,
    pods: usize,
    detail: Detail,
    cfg: config::KubeSchedulerConfiguration,
) -> Result<BenchReport, String> {
    let mut cluster = ClusterState::default();
    for n in make_nodes(nodes, 42) {
        cluster.add(Object::Node(Box::new(n)));
    }
    let mut sched = Scheduler::new(cfg, &cluster).map_err(|e| e.to_string())?;
    let to_infos = |v: Vec<Pod>| -> Vec<Arc<PodInfo>> {
        v.into_iter()
            .map(|p| Arc::new(PodInfo::new(Arc::new(p))))
            .collect()
    };
    let (init_kind, init_count) = init_pods(workload);
    for pod in to_infos(make_pods(init_kind, init_count, 3, "sched-0", 0)) {
        sched.schedule_one(pod, Detail::Decision, &cluster.listers);
    }
    let pending = to_infos(make_pods(workload, pods, 7, "sched-1", init_count));
    let (mut scheduled, mut unschedulable, mut cells) = (0, 0, 0u64);
    let mut phases: std::collections::BTreeMap<&'static str, Duration> = Default::default();
    let started = Instant::now();
    for pod in pending {
        let Some(cycle) = sched.schedule_one(pod, detail, &cluster.listers) else {
            continue;
        };
        for run in &cycle.trace {
            *phases.entry(run.phase.as_str()).or_default() += run.duration;
        }
        match cycle.outcome {
            Some(CycleOutcome::Selected { .. }) => scheduled += 1,
            _ => unschedulable += 1,
        }
        if let Some(m) = &cycle.matrix {
            cells += m.len() as u64;
        }
        if let Some(t) = &cycle.scores {
            cells += (t.plugins.len() * t.nodes.len()) as u64;
        }
    }
    let elapsed = started.elapsed().max(Duration::from_nanos(1));
    Ok(BenchReport {
        workload,
        detail,
        nodes,
        pods,
        scheduled,
        unschedulable,
        seconds: elapsed.as_secs_f64(),
        pods_per_second: pods as f64 / elapsed.as_secs_f64(),
        cells_kept: cells,
        peak_rss_mib: peak_rss_mib(),
        phase_micros: phases
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.as_secs_f64() * 1e6 / pods.max(1) as f64))
            .collect(),
    })
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
        let bound = crate::scheduler::with_node_name(&p, &node);
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
