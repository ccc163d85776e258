//! Core: everything a session holds but the pod being stepped (clock, cluster, scheduler,
//! queue, waiting pods, records, the world journal) and what it does to them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use jiff::Timestamp;

use super::*;

/// Everything but the pod being stepped.
pub struct Core {
    pub clock: Clock,
    pub cluster: ClusterState,
    pub sched: Scheduler,
    pub queue: SchedulingQueue,
    pub waiting: WaitingPods,
    /// Attempts held at Permit, by pod UID.
    pub parked: BTreeMap<String, Attempt>,
    pub pods: BTreeMap<String, PodRecord>,
    pub actuator: Box<dyn Actuator>,
    /// What past attempts ran on (see `world.rs`).
    pub world: WorldHistory,
    /// The packed pod the last local binding stored (the attempt keeps it, not the
    /// whole pending pod).
    pub(super) bound_packed: Option<Arc<PodInfo>>,
    /// Pods the source (a recording) binds, by UID, with the node it binds them to:
    /// kubestep runs their scheduling cycle and compares its decision, but does not
    /// reserve or bind them.
    pub externally_bound: BTreeMap<String, String>,
    /// Cluster changes still to come (a recording's events, or watch events).
    pub feed: Feed,
    /// UIDs of preemption victims kubestep deleted from its own copy of the cluster (replay):
    /// the recording, where they lived on, must not bring them back.
    pub evicted: BTreeSet<String>,
    /// kubestep's decision differed from the recorded binding, for bindings applied so far.
    pub divergences: Vec<Divergence>,
    /// Differences found at decision time, reported once the recorded binding happens.
    pub pending_divergences: BTreeMap<String, Divergence>,
    /// Cluster changes applied, for the trace.
    pub changes: Vec<(Timestamp, String)>,
    /// Pods recorded as Bound (kept as records change, so steps can count cheaply).
    pub(super) bound: usize,
    /// Counts changes to `pods` (a record set, or removed).
    pub records_version: u64,
    /// Pods whose record is neither Bound nor Ignored: the ones the queue pane lists
    /// besides the queue, found without walking every bound pod.
    pub unbound: std::collections::BTreeSet<String>,
    /// Pods whose record changed or went since the queue history last looked, kept only
    /// while it asks (`Some`): what a moment kept as a change needs to copy.
    pub(super) touched: Option<Vec<String>>,
    /// Node names in snapshot order for attempt records, shared while the node list
    /// stays the same (keyed by the snapshot's epoch).
    pub(super) node_names: (u64, Arc<Vec<String>>),
}

/// A Handle from the parts of `Core` it needs, so the queue can be borrowed beside it.
pub(super) fn handle_of<'a>(
    sched: &'a Scheduler,
    cluster: &'a ClusterState,
    waiting: &'a WaitingPods,
    now: Timestamp,
    profile: usize,
) -> Handle<'a> {
    Handle {
        framework: &sched.frameworks[profile],
        snapshot: sched.snapshot(),
        listers: &cluster.listers,
        nominator: &sched.nominator,
        waiting,
        now,
        extenders: &sched.extenders,
        simulation: false,
        pool: sched.pool(),
    }
}

impl Core {
    pub fn handle(&self, profile: usize) -> Handle<'_> {
        handle_of(
            &self.sched,
            &self.cluster,
            &self.waiting,
            self.clock.now(),
            profile,
        )
    }

    pub(super) fn profile_of(&self, pod: &PodInfo) -> Option<usize> {
        self.sched
            .frameworks
            .iter()
            .position(|f| f.profile_name == pod.scheduler_name())
    }

    pub(super) fn record(
        &mut self,
        pod: &PodInfo,
        status: PodStatus,
        node: Option<&str>,
        message: Option<String>,
    ) {
        let r = self
            .pods
            .entry(pod.key.clone())
            .or_insert_with(|| PodRecord {
                pod: pod.key.clone(),
                uid: pod.uid.clone(),
                node: None,
                status: PodStatus::Pending,
                message: None,
                attempts: 0,
                version: 0,
            });
        if r.status == PodStatus::Bound {
            self.bound -= 1;
        }
        if status == PodStatus::Bound {
            self.bound += 1;
        }
        let changed = r.version == 0
            || r.status != status
            || r.node.as_deref() != node
            || r.message != message;
        r.status = status;
        r.node = node.map(str::to_string);
        r.message = message;
        if changed {
            self.records_version += 1;
            r.version = self.records_version;
            if let Some(t) = self.touched.as_mut() {
                t.push(pod.key.clone());
            }
        }
        if matches!(status, PodStatus::Bound | PodStatus::Ignored) {
            self.unbound.remove(&pod.key);
        } else {
            self.unbound.insert(pod.key.clone());
        }
    }

    /// Node names in snapshot order (what attempt records' indices refer to).
    pub fn node_names(&mut self) -> Arc<Vec<String>> {
        let epoch = self.sched.snapshot().epoch();
        if self.node_names.0 != epoch {
            let names = self
                .sched
                .snapshot()
                .list()
                .iter()
                .map(|n| n.name().to_string())
                .collect();
            self.node_names = (epoch, Arc::new(names));
        }
        self.node_names.1.clone()
    }

    /// A record as it stands now: a pod held back at PreEnqueue (on arrival, or when a
    /// retry found it gated again) is Gated, with the gating plugin's message.
    pub(super) fn overlay(&self, r: &PodRecord) -> PodRecord {
        let mut r = r.clone();
        if matches!(r.status, PodStatus::Pending | PodStatus::Unschedulable)
            && let Some(q) = self.queue.get(&r.uid)
            && q.gated()
        {
            r.status = PodStatus::Gated;
            r.message = q.gating_message.clone();
        }
        r
    }

    /// The binding decided at Bind: carried out by the actuator, then (in replay)
    /// applied to the session's cluster.
    pub(super) fn bind_pod(
        &mut self,
        pod: &PodInfo,
        assumed: Option<Arc<PodInfo>>,
        node: &str,
        state: &crate::framework::CycleState,
    ) -> Result<(), ActuatorError> {
        self.actuator.bind(pod, node)?;
        if self.actuator.applies_locally() {
            // What was derived from the pod stays valid: only its node changes (the
            // assumed pod is that, packed), and the status a plugin wrote in this
            // binding cycle (DynamicResources' extended-resource claim status) is kept.
            let bound = match (
                written_pod(state, &pod.uid),
                assumed.filter(|a| a.node_name() == node),
            ) {
                (Some(p), _) => Arc::new(PodInfo::new(p).bound_to(node).packed()),
                (None, Some(a)) => a,
                (None, None) => Arc::new(pod.bound_to(node).packed()),
            };
            self.bound_packed = Some(bound.clone());
            let change = self.cluster.upsert(Object::PackedPod(bound));
            self.apply_change(change);
        }
        Ok(())
    }

    /// Carries out the API writes plugins left in the attempt's CycleState (see
    /// `ObjectWrites`): through the actuator, then in the session's own cluster when it
    /// applies changes locally. Returns the first failure, as `what: error`.
    pub(super) fn carry_out_writes(
        &mut self,
        state: &mut crate::framework::CycleState,
    ) -> Result<(), String> {
        use crate::framework::queued::{OBJECT_WRITES_KEY, ObjectWrites};
        let has_pending = state
            .read::<ObjectWrites>(OBJECT_WRITES_KEY)
            .is_ok_and(|w| !w.pending.is_empty());
        if !has_pending {
            return Ok(());
        }
        let Ok(ws) = state.read_mut::<ObjectWrites>(OBJECT_WRITES_KEY) else {
            return Ok(());
        };
        let mut first = Ok(());
        for w in std::mem::take(&mut ws.pending) {
            use crate::framework::queued::ObjectOp;
            let r = match w.op {
                ObjectOp::UpdateStatus => self.actuator.update_status(&w.object),
                ObjectOp::Create => self.actuator.create(&w.object),
                ObjectOp::Delete => self.actuator.delete_object(&w.object),
            }
            .map_err(|e| e.to_string());
            // A pod's own status goes with its binding (`bind_pod`), not as an update of
            // the pod being bound.
            let is_pod = w.object["kind"] == "Pod";
            if r.is_ok() {
                w.written.store(true, std::sync::atomic::Ordering::Release);
                if self.actuator.applies_locally()
                    && !is_pod
                    && let Ok(Some(obj)) = crate::cluster::object::from_value((*w.object).clone())
                {
                    let change = match w.op {
                        ObjectOp::Delete => self.cluster.remove(obj.kind(), &obj.key()),
                        _ => self.cluster.upsert(obj),
                    };
                    self.apply_change(change);
                }
            }
            let err = r.err();
            if first.is_ok()
                && let Some(e) = &err
            {
                first = Err(format!("{}: {e}", w.what));
            }
            ws.done.push((w, err));
        }
        first
    }

    /// A pod the recording binds to `node` and kubestep found a node for: assumed there in
    /// the snapshot, as the real scheduler's cache held it between its cycle and the
    /// binding, so the pods scheduled meanwhile see its resources taken. A node kubestep's
    /// snapshot does not have yet holds nothing.
    pub(super) fn assume_until_recorded_binding(&mut self, pod: &PodInfo, node: &str) {
        if self.sched.snapshot().get(node).is_none() {
            return;
        }
        self.sched.assume_pod(Arc::new(pod.bound_to(node).packed()));
    }

    pub(super) fn finish_bound(&mut self, pod: &PodInfo, node: &str) {
        self.queue.done(&pod.uid);
        self.record(pod, PodStatus::Bound, Some(node), None);
    }

    /// `handleSchedulingFailure`: nominate, evict victims, and requeue the pod.
    pub(super) fn handle_failure(
        &mut self,
        qpi: &crate::framework::queued::QueuedPodInfo,
        f: &Failure,
    ) {
        let pod = &qpi.pod_info;
        let now = self.clock.now();
        // The nomination first, so that an actuator can write it and the failure in one
        // status update, as kube-scheduler does.
        if let Some(n) = &f.nominated {
            let node = (!n.is_empty()).then_some(n.as_str());
            let _ = self.actuator.nominate(pod, node);
        }
        self.actuator.failed(pod, &f.message, f.error);
        // A nomination that changes nothing (cleared on a pod that has none) writes
        // nothing: kube-scheduler's status patch is empty then, and a new pod version
        // at every retry would only fill history.
        let unchanged = f.nominated.as_deref().is_some_and(|n| {
            n.is_empty()
                && !self.sched.nominator.contains(&pod.uid)
                && self
                    .cluster
                    .pod_info(&pod.key)
                    .is_none_or(|p| p.nominated_node_name().is_empty())
        });
        if let Some(n) = f.nominated.as_ref().filter(|_| !unchanged) {
            let node = (!n.is_empty()).then_some(n.as_str());
            let mut nominated = (*pod.pod()).clone();
            nominated
                .status
                .get_or_insert_with(Default::default)
                .nominated_node_name = node.map(str::to_string);
            let pi = Arc::new(PodInfo::new(Arc::new(nominated)));
            Arc::make_mut(&mut self.sched.nominator).add(pi.clone(), node.unwrap_or(""));
            if self.actuator.applies_locally() && self.cluster.pod_info(&pod.key).is_some() {
                self.cluster
                    .upsert(Object::Pod(Box::new((*pi.pod()).clone())));
            }
        }
        if !f.victims.is_empty() {
            self.evict(pod, f.nominated.as_deref().unwrap_or(""), &f.victims);
        }
        let still_pending = self
            .cluster
            .pod_info(&pod.key)
            .is_some_and(|p| p.node_name().is_empty());
        if still_pending {
            if let Some(i) = self.profile_of(pod) {
                let h = handle_of(&self.sched, &self.cluster, &self.waiting, now, i);
                let fwk = &self.sched.frameworks[i];
                self.queue.add_unschedulable_if_not_present(
                    &h,
                    fwk,
                    qpi.clone(),
                    f.unschedulable_plugins.clone(),
                    f.pending_plugins.clone(),
                    f.error,
                    f.message.clone(),
                    now,
                );
            }
            self.record(pod, PodStatus::Unschedulable, None, Some(f.message.clone()));
        }
        self.queue.done(&pod.uid);
    }

    /// Preemption: a victim waiting at Permit is stopped in memory, the others deleted.
    /// Up to 1.35 the wait is rejected (the victim turns unschedulable), and a victim still
    /// in the waiting map is never deleted, even when its wait was already over; from 1.36
    /// it is preempted (an Error: backoff), and deleted when its wait was over.
    pub(super) fn evict(&mut self, preemptor: &PodInfo, node: &str, victims: &[String]) {
        const PLUGIN: &str = "DefaultPreemption";
        let in_memory = self
            .sched
            .config
            .features
            .semantics
            .preempts_waiting_victims_in_memory;
        for key in victims {
            let Some(victim) = self.cluster.pod_info(key).cloned() else {
                continue;
            };
            let note = format!("Preempted by pod {} on node {node}", preemptor.uid);
            if in_memory {
                if self.waiting.preempt(&victim.uid, PLUGIN, "preempted") {
                    let note = format!("{note} (in kube-scheduler memory).");
                    self.actuator.preempted_waiting(&victim, &note);
                    continue;
                }
            } else if self.waiting.contains(&victim.uid) {
                self.waiting.reject(&victim.uid, PLUGIN, "preempted");
                self.actuator.preempted_waiting(&victim, &note);
                continue;
            }
            if self.actuator.delete(&victim, preemptor, node).is_ok()
                && self.actuator.applies_locally()
            {
                self.evicted.insert(victim.uid.clone());
                let change = self.cluster.remove("Pod", key);
                self.apply_change(change);
            }
        }
    }

    /// Brings the scheduler's views up to date with a cluster change and tells the queue.
    pub fn apply_change(&mut self, change: Option<Change>) {
        let Some(c) = change else { return };
        let now = self.clock.now();
        if c.kind != "Node" {
            self.refresh_queue_sort();
        }
        let events = match (&c.old, &c.new) {
            (old, new) if c.kind == "Pod" => {
                let old_pod = match old {
                    Some(Stored::Pod(p)) => Some(p.clone()),
                    _ => None,
                };
                let new_pod = match new {
                    Some(Stored::Pod(p)) => Some(p.clone()),
                    _ => None,
                };
                self.apply_pod_change(old_pod.as_deref(), new_pod.clone(), now);
                queue::events_for_pod_change(
                    old_pod.as_ref(),
                    new_pod.as_ref(),
                    &self.sched.config.features,
                )
            }
            (old, new) if c.kind == "Node" => {
                let old_node = match old {
                    Some(Stored::Node(n)) => Some(n.clone()),
                    _ => None,
                };
                match new {
                    Some(Stored::Node(n)) => self.sched.cache.upsert_node(n.clone()),
                    _ => self.sched.cache.remove_node(&c.key),
                }
                let new_node = match new {
                    Some(Stored::Node(n)) => Some(n.clone()),
                    _ => None,
                };
                queue::events_for_node_change(
                    old_node.as_deref(),
                    new_node.as_deref(),
                    &self.sched.config.features,
                )
            }
            // Without DRADeviceTaintRules upstream's slice tracker does not watch rules:
            // a rule's change is no event.
            _ if c.kind == crate::api::dra::TAINT_RULE
                && !self
                    .sched
                    .config
                    .features
                    .enabled(crate::features::Gate::DRADeviceTaintRules) =>
            {
                Vec::new()
            }
            (old, new) => {
                let v = |s: &Option<Stored>| match s {
                    Some(Stored::Other { value, .. }) => Some(value.clone()),
                    _ => None,
                };
                queue::events_for_object(&c.kind, v(old).as_ref(), v(new).as_ref())
            }
        };
        for e in &events {
            self.broadcast(e, now);
        }
    }

    /// One cluster event to the queue (MoveAllToActiveOrBackoffQueue).
    pub(super) fn broadcast(&mut self, e: &queue::ClusterEvent, now: Timestamp) {
        let h = handle_of(&self.sched, &self.cluster, &self.waiting, now, 0);
        self.queue.on_event(&h, &self.sched.frameworks, e, now);
    }

    pub(super) fn apply_pod_change(
        &mut self,
        old: Option<&PodInfo>,
        new: Option<Arc<PodInfo>>,
        now: Timestamp,
    ) {
        // kube-scheduler skips updates of an assumed pod: it waits for its binding.
        let skip = new.as_ref().is_some_and(|pi| {
            pi.node_name().is_empty() && old.is_some() && self.sched.cache.is_assumed_pod(&pi.uid)
        });
        self.sched.cache.on_pod_change(old, new.as_ref());
        let Some(pi) = new else {
            // Deleted: out of the queue, out of the waiting map, out of nominations.
            if let Some(pi) = old {
                self.queue.delete(&pi.uid);
                self.waiting.reject(&pi.uid, "", "removed");
                self.forget_nomination(&pi.uid);
                if self.pods.remove(&pi.key).map(|r| r.status) == Some(PodStatus::Bound) {
                    self.bound -= 1;
                }
                self.records_version += 1;
                self.unbound.remove(&pi.key);
                if let Some(t) = self.touched.as_mut() {
                    t.push(pi.key.clone());
                }
                self.pending_divergences.remove(&pi.uid);
            }
            return;
        };
        let n = pi.node_name().to_string();
        if !n.is_empty() {
            self.forget_nomination(&pi.uid);
            self.record(&pi, PodStatus::Bound, Some(&n), None);
            self.queue.delete(&pi.uid);
            // A recorded binding: kubestep's different decision, if any, is now a fact.
            if let Some(d) = self.pending_divergences.remove(&pi.uid) {
                self.divergences.push(d);
            }
            return;
        }
        if skip {
            return;
        }
        let Some(i) = self.profile_of(&pi) else {
            self.record(
                &pi,
                PodStatus::Ignored,
                None,
                Some(format!(
                    "no profile for schedulerName {:?}",
                    pi.scheduler_name()
                )),
            );
            return;
        };
        let h = handle_of(&self.sched, &self.cluster, &self.waiting, now, i);
        let fwk = &self.sched.frameworks[i];
        if old.is_some() {
            self.queue.update(&h, fwk, pi.clone(), now);
        } else {
            self.queue.add(&h, fwk, pi.clone(), now);
        }
        let nnn = pi.nominated_node_name().to_string();
        if !nnn.is_empty() {
            Arc::make_mut(&mut self.sched.nominator).add(pi.clone(), &nnn);
        }
        if !self.pods.contains_key(&pi.key) {
            self.record(&pi, PodStatus::Pending, None, None);
        }
    }

    /// What an attempt starting now needs to be run again exactly (see `world.rs`).
    pub(super) fn freeze(
        &mut self,
        profile: usize,
        start_node_index: usize,
        batch: Option<BatchProbe>,
    ) -> Option<Frozen> {
        if !self.world.enabled() {
            return None;
        }
        let changes = self.sched.cache.take_changes();
        let world = self
            .world
            .freeze(self.sched.snapshot(), changes, &mut self.cluster.listers);
        let mut states = Vec::new();
        for (name, plugin) in self.sched.frameworks[profile].unique_plugins() {
            if let Some(st) = plugin.save_state() {
                states.push((name, st));
            }
        }
        Some(Frozen {
            world,
            now: self.clock.now(),
            start_node_index,
            batch,
            nominator: self.sched.nominator.clone(),
            waiting: (!self.waiting.is_empty()).then(|| Arc::new(self.waiting.fork())),
            plugin_states: Arc::new(states),
        })
    }

    /// Drops a pod's nomination (copying the nominations only when one goes).
    pub(super) fn forget_nomination(&mut self, uid: &str) {
        if self.sched.nominator.contains(uid) {
            Arc::make_mut(&mut self.sched.nominator).remove(uid);
        }
    }

    /// Pods a plugin asked to activate (PodsToActivate in the attempt's CycleState) move
    /// to the active queue, and the request is cleared, as upstream does after each cycle.
    pub(super) fn activate_requested(&mut self, a: &mut Attempt) {
        use crate::framework::queued::{PODS_TO_ACTIVATE_KEY, PodsToActivate};
        let Ok(req) = a.cycle.state.read::<PodsToActivate>(PODS_TO_ACTIVATE_KEY) else {
            return;
        };
        if req.pods.is_empty() {
            return;
        }
        let uids: Vec<String> = req
            .pods
            .values()
            .filter_map(|p| p.metadata.uid.clone())
            .collect();
        a.cycle
            .state
            .write(PODS_TO_ACTIVATE_KEY, PodsToActivate::default());
        let now = self.clock.now();
        let h = handle_of(&self.sched, &self.cluster, &self.waiting, now, a.profile);
        self.queue
            .activate(&h, &self.sched.frameworks[a.profile], &uids, now);
    }

    /// QueueSort plugins whose order depends on cluster objects re-read them.
    pub(super) fn refresh_queue_sort(&self) {
        for fwk in &self.sched.frameworks {
            for e in fwk.plugins(crate::framework::ExtensionPoint::QueueSort) {
                if let Some(q) = e.plugin.as_queue_sort() {
                    q.refresh(&self.cluster.listers);
                }
            }
        }
    }

    /// Attempts parked in a PreBind plugin's wait.
    pub fn pre_bind_waits(&self) -> usize {
        self.parked
            .values()
            .filter(|a| a.open_pre_bind_wait().is_some())
            .count()
    }

    pub fn counts(&self) -> QueueCounts {
        // Kept cheap: it runs after every step, and recordings hold tens of thousands of pods.
        let q = self.queue.sizes();
        let c = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        QueueCounts {
            active: c(q.active),
            backoff: c(q.backoff),
            unschedulable: c(q.unschedulable),
            gated: c(q.gated),
            waiting: c(self.waiting.len() + self.pre_bind_waits()),
            bound: c(self.bound),
            awaiting: c(q.awaiting_binding),
        }
    }
}

/// The pod as a plugin's status write of this binding cycle left it, if one did.
fn written_pod(
    state: &crate::framework::CycleState,
    uid: &str,
) -> Option<Arc<k8s_openapi::api::core::v1::Pod>> {
    use crate::framework::queued::{OBJECT_WRITES_KEY, ObjectWrites};
    let ws = state.read::<ObjectWrites>(OBJECT_WRITES_KEY).ok()?;
    ws.done
        .iter()
        .rev()
        .filter(|(w, e)| {
            e.is_none() && w.object["kind"] == "Pod" && w.object["metadata"]["uid"] == uid
        })
        .find_map(|(w, _)| serde_json::from_value((*w.object).clone()).ok())
        .map(Arc::new)
}
