//! The bare decision path, in process: the workload's pods scheduled one after another by
//! `Scheduler::schedule_one`, each placement assumed before the next.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;

use kubestep::cluster::ClusterState;
use kubestep::cluster::object::Object;
use kubestep::config;
use kubestep::framework::PodInfo;
use kubestep::framework::cycle::{CycleOutcome, Detail};
use kubestep::scheduler::Scheduler;
use kubestep::testing::workloads::{Workload, init_pods, make_nodes, make_pods};

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
