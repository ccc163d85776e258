use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::framework::listers::Listers;
use crate::framework::{Code, RenderState, Snapshot};
use crate::plugins::testing::{Env, node, pod};

const DRIVER: &str = "gpu.example.com";

fn add(l: &mut Listers, kind: &str, v: Value) {
    let name = v["metadata"]["name"].as_str().unwrap().to_string();
    let key = match v["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{ns}/{name}"),
        None => name,
    };
    l.custom
        .entry(kind.to_string())
        .or_default()
        .insert(key, Arc::new(v));
}

fn class(l: &mut Listers, name: &str, expr: &str) {
    add(
        l,
        "DeviceClass",
        json!({"metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expr}}]}}),
    );
}

/// A slice on `node` with devices `gpu-<i>`, model a100 unless listed in `h100`.
fn slice(l: &mut Listers, node: &str, n: usize, numa: &[i64]) {
    let devices: Vec<Value> = (0..n)
        .map(|i| {
            json!({"name": format!("gpu-{i}"), "attributes": {
            "model": {"string": "a100"}, "numa": {"int": numa.get(i).copied().unwrap_or(0)}},
            "capacity": {"memory": {"value": "40Gi"}}})
        })
        .collect();
    add(
        l,
        "ResourceSlice",
        json!({"metadata": {"name": format!("{node}-slice")}, "spec": {
        "driver": DRIVER, "nodeName": node,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": devices}}),
    );
}

fn claim(l: &mut Listers, name: &str, devices: Value) {
    add(
        l,
        "ResourceClaim",
        json!({"metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {"devices": devices}}),
    );
}

fn gpu_request(count: i64) -> Value {
    json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": count}}]})
}

fn gpu_pod(name: &str, claim: &str) -> Arc<PodInfo> {
    pod(
        json!({"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": {"containers": [],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}]}}),
    )
}

fn cluster() -> Listers {
    let mut l = Listers::default();
    class(&mut l, "gpu", &format!("device.driver == \"{DRIVER}\""));
    slice(&mut l, "node-a", 2, &[0, 1]);
    l
}

fn nodes() -> Vec<NodeInfo> {
    ["node-a", "node-b"]
        .iter()
        .map(|n| node(json!({"metadata": {"name": n}})))
        .collect()
}

/// PreFilter, then Filter on each node: the statuses' messages by node.
fn run(pl: &DynamicResources, env: &Env, p: &PodInfo) -> (CycleState, Status, Vec<String>) {
    let h = env.handle();
    let mut cs = CycleState::new();
    let (_, s) = pl.pre_filter(&h, &mut cs, p);
    let msgs = if s.is_success() {
        nodes()
            .iter()
            .map(|n| pl.filter(&h, &cs, p, n).message())
            .collect()
    } else {
        Vec::new()
    };
    (cs, s, msgs)
}

#[test]
fn no_claims_skip_and_post_filter_message() {
    let env = Env::new(Snapshot::default(), Listers::default());
    let h = env.handle();
    let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
    let mut cs = CycleState::new();
    let pl = DynamicResources::default();
    // Without PreFilter having run, PostFilter fails with upstream's "not found".
    assert_eq!(
        pl.post_filter(&h, &mut cs, &p, &NodeToStatus::default())
            .1
            .message(),
        "not found"
    );
    assert!(pl.pre_filter(&h, &mut cs, &p).1.is_skip());
    let (_, s) = pl.post_filter(&h, &mut cs, &p, &NodeToStatus::default());
    assert_eq!(
        (s.code(), s.message().as_str()),
        (Code::Unschedulable, "no new claims to deallocate")
    );
}

#[test]
fn missing_claims_wait_in_pre_enqueue() {
    let env = Env::new(Snapshot::default(), cluster());
    let pl = DynamicResources::default();
    let s = pl.pre_enqueue(&env.handle(), &gpu_pod("p", "nope"));
    assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
    assert_eq!(
        s.message(),
        r#"could not find ResourceClaim "default/nope""#
    );
    let t = pod(
        json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}}),
    );
    assert_eq!(
        pl.pre_enqueue(&env.handle(), &t).message(),
        r#"pod "default/p": ResourceClaim not created yet"#
    );
}

#[test]
fn template_claims_are_made_by_kubestep() {
    let mut l = cluster();
    add(
        &mut l,
        "ResourceClaimTemplate",
        json!({"metadata": {"name": "t", "namespace": "default"},
        "spec": {"spec": {"devices": gpu_request(1)}}}),
    );
    let env = Env::new(Snapshot::default(), l);
    let t = pod(
        json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}}),
    );
    let pl = DynamicResources::default();
    assert!(pl.pre_enqueue(&env.handle(), &t).is_success());
    let (cs, s, msgs) = run(&pl, &env, &t);
    assert!(s.is_success());
    assert_eq!(msgs, ["", "cannot allocate all claims"]);
    let tree = format!("{:?}", state(&cs).unwrap().render());
    assert!(
        tree.contains("default/p-gpu (made by kubestep from template t"),
        "{tree}"
    );
    assert!(
        tree.contains("no ResourceSlice publishes devices for this node"),
        "{tree}"
    );
}

#[test]
fn allocates_and_reserve_keeps_devices_from_the_next_pod() {
    let mut l = cluster();
    claim(&mut l, "c1", gpu_request(2));
    claim(&mut l, "c2", gpu_request(1));
    let p1 = gpu_pod("p1", "c1");
    let p2 = gpu_pod("p2", "c2");
    l.pods.insert(p1.key.clone(), p1.clone());
    let env = Env::new(Snapshot::default(), l);
    let pl = DynamicResources::default();
    let (mut cs, _, msgs) = run(&pl, &env, &p1);
    assert_eq!(msgs, ["", "cannot allocate all claims"]);
    assert!(
        pl.reserve(&env.handle(), &mut cs, &p1, "node-a")
            .is_success()
    );
    let tree = format!("{:?}", state(&cs).unwrap().render());
    assert!(
        tree.contains("gpu=gpu.example.com/node-a/gpu-0, gpu=gpu.example.com/node-a/gpu-1"),
        "{tree}"
    );
    let (cs2, _, msgs) = run(&pl, &env, &p2);
    assert_eq!(
        msgs,
        ["cannot allocate all claims", "cannot allocate all claims"]
    );
    assert_eq!(
        state(&cs2).unwrap().shortfall("node-a").unwrap().reason,
        "all 2 matching device(s) are allocated to other claims: gpu-0 (default/c1), gpu-1 (default/c1)"
    );
    assert_eq!(
        pl.rejection_note(&cs2, "node-b").as_deref(),
        Some("claim default/c2, request gpu: no ResourceSlice publishes devices for this node")
    );
    // Unreserve gives them back.
    pl.unreserve(&env.handle(), &mut cs, &p1, "node-a");
    assert_eq!(run(&pl, &env, &p2).2, ["", "cannot allocate all claims"]);
}

#[test]
fn allocated_claims_pin_and_count_too_high() {
    let mut l = cluster();
    claim(&mut l, "big", gpu_request(3));
    add(
        &mut l,
        "ResourceClaim",
        json!({"metadata": {"name": "done", "namespace": "default"},
        "spec": {"devices": gpu_request(1)}, "status": {"allocation": {
            "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "node-a", "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]}}}}),
    );
    let env = Env::new(Snapshot::default(), l);
    let pl = DynamicResources::default();
    let (_, _, msgs) = run(&pl, &env, &gpu_pod("p", "done"));
    assert_eq!(msgs, ["", "resourceclaim not available on the node"]);
    let (cs, _, _) = run(&pl, &env, &gpu_pod("p", "done"));
    assert_eq!(
        pl.rejection_note(&cs, "node-b").unwrap(),
        "claim default/done is allocated (gpu=gpu.example.com/node-a/gpu-0) for nodes its allocation selects, not this one"
    );
    let (cs, _, msgs) = run(&pl, &env, &gpu_pod("q", "big"));
    assert_eq!(
        msgs,
        ["cannot allocate all claims", "cannot allocate all claims"]
    );
    assert_eq!(
        state(&cs).unwrap().shortfall("node-a").unwrap().reason,
        "needs 3 device(s), 1 of 2 matching device(s) free; allocated to other claims: gpu-0 (default/done)"
    );
}

#[test]
fn classes_selectors_and_constraints() {
    let mut l = cluster();
    claim(
        &mut l,
        "nc",
        json!({"requests": [{"name": "x", "exactly": {"deviceClassName": "nope"}}]}),
    );
    class(&mut l, "bad", "device.driver ==");
    claim(
        &mut l,
        "bc",
        json!({"requests": [{"name": "x", "exactly": {"deviceClassName": "bad"}}]}),
    );
    claim(
        &mut l,
        "same-numa",
        json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2}}],
        "constraints": [{"matchAttribute": "gpu.example.com/numa"}]}),
    );
    claim(
        &mut l,
        "sel",
        json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu",
        "selectors": [{"cel": {"expression": "device.attributes[\"gpu.example.com\"].numa == 1"}}]}}]}),
    );
    claim(
        &mut l,
        "all",
        json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}]}),
    );
    let env = Env::new(Snapshot::default(), l);
    let pl = DynamicResources::default();
    let (_, s, _) = run(&pl, &env, &gpu_pod("p", "nc"));
    assert_eq!(
        (s.code(), s.message().as_str()),
        (
            Code::UnschedulableAndUnresolvable,
            "request x: device class nope does not exist"
        )
    );
    let (_, _, msgs) = run(&pl, &env, &gpu_pod("p", "bc"));
    assert!(
        msgs[0].starts_with("class bad: selector #0: CEL compile error: "),
        "{msgs:?}"
    );
    let (cs, _, msgs) = run(&pl, &env, &gpu_pod("p", "same-numa"));
    assert_eq!(msgs[0], "cannot allocate all claims");
    assert_eq!(
        pl.rejection_note(&cs, "node-a").unwrap(),
        "claim default/same-numa: each request can be met alone, but no choice of free devices gives all requests the same gpu.example.com/numa (free devices have 0, 1)"
    );
    let (cs, _, msgs) = run(&pl, &env, &gpu_pod("p", "sel"));
    assert_eq!(msgs[0], "");
    assert_eq!(
        state(&cs).unwrap().allocations("node-a").unwrap()[0]
            .devices
            .as_ref()
            .unwrap()
            .results
            .as_ref()
            .unwrap()[0]
            .device,
        "gpu-1"
    );
    let (cs, _, msgs) = run(&pl, &env, &gpu_pod("p", "all"));
    assert_eq!(msgs, ["", "cannot allocate all claims"]);
    assert_eq!(
        allocator::allocated_ids(&state(&cs).unwrap().allocations("node-a").unwrap()[0]).count(),
        2
    );
}

#[test]
fn first_available_scores_earlier_alternatives_higher() {
    let mut l = cluster();
    class(&mut l, "none", "device.driver == \"other\"");
    claim(
        &mut l,
        "fa",
        json!({"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "none"}, {"name": "small", "deviceClassName": "gpu"}]}]}),
    );
    let env = Env::new(Snapshot::default(), l);
    let pl = DynamicResources::default();
    let p = gpu_pod("p", "fa");
    let (cs, _, msgs) = run(&pl, &env, &p);
    assert_eq!(msgs[0], "");
    let (score, _) = pl.score(&env.handle(), &cs, &p, &nodes()[0]);
    assert_eq!(score, FIRST_AVAILABLE_MAX - 1);
    // The batch gives what `score` gives node by node.
    let ns = nodes();
    let refs: Vec<&NodeInfo> = ns.iter().collect();
    let mut out = vec![-1; refs.len()];
    assert!(
        pl.score_nodes(&env.handle(), &cs, &p, &refs, &mut out)
            .is_none()
    );
    let each: Vec<i64> = ns
        .iter()
        .map(|n| pl.score(&env.handle(), &cs, &p, n).0)
        .collect();
    assert_eq!(out, each);
}

#[test]
fn a_pod_without_claims_scores_zero_in_one_read() {
    let env = Env::new(Snapshot::default(), cluster());
    let pl = DynamicResources::default();
    let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
    let ns = nodes();
    let refs: Vec<&NodeInfo> = ns.iter().collect();
    let mut out = vec![-1; refs.len()];
    // Without PreFilter's state: upstream's error, at the first node.
    let failed = pl.score_nodes(&env.handle(), &CycleState::new(), &p, &refs, &mut out);
    assert_eq!(failed.map(|(i, s)| (i, s.code())), Some((0, Code::Error)));
    let (cs, _, _) = run(&pl, &env, &p);
    assert!(
        pl.score_nodes(&env.handle(), &cs, &p, &refs, &mut out)
            .is_none()
    );
    assert_eq!(out, [0, 0]);
}

#[test]
fn in_flight_claims_and_pre_bind_writes() {
    use crate::framework::queued::{OBJECT_WRITES_KEY, ObjectWrites};
    let mut l = cluster();
    claim(&mut l, "c1", gpu_request(1));
    let p1 = gpu_pod("p1", "c1");
    let p2 = gpu_pod("p2", "c1");
    l.pods.insert(p1.key.clone(), p1.clone());
    l.pods.insert(p2.key.clone(), p2.clone());
    let env = Env::new(Snapshot::default(), l);
    let pl = DynamicResources::default();
    let (mut cs, _, _) = run(&pl, &env, &p1);
    assert!(
        pl.reserve(&env.handle(), &mut cs, &p1, "node-a")
            .is_success()
    );
    // While p1's allocation is in flight, p2 (same claim) waits at PreFilter.
    let (_, s, _) = run(&pl, &env, &p2);
    assert_eq!(
        (s.code(), s.message().as_str()),
        (
            Code::UnschedulableAndUnresolvable,
            "resource claim default/c1 is in the process of being allocated"
        )
    );
    // PreBind hands the session the claim with its allocation and reservation.
    assert!(
        pl.pre_bind(&env.handle(), &mut cs, &p1, "node-a")
            .is_success()
    );
    let w = cs.read::<ObjectWrites>(OBJECT_WRITES_KEY).unwrap();
    assert_eq!(w.pending.len(), 1);
    assert_eq!(
        w.pending[0].what,
        "add allocation and reservation to claim default/c1"
    );
    let o = &w.pending[0].object;
    assert_eq!(o["kind"], "ResourceClaim");
    assert_eq!(o["apiVersion"], "resource.k8s.io/v1");
    assert_eq!(
        o["status"]["allocation"]["devices"]["results"][0]["device"],
        "gpu-0"
    );
    assert_eq!(
        o["status"]["reservedFor"],
        json!([{"resource": "pods", "name": "p1", "uid": "p1"}])
    );
    // Not carried out (no session here): nothing is assumed, and p2 is no longer held
    // back by an allocation in flight.
    let (_, s, _) = run(&pl, &env, &p2);
    assert!(s.is_success(), "{s:?}");
}

#[test]
fn pre_bind_refuses_a_claim_allocated_meanwhile() {
    let mut l = cluster();
    claim(&mut l, "c1", gpu_request(1));
    let p1 = gpu_pod("p1", "c1");
    l.pods.insert(p1.key.clone(), p1.clone());
    let env = Env::new(Snapshot::default(), l.clone());
    let pl = DynamicResources::default();
    let (mut cs, _, _) = run(&pl, &env, &p1);
    assert!(
        pl.reserve(&env.handle(), &mut cs, &p1, "node-a")
            .is_success()
    );
    // Someone else allocated the claim before PreBind.
    add(
        &mut l,
        "ResourceClaim",
        json!({"metadata": {"name": "c1", "namespace": "default", "uid": "c1"},
        "spec": {"devices": gpu_request(1)}, "status": {"allocation": {
            "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "node-a", "device": "gpu-1"}]}}}}),
    );
    let env = Env::new(Snapshot::default(), l);
    let s = pl.pre_bind(&env.handle(), &mut cs, &p1, "node-a");
    assert_eq!(
        (s.code(), s.message().as_str()),
        (
            Code::Error,
            "claim default/c1 got allocated elsewhere in the meantime"
        )
    );
}

/// A claim kubestep created and then deleted (the extended-resource claim of a pod whose
/// binding failed) is forgotten once the cluster no longer has it: its devices are free.
#[test]
fn a_deleted_claim_kubestep_made_is_forgotten_once_gone() {
    use super::assume::{Assumed, Written};
    use std::sync::atomic::AtomicBool;
    let l = cluster();
    let mut claim: k8s_openapi::api::resource::v1::ResourceClaim =
        serde_json::from_value(json!({"metadata": {"name": "p-extended-resources-abcde", "namespace": "default"}}))
            .unwrap();
    let mut a = Assumed::default();
    let done = Arc::new(AtomicBool::new(true));
    a.wrote("default/p-extended-resources-abcde", Written::of_status(claim.clone(), None, done.clone()));
    // Created, not yet seen in the cluster: it stands.
    assert_eq!(a.view(&l).claims.len(), 1);
    claim.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::UNIX_EPOCH,
    ));
    a.wrote("default/p-extended-resources-abcde", Written::of_status(claim, None, done));
    assert!(a.view(&l).claims.is_empty());
}
