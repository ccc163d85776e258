//! The scheduling queue, as kube-scheduler v1.35's `PriorityQueue` with QueueingHints
//! and SchedulerPopFromBackoffQ on: cluster events so far.

pub mod events;

pub use events::{
    ActionType, ClusterEvent, EventObject, EventResource, EventType, PreCheck,
    events_for_node_change, events_for_object, events_for_pod_change,
};
