//! `kubestep replay` and `kubestep recordings` as a user runs them: bundled names and
//! paths, the summary with divergences, determinism, --until, and bad recordings.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kubestep"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("kubestep runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn summary(o: &Output) -> Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    let out = stdout(o);
    let last = out.lines().last().expect("a summary line");
    serde_json::from_str(last).expect("the summary is JSON")
}

fn pod<'a>(sum: &'a Value, prefix: &str) -> &'a Value {
    let found: Vec<&Value> = sum["summary"]["pods"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["pod"].as_str().unwrap_or("").starts_with(prefix))
        .collect();
    assert_eq!(found.len(), 1, "{prefix}");
    found[0]
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kubestep-replay-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

const HEADER: &str = r#"{"kubestep":"recording","version":1,"started":"2026-03-02T09:00:00Z"}"#;

fn node_line(sec: u32, name: &str) -> String {
    format!(
        r#"{{"at":"2026-03-02T09:00:{sec:02}Z","type":"ADDED","object":{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{name}"}},"status":{{"allocatable":{{"cpu":"4","memory":"8Gi","pods":"110"}}}}}}}}"#
    )
}

fn pod_line(sec: u32, name: &str, cpu: &str) -> String {
    format!(
        r#"{{"at":"2026-03-02T09:00:{sec:02}Z","type":"ADDED","object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"web","uid":"uid-{name}"}},"spec":{{"containers":[{{"name":"c","resources":{{"requests":{{"cpu":"{cpu}"}}}}}}]}}}}}}"#
    )
}

#[test]
fn recordings_lists_every_bundled_recording() {
    let o = run(&["recordings"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("NAME"), "{out}");
    for name in [
        "demo",
        "preemption",
        "gang-scheduling",
        "volumes-zones",
        "large",
    ] {
        assert!(out.lines().any(|l| l.starts_with(name)), "{name}: {out}");
    }
    let o = run(&["recordings", "--json"]);
    let large: Value = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["name"] == "large")
        .unwrap();
    assert!(large["nodes"].as_u64().unwrap() >= 2000);
    assert!(large["pods"].as_u64().unwrap() >= 20_000);
    assert!(large["events"].as_u64().unwrap() > 20_000);
}

#[test]
fn replay_a_bundled_recording_by_name() {
    let sum = summary(&run(&["replay", "divergence", "--headless"]));
    let d = sum["summary"]["divergences"].as_array().unwrap();
    assert_eq!(d.len(), 5);
    for field in ["pod", "realNode", "kubestepNodes", "reason"] {
        assert!(d[0].get(field).is_some(), "{field}: {}", d[0]);
    }
    let p = pod(&sum, "batch/reindex-");
    assert_eq!(p["status"], "Bound");
    // Without recorded bindings the list is empty but present.
    let sum = summary(&run(&["replay", "preemption", "--headless"]));
    assert_eq!(sum["summary"]["divergences"], serde_json::json!([]));
}

#[test]
fn text_summary_renders_divergences() {
    let o = run(&["replay", "divergence", "--headless", "-o", "text"]);
    let out = stdout(&o);
    assert!(out.contains("\ndivergences:\n"), "{out}");
    assert!(
        out.contains("recorded on ip-10-0-1-26.ec2.internal, kubestep's best: "),
        "{out}"
    );
    assert!(
        out.contains("kubestep found the pod unschedulable: 0/4 nodes are available"),
        "{out}"
    );
    let o = run(&["replay", "preemption", "--headless", "-o", "text"]);
    assert!(
        stdout(&o).ends_with("divergences: none\n"),
        "{}",
        stdout(&o)
    );
}

/// `-o text` is a line per attempt: pod, result, node, counts and message, never the
/// trace object's JSON.
#[test]
fn text_output_is_a_line_per_attempt() {
    let o = run(&["replay", "demo", "--headless", "-o", "text"]);
    let out = stdout(&o);
    let attempts: Vec<&str> = out.lines().filter(|l| l.starts_with('#')).collect();
    assert!(!attempts.is_empty(), "{out}");
    assert!(!out.contains('{'), "{out}");
    let first = attempts[0];
    assert!(first.starts_with("#1 "), "{first}");
    assert!(first.contains(" evaluated, "), "{first}");
    assert!(attempts.iter().any(|l| l.contains(" Bound on ")), "{out}");
}

#[test]
fn the_same_recording_and_seed_give_the_same_summary() {
    for name in ["demo", "divergence", "gang-scheduling"] {
        let a = run(&["replay", name, "--headless", "--seed", "7"]);
        let b = run(&["replay", name, "--headless", "--seed", "7"]);
        let last = |o: &Output| stdout(o).lines().last().unwrap_or("").to_string();
        assert!(!last(&a).is_empty());
        assert_eq!(last(&a), last(&b), "{name}");
    }
    // With --no-timings every line is the same, steps included.
    for name in ["demo", "gang-scheduling"] {
        let args = [
            "replay",
            name,
            "--headless",
            "--seed",
            "7",
            "--trace",
            "steps",
            "--no-timings",
        ];
        let (a, b) = (run(&args), run(&args));
        assert!(!stdout(&a).contains("micros"), "{name}");
        assert!(stdout(&a).lines().count() > 50, "{name}");
        assert_eq!(stdout(&a), stdout(&b), "{name}");
    }
}

#[test]
fn until_is_virtual_time_from_the_recording_start() {
    // The ledger's zone gets its first node 90s in.
    let sum = summary(&run(&[
        "replay",
        "taints-affinity",
        "--headless",
        "--until",
        "60s",
    ]));
    assert_eq!(pod(&sum, "payments/ledger-")["status"], "Unschedulable");
    let sum = summary(&run(&[
        "replay",
        "taints-affinity",
        "--headless",
        "--until",
        "2m",
    ]));
    assert_eq!(pod(&sum, "payments/ledger-")["status"], "Bound");
}

#[test]
fn scripts_drive_recordings_and_advance_replays_events() {
    let dir = temp_dir("script");
    let script = dir.join("s.txt");
    std::fs::write(&script, "continue\nshow queue\nadvance 95s\nquit\n").unwrap();
    let o = run(&[
        "replay",
        "taints-affinity",
        "--headless",
        "--script",
        script.to_str().unwrap(),
    ]);
    let sum = summary(&o);
    assert_eq!(pod(&sum, "payments/ledger-")["status"], "Bound");
    let out = stdout(&o);
    let stops: Vec<Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "stop")
        .collect();
    // continue never moves the clock; advance does.
    assert_eq!(stops[0]["at"], "2026-03-02T09:00:00Z");
    assert_eq!(stops[1]["at"], "2026-03-02T09:01:35Z");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_file_wins_over_a_bundled_name() {
    let dir = temp_dir("shadow");
    let text = [
        HEADER.to_string(),
        node_line(0, "n1"),
        pod_line(0, "only", "1"),
    ]
    .join("\n");
    std::fs::write(dir.join("demo"), text).unwrap();
    let o = bin()
        .current_dir(&dir)
        .args(["replay", "demo", "--headless"])
        .output()
        .unwrap();
    let sum = summary(&o);
    assert_eq!(sum["summary"]["pods"].as_array().unwrap().len(), 1);
    assert_eq!(pod(&sum, "web/only")["node"], "n1");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unknown_names_list_the_bundled_recordings() {
    let o = run(&["replay", "no-such-recording", "--headless"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains(
            "no-such-recording: no such file, and no bundled recording of that name (bundled: demo,"
        ),
        "{e}"
    );
}

#[test]
fn bad_lines_are_named_and_skipped_or_refused_with_strict() {
    let dir = temp_dir("bad");
    let file = dir.join("bad.jsonl");
    let truncated = pod_line(2, "late", "1");
    let text = [
        HEADER.to_string(),
        node_line(0, "n1"),
        "{\"at\": oops".to_string(),
        pod_line(1, "bad-cpu", "lots"),
        pod_line(1, "fine", "1"),
        truncated[..truncated.len() / 2].to_string(),
    ]
    .join("\n");
    std::fs::write(&file, text).unwrap();
    let path = file.to_str().unwrap();
    let o = run(&["replay", path, "--headless"]);
    let e = stderr(&o);
    assert!(e.contains(&format!("{path}:3: bad line skipped")), "{e}");
    // The column is the refused field's, on its line.
    let bad_cpu = pod_line(1, "bad-cpu", "lots");
    let column = bad_cpu.find("\"cpu\"").unwrap() + 1;
    assert!(
        e.contains(&format!(
            "{path}:4: bad line skipped: column {column}: Pod web/bad-cpu: spec.containers[0].resources.requests.cpu"
        )),
        "{e}"
    );
    assert!(
        e.contains(&format!("{path}:6: truncated last line skipped")),
        "{e}"
    );
    let sum = summary(&o);
    assert_eq!(pod(&sum, "web/fine")["status"], "Bound");
    let o = run(&["replay", path, "--headless", "--strict"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!("{path}:3: bad line")),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn newer_versions_are_refused() {
    let dir = temp_dir("newer");
    let file = dir.join("new.jsonl");
    std::fs::write(
        &file,
        r#"{"kubestep":"recording","version":9,"started":"2026-03-02T09:00:00Z"}"#,
    )
    .unwrap();
    let o = run(&["replay", file.to_str().unwrap(), "--headless"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "recording format version 9 is newer than this kubestep understands (up to 1)"
        ),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn speed_is_accepted_and_checked() {
    let o = run(&["replay", "preemption", "--headless", "--speed", "4"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&["replay", "preemption", "--headless", "--speed", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is not a speed"), "{}", stderr(&o));
}

#[test]
fn explain_takes_a_recording_name() {
    let o = run(&[
        "explain",
        "--cluster",
        "demo",
        "--pod",
        "payments/schema-migrate-29541660-k2x7p",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let sum = summary(&run(&["replay", "demo", "--headless"]));
    let nb = pod(&sum, "ml/jupyter-notebook-")["pod"]
        .as_str()
        .unwrap()
        .to_string();
    let o = run(&["explain", "--cluster", "demo", "--pod", &nb]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains("untolerated taint"), "{}", stdout(&o));
}

/// A recording where the cluster's scheduler placed `high` by preemption: six 4-CPU nodes,
/// each full with two 2-CPU `low` pods of priority `low_priority(node)`, all started at the
/// same instant; `high` (priority 1000, 2 CPUs) arrives, the cluster nominates `real`,
/// deletes one victim there, then binds `high` to it.
fn preemption_recording(real: &str, low_priority: impl Fn(&str) -> i32) -> String {
    preemption_recording_at(
        real,
        low_priority,
        "2026-03-02T09:00:11Z",
        "2026-03-02T09:00:12Z",
    )
}

/// The same, the victim deleted at `delete_at` and `high` bound at `bind_at`.
fn preemption_recording_at(
    real: &str,
    low_priority: impl Fn(&str) -> i32,
    delete_at: &str,
    bind_at: &str,
) -> String {
    let mut lines = vec![HEADER.to_string()];
    let t0 = "2026-03-02T09:00:00Z";
    for i in 1..=6 {
        let node = format!("node-0{i}");
        lines.push(format!(
            r#"{{"at":"{t0}","type":"ADDED","object":{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{node}","labels":{{"kubernetes.io/hostname":"{node}"}}}},"status":{{"allocatable":{{"cpu":"4","memory":"8Gi","pods":"110"}}}}}}}}"#
        ));
        for half in ["a", "b"] {
            let prio = low_priority(&node);
            lines.push(format!(
                r#"{{"at":"{t0}","type":"ADDED","object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"low-{i}{half}","namespace":"batch","uid":"uid-low-{i}{half}"}},"spec":{{"nodeName":"{node}","priority":{prio},"containers":[{{"name":"c","resources":{{"requests":{{"cpu":"2"}}}}}}]}},"status":{{"phase":"Running","startTime":"2026-03-02T08:00:00Z"}}}}}}"#
            ));
        }
    }
    let high = |at: &str, t: &str, status: &str, node: &str| {
        format!(
            r#"{{"at":"{at}","type":"{t}","object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"high","namespace":"web","uid":"uid-high"}},"spec":{{{node}"priority":1000,"containers":[{{"name":"c","resources":{{"requests":{{"cpu":"2"}}}}}}]}}{status}}}}}"#
        )
    };
    lines.push(high("2026-03-02T09:00:10Z", "ADDED", "", ""));
    let nominated = format!(
        r#","status":{{"phase":"Pending","nominatedNodeName":"{real}","conditions":[{{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/6 nodes are available: 6 Insufficient cpu. preemption: ..."}}]}}"#
    );
    lines.push(high("2026-03-02T09:00:10.500Z", "MODIFIED", &nominated, ""));
    let victim = real.trim_start_matches("node-0");
    lines.push(format!(
        r#"{{"at":"{delete_at}","type":"DELETED","object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"low-{victim}a","namespace":"batch","uid":"uid-low-{victim}a"}},"spec":{{"nodeName":"{real}","priority":100,"containers":[{{"name":"c","resources":{{"requests":{{"cpu":"2"}}}}}}]}}}}}}"#
    ));
    let bound = format!(r#""nodeName":"{real}","#);
    lines.push(high(bind_at, "MODIFIED", "", &bound));
    lines.join("\n") + "\n"
}

/// A replay of `text`: the messages of DefaultPreemption's PostFilter steps for `high`,
/// and the summary.
fn replay_preemption(name: &str, text: &str) -> (Vec<String>, Value) {
    let dir = temp_dir(name);
    let file = dir.join("rec.jsonl");
    std::fs::write(&file, text).unwrap();
    let o = run(&[
        "replay",
        file.to_str().unwrap(),
        "--headless",
        "--trace",
        "steps",
    ]);
    let post_filter: Vec<String> = stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| {
            v["type"] == "step" && v["plugin"] == "DefaultPreemption" && v["pod"] == "web/high"
        })
        .map(|v| v["message"].as_str().unwrap_or_default().to_string())
        .collect();
    (post_filter, summary(&o))
}

/// A pod kubestep finds unschedulable while the recording binds it: its attempt says what
/// kubestep decided (Unschedulable, the exact message, the nomination and its victims),
/// not only that the recording binds it.
#[test]
fn a_deferred_attempt_that_kubestep_found_unschedulable_says_so() {
    let dir = temp_dir("deferred-unschedulable");
    let file = dir.join("rec.jsonl");
    std::fs::write(&file, preemption_recording("node-01", |_| 100)).unwrap();
    let o = run(&["replay", file.to_str().unwrap(), "--headless"]);
    let first = stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "attempt" && v["pod"] == "web/high")
        .expect("an attempt of web/high");
    assert_eq!(first["result"], "Unschedulable", "{first}");
    let message = first["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("0/6 nodes are available: 6 Insufficient cpu."),
        "{first}"
    );
    assert!(first["nominatedNode"].as_str().is_some(), "{first}");
    assert_eq!(
        first["victims"].as_array().map(Vec::len),
        Some(1),
        "{first}"
    );
}

#[test]
fn a_pod_placed_by_preemption_on_an_equally_ranked_node_is_a_tie_not_a_divergence() {
    // Every node ties: one victim of priority 100, no PDB, the same start time. Where
    // does kubestep's own preemption go?
    let (steps, _) = replay_preemption("tie-probe", &preemption_recording("node-01", |_| 100));
    let ours = steps[0]
        .rsplit("nominated ")
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(ours.starts_with("node-0"), "{steps:?}");
    // The PostFilter step names the victims and the nomination.
    let n = ours.trim_start_matches("node-0");
    assert!(
        steps[0] == format!("preempted 1 pod(s) on {ours}: batch/low-{n}a; nominated {ours}")
            || steps[0]
                == format!("preempted 1 pod(s) on {ours}: batch/low-{n}b; nominated {ours}"),
        "{steps:?}"
    );

    // The cluster chose another node of the same rank. After the victim's deletion
    // kubestep retries the pod, as the real scheduler did, and finds the node the cluster
    // freed: no divergence.
    let real = if ours == "node-06" {
        "node-02"
    } else {
        "node-06"
    };
    let (_, sum) = replay_preemption("retried", &preemption_recording(real, |_| 100));
    assert_eq!(pod(&sum, "web/high")["node"], real, "{sum}");
    assert_eq!(
        sum["summary"]["divergences"],
        serde_json::json!([]),
        "{sum}"
    );

    // Bound while kubestep's copy still backs off from its attempt (no retry in between):
    // the nomination is compared, and it is a tie.
    let quick = |real| {
        preemption_recording_at(
            real,
            |_| 100,
            "2026-03-02T09:00:10.500Z",
            "2026-03-02T09:00:10.500Z",
        )
    };
    let (_, sum) = replay_preemption("tie", &quick(real));
    let high = pod(&sum, "web/high");
    assert_eq!(high["node"], real, "{sum}");
    let d = &sum["summary"]["divergences"];
    assert_eq!(d.as_array().map(Vec::len), Some(1), "{sum}");
    assert_eq!(d[0]["tie"], true, "{d}");
    assert_eq!(d[0]["realNode"], real, "{d}");
    assert_eq!(
        d[0]["reason"],
        format!(
            "placed on {real} by the cluster; kubestep nominated {ours}, an equally ranked candidate (both: 0 PDB violation(s), highest victim priority 100, 1 victim(s))"
        ),
        "{d}"
    );
    let nodes: Vec<&str> = d[0]["kubestepNodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        nodes.contains(&real) && nodes.contains(&ours.as_str()),
        "{d}"
    );

    // The text summary says it is a tie.
    let dir = temp_dir("tie-text");
    let file = dir.join("rec.jsonl");
    std::fs::write(&file, quick(real)).unwrap();
    let o = run(&["replay", file.to_str().unwrap(), "--headless", "-o", "text"]);
    assert!(
        stdout(&o).contains(&format!("web/high: recorded on {real}, kubestep's best: ")),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("(a tie, not a divergence)"),
        "{}",
        stdout(&o)
    );

    // The cluster's node held a more important victim: a divergence, with the criterion.
    let (_, sum) = replay_preemption(
        "ranked-lower",
        &preemption_recording_at(
            real,
            |n| if n == real { 200 } else { 100 },
            "2026-03-02T09:00:10.500Z",
            "2026-03-02T09:00:10.500Z",
        ),
    );
    let d = &sum["summary"]["divergences"];
    assert_eq!(d.as_array().map(Vec::len), Some(1), "{sum}");
    assert!(d[0].get("tie").is_none(), "{d}");
    let reason = d[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!(
            "placed on {real} by the cluster; kubestep preempted on "
        )),
        "{reason}"
    );
    assert!(
        reason.ends_with(&format!(
            ": {real} was a candidate ranked lower on lowest highest victim priority: highest victim priority 200 against highest victim priority 100"
        )),
        "{reason}"
    );

    // kubestep's preemption picked the cluster's node itself: no divergence at all.
    let (_, sum) = replay_preemption("same", &preemption_recording(&ours, |_| 100));
    assert_eq!(
        sum["summary"]["divergences"],
        serde_json::json!([]),
        "{sum}"
    );
}
