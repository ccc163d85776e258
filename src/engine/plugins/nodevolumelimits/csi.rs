//! CSILimits, registered as NodeVolumeLimits: a node takes no more attachable volumes of a
//! CSI driver than its CSINode allows (`spec.drivers[].allocatable.count`).
//!
//! Volumes are counted by unique name (`driver/handle`): a claim's PV gives its CSI driver
//! and handle (in-tree PVs and inline volumes are translated when their CSI migration is
//! on); an unbound claim counts under its class's provisioner with a per-claim handle.
//! VolumeAttachment objects are not part of kubestep's cluster model, so only pods' volumes
//! count (upstream adds attachments no pod accounts for).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Volume};
use k8s_openapi::api::storage::v1::CSINode;

use super::utils::is_csi_migration_on;
use crate::features::{Features, Gate};
use crate::api::csi_translation::{InTreePlugin, translate_inline, translate_pv};
use crate::api::volume::{
    CSI_DRIVER_KIND, RESOURCE_PVC, not_found, pod_volumes, pvc_class, pvc_name, pvc_namespace, pvc_volume_name,
    volume_claim_of, volume_is_for,
};
use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::hints::access::{
    as_objects, as_pods, new_pvc, required, skip_or_queue, uses_claim,
};
use crate::framework::plugin::{FilterPlugin, Handle, Plugin, PreFilterPlugin, PreFilterResult};
use crate::framework::{CycleState, NodeInfo, PodInfo, Status};
use k8s_openapi::api::storage::v1::VolumeAttachment;

pub const NAME: &str = "NodeVolumeLimits";
pub const ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: &str = "node(s) exceed max volume count";

#[derive(Debug)]
pub struct CsiLimits {
    /// Prefix of the made-up handles of unbound claims. Upstream draws 32 random
    /// characters per scheduler start; kubestep uses a fixed one to stay deterministic.
    random_volume_id_prefix: String,
    /// VolumeLimitScaling: a new volume's CSI driver must be installed on the node.
    check_driver_installed: bool,
    /// ... only where its CSIDriver asks so (`preventPodSchedulingIfMissing`), from 1.36.
    driver_check_opt_in: bool,
    portworx_needs_annotation: bool,
}

impl Default for CsiLimits {
    fn default() -> Self {
        CsiLimits::new(&Features::default())
    }
}

impl CsiLimits {
    pub fn new(features: &Features) -> CsiLimits {
        CsiLimits {
            random_volume_id_prefix: "kubestep-unbound-claim".into(),
            check_driver_installed: features.enabled(Gate::VolumeLimitScaling),
            driver_check_opt_in: features.semantics.csi_driver_check_opt_in,
            portworx_needs_annotation: features.semantics.csi_portworx_needs_migrated_annotation,
        }
    }

    /// `checkCSIDriverOnNode`: a driver without a CSIDriver object may not be a CSI driver
    /// at all and passes; otherwise the node's CSINode must list it.
    fn driver_installed(&self, h: &Handle, driver: &str, csi_node: Option<&CSINode>) -> bool {
        let Some(obj) = h
            .listers
            .custom
            .get(CSI_DRIVER_KIND)
            .and_then(|m| m.get(driver))
        else {
            return true;
        };
        let opted_in = obj
            .pointer("/spec/preventPodSchedulingIfMissing")
            .and_then(|v| v.as_bool())
            == Some(true);
        if self.driver_check_opt_in && !opted_in {
            return true;
        }
        csi_node.is_some_and(|n| n.spec.drivers.iter().any(|d| d.name == driver))
    }
}


/// Builds the plugin for a version's gates and rules.
pub fn factory(ctx: &crate::framework::factory::FactoryContext) -> crate::framework::factory::Built {
    Ok(std::sync::Arc::new(CsiLimits::new(ctx.features)))
}

/// Why counting a pod's volumes failed; `not_found` marks a missing claim of the new pod.
#[derive(Debug)]
struct CountError {
    message: String,
    not_found: bool,
}

impl CountError {
    fn other(message: String) -> CountError {
        CountError {
            message,
            not_found: false,
        }
    }
}

fn volume_unique_name(driver: &str, handle: &str) -> String {
    format!("{driver}/{handle}")
}

/// `getVolumeLimits`: driver → count, for drivers that declare one.
fn volume_limits(csi_node: Option<&CSINode>) -> BTreeMap<&str, i64> {
    csi_node
        .into_iter()
        .flat_map(|n| n.spec.drivers.iter())
        .filter_map(|d| {
            let count = d.allocatable.as_ref()?.count?;
            Some((d.name.as_str(), i64::from(count)))
        })
        .collect()
}

impl CsiLimits {
    /// `filterAttachableVolumes`: adds the pod's attachable CSI volumes to `result`
    /// (unique name → driver).
    fn filter_attachable_volumes(
        &self,
        h: &Handle,
        pod: &PodInfo,
        csi_node: Option<&CSINode>,
        new_pod: bool,
        result: &mut BTreeMap<String, String>,
    ) -> Result<(), CountError> {
        let namespace = pod.namespace.as_str();
        for vol in pod.volumes() {
            let Some((pvc_name, is_ephemeral)) = volume_claim_of(&pod.name, vol) else {
                // No claim: a migratable in-tree inline volume may still count.
                self.check_attachable_inline_volume(vol, csi_node, namespace, result)?;
                continue;
            };
            if pvc_name.is_empty() {
                return Err(CountError::other(
                    "PersistentVolumeClaim had no name".into(),
                ));
            }
            let Some(pvc) = h.listers.pvc(namespace, &pvc_name) else {
                if new_pod {
                    // The new pod cannot run without its claim.
                    return Err(CountError {
                        message: format!(
                            "looking up PVC {namespace}/{pvc_name}: {}",
                            not_found(RESOURCE_PVC, &pvc_name)
                        ),
                        not_found: true,
                    });
                }
                // An existing pod's missing claim is not counted.
                continue;
            };
            if is_ephemeral {
                volume_is_for([namespace, &pod.name, &pod.uid], pvc).map_err(CountError::other)?;
            }
            let Some((driver, handle)) = self.csi_driver_info(h, csi_node, pvc) else {
                continue;
            };
            result.insert(volume_unique_name(&driver, &handle), driver);
        }
        Ok(())
    }

    /// `checkAttachableInlineVolume`: a migratable in-tree inline volume counts under its
    /// CSI driver when migration is on for the node.
    fn check_attachable_inline_volume(
        &self,
        vol: &Volume,
        csi_node: Option<&CSINode>,
        namespace: &str,
        result: &mut BTreeMap<String, String>,
    ) -> Result<(), CountError> {
        let Some(plugin) = InTreePlugin::of_inline(vol) else {
            return Ok(());
        };
        if !is_csi_migration_on(csi_node, plugin.in_tree_name(), self.portworx_needs_annotation) {
            return Ok(());
        }
        let source = translate_inline(vol, namespace).map_err(|e| {
            CountError::other(format!(
                "converting volume({}) from inline to csi: {e}",
                vol.name
            ))
        })?;
        let driver = plugin.csi_driver();
        result.insert(
            volume_unique_name(driver, &source.volume_handle),
            driver.to_string(),
        );
        Ok(())
    }

    /// `getCSIDriverInfo`: driver and handle of a claim's volume, or `None` when it is not
    /// an attachable CSI (or CSI-migrated) volume.
    fn csi_driver_info(
        &self,
        h: &Handle,
        csi_node: Option<&CSINode>,
        pvc: &PersistentVolumeClaim,
    ) -> Option<(String, String)> {
        let pv_name = pvc_volume_name(pvc);
        if pv_name.is_empty() {
            return self.csi_driver_info_from_sc(h, csi_node, pvc);
        }
        let Some(pv) = h.listers.pvs.get(pv_name) else {
            // Deleted, or pre-bound to a PV not created yet: count by class.
            return self.csi_driver_info_from_sc(h, csi_node, pvc);
        };
        if let Some(c) = pv.spec.as_ref().and_then(|s| s.csi.as_ref()) {
            return Some((c.driver.clone(), c.volume_handle.clone()));
        }
        let plugin = InTreePlugin::of_pv(pv)?;
        if !is_csi_migration_on(csi_node, plugin.in_tree_name(), self.portworx_needs_annotation) {
            return None;
        }
        let translated = translate_pv(pv).ok()?;
        let c = translated.spec.as_ref()?.csi.as_ref()?;
        Some((c.driver.clone(), c.volume_handle.clone()))
    }

    /// `getCSIDriverInfoFromSC`: the class's provisioner (or the CSI driver a migrated
    /// in-tree provisioner maps to) with a made-up handle for the claim.
    fn csi_driver_info_from_sc(
        &self,
        h: &Handle,
        csi_node: Option<&CSINode>,
        pvc: &PersistentVolumeClaim,
    ) -> Option<(String, String)> {
        let sc_name = pvc_class(pvc);
        if sc_name.is_empty() {
            // Without a class the claim binds immediately, so it is bound by now.
            return None;
        }
        let class = h.listers.storage_classes.get(sc_name)?;
        let handle = format!(
            "{}-{}/{}",
            self.random_volume_id_prefix,
            pvc_namespace(pvc),
            pvc_name(pvc)
        );
        let provisioner = class.provisioner.as_str();
        if let Some(plugin) = InTreePlugin::from_in_tree_name(provisioner) {
            if !is_csi_migration_on(csi_node, provisioner, self.portworx_needs_annotation) {
                return None;
            }
            return Some((plugin.csi_driver().to_string(), handle));
        }
        Some((provisioner.to_string(), handle))
    }
}

impl Plugin for CsiLimits {
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

impl PreFilterPlugin for CsiLimits {
    /// Skips unless the pod has a claim, an ephemeral volume or a migratable inline volume.
    fn pre_filter(
        &self,
        _h: &Handle,
        _state: &mut CycleState,
        pod: &PodInfo,
    ) -> (Option<PreFilterResult>, Status) {
        let relevant = pod_volumes(pod.pod()).iter().any(|v| {
            v.persistent_volume_claim.is_some()
                || v.ephemeral.is_some()
                || InTreePlugin::of_inline(v).is_some()
        });
        if relevant {
            (None, Status::success())
        } else {
            (None, Status::skip())
        }
    }
}

impl FilterPlugin for CsiLimits {
    fn filter(&self, h: &Handle, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod_volumes(pod.pod()).is_empty() {
            return Status::success();
        }
        // A missing CSINode is not an error (yet) upstream: no migration, no limits.
        let csi_node = h.listers.csi_nodes.get(node.name()).map(|n| n.as_ref());

        let mut new_volumes = BTreeMap::new();
        if let Err(e) = self.filter_attachable_volumes(h, pod, csi_node, true, &mut new_volumes) {
            return if e.not_found {
                Status::unresolvable(e.message)
            } else {
                Status::error(e.message)
            };
        }
        if new_volumes.is_empty() {
            return Status::success();
        }
        if self.check_driver_installed {
            // Upstream walks a map, so with several missing drivers any may be named.
            let mut drivers: Vec<&String> = new_volumes.values().collect();
            drivers.dedup();
            if let Some(d) = drivers
                .into_iter()
                .find(|d| !self.driver_installed(h, d, csi_node))
            {
                return Status::unschedulable(format!(
                    "{d} CSI driver is not installed on the node"
                ));
            }
        }

        let limits = volume_limits(csi_node);
        if limits.is_empty() {
            return Status::success();
        }

        let mut attached = BTreeMap::new();
        for existing in &node.pods {
            if let Err(e) =
                self.filter_attachable_volumes(h, existing, csi_node, false, &mut attached)
            {
                return Status::error(e.message);
            }
        }
        let mut attached_count: BTreeMap<&str, i64> = BTreeMap::new();
        for (unique, driver) in &attached {
            // A volume already used on the node does not count again.
            new_volumes.remove(unique);
            *attached_count.entry(driver.as_str()).or_default() += 1;
        }
        let mut new_count: BTreeMap<&str, i64> = BTreeMap::new();
        for driver in new_volumes.values() {
            *new_count.entry(driver.as_str()).or_default() += 1;
        }
        for (driver, count) in new_count {
            if let Some(&max) = limits.get(driver) {
                let current = attached_count.get(driver).copied().unwrap_or(0);
                if current + count > max {
                    return Status::unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED);
                }
            }
        }
        Status::success()
    }
}

// ---- queueing hints (EnqueueExtensions) ----

/// CSILimits' EnqueueExtensions.
fn queueing_hints() -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::new(R::CsiNode, A::ADD),
        ClusterEventWithHint::with_hint(R::CsiNode, A::UPDATE, |_, _, old, new| {
            let (o, n) = as_objects::<CSINode>(old, new)?;
            let (o, n) = (required(o, "old CSINode")?, required(n, "CSINode")?);
            let limits = |c: &CSINode| -> BTreeMap<String, i32> {
                c.spec
                    .drivers
                    .iter()
                    .map(|d| {
                        let count = d.allocatable.as_ref().and_then(|a| a.count).unwrap_or(0);
                        (d.name.clone(), count)
                    })
                    .collect()
            };
            let before = limits(&o);
            // Some driver's volume limit went up.
            skip_or_queue(
                limits(&n)
                    .iter()
                    .any(|(d, l)| *l > before.get(d).copied().unwrap_or(0)),
            )
        }),
        ClusterEventWithHint::with_hint(R::Pod, A::DELETE, |_, _, old, new| {
            let (deleted, _) = as_pods(old, new)?;
            let deleted = required(deleted, "pod")?;
            let vols = pod_volumes(deleted);
            let placed = deleted
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_some_and(|n| !n.is_empty())
                || deleted
                    .status
                    .as_ref()
                    .and_then(|s| s.nominated_node_name.as_deref())
                    .is_some_and(|n| !n.is_empty());
            skip_or_queue(
                placed
                    && vols.iter().any(|v| {
                        v.persistent_volume_claim.is_some()
                            || v.ephemeral.is_some()
                            || InTreePlugin::of_inline(v).is_some()
                    }),
            )
        }),
        ClusterEventWithHint::with_hint(R::PersistentVolumeClaim, A::ADD, |_, pod, old, new| {
            skip_or_queue(uses_claim(pod, &new_pvc(old, new)?))
        }),
        ClusterEventWithHint::with_hint(R::VolumeAttachment, A::DELETE, |_, pod, old, new| {
            let (deleted, _) = as_objects::<VolumeAttachment>(old, new)?;
            let deleted = required(deleted, "VolumeAttachment")?;
            for v in pod_volumes(pod.pod()) {
                if v.persistent_volume_claim.is_some() {
                    return skip_or_queue(true);
                }
                if InTreePlugin::of_inline(v).is_none() {
                    continue;
                }
                let csi = translate_inline(v, &pod.namespace).map_err(|e| {
                    format!("converting volume({}) from inline to csi: {e}", v.name)
                })?;
                if csi.driver == deleted.spec.attacher {
                    return skip_or_queue(true);
                }
            }
            skip_or_queue(false)
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::framework::listers::Listers;
    use crate::framework::{Code, Snapshot};
    use crate::plugins::testing::{Env, node_obj, pod};
    use serde_json::json;

    /// Claims `used-1..=n` bound to CSI PVs of driver `csi.example.com`, plus `newvol`.
    fn listers(used: usize, new_bound: bool) -> Listers {
        let mut l = Listers::default();
        let mut add = |claim: &str, pv: Option<&str>| {
            let mut spec = json!({"storageClassName": "standard"});
            if let Some(pv) = pv {
                spec["volumeName"] = json!(pv);
                let v = json!({"metadata": {"name": pv}, "spec": {"csi": {"driver": "csi.example.com",
                    "volumeHandle": format!("vh-{pv}")}}});
                l.pvs
                    .insert(pv.into(), Arc::new(serde_json::from_value(v).unwrap()));
            }
            let c = json!({"metadata": {"name": claim, "namespace": "default"}, "spec": spec});
            l.pvcs.insert(
                format!("default/{claim}"),
                Arc::new(serde_json::from_value(c).unwrap()),
            );
        };
        for i in 1..=used {
            add(&format!("used-{i}"), Some(&format!("pv-used-{i}")));
        }
        add("newvol", new_bound.then_some("pv-new"));
        let sc = json!({"metadata": {"name": "standard"}, "provisioner": "csi.example.com",
            "volumeBindingMode": "Immediate"});
        l.storage_classes.insert(
            "standard".into(),
            Arc::new(serde_json::from_value(sc).unwrap()),
        );
        for (n, count) in [("node-01", 3), ("node-02", 1), ("node-03", 2)] {
            let v = json!({"metadata": {"name": n}, "spec": {"drivers": [
                {"name": "csi.example.com", "nodeID": n, "allocatable": {"count": count}}]}});
            l.csi_nodes
                .insert(n.into(), Arc::new(serde_json::from_value(v).unwrap()));
        }
        l
    }

    fn claim_pod(name: &str, node: Option<&str>, claims: &[&str]) -> Arc<PodInfo> {
        let vols: Vec<_> = claims
            .iter()
            .map(|c| json!({"name": c, "persistentVolumeClaim": {"claimName": c}}))
            .collect();
        let mut spec = json!({"containers": [{"name": "c"}], "volumes": vols});
        if let Some(n) = node {
            spec["nodeName"] = json!(n);
        }
        pod(json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec}))
    }

    #[test]
    fn counts_attached_volumes_against_the_csinode_limit() {
        // Cases 0144 / 0252: node-02 (limit 1) already has one volume attached.
        let nodes = ["node-01", "node-02", "node-03", "node-04"]
            .map(|n| node_obj(json!({"metadata": {"name": n}})))
            .to_vec();
        let pods = [
            claim_pod("a", Some("node-02"), &["used-1"]),
            claim_pod("b", Some("node-03"), &["used-2"]),
            claim_pod("c", Some("node-01"), &["used-3"]),
            claim_pod("d", Some("node-01"), &["used-3"]),
        ];
        for new_bound in [true, false] {
            let env = Env::new(
                Snapshot::new(nodes.clone(), pods.clone()),
                listers(3, new_bound),
            );
            let h = env.handle();
            let p = claim_pod("p", None, &["newvol"]);
            let mut cs = CycleState::new();
            assert!(
                CsiLimits::default()
                    .pre_filter(&h, &mut cs, &p)
                    .1
                    .is_success()
            );
            let verdict =
                |n: &str| CsiLimits::default().filter(&h, &cs, &p, env.snapshot.get(n).unwrap());
            let s = verdict("node-02");
            assert_eq!(s.code(), Code::Unschedulable);
            assert_eq!(s.message(), ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED);
            assert!(verdict("node-01").is_success());
            assert!(verdict("node-03").is_success());
            // No CSINode: no limits.
            assert!(verdict("node-04").is_success());
        }
        // The same volume already on the node does not count twice.
        let env = Env::new(Snapshot::new(nodes, pods), listers(3, true));
        let p = claim_pod("p", None, &["used-1"]);
        let s = CsiLimits::default().filter(
            &env.handle(),
            &CycleState::new(),
            &p,
            env.snapshot.get("node-02").unwrap(),
        );
        assert!(s.is_success(), "{s}");
    }

    /// VolumeLimitScaling: the new volume's driver must be on the node's CSINode, for every
    /// CSIDriver in 1.35 and only for those that opt in from 1.36; a driver with no
    /// CSIDriver object passes.
    #[test]
    fn volume_limit_scaling_checks_the_driver_is_installed() {
        use crate::features::{Choice, KubeVersion, Source};
        let nodes = ["node-01", "node-04"]
            .map(|n| node_obj(json!({"metadata": {"name": n}})))
            .to_vec();
        let verdicts = |version: KubeVersion, gate: bool, opt_in: Option<bool>| {
            let mut l = listers(0, true);
            if let Some(o) = opt_in {
                let d = json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                    "metadata": {"name": "csi.example.com"},
                    "spec": {"preventPodSchedulingIfMissing": o}});
                l.custom
                    .entry(CSI_DRIVER_KIND.into())
                    .or_default()
                    .insert("csi.example.com".into(), Arc::new(d));
            }
            let settings = [("VolumeLimitScaling".to_string(), gate)];
            let f = Features::with_gates(Choice::given(version, Source::Given), &settings).unwrap();
            let env = Env::new(Snapshot::new(nodes.clone(), []), l);
            let p = claim_pod("p", None, &["newvol"]);
            let pl = CsiLimits::new(&f);
            ["node-01", "node-04"].map(|n| {
                let s = pl.filter(&env.handle(), &CycleState::new(), &p, env.snapshot.get(n).unwrap());
                (s.code(), s.message())
            })
        };
        let ok = (Code::Success, String::new());
        let missing = (
            Code::Unschedulable,
            "csi.example.com CSI driver is not installed on the node".to_string(),
        );
        // node-01's CSINode lists the driver; node-04 has no CSINode.
        use KubeVersion::*;
        assert_eq!(verdicts(V1_35, false, Some(false)), [ok.clone(), ok.clone()]);
        assert_eq!(verdicts(V1_35, true, None), [ok.clone(), ok.clone()]);
        assert_eq!(verdicts(V1_35, true, Some(false)), [ok.clone(), missing.clone()]);
        assert_eq!(verdicts(V1_36, true, Some(false)), [ok.clone(), ok.clone()]);
        assert_eq!(verdicts(V1_36, true, Some(true)), [ok.clone(), missing.clone()]);
        // 1.37 turns the gate on by default.
        let f = Features::version(V1_37);
        assert!(CsiLimits::new(&f).check_driver_installed);
    }

    #[test]
    fn skip_and_missing_claim() {
        let env = Env::new(Snapshot::default(), Listers::default());
        let h = env.handle();
        let plain = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [],
            "volumes": [{"name": "e", "emptyDir": {}}]}}));
        assert!(
            CsiLimits::default()
                .pre_filter(&h, &mut CycleState::new(), &plain)
                .1
                .is_skip()
        );
        let inline = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [],
            "volumes": [{"name": "d", "gcePersistentDisk": {"pdName": "x"}}]}}));
        assert!(
            CsiLimits::default()
                .pre_filter(&h, &mut CycleState::new(), &inline)
                .1
                .is_success()
        );
        let p = claim_pod("p", None, &["missing"]);
        let n = crate::plugins::testing::node(json!({"metadata": {"name": "n"}}));
        let s = CsiLimits::default().filter(&h, &CycleState::new(), &p, &n);
        assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
        assert_eq!(
            s.message(),
            "looking up PVC default/missing: persistentvolumeclaim \"missing\" not found"
        );
    }

    #[test]
    fn migrated_inline_volumes_count_under_the_csi_driver() {
        let mut l = Listers::default();
        let v = json!({"metadata": {"name": "n"}, "spec": {"drivers": [
            {"name": "pd.csi.storage.gke.io", "nodeID": "n", "allocatable": {"count": 1}}]}});
        l.csi_nodes
            .insert("n".into(), Arc::new(serde_json::from_value(v).unwrap()));
        let gce = |name: &str, pd: &str, node: Option<&str>| {
            let mut spec = json!({"containers": [], "volumes": [{"name": "d", "gcePersistentDisk": {"pdName": pd}}]});
            if let Some(n) = node {
                spec["nodeName"] = json!(n);
            }
            pod(json!({"metadata": {"name": name}, "spec": spec}))
        };
        let nodes = vec![node_obj(json!({"metadata": {"name": "n"}}))];
        let env = Env::new(Snapshot::new(nodes, [gce("old", "a", Some("n"))]), l);
        let h = env.handle();
        let n = env.snapshot.get("n").unwrap();
        assert!(
            CsiLimits::default()
                .filter(&h, &CycleState::new(), &gce("p", "b", None), n)
                .is_rejected()
        );
        assert!(
            CsiLimits::default()
                .filter(&h, &CycleState::new(), &gce("p", "a", None), n)
                .is_success()
        );
    }
}
