use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::*;
use crate::framework::Snapshot;
use crate::plugins::testing::{Env, listers, node_obj, pod, test_now};

const NS: &str = "default";

fn pod_group(name: &str, min_member: i32, extra: Value) -> Value {
    let mut v = json!({"kind": "PodGroup", "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "metadata": {"name": name, "namespace": NS}, "spec": {"minMember": min_member}});
    if let (Some(spec), Value::Object(extra)) = (v["spec"].as_object_mut(), extra) {
        spec.extend(extra);
    }
    v
}

/// A pod of group `group` (none when empty) requesting `cpu`.
fn member_json(name: &str, group: &str, cpu: &str) -> Value {
    let labels = if group.is_empty() {
        json!({})
    } else {
        json!({POD_GROUP_LABEL: group})
    };
    json!({"kind": "Pod", "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}})
}

fn member(name: &str, group: &str) -> Arc<PodInfo> {
    pod(member_json(name, group, "1"))
}

fn nodes(n: usize, cpu: &str) -> Vec<Arc<k8s_openapi::api::core::v1::Node>> {
    (1..=n)
        .map(|i| {
            node_obj(json!({"metadata": {"name": format!("n{i}")},
                "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "10"}}}))
        })
        .collect()
}

/// A cluster of two 4-cpu nodes with the given objects (Pods and PodGroups) in the listers.
fn cluster(objects: &[Value]) -> Env {
    Env::new(Snapshot::new(nodes(2, "4"), []), listers(objects))
}

/// Group `pg` with `min` as minMember and `count` pending members `p-0`...
fn gang(min: i32, count: usize, extra: Value) -> Vec<Value> {
    let mut objs = vec![pod_group("pg", min, extra)];
    objs.extend((0..count).map(|i| member_json(&format!("p-{i}"), "pg", "1")));
    objs
}

fn plugin(args: Value) -> Coscheduling {
    let a = CoschedulingArgs::from_plugin_args(Some(&PluginArgs::Other(args))).unwrap();
    Coscheduling::new(a).unwrap()
}

/// Assumes the pod on `node` (what the scheduler does before Reserve and Permit).
fn assume(env: &mut Env, p: &PodInfo, node: &str) {
    env.snapshot.add_pod(Arc::new(p.bound_to(node)));
}

fn pre_filter(pl: &Coscheduling, env: &Env, p: &PodInfo) -> (Status, CycleState) {
    let mut state = CycleState::new();
    let (r, s) = pl.pre_filter(&env.handle(), &mut state, p);
    assert!(r.is_none());
    (s, state)
}

fn permit(pl: &Coscheduling, env: &Env, p: &PodInfo) -> (Status, Duration, CycleState) {
    let mut state = CycleState::new();
    let (s, d) = pl.permit(&env.handle(), &mut state, p, "n1");
    (s, d, state)
}

fn post_filter(pl: &Coscheduling, env: &Env, p: &PodInfo) -> Status {
    let mut state = CycleState::new();
    let statuses = NodeToStatus::new(Status::unschedulable("Insufficient cpu"));
    let (r, s) = pl.post_filter(&env.handle(), &mut state, p, &statuses);
    assert_eq!(r, Some(PostFilterResult::default()));
    s
}

fn outcome(env: &Env, uid: &str) -> Option<Status> {
    env.waiting.get(uid).and_then(|w| w.outcome)
}

/// Members p-0..p-{n-1} assumed and waiting at Permit, each checked to Wait.
fn reserve_and_wait(pl: &Coscheduling, env: &mut Env, n: usize) {
    for i in 0..n {
        let p = member(&format!("p-{i}"), "pg");
        assume(env, &p, "n1");
        let (s, d, _) = permit(pl, env, &p);
        assert!(s.is_wait(), "p-{i}: {s}");
        env.waiting.add(p, "n1", &[(NAME.to_string(), d)], env.now);
    }
}

#[test]
fn gang_waits_until_min_member_then_all_are_allowed() {
    let mut env = cluster(&gang(4, 4, json!({})));
    let pl = Coscheduling::default();
    for i in 0..3 {
        let p = member(&format!("p-{i}"), "pg");
        assert!(pre_filter(&pl, &env, &p).0.is_success());
        assume(&mut env, &p, "n1");
        let (s, d, state) = permit(&pl, &env, &p);
        assert!(s.is_wait());
        assert_eq!(s.code(), Code::Wait);
        assert_eq!(d, Duration::from_secs(60));
        assert_eq!(
            s.message(),
            format!(
                "waiting for PodGroup default/pg: {} of minMember 4 assumed or bound",
                i + 1
            )
        );
        let st = state.read::<GroupState>(STATE_KEY).unwrap();
        assert_eq!(st.assigned, Some(i + 1));
        // The first member to wait asks for its siblings to be activated.
        let activate = state.read::<PodsToActivate>(PODS_TO_ACTIVATE_KEY);
        if i == 0 {
            assert_eq!(
                state.read::<PermitState>(PERMIT_STATE_KEY),
                Ok(&PermitState {
                    activate: true,
                    held_back: false
                })
            );
            let keys: Vec<&String> = activate.unwrap().pods.keys().collect();
            assert_eq!(keys, ["default/p-1", "default/p-2", "default/p-3"]);
        } else {
            assert!(activate.is_err());
            assert!(state.read::<PermitState>(PERMIT_STATE_KEY).is_err());
        }
        env.waiting.add(p, "n1", &[(NAME.to_string(), d)], env.now);
    }
    assert!(env.waiting.list().iter().all(|w| w.outcome.is_none()));

    let last = member("p-3", "pg");
    assume(&mut env, &last, "n2");
    let (s, d, state) = permit(&pl, &env, &last);
    assert!(s.is_success());
    assert_eq!(d, Duration::ZERO);
    for uid in ["p-0", "p-1", "p-2"] {
        assert_eq!(outcome(&env, uid), Some(Status::success()), "{uid}");
    }
    let st = state.read::<GroupState>(STATE_KEY).unwrap();
    assert_eq!(
        st.allowed_waiting,
        ["default/p-0", "default/p-1", "default/p-2"]
    );
    assert_eq!(st.assigned, Some(4));
}

#[test]
fn members_outside_the_group_are_left_alone_at_permit() {
    let mut objs = gang(2, 2, json!({}));
    objs.push(pod_group("other", 2, json!({})));
    objs.push(member_json("o-0", "other", "1"));
    objs.push(member_json("o-1", "other", "1"));
    let mut env = cluster(&objs);
    let pl = Coscheduling::default();
    let o = member("o-0", "other");
    assume(&mut env, &o, "n1");
    let (s, d, _) = permit(&pl, &env, &o);
    env.waiting.add(o, "n1", &[(NAME.to_string(), d)], env.now);
    assert!(s.is_wait());
    reserve_and_wait(&pl, &mut env, 1);
    let p1 = member("p-1", "pg");
    assume(&mut env, &p1, "n1");
    assert!(permit(&pl, &env, &p1).0.is_success());
    assert_eq!(outcome(&env, "p-0"), Some(Status::success()));
    assert_eq!(outcome(&env, "o-0"), None);
}

#[test]
fn pods_without_a_group_pass_and_a_missing_group_is_refused_at_permit() {
    let env = cluster(&[
        member_json("solo", "", "1"),
        member_json("lost", "nope", "1"),
    ]);
    let pl = Coscheduling::default();
    let solo = member("solo", "");
    let (s, state) = pre_filter(&pl, &env, &solo);
    assert!(s.is_success());
    assert!(state.keys().next().is_none());
    assert_eq!(permit(&pl, &env, &solo).0, Status::success());

    let lost = member("lost", "nope");
    let (s, state) = pre_filter(&pl, &env, &lost);
    assert!(s.is_success());
    assert_eq!(
        state.render()[0].label,
        "Coscheduling: podGroup default/nope: not found (the pod is not held back)"
    );
    let (s, d, _) = permit(&pl, &env, &lost);
    assert_eq!(s, Status::unschedulable("PodGroup not found"));
    assert_eq!(d, Duration::ZERO);
    // Upstream answers this for every pod it cannot place, grouped or not.
    assert_eq!(
        post_filter(&pl, &env, &solo),
        Status::unschedulable("can not find pod group")
    );
}

#[test]
fn a_group_short_of_min_member_is_refused_at_pre_filter() {
    let env = cluster(&gang(3, 2, json!({})));
    let pl = Coscheduling::default();
    let (s, state) = pre_filter(&pl, &env, &member("p-0", "pg"));
    assert_eq!(
        s,
        Status::unresolvable(
            "pre-filter pod p-0 cannot find enough sibling pods, current pods number: 2, minMember of group: 3"
        )
    );
    let st = state.read::<GroupState>(STATE_KEY).unwrap();
    assert_eq!(st.members, Some((2, 0)));

    // A pod given on its own (not in the pod lister) counts itself.
    let extra = member("p-9", "pg");
    assert!(pre_filter(&pl, &env, &extra).0.is_success());
}

#[test]
fn gated_members_only_pass_when_the_group_has_spares() {
    let mut objs = gang(3, 2, json!({}));
    let mut gated = member_json("p-2", "pg", "1");
    gated["spec"]["schedulingGates"] = json!([{"name": "wait"}]);
    objs.push(gated);
    let pl = Coscheduling::default();
    let e = cluster(&objs);
    assert_eq!(
        pre_filter(&pl, &e, &member("p-0", "pg")).0,
        Status::unresolvable(
            "pre-filter pod p-0 cannot proceed due to gated pods in the same PodGroup"
        )
    );
    objs.push(member_json("p-3", "pg", "1"));
    let e = cluster(&objs);
    let (s, state) = pre_filter(&pl, &e, &member("p-0", "pg"));
    assert!(s.is_success());
    assert_eq!(
        state.read::<GroupState>(STATE_KEY).unwrap().members,
        Some((4, 1))
    );
}

#[test]
fn min_resources_are_checked_against_the_cluster_without_the_group() {
    // Two 4-cpu nodes; an outsider takes 3 cpu on n1, a member 2 cpu on n2.
    let mut objs = gang(2, 2, json!({"minResources": {"cpu": "5"}}));
    objs.push(member_json("outsider", "", "3"));
    let mut e = cluster(&objs);
    e.snapshot.add_pod(Arc::new(
        pod(member_json("outsider", "", "3")).bound_to("n1"),
    ));
    e.snapshot
        .add_pod(Arc::new(pod(member_json("p-1", "pg", "2")).bound_to("n2")));
    let pl = Coscheduling::default();
    // Left for the group: 1 on n1, 4 on n2 (the member's own request does not count).
    let (s, state) = pre_filter(&pl, &e, &member("p-0", "pg"));
    assert!(s.is_success(), "{s}");
    let st = state.read::<GroupState>(STATE_KEY).unwrap();
    assert_eq!(st.resources, ResourceCheck::Passed);
    let until = test_now() + SignedDuration::from_secs(60);
    assert_eq!(pl.records().permitted_until["default/pg"], until);
    // Remembered: not checked again while it lasts.
    let (s, state) = pre_filter(&pl, &e, &member("p-0", "pg"));
    assert!(s.is_success());
    assert_eq!(
        state.read::<GroupState>(STATE_KEY).unwrap().resources,
        ResourceCheck::Remembered(until)
    );

    let objs = gang(2, 2, json!({"minResources": {"cpu": "7", "memory": "1Gi"}}));
    let mut e = cluster(&objs);
    e.snapshot.add_pod(Arc::new(
        pod(member_json("outsider", "", "3")).bound_to("n1"),
    ));
    let (s, state) = pre_filter(&Coscheduling::default(), &e, &member("p-0", "pg"));
    assert_eq!(s, Status::unresolvable("resource gap: map[cpu:2]"));
    assert_eq!(
        state.read::<GroupState>(STATE_KEY).unwrap().resources,
        ResourceCheck::Gap("resource gap: map[cpu:2]".into())
    );
    // minMember counts as a pods request: 2 nodes x 10 pods cannot hold 25.
    let e = cluster(&gang(25, 25, json!({"minResources": {}})));
    let (s, _) = pre_filter(&Coscheduling::default(), &e, &member("p-0", "pg"));
    assert_eq!(s, Status::unresolvable("resource gap: map[pods:5]"));
}

#[test]
fn post_filter_rejects_the_waiting_members() {
    let mut env = cluster(&gang(4, 4, json!({})));
    let pl = Coscheduling::default();
    reserve_and_wait(&pl, &mut env, 2);
    let failing = member("p-2", "pg");
    let mut state = CycleState::new();
    assert!(
        pl.pre_filter(&env.handle(), &mut state, &failing)
            .1
            .is_success()
    );
    let statuses = NodeToStatus::new(Status::unschedulable("Insufficient cpu"));
    let (r, s) = pl.post_filter(&env.handle(), &mut state, &failing, &statuses);
    assert_eq!(r, Some(PostFilterResult::default()));
    assert_eq!(
        s,
        Status::unschedulable(
            "PodGroup default/pg gets rejected due to Pod p-2 is unschedulable even after PostFilter"
        )
    );
    for uid in ["p-0", "p-1"] {
        let o = outcome(&env, uid).unwrap();
        assert_eq!(o.message(), "optimistic rejection in PostFilter");
        assert_eq!(o.plugin(), NAME);
        assert!(o.is_rejected());
    }
    let st = state.read::<GroupState>(STATE_KEY).unwrap();
    assert_eq!(st.rejected_waiting, ["default/p-0", "default/p-1"]);
    assert_eq!(pl.records().last_failed["default/pg"], test_now());
    // Backoff is off by default.
    assert!(pl.records().backed_off_until.is_empty());
}

#[test]
fn post_filter_spares_a_group_that_is_nearly_or_fully_placed() {
    let mut env = cluster(&gang(10, 10, json!({})));
    let pl = Coscheduling::default();
    reserve_and_wait(&pl, &mut env, 9);
    // One of ten left: 10% is within podGroupRejectPercentage (10).
    let s = post_filter(&pl, &env, &member("p-9", "pg"));
    assert_eq!(s, Status::code_only(Code::Unschedulable));
    assert!(env.waiting.list().iter().all(|w| w.outcome.is_none()));
    assert!(pl.records().last_failed.is_empty());

    let strict = plugin(json!({"podGroupRejectPercentage": 0}));
    let s = post_filter(&strict, &env, &member("p-9", "pg"));
    assert!(s.message().starts_with("PodGroup default/pg gets rejected"));
    assert!(outcome(&env, "p-0").is_some_and(|o| o.is_rejected()));

    // minMember already placed: nothing to give up.
    let mut env2 = cluster(&gang(2, 3, json!({})));
    assume(&mut env2, &member("p-0", "pg"), "n1");
    assume(&mut env2, &member("p-1", "pg"), "n2");
    let s = post_filter(&pl, &env2, &member("p-2", "pg"));
    assert_eq!(s, Status::code_only(Code::Unschedulable));
}

#[test]
fn unreserve_rejects_the_waiting_members() {
    let mut env = cluster(&gang(3, 3, json!({})));
    let pl = Coscheduling::default();
    reserve_and_wait(&pl, &mut env, 2);
    // p-1 timed out and is unreserved: p-0, still waiting, is rejected.
    env.waiting.reject("p-1", NAME, "timeout");
    let p1 = member("p-1", "pg");
    env.snapshot.remove_pod("n1", &p1.key);
    let mut state = CycleState::new();
    pl.unreserve(&env.handle(), &mut state, &p1, "n1");
    let o = outcome(&env, "p-0").unwrap();
    assert_eq!(o.message(), "rejection in Unreserve");
    assert_eq!(o.plugin(), NAME);
    assert_eq!(outcome(&env, "p-1").unwrap().message(), "timeout");
    let st = state.read::<GroupState>(STATE_KEY).unwrap();
    assert_eq!(st.rejected_waiting, ["default/p-0"]);
    assert_eq!(pl.records().last_failed["default/pg"], test_now());
    // Reserve itself does nothing.
    assert!(
        pl.reserve(&env.handle(), &mut state, &p1, "n1")
            .is_success()
    );
}

#[test]
fn a_failed_group_backs_off() {
    let mut env = cluster(&gang(3, 3, json!({})));
    let pl = plugin(json!({"podGroupBackoffSeconds": 30}));
    reserve_and_wait(&pl, &mut env, 1);
    let s = post_filter(&pl, &env, &member("p-1", "pg"));
    assert!(s.is_rejected());
    let until = test_now() + SignedDuration::from_secs(30);
    assert_eq!(pl.records().backed_off_until["default/pg"], until);
    let (s, state) = pre_filter(&pl, &env, &member("p-2", "pg"));
    assert_eq!(
        s,
        Status::unresolvable("podGroup default/pg failed recently")
    );
    assert_eq!(
        state
            .read::<GroupState>(STATE_KEY)
            .unwrap()
            .backed_off_until,
        Some(until)
    );
    env.now = until;
    assert!(pre_filter(&pl, &env, &member("p-2", "pg")).0.is_success());
}

#[test]
fn wait_time_comes_from_the_group_then_the_args() {
    let pg = |t: Option<i32>| {
        let extra = t.map_or(json!({}), |t| json!({"scheduleTimeoutSeconds": t}));
        PodGroup::from_json("default/pg", &pod_group("pg", 2, extra)).unwrap()
    };
    let d = Coscheduling::default();
    assert_eq!(d.wait_time(&pg(None)), Duration::from_secs(60));
    assert_eq!(d.wait_time(&pg(Some(30))), Duration::from_secs(30));
    assert_eq!(d.wait_time(&pg(Some(0))), Duration::from_secs(60));
    let ten = plugin(json!({"permitWaitingTimeSeconds": 10}));
    assert_eq!(ten.wait_time(&pg(None)), Duration::from_secs(10));
    assert_eq!(ten.wait_time(&pg(Some(0))), Duration::from_secs(10));
    let zero = plugin(json!({"permitWaitingTimeSeconds": 0}));
    assert_eq!(zero.wait_time(&pg(None)), Duration::from_secs(60));
    assert_eq!(zero.wait_time(&pg(Some(0))), Duration::ZERO);

    let mut env = cluster(&gang(2, 2, json!({"scheduleTimeoutSeconds": 5})));
    let p = member("p-0", "pg");
    assume(&mut env, &p, "n1");
    assert_eq!(permit(&d, &env, &p).1, Duration::from_secs(5));
}

fn queued(p: Arc<PodInfo>, ts: i64) -> QueuedPodInfo {
    let t = Timestamp::from_second(ts).unwrap();
    let mut q = QueuedPodInfo::new(p, t);
    q.initial_attempt_timestamp = Some(t);
    q
}

fn order(pl: &Coscheduling, mut q: Vec<QueuedPodInfo>) -> Vec<String> {
    q.sort_by(|a, b| {
        if pl.less(a, b) {
            std::cmp::Ordering::Less
        } else if pl.less(b, a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    q.iter().map(|q| q.pod_info.name.clone()).collect()
}

#[test]
fn queue_sort_keeps_a_group_together() {
    let created = |s: &str| json!({"creationTimestamp": s});
    let mut a = pod_group("a", 2, json!({}));
    a["metadata"]
        .as_object_mut()
        .unwrap()
        .extend(created("1970-01-01T00:01:40Z").as_object().unwrap().clone());
    let mut b = pod_group("b", 2, json!({}));
    b["metadata"]
        .as_object_mut()
        .unwrap()
        .extend(created("1970-01-01T00:00:50Z").as_object().unwrap().clone());
    let l = listers(&[a, b]);
    let pl = Coscheduling::default();
    let pods = || {
        vec![
            queued(member("a-0", "a"), 10),
            queued(member("x", ""), 75),
            queued(member("b-1", "b"), 400),
            queued(member("a-1", "a"), 300),
            queued(member("b-0", "b"), 20),
        ]
    };
    // Before the plugin has seen the PodGroups, pods sort by their own first attempt.
    assert_eq!(order(&pl, pods()), ["a-0", "b-0", "x", "a-1", "b-1"]);
    pl.refresh(&l);
    // Group b was created at 50s, the lone pod came at 75s, group a at 100s.
    assert_eq!(order(&pl, pods()), ["b-0", "b-1", "x", "a-0", "a-1"]);

    // Priority comes first.
    let mut with_hi = pods();
    let mut hi = member_json("hi", "", "1");
    hi["spec"]["priority"] = json!(100);
    with_hi.push(queued(pod(hi), 999));
    assert_eq!(order(&pl, with_hi)[0], "hi");

    // A group that just failed goes behind the others until a member is permitted.
    let mut e = Env::new(Snapshot::new(nodes(2, "4"), []), l.clone());
    e.now = Timestamp::from_second(200).unwrap();
    let mut state = CycleState::new();
    pl.unreserve(&e.handle(), &mut state, &member("b-0", "b"), "n1");
    assert_eq!(order(&pl, pods()), ["x", "a-0", "a-1", "b-0", "b-1"]);
    let b0 = member("b-0", "b");
    assume(&mut e, &b0, "n1");
    let b1 = member("b-1", "b");
    assume(&mut e, &b1, "n1");
    assert!(permit(&pl, &e, &b1).0.is_success());
    assert_eq!(order(&pl, pods()), ["b-0", "b-1", "x", "a-0", "a-1"]);

    // Groups without a creation time sort first (Go's zero time), then by pod key.
    let l = listers(&[pod_group("a", 2, json!({})), pod_group("b", 2, json!({}))]);
    let pl = Coscheduling::default();
    pl.refresh(&l);
    assert_eq!(order(&pl, pods()), ["a-0", "a-1", "b-0", "b-1", "x"]);
}

#[test]
fn args_defaults_and_validation() {
    assert_eq!(
        CoschedulingArgs::from_plugin_args(None).unwrap(),
        CoschedulingArgs {
            permit_waiting_time_seconds: 60,
            pod_group_backoff_seconds: 0,
            pod_group_reject_percentage: 10,
        }
    );
    let a = CoschedulingArgs::from_plugin_args(Some(&PluginArgs::Other(json!({
        "kind": "CoschedulingArgs", "apiVersion": "kubescheduler.config.k8s.io/v1",
        "permitWaitingTimeSeconds": 10}))))
    .unwrap();
    assert_eq!(a.permit_waiting_time_seconds, 10);
    assert_eq!(a.pod_group_backoff_seconds, 0);
    let err =
        |v: Value| CoschedulingArgs::from_plugin_args(Some(&PluginArgs::Other(v))).unwrap_err();
    assert_eq!(
        err(json!({"podGroupBackoffSeconds": -1})),
        "podGroupBackoffSeconds: Invalid value: -1: must be greater than 0"
    );
    assert_eq!(
        err(json!({"permitWaitingTimeSeconds": -5, "podGroupRejectPercentage": 101})),
        "[permitWaitingTimeSeconds: Invalid value: -5: must be greater than 0, podGroupRejectPercentage: Invalid value: 101: must be between 0 and 100]"
    );
    assert_eq!(
        err(json!({"permitWaitingTimeSeconds": "1m"})),
        "json: cannot unmarshal string into Go struct field CoschedulingArgs.permitWaitingTimeSeconds of type int64"
    );
    assert_eq!(
        err(json!({"scheduleTimeoutSeconds": 5})),
        "strict decoding error: unknown field \"scheduleTimeoutSeconds\""
    );
}

#[test]
fn state_renders_for_the_debugger() {
    let mut e = cluster(&gang(
        2,
        2,
        json!({"scheduleTimeoutSeconds": 30, "minResources": {"cpu": "1"}}),
    ));
    let pl = Coscheduling::default();
    let p = member("p-0", "pg");
    let (_, mut state) = pre_filter(&pl, &e, &p);
    assume(&mut e, &p, "n1");
    let _ = pl.permit(&e.handle(), &mut state, &p, "n1");
    let tree = state.render();
    assert_eq!(
        tree[0],
        StateTree::node(
            "Coscheduling",
            vec![StateTree::node(
                "podGroup default/pg (minMember 2, scheduleTimeoutSeconds 30)",
                vec![
                    StateTree::leaf("members in the cluster: 2 (0 gated)"),
                    StateTree::leaf("minResources: cpu=1 (the cluster has room)"),
                    StateTree::leaf("assigned: 1 of minMember 2 (assumed or bound)"),
                ]
            )]
        )
    );
    assert_eq!(tree[1].label, "PermitCoscheduling: activate siblings: true");
    assert_eq!(
        tree[2],
        StateTree::node(
            PODS_TO_ACTIVATE_KEY,
            vec![StateTree::node(
                "pods (1)",
                vec![StateTree::leaf("default/p-1")]
            )]
        )
    );
    let records = pl.records().render();
    assert_eq!(records.label, "Coscheduling records");
    assert_eq!(
        records.children[3].children[0].label,
        format!("default/pg: {}", test_now() + SignedDuration::from_secs(60))
    );
}

#[test]
fn a_profile_enables_both_plugins() {
    let yaml = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: gang-scheduler
  plugins:
    queueSort:
      enabled: [{name: Coscheduling}]
      disabled: [{name: PrioritySort}]
    preFilter:
      enabled: [{name: Coscheduling}]
    postFilter:
      enabled: [{name: Coscheduling}]
    reserve:
      enabled: [{name: Coscheduling}]
    permit:
      enabled: [{name: Coscheduling}, {name: ManualApproval}]
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
      podGroupBackoffSeconds: 5
  - name: ManualApproval
    args:
      labelSelector: {matchLabels: {approve: me}}
      timeoutSeconds: 300
";
    let cfg = crate::config::parse_str(yaml, "gang.yaml").unwrap();
    let fwk =
        crate::framework::Framework::new(
            &crate::plugins::registry::in_tree(),
            &cfg.profiles[0],
            &cfg.features,
        )
            .unwrap();
    use crate::framework::ExtensionPoint as P;
    let names = |ep| -> Vec<&str> { fwk.plugins(ep).iter().map(|e| e.name).collect() };
    assert_eq!(names(P::QueueSort), [NAME]);
    assert_eq!(names(P::PreFilter).last(), Some(&NAME));
    assert_eq!(
        names(P::PostFilter),
        ["DynamicResources", "DefaultPreemption", NAME]
    );
    assert_eq!(names(P::Reserve).last(), Some(&NAME));
    assert_eq!(names(P::Permit), [NAME, "ManualApproval"]);
    assert!(!names(P::Filter).contains(&NAME));
    // ManualApproval took its args from the configuration.
    let approval = fwk.plugins(P::Permit)[1].plugin.clone();
    let env = cluster(&[]);
    let run = |labels: Value| {
        let p =
            pod(json!({"metadata": {"name": "p", "labels": labels}, "spec": {"containers": []}}));
        let permit = approval.as_permit().unwrap();
        permit.permit(&env.handle(), &mut CycleState::new(), &p, "n1")
    };
    let (s, d) = run(json!({"approve": "me"}));
    assert!(s.is_wait());
    assert_eq!(d, Duration::from_secs(300));
    assert!(
        run(json!({"kubestep.io/approval": "manual"}))
            .0
            .is_success()
    );

    // Bad args fail the profile, naming the plugin.
    let bad = yaml.replace("podGroupBackoffSeconds: 5", "podGroupBackoffSeconds: -5");
    let cfg = crate::config::parse_str(&bad, "gang.yaml").unwrap();
    let err =
        crate::framework::Framework::new(
            &crate::plugins::registry::in_tree(),
            &cfg.profiles[0],
            &cfg.features,
        )
            .err()
            .unwrap();
    assert_eq!(
        err.to_string(),
        "initializing plugin \"Coscheduling\": podGroupBackoffSeconds: Invalid value: -5: must be greater than 0"
    );
}

/// Live shadow mode asks Permit what it would say: the answer is the real one, but the
/// group's failure record and its waiting members are left alone.
#[test]
fn a_simulated_permit_changes_nothing() {
    let mut env = cluster(&gang(3, 3, json!({})));
    let pl = Coscheduling::default();
    reserve_and_wait(&pl, &mut env, 2);
    pl.lock()
        .last_failed
        .insert("default/pg".to_string(), test_now());
    let last = member("p-2", "pg");
    assume(&mut env, &last, "n1");
    let h = Handle {
        simulation: true,
        pool: None,
        ..env.handle()
    };
    let mut state = CycleState::new();
    let (s, _) = pl.permit(&h, &mut state, &last, "n1");
    assert!(s.is_success(), "{s}");
    assert_eq!(pl.records().last_failed["default/pg"], test_now());
    assert!(env.waiting.list().iter().all(|w| w.outcome.is_none()));
    // The same call for real allows the waiting members and forgets the failure.
    let (s, _) = pl.permit(&env.handle(), &mut CycleState::new(), &last, "n1");
    assert!(s.is_success(), "{s}");
    assert!(pl.records().last_failed.is_empty());
    assert!(outcome(&env, "p-0").is_some_and(|o| o.is_success()));
}
