//! Test helpers for plugin unit tests: build pods, nodes and a snapshot from JSON, and run
//! one plugin at one extension point.

use crate::framework::listers::Listers;
use crate::framework::nominator::Nominator;
use crate::framework::plugin::{FilterPlugin, Handle};
use crate::framework::profile::Framework;
use crate::framework::{CycleState, NodeInfo, PodInfo, Snapshot, Status};
pub use kubestep_framework::testing::{listers, node, node_obj, pod, test_now};

/// A framework-independent environment for calling plugins directly.
pub struct Env {
    pub framework: Framework,
    pub snapshot: Snapshot,
    pub listers: Listers,
    pub nominator: Nominator,
    pub waiting: crate::framework::waiting::WaitingPods,
    /// The clock plugins see; a fixed instant so tests repeat.
    pub now: jiff::Timestamp,
}

impl Env {
    pub fn new(snapshot: Snapshot, listers: Listers) -> Env {
        Env {
            framework: crate::plugins::registry::minimal_framework(),
            snapshot,
            listers,
            nominator: Nominator::default(),
            waiting: Default::default(),
            now: test_now(),
        }
    }

    pub fn handle(&self) -> Handle<'_> {
        Handle {
            framework: &self.framework,
            snapshot: &self.snapshot,
            listers: &self.listers,
            nominator: &self.nominator,
            waiting: &self.waiting,
            now: self.now,
            extenders: &[],
            simulation: false,
            pool: None,
        }
    }
}

/// Runs a Filter plugin with an empty snapshot and state.
pub fn filter(p: &dyn FilterPlugin, pod: &PodInfo, node: &NodeInfo) -> Status {
    let env = Env::new(Snapshot::default(), Listers::default());
    p.filter(&env.handle(), &CycleState::new(), pod, node)
}

/// Checks that a plugin's batch scoring gives, node for node, what `score` gives.
pub fn assert_score_nodes_agrees(
    p: &dyn crate::framework::plugin::ScorePlugin,
    h: &Handle,
    state: &CycleState,
    pod: &PodInfo,
    nodes: &[&NodeInfo],
) {
    let mut batch = vec![-1; nodes.len()];
    let failed = p.score_nodes(h, state, pod, nodes, &mut batch);
    let one_by_one: Vec<i64> = nodes.iter().map(|n| p.score(h, state, pod, n).0).collect();
    assert_eq!(batch, one_by_one);
    let first_failure = nodes
        .iter()
        .position(|n| !p.score(h, state, pod, n).1.is_success());
    assert_eq!(failed.map(|(i, _)| i), first_failure);
}
