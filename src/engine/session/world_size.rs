//! What the world's change logs hold, in bytes: each change carries an object version (a
//! pod after a status write, a node after an update) that no checkpoint shares, so the
//! logs, not only the checkpoints, count against `--history`.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};
use serde::Serialize;

use crate::framework::PodInfo;
use crate::framework::listers::{ListerOp, ListerValue};
use crate::framework::snapshot::SnapshotOp;

/// A change's own bookkeeping (the enum, the Arc, the deque slot).
const OP: usize = 64;

/// Sizes of objects by identity: an object's versions are about the same size, so each
/// object is measured once (measuring is a serialization).
#[derive(Debug, Clone, Default)]
pub(super) struct Sizes {
    by_object: FxHashMap<u64, u32>,
}

impl Sizes {
    pub(super) fn snapshot_op(&mut self, op: &SnapshotOp) -> usize {
        OP + match op {
            SnapshotOp::AddPod(p) => self.pod(p),
            SnapshotOp::UpsertNode(n) => {
                let name = n.metadata.name.as_deref().unwrap_or_default();
                self.measured(("node", name), &**n)
            }
            // The pod removed is the version a checkpoint or an earlier change holds.
            SnapshotOp::RemovePod(_)
            | SnapshotOp::RemoveNode(_)
            | SnapshotOp::BuildPodIndex
            | SnapshotOp::BuildPodGroups => 0,
        }
    }

    pub(super) fn lister_op(&mut self, op: &ListerOp) -> usize {
        let id = (op.kind.as_str(), op.key.as_str());
        OP + op.key.len()
            + match &op.value {
                None => 0,
                Some(ListerValue::Pod(p)) => self.pod(p),
                Some(ListerValue::Namespace(o)) => self.measured(id, &**o),
                Some(ListerValue::PersistentVolumeClaim(o)) => self.measured(id, &**o),
                Some(ListerValue::PersistentVolume(o)) => self.measured(id, &**o),
                Some(ListerValue::StorageClass(o)) => self.measured(id, &**o),
                Some(ListerValue::CSINode(o)) => self.measured(id, &**o),
                Some(ListerValue::PodDisruptionBudget(o)) => self.measured(id, &**o),
                Some(ListerValue::PriorityClass(o)) => self.measured(id, &**o),
                Some(ListerValue::Service(o)) => self.measured(id, &**o),
                Some(ListerValue::ReplicaSet(o)) => self.measured(id, &**o),
                Some(ListerValue::StatefulSet(o)) => self.measured(id, &**o),
                Some(ListerValue::ReplicationController(o)) => self.measured(id, &**o),
                Some(ListerValue::Custom(_, v)) => self.measured(id, &**v),
            }
    }

    pub(super) fn pod(&mut self, p: &PodInfo) -> usize {
        p.packed_bytes().unwrap_or_else(|| pod_bytes(p.pod()))
    }

    /// The object's size in memory: about four times its JSON (typed objects hold every
    /// field as an option and every string in its own allocation).
    fn measured(&mut self, id: (&str, &str), object: &impl Serialize) -> usize {
        let mut h = FxHasher::default();
        id.hash(&mut h);
        *self.by_object.entry(h.finish()).or_insert_with(|| {
            let json = json_bytes(object);
            u32::try_from(json.saturating_mul(4)).unwrap_or(u32::MAX)
        }) as usize
    }
}

/// A whole pod's size in memory, estimated from what makes pods big without serializing
/// it (every pod a replay binds is counted once, on the scheduling path).
fn pod_bytes(pod: &k8s_openapi::api::core::v1::Pod) -> usize {
    let strings = |m: &Option<std::collections::BTreeMap<String, String>>| {
        m.iter()
            .flatten()
            .map(|(k, v)| k.len() + v.len() + 64)
            .sum::<usize>()
    };
    let meta = &pod.metadata;
    let mut n = 2048 + strings(&meta.labels) + strings(&meta.annotations);
    n += meta.managed_fields.as_ref().map_or(0, |m| m.len() * 1024);
    if let Some(spec) = &pod.spec {
        let containers = spec
            .containers
            .iter()
            .chain(spec.init_containers.iter().flatten());
        for c in containers {
            n += 1536 + c.image.as_ref().map_or(0, String::len);
            n += c
                .command
                .iter()
                .chain(c.args.iter())
                .flatten()
                .map(|a| a.len() + 24)
                .sum::<usize>();
            n += c.env.as_ref().map_or(0, |e| e.len() * 160);
            n += c.ports.as_ref().map_or(0, |p| p.len() * 96);
            n += c.volume_mounts.as_ref().map_or(0, |v| v.len() * 128);
        }
        n += spec.volumes.as_ref().map_or(0, |v| v.len() * 384);
        n += spec.tolerations.as_ref().map_or(0, |t| t.len() * 128);
    }
    if let Some(status) = &pod.status {
        n += status.conditions.as_ref().map_or(0, |c| {
            c.iter()
                .map(|c| 192 + c.message.as_ref().map_or(0, String::len))
                .sum()
        });
        n += status
            .container_statuses
            .as_ref()
            .map_or(0, |c| c.len() * 768);
    }
    n
}

/// The length of `v` as JSON, counted without writing it anywhere.
fn json_bytes(v: &impl Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    // Serializing these types cannot fail; a failure would only undercount.
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}
