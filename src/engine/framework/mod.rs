//! The scheduling framework: kube-scheduler's vocabulary (Status, CycleState, NodeInfo,
//! Snapshot, plugins per extension point, Framework per profile) and the scheduling cycle.

pub mod batch;
pub mod cycle;
pub mod cycle_state;
pub mod diagnosis;
pub mod events;
pub mod extender;
pub mod hints;
pub mod listers;
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

pub use cycle::{CycleEnv, CycleOutcome, Detail, Phase, SchedulingCycle};
pub use cycle_state::{CycleState, RenderState, StateTree};
pub use diagnosis::{Diagnosis, FitError, NodeToStatus};
pub use node_info::NodeInfo;
pub use plugin::Handle;
pub use profile::{ExtensionPoint, Framework, Registry};
pub use snapshot::Snapshot;
pub use status::{Code, Status};
pub use types::{PodInfo, Resource};
