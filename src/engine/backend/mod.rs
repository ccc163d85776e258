//! What runs the framework over time, as upstream's `pkg/scheduler/backend`: the
//! scheduling queue (active, backoff and unschedulable pods; queueing hints decide moves).
//! It uses the framework's vocabulary and names no plugin.

pub mod queue;
