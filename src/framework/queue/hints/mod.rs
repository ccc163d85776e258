//! Queueing hints: the events each plugin registers (upstream `EnqueueExtensions`) and the
//! functions that decide whether an event may make a pod the plugin rejected schedulable.
//!
//! Plugins are looked up by name in an [`EnqueueRegistry`]; [`EnqueueRegistry::in_tree`]
//! holds every default plugin's registration with upstream's hint functions (as with
//! QueueingHints on). A plugin the registry does not know gets upstream's default: every
//! resource with action `All`, no hint (always Queue). Out-of-tree plugins register one
//! entry with [`EnqueueRegistry::register`].

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde::de::DeserializeOwned;

use super::events::{ActionType, ClusterEvent, EventObject, EventResource, EventType};
use crate::framework::plugin::{Handle, Plugin};
use crate::framework::profile::{ExtensionPoint, Framework};
use crate::framework::types::PodInfo;
use crate::plugins;

mod node;
mod pods;
mod volumes;

/// A hint's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueingHint {
    /// The event cannot make the pod schedulable.
    QueueSkip,
    /// It may: retry the pod.
    Queue,
}

/// Decides for `pod` (rejected by the plugin) whether an event with these objects may make
/// it schedulable. An error counts as Queue.
pub type QueueingHintFn = Arc<
    dyn Fn(&Handle, &PodInfo, Option<&EventObject>, Option<&EventObject>) -> HintResult
        + Send
        + Sync,
>;

pub type HintResult = Result<QueueingHint, String>;

/// One registration: an event and, optionally, its hint (none means Queue).
#[derive(Clone)]
pub struct ClusterEventWithHint {
    pub event: EventType,
    pub hint: Option<QueueingHintFn>,
}

impl std::fmt::Debug for ClusterEventWithHint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterEventWithHint")
            .field("event", &self.event)
            .field("hint", &self.hint.is_some())
            .finish()
    }
}

impl ClusterEventWithHint {
    pub fn new(resource: EventResource, action: ActionType) -> ClusterEventWithHint {
        ClusterEventWithHint {
            event: EventType::new(resource, action),
            hint: None,
        }
    }

    pub fn with_hint<F>(resource: EventResource, action: ActionType, f: F) -> ClusterEventWithHint
    where
        F: Fn(&Handle, &PodInfo, Option<&EventObject>, Option<&EventObject>) -> HintResult
            + Send
            + Sync
            + 'static,
    {
        ClusterEventWithHint {
            event: EventType::new(resource, action),
            hint: Some(Arc::new(f)),
        }
    }
}

/// Coscheduling (scheduler-plugins): a new pod may complete a gang; a PodGroup added or
/// changed may change its minMember.
fn misc_coscheduling(_: &Framework) -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::new(EventResource::Pod, ActionType::ADD),
        ClusterEventWithHint::new(
            EventResource::from_kind("PodGroup"),
            ActionType::ADD | ActionType::UPDATE,
        ),
    ]
}

/// ManualApproval (kubestep): a person rejected the pod, so only a change to the pod's own
/// labels (which may take it out of the selector) is worth an early retry; otherwise it
/// comes back with the 5-minute flush instead of asking again at once.
fn misc_manual_approval(_: &Framework) -> Vec<ClusterEventWithHint> {
    vec![ClusterEventWithHint::with_hint(
        EventResource::Pod,
        ActionType::UPDATE_POD_LABEL,
        |_, pod, old, new| {
            let (_, modified) = as_pods(old, new)?;
            let modified = required(modified, "pod")?;
            skip_or_queue(modified.metadata.uid.as_deref().unwrap_or("") == pod.uid)
        },
    )]
}

/// A plugin's `EventsToRegister`, given the profile it runs in (for its args).
pub type EventsToRegisterFn = fn(&Framework) -> Vec<ClusterEventWithHint>;

/// Plugin name → its event registration.
#[derive(Clone, Default)]
pub struct EnqueueRegistry {
    map: BTreeMap<String, EventsToRegisterFn>,
}

/// The name under which extenders reject nodes (upstream `ExtenderName`).
pub const EXTENDER_NAME: &str = "Extender";

impl EnqueueRegistry {
    /// Every default plugin with EnqueueExtensions, registered as in v1.35.4.
    pub fn in_tree() -> EnqueueRegistry {
        let mut r = EnqueueRegistry::default();
        r.register(plugins::scheduling_gates::NAME, misc_scheduling_gates);
        r.register(plugins::node_unschedulable::NAME, node::node_unschedulable);
        r.register(plugins::node_name::NAME, node::node_name);
        r.register(plugins::taint_toleration::NAME, node::taint_toleration);
        r.register(plugins::node_affinity::NAME, node::node_affinity);
        r.register(plugins::node_ports::NAME, node::node_ports);
        r.register(plugins::noderesources::fit::NAME, node::fit);
        r.register(
            plugins::volume_restrictions::NAME,
            volumes::volume_restrictions,
        );
        r.register(plugins::nodevolumelimits::NAME, volumes::csi_limits);
        r.register(plugins::volumebinding::NAME, volumes::volume_binding);
        r.register(plugins::volume_zone::NAME, volumes::volume_zone);
        r.register(plugins::podtopologyspread::NAME, pods::pod_topology_spread);
        r.register(plugins::interpodaffinity::NAME, pods::inter_pod_affinity);
        r.register(plugins::dynamic_resources::NAME, misc_dynamic_resources);
        r.register(plugins::default_preemption::NAME, misc_default_preemption);
        r.register(plugins::coscheduling::NAME, misc_coscheduling);
        r.register(plugins::manual_approval::NAME, misc_manual_approval);
        r
    }

    pub fn register(&mut self, plugin: &str, f: EventsToRegisterFn) {
        self.map.insert(plugin.to_string(), f);
    }

    pub fn get(&self, plugin: &str) -> Option<EventsToRegisterFn> {
        self.map.get(plugin).copied()
    }

    /// The plugin's registrations in `fwk`: its own, or (unknown to the registry) every
    /// resource with `All`.
    pub fn events_to_register(&self, plugin: &str, fwk: &Framework) -> Vec<ClusterEventWithHint> {
        match self.get(plugin) {
            Some(f) => f(fwk),
            None => unroll_wildcard_resource(),
        }
    }
}

/// The registrations of an in-tree plugin (`None` when it has no EnqueueExtensions, in
/// which case it gets every event).
pub fn events_to_register(plugin: &str, fwk: &Framework) -> Option<Vec<ClusterEventWithHint>> {
    EnqueueRegistry::in_tree().get(plugin).map(|f| f(fwk))
}

/// Upstream `UnrollWildCardResource`: what a plugin without EnqueueExtensions registers.
pub fn unroll_wildcard_resource() -> Vec<ClusterEventWithHint> {
    use EventResource as R;
    [
        R::Pod,
        R::Node,
        R::PersistentVolume,
        R::PersistentVolumeClaim,
        R::CsiNode,
        R::CsiDriver,
        R::CsiStorageCapacity,
        R::StorageClass,
        R::ResourceClaim,
        R::DeviceClass,
    ]
    .into_iter()
    .map(|r| ClusterEventWithHint::new(r, ActionType::ALL))
    .collect()
}

/// A hint function of one plugin for one registered event.
#[derive(Clone)]
pub struct HintFunction {
    pub plugin: String,
    pub hint: QueueingHintFn,
}

/// A profile's queueing-hint map: each registered event with the hint functions of the
/// plugins that registered it (upstream `QueueingHintMap`).
#[derive(Clone, Default)]
pub struct ProfileHints {
    pub entries: Vec<(EventType, Vec<HintFunction>)>,
}

fn always_queue() -> QueueingHintFn {
    Arc::new(
        |_: &Handle, _: &PodInfo, _: Option<&EventObject>, _: Option<&EventObject>| {
            Ok(QueueingHint::Queue)
        },
    )
}

/// Only PreEnqueue, PreFilter, Filter, Reserve and Permit plugins have EnqueueExtensions.
fn should_have_enqueue_extensions(p: &dyn Plugin) -> bool {
    p.as_pre_enqueue().is_some()
        || p.as_pre_filter().is_some()
        || p.as_filter().is_some()
        || p.as_reserve().is_some()
        || p.as_permit().is_some()
}

/// The profile's plugins, each once, in extension-point order.
fn profile_plugins(fwk: &Framework) -> Vec<(&'static str, &Arc<dyn Plugin>)> {
    let mut out: Vec<(&'static str, &Arc<dyn Plugin>)> = Vec::new();
    for ep in ExtensionPoint::ALL {
        for e in fwk.plugins(ep) {
            if !out.iter().any(|(n, _)| *n == e.name) {
                out.push((e.name, &e.plugin));
            }
        }
    }
    out
}

impl ProfileHints {
    /// `buildQueueingHintMap` over the profile's plugins; `extenders` adds the default
    /// registration for [`EXTENDER_NAME`].
    pub fn build(fwk: &Framework, registry: &EnqueueRegistry, extenders: bool) -> ProfileHints {
        let mut hints = ProfileHints::default();
        if extenders {
            hints.add_plugin(EXTENDER_NAME, unroll_wildcard_resource());
        }
        for (name, plugin) in profile_plugins(fwk) {
            if !should_have_enqueue_extensions(plugin.as_ref()) {
                continue;
            }
            hints.add_plugin(name, registry.events_to_register(name, fwk));
        }
        hints
    }

    fn push(&mut self, event: EventType, f: HintFunction) {
        match self.entries.iter_mut().find(|(e, _)| *e == event) {
            Some((_, fns)) => fns.push(f),
            None => self.entries.push((event, vec![f])),
        }
    }

    fn add_plugin(&mut self, name: &str, events: Vec<ClusterEventWithHint>) {
        let (mut node_added, mut node_taint) = (false, false);
        for e in events {
            if e.event.resource == EventResource::Node {
                node_added |= e.event.action.intersects(ActionType::ADD);
                node_taint |= e.event.action.intersects(ActionType::UPDATE_NODE_TAINT);
            }
            let hint = e.hint.unwrap_or_else(always_queue);
            self.push(
                e.event,
                HintFunction {
                    plugin: name.to_string(),
                    hint,
                },
            );
        }
        // Upstream still adds a Queue-always UpdateNodeTaint registration for plugins that
        // register NodeAdd without it (a leftover of the pre-hint preCheck).
        if node_added && !node_taint {
            self.push(
                EventType::new(EventResource::Node, ActionType::UPDATE_NODE_TAINT),
                HintFunction {
                    plugin: name.to_string(),
                    hint: always_queue(),
                },
            );
        }
    }

    /// `isEventOfInterest` for this profile: some registration matches.
    pub fn interested_in(&self, event: &EventType) -> bool {
        self.entries.iter().any(|(e, _)| e.matches(event))
    }

    /// The events a plugin registered (upstream's `pluginToEventsMap`).
    pub fn plugin_events(&self, plugin: &str) -> Vec<EventType> {
        self.entries
            .iter()
            .filter(|(_, fns)| fns.iter().any(|f| f.plugin == plugin))
            .map(|(e, _)| e.clone())
            .collect()
    }

    /// Registrations matching `event`, with their hint functions.
    pub fn matching<'a>(
        &'a self,
        event: &'a EventType,
    ) -> impl Iterator<Item = &'a HintFunction> + 'a {
        self.entries
            .iter()
            .filter(move |(e, _)| e.matches(event))
            .flat_map(|(_, fns)| fns.iter())
    }
}

// ---- helpers shared by the hint functions ----

/// The objects before and after an event.
pub(crate) type OldNew<T> = (Option<T>, Option<T>);

/// Upstream `util.As` for pods: the objects must be pods (or absent).
pub(crate) fn as_pods<'a>(
    old: Option<&'a EventObject>,
    new: Option<&'a EventObject>,
) -> Result<OldNew<&'a Pod>, String> {
    let conv = |o: Option<&'a EventObject>| -> Result<_, String> {
        match o {
            None => Ok(None),
            Some(EventObject::Pod(p)) => Ok(Some(p.as_ref())),
            Some(other) => Err(format!("expected a Pod, got {}", other.describe())),
        }
    };
    Ok((conv(old)?, conv(new)?))
}

/// Upstream `util.As` for nodes.
pub(crate) fn as_nodes<'a>(
    old: Option<&'a EventObject>,
    new: Option<&'a EventObject>,
) -> Result<OldNew<&'a Arc<Node>>, String> {
    let conv = |o: Option<&'a EventObject>| -> Result<_, String> {
        match o {
            None => Ok(None),
            Some(EventObject::Node(n)) => Ok(Some(n)),
            Some(other) => Err(format!("expected a Node, got {}", other.describe())),
        }
    };
    Ok((conv(old)?, conv(new)?))
}

/// Upstream `util.As` for other kinds, decoded from JSON.
pub(crate) fn as_objects<T: DeserializeOwned>(
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> Result<OldNew<T>, String> {
    let conv = |o: Option<&EventObject>| -> Result<Option<T>, String> {
        match o {
            None => Ok(None),
            Some(EventObject::Other(v)) => serde_json::from_value(v.clone())
                .map(Some)
                .map_err(|e| e.to_string()),
            Some(other) => Err(format!("unexpected object {}", other.describe())),
        }
    };
    Ok((conv(old)?, conv(new)?))
}

/// A required object of an event (the new one of an add or update, the old one of a
/// delete).
pub(crate) fn required<T>(o: Option<T>, what: &str) -> Result<T, String> {
    o.ok_or_else(|| format!("the event carries no {what}"))
}

fn skip_or_queue(queue: bool) -> HintResult {
    Ok(if queue {
        QueueingHint::Queue
    } else {
        QueueingHint::QueueSkip
    })
}

// ---- SchedulingGates, DefaultPreemption, DynamicResources ----

fn misc_scheduling_gates(_: &Framework) -> Vec<ClusterEventWithHint> {
    vec![ClusterEventWithHint::with_hint(
        EventResource::Pod,
        ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
        |_, pod, old, new| {
            let (_, modified) = as_pods(old, new)?;
            let modified = required(modified, "pod")?;
            skip_or_queue(modified.metadata.uid.as_deref().unwrap_or("") == pod.uid)
        },
    )]
}

/// With asynchronous preemption, a pod waits at PreEnqueue while its victims go; the
/// plugin leaves requeueing to the plugins that rejected it, so its hint always skips.
fn misc_default_preemption(_: &Framework) -> Vec<ClusterEventWithHint> {
    vec![ClusterEventWithHint::with_hint(
        EventResource::Pod,
        ActionType::DELETE,
        |_, _, _, _| Ok(QueueingHint::QueueSkip),
    )]
}

/// DynamicResources registers its events in its own module.
fn misc_dynamic_resources(fwk: &Framework) -> Vec<ClusterEventWithHint> {
    plugins::dynamic_resources::hints::events(fwk)
}

/// Runs a hint as the queue does: an error counts as Queue.
pub fn run_hint(
    f: &QueueingHintFn,
    h: &Handle,
    pod: &PodInfo,
    event: &ClusterEvent,
) -> QueueingHint {
    match f(h, pod, event.old.as_ref(), event.new.as_ref()) {
        Ok(hint) => hint,
        Err(e) => {
            tracing::debug!(pod = %pod.key, event = %event.label, error = %e, "queueing hint failed; queueing");
            QueueingHint::Queue
        }
    }
}

/// The events `plugin` registered in `fwk`, as the queue records them for a pod that
/// plugin gates (including the extra UpdateNodeTaint registration).
pub fn plugin_events(registry: &EnqueueRegistry, fwk: &Framework, plugin: &str) -> Vec<EventType> {
    let mut hints = ProfileHints::default();
    hints.add_plugin(plugin, registry.events_to_register(plugin, fwk));
    hints.plugin_events(plugin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Plugins;
    use crate::config::defaults::default_profile;
    use crate::framework::Snapshot;
    use crate::framework::listers::Listers;
    use crate::framework::queue::events::events_for_node_change;
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
        );
        match Framework::new(&in_tree(), &profile) {
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
        let hints = ProfileHints::build(&f, &EnqueueRegistry::in_tree(), false);
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
            plugin_events(&EnqueueRegistry::in_tree(), &f, "SchedulingGates"),
            vec![EventType::new(
                R::Pod,
                A::UPDATE_POD_SCHEDULING_GATES_ELIMINATED
            )]
        );
        // Score-only plugins register nothing, and nobody listens to node conditions.
        assert!(hints.plugin_events("ImageLocality").is_empty());
        assert!(!hints.interested_in(&EventType::new(R::Node, A::UPDATE_NODE_CONDITION)));
        assert!(hints.plugin_events(EXTENDER_NAME).is_empty());
        let with_extenders = ProfileHints::build(&f, &EnqueueRegistry::in_tree(), true);
        assert_eq!(with_extenders.plugin_events(EXTENDER_NAME).len(), 10);
        // A plugin the registry does not know gets every event.
        let unknown = EnqueueRegistry::in_tree().events_to_register("Unknown", &f);
        assert_eq!(unknown.len(), 10);
        assert!(
            unknown
                .iter()
                .all(|e| e.hint.is_none() && e.event.action == A::ALL)
        );
        assert!(events_to_register("SchedulingGates", &f).is_some());
        assert!(events_to_register("Unknown", &f).is_none());
    }

    #[test]
    fn fit_node_hint() {
        let (env, f) = (Env::new(Snapshot::default(), Listers::default()), fwk());
        let h = env.handle();
        let hints = ProfileHints::build(&f, &EnqueueRegistry::in_tree(), false);
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}));
        let ask = |old: Option<&Node>, new: Option<&Node>| -> Vec<QueueingHint> {
            events_for_node_change(old, new)
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
}
