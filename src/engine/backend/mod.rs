//! What runs the framework over time, as upstream's `pkg/scheduler/backend`: the
//! scheduling queue (active, backoff and unschedulable pods; queueing hints decide moves)
//! and the cache (the NodeInfos, with assumed pods). It uses the framework's vocabulary
//! and names no plugin.

pub mod cache;
pub mod queue;
