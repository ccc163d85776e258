//! Coscheduling gangs over time: all-or-nothing at Permit, timeouts, release, retry.

use kubestep::session::PodStatus;
use kubestep::session::script::Command;

use crate::support::*;

fn pod_group(name: &str, min: u32) -> String {
    format!(
        "apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: {name}
  namespace: ml
spec:
  minMember: {min}
  scheduleTimeoutSeconds: 30
"
    )
}

fn member(name: &str, group: &str, cpu: &str) -> String {
    pod(
        &format!("ml/{name}"),
        cpu,
        &format!("  labels:\n    scheduling.x-k8s.io/pod-group: {group}\n"),
        "",
    )
}

/// Four 3-cpu members on three 4-cpu nodes: only three fit at a time.
fn three_of_four() -> String {
    let mut parts = vec![
        node("gpu-a", "4"),
        node("gpu-b", "4"),
        node("gpu-c", "4"),
        pod_group("trainer", 4),
    ];
    for i in 0..4 {
        parts.push(member(&format!("trainer-{i}"), "trainer", "3"));
    }
    docs(&parts)
}

#[test]
fn a_gang_that_cannot_reach_min_member_waits_times_out_together_and_releases_its_nodes() {
    let mut s = session(&three_of_four(), Some(GANG_CONFIG));
    run(&mut s);
    let members: Vec<String> = (0..4).map(|i| format!("ml/trainer-{i}")).collect();
    let waiting: Vec<&String> = members
        .iter()
        .filter(|m| status(&s, m) == PodStatus::Waiting)
        .collect();
    assert_eq!(
        waiting.len(),
        3,
        "three members wait at Permit: {:?}",
        s.summary()
    );
    let failed = members
        .iter()
        .find(|m| status(&s, m) == PodStatus::Unschedulable)
        .expect("the fourth member is unschedulable");
    let msg = record(&s, failed).message.clone().unwrap_or_default();
    assert!(
        msg.starts_with("0/3 nodes are available: 3 Insufficient cpu."),
        "{msg}"
    );
    // Waiting members hold their nodes' resources (assumed pods).
    for n in ["gpu-a", "gpu-b", "gpu-c"] {
        assert_eq!(
            requested_milli_cpu(&s, n),
            3000,
            "{n} holds a waiting member"
        );
    }
    let w = s
        .run_command(&Command::Show(kubestep::session::script::Show::Waiting))
        .unwrap();
    let text = w.output[0].to_string();
    assert!(text.contains("Coscheduling"), "{text}");

    // The Permit deadline (scheduleTimeoutSeconds 30) passes: all three are rejected
    // together, unreserved, and their resources freed.
    advance(&mut s, 31);
    let steps: Vec<_> = s.history.steps.iter().collect();
    let unreserved: Vec<_> = steps
        .iter()
        .filter(|r| r.point.as_str() == "Unreserve" && r.plugin.as_deref() == Some("Coscheduling"))
        .collect();
    assert!(unreserved.len() >= 3, "each waiting member is unreserved");
    for m in &waiting {
        let r = record(&s, m);
        assert_ne!(r.status, PodStatus::Bound, "{m} must not bind alone");
        assert_eq!(r.node, None);
    }
    let timeouts = steps
        .iter()
        .filter(|r| r.point.as_str() == "WaitOnPermit" && r.message().contains("timeout"))
        .count();
    assert!(
        timeouts >= 3,
        "every waiting member timed out at WaitOnPermit"
    );

    // Nothing in the cluster changed, so the members wait in unschedulable pods until the
    // 5-minute flush (their backoff long over), retry, and wait again — never binding
    // while the fourth does not fit.
    let retried = s
        .history
        .steps
        .iter()
        .filter(|r| r.point.as_str() == "Permit")
        .count();
    advance(&mut s, 240);
    let not_yet = s
        .history
        .steps
        .iter()
        .filter(|r| r.point.as_str() == "Permit")
        .count();
    assert_eq!(
        not_yet, retried,
        "no retry without an event before the flush"
    );
    advance(&mut s, 90);
    let retried_after = s
        .history
        .steps
        .iter()
        .filter(|r| r.point.as_str() == "Permit")
        .count();
    assert!(retried_after > retried, "members are retried after backoff");
    assert!(members.iter().all(|m| status(&s, m) != PodStatus::Bound));
}

#[test]
fn timeouts_free_resources_for_other_pods() {
    let mut s = session(&three_of_four(), Some(GANG_CONFIG));
    run(&mut s);
    for n in ["gpu-a", "gpu-b", "gpu-c"] {
        assert_eq!(requested_milli_cpu(&s, n), 3000);
    }
    advance(&mut s, 30);
    // Right after the timeout (before any retry binds them again) the assumed pods are gone.
    let free = ["gpu-a", "gpu-b", "gpu-c"]
        .iter()
        .filter(|n| requested_milli_cpu(&s, n) == 0)
        .count();
    assert!(free >= 1, "a timed-out gang releases its reservations");
}

#[test]
fn a_gang_that_fits_binds_all_members_together() {
    let mut parts = vec![
        node("gpu-a", "8"),
        node("gpu-b", "8"),
        pod_group("trainer", 4),
    ];
    for i in 0..4 {
        parts.push(member(&format!("trainer-{i}"), "trainer", "3"));
    }
    let mut s = session(&docs(&parts), Some(GANG_CONFIG));
    run(&mut s);
    for i in 0..4 {
        let key = format!("ml/trainer-{i}");
        assert_eq!(
            status(&s, &key),
            PodStatus::Bound,
            "{key}: {:?}",
            s.summary()
        );
    }
    // The first three waited for the fourth: nobody was bound before the last reservation.
    let steps = &s.history.steps;
    let last_permit = steps
        .iter()
        .filter(|r| r.point.as_str() == "Permit")
        .map(|r| r.seq)
        .max()
        .unwrap();
    let first_bind = steps
        .iter()
        .filter(|r| r.point.as_str() == "Bind")
        .map(|r| r.seq)
        .min()
        .unwrap();
    assert!(
        first_bind > last_permit,
        "binding starts once the whole gang is permitted"
    );
    assert_eq!(
        requested_milli_cpu(&s, "gpu-a") + requested_milli_cpu(&s, "gpu-b"),
        12000
    );
    // No time had to pass.
    assert_eq!(elapsed(&s), 0.0);
}
