use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};

use super::*;
use crate::config::default_configuration_for;
use crate::features::{Features, KubeVersion};
use crate::framework::cycle::{CycleEnv, CycleOutcome, Detail, SchedulingCycle};
use crate::framework::events::{ClusterEvent, EventObject};
use crate::framework::hints::{QueueingHint, run_hint};
use crate::framework::listers::Listers;
use crate::framework::profile::{ExtensionPoint, Framework};
use crate::framework::{Code, Snapshot};
use crate::plugins::testing::{Env, node, node_obj, pod};

const RESTART: &str = RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS;
const USERNS: &str = USER_NAMESPACES_HOST_NETWORK_SUPPORT;

fn plugin(rules: Rules) -> NodeDeclaredFeatures {
    NodeDeclaredFeatures { rules: Some(rules) }
}

fn pod_json(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec})
}

/// A container whose exit with code 42 restarts every container of the pod.
fn restarting(name: &str) -> Value {
    json!({"name": name, "image": "i", "restartPolicy": "Never", "restartPolicyRules": [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]})
}

fn restart_pod(name: &str) -> Arc<PodInfo> {
    pod(pod_json(name, json!({"containers": [restarting("c")]})))
}

fn userns_pod(name: &str) -> Arc<PodInfo> {
    pod(pod_json(
        name,
        json!({"containers": [{"name": "c", "image": "i"}], "hostNetwork": true, "hostUsers": false}),
    ))
}

fn node_json(name: &str, features: &[&str]) -> Value {
    json!({"metadata": {"name": name}, "status": {"declaredFeatures": features,
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
}

fn reqs(p: &PodInfo, rules: Rules) -> Vec<&'static str> {
    required_features(p.pod().spec.as_ref(), rules)
}

#[test]
fn requirements_are_inferred_from_the_spec() {
    let plain = pod(pod_json(
        "p",
        json!({"containers": [{"name": "c", "image": "i"}]}),
    ));
    assert!(reqs(&plain, Rules::V1_36).is_empty());
    // Any container counts, an init container too; a rule of another action does not.
    let init = pod(pod_json(
        "p",
        json!({"initContainers": [restarting("i")], "containers": [{"name": "c", "image": "i"}]}),
    ));
    assert_eq!(reqs(&init, Rules::V1_36), [RESTART]);
    assert_eq!(reqs(&restart_pod("p"), Rules::V1_35), [RESTART]);
    let other_action = pod(pod_json(
        "p",
        json!({"containers": [{"name": "c", "image": "i", "restartPolicy": "Never",
            "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}]}]}),
    ));
    assert!(reqs(&other_action, Rules::V1_36).is_empty());
    // Host network in a user namespace: a requirement from 1.36 only, and only when
    // hostUsers is set to false.
    assert_eq!(reqs(&userns_pod("p"), Rules::V1_36), [USERNS]);
    assert!(reqs(&userns_pod("p"), Rules::V1_35).is_empty());
    let host_users_unset = pod(pod_json(
        "p",
        json!({"containers": [{"name": "c", "image": "i"}], "hostNetwork": true}),
    ));
    assert!(reqs(&host_users_unset, Rules::V1_36).is_empty());
    let both = pod(pod_json(
        "p",
        json!({"containers": [restarting("c")], "hostNetwork": true, "hostUsers": false}),
    ));
    assert_eq!(reqs(&both, Rules::V1_36), [RESTART, USERNS]);
}

#[test]
fn pre_filter_skips_pods_without_requirements_and_stores_the_rest() {
    let env = Env::new(Snapshot::default(), Listers::default());
    let h = env.handle();
    let pl = plugin(Rules::V1_36);
    let plain = pod(pod_json(
        "p",
        json!({"containers": [{"name": "c", "image": "i"}]}),
    ));
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&h, &mut state, &plain).1.is_skip());
    assert_eq!(state.keys().count(), 0);
    let (res, s) = pl.pre_filter(&h, &mut state, &restart_pod("p"));
    assert!(res.is_none() && s.is_success());
    assert_eq!(
        state.render(),
        [StateTree::node(
            PRE_FILTER_STATE_KEY,
            vec![StateTree::node(
                "requiredFeatures (1)",
                vec![StateTree::leaf(RESTART)]
            )]
        )]
    );
}

/// PreFilter then Filter, as the framework runs them.
fn run(pl: &NodeDeclaredFeatures, p: &PodInfo, n: &NodeInfo) -> Status {
    let env = Env::new(Snapshot::default(), Listers::default());
    let h = env.handle();
    let mut state = CycleState::new();
    let pre = pl.pre_filter(&h, &mut state, p).1;
    assert!(pre.is_success(), "{pre:?}");
    pl.filter(&h, &state, p, n)
}

#[test]
fn filter_needs_every_required_feature_with_each_versions_reason() {
    let v36 = plugin(Rules::V1_36);
    let p = restart_pod("p");
    // Unknown names beside the feature are fine.
    let has = node(node_json("n", &["Mystery", RESTART, "ZZZ"]));
    assert!(run(&v36, &p, &has).is_success());
    for n in [
        node(node_json("n", &[USERNS])),
        node(json!({"metadata": {"name": "n"}})),
    ] {
        let s = run(&v36, &p, &n);
        assert_eq!(
            (s.code(), s.message().as_str()),
            (Code::UnschedulableAndUnresolvable, ERR_REASON_UNSATISFIED)
        );
        let s = run(&plugin(Rules::V1_35), &p, &n);
        assert_eq!(
            (s.code(), s.message()),
            (
                Code::UnschedulableAndUnresolvable,
                format!("{ERR_REASON_UNSATISFIED_1_35}{RESTART}")
            )
        );
    }
    // Two requirements: one missing is enough to fail.
    let both = pod(pod_json(
        "p",
        json!({"containers": [restarting("c")], "hostNetwork": true, "hostUsers": false}),
    ));
    assert!(!run(&v36, &both, &has).is_success());
    let all = node(node_json("n", &[RESTART, USERNS]));
    assert!(run(&v36, &both, &all).is_success());
}

#[test]
fn an_unsorted_list_reads_as_each_version_reads_it() {
    // API validation keeps the list sorted; 1.36 relies on it and 1.35 did not.
    let unsorted = node(node_json("n", &[USERNS, RESTART]));
    let p = restart_pod("p");
    assert!(run(&plugin(Rules::V1_35), &p, &unsorted).is_success());
    assert!(!run(&plugin(Rules::V1_36), &p, &unsorted).is_success());
    assert_eq!(known_declared(&["A".into(), RESTART.into()]), [RESTART]);
}

#[test]
fn filter_without_pre_filter_state_is_an_error() {
    let s = crate::plugins::testing::filter(
        &plugin(Rules::V1_36),
        &restart_pod("p"),
        &node(node_json("n", &[])),
    );
    assert_eq!(
        (s.code(), s.message().as_str()),
        (
            Code::Error,
            "error reading \"PreFilterNodeDeclaredFeatures\" from cycle-state: not found"
        )
    );
}

#[test]
fn with_the_gate_off_the_plugin_does_nothing() {
    let off = NodeDeclaredFeatures::default();
    let env = Env::new(Snapshot::default(), Listers::default());
    let h = env.handle();
    let p = restart_pod("p");
    assert!(off.pre_filter(&h, &mut CycleState::new(), &p).1.is_skip());
    assert!(
        off.filter(&h, &CycleState::new(), &p, &node(node_json("n", &[])))
            .is_success()
    );
    assert_eq!(off.events_to_register().map(|e| e.len()), Some(0));
    assert!(matches!(off.sign_pod(&p), Some(Err(_))));
    // The factory asks the gate: off in 1.35 and absent in 1.34, on in 1.36.
    let built = |v| {
        let features = Features::version(v);
        let ctx = FactoryContext {
            args: None,
            profile_name: "default-scheduler",
            features: &features,
        };
        factory(&ctx)
            .expect("builds")
            .events_to_register()
            .map(|e| e.len())
    };
    assert_eq!(built(KubeVersion::V1_34), Some(0));
    assert_eq!(built(KubeVersion::V1_35), Some(0));
    assert_eq!(built(KubeVersion::V1_36), Some(2));
}

#[test]
fn pods_sign_with_their_sorted_requirements() {
    let pl = plugin(Rules::V1_36);
    let sign = |p: &PodInfo| match pl.sign_pod(p) {
        Some(Ok(f)) => f,
        other => panic!("{other:?}"),
    };
    let both = pod(pod_json(
        "a",
        json!({"containers": [restarting("c")], "hostNetwork": true, "hostUsers": false}),
    ));
    let f = sign(&both);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].key, "v1.Pod.Spec.RequiredFeatures()");
    assert_eq!(f[0].value, json!([RESTART, USERNS]));
    // Pods that require the same features sign alike, whatever else differs.
    assert_eq!(sign(&restart_pod("x")), sign(&restart_pod("y")));
    assert_ne!(sign(&restart_pod("x")), sign(&userns_pod("y")));
    let plain = pod(pod_json("p", json!({"containers": []})));
    assert_eq!(sign(&plain)[0].value, json!([]));
}

// ---- queueing hints ----

fn hint(pl: &NodeDeclaredFeatures, target: &PodInfo, event: &ClusterEvent) -> QueueingHint {
    let env = Env::new(Snapshot::default(), Listers::default());
    let h = env.handle();
    let regs = pl.events_to_register().unwrap_or_default();
    let reg = regs
        .iter()
        .find(|r| r.event.matches(&event.event_type()))
        .expect("a registration for the event");
    run_hint(reg.hint.as_ref().expect("a hint"), &h, target, event)
}

fn node_event(action: A, old: Option<&[&str]>, new: &[&str]) -> ClusterEvent {
    let obj = |f: &[&str]| EventObject::Node(node_obj(node_json("n", f)));
    ClusterEvent::new(R::Node, action, old.map(obj), Some(obj(new)))
}

#[test]
fn node_hint_queues_for_new_nodes_and_changed_features() {
    let pl = plugin(Rules::V1_36);
    let p = restart_pod("p");
    use QueueingHint::{Queue, QueueSkip};
    assert_eq!(hint(&pl, &p, &node_event(A::ADD, None, &[])), Queue);
    let update = A::UPDATE_NODE_DECLARED_FEATURE;
    assert_eq!(
        hint(&pl, &p, &node_event(update, Some(&[]), &[RESTART])),
        Queue
    );
    assert_eq!(
        hint(&pl, &p, &node_event(update, Some(&[RESTART]), &[])),
        Queue
    );
    assert_eq!(
        hint(&pl, &p, &node_event(update, Some(&[RESTART]), &[RESTART])),
        QueueSkip
    );
    // No list and an empty list are the same list.
    let bare = EventObject::Node(node_obj(json!({"metadata": {"name": "n"}})));
    let empty = EventObject::Node(node_obj(node_json("n", &[])));
    let e = ClusterEvent::new(R::Node, update, Some(bare), Some(empty));
    assert_eq!(hint(&pl, &p, &e), QueueSkip);
}

fn pod_update(old: &Arc<PodInfo>, new: &Arc<PodInfo>) -> ClusterEvent {
    let whole = |p: &Arc<PodInfo>| -> Arc<Pod> { Arc::new(p.pod().clone()) };
    ClusterEvent::new(
        R::Pod,
        A::UPDATE,
        Some(EventObject::Pod(whole(old).into())),
        Some(EventObject::Pod(whole(new).into())),
    )
}

#[test]
fn pod_hint_queues_only_when_the_pods_own_requirements_change() {
    let pl = plugin(Rules::V1_36);
    let before = restart_pod("p");
    use QueueingHint::{Queue, QueueSkip};
    // Dropping the rule changes what it requires.
    let after = pod(pod_json(
        "p",
        json!({"containers": [{"name": "c", "image": "i"}]}),
    ));
    assert_eq!(hint(&pl, &before, &pod_update(&before, &after)), Queue);
    // A label change leaves the requirements as they were.
    let mut relabelled = before.pod().clone();
    relabelled.metadata.labels = Some([("a".into(), "b".into())].into());
    let relabelled = pod(serde_json::to_value(&relabelled).unwrap());
    assert_eq!(
        hint(&pl, &before, &pod_update(&before, &relabelled)),
        QueueSkip
    );
    // Another pod's update is not this pod's business.
    let other = pod(pod_json("q", json!({"containers": []})));
    let other_after = restart_pod("q");
    assert_eq!(
        hint(&pl, &before, &pod_update(&other, &other_after)),
        QueueSkip
    );
    // hostUsers flipping matters from 1.36 only.
    let mut shared = userns_pod("u").pod().clone();
    if let Some(s) = shared.spec.as_mut() {
        s.host_users = None;
    }
    let shared = pod(serde_json::to_value(&shared).unwrap());
    let isolated = userns_pod("u");
    assert_eq!(hint(&pl, &shared, &pod_update(&shared, &isolated)), Queue);
    assert_eq!(
        hint(
            &plugin(Rules::V1_35),
            &shared,
            &pod_update(&shared, &isolated)
        ),
        QueueSkip
    );
}

// ---- end to end: the default configuration of each version ----

fn frameworks(v: KubeVersion) -> Vec<Framework> {
    let cfg = default_configuration_for(&Features::version(v));
    crate::session::scheduler::frameworks(&cfg).expect("the default configuration builds")
}

fn names(f: &Framework, ep: ExtensionPoint) -> Vec<&'static str> {
    f.plugins(ep).iter().map(|e| e.name).collect()
}

#[test]
fn the_default_profile_runs_it_last_from_1_36() {
    let f = &frameworks(KubeVersion::V1_36)[0];
    for ep in [ExtensionPoint::PreFilter, ExtensionPoint::Filter] {
        assert_eq!(names(f, ep).last(), Some(&NAME), "{ep:?}");
    }
    for ep in [ExtensionPoint::PreScore, ExtensionPoint::Score] {
        assert!(!names(f, ep).contains(&NAME), "{ep:?}");
    }
    for v in [KubeVersion::V1_34, KubeVersion::V1_35] {
        let f = &frameworks(v)[0];
        let all: Vec<&str> = f.unique_plugins().iter().map(|(n, _)| *n).collect();
        assert!(!all.contains(&NAME), "{v}");
    }
}

fn schedule(f: &Framework, nodes: &[Value], p: &Arc<PodInfo>) -> CycleOutcome {
    let nodes: Vec<Arc<Node>> = nodes.iter().map(|n| node_obj(n.clone())).collect();
    let snapshot = Snapshot::new(nodes, []);
    let (listers, nominator) = (Listers::default(), Default::default());
    let waiting = Default::default();
    let env = CycleEnv {
        framework: f,
        snapshot: &snapshot,
        listers: &listers,
        nominator: &nominator,
        waiting: &waiting,
        now: crate::plugins::testing::test_now(),
        percentage_of_nodes_to_score: 0,
        pool: None,
        extenders: &[],
    };
    let mut cycle = SchedulingCycle::new(p.clone(), Detail::Decision, 0);
    cycle.run(&env).clone()
}

#[test]
fn a_1_36_scheduler_places_pods_on_nodes_that_declare_their_features() {
    let f = &frameworks(KubeVersion::V1_36)[0];
    let p = restart_pod("p");
    let nodes = [node_json("a", &[]), node_json("b", &[RESTART])];
    match schedule(f, &nodes, &p) {
        CycleOutcome::Selected { node, .. } => assert_eq!(node, "b"),
        other => panic!("{other:?}"),
    }
    let nodes = [node_json("a", &[]), node_json("b", &["Other"])];
    let msg = schedule(f, &nodes, &p).message().unwrap_or_default();
    assert!(
        msg.starts_with(&format!(
            "0/2 nodes are available: 2 {ERR_REASON_UNSATISFIED}."
        )),
        "{msg}"
    );
    // 1.35 runs no such plugin: the node without the feature is fine.
    let f = &frameworks(KubeVersion::V1_35)[0];
    let nodes = [node_json("a", &[])];
    assert!(matches!(
        schedule(f, &nodes, &p),
        CycleOutcome::Selected { .. }
    ));
}
