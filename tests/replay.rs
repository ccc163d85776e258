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

#[test]
fn the_same_recording_and_seed_give_the_same_summary() {
    for name in ["demo", "divergence", "gang-scheduling"] {
        let a = run(&["replay", name, "--headless", "--seed", "7"]);
        let b = run(&["replay", name, "--headless", "--seed", "7"]);
        let last = |o: &Output| stdout(o).lines().last().unwrap_or("").to_string();
        assert!(!last(&a).is_empty());
        assert_eq!(last(&a), last(&b), "{name}");
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
    assert!(
        e.contains(&format!(
            "{path}:4: bad line skipped: Pod web/bad-cpu: spec.containers[0].resources.requests.cpu"
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
