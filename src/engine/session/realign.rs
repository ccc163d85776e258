//! Replay follows the real search's window. Upstream's Filter search runs 16 workers
//! over chunks of about √n nodes and stops once enough are feasible; which nodes it
//! examined depends on goroutine timing, so its examined set (and how far the next
//! round-robin start moves) drifts a few nodes from kubestep's sequential one. When the
//! recording binds a pod to a node kubestep's window missed, or ranked below nodes at the
//! window's edge, the real window must have been shifted: kubestep runs the cycle again
//! from the nearest start (within two chunks) where the recorded node is among its best, and
//! continues from there, as the real scheduler did.

use crate::framework::cycle::{CycleEnv, CycleOutcome, Detail, SchedulingCycle, chunk_size_for};

/// `real`'s total for `cycle`'s pod, from its search run again without a hint and
/// starting at `real`: for a node the recording chose that kubestep's ranking (a hinted
/// cycle) or its sampled window did not hold. `None` when `real` is infeasible there.
pub fn score_from(cycle: &SchedulingCycle, env: &CycleEnv, real: &str) -> Option<i64> {
    if !env.extenders.is_empty() {
        // A re-run would call the extenders again.
        return None;
    }
    let pos = env.snapshot.position(real)?;
    let order = cycle.search_order(env);
    let off = order.offset(pos)?;
    // The start as a candidate index: the search examines `real` first.
    let start = (order.start + off) % order.len;
    let mut again = SchedulingCycle::new(cycle.pod.clone(), Detail::Decision, start);
    while !again.is_done() {
        again.step(env);
    }
    let scores = again.scores.as_ref()?;
    let i = scores.nodes.iter().position(|&n| n == pos)?;
    scores.totals.get(i).copied()
}

/// How far (in upstream's chunks) a shift may go. On the real control plane the real
/// search's count differed from the sequential one by up to 29 nodes on 300 (1.7 chunks),
/// when many nodes were full; beyond two chunks a shift is more likely to explain a
/// difference of another cause than to find the real window.
const REACH_CHUNKS: usize = 2;

/// A cycle run again from a shifted search start.
pub struct Realigned {
    /// How far the start moved (positive: later in the search order).
    pub shift: isize,
    pub cycle: SchedulingCycle,
}

impl Realigned {
    /// The step that says what happened, for the attempt's steps and the trace.
    pub fn message(&self, real: &str) -> String {
        format!(
            "search start moved {:+} to follow the recording: from there {real} is among kubestep's best nodes (upstream's parallel search examines a timing-dependent set of nodes)",
            self.shift
        )
    }
}

/// Trials per cycle at most: each one moves the start by what the last one showed, so a
/// few suffice when a shift explains the real node at all.
const MAX_TRIALS: usize = 8;

/// What a finished cycle whose best nodes miss `real` says about a shifted window: the
/// further shift that would bring `real` in (it was not examined), or leave out the nodes
/// that outrank it at one edge of the window. `None` when no shift can: the search
/// examined every candidate, took a hint, found `real` infeasible, or was outranked on
/// both sides of it.
fn next_shift(cycle: &SchedulingCycle, env: &CycleEnv, real: usize) -> Option<isize> {
    let Some(CycleOutcome::Selected {
        evaluated_nodes, ..
    }) = &cycle.outcome
    else {
        return None;
    };
    let scores = cycle.scores.as_ref()?;
    let order = cycle.search_order(env);
    let (off, len) = (order.offset(real)?, order.len);
    let examined = *evaluated_nodes;
    if examined >= len || cycle.hinted_node().is_some() {
        return None;
    }
    if off >= examined {
        // Not examined: the window must reach it, from a later or an earlier start.
        let after = (off - examined + 1) as isize;
        let before = (len - off) as isize;
        return Some(if after <= before { after } else { -before });
    }
    // Examined: feasible but outranked by nodes a shifted window leaves out.
    let ri = scores.nodes.iter().position(|&i| i == real)?;
    let mine = scores.totals.get(ri).copied()?;
    let better: Vec<usize> = scores
        .nodes
        .iter()
        .zip(&scores.totals)
        .filter(|(_, t)| **t > mine)
        .filter_map(|(&i, _)| order.offset(i))
        .collect();
    let (first, last) = (*better.iter().min()?, *better.iter().max()?);
    if last < off {
        // All before it: start after them.
        Some(last as isize + 1)
    } else if first > off {
        // All after it: start earlier, so the window ends before them.
        Some(-(examined.saturating_sub(first) as isize))
    } else {
        None
    }
}

/// Runs `cycle`'s pod again from shifted starts, each moved by what the last run showed
/// (always the same way, at most `REACH_CHUNKS` chunks in all), and returns the first
/// run whose best nodes include `real`.
pub fn realign(
    cycle: &SchedulingCycle,
    env: &CycleEnv,
    real: &str,
    parallelism: usize,
) -> Option<Realigned> {
    if !env.extenders.is_empty() {
        // A re-run would call the extenders again.
        return None;
    }
    let pos = env.snapshot.position(real)?;
    let (_, len) = cycle.search_offset(env, pos)?;
    let bound = (REACH_CHUNKS * chunk_size_for(len, parallelism)) as isize;
    let all = env.snapshot.list().len() as isize;
    let mut shift = 0isize;
    let mut last: Option<SchedulingCycle> = None;
    for _ in 0..MAX_TRIALS {
        let step = next_shift(last.as_ref().unwrap_or(cycle), env, pos)?;
        if step == 0 || (shift != 0 && step.signum() != shift.signum()) {
            return None;
        }
        shift += step;
        if shift.abs() > bound {
            return None;
        }
        let start = (cycle.start_node_index as isize + shift).rem_euclid(all) as usize;
        let mut again = SchedulingCycle::new(cycle.pod.clone(), Detail::Decision, start)
            .with_batch(cycle.batch_probe.clone());
        while !again.is_done() {
            again.step(env);
        }
        if again.best_nodes(env.snapshot).contains(&real) {
            return Some(Realigned {
                shift,
                cycle: again,
            });
        }
        last = Some(again);
    }
    None
}
