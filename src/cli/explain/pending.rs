//! `explain --pending`: every pending pod's verdict, a line each (or the list as JSON,
//! YAML, names). Exit code 1 when any pod would not be placed, so scripts can trust it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;

use kubestep::cluster::ClusterState;
use kubestep::config::KubeSchedulerConfiguration;
use kubestep::explain::{self, PendingVerdict};

use super::Output;

/// `only`: the namespace whose pending pods are listed (every namespace's are decided
/// against the same cluster either way).
pub fn run(
    cluster: &ClusterState,
    cfg: &KubeSchedulerConfiguration,
    output: Output,
    only: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let verdicts = explain::pending_in(cluster, cfg, only)?;
    match output {
        Output::Json => say!(
            "{}",
            serde_json::to_string_pretty(&verdicts).context("encoding the verdicts")?
        )?,
        Output::Yaml => say_raw!("{}", super::super::replay::to_yaml(&verdicts)?)?,
        Output::Text => say_raw!("{}", text(&verdicts, only, false))?,
        Output::Wide => say_raw!("{}", text(&verdicts, only, true))?,
        Output::Name => {
            for v in &verdicts {
                say!("pod/{}", v.pod.split_once('/').map_or(&*v.pod, |(_, n)| n))?;
            }
        }
    }
    Ok(if verdicts.iter().any(PendingVerdict::stuck) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// A table as kubectl prints one: a NAMESPACE column when every namespace is listed;
/// `wide` adds the priority, the feasible nodes, the nomination and its victims.
fn text(verdicts: &[PendingVerdict], only: Option<&str>, wide: bool) -> String {
    let name_of = |v: &PendingVerdict| -> (String, String) {
        match v.pod.split_once('/') {
            Some((ns, n)) => (ns.to_string(), n.to_string()),
            None => (String::new(), v.pod.clone()),
        }
    };
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut head: Vec<&str> = Vec::new();
    if only.is_none() {
        head.push("NAMESPACE");
    }
    head.extend(["NAME", "VERDICT"]);
    if wide {
        head.extend(["PRIORITY", "FEASIBLE", "NOMINATED", "VICTIMS"]);
    }
    head.push("NODE / WHY");
    for v in verdicts {
        let (ns, name) = name_of(v);
        let mut row = Vec::new();
        if only.is_none() {
            row.push(ns);
        }
        row.extend([name, v.verdict.to_string()]);
        if wide {
            row.extend([
                v.priority.to_string(),
                v.feasible_nodes.to_string(),
                v.nominated_node.clone().unwrap_or_else(|| "<none>".into()),
                if v.victims.is_empty() {
                    "<none>".into()
                } else {
                    v.victims.join(",")
                },
            ]);
        }
        row.push(why(v, wide));
        rows.push(row);
    }
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[&str]| -> String {
        let last = cells.len() - 1;
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == last {
                out.push_str(c);
            } else {
                let pad = widths[i] - c.chars().count();
                let _ = write!(out, "{c}{}   ", " ".repeat(pad));
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = String::new();
    if !rows.is_empty() {
        out.push_str(&line(&head));
        for r in &rows {
            let cells: Vec<&str> = r.iter().map(String::as_str).collect();
            out.push_str(&line(&cells));
        }
        out.push('\n');
    }
    out.push_str(&summary(verdicts, only));
    out
}

/// Where the pod would go, or why not: with the nomination first when preemption would
/// make room, as `explain POD` shows it.
fn why(v: &PendingVerdict, wide: bool) -> String {
    match (&v.node, &v.message) {
        (Some(n), _) => format!("{n} (best of {} feasible)", v.feasible_nodes),
        (None, Some(m)) => match &v.nominated_node {
            Some(n) if !wide => {
                let evicting = match v.victims.len() {
                    0 => String::new(),
                    1 => ", evicting 1 pod".to_string(),
                    k => format!(", evicting {k} pods"),
                };
                format!("preemption would nominate {n}{evicting}; {m}")
            }
            _ => m.clone(),
        },
        (None, None) => String::new(),
    }
}

fn summary(verdicts: &[PendingVerdict], only: Option<&str>) -> String {
    let mut counts = BTreeMap::<&str, usize>::new();
    for v in verdicts {
        *counts.entry(v.verdict).or_default() += 1;
    }
    let counts: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let place = match only {
        Some(ns) => format!(" in namespace {ns}"),
        None => String::new(),
    };
    format!(
        "{} pending pod(s){place}{}{}; `explain POD` explains one\n",
        verdicts.len(),
        if counts.is_empty() { "" } else { ": " },
        counts.join(", ")
    )
}
