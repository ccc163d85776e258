//! The parts of an `Explanation` read off a finished cycle, one function each.

use std::collections::{BTreeMap, BTreeSet};

use super::{NodeScores, PluginStatus};
use crate::framework::Snapshot;
use crate::framework::cycle::{CycleEnv, CycleOutcome, FilterCell, SchedulingCycle};
use crate::framework::extender::CallOutcome;
use crate::framework::profile::ExtensionPoint;

fn name(snap: &Snapshot, i: usize) -> String {
    snap.list()[i].name().to_string()
}

/// Each rejected node's verdict: the plugin's status, or for a node an extender rejected
/// (its status names no plugin) the extender that last did; nodes a PreFilter plugin left
/// out carry the narrowing plugins' absent status.
pub(super) fn filter_verdicts(
    cycle: &SchedulingCycle,
    snap: &Snapshot,
) -> BTreeMap<String, PluginStatus> {
    let mut rejected_by: BTreeMap<&str, &str> = BTreeMap::new();
    for call in &cycle.extender_calls {
        if let CallOutcome::Filtered {
            failed,
            failed_and_unresolvable,
            ..
        } = &call.outcome
        {
            for n in failed.keys().chain(failed_and_unresolvable.keys()) {
                rejected_by.insert(n, &call.extender);
            }
        }
    }
    let mut filter = BTreeMap::new();
    let nts = &cycle.diagnosis.node_to_status;
    for (node, s) in nts.iter() {
        let fallback = rejected_by.get(node).copied().unwrap_or_default();
        filter.insert(node.to_string(), PluginStatus::from_status(s, fallback));
    }
    if let Some(names) = cycle
        .pre_filter
        .result
        .as_ref()
        .and_then(|r| r.node_names.as_ref())
    {
        let plugins = cycle.pre_filter.plugins_with_nodes.join(",");
        for n in snap.list() {
            if !names.contains(n.name()) && !nts.contains(n.name()) {
                filter.insert(
                    n.name().to_string(),
                    PluginStatus::from_status(nts.absent(), &plugins),
                );
            }
        }
    }
    filter
}

type Cells = BTreeMap<String, BTreeMap<String, FilterCell>>;
type Notes = BTreeMap<String, BTreeMap<String, String>>;

/// The full verdict matrix (node × plugin), when the cycle ran in column mode, and the
/// notes plugins left on cells.
pub(super) fn matrix(cycle: &SchedulingCycle, snap: &Snapshot) -> (Cells, Notes) {
    let mut cells = Cells::new();
    let mut notes = Notes::new();
    let Some(m) = &cycle.matrix else {
        return (cells, notes);
    };
    for (row, &idx) in m.nodes.iter().enumerate() {
        for (col, p) in m.plugins.iter().enumerate() {
            if let Some(n) = m.note(row, col) {
                notes
                    .entry(name(snap, idx))
                    .or_default()
                    .insert(p.to_string(), n.to_string());
            }
        }
        let row_cells = m
            .plugins
            .iter()
            .enumerate()
            .map(|(col, p)| (p.to_string(), m.cell(row, col)))
            .collect();
        cells.insert(name(snap, idx), row_cells);
    }
    (cells, notes)
}

/// Each scored node's scores by plugin and extender (`extender:<urlPrefix>`, scores
/// 0..=10 whose "normalized" value is scaled to 0..=100): weighted, raw, normalized.
pub(super) fn scores(
    cycle: &SchedulingCycle,
    snap: &Snapshot,
) -> Option<BTreeMap<String, NodeScores>> {
    let t = cycle.scores.as_ref()?;
    let by_node = t.nodes.iter().enumerate().map(|(i, &idx)| {
        let mut ns = NodeScores {
            plugins: BTreeMap::new(),
            total: t.totals.get(i).copied().unwrap_or(0),
            raw: BTreeMap::new(),
            normalized: BTreeMap::new(),
        };
        for col in t.breakdown(i) {
            ns.plugins.insert(col.name.to_string(), col.weighted);
            ns.raw.insert(col.name.to_string(), col.raw);
            ns.normalized.insert(col.name.to_string(), col.normalized);
        }
        (name(snap, idx), ns)
    });
    Some(by_node.collect())
}

/// What the attempt decided: the node, or the message, nominated node and victims.
#[derive(Default)]
pub(super) struct Decision {
    pub bound: Option<String>,
    pub message: Option<String>,
    pub nominated_node: Option<String>,
    pub victims: Vec<String>,
}

impl Decision {
    pub(super) fn of(outcome: &CycleOutcome) -> Decision {
        let mut d = Decision::default();
        match outcome {
            CycleOutcome::Selected { node, .. } => d.bound = Some(node.clone()),
            CycleOutcome::Unschedulable {
                fit_error,
                post_filter,
                ..
            } => {
                d.message = Some(fit_error.message());
                if let Some(r) = post_filter {
                    if !r.nominated_node_name.is_empty() {
                        d.nominated_node = Some(r.nominated_node_name.clone());
                    }
                    d.victims = r.victims.clone();
                    d.victims.sort();
                }
            }
            CycleOutcome::Error(s) => d.message = Some(s.message()),
        }
        d
    }
}

/// Nodes the search never reached: neither feasible, nor rejected, nor dropped by an
/// extender.
pub(super) fn not_evaluated(
    cycle: &SchedulingCycle,
    snap: &Snapshot,
    filter: &BTreeMap<String, PluginStatus>,
) -> Vec<String> {
    let dropped_by_extenders = cycle.extender_calls.iter().flat_map(|c| match &c.outcome {
        CallOutcome::Filtered { dropped, .. } => dropped.as_slice(),
        _ => &[],
    });
    let evaluated: BTreeSet<&str> = cycle
        .feasible
        .iter()
        .map(|&i| snap.list()[i].name())
        .chain(filter.keys().map(String::as_str))
        .chain(dropped_by_extenders.map(String::as_str))
        .collect();
    snap.list()
        .iter()
        .map(|n| n.name())
        .filter(|n| !evaluated.contains(n))
        .map(str::to_string)
        .collect()
}

/// The Score plugins' weights, and the extenders' that scored.
pub(super) fn weights(cycle: &SchedulingCycle, env: &CycleEnv) -> BTreeMap<String, i64> {
    let mut weights: BTreeMap<String, i64> = env
        .framework
        .plugins(ExtensionPoint::Score)
        .iter()
        .map(|e| (e.name.to_string(), env.framework.score_weight(e.name)))
        .collect();
    for x in cycle.scores.iter().flat_map(|t| &t.extenders) {
        weights.insert(x.name.clone(), x.weight);
    }
    weights
}
