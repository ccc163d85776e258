//! `kubestep replay --headless` as a user runs it: scripts, JSON lines, the summary.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

const CLUSTER: &str = "apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1}}
status:
  allocatable: {cpu: \"4\", memory: 16Gi, pods: \"110\"}
---
apiVersion: v1
kind: Pod
metadata: {name: migrate-db, namespace: payments, uid: u1, labels: {kubestep.io/approval: manual}}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: \"1\"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: ml, uid: u2}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: \"64\"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: gated, namespace: web, uid: u3}
spec:
  schedulingGates: [{name: example.com/quota}]
  containers: [{name: c, image: x}]
";

const CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    permit:
      enabled: [{name: ManualApproval}]
";

fn files() -> (tempdir::Dir, String, String) {
    let d = tempdir::Dir::new();
    let c = d.write("cluster.yaml", CLUSTER);
    let f = d.write("config.yaml", CONFIG);
    (d, c, f)
}

/// A throwaway directory under the target dir, removed on drop.
mod tempdir {
    pub struct Dir(std::path::PathBuf);
    impl Dir {
        pub fn new() -> Dir {
            let n = std::sync::atomic::AtomicU64::new(0);
            let p = std::env::temp_dir().join(format!(
                "kubestep-headless-{}-{}-{}",
                std::process::id(),
                n.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0)
            ));
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
        pub fn write(&self, name: &str, text: &str) -> String {
            let p = self.0.join(name);
            std::fs::write(&p, text).unwrap();
            p.to_string_lossy().into_owned()
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn run(args: &[&str], stdin: &str) -> (i32, Vec<Value>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    (
        out.status.code().unwrap_or(-1),
        lines,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn pod<'a>(summary: &'a Value, key: &str) -> &'a Value {
    summary["summary"]["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pod"] == key)
        .unwrap_or_else(|| panic!("{key} not in {summary}"))
}

#[test]
fn a_script_holds_approves_and_ends_with_the_summary() {
    let (_d, cluster, config) = files();
    let script = "break outcome=wait\ncontinue\nshow waiting\nallow payments/migrate-db\ncontinue\nshow queue\n";
    let (code, lines, err) = run(
        &[
            "replay",
            &cluster,
            "--headless",
            "--config",
            &config,
            "--script",
            "-",
        ],
        script,
    );
    assert_eq!(code, 0, "{err}");
    let stop = lines
        .iter()
        .find(|l| l["type"] == "stop")
        .expect("a stop line");
    assert_eq!(stop["reason"], "breakpoint");
    let waiting = lines.iter().find(|l| l["type"] == "waiting").unwrap();
    assert_eq!(waiting["pods"][0]["pod"], "payments/migrate-db");
    assert!(
        waiting["pods"][0]["waitingOn"]["ManualApproval"]["secondsLeft"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let summary = lines.last().unwrap();
    assert_eq!(pod(summary, "payments/migrate-db")["status"], "Bound");
    assert_eq!(pod(summary, "payments/migrate-db")["node"], "node-1");
    assert_eq!(pod(summary, "web/gated")["status"], "Gated");
    let huge = pod(summary, "ml/huge");
    assert_eq!(huge["status"], "Unschedulable");
    assert_eq!(huge["node"], Value::Null);
    assert!(
        huge["message"]
            .as_str()
            .unwrap()
            .starts_with("0/1 nodes are available: 1 Insufficient cpu.")
    );
}

#[test]
fn without_a_script_it_runs_until_settled_and_waiting_pods_time_out() {
    let (_d, cluster, config) = files();
    let (code, lines, err) = run(
        &[
            "replay",
            &cluster,
            "--headless",
            "--config",
            &config,
            "--until",
            "20m",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    // Standard error is a pipe here: no progress line.
    assert!(
        !err.contains("pods bound") && !err.contains('\r'),
        "{err:?}"
    );
    let summary = lines.last().unwrap();
    // Nobody approved it within 15 minutes: the wait timed out, the pod was unreserved.
    let p = pod(summary, "payments/migrate-db");
    assert_ne!(p["status"], "Bound", "{p}");
    // The attempt's line, printed again when it concluded, names the timeout.
    assert!(lines.iter().any(|l| {
        l["type"] == "attempt"
            && l["pod"] == "payments/migrate-db"
            && l["result"] == "Unschedulable"
            && l["message"].as_str().unwrap_or("").contains("timeout")
            && l["points"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["point"] == "WaitOnPermit"))
    }));
}

#[test]
fn script_errors_name_the_line() {
    let (_d, cluster, config) = files();
    let (code, _, err) = run(
        &[
            "replay",
            &cluster,
            "--headless",
            "--config",
            &config,
            "--script",
            "-",
        ],
        "continue\n\nallow nobody\n",
    );
    assert_ne!(code, 0);
    assert!(err.contains("line 3"), "{err}");
    let (code, lines, err) = run(
        &[
            "replay",
            &cluster,
            "--headless",
            "--config",
            &config,
            "--script",
            "-",
        ],
        "continue\nallow web/gated\n",
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("line 2") && err.contains("not waiting at Permit"),
        "{err}"
    );
    assert_eq!(lines[lines.len() - 2]["type"], "error");
    assert!(
        lines.last().unwrap().get("summary").is_some(),
        "the summary is always last"
    );
}

#[test]
fn a_reader_that_goes_away_ends_the_run_quietly() {
    // `kubestep replay demo --headless | head -1`: the rest of the output has nowhere to go.
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args(["replay", "demo", "--headless"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 1];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

/// A long headless replay shows its progress on standard error when that is a terminal
/// (one line redrawn in place, wiped at the end), and says nothing there otherwise.
#[test]
fn progress_shows_on_a_terminal_only() {
    let bin = env!("CARGO_BIN_EXE_kubestep");
    let out = Command::new(bin)
        .args(["replay", "demo", "--headless", "-o", "text"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("pods bound") && !err.contains('\r'),
        "{err:?}"
    );
    // script(1) gives the command a terminal and copies what it writes there to its own
    // standard output; the replay's output goes to /dev/null, as a user would redirect it.
    let probe = Command::new("script").arg("--version").output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped the terminal half: script(1) (util-linux) is not installed");
        return;
    }
    let quoted = format!("'{}'", bin.replace('\'', "'\\''"));
    let out = Command::new("script")
        .args([
            "-qec",
            &format!("{quoted} replay demo --headless -o text > /dev/null"),
            "/dev/null",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let tty = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{tty:?}");
    assert!(tty.contains("\r\x1b[2Kreplay demo: "), "{tty:?}");
    // The demo's 49 pods and 72 events (`kubestep recordings`); those at its start are
    // applied before the first line.
    let applied: Vec<usize> = tty
        .split("/49 pods bound, ")
        .skip(1)
        .filter_map(|rest| rest.split_once("/72 events applied, virtual +"))
        .map(|(n, _)| n.parse().unwrap())
        .collect();
    assert!(!applied.is_empty(), "{tty:?}");
    assert!(applied.iter().all(|&n| n > 0), "{tty:?}");
    // Wiped at the end: what stays on the screen is the output alone.
    assert!(tty.ends_with("\r\x1b[2K"), "{tty:?}");
}

/// `-o text` is text for every script command: `help` lists the commands, and each
/// `show` answers in lines (it printed JSON before).
#[test]
fn every_script_command_answers_in_text_under_o_text() {
    let script = "help\nstep\nstep\nstep\nshow cycle\nshow queue\nshow waiting\nshow state\nshow filter\nshow scores\nshow pod ml/llm-finetune-worker-0\n";
    let out = Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args([
            "replay",
            "demo",
            "--headless",
            "-o",
            "text",
            "--script",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(script.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with('{')),
        "{text}"
    );
    for expected in [
        "show queue | waiting | cycle | state | filter | scores",
        "cycle: attempt 1 of data/spark-driver-kqq8tjzrtf-hknhf, done: Unschedulable",
        "queue at 2026-03-02T09:00:00Z: in flight 0, activeQ 8,",
        "waiting at 2026-03-02T09:00:00Z: 0 pod(s)",
        "CycleState of data/spark-driver-kqq8tjzrtf-hknhf:",
        "  ip-10-0-2-34.ec2.internal   ✗ NodeResourcesFit Reject: Insufficient cpu",
        "scores of data/spark-driver-kqq8tjzrtf-hknhf: not scored",
        "pod ml/llm-finetune-worker-0: Pending",
    ] {
        assert!(text.contains(expected), "{expected:?} missing:\n{text}");
    }
}
