//! VolumeRestrictions: disk conflicts with pods already on the node (GCE PD, AWS EBS,
//! ISCSI, Ceph RBD), and claims with the ReadWriteOncePod access mode that another
//! scheduled pod already uses.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, Volume};

use crate::api::volume::{
    READ_WRITE_ONCE_POD, RESOURCE_PVC, not_found, pod_volumes, pvc_access_modes,
};
use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::hints::access::{as_pods, mounts_claim, new_pvc, required, skip_or_queue};
use crate::framework::listers::ns_key;
use crate::framework::plugin::{
    FilterPlugin, Handle, Plugin, PreFilterExtensions, PreFilterPlugin, PreFilterResult,
};
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, StateTree, Status};

pub const NAME: &str = "VolumeRestrictions";
const PRE_FILTER_STATE_KEY: &str = "PreFilterVolumeRestrictions";

pub const ERR_REASON_DISK_CONFLICT: &str = "node(s) had no available disk";
pub const ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT: &str = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod";

#[derive(Debug, Default)]
pub struct VolumeRestrictions;

/// Computed at PreFilter, used at Filter.
#[derive(Debug, Clone, Default)]
struct PreFilterState {
    /// Names of the pod's claims with the ReadWriteOncePod access mode.
    read_write_once_pod_pvcs: Arc<BTreeSet<String>>,
    /// How many references scheduled pods hold to those claims.
    conflicting_pvc_ref_count: i64,
}

impl PreFilterState {
    /// Upstream matches the pod's claims by name only (not namespace).
    fn ref_count_for_pod(&self, volumes: &[Volume]) -> i64 {
        volumes
            .iter()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .filter(|c| self.read_write_once_pod_pvcs.contains(&c.claim_name))
            .count() as i64
    }

    fn update_with_pod(&mut self, volumes: &[Volume], multiplier: i64) {
        self.conflicting_pvc_ref_count += multiplier * self.ref_count_for_pod(volumes);
    }
}

impl RenderState for PreFilterState {
    fn render(&self) -> StateTree {
        StateTree::node(
            "preFilterState",
            vec![
                StateTree::list(
                    "readWriteOncePodPVCs",
                    self.read_write_once_pod_pvcs.iter().cloned(),
                ),
                StateTree::kv("conflictingPVCRefCount", self.conflicting_pvc_ref_count),
            ],
        )
    }
}

fn read_state(cs: &CycleState) -> Result<&PreFilterState, Status> {
    cs.read::<PreFilterState>(PRE_FILTER_STATE_KEY)
        .map_err(|_| {
            Status::error(format!(
                "cannot read {PRE_FILTER_STATE_KEY:?} from cycleState"
            ))
        })
}

/// AddPod / RemovePod: the pod's references to the ReadWriteOncePod claims count.
fn update_state(cs: &mut CycleState, volumes: &[Volume], multiplier: i64) -> Status {
    match cs.read_mut::<PreFilterState>(PRE_FILTER_STATE_KEY) {
        Ok(s) => {
            s.update_with_pod(volumes, multiplier);
            Status::success()
        }
        Err(_) => state_missing(),
    }
}

fn state_missing() -> Status {
    Status::error(format!(
        "cannot read {PRE_FILTER_STATE_KEY:?} from cycleState"
    ))
}

/// Inline volumes this plugin checks for conflicts.
pub(crate) fn needs_restrictions_check(v: &Volume) -> bool {
    v.gce_persistent_disk.is_some()
        || v.aws_elastic_block_store.is_some()
        || v.rbd.is_some()
        || v.iscsi.is_some()
}

fn have_overlap(a: &[String], b: &[String]) -> bool {
    a.iter().any(|x| b.contains(x))
}

/// `isVolumeConflict`: does `volume` conflict with any volume of `pod`?
/// Whether `volume` conflicts with any of another pod's `volumes`.
pub(crate) fn is_volume_conflict(volume: &Volume, volumes: &[Volume]) -> bool {
    let ro = |b: Option<bool>| b.unwrap_or(false);
    volumes.iter().any(|ev| {
        if let (Some(d), Some(e)) = (&volume.gce_persistent_disk, &ev.gce_persistent_disk)
            && d.pd_name == e.pd_name
            && !(ro(d.read_only) && ro(e.read_only))
        {
            return true;
        }
        if let (Some(d), Some(e)) = (&volume.aws_elastic_block_store, &ev.aws_elastic_block_store)
            && d.volume_id == e.volume_id
        {
            return true;
        }
        if let (Some(d), Some(e)) = (&volume.iscsi, &ev.iscsi)
            && d.iqn == e.iqn
            && !(ro(d.read_only) && ro(e.read_only))
        {
            return true;
        }
        if let (Some(d), Some(e)) = (&volume.rbd, &ev.rbd)
            && have_overlap(&d.monitors, &e.monitors)
            && d.pool.as_deref().unwrap_or("") == e.pool.as_deref().unwrap_or("")
            && d.image == e.image
            && !(ro(d.read_only) && ro(e.read_only))
        {
            return true;
        }
        false
    })
}

/// `satisfyVolumeConflicts`.
fn satisfy_volume_conflicts(pod: &Pod, node: &NodeInfo) -> bool {
    pod_volumes(pod)
        .iter()
        .filter(|v| needs_restrictions_check(v))
        .all(|v| {
            !node
                .pods
                .iter()
                .any(|ep| is_volume_conflict(v, ep.volumes()))
        })
}

impl Plugin for VolumeRestrictions {
    fn sign_pod(&self, pod: &PodInfo) -> Option<crate::framework::signature::SignResult> {
        Some(Ok(vec![crate::plugins::signers::volumes(pod)]))
    }
    fn name(&self) -> &'static str {
        NAME
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(queueing_hints())
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for VolumeRestrictions {
    fn pre_filter(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (Option<PreFilterResult>, Status) {
        let volumes = pod_volumes(pod.pod());
        let needs_check = volumes.iter().any(needs_restrictions_check);

        let mut rwop = BTreeSet::new();
        for claim in volumes
            .iter()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
        {
            let Some(pvc) = h.listers.pvc(&pod.namespace, &claim.claim_name) else {
                return (
                    None,
                    Status::unresolvable(not_found(RESOURCE_PVC, &claim.claim_name)),
                );
            };
            if pvc_access_modes(pvc)
                .iter()
                .any(|m| m == READ_WRITE_ONCE_POD)
            {
                rwop.insert(pvc.metadata.name.clone().unwrap_or_default());
            }
        }
        // At most one pod can use a ReadWriteOncePod claim, so each used one counts once.
        let conflicting = rwop
            .iter()
            .filter(|name| {
                h.snapshot
                    .is_pvc_used_by_pods(&ns_key(&pod.namespace, name))
            })
            .count() as i64;

        if !needs_check && conflicting == 0 {
            return (None, Status::skip());
        }
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState {
                read_write_once_pod_pvcs: Arc::new(rwop),
                conflicting_pvc_ref_count: conflicting,
            },
        );
        (None, Status::success())
    }

    fn extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for VolumeRestrictions {
    fn add_pod(
        &self,
        _h: &Handle,
        state: &mut CycleState,
        _pod: &PodInfo,
        added: &Arc<PodInfo>,
        _node: &NodeInfo,
    ) -> Status {
        update_state(state, added.volumes(), 1)
    }

    fn remove_pod(
        &self,
        _h: &Handle,
        state: &mut CycleState,
        _pod: &PodInfo,
        removed: &Arc<PodInfo>,
        _node: &NodeInfo,
    ) -> Status {
        update_state(state, removed.volumes(), -1)
    }
}

impl FilterPlugin for VolumeRestrictions {
    fn filter(&self, _h: &Handle, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if !satisfy_volume_conflicts(pod.pod(), node) {
            return Status::unschedulable(ERR_REASON_DISK_CONFLICT);
        }
        let s = match read_state(state) {
            Ok(s) => s,
            Err(e) => return e,
        };
        if s.conflicting_pvc_ref_count > 0 {
            return Status::unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT);
        }
        Status::success()
    }
}

// ---- queueing hints (EnqueueExtensions) ----

/// VolumeRestrictions' EnqueueExtensions.
fn queueing_hints() -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::with_hint(R::Pod, A::DELETE, |_, pod, old, new| {
            let (deleted, _) = as_pods(old, new)?;
            let deleted = required(deleted, "pod")?;
            if deleted.metadata.namespace.as_deref().unwrap_or("") != pod.namespace {
                return skip_or_queue(false);
            }
            // The deleted pod held a disk the target conflicts on...
            let conflicted = pod_volumes(pod.pod())
                .iter()
                .filter(|v| needs_restrictions_check(v))
                .any(|v| is_volume_conflict(v, pod_volumes(deleted)));
            // ...or a claim the target uses (maybe ReadWriteOncePod).
            skip_or_queue(conflicted || shares_claim(pod.pod(), deleted))
        }),
        ClusterEventWithHint::new(R::Node, A::ADD),
        ClusterEventWithHint::with_hint(R::PersistentVolumeClaim, A::ADD, |_, pod, old, new| {
            skip_or_queue(mounts_claim(pod, &new_pvc(old, new)?))
        }),
    ]
}

fn shares_claim(a: &Pod, b: &Pod) -> bool {
    let claims = |p: &Pod| -> Vec<String> {
        pod_volumes(p)
            .iter()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .map(|c| c.claim_name.clone())
            .collect()
    };
    let mine = claims(a);
    claims(b).iter().any(|c| mine.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::listers::Listers;
    use crate::framework::{Code, Snapshot};
    use crate::plugins::testing::{Env, node, node_obj, pod};
    use serde_json::json;

    fn listers(pvcs: &[serde_json::Value]) -> Listers {
        let mut l = Listers::default();
        for v in pvcs {
            let pvc: k8s_openapi::api::core::v1::PersistentVolumeClaim =
                serde_json::from_value(v.clone()).unwrap();
            let key = ns_key(
                pvc.metadata.namespace.as_deref().unwrap_or("default"),
                pvc.metadata.name.as_deref().unwrap(),
            );
            l.pvcs.insert(key, Arc::new(pvc));
        }
        l
    }

    fn claim_pod(name: &str, node_name: Option<&str>, claim: &str) -> Arc<PodInfo> {
        let mut spec = json!({"containers": [{"name": "c"}],
            "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]});
        if let Some(n) = node_name {
            spec["nodeName"] = json!(n);
        }
        pod(json!({"metadata": {"name": name}, "spec": spec}))
    }

    #[test]
    fn read_write_once_pod_in_use_rejects_every_node() {
        // Case 0147: the claim "exclusive" (ReadWriteOncePod) is mounted by a running pod.
        let l = listers(&[
            json!({"metadata": {"name": "exclusive", "namespace": "default"}, "spec": {"accessModes": ["ReadWriteOncePod"]}}),
        ]);
        let nodes = vec![
            node_obj(json!({"metadata": {"name": "n1"}})),
            node_obj(json!({"metadata": {"name": "n2"}})),
        ];
        let snap = Snapshot::new(nodes, [claim_pod("holder", Some("n1"), "exclusive")]);
        let env = Env::new(snap, l);
        let h = env.handle();
        let p = claim_pod("p", None, "exclusive");
        let mut cs = CycleState::new();
        let (_, s) = VolumeRestrictions.pre_filter(&h, &mut cs, &p);
        assert!(s.is_success(), "{s}");
        for n in env.snapshot.list() {
            let s = VolumeRestrictions.filter(&h, &cs, &p, n);
            assert_eq!(s.code(), Code::Unschedulable);
            assert_eq!(s.message(), ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT);
        }
        // Removing the holder (as preemption would) clears the conflict.
        let holder = env.snapshot.get("n1").unwrap().pods[0].clone();
        let n1 = env.snapshot.get("n1").unwrap();
        assert!(
            VolumeRestrictions
                .remove_pod(&h, &mut cs, &p, &holder, n1)
                .is_success()
        );
        assert!(VolumeRestrictions.filter(&h, &cs, &p, n1).is_success());
        assert!(
            VolumeRestrictions
                .add_pod(&h, &mut cs, &p, &holder, n1)
                .is_success()
        );
        assert!(VolumeRestrictions.filter(&h, &cs, &p, n1).is_rejected());
    }

    #[test]
    fn unused_or_ordinary_claims_skip() {
        let l = listers(&[
            json!({"metadata": {"name": "rwop", "namespace": "default"}, "spec": {"accessModes": ["ReadWriteOncePod"]}}),
            json!({"metadata": {"name": "rwo", "namespace": "default"}, "spec": {"accessModes": ["ReadWriteOnce"]}}),
        ]);
        let nodes = vec![node_obj(json!({"metadata": {"name": "n1"}}))];
        let snap = Snapshot::new(nodes, [claim_pod("other", Some("n1"), "rwo")]);
        let env = Env::new(snap, l);
        for claim in ["rwop", "rwo"] {
            let (_, s) = VolumeRestrictions.pre_filter(
                &env.handle(),
                &mut CycleState::new(),
                &claim_pod("p", None, claim),
            );
            assert!(s.is_skip(), "{claim}: {s}");
        }
    }

    #[test]
    fn missing_claim_is_unresolvable() {
        let env = Env::new(Snapshot::default(), Listers::default());
        let (_, s) = VolumeRestrictions.pre_filter(
            &env.handle(),
            &mut CycleState::new(),
            &claim_pod("p", None, "nope"),
        );
        assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
        assert_eq!(s.message(), "persistentvolumeclaim \"nope\" not found");
    }

    #[test]
    fn disk_conflicts() {
        let env = Env::new(Snapshot::default(), Listers::default());
        let h = env.handle();
        let with = |vol: serde_json::Value, n: Option<&str>| {
            let mut spec = json!({"containers": [{"name": "c"}], "volumes": [vol]});
            if let Some(n) = n {
                spec["nodeName"] = json!(n);
            }
            pod(json!({"metadata": {"name": format!("p{}", n.is_some())}, "spec": spec}))
        };
        let cases = [
            (
                json!({"name": "a", "gcePersistentDisk": {"pdName": "d"}}),
                json!({"name": "b", "gcePersistentDisk": {"pdName": "d", "readOnly": true}}),
                true,
            ),
            (
                json!({"name": "a", "gcePersistentDisk": {"pdName": "d", "readOnly": true}}),
                json!({"name": "b", "gcePersistentDisk": {"pdName": "d", "readOnly": true}}),
                false,
            ),
            (
                json!({"name": "a", "awsElasticBlockStore": {"volumeID": "v", "readOnly": true}}),
                json!({"name": "b", "awsElasticBlockStore": {"volumeID": "v", "readOnly": true}}),
                true,
            ),
            (
                json!({"name": "a", "iscsi": {"iqn": "q", "lun": 0, "targetPortal": "t"}}),
                json!({"name": "b", "iscsi": {"iqn": "q", "lun": 1, "targetPortal": "u"}}),
                true,
            ),
            (
                json!({"name": "a", "rbd": {"monitors": ["m1", "m2"], "image": "i", "pool": "p"}}),
                json!({"name": "b", "rbd": {"monitors": ["m2"], "image": "i", "pool": "p"}}),
                true,
            ),
            (
                json!({"name": "a", "rbd": {"monitors": ["m1"], "image": "i"}}),
                json!({"name": "b", "rbd": {"monitors": ["m2"], "image": "i"}}),
                false,
            ),
        ];
        for (new, existing, conflict) in cases {
            let p = with(new.clone(), None);
            let mut n = node(json!({"metadata": {"name": "n1"}}));
            n.add_pod(with(existing, Some("n1")));
            let mut cs = CycleState::new();
            let (_, s) = VolumeRestrictions.pre_filter(&h, &mut cs, &p);
            assert!(s.is_success(), "{s}");
            let s = VolumeRestrictions.filter(&h, &cs, &p, &n);
            if conflict {
                assert_eq!(s.message(), ERR_REASON_DISK_CONFLICT, "{new}");
                assert_eq!(s.code(), Code::Unschedulable);
            } else {
                assert!(s.is_success(), "{new}: {s}");
            }
        }
    }
}
