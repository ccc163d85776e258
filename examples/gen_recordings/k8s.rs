//! Builders for the objects and the recording file: realistic names, labels and sizes,
//! generated deterministically.

use std::io::Write;
use std::path::Path;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

/// splitmix64: deterministic names and sizes.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
    /// Kubernetes' generated-name alphabet (no vowels, no look-alikes).
    pub fn suffix(&mut self, n: usize) -> String {
        const A: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        (0..n).map(|_| *self.pick(A) as char).collect()
    }
    pub fn hex(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from_digit(self.below(16) as u32, 16).unwrap_or('0'))
            .collect()
    }
}

pub const START: &str = "2026-03-02T09:00:00Z";

pub fn start() -> Timestamp {
    START.parse().unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A recording being written: header fields and events at millisecond offsets.
pub struct Rec {
    pub description: String,
    pub config: Option<Value>,
    events: Vec<(i64, &'static str, Value)>,
    rng: Rng,
    rv: u64,
}

impl Rec {
    pub fn new(description: &str, seed: u64) -> Rec {
        Rec {
            description: description.into(),
            config: None,
            events: Vec::new(),
            rng: Rng(seed),
            rv: 1000,
        }
    }

    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// Gives the object a uid, resourceVersion and creationTimestamp, as the API server
    /// would, unless it has them.
    fn stamp(&mut self, ms: i64, mut obj: Value) -> Value {
        self.rv += 1;
        let uid = format!(
            "{}-{}-{}-{}-{}",
            self.rng.hex(8),
            self.rng.hex(4),
            self.rng.hex(4),
            self.rng.hex(4),
            self.rng.hex(12)
        );
        let created = at(ms).to_string();
        let m = &mut obj["metadata"];
        if m.get("uid").is_none() {
            m["uid"] = json!(uid);
        }
        if m.get("creationTimestamp").is_none() {
            m["creationTimestamp"] = json!(created);
        }
        m["resourceVersion"] = json!(self.rv.to_string());
        obj
    }

    /// ADDED at `ms` after the start; returns the object as stamped (uid and all).
    pub fn add(&mut self, ms: i64, obj: Value) -> Value {
        let obj = self.stamp(ms, obj);
        self.events.push((ms, "ADDED", obj.clone()));
        obj
    }

    pub fn add_all(&mut self, ms: i64, objs: impl IntoIterator<Item = Value>) {
        for o in objs {
            self.add(ms, o);
        }
    }

    pub fn modify(&mut self, ms: i64, mut obj: Value) -> Value {
        self.rv += 1;
        obj["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        self.events.push((ms, "MODIFIED", obj.clone()));
        obj
    }

    pub fn delete(&mut self, ms: i64, obj: &Value) {
        self.events.push((ms, "DELETED", obj.clone()));
    }

    /// The real scheduler binds `pod` to `node` at `ms`.
    pub fn bind(&mut self, ms: i64, pod: &Value, node: &str) -> Value {
        let mut p = pod.clone();
        p["spec"]["nodeName"] = json!(node);
        p["status"] =
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]});
        self.modify(ms, p)
    }

    /// The recording's text (header and events in time order), as written to the file.
    pub fn text(mut self, name: &str) -> String {
        self.events.sort_by_key(|e| e.0);
        let mut header = json!({
            "kubestep": "recording",
            "version": 1,
            "started": START,
            "source": {"cluster": format!("{name}.us-east-1.eksctl.io"), "kubernetesVersion": "v1.35.4"},
            "description": self.description,
        });
        if let Some(c) = &self.config {
            header["schedulerConfiguration"] = c.clone();
        }
        let mut text = String::new();
        text.push_str(&header.to_string());
        text.push('\n');
        for (ms, kind, obj) in &self.events {
            let line = json!({"at": at(*ms).to_string(), "type": kind, "object": obj});
            text.push_str(&line.to_string());
            text.push('\n');
        }
        text
    }

    /// Writes the recording to `file`, gzipped when `gz`.
    pub fn write(self, file: &Path, name: &str, gz: bool) -> std::io::Result<()> {
        let events = self.events.len();
        let text = self.text(name);
        let f = std::fs::File::create(file)?;
        if gz {
            let mut w = flate2::GzBuilder::new().write(f, flate2::Compression::best());
            w.write_all(text.as_bytes())?;
            w.finish()?.flush()?;
        } else {
            let mut w = std::io::BufWriter::new(f);
            w.write_all(text.as_bytes())?;
            w.flush()?;
        }
        println!(
            "{}: {} events, {} bytes",
            file.display(),
            events,
            std::fs::metadata(file)?.len()
        );
        Ok(())
    }
}

pub fn at(ms: i64) -> Timestamp {
    start()
        .checked_add(SignedDuration::from_millis(ms))
        .unwrap_or(Timestamp::MAX)
}

pub fn secs(s: i64) -> i64 {
    s * 1000
}

pub fn namespace(name: &str, team: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, "team": team}}})
}

/// An EC2 instance type: cpu, memory (GiB as allocatable), pods, GPUs.
pub struct Instance {
    pub kind: &'static str,
    pub cpu: &'static str,
    pub memory: &'static str,
    pub pods: u32,
    pub gpus: u32,
}

pub const M6I_LARGE: Instance = Instance {
    kind: "m6i.large",
    cpu: "1930m",
    memory: "7134Mi",
    pods: 29,
    gpus: 0,
};
pub const M6I_XLARGE: Instance = Instance {
    kind: "m6i.xlarge",
    cpu: "3920m",
    memory: "14705Mi",
    pods: 58,
    gpus: 0,
};
pub const M6I_2XLARGE: Instance = Instance {
    kind: "m6i.2xlarge",
    cpu: "7910m",
    memory: "29839Mi",
    pods: 58,
    gpus: 0,
};
pub const R6I_2XLARGE: Instance = Instance {
    kind: "r6i.2xlarge",
    cpu: "7910m",
    memory: "60559Mi",
    pods: 58,
    gpus: 0,
};
pub const C6I_4XLARGE: Instance = Instance {
    kind: "c6i.4xlarge",
    cpu: "15890m",
    memory: "28970Mi",
    pods: 234,
    gpus: 0,
};
pub const G5_2XLARGE: Instance = Instance {
    kind: "g5.2xlarge",
    cpu: "7910m",
    memory: "29839Mi",
    pods: 58,
    gpus: 1,
};
pub const G5_12XLARGE: Instance = Instance {
    kind: "g5.12xlarge",
    cpu: "47810m",
    memory: "178058Mi",
    pods: 234,
    gpus: 4,
};

/// A node named as EKS names them, in a zone of us-east-1, of a node group.
pub fn node(ip: &str, zone: &str, it: &Instance, nodegroup: &str) -> Value {
    let name = format!("ip-{}.ec2.internal", ip.replace('.', "-"));
    let mut alloc = json!({"cpu": it.cpu, "memory": it.memory, "pods": it.pods.to_string(),
                           "ephemeral-storage": "95551679124"});
    if it.gpus > 0 {
        alloc["nvidia.com/gpu"] = json!(it.gpus.to_string());
    }
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "node.kubernetes.io/instance-type": it.kind,
            "topology.kubernetes.io/region": "us-east-1",
            "topology.kubernetes.io/zone": zone,
            "topology.ebs.csi.aws.com/zone": zone,
            "eks.amazonaws.com/nodegroup": nodegroup,
            "eks.amazonaws.com/capacityType": "ON_DEMAND"}},
        "spec": {"providerID": format!("aws:///{zone}/i-0{}", ip.replace('.', ""))},
        "status": {"capacity": alloc.clone(), "allocatable": alloc,
                   "conditions": [{"type": "Ready", "status": "True"}],
                   "nodeInfo": {"kubeletVersion": "v1.35.4-eks-3c7d3a2", "containerRuntimeVersion": "containerd://2.1.4"}}
    })
}

pub fn name_of(obj: &Value) -> String {
    obj["metadata"]["name"].as_str().unwrap_or("").to_string()
}

pub fn with_label(mut obj: Value, k: &str, v: &str) -> Value {
    obj["metadata"]["labels"][k] = json!(v);
    obj
}

pub fn with_taint(mut node: Value, key: &str, value: &str, effect: &str) -> Value {
    let t = json!({"key": key, "value": value, "effect": effect});
    match node["spec"]["taints"].as_array_mut() {
        Some(a) => a.push(t),
        None => node["spec"]["taints"] = json!([t]),
    }
    node
}

/// A pod being built: a Deployment-like name, one container, requests.
pub struct PodB {
    v: Value,
}

impl PodB {
    /// `owner` is the Deployment/Job name; the pod gets `owner-<hash>-<5>` like a
    /// ReplicaSet's pod.
    pub fn deploy(rng: &mut Rng, ns: &str, owner: &str) -> PodB {
        // One ReplicaSet per Deployment: the hash follows from the names.
        let seed = format!("{ns}/{owner}")
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            });
        let hash = Rng(seed).suffix(10);
        let name = format!("{owner}-{hash}-{}", rng.suffix(5));
        PodB::named(ns, &name, owner).label("pod-template-hash", &hash)
    }

    pub fn named(ns: &str, name: &str, app: &str) -> PodB {
        PodB {
            v: json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": ns, "labels": {"app.kubernetes.io/name": app}},
                "spec": {
                    "schedulerName": "default-scheduler",
                    "containers": [{"name": app, "image": format!("123456789012.dkr.ecr.us-east-1.amazonaws.com/{ns}/{app}:1.4.2"),
                                    "resources": {"requests": {}}}],
                    "tolerations": [
                        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
                },
                "status": {"phase": "Pending"}
            }),
        }
    }

    pub fn label(mut self, k: &str, v: &str) -> PodB {
        self.v["metadata"]["labels"][k] = json!(v);
        self
    }

    pub fn requests(mut self, cpu: &str, memory: &str) -> PodB {
        self.v["spec"]["containers"][0]["resources"]["requests"] =
            json!({"cpu": cpu, "memory": memory});
        self
    }

    pub fn gpus(mut self, n: u32) -> PodB {
        let r = &mut self.v["spec"]["containers"][0]["resources"];
        r["requests"]["nvidia.com/gpu"] = json!(n.to_string());
        r["limits"] = json!({"nvidia.com/gpu": n.to_string()});
        self
    }

    pub fn priority(mut self, class: &str, value: i64) -> PodB {
        self.v["spec"]["priorityClassName"] = json!(class);
        self.v["spec"]["priority"] = json!(value);
        self
    }

    pub fn never_preempt(mut self) -> PodB {
        self.v["spec"]["preemptionPolicy"] = json!("Never");
        self
    }

    pub fn host_port(mut self, port: u32) -> PodB {
        self.v["spec"]["containers"][0]["ports"] =
            json!([{"containerPort": port, "hostPort": port, "protocol": "TCP"}]);
        self
    }

    pub fn node_selector(mut self, k: &str, v: &str) -> PodB {
        self.v["spec"]["nodeSelector"][k] = json!(v);
        self
    }

    pub fn tolerate(mut self, key: &str, effect: &str) -> PodB {
        if let Some(t) = self.v["spec"]["tolerations"].as_array_mut() {
            t.push(json!({"key": key, "operator": "Exists", "effect": effect}));
        }
        self
    }

    pub fn zones(mut self, zones: &[&str]) -> PodB {
        self.v["spec"]["affinity"]["nodeAffinity"] = json!({"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": zones}]}]}});
        self
    }

    pub fn anti_affinity_self(mut self, app: &str) -> PodB {
        self.v["spec"]["affinity"]["podAntiAffinity"] = json!({"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app.kubernetes.io/name": app}}, "topologyKey": "kubernetes.io/hostname"}]});
        self
    }

    pub fn spread(mut self, app: &str, key: &str, max_skew: u32, when: &str) -> PodB {
        let c = json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
                       "labelSelector": {"matchLabels": {"app.kubernetes.io/name": app}}});
        match self.v["spec"]["topologySpreadConstraints"].as_array_mut() {
            Some(a) => a.push(c),
            None => self.v["spec"]["topologySpreadConstraints"] = json!([c]),
        }
        self
    }

    pub fn claim(mut self, claim: &str) -> PodB {
        self.v["spec"]["volumes"] =
            json!([{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]);
        self.v["spec"]["containers"][0]["volumeMounts"] =
            json!([{"name": "data", "mountPath": "/var/lib/data"}]);
        self
    }

    pub fn image(mut self, image: &str) -> PodB {
        self.v["spec"]["containers"][0]["image"] = json!(image);
        self
    }

    /// Running on `node` (already bound when the recording starts).
    pub fn on(mut self, node: &str) -> PodB {
        self.v["spec"]["nodeName"] = json!(node);
        self.v["status"] = json!({"phase": "Running"});
        self
    }

    pub fn build(self) -> Value {
        self.v
    }
}

pub fn priority_class(name: &str, value: i64, default: bool, description: &str) -> Value {
    json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
           "metadata": {"name": name}, "value": value, "globalDefault": default,
           "description": description})
}

pub fn pod_group(ns: &str, name: &str, min_member: u32, timeout: Option<u32>) -> Value {
    let mut spec = json!({"minMember": min_member});
    if let Some(t) = timeout {
        spec["scheduleTimeoutSeconds"] = json!(t);
    }
    json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
           "metadata": {"name": name, "namespace": ns}, "spec": spec})
}

/// kube-proxy and the VPC CNI on every node, as EKS runs them.
pub fn daemon_pods(rng: &mut Rng, node: &str) -> Vec<Value> {
    let mk = |rng: &mut Rng, app: &str, cpu: &str, mem: &str| {
        PodB::named("kube-system", &format!("{app}-{}", rng.suffix(5)), app)
            .requests(cpu, mem)
            .priority("system-node-critical", 2_000_001_000)
            .image(&format!(
                "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/{app}:v1.35.4-eksbuild.2"
            ))
            .on(node)
            .build()
    };
    vec![
        mk(rng, "kube-proxy", "100m", "64Mi"),
        mk(rng, "aws-node", "25m", "128Mi"),
    ]
}

pub fn system_priority_classes() -> Vec<Value> {
    vec![
        priority_class(
            "system-node-critical",
            2_000_001_000,
            false,
            "Used for system critical pods that must not be moved from their current node.",
        ),
        priority_class(
            "system-cluster-critical",
            2_000_000_000,
            false,
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
        ),
    ]
}
