//! Queueing hints: the events each plugin registers (upstream `EnqueueExtensions`) and the
//! functions that decide whether an event may make a pod the plugin rejected schedulable.
//!
//! Each plugin declares its own registrations with [`Plugin::events_to_register`], in its
//! own module, so this module knows no plugin. A plugin that declares none gets upstream's
//! default: every resource with action `All`, no hint (always Queue).

use std::sync::Arc;

use super::events::{ActionType, ClusterEvent, EventObject, EventResource, EventType};
use crate::extender::EXTENDER_NAME;
use crate::plugin::{Handle, Plugin};
use crate::profile::{ExtensionPoint, Framework};
use crate::types::PodInfo;

pub mod access;

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

/// The plugin's registrations: its own, or (none declared) every resource with `All`.
pub fn registrations(plugin: &dyn Plugin) -> Vec<ClusterEventWithHint> {
    plugin
        .events_to_register()
        .unwrap_or_else(unroll_wildcard_resource)
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
    pub fn build(fwk: &Framework, extenders: bool) -> ProfileHints {
        let mut hints = ProfileHints::default();
        if extenders {
            hints.add_plugin(EXTENDER_NAME, unroll_wildcard_resource());
        }
        for (name, plugin) in profile_plugins(fwk) {
            if !should_have_enqueue_extensions(plugin.as_ref()) {
                continue;
            }
            hints.add_plugin(name, registrations(plugin.as_ref()));
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
pub fn plugin_events(fwk: &Framework, plugin: &str) -> Vec<EventType> {
    let mut hints = ProfileHints::default();
    if let Some((name, p)) = profile_plugins(fwk).into_iter().find(|(n, _)| *n == plugin) {
        hints.add_plugin(name, registrations(p.as_ref()));
    } else {
        hints.add_plugin(plugin, unroll_wildcard_resource());
    }
    hints.plugin_events(plugin)
}
