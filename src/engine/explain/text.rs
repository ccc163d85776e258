//! The human-readable form of an explanation: the verdict in one line, a node table, and
//! the score breakdown of the best nodes.

use std::fmt::Write;

use super::Explanation;
use crate::framework::extender::CallOutcome;

/// How many nodes the score breakdown shows.
const TOP_NODES: usize = 3;

/// Above this many rows the node table is grouped by plugin and reason: about a
/// screenful, so a cluster of a few dozen nodes still shows every node (`explain
/// --help` says 40).
pub const SUMMARY_ABOVE: usize = 40;

/// Example node names a group (or a long list of names) shows.
const EXAMPLES: usize = 3;

/// A list of up to this many node names is printed whole; a longer one is counted.
const NAMED_IN_FULL: usize = 5;

/// How the node table shows the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodeRows {
    /// Every node up to `SUMMARY_ABOVE` rows, grouped above that.
    #[default]
    Auto,
    /// Every node, however many.
    All,
    /// Grouped, however few.
    Summary,
}

pub fn render(e: &Explanation) -> String {
    render_with(e, NodeRows::Auto)
}

pub fn render_with(e: &Explanation, mode: NodeRows) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", e.semantics);
    let _ = writeln!(out, "{}", verdict(e));
    if e.prefilter.is_none() {
        out.push('\n');
        let rows = node_rows(e);
        let grouped = match mode {
            NodeRows::All => false,
            NodeRows::Summary => true,
            NodeRows::Auto => rows.len() > SUMMARY_ABOVE,
        };
        if grouped {
            group_table(&rows, &mut out);
        } else {
            table(&rows, &mut out);
        }
        // The culprits (which taint, label, how much is missing) for a pod that fits
        // nowhere, whatever the table's size; for one that fits, when asked or grouped.
        if grouped || mode == NodeRows::All || !e.fits() {
            closeness(e, &mut out);
        }
    }
    if !e.what_if.is_empty() {
        let _ = writeln!(
            out,
            "\nwhat would make it fit (each confirmed by re-running the cycle):"
        );
        for h in &e.what_if {
            let _ = writeln!(out, "  {}", h.text);
        }
    }
    if let Some(scores) = &e.scores {
        out.push('\n');
        breakdown(e, scores, &mut out);
    }
    if !e.victims.is_empty() {
        let _ = writeln!(out, "\npreemption victims: {}", e.victims.join(", "));
    }
    if let Some(t) = &e.dynamic_resources {
        out.push('\n');
        tree(t, 0, &mut out);
    }
    extender_errors(e, &mut out);
    out
}

/// A CycleState tree, indented two spaces a level.
fn tree(t: &crate::framework::StateTree, depth: usize, out: &mut String) {
    let _ = writeln!(out, "{:w$}{}", "", t.label, w = depth * 2);
    for c in &t.children {
        tree(c, depth + 1, out);
    }
}

/// Failed extender calls: an ignored one explains a missing verdict or score.
fn extender_errors(e: &Explanation, out: &mut String) {
    for c in &e.extenders {
        if let CallOutcome::Error { message, ignored } = &c.outcome {
            let what = if *ignored { "ignored" } else { "failed" };
            let _ = writeln!(out, "\n{} {} {what}: {message}", c.extender, c.verb);
        }
    }
}

/// The one-line verdict on a pod: schedulable where, gated, already bound, or why not.
/// A Filter plugin's Error ended the attempt: no node was chosen, whatever the others say.
fn filter_error(e: &Explanation) -> bool {
    e.bound.is_none()
        && e.filter
            .values()
            .any(|f| f.code == crate::framework::Code::Error)
}

pub fn verdict(e: &Explanation) -> String {
    if let Some(pe) = &e.pre_enqueue {
        // Past the gate, what would stop it next (a missing claim stops PreFilter too).
        let what = if let Some(pf) = e.prefilter.as_ref().filter(|_| e.selected.is_empty()) {
            format!(
                "would still fit no node: PreFilter {}: {}",
                pf.plugin,
                pf.reasons.join(", ")
            )
        } else if let Some(m) = e.message.as_ref().filter(|_| e.selected.is_empty()) {
            format!("would still fit no node: {m}")
        } else if e.selected.is_empty() {
            "would fit no node".to_string()
        } else {
            format!("would fit {}", some_names(&e.selected))
        };
        return format!(
            "{}: gated at PreEnqueue by {}: {} (ungated it {what})",
            e.pod,
            pe.plugin,
            pe.reasons.join(", ")
        );
    }
    if let Some(node) = &e.bound {
        let ties = if e.selected.len() > 1 {
            format!("; tied with {}", tied(e, node))
        } else {
            String::new()
        };
        let of = if e.feasible.len() > 1 {
            format!(", best of {} feasible nodes", e.feasible.len())
        } else {
            String::new()
        };
        return format!("{}: schedulable on {node}{of}{ties}", e.pod);
    }
    if e.message.is_none() && !e.selected.is_empty() {
        return format!(
            "{}: already bound; the framework would choose {}",
            e.pod,
            some_names(&e.selected)
        );
    }
    if filter_error(e) {
        // Upstream ends the attempt at the Error and retries the pod after backoff.
        return format!(
            "{}: scheduling error, the attempt ends (kube-scheduler retries after backoff): {}",
            e.pod,
            e.message.as_deref().unwrap_or("")
        );
    }
    let mut s = format!(
        "{}: unschedulable: {}",
        e.pod,
        e.message.as_deref().unwrap_or("no node fits")
    );
    if let Some(n) = &e.nominated_node {
        let _ = write!(
            s,
            "\n  preemption nominated {n} (evicting {})",
            e.victims.join(", ")
        );
    }
    s
}

fn tied(e: &Explanation, chosen: &str) -> String {
    let others: Vec<String> = e
        .selected
        .iter()
        .filter(|n| *n != chosen)
        .cloned()
        .collect();
    if others.len() <= NAMED_IN_FULL {
        return others.join(", ");
    }
    format!("{} other nodes: {}", others.len(), examples(&others))
}

/// Node names, every one when few, else the count and the first few.
fn some_names(names: &[String]) -> String {
    if names.len() <= NAMED_IN_FULL {
        return names.join(", ");
    }
    format!("{} nodes: {}", names.len(), examples(names))
}

/// The first few names, "…" when there are more.
fn examples<S: AsRef<str>>(names: &[S]) -> String {
    let mut s = names
        .iter()
        .take(EXAMPLES)
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > EXAMPLES {
        s.push_str(", …");
    }
    s
}

/// What a node table row is about; groups are ordered by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    Best,
    Feasible,
    Rejected,
    Dropped,
    NotEvaluated,
}

/// One node's row.
struct Row {
    node: String,
    kind: Kind,
    mark: &'static str,
    plugin: String,
    /// The reason or score as the full table shows it (a note included).
    detail: String,
    /// What the nodes of one group share: the detail without the per-node note.
    shared: String,
    note: Option<String>,
    score: Option<i64>,
}

fn node_rows(e: &Explanation) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut names: Vec<&String> = e.feasible.iter().chain(e.filter.keys()).collect();
    names.sort();
    names.dedup();
    for n in names {
        if let Some(f) = e.filter.get(n) {
            let reasons = f.reasons.join(", ");
            let note = e.notes.get(n).and_then(|p| p.get(&f.plugin)).cloned();
            let detail = match &note {
                Some(note) => format!("{reasons} — {note}"),
                None => reasons.clone(),
            };
            rows.push(Row {
                node: n.clone(),
                kind: Kind::Rejected,
                mark: "✗",
                plugin: f.plugin.clone(),
                detail,
                shared: reasons,
                note,
                score: None,
            });
        } else {
            let score = e.scores.as_ref().and_then(|s| s.get(n)).map(|s| s.total);
            let detail = score.map_or_else(|| "feasible".into(), |s| format!("score {s}"));
            let (kind, mark, shared) = if e.selected.contains(n) && !filter_error(e) {
                // The best nodes share their score; other feasible nodes form one group.
                (Kind::Best, "✓ best", detail.clone())
            } else {
                (Kind::Feasible, "✓", String::new())
            };
            rows.push(Row {
                node: n.clone(),
                kind,
                mark,
                plugin: String::new(),
                detail,
                shared,
                note: None,
                score,
            });
        }
    }
    for c in &e.extenders {
        if let CallOutcome::Filtered { dropped, .. } = &c.outcome {
            for n in dropped {
                if !e.filter.contains_key(n) && !e.feasible.contains(n) {
                    let detail = "left out of the extender's answer (no reason given)";
                    rows.push(Row {
                        node: n.clone(),
                        kind: Kind::Dropped,
                        mark: "✗",
                        plugin: c.extender.clone(),
                        detail: detail.into(),
                        shared: detail.into(),
                        note: None,
                        score: None,
                    });
                }
            }
        }
    }
    for n in &e.not_evaluated {
        let detail = "not evaluated (enough feasible nodes found)";
        rows.push(Row {
            node: n.clone(),
            kind: Kind::NotEvaluated,
            mark: "–",
            plugin: String::new(),
            detail: detail.into(),
            shared: detail.into(),
            note: None,
            score: None,
        });
    }
    rows
}

/// Every node, one row each.
fn table(rows: &[Row], out: &mut String) {
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            [
                r.node.clone(),
                r.mark.into(),
                r.plugin.clone(),
                r.detail.clone(),
            ]
        })
        .collect();
    let header = [
        "NODE".to_string(),
        "".into(),
        "PLUGIN".into(),
        "REASON / SCORE".into(),
    ];
    aligned(&header, &cells, false, out);
}

/// Nodes grouped by what they share (plugin and reason, or feasibility), with a count and
/// a few example names: the largest rejecting groups first after the feasible nodes.
fn group_table(rows: &[Row], out: &mut String) {
    let mut groups: Vec<Vec<&Row>> = Vec::new();
    let mut index: std::collections::HashMap<(Kind, &str, &str), usize> =
        std::collections::HashMap::new();
    for r in rows {
        let key = (r.kind, r.plugin.as_str(), r.shared.as_str());
        let i = *index.entry(key).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[i].push(r);
    }
    groups.sort_by(|a, b| {
        let (x, y) = (a[0], b[0]);
        x.kind
            .cmp(&y.kind)
            .then(b.len().cmp(&a.len()))
            .then(x.plugin.cmp(&y.plugin))
            .then(x.shared.cmp(&y.shared))
    });
    let cells: Vec<[String; 5]> = groups
        .iter()
        .map(|g| {
            let first = g[0];
            let names: Vec<&str> = g.iter().map(|r| r.node.as_str()).collect();
            [
                g.len().to_string(),
                first.mark.into(),
                first.plugin.clone(),
                group_detail(g),
                examples(&names),
            ]
        })
        .collect();
    let _ = writeln!(
        out,
        "{} nodes in {} groups (--nodes all lists every node):",
        rows.len(),
        groups.len()
    );
    let header = [
        "NODES".to_string(),
        "".into(),
        "PLUGIN".into(),
        "REASON / SCORE".into(),
        "EXAMPLES".into(),
    ];
    aligned(&header, &cells, true, out);
}

fn group_detail(g: &[&Row]) -> String {
    let first = g[0];
    match first.kind {
        Kind::Feasible => {
            let scores = g.iter().filter_map(|r| r.score);
            match (scores.clone().min(), scores.max()) {
                (Some(lo), Some(hi)) if lo == hi => format!("score {lo}"),
                (Some(lo), Some(hi)) => format!("score {lo}–{hi}"),
                _ => "feasible".into(),
            }
        }
        Kind::Rejected => {
            let notes: std::collections::BTreeSet<Option<&str>> =
                g.iter().map(|r| r.note.as_deref()).collect();
            match notes.into_iter().collect::<Vec<_>>().as_slice() {
                [None] => first.shared.clone(),
                [Some(n)] => format!("{} — {n}", first.shared),
                _ => format!("{} — notes differ by node (--nodes all)", first.shared),
            }
        }
        _ => first.shared.clone(),
    }
}

/// Columns padded to their widest cell, the last one left ragged; a first column of
/// counts (`counts_first`) is right-aligned, as counts read best.
fn aligned<const N: usize>(
    header: &[String; N],
    rows: &[[String; N]],
    counts_first: bool,
    out: &mut String,
) {
    let w: Vec<usize> = (0..N - 1)
        .map(|i| {
            rows.iter()
                .chain([header])
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in std::iter::once(header).chain(rows.iter()) {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i + 1 < N {
                if i == 0 && counts_first {
                    let _ = write!(line, "{cell:>w$}  ", w = w[i]);
                } else {
                    let _ = write!(line, "{cell:w$}  ", w = w[i]);
                }
            } else {
                line.push_str(cell);
            }
        }
        let _ = writeln!(out, "{line}");
    }
}

/// For each reason with a known fact, how close its nodes came.
fn closeness(e: &Explanation, out: &mut String) {
    if e.closest.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nhow close the rejected nodes came:");
    for c in &e.closest {
        let _ = writeln!(out, "  {}", c.summary);
    }
}

fn breakdown(
    e: &Explanation,
    scores: &std::collections::BTreeMap<String, super::NodeScores>,
    out: &mut String,
) {
    let mut ranked: Vec<(&String, &super::NodeScores)> = scores.iter().collect();
    ranked.sort_by(|a, b| b.1.total.cmp(&a.1.total).then(a.0.cmp(b.0)));
    let _ = writeln!(out, "score breakdown (raw → normalized × weight = score):");
    for (node, s) in ranked.into_iter().take(TOP_NODES) {
        let _ = writeln!(out, "  {node}  total {}", s.total);
        for (plugin, weighted) in &s.plugins {
            let raw = s.raw.get(plugin).copied().unwrap_or(0);
            let norm = s.normalized.get(plugin).copied().unwrap_or(0);
            let weight = e.weights.get(plugin).copied().unwrap_or(1);
            let _ = writeln!(
                out,
                "    {plugin:<34} {raw:>6} → {norm:>3} × {weight} = {weighted}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::fixture;

    #[test]
    fn many_rejected_nodes_are_grouped_with_counts_and_examples() {
        let e = fixture::explain(&fixture::cluster(600, 10, true), "2");
        let out = render(&e);
        let expected = "\
kube-scheduler v1.35 semantics (as given)

default/new: unschedulable: 0/600 nodes are available: 10 node(s) had untolerated taint(s), 590 Insufficient cpu. no new claims to deallocate, preemption: 0/600 nodes are available: 10 Preemption is not helpful for scheduling, 590 No preemption victims found for incoming pod.

600 nodes in 2 groups (--nodes all lists every node):
NODES     PLUGIN            REASON / SCORE                    EXAMPLES
  590  ✗  NodeResourcesFit  Insufficient cpu                  n-000, n-001, n-002, …
   10  ✗  TaintToleration   node(s) had untolerated taint(s)  n-590, n-591, n-592, …

how close the rejected nodes came:
  Insufficient cpu on 590 nodes: the pod needs 2 cores; the most free on any of them is 1.8 cores (n-007)
  node(s) had untolerated taint(s) on 10 nodes: the pod tolerates none of dedicated=infra:NoSchedule (10 nodes)
";
        assert_eq!(out, expected);
    }

    #[test]
    fn nodes_all_lists_every_node_and_summary_groups_a_few() {
        let e = fixture::explain(&fixture::cluster(600, 10, true), "2");
        let all = render_with(&e, NodeRows::All);
        let rows = all.lines().filter(|l| l.starts_with("n-")).count();
        assert_eq!(rows, 600);
        assert!(all.contains("\nNODE  "), "{all}");
        assert!(all.contains("how close the rejected nodes came:"), "{all}");

        let small = fixture::explain(&fixture::cluster(6, 1, true), "2");
        let summary = render_with(&small, NodeRows::Summary);
        assert!(summary.contains("6 nodes in 2 groups"), "{summary}");
        assert!(
            summary.contains("    5  ✗  NodeResourcesFit  Insufficient cpu"),
            "{summary}"
        );
    }

    /// Up to SUMMARY_ABOVE rows the table is one row a node, not grouped; a pod that fits
    /// nowhere still gets the culprits (the closeness section), as with `--nodes all`.
    #[test]
    fn a_small_cluster_keeps_its_one_row_per_node_table() {
        let e = fixture::explain(&fixture::cluster(SUMMARY_ABOVE, 1, true), "2");
        let out = render(&e);
        let all = render_with(&e, NodeRows::All);
        assert_eq!(out, all);
        assert!(out.contains("\nNODE   "), "{out}");
        assert!(
            out.contains("n-039  ✗  TaintToleration   node(s) had untolerated taint(s)\n"),
            "{out}"
        );
        assert!(
            out.contains("the pod tolerates none of dedicated=infra:NoSchedule"),
            "{out}"
        );
        assert_eq!(
            out.lines().filter(|l| l.starts_with("n-")).count(),
            SUMMARY_ABOVE
        );
    }

    #[test]
    fn many_ties_are_counted_with_a_few_names() {
        let e = fixture::explain(&fixture::cluster(600, 0, false), "100m");
        let first = render(&e).lines().nth(2).unwrap().to_string();
        let bound = e.bound.clone().unwrap();
        let others: Vec<&String> = e.selected.iter().filter(|n| **n != bound).collect();
        assert!(others.len() > NAMED_IN_FULL, "{first}");
        assert_eq!(
            first,
            format!(
                "default/new: schedulable on {bound}, best of {} feasible nodes; tied with {} other nodes: {}, {}, {}, …",
                e.feasible.len(),
                others.len(),
                others[0],
                others[1],
                others[2]
            )
        );
        // The not-evaluated nodes are one group.
        let out = render(&e);
        let group = format!("  {}  –  ", e.not_evaluated.len());
        assert!(
            out.lines()
                .any(|l| l.starts_with(&group) && l.contains("not evaluated")),
            "{out}"
        );
    }

    #[test]
    fn a_few_ties_are_all_named() {
        let e = fixture::explain(&fixture::cluster(3, 0, false), "100m");
        let first = render(&e).lines().nth(2).unwrap().to_string();
        let bound = e.bound.clone().unwrap();
        let others: Vec<String> = e
            .selected
            .iter()
            .filter(|n| **n != bound)
            .cloned()
            .collect();
        assert_eq!(others.len(), 2);
        assert!(
            first.ends_with(&format!("; tied with {}", others.join(", "))),
            "{first}"
        );
    }
}
