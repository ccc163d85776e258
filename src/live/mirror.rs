//! Live mode's engine side: a Session built from the first list of every kind and kept in
//! step with the watches, with the clock following the wall clock. The driver (headless
//! or the TUI) owns the Session; `Mirror` holds what live mode adds to it.
//!
//! Shadow mode evaluates each pending pod against the cluster as it is: kubestep's choice
//! is recorded but never assumed (the pod is marked as bound by its source, as replay does
//! for pods a recording binds), so one pod's simulated placement never skews another's,
//! and what the real scheduler does arrives through the watch.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodStatus as CorePodStatus};
use serde_json::{Value, json};

use super::LiveError;
use super::link::LinkStatus;
use super::recorder::Tape;
use super::watch::{Change, Update, Watchers};
use crate::cluster::{ClusterState, Located, Object, object};
use crate::config::KubeSchedulerConfiguration;
use crate::recording::EventType;
use crate::session::scheduler::SetupError;
use crate::session::trace::TraceLevel;
use crate::session::{
    Actuator, PodRecord, PodStatus, Point, Session, SessionOptions, StopReason, trace,
};

/// The first list of every kind, and the changes that arrived meanwhile.
pub struct InitialSync {
    /// Pods packed (`Object::packed`), as recordings hold them while loading: the
    /// cluster would pack the bound ones anyway, and a whole pod is several kB in place.
    pub objects: Vec<Object>,
    pub held: Vec<Change>,
    /// Objects that could not be read (named, skipped).
    pub notes: Vec<String>,
}

/// What the shadow-mode summary says before its pods.
#[derive(Debug, Default)]
pub struct SummaryHead {
    /// Where kubestep's choice and a binding the cluster's scheduler made differ.
    pub divergences: Value,
    /// Listed pods that are Bound (kubestep attempted them).
    pub bound: usize,
    /// Bound pods kubestep never attempted: counted, not listed.
    pub not_attempted: usize,
}

/// The engine's object for a change; `Ok(None)` for kinds it does not read.
pub fn to_object(c: &Change) -> Result<Option<Object>, String> {
    object_of(c.kind, c.object.clone())
}

/// The engine's object for an object's JSON, which it consumes: lean, as a large dump
/// loads (`Object::lean`: a bound pod packed, without what no plugin reads of it), so a
/// production cluster's running pods cost what scheduling needs, whatever their source.
fn object_of(kind: &str, value: Value) -> Result<Option<Object>, String> {
    match object::from_value(value) {
        Ok(Some(o)) => Ok(Some(o.lean())),
        Ok(None) => Ok(None),
        Err(e) => Err(format!("skipped {kind}: {e}")),
    }
}

/// Something the driver (headless or the TUI) should tell the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// A watch re-listed, or similar news.
    Info(String),
    /// A watch is being retried, or the recording could not be written.
    Problem(String),
    /// Access refused: that kind's watch stopped (headless gives up; the TUI shows it).
    Denied(LiveError),
}

/// The message waiting pods are rejected with when active mode ends.
pub const SHUTDOWN_MESSAGE: &str = "kubestep is shutting down";

/// Live mode's logic over a Session (owned by the driver: the headless loop or the
/// TUI's App): watched changes are applied, the clock follows the wall clock, the link's
/// state is tracked, and with a tape everything seen is also recorded.
pub struct Mirror {
    /// Shadow mode: nothing is written to the cluster and Permit waits are simulated.
    pub shadow: bool,
    /// Objects skipped because they could not be read.
    pub notes: Vec<String>,
    pub link: LinkStatus,
    tape: Option<Tape>,
    /// Kinds whose watch is down, since when, and each kind's last error: what the
    /// tape cannot hold if they are still down when it is finished (a gap marker).
    down: Vec<(&'static str, jiff::Timestamp)>,
    last_errors: Vec<(&'static str, String)>,
}

impl Mirror {
    pub fn new(shadow: bool, tape: Option<Tape>) -> Mirror {
        Mirror {
            shadow,
            notes: Vec::new(),
            link: LinkStatus::default(),
            tape,
            down: Vec::new(),
            last_errors: Vec::new(),
        }
    }

    /// Waits for every kind's first list, recording it on the tape. `progress` hears
    /// about each kind, reconnects and kinds the server does not serve. A kind whose
    /// list is refused does not end the wait: every refusal is collected and returned at
    /// once. `stop` (a signal or `--duration`) ends the wait with an error that says
    /// which kinds were still being listed and why.
    pub async fn initial_sync(
        &mut self,
        w: &mut Watchers,
        stop: impl std::future::Future<Output = ()>,
        mut progress: impl FnMut(&Update),
    ) -> Result<InitialSync, LiveError> {
        let mut out = InitialSync {
            objects: Vec::new(),
            held: Vec::new(),
            notes: Vec::new(),
        };
        let mut waiting: Vec<&'static str> = w.kinds().iter().map(|k| k.kind).collect();
        let mut last_error: Vec<(&'static str, String)> = Vec::new();
        let mut denied = Vec::new();
        tokio::pin!(stop);
        while !waiting.is_empty() {
            let u = tokio::select! {
                biased;
                u = w.next() => u,
                () = &mut stop => {
                    let what = format!(": still waiting for {}", waiting.join(", "));
                    return Err(LiveError::stopped_before_first_lists(what, &waiting, &last_error));
                }
            };
            let Some(u) = u else { break };
            self.link.observe(&u, Instant::now());
            match u {
                Update::Change(c) if c.initial => {
                    self.record(&c);
                    // Each object becomes the engine's as it arrives: no list of a kind
                    // is ever held as JSON.
                    match object_of(c.kind, c.object) {
                        Ok(Some(o)) => out.objects.push(o.packed()),
                        Ok(None) => {}
                        Err(e) => out.notes.push(e),
                    }
                }
                Update::Change(c) => out.held.push(c),
                Update::Synced { kind, .. } => {
                    waiting.retain(|k| *k != kind);
                    progress(&u);
                }
                Update::Unserved { ref kinds, .. } => {
                    waiting.retain(|k| !kinds.contains(k));
                    progress(&u);
                }
                Update::Fatal(e) => {
                    // Which kind: the one whose resource the error names (every kind's
                    // watcher stops after its one Fatal).
                    let kind = match &e {
                        LiveError::Forbidden { resource, .. } => w
                            .kinds()
                            .iter()
                            .find(|k| k.plural == resource)
                            .map(|k| k.kind),
                        _ => None,
                    };
                    match kind {
                        Some(k) => waiting.retain(|x| *x != k),
                        // Refused credentials: every kind would say the same.
                        None => waiting.clear(),
                    }
                    if !e.is_access_denied() {
                        return Err(e);
                    }
                    denied.push(e);
                }
                Update::Reconnecting { kind, ref error } => {
                    last_error.retain(|(k, _)| *k != kind);
                    last_error.push((kind, error.to_string()));
                    progress(&u);
                }
                other => progress(&other),
            }
        }
        if !denied.is_empty() {
            return Err(LiveError::denied(denied));
        }
        Ok(out)
    }

    /// The session over the first lists, with the changes held meanwhile applied. In
    /// shadow mode every pending pod is the cluster's to bind.
    pub fn start(
        &mut self,
        sync: InitialSync,
        config: KubeSchedulerConfiguration,
        opts: SessionOptions,
        actuator: Box<dyn Actuator>,
    ) -> Result<Session, SetupError> {
        let located = sync
            .objects
            .into_iter()
            .map(|value| Located {
                value,
                file: "cluster".into(),
                line: 0,
            })
            .collect();
        // The API server never serves two objects under one key.
        let cluster = ClusterState::from_objects(located).unwrap_or_default();
        let mut session = Session::new(cluster, config, opts, actuator)?;
        if self.shadow {
            let pending: Vec<String> = session
                .cluster()
                .pending_pods()
                .filter_map(|p| p.metadata.uid.clone())
                .collect();
            // The real node is not known yet (the cluster's scheduler has not bound them).
            for uid in &pending {
                session.expect_external_binding(uid);
            }
        }
        self.notes.extend(sync.notes);
        for c in sync.held {
            self.apply(&mut session, &c);
        }
        Ok(session)
    }

    /// Takes in one update: a change is recorded and applied; the rest move the link's
    /// state. Returns what is worth telling.
    pub fn update(&mut self, s: &mut Session, u: Update) -> Option<Said> {
        let said = self.link.observe(&u, Instant::now());
        match &u {
            Update::Reconnecting { kind, error } => {
                let kind: &'static str = kind;
                if !self.down.iter().any(|(k, _)| *k == kind) {
                    self.down.push((kind, jiff::Timestamp::now()));
                }
                self.last_errors.retain(|(k, _)| *k != kind);
                self.last_errors.push((kind, error.to_string()));
            }
            Update::Reconnected { kind } | Update::Resynced { kind, .. } => {
                let kind: &'static str = kind;
                self.down.retain(|(k, _)| *k != kind);
            }
            _ => {}
        }
        match u {
            Update::Change(c) => {
                let problem = self.record(&c);
                self.apply(s, &c);
                problem.map(Said::Problem)
            }
            Update::Fatal(e) => Some(Said::Denied(e)),
            Update::Reconnecting { .. } => said.map(Said::Problem),
            Update::Unserved { warning, .. } => Some(Said::Problem(warning)),
            _ => said.map(Said::Info),
        }
    }

    /// Writes a change to the tape; a failure ends the tape (live mode goes on) and is
    /// returned once.
    fn record(&mut self, c: &Change) -> Option<String> {
        let t = self.tape.as_mut()?;
        let e = t.write(c).err()?;
        self.tape = None;
        Some(format!("recording stopped: {e}"))
    }

    /// Closes the tape: the file and the events written, if there was one.
    pub fn finish_tape(&mut self) -> Option<Result<(PathBuf, u64), String>> {
        let mut t = self.tape.take()?;
        let file = t.file.clone();
        // Kinds whose watch is still down: what changed since is not on the tape, and the
        // file and the person are told so.
        let down = std::mem::take(&mut self.down);
        for (from, gap) in super::recorder::gaps(down, t.last_at(), &self.last_errors) {
            self.notes.push(format!(
                "{} is incomplete: changes to {} from {from} on were not recorded (their watches failed until the end; the file marks the gap)",
                file.display(),
                gap.kinds.join(", ")
            ));
            if let Err(e) = t.gap(from, &gap) {
                return Some(Err(e.to_string()));
            }
        }
        Some(t.finish().map(|n| (file, n)).map_err(|e| e.to_string()))
    }

    /// Applies a watched change to the session.
    pub fn apply(&mut self, s: &mut Session, c: &Change) {
        let obj = match to_object(c) {
            Ok(Some(o)) => o,
            Ok(None) => return,
            Err(e) => {
                self.notes.push(e);
                return;
            }
        };
        set_clock(s, Timestamp::now());
        match c.event {
            EventType::Deleted => {
                let key = obj.key();
                s.delete(obj.kind(), &key);
            }
            EventType::Added | EventType::Modified => {
                // A bound pod is packed: ask its node before reading it whole.
                if obj.pod_node_name() == Some("")
                    && let Some(p) = obj.as_pod()
                {
                    if self.shadow
                        && let Some(uid) = &p.metadata.uid
                    {
                        s.expect_external_binding(uid);
                    }
                    let key = obj.key();
                    if s.cluster()
                        .pod_info(&key)
                        .is_some_and(|old| old.node_name().is_empty() && status_only(old.pod(), p))
                    {
                        // A change of status alone (a condition a scheduler wrote,
                        // kubestep's own in active mode) does not requeue a pending pod
                        // in kube-scheduler v1.35, so the queue is not told.
                        s.apply_quietly(obj);
                        return;
                    }
                }
                s.apply(obj);
            }
        }
    }

    /// Lets the session catch up with the wall clock: timers fire, pods are scheduled.
    /// `emit` gets the trace of each attempt as it ends, so the first explanation is
    /// out while the other pending pods are still being decided.
    pub fn tick<E>(
        &self,
        s: &mut Session,
        now: Timestamp,
        mut emit: impl FnMut(Vec<Value>) -> Result<(), E>,
    ) -> Result<(), E> {
        let target = now.max(s.now());
        let mut resume = true;
        loop {
            s.history.start_tap(s.trace_level != TraceLevel::Attempts);
            let r = s.advance_until(target, 1, resume);
            let tapped = s.history.stop_tap();
            let mut out = s.trace_lines(tapped);
            if let Some(r @ StopReason::Breakpoint(_)) = &r {
                out.push(trace::stop(s, r));
            }
            emit(out)?;
            match r {
                Some(_) => return Ok(()),
                None => resume = false,
            }
        }
    }

    /// `tick` a slice at a time, for a driver that must stay responsive (the TUI): works
    /// for at most about `budget`, and returns `None` when that was not enough to catch
    /// up (the next call goes on). `resume` as for `Session::continue_steps`.
    pub fn tick_within(
        &self,
        s: &mut Session,
        now: Timestamp,
        budget: Duration,
        resume: bool,
    ) -> Option<StopReason> {
        let began = Instant::now();
        let mut resume = resume;
        loop {
            match s.continue_steps(SLICE, std::mem::take(&mut resume)) {
                Some(StopReason::Idle) => {
                    // Caught up at the session's time: move on to the next timer or to now.
                    let target = now.max(s.now());
                    let next = s.next_timer().filter(|t| *t <= target).unwrap_or(target);
                    s.set_time(next);
                    s.fire_timers_pub();
                    if next >= target && !s.has_work() {
                        return Some(StopReason::Reached);
                    }
                }
                Some(other) => return Some(other),
                None => {}
            }
            if began.elapsed() >= budget {
                return None;
            }
        }
    }

    /// Active mode's way out: every pod waiting at Permit is rejected with `message` and
    /// its attempt runs on to Unreserve (and, as for any rejection, FailedScheduling and
    /// the PodScheduled condition), so nothing stays reserved and none of them is bound
    /// later. No other pod is started. An attempt in its binding cycle (a pod already
    /// allowed) runs to its end; one still in its scheduling cycle is dropped, as it has
    /// written nothing. Shadow mode has nothing to release: its waits
    /// are simulated. Returns the trace.
    pub fn release_waiting(&self, s: &mut Session, message: &str) -> Vec<Value> {
        if self.shadow {
            return Vec::new();
        }
        s.history.start_tap(s.trace_level != TraceLevel::Attempts);
        let binding = s.current.as_ref().is_some_and(|a| {
            matches!(
                a.point(),
                Point::PreBind | Point::Bind | Point::PostBind | Point::Unreserve
            )
        });
        if binding {
            s.finish_pod();
        } else {
            s.current = None;
        }
        for w in s.waiting().list() {
            if w.outcome.is_none() {
                let _ = s.reject(&w.pod.key, None, message);
            }
        }
        s.cancel_pre_bind_waits(message);
        s.finish_parked();
        let tapped = s.history.stop_tap();
        s.trace_lines(tapped)
    }

    /// The headless summary: replay's, and in shadow mode every pod kubestep decided:
    /// those still pending in the cluster as `"node":null,"status":"Pending"` with
    /// kubestep's `"selected"` nodes or its unschedulable `"message"`, and those it
    /// attempted; the bound pods it never attempted are counted (`boundNotAttempted`), not
    /// listed (on a production cluster they are 150,000 entries of "Bound").
    pub fn summary(&self, s: &Session) -> Value {
        if !self.shadow {
            return trace::summary(&s.summary());
        }
        let mut pods = Vec::new();
        let mut head = None;
        let _ = self.each_summary_entry(
            s,
            |_, h| {
                head = Some(h);
                Ok(())
            },
            |pods: &mut Vec<Value>, _, entry| {
                pods.push(entry);
                Ok(())
            },
            &mut pods,
        );
        let head = head.unwrap_or_default();
        // Where kubestep's choice and a binding the cluster's scheduler made differ.
        json!({"summary": {"pods": pods, "divergences": head.divergences,
            "boundNotAttempted": head.not_attempted}})
    }

    /// Writes the shadow-mode summary as `summary` prints it in JSON, one pod's entry at
    /// a time: the whole tree of a 150,000-pod cluster's summary cost ~250 MB at the very
    /// end of a run. Returns false outside shadow mode, writing nothing.
    pub fn write_summary(&self, s: &Session, w: &mut impl std::io::Write) -> std::io::Result<bool> {
        self.each_summary_entry(
            s,
            |w, h| {
                // Keys in the order `Value` writes them (sorted).
                write!(
                    w,
                    "{{\"summary\":{{\"boundNotAttempted\":{},\"divergences\":{},\"pods\":[",
                    h.not_attempted, h.divergences
                )
            },
            |w, i, entry| {
                if i > 0 {
                    w.write_all(b",")?;
                }
                write!(w, "{entry}")
            },
            w,
        )?;
        if self.shadow {
            w.write_all(b"]}}\n")?;
        }
        Ok(self.shadow)
    }

    /// The shadow-mode summary's facts one pod at a time, as `summary` holds them:
    /// `start` gets the head (divergences and counts), then `each` every listed pod's
    /// entry in order with its index. Returns false outside shadow mode, calling neither.
    pub fn each_summary_entry<W>(
        &self,
        s: &Session,
        start: impl FnOnce(&mut W, SummaryHead) -> std::io::Result<()>,
        mut each: impl FnMut(&mut W, usize, Value) -> std::io::Result<()>,
        w: &mut W,
    ) -> std::io::Result<bool> {
        if !self.shadow {
            return Ok(false);
        }
        let records = s.summary();
        let listed =
            |r: &PodRecord| r.attempts > 0 || r.status != PodStatus::Bound || still_pending(s, r);
        let mut head = SummaryHead {
            divergences: json!(s.divergences()),
            ..SummaryHead::default()
        };
        for r in &records {
            if !listed(r) {
                head.not_attempted += 1;
            } else if r.status == PodStatus::Bound {
                head.bound += 1;
            }
        }
        start(w, head)?;
        for (i, r) in records.iter().filter(|r| listed(r)).enumerate() {
            each(w, i, self.summary_pod(s, r))?;
        }
        Ok(true)
    }

    /// One pod's entry in the shadow-mode summary.
    fn summary_pod(&self, s: &Session, r: &PodRecord) -> Value {
        if !still_pending(s, r) || r.status == PodStatus::Ignored {
            return json!({"pod": r.pod, "node": r.node, "status": r.status, "message": r.message});
        }
        let mut v = json!({"pod": r.pod, "node": null, "status": "Pending"});
        match r.status {
            PodStatus::Unschedulable | PodStatus::Gated => v["message"] = json!(r.message),
            PodStatus::Waiting => {
                v["selected"] = json!(r.node.iter().collect::<Vec<_>>());
                v["message"] = json!(r.message.as_deref().unwrap_or(SIMULATED_WAIT));
            }
            _ => {
                let selected = selected(s, &r.pod);
                if selected.is_empty() {
                    v["message"] = json!(r.message);
                } else {
                    v["selected"] = json!(selected);
                }
            }
        }
        v
    }
}

/// Whether the cluster still has the record's pod unbound (kubestep's own verdict is
/// only a shadow of the cluster's scheduler's).
fn still_pending(s: &Session, r: &PodRecord) -> bool {
    s.cluster()
        .pod_info(&r.pod)
        .is_some_and(|p| p.node_name().is_empty())
}

/// Whether two versions of a pending pod differ only where kube-scheduler does not look
/// for a pending pod: its status (but the nominated node and the resource claims),
/// resourceVersion, generation, managedFields and finalizers. As upstream's
/// `isPodUpdated` strips them.
fn status_only(old: &Pod, new: &Pod) -> bool {
    let strip = |p: &Pod| {
        let mut p = p.clone();
        p.metadata.resource_version = None;
        p.metadata.generation = None;
        p.metadata.managed_fields = None;
        p.metadata.finalizers = None;
        let s = p.status.take().unwrap_or_default();
        p.status = Some(CorePodStatus {
            nominated_node_name: s.nominated_node_name.filter(|n| !n.is_empty()),
            resource_claim_statuses: s.resource_claim_statuses,
            extended_resource_claim_status: s.extended_resource_claim_status,
            ..Default::default()
        });
        p
    };
    strip(old) == strip(new)
}

/// How shadow mode labels a pod held at Permit.
pub const SIMULATED_WAIT: &str = "waiting at Permit (simulated: shadow mode writes nothing)";

/// Steps per slice of `tick_within` between looks at the time budget.
const SLICE: usize = 64;

/// Moves the session's clock to `now` (never back).
pub fn set_clock(s: &mut Session, now: Timestamp) {
    if now > s.now() {
        s.set_time(now);
    }
}

/// The best nodes of the pod's last attempt: every node sharing the top score (the one
/// node when there was nothing to score).
fn selected(s: &Session, pod: &str) -> Vec<String> {
    let Some(a) = s.history.attempts.iter().rev().find(|a| a.pod == pod) else {
        return Vec::new();
    };
    if !matches!(a.outcome.as_deref(), Some("Bound" | "Waiting" | "Deferred")) || a.node.is_none() {
        return Vec::new();
    }
    match a.cycle.as_ref().filter(|c| !c.best.is_empty()) {
        Some(c) => c.best.clone(),
        None => a.node.iter().cloned().collect(),
    }
}
