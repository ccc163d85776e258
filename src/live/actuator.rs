//! What scheduling decisions do to a live cluster. Shadow mode writes nothing; active mode
//! acts as kube-scheduler does: the pods/binding subresource, events.k8s.io Events
//! (Scheduled, FailedScheduling with the exact message), the PodScheduled condition and
//! nominatedNodeName through the status subresource, and deletion of preemption victims.
//!
//! The session is synchronous; the API calls run on the tokio runtime through its handle.
//! Changes come back through the watches, so nothing is applied locally.
//!
//! A signal interrupts the write under way (a hung server would otherwise hold it for the
//! client's read timeout), and shutdown's writes share one deadline (`SHUTDOWN_DEADLINE`)
//! instead of each waiting that timeout in turn; see [`WriteBounds`].

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use crate::framework::PodInfo;
use crate::session::{Actuator, ActuatorError, WriteOp};
use crate::signals::Stop;

/// How long active mode's shutdown writes (rejecting the pods waiting at Permit: their
/// events and status patches, and a binding under way) may take altogether.
pub const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(5);

/// What bounds the actuator's writes: a signal interrupts the write under way; from
/// [`WriteBounds::begin`], every write also shares one deadline, and once one is cut
/// short (deadline or signal) the rest are not sent. Shared between the actuator and the
/// driver that begins the shutdown and reports it.
#[derive(Debug, Clone, Default)]
pub struct WriteBounds {
    stop: Option<Stop>,
    shutdown: Arc<Mutex<Option<Shutdown>>>,
}

#[derive(Debug)]
struct Shutdown {
    deadline: Instant,
    /// Signals received before the shutdown began (the one that started it, say).
    seen: usize,
    done: usize,
    failed: usize,
    /// Writes interrupted or not sent, described.
    not_made: Vec<String>,
    /// Why the rest were not made ("stopped by SIGTERM").
    cut: Option<String>,
}

/// A write that did not get an answer: why.
enum Failure {
    Api(kube::Error),
    /// Interrupted, or not sent at all, for the reason given.
    Cut(String),
}

impl WriteBounds {
    /// Writes interrupted by the signals `stop` hears.
    pub fn new(stop: Stop) -> WriteBounds {
        WriteBounds {
            stop: Some(stop),
            shutdown: Default::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Option<Shutdown>> {
        self.shutdown.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the shutdown: from now on writes share `SHUTDOWN_DEADLINE`, and a signal
    /// (one after those already received) ends them.
    pub fn begin(&self) {
        let seen = self.stop.as_ref().map_or(0, Stop::signals);
        *self.state() = Some(Shutdown {
            deadline: Instant::now() + SHUTDOWN_DEADLINE,
            seen,
            done: 0,
            failed: 0,
            not_made: Vec::new(),
            cut: None,
        });
    }

    /// Whether the shutdown's writes were cut short (the rest not sent).
    fn cut(&self) -> bool {
        self.state().as_ref().is_some_and(|s| s.cut.is_some())
    }

    /// What the shutdown wrote, when it was cut short or a write failed: "shutdown: 3 of
    /// 7 writes done; stopped by SIGTERM; not made: ...". `None` when every write was made.
    pub fn report(&self) -> Option<String> {
        let st = self.state();
        let s = st.as_ref()?;
        if s.cut.is_none() && s.failed == 0 {
            return None;
        }
        let total = s.done + s.failed + s.not_made.len();
        let mut text = format!("shutdown: {} of {total} writes done", s.done);
        if s.failed > 0 {
            text.push_str(&format!(", {} failed", s.failed));
        }
        if let Some(why) = &s.cut {
            text.push_str(&format!("; {why}"));
        }
        if !s.not_made.is_empty() {
            const SHOWN: usize = 5;
            let mut names: Vec<&str> = s.not_made.iter().take(SHOWN).map(String::as_str).collect();
            let more = s.not_made.len().saturating_sub(SHOWN);
            let more = format!("and {more} more");
            if s.not_made.len() > SHOWN {
                names.push(&more);
            }
            text.push_str(&format!("; not made: {}", names.join(", ")));
        }
        Some(text)
    }
}

/// Shadow mode: decisions stay in kubestep.
#[derive(Debug, Default)]
pub struct ShadowActuator;

impl Actuator for ShadowActuator {
    fn bind(&mut self, _pod: &PodInfo, _node: &str) -> Result<(), ActuatorError> {
        Ok(())
    }
    fn delete(&mut self, _v: &PodInfo, _p: &PodInfo, _node: &str) -> Result<(), ActuatorError> {
        Ok(())
    }
    fn nominate(&mut self, _pod: &PodInfo, _node: Option<&str>) -> Result<(), ActuatorError> {
        Ok(())
    }
    fn applies_locally(&self) -> bool {
        false
    }
}

/// Writes that failed, shared between the actuator (inside the Session) and the driver
/// that shows them (standard error, or the TUI's status line and log).
#[derive(Debug, Clone, Default)]
pub struct WriteErrors(Arc<Mutex<Vec<ActuatorError>>>);

impl WriteErrors {
    pub fn push(&self, e: ActuatorError) {
        tracing::warn!("{e}");
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(e);
    }

    /// The errors not taken yet.
    pub fn take(&self) -> Vec<ActuatorError> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
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
    /// The nomination of the failed attempt being reported (pod UID, node), written
    /// with its PodScheduled condition in one status update.
    nomination: Option<(String, Option<String>)>,
    /// Nominations written at a binding cycle's start (pod UID to node): the pod object
    /// the session holds predates them, and a failure must clear them.
    binding_nominations: std::collections::HashMap<String, String>,
    /// Every failed write, for the person to read.
    pub errors: WriteErrors,
    /// What interrupts writes, and shutdown's deadline.
    pub bounds: WriteBounds,
}

impl ApiActuator {
    pub fn new(client: Client, rt: tokio::runtime::Handle, scheduler_name: &str) -> ApiActuator {
        ApiActuator {
            client,
            rt,
            scheduler_name: scheduler_name.into(),
            bound: HashSet::new(),
            nomination: None,
            binding_nominations: Default::default(),
            errors: WriteErrors::default(),
            bounds: WriteBounds::default(),
        }
    }

    /// Runs one write (`what`, for the shutdown report) within the bounds: until a signal
    /// arrives, and during shutdown until its deadline; after the shutdown was cut short,
    /// not at all.
    fn write<T>(
        &self,
        what: impl FnOnce() -> String,
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, Failure> {
        let b = &self.bounds;
        let (deadline, seen) = {
            let mut st = b.state();
            match st.as_mut() {
                Some(s) if s.cut.is_some() => {
                    s.not_made.push(what());
                    return Err(Failure::Cut(format!(
                        "not sent: shutdown {}",
                        s.cut.as_deref().unwrap_or_default()
                    )));
                }
                Some(s) => (Some(s.deadline), s.seen),
                None => (None, b.stop.as_ref().map_or(0, Stop::signals)),
            }
        };
        let stop = b.stop.clone();
        let r = self.rt.block_on(async {
            let signal = async {
                match &stop {
                    Some(s) => s.signal_after(seen).await,
                    None => std::future::pending().await,
                }
            };
            let late = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                r = fut => r.map_err(Failure::Api),
                sig = signal => Err(Failure::Cut(format!("stopped by {sig}"))),
                () = late => Err(Failure::Cut(format!(
                    "the {}s shutdown deadline passed", SHUTDOWN_DEADLINE.as_secs()))),
            }
        });
        if let Some(s) = b.state().as_mut() {
            match &r {
                Ok(_) => s.done += 1,
                Err(Failure::Api(_)) => s.failed += 1,
                Err(Failure::Cut(why)) => {
                    s.not_made.push(what());
                    s.cut = Some(why.clone());
                }
            }
        }
        r.map_err(|f| match f {
            Failure::Cut(why) => Failure::Cut(format!("interrupted: {why}")),
            api => api,
        })
    }

    /// Shows a failed write, unless the shutdown was cut short: its report lists what it
    /// did not make.
    fn report(&self, e: ActuatorError) {
        if !self.bounds.cut() {
            self.errors.push(e);
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
        let what = || format!("event {reason} for {}", pod.key);
        if let Err(e) = self.write(what, api.create(&PostParams::default(), &obj)) {
            self.report(write_error(WriteOp::Event, pod, Some(reason), &e));
        }
    }

    fn patch_status(&mut self, pod: &PodInfo, status: Value) -> Result<(), ActuatorError> {
        let api = self.pods(pod);
        let patch = Patch::Strategic(json!({"status": status}));
        let what = || format!("status of {}", pod.key);
        self.write(
            what,
            api.patch_status(&pod.name, &PatchParams::default(), &patch),
        )
        .map(|_| ())
        .map_err(|e| write_error(WriteOp::StatusPatch, pod, None, &e))
    }
}

impl Actuator for ApiActuator {
    fn bind(&mut self, pod: &PodInfo, node: &str) -> Result<(), ActuatorError> {
        if !self.bound.insert(pod.uid.clone()) {
            return Err(ActuatorError::AlreadyBound {
                pod: pod.key.clone(),
            });
        }
        let binding = json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        let api = self.pods(pod);
        let what = || format!("binding {} to {node}", pod.key);
        let r: Result<Value, Failure> = self.write(
            what,
            api.create_subresource("binding", &pod.name, &PostParams::default(), &binding),
        );
        match r {
            Ok(_) => {
                let msg = format!("Successfully assigned {} to {node}", pod.key);
                self.event(pod, "Normal", "Scheduled", "Binding", &msg);
                Ok(())
            }
            Err(e) => {
                // Not bound (conflict, pod gone): the watch tells what really happened.
                self.bound.remove(&pod.uid);
                let e = write_error(WriteOp::Bind, pod, Some(node), &e);
                // A conflict is another scheduler's win, not a failed write.
                if e.code() != Some(409) {
                    self.report(e.clone());
                }
                Err(e)
            }
        }
    }

    fn delete(
        &mut self,
        victim: &PodInfo,
        preemptor: &PodInfo,
        node: &str,
    ) -> Result<(), ActuatorError> {
        let api = self.pods(victim);
        let note = format!("Preempted by pod {} on node {node}", preemptor.uid);
        // As kube-scheduler does: the victim first says why it is going (a DisruptionTarget
        // condition its controllers and PDB tooling read), then it is deleted.
        let cond = json!({"conditions": [{"type": "DisruptionTarget", "status": "True",
            "reason": "PreemptionByScheduler",
            "message": format!("{}: preempting to accommodate a higher priority pod", self.scheduler_name),
            "lastTransitionTime": Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()}]});
        match self.patch_status(victim, cond) {
            Ok(()) => {}
            // Already gone: nothing left to preempt.
            Err(e) if e.code() == Some(404) => return Ok(()),
            Err(e) => self.report(e),
        }
        let what = || format!("deleting {}", victim.key);
        let r = self.write(what, api.delete(&victim.name, &DeleteParams::default()));
        match r {
            Ok(_) => {
                self.event(victim, "Normal", "Preempted", "Preempting", &note);
                Ok(())
            }
            Err(Failure::Api(kube::Error::Api(s))) if s.code == 404 => Ok(()),
            Err(e) => {
                let e = write_error(WriteOp::Delete, victim, None, &e);
                self.report(e.clone());
                Err(e)
            }
        }
    }

    fn preempted_waiting(&mut self, victim: &PodInfo, note: &str) {
        self.event(victim, "Normal", "Preempted", "Preempting", note);
    }

    fn pod_event(&mut self, pod: &PodInfo, reason: &str, note: &str) {
        self.event(pod, "Normal", reason, "Scheduling", note);
    }

    /// Kept for `failed`, which writes it with the condition.
    fn nominate(&mut self, pod: &PodInfo, node: Option<&str>) -> Result<(), ActuatorError> {
        self.nomination = Some((pod.uid.clone(), node.map(str::to_string)));
        Ok(())
    }

    /// The FailedScheduling event, then one status update with the PodScheduled
    /// condition and the nomination, and none when neither would change (kube-scheduler
    /// compares the condition's status, reason and message, and the nominated node).
    fn failed(&mut self, pod: &PodInfo, message: &str, error: bool) {
        self.event(pod, "Warning", "FailedScheduling", "Scheduling", message);
        // kube-scheduler's reasons: a fit problem is Unschedulable, anything else (a plugin
        // or extender error) SchedulerError.
        let reason = if error {
            "SchedulerError"
        } else {
            "Unschedulable"
        };
        let status = pod.pod().status.as_ref();
        let old = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"));
        let same = old.is_some_and(|c| {
            c.status == "False"
                && c.reason.as_deref() == Some(reason)
                && c.message.as_deref() == Some(message)
        });
        let written = self.binding_nominations.remove(&pod.uid);
        let current = written
            .or_else(|| status.and_then(|s| s.nominated_node_name.clone()))
            .filter(|n| !n.is_empty());
        let nomination = match self.nomination.take() {
            Some((uid, node)) if uid == pod.uid && node != current => Some(node),
            _ => None,
        };
        if same && nomination.is_none() {
            return;
        }
        let mut patch = json!({});
        if !same {
            // The transition time moves only when the condition's status does.
            let since = match old {
                Some(c) if c.status == "False" => c
                    .last_transition_time
                    .as_ref()
                    .and_then(|t| serde_json::to_value(t).ok())
                    .and_then(|v| v.as_str().map(str::to_string)),
                _ => None,
            }
            .unwrap_or_else(|| Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
            patch["conditions"] = json!([{"type": "PodScheduled", "status": "False",
                "reason": reason, "message": message,
                "lastTransitionTime": since, "lastProbeTime": null}]);
        }
        if let Some(node) = nomination {
            patch["nominatedNodeName"] = json!(node);
        }
        if let Err(e) = self.patch_status(pod, patch) {
            self.report(e);
        }
    }

    fn applies_locally(&self) -> bool {
        false
    }

    fn nominate_for_binding(&mut self, pod: &PodInfo, node: &str) -> Result<(), ActuatorError> {
        if pod.nominated_node_name() == node {
            return Ok(());
        }
        self.patch_status(pod, json!({"nominatedNodeName": node}))?;
        self.binding_nominations
            .insert(pod.uid.clone(), node.to_string());
        Ok(())
    }

    /// A status DynamicResources wrote, as kube-scheduler writes it: for a ResourceClaim
    /// (allocation and reservation) the finalizer in a normal update, then the status,
    /// each conditional on the resourceVersion read (when the object has one), so a claim
    /// changed meanwhile is a conflict; for a Pod its extendedResourceClaimStatus.
    fn update_status(&mut self, object: &Value) -> Result<(), ActuatorError> {
        let (api, name, what) = self.object_api(object);
        let params = PatchParams::default();
        let meta = &object["metadata"];
        let is_pod = object["kind"] == "Pod";
        let write = async {
            if is_pod {
                let patch = json!({"status": {
                    "extendedResourceClaimStatus": object["status"]["extendedResourceClaimStatus"]}});
                return api
                    .patch_status(&name, &params, &Patch::Merge(patch))
                    .await
                    .map(drop);
            }
            let mut version = meta["resourceVersion"].clone();
            if meta["finalizers"].as_array().is_some_and(|f| !f.is_empty()) {
                let patch = Patch::Merge(json!({"metadata": {
                    "finalizers": meta["finalizers"], "resourceVersion": version}}));
                let updated = api.patch(&name, &params, &patch).await?;
                version = json!(updated.metadata.resource_version);
            }
            let status = &object["status"];
            let mut patch = json!({"status": {"allocation": status["allocation"],
                "reservedFor": status["reservedFor"], "devices": status["devices"]}});
            // Without a version the write is unconditional (Unreserve's, as upstream's
            // patch).
            if version.is_string() {
                patch["metadata"] = json!({ "resourceVersion": version });
            }
            api.patch_status(&name, &params, &Patch::Merge(patch))
                .await
                .map(drop)
        };
        let described = || format!("status of {what}");
        let r = self.write(described, write);
        self.object_result(r, WriteOp::ObjectStatus, what)
    }

    /// The claim DynamicResources creates for a pod's extended resources: created (the
    /// server ignores its status), then its status written against the new version.
    fn create(&mut self, object: &Value) -> Result<(), ActuatorError> {
        let (api, _, what) = self.object_api(object);
        let mut body = object.clone();
        if let Some(m) = body.as_object_mut() {
            m.remove("status");
        }
        let write = async {
            let obj: DynamicObject =
                serde_json::from_value(body).map_err(kube::Error::SerdeError)?;
            api.create(&PostParams::default(), &obj).await
        };
        let created = self.write(|| format!("create {what}"), write);
        let created = self.object_result(created, WriteOp::ObjectCreate, what)?;
        let mut written = object.clone();
        written["metadata"]["resourceVersion"] = json!(created.metadata.resource_version);
        // The finalizer went in with the object: only the status is left to write.
        if let Some(m) = written["metadata"].as_object_mut() {
            m.remove("finalizers");
        }
        self.update_status(&written)
    }

    /// A claim DynamicResources deletes again: its delete-protection finalizer dropped
    /// (the object carries the finalizers to keep), then deleted.
    fn delete_object(&mut self, object: &Value) -> Result<(), ActuatorError> {
        let (api, name, what) = self.object_api(object);
        let finalizers = object["metadata"]["finalizers"].clone();
        let write = async {
            let patch = Patch::Merge(json!({"metadata": {"finalizers": finalizers}}));
            api.patch(&name, &PatchParams::default(), &patch).await?;
            api.delete(&name, &DeleteParams::default()).await.map(drop)
        };
        let r = self.write(|| format!("delete {what}"), write);
        self.object_result(r, WriteOp::ObjectDelete, what)
    }
}

impl ApiActuator {
    /// The API of a plugin-written object, its name, and how errors name it.
    fn object_api(&self, object: &Value) -> (Api<DynamicObject>, String, String) {
        let meta = &object["metadata"];
        let (ns, name) = (
            meta["namespace"].as_str().unwrap_or_default(),
            meta["name"].as_str().unwrap_or_default(),
        );
        let (api_version, kind) = (
            object["apiVersion"].as_str().unwrap_or_default(),
            object["kind"].as_str().unwrap_or_default(),
        );
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let ar = ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(group, version, kind));
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, &ar);
        (api, name.to_string(), format!("{kind} {ns}/{name}"))
    }

    /// A plugin's write's outcome; a failure is reported and named by its object.
    fn object_result<T>(
        &mut self,
        r: Result<T, Failure>,
        op: WriteOp,
        what: String,
    ) -> Result<T, ActuatorError> {
        r.map_err(|e| {
            let (code, reason, message) = said(&e);
            let e = ActuatorError::Write {
                op,
                pod: what,
                detail: None,
                code,
                reason,
                message,
            };
            self.report(e.clone());
            e
        })
    }
}

/// The API server's Status (code, reason and message), or the client's error (or why the
/// write was cut short) when no answer came.
fn said(e: &Failure) -> (Option<u16>, Option<String>, String) {
    match e {
        Failure::Api(kube::Error::Api(s)) => {
            (Some(s.code), Some(s.reason.clone()), s.message.clone())
        }
        Failure::Api(other) => (None, None, other.to_string()),
        Failure::Cut(why) => (None, None, why.clone()),
    }
}

/// A failed write about `pod`.
fn write_error(op: WriteOp, pod: &PodInfo, detail: Option<&str>, e: &Failure) -> ActuatorError {
    let (code, reason, message) = said(e);
    ActuatorError::Write {
        op,
        pod: pod.key.clone(),
        detail: detail.map(str::to_string),
        code,
        reason,
        message,
    }
}
