//! The queue kept per step for time travel: off unless asked, one moment shared by the
//! steps that left the queue as it was, each moment as the queue really was then, and
//! bounded by its row budget.

use kubestep::session::queue_history::Place;

use crate::support::*;

fn two_pods() -> String {
    docs(&[
        node("node-1", "4"),
        pod("web/small-0", "1", "", ""),
        pod("web/huge-0", "64", "", ""),
    ])
}

fn place<'a>(m: &'a kubestep::session::queue_history::QueueMoment, pod: &str) -> &'a Place {
    &m.queued
        .iter()
        .find(|q| q.pod == pod)
        .unwrap_or_else(|| panic!("{pod} not queued: {:?}", m.queued))
        .place
}

#[test]
fn not_kept_unless_a_driver_asks() {
    let mut s = session(&two_pods(), None);
    run(&mut s);
    assert!(s.history.queues.is_empty());
}

#[test]
fn each_step_finds_the_queue_as_it_was_then() {
    let mut s = session(&two_pods(), None);
    s.history.queues.keep = true;
    while s.step().is_some() {}
    let first = s.history.steps.front().unwrap().seq;
    let last = s.history.last().unwrap().seq;
    // Steps inside a cycle leave the queue alone: far fewer moments than steps.
    assert!(s.history.queues.len() < s.history.steps.len() / 2);
    // The first step popped one pod; the other still waited in activeQ.
    let m = s.history.queues.at(first).unwrap();
    let popped = s.history.steps.front().unwrap().pod.clone().unwrap();
    let other = if &*popped == "web/small-0" {
        "web/huge-0"
    } else {
        "web/small-0"
    };
    assert_eq!(
        place(&m, &popped),
        &kubestep::session::queue_history::Place::InFlight
    );
    assert!(matches!(place(&m, other), Place::Active { .. }), "{m:?}");
    // At the end the huge pod is unschedulable with upstream's message, the small one
    // bound (so no longer queued).
    let m = s.history.queues.at(last).unwrap();
    match place(&m, "web/huge-0") {
        Place::Unschedulable { message } => {
            assert!(message.starts_with("0/1 nodes are available"), "{message}")
        }
        p => panic!("{p:?}"),
    }
    assert!(m.queued.iter().all(|q| q.pod != "web/small-0"), "{m:?}");
    assert_eq!(m.bound, 1);
    // The present, in the same form.
    let now = s.queue_now();
    assert_eq!(now.queued, m.queued);
}

#[test]
fn the_oldest_moments_are_forgotten_beyond_the_budget() {
    let mut s = session(&two_pods(), None);
    s.history.queues.keep = true;
    s.history.queues.max_rows = 3;
    while s.step().is_some() {}
    let first = s.history.steps.front().unwrap().seq;
    let last = s.history.last().unwrap().seq;
    assert!(s.history.queues.at(first).is_none());
    assert!(s.history.queues.oldest().is_some_and(|o| o > first));
    assert!(s.history.queues.at(last).is_some());
}
