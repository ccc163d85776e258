//! What scheduling decisions do to a live cluster. Shadow mode writes nothing; active mode
//! acts as kube-scheduler does: the pods/binding subresource, events.k8s.io Events
//! (Scheduled, FailedScheduling with the exact message), the PodScheduled condition and
//! nominatedNodeName through the status subresource, and deletion of preemption victims.
//!
//! The session is synchronous; the API calls run on the tokio runtime through its handle.
//! Changes come back through the watches, so nothing is applied locally.

use std::collections::HashSet;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use crate::framework::PodInfo;
use crate::session::Actuator;

/// Shadow mode: decisions stay in kubestep.
#[derive(Debug, Default)]
pub struct ShadowActuator;

impl Actuator for ShadowActuator {
    fn bind(&mut self, _pod: &PodInfo, _node: &str) -> Result<(), String> {
        Ok(())
    }
    fn delete(&mut self, _v: &PodInfo, _p: &PodInfo, _node: &str) -> Result<(), String> {
        Ok(())
    }
    fn nominate(&mut self, _pod: &PodInfo, _node: Option<&str>) -> Result<(), String> {
        Ok(())
    }
    fn applies_locally(&self) -> bool {
        false
    }
}

/// Active mode: kubestep is the scheduler named `scheduler_name`.
pub struct ApiActuator {
    client: Client,
    rt: tokio::runtime::Handle,
    scheduler_name: String,
    /// Pods (by UID) kubestep has bound: a pod is never bound twice, whatever the queue
    /// does before the watch shows the binding.
    bound: HashSet<String>,
    /// API errors outside the binding (events, status patches), for the person to read.
    pub errors: Vec<String>,
}

impl ApiActuator {
    pub fn new(client: Client, rt: tokio::runtime::Handle, scheduler_name: &str) -> ApiActuator {
        ApiActuator {
            client,
            rt,
            scheduler_name: scheduler_name.into(),
            bound: HashSet::new(),
            errors: Vec::new(),
        }
    }

    fn pods(&self, pod: &PodInfo) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &pod.namespace)
    }

    /// An events.k8s.io/v1 Event about `pod`, as kube-scheduler's recorder writes it.
    fn event(&mut self, pod: &PodInfo, kind: &str, reason: &str, action: &str, note: &str) {
        let now = Timestamp::now();
        let ar = ApiResource {
            group: "events.k8s.io".into(),
            version: "v1".into(),
            api_version: "events.k8s.io/v1".into(),
            kind: "Event".into(),
            plural: "events".into(),
        };
        let ev = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": format!("{}.{:x}", pod.name, now.as_nanosecond()), "namespace": pod.namespace},
            "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
            "reportingController": self.scheduler_name,
            "reportingInstance": format!("{}-kubestep", self.scheduler_name),
            "action": action, "reason": reason, "type": kind, "note": note,
            "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace,
                "name": pod.name, "uid": pod.uid},
        });
        let Ok(obj) = serde_json::from_value::<DynamicObject>(ev) else {
            return;
        };
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), &pod.namespace, &ar);
        if let Err(e) = self.rt.block_on(api.create(&PostParams::default(), &obj)) {
            self.errors
                .push(format!("creating event {reason} for pod {}: {e}", pod.key));
        }
    }

    fn patch_status(&mut self, pod: &PodInfo, status: Value) -> Result<(), String> {
        let api = self.pods(pod);
        let patch = Patch::Strategic(json!({"status": status}));
        self.rt
            .block_on(api.patch_status(&pod.name, &PatchParams::default(), &patch))
            .map(|_| ())
            .map_err(|e| format!("patching the status of pod {}: {e}", pod.key))
    }
}

impl Actuator for ApiActuator {
    fn bind(&mut self, pod: &PodInfo, node: &str) -> Result<(), String> {
        if !self.bound.insert(pod.uid.clone()) {
            return Err(format!("pod {} was already bound by kubestep", pod.key));
        }
        let binding = json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        let api = self.pods(pod);
        let r: Result<Value, kube::Error> = self.rt.block_on(api.create_subresource(
            "binding",
            &pod.name,
            &PostParams::default(),
            &binding,
        ));
        match r {
            Ok(_) => {
                let msg = format!("Successfully assigned {} to {node}", pod.key);
                self.event(pod, "Normal", "Scheduled", "Binding", &msg);
                Ok(())
            }
            Err(e) => {
                // Not bound (conflict, pod gone): the watch tells what really happened.
                self.bound.remove(&pod.uid);
                Err(match e {
                    kube::Error::Api(s) => format!("binding rejected: {}", s.message),
                    other => format!("binding failed: {other}"),
                })
            }
        }
    }

    fn delete(&mut self, victim: &PodInfo, preemptor: &PodInfo, node: &str) -> Result<(), String> {
        let api = self.pods(victim);
        let note = format!(
            "Preempted by pod {} on node {node}",
            preemptor.pod.uid().unwrap_or_default()
        );
        // As kube-scheduler does: the victim first says why it is going (a DisruptionTarget
        // condition its controllers and PDB tooling read), then it is deleted.
        let cond = json!({"conditions": [{"type": "DisruptionTarget", "status": "True",
            "reason": "PreemptionByScheduler",
            "message": format!("{}: preempting to accommodate a higher priority pod", self.scheduler_name),
            "lastTransitionTime": Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()}]});
        match self.patch_status(victim, cond) {
            Ok(()) => {}
            // Already gone: nothing left to preempt.
            Err(e) if e.contains("404") || e.contains("not found") => return Ok(()),
            Err(e) => self.errors.push(e),
        }
        let r = self
            .rt
            .block_on(api.delete(&victim.name, &DeleteParams::default()));
        match r {
            Ok(_) => {
                self.event(victim, "Normal", "Preempted", "Preempting", &note);
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(format!("deleting preemption victim {}: {e}", victim.key)),
        }
    }

    fn nominate(&mut self, pod: &PodInfo, node: Option<&str>) -> Result<(), String> {
        let r = self.patch_status(pod, json!({"nominatedNodeName": node}));
        if let Err(e) = &r {
            self.errors.push(e.clone());
        }
        r
    }

    fn failed(&mut self, pod: &PodInfo, message: &str, error: bool) {
        self.event(pod, "Warning", "FailedScheduling", "Scheduling", message);
        // kube-scheduler's reasons: a fit problem is Unschedulable, anything else (a plugin
        // or extender error) SchedulerError.
        let reason = if error {
            "SchedulerError"
        } else {
            "Unschedulable"
        };
        let cond = json!({"conditions": [{"type": "PodScheduled", "status": "False",
            "reason": reason, "message": message,
            "lastTransitionTime": Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "lastProbeTime": null}]});
        if let Err(e) = self.patch_status(pod, cond) {
            self.errors.push(e);
        }
    }

    fn applies_locally(&self) -> bool {
        false
    }
}
