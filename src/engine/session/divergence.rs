//! Divergence: for a pod the recording binds (its real scheduler decided), kubestep's own
//! decision compared with the real node, and why the real node ranked lower or was
//! infeasible for kubestep. A pod the real scheduler placed by preemption is compared with
//! kubestep's own preemption: its nomination, and the candidates and how they ranked.

use serde::Serialize;

use crate::framework::cycle::{CycleEnv, CycleOutcome, FilterCell, SchedulingCycle};
use crate::framework::plugin::PostFilterResult;
use crate::framework::preemption::{DEFAULT_CRITERIA, DryRunVerdict, PreemptionTrace};
use crate::framework::status::Code;
use crate::plugins::defaultpreemption::STATE_KEY as PREEMPTION_STATE;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Divergence {
    /// `namespace/name`.
    pub pod: String,
    /// Where the recording bound the pod.
    pub real_node: String,
    /// kubestep's best nodes: every node with the top total score (empty when kubestep
    /// found the pod unschedulable).
    pub kubestep_nodes: Vec<String>,
    pub reason: String,
    /// kubestep preempted for the pod and nominated another node that ranks exactly as
    /// the real one: two equally valid choices, not a divergence of placement. Listed so
    /// the report says why the nodes differ; absent from the JSON when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tie: bool,
}

/// What the caller adds to a reason, from what only it knows (each called only for its
/// kind of divergence).
pub struct Notes<'a> {
    /// The real node was infeasible for kubestep: what else holds it (e.g. pods kubestep
    /// bound there itself).
    pub infeasible: &'a dyn Fn() -> String,
    /// kubestep's sampled search did not examine the real node: what it scores in one
    /// that does.
    pub not_examined: &'a dyn Fn() -> String,
}

/// kubestep's finished cycle against the real node; `None` when the real node is one of
/// kubestep's best nodes (or the cycle has no outcome). `logged` is how many nodes the
/// real scheduler evaluated for the pod, when its log was given.
pub fn compare(
    cycle: &SchedulingCycle,
    env: &CycleEnv,
    real: &str,
    logged: Option<usize>,
    notes: &Notes,
) -> Option<Divergence> {
    let snapshot = env.snapshot;
    let diverged = |nodes: Vec<String>, reason: String| Divergence {
        pod: cycle.pod.key.clone(),
        real_node: real.to_string(),
        kubestep_nodes: nodes,
        reason,
        tie: false,
    };
    match cycle.outcome.as_ref()? {
        CycleOutcome::Selected { node, .. } => {
            let mut best: Vec<String> = cycle
                .best_nodes(snapshot)
                .into_iter()
                .map(str::to_string)
                .collect();
            best.sort();
            if best.iter().any(|n| n == real) {
                return None;
            }
            let reason = why_not(cycle, env, real, node, &best, logged, notes);
            Some(diverged(best, reason))
        }
        CycleOutcome::Unschedulable {
            post_filter: Some(r),
            ..
        } if r.override_nomination && !r.nominated_node_name.is_empty() => {
            preempted(cycle, env, real, r)
        }
        // PostFilter left the pod's nomination as it was (a preemption already under way
        // on that node): kubestep waits for the node the pod went to.
        CycleOutcome::Unschedulable {
            post_filter: None, ..
        } if cycle.pod.nominated_node_name() == real => None,
        CycleOutcome::Unschedulable { fit_error, .. } => Some(diverged(
            Vec::new(),
            format!(
                "kubestep found the pod unschedulable: {}",
                fit_error.message()
            ),
        )),
        CycleOutcome::Error(s) => Some(diverged(
            Vec::new(),
            format!("kubestep found the pod unschedulable: {}", s.message()),
        )),
    }
}

/// Why `real` is not among `best`: a lower total (with the per-plugin weighted
/// differences), a Filter rejection, or not evaluated at all.
fn why_not(
    cycle: &SchedulingCycle,
    env: &CycleEnv,
    real: &str,
    chosen: &str,
    best: &[String],
    logged: Option<usize>,
    notes: &Notes,
) -> String {
    let snapshot = env.snapshot;
    let Some(pos) = snapshot.position(real) else {
        return format!("node {real} was not in the cluster when kubestep scheduled the pod");
    };
    if let Some(why) = batch_cause(cycle, real, chosen, logged) {
        return why;
    }
    if let Some(t) = &cycle.scores
        && let Some(ri) = t.nodes.iter().position(|&i| i == pos)
    {
        // Compare with the node kubestep chose, or the first best one.
        let target = if best.iter().any(|b| b == chosen) {
            chosen
        } else {
            best.first().map_or(chosen, String::as_str)
        };
        let bi = snapshot
            .position(target)
            .and_then(|p| t.nodes.iter().position(|&i| i == p));
        if let Some(bi) = bi {
            let (rc, bc) = (t.breakdown(ri), t.breakdown(bi));
            let mut diffs: Vec<(i64, &str)> = rc
                .iter()
                .zip(&bc)
                .map(|(r, b)| (r.weighted - b.weighted, r.name))
                .filter(|(d, _)| *d != 0)
                .collect();
            diffs.sort();
            let list: Vec<String> = diffs.iter().map(|(d, n)| format!("{n} {d:+}")).collect();
            let rt = t.totals.get(ri).copied().unwrap_or(0);
            let bt = t.totals.get(bi).copied().unwrap_or(0);
            let detail = if list.is_empty() {
                String::new()
            } else {
                format!(" (weighted differences: {})", list.join(", "))
            };
            return format!(
                "{real} ranked lower: total score {rt} against {bt} on {target}{detail}"
            );
        }
    }
    // The real node's row of the verdict matrix, computed for it alone.
    if let Some(row) = cycle.filter_row(env, pos) {
        for (plugin, cell) in row {
            match cell {
                FilterCell::Reject { reasons, .. } => {
                    return format!(
                        "{real} was infeasible for kubestep: {plugin} rejected it: {}{}",
                        reasons.join(", "),
                        (notes.infeasible)()
                    );
                }
                FilterCell::Error { message } => {
                    return format!(
                        "{real} was infeasible for kubestep: {plugin}: {message}{}",
                        (notes.infeasible)()
                    );
                }
                FilterCell::Pass | FilterCell::Skipped => {}
            }
        }
        return format!(
            "{real} passed every filter but was not among the {} feasible nodes kubestep scored (percentageOfNodesToScore){}{}",
            cycle.feasible.len(),
            sampling(cycle, logged),
            (notes.not_examined)()
        );
    }
    if cycle.diagnosis.node_to_status.contains(real) {
        let s = cycle.diagnosis.node_to_status.get(real);
        return format!(
            "{real} was infeasible for kubestep: {} rejected it: {}{}",
            s.plugin(),
            s.message(),
            (notes.infeasible)()
        );
    }
    format!(
        "{real} was not evaluated: kubestep stopped searching after {} feasible nodes (percentageOfNodesToScore){}{}",
        cycle.feasible.len(),
        sampling(cycle, logged),
        (notes.not_examined)()
    )
}

/// OpportunisticBatching as the cause: kubestep took its batch's hint and the real
/// scheduler went elsewhere, or the real scheduler took a hint (its log: one node
/// evaluated) where kubestep's batch gave none.
fn batch_cause(
    cycle: &SchedulingCycle,
    real: &str,
    chosen: &str,
    logged: Option<usize>,
) -> Option<String> {
    let b = cycle.batch.as_ref()?;
    if cycle.hinted_node() == Some(chosen) {
        let total = b.stored.as_ref().map_or(0, |s| s.head_total);
        if let Some((node, t)) = &b.recorded
            && node == real
        {
            let side = if *t > total { "above" } else { "below" };
            return Some(format!(
                "kubestep placed the pod on its batch's hint {chosen} (OpportunisticBatching; stored total {total}); its ranking does not hold {real}, which a search that examines it scores {t}, {side} the hint: the real ranking came from a search that examined other nodes (goroutine timing)"
            ));
        }
        let theirs = match logged {
            Some(1) => "the real scheduler took a hint too (it evaluated 1 node), from a ranking of other nodes: the search that made each ranking examined a different set (goroutine timing)".to_string(),
            Some(n) => format!("the real scheduler's batch gave no hint (it evaluated {n} nodes)"),
            None => "the real scheduler's ranking can hold other nodes: the search that made it can examine a different set (goroutine timing)".to_string(),
        };
        return Some(format!(
            "kubestep placed the pod on its batch's hint {chosen} (OpportunisticBatching; stored total {total}), where {real} is not ranked as high; {theirs}"
        ));
    }
    let ours = cycle.feasible.len() + cycle.diagnosis.node_to_status.len();
    match (&b.hint, logged) {
        (Err(no_hint), Some(1)) if ours > 1 => Some(format!(
            "the real scheduler placed the pod on a batch hint (it evaluated 1 node) where kubestep's batch gave none ({}); kubestep searched {ours} nodes",
            no_hint.as_str()
        )),
        _ => None,
    }
}

/// Why the sampled sets can differ: upstream's search runs 16 goroutines over chunks of
/// the node list, so which nodes it examines past its stopping point depends on timing.
fn sampling(cycle: &SchedulingCycle, logged: Option<usize>) -> String {
    let ours = cycle.feasible.len() + cycle.diagnosis.node_to_status.len();
    match logged {
        Some(real) if real != ours => format!(
            "; the real scheduler evaluated {real} nodes to kubestep's {ours}: its parallel search examined other nodes (goroutine timing)"
        ),
        Some(_) => format!(
            "; both evaluated {ours} nodes, but the real scheduler's parallel search examined a different set (goroutine timing)"
        ),
        None => "; the real scheduler's parallel search can examine other nodes (goroutine timing), and its count moves every later start; no start within two chunks of kubestep's makes it one of the best: give replay --scheduler-log to follow the real counts".into(),
    }
}

/// kubestep preempted for the pod (nominating `r.nominated_node_name`) where the real
/// scheduler placed it on `real`: the same node, an equally ranked candidate (a tie, not a
/// divergence of placement), a candidate ranked lower, or a node that could not be one.
fn preempted(
    cycle: &SchedulingCycle,
    env: &CycleEnv,
    real: &str,
    r: &PostFilterResult,
) -> Option<Divergence> {
    let ours = r.nominated_node_name.as_str();
    if ours == real {
        return None;
    }
    let trace = cycle.state.read::<PreemptionTrace>(PREEMPTION_STATE).ok();
    let ranking = trace.and_then(|t| t.ranking.as_ref());
    let candidate = |node: &str| trace.and_then(|t| t.candidates.iter().find(|c| c.node == node));
    let mut best: Vec<String> = match ranking {
        Some(rk) => rk.tied_with(ours).into_iter().map(str::to_string).collect(),
        None => vec![ours.to_string()],
    };
    best.sort();
    let cluster = if cycle.pod.nominated_node_name() == real {
        format!("nominated {real} by the cluster")
    } else {
        format!("placed on {real} by the cluster")
    };
    let diverged = |reason: String, tie: bool| {
        Some(Divergence {
            pod: cycle.pod.key.clone(),
            real_node: real.to_string(),
            kubestep_nodes: best.clone(),
            reason,
            tie,
        })
    };
    // Values are described for upstream's own criteria; a plugin's are only named.
    let default_criteria = ranking.is_some_and(|rk| {
        rk.criteria.first().map(String::as_str) == DEFAULT_CRITERIA.first().copied()
    });
    if let Some(rk) = ranking
        && best.iter().any(|n| n == real)
    {
        let both = match candidate(ours) {
            Some(c) if default_criteria => format!(
                " (both: {}, {}, {})",
                c.describe_criterion(0, rk.now),
                c.describe_criterion(1, rk.now),
                c.describe_criterion(3, rk.now)
            ),
            _ => String::new(),
        };
        return diverged(
            format!("{cluster}; kubestep nominated {ours}, an equally ranked candidate{both}"),
            true,
        );
    }
    let ours_said = format!("{cluster}; kubestep preempted on {ours} instead");
    if let Some(rk) = ranking
        && let Some((i, name, true)) = rk.first_difference(real, ours)
    {
        let values = match (candidate(real), candidate(ours)) {
            (Some(a), Some(b)) if default_criteria => format!(
                ": {} against {}",
                a.describe_criterion(i, rk.now),
                b.describe_criterion(i, rk.now)
            ),
            _ => String::new(),
        };
        return diverged(
            format!("{ours_said}: {real} was a candidate ranked lower on {name}{values}"),
            false,
        );
    }
    let examined = trace.and_then(|t| t.examined.iter().find(|(n, _)| n == real));
    let why = match examined {
        Some((_, DryRunVerdict::Rejected(s))) => {
            format!("{real} could not be a candidate: {}", s.message())
        }
        Some((_, DryRunVerdict::Candidate { .. })) => format!(
            "{real} was a candidate of the dry run but not among those kubestep chose from (an extender left it out, or more candidates than wanted)"
        ),
        None => {
            let s = cycle.diagnosis.node_to_status.get(real);
            if env.snapshot.position(real).is_none() {
                format!("node {real} was not in the cluster when kubestep scheduled the pod")
            } else if s.code() == Code::UnschedulableAndUnresolvable {
                format!(
                    "{real} was infeasible for kubestep even with preemption: {} rejected it: {}",
                    s.plugin(),
                    s.message()
                )
            } else {
                let wanted = trace.map_or(0, |t| t.num_candidates);
                format!(
                    "{real} was not examined: kubestep's dry run stopped after {wanted} candidate(s)"
                )
            }
        }
    };
    diverged(format!("{ours_said}: {why}"), false)
}
