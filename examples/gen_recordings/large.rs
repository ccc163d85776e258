//! `large`: a 2,000-node, 22,000-pod EKS-like cluster with ten minutes of traffic:
//! pods arriving (some bound by the recorded scheduler), deployments scaling down, nodes
//! added by the autoscaler.

use serde_json::Value;

use crate::k8s::*;

const ZONES: [&str; 3] = ["us-east-1a", "us-east-1b", "us-east-1c"];

struct Group {
    name: &'static str,
    instance: &'static Instance,
    count: usize,
}

const GROUPS: [Group; 4] = [
    Group {
        name: "general",
        instance: &M6I_2XLARGE,
        count: 1100,
    },
    Group {
        name: "memory",
        instance: &R6I_2XLARGE,
        count: 400,
    },
    Group {
        name: "compute",
        instance: &C6I_4XLARGE,
        count: 400,
    },
    Group {
        name: "gpu",
        instance: &G5_12XLARGE,
        count: 100,
    },
];

/// A workload: namespace, name, requests (millicores, MiB, GPUs), node group, share.
struct Workload {
    ns: &'static str,
    name: &'static str,
    cpu: u64,
    mem: u64,
    gpus: u32,
    group: &'static str,
    weight: u64,
    spread: bool,
}

const fn w(
    ns: &'static str,
    name: &'static str,
    cpu: u64,
    mem: u64,
    group: &'static str,
    weight: u64,
) -> Workload {
    Workload {
        ns,
        name,
        cpu,
        mem,
        gpus: 0,
        group,
        weight,
        spread: false,
    }
}

const WORKLOADS: &[Workload] = &[
    w("payments", "checkout-api", 500, 1024, "general", 9),
    w("payments", "payments-api", 750, 1536, "general", 8),
    w("payments", "ledger", 1000, 2048, "memory", 4),
    w("payments", "fraud-scorer", 2000, 4096, "compute", 4),
    w("web", "storefront", 500, 768, "general", 12),
    w("web", "cart", 250, 512, "general", 10),
    w("web", "frontend", 250, 512, "general", 12),
    w("web", "image-resizer", 1500, 1024, "compute", 5),
    w("search", "search-api", 500, 1024, "general", 8),
    w("search", "opensearch-data", 2000, 12288, "memory", 5),
    w("identity", "auth-service", 250, 512, "general", 6),
    w("identity", "session-store", 500, 4096, "memory", 4),
    w("notifications", "email-sender", 100, 256, "general", 6),
    w("notifications", "push-gateway", 250, 512, "general", 5),
    w("data", "kafka-connect", 1000, 4096, "memory", 4),
    w("data", "flink-taskmanager", 2000, 8192, "memory", 5),
    w("data", "airflow-worker", 1000, 2048, "compute", 5),
    w("analytics", "trino-worker", 3000, 16384, "memory", 3),
    w("batch", "spark-executor", 2000, 4096, "compute", 8),
    w("batch", "report-renderer", 500, 1024, "compute", 4),
    Workload {
        gpus: 1,
        ..w("ml", "triton-inference", 4000, 16384, "gpu", 2)
    },
    Workload {
        gpus: 2,
        ..w("ml", "llm-finetune", 8000, 32768, "gpu", 1)
    },
    w("ml", "feature-server", 1000, 2048, "general", 4),
    Workload {
        spread: true,
        ..w("web", "api-gateway", 500, 512, "general", 6)
    },
];

struct NodeState {
    name: String,
    cpu: u64,
    mem: u64,
    pods: u64,
    gpus: u32,
}

fn milli(q: &str) -> u64 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap_or(0),
        None => q.parse::<u64>().unwrap_or(0) * 1000,
    }
}

fn mib(q: &str) -> u64 {
    q.trim_end_matches("Mi").parse().unwrap_or(0)
}

fn new_node(i: usize, g: &Group, rng: &mut Rng) -> (Value, NodeState) {
    let zone = ZONES[i % 3];
    let ip = format!("10.{}.{}.{}", 32 + i % 3 * 16, 64 + i / 250, 1 + i % 250);
    let mut n = node(&ip, zone, g.instance, g.name);
    if g.name == "gpu" {
        n = with_label(n, "nvidia.com/gpu.present", "true");
        n = with_taint(n, "nvidia.com/gpu", "present", "NoSchedule");
    }
    let _ = rng;
    let it = g.instance;
    let st = NodeState {
        name: name_of(&n),
        // What kube-proxy and aws-node take.
        cpu: milli(it.cpu) - 125,
        mem: mib(it.memory) - 192,
        pods: u64::from(it.pods) - 2,
        gpus: it.gpus,
    };
    (n, st)
}

struct Deployments {
    hashes: Vec<String>,
    total: u64,
}

fn pick_workload(rng: &mut Rng, d: &Deployments) -> usize {
    let mut x = rng.below(d.total);
    for (i, w) in WORKLOADS.iter().enumerate() {
        if x < w.weight {
            return i;
        }
        x -= w.weight;
    }
    0
}

fn pod_of(rng: &mut Rng, d: &Deployments, wi: usize) -> PodB {
    let w = &WORKLOADS[wi];
    let hash = &d.hashes[wi];
    let name = format!("{}-{hash}-{}", w.name, rng.suffix(5));
    let mut p = PodB::named(w.ns, &name, w.name)
        .label("pod-template-hash", hash)
        .requests(&format!("{}m", w.cpu), &format!("{}Mi", w.mem))
        .node_selector("eks.amazonaws.com/nodegroup", w.group);
    if w.gpus > 0 {
        p = p.gpus(w.gpus).tolerate("nvidia.com/gpu", "NoSchedule");
    }
    if w.spread {
        p = p.spread(w.name, "topology.kubernetes.io/zone", 1, "DoNotSchedule");
    }
    p
}

/// A node of the workload's group with room for it (a few random tries, as a busy
/// real scheduler's sample would), taking the room. `headroom` (percent of the node)
/// is left free, so that the cluster runs at the utilisation autoscaled clusters do.
fn place(
    rng: &mut Rng,
    nodes: &mut [NodeState],
    by_group: &[Vec<usize>],
    wi: usize,
    headroom: u64,
) -> Option<usize> {
    let w = &WORKLOADS[wi];
    let gi = GROUPS.iter().position(|g| g.name == w.group)?;
    let it = GROUPS[gi].instance;
    let cpu_keep = milli(it.cpu) * headroom / 100;
    let mem_keep = mib(it.memory) * headroom / 100;
    let gpu_keep = it.gpus * headroom as u32 / 100;
    let candidates = &by_group[gi];
    for _ in 0..12 {
        let i = candidates[rng.below(candidates.len() as u64) as usize];
        let n = &mut nodes[i];
        if n.cpu >= w.cpu + cpu_keep
            && n.mem >= w.mem + mem_keep
            && n.pods >= 1
            && n.gpus >= w.gpus + gpu_keep
        {
            n.cpu -= w.cpu;
            n.mem -= w.mem;
            n.pods -= 1;
            n.gpus -= w.gpus;
            return Some(i);
        }
    }
    None
}

pub fn large() -> Rec {
    let mut r = Rec::new(
        "Large: 2,000 nodes in three zones and 22,000 pods, with ten minutes of arrivals, recorded bindings, scale-downs and autoscaler nodes (for scale)",
        10,
    );
    for (ns, team) in [
        ("payments", "payments"),
        ("web", "storefront"),
        ("search", "search"),
        ("identity", "identity"),
        ("notifications", "growth"),
        ("data", "data-eng"),
        ("analytics", "data-eng"),
        ("batch", "data-eng"),
        ("ml", "ml-platform"),
    ] {
        r.add(0, namespace(ns, team));
    }
    r.add_all(0, system_priority_classes());
    let mut nodes = Vec::new();
    let mut by_group: Vec<Vec<usize>> = vec![Vec::new(); GROUPS.len()];
    let mut i = 0;
    for (gi, g) in GROUPS.iter().enumerate() {
        for _ in 0..g.count {
            let (n, st) = new_node(i, g, r.rng());
            r.add(0, n);
            let ds = daemon_pods(r.rng(), &st.name);
            r.add_all(0, ds);
            by_group[gi].push(nodes.len());
            nodes.push(st);
            i += 1;
        }
    }
    let d = {
        let rng = r.rng();
        Deployments {
            hashes: WORKLOADS.iter().map(|_| rng.suffix(10)).collect(),
            total: WORKLOADS.iter().map(|w| w.weight).sum(),
        }
    };
    // Running workloads.
    let mut running = Vec::new();
    while running.len() < 16_000 {
        let rng = r.rng();
        let wi = pick_workload(rng, &d);
        let Some(ni) = place(rng, &mut nodes, &by_group, wi, 35) else {
            continue;
        };
        let p = pod_of(rng, &d, wi).on(&nodes[ni].name).build();
        let p = r.add(0, p);
        running.push((p, ni, wi));
    }
    // Pending at the start (a deploy in progress).
    for _ in 0..400 {
        let rng = r.rng();
        let wi = pick_workload(rng, &d);
        let p = pod_of(rng, &d, wi).build();
        r.add(0, p);
    }
    // Ten minutes of traffic: a pod every 375 ms; one in eight is bound by the recorded
    // scheduler 600 ms later; every 2 s a running pod is scaled away.
    for k in 0..1600i64 {
        let t = 375 * (k + 1);
        let rng = r.rng();
        let wi = pick_workload(rng, &d);
        let p = pod_of(rng, &d, wi).build();
        let recorded = k % 8 == 3;
        let target = if recorded {
            place(rng, &mut nodes, &by_group, wi, 0)
        } else {
            None
        };
        let p = r.add(t, p);
        if let Some(ni) = target {
            let node = nodes[ni].name.clone();
            r.bind(t + 600, &p, &node);
        }
        if k % 5 == 0 && !running.is_empty() {
            let j = r.rng().below(running.len() as u64) as usize;
            let (gone, ni, wi) = running.swap_remove(j);
            let w = &WORKLOADS[wi];
            let n = &mut nodes[ni];
            n.cpu += w.cpu;
            n.mem += w.mem;
            n.pods += 1;
            n.gpus += w.gpus;
            r.delete(t + 100, &gone);
        }
    }
    // The autoscaler adds general nodes.
    for k in 0..10 {
        let t = secs(120 + 30 * k);
        let (n, st) = new_node(i, &GROUPS[0], r.rng());
        i += 1;
        r.add(t, n);
        let ds = daemon_pods(r.rng(), &st.name);
        r.add_all(t + 5000, ds);
    }
    r
}
