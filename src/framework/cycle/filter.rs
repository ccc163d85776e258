//! The Filter phase: find feasible nodes as `findNodesThatFitPod` does.
//!
//! Nodes are examined from a round-robin start, and the search stops once the
//! (N+1)-th feasible node turns up, N being `numFeasibleNodesToFind`; this is upstream's
//! behaviour with its parallelism taken as sequential, so results are deterministic.
//! The fast path runs every plugin on a node before moving on; when stepping plugin by
//! plugin or building the full verdict matrix, plugins run column by column instead and
//! the same sequential rule is applied to the results afterwards.

use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use super::{CycleEnv, CycleOutcome, Detail, Phase, SchedulingCycle};
use crate::extender;
use crate::framework::cycle_state::CycleState;
use crate::framework::node_info::NodeInfo;
use crate::framework::profile::ExtensionPoint;
use crate::framework::runtime::{filter_status, run_filter_list};
use crate::framework::status::{Code, Status};

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
    fn from_status(s: &Status) -> FilterCell {
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
        }
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

pub(super) struct FilterProgress {
    candidates: Candidates,
    num_to_find: usize,
    column_mode: bool,
    next_plugin: usize,
    /// Column mode: pass-1 result per candidate (first failure so far; None = passing).
    first_failure: Vec<Option<Status>>,
    /// Pass-1 state and node with nominated pods added, for candidates that have some.
    nominated: Vec<Option<Box<(CycleState, NodeInfo)>>>,
    all_nodes: usize,
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

    /// Upstream first tries the node the pod is nominated to, alone.
    fn check_nominated_node(&mut self, env: &CycleEnv) -> bool {
        let nnn = self.pod.nominated_node_name().to_string();
        if nnn.is_empty() || self.cursor > 0 {
            return false;
        }
        self.cursor = 1;
        let Some(idx) = env.snapshot.position(&nnn) else {
            return false;
        };
        let started = Instant::now();
        let h = env.handle();
        let node = &env.snapshot.list()[idx];
        let s =
            env.framework
                .run_filter_plugins_with_nominated_pods(&h, &self.state, &self.pod, node);
        self.record("(nominated node)", &s, started);
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
        if s.code() == Code::Error {
            self.finish(CycleOutcome::Error(s));
            return true;
        }
        self.diagnosis.add_plugin_status(&s);
        self.diagnosis.node_to_status.set(nnn, s);
        false
    }

    fn init_filter(&mut self, env: &CycleEnv, one_plugin: bool) {
        let all = env.snapshot.list();
        let mut narrowed = None;
        if let Some(names) = self
            .pre_filter
            .result
            .as_ref()
            .and_then(|r| r.node_names.as_ref())
        {
            let nodes: Vec<usize> = (0..all.len())
                .filter(|&i| names.contains(all[i].name()))
                .collect();
            narrowed = Some(nodes);
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
            env.framework.has_score_plugins() || extender::has_prioritizers(env.extenders);
        if !extender::has_filters(env.extenders) && !has_scoring {
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

    /// Builds the pass-1 context (nominated pods added) for candidates that need one.
    fn prepare_nominated(&mut self, env: &CycleEnv) {
        let h = env.handle();
        let Some(p) = self.filter.as_mut() else {
            return;
        };
        if env.nominator.is_empty() {
            p.nominated = vec![None; 0];
            return;
        }
        let mut out = Vec::with_capacity(p.candidates.len());
        for ci in 0..p.candidates.len() {
            let idx = p.candidates.get(ci);
            let node = &env.snapshot.list()[idx];
            match env
                .framework
                .add_nominated_pods(&h, &self.pod, &self.state, node)
            {
                Ok(ctx) => out.push(ctx.map(Box::new)),
                Err(s) => {
                    p.first_failure[ci] = Some(Status::error(s.message()));
                    out.push(None);
                }
            }
        }
        p.nominated = out;
    }

    fn run_filter_column(&mut self, env: &CycleEnv) {
        let started = Instant::now();
        let h = env.handle();
        let full = self.detail == Detail::Full;
        let Some(p) = self.filter.as_mut() else {
            return;
        };
        let k = p.next_plugin;
        p.next_plugin += 1;
        let entries = env.framework.plugins(ExtensionPoint::Filter);
        let e = &entries[k];
        let skipped = self.state.is_filter_skipped(e.name);
        let state = &self.state;
        let pod = &self.pod;
        // Only failures are materialized; passing nodes (the common case) cost nothing.
        let failures: Vec<(usize, Status)> = if skipped {
            Vec::new()
        } else {
            let eval = |ci: usize| -> Option<(usize, Status)> {
                if !full && p.first_failure[ci].is_some() {
                    return None;
                }
                let (st, node) = match p.nominated.get(ci).and_then(|o| o.as_deref()) {
                    Some((st, node)) => (st, node),
                    None => (state, &env.snapshot.list()[p.candidates.get(ci)]),
                };
                let f = e.plugin.as_filter()?;
                let s = filter_status(e.name, f.filter(&h, st, pod, node));
                (!s.is_success()).then_some((ci, s))
            };
            par_filter_map(env, p.candidates.len(), eval)
        };
        let rejected = failures.len();
        for (ci, s) in &failures {
            if p.first_failure[*ci].is_none() {
                p.first_failure[*ci] = Some(s.clone());
            }
        }
        if let Some(m) = self.matrix.as_mut() {
            m.push_sparse_column(skipped, &failures);
        }
        let summary = if skipped {
            Status::skip()
        } else if rejected > 0 {
            Status::unschedulable(format!("rejected {rejected} node(s)"))
        } else {
            Status::success()
        };
        self.record(e.name, &summary, started);
    }

    fn finalize_columns(&mut self, env: &CycleEnv) {
        let h = env.handle();
        let Some(mut p) = self.filter.take() else {
            return;
        };
        // Pass 2: a node that passed with its nominated pods must also pass without them.
        for ci in 0..p.candidates.len() {
            if p.first_failure[ci].is_none() && p.nominated.get(ci).is_some_and(|o| o.is_some()) {
                let node = &env.snapshot.list()[p.candidates.get(ci)];
                let s = env
                    .framework
                    .run_filter_plugins(&h, &self.state, &self.pod, node);
                if !s.is_success() {
                    p.first_failure[ci] = Some(s);
                }
            }
        }
        let results: Vec<Status> = p
            .first_failure
            .iter()
            .map(|f| f.clone().unwrap_or_default())
            .collect();
        let mut search = Search::new(p.num_to_find);
        for (ci, s) in results.into_iter().enumerate() {
            if search.consume(p.candidates.get(ci), s) {
                break;
            }
        }
        self.end_search(env, &p, search);
    }

    fn run_filter_fast(&mut self, env: &CycleEnv) {
        let started = Instant::now();
        let h = env.handle();
        let Some(p) = self.filter.take() else { return };
        let mut search = Search::new(p.num_to_find);
        if !env.framework.has_filter_plugins() {
            // Without Filter plugins the first N nodes from the start are feasible.
            search.feasible = (0..p.candidates.len().min(p.num_to_find))
                .map(|i| p.candidates.get(i))
                .collect();
            search.stopped = true;
        }
        // Without nominated pods every node runs the same plugin list: prepare it once.
        let active = env
            .nominator
            .is_empty()
            .then(|| env.framework.active_filters(&self.state));
        let state = &self.state;
        let pod = &self.pod;
        let eval = |ci: usize| {
            let node = &env.snapshot.list()[p.candidates.get(ci)];
            match &active {
                Some(list) => run_filter_list(list, &h, state, pod, node),
                None => env
                    .framework
                    .run_filter_plugins_with_nominated_pods(&h, state, pod, node),
            }
        };
        let mut next = 0;
        if env.pool.is_none() {
            // One node at a time, as the sequential reading of upstream's search.
            while !search.stopped && next < p.candidates.len() {
                let s = eval(next);
                search.consume(p.candidates.get(next), s);
                next += 1;
            }
        }
        while !search.stopped && next < p.candidates.len() {
            // Waves a little larger than what is still needed, evaluated in parallel and
            // consumed in order, so the result is the sequential one.
            let need = p.num_to_find.saturating_sub(search.feasible.len()) + 1;
            let wave = (need + need / 4).max(64).min(p.candidates.len() - next);
            let results: Vec<Status> = par_map(env, wave, |i| eval(next + i));
            for (i, s) in results.into_iter().enumerate() {
                if search.consume(p.candidates.get(next + i), s) {
                    break;
                }
            }
            next += wave;
        }
        let status = if search.error.is_some() {
            Status::error("")
        } else {
            Status::success()
        };
        self.record("(all filters)", &status, started);
        self.end_search(env, &p, search);
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
                .insert(extender::EXTENDER_NAME.to_string());
        }
        self.after_filter(env);
    }

    fn after_filter(&mut self, env: &CycleEnv) {
        match self.feasible.len() {
            0 => self.enter_post_filter_or_fail(env),
            1 => {
                let node = env.snapshot.list()[self.feasible[0]].name().to_string();
                let evaluated = 1 + self.diagnosis.node_to_status.len();
                self.finish(CycleOutcome::Selected {
                    node,
                    evaluated_nodes: evaluated,
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
    stopped: bool,
    error: Option<Status>,
    feasible: Vec<usize>,
    rejected: Vec<(usize, Status)>,
}

impl Search {
    fn new(num_to_find: usize) -> Search {
        Search {
            num_to_find,
            stopped: false,
            error: None,
            feasible: Vec::new(),
            rejected: Vec::new(),
        }
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
        if s.code() == Code::Error {
            self.error = Some(s);
            self.stopped = true;
            return true;
        }
        self.rejected.push((idx, s));
        false
    }
}

/// Filter-maps `0..n` in parallel on the configured pool, keeping order.
fn par_filter_map<T: Send>(
    env: &CycleEnv,
    n: usize,
    f: impl Fn(usize) -> Option<T> + Sync + Send,
) -> Vec<T> {
    match env.pool {
        Some(pool) if n > 64 => pool.install(|| {
            (0..n)
                .into_par_iter()
                .with_min_len(32)
                .filter_map(&f)
                .collect()
        }),
        _ => (0..n).filter_map(f).collect(),
    }
}

/// Maps `0..n` in parallel on the configured pool, keeping order.
fn par_map<T: Send>(env: &CycleEnv, n: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    match env.pool {
        Some(pool) if n > 32 => {
            pool.install(|| (0..n).into_par_iter().with_min_len(16).map(&f).collect())
        }
        _ => (0..n).map(f).collect(),
    }
}
