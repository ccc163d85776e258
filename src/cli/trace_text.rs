//! `-o text` for `replay --headless` and `live --headless`: a short human line for each
//! trace object, rendered from the same object JSON and YAML print, so the three outputs
//! never disagree.

use std::io::{self, Write};

use serde_json::Value;

/// More Bound pods than this and the text summary counts them instead of listing each
/// (a production cluster's summary was 150,000 lines of "Bound on"); JSON lists every one.
const BOUND_LISTED: usize = 100;

/// A short human line (or, for the summary, lines) for a trace object.
pub(super) fn line(v: &Value) -> String {
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    if let Some(sum) = v.get("summary") {
        let pods = sum["pods"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let bound = pods.iter().filter(|p| is_bound(p)).count();
        let not_attempted = sum["boundNotAttempted"].as_u64().unwrap_or(0) as usize;
        let mut out = Vec::new();
        // Writing to memory does not fail.
        let _ = write_summary(
            &mut out,
            &sum["divergences"],
            (bound, not_attempted),
            pods.iter().cloned(),
        );
        return String::from_utf8_lossy(&out).trim_end().to_string();
    }
    if let Some(t) = super::trace_show::text(v) {
        return t;
    }
    match s("type").as_str() {
        "attempt" => attempt_line(v),
        "step" => {
            let plugin = v["plugin"]
                .as_str()
                .map(|p| format!(" {p}"))
                .unwrap_or_default();
            let msg = s("message");
            let msg = if msg.is_empty() {
                String::new()
            } else {
                format!(": {msg}")
            };
            format!(
                "[{}] {} {}{plugin} {}{msg}",
                v["seq"],
                s("pod"),
                s("point"),
                s("code")
            )
        }
        "stop" => format!(
            "stopped ({}){}",
            s("reason"),
            v["breakpoint"]
                .as_str()
                .map(|b| format!(": {b}"))
                .unwrap_or_default()
        ),
        "error" => format!("error at line {}: {}", v["line"], s("message")),
        _ => serde_json::to_string_pretty(v).unwrap_or_default(),
    }
}

/// The strings of a JSON array (none when it is not one).
fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn is_bound(p: &Value) -> bool {
    p["status"].as_str() == Some("Bound")
}

/// Whether the text summary lists this entry, when `bound` entries say Bound.
pub(super) fn lists_entry(p: &Value, bound: usize) -> bool {
    bound <= BOUND_LISTED || !is_bound(p)
}

/// The summary as text, one pod entry at a time (the summary's `pods` entries, in
/// order; `bound` of them say Bound, and `not_attempted` bound pods kubestep never
/// attempted were left out of them): each pod with its status, node and message, Bound
/// ones counted rather than listed when there are many, then the divergences.
pub(super) fn write_summary(
    w: &mut impl Write,
    divergences: &Value,
    (bound, not_attempted): (usize, usize),
    pods: impl Iterator<Item = Value>,
) -> io::Result<()> {
    writeln!(w, "summary:")?;
    for p in pods.filter(|p| lists_entry(p, bound)) {
        let node = p["node"]
            .as_str()
            .map(|n| format!(" on {n}"))
            .unwrap_or_default();
        let msg = p["message"]
            .as_str()
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        let selected = p["selected"]
            .as_array()
            .map(|nodes| best_nodes(nodes))
            .unwrap_or_default();
        writeln!(
            w,
            "  {} {}{node}{selected}{msg}",
            p["pod"].as_str().unwrap_or(""),
            p["status"].as_str().unwrap_or("")
        )?;
    }
    if bound > BOUND_LISTED {
        writeln!(
            w,
            "  {bound} pods Bound (-o jsonl lists each with its node)"
        )?;
    }
    if not_attempted > 0 {
        writeln!(
            w,
            "  {not_attempted} pods bound without a kubestep attempt (counted, not listed)"
        )?;
    }
    let divergences: Vec<String> = divergences
        .as_array()
        .into_iter()
        .flatten()
        .map(divergence)
        .collect();
    if divergences.is_empty() {
        writeln!(w, "divergences: none")
    } else {
        writeln!(w, "divergences:\n{}", divergences.join("\n"))
    }
}

/// Live shadow mode's pick for a pending pod: its best nodes, a few named when many tie.
fn best_nodes(nodes: &[Value]) -> String {
    const NAMED: usize = 3;
    let names: Vec<&str> = nodes.iter().filter_map(Value::as_str).take(NAMED).collect();
    let more = nodes.len().saturating_sub(NAMED);
    let more = if more > 0 {
        format!(" and {more} more tied")
    } else {
        String::new()
    };
    format!(", kubestep's best: {}{more}", names.join(", "))
}

fn divergence(d: &Value) -> String {
    let best = strings(&d["kubestepNodes"]);
    let best = if best.is_empty() {
        "none".to_string()
    } else {
        best.join(", ")
    };
    // An equally ranked preemption candidate: listed, not a divergence.
    let tie = if d["tie"].as_bool() == Some(true) {
        " (a tie, not a divergence)"
    } else {
        ""
    };
    format!(
        "  {}: recorded on {}, kubestep's best: {best}{tie}\n    {}",
        d["pod"].as_str().unwrap_or(""),
        d["realNode"].as_str().unwrap_or(""),
        d["reason"].as_str().unwrap_or("")
    )
}

/// `#ATTEMPT POD RESULT [on NODE] [(E evaluated, F feasible)] [, nominated N (victims …)]
/// [: MESSAGE]`: every fact of the attempt's trace object but the per-point times.
fn attempt_line(v: &Value) -> String {
    let mut line = format!(
        "#{} {} {}",
        v["attempt"],
        v["pod"].as_str().unwrap_or(""),
        v["result"].as_str().unwrap_or("")
    );
    if let Some(n) = v["node"].as_str() {
        line.push_str(&format!(" on {n}"));
    }
    if let (Some(e), Some(f)) = (v["evaluatedNodes"].as_u64(), v["feasibleNodes"].as_u64()) {
        line.push_str(&format!(" ({e} evaluated, {f} feasible)"));
    }
    if let Some(n) = v["nominatedNode"].as_str() {
        let victims = strings(&v["victims"]);
        line.push_str(&format!(
            ", nominated {n} (victims: {})",
            victims.join(", ")
        ));
    }
    if let Some(m) = v["message"].as_str() {
        line.push_str(&format!(": {m}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn many_bound_pods_are_counted_and_the_rest_listed() {
        let mut pods: Vec<Value> = (0..=BOUND_LISTED)
            .map(|i| json!({"pod": format!("ns/b{i}"), "node": "n1", "status": "Bound"}))
            .collect();
        pods.push(json!({"pod": "ns/p", "node": null, "status": "Pending", "message": "0/1 nodes are available"}));
        let text = line(&json!({"summary": {"pods": pods, "divergences": []}}));
        assert_eq!(
            text,
            format!(
                "summary:\n  ns/p Pending: 0/1 nodes are available\n  {} pods Bound (-o jsonl lists each with its node)\ndivergences: none",
                BOUND_LISTED + 1
            )
        );
    }

    #[test]
    fn a_pending_pod_shows_kubesteps_best_nodes_a_few_by_name() {
        let pods = json!([{"pod": "ns/p", "node": null, "status": "Pending",
            "selected": ["n1", "n2", "n3", "n4", "n5"]}]);
        let text = line(&json!({"summary": {"pods": pods, "divergences": []}}));
        assert_eq!(
            text,
            "summary:\n  ns/p Pending, kubestep's best: n1, n2, n3 and 2 more tied\ndivergences: none"
        );
    }

    #[test]
    fn a_few_bound_pods_are_listed() {
        let pods = json!([{"pod": "ns/b", "node": "n1", "status": "Bound"}]);
        let text = line(&json!({"summary": {"pods": pods, "divergences": []}}));
        assert_eq!(text, "summary:\n  ns/b Bound on n1\ndivergences: none");
    }

    #[test]
    fn an_attempt_is_one_line_with_its_facts() {
        let v = json!({"type": "attempt", "attempt": 3, "pod": "ns/p", "result": "Unschedulable",
            "node": null, "message": "0/2 nodes are available", "evaluatedNodes": 2,
            "feasibleNodes": 0, "nominatedNode": "n1", "victims": ["ns/v"], "points": []});
        assert_eq!(
            line(&v),
            "#3 ns/p Unschedulable (2 evaluated, 0 feasible), nominated n1 (victims: ns/v): 0/2 nodes are available"
        );
    }
}
