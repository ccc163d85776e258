//! Objects as a large cluster keeps them: without what the scheduler never reads. A
//! production dump's running pod is ~4 kB of JSON, most of it managedFields, env, probes
//! and container states; the scheduler reads its requests, ports, labels, affinity,
//! volumes, owner and priority. A lean load drops the rest as it parses, so memory is
//! proportional to what scheduling needs, not to what `kubectl get -o json` prints.
//!
//! What is dropped, and only from these objects:
//! * every object: `metadata.managedFields`, and the
//!   `kubectl.kubernetes.io/last-applied-configuration` annotation;
//! * a bound pod's containers: env, envFrom, command, args, probes, lifecycle,
//!   volumeMounts, volumeDevices, securityContext, workingDir, termination message
//!   settings; its container statuses: state, lastState, containerID, imageID,
//!   volumeMounts, user;
//! * a bound pod's annotations, pod and host IPs (read only from the pod being
//!   scheduled), its projected, configMap, secret,
//!   downwardAPI and emptyDir volumes (no plugin counts or checks them), its status
//!   conditions other than DisruptionTarget and the resize conditions, and their times.
//!
//! A bound pod keeps its tolerations and spread constraints (packed as text with its
//! containers): no plugin reads them of a pod on a node, but `explain` of that pod runs
//! it again, and a re-run without its tolerations would find taints it tolerates.
//! Pending pods keep their containers whole (explain and what-if show and edit them).

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::object::Object;
use crate::framework::PodInfo;

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn slim_meta(m: &mut ObjectMeta) {
    m.managed_fields = None;
    if let Some(a) = m.annotations.as_mut() {
        a.remove(LAST_APPLIED);
        if a.is_empty() {
            m.annotations = None;
        }
    }
}

fn slim_container(c: &mut Container) {
    c.env = None;
    c.env_from = None;
    c.command = None;
    c.args = None;
    c.liveness_probe = None;
    c.readiness_probe = None;
    c.startup_probe = None;
    c.lifecycle = None;
    c.volume_mounts = None;
    c.volume_devices = None;
    c.security_context = None;
    c.working_dir = None;
    c.termination_message_path = None;
    c.termination_message_policy = None;
}

fn slim_status(s: &mut ContainerStatus) {
    s.state = None;
    s.last_state = None;
    s.container_id = None;
    s.image_id = String::new();
    s.volume_mounts = None;
    s.user = None;
}

/// A bound pod's conditions the scheduler reads (preemption, resize). PodScheduled is
/// read only from pending pods.
const CONDITIONS_READ: &[&str] = &[
    "DisruptionTarget",
    "PodResizePending",
    "PodResizeInProgress",
];

fn slim_bound_pod(p: &mut Pod) {
    p.metadata.annotations = None;
    // Lists as parsed keep room for four: most pods have one owner.
    if let Some(o) = p.metadata.owner_references.as_mut() {
        o.shrink_to_fit();
    }
    if let Some(f) = p.metadata.finalizers.as_mut() {
        f.shrink_to_fit();
    }
    if let Some(spec) = p.spec.as_mut() {
        if let Some(vols) = spec.volumes.as_mut() {
            vols.retain(|v| {
                let unread = v.projected.is_some()
                    || v.config_map.is_some()
                    || v.secret.is_some()
                    || v.downward_api.is_some()
                    || v.empty_dir.is_some();
                let no_source = *v
                    == Volume {
                        name: v.name.clone(),
                        ..Volume::default()
                    };
                !(unread || no_source)
            });
            if vols.is_empty() {
                spec.volumes = None;
            } else {
                vols.shrink_to_fit();
            }
        }
        spec.containers.iter_mut().for_each(slim_container);
        spec.init_containers
            .iter_mut()
            .flatten()
            .for_each(slim_container);
    }
    if let Some(st) = p.status.as_mut() {
        st.pod_ips = None;
        st.host_ips = None;
        if let Some(c) = st.conditions.as_mut() {
            c.retain(|c| CONDITIONS_READ.contains(&c.type_.as_str()));
            // `retain` keeps room for every condition the pod had: on 150,000 running
            // pods with five conditions each, that room was 150 MB.
            c.shrink_to_fit();
            if c.is_empty() {
                st.conditions = None;
            }
        }
        for list in [
            &mut st.container_statuses,
            &mut st.init_container_statuses,
            &mut st.ephemeral_container_statuses,
        ] {
            list.iter_mut().flatten().for_each(slim_status);
        }
    }
}

impl Object {
    /// The object as a lean load keeps it: namespace and UID filled in (`normalize`),
    /// what the scheduler never reads dropped, a bound pod packed.
    pub fn lean(mut self) -> Object {
        self.normalize();
        match self {
            Object::Pod(mut p) => {
                slim_meta(&mut p.metadata);
                let bound = p
                    .spec
                    .as_ref()
                    .is_some_and(|s| s.node_name.as_deref().is_some_and(|n| !n.is_empty()));
                if !bound {
                    return Object::Pod(p);
                }
                slim_bound_pod(&mut p);
                Object::PackedPod(Arc::new(PodInfo::new(Arc::new(*p)).packed()))
            }
            Object::PackedPod(_) => self,
            mut other => {
                if let Some(m) = other.meta_mut() {
                    slim_meta(m);
                }
                other
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(node: Option<&str>) -> Object {
        let mut v = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u",
                "annotations": {LAST_APPLIED: "{...}", "keep": "me"},
                "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
            "spec": {"tolerations": [{"key": "k", "operator": "Exists"}],
                "containers": [{"name": "c", "image": "nginx",
                "env": [{"name": "A", "value": "1"}],
                "livenessProbe": {"exec": {"command": ["true"]}},
                "ports": [{"containerPort": 80, "hostPort": 8080}],
                "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}],
                "volumes": [{"name": "token", "projected": {"sources": []}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "c"}}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"},
                    {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}],
                "containerStatuses": [{"name": "c", "image": "nginx",
                "imageID": "sha", "ready": true, "restartCount": 2,
                "state": {"running": {}}}]}});
        if let Some(n) = node {
            v["spec"]["nodeName"] = json!(n);
        }
        super::super::object::from_value(v).unwrap().unwrap()
    }

    #[test]
    fn a_bound_pod_keeps_what_the_scheduler_reads_and_is_packed() {
        let whole = PodInfo::new(Arc::new(pod(Some("n1")).as_pod().unwrap().clone()));
        let Object::PackedPod(lean) = pod(Some("n1")).lean() else {
            panic!("a bound pod is packed")
        };
        assert_eq!(lean.resource, whole.resource);
        assert_eq!(lean.host_ports, whole.host_ports);
        let full = lean.full_pod();
        assert!(full.metadata.managed_fields.is_none());
        assert!(full.metadata.annotations.is_none());
        let vols = full.spec.as_ref().unwrap().volumes.as_ref().unwrap();
        assert_eq!(
            vols.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(),
            ["data"]
        );
        let conds = full.status.as_ref().unwrap().conditions.as_ref().unwrap();
        assert_eq!(conds.len(), 1);
        assert_eq!(conds[0].type_, "DisruptionTarget");
        let tolerations = full.spec.as_ref().and_then(|s| s.tolerations.as_ref());
        assert_eq!(tolerations.map(Vec::len), Some(1));
        let c = &full.spec.as_ref().unwrap().containers[0];
        assert!(c.env.is_none() && c.liveness_probe.is_none());
        assert_eq!(c.image.as_deref(), Some("nginx"));
        let s = &full
            .status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap()[0];
        assert!(s.state.is_none());
        assert_eq!(s.restart_count, 2);
    }

    #[test]
    fn a_pending_pod_keeps_its_containers_whole() {
        let Object::Pod(p) = pod(None).lean() else {
            panic!("a pending pod stays whole")
        };
        assert!(p.metadata.managed_fields.is_none());
        let ann = p.metadata.annotations.as_ref().unwrap();
        assert_eq!(ann.keys().collect::<Vec<_>>(), ["keep"]);
        assert!(p.spec.as_ref().unwrap().containers[0].env.is_some());
        assert_eq!(p.spec.as_ref().unwrap().volumes.as_ref().unwrap().len(), 2);
    }
}
