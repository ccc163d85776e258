//! Divergence: for a pod the recording binds (its real scheduler decided), kubestep's own
//! decision compared with the real node, and why the real node ranked lower or was
//! infeasible for kubestep.

use serde::Serialize;

use crate::framework::cycle::{CycleEnv, CycleOutcome, FilterCell, SchedulingCycle};

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
}

/// kubestep's finished cycle against the real node; `None` when the real node is one of
/// kubestep's best nodes (or the cycle has no outcome).
pub fn compare(cycle: &SchedulingCycle, env: &CycleEnv, real: &str) -> Option<Divergence> {
    let snapshot = env.snapshot;
    let diverged = |nodes: Vec<String>, reason: String| Divergence {
        pod: cycle.pod.key.clone(),
        real_node: real.to_string(),
        kubestep_nodes: nodes,
        reason,
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
            let reason = why_not(cycle, env, real, node, &best);
            Some(diverged(best, reason))
        }
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
) -> String {
    let snapshot = env.snapshot;
    let Some(pos) = snapshot.position(real) else {
        return format!("node {real} was not in the cluster when kubestep scheduled the pod");
    };
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
                        "{real} was infeasible for kubestep: {plugin} rejected it: {}",
                        reasons.join(", ")
                    );
                }
                FilterCell::Error { message } => {
                    return format!("{real} was infeasible for kubestep: {plugin}: {message}");
                }
                FilterCell::Pass | FilterCell::Skipped => {}
            }
        }
        return format!(
            "{real} passed every filter but was not among the {} feasible nodes kubestep scored (percentageOfNodesToScore)",
            cycle.feasible.len()
        );
    }
    if cycle.diagnosis.node_to_status.contains(real) {
        let s = cycle.diagnosis.node_to_status.get(real);
        return format!(
            "{real} was infeasible for kubestep: {} rejected it: {}",
            s.plugin(),
            s.message()
        );
    }
    format!(
        "{real} was not evaluated: kubestep stopped searching after {} feasible nodes (percentageOfNodesToScore)",
        cycle.feasible.len()
    )
}
