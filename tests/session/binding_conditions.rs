//! Device binding conditions (on by default from 1.36): DynamicResources' PreBind waits,
//! polling every 5s, until the claim's device status shows every binding condition true;
//! a failure condition or `bindingTimeout` (10m by default) fails the binding cycle. The
//! pod is parked meanwhile and other pods are scheduled.

use kubestep::session::PodStatus;
use serde_json::{Value, json};

use crate::support::{advance, apply, elapsed, record, run, session_at, status};

const CLUSTER: &str = include_str!("../data/dra/binding-conditions.yaml");

const PLAIN_POD: &str = "apiVersion: v1
kind: Pod
metadata: {name: p2, namespace: default, uid: uid-p2}
spec:
  containers: [{name: main, image: x, resources: {requests: {cpu: 100m}}}]
";

fn claim(s: &kubestep::session::Session) -> Value {
    s.cluster()
        .listers
        .custom_object("ResourceClaim", "default/c1")
        .map(|c| Value::clone(c))
        .expect("claim c1")
}

/// The driver's write: condition `ty` of gpu-0 set to True in the claim's device status.
fn driver_sets(s: &mut kubestep::session::Session, ty: &str, reason: &str, message: &str) {
    let mut c = claim(s);
    c["metadata"]["resourceVersion"] = json!("driver-1");
    c["status"]["devices"] = json!([{
        "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0",
        "conditions": [{"type": ty, "status": "True", "reason": reason, "message": message,
            "lastTransitionTime": "2025-01-01T00:00:00Z"}]
    }]);
    apply(s, &c.to_string());
}

fn message(s: &kubestep::session::Session) -> String {
    record(s, "default/p1").message.unwrap_or_default()
}

#[test]
fn pre_bind_waits_until_the_driver_sets_the_conditions() {
    let mut s = session_at(CLUSTER, None, "1.36");
    run(&mut s);
    assert_eq!(status(&s, "default/p1"), PodStatus::Waiting);
    let m = message(&s);
    assert!(
        m.contains("waiting at PreBind (DynamicResources)")
            && m.contains("claim default/c1: gpu-0: attached"),
        "{m}"
    );
    // PreBind wrote the allocation and reservation before it waited.
    let c = claim(&s);
    assert_eq!(c["status"]["reservedFor"][0]["uid"], "uid-p1", "{c}");
    assert!(
        c["status"]["allocation"]["allocationTimestamp"].is_string(),
        "{c}"
    );
    assert_eq!(s.counts().waiting, 1);
    // Nobody can allow it by hand.
    let e = s.allow("default/p1", None).unwrap_err().to_string();
    assert!(e.contains("waits at PreBind, not Permit"), "{e}");

    // Another pod is scheduled meanwhile: the wait is the binding cycle's, apart.
    apply(&mut s, PLAIN_POD);
    run(&mut s);
    assert_eq!(status(&s, "default/p2"), PodStatus::Bound);
    assert_eq!(status(&s, "default/p1"), PodStatus::Waiting);

    // The driver sets the condition at 12s: the poll at 15s sees it, not before.
    advance(&mut s, 12);
    driver_sets(&mut s, "attached", "Attached", "ok");
    advance(&mut s, 2);
    assert_eq!(status(&s, "default/p1"), PodStatus::Waiting);
    advance(&mut s, 1);
    run(&mut s);
    assert_eq!(
        status(&s, "default/p1"),
        PodStatus::Bound,
        "{}",
        message(&s)
    );
    assert!((elapsed(&s) - 15.0).abs() < 1e-6, "{}", elapsed(&s));
    assert_eq!(s.counts().waiting, 0);
}

#[test]
fn pre_bind_fails_at_the_binding_timeout_and_unreserves() {
    let mut s = session_at(CLUSTER, None, "1.36");
    run(&mut s);
    advance(&mut s, 595);
    assert_eq!(status(&s, "default/p1"), PodStatus::Waiting);
    advance(&mut s, 5);
    let r = record(&s, "default/p1");
    assert_ne!(r.status, PodStatus::Bound);
    let m = r.message.unwrap_or_default();
    assert!(
        m.contains(r#"running PreBind plugin "DynamicResources": device binding timeout"#),
        "{m}"
    );
    // Unreserve took the pod out of reservedFor; the allocation stays for PostFilter.
    let c = claim(&s);
    assert!(
        c["status"]["reservedFor"]
            .as_array()
            .is_none_or(|r| r.is_empty()),
        "{c}"
    );
    assert!(c["status"]["allocation"].is_object(), "{c}");
}

#[test]
fn a_failure_condition_fails_pre_bind_at_the_next_poll() {
    let mut s = session_at(CLUSTER, None, "1.36");
    run(&mut s);
    advance(&mut s, 3);
    driver_sets(&mut s, "attach-failed", "NoPort", "switch port busy");
    advance(&mut s, 2);
    let m = message(&s);
    assert!(
        m.contains(r#"claim c1 binding failed: reason=NoPort, message="switch port busy""#),
        "{m}"
    );
    assert_ne!(status(&s, "default/p1"), PodStatus::Bound);
}

#[test]
fn without_the_gate_nothing_waits() {
    // 1.35's default: DRADeviceBindingConditions off, so gpu-0 is not even allocated.
    let mut s = session_at(CLUSTER, None, "1.35");
    run(&mut s);
    assert_ne!(status(&s, "default/p1"), PodStatus::Waiting);
    assert_eq!(s.counts().waiting, 0);
}
