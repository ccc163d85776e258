//! The human-readable form of an explanation: the verdict in one line, a node table, and
//! the score breakdown of the best nodes.

use std::fmt::Write;

use super::Explanation;
use crate::framework::extender::CallOutcome;

/// How many nodes the score breakdown shows.
const TOP_NODES: usize = 3;

pub fn render(e: &Explanation) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", verdict(e));
    if e.prefilter.is_none() {
        out.push('\n');
        node_table(e, &mut out);
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

fn verdict(e: &Explanation) -> String {
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
            format!("would fit {}", e.selected.join(", "))
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
            e.selected.join(", ")
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
    e.selected
        .iter()
        .filter(|n| *n != chosen)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ")
}

fn node_table(e: &Explanation, out: &mut String) {
    let mut rows: Vec<[String; 4]> = Vec::new();
    let mut names: Vec<&String> = e.feasible.iter().chain(e.filter.keys()).collect();
    names.sort();
    names.dedup();
    for n in names {
        if let Some(f) = e.filter.get(n) {
            let mut reason = f.reasons.join(", ");
            if let Some(note) = e.notes.get(n).and_then(|p| p.get(&f.plugin)) {
                reason = format!("{reason} — {note}");
            }
            rows.push([n.clone(), "✗".into(), f.plugin.clone(), reason]);
        } else {
            let score = e
                .scores
                .as_ref()
                .and_then(|s| s.get(n))
                .map(|s| format!("score {}", s.total));
            let mark = if e.selected.contains(n) {
                "✓ best"
            } else {
                "✓"
            };
            rows.push([
                n.clone(),
                mark.into(),
                String::new(),
                score.unwrap_or_else(|| "feasible".into()),
            ]);
        }
    }
    for c in &e.extenders {
        if let CallOutcome::Filtered { dropped, .. } = &c.outcome {
            for n in dropped {
                if !e.filter.contains_key(n) && !e.feasible.contains(n) {
                    rows.push([
                        n.clone(),
                        "✗".into(),
                        c.extender.clone(),
                        "left out of the extender's answer (no reason given)".into(),
                    ]);
                }
            }
        }
    }
    for n in &e.not_evaluated {
        rows.push([
            n.clone(),
            "–".into(),
            String::new(),
            "not evaluated (enough feasible nodes found)".into(),
        ]);
    }
    let header = [
        "NODE".to_string(),
        "".into(),
        "PLUGIN".into(),
        "REASON / SCORE".into(),
    ];
    let w: Vec<usize> = (0..3)
        .map(|i| {
            rows.iter()
                .chain([&header])
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in std::iter::once(&header).chain(rows.iter()) {
        let _ = writeln!(
            out,
            "{:w0$}  {:w1$}  {:w2$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2]
        );
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
