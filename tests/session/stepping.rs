//! Stepping, breakpoints and straight runs reach the same placements.

use kubestep::session::Session;
use kubestep::session::script::parse;

use crate::support::*;

/// A cluster with a bit of everything: spreading, a preemption, a gang, an approval.
fn mixed() -> String {
    let mut parts = Vec::new();
    for i in 0..6 {
        parts.push(node(
            &format!("node-{i}"),
            if i % 2 == 0 { "8" } else { "4" },
        ));
    }
    for i in 0..12 {
        parts.push(pod(&format!("web/api-{i}"), "500m", "", ""));
    }
    parts.push(pod("batch/etl", "7", "", "  priority: 0\n"));
    parts.push(pod("prod/db", "7", "", "  priority: 100\n"));
    parts.push(pod(
        "ops/migrate",
        "1",
        "  labels:\n    kubestep.io/approval: manual\n",
        "",
    ));
    docs(&parts)
}

fn placements(s: &Session) -> Vec<(String, Option<String>, String)> {
    s.summary()
        .into_iter()
        .map(|r| (r.pod, r.node, format!("{:?}", r.status)))
        .collect()
}

fn script(s: &mut Session, text: &str) {
    for line in text.lines() {
        if let Some(c) = parse(line).unwrap() {
            s.run_command(&c).unwrap_or_else(|e| panic!("{line}: {e}"));
        }
    }
}

fn straight() -> Session {
    let mut s = session(&mixed(), Some(APPROVAL_CONFIG));
    s.run_to_completion(std::time::Duration::from_secs(600));
    s
}

#[test]
fn step_by_step_equals_straight_through() {
    let reference = placements(&straight());
    assert!(reference.iter().filter(|p| p.2 == "Bound").count() >= 12);

    let mut s = session(&mixed(), Some(APPROVAL_CONFIG));
    // One plugin at a time, then one extension point at a time, then whole pods.
    for _ in 0..200 {
        s.step_plugin();
    }
    for _ in 0..200 {
        s.step();
    }
    for _ in 0..5 {
        s.finish_pod();
    }
    s.run_to_completion(std::time::Duration::from_secs(600));
    assert_eq!(placements(&s), reference);
}

#[test]
fn breakpoints_stop_and_resume_without_changing_the_outcome() {
    let reference = placements(&straight());
    let mut s = session(&mixed(), Some(APPROVAL_CONFIG));
    script(
        &mut s,
        "break Score\nbreak plugin=NodeResourcesFit\nbreak pod=prod/db\nbreak outcome=unschedulable\nbreak outcome=wait",
    );
    let mut stops = 0;
    for _ in 0..10_000 {
        let out = s
            .run_command(&parse("continue").unwrap().unwrap())
            .unwrap()
            .output;
        let stop = out.last().unwrap();
        if stop["reason"] == "idle" {
            break;
        }
        stops += 1;
    }
    assert!(stops >= 14, "breakpoints were hit ({stops})");
    script(&mut s, "clear");
    s.run_to_completion(std::time::Duration::from_secs(600));
    assert_eq!(placements(&s), reference);
}

/// A QueueSort breakpoint stops before each pod is popped; continuing pops exactly one.
#[test]
fn a_queue_sort_breakpoint_stops_before_each_pop() {
    use kubestep::session::{Breakpoint, Point, StopReason};
    let mut s = session(&mixed(), None);
    s.add_breakpoint(Breakpoint::Point(Point::QueueSort));
    let mut stops = 0;
    let mut resume = false;
    loop {
        let attempts = s.history.attempts.len();
        match s.continue_steps(10_000, resume) {
            Some(StopReason::Breakpoint(b)) => {
                assert!(b.contains("before QueueSort"), "{b}");
                assert!(s.current.is_none(), "{b}");
                // Each stop comes one attempt after the last: nothing ran past a pop.
                assert!(s.history.attempts.len() <= attempts + 1, "{b}");
                stops += 1;
            }
            _ => break,
        }
        resume = true;
        assert!(stops < 100, "the breakpoint keeps firing");
    }
    assert!(stops >= 14, "stops: {stops}");
}
