//! Objects as they were at a past step, for time travel: the pod an attempt popped, and
//! every other pod and node from the world kept for re-running attempts (`world.rs`).
//!
//! The world is kept at each attempt's start (`Frozen::world`), and the session applies
//! cluster changes only between attempts' scheduling cycles, so the world at a step is
//! the one its attempt started in. Steps after the cycle (Reserve on) see the pod
//! assumed on its node; the world here is still the start's, and says so (`World::pos`
//! is where it was taken).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::Session;
use super::world::WorldError;
use crate::framework::node_info::NodeInfo;

/// A pod as it was at a step.
#[derive(Debug, Clone)]
pub enum PodThen {
    /// The pod the step's attempt popped, as popped (pending).
    Popped(Arc<Pod>),
    /// On a node then (the snapshot held it there).
    Bound(Arc<Pod>),
    /// Known to the scheduler, not on a node (the pod lister held it).
    Pending(Arc<Pod>),
    /// Not in the cluster then.
    Absent,
}

/// Why the past cannot be shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThenError {
    #[error("step {0} is no longer in the history")]
    NoStep(u64),
    #[error("step {0} belongs to no attempt, and the world is kept at attempts' starts")]
    NoAttempt(u64),
    #[error(
        "attempt #{id} of step {seq}, and the world it began in, is no longer kept: attempt records may take {budget} (an eighth of --history {history}); raise --history to keep more"
    )]
    AttemptForgotten {
        seq: u64,
        id: u64,
        budget: String,
        history: String,
    },
    #[error(
        "the world at step {seq} is no longer kept: world versions may take {budget} (a quarter of --history {history}), and the oldest kept is from a later step; raise --history to keep more"
    )]
    Forgotten {
        seq: u64,
        budget: String,
        history: String,
    },
    #[error("no world versions are kept (--history 0)")]
    Off,
}

/// `33554432` → `32 MiB`.
fn mib(bytes: usize) -> String {
    let m = bytes as f64 / (1024.0 * 1024.0);
    if m >= 10.0 || m.fract() == 0.0 {
        format!("{m:.0} MiB")
    } else {
        format!("{m:.1} MiB")
    }
}

impl Session {
    /// The attempt of step `seq`: its id, pod key, the pod as popped, and where its
    /// world is.
    fn attempt_of_step(
        &self,
        seq: u64,
    ) -> Result<(u64, String, Arc<Pod>, Option<super::world::WorldPos>), ThenError> {
        let step = self.history.step(seq).ok_or(ThenError::NoStep(seq))?;
        let id = step.attempt.ok_or(ThenError::NoAttempt(seq))?;
        if let Some(a) = self.history.attempt(id) {
            let pod = a.pod_info.whole().full_pod();
            return Ok((id, a.pod.clone(), pod, a.frozen.as_ref().map(|f| f.world)));
        }
        let budget = self.history.attempt_budget;
        let open = self
            .current
            .iter()
            .chain(self.core.parked.values())
            .find(|a| a.id == id)
            .ok_or_else(|| ThenError::AttemptForgotten {
                seq,
                id,
                budget: mib(budget),
                history: mib(budget * 8),
            })?;
        Ok((
            id,
            open.pod().key.clone(),
            open.pod().full_pod(),
            open.frozen.as_ref().map(|f| f.world),
        ))
    }

    fn world_of_step(&mut self, seq: u64) -> Result<&mut super::world::World, ThenError> {
        if !self.core.world.enabled() {
            return Err(ThenError::Off);
        }
        let (_, _, _, pos) = self.attempt_of_step(seq)?;
        let budget = self.core.world.budget();
        let forgotten = || ThenError::Forgotten {
            seq,
            budget: mib(budget),
            history: mib(budget * 4),
        };
        let pos = pos.ok_or_else(forgotten)?;
        self.core.world.world_at(pos).map_err(|e| match e {
            WorldError::Forgotten | WorldError::NotRecorded => forgotten(),
        })
    }

    /// Pod `key` as it was at step `seq`: the pod the step's attempt popped, or as the
    /// world at that attempt's start held it.
    pub fn pod_then(&mut self, seq: u64, key: &str) -> Result<PodThen, ThenError> {
        let (_, pod, popped, _) = self.attempt_of_step(seq)?;
        if pod == key {
            return Ok(PodThen::Popped(popped));
        }
        let world = self.world_of_step(seq)?;
        let on_node = world
            .snapshot
            .list()
            .iter()
            .flat_map(|n| n.pods.iter())
            .find(|p| p.key == key);
        if let Some(p) = on_node {
            return Ok(PodThen::Bound(p.full_pod()));
        }
        Ok(match world.listers.pods.get(key) {
            Some(p) => PodThen::Pending(p.full_pod()),
            None => PodThen::Absent,
        })
    }

    /// Node `name` as it was at step `seq` (`None`: not in the cluster then), with the
    /// step its world was taken at (its attempt's first).
    pub fn node_then(&mut self, seq: u64, name: &str) -> Result<Option<NodeInfo>, ThenError> {
        let world = self.world_of_step(seq)?;
        Ok(world.snapshot.get(name).cloned())
    }

    /// The session-wide number of step `seq`'s attempt and the step it began at.
    pub fn attempt_start_of_step(&self, seq: u64) -> Option<(u64, u64)> {
        let id = self.history.step(seq)?.attempt?;
        let first = match self.history.attempt(id) {
            Some(a) => a.first_seq,
            None => {
                self.current
                    .iter()
                    .chain(self.core.parked.values())
                    .find(|a| a.id == id)?
                    .first_seq
            }
        };
        Some((id, first))
    }
}

#[cfg(test)]
mod tests {
    use super::mib;

    #[test]
    fn budgets_read_in_mib() {
        assert_eq!(mib(32 << 20), "32 MiB");
        assert_eq!(mib(8 << 20), "8 MiB");
        assert_eq!(mib(3 << 19), "1.5 MiB");
    }
}
