//! The VolumeBinding plugin (upstream `volume_binding.go`).
//!
//! PreFilter rejects pods whose claims are missing, lost, being deleted or unbound with
//! Immediate binding; Filter checks, per node, bound PVs' node affinity and whether the
//! delayed claims can be bound or provisioned there; Reserve assumes the bindings for the
//! chosen node; PreBind would write them (kubestep records them for the cluster to apply).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};

use super::binder::{PodVolumeClaims, PodVolumes, VolumeBinder};
use crate::api::volume::{
    CLAIM_LOST, RESOURCE_PVC, not_found, pod_volumes, pv_name, pvc_key, pvc_name, pvc_phase,
    pvc_volume_name, volume_claim, volume_is_for_pod,
};
use crate::framework::hints::ClusterEventWithHint;
use crate::plugins::helper::ShapePoint;
use crate::framework::plugin::{
    FilterPlugin, Handle, Plugin, PreBindPlugin, PreFilterPlugin, PreFilterResult, PreScorePlugin,
    ReservePlugin, ScorePlugin,
};
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, StateTree, Status};

pub const NAME: &str = "VolumeBinding";
const STATE_KEY: &str = "VolumeBinding";
pub const ERR_REASON_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";
pub const DEFAULT_BIND_TIMEOUT_SECONDS: i64 = 600;

#[derive(Debug)]
pub struct VolumeBinding {
    /// How long PreBind waits for the PV controller (`bindTimeoutSeconds`).
    pub bind_timeout_seconds: i64,
    /// With StorageCapacityScoring: the args' shape (scores scaled to 0..100). Without it
    /// there is no scorer, PreScore skips and every node scores 0.
    scorer: Option<Vec<ShapePoint>>,
}

impl Default for VolumeBinding {
    fn default() -> Self {
        VolumeBinding::new(DEFAULT_BIND_TIMEOUT_SECONDS)
    }
}

impl VolumeBinding {
    /// From `VolumeBindingArgs.bindTimeoutSeconds` (validated ≥ 0 by the config).
    pub fn new(bind_timeout_seconds: i64) -> VolumeBinding {
        VolumeBinding {
            bind_timeout_seconds,
            scorer: None,
        }
    }

    /// StorageCapacityScoring on, with the args' (defaulted) shape.
    pub fn with_capacity_scoring(self, shape: Vec<ShapePoint>) -> VolumeBinding {
        VolumeBinding {
            scorer: Some(shape),
            ..self
        }
    }
}

/// What the plugin keeps for the cycle. Filter runs on many nodes at once and records
/// each node's result, hence the lock (upstream locks its shared state the same way).
#[derive(Debug, Default)]
pub struct StateData {
    /// `None` when the pod has no claims (PreFilter skipped). Fixed after PreFilter.
    pod_volume_claims: Option<Arc<PodVolumeClaims>>,
    inner: Mutex<Inner>,
}

#[derive(Debug, Clone, Default)]
struct Inner {
    /// Set at Reserve: every claim was already bound, so PreBind has nothing to do.
    all_bound: bool,
    /// Filter's result for each node that fits.
    pod_volumes_by_node: BTreeMap<String, PodVolumes>,
    has_static_bindings: bool,
    /// kubestep: the node Reserve assumed the bindings on (cleared by Unreserve).
    assumed_on: Option<String>,
    /// kubestep: the node PreBind wrote the bindings for.
    bound_on: Option<String>,
}

impl Clone for StateData {
    fn clone(&self) -> Self {
        StateData {
            pod_volume_claims: self.pod_volume_claims.clone(),
            inner: Mutex::new(self.lock().clone()),
        }
    }
}

impl StateData {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The object updates PreBind makes for the pod's volumes (`bindAPIUpdate`): PVs with
/// their claimRef set, claims to provision with the selected-node annotation. The PV
/// controller then completes the binding.
#[derive(Debug, Clone, Default)]
pub struct BindingUpdates {
    pub node: String,
    pub pvs: Vec<PersistentVolume>,
    pub pvcs: Vec<PersistentVolumeClaim>,
}

/// The updates PreBind made in this cycle, if it bound anything.
pub fn binding_updates(state: &CycleState) -> Option<BindingUpdates> {
    let s = state.read::<StateData>(STATE_KEY).ok()?;
    let inner = s.lock();
    let node = inner.bound_on.clone()?;
    let pv = inner.pod_volumes_by_node.get(&node)?;
    Some(BindingUpdates {
        pvs: pv.static_bindings.iter().map(|b| (*b.pv).clone()).collect(),
        pvcs: pv
            .dynamic_provisions
            .iter()
            .map(|p| (*p.pvc).clone())
            .collect(),
        node,
    })
}

fn render_pod_volumes(node: &str, pv: &PodVolumes) -> StateTree {
    let mut children: Vec<StateTree> = pv
        .static_bindings
        .iter()
        .map(|b| StateTree::leaf(format!("bind {} → PV {}", pvc_key(&b.pvc), pv_name(&b.pv))))
        .collect();
    children.extend(
        pv.dynamic_provisions
            .iter()
            .map(|p| StateTree::leaf(format!("provision {}", pvc_key(&p.pvc)))),
    );
    if children.is_empty() {
        StateTree::leaf(format!("{node}: nothing to bind"))
    } else {
        StateTree::node(node, children)
    }
}

impl RenderState for StateData {
    fn render(&self) -> StateTree {
        let Some(claims) = &self.pod_volume_claims else {
            return StateTree::leaf("no PersistentVolumeClaims");
        };
        let s = self.lock();
        let mut children = vec![
            StateTree::list(
                "boundClaims",
                claims
                    .bound_claims
                    .iter()
                    .map(|c| format!("{} → PV {}", pvc_key(c), pvc_volume_name(c))),
            ),
            StateTree::list(
                "unboundClaimsDelayBinding",
                claims
                    .unbound_claims_delay_binding
                    .iter()
                    .map(|c| pvc_key(c)),
            ),
            StateTree::list(
                "candidatePVsByClass",
                claims
                    .unbound_volumes_delay_binding
                    .iter()
                    .map(|(class, pvs)| {
                        let names: Vec<&str> = pvs.iter().map(|p| pv_name(p)).collect();
                        format!("{class}: [{}]", names.join(", "))
                    }),
            ),
            StateTree::list(
                "podVolumesByNode",
                s.pod_volumes_by_node
                    .iter()
                    .map(|(n, pv)| render_pod_volumes(n, pv)),
            ),
            StateTree::kv("hasStaticBindings", s.has_static_bindings),
            StateTree::kv("allBound", s.all_bound),
        ];
        if let Some(n) = &s.assumed_on {
            children.push(StateTree::kv("assumedOn", n));
        }
        if let Some(n) = &s.bound_on {
            children.push(StateTree::kv("boundOn", n));
        }
        StateTree::node("stateData", children)
    }
}

fn read_state(cs: &CycleState) -> Result<&StateData, Status> {
    cs.read::<StateData>(STATE_KEY)
        .map_err(|e| Status::error(e.to_string()))
}

impl VolumeBinding {
    /// `podHasPVCs`: whether the pod uses any claim, failing on a claim that is missing,
    /// lost, being deleted, or (for an ephemeral volume) not owned by the pod.
    fn pod_has_pvcs(&self, h: &Handle, pod: &PodInfo) -> Result<bool, String> {
        let mut has_pvc = false;
        for vol in pod_volumes(pod.pod()) {
            let Some((name, ephemeral)) = volume_claim(pod.pod(), vol) else {
                continue;
            };
            has_pvc = true;
            let Some(pvc) = h.listers.pvc(&pod.namespace, &name) else {
                // Normal right after creating a pod with a generic ephemeral volume.
                return Err(if ephemeral {
                    format!(
                        "waiting for ephemeral volume controller to create the persistentvolumeclaim {name:?}"
                    )
                } else {
                    not_found(RESOURCE_PVC, &name)
                });
            };
            if pvc_phase(pvc) == CLAIM_LOST {
                return Err(format!(
                    "persistentvolumeclaim {:?} bound to non-existent persistentvolume {:?}",
                    pvc_name(pvc),
                    pvc_volume_name(pvc)
                ));
            }
            if pvc.metadata.deletion_timestamp.is_some() {
                return Err(format!(
                    "persistentvolumeclaim {:?} is being deleted",
                    pvc_name(pvc)
                ));
            }
            if ephemeral {
                volume_is_for_pod(pod.pod(), pvc)?;
            }
        }
        Ok(has_pvc)
    }
}

impl Plugin for VolumeBinding {
    fn sign_pod(&self, pod: &PodInfo) -> Option<crate::framework::signature::SignResult> {
        Some(Ok(vec![crate::plugins::signers::volumes(pod)]))
    }
    fn name(&self) -> &'static str {
        NAME
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(super::hints::queueing_hints())
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
    fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
        Some(self)
    }
    fn as_pre_bind(&self) -> Option<&dyn PreBindPlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for VolumeBinding {
    fn pre_filter(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (Option<PreFilterResult>, Status) {
        match self.pod_has_pvcs(h, pod) {
            Err(e) => return (None, Status::unresolvable(e)),
            Ok(false) => {
                state.write(STATE_KEY, StateData::default());
                return (None, Status::skip());
            }
            Ok(true) => {}
        }
        let claims = match VolumeBinder::new(h.listers).get_pod_volume_claims(pod.pod()) {
            Ok(c) => c,
            Err(e) => return (None, Status::error(e)),
        };
        if !claims.unbound_claims_immediate.is_empty() {
            // The PV controller binds these; the pod waits for that.
            return (None, Status::unresolvable(ERR_REASON_UNBOUND_IMMEDIATE));
        }
        state.write(
            STATE_KEY,
            StateData {
                pod_volume_claims: Some(Arc::new(claims)),
                inner: Mutex::new(Inner::default()),
            },
        );
        (None, Status::success())
    }
}

impl FilterPlugin for VolumeBinding {
    fn filter(&self, h: &Handle, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let s = match read_state(state) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let no_claims = PodVolumeClaims::default();
        let claims = s.pod_volume_claims.as_deref().unwrap_or(&no_claims);
        let (pod_volumes, reasons) =
            match VolumeBinder::new(h.listers).find_pod_volumes(claims, node.node()) {
                Ok(r) => r,
                Err(e) => return Status::error(e),
            };
        if !reasons.is_empty() {
            return Status::with_reasons(
                crate::framework::Code::UnschedulableAndUnresolvable,
                reasons.into_iter().map(Into::into).collect(),
            );
        }
        let mut inner = s.lock();
        inner.has_static_bindings |= !pod_volumes.static_bindings.is_empty();
        inner
            .pod_volumes_by_node
            .insert(node.name().to_string(), pod_volumes);
        Status::success()
    }
}

impl PreScorePlugin for VolumeBinding {
    fn pre_score(
        &self,
        _h: &Handle,
        state: &mut CycleState,
        _pod: &PodInfo,
        _nodes: &[&NodeInfo],
    ) -> Status {
        if self.scorer.is_none() {
            return Status::skip();
        }
        // The scorer exists only with StorageCapacityScoring, which then scores every
        // pod (0 where it has no volumes), as upstream.
        match read_state(state) {
            Err(e) => e,
            Ok(_) => Status::success(),
        }
    }
}

impl ScorePlugin for VolumeBinding {
    /// Without a scorer (the 1.35 default) every node scores 0.
    fn score(
        &self,
        _h: &Handle,
        state: &CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
    ) -> (i64, Status) {
        let Some(shape) = &self.scorer else {
            return (0, Status::success());
        };
        let s = match read_state(state) {
            Ok(s) => s,
            Err(e) => return (0, e),
        };
        let inner = s.lock();
        match inner.pod_volumes_by_node.get(node.name()) {
            Some(pv) => (super::capacity::score(pv, shape), Status::success()),
            None => (0, Status::success()),
        }
    }
}

impl ReservePlugin for VolumeBinding {
    fn reserve(&self, h: &Handle, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let s = match read_state(state) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let mut inner = s.lock();
        let binder = VolumeBinder::new(h.listers);
        let all_bound = match inner.pod_volumes_by_node.get_mut(node) {
            Some(pv) => binder.assume_pod_volumes(pod.pod(), node, pv),
            // No entry: the pod uses no claim.
            None => true,
        };
        inner.all_bound = all_bound;
        if !all_bound {
            inner.assumed_on = Some(node.to_string());
        }
        Status::success()
    }

    fn unreserve(&self, _h: &Handle, state: &mut CycleState, _pod: &PodInfo, node: &str) {
        let Ok(s) = read_state(state) else { return };
        let mut inner = s.lock();
        if inner.pod_volumes_by_node.contains_key(node) {
            inner.assumed_on = None;
            inner.bound_on = None;
        }
    }
}

fn no_pod_volume_for_node(node: &str) -> Status {
    Status::error(format!("no pod volume found for node {node:?}"))
}

impl PreBindPlugin for VolumeBinding {
    fn pre_bind_pre_flight(
        &self,
        _h: &Handle,
        state: &CycleState,
        _pod: &PodInfo,
        node: &str,
    ) -> Status {
        let s = match read_state(state) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let inner = s.lock();
        if inner.all_bound {
            return Status::skip();
        }
        if !inner.pod_volumes_by_node.contains_key(node) {
            return no_pod_volume_for_node(node);
        }
        Status::success()
    }

    /// Upstream writes the bindings and waits (up to bindTimeoutSeconds) for the PV
    /// controller to complete them. kubestep records them (see [`binding_updates`]) for
    /// the cluster to apply and does not wait.
    fn pre_bind(&self, _h: &Handle, state: &mut CycleState, _pod: &PodInfo, node: &str) -> Status {
        let s = match read_state(state) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let mut inner = s.lock();
        if inner.all_bound {
            return Status::success();
        }
        if !inner.pod_volumes_by_node.contains_key(node) {
            return no_pod_volume_for_node(node);
        }
        inner.bound_on = Some(node.to_string());
        Status::success()
    }
}

/// Built from `VolumeBindingArgs` (its `bindTimeoutSeconds`).
pub fn factory(
    ctx: &crate::framework::factory::FactoryContext,
) -> crate::framework::factory::Built {
    let args: crate::config::VolumeBindingArgs = ctx.args()?;
    let plugin = VolumeBinding::new(args.bind_timeout_seconds);
    let scaled = crate::framework::plugin::MAX_NODE_SCORE
        / crate::plugins::noderesources::resource_allocation::MAX_CUSTOM_PRIORITY_SCORE;
    let plugin = match &args.shape {
        Some(shape)
            if ctx
                .features
                .enabled(crate::features::Gate::StorageCapacityScoring) =>
        {
            plugin.with_capacity_scoring(
                shape
                    .iter()
                    .map(|p| ShapePoint {
                        utilization: i64::from(p.utilization),
                        score: i64::from(p.score) * scaled,
                    })
                    .collect(),
            )
        }
        _ => plugin,
    };
    Ok(std::sync::Arc::new(plugin))
}

#[cfg(test)]
mod tests {
    use super::super::binder::{
        ERR_REASON_BIND_CONFLICT, ERR_REASON_NODE_CONFLICT, ERR_REASON_PV_NOT_EXIST,
    };
    use super::*;
    use crate::framework::{Code, Snapshot};
    use crate::plugins::testing::{Env, listers, node_obj, pod};
    use serde_json::{Value, json};

    fn sc(name: &str, provisioner: &str, mode: &str) -> Value {
        json!({"kind": "StorageClass", "metadata": {"name": name}, "provisioner": provisioner,
            "volumeBindingMode": mode})
    }

    fn classes() -> Vec<Value> {
        vec![
            sc("standard", "csi.example.com", "Immediate"),
            sc(
                "local",
                "kubernetes.io/no-provisioner",
                "WaitForFirstConsumer",
            ),
            sc("fast", "csi.example.com", "WaitForFirstConsumer"),
        ]
    }

    fn pending(name: &str, class: &str, size: &str) -> Value {
        json!({"kind": "PersistentVolumeClaim", "metadata": {"name": name, "uid": format!("uid-{name}")},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class,
                "resources": {"requests": {"storage": size}}},
            "status": {"phase": "Pending"}})
    }

    fn bound_claim(name: &str, pv: &str) -> Value {
        json!({"kind": "PersistentVolumeClaim", "metadata": {"name": name, "uid": format!("uid-{name}"),
                "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard", "volumeName": pv,
                "resources": {"requests": {"storage": "10Gi"}}},
            "status": {"phase": "Bound"}})
    }

    fn local_pv(name: &str, size: &str, host: &str) -> Value {
        json!({"kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local", "local": {"path": "/mnt"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}]}}},
            "status": {"phase": "Available"}})
    }

    fn env(objs: Vec<Value>) -> Env {
        let nodes = [
            ("node-01", "zone-a"),
            ("node-02", "zone-b"),
            ("node-03", "zone-a"),
        ]
        .map(|(n, z)| {
            node_obj(json!({"metadata": {"name": n, "labels": {
                    "kubernetes.io/hostname": n, "topology.kubernetes.io/zone": z}}}))
        })
        .to_vec();
        let mut all = classes();
        all.extend(objs);
        Env::new(Snapshot::new(nodes, []), listers(&all))
    }

    fn claim_pod(claims: &[&str]) -> Arc<PodInfo> {
        let vols: Vec<Value> = claims
            .iter()
            .map(|c| json!({"name": c, "persistentVolumeClaim": {"claimName": c}}))
            .collect();
        pod(
            json!({"metadata": {"name": "p", "uid": "pod-uid"}, "spec": {"containers": [{"name": "c"}], "volumes": vols}}),
        )
    }

    /// PreFilter, then Filter on every node: node → (code, message) of the rejections.
    fn run(e: &Env, p: &PodInfo) -> (CycleState, Status, BTreeMap<String, (Code, String)>) {
        let h = e.handle();
        let mut cs = CycleState::new();
        let (_, s) = VolumeBinding::default().pre_filter(&h, &mut cs, p);
        let mut out = BTreeMap::new();
        if s.is_success() {
            for n in e.snapshot.list() {
                let f = VolumeBinding::default().filter(&h, &cs, p, n);
                if !f.is_success() {
                    out.insert(n.name().to_string(), (f.code(), f.message()));
                }
            }
        }
        (cs, s, out)
    }

    #[test]
    fn unbound_immediate_claim_is_rejected_at_pre_filter() {
        // Cases 0046 / 0118 / 0214.
        let e = env(vec![pending("pending", "standard", "10Gi")]);
        let (_, s, _) = run(&e, &claim_pod(&["pending"]));
        assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
        assert_eq!(s.message(), ERR_REASON_UNBOUND_IMMEDIATE);
        // A claim that names its PV but whose binding is not completed counts as unbound
        // immediate too, even with a delayed class.
        let mut pre = pending("pre", "local", "1Gi");
        pre["spec"]["volumeName"] = json!("pv-x");
        let e = env(vec![pre]);
        let (_, s, _) = run(&e, &claim_pod(&["pre"]));
        assert_eq!(s.message(), ERR_REASON_UNBOUND_IMMEDIATE);
    }

    #[test]
    fn delayed_claim_binds_to_local_pv_and_reserve_prebind_record_it() {
        // Cases 0071 / 0119 / 0188: one local PV on node-01 fits the 8Gi claim.
        let e = env(vec![
            pending("scratch", "local", "8Gi"),
            local_pv("local-pv-0", "10Gi", "node-01"),
            local_pv("local-pv-small", "4Gi", "node-02"),
        ]);
        let p = claim_pod(&["scratch"]);
        let (mut cs, s, rejected) = run(&e, &p);
        assert!(s.is_success(), "{s}");
        let want = (
            Code::UnschedulableAndUnresolvable,
            ERR_REASON_BIND_CONFLICT.to_string(),
        );
        assert_eq!(rejected.get("node-02"), Some(&want));
        assert_eq!(rejected.get("node-03"), Some(&want));
        assert!(!rejected.contains_key("node-01"));

        let h = e.handle();
        let pl = VolumeBinding::default();
        assert!(pl.pre_score(&h, &mut cs, &p, &[]).is_skip());
        assert!(pl.reserve(&h, &mut cs, &p, "node-01").is_success());
        assert!(pl.pre_bind_pre_flight(&h, &cs, &p, "node-01").is_success());
        assert!(pl.pre_bind(&h, &mut cs, &p, "node-01").is_success());
        let u = binding_updates(&cs).expect("bindings");
        assert_eq!(u.node, "node-01");
        assert_eq!(u.pvs.len(), 1);
        let claim_ref = u.pvs[0].spec.as_ref().unwrap().claim_ref.as_ref().unwrap();
        assert_eq!(claim_ref.name.as_deref(), Some("scratch"));
        assert_eq!(claim_ref.uid.as_deref(), Some("uid-scratch"));
        let tree = cs.render();
        let text = format!("{tree:?}");
        assert!(
            text.contains("bind default/scratch → PV local-pv-0"),
            "{text}"
        );

        pl.unreserve(&h, &mut cs, &p, "node-01");
        assert!(binding_updates(&cs).is_none());
        // Another node was never found feasible.
        assert_eq!(
            pl.pre_bind_pre_flight(&h, &cs, &p, "node-02").message(),
            "no pod volume found for node \"node-02\""
        );
    }

    #[test]
    fn smallest_fitting_pvs_are_chosen_and_not_reused() {
        let e = env(vec![
            pending("a", "local", "5Gi"),
            pending("b", "local", "1Gi"),
            local_pv("big", "10Gi", "node-01"),
            local_pv("mid", "6Gi", "node-01"),
            local_pv("tiny", "2Gi", "node-01"),
        ]);
        let p = claim_pod(&["a", "b"]);
        let (cs, _, rejected) = run(&e, &p);
        assert!(!rejected.contains_key("node-01"));
        let s = cs.read::<StateData>(STATE_KEY).unwrap().lock();
        let pv = &s.pod_volumes_by_node["node-01"];
        let got: Vec<(String, &str)> = pv
            .static_bindings
            .iter()
            .map(|b| (pvc_key(&b.pvc), pv_name(&b.pv)))
            .collect();
        assert_eq!(
            got,
            [
                ("default/b".to_string(), "tiny"),
                ("default/a".to_string(), "mid")
            ]
        );
        // Three claims, two PVs big enough for "a"-sized ones: no fit.
        drop(s);
        let e = env(vec![
            pending("a", "local", "5Gi"),
            pending("c", "local", "5Gi"),
            pending("d", "local", "5Gi"),
            local_pv("big", "10Gi", "node-01"),
            local_pv("mid", "6Gi", "node-01"),
        ]);
        let (_, _, rejected) = run(&e, &claim_pod(&["a", "c", "d"]));
        assert!(rejected.contains_key("node-01"));
    }

    #[test]
    fn bound_pv_node_affinity() {
        // Cases 0077 / 0108 / 0236: the bound PV is pinned to zone-a.
        let pv = json!({"kind": "PersistentVolume", "metadata": {"name": "pv-zonal"},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                "storageClassName": "standard", "csi": {"driver": "csi.example.com", "volumeHandle": "h"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]}]}}},
            "status": {"phase": "Bound"}});
        let e = env(vec![bound_claim("zonal", "pv-zonal"), pv]);
        let p = claim_pod(&["zonal"]);
        let (mut cs, s, rejected) = run(&e, &p);
        assert!(s.is_success());
        assert_eq!(
            rejected.into_iter().collect::<Vec<_>>(),
            [(
                "node-02".to_string(),
                (
                    Code::UnschedulableAndUnresolvable,
                    ERR_REASON_NODE_CONFLICT.to_string()
                )
            )]
        );
        // All bound: Reserve finds nothing to do and PreBind is skipped.
        let h = e.handle();
        let pl = VolumeBinding::default();
        assert!(pl.reserve(&h, &mut cs, &p, "node-01").is_success());
        assert!(pl.pre_bind_pre_flight(&h, &cs, &p, "node-01").is_skip());

        // Its PV is gone: every node reports it.
        let e = env(vec![bound_claim("zonal", "pv-gone")]);
        let (_, _, rejected) = run(&e, &p);
        assert_eq!(rejected.len(), 3);
        assert_eq!(rejected["node-01"].1, ERR_REASON_PV_NOT_EXIST);
    }

    #[test]
    fn in_tree_pv_is_translated_when_the_node_migrated_it() {
        let pv = json!({"kind": "PersistentVolume", "metadata": {"name": "pd"},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                "gcePersistentDisk": {"pdName": "disk"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]}]}}},
            "status": {"phase": "Bound"}});
        let csi_node = |n: &str| {
            json!({"kind": "CSINode", "metadata": {"name": n, "annotations": {
                "storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd"}},
                "spec": {"drivers": []}})
        };
        // node-01 migrated GCE PD but has no topology.gke.io/zone label: the translated
        // affinity no longer matches it. node-03 did not migrate: the in-tree PV matches.
        let e = env(vec![bound_claim("c", "pd"), pv, csi_node("node-01")]);
        let (_, _, rejected) = run(&e, &claim_pod(&["c"]));
        assert!(rejected.contains_key("node-01"));
        assert!(rejected.contains_key("node-02"));
        assert!(!rejected.contains_key("node-03"));
    }

    #[test]
    fn dynamic_provisioning_and_selected_node() {
        let mut zoned = sc("zoned", "csi.example.com", "WaitForFirstConsumer");
        zoned["allowedTopologies"] = json!([{"matchLabelExpressions": [
            {"key": "topology.kubernetes.io/zone", "values": ["zone-b"]}]}]);
        let e = env(vec![
            pending("d", "fast", "1Gi"),
            pending("z", "zoned", "1Gi"),
            zoned,
        ]);
        let (_, _, rejected) = run(&e, &claim_pod(&["d"]));
        assert!(rejected.is_empty(), "{rejected:?}");
        let (mut cs, _, rejected) = run(&e, &claim_pod(&["z"]));
        assert_eq!(rejected.keys().collect::<Vec<_>>(), ["node-01", "node-03"]);
        let h = e.handle();
        let p = claim_pod(&["z"]);
        let pl = VolumeBinding::default();
        assert!(pl.reserve(&h, &mut cs, &p, "node-02").is_success());
        assert!(pl.pre_bind(&h, &mut cs, &p, "node-02").is_success());
        let u = binding_updates(&cs).unwrap();
        assert_eq!(u.pvcs.len(), 1);
        let ann = u.pvcs[0].metadata.annotations.as_ref().unwrap();
        assert_eq!(ann["volume.kubernetes.io/selected-node"], "node-02");

        // Provisioning already started for node-02: only node-02 fits.
        let mut claim = pending("d", "fast", "1Gi");
        claim["metadata"]["annotations"] = json!({"volume.kubernetes.io/selected-node": "node-02"});
        let e = env(vec![claim]);
        let (_, _, rejected) = run(&e, &claim_pod(&["d"]));
        assert_eq!(rejected.keys().collect::<Vec<_>>(), ["node-01", "node-03"]);
    }

    #[test]
    fn pre_filter_messages_and_skip() {
        let check = |objs: Vec<Value>, p: Arc<PodInfo>, want: &str| {
            let (_, s, _) = run(&env(objs), &p);
            assert_eq!(s.code(), Code::UnschedulableAndUnresolvable, "{want}");
            assert_eq!(s.message(), want);
        };
        check(
            vec![],
            claim_pod(&["nope"]),
            "persistentvolumeclaim \"nope\" not found",
        );
        let mut lost = bound_claim("lost", "pv-lost");
        lost["status"]["phase"] = json!("Lost");
        check(
            vec![lost],
            claim_pod(&["lost"]),
            "persistentvolumeclaim \"lost\" bound to non-existent persistentvolume \"pv-lost\"",
        );
        let mut deleting = bound_claim("del", "pv");
        deleting["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        check(
            vec![deleting],
            claim_pod(&["del"]),
            "persistentvolumeclaim \"del\" is being deleted",
        );

        let eph = pod(
            json!({"metadata": {"name": "web", "uid": "pod-uid"}, "spec": {"containers": [],
            "volumes": [{"name": "cache", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]}}),
        );
        check(
            vec![],
            eph.clone(),
            "waiting for ephemeral volume controller to create the persistentvolumeclaim \"web-cache\"",
        );
        check(
            vec![pending("web-cache", "fast", "1Gi")],
            eph.clone(),
            "PVC default/web-cache was not created for pod default/web (pod is not owner)",
        );
        let mut owned = pending("web-cache", "fast", "1Gi");
        owned["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "pod-uid", "controller": true}]);
        let (_, s, rejected) = run(&env(vec![owned]), &eph);
        assert!(s.is_success() && rejected.is_empty(), "{s} {rejected:?}");

        // No claims: Skip, and Reserve / PreBindPreFlight see nothing to bind.
        let e = env(vec![]);
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [],
            "volumes": [{"name": "e", "emptyDir": {}}]}}));
        let (mut cs, s, _) = run(&e, &p);
        assert!(s.is_skip());
        let h = e.handle();
        assert!(
            VolumeBinding::default()
                .reserve(&h, &mut cs, &p, "node-01")
                .is_success()
        );
        assert!(
            VolumeBinding::default()
                .pre_bind_pre_flight(&h, &cs, &p, "node-01")
                .is_skip()
        );
        // A class without a binding mode is an error.
        let mut nomode = sc("nomode", "x", "Immediate");
        nomode["volumeBindingMode"] = Value::Null;
        let (_, s, _) = run(
            &env(vec![nomode, pending("c", "nomode", "1Gi")]),
            &claim_pod(&["c"]),
        );
        assert_eq!(s.code(), Code::Error);
        assert_eq!(
            s.message(),
            "VolumeBindingMode not set for StorageClass \"nomode\""
        );
    }
}
