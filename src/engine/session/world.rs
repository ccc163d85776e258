//! The world an attempt ran in, kept so that the attempt can be run again exactly when
//! someone looks at it (see `detail.rs`).
//!
//! An attempt reads the snapshot (nodes and their pods), the listers (every other
//! object), the nominated pods, the waiting pods, what stateful plugins remember, the
//! clock and the node search's start. The small ones are frozen at the attempt's start
//! (`Frozen`: shared copies, copied again only when they change). The two large ones
//! record their changes instead: the session keeps those changes and, every few
//! thousand of them, a copy of both (a checkpoint). The world of any kept attempt is
//! then a checkpoint with the changes after it applied in order, which rebuilds it
//! exactly. A cursor keeps the last world rebuilt, so looking at attempts one after the
//! other only applies the changes in between. Checkpoints are bounded by bytes; an
//! attempt older than the oldest kept checkpoint can no longer be re-run.

use std::collections::VecDeque;
use std::sync::Arc;

use jiff::Timestamp;

use crate::framework::listers::{ListerOp, Listers};
use crate::framework::nominator::Nominator;
use crate::framework::plugin::PluginState;
use crate::framework::snapshot::{Snapshot, SnapshotOp};
use crate::framework::waiting::WaitingPods;

/// Positions in the change logs of the snapshot and of the listers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorldPos {
    pub snapshot: u64,
    pub listers: u64,
}

impl WorldPos {
    fn le(self, other: WorldPos) -> bool {
        self.snapshot <= other.snapshot && self.listers <= other.listers
    }
}

/// What an attempt needs besides the pod to be run again as it ran.
#[derive(Clone)]
pub struct Frozen {
    pub world: WorldPos,
    pub now: Timestamp,
    pub start_node_index: usize,
    /// What the profile's batch held (OpportunisticBatching).
    pub batch: Option<crate::framework::batch::BatchProbe>,
    pub nominator: Arc<Nominator>,
    /// The waiting pods, when there were any.
    pub waiting: Option<Arc<WaitingPods>>,
    /// Stateful plugins' state, by plugin name (empty for most profiles).
    pub plugin_states: Arc<Vec<(&'static str, PluginState)>>,
}

impl std::fmt::Debug for Frozen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frozen")
            .field("world", &self.world)
            .field("now", &self.now)
            .field("start_node_index", &self.start_node_index)
            .finish_non_exhaustive()
    }
}

/// A snapshot and listers at a position.
#[derive(Clone)]
pub struct World {
    pub pos: WorldPos,
    pub snapshot: Snapshot,
    pub listers: Listers,
}

struct Checkpoint {
    world: World,
    bytes: usize,
}

/// Why an attempt's world cannot be rebuilt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorldError {
    #[error("the attempt is older than the history kept (raise --history to keep more)")]
    Forgotten,
    #[error("no world was recorded for the attempt")]
    NotRecorded,
}

/// The change logs, checkpoints and cursor.
pub struct WorldHistory {
    snapshot_ops: VecDeque<SnapshotOp>,
    snapshot_base: u64,
    lister_ops: VecDeque<ListerOp>,
    lister_base: u64,
    checkpoints: VecDeque<Checkpoint>,
    ops_since_checkpoint: usize,
    /// Bytes each kept change holds (`snapshot_ops`, then `lister_ops`), their sum, and
    /// the part of it since the last checkpoint.
    snapshot_op_bytes: VecDeque<u32>,
    lister_op_bytes: VecDeque<u32>,
    op_bytes: usize,
    op_bytes_since_checkpoint: usize,
    sizes: super::world_size::Sizes,
    /// Bytes the checkpoints and the changes after the oldest may take (0 = keep none:
    /// attempts are not re-run).
    budget: usize,
    cursor: Option<World>,
}

impl WorldHistory {
    pub fn new(budget: usize) -> WorldHistory {
        WorldHistory {
            snapshot_ops: VecDeque::new(),
            snapshot_base: 0,
            lister_ops: VecDeque::new(),
            lister_base: 0,
            checkpoints: VecDeque::new(),
            ops_since_checkpoint: 0,
            snapshot_op_bytes: VecDeque::new(),
            lister_op_bytes: VecDeque::new(),
            op_bytes: 0,
            op_bytes_since_checkpoint: 0,
            sizes: Default::default(),
            budget,
            cursor: None,
        }
    }

    pub fn enabled(&self) -> bool {
        self.budget > 0
    }

    /// Bytes the world's versions may take.
    pub fn budget(&self) -> usize {
        self.budget
    }

    fn end(&self) -> WorldPos {
        WorldPos {
            snapshot: self.snapshot_base + self.snapshot_ops.len() as u64,
            listers: self.lister_base + self.lister_ops.len() as u64,
        }
    }

    /// Keeps `s`, the snapshot's changes since the last call (taken by the caller: the
    /// cache owns the snapshot), takes the listers' and says where the world is now,
    /// taking a checkpoint when enough has changed since the last one.
    pub fn freeze(
        &mut self,
        snapshot: &Snapshot,
        s: Vec<SnapshotOp>,
        listers: &mut Listers,
    ) -> WorldPos {
        if !self.enabled() {
            return WorldPos::default();
        }
        let l = listers.take_changes();
        self.ops_since_checkpoint += s.len() + l.len();
        let before = self.op_bytes;
        for op in s {
            let b = self.sizes.snapshot_op(&op);
            self.snapshot_op_bytes
                .push_back(u32::try_from(b).unwrap_or(u32::MAX));
            self.op_bytes += b;
            self.snapshot_ops.push_back(op);
        }
        for op in l {
            let b = self.sizes.lister_op(&op);
            self.lister_op_bytes
                .push_back(u32::try_from(b).unwrap_or(u32::MAX));
            self.op_bytes += b;
            self.lister_ops.push_back(op);
        }
        self.op_bytes_since_checkpoint += self.op_bytes - before;
        let pos = self.end();
        // Applying a change costs about a microsecond and a copy of the snapshot about
        // one per node: a checkpoint every two changes per node keeps both small. Changes
        // holding big objects (a pending pod's status written at each attempt) take one
        // sooner, once they hold a quarter of the budget and as much as a checkpoint
        // costs, so that the budget can drop old changes with old checkpoints.
        let every = (snapshot.num_nodes() * 2).max(2048);
        let checkpoint_bytes = self.checkpoints.back().map_or(0, |c| c.bytes);
        if self.checkpoints.is_empty()
            || self.ops_since_checkpoint >= every
            || self.op_bytes_since_checkpoint >= (self.budget / 4).max(checkpoint_bytes)
        {
            let world = World {
                pos,
                snapshot: snapshot.clone(),
                listers: listers.clone(),
            };
            let bytes = world.snapshot.approx_bytes() + world.listers.approx_bytes();
            self.checkpoints.push_back(Checkpoint { world, bytes });
            self.ops_since_checkpoint = 0;
            self.op_bytes_since_checkpoint = 0;
            self.evict();
        }
        pos
    }

    /// Drops the oldest checkpoints (and the changes before the next) while over budget;
    /// the newest always stays.
    fn evict(&mut self) {
        while self.checkpoints.len() > 1 && self.bytes() > self.budget {
            self.checkpoints.pop_front();
            self.drop_ops_before_oldest();
        }
        self.drop_ops_before_oldest();
    }

    /// Forgets the changes no kept checkpoint leads to.
    fn drop_ops_before_oldest(&mut self) {
        let Some(oldest) = self.checkpoints.front().map(|c| c.world.pos) else {
            return;
        };
        while self.snapshot_base < oldest.snapshot && self.snapshot_ops.pop_front().is_some() {
            self.snapshot_base += 1;
            let b = self.snapshot_op_bytes.pop_front().unwrap_or(0) as usize;
            self.op_bytes = self.op_bytes.saturating_sub(b);
        }
        while self.lister_base < oldest.listers && self.lister_ops.pop_front().is_some() {
            self.lister_base += 1;
            let b = self.lister_op_bytes.pop_front().unwrap_or(0) as usize;
            self.op_bytes = self.op_bytes.saturating_sub(b);
        }
        if self.cursor.as_ref().is_some_and(|c| !oldest.le(c.pos)) {
            self.cursor = None;
        }
    }

    /// Bytes held by the checkpoints and the changes kept.
    pub fn bytes(&self) -> usize {
        self.checkpoints.iter().map(|c| c.bytes).sum::<usize>() + self.op_bytes
    }

    /// The world as it was at `pos`: the cursor moved there (rebuilt from the nearest
    /// checkpoint when it cannot move forward to it).
    pub fn world_at(&mut self, pos: WorldPos) -> Result<&mut World, WorldError> {
        if !pos.le(self.end()) {
            return Err(WorldError::NotRecorded);
        }
        let Some(base) = self
            .checkpoints
            .iter()
            .rev()
            .find(|c| c.world.pos.le(pos))
            .map(|c| c.world.pos)
        else {
            return Err(WorldError::Forgotten);
        };
        let reusable = self
            .cursor
            .as_ref()
            .is_some_and(|c| c.pos.le(pos) && base.le(c.pos));
        if !reusable {
            let cp = self
                .checkpoints
                .iter()
                .rev()
                .find(|c| c.world.pos == base)
                .ok_or(WorldError::Forgotten)?;
            self.cursor = Some(cp.world.clone());
        }
        let (snapshot_base, lister_base) = (self.snapshot_base, self.lister_base);
        let Some(cursor) = self.cursor.as_mut() else {
            return Err(WorldError::Forgotten);
        };
        let from = (cursor.pos.snapshot - snapshot_base) as usize;
        let to = (pos.snapshot - snapshot_base) as usize;
        for op in self.snapshot_ops.range(from..to) {
            cursor.snapshot.apply(op);
        }
        let from = (cursor.pos.listers - lister_base) as usize;
        let to = (pos.listers - lister_base) as usize;
        for op in self.lister_ops.range(from..to) {
            cursor.listers.apply(op);
        }
        cursor.pos = pos;
        Ok(cursor)
    }

    /// Whether the world at `pos` can still be rebuilt.
    pub fn has(&self, pos: WorldPos) -> bool {
        self.checkpoints
            .front()
            .is_some_and(|c| c.world.pos.le(pos))
            && pos.le(self.end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::PodInfo;
    use k8s_openapi::api::core::v1::{Node, Pod};

    fn node(name: &str) -> Arc<Node> {
        Arc::new(
            serde_json::from_value(serde_json::json!({"metadata": {"name": name},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}))
            .unwrap(),
        )
    }

    fn pod(name: &str, node: &str) -> Arc<PodInfo> {
        let p: Pod = serde_json::from_value(serde_json::json!({"metadata": {"name": name, "namespace": "d", "uid": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}))
        .unwrap();
        Arc::new(PodInfo::new(Arc::new(p)))
    }

    fn pods_of(s: &Snapshot) -> Vec<(String, Vec<String>)> {
        s.list()
            .iter()
            .map(|n| {
                (
                    n.name().to_string(),
                    n.pods.iter().map(|p| p.key.clone()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn rebuilds_the_world_at_each_position() {
        let mut snap = Snapshot::new(vec![node("a"), node("b")], Vec::new());
        let mut listers = Listers::default();
        snap.record_changes();
        listers.record_changes();
        // A budget the first checkpoint and every change after it fit in: each world is
        // rebuilt from that checkpoint.
        let mut h = WorldHistory::new(1 << 24);
        let mut seen = Vec::new();
        for i in 0..20 {
            let ops = snap.take_changes();
            let pos = h.freeze(&snap, ops, &mut listers);
            seen.push((pos, pods_of(&snap)));
            snap.add_pod(pod(&format!("p{i}"), if i % 2 == 0 { "a" } else { "b" }));
            if i % 5 == 4 {
                snap.remove_pod("a", &format!("p{}", i - 4));
            }
            if i == 10 {
                snap.upsert_node(node("c"));
            }
        }
        // Backwards and forwards, in any order.
        for (pos, want) in seen.iter().rev().chain(seen.iter()) {
            let w = h.world_at(*pos).unwrap();
            assert_eq!(&pods_of(&w.snapshot), want);
        }
    }

    #[test]
    fn changes_count_against_the_budget() {
        // Pod versions written one after the other (a pending pod's status at each retry)
        // are held only by the change log: it must not outgrow the budget.
        let mut snap = Snapshot::new(vec![node("a")], Vec::new());
        let mut listers = Listers::default();
        snap.record_changes();
        listers.record_changes();
        let budget = 64 << 10;
        let mut h = WorldHistory::new(budget);
        for i in 0..20_000 {
            snap.add_pod(pod(&format!("p{}", i % 7), "a"));
            snap.remove_pod("a", &format!("d/p{}", i % 7));
            let ops = snap.take_changes();
            h.freeze(&snap, ops, &mut listers);
            assert!(
                h.bytes() <= 2 * budget,
                "{} bytes after {i} changes",
                h.bytes()
            );
        }
        assert!(
            h.snapshot_ops.len() < 2_000,
            "{} changes kept",
            h.snapshot_ops.len()
        );
    }

    #[test]
    fn forgets_past_the_budget() {
        let mut snap = Snapshot::new(vec![node("a")], Vec::new());
        let mut listers = Listers::default();
        snap.record_changes();
        listers.record_changes();
        let mut h = WorldHistory::new(1);
        let ops = snap.take_changes();
        let first = h.freeze(&snap, ops, &mut listers);
        for i in 0..5000 {
            snap.add_pod(pod(&format!("p{i}"), "a"));
        }
        let ops = snap.take_changes();
        let later = h.freeze(&snap, ops, &mut listers);
        assert!(h.world_at(later).is_ok());
        assert_eq!(h.world_at(first).err(), Some(WorldError::Forgotten));
        assert!(!h.has(first));
    }
}
