//! The scheduling cycle as a state machine that can be advanced one extension point, or
//! one plugin, at a time: PreFilter > Filter > PostFilter | PreScore > Score >
//! NormalizeScore > SelectHost. Running it to the end is stepping until it is done, so
//! the debugger and the fast path share one implementation.

mod extenders;
mod filter;
mod score;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

pub use extenders::{ExtenderScores, MAX_CONCURRENT_CALLS};
pub use filter::{FilterCell, FilterMatrix, SearchOrder, chunk_size_for};
pub use score::{PluginScores, ScoreColumn, ScoreTable};

use super::batch::{BatchDecision, BatchProbe};
use super::cycle_state::CycleState;
use super::diagnosis::{Diagnosis, FitError};
use super::listers::Listers;
use super::nominator::Nominator;
use super::plugin::{Handle, PostFilterResult};
use super::profile::{ExtensionPoint, Framework};
use super::runtime::PreFilterAccumulator;
use super::snapshot::Snapshot;
use super::status::{Code, Status};
use super::types::PodInfo;

/// What the cycle keeps beyond what upstream computes. The decision is the same either
/// way: inspecting only also runs every Filter plugin on every candidate node and keeps
/// the verdicts (the matrix), which is what a person looking at an attempt wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
pub enum Detail {
    /// Upstream's work only: the path every driver runs.
    #[default]
    Decision,
    /// Also the full verdict matrix (explain, and re-running an attempt to look at it).
    Full,
}

/// Where the cycle is. Each phase is one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Phase {
    PreFilter,
    Filter,
    PostFilter,
    PreScore,
    Score,
    NormalizeScore,
    SelectHost,
    Done,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::PreFilter => "PreFilter",
            Phase::Filter => "Filter",
            Phase::PostFilter => "PostFilter",
            Phase::PreScore => "PreScore",
            Phase::Score => "Score",
            Phase::NormalizeScore => "NormalizeScore",
            Phase::SelectHost => "SelectHost",
            Phase::Done => "Done",
        }
    }
}

/// Below this many nodes a Filter run or a Score pass stays on the calling thread: waking
/// the pool costs more than it saves (measured on 2 cores, basic 5,000-node replay: 1.56 s
/// on one thread against 2.3 s handing every 500-node wave to the pool).
pub const PARALLEL_MIN_NODES: usize = 1024;

/// What the cycle is given: the profile, the cluster as of this cycle, and settings.
#[derive(Clone, Copy)]
pub struct CycleEnv<'a> {
    pub framework: &'a Framework,
    pub snapshot: &'a Snapshot,
    pub listers: &'a Listers,
    pub nominator: &'a Nominator,
    pub waiting: &'a crate::waiting::WaitingPods,
    /// The engine's clock for this cycle (see `Handle::now`).
    pub now: jiff::Timestamp,
    /// The configuration's global percentageOfNodesToScore (0 = adaptive).
    pub percentage_of_nodes_to_score: i32,
    pub pool: Option<&'a rayon::ThreadPool>,
    /// The configured scheduler extenders, ignorable ones last (`&[]` for none).
    pub extenders: &'a [std::sync::Arc<dyn crate::extender::Extender>],
}

impl<'a> CycleEnv<'a> {
    pub fn handle(&self) -> Handle<'a> {
        Handle {
            framework: self.framework,
            snapshot: self.snapshot,
            listers: self.listers,
            nominator: self.nominator,
            waiting: self.waiting,
            now: self.now,
            extenders: self.extenders,
            simulation: false,
            pool: self.pool,
        }
    }
}

/// One plugin call (or one plugin over all nodes) as it happened. Kept as the status the
/// plugin returned: nothing is rendered to text until someone prints it.
#[derive(Debug, Clone)]
pub struct PluginRun {
    pub phase: Phase,
    pub plugin: std::borrow::Cow<'static, str>,
    pub status: Status,
    /// Time spent in this plugin (for Filter and Score: summed over the nodes it ran on).
    pub duration: Duration,
    /// Filter: the nodes this plugin rejected among those upstream's search examined.
    pub rejected: Option<u32>,
    /// CycleState entries the plugin wrote.
    pub changed: Vec<&'static str>,
}

impl PluginRun {
    /// The status message as the trace shows it (Filter: how many nodes were rejected).
    pub fn message(&self) -> String {
        match self.rejected {
            Some(n) if n > 0 => format!("rejected {n} node(s)"),
            _ => self.status.message(),
        }
    }
}

/// How the cycle ended.
#[derive(Debug, Clone)]
pub enum CycleOutcome {
    /// A host was chosen.
    Selected {
        node: String,
        evaluated_nodes: usize,
        feasible_nodes: usize,
    },
    /// No node fits; PostFilter (preemption) may have nominated one.
    Unschedulable {
        fit_error: Box<FitError>,
        post_filter: Option<PostFilterResult>,
        status: Status,
    },
    /// Something failed that is not about fit (a plugin error, or no nodes at all).
    Error(Status),
}

impl CycleOutcome {
    /// The message kube-scheduler puts on the pod's PodScheduled condition.
    pub fn message(&self) -> Option<String> {
        match self {
            CycleOutcome::Selected { .. } => None,
            CycleOutcome::Unschedulable { fit_error, .. } => Some(fit_error.message()),
            CycleOutcome::Error(s) => Some(s.message()),
        }
    }
}

/// Upstream `ErrNoNodesAvailable`.
pub const NO_NODES_AVAILABLE: &str = "no nodes available to schedule pods";

/// What a PostFilter that nominated a node did, for its step in the trace:
/// "preempted 2 pod(s) on node-02: default/low-1, default/low-2; nominated node-02".
pub fn post_filter_note(r: &PostFilterResult) -> String {
    let node = &r.nominated_node_name;
    if r.victims.is_empty() {
        return format!("nominated {node}");
    }
    format!(
        "preempted {} pod(s) on {node}: {}; nominated {node}",
        r.victims.len(),
        r.victims.join(", ")
    )
}

/// One pod's scheduling cycle.
pub struct SchedulingCycle {
    pub pod: Arc<PodInfo>,
    pub state: CycleState,
    phase: Phase,
    /// Next plugin to run within the phase.
    cursor: usize,
    pub detail: Detail,
    pub start_node_index: usize,
    /// Where the next cycle's node search starts (set once Filter has run).
    pub next_start_node_index: Option<usize>,
    pub trace: Vec<PluginRun>,
    pub pre_filter: PreFilterAccumulator,
    pub diagnosis: Diagnosis,
    filter: Option<filter::FilterProgress>,
    /// Feasible nodes (snapshot indices) in the order upstream found them (after
    /// filtering extenders: in the order the last one answered).
    pub feasible: Vec<usize>,
    /// After a filtering extender that is not nodeCacheCapable: the NodeInfos built from
    /// the node objects it returned, parallel to `feasible`. Upstream scores these (they
    /// carry no pods); see [`SchedulingCycle::feasible_node`].
    pub extender_feasible_nodes: Option<Vec<crate::node_info::NodeInfo>>,
    /// Every extender call of this cycle, in order.
    pub extender_calls: Vec<crate::extender::ExtenderCall>,
    pub matrix: Option<FilterMatrix>,
    pub post_filter: Option<(Option<PostFilterResult>, Status)>,
    pub scores: Option<ScoreTable>,
    pub outcome: Option<CycleOutcome>,
    /// What the profile's batch held when the cycle started (OpportunisticBatching);
    /// `None` when the driver keeps no batch (explain, preemption's dry runs).
    pub batch_probe: Option<BatchProbe>,
    /// What the cycle decided about the batch, once PreFilter has passed.
    pub batch: Option<BatchDecision>,
    /// The scored nodes by name, for the batch to keep (only for a pod with a signature).
    pub ranking: Vec<(String, crate::select::Scored)>,
    /// The nominated node (or the batch's hint) has been tried.
    nominated_checked: bool,
    /// A Filter Error rejects its node instead of ending the cycle: only for explain's
    /// second look after such an Error, to show every node's verdict beside it (as the
    /// conformance oracle evaluates each node on its own).
    pub errors_reject: bool,
}

impl SchedulingCycle {
    pub fn new(pod: Arc<PodInfo>, detail: Detail, start_node_index: usize) -> SchedulingCycle {
        SchedulingCycle {
            pod,
            state: CycleState::new(),
            phase: Phase::PreFilter,
            cursor: 0,
            detail,
            start_node_index,
            next_start_node_index: None,
            trace: Vec::new(),
            pre_filter: PreFilterAccumulator::default(),
            diagnosis: Diagnosis::default(),
            filter: None,
            feasible: Vec::new(),
            extender_feasible_nodes: None,
            extender_calls: Vec::new(),
            matrix: None,
            post_filter: None,
            scores: None,
            outcome: None,
            errors_reject: false,
            batch_probe: None,
            batch: None,
            ranking: Vec::new(),
            nominated_checked: false,
        }
    }

    /// The cycle of a driver that batches: `probe` is what the profile's batch holds.
    pub fn with_batch(mut self, probe: Option<BatchProbe>) -> SchedulingCycle {
        self.batch_probe = probe;
        self
    }

    /// How many nodes the node search examined, as upstream counts them (its
    /// `evaluatedNodes`: `len(feasibleNodes) + NodeToStatus.Len()`). A node that passed
    /// after the search already had enough is not counted: upstream cancels and drops
    /// its result. The one count of examined nodes: the Filter step's message, the
    /// outcome, the trace and the Filter matrix's `examined` all read it.
    pub fn evaluated_nodes(&self) -> usize {
        self.feasible.len() + self.diagnosis.node_to_status.len()
    }

    /// The node the cycle chose, if it chose one.
    pub fn selected_node(&self) -> Option<&str> {
        match &self.outcome {
            Some(CycleOutcome::Selected { node, .. }) => Some(node),
            _ => None,
        }
    }

    /// The batch's hint this cycle placed the pod on, if it did.
    pub fn hinted_node(&self) -> Option<&str> {
        let hint = self.batch.as_ref()?.hint()?;
        match &self.outcome {
            Some(CycleOutcome::Selected { node, .. }) if node == hint && self.scores.is_none() => {
                Some(hint)
            }
            _ => None,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The plugin that runs next within the current phase, if any.
    pub fn next_plugin<'f>(&self, fwk: &'f Framework) -> Option<&'f str> {
        let list = self.phase_plugins(fwk);
        list.get(self.cursor).copied()
    }

    fn phase_plugins<'f>(&self, fwk: &'f Framework) -> Vec<&'f str> {
        let names = |ep| fwk.plugins(ep).iter().map(|e| e.name).collect::<Vec<_>>();
        match self.phase {
            Phase::PreFilter => names(ExtensionPoint::PreFilter),
            Phase::Filter => names(ExtensionPoint::Filter),
            Phase::PostFilter => names(ExtensionPoint::PostFilter),
            Phase::PreScore => names(ExtensionPoint::PreScore),
            Phase::Score | Phase::NormalizeScore => self
                .scores
                .as_ref()
                .map(|t| t.plugins.iter().map(|p| p.name).collect())
                .unwrap_or_default(),
            Phase::SelectHost | Phase::Done => Vec::new(),
        }
    }

    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Runs the rest of the current phase.
    pub fn step(&mut self, env: &CycleEnv) {
        let phase = self.phase;
        while self.phase == phase && !self.is_done() {
            self.advance(env, false);
        }
    }

    /// Runs one plugin of the current phase (a phase with no plugins finishes).
    pub fn step_plugin(&mut self, env: &CycleEnv) {
        if !self.is_done() {
            self.advance(env, true);
        }
    }

    /// Runs to the end.
    pub fn run(&mut self, env: &CycleEnv) -> &CycleOutcome {
        while !self.is_done() {
            self.advance(env, false);
        }
        self.outcome.get_or_insert_with(|| {
            CycleOutcome::Error(Status::error("cycle ended without outcome"))
        })
    }

    fn advance(&mut self, env: &CycleEnv, one_plugin: bool) {
        match self.phase {
            Phase::PreFilter => self.advance_pre_filter(env),
            Phase::Filter => self.advance_filter(env, one_plugin),
            Phase::PostFilter => self.advance_post_filter(env),
            Phase::PreScore => self.advance_pre_score(env, !one_plugin),
            Phase::Score => self.advance_score(env, !one_plugin),
            Phase::NormalizeScore => self.advance_normalize(env),
            Phase::SelectHost => self.select_host(env),
            Phase::Done => {}
        }
    }

    fn enter(&mut self, phase: Phase) {
        self.phase = phase;
        self.cursor = 0;
    }

    fn record(&mut self, plugin: &'static str, status: &Status, started: Instant) {
        let changed = self.state.take_written();
        self.trace.push(PluginRun {
            phase: self.phase,
            plugin: plugin.into(),
            status: status.clone(),
            duration: started.elapsed(),
            rejected: None,
            changed,
        });
    }

    fn finish(&mut self, outcome: CycleOutcome) {
        self.outcome = Some(outcome);
        self.phase = Phase::Done;
    }

    fn advance_pre_filter(&mut self, env: &CycleEnv) {
        if self.cursor == 0 && env.snapshot.num_nodes() == 0 {
            return self.finish(CycleOutcome::Error(Status::unresolvable(
                NO_NODES_AVAILABLE,
            )));
        }
        let plugins = env.framework.plugins(ExtensionPoint::PreFilter);
        if let Some(e) = plugins.get(self.cursor) {
            self.cursor += 1;
            let started = Instant::now();
            let h = env.handle();
            let (r, s) = match e.plugin.as_pre_filter() {
                Some(p) => p.pre_filter(&h, &mut self.state, &self.pod),
                None => (None, Status::success()),
            };
            self.record(e.name, &s, started);
            self.pre_filter.apply(e.name, r, s);
            if self.pre_filter.terminal.is_none() {
                return;
            }
        }
        // PreFilter is over: all plugins ran, or one ended it.
        self.state.set_skip_filter_plugins(
            self.pre_filter.skipped.clone(),
            &env.framework.filter_order(),
        );
        let status = self.pre_filter.status();
        if status.is_success() {
            return self.enter(Phase::Filter);
        }
        if !status.is_rejected() {
            return self.finish(CycleOutcome::Error(status));
        }
        // Every node gets the PreFilter status.
        if self.pre_filter.terminal.is_some() && status.plugin().is_empty() {
            // Empty node intersection: the contributing plugins are the rejectors.
            self.diagnosis
                .unschedulable_plugins
                .extend(self.pre_filter.plugins_with_nodes.iter().cloned());
        }
        self.diagnosis.node_to_status.set_absent(status.clone());
        self.diagnosis.pre_filter_msg = status.message();
        self.diagnosis.add_plugin_status(&status);
        self.enter_post_filter_or_fail(env);
    }

    /// After a fit failure: PostFilter if the profile has any, else done.
    fn enter_post_filter_or_fail(&mut self, env: &CycleEnv) {
        if env.framework.has_post_filter_plugins() {
            self.post_filter = Some((None, Status::success()));
            self.enter(Phase::PostFilter);
        } else {
            let fit_error = self.fit_error(env);
            self.finish(CycleOutcome::Unschedulable {
                fit_error: Box::new(fit_error),
                post_filter: None,
                status: Status::unschedulable(""),
            });
        }
    }

    fn fit_error(&self, env: &CycleEnv) -> FitError {
        FitError {
            num_all_nodes: env.snapshot.num_nodes(),
            diagnosis: self.diagnosis.clone(),
        }
    }

    fn advance_post_filter(&mut self, env: &CycleEnv) {
        let plugins = env.framework.plugins(ExtensionPoint::PostFilter);
        let Some(e) = plugins.get(self.cursor) else {
            return self.end_post_filter(env);
        };
        self.cursor += 1;
        let started = Instant::now();
        let h = env.handle();
        let (r, s) = match e.plugin.as_post_filter() {
            Some(p) => p.post_filter(
                &h,
                &mut self.state,
                &self.pod,
                &self.diagnosis.node_to_status,
            ),
            None => (None, Status::unschedulable("")),
        };
        // A successful PostFilter's status carries no message; its step says what it
        // decided (the pod's status itself is unchanged).
        match r.as_ref().filter(|_| s.is_success()) {
            Some(res) if !res.nominated_node_name.is_empty() => {
                let shown = Status::new(Code::Success, post_filter_note(res));
                self.record(e.name, &shown, started);
            }
            _ => self.record(e.name, &s, started),
        }
        let (acc_result, acc_status) = self
            .post_filter
            .get_or_insert_with(|| (None, Status::success()));
        // Accumulate as RunPostFilterPlugins: success or UU end it; other non-rejections are
        // errors; Unschedulable reasons pile up under the first rejector.
        if s.is_success() {
            *acc_result = r;
            *acc_status = Status::success().with_plugin(e.name);
            self.cursor = usize::MAX;
            return self.end_post_filter(env);
        }
        if s.code() == Code::UnschedulableAndUnresolvable {
            *acc_result = r;
            *acc_status = s.with_plugin(e.name);
            self.cursor = usize::MAX;
            return self.end_post_filter(env);
        }
        if !s.is_rejected() {
            *acc_result = None;
            *acc_status = Status::error(s.message()).with_plugin(e.name);
            self.cursor = usize::MAX;
            return self.end_post_filter(env);
        }
        if r.as_ref().is_some_and(|r| r.override_nomination) {
            *acc_result = r;
        }
        let first_rejector = if acc_status.is_success() {
            e.name.to_string()
        } else {
            acc_status.plugin().to_string()
        };
        let mut reasons = acc_status.reasons().to_vec();
        reasons.extend(s.reasons().iter().cloned());
        *acc_status =
            Status::with_reasons(Code::Unschedulable, reasons).with_plugin(first_rejector);
        if self.cursor >= plugins.len() {
            self.end_post_filter(env);
        }
    }

    fn end_post_filter(&mut self, env: &CycleEnv) {
        let (result, status) = self
            .post_filter
            .clone()
            .unwrap_or((None, Status::success()));
        self.diagnosis.post_filter_msg = status.message();
        let fit_error = self.fit_error(env);
        self.finish(CycleOutcome::Unschedulable {
            fit_error: Box::new(fit_error),
            post_filter: result,
            status,
        });
    }

    /// All nodes with the highest total (every one of them is a correct choice upstream
    /// could make with other feasible-node orders).
    pub fn best_nodes<'s>(&self, snapshot: &'s Snapshot) -> Vec<&'s str> {
        if let Some(hint) = self.hinted_node() {
            // The hint and the nodes the stored ranking held at its score.
            let ties = self
                .batch
                .iter()
                .flat_map(|b| b.stored.iter())
                .flat_map(|s| &s.ties);
            // A recorded node scored at the hint's total by a re-run ties it too.
            let head = self
                .batch
                .iter()
                .flat_map(|b| &b.stored)
                .map(|s| s.head_total)
                .next();
            let recorded = self
                .batch
                .iter()
                .filter_map(|b| b.recorded.as_ref())
                .filter(|(_, t)| Some(*t) == head)
                .map(|(n, _)| n);
            return std::iter::once(hint)
                .chain(ties.map(String::as_str))
                .chain(recorded.map(String::as_str))
                .filter_map(|n| snapshot.position(n).map(|i| snapshot.list()[i].name()))
                .collect();
        }
        match &self.scores {
            Some(t) => {
                let max = t.totals.iter().copied().max();
                t.nodes
                    .iter()
                    .zip(&t.totals)
                    .filter(|(_, tot)| Some(**tot) == max)
                    .map(|(&i, _)| snapshot.list()[i].name())
                    .collect()
            }
            None => self
                .feasible
                .iter()
                .map(|&i| snapshot.list()[i].name())
                .collect(),
        }
    }
}
