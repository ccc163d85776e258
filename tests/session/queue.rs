//! The queue over virtual time: preemption and retry, gates, backoff, the 5-minute flush,
//! other schedulers' pods.

use kubestep::cluster::manifest;
use kubestep::session::PodStatus;
use kubestep::session::script::{Command, Show};

use crate::support::*;

fn object(yaml: &str) -> kubestep::cluster::Object {
    let (mut objs, _) = manifest::parse_str(yaml, "update.yaml").unwrap();
    objs.remove(0).value
}

#[test]
fn preemption_deletes_the_victim_and_the_preemptor_binds_on_retry() {
    let objects = docs(&[
        node("node-1", "4"),
        pod(
            "batch/report-7f9c",
            "3",
            "",
            "  nodeName: node-1\n  priority: 0\n",
        ),
        pod("prod/checkout-0", "3", "", "  priority: 1000\n"),
    ]);
    let mut s = session(&objects, None);
    run(&mut s);
    let r = record(&s, "prod/checkout-0");
    // The first attempt failed and nominated node-1; the victim is gone.
    assert!(
        s.cluster().pod("batch/report-7f9c").is_none(),
        "victim deleted"
    );
    let postfilter = s
        .history
        .steps
        .iter()
        .find(|st| {
            st.point.as_str() == "PostFilter" && st.plugin.as_deref() == Some("DefaultPreemption")
        })
        .expect("DefaultPreemption ran");
    assert_eq!(postfilter.code.to_string(), "Success", "{postfilter:?}");
    if r.status != PodStatus::Bound {
        // The victim's deletion requeued it; it binds after at most its backoff.
        advance(&mut s, 2);
    }
    let r = record(&s, "prod/checkout-0");
    assert_eq!(r.status, PodStatus::Bound, "{:?}", s.summary());
    assert_eq!(r.node.as_deref(), Some("node-1"));
    assert!(r.attempts >= 2);
}

#[test]
fn a_gated_pod_is_listed_as_gated_and_scheduled_once_its_gates_are_removed() {
    let gated = pod(
        "web/frontend-0",
        "1",
        "",
        "  schedulingGates:\n  - name: example.com/quota-check\n",
    );
    let mut s = session(&docs(&[node("node-1", "4"), gated]), None);
    run(&mut s);
    assert_eq!(status(&s, "web/frontend-0"), PodStatus::Gated);
    let q = s.run_command(&Command::Show(Show::Queue)).unwrap().output;
    let gated_list = q[0]["gated"].as_array().unwrap();
    assert_eq!(gated_list.len(), 1);
    assert_eq!(gated_list[0]["plugin"], "SchedulingGates");
    // Nothing ever attempted it.
    assert!(
        !s.history
            .steps
            .iter()
            .any(|st| st.pod.as_deref() == Some("web/frontend-0") && st.point.as_str() == "Filter")
    );
    // The controller removes the gate.
    s.apply(object(&pod("web/frontend-0", "1", "", "")));
    run(&mut s);
    assert_eq!(status(&s, "web/frontend-0"), PodStatus::Bound);
}

#[test]
fn backoff_doubles_in_virtual_time_and_unschedulable_pods_are_flushed_after_five_minutes() {
    let big = pod("ml/huge", "16", "", "");
    let mut s = session(&docs(&[node("node-1", "4"), big]), None);
    run(&mut s);
    assert_eq!(status(&s, "ml/huge"), PodStatus::Unschedulable);
    assert_eq!(record(&s, "ml/huge").attempts, 1);
    // Nothing changed since: it waits for an event, however long.
    advance(&mut s, 3600);
    assert_eq!(record(&s, "ml/huge").attempts, 1, "no identical retry");
    let q = s.run_command(&Command::Show(Show::Queue)).unwrap().output;
    assert!(
        q[0]["unschedulable"][0]["retry"]
            .as_str()
            .is_some_and(|r| r.contains("next event")),
        "{q:?}"
    );
    // A change that cannot help (a small node: its hint skips the pod) does not move it,
    // but the 5-minute flush (checked every 30s), long due, now retries it.
    s.apply(object(&node("node-small", "1")));
    assert_eq!(record(&s, "ml/huge").attempts, 1);
    advance(&mut s, 31);
    assert_eq!(record(&s, "ml/huge").attempts, 2, "retried by the flush");

    // After two failures, a node event moves it to backoffQ with a 2s backoff (1s doubled)
    // counted from its last failure.
    let q = s.run_command(&Command::Show(Show::Queue)).unwrap().output;
    let unsched = q[0]["unschedulable"].as_array().unwrap();
    let at_failure: jiff::Timestamp = unsched[0]["timestamp"].as_str().unwrap().parse().unwrap();
    s.apply(object(&node("node-2", "32")));
    let q = s.run_command(&Command::Show(Show::Queue)).unwrap().output;
    let backoff = q[0]["backoff"].as_array().unwrap();
    assert_eq!(backoff.len(), 1, "{q:?}");
    let expiry: jiff::Timestamp = backoff[0]["expiry"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        kubestep::session::clock::since(expiry, at_failure).as_secs(),
        2,
        "initial 1s backoff doubled once"
    );
}

#[test]
fn pods_for_other_schedulers_are_visible_but_ignored() {
    let mine = pod("web/a", "1", "", "");
    let theirs = pod("web/b", "1", "", "  schedulerName: volcano\n");
    let mut s = session(&docs(&[node("node-1", "4"), mine, theirs]), None);
    run(&mut s);
    assert_eq!(status(&s, "web/a"), PodStatus::Bound);
    assert_eq!(status(&s, "web/b"), PodStatus::Ignored);
    assert!(
        !s.history
            .steps
            .iter()
            .any(|st| st.pod.as_deref() == Some("web/b"))
    );
}
