//! Preemption of a victim that waits at Permit: rejected up to 1.35, preempted in memory
//! (an Error that sends it to backoff) from 1.36. Either way the preemptor then binds,
//! because the victim's binding-cycle failure frees its place (AssignedPodDelete).

use kubestep::session::{PodStatus, Session};

use crate::support::*;

fn attempts_of(s: &Session, key: &str) -> usize {
    s.history.attempts.iter().filter(|a| a.pod == key).count()
}

fn waiting_victim_then_preemptor(version: &str) -> Session {
    let mut s = session_at(
        &docs(&[
            node("node-1", "2"),
            pod(
                "batch/low",
                "2",
                "  labels:\n    kubestep.io/approval: manual\n",
                "",
            ),
        ]),
        Some(APPROVAL_CONFIG),
        version,
    );
    run(&mut s);
    assert_eq!(status(&s, "batch/low"), PodStatus::Waiting);
    apply(&mut s, &pod("prod/high", "2", "", "  priority: 1000\n"));
    run(&mut s);
    s
}

/// The victim's WaitOnPermit step: (code, plugin, message).
fn victims_wait_end(s: &Session) -> (String, String, String) {
    let st = s
        .history
        .steps
        .iter()
        .find(|st| st.pod.as_deref() == Some("batch/low") && st.point.as_str() == "WaitOnPermit")
        .expect("the victim's wait ended");
    (
        format!("{:?}", st.code),
        st.plugin.as_deref().unwrap_or("").to_string(),
        st.message(),
    )
}

/// The victim's first attempt's outcome and message.
fn victims_first_failure(s: &Session) -> (String, String) {
    let a = s
        .history
        .attempts
        .iter()
        .find(|a| a.pod == "batch/low" && a.outcome.as_deref() != Some("Waiting"))
        .expect("the victim's attempt");
    (
        a.outcome.clone().unwrap_or_default(),
        a.message.clone().unwrap_or_default(),
    )
}

#[test]
fn up_to_1_35_a_waiting_victim_is_rejected_and_turns_unschedulable() {
    for v in ["1.34", "1.35"] {
        let s = waiting_victim_then_preemptor(v);
        let (code, plugin, msg) = victims_wait_end(&s);
        assert_eq!(
            (code.as_str(), plugin.as_str(), msg.as_str()),
            ("Unschedulable", "DefaultPreemption", "preempted"),
            "{v}"
        );
        let (outcome, message) = victims_first_failure(&s);
        assert_eq!(outcome, "Unschedulable", "{v}");
        assert_eq!(message, "0/1 nodes are available: 1 preempted.", "{v}");
        assert_eq!(node_of(&s, "prod/high").as_deref(), Some("node-1"), "{v}");
        assert_eq!(status(&s, "batch/low"), PodStatus::Unschedulable, "{v}");
        // Unschedulable (by DefaultPreemption, which no event wakes): not retried soon.
        let mut s = s;
        advance(&mut s, 2);
        run(&mut s);
        assert_eq!(attempts_of(&s, "batch/low"), 1, "{v}");
    }
}

#[test]
fn from_1_36_a_waiting_victim_is_preempted_in_memory_as_an_error() {
    for v in ["1.36", "1.37"] {
        let s = waiting_victim_then_preemptor(v);
        let (code, plugin, msg) = victims_wait_end(&s);
        assert_eq!(
            (code.as_str(), plugin.as_str(), msg.as_str()),
            ("Error", "DefaultPreemption", "preempted"),
            "{v}"
        );
        let (outcome, message) = victims_first_failure(&s);
        assert_eq!(outcome, "Error", "{v}");
        assert_eq!(message, "waiting on permit for pod: preempted", "{v}");
        // Not deleted: still there, and the preemptor has the node.
        assert_eq!(node_of(&s, "prod/high").as_deref(), Some("node-1"), "{v}");
        assert_eq!(status(&s, "batch/low"), PodStatus::Unschedulable, "{v}");
        // In backoff (1 s), then retried.
        let mut s = s;
        advance(&mut s, 2);
        run(&mut s);
        assert_eq!(attempts_of(&s, "batch/low"), 2, "{v}");
    }
}
