//! The scheduling framework: kube-scheduler's vocabulary (Status, CycleState, NodeInfo,
//! Snapshot, plugins per extension point, cluster events and queueing hints, Framework per
//! profile) and the scheduling cycle, with the object helpers (`api`) and configuration
//! (`config`) beneath it. This crate names no plugin: the plugins live in the crate above
//! and are handed in through a `Registry`.

pub mod api;
pub mod batch;
pub mod config;
pub mod cycle;
pub mod cycle_state;
pub mod diagnosis;
pub mod events;
pub mod extender;
pub mod factory;
pub mod features;
pub mod hints;
pub mod limits;
pub mod listers;
mod new_framework;
pub mod node_info;
pub mod nominator;
pub mod plugin;
pub mod pod_pack;
pub mod preemption;
pub mod profile;
pub mod queued;
pub mod runtime;
pub mod select;
pub mod signature;
pub mod snapshot;
pub mod snapshot_index;
pub mod status;
pub mod types;
pub mod waiting;

// Fixtures for tests here and in the crates above. Always built: behind a feature, each
// alternation of `cargo build` and `cargo test` would rebuild every crate above this one.
#[doc(hidden)]
pub mod testing;

pub use cycle::{CycleEnv, CycleOutcome, Detail, Phase, SchedulingCycle};
pub use cycle_state::{CycleState, RenderState, StateTree};
pub use diagnosis::{Diagnosis, FitError, NodeToStatus};
pub use node_info::NodeInfo;
pub use plugin::Handle;
pub use profile::{ExtensionPoint, Framework, Registry};
pub use snapshot::Snapshot;
pub use status::{Code, Status};
pub use types::{PodInfo, Resource};
