//! `-o text` for a script's `show` and `help` answers: the same JSON object the other
//! outputs print, said in lines a person reads (JSON under `-o text` was not text).

use serde_json::Value;

/// The text of a `show …` / `help` answer; `None` for other trace objects.
pub(super) fn text(v: &Value) -> Option<String> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
    let out = match s("type") {
        "help" => s("text").to_string(),
        "cycle" => cycle(v),
        "queue" => queue(v),
        "waiting" => waiting(v),
        "state" => {
            let mut out = format!("CycleState of {}:", or_none(s("pod")));
            tree(&v["entries"], 1, &mut out);
            out
        }
        "filter" => filter(v),
        "scores" => scores(v),
        "pod" => pod(v),
        _ => return None,
    };
    Some(out)
}

fn or_none(s: &str) -> &str {
    if s.is_empty() { "(no pod)" } else { s }
}

fn cycle(v: &Value) -> String {
    let pod = or_none(v["pod"].as_str().unwrap_or(""));
    let at = match v["point"].as_str() {
        Some(p) => format!("at {p}"),
        None => "done".to_string(),
    };
    let mut out = format!("cycle: attempt {} of {pod}, {at}", v["attempt"]);
    if let Some(o) = v["outcome"].as_str() {
        out.push_str(&format!(": {o}"));
    }
    if let Some(n) = v["node"].as_str() {
        out.push_str(&format!(" on {n}"));
    }
    if let Some(m) = v["message"].as_str() {
        out.push_str(&format!("\n  {m}"));
    }
    out
}

fn queue(v: &Value) -> String {
    const PARTS: [(&str, &str); 5] = [
        ("inFlight", "in flight"),
        ("active", "activeQ"),
        ("backoff", "backoffQ"),
        ("unschedulable", "unschedulable"),
        ("gated", "gated"),
    ];
    let len = |k: &str| v[k].as_array().map_or(0, Vec::len);
    let counts: Vec<String> = PARTS
        .iter()
        .map(|(k, name)| format!("{name} {}", len(k)))
        .collect();
    let mut out = format!(
        "queue at {}: {}",
        v["at"].as_str().unwrap_or(""),
        counts.join(", ")
    );
    for (k, name) in PARTS {
        for p in v[k].as_array().into_iter().flatten() {
            let pod = p["pod"].as_str().unwrap_or("");
            let mut facts = Vec::new();
            if let Some(n) = p["priority"].as_i64() {
                facts.push(format!("priority {n}"));
            }
            if let Some(n) = p["attempts"].as_u64() {
                facts.push(format!("attempts {n}"));
            }
            if let Some(r) = p["retry"].as_str() {
                facts.push(format!("retry {r}"));
            }
            out.push_str(&format!("\n  {name:<13} {pod} ({})", facts.join(", ")));
        }
    }
    out
}

fn waiting(v: &Value) -> String {
    let pods = v["pods"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut out = format!(
        "waiting at {}: {} pod(s)",
        v["at"].as_str().unwrap_or(""),
        pods.len()
    );
    for p in pods {
        let pod = p["pod"].as_str().unwrap_or("");
        let node = p["node"].as_str().unwrap_or("");
        let point = p["point"].as_str().unwrap_or("");
        let on: Vec<String> = match p["waitingOn"].as_object() {
            Some(m) => m
                .iter()
                .map(|(plugin, w)| {
                    format!(
                        "{plugin} {:.0}s left",
                        w["secondsLeft"].as_f64().unwrap_or(0.0)
                    )
                })
                .collect(),
            None => vec![format!(
                "{} {:.0}s left: {}",
                p["plugin"].as_str().unwrap_or(""),
                p["secondsLeft"].as_f64().unwrap_or(0.0),
                p["waitingFor"].as_str().unwrap_or("")
            )],
        };
        out.push_str(&format!(
            "\n  {pod} on {node} at {point}: {}",
            on.join(", ")
        ));
    }
    out
}

/// CycleState entries: a string is a leaf, an object one named branch.
fn tree(v: &Value, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    match v {
        Value::Array(items) => items.iter().for_each(|i| tree(i, depth, out)),
        Value::Object(m) => {
            for (name, children) in m {
                out.push_str(&format!("\n{pad}{name}"));
                tree(children, depth + 1, out);
            }
        }
        Value::String(s) => out.push_str(&format!("\n{pad}{s}")),
        other => out.push_str(&format!("\n{pad}{other}")),
    }
}

fn filter(v: &Value) -> String {
    let pod = or_none(v["pod"].as_str().unwrap_or(""));
    let Some(nodes) = v["nodes"].as_object() else {
        return match v["error"].as_str() {
            Some(e) => format!("filter of {pod}: {e}"),
            None => format!("filter of {pod}: no filter verdicts"),
        };
    };
    let mut out = format!("filter of {pod}, attempt {}:", v["attempt"]);
    let width = nodes.keys().map(String::len).max().unwrap_or(0);
    for (node, plugins) in nodes {
        let rejected: Vec<String> = plugins
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, c)| c["verdict"] != "Pass" && c["verdict"] != "Skipped")
            .map(|(plugin, c)| {
                let reasons: Vec<&str> = c["reasons"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                format!(
                    "{plugin} {}: {}",
                    c["verdict"].as_str().unwrap_or(""),
                    reasons.join(", ")
                )
            })
            .collect();
        let verdict = if rejected.is_empty() {
            "✓".to_string()
        } else {
            format!("✗ {}", rejected.join("; "))
        };
        out.push_str(&format!("\n  {node:<width$}  {verdict}"));
    }
    let unexamined = v["notEvaluated"].as_array().map_or(0, Vec::len);
    if unexamined > 0 {
        out.push_str(&format!(
            "\n  ({unexamined} node(s) not examined: upstream's search stopped once it had enough feasible nodes)"
        ));
    }
    out
}

fn scores(v: &Value) -> String {
    let pod = or_none(v["pod"].as_str().unwrap_or(""));
    let Some(nodes) = v["nodes"].as_object() else {
        return match v["error"].as_str() {
            Some(e) => format!("scores of {pod}: {e}"),
            None => format!("scores of {pod}: not scored (no feasible node, or one only)"),
        };
    };
    let mut rows: Vec<(&String, &Value)> = nodes.iter().collect();
    rows.sort_by(|a, b| {
        let t = |r: &(&String, &Value)| r.1["total"].as_i64().unwrap_or(0);
        t(b).cmp(&t(a)).then(a.0.cmp(b.0))
    });
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let mut out = format!("scores of {pod}, attempt {}:", v["attempt"]);
    let chosen = v["chosen"].as_str();
    for (node, n) in rows {
        let plugins: Vec<String> = n["plugins"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(p, s)| format!("{p} {s}"))
            .collect();
        let star = if Some(node.as_str()) == chosen {
            "★"
        } else {
            " "
        };
        out.push_str(&format!(
            "\n {star}{node:<width$}  {:>5}  {}",
            n["total"],
            plugins.join(", ")
        ));
    }
    out
}

fn pod(v: &Value) -> String {
    let r = &v["record"];
    let mut out = format!(
        "pod {}: {}",
        v["pod"].as_str().unwrap_or(""),
        r["status"].as_str().unwrap_or("unknown")
    );
    if let Some(n) = r["node"].as_str() {
        out.push_str(&format!(" on {n}"));
    }
    if let Some(m) = r["message"].as_str() {
        out.push_str(&format!(": {m}"));
    }
    if !v["object"].is_null()
        && let Ok(y) = super::replay::to_yaml(&v["object"])
    {
        out.push('\n');
        out.push_str(y.trim_end());
    }
    out
}
