//! The in-tree plugins' queueing hints as a profile's QueueingHintMap holds them
//! (`framework::hints` builds the map; the plugins declare the registrations).

use crate::config::Plugins;
use crate::config::defaults::default_profile;
use crate::framework::Snapshot;
use crate::framework::events::events_for_node_change;
use crate::framework::events::{ActionType, ClusterEvent, EventObject, EventResource, EventType};
use crate::framework::extender::EXTENDER_NAME;
use crate::framework::hints::{ProfileHints, QueueingHint, plugin_events, registrations, run_hint};
use crate::framework::listers::Listers;
use crate::framework::profile::Framework;
use crate::plugins::registry::in_tree;
use crate::plugins::testing::{Env, pod};
use ActionType as A;
use EventResource as R;
use k8s_openapi::api::core::v1::Node;
use serde_json::json;

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

fn node(cpu: &str, pods: &str) -> Node {
    serde_json::from_value(json!({"metadata": {"name": "n"},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": pods}}}))
    .unwrap()
}

#[test]
fn hint_map_of_the_default_profile() {
    let f = fwk();
    let hints = ProfileHints::build(&f, false);
    // NodeResourcesFit: its own two registrations plus the extra UpdateNodeTaint.
    let mut fit = hints.plugin_events(FIT);
    fit.sort();
    assert_eq!(
        fit,
        vec![
            EventType::new(R::Pod, A::DELETE | A::UPDATE_POD_SCALE_DOWN),
            EventType::new(R::Node, A::ADD | A::UPDATE_NODE_ALLOCATABLE),
            EventType::new(R::Node, A::UPDATE_NODE_TAINT),
        ]
    );
    assert_eq!(
        plugin_events(&f, "SchedulingGates"),
        vec![EventType::new(
            R::Pod,
            A::UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        )]
    );
    // Score-only plugins register nothing, and nobody listens to node conditions.
    assert!(hints.plugin_events("ImageLocality").is_empty());
    assert!(!hints.interested_in(&EventType::new(R::Node, A::UPDATE_NODE_CONDITION)));
    assert!(hints.plugin_events(EXTENDER_NAME).is_empty());
    let with_extenders = ProfileHints::build(&f, true);
    assert_eq!(with_extenders.plugin_events(EXTENDER_NAME).len(), 10);
    // A plugin that declares no registrations gets every event.
    let unknown = registrations(&crate::plugins::queuesort::PrioritySort);
    assert_eq!(unknown.len(), 10);
    assert!(
        unknown
            .iter()
            .all(|e| e.hint.is_none() && e.event.action == A::ALL)
    );
}

#[test]
fn fit_node_hint() {
    let (env, f) = (Env::new(Snapshot::default(), Listers::default()), fwk());
    let h = env.handle();
    let hints = ProfileHints::build(&f, false);
    let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}));
    let ask = |old: Option<&Node>, new: Option<&Node>| -> Vec<QueueingHint> {
        events_for_node_change(old, new, &Default::default())
            .iter()
            .flat_map(|e| {
                let et = e.event_type();
                hints
                    .matching(&et)
                    .filter(|x| x.plugin == FIT)
                    .map(|x| run_hint(&x.hint, &h, &p, e))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    use QueueingHint::{Queue, QueueSkip};
    assert_eq!(ask(None, Some(&node("4", "10"))), [Queue]);
    assert_eq!(ask(None, Some(&node("1", "10"))), [QueueSkip]);
    // A node that allows no pods cannot take it either.
    assert_eq!(ask(None, Some(&node("4", "0"))), [QueueSkip]);
    // Fits, but nothing it asks for grew; then more pods allowed.
    let mut relabelled = node("4", "10");
    relabelled.metadata.annotations = Some([("a".into(), "b".into())].into());
    assert!(ask(Some(&node("4", "10")), Some(&relabelled)).is_empty());
    assert_eq!(ask(Some(&node("4", "10")), Some(&node("4", "11"))), [Queue]);
    assert_eq!(
        ask(Some(&node("4", "10")), Some(&node("3", "10"))),
        [QueueSkip]
    );
    // A hint fed the wrong kind of object errs, which counts as Queue.
    let odd = ClusterEvent::new(
        R::Node,
        A::ADD,
        None,
        Some(EventObject::Other(json!({"kind": "Thing"}))),
    );
    let f = hints
        .matching(&odd.event_type())
        .find(|x| x.plugin == FIT)
        .map(|x| run_hint(&x.hint, &h, &p, &odd));
    assert_eq!(f, Some(Queue));
}
