//! The small bundled recordings, each showing one part of the scheduler.

use serde_json::{Value, json};

use crate::k8s::*;

const A: &str = "us-east-1a";
const B: &str = "us-east-1b";
const C: &str = "us-east-1c";
const D: &str = "us-east-1d";

const GPU_TAINT: &str = "nvidia.com/gpu";

/// Nodes with their daemon pods, added at the start; their names.
fn add_nodes(r: &mut Rec, nodes: &[Value]) -> Vec<String> {
    add_nodes_stamped(r, nodes).iter().map(name_of).collect()
}

/// As `add_nodes`, returning the nodes as recorded (with uid and resourceVersion).
fn add_nodes_stamped(r: &mut Rec, nodes: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for n in nodes {
        let n = r.add(0, n.clone());
        let ds = daemon_pods(r.rng(), &name_of(&n));
        r.add_all(0, ds);
        out.push(n);
    }
    out
}

fn gpu_node(ip: &str, zone: &str, it: &Instance) -> Value {
    let n = with_label(node(ip, zone, it, "gpu"), "nvidia.com/gpu.present", "true");
    with_taint(n, GPU_TAINT, "present", "NoSchedule")
}

fn cordon(mut n: Value) -> Value {
    n["spec"]["unschedulable"] = json!(true);
    with_taint(n, "node.kubernetes.io/unschedulable", "", "NoSchedule")
}

fn namespaces(r: &mut Rec) {
    for (ns, team) in [
        ("payments", "payments"),
        ("web", "storefront"),
        ("ml", "ml-platform"),
        ("data", "data-eng"),
        ("batch", "data-eng"),
    ] {
        r.add(0, namespace(ns, team));
    }
    r.add_all(0, system_priority_classes());
}

fn coscheduling_config(manual_approval: bool, approval_timeout: u32) -> Value {
    let mut permit = vec![json!({"name": "Coscheduling"})];
    let mut args = vec![json!({"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 60}})];
    if manual_approval {
        permit.push(json!({"name": "ManualApproval"}));
        args.push(json!({"name": "ManualApproval", "args": {"timeoutSeconds": approval_timeout}}));
    }
    json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{
            "schedulerName": "default-scheduler",
            "plugins": {
                "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "PrioritySort"}]},
                "preFilter": {"enabled": [{"name": "Coscheduling"}]},
                "postFilter": {"enabled": [{"name": "Coscheduling"}]},
                "reserve": {"enabled": [{"name": "Coscheduling"}]},
                "permit": {"enabled": permit}
            },
            "pluginConfig": args
        }]
    })
}

pub fn taints_affinity() -> Rec {
    let mut r = Rec::new(
        "Taints and affinity: tainted GPU nodes, a cordoned node, anti-affinity replicas, and a pod pinned to a zone that gets its first node 90s in",
        1,
    );
    namespaces(&mut r);
    let web = |n: Value| with_label(n, "workload-class", "web");
    let nodes = [
        web(node("10.0.1.21", A, &M6I_2XLARGE, "general")),
        web(node("10.0.2.34", B, &M6I_2XLARGE, "general")),
        node("10.0.3.47", C, &M6I_2XLARGE, "general"),
        cordon(node("10.0.3.52", C, &M6I_2XLARGE, "general")),
        gpu_node("10.0.1.88", A, &G5_2XLARGE),
        gpu_node("10.0.2.91", B, &G5_2XLARGE),
    ];
    let names = add_nodes(&mut r, &nodes);
    let rng = r.rng();
    let frontend = |rng: &mut Rng| {
        PodB::deploy(rng, "web", "frontend")
            .requests("500m", "768Mi")
            .node_selector("workload-class", "web")
            .anti_affinity_self("frontend")
    };
    let running = frontend(rng).on(&names[0]).build();
    let mut pending = vec![running];
    for _ in 0..3 {
        pending.push(frontend(rng).build());
    }
    let trainer = |i: u32| {
        PodB::named(
            "ml",
            &format!("bert-large-trainer-{i}"),
            "bert-large-trainer",
        )
        .requests("4", "16Gi")
        .gpus(1)
        .node_selector("nvidia.com/gpu.present", "true")
        .tolerate(GPU_TAINT, "NoSchedule")
        .build()
    };
    pending.push(trainer(0));
    pending.push(
        PodB::deploy(rng, "ml", "jupyter-notebook")
            .requests("2", "8Gi")
            .gpus(1)
            .node_selector("nvidia.com/gpu.present", "true")
            .build(),
    );
    pending.push(
        PodB::deploy(rng, "payments", "ledger")
            .requests("500m", "1Gi")
            .zones(&[D])
            .build(),
    );
    pending.push(
        PodB::deploy(rng, "data", "airflow-scheduler")
            .requests("1", "2Gi")
            .build(),
    );
    r.add_all(0, pending);
    r.add(secs(30), trainer(1));
    let n = node("10.0.4.15", D, &M6I_XLARGE, "general");
    let name = name_of(&n);
    r.add(secs(90), n);
    let ds = daemon_pods(r.rng(), &name);
    r.add_all(secs(90), ds);
    r
}

pub fn insufficient_resources() -> Rec {
    let mut r = Rec::new(
        "Insufficient resources: pods too big for any node (cpu, memory, GPUs), and one that fits once a finished job frees its node at 45s",
        2,
    );
    namespaces(&mut r);
    let nodes = [
        node("10.0.1.14", A, &M6I_XLARGE, "general"),
        node("10.0.2.27", B, &M6I_XLARGE, "general"),
        node("10.0.3.33", C, &M6I_XLARGE, "general"),
        node("10.0.1.61", A, &M6I_XLARGE, "general"),
    ];
    let names = add_nodes(&mut r, &nodes);
    let rng = r.rng();
    let mut pods = Vec::new();
    for n in &names {
        pods.push(
            PodB::deploy(rng, "payments", "payments-api")
                .requests("1500m", "3Gi")
                .on(n)
                .build(),
        );
        pods.push(
            PodB::deploy(rng, "web", "cart")
                .requests("1200m", "2Gi")
                .on(n)
                .build(),
        );
    }
    for i in [0, 1, 3] {
        pods.push(
            PodB::deploy(rng, "notifications", "email-sender")
                .requests("600m", "512Mi")
                .on(&names[i])
                .build(),
        );
    }
    let report = PodB::named("batch", "nightly-report-29541600-x7k2p", "nightly-report")
        .requests("1", "2Gi")
        .on(&names[2])
        .build();
    let wide = [
        PodB::deploy(rng, "data", "spark-driver")
            .requests("6", "8Gi")
            .build(),
        PodB::deploy(rng, "ml", "embedding-indexer")
            .requests("1", "20Gi")
            .build(),
        PodB::deploy(rng, "ml", "llm-serve")
            .requests("2", "8Gi")
            .gpus(1)
            .build(),
        PodB::deploy(rng, "batch", "quarterly-close")
            .requests("1", "2Gi")
            .build(),
        PodB::deploy(rng, "web", "cart")
            .requests("250m", "512Mi")
            .build(),
        PodB::deploy(rng, "web", "cart")
            .requests("250m", "512Mi")
            .build(),
    ];
    r.add_all(0, pods);
    let report = r.add(0, report);
    r.add_all(0, wide);
    // The job finishes: its pod is deleted (the scheduler never sees finished pods).
    r.delete(secs(45), &report);
    r
}

pub fn preemption() -> Rec {
    let mut r = Rec::new(
        "Preemption: a critical payments pod evicts low-priority Spark executors (a PodDisruptionBudget steers it away from one node); a preemptionPolicy: Never pod keeps waiting",
        3,
    );
    namespaces(&mut r);
    r.add(
        0,
        priority_class("batch-low", 100, false, "Batch jobs that may be preempted."),
    );
    r.add(
        0,
        priority_class(
            "ml-backfill",
            500,
            false,
            "Backfill jobs that never preempt.",
        ),
    );
    r.add(
        0,
        priority_class(
            "payments-critical",
            1_000_000,
            false,
            "Revenue path; may preempt batch work.",
        ),
    );
    let nodes = [
        node("10.0.1.17", A, &M6I_LARGE, "batch"),
        node("10.0.2.44", B, &M6I_LARGE, "batch"),
        node("10.0.3.29", C, &M6I_LARGE, "batch"),
    ];
    let names = add_nodes(&mut r, &nodes);
    let rng = r.rng();
    let mut pods = Vec::new();
    for (i, n) in names.iter().enumerate() {
        // Executors on the last node belong to a job protected by a PDB.
        let app = if i == 2 {
            "etl-worker"
        } else {
            "spark-executor"
        };
        for _ in 0..2 {
            pods.push(
                PodB::deploy(rng, "batch", app)
                    .requests("850m", "2Gi")
                    .priority("batch-low", 100)
                    .on(n)
                    .build(),
            );
        }
    }
    let checkout = PodB::deploy(rng, "payments", "checkout-api")
        .requests("1500m", "1Gi")
        .priority("payments-critical", 1_000_000)
        .build();
    let backfill = PodB::deploy(rng, "ml", "feature-backfill")
        .requests("1", "1Gi")
        .priority("ml-backfill", 500)
        .never_preempt()
        .build();
    r.add_all(0, pods);
    r.add(
        0,
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": "etl-worker", "namespace": "batch"},
               "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app.kubernetes.io/name": "etl-worker"}}},
               "status": {"currentHealthy": 2, "desiredHealthy": 2, "expectedPods": 2, "disruptionsAllowed": 0}}),
    );
    r.add(secs(20), checkout);
    r.add(secs(25), backfill);
    r
}

pub fn topology_spread() -> Rec {
    let mut r = Rec::new(
        "Topology spread: storefront replicas spread over three zones (maxSkew 1); us-east-1c is full, so the last replicas wait until the autoscaler adds a node there at 60s",
        4,
    );
    namespaces(&mut r);
    let nodes = [
        node("10.0.1.12", A, &M6I_XLARGE, "general"),
        node("10.0.1.75", A, &M6I_XLARGE, "general"),
        node("10.0.2.18", B, &M6I_XLARGE, "general"),
        node("10.0.2.83", B, &M6I_XLARGE, "general"),
        node("10.0.3.26", C, &M6I_XLARGE, "general"),
        node("10.0.3.91", C, &M6I_XLARGE, "general"),
    ];
    let names = add_nodes(&mut r, &nodes);
    let rng = r.rng();
    let storefront = |rng: &mut Rng| {
        PodB::deploy(rng, "web", "storefront")
            .requests("500m", "512Mi")
            .spread(
                "storefront",
                "topology.kubernetes.io/zone",
                1,
                "DoNotSchedule",
            )
            .spread("storefront", "kubernetes.io/hostname", 1, "ScheduleAnyway")
    };
    let mut pods = Vec::new();
    for n in &names {
        pods.push(storefront(rng).on(n).build());
    }
    // Zone c is busy with the analytics database.
    for n in &names[4..] {
        pods.push(
            PodB::deploy(rng, "data", "clickhouse")
                .requests("2800m", "8Gi")
                .on(n)
                .build(),
        );
    }
    for _ in 0..6 {
        pods.push(storefront(rng).build());
    }
    r.add_all(0, pods);
    let n = node("10.0.3.140", C, &M6I_XLARGE, "general");
    let name = name_of(&n);
    r.add(secs(60), n);
    let ds = daemon_pods(r.rng(), &name);
    r.add_all(secs(60), ds);
    r
}

pub fn gang_scheduling() -> Rec {
    let mut r = Rec::new(
        "Gang scheduling (Coscheduling): a 4-pod fine-tuning job placed together, and a 10-worker GPU sweep that waits at Permit for a tenth GPU and times out after 30s",
        5,
    );
    r.config = Some(coscheduling_config(false, 0));
    namespaces(&mut r);
    let gpu = |ip, zone| {
        with_label(
            node(ip, zone, &G5_12XLARGE, "gpu"),
            "nvidia.com/gpu.present",
            "true",
        )
    };
    let nodes = [
        node("10.0.1.31", A, &M6I_2XLARGE, "general"),
        node("10.0.2.52", B, &M6I_2XLARGE, "general"),
        node("10.0.3.64", C, &M6I_2XLARGE, "general"),
        gpu("10.0.1.101", A),
        gpu("10.0.2.102", B),
        gpu("10.0.3.103", C),
    ];
    let names = add_nodes(&mut r, &nodes);
    let rng = r.rng();
    let mut pods = Vec::new();
    for n in &names[3..] {
        pods.push(
            PodB::deploy(rng, "ml", "triton-inference")
                .requests("4", "16Gi")
                .gpus(1)
                .on(n)
                .build(),
        );
    }
    r.add_all(0, pods);
    r.add(0, pod_group("ml", "llm-finetune", 4, None));
    r.add(0, pod_group("ml", "resnet-sweep", 10, Some(30)));
    for i in 0..4 {
        let p = PodB::named("ml", &format!("llm-finetune-worker-{i}"), "llm-finetune")
            .label("scheduling.x-k8s.io/pod-group", "llm-finetune")
            .requests("2", "8Gi")
            .build();
        r.add(0, p);
    }
    for i in 0..10 {
        let p = PodB::named("ml", &format!("resnet-sweep-worker-{i}"), "resnet-sweep")
            .label("scheduling.x-k8s.io/pod-group", "resnet-sweep")
            .requests("4", "16Gi")
            .gpus(1)
            .build();
        r.add(secs(10), p);
    }
    r
}

pub fn manual_approval() -> Rec {
    let mut r = Rec::new(
        "Manual approval: a schema migration and a canary wait at Permit for a person to allow or reject them (2-minute timeout); ordinary pods go straight through",
        6,
    );
    r.config = Some(json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{
            "schedulerName": "default-scheduler",
            "plugins": {"permit": {"enabled": [{"name": "ManualApproval"}]}},
            "pluginConfig": [{"name": "ManualApproval", "args": {"timeoutSeconds": 120}}]
        }]
    }));
    namespaces(&mut r);
    let nodes = [
        node("10.0.1.23", A, &M6I_2XLARGE, "general"),
        node("10.0.2.45", B, &M6I_2XLARGE, "general"),
        node("10.0.3.67", C, &M6I_2XLARGE, "general"),
    ];
    add_nodes(&mut r, &nodes);
    let rng = r.rng();
    let manual = |p: PodB| p.label("kubestep.io/approval", "manual");
    let pods = [
        manual(PodB::named(
            "payments",
            "schema-migrate-29541660-k2x7p",
            "schema-migrate",
        ))
        .requests("500m", "512Mi")
        .build(),
        manual(PodB::deploy(rng, "web", "frontend-canary"))
            .requests("500m", "768Mi")
            .build(),
        PodB::deploy(rng, "web", "frontend")
            .requests("500m", "768Mi")
            .build(),
        PodB::deploy(rng, "web", "frontend")
            .requests("500m", "768Mi")
            .build(),
        PodB::deploy(rng, "payments", "payments-api")
            .requests("1", "2Gi")
            .build(),
    ];
    r.add_all(0, pods);
    let later = manual(PodB::named(
        "data",
        "orders-backfill-29541700-9qvtz",
        "orders-backfill",
    ))
    .requests("2", "4Gi")
    .build();
    r.add(secs(30), later);
    r
}

fn storage_class(name: &str, mode: &str, default: bool) -> Value {
    json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
           "metadata": {"name": name, "annotations": {"storageclass.kubernetes.io/is-default-class": default.to_string()}},
           "provisioner": "ebs.csi.aws.com", "volumeBindingMode": mode, "reclaimPolicy": "Delete",
           "allowVolumeExpansion": true, "parameters": {"type": "gp3", "encrypted": "true"}})
}

fn csi_node(name: &str, limit: u32) -> Value {
    json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
           "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": format!("i-0{}", name.len()),
                                 "topologyKeys": ["topology.ebs.csi.aws.com/zone"],
                                 "allocatable": {"count": limit}}]}})
}

/// A bound claim and its zonal EBS volume.
fn zonal_volume(rng: &mut Rng, ns: &str, claim: &str, zone: &str, size: &str) -> [Value; 2] {
    let pv = format!("pvc-{}-{}-{}", rng.hex(8), rng.hex(4), rng.hex(12));
    let handle = format!("vol-0{}", rng.hex(16));
    [
        json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
               "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": "gp3",
                        "persistentVolumeReclaimPolicy": "Delete",
                        "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": handle, "fsType": "ext4"},
                        "claimRef": {"kind": "PersistentVolumeClaim", "namespace": ns, "name": claim},
                        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                            {"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": [zone]}]}]}}},
               "status": {"phase": "Bound"}}),
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim, "namespace": ns,
                   "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
               "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "gp3", "volumeName": pv,
                        "resources": {"requests": {"storage": size}}},
               "status": {"phase": "Bound", "capacity": {"storage": size}}}),
    ]
}

fn unbound_claim(ns: &str, name: &str, class: &str, size: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
           "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class,
                    "resources": {"requests": {"storage": size}}},
           "status": {"phase": "Pending"}})
}

pub fn volumes_zones() -> Rec {
    let mut r = Rec::new(
        "Volumes and zones: zonal EBS volumes pin pods to their zone, a WaitForFirstConsumer claim is provisioned where its pod lands, a node reaches its EBS attach limit, an Immediate claim and a missing claim",
        7,
    );
    namespaces(&mut r);
    r.add(0, storage_class("gp3", "WaitForFirstConsumer", true));
    r.add(0, storage_class("io2-immediate", "Immediate", false));
    let nodes = [
        node("10.0.1.19", A, &M6I_XLARGE, "stateful"),
        node("10.0.2.36", B, &M6I_XLARGE, "stateful"),
        node("10.0.2.58", B, &M6I_XLARGE, "stateful"),
        node("10.0.3.72", C, &M6I_XLARGE, "stateful"),
    ];
    let names = add_nodes(&mut r, &nodes);
    // m6i instances attach up to 26 EBS volumes with the ENI and root volume; these
    // nodes already run volume-heavy pods, so two are close to their limit.
    let limits = [25, 2, 2, 25];
    for (n, l) in names.iter().zip(limits) {
        r.add(0, csi_node(n, l));
    }
    let rng = r.rng();
    let mut objs = Vec::new();
    // Running pods with volumes: one on 10.0.2.36, two on 10.0.2.58.
    let running = |rng: &mut Rng, objs: &mut Vec<Value>, name: &str, zone: &str, node: &str| {
        objs.extend(zonal_volume(
            rng,
            "data",
            &format!("data-{name}"),
            zone,
            "100Gi",
        ));
        objs.push(
            PodB::named("data", name, "elasticsearch")
                .requests("1", "4Gi")
                .claim(&format!("data-{name}"))
                .on(node)
                .build(),
        );
    };
    running(rng, &mut objs, "elasticsearch-data-0", B, &names[1]);
    running(rng, &mut objs, "elasticsearch-data-1", B, &names[2]);
    running(rng, &mut objs, "elasticsearch-data-2", B, &names[2]);
    // Zone c's node is busy.
    objs.push(
        PodB::deploy(rng, "data", "clickhouse")
            .requests("3", "8Gi")
            .on(&names[3])
            .build(),
    );
    objs.extend(zonal_volume(rng, "data", "data-postgres-0", B, "200Gi"));
    objs.extend(zonal_volume(rng, "data", "data-mongodb-0", C, "200Gi"));
    objs.extend(zonal_volume(rng, "data", "data-redis-0", B, "20Gi"));
    objs.push(unbound_claim("data", "data-kafka-0", "gp3", "500Gi"));
    objs.push(unbound_claim(
        "ml",
        "feature-cache",
        "io2-immediate",
        "50Gi",
    ));
    let sts = |name: &str, app: &str, cpu: &str| {
        PodB::named("data", name, app)
            .requests(cpu, "4Gi")
            .claim(&format!("data-{name}"))
            .build()
    };
    objs.push(sts("postgres-0", "postgres", "1"));
    objs.push(sts("mongodb-0", "mongodb", "1500m"));
    objs.push(sts("kafka-0", "kafka", "1"));
    objs.push(
        PodB::deploy(rng, "ml", "feature-cache")
            .requests("500m", "1Gi")
            .claim("feature-cache")
            .build(),
    );
    objs.push(
        PodB::deploy(rng, "web", "uploads")
            .requests("250m", "512Mi")
            .claim("uploads")
            .build(),
    );
    r.add_all(0, objs);
    r.add(secs(20), sts("redis-0", "redis", "500m"));
    r
}

pub fn divergence() -> Rec {
    let mut r = Rec::new(
        "Divergence: the recorded scheduler bin-packs and acts on a stale cache; kubestep (default profile) compares each of its decisions with the recorded binding",
        8,
    );
    namespaces(&mut r);
    let nodes = [
        node("10.0.1.26", A, &M6I_2XLARGE, "general"),
        node("10.0.2.48", B, &M6I_2XLARGE, "general"),
        node("10.0.3.53", C, &M6I_2XLARGE, "general"),
        node("10.0.1.97", A, &M6I_2XLARGE, "general"),
    ];
    let nodes = add_nodes_stamped(&mut r, &nodes);
    let names: Vec<String> = nodes.iter().map(name_of).collect();
    let rng = r.rng();
    let busy = (0..3)
        .map(|_| {
            PodB::deploy(rng, "search", "opensearch")
                .requests("1500m", "6Gi")
                .on(&names[0])
                .build()
        })
        .collect::<Vec<_>>();
    r.add(0, namespace("search", "search"));
    r.add_all(0, busy);
    // The real scheduler packs search-api replicas onto the busiest node.
    for i in 0..3 {
        let t = secs(10 * (i + 1));
        let pod = PodB::deploy(r.rng(), "search", "search-api")
            .requests("500m", "1Gi")
            .build();
        let pod = r.add(t, pod);
        r.bind(t + 800, &pod, &names[0]);
    }
    // A taint lands on 10.0.1.97; the real scheduler's cache has not seen it yet.
    let mut tainted = with_taint(nodes[3].clone(), "dedicated", "ingest", "NoSchedule");
    tainted["metadata"]["labels"]["dedicated"] = json!("ingest");
    r.modify(secs(50), tainted);
    let ingest = PodB::deploy(r.rng(), "data", "log-ingest")
        .requests("1", "2Gi")
        .build();
    let ingest = r.add(secs(51), ingest);
    r.bind(secs(51) + 200, &ingest, &names[3]);
    // The only node in us-east-1c is cordoned just before a zone-pinned pod arrives.
    r.modify(secs(60), cordon(nodes[2].clone()));
    let feature = PodB::deploy(r.rng(), "ml", "feature-server")
        .requests("1", "2Gi")
        .zones(&[C])
        .build();
    let feature = r.add(secs(61), feature);
    r.bind(secs(61) + 300, &feature, &names[2]);
    // Here kubestep agrees: only 10.0.2.48 is in us-east-1b.
    let cache = PodB::deploy(r.rng(), "web", "session-cache")
        .requests("500m", "2Gi")
        .zones(&[B])
        .build();
    let cache = r.add(secs(70), cache);
    r.bind(secs(70) + 400, &cache, &names[1]);
    // Never bound in the recording: kubestep schedules it.
    let job = PodB::named("batch", "reindex-29541720-m4k8d", "reindex")
        .requests("2", "4Gi")
        .build();
    r.add(secs(80), job);
    r
}

pub fn demo() -> Rec {
    let mut r = Rec::new(
        "Demo: a mixed EKS cluster: pods blocked by a taint, host ports, size and zone affinity, a preemption, a gang, a pod awaiting manual approval, and the real scheduler's bindings compared",
        9,
    );
    r.config = Some(coscheduling_config(true, 300));
    namespaces(&mut r);
    r.add(
        0,
        priority_class("default-priority", 1000, true, "Default for workloads."),
    );
    r.add(
        0,
        priority_class("batch-low", 100, false, "Batch jobs that may be preempted."),
    );
    r.add(
        0,
        priority_class(
            "payments-critical",
            1_000_000,
            false,
            "Revenue path; may preempt batch work.",
        ),
    );
    let edge = |ip, zone| {
        with_label(
            node(ip, zone, &M6I_XLARGE, "edge"),
            "node-role/edge",
            "true",
        )
    };
    let nodes = [
        node("10.0.1.21", A, &M6I_2XLARGE, "general"),
        node("10.0.2.34", B, &M6I_2XLARGE, "general"),
        node("10.0.3.47", C, &M6I_2XLARGE, "general"),
        edge("10.0.1.150", A),
        edge("10.0.2.150", B),
        gpu_node("10.0.1.88", A, &G5_2XLARGE),
        gpu_node("10.0.2.91", B, &G5_2XLARGE),
        node("10.0.2.77", B, &M6I_LARGE, "batch"),
        node("10.0.3.78", C, &M6I_LARGE, "batch"),
    ];
    let names = add_nodes(&mut r, &nodes);
    let rng = r.rng();
    let mut objs = Vec::new();
    // Running workloads.
    for n in &names[..3] {
        for _ in 0..2 {
            objs.push(
                PodB::deploy(rng, "web", "storefront")
                    .requests("1500m", "3Gi")
                    .on(n)
                    .build(),
            );
        }
        objs.push(
            PodB::deploy(rng, "payments", "payments-api")
                .requests("2", "4Gi")
                .on(n)
                .build(),
        );
    }
    // The busiest general node also runs the search cluster.
    objs.push(
        PodB::deploy(rng, "web", "search-index")
            .requests("1500m", "6Gi")
            .on(&names[0])
            .build(),
    );
    for n in &names[3..5] {
        objs.push(
            PodB::deploy(rng, "web", "ingress-nginx-controller")
                .requests("500m", "512Mi")
                .host_port(443)
                .node_selector("node-role/edge", "true")
                .on(n)
                .build(),
        );
    }
    objs.push(
        PodB::deploy(rng, "ml", "triton-inference")
            .requests("4", "16Gi")
            .gpus(1)
            .tolerate(GPU_TAINT, "NoSchedule")
            .on(&names[5])
            .build(),
    );
    for n in &names[7..9] {
        for _ in 0..2 {
            objs.push(
                PodB::deploy(rng, "batch", "spark-executor")
                    .requests("850m", "2Gi")
                    .priority("batch-low", 100)
                    .on(n)
                    .build(),
            );
        }
    }
    let report = PodB::named("batch", "nightly-report-29541600-x7k2p", "nightly-report")
        .requests("1", "2Gi")
        .on(&names[2])
        .build();
    // Pending when the recording starts.
    objs.push(
        PodB::deploy(rng, "ml", "jupyter-notebook")
            .requests("2", "8Gi")
            .gpus(1)
            .node_selector("nvidia.com/gpu.present", "true")
            .build(),
    );
    objs.push(
        PodB::deploy(rng, "web", "ingress-nginx-controller")
            .requests("500m", "512Mi")
            .host_port(443)
            .node_selector("node-role/edge", "true")
            .build(),
    );
    objs.push(
        PodB::deploy(rng, "data", "spark-driver")
            .requests("12", "16Gi")
            .build(),
    );
    objs.push(
        PodB::deploy(rng, "payments", "ledger")
            .requests("500m", "1Gi")
            .zones(&[D])
            .build(),
    );
    objs.push(
        PodB::named(
            "payments",
            "schema-migrate-29541660-k2x7p",
            "schema-migrate",
        )
        .label("kubestep.io/approval", "manual")
        .requests("250m", "256Mi")
        .build(),
    );
    objs.push(
        PodB::deploy(rng, "web", "storefront")
            .requests("500m", "1Gi")
            .build(),
    );
    r.add_all(0, objs);
    let report = r.add(0, report);
    r.add(0, pod_group("ml", "llm-finetune", 3, None));
    for i in 0..3 {
        let p = PodB::named("ml", &format!("llm-finetune-worker-{i}"), "llm-finetune")
            .label("scheduling.x-k8s.io/pod-group", "llm-finetune")
            .requests("1", "4Gi")
            .build();
        r.add(0, p);
    }
    // The real scheduler places a search-api replica on the busiest node.
    let search = PodB::deploy(r.rng(), "web", "search-api")
        .requests("500m", "1Gi")
        .build();
    let search = r.add(secs(15), search);
    r.bind(secs(15) + 700, &search, &names[0]);
    // A critical checkout pod that only fits once batch executors are preempted.
    let checkout = PodB::deploy(r.rng(), "payments", "checkout-api")
        .requests("1500m", "1Gi")
        .priority("payments-critical", 1_000_000)
        .node_selector("eks.amazonaws.com/nodegroup", "batch")
        .build();
    r.add(secs(30), checkout);
    r.delete(secs(45), &report);
    let n = node("10.0.4.15", D, &M6I_XLARGE, "general");
    let name = name_of(&n);
    r.add(secs(60), n);
    let ds = daemon_pods(r.rng(), &name);
    r.add_all(secs(60), ds);
    r
}
