//! One pod's scheduling attempt as a state machine over every extension point: the
//! scheduling cycle (PreFilter .. SelectHost), then Reserve and Permit, then the binding
//! cycle (WaitOnPermit, PreBind, Bind, PostBind), or Unreserve on any failure after
//! Reserve — as upstream's `scheduleOne`, `schedulingCycle` and `bindingCycle` do.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::features::Gate;
use crate::framework::batch::BatchProbe;
use crate::framework::cycle::{CycleOutcome, Detail, Phase, SchedulingCycle};
use crate::framework::diagnosis::{Diagnosis, FitError, NodeToStatus};
use crate::framework::events::{
    ActionType, ClusterEvent, EventObject, EventPod, EventResource, PreCheck,
};
use crate::framework::plugin::{MAX_PERMIT_TIMEOUT, PostFilterResult};
use crate::framework::profile::{ExtensionPoint, PluginEntry};
use crate::framework::queued::QueuedPodInfo;
use crate::framework::waiting::go_duration;
use crate::framework::{Code, CycleState, Handle, PodInfo, Status};

use super::Core;
use super::history::{CycleSummary, Point, QueueCounts};
use super::world::Frozen;

/// How live shadow mode labels what its simulated Permit says (the queue pane and the
/// summary show such messages instead of a node).
pub const SIMULATED_PERMIT: &str = "simulated in shadow mode: nothing is held";

/// Where the attempt is.
#[derive(Debug, Clone)]
pub enum Stage {
    Cycle,
    Reserve(usize),
    Permit(usize, Vec<(String, Duration)>),
    WaitOnPermit,
    PreBind(usize),
    /// Parked in the PreBind plugin at this index until its wait is decided (see
    /// `pre_bind_wait.rs`).
    WaitOnPreBind(usize),
    Bind(usize),
    PostBind(usize),
    /// Unreserve plugins still to run (counting down), then the failure is handled.
    Unreserve(usize, Box<Failure>),
    Done,
}

/// Why an attempt failed and how the pod goes back to the queue.
#[derive(Debug, Clone)]
pub struct Failure {
    pub message: String,
    pub unschedulable_plugins: BTreeSet<String>,
    pub pending_plugins: BTreeSet<String>,
    /// An Error (not a rejection): the pod goes to the error backoff queue.
    pub error: bool,
    /// `status.nominatedNodeName` to set (`Some("")` clears it).
    pub nominated: Option<String>,
    pub victims: Vec<String>,
}

impl Failure {
    /// A rejection after the scheduling cycle: upstream reports it as a FitError over
    /// the one chosen node.
    pub(super) fn after_cycle(status: &Status, node: &str) -> Failure {
        if !status.is_rejected() {
            return Failure {
                message: status.message(),
                unschedulable_plugins: BTreeSet::new(),
                pending_plugins: BTreeSet::new(),
                error: true,
                nominated: Some(String::new()),
                victims: Vec::new(),
            };
        }
        let mut d = Diagnosis {
            node_to_status: NodeToStatus::default(),
            ..Default::default()
        };
        d.node_to_status.set(node, status.clone());
        d.add_plugin_status(status);
        let fit = FitError {
            num_all_nodes: 1,
            diagnosis: d.clone(),
        };
        Failure {
            message: fit.message(),
            unschedulable_plugins: d.unschedulable_plugins,
            pending_plugins: d.pending_plugins,
            error: false,
            nominated: Some(String::new()),
            victims: Vec::new(),
        }
    }
}

/// How an attempt ended.
#[derive(Debug, Clone)]
pub enum AttemptResult {
    Bound {
        node: String,
    },
    /// Held at Permit or in a PreBind plugin; the attempt is parked until the wait ends.
    Waiting {
        node: String,
    },
    Failed(Failure),
    /// The recording binds the pod (to `real_node`): kubestep only decided, on `node`
    /// (`None`: unschedulable), and left the binding to the recording.
    Deferred {
        node: Option<String>,
        real_node: String,
        /// How far the search start moved to follow the recording (see `realign.rs`).
        moved: Option<isize>,
    },
}

/// One step's worth of what happened, for history and trace.
#[derive(Debug, Clone)]
pub struct StepEvent {
    pub point: Point,
    pub plugin: Option<Cow<'static, str>>,
    pub status: Status,
    pub duration: Duration,
    /// Filter plugins: nodes rejected among those examined.
    pub rejected: Option<u32>,
    /// CycleState entries the step wrote.
    pub changed: Vec<&'static str>,
    /// The queue when the step ran.
    pub queue: QueueCounts,
}

impl StepEvent {
    /// A step at this moment (its other fields filled by struct update).
    pub(super) fn at(core: &Core) -> StepEvent {
        StepEvent {
            point: Point::PreEnqueue,
            plugin: None,
            status: Status::success(),
            duration: Duration::ZERO,
            rejected: None,
            changed: Vec::new(),
            queue: core.counts(),
        }
    }
}

pub struct Attempt {
    pub id: u64,
    /// The pod's `namespace/name`, shared by the attempt's step records.
    pub key: Arc<str>,
    pub qpi: QueuedPodInfo,
    /// Index of the pod's profile in `Core::sched.frameworks`.
    pub profile: usize,
    pub cycle: SchedulingCycle,
    pub stage: Stage,
    pub node: Option<String>,
    pub assumed: Option<Arc<PodInfo>>,
    pub result: Option<AttemptResult>,
    /// How far into `cycle.trace` has been reported.
    reported: usize,
    /// What the attempt needs to be run again exactly (see `world.rs`).
    pub frozen: Option<Frozen>,
    /// What the scheduling cycle decided, once it has.
    pub cycle_summary: Option<CycleSummary>,
    /// Steps after the scheduling cycle: point, plugin and status.
    pub post_cycle: Vec<(Point, Option<Cow<'static, str>>, Status)>,
    /// Each extension point's worst status and time so far.
    pub points: Vec<super::history::PointSummary>,
    /// Sequence number of the attempt's first step (QueueSort).
    pub first_seq: u64,
    /// The pod as the cluster stores it once bound here (packed), kept by the record
    /// instead of the whole pending pod.
    pub bound_packed: Option<Arc<PodInfo>>,
    /// Pre-bind plugins PreBindPreFlight said to skip.
    skip_pre_bind: Vec<&'static str>,
    /// Past Permit: a failure now is handleBindingCycleError's.
    binding: bool,
    /// How far the search start moved to follow the recording (see `realign.rs`).
    moved: Option<isize>,
    /// A PreBind plugin's wait, while parked in it.
    pub pre_bind_hold: Option<super::pre_bind_wait::PreBindHold>,
}

fn phase_point(p: Phase) -> Point {
    match p {
        Phase::PreFilter => Point::PreFilter,
        Phase::Filter => Point::Filter,
        Phase::PostFilter => Point::PostFilter,
        Phase::PreScore => Point::PreScore,
        Phase::Score => Point::Score,
        Phase::NormalizeScore => Point::NormalizeScore,
        Phase::SelectHost | Phase::Done => Point::SelectHost,
    }
}

impl Attempt {
    pub fn new(
        id: u64,
        qpi: QueuedPodInfo,
        profile: usize,
        start_node_index: usize,
        batch: Option<BatchProbe>,
    ) -> Attempt {
        let cycle = SchedulingCycle::new(qpi.pod_info.clone(), Detail::Decision, start_node_index)
            .with_batch(batch);
        Attempt {
            id,
            key: Arc::from(qpi.pod_info.key.as_str()),
            qpi,
            profile,
            cycle,
            stage: Stage::Cycle,
            node: None,
            assumed: None,
            result: None,
            reported: 0,
            skip_pre_bind: Vec::new(),
            binding: false,
            frozen: None,
            cycle_summary: None,
            post_cycle: Vec::new(),
            points: Vec::new(),
            first_seq: 0,
            bound_packed: None,
            moved: None,
            pre_bind_hold: None,
        }
    }

    /// Notes what a step of this attempt did: its point's summary, and (after the
    /// scheduling cycle) the step itself, for a re-run to walk.
    pub fn note_step(&mut self, e: &StepEvent) {
        use super::history::PointSummary;
        match self.points.iter_mut().find(|p| p.point == e.point) {
            Some(p) => {
                p.duration += e.duration;
                p.code = super::history::fold_point_code(
                    e.point,
                    Some(p.code),
                    e.status.code(),
                    e.plugin.is_none(),
                );
            }
            None => self.points.push(PointSummary {
                point: e.point,
                code: e.status.code(),
                duration: e.duration,
            }),
        }
        if e.point >= Point::Reserve {
            self.post_cycle
                .push((e.point, e.plugin.clone(), e.status.clone()));
        }
    }

    pub fn pod(&self) -> &Arc<PodInfo> {
        &self.qpi.pod_info
    }

    pub fn is_done(&self) -> bool {
        matches!(self.stage, Stage::Done)
    }

    /// Parked at Permit (the waiting map decides) or in a PreBind plugin (its polls do).
    pub fn is_waiting(&self) -> bool {
        matches!(self.stage, Stage::WaitOnPermit | Stage::WaitOnPreBind(_))
            && matches!(self.result, Some(AttemptResult::Waiting { .. }))
    }

    /// The extension point the next step runs.
    pub fn point(&self) -> Point {
        match &self.stage {
            Stage::Cycle => phase_point(self.cycle.phase()),
            Stage::Reserve(_) => Point::Reserve,
            Stage::Permit(..) => Point::Permit,
            Stage::WaitOnPermit => Point::WaitOnPermit,
            Stage::PreBind(_) | Stage::WaitOnPreBind(_) => Point::PreBind,
            Stage::Bind(_) => Point::Bind,
            Stage::PostBind(_) => Point::PostBind,
            Stage::Unreserve(..) => Point::Unreserve,
            Stage::Done => Point::PostBind,
        }
    }

    /// The plugin the next step runs, if the point runs plugins one by one.
    pub fn next_plugin(&self, core: &Core) -> Option<String> {
        let fwk = &core.sched.frameworks[self.profile];
        let at = |ep: ExtensionPoint, i: usize| fwk.plugins(ep).get(i).map(|e| e.name.to_string());
        match &self.stage {
            Stage::Cycle => self.cycle.next_plugin(fwk).map(str::to_string),
            Stage::Reserve(i) => at(ExtensionPoint::Reserve, *i),
            Stage::Permit(i, _) => at(ExtensionPoint::Permit, *i),
            Stage::PreBind(i) | Stage::WaitOnPreBind(i) => at(ExtensionPoint::PreBind, *i),
            Stage::Bind(i) => at(ExtensionPoint::Bind, *i),
            Stage::PostBind(i) => at(ExtensionPoint::PostBind, *i),
            Stage::Unreserve(i, _) => i
                .checked_sub(1)
                .and_then(|j| fwk.plugins(ExtensionPoint::Reserve).get(j))
                .map(|e| e.name.to_string()),
            _ => None,
        }
    }

    /// Runs one plugin (`one_plugin`) or the rest of the current extension point.
    pub fn advance(&mut self, core: &mut Core, one_plugin: bool) -> Vec<StepEvent> {
        let mut out = Vec::new();
        let start = self.point();
        loop {
            match self.stage {
                Stage::Cycle => self.cycle_step(core, &mut out, Run::from(one_plugin)),
                _ => self.advance_one(core, &mut out),
            }
            if one_plugin || self.is_done() || self.is_waiting() || self.point() != start {
                break;
            }
        }
        out
    }

    /// Runs the attempt until it ends or waits at Permit, the scheduling cycle in one go
    /// (no CycleState kept between plugins): `continue` with no breakpoints set.
    pub fn advance_to_end(&mut self, core: &mut Core) -> Vec<StepEvent> {
        let mut out = Vec::new();
        // At least one step: a resumed attempt starts out parked at WaitOnPermit.
        loop {
            match self.stage {
                Stage::Cycle => self.cycle_step(core, &mut out, Run::Cycle),
                _ => self.advance_one(core, &mut out),
            }
            if self.is_done() || self.is_waiting() {
                return out;
            }
        }
    }

    fn advance_one(&mut self, core: &mut Core, out: &mut Vec<StepEvent>) {
        match self.stage.clone() {
            Stage::Cycle => self.cycle_step(core, out, Run::Point),
            Stage::Reserve(i) => self.reserve(core, i, out),
            Stage::Permit(i, waits) => self.permit(core, i, waits, out),
            Stage::WaitOnPermit => self.wait_on_permit(core, out),
            Stage::PreBind(i) => self.pre_bind(core, i, out),
            Stage::WaitOnPreBind(i) => self.resume_pre_bind(core, i, out),
            Stage::Bind(i) => self.bind(core, i, out),
            Stage::PostBind(i) => self.post_bind(core, i, out),
            Stage::Unreserve(i, f) => self.unreserve(core, i, *f, out),
            Stage::Done => {}
        }
    }

    fn cycle_step(&mut self, core: &mut Core, out: &mut Vec<StepEvent>, run: Run) {
        // Every driver runs upstream's decision path; only a person stepping plugin by
        // plugin inside Filter makes it go column by column. The cycle runs on this
        // thread; only long Filter runs and Score passes are handed to the pool.
        {
            let fwk = &core.sched.frameworks[self.profile];
            let env = core.sched.env(fwk, &core.cluster.listers, &core.waiting);
            let cycle = &mut self.cycle;
            match run {
                Run::Plugin => cycle.step_plugin(&env),
                Run::Point => cycle.step(&env),
                Run::Cycle => {
                    while !cycle.is_done() {
                        cycle.step(&env);
                    }
                }
            }
        }
        let queue = core.counts();
        for run in &mut self.cycle.trace[self.reported..] {
            let plugin = (!run.plugin.starts_with('(')).then(|| run.plugin.clone());
            out.push(StepEvent {
                point: phase_point(run.phase),
                plugin,
                status: std::mem::take(&mut run.status),
                duration: run.duration,
                rejected: run.rejected,
                changed: std::mem::take(&mut run.changed),
                queue,
            });
        }
        self.reported = self.cycle.trace.len();
        if !self.cycle.is_done() {
            return;
        }
        let real = core.externally_bound.get(&self.pod().uid).cloned();
        let own_start = self.cycle.start_node_index;
        if let Some(real) = real.as_deref().filter(|r| !r.is_empty()) {
            self.follow_recording(core, real, out);
        }
        if let Some(next) = self.cycle.next_start_node_index {
            core.sched.next_start_node_index =
                core.sched.next_start_after(&self.cycle, own_start, next);
        }
        self.cycle_summary = Some(summarize(&self.cycle, core.sched.snapshot()));
        if let Some(real) = real {
            // The batch follows the node the pod is assumed on: the recorded one.
            let went = (!real.is_empty() && self.cycle.selected_node().is_some()).then_some(&*real);
            core.sched
                .store_schedule_results(self.profile, &mut self.cycle, went);
            self.defer_to_recording(core, &real, out);
            return;
        }
        let chosen = self.cycle.selected_node().map(str::to_string);
        core.sched
            .store_schedule_results(self.profile, &mut self.cycle, chosen.as_deref());
        // PostFilter's writes (DynamicResources deallocating a claim). Upstream fails the
        // attempt when such a write fails; here the actuator reports it.
        let _ = core.carry_out_writes(&mut self.cycle.state);
        match self.cycle.outcome.clone() {
            Some(CycleOutcome::Selected { node, .. }) => {
                // Packed as the cluster keeps bound pods: the binding stores this very
                // PodInfo, and history keeps what the snapshot held.
                let assumed = Arc::new(self.pod().bound_to(&node).packed());
                core.sched.assume_pod(assumed.clone());
                self.assumed = Some(assumed);
                self.node = Some(node);
                self.stage = Stage::Reserve(0);
            }
            Some(CycleOutcome::Unschedulable {
                fit_error,
                post_filter,
                ..
            }) => {
                let (nominated, victims) = nomination(post_filter.as_ref());
                let d = &fit_error.diagnosis;
                self.fail(
                    core,
                    Failure {
                        message: fit_error.message(),
                        unschedulable_plugins: d.unschedulable_plugins.clone(),
                        pending_plugins: d.pending_plugins.clone(),
                        error: false,
                        nominated,
                        victims,
                    },
                );
            }
            Some(CycleOutcome::Error(s)) => {
                let rejected = s.is_rejected();
                self.fail(
                    core,
                    Failure {
                        message: s.message(),
                        unschedulable_plugins: BTreeSet::new(),
                        pending_plugins: BTreeSet::new(),
                        error: !rejected,
                        nominated: Some(String::new()),
                        victims: Vec::new(),
                    },
                );
            }
            None => {}
        }
    }

    /// The recording binds this pod to `real`, which kubestep's sampled search missed:
    /// when a nearby search start explains it, the cycle from there replaces this one
    /// (see `realign.rs`), and a step says so.
    fn follow_recording(&mut self, core: &mut Core, real: &str, out: &mut Vec<StepEvent>) {
        let started = std::time::Instant::now();
        let parallelism = usize::try_from(core.sched.config.parallelism).unwrap_or(1);
        let fwk = &core.sched.frameworks[self.profile];
        let env = core.sched.env(fwk, &core.cluster.listers, &core.waiting);
        if let Some(hint) = self.cycle.hinted_node()
            && hint != real
            && !self.cycle.best_nodes(env.snapshot).contains(&real)
        {
            let total = super::realign::score_from(&self.cycle, &env, real);
            let head = self.cycle.batch.as_ref().and_then(|b| b.stored.as_ref());
            let head = head.map_or(0, |s| s.head_total);
            let msg = match total {
                Some(t) => format!(
                    "the recording placed the pod on {real}, which kubestep's batch did not rank: a search that examines it scores it {t}, {} the hint's {head}",
                    against(t, head)
                ),
                None => format!(
                    "the recording placed the pod on {real}, which kubestep's batch did not rank and a search that examines it does not score"
                ),
            };

            if let (Some(t), Some(b)) = (total, self.cycle.batch.as_mut()) {
                b.recorded = Some((real.to_string(), t));
            }
            out.push(StepEvent {
                point: Point::SelectHost,
                plugin: None,
                status: Status::new(Code::Success, msg),
                duration: started.elapsed(),
                rejected: None,
                changed: Vec::new(),
                queue: core.counts(),
            });
            return;
        }
        let found = super::realign::realign(&self.cycle, &env, real, parallelism);

        let Some(r) = found else { return };
        out.push(StepEvent {
            point: Point::SelectHost,
            plugin: None,
            status: Status::new(Code::Success, r.message(real)),
            duration: started.elapsed(),
            rejected: None,
            changed: Vec::new(),
            queue: core.counts(),
        });
        if let Some(f) = self.frozen.as_mut() {
            f.start_node_index = r.cycle.start_node_index;
        }
        self.cycle = r.cycle;
        self.reported = self.cycle.trace.len();
        self.moved = Some(r.shift);
        core.sched.followed += 1;
    }

    /// The recording binds this pod: kubestep's decision is compared with the recorded
    /// one and the attempt ends there. Reserve and Permit do not run, because what they
    /// hold (assumed volumes, a gang member's count, a place in the waiting map) would
    /// only be released by a binding cycle the pod never goes through. When kubestep
    /// finds a node, the pod is assumed on the recorded node until the recorded binding
    /// (as kube-scheduler's cache held it); when it finds none, the pod stays queued.
    fn defer_to_recording(&mut self, core: &mut Core, real: &str, out: &mut Vec<StepEvent>) {
        let chosen = match &self.cycle.outcome {
            Some(CycleOutcome::Selected { node, .. }) => Some(node.clone()),
            _ => None,
        };
        let uid = self.pod().uid.clone();
        let fwk = &core.sched.frameworks[self.profile];
        let env = core.sched.env(fwk, &core.cluster.listers, &core.waiting);
        // The pod's latest attempt before the recorded binding is the one compared: the
        // cluster it saw is the nearest to the one the real scheduler decided on.
        let logged = core
            .sched
            .scheduler_log
            .as_ref()
            .and_then(|l| l.evaluated.get(&self.pod().key).copied());
        let notes = super::divergence::Notes {
            infeasible: &|| kubestep_bound_on(core, env.snapshot, real),
            not_examined: &|| scored_outside(&self.cycle, &env, real),
        };
        match super::divergence::compare(&self.cycle, &env, real, logged, &notes) {
            Some(d) => {
                core.pending_divergences.insert(uid.clone(), d);
            }
            None => {
                core.pending_divergences.remove(&uid);
            }
        }
        // An empty real node is live shadow mode: the cluster's scheduler has not bound
        // the pod yet, and kubestep never will.
        let binder = binder_note(real, self.moved);
        let preempt_on = match &self.cycle.outcome {
            Some(CycleOutcome::Unschedulable {
                post_filter: Some(r),
                ..
            }) if r.override_nomination && !r.nominated_node_name.is_empty() => {
                Some(r.nominated_node_name.as_str())
            }
            _ => None,
        };
        let msg = match (&chosen, preempt_on) {
            (Some(n), _) => format!("{binder}; kubestep chose {n}"),
            (None, Some(n)) => {
                format!("{binder}; kubestep found it unschedulable and would preempt on {n}")
            }
            (None, None) => format!("{binder}; kubestep found it unschedulable"),
        };
        out.push(StepEvent {
            point: Point::Reserve,
            plugin: None,
            status: Status::new(Code::Skip, msg.clone()),
            duration: Duration::ZERO,
            ..StepEvent::at(core)
        });
        let pod = self.pod().clone();
        match &chosen {
            // kube-scheduler assumed the pod on the node it chose at the end of its
            // cycle, before the binding was written: from this moment the next pods see
            // it there (the recorded binding later confirms it).
            Some(_) if !real.is_empty() => {
                core.queue.done(&uid);
                core.assume_until_recorded_binding(&pod, real);
                self.reserve_until_recorded(core, real);
            }
            // Still pending for the real scheduler too: retried on cluster events, as a
            // pending pod is, until it fits or the recording binds it.
            _ => self.keep_in_queue(core),
        }
        if real.is_empty() {
            // Live shadow mode: the real scheduler has not decided yet, so the record
            // says what kubestep would do (best nodes in the history, or why not).
            let why = match &self.cycle.outcome {
                Some(CycleOutcome::Unschedulable { fit_error, .. }) => Some(fit_error.message()),
                _ => None,
            };
            let simulated = chosen
                .as_deref()
                .and_then(|node| self.simulate_permit(core, node, out));
            if let Some((waits, note)) = simulated {
                let (status, node) = if waits {
                    (super::PodStatus::Waiting, chosen.as_deref())
                } else {
                    (super::PodStatus::Unschedulable, None)
                };
                core.record(&pod, status, node, Some(note));
                self.stage = Stage::Done;
                self.result = Some(AttemptResult::Deferred {
                    node: chosen,
                    real_node: real.to_string(),
                    moved: self.moved,
                });
                return;
            }
            let status = if why.is_some() {
                super::PodStatus::Unschedulable
            } else {
                super::PodStatus::Pending
            };
            core.record(&pod, status, None, why);
        } else {
            core.record(&pod, super::PodStatus::Pending, None, Some(msg));
        }
        self.stage = Stage::Done;
        self.result = Some(AttemptResult::Deferred {
            node: chosen,
            real_node: real.to_string(),
            moved: self.moved,
        });
    }

    /// The real scheduler reserved the pod on `real` at the end of its cycle: the Reserve
    /// plugins whose hold ends when the cluster shows their work (DynamicResources'
    /// allocations in flight) hold for it there until the recording shows the writes, so
    /// the next pods do not get the devices it took. The real node's Filter results are
    /// computed first when kubestep's search did not examine it.
    fn reserve_until_recorded(&mut self, core: &mut Core, real: &str) {
        let fwk = &core.sched.frameworks[self.profile];
        let holders: Vec<_> = fwk
            .plugins(ExtensionPoint::Reserve)
            .iter()
            .filter(|e| {
                e.plugin.as_reserve().is_some_and(|p| {
                    p.holds_until_observed() && !p.nothing_to_reserve(&self.cycle.state)
                })
            })
            .map(|e| e.plugin.clone())
            .collect();
        if holders.is_empty() {
            return;
        }
        {
            let env = core.sched.env(fwk, &core.cluster.listers, &core.waiting);
            if let Some(pos) = env.snapshot.position(real) {
                // Filter results for the real node (the plugins keep what they found).
                let _ = self.cycle.filter_row(&env, pos);
            }
        }
        let h = core.handle(self.profile);
        let pod = self.pod().clone();
        for p in holders {
            if let Some(r) = p.as_reserve() {
                // Best effort: the recording's writes, not this hold, are the truth.
                let _ = r.reserve(&h, &mut self.cycle.state, &pod, real);
            }
        }
    }

    /// A pod the cluster's scheduler has not bound yet (live shadow mode), or one that
    /// kubestep found unschedulable and the recording binds later: the pod stays in the
    /// queue as kube-scheduler keeps a pending pod, so that cluster events run it again
    /// and its answer follows the cluster. An
    /// unschedulable pod waits for its rejector plugins' hints (with backoff and the
    /// leftover flush); one kubestep would bind waits for any event, since the cluster's
    /// scheduler, not kubestep, binds it.
    fn keep_in_queue(&self, core: &mut Core) {
        let now = core.clock.now();
        let h = super::core_state::handle_of(
            &core.sched,
            &core.cluster,
            &core.waiting,
            now,
            self.profile,
        );
        let fwk = &core.sched.frameworks[self.profile];
        let qpi = self.qpi.clone();
        match &self.cycle.outcome {
            Some(CycleOutcome::Unschedulable { fit_error, .. }) => {
                let d = &fit_error.diagnosis;
                core.queue.add_unschedulable_if_not_present(
                    &h,
                    fwk,
                    qpi,
                    d.unschedulable_plugins.clone(),
                    d.pending_plugins.clone(),
                    false,
                    fit_error.message(),
                    now,
                );
            }
            Some(CycleOutcome::Error(s)) => {
                core.queue.add_unschedulable_if_not_present(
                    &h,
                    fwk,
                    qpi,
                    BTreeSet::new(),
                    BTreeSet::new(),
                    !s.is_rejected(),
                    s.message(),
                    now,
                );
            }
            _ => core.queue.park_awaiting_binding(&h, fwk, qpi, now),
        }
    }

    /// Live shadow mode: what Permit would say if kubestep scheduled the pod, computed on
    /// a copy of CycleState and holding nothing (no Reserve, no waiting-map entry). Steps
    /// are labelled simulated. When a plugin would make the pod wait (true) or reject it
    /// (false), returns that with the pod's note.
    fn simulate_permit(
        &self,
        core: &mut Core,
        node: &str,
        out: &mut Vec<StepEvent>,
    ) -> Option<(bool, String)> {
        let mut state = self.cycle.state.clone();
        let h = Handle {
            simulation: true,
            ..core.handle(self.profile)
        };
        let mut note = None;
        for e in core.sched.frameworks[self.profile].plugins(ExtensionPoint::Permit) {
            let Some(p) = e.plugin.as_permit() else {
                continue;
            };
            let started = std::time::Instant::now();
            let (s, timeout) = p.permit(&h, &mut state, self.pod(), node);
            let s = plugin_status(s, "Permit", e.name, Some(Code::Wait));
            let (code, text) = if s.is_wait() {
                let wait = go_duration(timeout.min(MAX_PERMIT_TIMEOUT));
                (
                    Code::Wait,
                    format!(
                        "would wait at Permit on {node} (up to {wait}): {}",
                        s.message()
                    ),
                )
            } else if s.is_success() {
                (Code::Success, String::new())
            } else {
                (
                    s.code(),
                    format!("Permit would reject it on {node}: {}", s.message()),
                )
            };
            let label = SIMULATED_PERMIT;
            out.push(StepEvent {
                point: Point::Permit,
                plugin: Some(e.name.into()),
                status: if text.is_empty() {
                    Status::new(code, label)
                } else {
                    Status::new(code, format!("{text} ({label})"))
                },
                duration: started.elapsed(),
                ..StepEvent::at(core)
            });
            if !s.is_success() && !s.is_wait() {
                // A rejection ends Permit whatever others said before it.
                return Some((false, format!("{text} ({label})")));
            }
            if !text.is_empty() && note.is_none() {
                note = Some((true, format!("{text} ({label})")));
            }
        }
        note
    }

    pub(super) fn node(&self) -> String {
        self.node.clone().unwrap_or_default()
    }

    pub(super) fn run_plugin<T>(core: &mut Core, f: impl FnOnce(&mut Core) -> T) -> (T, Duration) {
        let started = Instant::now();
        let r = f(core);
        (r, started.elapsed())
    }

    /// The `i`-th plugin of an extension point in this attempt's profile (cloned: running
    /// it borrows `core` mutably).
    pub(super) fn entry(&self, core: &Core, ep: ExtensionPoint, i: usize) -> Option<PluginEntry> {
        core.sched.frameworks[self.profile]
            .plugins(ep)
            .get(i)
            .cloned()
    }

    fn reserve(&mut self, core: &mut Core, i: usize, out: &mut Vec<StepEvent>) {
        let entry = self.entry(core, ExtensionPoint::Reserve, i);
        let Some(e) = entry.as_ref() else {
            self.stage = Stage::Permit(0, Vec::new());
            return;
        };
        if e.plugin
            .as_reserve()
            .is_some_and(|p| p.nothing_to_reserve(&self.cycle.state))
        {
            self.stage = Stage::Reserve(i + 1);
            return;
        }
        let plugin = e.plugin.clone();
        self.run_or_unreserve(
            core,
            (Point::Reserve, e.name),
            |h, state, pod, node| match plugin.as_reserve() {
                Some(p) => p.reserve(h, state, pod, node),
                None => Status::success(),
            },
            Stage::Reserve(i + 1),
            out,
        );
    }

    /// One Reserve or PreBind plugin: its step, then `next`, or Unreserve when it failed
    /// (a failure at either point undoes the reservation). A PreBind plugin's Wait is
    /// returned (its message), the stage left for the wait to set.
    fn run_or_unreserve(
        &mut self,
        core: &mut Core,
        (point, plugin): (Point, &'static str),
        call: impl FnOnce(&Handle, &mut CycleState, &PodInfo, &str) -> Status,
        next: Stage,
        out: &mut Vec<StepEvent>,
    ) -> Option<String> {
        let node = self.node();
        let pod = self.pod().clone();
        let profile = self.profile;
        let state = &mut self.cycle.state;
        let (s, d) = Self::run_plugin(core, |core| {
            let s = call(&core.handle(profile), state, &pod, &node);
            // What the plugin wrote (PreBind: a claim's allocation) happens now; a failed
            // write fails the plugin, as upstream's API call would.
            match core.carry_out_writes(state) {
                Err(e) if s.is_success() => Status::error(e),
                _ => s,
            }
        });
        let wait = (point == Point::PreBind).then_some(Code::Wait);
        let s = plugin_status(s, point.as_str(), plugin, wait);
        out.push(StepEvent {
            point,
            plugin: Some(plugin.into()),
            status: s.clone(),
            duration: d,
            ..StepEvent::at(core)
        });
        if s.is_wait() {
            return Some(s.message());
        }
        if s.is_success() {
            self.stage = next;
        } else {
            self.start_unreserve(core, Failure::after_cycle(&s, &node));
        }
        None
    }

    fn permit(
        &mut self,
        core: &mut Core,
        i: usize,
        mut waits: Vec<(String, Duration)>,
        out: &mut Vec<StepEvent>,
    ) {
        let entry = self.entry(core, ExtensionPoint::Permit, i);
        let node = self.node();
        let Some(e) = entry.as_ref() else {
            if waits.is_empty() {
                self.stage = Stage::WaitOnPermit;
                self.start_binding_cycle(core, false, out);
            } else {
                // Shown before Permit's verdict, so the attempt's last step stays the wait.
                self.start_binding_cycle(core, true, out);
                let now = core.clock.now();
                core.waiting.add(self.pod().clone(), &node, &waits, now);
                let msg = format!(
                    "one or more plugins asked to wait and no plugin rejected pod {:?}",
                    self.pod().name
                );
                out.push(StepEvent {
                    point: Point::Permit,
                    plugin: None,
                    status: Status::new(Code::Wait, msg),
                    duration: Duration::ZERO,
                    ..StepEvent::at(core)
                });
                self.stage = Stage::WaitOnPermit;
                self.result = Some(AttemptResult::Waiting { node });
            }
            return;
        };
        let pod = self.pod().clone();
        let profile = self.profile;
        let state = &mut self.cycle.state;
        let ((s, timeout), d) = Self::run_plugin(core, |core| {
            let h = core.handle(profile);
            match e.plugin.as_permit() {
                Some(p) => p.permit(&h, state, &pod, &node),
                None => (Status::success(), Duration::ZERO),
            }
        });
        let s = plugin_status(s, "Permit", e.name, Some(Code::Wait));
        out.push(StepEvent {
            point: Point::Permit,
            plugin: Some(e.name.into()),
            status: s.clone(),
            duration: d,
            ..StepEvent::at(core)
        });
        if s.is_wait() {
            waits.push((e.name.to_string(), timeout.min(MAX_PERMIT_TIMEOUT)));
            self.stage = Stage::Permit(i + 1, waits);
        } else if s.is_success() {
            self.stage = Stage::Permit(i + 1, waits);
        } else {
            self.start_unreserve(core, Failure::after_cycle(&s, &node));
        }
    }

    fn wait_on_permit(&mut self, core: &mut Core, out: &mut Vec<StepEvent>) {
        let uid = self.pod().uid.clone();
        let node = self.node();
        if matches!(self.result, Some(AttemptResult::Waiting { .. })) {
            let Some(wp) = core.waiting.get(&uid) else {
                // Removed from the map without an outcome: treat as rejected.
                self.result = None;
                let s = Status::unschedulable("removed").with_plugin("");
                self.start_unreserve(core, Failure::after_cycle(&s, &node));
                return;
            };
            let Some(outcome) = wp.outcome else { return };
            core.waiting.remove(&uid);
            self.result = None;
            out.push(StepEvent {
                point: Point::WaitOnPermit,
                plugin: (!outcome.plugin().is_empty()).then(|| outcome.plugin().to_string().into()),
                status: outcome.clone(),
                duration: Duration::ZERO,
                ..StepEvent::at(core)
            });
            if !outcome.is_success() {
                let s = if outcome.is_rejected() {
                    outcome
                } else {
                    Status::error(format!("waiting on permit for pod: {}", outcome.message()))
                };
                self.start_unreserve(core, Failure::after_cycle(&s, &node));
                return;
            }
        } else {
            out.push(StepEvent {
                point: Point::WaitOnPermit,
                plugin: None,
                status: Status::success(),
                duration: Duration::ZERO,
                ..StepEvent::at(core)
            });
        }
        // After WaitOnPermit the pod is no longer in flight for the queue.
        core.queue.done(&uid);
        self.stage = Stage::PreBind(0);
    }

    /// The binding cycle's start, with NominatedNodeNameForExpectation (on from 1.35):
    /// PreBind's pre-flight runs, and a pod that will wait at Permit or has PreBind work is
    /// nominated to its node, so that others (an autoscaler) see where it is about to go.
    /// Without the gate nothing happens here.
    fn start_binding_cycle(&mut self, core: &mut Core, waits: bool, out: &mut Vec<StepEvent>) {
        self.binding = true;
        if !core
            .sched
            .config
            .features
            .enabled(Gate::NominatedNodeNameForExpectation)
        {
            return;
        }
        self.pre_bind_preflight(core);
        let pre_bind: Vec<&str> = core.sched.frameworks[self.profile]
            .plugins(ExtensionPoint::PreBind)
            .iter()
            .map(|e| e.name)
            .filter(|n| !self.skip_pre_bind.contains(n))
            .collect();
        let why = match (waits, pre_bind.is_empty()) {
            (true, _) => "the pod waits at Permit".to_string(),
            (false, false) => format!("PreBind has work: {}", pre_bind.join(", ")),
            (false, true) => return,
        };
        let node = self.node();
        let msg = format!(
            "nominatedNodeName set to {node} before binding (NominatedNodeNameForExpectation: {why})"
        );
        let status = match core.actuator.nominate_for_binding(self.pod(), &node) {
            Ok(()) => Status::new(Code::Success, msg),
            // Upstream logs the failed write and binds anyway.
            Err(e) => Status::new(Code::Success, format!("{msg}; the write failed: {e}")),
        };
        out.push(StepEvent {
            point: if waits {
                Point::Permit
            } else {
                Point::WaitOnPermit
            },
            plugin: None,
            status,
            duration: Duration::ZERO,
            ..StepEvent::at(core)
        });
    }

    fn pre_bind_preflight(&mut self, core: &mut Core) {
        let plugins = core.sched.frameworks[self.profile]
            .plugins(ExtensionPoint::PreBind)
            .to_vec();
        let node = self.node();
        let h = core.handle(self.profile);
        self.skip_pre_bind = plugins
            .iter()
            .filter(|e| {
                e.plugin.as_pre_bind().is_some_and(|p| {
                    p.pre_bind_pre_flight(&h, &self.cycle.state, self.pod(), &node)
                        .is_skip()
                })
            })
            .map(|e| e.name)
            .collect();
        self.cycle
            .state
            .set_skip_pre_bind_plugins(self.skip_pre_bind.clone());
    }

    fn pre_bind(&mut self, core: &mut Core, i: usize, out: &mut Vec<StepEvent>) {
        let entry = self.entry(core, ExtensionPoint::PreBind, i);
        let Some(e) = entry.as_ref() else {
            self.stage = Stage::Bind(0);
            return;
        };
        let silent = e
            .plugin
            .as_pre_bind()
            .is_some_and(|p| p.nothing_to_bind(&self.cycle.state));
        // Nothing to bind is what the pre-flight would skip; without the pre-flight (its
        // gate off) the plugin returns at once all the same.
        if silent {
            self.stage = Stage::PreBind(i + 1);
            return;
        }
        if self.skip_pre_bind.contains(&e.name) {
            out.push(StepEvent {
                point: Point::PreBind,
                plugin: Some(e.name.into()),
                status: Status::skip(),
                duration: Duration::ZERO,
                ..StepEvent::at(core)
            });
            self.stage = Stage::PreBind(i + 1);
            return;
        }
        let plugin = e.plugin.clone();
        let wait = self.run_or_unreserve(
            core,
            (Point::PreBind, e.name),
            |h, state, pod, node| match plugin.as_pre_bind() {
                Some(p) => p.pre_bind(h, state, pod, node),
                None => Status::success(),
            },
            Stage::PreBind(i + 1),
            out,
        );
        if let Some(w) = wait {
            self.begin_pre_bind_wait(core, (i, w), out);
        }
    }

    fn bind(&mut self, core: &mut Core, i: usize, out: &mut Vec<StepEvent>) {
        let plugins = core.sched.frameworks[self.profile]
            .plugins(ExtensionPoint::Bind)
            .to_vec();
        let node = self.node();
        if i == 0 {
            // Binder extenders come before the profile's Bind plugins (`extendersBinding`).
            let started = Instant::now();
            if let Some(r) = core.sched.extenders_binding(self.pod(), &node) {
                let name = core
                    .sched
                    .extenders
                    .iter()
                    .find(|e| e.is_binder())
                    .map(|e| e.name().to_string());
                let s = match r.map_err(|e| e.to_string()).and_then(|()| {
                    core.bind_pod(
                        &self.pod().clone(),
                        self.assumed.clone(),
                        &node,
                        &self.cycle.state,
                    )
                    .map_err(|e| e.scheduler_message())
                }) {
                    Ok(()) => Status::success(),
                    Err(e) => Status::error(e),
                };
                out.push(StepEvent {
                    point: Point::Bind,
                    plugin: name.map(Into::into),
                    status: s.clone(),
                    duration: started.elapsed(),
                    ..StepEvent::at(core)
                });
                if s.is_success() {
                    self.bound_packed = core.bound_packed.take();
                    self.stage = Stage::PostBind(0);
                } else {
                    self.start_unreserve(core, Failure::after_cycle(&s, &node));
                }
                return;
            }
        }
        let Some(e) = plugins.get(i) else {
            // Every bind plugin skipped the pod: upstream treats that as a failure.
            let s = Status::code_only(Code::Skip);
            out.push(StepEvent {
                point: Point::Bind,
                plugin: None,
                status: s.clone(),
                duration: Duration::ZERO,
                ..StepEvent::at(core)
            });
            self.start_unreserve(
                core,
                Failure::after_cycle(&Status::error("no bind plugin bound the pod"), &node),
            );
            return;
        };
        let pod = self.pod().clone();
        let assumed = self.assumed.clone();
        let profile = self.profile;
        let state = &mut self.cycle.state;
        let (s, d) = Self::run_plugin(core, |core| {
            let h = core.handle(profile);
            let s = match e.plugin.as_bind() {
                Some(p) => p.bind(&h, state, &pod, &node),
                None => Status::skip(),
            };
            if !s.is_success() {
                return s;
            }
            // The plugin took the pod: make the binding happen (in the replayed cluster,
            // or through the API server in live mode).
            match core.bind_pod(&pod, assumed, &node, state) {
                Ok(()) => s,
                Err(e) => Status::error(e.scheduler_message()),
            }
        });
        let s = plugin_status(s, "Bind", e.name, Some(Code::Skip));
        out.push(StepEvent {
            point: Point::Bind,
            plugin: Some(e.name.into()),
            status: s.clone(),
            duration: d,
            ..StepEvent::at(core)
        });
        if s.is_skip() {
            self.stage = Stage::Bind(i + 1);
        } else if s.is_success() {
            self.bound_packed = core.bound_packed.take();
            self.stage = Stage::PostBind(0);
        } else {
            self.start_unreserve(core, Failure::after_cycle(&s, &node));
        }
    }

    fn post_bind(&mut self, core: &mut Core, i: usize, out: &mut Vec<StepEvent>) {
        let entry = self.entry(core, ExtensionPoint::PostBind, i);
        let node = self.node();
        let Some(e) = entry.as_ref() else {
            self.stage = Stage::Done;
            self.result = Some(AttemptResult::Bound { node: node.clone() });
            core.finish_bound(self.pod(), &node);
            return;
        };
        let pod = self.pod().clone();
        let profile = self.profile;
        let state = &mut self.cycle.state;
        let (_, d) = Self::run_plugin(core, |core| {
            let h = core.handle(profile);
            if let Some(p) = e.plugin.as_post_bind() {
                p.post_bind(&h, state, &pod, &node);
            }
        });
        out.push(StepEvent {
            point: Point::PostBind,
            plugin: Some(e.name.into()),
            status: Status::success(),
            duration: d,
            ..StepEvent::at(core)
        });
        self.stage = Stage::PostBind(i + 1);
    }

    pub(super) fn start_unreserve(&mut self, core: &mut Core, f: Failure) {
        let n = core.sched.frameworks[self.profile]
            .plugins(ExtensionPoint::Reserve)
            .len();
        self.stage = Stage::Unreserve(n, Box::new(f));
    }

    /// Unreserve runs every Reserve plugin in reverse order (idempotent upstream, so also
    /// those that never reserved), then the assumed pod is forgotten.
    fn unreserve(&mut self, core: &mut Core, i: usize, f: Failure, out: &mut Vec<StepEvent>) {
        // Reserve plugins unreserve in reverse; past the first, forget the assumed pod.
        let Some(e) = i
            .checked_sub(1)
            .and_then(|j| self.entry(core, ExtensionPoint::Reserve, j))
        else {
            let forgotten = self.assumed.take();
            if let Some(a) = &forgotten {
                core.sched.cache.forget_pod(a);
            }
            core.waiting.remove(&self.pod().uid);
            self.fail_binding_cycle(core, f, forgotten);
            return;
        };
        let e = &e;
        if e.plugin
            .as_reserve()
            .is_some_and(|p| p.nothing_to_reserve(&self.cycle.state))
        {
            self.stage = Stage::Unreserve(i - 1, Box::new(f));
            return;
        }
        let node = self.node();
        let pod = self.pod().clone();
        let profile = self.profile;
        let state = &mut self.cycle.state;
        let (_, d) = Self::run_plugin(core, |core| {
            if let Some(p) = e.plugin.as_reserve() {
                p.unreserve(&core.handle(profile), state, &pod, &node);
            }
            // Upstream logs a failed Unreserve write; the actuator reports it.
            let _ = core.carry_out_writes(state);
        });
        out.push(StepEvent {
            point: Point::Unreserve,
            plugin: Some(e.name.into()),
            status: Status::success(),
            duration: d,
            ..StepEvent::at(core)
        });
        self.stage = Stage::Unreserve(i - 1, Box::new(f));
    }

    /// handleBindingCycleError: the forgotten assumed pod freed its place, which is an
    /// AssignedPodDelete for the queue. A rejected pod is requeued first and left out of
    /// the move (it stays unschedulable); after an error the move comes first, so the pod
    /// itself records the event while in flight.
    fn fail_binding_cycle(&mut self, core: &mut Core, f: Failure, forgotten: Option<Arc<PodInfo>>) {
        let Some(a) = forgotten.filter(|_| self.binding) else {
            return self.fail(core, f);
        };
        let now = core.clock.now();
        let event = ClusterEvent::new(
            EventResource::AssignedPod,
            ActionType::DELETE,
            Some(EventObject::Pod(EventPod::of(&a))),
            None,
        );
        if f.error {
            core.broadcast(&event, now);
            self.fail(core, f);
        } else {
            self.fail(core, f);
            core.broadcast(
                &event.with_pre_check(PreCheck::ExcludePod(a.uid.clone())),
                now,
            );
        }
    }

    fn fail(&mut self, core: &mut Core, f: Failure) {
        self.stage = Stage::Done;
        core.handle_failure(&self.qpi, &f);
        self.result = Some(AttemptResult::Failed(f));
    }
}

/// How far a step of the scheduling cycle goes.
#[derive(Clone, Copy)]
enum Run {
    Plugin,
    Point,
    Cycle,
}

impl Run {
    fn from(one_plugin: bool) -> Run {
        if one_plugin { Run::Plugin } else { Run::Point }
    }
}

/// What the cycle decided, to check a re-run against.
pub fn summarize(cycle: &SchedulingCycle, snapshot: &crate::framework::Snapshot) -> CycleSummary {
    let mut s = summarize_outcome(cycle);
    s.steps = cycle.trace.len();
    s.hint = cycle.hinted_node().map(str::to_string);
    s.batch = cycle
        .batch
        .as_ref()
        .filter(|b| b.stored.is_some())
        .map(|b| b.describe());
    if s.selected.is_some() {
        s.best = cycle
            .best_nodes(snapshot)
            .iter()
            .map(|n| n.to_string())
            .collect();
        s.best.sort();
    }
    s
}

fn summarize_outcome(cycle: &SchedulingCycle) -> CycleSummary {
    match &cycle.outcome {
        Some(CycleOutcome::Selected {
            node,
            evaluated_nodes,
            feasible_nodes,
        }) => CycleSummary {
            selected: Some(node.clone()),
            feasible: *feasible_nodes,
            evaluated: *evaluated_nodes,
            message: None,
            ..Default::default()
        },
        Some(CycleOutcome::Unschedulable { fit_error, .. }) => CycleSummary {
            selected: None,
            feasible: 0,
            evaluated: fit_error.diagnosis.node_to_status.len(),
            message: Some(fit_error.message()),
            ..Default::default()
        },
        Some(CycleOutcome::Error(s)) => CycleSummary {
            message: Some(s.message()),
            ..Default::default()
        },
        None => CycleSummary::default(),
    }
}

/// A plugin's answer as the step records it: success and rejections as returned (and
/// `also`, e.g. Wait at Permit, Skip at Bind); anything else is an Error naming the
/// point and plugin, as upstream wraps it.
pub(super) fn plugin_status(
    s: Status,
    point: &str,
    plugin: &'static str,
    also: Option<Code>,
) -> Status {
    if s.is_success() || s.is_rejected() || also == Some(s.code()) {
        s.with_plugin(plugin)
    } else {
        Status::error(format!(
            "running {point} plugin {plugin:?}: {}",
            s.message()
        ))
        .with_plugin(plugin)
    }
}

/// Who binds a pod kubestep defers: the recording (to `real`), or in live shadow mode
/// (`real` empty) the cluster's scheduler.
/// How total `t` stands against `other`, in the notes' words.
fn against(t: i64, other: i64) -> &'static str {
    match t.cmp(&other) {
        std::cmp::Ordering::Equal => "equal to",
        std::cmp::Ordering::Less => "below",
        std::cmp::Ordering::Greater => "above",
    }
}

/// For a divergence where kubestep's sampled search did not examine the real node: what
/// the real node scores in a search that examines it, against kubestep's best.
fn scored_outside(
    cycle: &SchedulingCycle,
    env: &crate::framework::cycle::CycleEnv,
    real: &str,
) -> String {
    let best = cycle
        .scores
        .as_ref()
        .and_then(|t| t.totals.iter().max().copied());
    match (super::realign::score_from(cycle, env, real), best) {
        (Some(t), Some(b)) => format!(
            "; a search that examines {real} scores it {t}, {} kubestep's best {b}",
            against(t, b)
        ),
        _ => String::new(),
    }
}

/// For a divergence where the real node was infeasible: the pods kubestep bound there
/// itself (the recording binds them nowhere), which hold what the real scheduler still had
/// free; empty when there are none. Only the node's own pods are looked at.
fn kubestep_bound_on(core: &Core, snapshot: &crate::framework::Snapshot, real: &str) -> String {
    let Some(node) = snapshot.get(real) else {
        return String::new();
    };
    let own: Vec<&str> = node
        .pods
        .iter()
        .filter(|p| !core.externally_bound.contains_key(&p.uid))
        .filter_map(|p| core.pods.get(&p.key))
        .filter(|r| {
            r.status == super::PodStatus::Bound && r.node.as_deref() == Some(real) && r.attempts > 0
        })
        .map(|r| r.pod.as_str())
        .collect();
    if own.is_empty() {
        return String::new();
    }
    format!(
        "; kubestep itself bound {} there, which the recording does not bind (the real scheduler had not placed them: queue timing)",
        own.join(", ")
    )
}

pub(super) fn binder_note(real: &str, moved: Option<isize>) -> String {
    match moved {
        _ if real.is_empty() => "shadow mode: the cluster's scheduler binds this pod".to_string(),
        Some(d) => format!(
            "the recording binds this pod to {real} (kubestep's search start moved {d:+} to follow it)"
        ),
        None => format!("the recording binds this pod to {real}"),
    }
}

/// Preemption's nomination from an unschedulable cycle's PostFilter (`Some("")` clears
/// the pod's nomination) and the victims it would delete.
pub(super) fn nomination(post_filter: Option<&PostFilterResult>) -> (Option<String>, Vec<String>) {
    match post_filter {
        Some(r) if r.override_nomination => {
            (Some(r.nominated_node_name.clone()), r.victims.clone())
        }
        _ => (Some(String::new()), Vec::new()),
    }
}
