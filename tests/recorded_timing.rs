//! What the real scheduler held between the end of a pod's cycle and the moment its writes
//! reached the recording. kube-scheduler assumes the pod on its node and keeps the devices
//! it chose for the pod's claims in flight at Reserve; the claim's allocation is written
//! later, at PreBind. Pods created back to back are decided in between, so a replay that
//! waited for the recorded writes would offer them devices already taken.

use std::process::Command;

use serde_json::Value;

const HEADER: &str = r#"{"kubestep":"recording","version":1,"started":"2026-03-02T09:00:00Z"}"#;

fn at(ms: u32) -> String {
    format!("2026-03-02T09:00:{:02}.{:03}Z", ms / 1000, ms % 1000)
}

fn event(ms: u32, t: &str, object: Value) -> String {
    serde_json::json!({"at": at(ms), "type": t, "object": object}).to_string()
}

fn node(name: &str, cpu: &str) -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}})
}

fn slice(node: &str) -> Value {
    serde_json::json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": format!("{node}-gpus")},
        "spec": {"driver": "gpu.example.com", "nodeName": node,
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "gpu-0"}]}})
}

fn claim(name: &str, allocated_on: Option<(&str, &str)>) -> Value {
    let mut c = serde_json::json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ml", "uid": format!("uid-claim-{name}")},
        "spec": {"devices": {"requests": [{"name": "gpu",
            "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}]}}});
    if let Some((pool, pod)) = allocated_on {
        c["status"] = serde_json::json!({
            "allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": pool, "device": "gpu-0"}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [pool]}]}]}},
            "reservedFor": [{"resource": "pods", "name": pod, "uid": format!("uid-{pod}")}]});
    }
    c
}

fn pod(name: &str, node: Option<&str>) -> Value {
    let mut p = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "uid": format!("uid-{name}")},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}, "claims": [{"name": "gpu"}]}}]}});
    if let Some(n) = node {
        p["spec"]["nodeName"] = n.into();
    }
    p
}

/// Two nodes with one GPU each (`big` has more cpu, so it scores higher); two pods, each
/// with its own claim, created 10 ms apart; the real scheduler put the first on `big` and
/// the second on `small`, and its writes arrive hundreds of milliseconds later.
fn recording() -> String {
    let class = serde_json::json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}});
    let lines = [
        HEADER.to_string(),
        event(0, "ADDED", class),
        event(0, "ADDED", node("big", "16")),
        event(0, "ADDED", node("small", "4")),
        event(0, "ADDED", slice("big")),
        event(0, "ADDED", slice("small")),
        event(0, "ADDED", claim("p1", None)),
        event(0, "ADDED", claim("p2", None)),
        event(10_000, "ADDED", pod("p1", None)),
        event(10_010, "ADDED", pod("p2", None)),
        event(10_300, "MODIFIED", claim("p1", Some(("big", "p1")))),
        event(10_400, "MODIFIED", pod("p1", Some("big"))),
        event(10_500, "MODIFIED", claim("p2", Some(("small", "p2")))),
        event(10_600, "MODIFIED", pod("p2", Some("small"))),
    ];
    lines.join("\n") + "\n"
}

#[test]
fn devices_the_real_scheduler_took_are_held_until_the_recording_shows_them() {
    let dir = std::env::temp_dir().join(format!("kubestep-timing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("rec.jsonl");
    std::fs::write(&file, recording()).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args(["replay", "--headless", "--no-timings"])
        .arg(&file)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let attempt = |pod: &str| {
        lines
            .iter()
            .find(|l| l["type"] == "attempt" && l["pod"] == pod)
            .unwrap_or_else(|| panic!("an attempt of {pod}"))
            .clone()
    };
    assert_eq!(attempt("ml/p1")["node"], "big");
    // p1's GPU on big is in flight when p2 is decided: only small can serve p2.
    let p2 = attempt("ml/p2");
    assert_eq!(p2["node"], "small", "{p2}");
    assert_eq!(p2["feasibleNodes"], 1, "{p2}");
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["divergences"], serde_json::json!([]), "{summary}");
    for p in summary["pods"].as_array().unwrap() {
        assert_eq!(p["status"], "Bound", "{p}");
    }
}
