//! The running framework over time, through the Session API: gangs, manual approval,
//! preemption, gates, backoff, stepping. Clusters are small manifests; time is virtual.

mod support;

mod approval;
mod batch;
mod binding_conditions;
mod gang;
mod preemption;
mod queue;
mod queue_history;
mod stepping;
