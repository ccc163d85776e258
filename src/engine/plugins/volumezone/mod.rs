//! VolumeZone: the zone / region labels of the PVs a pod's bound claims use must match
//! the node's (beta labels on either side fall back to the GA ones on the node). Only
//! bound claims count; unbound WaitForFirstConsumer claims are VolumeBinding's job.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::PersistentVolume;

use crate::api::volume::{
    BINDING_MODE_WAIT_FOR_FIRST_CONSUMER, LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_TOPOLOGY_REGION, LABEL_TOPOLOGY_ZONE, RESOURCE_PV,
    RESOURCE_PVC, RESOURCE_STORAGE_CLASS, label_zones_to_set, not_found, pod_volumes, pv_labels,
    pv_name, pvc_class, pvc_volume_name,
};
use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::hints::access::{as_objects, mounts_claim, new_pvc, required, skip_or_queue};
use crate::framework::plugin::{FilterPlugin, Handle, Plugin, PreFilterPlugin, PreFilterResult};
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, StateTree, Status};
use k8s_openapi::api::storage::v1::StorageClass;

pub const NAME: &str = "VolumeZone";
const PRE_FILTER_STATE_KEY: &str = "PreFilterVolumeZone";
pub const ERR_REASON_CONFLICT: &str = "node(s) had no available volume zone";

/// The PV labels this plugin looks at, in upstream's order.
pub const TOPOLOGY_LABELS: [&str; 4] = [
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_REGION,
];

#[derive(Debug, Default)]
pub struct VolumeZone;

/// One topology label of one PV: the allowed values (a `__` list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PvTopology {
    pv_name: String,
    key: &'static str,
    values: BTreeSet<String>,
}

#[derive(Debug, Clone, Default)]
struct StateData {
    pod_pv_topologies: Vec<PvTopology>,
}

impl RenderState for StateData {
    fn render(&self) -> StateTree {
        StateTree::list(
            "podPVTopologies",
            self.pod_pv_topologies.iter().map(|t| {
                let values: Vec<&str> = t.values.iter().map(String::as_str).collect();
                format!("{}: {} in [{}]", t.pv_name, t.key, values.join(", "))
            }),
        )
    }
}

fn translate_to_ga_label(label: &str) -> &str {
    match label {
        LABEL_FAILURE_DOMAIN_BETA_REGION => LABEL_TOPOLOGY_REGION,
        LABEL_FAILURE_DOMAIN_BETA_ZONE => LABEL_TOPOLOGY_ZONE,
        other => other,
    }
}

/// `getPVTopologies`: the PV's topology labels; unparsable values are ignored.
pub(crate) fn pv_topologies(pv: &PersistentVolume) -> Vec<PvTopology> {
    let labels = pv_labels(pv);
    TOPOLOGY_LABELS
        .iter()
        .filter_map(|&key| {
            let value = labels.get(key)?;
            let values = label_zones_to_set(value).ok()?;
            Some(PvTopology {
                pv_name: pv_name(pv).to_string(),
                key,
                values,
            })
        })
        .collect()
}

/// `getPVbyPod`.
fn pv_topologies_for_pod(h: &Handle, pod: &PodInfo) -> Result<Vec<PvTopology>, Status> {
    let mut out = Vec::new();
    for claim in pod_volumes(pod.pod())
        .iter()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
    {
        let name = claim.claim_name.as_str();
        if name.is_empty() {
            return Err(Status::unresolvable("PersistentVolumeClaim had no name"));
        }
        let Some(pvc) = h.listers.pvc(&pod.namespace, name) else {
            return Err(Status::unresolvable(not_found(RESOURCE_PVC, name)));
        };
        let pv_name = pvc_volume_name(pvc);
        if pv_name.is_empty() {
            let sc_name = pvc_class(pvc);
            if sc_name.is_empty() {
                return Err(Status::unresolvable(
                    "PersistentVolumeClaim had no pv name and storageClass name",
                ));
            }
            let Some(class) = h.listers.storage_classes.get(sc_name) else {
                return Err(Status::unresolvable(not_found(
                    RESOURCE_STORAGE_CLASS,
                    sc_name,
                )));
            };
            match class.volume_binding_mode.as_deref() {
                None => {
                    return Err(Status::unresolvable(format!(
                        "VolumeBindingMode not set for StorageClass {sc_name:?}"
                    )));
                }
                // Unbound volumes that wait for the first consumer are skipped.
                Some(BINDING_MODE_WAIT_FOR_FIRST_CONSUMER) => continue,
                Some(_) => return Err(Status::unresolvable("PersistentVolume had no name")),
            }
        }
        let Some(pv) = h.listers.pvs.get(pv_name) else {
            return Err(Status::unresolvable(not_found(RESOURCE_PV, pv_name)));
        };
        out.extend(pv_topologies(pv));
    }
    Ok(out)
}

impl Plugin for VolumeZone {
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

impl PreFilterPlugin for VolumeZone {
    fn pre_filter(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (Option<PreFilterResult>, Status) {
        let topologies = match pv_topologies_for_pod(h, pod) {
            Ok(t) => t,
            Err(s) => return (None, s),
        };
        if topologies.is_empty() {
            return (None, Status::skip());
        }
        state.write(
            PRE_FILTER_STATE_KEY,
            StateData {
                pod_pv_topologies: topologies,
            },
        );
        (None, Status::success())
    }
}

impl FilterPlugin for VolumeZone {
    fn filter(&self, h: &Handle, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod_volumes(pod.pod()).is_empty() {
            return Status::success();
        }
        let computed;
        let topologies = match state.read::<StateData>(PRE_FILTER_STATE_KEY) {
            Ok(s) => &s.pod_pv_topologies,
            // Without PreFilter's state, work it out here, as upstream falls back to.
            Err(_) => match pv_topologies_for_pod(h, pod) {
                Ok(t) => {
                    computed = t;
                    &computed
                }
                Err(s) => return s,
            },
        };
        let labels = node.labels();
        // A node with no topology labels at all (a single-zone cluster) fits.
        if !TOPOLOGY_LABELS.iter().any(|k| labels.contains_key(*k)) {
            return Status::success();
        }
        for t in topologies {
            let v = labels
                .get(t.key)
                .or_else(|| labels.get(translate_to_ga_label(t.key)));
            if v.is_none_or(|v| !t.values.contains(v)) {
                return Status::unresolvable(ERR_REASON_CONFLICT);
            }
        }
        Status::success()
    }
}

// ---- queueing hints (EnqueueExtensions) ----

/// VolumeZone's EnqueueExtensions.
fn queueing_hints() -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::with_hint(R::StorageClass, A::ADD, |_, _, old, new| {
            let (_, n) = as_objects::<StorageClass>(old, new)?;
            let n = required(n, "StorageClass")?;
            skip_or_queue(
                n.volume_binding_mode.as_deref() == Some(BINDING_MODE_WAIT_FOR_FIRST_CONSUMER),
            )
        }),
        ClusterEventWithHint::new(R::Node, A::ADD | A::UPDATE_NODE_LABEL),
        ClusterEventWithHint::with_hint(
            R::PersistentVolumeClaim,
            A::ADD | A::UPDATE,
            |_, pod, old, new| skip_or_queue(mounts_claim(pod, &new_pvc(old, new)?)),
        ),
        ClusterEventWithHint::with_hint(
            R::PersistentVolume,
            A::ADD | A::UPDATE,
            |_, _, old, new| {
                let (o, n) = as_objects::<PersistentVolume>(old, new)?;
                let Some(o) = o else {
                    return skip_or_queue(true);
                };
                let n = required(n, "PersistentVolume")?;
                skip_or_queue(pv_topologies(&o) != pv_topologies(&n))
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::framework::{Code, Snapshot};
    use crate::plugins::testing::{Env, listers, node, pod};
    use serde_json::json;

    fn env(objs: &[serde_json::Value]) -> Env {
        Env::new(Snapshot::default(), listers(objs))
    }

    fn claim_pod(claim: &str) -> Arc<PodInfo> {
        pod(
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}],
            "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]}}),
        )
    }

    fn bound(pv_labels: serde_json::Value) -> Vec<serde_json::Value> {
        vec![
            json!({"kind": "PersistentVolumeClaim", "metadata": {"name": "zonal", "namespace": "default"},
                "spec": {"volumeName": "pv-zonal"}}),
            json!({"kind": "PersistentVolume", "metadata": {"name": "pv-zonal", "labels": pv_labels}}),
        ]
    }

    fn run(env: &Env, p: &PodInfo, node_labels: serde_json::Value) -> Status {
        let h = env.handle();
        let mut cs = CycleState::new();
        let (_, s) = VolumeZone.pre_filter(&h, &mut cs, p);
        if !s.is_success() {
            return s;
        }
        let n = node(json!({"metadata": {"name": "n", "labels": node_labels}}));
        VolumeZone.filter(&h, &cs, p, &n)
    }

    #[test]
    fn zone_must_match_with_ga_fallback() {
        // Cases 0003 / 0190: a bound PV in one zone; nodes in other zones are rejected.
        let e = env(&bound(json!({"topology.kubernetes.io/zone": "zone-a"})));
        let p = claim_pod("zonal");
        assert!(run(&e, &p, json!({"topology.kubernetes.io/zone": "zone-a"})).is_success());
        let s = run(&e, &p, json!({"topology.kubernetes.io/zone": "zone-b"}));
        assert_eq!(
            (s.code(), s.message().as_str()),
            (Code::UnschedulableAndUnresolvable, ERR_REASON_CONFLICT)
        );
        // No topology label on the node at all: fits.
        assert!(run(&e, &p, json!({"kubernetes.io/hostname": "n"})).is_success());
        // A region label alone still makes the node constrained.
        assert!(run(&e, &p, json!({"topology.kubernetes.io/region": "r"})).is_rejected());

        // Beta label on the PV, GA label on the node; multi-zone values.
        let e = env(&bound(
            json!({"failure-domain.beta.kubernetes.io/zone": "zone-a__zone-c"}),
        ));
        assert!(run(&e, &p, json!({"topology.kubernetes.io/zone": "zone-c"})).is_success());
        assert!(run(&e, &p, json!({"topology.kubernetes.io/zone": "zone-b"})).is_rejected());

        // An unparsable value is ignored (and without topologies PreFilter skips).
        let e = env(&bound(json!({"topology.kubernetes.io/zone": "a____b"})));
        assert!(run(&e, &p, json!({"topology.kubernetes.io/zone": "zone-b"})).is_skip());
    }

    #[test]
    fn pre_filter_messages() {
        let p = claim_pod("c");
        let check = |objs: Vec<serde_json::Value>, want: &str| {
            let e = env(&objs);
            let s = run(&e, &p, json!({}));
            assert_eq!(s.code(), Code::UnschedulableAndUnresolvable, "{want}");
            assert_eq!(s.message(), want);
        };
        check(vec![], "persistentvolumeclaim \"c\" not found");
        let pvc = |spec: serde_json::Value| json!({"kind": "PersistentVolumeClaim", "metadata": {"name": "c", "namespace": "default"}, "spec": spec});
        check(
            vec![pvc(json!({}))],
            "PersistentVolumeClaim had no pv name and storageClass name",
        );
        check(
            vec![pvc(json!({"storageClassName": "sc"}))],
            "storageclass.storage.k8s.io \"sc\" not found",
        );
        let sc = |mode: Option<&str>| {
            let mut v =
                json!({"kind": "StorageClass", "metadata": {"name": "sc"}, "provisioner": "x"});
            if let Some(m) = mode {
                v["volumeBindingMode"] = json!(m);
            }
            v
        };
        check(
            vec![pvc(json!({"storageClassName": "sc"})), sc(None)],
            "VolumeBindingMode not set for StorageClass \"sc\"",
        );
        check(
            vec![
                pvc(json!({"storageClassName": "sc"})),
                sc(Some("Immediate")),
            ],
            "PersistentVolume had no name",
        );
        check(
            vec![pvc(json!({"volumeName": "gone"}))],
            "persistentvolume \"gone\" not found",
        );
        // WaitForFirstConsumer claims are skipped.
        let e = env(&[
            pvc(json!({"storageClassName": "sc"})),
            sc(Some("WaitForFirstConsumer")),
        ]);
        assert!(run(&e, &p, json!({})).is_skip());
        let noname = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [],
            "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": ""}}]}}));
        let e = env(&[]);
        assert_eq!(
            run(&e, &noname, json!({})).message(),
            "PersistentVolumeClaim had no name"
        );
    }
}
