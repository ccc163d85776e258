//! ManualApproval: pods held at Permit until a person allows or rejects them.

use kubestep::session::PodStatus;
use kubestep::session::script::parse;

use crate::support::*;

fn held() -> String {
    docs(&[
        node("node-1", "4"),
        pod(
            "payments/migrate-db",
            "1",
            "  labels:\n    kubestep.io/approval: manual\n",
            "",
        ),
        pod("payments/api", "1", "", ""),
    ])
}

fn cmd(s: &mut kubestep::session::Session, line: &str) -> Vec<serde_json::Value> {
    let c = parse(line).unwrap().unwrap();
    s.run_command(&c)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .output
}

#[test]
fn a_labelled_pod_waits_and_binds_when_allowed() {
    let mut s = session(&held(), Some(APPROVAL_CONFIG));
    run(&mut s);
    assert_eq!(status(&s, "payments/api"), PodStatus::Bound);
    assert_eq!(status(&s, "payments/migrate-db"), PodStatus::Waiting);
    // It holds its node while it waits.
    assert_eq!(requested_milli_cpu(&s, "node-1"), 2000);
    let w = cmd(&mut s, "show waiting");
    let text = w[0].to_string();
    assert!(
        text.contains("payments/migrate-db") && text.contains("ManualApproval"),
        "{text}"
    );

    // Nothing happens on its own before the timeout...
    advance(&mut s, 60);
    assert_eq!(status(&s, "payments/migrate-db"), PodStatus::Waiting);
    // ...until a person allows it.
    cmd(&mut s, "allow payments/migrate-db");
    run(&mut s);
    assert_eq!(status(&s, "payments/migrate-db"), PodStatus::Bound);
    assert_eq!(
        node_of(&s, "payments/migrate-db").as_deref(),
        Some("node-1")
    );
    assert!(s.waiting().is_empty());
}

#[test]
fn rejecting_unreserves_and_requeues_with_the_reason() {
    let mut s = session(&held(), Some(APPROVAL_CONFIG));
    run(&mut s);
    cmd(
        &mut s,
        "reject payments/migrate-db ManualApproval change freeze until Monday",
    );
    let out = run(&mut s);
    let points: Vec<String> = out
        .iter()
        .filter(|v| v["pod"] == "payments/migrate-db")
        .map(|v| format!("{} {}", v["point"].as_str().unwrap_or(""), v["code"]))
        .collect();
    assert!(
        points.iter().any(|p| p.starts_with("WaitOnPermit")),
        "{points:?}"
    );
    assert!(
        points.iter().any(|p| p.starts_with("Unreserve")),
        "{points:?}"
    );
    let r = record(&s, "payments/migrate-db");
    assert_eq!(r.status, PodStatus::Unschedulable);
    assert_eq!(
        r.message.as_deref(),
        Some("0/1 nodes are available: 1 change freeze until Monday.")
    );
    // Its reservation is gone.
    assert_eq!(requested_milli_cpu(&s, "node-1"), 1000);
    assert!(s.waiting().is_empty());
}

#[test]
fn an_unanswered_pod_times_out_after_the_configured_wait() {
    let mut s = session(&held(), Some(APPROVAL_CONFIG));
    run(&mut s);
    advance(&mut s, 119);
    assert_eq!(status(&s, "payments/migrate-db"), PodStatus::Waiting);
    advance(&mut s, 1);
    let r = record(&s, "payments/migrate-db");
    assert_ne!(r.status, PodStatus::Bound);
    let timed_out = s
        .history
        .steps
        .iter()
        .any(|st| st.point.as_str() == "WaitOnPermit" && st.message().contains("timeout"));
    assert!(timed_out, "the wait ends with a timeout at WaitOnPermit");
}

#[test]
fn allow_and_reject_name_what_is_wrong() {
    let mut s = session(&held(), Some(APPROVAL_CONFIG));
    run(&mut s);
    let e = |s: &mut kubestep::session::Session, line: &str| {
        s.run_command(&parse(line).unwrap().unwrap())
            .err()
            .unwrap_or_else(|| panic!("{line} should fail"))
    };
    use kubestep::session::{CommandError, PermitError};
    let permit = |command, error| CommandError::Permit { command, error };
    assert_eq!(
        e(&mut s, "allow payments/nope"),
        permit(
            "allow",
            PermitError::NoSuchPod {
                pod: "payments/nope".into()
            }
        )
    );
    let not_waiting = e(&mut s, "reject payments/api");
    assert_eq!(
        not_waiting.to_string(),
        "pod payments/api is not waiting at Permit"
    );
    assert_eq!(not_waiting.command(), "reject");
    let wrong_plugin = e(&mut s, "allow payments/migrate-db Coscheduling");
    assert_eq!(
        wrong_plugin,
        permit(
            "allow",
            PermitError::NotWaitingOn {
                pod: "payments/migrate-db".into(),
                plugin: "Coscheduling".into(),
                waiting_on: vec!["ManualApproval".into()],
            }
        )
    );
    assert!(
        wrong_plugin
            .to_string()
            .contains("not waiting on plugin Coscheduling (waiting on: ManualApproval)")
    );
}
