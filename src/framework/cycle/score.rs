//! PreScore, Score, NormalizeScore and host selection (`prioritizeNodes`).

use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::Serialize;

use super::{CycleEnv, CycleOutcome, Phase, PluginRun, SchedulingCycle};
use crate::extender::MAX_EXTENDER_PRIORITY;
use crate::plugin::{MAX_NODE_SCORE, MIN_NODE_SCORE, NodeScore};
use crate::profile::ExtensionPoint;
use crate::select::{Scored, select_host};
use crate::status::Status;

/// One score plugin's scores over the feasible nodes.
#[derive(Debug, Clone, Serialize)]
pub struct PluginScores {
    pub name: &'static str,
    pub weight: i64,
    /// What Score returned.
    pub raw: Vec<i64>,
    /// After NormalizeScore (equal to `raw` for plugins without it).
    pub normalized: Vec<i64>,
    pub has_normalize: bool,
}

impl PluginScores {
    pub fn weighted(&self, node: usize) -> i64 {
        self.normalized[node] * self.weight
    }
}

/// Scores of every feasible node.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ScoreTable {
    /// Feasible nodes (snapshot indices), in feasible order.
    pub nodes: Vec<usize>,
    /// Score plugins that were not skipped at PreScore, in profile order.
    pub plugins: Vec<PluginScores>,
    /// Each interested extender's scores, in configuration order (filled at host
    /// selection).
    pub extenders: Vec<super::ExtenderScores>,
    /// Sum of weighted scores per node, extenders included (filled at host selection).
    pub totals: Vec<i64>,
    /// Tie-breakers: non-zero only for nodes that extenders scored (see
    /// `framework::extender::TieBreaker`).
    pub randomizers: Vec<u64>,
    /// The node upstream's heap picks (index into `nodes`).
    pub chosen: Option<usize>,
}

/// One entry of a node's score breakdown: a Score plugin or an extender.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScoreColumn<'a> {
    /// The plugin name, or `extender:<urlPrefix>`.
    pub name: &'a str,
    /// What the plugin's Score (0..=100) or the extender (0..=10) returned.
    pub raw: i64,
    /// After NormalizeScore; for extenders, the score scaled to 0..=100.
    pub normalized: i64,
    pub weight: i64,
    /// What was added to the node's total.
    pub weighted: i64,
}

impl ScoreTable {
    /// The score breakdown of the `i`-th node: Score plugins in profile order, then
    /// extenders in configuration order (upstream's `NodePluginScores.Scores`).
    pub fn breakdown(&self, i: usize) -> Vec<ScoreColumn<'_>> {
        let plugins = self.plugins.iter().map(|p| ScoreColumn {
            name: p.name,
            raw: p.raw.get(i).copied().unwrap_or(0),
            normalized: p.normalized.get(i).copied().unwrap_or(0),
            weight: p.weight,
            weighted: p.normalized.get(i).copied().unwrap_or(0) * p.weight,
        });
        let extenders = self.extenders.iter().map(|x| {
            let raw = x.raw.get(i).copied().unwrap_or(0);
            ScoreColumn {
                name: &x.name,
                raw,
                normalized: raw.wrapping_mul(MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY),
                weight: x.weight,
                weighted: x.weighted.get(i).copied().unwrap_or(0),
            }
        });
        plugins.chain(extenders).collect()
    }
}

impl SchedulingCycle {
    /// Runs the next PreScore plugin, or with `all` every remaining one.
    pub(super) fn advance_pre_score(&mut self, env: &CycleEnv, all: bool) {
        let plugins = env.framework.plugins(ExtensionPoint::PreScore);
        let h = env.handle();
        // Taken out for the loop (plugins get `&mut self.state`), put back after it.
        let returned = self.extender_feasible_nodes.take();
        let nodes: Vec<_> = match returned.as_ref() {
            Some(r) => r.iter().collect(),
            None => self
                .feasible
                .iter()
                .map(|&i| &env.snapshot.list()[i])
                .collect(),
        };
        while let Some(e) = plugins.get(self.cursor) {
            self.cursor += 1;
            let started = Instant::now();
            let s = match e.plugin.as_pre_score() {
                Some(p) => p.pre_score(&h, &mut self.state, &self.pod, &nodes),
                None => Status::success(),
            };
            self.record(e.name, &s, started);
            if s.is_skip() {
                let mut skip = self.state.skip_score_plugins().to_vec();
                skip.push(e.name);
                self.state.set_skip_score_plugins(skip);
            } else if !s.is_success() {
                let err = Status::error(format!(
                    "running PreScore plugin {:?}: {}",
                    e.name,
                    s.message()
                ));
                drop(nodes);
                self.extender_feasible_nodes = returned;
                return self.finish(CycleOutcome::Error(err));
            }
            if !all && self.cursor < plugins.len() {
                drop(nodes);
                self.extender_feasible_nodes = returned;
                return;
            }
        }
        drop(nodes);
        self.extender_feasible_nodes = returned;
        // Set up the score table for the plugins that will run.
        let skip = self.state.skip_score_plugins();
        let n = self.feasible.len();
        let plugins = env
            .framework
            .plugins(ExtensionPoint::Score)
            .iter()
            .filter(|e| !skip.contains(&e.name))
            .map(|e| PluginScores {
                name: e.name,
                weight: env.framework.score_weight(e.name),
                raw: Vec::new(),
                normalized: Vec::new(),
                has_normalize: e.plugin.as_score().is_some_and(|s| s.has_normalize()),
            })
            .collect();
        self.scores = Some(ScoreTable {
            nodes: self.feasible.clone(),
            plugins,
            extenders: Vec::new(),
            totals: vec![0; n],
            randomizers: vec![0; n],
            chosen: None,
        });
        self.enter(Phase::Score);
    }

    /// Runs the next score plugin over every feasible node; with `all`, every remaining
    /// plugin in one pass over the nodes (as upstream does, node by node).
    pub(super) fn advance_score(&mut self, env: &CycleEnv, all: bool) {
        let Some(table) = self.scores.as_ref() else {
            return self.enter(Phase::SelectHost);
        };
        let first = self.cursor;
        let last = if all {
            table.plugins.len()
        } else {
            (first + 1).min(table.plugins.len())
        };
        if first >= last {
            return self.enter(Phase::NormalizeScore);
        }
        let h = env.handle();
        let plugins: Vec<(&'static str, &dyn crate::plugin::ScorePlugin)> = table.plugins
            [first..last]
            .iter()
            .filter_map(|ps| {
                let e = env
                    .framework
                    .plugins(ExtensionPoint::Score)
                    .iter()
                    .find(|e| e.name == ps.name)?;
                Some((ps.name, e.plugin.as_score()?))
            })
            .collect();
        let state = &self.state;
        let pod = &self.pod;
        let nodes = &table.nodes;
        let returned = self.extender_feasible_nodes.as_deref();
        let width = plugins.len();
        let refs: Vec<&crate::NodeInfo> = (0..nodes.len())
            .map(|i| match returned.and_then(|r| r.get(i)) {
                Some(n) => n,
                None => &env.snapshot.list()[nodes[i]],
            })
            .collect();
        // Plugin by plugin over a run of nodes (each plugin reads its state once per run);
        // failures come back as (node, plugin, status), the first per plugin and run, and
        // each plugin's time is taken once per run.
        let score_run = |from: usize, to: usize| {
            let mut cols: Vec<Vec<i64>> = Vec::with_capacity(width);
            let mut failures: Vec<(usize, usize, Status)> = Vec::new();
            let mut times = vec![Duration::ZERO; width];
            for (k, (_, p)) in plugins.iter().enumerate() {
                let started = Instant::now();
                let mut col = vec![0i64; to - from];
                if let Some((i, s)) = p.score_nodes(&h, state, pod, &refs[from..to], &mut col) {
                    failures.push((from + i, k, s));
                }
                cols.push(col);
                times[k] = started.elapsed();
            }
            (cols, failures, times)
        };
        let (cols, failures, times) = match env.pool {
            Some(pool) if nodes.len() >= super::PARALLEL_MIN_NODES && width > 0 => {
                let runs = (pool.current_num_threads() * 2).clamp(1, nodes.len() / 64);
                let size = nodes.len().div_ceil(runs);
                let parts: Vec<_> = pool.install(|| {
                    (0..runs)
                        .into_par_iter()
                        .map(|r| score_run(r * size, ((r + 1) * size).min(nodes.len())))
                        .collect()
                });
                let mut cols = vec![Vec::with_capacity(nodes.len()); width];
                let mut failures = Vec::new();
                let mut times = vec![Duration::ZERO; width];
                for (part, fails, t) in parts {
                    for (col, piece) in cols.iter_mut().zip(part) {
                        col.extend(piece);
                    }
                    failures.extend(fails);
                    for (a, b) in times.iter_mut().zip(t) {
                        *a += b;
                    }
                }
                (cols, failures, times)
            }
            _ => score_run(0, nodes.len()),
        };
        drop(refs);
        self.cursor = last;
        let mut failure: Option<(&'static str, Status)> = None;
        for (k, ((name, _), raw)) in plugins.iter().zip(cols).enumerate() {
            let failed = failures
                .iter()
                .filter(|(_, fk, _)| *fk == k)
                .min_by_key(|(i, _, _)| *i)
                .map(|(_, _, s)| s.clone());
            if let Some(t) = self.scores.as_mut()
                && let Some(ps) = t.plugins.iter_mut().find(|p| p.name == *name)
            {
                ps.normalized = raw.clone();
                ps.raw = raw;
            }
            self.trace.push(PluginRun {
                phase: self.phase,
                plugin: (*name).into(),
                status: failed.clone().unwrap_or_default(),
                duration: times[k],
                rejected: None,
                changed: Vec::new(),
            });
            if failure.is_none() {
                failure = failed.map(|s| (*name, s));
            }
        }
        if let Some((name, s)) = failure {
            let err = Status::error(format!(
                "running Score plugins: plugin {name:?} failed with: {}",
                s.message()
            ));
            return self.finish(CycleOutcome::Error(err));
        }
        if self.cursor >= self.scores.as_ref().map_or(0, |t| t.plugins.len()) {
            self.enter(Phase::NormalizeScore);
        }
    }

    pub(super) fn advance_normalize(&mut self, env: &CycleEnv) {
        let Some(table) = self.scores.as_mut() else {
            return self.enter(Phase::SelectHost);
        };
        // Only plugins with NormalizeScore are steps here.
        while table
            .plugins
            .get(self.cursor)
            .is_some_and(|p| !p.has_normalize)
        {
            self.cursor += 1;
        }
        let Some(ps) = table.plugins.get_mut(self.cursor) else {
            return self.enter(Phase::SelectHost);
        };
        self.cursor += 1;
        let started = Instant::now();
        let h = env.handle();
        let Some(plugin) = env
            .framework
            .plugins(ExtensionPoint::Score)
            .iter()
            .find(|e| e.name == ps.name)
            .and_then(|e| e.plugin.as_score())
        else {
            return;
        };
        let mut list: Vec<NodeScore> = table
            .nodes
            .iter()
            .zip(&ps.raw)
            .map(|(&i, &score)| NodeScore {
                name: env.snapshot.list()[i].name(),
                score,
            })
            .collect();
        let s = plugin.normalize_score(&h, &self.state, &self.pod, &mut list);
        ps.normalized = list.iter().map(|n| n.score).collect();
        let name = ps.name;
        self.record(name, &s, started);
        if !s.is_success() {
            let err = Status::error(format!(
                "running Normalize on Score plugins: plugin {name:?} failed with: {}",
                s.message()
            ));
            self.finish(CycleOutcome::Error(err))
        }
    }

    pub(super) fn select_host(&mut self, env: &CycleEnv) {
        let started = Instant::now();
        let Some(table) = self.scores.as_ref() else {
            return;
        };
        let n = table.nodes.len();
        let mut totals = vec![0i64; n];
        if table.plugins.is_empty()
            && !env.framework.has_score_plugins()
            && env.extenders.is_empty()
        {
            // Without score plugins or extenders every node scores 1.
            totals.iter_mut().for_each(|t| *t = 1);
        }
        for ps in &table.plugins {
            for (i, t) in totals.iter_mut().enumerate() {
                let score = ps.normalized[i];
                if !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&score) {
                    let err = Status::error(format!(
                        "applying score defaultWeights on Score plugins: plugin {:?} returns an invalid score {score}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                        ps.name
                    ));
                    return self.finish(CycleOutcome::Error(err));
                }
                *t += score * ps.weight;
            }
        }
        let (ext_scores, randomizers) = self.prioritize_with_extenders(env, &mut totals);
        let scored: Vec<Scored> = totals
            .iter()
            .zip(&randomizers)
            .enumerate()
            .map(|(index, (&total, &randomizer))| Scored {
                index,
                total,
                randomizer,
            })
            .collect();
        let chosen = select_host(&scored);
        // A pod with a signature leaves its ranking to the batch.
        if self
            .batch
            .as_ref()
            .is_some_and(|b| b.signature.signed().is_some())
        {
            let nodes = self.scores.as_ref().map_or(&[][..], |t| &t.nodes[..]);
            let names: Vec<String> = nodes
                .iter()
                .map(|&i| env.snapshot.list()[i].name().to_string())
                .collect();
            self.ranking = names.into_iter().zip(scored).collect();
        }
        let Some(table) = self.scores.as_mut() else {
            return;
        };
        table.extenders = ext_scores;
        table.totals = totals;
        table.randomizers = randomizers;
        table.chosen = chosen;
        let Some(c) = chosen else {
            return self.finish(CycleOutcome::Error(Status::error("no node to select")));
        };
        let node = env.snapshot.list()[table.nodes[c]].name().to_string();
        let feasible = n;
        let evaluated = self.evaluated_nodes();
        self.record("(select host)", &Status::success(), started);
        self.finish(CycleOutcome::Selected {
            node,
            evaluated_nodes: evaluated,
            feasible_nodes: feasible,
        });
    }
}
