//! Extenders in the cycle: filtering after the Filter plugins (upstream
//! `findNodesThatPassExtenders`) and scoring after the Score plugins (the extender part
//! of `prioritizeNodes`).
//!
//! Filtering extenders run one after the other, each on the nodes the previous one let
//! through; scoring extenders are called concurrently (a few at a time) and their
//! results applied in configuration order, which gives the same totals as upstream's
//! goroutines.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde::Serialize;

use super::{CycleEnv, PluginRun, SchedulingCycle};
use crate::extender::{
    CallOutcome, Extender, ExtenderCall, ExtenderError, Filtered, HostPriority,
    MAX_EXTENDER_PRIORITY, TieBreaker,
};
use crate::node_info::NodeInfo;
use crate::plugin::MAX_NODE_SCORE;
use crate::snapshot::Snapshot;
use crate::status::{Code, Status};

/// At most this many extenders are asked for scores at once. Upstream starts a goroutine
/// per extender; a thread each is too many when a configuration lists hundreds (each
/// reserves a stack, and under a memory limit starting one fails).
pub const MAX_CONCURRENT_CALLS: usize = 8;

/// `call` on each of `items`, at most `MAX_CONCURRENT_CALLS` at a time (this thread is one
/// of the callers); the answers in the order of `items`, a panic as `Err`.
pub fn call_each<T: Sync, R: Send>(
    items: &[T],
    call: impl Fn(&T) -> R + Sync,
) -> Vec<std::thread::Result<R>> {
    let next = AtomicUsize::new(0);
    let answers: Vec<Mutex<Option<std::thread::Result<R>>>> =
        items.iter().map(|_| Mutex::new(None)).collect();
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call(item)));
            *answers[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(answer);
        }
    };
    std::thread::scope(|s| {
        for _ in 1..items.len().min(MAX_CONCURRENT_CALLS) {
            let started = std::thread::Builder::new()
                .name("extender-call".into())
                .spawn_scoped(s, work);
            if let Err(e) = started {
                // The threads started, and this one, make the remaining calls.
                tracing::debug!(err = %e, "cannot start another thread for extender calls");
                break;
            }
        }
        work();
    });
    answers
        .into_iter()
        .map(|a| {
            a.into_inner()
                .unwrap_or_else(PoisonError::into_inner)
                .unwrap_or_else(|| Err(Box::new("extender call not made")))
        })
        .collect()
}

/// One extender's scores over the feasible nodes (kept next to the plugins' in the
/// score table).
#[derive(Debug, Clone, Serialize)]
pub struct ExtenderScores {
    /// `extender:<urlPrefix>`.
    pub name: String,
    /// The weight the extender's answer came with (0 for extenders that do not score).
    pub weight: i64,
    /// The extender's scores (0..=10) per feasible node; 0 where it gave none.
    pub raw: Vec<i64>,
    /// `raw × weight × (MaxNodeScore / MaxExtenderPriority)`: what was added to the total.
    pub weighted: Vec<i64>,
    /// Why the extender gave no scores (its errors are ignored, as upstream).
    pub error: Option<String>,
}

/// A feasible node: its snapshot index and, after a filtering extender that is not
/// nodeCacheCapable, the NodeInfo built from the node object it returned.
type FeasibleNode = (usize, Option<NodeInfo>);

impl SchedulingCycle {
    /// The NodeInfo the `i`-th feasible node is scored on: the snapshot's, or the one
    /// built from an extender's answer.
    pub fn feasible_node<'s>(&'s self, snapshot: &'s Snapshot, i: usize) -> &'s NodeInfo {
        match self.extender_feasible_nodes.as_ref().and_then(|v| v.get(i)) {
            Some(n) => n,
            None => &snapshot.list()[self.feasible[i]],
        }
    }

    fn take_feasible(&mut self) -> Vec<FeasibleNode> {
        let over = self.extender_feasible_nodes.take();
        let mut over = over.map(Vec::into_iter);
        self.feasible
            .drain(..)
            .map(|i| (i, over.as_mut().and_then(Iterator::next)))
            .collect()
    }

    /// Runs the filtering extenders over the feasible nodes. Failed nodes get their
    /// statuses in the diagnosis; `Err` is an error of an extender that is not ignorable.
    pub(super) fn run_extender_filters(&mut self, env: &CycleEnv) -> Result<(), Status> {
        if !env.extenders.iter().any(|e| e.is_filter()) {
            return Ok(());
        }
        let mut current = self.take_feasible();
        let result = self.filter_with_extenders(env, &mut current);
        self.put_feasible(env.snapshot, current);
        result
    }

    fn filter_with_extenders(
        &mut self,
        env: &CycleEnv,
        current: &mut Vec<FeasibleNode>,
    ) -> Result<(), Status> {
        for ext in env.extenders {
            let ext: &dyn Extender = ext.as_ref();
            if current.is_empty() {
                break;
            }
            if !ext.is_interested(self.pod.pod()) {
                continue;
            }
            if !ext.is_filter() {
                // Upstream's call returns the nodes unchanged without asking the extender.
                continue;
            }
            let started = Instant::now();
            let sent = current.len();
            let answer = {
                let infos: Vec<&NodeInfo> = current
                    .iter()
                    .map(|(i, n)| n.as_ref().unwrap_or(&env.snapshot.list()[*i]))
                    .collect();
                ext.filter(self.pod.pod(), &infos)
                    .and_then(|r| resolve(ext, env.snapshot, current, r))
            };
            match answer {
                Err(e) => {
                    let ignored = ext.is_ignorable();
                    self.record_extender(
                        ext,
                        "filter",
                        sent,
                        CallOutcome::Error {
                            message: e.0.clone(),
                            ignored,
                        },
                        started,
                    );
                    if ignored {
                        tracing::info!(extender = ext.name(), err = %e, "skipping extender as it returned error and has ignorable flag set");
                        continue;
                    }
                    return Err(Status::error(e.0));
                }
                Ok((next, failed, unresolvable)) => {
                    let nts = &mut self.diagnosis.node_to_status;
                    for (node, msg) in &unresolvable {
                        nts.set(
                            node.clone(),
                            Status::with_reasons(
                                Code::UnschedulableAndUnresolvable,
                                vec![msg.clone().into()],
                            ),
                        );
                    }
                    for (node, msg) in &failed {
                        if !unresolvable.contains_key(node) {
                            nts.set(
                                node.clone(),
                                Status::with_reasons(Code::Unschedulable, vec![msg.clone().into()]),
                            );
                        }
                    }
                    let name_of = |(i, n): &FeasibleNode| {
                        n.as_ref()
                            .unwrap_or(&env.snapshot.list()[*i])
                            .name()
                            .to_string()
                    };
                    let passed: Vec<String> = next.iter().map(name_of).collect();
                    // Sent, but neither passed nor failed: gone without a status.
                    let dropped = current
                        .iter()
                        .map(name_of)
                        .filter(|n| {
                            !passed.contains(n)
                                && !failed.contains_key(n)
                                && !unresolvable.contains_key(n)
                        })
                        .collect();
                    self.record_extender(
                        ext,
                        "filter",
                        sent,
                        CallOutcome::Filtered {
                            passed,
                            failed,
                            failed_and_unresolvable: unresolvable,
                            dropped,
                        },
                        started,
                    );
                    *current = next;
                }
            }
        }
        Ok(())
    }

    fn put_feasible(&mut self, snapshot: &Snapshot, nodes: Vec<FeasibleNode>) {
        if nodes.iter().all(|(_, n)| n.is_none()) {
            self.feasible = nodes.into_iter().map(|(i, _)| i).collect();
            self.extender_feasible_nodes = None;
            return;
        }
        let (idx, infos): (Vec<usize>, Vec<NodeInfo>) = nodes
            .into_iter()
            .map(|(i, n)| (i, n.unwrap_or_else(|| snapshot.list()[i].clone())))
            .unzip();
        self.feasible = idx;
        self.extender_feasible_nodes = Some(infos);
    }

    fn record_extender(
        &mut self,
        ext: &dyn Extender,
        verb: &'static str,
        nodes: usize,
        outcome: CallOutcome,
        started: Instant,
    ) {
        let (code, message) = match &outcome {
            CallOutcome::Error { message, .. } => (Code::Error, message.clone()),
            CallOutcome::Filtered { passed, .. } => (
                Code::Success,
                format!("{} of {nodes} node(s) passed", passed.len()),
            ),
            CallOutcome::Prioritized { scores, weight } => (
                Code::Success,
                format!("scored {} node(s), weight {weight}", scores.len()),
            ),
            CallOutcome::Preempted { candidates } => (
                Code::Success,
                format!("kept {} of {nodes} candidate(s)", candidates.len()),
            ),
        };
        self.trace.push(PluginRun {
            phase: self.phase,
            plugin: ext.name().to_string().into(),
            status: Status::new(code, message),
            duration: started.elapsed(),
            rejected: None,
            changed: Vec::new(),
        });
        self.extender_calls.push(ExtenderCall {
            extender: ext.name().to_string(),
            verb,
            nodes,
            outcome,
        });
    }

    /// Asks every interested extender for scores and adds them to `totals` (upstream's
    /// `score × weight × MaxNodeScore/MaxExtenderPriority`); nodes any extender scored get
    /// a tie-breaker. Returns the per-extender scores and the tie-breakers.
    pub(super) fn prioritize_with_extenders(
        &mut self,
        env: &CycleEnv,
        totals: &mut [i64],
    ) -> (Vec<ExtenderScores>, Vec<u64>) {
        let n = self.feasible.len();
        let mut randomizers = vec![0u64; n];
        if env.extenders.is_empty() || n == 0 {
            return (Vec::new(), randomizers);
        }
        let started = Instant::now();
        let interested: Vec<&dyn Extender> = env
            .extenders
            .iter()
            .filter(|e| e.is_interested(self.pod.pod()))
            .map(|e| e.as_ref())
            .collect();
        let answers: Vec<Result<(Vec<HostPriority>, i64), ExtenderError>> = {
            let nodes: Vec<&NodeInfo> = (0..n)
                .map(|i| self.feasible_node(env.snapshot, i))
                .collect();
            let pod = &self.pod.pod();
            call_each(&interested, |e| e.prioritize(pod, &nodes))
                .into_iter()
                .map(|answer| {
                    answer.unwrap_or_else(|_| {
                        Err(ExtenderError("extender prioritize call panicked".into()))
                    })
                })
                .collect()
        };
        let names: Vec<String> = (0..n)
            .map(|i| self.feasible_node(env.snapshot, i).name().to_string())
            .collect();
        let feasible_names: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        // Per node name, over all extenders (upstream's allNodeExtendersScores).
        let mut by_name: BTreeMap<&str, i64> = BTreeMap::new();
        let mut table = Vec::new();
        for (&ext, answer) in interested.iter().zip(answers) {
            match answer {
                Err(e) => {
                    tracing::debug!(extender = ext.name(), err = %e, "failed to run extender's priority function; no score given by this extender");
                    table.push(ExtenderScores {
                        name: ext.name().to_string(),
                        weight: ext.weight(),
                        raw: vec![0; n],
                        weighted: vec![0; n],
                        error: Some(e.0.clone()),
                    });
                    self.record_extender(
                        ext,
                        "prioritize",
                        n,
                        CallOutcome::Error {
                            message: e.0,
                            ignored: true,
                        },
                        started,
                    );
                }
                Ok((list, weight)) => {
                    let mut raw: BTreeMap<&str, i64> = BTreeMap::new();
                    let mut weighted: BTreeMap<&str, i64> = BTreeMap::new();
                    for hp in &list {
                        let Some(&name) = feasible_names.get(hp.host.as_str()) else {
                            // Hosts that are not feasible nodes are recorded but unused.
                            continue;
                        };
                        let fin = hp
                            .score
                            .wrapping_mul(weight)
                            .wrapping_mul(MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY);
                        *raw.entry(name).or_default() += hp.score;
                        *weighted.entry(name).or_default() += fin;
                        let t = by_name.entry(name).or_default();
                        *t = t.wrapping_add(fin);
                    }
                    table.push(ExtenderScores {
                        name: ext.name().to_string(),
                        weight,
                        raw: names
                            .iter()
                            .map(|x| raw.get(x.as_str()).copied().unwrap_or(0))
                            .collect(),
                        weighted: names
                            .iter()
                            .map(|x| weighted.get(x.as_str()).copied().unwrap_or(0))
                            .collect(),
                        error: None,
                    });
                    // Extenders without a prioritize verb were not asked (their zeros
                    // still count, as upstream).
                    if ext.is_prioritizer() {
                        self.record_extender(
                            ext,
                            "prioritize",
                            n,
                            CallOutcome::Prioritized {
                                weight,
                                scores: list,
                            },
                            started,
                        );
                    }
                }
            }
        }
        let mut tie = TieBreaker::for_pod(&self.pod.key);
        for (i, name) in names.iter().enumerate() {
            if let Some(add) = by_name.get(name.as_str()) {
                totals[i] = totals[i].wrapping_add(*add);
                randomizers[i] = tie.next_value();
            }
        }
        (table, randomizers)
    }
}

type Resolved = (
    Vec<FeasibleNode>,
    BTreeMap<String, String>,
    BTreeMap<String, String>,
);

/// An extender's filter answer in terms of feasible nodes. A returned node object must
/// name a node of the cluster (kubestep's rule: upstream would go on with whatever
/// object came back).
fn resolve(
    ext: &dyn Extender,
    snapshot: &Snapshot,
    current: &[FeasibleNode],
    r: crate::extender::FilterResult,
) -> Result<Resolved, ExtenderError> {
    let mut next = Vec::with_capacity(r.nodes.len());
    for f in r.nodes {
        match f {
            Filtered::Input(p) => {
                if let Some(n) = current.get(p) {
                    next.push(n.clone());
                }
            }
            Filtered::Returned(node) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                let Some(idx) = snapshot.position(&name) else {
                    return Err(ExtenderError(format!(
                        "extender {} returned node {} which is not in the cluster",
                        crate::config::field::go_quote(ext.url_prefix()),
                        crate::config::field::go_quote(&name)
                    )));
                };
                next.push((idx, Some(NodeInfo::new(Arc::new(*node)))));
            }
        }
    }
    Ok((next, r.failed, r.failed_and_unresolvable))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_calls_run_a_few_at_a_time_in_order() {
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let items: Vec<usize> = (0..200).collect();
        let answers = call_each(&items, |&i| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(2));
            running.fetch_sub(1, Ordering::SeqCst);
            if i == 7 {
                panic!("extender 7 fails");
            }
            i * 2
        });
        let most = most.load(Ordering::SeqCst);
        assert!(
            (2..=MAX_CONCURRENT_CALLS).contains(&most),
            "{most} calls at once"
        );
        assert_eq!(answers.len(), 200);
        assert!(answers[7].is_err());
        for (i, a) in answers.iter().enumerate().filter(|(i, _)| *i != 7) {
            assert_eq!(*a.as_ref().unwrap(), i * 2);
        }
    }
}
