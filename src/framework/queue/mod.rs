//! The scheduling queue, as kube-scheduler v1.35's `PriorityQueue` with QueueingHints
//! and SchedulerPopFromBackoffQ on: cluster events and queueing hints so far.

pub mod events;
pub mod hints;

pub use events::{
    ActionType, ClusterEvent, EventObject, EventResource, EventType, PreCheck,
    events_for_node_change, events_for_object, events_for_pod_change,
};
pub use hints::{
    ClusterEventWithHint, EnqueueRegistry, ProfileHints, QueueingHint, QueueingHintFn,
    events_to_register,
};
