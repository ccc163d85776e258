//! The DRA recording: a small GPU cluster whose GPUs are published by a DRA driver
//! (`gpu.example.com`) as ResourceSlices, claimed by pods through templates and by name.

use serde_json::{Value, json};

use crate::k8s::*;

const DRIVER: &str = "gpu.example.com";

/// The driver's ResourceSlice for `node`: one pool per node, GPUs `gpu-<i>` on the given
/// NUMA nodes.
fn slice(node: &str, model: &str, numa: &[i64]) -> Value {
    let devices: Vec<Value> = numa
        .iter()
        .enumerate()
        .map(|(i, n)| {
            json!({"name": format!("gpu-{i}"),
                "attributes": {"model": {"string": model}, "numa": {"int": n},
                    "driverVersion": {"version": "570.86.15"}},
                "capacity": {"memory": {"value": "24Gi"}}})
        })
        .collect();
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": format!("{node}-{DRIVER}")},
        "spec": {"driver": DRIVER, "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices}})
}

fn class(name: &str, expr: &str) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expr}}]}})
}

/// `spec.devices` of a claim: `count` GPUs of `class`, on one NUMA node if `same_numa`.
fn devices(class: &str, count: u32, same_numa: bool) -> Value {
    let mut d = json!({"requests": [{"name": "gpu",
        "exactly": {"deviceClassName": class, "count": count}}]});
    if same_numa {
        d["constraints"] = json!([{"matchAttribute": format!("{DRIVER}/numa")}]);
    }
    d
}

fn template(ns: &str, name: &str, devices: Value) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": {"devices": devices}}})
}

fn claim(ns: &str, name: &str, devices: Value) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"devices": devices}})
}

/// The pod's one claim `gpu`: from a template, or a claim by name.
fn with_claim(mut pod: Value, template: Option<&str>, claim: Option<&str>) -> Value {
    let mut c = json!({"name": "gpu"});
    if let Some(t) = template {
        c["resourceClaimTemplateName"] = json!(t);
    }
    if let Some(n) = claim {
        c["resourceClaimName"] = json!(n);
    }
    pod["spec"]["resourceClaims"] = json!([c]);
    pod["spec"]["containers"][0]["resources"]["claims"] = json!([{"name": "gpu"}]);
    pod
}

pub fn dra_gpus() -> Rec {
    let mut r = Rec::new(
        "Dynamic resource allocation: GPUs published by the DRA driver gpu.example.com as ResourceSlices, claimed through templates and a shared claim; a NUMA-pair job and a late job wait until a 4-GPU node joins at 60s, and a pod asking for an H100 matches no device",
        11,
    );
    r.add(0, namespace("ml", "ml-platform"));
    let nodes = [
        node("10.0.1.40", "us-east-1a", &G5_2XLARGE, "gpu-dra"),
        node("10.0.2.41", "us-east-1b", &G5_2XLARGE, "gpu-dra"),
        node("10.0.1.12", "us-east-1a", &M6I_2XLARGE, "general"),
    ];
    let mut names = Vec::new();
    for n in &nodes {
        let n = r.add(0, n.clone());
        let ds = daemon_pods(r.rng(), &name_of(&n));
        r.add_all(0, ds);
        names.push(name_of(&n));
    }
    r.add(0, class(DRIVER, &format!("device.driver == \"{DRIVER}\"")));
    r.add(
        0,
        class(
            &format!("h100.{DRIVER}"),
            &format!(
                "device.driver == \"{DRIVER}\" && device.attributes[\"{DRIVER}\"].model == \"h100\""
            ),
        ),
    );
    r.add(0, slice(&names[0], "a10g", &[0, 1]));
    r.add(0, slice(&names[1], "a10g", &[0, 1]));
    r.add(0, template("ml", "single-gpu", devices(DRIVER, 1, false)));
    r.add(0, template("ml", "numa-pair", devices(DRIVER, 2, true)));
    r.add(
        0,
        template("ml", "h100", devices(&format!("h100.{DRIVER}"), 1, false)),
    );
    r.add(
        0,
        claim("ml", "shared-inference-gpu", devices(DRIVER, 1, false)),
    );

    let rng = r.rng();
    let single = |b: PodB| with_claim(b.build(), Some("single-gpu"), None);
    let pods = vec![
        single(PodB::named("ml", "finetune-0", "finetune").requests("2", "8Gi")),
        with_claim(
            PodB::deploy(rng, "ml", "triton-inference")
                .requests("1", "4Gi")
                .build(),
            None,
            Some("shared-inference-gpu"),
        ),
        with_claim(
            PodB::deploy(rng, "ml", "triton-inference")
                .requests("1", "4Gi")
                .build(),
            None,
            Some("shared-inference-gpu"),
        ),
        single(PodB::named("ml", "finetune-1", "finetune").requests("2", "8Gi")),
        with_claim(
            PodB::named("ml", "allreduce-pair-0", "allreduce")
                .requests("2", "8Gi")
                .build(),
            Some("numa-pair"),
            None,
        ),
        with_claim(
            PodB::named("ml", "h100-benchmark", "benchmark")
                .requests("1", "2Gi")
                .build(),
            Some("h100"),
            None,
        ),
        single(PodB::named("ml", "embeddings-0", "embeddings").requests("1", "4Gi")),
    ];
    r.add_all(0, pods);
    r.add(
        secs(20),
        single(PodB::named("ml", "finetune-2", "finetune").requests("2", "8Gi")),
    );
    // A 4-GPU node joins; its driver publishes the slice a moment later.
    let big = r.add(
        secs(60),
        node("10.0.2.77", "us-east-1b", &G5_12XLARGE, "gpu-dra"),
    );
    let big = name_of(&big);
    let ds = daemon_pods(r.rng(), &big);
    r.add_all(secs(60), ds);
    r.add(secs(62), slice(&big, "a10g", &[0, 0, 1, 1]));
    r
}
