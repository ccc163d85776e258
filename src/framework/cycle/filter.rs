//! The Filter phase: find feasible nodes as `findNodesThatFitPod` does.
//!
//! Nodes are examined from a round-robin start, and the search stops once the
//! (N+1)-th feasible node turns up, N being `numFeasibleNodesToFind`; this is upstream's
//! behaviour with its parallelism taken as sequential, so results are deterministic.
//! The fast path runs every plugin on a node before moving on; when stepping plugin by
//! plugin or building the full verdict matrix, plugins run column by column instead and
//! the same sequential rule is applied to the results afterwards.

use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::Serialize;

use super::{CycleEnv, CycleOutcome, Detail, Phase, PluginRun, SchedulingCycle};
use crate::batch::{self, BatchDecision, BatchProbe, NoHint};
use crate::cycle_state::CycleState;
use crate::node_info::NodeInfo;
use crate::plugin::{FilterPlugin, Handle};
use crate::profile::ExtensionPoint;
use crate::runtime::filter_status;
use crate::status::{Code, Status};

/// The Filter point's own step (no plugin), last of the point: whether the search found
/// a feasible node.
pub const FILTER_VERDICT: &str = "(feasible nodes)";
/// The step that says whether the batch gave a hint (OpportunisticBatching).
pub const BATCH_STEP: &str = "(batch)";
use crate::types::PodInfo;

const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;

/// How many feasible nodes are enough (`numFeasibleNodesToFind`).
pub fn num_feasible_nodes_to_find(percentage: i32, num_all_nodes: usize) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND {
        return num_all_nodes;
    }
    let n = num_all_nodes as i64;
    let mut p = i64::from(percentage);
    if p == 0 {
        p = (50 - n / 125).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
    }
    let num = (n * p / 100) as usize;
    num.max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// The chunk of nodes each of upstream's parallel Filter workers takes at a time
/// (`chunkSizeFor`): √n, at most n/parallelism + 1, at least 1. Goroutine timing moves
/// the examined set by about this much around the sequential one.
pub fn chunk_size_for(n: usize, parallelism: usize) -> usize {
    let s = n.isqrt();
    let r = n / parallelism.max(1) + 1;
    s.min(r).max(1)
}

/// One Filter plugin's verdict on one node.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "verdict")]
pub enum FilterCell {
    /// PreFilter said to skip this plugin for the pod.
    Skipped,
    Pass,
    Reject {
        code: Code,
        reasons: Vec<String>,
    },
    Error {
        message: String,
    },
}

impl FilterCell {
    pub(crate) fn from_status(s: &Status) -> FilterCell {
        if s.is_success() {
            FilterCell::Pass
        } else if s.is_rejected() {
            FilterCell::Reject {
                code: s.code(),
                reasons: s.reasons().iter().map(|r| r.to_string()).collect(),
            }
        } else {
            FilterCell::Error {
                message: s.message(),
            }
        }
    }

    pub fn symbol(&self) -> &'static str {
        match self {
            FilterCell::Skipped => "–",
            FilterCell::Pass => "✓",
            FilterCell::Reject { .. } => "✗",
            FilterCell::Error { .. } => "!",
        }
    }
}

/// Every Filter plugin on every candidate node (kubestep's addition to upstream), kept
/// compactly: one small integer per cell, distinct failure statuses stored once.
#[derive(Debug, Clone, Default)]
pub struct FilterMatrix {
    pub plugins: Vec<&'static str>,
    /// Candidate nodes (snapshot indices), in the order they were examined.
    pub nodes: Vec<usize>,
    /// Column-major: `cells[plugin * nodes.len() + node]`; see `CELL_*`.
    cells: Vec<u32>,
    statuses: Vec<Status>,
    /// kubestep's notes on rejections (`FilterPlugin::rejection_note`), by (plugin, row).
    notes: std::collections::BTreeMap<(usize, usize), String>,
    /// How many rows, from the first, upstream's search examined before it stopped
    /// (enough feasible nodes, or an error); the rest kubestep ran only to fill the
    /// matrix. `None` until the search is over.
    pub examined: Option<usize>,
}

const CELL_PASS: u32 = 0;
const CELL_SKIPPED: u32 = 1;
const CELL_STATUS_BASE: u32 = 2;

impl FilterMatrix {
    fn new(plugins: Vec<&'static str>, nodes: Vec<usize>) -> FilterMatrix {
        FilterMatrix {
            plugins,
            nodes,
            cells: Vec::new(),
            statuses: Vec::new(),
            notes: Default::default(),
            examined: None,
        }
    }

    /// Whether upstream's search examined the node in `row` (true while unknown).
    pub fn was_examined(&self, row: usize) -> bool {
        self.examined.is_none_or(|n| row < n)
    }

    /// kubestep's note on plugin `plugin`'s rejection of the node in row `node_row`.
    pub fn note(&self, node_row: usize, plugin: usize) -> Option<&str> {
        self.notes.get(&(plugin, node_row)).map(String::as_str)
    }

    /// Appends one plugin's column: all Skipped, or Pass except the listed failures.
    fn push_sparse_column(&mut self, skipped: bool, failures: &[(usize, Status)]) {
        let base = self.cells.len();
        let fill = if skipped { CELL_SKIPPED } else { CELL_PASS };
        self.cells.resize(base + self.nodes.len(), fill);
        for (row, s) in failures {
            let i = match self.statuses.iter().position(|x| x == s) {
                Some(i) => i,
                None => {
                    self.statuses.push(s.clone());
                    self.statuses.len() - 1
                }
            };
            self.cells[base + row] = CELL_STATUS_BASE + i as u32;
        }
    }

    /// The verdict of plugin `plugin` on the node in row `node_row`.
    pub fn cell(&self, node_row: usize, plugin: usize) -> FilterCell {
        let code = self
            .cells
            .get(plugin * self.nodes.len() + node_row)
            .copied()
            .unwrap_or(CELL_SKIPPED);
        match code {
            CELL_PASS => FilterCell::Pass,
            CELL_SKIPPED => FilterCell::Skipped,
            i => self
                .statuses
                .get((i - CELL_STATUS_BASE) as usize)
                .map_or(FilterCell::Skipped, FilterCell::from_status),
        }
    }

    /// Number of cells held.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }
}

/// The nodes to examine in round-robin order from the cycle's start index, computed on
/// demand: materializing thousands of indices per pod costs more than filtering a few.
pub(super) struct Candidates {
    /// The nodes a PreFilterResult left (snapshot indices); `None` = every node.
    narrowed: Option<Vec<usize>>,
    len: usize,
    start: usize,
}

impl Candidates {
    fn get(&self, i: usize) -> usize {
        let j = (self.start + i) % self.len.max(1);
        match &self.narrowed {
            Some(v) => v[j],
            None => j,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn to_vec(&self) -> Vec<usize> {
        (0..self.len).map(|i| self.get(i)).collect()
    }
}

/// A cycle's search order: the candidates (every node, or those PreFilter left, in
/// snapshot order) from the round-robin start.
pub struct SearchOrder {
    narrowed: Option<Vec<usize>>,
    /// How many candidates there are.
    pub len: usize,
    /// The start, as an index among the candidates.
    pub start: usize,
}

impl SearchOrder {
    /// Snapshot node `node`'s distance from the start (`None` when it is no candidate).
    pub fn offset(&self, node: usize) -> Option<usize> {
        let index = match &self.narrowed {
            // Kept in snapshot order: a binary search, not a walk per node.
            Some(v) => v.binary_search(&node).ok()?,
            None => node,
        };
        (index < self.len).then(|| (index + self.len - self.start) % self.len)
    }
}

pub(super) struct FilterProgress {
    candidates: Candidates,
    num_to_find: usize,
    /// Plugins run one at a time over every candidate: a person stepping plugin by plugin,
    /// or the full verdict matrix.
    column_mode: bool,
    next_plugin: usize,
    /// Column mode: the first failure of each candidate so far (None = passing).
    first_failure: Vec<Option<Status>>,
    /// Column mode: pass-1 state and node with nominated pods added, for candidates that
    /// have some.
    nominated: Vec<Option<Box<(CycleState, NodeInfo)>>>,
    all_nodes: usize,
}

/// A candidate's pass-1 context: CycleState and node with the nominated pods added.
type Nominated = Option<Box<(CycleState, NodeInfo)>>;

/// One Filter plugin of the profile, as the search runs it.
struct Column<'f> {
    name: &'static str,
    plugin: Option<&'f dyn FilterPlugin>,
    skipped: bool,
}

/// Runs Filter plugins over runs of candidate nodes, column by column: each plugin over
/// the run, then the next. A node's result is its first failure in profile order, as
/// when every plugin runs on one node before the next, but each plugin's time is taken
/// once per run instead of once per node (per-call clocks would cost as much as the
/// plugins themselves).
struct Columns<'a> {
    env: &'a CycleEnv<'a>,
    h: Handle<'a>,
    state: &'a CycleState,
    pod: &'a PodInfo,
    candidates: &'a Candidates,
    cols: Vec<Column<'a>>,
}

/// What running columns over a run of candidates found: time per column and, when every
/// plugin ran on every node, each column's failures (the matrix).
struct RunOut {
    durations: Vec<Duration>,
    failures: Vec<Vec<(usize, Status)>>,
}

impl<'a> Columns<'a> {
    fn new(
        env: &'a CycleEnv<'a>,
        state: &'a CycleState,
        pod: &'a PodInfo,
        candidates: &'a Candidates,
    ) -> Columns<'a> {
        let cols = env
            .framework
            .plugins(ExtensionPoint::Filter)
            .iter()
            .enumerate()
            .map(|(i, e)| Column {
                name: e.name,
                plugin: e.plugin.as_filter(),
                skipped: state.is_filter_skipped_at(i) || state.is_filter_skipped(e.name),
            })
            .collect();
        Columns {
            env,
            h: env.handle(),
            state,
            pod,
            candidates,
            cols,
        }
    }

    /// Runs columns `cols` over candidates `lo..lo + first.len()`: `first[j]` keeps the
    /// first failure of candidate `lo + j`. With `every`, plugins also run on nodes that
    /// already failed and each column's failures are returned.
    fn run(
        &self,
        cols: std::ops::Range<usize>,
        lo: usize,
        first: &mut [Option<Status>],
        nominated: &[Nominated],
        every: bool,
    ) -> RunOut {
        let mut out = RunOut {
            durations: vec![Duration::ZERO; self.cols.len()],
            failures: Vec::new(),
        };
        for k in cols {
            let c = &self.cols[k];
            let mut failed = Vec::new();
            let (Some(f), false) = (c.plugin, c.skipped) else {
                if every {
                    out.failures.push(failed);
                }
                continue;
            };
            let started = Instant::now();
            for (j, slot) in first.iter_mut().enumerate() {
                if slot.is_some() && !every {
                    continue;
                }
                let (st, node) = match nominated.get(j).and_then(|o| o.as_deref()) {
                    Some((st, node)) => (st, node),
                    None => (
                        self.state,
                        &self.env.snapshot.list()[self.candidates.get(lo + j)],
                    ),
                };
                let s = f.filter(&self.h, st, self.pod, node);
                if s.is_success() {
                    continue;
                }
                let s = filter_status(c.name, s);
                if every {
                    failed.push((lo + j, s.clone()));
                }
                if slot.is_none() {
                    *slot = Some(s);
                }
            }
            out.durations[k] += started.elapsed();
            if every {
                out.failures.push(failed);
            }
        }
        out
    }

    /// `run` split over the pool for long runs; parts are merged in candidate order.
    fn run_parallel(
        &self,
        cols: std::ops::Range<usize>,
        lo: usize,
        first: &mut [Option<Status>],
        nominated: &[Nominated],
        every: bool,
    ) -> RunOut {
        let n = first.len();
        let Some(pool) = self.env.pool.filter(|_| n >= super::PARALLEL_MIN_NODES) else {
            return self.run(cols, lo, first, nominated, every);
        };
        let part = n.div_ceil(pool.current_num_threads() * 2).max(32);
        let parts: Vec<RunOut> = pool.install(|| {
            first
                .par_chunks_mut(part)
                .enumerate()
                .map(|(p, chunk)| {
                    let from = p * part;
                    let nom = nominated.get(from..).unwrap_or(&[]);
                    self.run(cols.clone(), lo + from, chunk, nom, every)
                })
                .collect()
        });
        let mut out = RunOut {
            durations: vec![Duration::ZERO; self.cols.len()],
            failures: Vec::new(),
        };
        for r in parts {
            for (d, x) in out.durations.iter_mut().zip(r.durations) {
                *d += x;
            }
            if out.failures.is_empty() {
                out.failures = r.failures;
            } else {
                for (f, x) in out.failures.iter_mut().zip(r.failures) {
                    f.extend(x);
                }
            }
        }
        out
    }

    /// Pass-1 contexts for candidates `lo..hi` (None where no nominated pod applies); a
    /// candidate whose context cannot be built fails with the error.
    fn nominated(&self, lo: usize, first: &mut [Option<Status>]) -> Vec<Nominated> {
        if self.env.nominator.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::with_capacity(first.len());
        for (j, slot) in first.iter_mut().enumerate() {
            let node = &self.env.snapshot.list()[self.candidates.get(lo + j)];
            match self
                .env
                .framework
                .add_nominated_pods(&self.h, self.pod, self.state, node)
            {
                Ok(ctx) => out.push(ctx.map(Box::new)),
                Err(s) => {
                    *slot = Some(Status::error(s.message()));
                    out.push(None);
                }
            }
        }
        out
    }

    /// Pass 2: a node that passed with its nominated pods must also pass without them.
    fn without_nominated(
        &self,
        lo: usize,
        first: &mut [Option<Status>],
        nominated: &[Nominated],
        durations: &mut [Duration],
    ) {
        for (j, slot) in first.iter_mut().enumerate() {
            if slot.is_some() || nominated.get(j).is_none_or(|o| o.is_none()) {
                continue;
            }
            let node = &self.env.snapshot.list()[self.candidates.get(lo + j)];
            for (k, c) in self.cols.iter().enumerate() {
                let (Some(f), false) = (c.plugin, c.skipped) else {
                    continue;
                };
                let started = Instant::now();
                let s = f.filter(&self.h, self.state, self.pod, node);
                durations[k] += started.elapsed();
                if !s.is_success() {
                    *slot = Some(filter_status(c.name, s));
                    break;
                }
            }
        }
    }
}

impl SchedulingCycle {
    pub(super) fn advance_filter(&mut self, env: &CycleEnv, one_plugin: bool) {
        if self.filter.is_none() {
            if self.check_nominated_node(env) {
                return;
            }
            self.init_filter(env, one_plugin);
        }
        let Some(progress) = self.filter.as_ref() else {
            return;
        };
        if progress.column_mode {
            let num_plugins = env.framework.plugins(ExtensionPoint::Filter).len();
            if progress.next_plugin < num_plugins {
                self.run_filter_column(env);
                if one_plugin {
                    return;
                }
            }
            let done = self
                .filter
                .as_ref()
                .is_none_or(|p| p.next_plugin >= num_plugins);
            if done {
                self.finalize_columns(env);
            }
        } else {
            self.run_filter_fast(env);
        }
    }

    /// Upstream GetNodeHint, once PreFilter has passed: the pod's signature, and the
    /// stored ranking's next node when the pod may take it.
    fn get_node_hint(&mut self, env: &CycleEnv) {
        // Kept in the cycle: a re-run of it (replay following the recording) starts from
        // the same batch state, so that its result is stored as this one's would be.
        let Some(probe) = self.batch_probe.clone() else {
            return;
        };
        let started = Instant::now();
        let signature = batch::sign_pod(
            env.framework,
            !env.extenders.is_empty(),
            &self.pod,
            env.listers,
        );
        // A replay that follows the real scheduler's log takes the hint its cycle took:
        // which nodes the ranking held came from a timing-dependent parallel search.
        let own = self.own_hint(env, &probe, &signature);
        let (hint, own) = match &probe.logged {
            Some(Some(h)) => (Ok(h.clone()), Some(own)),
            Some(None) => (Err(NoHint::NotInLog), Some(own)),
            None => (own, None),
        };
        let decision = BatchDecision {
            cycle_count: probe.cycle_count,
            signature,
            hint,
            stored: probe.stored,
            recorded: None,
            own,
        };
        if decision.stored.is_some() || decision.own.is_some() {
            let shown = Status::new(Code::Success, decision.describe());
            self.record(BATCH_STEP, &shown, started);
        }
        self.batch = Some(decision);
    }

    /// The batch's own hint: the stored ranking's head, when the pod may take it.
    fn own_hint(
        &self,
        env: &CycleEnv,
        probe: &BatchProbe,
        signature: &crate::signature::Signature,
    ) -> Result<String, NoHint> {
        batch::precheck(probe, signature, env.now).and_then(|stored| {
            let idx = env
                .snapshot
                .position(&stored.last_chosen)
                .ok_or(NoHint::NodeMissing)?;
            let h = env.handle();
            let node = &env.snapshot.list()[idx];
            // Only a node the last pod filled says the ranking still holds for this one.
            let s = env
                .framework
                .run_filter_plugins(&h, &self.state, &self.pod, node);
            if s.is_rejected() {
                Ok(stored.head.clone())
            } else {
                Err(NoHint::NodeNotFull)
            }
        })
    }

    /// Upstream first tries the node the pod is nominated to alone, or else the batch's
    /// hint.
    fn check_nominated_node(&mut self, env: &CycleEnv) -> bool {
        if self.nominated_checked {
            return false;
        }
        self.nominated_checked = true;
        self.get_node_hint(env);
        let nominated = self.pod.nominated_node_name();
        let (nnn, label, what) = match self.batch.as_ref().and_then(|b| b.hint()) {
            _ if !nominated.is_empty() => {
                (nominated.to_string(), "(nominated node)", "nominated node")
            }
            Some(hint) => (hint.to_string(), "(batch hint)", "the batch's hint"),
            None => return false,
        };
        let Some(idx) = env.snapshot.position(&nnn) else {
            return false;
        };
        let started = Instant::now();
        let h = env.handle();
        let node = &env.snapshot.list()[idx];
        let s =
            env.framework
                .run_filter_plugins_with_nominated_pods(&h, &self.state, &self.pod, node);
        // The step names the node: its plugins' statuses do not.
        let shown = if s.is_success() {
            Status::new(Code::Success, format!("{what} {nnn} passes every filter"))
        } else {
            Status::new(s.code(), format!("{what} {nnn}: {}", s.message()))
                .with_plugin(s.plugin().to_string())
        };
        self.record(label, &shown, started);
        if s.is_success() {
            self.feasible = vec![idx];
            // An extender error here only sends the search on to all nodes, as upstream.
            if self.run_extender_filters(env).is_err() {
                self.feasible.clear();
                self.extender_feasible_nodes = None;
            }
            if !self.feasible.is_empty() {
                self.after_filter(env);
                return true;
            }
            return false;
        }
        if s.code() == Code::Error && !self.errors_reject {
            self.finish(CycleOutcome::Error(s));
            return true;
        }
        self.diagnosis.add_plugin_status(&s);
        self.diagnosis.node_to_status.set(nnn, s);
        false
    }

    /// The snapshot indices a PreFilterResult left, in snapshot order (`None`: every node).
    fn narrowed_candidates(&self, all: &[NodeInfo]) -> Option<Vec<usize>> {
        let names = self.pre_filter.result.as_ref()?.node_names.as_ref()?;
        Some(
            (0..all.len())
                .filter(|&i| names.contains(all[i].name()))
                .collect(),
        )
    }

    /// This cycle's search order over the candidates, to place nodes in it.
    pub fn search_order(&self, env: &CycleEnv) -> SearchOrder {
        let all = env.snapshot.list();
        let narrowed = self.narrowed_candidates(all);
        let len = narrowed.as_ref().map_or(all.len(), Vec::len);
        SearchOrder {
            start: if len == 0 {
                0
            } else {
                self.start_node_index % len
            },
            narrowed,
            len,
        }
    }

    /// Where snapshot node `node` lies in this cycle's search order: its distance from
    /// the start, and how many candidates there are (`None` when it is not one).
    pub fn search_offset(&self, env: &CycleEnv, node: usize) -> Option<(usize, usize)> {
        let order = self.search_order(env);
        Some((order.offset(node)?, order.len))
    }

    fn init_filter(&mut self, env: &CycleEnv, one_plugin: bool) {
        let all = env.snapshot.list();
        let narrowed = self.narrowed_candidates(all);
        if narrowed.is_some() {
            let plugins = format!("[{}]", self.pre_filter.plugins_with_nodes.join(" "));
            self.diagnosis
                .node_to_status
                .set_absent(Status::unresolvable(format!(
                    "node(s) didn't satisfy plugin(s) {plugins}"
                )));
            self.diagnosis
                .unschedulable_plugins
                .extend(self.pre_filter.plugins_with_nodes.iter().cloned());
        }
        let n = narrowed.as_ref().map_or(all.len(), Vec::len);
        let candidates = Candidates {
            narrowed,
            len: n,
            start: if n == 0 { 0 } else { self.start_node_index % n },
        };
        let percentage = env
            .framework
            .percentage_of_nodes_to_score
            .unwrap_or(env.percentage_of_nodes_to_score);
        let mut num_to_find = num_feasible_nodes_to_find(percentage, n);
        let has_scoring =
            env.framework.has_score_plugins() || crate::extender::has_prioritizers(env.extenders);
        if !crate::extender::has_filters(env.extenders) && !has_scoring {
            num_to_find = 1;
        }
        let column_mode =
            (one_plugin || self.detail == Detail::Full) && env.framework.has_filter_plugins();
        let first_failure = if column_mode {
            vec![None; n]
        } else {
            Vec::new()
        };
        let matrix_nodes =
            (column_mode && self.detail == Detail::Full).then(|| candidates.to_vec());
        self.filter = Some(FilterProgress {
            candidates,
            num_to_find,
            column_mode,
            next_plugin: 0,
            first_failure,
            nominated: Vec::new(),
            all_nodes: all.len(),
        });
        if column_mode {
            self.prepare_nominated(env);
            if let Some(nodes) = matrix_nodes {
                let plugins = env
                    .framework
                    .plugins(ExtensionPoint::Filter)
                    .iter()
                    .map(|e| e.name)
                    .collect();
                self.matrix = Some(FilterMatrix::new(plugins, nodes));
            }
        }
    }

    /// Builds the pass-1 context (nominated pods added) for every candidate (column mode).
    fn prepare_nominated(&mut self, env: &CycleEnv) {
        let Some(mut p) = self.filter.take() else {
            return;
        };
        let cols = Columns::new(env, &self.state, &self.pod, &p.candidates);
        let mut first = std::mem::take(&mut p.first_failure);
        let nominated = cols.nominated(0, &mut first);
        drop(cols);
        p.first_failure = first;
        p.nominated = nominated;
        self.filter = Some(p);
    }

    fn run_filter_column(&mut self, env: &CycleEnv) {
        let full = self.detail == Detail::Full;
        let Some(mut p) = self.filter.take() else {
            return;
        };
        let k = p.next_plugin;
        p.next_plugin += 1;
        let cols = Columns::new(env, &self.state, &self.pod, &p.candidates);
        let skipped = cols.cols[k].skipped;
        let name = cols.cols[k].name;
        let before: Vec<bool> = p.first_failure.iter().map(Option::is_some).collect();
        let out = cols.run_parallel(k..k + 1, 0, &mut p.first_failure, &p.nominated, full);
        drop(cols);
        let rejected = p
            .first_failure
            .iter()
            .zip(&before)
            .filter(|(f, was)| f.is_some() && !**was)
            .count();
        if let Some(m) = self.matrix.as_mut() {
            let failures = out.failures.into_iter().next().unwrap_or_default();
            m.push_sparse_column(skipped, &failures);
            let plugin = env.framework.plugins(ExtensionPoint::Filter)[k]
                .plugin
                .as_filter();
            for (row, _) in failures.iter().filter(|(_, s)| s.is_rejected()) {
                let name = env.snapshot.list()[m.nodes[*row]].name();
                if let Some(note) = plugin.and_then(|f| f.rejection_note(&self.state, name)) {
                    m.notes.insert((k, *row), note);
                }
            }
        }
        let status = if skipped {
            Status::skip()
        } else if rejected > 0 {
            Status::code_only(Code::Unschedulable)
        } else {
            Status::success()
        };
        self.trace.push(PluginRun {
            phase: Phase::Filter,
            plugin: name.into(),
            status,
            duration: out.durations[k],
            rejected: Some(rejected as u32),
            changed: Vec::new(),
        });
        self.filter = Some(p);
    }

    fn finalize_columns(&mut self, env: &CycleEnv) {
        let Some(mut p) = self.filter.take() else {
            return;
        };
        let cols = Columns::new(env, &self.state, &self.pod, &p.candidates);
        let mut extra = vec![Duration::ZERO; cols.cols.len()];
        let mut first = std::mem::take(&mut p.first_failure);
        cols.without_nominated(0, &mut first, &p.nominated, &mut extra);
        drop(cols);
        let mut search = Search::new(p.num_to_find, self.errors_reject);
        for (ci, s) in first.into_iter().enumerate() {
            if search.consume(p.candidates.get(ci), s.unwrap_or_default()) {
                break;
            }
        }
        // The columns' counts covered every candidate; the trace says what upstream's
        // search examined, as the fast path does.
        let counts = search.rejected_by_plugin();
        for run in self.trace.iter_mut().filter(|r| r.phase == Phase::Filter) {
            if let Some(r) = run.rejected.as_mut() {
                *r = counts.get(run.plugin.as_ref()).copied().unwrap_or(0);
            }
        }
        // A Filter Error ends the search on its node: that node was examined too.
        let errored = usize::from(search.error.is_some());
        self.end_search(env, &p, search);
        // The rows consumed in order: the count the outcome and the trace give.
        let examined = self.evaluated_nodes() + errored;
        if let Some(m) = self.matrix.as_mut() {
            m.examined = Some(examined);
        }
    }

    fn run_filter_fast(&mut self, env: &CycleEnv) {
        let Some(p) = self.filter.take() else { return };
        let mut search = Search::new(p.num_to_find, self.errors_reject);
        let cols = Columns::new(env, &self.state, &self.pod, &p.candidates);
        let mut durations = vec![Duration::ZERO; cols.cols.len()];
        if !env.framework.has_filter_plugins() {
            // Without Filter plugins the first N nodes from the start are feasible.
            search.feasible = (0..p.candidates.len().min(p.num_to_find))
                .map(|i| p.candidates.get(i))
                .collect();
            search.stopped = true;
        }
        let mut next = 0;
        let n = p.candidates.len();
        while !search.stopped && next < n {
            // Runs sized to what is still needed, consumed in order: when every node
            // passes nothing is examined beyond upstream's stopping point, and the
            // result never depends on the run size or the thread count.
            let need = p.num_to_find.saturating_sub(search.feasible.len()) + 1;
            // Long runs go to the pool with some slack for rejections; short ones stay
            // on this thread in small pieces, so few nodes are examined past the stop.
            let size = match env.pool {
                Some(_) if need >= super::PARALLEL_MIN_NODES => need + need / 4,
                _ => need.min(256),
            }
            .min(n - next);
            let mut first = vec![None; size];
            let nominated = cols.nominated(next, &mut first);
            let out = cols.run_parallel(0..cols.cols.len(), next, &mut first, &nominated, false);
            for (d, x) in durations.iter_mut().zip(out.durations) {
                *d += x;
            }
            cols.without_nominated(next, &mut first, &nominated, &mut durations);
            for (j, s) in first.into_iter().enumerate() {
                if search.consume(p.candidates.get(next + j), s.unwrap_or_default()) {
                    break;
                }
            }
            next += size;
        }
        let counts = search.rejected_by_plugin();
        let error_plugin = search.error.as_ref().map(|e| e.plugin().to_string());
        for (k, c) in cols.cols.iter().enumerate() {
            let rejected = counts.get(c.name).copied().unwrap_or(0);
            let status = match &search.error {
                Some(e) if error_plugin.as_deref() == Some(c.name) => e.clone(),
                _ if c.skipped => Status::skip(),
                _ if rejected > 0 => Status::code_only(Code::Unschedulable),
                _ => Status::success(),
            };
            self.trace.push(PluginRun {
                phase: Phase::Filter,
                plugin: c.name.into(),
                status,
                duration: durations[k],
                rejected: Some(rejected),
                changed: Vec::new(),
            });
        }
        drop(cols);
        self.end_search(env, &p, search);
    }

    /// Every Filter plugin's verdict on one node, as the full matrix would have it
    /// (`None` when the node was not a candidate: PreFilter narrowed the search away
    /// from it). For explaining one node without computing the whole matrix.
    pub fn filter_row(
        &self,
        env: &CycleEnv,
        node: usize,
    ) -> Option<Vec<(&'static str, FilterCell)>> {
        let all = env.snapshot.list();
        let info = all.get(node)?;
        if let Some(names) = self
            .pre_filter
            .result
            .as_ref()
            .and_then(|r| r.node_names.as_ref())
            && !names.contains(info.name())
        {
            return None;
        }
        let h = env.handle();
        let nominated = env
            .framework
            .add_nominated_pods(&h, &self.pod, &self.state, info);
        let (state, node_info) = match &nominated {
            Ok(Some((st, ni))) => (st, ni),
            _ => (&self.state, info),
        };
        let cols = env.framework.plugins(ExtensionPoint::Filter);
        Some(
            cols.iter()
                .enumerate()
                .map(|(i, e)| {
                    let skipped =
                        self.state.is_filter_skipped_at(i) || self.state.is_filter_skipped(e.name);
                    let cell = match (&nominated, e.plugin.as_filter()) {
                        _ if skipped => FilterCell::Skipped,
                        (Err(s), _) => FilterCell::from_status(&Status::error(s.message())),
                        (_, None) => FilterCell::Pass,
                        (_, Some(f)) => FilterCell::from_status(&filter_status(
                            e.name,
                            f.filter(&h, state, &self.pod, node_info),
                        )),
                    };
                    (e.name, cell)
                })
                .collect(),
        )
    }

    /// Common end of the node search: round-robin bookkeeping, then the next phase.
    fn end_search(&mut self, env: &CycleEnv, p: &FilterProgress, search: Search) {
        self.feasible = search.feasible;
        for (idx, s) in search.rejected {
            let name = env.snapshot.list()[idx].name().to_string();
            self.diagnosis.add_plugin_status(&s);
            self.diagnosis.node_to_status.set(name, s);
        }
        let processed = self.feasible.len() + self.diagnosis.node_to_status.len();
        if p.all_nodes > 0 {
            self.next_start_node_index = Some((self.start_node_index + processed) % p.all_nodes);
        }
        if let Some(err) = search.error {
            return self.finish(CycleOutcome::Error(err));
        }
        let before = self.feasible.len();
        if let Err(err) = self.run_extender_filters(env) {
            return self.finish(CycleOutcome::Error(err));
        }
        if self.feasible.len() != before {
            // Extenders have no queueing hints: any cluster event may make the pod
            // schedulable again.
            self.diagnosis
                .unschedulable_plugins
                .insert(crate::extender::EXTENDER_NAME.to_string());
        }
        self.after_filter(env);
    }

    fn after_filter(&mut self, env: &CycleEnv) {
        // The point's own verdict, after its plugins' per-node ones: it fails only when
        // no node is feasible (upstream's FitError).
        let examined = self.evaluated_nodes();
        let verdict = match self.feasible.len() {
            0 => Status::new(
                Code::Unschedulable,
                format!("no feasible node ({examined} examined)"),
            ),
            n => Status::new(
                Code::Success,
                format!("{n} feasible node(s) ({examined} examined)"),
            ),
        };
        self.record(FILTER_VERDICT, &verdict, Instant::now());
        match self.feasible.len() {
            0 => self.enter_post_filter_or_fail(env),
            1 => {
                let node = env.snapshot.list()[self.feasible[0]].name().to_string();
                self.finish(CycleOutcome::Selected {
                    node,
                    evaluated_nodes: self.evaluated_nodes(),
                    feasible_nodes: 1,
                });
            }
            _ => self.enter(Phase::PreScore),
        }
    }
}

/// Upstream's sequential search rule over per-node results. What it finds is kept here
/// and handed to the cycle at the end, so plugins can borrow the cycle meanwhile.
struct Search {
    num_to_find: usize,
    errors_reject: bool,
    stopped: bool,
    error: Option<Status>,
    feasible: Vec<usize>,
    rejected: Vec<(usize, Status)>,
}

impl Search {
    fn new(num_to_find: usize, errors_reject: bool) -> Search {
        Search {
            num_to_find,
            errors_reject,
            stopped: false,
            error: None,
            feasible: Vec::new(),
            rejected: Vec::new(),
        }
    }

    /// How many examined nodes each plugin rejected (by the rejecting plugin's name).
    fn rejected_by_plugin(&self) -> rustc_hash::FxHashMap<&str, u32> {
        let mut m = rustc_hash::FxHashMap::default();
        for (_, s) in &self.rejected {
            *m.entry(s.plugin()).or_insert(0) += 1;
        }
        m
    }

    /// Takes one node's result; true when the search is over.
    fn consume(&mut self, idx: usize, s: Status) -> bool {
        if self.stopped {
            return true;
        }
        if s.is_success() {
            if self.feasible.len() >= self.num_to_find {
                // This node made one too many: upstream cancels and does not count it.
                self.stopped = true;
                return true;
            }
            self.feasible.push(idx);
            return false;
        }
        if s.code() == Code::Error && !self.errors_reject {
            self.error = Some(s);
            self.stopped = true;
            return true;
        }
        self.rejected.push((idx, s));
        false
    }
}
