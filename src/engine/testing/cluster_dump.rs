//! A production-shaped cluster dump, as `kubectl get nodes,pods -A -o json` prints it:
//! full objects (managedFields, env, probes, projected service-account volumes, status
//! with conditions and container statuses, nodes with images and nodeInfo), many running
//! pods per node, and pending pods, some of which fit nowhere. Deterministic for a seed,
//! written as it is generated so a 20,000-node dump never sits in memory.
//! `kubestep bench --workload cluster` times explain and replay on it.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::workloads::Rng;

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct DumpSpec {
    pub nodes: usize,
    /// Running pods per node.
    pub pods_per_node: usize,
    /// Pending pods (namespace `batch`); every 100th (starting with the first) asks for
    /// more cpu than any node has.
    pub pending: usize,
    pub seed: u64,
}

/// What was written: the counts and a pod of each verdict to explain.
#[derive(Debug, Clone, Default)]
pub struct DumpStats {
    pub bytes: u64,
    pub nodes: usize,
    pub running: usize,
    pub pending: usize,
    /// `batch/NAME` of a pending pod that fits some node.
    pub fits: String,
    /// `batch/NAME` of a pending pod that fits no node.
    pub fits_nowhere: String,
}

const ZONES: [&str; 3] = ["eu-west-1a", "eu-west-1b", "eu-west-1c"];
/// (instance type, cores, GiB of memory).
const SIZES: [(&str, u64, u64); 5] = [
    ("m5.xlarge", 4, 16),
    ("m5.2xlarge", 8, 32),
    ("m5.4xlarge", 16, 64),
    ("m5.8xlarge", 32, 128),
    ("m5.16xlarge", 64, 256),
];
const TEAMS: [&str; 8] = [
    "payments", "search", "checkout", "identity", "ads", "ml", "data", "platform",
];

pub fn node_name(i: usize) -> String {
    format!(
        "ip-10-{}-{}-{}.eu-west-1.compute.internal",
        (i >> 16) & 255,
        (i >> 8) & 255,
        i & 255
    )
}

fn uid(rng: &mut Rng) -> String {
    let (a, b) = (rng.next(), rng.next());
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// The alphabet of generated name suffixes (the API server's, without vowels).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn suffix(rng: &mut Rng, len: usize) -> String {
    (0..len)
        .map(|_| ALPHABET[rng.below(ALPHABET.len() as u64) as usize] as char)
        .collect()
}

/// A random-looking five-letter suffix that no other `index` has: a ReplicaSet retries a
/// name that is taken, and random suffixes on 150,000 pods collide a few times.
fn unique_suffix(index: u64) -> String {
    const BASE: u64 = ALPHABET.len() as u64;
    const BLOCK: u64 = BASE * BASE * BASE * BASE * BASE;
    // Multiplying by a number prime to the block size permutes the block.
    let mut v = (index % BLOCK) * 1_000_003 % BLOCK + (index / BLOCK) * BLOCK;
    let mut s = String::with_capacity(6);
    while s.len() < 5 || v > 0 {
        s.push(ALPHABET[(v % BASE) as usize] as char);
        v /= BASE;
    }
    s
}

/// The managedFields entries an API server keeps: large trees of field names.
fn managed_fields(manager: &str, subresource: Option<&str>, fields: Value) -> Value {
    let mut v = json!({
        "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields,
        "manager": manager, "operation": "Update", "time": "2026-10-01T08:00:00Z",
    });
    if let Some(s) = subresource {
        v["subresource"] = json!(s);
    }
    v
}

fn node(i: usize, rng: &mut Rng) -> Value {
    let name = node_name(i);
    let (itype, cores, gib) = SIZES[i % SIZES.len()];
    let zone = ZONES[i % ZONES.len()];
    // Allocatable is capacity less what the kubelet reserves, as on real nodes.
    let alloc_cpu = format!("{}m", cores * 1000 - 80 - cores * 10);
    let alloc_mem = format!("{}Ki", gib * 1024 * 1024 - 1_700_000);
    let images: Vec<Value> = (0..25)
        .map(|k| {
            json!({"names": [
                format!("123456789012.dkr.ecr.eu-west-1.amazonaws.com/{}/service-{k}@sha256:{:064x}", TEAMS[k % 8], rng.next()),
                format!("123456789012.dkr.ecr.eu-west-1.amazonaws.com/{}/service-{k}:v1.{}.{}", TEAMS[k % 8], k, rng.below(40)),
            ], "sizeBytes": 20_000_000 + rng.below(900_000_000)})
        })
        .collect();
    let cond = |t: &str, status: &str, reason: &str, message: &str| {
        json!({"lastHeartbeatTime": "2026-11-27T08:00:00Z", "lastTransitionTime": "2026-10-01T08:00:00Z",
            "message": message, "reason": reason, "status": status, "type": t})
    };
    let mut spec = json!({
        "providerID": format!("aws:///{zone}/i-0{:016x}", rng.next()),
        "podCIDR": format!("100.64.{}.0/24", i % 256),
        "podCIDRs": [format!("100.64.{}.0/24", i % 256)],
    });
    // One node in 25 is a tainted GPU node, as dedicated pools are.
    let gpu = i % 25 == 24;
    if gpu {
        spec["taints"] =
            json!([{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"}]);
    }
    let mut labels = json!({
        "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": itype,
        "beta.kubernetes.io/os": "linux", "failure-domain.beta.kubernetes.io/region": "eu-west-1",
        "failure-domain.beta.kubernetes.io/zone": zone, "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": itype, "topology.kubernetes.io/region": "eu-west-1",
        "topology.kubernetes.io/zone": zone, "eks.amazonaws.com/capacityType": "ON_DEMAND",
        "eks.amazonaws.com/nodegroup": format!("ng-{itype}"),
        "k8s.io/cloud-provider-aws": format!("{:032x}", 7u128),
    });
    if gpu {
        labels["nvidia.com/gpu.present"] = json!("true");
    }
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": format!("10.0.{}.{}", (i >> 8) & 255, i & 255),
                "csi.volume.kubernetes.io/nodeid": format!("{{\"ebs.csi.aws.com\":\"i-0{:016x}\"}}", rng.next()),
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "creationTimestamp": "2026-10-01T08:00:00Z", "labels": labels,
            "managedFields": [
                managed_fields("kubelet", None, json!({"f:metadata": {"f:annotations": {".": {}, "f:alpha.kubernetes.io/provided-node-ip": {}, "f:node.alpha.kubernetes.io/ttl": {}, "f:volumes.kubernetes.io/controller-managed-attach-detach": {}}, "f:labels": {".": {}, "f:beta.kubernetes.io/arch": {}, "f:beta.kubernetes.io/instance-type": {}, "f:beta.kubernetes.io/os": {}, "f:kubernetes.io/arch": {}, "f:kubernetes.io/hostname": {}, "f:kubernetes.io/os": {}, "f:node.kubernetes.io/instance-type": {}, "f:topology.kubernetes.io/region": {}, "f:topology.kubernetes.io/zone": {}}}, "f:spec": {"f:providerID": {}}})),
                managed_fields("kube-controller-manager", None, json!({"f:spec": {"f:podCIDR": {}, "f:podCIDRs": {".": {}, "v:\"100.64.0.0/24\"": {}}}})),
                managed_fields("kubelet", Some("status"), json!({"f:status": {"f:allocatable": {"f:cpu": {}, "f:ephemeral-storage": {}, "f:memory": {}}, "f:capacity": {"f:cpu": {}, "f:memory": {}}, "f:conditions": {"k:{\"type\":\"DiskPressure\"}": {"f:lastHeartbeatTime": {}}, "k:{\"type\":\"MemoryPressure\"}": {"f:lastHeartbeatTime": {}}, "k:{\"type\":\"PIDPressure\"}": {"f:lastHeartbeatTime": {}}, "k:{\"type\":\"Ready\"}": {"f:lastHeartbeatTime": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}}}, "f:images": {}, "f:nodeInfo": {"f:bootID": {}, "f:kernelVersion": {}}}})),
            ],
            "name": name, "resourceVersion": format!("{}", 1_000_000 + i),
            "uid": uid(rng),
        },
        "spec": spec,
        "status": {
            "addresses": [
                {"address": format!("10.0.{}.{}", (i >> 8) & 255, i & 255), "type": "InternalIP"},
                {"address": name, "type": "InternalDNS"},
                {"address": name, "type": "Hostname"},
            ],
            "allocatable": {"cpu": alloc_cpu, "ephemeral-storage": "95491281146", "hugepages-1Gi": "0",
                "hugepages-2Mi": "0", "memory": alloc_mem, "pods": "110"},
            "capacity": {"cpu": format!("{cores}"), "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0",
                "hugepages-2Mi": "0", "memory": format!("{}Ki", gib * 1024 * 1024), "pods": "110"},
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": images,
            "nodeInfo": {"architecture": "amd64", "bootID": uid(rng), "containerRuntimeVersion": "containerd://1.7.27",
                "kernelVersion": "6.1.141-155.222.amzn2023.x86_64", "kubeProxyVersion": "v1.35.4-eks-1234567",
                "kubeletVersion": "v1.35.4-eks-1234567", "machineID": format!("{:032x}", rng.next()),
                "operatingSystem": "linux", "osImage": "Amazon Linux 2023.8.20250808", "systemUUID": uid(rng)},
        },
    })
}

/// A container as Deployments write them: env, probes, mounts, security context.
/// A Deployment's own random numbers: its pods have the same labels, image and env, as
/// a ReplicaSet's pods do (FNV-1a of its namespace and name, mixed with the seed).
fn app_rng(seed: u64, namespace: &str, app: &str) -> Rng {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in namespace.bytes().chain([b'/']).chain(app.bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    Rng(h ^ seed)
}

/// The pod-template-hash of a Deployment's ReplicaSet: the first draw of its numbers.
fn template_hash(app: &mut Rng) -> String {
    suffix(app, 10)
}

fn container(name: &str, image: &str, cpu_m: u64, mem_mi: u64, port: u64, rng: &mut Rng) -> Value {
    let env: Vec<Value> = (0..5)
        .map(|k| json!({"name": format!("SETTING_{k}"), "value": format!("value-{}", rng.below(100000))}))
        .chain([json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}})])
        .collect();
    let probe = |path: &str| {
        json!({"failureThreshold": 3, "httpGet": {"path": path, "port": port, "scheme": "HTTP"},
            "initialDelaySeconds": 10, "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1})
    };
    json!({
        "env": env, "image": image, "imagePullPolicy": "IfNotPresent",
        "livenessProbe": probe("/healthz"), "name": name,
        "ports": [{"containerPort": port, "name": "http", "protocol": "TCP"}],
        "readinessProbe": probe("/ready"),
        "resources": {"limits": {"memory": format!("{}Mi", mem_mi * 2)},
            "requests": {"cpu": format!("{cpu_m}m"), "memory": format!("{mem_mi}Mi")}},
        "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": true, "runAsNonRoot": true},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            "name": "kube-api-access", "readOnly": true}],
    })
}

struct PodShape<'a> {
    seed: u64,
    namespace: &'a str,
    name: String,
    app: String,
    node: Option<String>,
    cpu_m: u64,
    mem_mi: u64,
    priority: i32,
}

fn pod(s: &PodShape, rng: &mut Rng) -> Value {
    let mut app = app_rng(s.seed, s.namespace, &s.app);
    let hash = template_hash(&mut app);
    let image = format!(
        "123456789012.dkr.ecr.eu-west-1.amazonaws.com/{}/{}:v1.{}.0",
        s.namespace,
        s.app,
        app.below(40)
    );
    let (rs_uid, digest) = (uid(&mut app), app.next());
    let mut spec = json!({
        "containers": [
            container("app", &image, s.cpu_m, s.mem_mi, 8080, &mut app),
        ],
        "dnsPolicy": "ClusterFirst", "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority",
        "priority": s.priority, "restartPolicy": "Always", "schedulerName": "default-scheduler",
        "securityContext": {"fsGroup": 65534, "runAsUser": 65534},
        "serviceAccount": s.app, "serviceAccountName": s.app, "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300},
        ],
        "topologySpreadConstraints": [{"labelSelector": {"matchLabels": {"app": s.app}},
            "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}],
        "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
            {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}},
        ]}}],
    });
    let cond = |t: &str, status: &str| json!({"lastProbeTime": null, "lastTransitionTime": "2026-11-01T08:00:00Z", "status": status, "type": t});
    let status = match &s.node {
        Some(node) => {
            spec["nodeName"] = json!(node);
            let ip = format!("100.64.{}.{}", rng.below(256), rng.below(256));
            let mut cstatus = |name: &str, image: &str| {
                json!({"containerID": format!("containerd://{:016x}{:016x}", rng.next(), rng.next()),
                    "image": image, "imageID": format!("{image}@sha256:{digest:016x}"),
                    "lastState": {}, "name": name, "ready": true, "restartCount": 0, "started": true,
                    "state": {"running": {"startedAt": "2026-11-01T08:00:05Z"}},
                    "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        "name": "kube-api-access", "readOnly": true, "recursiveReadOnly": "Disabled"}]})
            };
            json!({
                "conditions": [cond("PodReadyToStartContainers", "True"), cond("Initialized", "True"),
                    cond("Ready", "True"), cond("ContainersReady", "True"), cond("PodScheduled", "True")],
                "containerStatuses": [cstatus("app", &image)],
                "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}], "phase": "Running",
                "podIP": ip, "podIPs": [{"ip": ip}], "qosClass": "Burstable",
                "startTime": "2026-11-01T08:00:00Z",
            })
        }
        None => json!({
            "conditions": [{"lastProbeTime": null, "lastTransitionTime": "2026-11-27T08:00:00Z",
                "message": "0/5000 nodes are available: waiting.", "reason": "Unschedulable",
                "status": "False", "type": "PodScheduled"}],
            "phase": "Pending", "qosClass": "Burstable",
        }),
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-01T08:00:00Z",
                "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "creationTimestamp": "2026-11-01T08:00:00Z", "generateName": format!("{}-{hash}-", s.app),
            "labels": {"app": s.app, "app.kubernetes.io/name": s.app, "pod-template-hash": hash,
                "team": s.namespace, "version": "v1"},
            "managedFields": [
                managed_fields("kube-controller-manager", None, json!({"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}}, "f:ownerReferences": {".": {}, "k:{\"uid\":\"0\"}": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:env": {}, "f:image": {}, "f:livenessProbe": {}, "f:ports": {}, "f:readinessProbe": {}, "f:resources": {}}}, "f:dnsPolicy": {}, "f:volumes": {}}})),
                managed_fields("kubelet", Some("status"), json!({"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}}}, "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:startTime": {}}})),
            ],
            "name": s.name, "namespace": s.namespace,
            "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": true, "controller": true,
                "kind": "ReplicaSet", "name": format!("{}-{hash}", s.app), "uid": rs_uid}],
            "resourceVersion": format!("{}", 2_000_000 + rng.below(10_000_000)), "uid": uid(rng),
        },
        "spec": spec, "status": status,
    })
}

/// Writes `item` inside the List, one compact item a line: the API server's form,
/// about the size per object the production dump had (4 kB a pod).
fn write_item(w: &mut impl Write, item: &Value, first: bool, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    serde_json::to_writer(&mut *buf, item).map_err(io::Error::other)?;
    w.write_all(if first { b"\n        " } else { b",\n        " })?;
    w.write_all(buf)
}

/// Writes the dump. Running pods fill about 60% of each node's cpu and memory.
pub fn write_dump(w: &mut impl Write, spec: &DumpSpec) -> io::Result<DumpStats> {
    let mut rng = Rng(spec.seed);
    let mut stats = DumpStats::default();
    let mut buf = Vec::with_capacity(16 << 10);
    w.write_all(b"{\n    \"apiVersion\": \"v1\",\n    \"items\": [")?;
    let mut first = true;
    for i in 0..spec.nodes {
        write_item(w, &node(i, &mut rng), first, &mut buf)?;
        first = false;
        stats.nodes += 1;
    }
    for i in 0..spec.nodes {
        let (_, cores, gib) = SIZES[i % SIZES.len()];
        let per = spec.pods_per_node.max(1) as u64;
        for k in 0..spec.pods_per_node {
            let team = TEAMS[(i + k) % TEAMS.len()];
            let app = format!("{team}-svc-{}", (i * 7 + k) % 40);
            // Vary each pod around its share of 60% of the node.
            let cpu_m = (cores * 600 / per) * (70 + rng.below(60)) / 100;
            let mem_mi = (gib * 1024 * 6 / 10 / per) * (70 + rng.below(60)) / 100;
            let hash = template_hash(&mut app_rng(spec.seed, team, &app));
            let index = (i * spec.pods_per_node + k) as u64;
            let name = format!("{app}-{hash}-{}", unique_suffix(index));
            let shape = PodShape {
                seed: spec.seed,
                namespace: team,
                name,
                app,
                node: Some(node_name(i)),
                cpu_m: cpu_m.max(10),
                mem_mi: mem_mi.max(16),
                priority: 0,
            };
            write_item(w, &pod(&shape, &mut rng), first, &mut buf)?;
            stats.running += 1;
        }
    }
    for j in 0..spec.pending {
        let huge = j % 100 == 0;
        let name = if huge {
            format!("huge-{j:05}")
        } else {
            format!("job-{j:05}")
        };
        let shape = PodShape {
            seed: spec.seed,
            namespace: "batch",
            name: name.clone(),
            app: "batch-job".into(),
            node: None,
            // 70 cores is more than the largest node has free.
            cpu_m: if huge {
                70_000
            } else {
                500 + 100 * rng.below(15)
            },
            mem_mi: 512 + 256 * rng.below(8),
            priority: 0,
        };
        write_item(w, &pod(&shape, &mut rng), first, &mut buf)?;
        first = false;
        stats.pending += 1;
        if huge && stats.fits_nowhere.is_empty() {
            stats.fits_nowhere = format!("batch/{name}");
        } else if !huge && stats.fits.is_empty() {
            stats.fits = format!("batch/{name}");
        }
    }
    w.write_all(b"\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n")?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_dump_is_a_kubectl_list_of_full_objects_and_deterministic() {
        let spec = DumpSpec {
            nodes: 3,
            pods_per_node: 2,
            pending: 2,
            seed: 1,
        };
        let mut a = Vec::new();
        let stats = write_dump(&mut a, &spec).unwrap();
        let mut b = Vec::new();
        write_dump(&mut b, &spec).unwrap();
        assert_eq!(a, b);
        let v: Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(v["kind"], "List");
        let items = v["items"].as_array().unwrap();
        assert_eq!(items.len(), 3 + 6 + 2);
        assert_eq!((stats.nodes, stats.running, stats.pending), (3, 6, 2));
        assert_eq!(stats.fits_nowhere, "batch/huge-00000");
        assert_eq!(stats.fits, "batch/job-00001");
        let running = &items[3];
        assert!(running["metadata"]["managedFields"].is_array());
        assert_eq!(running["spec"]["nodeName"], node_name(0));
        // Full objects: about 4 kB a pod, 8 kB a node, as kubectl prints them.
        let pod_len = serde_json::to_string(running).unwrap().len();
        // A Deployment's pods are alike but for names, identities and (here) requests.
        let (p1, p2) = (&items[9], &items[10]);
        assert_eq!(p1["metadata"]["labels"], p2["metadata"]["labels"]);
        let c = |p: &Value| p["spec"]["containers"][0].clone();
        assert_eq!(
            (c(p1)["image"].clone(), c(p1)["env"].clone()),
            (c(p2)["image"].clone(), c(p2)["env"].clone())
        );
        assert_ne!(p1["metadata"]["uid"], p2["metadata"]["uid"]);
        let node_len = serde_json::to_string(&items[0]).unwrap().len();
        assert!((3_500..5_500).contains(&pod_len), "{pod_len}");
        assert!((7_000..11_000).contains(&node_len), "{node_len}");
    }

    #[test]
    fn pod_name_suffixes_never_repeat() {
        // 150,000 random suffixes of five letters gave a duplicate pod at 5,000 nodes.
        let n = 700_000;
        let all: std::collections::HashSet<String> = (0..n).map(unique_suffix).collect();
        assert_eq!(all.len(), n as usize);
        assert!(all.iter().all(|s| s.len() == 5));
        let block = 27u64.pow(5);
        assert_ne!(unique_suffix(block), unique_suffix(0));
        assert_eq!(unique_suffix(block).len(), 6);
    }
}
