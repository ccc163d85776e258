//! Queue tests, on a virtual clock.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};

use super::*;
use crate::config::Plugins;
use crate::config::defaults::default_profile;
use crate::framework::events::{ActionType as A, EventResource as R, EventType};
use crate::framework::listers::Listers;
use crate::framework::{PodInfo, Snapshot};
use crate::plugins::registry::in_tree;
use crate::plugins::testing::{Env, pod};

/// `events_for_pod_change` for pods as they are written in tests.
fn pod_change(old: Option<&Pod>, new: Option<&Pod>) -> Vec<ClusterEvent> {
    let info = |p: &Pod| Arc::new(PodInfo::new(Arc::new(p.clone())));
    events_for_pod_change(
        old.map(info).as_ref(),
        new.map(info).as_ref(),
        &crate::features::Features::default(),
    )
}

const FIT: &str = "NodeResourcesFit";

fn fwk() -> Framework {
    let profile = default_profile(
        "default-scheduler".into(),
        None,
        &Plugins::default(),
        vec![],
        &Default::default(),
    );
    match Framework::new(&in_tree(), &profile, &Default::default()) {
        Ok(f) => f,
        Err(e) => panic!("default profile: {e}"),
    }
}

fn env() -> Env {
    Env::new(Snapshot::default(), Listers::default())
}

/// A time on the virtual clock, `ms` milliseconds after an arbitrary origin.
fn at(ms: i64) -> Timestamp {
    Timestamp::from_millisecond(1_000_000_000 + ms).unwrap()
}

fn secs(s: i64) -> Timestamp {
    at(s * 1000)
}

fn queue() -> SchedulingQueue {
    SchedulingQueue::default()
}

fn plain(name: &str, priority: i32, cpu: &str) -> Arc<PodInfo> {
    pod(
        json!({"metadata": {"name": name}, "spec": {"priority": priority, "containers": [
        {"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}),
    )
}

fn node(name: &str, cpu: &str, labels: Value) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}))
    .unwrap()
}

fn bound(v: Value) -> Pod {
    let p = pod(v);
    (*p.pod()).clone()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// Pops `uid` (which must be next) and fails it with the given rejectors.
fn fail(
    q: &mut SchedulingQueue,
    env: &Env,
    f: &Framework,
    uid: &str,
    plugins: &[&str],
    now: Timestamp,
) {
    let qpi = q.pop(f, now).expect("a pod to pop");
    assert_eq!(qpi.uid(), uid);
    q.add_unschedulable_if_not_present(
        &env.handle(),
        f,
        qpi,
        set(plugins),
        BTreeSet::new(),
        false,
        "0/1 nodes are available".into(),
        now,
    );
}

fn send(
    q: &mut SchedulingQueue,
    env: &Env,
    f: &Framework,
    events: Vec<ClusterEvent>,
    now: Timestamp,
) {
    for e in events {
        q.on_event(&env.handle(), std::slice::from_ref(f), &e, now);
    }
}

fn node_add(n: &Node) -> Vec<ClusterEvent> {
    events_for_node_change(None, Some(n), &Default::default())
}

#[test]
fn backoff_doubles_up_to_the_maximum() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let p = plain("p", 0, "2");
    q.add(&env.handle(), &f, p, secs(0));
    let big = node("big", "8", json!({}));
    let mut expiries = Vec::new();
    let mut now = secs(0);
    for _ in 0..6 {
        // Popped from backoffQ before its expiry: activeQ is empty (PopFromBackoffQ).
        fail(&mut q, &env, &f, "p", &[FIT], now);
        assert_eq!(q.queue_of("p"), Some(QueueName::Unschedulable));
        send(&mut q, &env, &f, node_add(&big), now);
        let v = q.view(&f, now);
        assert_eq!(v.backoff.len(), 1);
        let e = v.backoff[0].expiry.unwrap();
        expiries.push(e.duration_since(backoff::truncate_to_window(now)).as_secs());
        now = at(now.as_millisecond() - 1_000_000_000 + 300);
    }
    assert_eq!(expiries, vec![1, 2, 4, 8, 10, 10]);
}

#[test]
fn backoff_completes_on_whole_second_ticks() {
    let (env, f, mut q) = (env(), fwk(), queue());
    q.add(&env.handle(), &f, plain("p", 0, "2"), at(500));
    fail(&mut q, &env, &f, "p", &[FIT], at(500));
    send(
        &mut q,
        &env,
        &f,
        node_add(&node("big", "8", json!({}))),
        at(600),
    );
    // Failed at 0.5s with count 1: expiry truncated to 1s, backing off through the
    // window of 1s, completed at the tick of 2s.
    assert_eq!(q.queue_of("p"), Some(QueueName::Backoff));
    assert_eq!(q.next_timer(at(600)), Some(secs(2)));
    q.flush(&env.handle(), &f, at(1_999));
    assert_eq!(q.queue_of("p"), Some(QueueName::Backoff));
    q.flush(&env.handle(), &f, secs(2));
    assert_eq!(q.queue_of("p"), Some(QueueName::Active));
    assert_eq!(q.next_timer(secs(2)), None);
    let moves: Vec<(QueueName, String)> = q
        .take_moves()
        .into_iter()
        .map(|m| (m.to, m.event))
        .collect();
    assert_eq!(
        moves,
        vec![
            (QueueName::Active, "UnschedulablePodAdd".into()),
            (QueueName::Unschedulable, "ScheduleAttemptFailure".into()),
            (QueueName::Backoff, "NodeAdd".into()),
            (QueueName::Active, "BackoffComplete".into()),
        ]
    );
}

#[test]
fn pop_order_is_priority_then_time() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    q.add(&h, &f, plain("low-early", 0, "1"), secs(0));
    q.add(&h, &f, plain("high", 10, "1"), secs(1));
    q.add(&h, &f, plain("low-late", 0, "1"), secs(2));
    // Same instant: the one added first goes first.
    q.add(&h, &f, plain("mid-a", 5, "1"), secs(3));
    q.add(&h, &f, plain("mid-b", 5, "1"), secs(3));
    let view: Vec<String> = q
        .view(&f, secs(3))
        .active
        .iter()
        .map(|p| p.uid().to_string())
        .collect();
    let mut popped = Vec::new();
    while let Some(p) = q.pop(&f, secs(4)) {
        assert_eq!(p.attempts, 1);
        popped.push(p.uid().to_string());
    }
    assert_eq!(popped, ["high", "mid-a", "mid-b", "low-early", "low-late"]);
    assert_eq!(view, popped);
    assert_eq!(q.scheduling_cycle(), 5);
}

#[test]
fn gated_pod_waits_until_its_gates_are_removed() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    let gated = pod(json!({"metadata": {"name": "g"}, "spec": {"containers": [],
        "schedulingGates": [{"name": "example.com/wait"}]}}));
    q.add(&h, &f, gated.clone(), secs(0));
    let v = q.view(&f, secs(0));
    assert!(v.active.is_empty());
    assert_eq!(v.gated.len(), 1);
    assert_eq!(v.gated[0].plugin, "SchedulingGates");
    assert_eq!(
        v.gated[0].message,
        "waiting for scheduling gates: [example.com/wait]"
    );
    assert_eq!(
        v.gated[0].waiting_for,
        vec![EventType::new(
            R::Pod,
            A::UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        )]
    );
    assert!(q.pop(&f, secs(1)).is_none());

    // Nothing else releases it: not a node, not the leftover flush.
    send(
        &mut q,
        &env,
        &f,
        node_add(&node("n", "8", json!({}))),
        secs(1),
    );
    q.flush(&h, &f, secs(900));
    assert_eq!(q.queue_of("g"), Some(QueueName::Gated));
    assert_eq!(q.next_timer(secs(900)), None);

    // A label change keeps it gated.
    let mut relabelled = (*gated.pod()).clone();
    relabelled.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
    q.update(
        &h,
        &f,
        Arc::new(PodInfo::new(Arc::new(relabelled.clone()))),
        secs(901),
    );
    assert_eq!(q.queue_of("g"), Some(QueueName::Gated));

    let mut open = relabelled;
    if let Some(s) = open.spec.as_mut() {
        s.scheduling_gates = None;
    }
    q.update(&h, &f, Arc::new(PodInfo::new(Arc::new(open))), secs(902));
    assert_eq!(q.queue_of("g"), Some(QueueName::Active));
    let p = q.pop(&f, secs(902)).unwrap();
    assert_eq!(p.uid(), "g");
    assert!(!p.gated());
    assert_eq!(p.initial_attempt_timestamp, Some(secs(902)));
}

#[test]
fn fit_rejection_moves_on_a_big_enough_node_only() {
    let (env, f, mut q) = (env(), fwk(), queue());
    q.add(&env.handle(), &f, plain("p", 0, "2"), secs(0));
    fail(&mut q, &env, &f, "p", &[FIT], secs(0));
    assert_eq!(q.queue_of("p"), Some(QueueName::Unschedulable));

    // A label change is not among NodeResourcesFit's events.
    let n1 = node("n1", "1", json!({"a": "1"}));
    let n1b = node("n1", "1", json!({"a": "2"}));
    let relabel = events_for_node_change(Some(&n1), Some(&n1b), &Default::default());
    assert_eq!(relabel.len(), 1);
    assert_eq!(relabel[0].label, "NodeUpdateNodeLabel");
    send(&mut q, &env, &f, relabel, secs(1));
    // A new node too small for the pod: the hint skips.
    send(
        &mut q,
        &env,
        &f,
        node_add(&node("small", "1", json!({}))),
        secs(2),
    );
    // More allocatable, still too small: skip.
    let n1c = node("n1", "1500m", json!({"a": "2"}));
    send(
        &mut q,
        &env,
        &f,
        events_for_node_change(Some(&n1b), Some(&n1c), &Default::default()),
        secs(2),
    );
    assert_eq!(q.queue_of("p"), Some(QueueName::Unschedulable));
    let v = q.view(&f, secs(2));
    assert_eq!(v.unschedulable[0].plugins, set(&[FIT]));
    assert_eq!(v.unschedulable[0].message, "0/1 nodes are available");
    assert!(v.unschedulable[0].waiting_for.contains(&EventType::new(
        R::Node,
        A::ADD | A::UPDATE_NODE_ALLOCATABLE
    )));

    // Grown to fit: Queue (its backoff is over, so straight to activeQ).
    let n1d = node("n1", "3", json!({"a": "2"}));
    send(
        &mut q,
        &env,
        &f,
        events_for_node_change(Some(&n1c), Some(&n1d), &Default::default()),
        secs(3),
    );
    assert_eq!(q.queue_of("p"), Some(QueueName::Active));
}

#[test]
fn fit_rejection_moves_when_a_bound_pod_goes() {
    let (env, f, mut q) = (env(), fwk(), queue());
    q.add(&env.handle(), &f, plain("p", 0, "2"), secs(0));
    fail(&mut q, &env, &f, "p", &[FIT], secs(0));
    // An unscheduled pod deleted frees nothing (and was not nominated).
    let pending = bound(json!({"metadata": {"name": "other"}, "spec": {"containers": []}}));
    assert!(pod_change(Some(&pending), None).is_empty());
    let running =
        bound(json!({"metadata": {"name": "r"}, "spec": {"nodeName": "n1", "containers": []}}));
    let ev = pod_change(Some(&running), None);
    assert_eq!(ev[0].label, "AssignedPodDelete");
    send(&mut q, &env, &f, ev, secs(0));
    // Deleted while still backing off (failed this very second).
    assert_eq!(q.queue_of("p"), Some(QueueName::Backoff));
}

#[test]
fn node_taint_updates_requeue_every_node_add_plugin() {
    // Upstream registers a Queue-always NodeUpdateNodeTaint for plugins that register
    // NodeAdd without it, NodeResourcesFit included.
    let (env, f, mut q) = (env(), fwk(), queue());
    q.add(&env.handle(), &f, plain("p", 0, "2"), secs(0));
    fail(&mut q, &env, &f, "p", &[FIT], secs(0));
    let mut tainted = node("n", "1", json!({}));
    tainted.spec = Some(
        serde_json::from_value(json!({"taints": [{"key": "k", "effect": "NoSchedule"}]})).unwrap(),
    );
    let clean = node("n", "1", json!({}));
    let ev = events_for_node_change(Some(&tainted), Some(&clean), &Default::default());
    assert_eq!(ev[0].label, "NodeUpdateNodeTaint");
    send(&mut q, &env, &f, ev, secs(5));
    assert_eq!(q.queue_of("p"), Some(QueueName::Active));
}

#[test]
fn leftover_flush_after_five_minutes() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    q.add(&h, &f, plain("p", 0, "2"), secs(0));
    fail(&mut q, &env, &f, "p", &[FIT], secs(10));
    // Something changed (a node too small to help: its hint skips the pod), so a retry
    // is no longer known to repeat the failure.
    send(
        &mut q,
        &env,
        &f,
        node_add(&node("small", "1", json!({}))),
        secs(20),
    );
    assert_eq!(q.queue_of("p"), Some(QueueName::Unschedulable));
    // Ticks every 30s from the queue's first instant (0s): the first one more than five
    // minutes after the failure at 10s is 330s.
    assert_eq!(q.next_timer(secs(11)), Some(secs(330)));
    q.flush(&h, &f, secs(329));
    assert_eq!(q.queue_of("p"), Some(QueueName::Unschedulable));
    q.flush(&h, &f, secs(330));
    assert_eq!(q.queue_of("p"), Some(QueueName::Active));
    let last = q.take_moves().pop().unwrap();
    assert_eq!(
        (last.to, last.event.as_str(), last.at),
        (QueueName::Active, "UnschedulableTimeout", secs(330))
    );
    assert_eq!(q.next_timer(secs(330)), None);
}

#[test]
fn a_pod_nothing_happened_to_waits_for_the_next_event() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    q.add(&h, &f, plain("p", 0, "2"), secs(0));
    fail(&mut q, &env, &f, "p", &[FIT], secs(10));
    // Upstream's leftover flush would retry it at 330s to the same answer, and every
    // five minutes after: no timer is due, however far the clock goes.
    assert!(q.view(&f, secs(11)).unschedulable[0].quiet);
    assert_eq!(q.next_timer(secs(11)), None);
    q.flush(&h, &f, secs(1_000_000));
    assert_eq!(q.queue_of("p"), Some(QueueName::Unschedulable));
    // Any event (here one the pod's hints skip) makes the flush retry it again.
    send(
        &mut q,
        &env,
        &f,
        node_add(&node("small", "1", json!({}))),
        secs(1_000_000),
    );
    assert_eq!(q.queue_of("p"), Some(QueueName::Unschedulable));
    assert!(!q.view(&f, secs(1_000_000)).unschedulable[0].quiet);
    let due = q
        .next_timer(secs(1_000_000))
        .expect("the leftover flush is due");
    q.flush(&h, &f, due);
    assert_eq!(q.queue_of("p"), Some(QueueName::Active));
}

#[test]
fn a_pod_with_an_event_during_its_attempt_is_not_quiet() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    q.add(&h, &f, plain("p", 0, "2"), secs(0));
    let p = q.pop(&f, secs(1)).unwrap();
    // Another pod arriving is a change too, though no hint of this one hears it.
    q.add(&h, &f, plain("other", 0, "1"), secs(1));
    q.add_unschedulable_if_not_present(
        &h,
        &f,
        p,
        set(&[FIT]),
        BTreeSet::new(),
        false,
        "no".into(),
        secs(1),
    );
    assert_eq!(q.queue_of("p"), Some(QueueName::Unschedulable));
    assert!(q.next_timer(secs(2)).is_some());
}

#[test]
fn events_while_in_flight_are_replayed_on_failure() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    q.add(&h, &f, plain("a", 1, "2"), secs(0));
    q.add(&h, &f, plain("b", 0, "2"), secs(0));
    let a = q.pop(&f, secs(1)).unwrap();
    // Arrives while `a` is being scheduled.
    send(
        &mut q,
        &env,
        &f,
        node_add(&node("big", "8", json!({}))),
        secs(1),
    );
    assert_eq!(
        q.view(&f, secs(1)).in_flight[0].events,
        vec!["NodeAdd".to_string()]
    );
    q.add_unschedulable_if_not_present(
        &h,
        &f,
        a,
        set(&[FIT]),
        BTreeSet::new(),
        false,
        "no".into(),
        secs(1),
    );
    // The NodeAdd may help: backoffQ rather than unschedulable.
    assert_eq!(q.queue_of("a"), Some(QueueName::Backoff));
    assert!(!q.is_in_flight("a"));

    // `b` is popped after the event: nothing to replay.
    fail(&mut q, &env, &f, "b", &[FIT], secs(2));
    assert_eq!(q.queue_of("b"), Some(QueueName::Unschedulable));
    assert!(q.view(&f, secs(2)).in_flight.is_empty());
}

#[test]
fn pending_plugins_skip_the_backoff() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    q.add(&h, &f, plain("p", 0, "2"), secs(0));
    let p = q.pop(&f, secs(0)).unwrap();
    q.add_unschedulable_if_not_present(
        &h,
        &f,
        p,
        BTreeSet::new(),
        set(&[FIT]),
        false,
        "pending".into(),
        secs(0),
    );
    assert_eq!(q.queue_of("p"), Some(QueueName::Unschedulable));
    send(
        &mut q,
        &env,
        &f,
        node_add(&node("big", "8", json!({}))),
        secs(0),
    );
    // Still within its backoff, yet straight to activeQ.
    assert_eq!(q.queue_of("p"), Some(QueueName::Active));
}

#[test]
fn activate_moves_pods_and_marks_in_flight_ones() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    for (n, prio) in [("u", 3), ("b", 2), ("i", 1)] {
        q.add(&h, &f, plain(n, prio, "2"), secs(0));
    }
    fail(&mut q, &env, &f, "u", &[FIT], secs(0));
    let b = q.pop(&f, secs(0)).unwrap();
    q.add_unschedulable_if_not_present(
        &h,
        &f,
        b,
        BTreeSet::new(),
        BTreeSet::new(),
        true,
        "boom".into(),
        secs(0),
    );
    assert_eq!(q.queue_of("b"), Some(QueueName::ErrorBackoff));
    let i = q.pop(&f, secs(0)).unwrap();

    q.activate(
        &h,
        &f,
        &["u".into(), "b".into(), "i".into(), "unknown".into()],
        secs(0),
    );
    assert_eq!(q.queue_of("u"), Some(QueueName::Active));
    assert_eq!(q.queue_of("b"), Some(QueueName::Active));
    assert_eq!(
        q.view(&f, secs(0)).in_flight[0].events,
        vec!["ForceActivate".to_string()]
    );
    // The activation counts when `i` fails: retried after its backoff.
    q.add_unschedulable_if_not_present(
        &h,
        &f,
        i,
        set(&[FIT]),
        BTreeSet::new(),
        false,
        "no".into(),
        secs(0),
    );
    assert_eq!(q.queue_of("i"), Some(QueueName::Backoff));
}

#[test]
fn errors_back_off_on_their_own_count_and_queue() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    q.add(&h, &f, plain("p", 0, "2"), secs(0));
    let err = |q: &mut SchedulingQueue, now| {
        let p = q.pop(&f, now).unwrap();
        q.add_unschedulable_if_not_present(
            &h,
            &f,
            p,
            set(&[FIT]),
            BTreeSet::new(),
            true,
            "api down".into(),
            now,
        );
    };
    err(&mut q, secs(0));
    let v = q.view(&f, secs(0));
    assert!(v.backoff[0].error);
    assert_eq!(v.backoff[0].pod.consecutive_errors_count, 1);
    assert_eq!(v.backoff[0].expiry, Some(secs(1)));
    // The error queue is not popped early.
    assert!(q.pop(&f, secs(0)).is_none());
    q.flush(&h, &f, secs(2));
    err(&mut q, secs(2));
    assert_eq!(q.view(&f, secs(2)).backoff[0].expiry, Some(secs(4)));
    q.flush(&h, &f, secs(5));
    // An unschedulable failure resets the error count and uses its own (1 so far).
    fail(&mut q, &env, &f, "p", &[FIT], secs(5));
    let p = q.get("p").unwrap();
    assert_eq!((p.consecutive_errors_count, p.unschedulable_count), (0, 1));
    assert_eq!(q.backoff_expiry(p), Some(secs(6)));
}

#[test]
fn empty_active_queue_pops_from_backoff() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    q.add(&h, &f, plain("p", 0, "2"), secs(0));
    fail(&mut q, &env, &f, "p", &[FIT], secs(0));
    send(
        &mut q,
        &env,
        &f,
        node_add(&node("big", "8", json!({}))),
        secs(0),
    );
    assert_eq!(q.queue_of("p"), Some(QueueName::Backoff));
    let p = q.pop(&f, secs(0)).unwrap();
    assert_eq!((p.uid(), p.attempts), ("p", 2));
    assert!(p.unschedulable_plugins.is_empty());
}

#[test]
fn spread_rejections_move_on_matching_pods_of_their_namespace() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    let spread = pod(
        json!({"metadata": {"name": "s", "namespace": "a", "labels": {"app": "web"}},
        "spec": {"containers": [], "topologySpreadConstraints": [{"maxSkew": 1,
        "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}}}]}}),
    );
    q.add(&h, &f, spread, secs(0));
    fail(&mut q, &env, &f, "s", &["PodTopologySpread"], secs(0));
    let other_ns = bound(
        json!({"metadata": {"name": "x", "namespace": "b", "labels": {"app": "web"}},
        "spec": {"nodeName": "n1", "containers": []}}),
    );
    let unrelated = bound(
        json!({"metadata": {"name": "y", "namespace": "a", "labels": {"app": "db"}},
        "spec": {"nodeName": "n1", "containers": []}}),
    );
    send(&mut q, &env, &f, pod_change(None, Some(&other_ns)), secs(5));
    send(
        &mut q,
        &env,
        &f,
        pod_change(None, Some(&unrelated)),
        secs(5),
    );
    // A node without the topology key does not count either.
    send(
        &mut q,
        &env,
        &f,
        node_add(&node("n", "8", json!({}))),
        secs(5),
    );
    assert_eq!(q.queue_of("s"), Some(QueueName::Unschedulable));
    let matching = bound(
        json!({"metadata": {"name": "z", "namespace": "a", "labels": {"app": "web"}},
        "spec": {"nodeName": "n1", "containers": []}}),
    );
    send(&mut q, &env, &f, pod_change(Some(&matching), None), secs(5));
    assert_eq!(q.queue_of("s"), Some(QueueName::Active));
}

#[test]
fn affinity_rejections_move_when_a_matching_pod_lands() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [],
        "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}}}}));
    q.add(&h, &f, p, secs(0));
    fail(&mut q, &env, &f, "p", &["InterPodAffinity"], secs(0));
    let web = bound(
        json!({"metadata": {"name": "w", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"nodeName": "n1", "containers": []}}),
    );
    send(&mut q, &env, &f, pod_change(None, Some(&web)), secs(5));
    // A new node without the topology key cannot help the affinity.
    send(
        &mut q,
        &env,
        &f,
        node_add(&node("n", "8", json!({}))),
        secs(5),
    );
    assert_eq!(q.queue_of("p"), Some(QueueName::Unschedulable));
    let mut db = web.clone();
    db.metadata.labels = Some([("app".to_string(), "db".to_string())].into());
    let ev = pod_change(Some(&web), Some(&db));
    assert_eq!(ev[0].label, "AssignedPodUpdatePodLabel");
    send(&mut q, &env, &f, ev, secs(5));
    assert_eq!(q.queue_of("p"), Some(QueueName::Active));
}

#[test]
fn taint_and_node_affinity_hints() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    q.add(&h, &f, plain("t", 0, "1"), secs(0));
    let na = pod(
        json!({"metadata": {"name": "a"}, "spec": {"containers": [], "nodeSelector": {"disk": "ssd"}}}),
    );
    q.add(&h, &f, na, secs(0));
    fail(&mut q, &env, &f, "t", &["TaintToleration"], secs(0));
    fail(&mut q, &env, &f, "a", &["NodeAffinity"], secs(0));
    let mut tainted = node("n", "8", json!({}));
    tainted.spec = Some(
        serde_json::from_value(json!({"taints": [{"key": "k", "effect": "NoSchedule"}]})).unwrap(),
    );
    send(&mut q, &env, &f, node_add(&tainted), secs(5));
    assert_eq!(q.queue_of("t"), Some(QueueName::Unschedulable));
    assert_eq!(q.queue_of("a"), Some(QueueName::Unschedulable));
    let ssd = node("m", "8", json!({"disk": "ssd"}));
    send(&mut q, &env, &f, node_add(&ssd), secs(5));
    assert_eq!(q.queue_of("t"), Some(QueueName::Active));
    assert_eq!(q.queue_of("a"), Some(QueueName::Active));
}

#[test]
fn update_of_a_waiting_pod_goes_through_the_hints() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    let p = plain("p", 0, "2");
    q.add(&h, &f, p.clone(), secs(0));
    fail(&mut q, &env, &f, "p", &[FIT], secs(0));
    // Asking for less is a scale-down of the pod itself: Queue.
    let smaller = plain("p", 0, "1");
    q.update(&h, &f, smaller.clone(), secs(3));
    assert_eq!(q.queue_of("p"), Some(QueueName::Active));
    assert_eq!(
        q.get("p").unwrap().pod_info.resource.resource.milli_cpu,
        1000
    );
    // In flight, an update is recorded and the latest version comes back on failure.
    let popped = q.pop(&f, secs(3)).unwrap();
    let labelled =
        pod(json!({"metadata": {"name": "p", "labels": {"x": "y"}}, "spec": {"containers": []}}));
    q.update(&h, &f, labelled, secs(3));
    assert_eq!(
        q.view(&f, secs(3)).in_flight[0].events,
        vec![
            "UnschedulablePodUpdatePodLabel".to_string(),
            "UnschedulablePodUpdatePodScaleDown".to_string()
        ]
    );
    q.add_unschedulable_if_not_present(
        &h,
        &f,
        popped,
        set(&[FIT]),
        BTreeSet::new(),
        false,
        "no".into(),
        secs(3),
    );
    // The scale-down replayed: backoffQ.
    assert_eq!(q.queue_of("p"), Some(QueueName::Backoff));
    assert!(q.get("p").unwrap().pod_info.labels().contains_key("x"));
    // An unknown pod's update adds it.
    q.update(&h, &f, plain("new", 0, "1"), secs(3));
    assert_eq!(q.queue_of("new"), Some(QueueName::Active));
    q.delete("new");
    q.delete("p");
    assert!(q.is_empty());
}

#[test]
fn nominated_pod_deletion_only_considers_lower_or_equal_priority() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    q.add(&h, &f, plain("low", 1, "2"), secs(0));
    q.add(&h, &f, plain("high", 9, "2"), secs(0));
    fail(&mut q, &env, &f, "high", &[FIT], secs(0));
    fail(&mut q, &env, &f, "low", &[FIT], secs(0));
    let nominated = bound(
        json!({"metadata": {"name": "n"}, "spec": {"priority": 5, "containers": []},
        "status": {"nominatedNodeName": "n1"}}),
    );
    let ev = pod_change(Some(&nominated), None);
    assert_eq!(ev[0].pre_check, Some(PreCheck::PriorityAtMost(5)));
    send(&mut q, &env, &f, ev, secs(10));
    assert_eq!(q.queue_of("low"), Some(QueueName::Active));
    assert_eq!(q.queue_of("high"), Some(QueueName::Unschedulable));
}

/// A filter plugin of the test's own that registers one custom event, as an out-of-tree
/// plugin declares its EnqueueExtensions.
struct GroupGate;

impl crate::framework::plugin::Plugin for GroupGate {
    fn name(&self) -> &'static str {
        "GroupGate"
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(vec![ClusterEventWithHint::new(
            R::Custom("PodGroup".into()),
            A::ADD,
        )])
    }
    fn as_filter(&self) -> Option<&dyn crate::framework::plugin::FilterPlugin> {
        Some(self)
    }
}

impl crate::framework::plugin::FilterPlugin for GroupGate {
    fn filter(
        &self,
        _: &Handle,
        _: &crate::framework::CycleState,
        _: &PodInfo,
        _: &crate::framework::NodeInfo,
    ) -> crate::framework::Status {
        crate::framework::Status::success()
    }
}

#[test]
fn out_of_tree_plugins_register_their_own_events() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    q.add(&h, &f, plain("p", 0, "1"), secs(0));
    // A rejector that is not in the profile has no hints: nothing moves the pod.
    fail(&mut q, &env, &f, "p", &["Coscheduling"], secs(0));
    let group = json!({"metadata": {"name": "g", "namespace": "default"}});
    let ev = events_for_object("PodGroup", None, Some(&group));
    send(&mut q, &env, &f, ev.clone(), secs(1));
    assert_eq!(q.queue_of("p"), Some(QueueName::Unschedulable));
    // In a profile that enables it, its registration moves the pods it rejected.
    let mut registry = in_tree();
    registry.register("GroupGate", |_| Ok(Arc::new(GroupGate)));
    let mut plugins = Plugins::default();
    plugins
        .filter
        .enabled
        .push(crate::config::PluginRef::new("GroupGate", 0));
    let profile = default_profile(
        "default-scheduler".into(),
        None,
        &plugins,
        vec![],
        &Default::default(),
    );
    let f = match Framework::new(&registry, &profile, &Default::default()) {
        Ok(f) => f,
        Err(e) => panic!("profile with GroupGate: {e}"),
    };
    q.delete("p");
    q.add(&h, &f, plain("p2", 0, "1"), secs(2));
    fail(&mut q, &env, &f, "p2", &["GroupGate"], secs(2));
    send(&mut q, &env, &f, ev, secs(4));
    assert_eq!(q.queue_of("p2"), Some(QueueName::Active));
}

#[test]
fn max_backoff_zero_disables_backoff() {
    let (env, f) = (env(), fwk());
    let mut q = SchedulingQueue::new(Duration::from_secs(1), Duration::ZERO);
    q.add(&env.handle(), &f, plain("p", 0, "2"), secs(0));
    let p = q.pop(&f, secs(0)).unwrap();
    q.add_unschedulable_if_not_present(
        &env.handle(),
        &f,
        p,
        BTreeSet::new(),
        BTreeSet::new(),
        true,
        "e".into(),
        secs(0),
    );
    assert_eq!(q.queue_of("p"), Some(QueueName::Active));
}

#[test]
fn volume_hints_read_the_objects_of_the_event() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [],
        "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]}}));
    q.add(&h, &f, p, secs(0));
    fail(&mut q, &env, &f, "p", &["VolumeBinding"], secs(0));
    let claim = |name: &str, ns: &str| json!({"metadata": {"name": name, "namespace": ns}});
    send(
        &mut q,
        &env,
        &f,
        events_for_object(
            "PersistentVolumeClaim",
            None,
            Some(&claim("other", "default")),
        ),
        secs(5),
    );
    send(
        &mut q,
        &env,
        &f,
        events_for_object(
            "PersistentVolumeClaim",
            None,
            Some(&claim("data", "elsewhere")),
        ),
        secs(5),
    );
    // CSINode updates matter to VolumeBinding only through the migrated-plugins annotation.
    let csi = json!({"metadata": {"name": "n"}, "spec": {"drivers": []}});
    send(
        &mut q,
        &env,
        &f,
        events_for_object("CSINode", Some(&csi), Some(&csi)),
        secs(5),
    );
    assert_eq!(q.queue_of("p"), Some(QueueName::Unschedulable));
    send(
        &mut q,
        &env,
        &f,
        events_for_object(
            "PersistentVolumeClaim",
            None,
            Some(&claim("data", "default")),
        ),
        secs(5),
    );
    assert_eq!(q.queue_of("p"), Some(QueueName::Active));
    q.delete("p");

    // VolumeZone: only a WaitForFirstConsumer class may help.
    q.add(
        &h,
        &f,
        pod(json!({"metadata": {"name": "z"}, "spec": {"containers": []}})),
        secs(6),
    );
    let z = q.pop(&f, secs(6)).unwrap();
    assert_eq!(z.uid(), "z");
    q.add_unschedulable_if_not_present(
        &h,
        &f,
        z,
        set(&["VolumeZone"]),
        BTreeSet::new(),
        false,
        "zone".into(),
        secs(6),
    );
    let immediate =
        json!({"metadata": {"name": "fast"}, "provisioner": "x", "volumeBindingMode": "Immediate"});
    send(
        &mut q,
        &env,
        &f,
        events_for_object("StorageClass", None, Some(&immediate)),
        secs(10),
    );
    assert_eq!(q.queue_of("z"), Some(QueueName::Unschedulable));
    let wffc = json!({"metadata": {"name": "late"}, "provisioner": "x", "volumeBindingMode": "WaitForFirstConsumer"});
    send(
        &mut q,
        &env,
        &f,
        events_for_object("StorageClass", None, Some(&wffc)),
        secs(10),
    );
    assert_eq!(q.queue_of("z"), Some(QueueName::Active));

    // NodeVolumeLimits: a driver's limit going up.
    q.delete("z");
    q.add(&h, &f, plain("c", 0, "1"), secs(11));
    fail(&mut q, &env, &f, "c", &["NodeVolumeLimits"], secs(11));
    let limits = |n: i32| {
        json!({"metadata": {"name": "n"}, "spec": {"drivers": [
        {"name": "d", "nodeID": "n", "allocatable": {"count": n}}]}})
    };
    send(
        &mut q,
        &env,
        &f,
        events_for_object("CSINode", Some(&limits(3)), Some(&limits(2))),
        secs(15),
    );
    assert_eq!(q.queue_of("c"), Some(QueueName::Unschedulable));
    send(
        &mut q,
        &env,
        &f,
        events_for_object("CSINode", Some(&limits(2)), Some(&limits(4))),
        secs(15),
    );
    assert_eq!(q.queue_of("c"), Some(QueueName::Active));
}

#[test]
fn cordon_ports_and_preemption_hints() {
    let (env, f, mut q) = (env(), fwk(), queue());
    let h = env.handle();
    q.add(&h, &f, plain("u", 0, "1"), secs(0));
    fail(&mut q, &env, &f, "u", &["NodeUnschedulable"], secs(0));
    let mut cordoned = node("n", "8", json!({}));
    cordoned.spec = Some(serde_json::from_value(json!({"unschedulable": true})).unwrap());
    // A cordoned node added does not help; uncordoning does.
    send(&mut q, &env, &f, node_add(&cordoned), secs(5));
    assert_eq!(q.queue_of("u"), Some(QueueName::Unschedulable));
    let uncordoned = node("n", "8", json!({}));
    send(
        &mut q,
        &env,
        &f,
        events_for_node_change(Some(&cordoned), Some(&uncordoned), &Default::default()),
        secs(5),
    );
    assert_eq!(q.queue_of("u"), Some(QueueName::Active));
    q.delete("u");

    let ported = pod(
        json!({"metadata": {"name": "port"}, "spec": {"containers": [
        {"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}}),
    );
    q.add(&h, &f, ported, secs(6));
    fail(
        &mut q,
        &env,
        &f,
        "port",
        &["NodePorts", "DefaultPreemption"],
        secs(6),
    );
    // A bound pod on another port goes: skip (DefaultPreemption always skips too).
    let on_port = |port: i32| {
        bound(
            json!({"metadata": {"name": format!("h{port}")}, "spec": {"nodeName": "n", "containers": [
            {"name": "c", "ports": [{"containerPort": 80, "hostPort": port}]}]}}),
        )
    };
    send(
        &mut q,
        &env,
        &f,
        pod_change(Some(&on_port(9090)), None),
        secs(10),
    );
    assert_eq!(q.queue_of("port"), Some(QueueName::Unschedulable));
    // The cluster keeps bound pods packed, their containers as text: the hint still
    // sees the deleted pod's host port.
    let packed = Arc::new(PodInfo::new(Arc::new(on_port(8080))).packed());
    assert!(packed.is_packed() && packed.whole().is_none());
    send(
        &mut q,
        &env,
        &f,
        events_for_pod_change(Some(&packed), None, &crate::features::Features::default()),
        secs(10),
    );
    assert_eq!(q.queue_of("port"), Some(QueueName::Active));
}

#[test]
fn pods_are_judged_by_their_own_profile() {
    let env = env();
    let default = fwk();
    // A second profile without NodeResourcesFit's hints: NodeResourcesFit disabled.
    let mut plugins = Plugins::default();
    plugins.multi_point.disabled = vec![crate::config::PluginRef::new(FIT, 0)];
    let other = Framework::new(
        &in_tree(),
        &default_profile("other".into(), None, &plugins, vec![], &Default::default()),
        &Default::default(),
    )
    .unwrap();
    let frameworks = [default.clone(), other.clone()];
    let mut q = queue();
    let h = env.handle();
    let mine = plain("mine", 0, "2");
    let theirs = pod(
        json!({"metadata": {"name": "theirs"}, "spec": {"schedulerName": "other",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}),
    );
    q.add(&h, &default, mine, secs(0));
    q.add(&h, &other, theirs, secs(0));
    for (uid, f) in [("mine", &default), ("theirs", &other)] {
        let p = q.pop(f, secs(0)).unwrap();
        assert_eq!(p.uid(), uid);
        q.add_unschedulable_if_not_present(
            &h,
            f,
            p,
            set(&[FIT]),
            BTreeSet::new(),
            false,
            "no".into(),
            secs(0),
        );
    }
    for e in node_add(&node("big", "8", json!({}))) {
        q.on_event(&h, &frameworks, &e, secs(5));
    }
    assert_eq!(q.queue_of("mine"), Some(QueueName::Active));
    // The other profile has no NodeResourcesFit, so no hint can move its pod.
    assert_eq!(q.queue_of("theirs"), Some(QueueName::Unschedulable));
}
