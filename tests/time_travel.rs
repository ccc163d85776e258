//! Time travel's queue: the steps run at full speed keep their queue as changes from the
//! moment before; rebuilt, each is the queue a step-by-step copy keeps of the same step.

use std::time::Duration;

use kubestep::recording;
use kubestep::session::queue_history::QueueMoment;
use kubestep::session::{Session, SessionOptions, clock};

fn session(name: &str, coarse: bool) -> Session {
    let rec = recording::open(name).unwrap();
    let request = kubestep::features::Request::default();
    let mut s =
        Session::open_replay(rec, name, None, &request, SessionOptions::default(), false).unwrap();
    s.history.queues.keep = true;
    s.history.queues.coarse = coarse;
    s
}

/// What the Queue and Waiting panes show of a moment.
fn shown(m: &QueueMoment) -> String {
    let others: Vec<String> = m
        .others
        .iter()
        .map(|r| {
            format!(
                "{} {:?} {:?} {:?} {}",
                r.pod, r.status, r.node, r.message, r.attempts
            )
        })
        .collect();
    format!(
        "{:#?}\n{:#?}\n{others:#?}\nbound {} last attempt {}",
        m.queued, m.waiting, m.bound, m.last_attempt
    )
}

#[test]
fn the_queue_of_every_step_run_at_full_speed_is_the_queue_then() {
    for name in [
        "demo",
        "preemption",
        "gang-scheduling",
        "insufficient-resources",
        "taints-affinity",
        "topology-spread",
    ] {
        let end = clock::add(
            recording::open(name).unwrap().end(),
            Duration::from_secs(600),
        );
        let (mut fast, mut exact) = (session(name, true), session(name, false));
        fast.run_until(end);
        exact.run_until(end);
        let last = exact.history.last().unwrap().seq;
        assert_eq!(fast.history.last().unwrap().seq, last, "{name}");
        let first = exact.history.steps.front().unwrap().seq;
        let mut compared = 0;
        for seq in first..=last {
            let (Some(a), Some(b)) = (fast.history.queues.at(seq), exact.history.queues.at(seq))
            else {
                continue;
            };
            assert_eq!(shown(&a), shown(&b), "{name}: step {seq}");
            compared += 1;
        }
        assert!(
            compared as u64 > (last - first) / 2,
            "{name}: {compared} compared"
        );
        // Most moments at full speed are kept as changes, none step by step.
        let (changes, all) = (
            fast.history.queues.kept_as_changes(),
            fast.history.queues.len(),
        );
        if matches!(name, "demo" | "gang-scheduling") {
            // Coscheduling's QueueSort orders by pod group: every moment is whole.
            assert_eq!(changes, 0, "{name}");
        } else {
            assert!(
                changes * 2 >= all,
                "{name}: {changes} of {all} kept as changes"
            );
        }
        assert_eq!(exact.history.queues.kept_as_changes(), 0, "{name}");
    }
}
