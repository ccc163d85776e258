//! Replay follows the real scheduler's sampled search. On more than 100 nodes upstream
//! examines only enough nodes (percentageOfNodesToScore), with 16 workers whose timing
//! moves the examined window; when the recording binds a pod to a node just outside
//! kubestep's window, kubestep runs the cycle again from the nearest start that explains
//! it and says so. A node farther away stays a divergence, with its cause named.

use std::process::Command;

use serde_json::Value;

const HEADER: &str = r#"{"kubestep":"recording","version":1,"started":"2026-03-02T09:00:00Z"}"#;

/// 200 nodes of 4 cpus in one zone (searched in this order), `big` with 16; one pod of
/// 1 cpu that the recording binds to `real`.
fn recording(big: &str, real: &str) -> String {
    let mut lines = vec![HEADER.to_string()];
    for i in 0..200 {
        let name = format!("n{i:03}");
        let cpu = if name == big { "16" } else { "4" };
        lines.push(format!(
            r#"{{"at":"2026-03-02T09:00:00Z","type":"ADDED","object":{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{name}"}},"status":{{"allocatable":{{"cpu":"{cpu}","memory":"8Gi","pods":"110"}}}}}}}}"#
        ));
    }
    let pod = |at: &str, t: &str, node: &str| {
        format!(
            r#"{{"at":"{at}","type":"{t}","object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p0","namespace":"web","uid":"uid-p0"}},"spec":{{{node}"containers":[{{"name":"c","resources":{{"requests":{{"cpu":"1"}}}}}}]}}}}}}"#
        )
    };
    lines.push(pod("2026-03-02T09:00:10Z", "ADDED", ""));
    let bound = format!(r#""nodeName":"{real}","#);
    lines.push(pod("2026-03-02T09:00:11Z", "MODIFIED", &bound));
    lines.join("\n") + "\n"
}

/// The replay's JSON lines (steps included) and its standard error.
fn replay(name: &str, text: &str) -> (Vec<Value>, String) {
    let dir = std::env::temp_dir().join(format!("kubestep-sampled-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("rec.jsonl");
    std::fs::write(&file, text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args(["replay", "--headless", "--no-timings", "--trace", "steps"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_dir_all(&dir).ok();
    let lines = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, String::from_utf8(o.stderr).unwrap())
}

fn divergences(lines: &[Value]) -> &Vec<Value> {
    lines.last().unwrap()["summary"]["divergences"]
        .as_array()
        .unwrap()
}

#[test]
fn a_node_just_past_the_window_moves_the_search_start_to_it() {
    // The search from n000 stops after 100 feasible nodes (n000–n099); the real scheduler
    // bound the pod to the big node n105, six nodes further.
    let (lines, err) = replay("near", &recording("n105", "n105"));
    let moved = lines
        .iter()
        .find(|l| {
            l["type"] == "step"
                && l["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("search start moved +6 to follow the recording"))
        })
        .expect("a step that moves the search start");
    assert_eq!(moved["point"], "SelectHost", "{moved}");
    let attempt = lines
        .iter()
        .find(|l| l["type"] == "attempt")
        .expect("an attempt");
    // The attempt is the cycle from the moved start: n105 among 100 evaluated nodes.
    assert_eq!(attempt["node"], "n105", "{attempt}");
    assert_eq!(attempt["evaluatedNodes"], 100, "{attempt}");
    assert_eq!(
        attempt["message"],
        "the recording binds this pod to n105 (kubestep's search start moved +6 to follow it)"
    );
    assert!(divergences(&lines).is_empty(), "{:?}", divergences(&lines));
    assert!(
        err.contains("search start: moved to follow the recording in 1 cycle(s)"),
        "{err}"
    );
}

#[test]
fn a_node_far_from_the_window_stays_a_divergence_that_names_sampling() {
    // n150 is 50 nodes from either end of the window: more than two chunks (2 × 13).
    let (lines, err) = replay("far", &recording("n150", "n150"));
    assert!(
        !lines.iter().any(|l| l["message"]
            .as_str()
            .is_some_and(|m| m.contains("search start moved"))),
        "no shift that far"
    );
    let d = divergences(&lines);
    assert_eq!(d.len(), 1, "{d:?}");
    let reason = d[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("n150 was not evaluated")
            || reason.starts_with("n150 passed every filter"),
        "{reason}"
    );
    assert!(
        reason.contains("no start within two chunks of kubestep's"),
        "{reason}"
    );
    // The big node scores above every node kubestep examined.
    assert!(
        reason.contains("; a search that examines n150 scores it ")
            && reason.contains("above kubestep's best"),
        "{reason}"
    );
    assert!(!err.contains("search start: moved"), "{err}");
}

#[test]
fn a_tie_inside_the_window_is_left_as_it_is() {
    // Every node alike: the recorded node inside the window ties kubestep's best.
    let (lines, _) = replay("tie", &recording("none", "n042"));
    assert!(divergences(&lines).is_empty());
    assert!(!lines.iter().any(|l| {
        l["message"]
            .as_str()
            .is_some_and(|m| m.contains("search start moved"))
    }));
}
