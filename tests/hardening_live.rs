//! `kubestep live` and `kubestep record` when the API server misbehaves (issue 25, items 3
//! and 4), against the loopback API server: shutdown writes the server hangs share one
//! deadline and a signal ends them; a signal sent twice at once counts once; a failed
//! discovery request is retried and named; watches that fail until the end leave a gap
//! that the summary, the exit code, the file and replay all report.
//!
//! Time bounds here are guards against a hang (tens of seconds where the bug took
//! minutes), not measurements.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use kubestep::recording::reader::{ReadOptions, read_file};
use support::apiserver::{ApiServer, RequestFault};
use support::process::wait_bounded;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_kubestep")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kubestep-hardening-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}})
}

fn pod(name: &str, scheduler: Option<&str>) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]});
    if let Some(s) = scheduler {
        spec["schedulerName"] = json!(s);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team"}, "spec": spec})
}

/// A pod ManualApproval holds at Permit.
fn held_pod(name: &str) -> Value {
    let mut p = pod(name, Some("kubestep"));
    p["metadata"]["labels"] = json!({"kubestep.io/approval": "manual"});
    p
}

/// The default profile plus ManualApproval at Permit, served as `kubestep`.
const APPROVAL_CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: kubestep
  plugins:
    permit:
      enabled:
      - name: ManualApproval
";

/// Lines of a child's pipe as they come.
struct Lines {
    rx: Receiver<String>,
    seen: Vec<String>,
}

impl Lines {
    fn of(pipe: impl std::io::Read + Send + 'static) -> Lines {
        use std::io::BufRead;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Lines {
            rx,
            seen: Vec::new(),
        }
    }

    /// Waits until `n` lines contain `what`.
    fn wait_for(&mut self, what: &str, n: usize) {
        while self.seen.iter().filter(|l| l.contains(what)).count() < n {
            match self.rx.recv_timeout(Duration::from_secs(60)) {
                Ok(l) => self.seen.push(l),
                Err(_) => panic!("no {what:?} (x{n}) in the output: {:#?}", self.seen),
            }
        }
    }

    fn rest(mut self) -> String {
        while let Ok(l) = self.rx.recv_timeout(Duration::from_secs(60)) {
            self.seen.push(l);
        }
        self.seen.join("\n")
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) with the pid of our own child and a plain signal number.
    let r = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(r, 0, "kill failed");
}

/// `kubestep live --headless --active` as scheduler `kubestep` holding three pods at
/// Permit; its stdout and stderr, read as they come, once all three wait.
fn active_with_three_waiting(
    server: &ApiServer,
    name: &str,
    extra: &[&str],
) -> (Child, Lines, Lines) {
    server.apply(node("n1"));
    for p in ["held-a", "held-b", "held-c"] {
        server.apply(held_pod(p));
    }
    let dir = temp_dir(name);
    let kc = server.write_kubeconfig(&dir, None);
    let cfg = dir.join("scheduler.yaml");
    std::fs::write(&cfg, APPROVAL_CONFIG).expect("write config");
    let mut child = Command::new(bin())
        .args([
            "live",
            "--headless",
            "--active",
            "--scheduler-name",
            "kubestep",
        ])
        .arg("--kubeconfig")
        .arg(&kc)
        .arg("--config")
        .arg(&cfg)
        .args(extra)
        .env_remove("KUBECONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubestep live");
    let err = Lines::of(child.stderr.take().expect("piped stderr"));
    let mut out = Lines::of(child.stdout.take().expect("piped stdout"));
    out.wait_for("\"result\":\"Waiting\"", 3);
    (child, out, err)
}

fn finished(o: &Output, out: Lines, err: Lines, name: &str, began: Instant) -> (String, String) {
    let (stdout, stderr) = (out.rest(), err.rest());
    eprintln!(
        "--- {name}: exit {:?} after {:.1}s\n{stderr}",
        o.status.code(),
        began.elapsed().as_secs_f64()
    );
    (stdout, stderr)
}

/// Item 3: the server hangs every write at shutdown; the writes (3 pods: an event and a
/// status patch each) get one deadline in all, not a read timeout each in turn.
#[test]
fn shutdown_writes_a_hung_server_holds_share_one_deadline() {
    let server = ApiServer::start();
    let began = Instant::now();
    let (child, out, err) =
        active_with_three_waiting(&server, "hung-deadline", &["--duration", "6s"]);
    server.hang_writes(true);
    let o = wait_bounded(child, Duration::from_secs(60));
    let (stdout, stderr) = finished(&o, out, err, "hung writes, --duration 6s", began);
    assert!(o.status.success(), "{stderr}");
    // Six writes at 60 s each took six minutes before; a generous bound.
    assert!(began.elapsed() < Duration::from_secs(40), "{stderr}");
    assert!(
        stderr.contains("rejected 3 pod(s) waiting at Permit: kubestep is shutting down"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "shutdown: 0 of 6 writes done; the 5s shutdown deadline passed; not made: event FailedScheduling for team/held-"
        ),
        "{stderr}"
    );
    // The summary is printed all the same.
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(summary["summary"]["pods"].as_array().map(Vec::len), Some(3));
}

/// Item 3: SIGTERM starts the shutdown (its copy, as `timeout` sends, is the same
/// request); a later SIGINT ends the hung shutdown writes at once, and stderr says which
/// were not made.
#[test]
fn a_signal_during_shutdown_ends_it_and_says_what_was_not_written() {
    let server = ApiServer::start();
    let began = Instant::now();
    let (child, out, mut err) = active_with_three_waiting(&server, "hung-signal", &[]);
    server.hang_writes(true);
    signal(&child, libc::SIGTERM);
    err.wait_for("SIGTERM: stopping as quit does", 1);
    // A copy right away, as `timeout` sends one to the child and one to its group.
    signal(&child, libc::SIGTERM);
    // Past the window in which the same signal counts as a copy.
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, libc::SIGINT);
    let o = wait_bounded(child, Duration::from_secs(60));
    let (stdout, stderr) = finished(&o, out, err, "hung writes, SIGTERM then SIGINT", began);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("shutdown: 0 of 6 writes done; stopped by SIGINT; not made: "),
        "{stderr}"
    );
    assert!(stderr.contains("and 1 more"), "{stderr}");
    assert!(
        stdout
            .lines()
            .last()
            .unwrap_or_default()
            .contains("\"summary\"")
    );
}

/// Item 3: `timeout` sends SIGTERM to kubestep and again to its process group; the copy
/// must not kill it before the summary and the rejection of the waiting pods.
#[test]
fn a_signal_sent_twice_at_once_counts_once() {
    let server = ApiServer::start();
    let began = Instant::now();
    let (child, out, mut err) = active_with_three_waiting(&server, "twice", &[]);
    signal(&child, libc::SIGTERM);
    err.wait_for("SIGTERM: stopping as quit does", 1);
    signal(&child, libc::SIGTERM);
    let o = wait_bounded(child, Duration::from_secs(60));
    let (stdout, stderr) = finished(&o, out, err, "SIGTERM twice", began);
    assert!(o.status.success(), "{:?}: {stderr}", o.status);
    assert!(
        stderr.contains("rejected 3 pod(s) waiting at Permit: kubestep is shutting down"),
        "{stderr}"
    );
    assert!(
        stdout
            .lines()
            .last()
            .unwrap_or_default()
            .contains("\"summary\"")
    );

    // And under timeout(1) itself, which sends both.
    let server = ApiServer::start();
    server.apply(node("n1"));
    server.apply(pod("fits", None));
    let dir = temp_dir("timeout");
    let kc = server.write_kubeconfig(&dir, None);
    let o = wait_bounded(
        Command::new("timeout")
            .args(["--preserve-status", "-s", "TERM", "4"])
            .arg(bin())
            .args(["live", "--headless", "--kubeconfig"])
            .arg(&kc)
            .env_remove("KUBECONFIG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run timeout kubestep live"),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{:?}: {stderr}", o.status);
    assert!(
        stderr.contains("SIGTERM: stopping as quit does"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout
            .lines()
            .last()
            .unwrap_or_default()
            .contains("\"summary\"")
    );
}

fn record(kubeconfig: &Path, out: &Path, extra: &[&str]) -> Output {
    wait_bounded(
        Command::new(bin())
            .arg("record")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("-o")
            .arg(out)
            .args(extra)
            .env_remove("KUBECONFIG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kubestep record"),
        Duration::from_secs(60),
    )
}

/// Item 3: one failed discovery request (a 500, a dropped connection) is retried with
/// backoff and named, by `record` and by `live`, instead of ending them with exit 2.
#[test]
fn a_failed_discovery_request_is_retried_and_named() {
    let server = ApiServer::start();
    server.set_pod_groups(true);
    server.apply(node("n1"));
    let dir = temp_dir("discovery");
    let kc = server.write_kubeconfig(&dir, None);
    let faults = |s: &ApiServer| {
        s.fail_requests("/version", RequestFault::Drop, 1);
        s.fail_requests("/apis/resource.k8s.io/v1", RequestFault::InternalError, 1);
        s.fail_requests("/apis/scheduling.x-k8s.io/v1alpha1", RequestFault::Drop, 1);
    };
    faults(&server);
    let began = Instant::now();
    let o = record(&kc, &dir.join("r.jsonl"), &["--duration", "6s"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    eprintln!(
        "--- record, failed discovery: exit {:?} after {:.1}s\n{stderr}",
        o.status.code(),
        began.elapsed().as_secs_f64()
    );
    assert!(o.status.success(), "{stderr}");
    for line in [
        "GET /version failed: connection closed before message completed; retrying in 1s",
        "GET /apis/resource.k8s.io/v1 failed: Internal error occurred: etcdserver: request timed out (500 InternalError); retrying in 1s",
        "GET /apis/scheduling.x-k8s.io/v1alpha1 failed: connection closed before message completed; retrying in 1s",
        "listed PodGroup: 0 objects",
    ] {
        assert!(stderr.contains(line), "{line:?} in:\n{stderr}");
    }

    faults(&server);
    let began = Instant::now();
    let o = wait_bounded(
        Command::new(bin())
            .args(["live", "--headless", "--duration", "6s", "--kubeconfig"])
            .arg(&kc)
            .env_remove("KUBECONFIG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kubestep live"),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    eprintln!(
        "--- live, failed discovery: exit {:?} after {:.1}s\n{stderr}",
        o.status.code(),
        began.elapsed().as_secs_f64()
    );
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("GET /apis/scheduling.x-k8s.io/v1alpha1 failed: connection closed before message completed; retrying in 1s"),
        "{stderr}"
    );
    assert!(stderr.contains("mirrored"), "{stderr}");
}

/// Item 4: every watch request fails: the changes made after the first lists are lost.
/// The summary says so, the file holds a gap marker that replay warns about, and the exit
/// code is 3. Watches that come back (the same fault, lifted) lose nothing: exit 0.
#[test]
fn watches_that_fail_until_the_end_leave_a_gap_that_is_reported() {
    let server = ApiServer::start();
    server.apply(node("n1"));
    server.apply(pod("early", None));
    server.fail_watches(true);
    let dir = temp_dir("gap");
    let kc = server.write_kubeconfig(&dir, None);
    let file = dir.join("r.jsonl");
    let child = Command::new(bin())
        .arg("record")
        .arg("--kubeconfig")
        .arg(&kc)
        .arg("-o")
        .arg(&file)
        .args(["--duration", "5s"])
        .env_remove("KUBECONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubestep record");
    let watch_failed = |s: &ApiServer| s.requests().iter().any(|r| r.is_watch());
    server.wait_until("a watch request", Duration::from_secs(30), watch_failed);
    server.apply(pod("late", None));
    server.apply(node("n2"));
    let began = Instant::now();
    let o = wait_bounded(child, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    eprintln!(
        "--- record, every watch failing: exit {:?} ({:.1}s after the changes)\nstdout:\n{stdout}\nstderr (last lines):\n{}",
        o.status.code(),
        began.elapsed().as_secs_f64(),
        stderr.lines().rev().take(4).collect::<Vec<_>>().join("\n")
    );
    assert_eq!(o.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("  incomplete: gap in the recording: changes to "),
        "{stdout}"
    );
    assert!(
        stdout.contains("Node") && stdout.contains("Pod"),
        "{stdout}"
    );
    assert!(
        stderr.contains("were not recorded (their watches failed until the end; the file marks the gap); exit code 3"),
        "{stderr}"
    );
    let rec = read_file(&file, ReadOptions { strict: true }).expect("read the recording");
    let gap = rec
        .warnings
        .iter()
        .find(|w| w.contains("gap in the recording"))
        .unwrap_or_else(|| panic!("no gap warning: {:?}", rec.warnings));
    assert!(
        gap.contains("Pod") && gap.contains("last error: ") && gap.contains("(500 InternalError)"),
        "{gap}"
    );
    // The changes made meanwhile are indeed missing.
    assert!(!rec.events.iter().any(|e| e.object.key().contains("late")));

    // Replay says so too.
    let o = wait_bounded(
        Command::new(bin())
            .arg("replay")
            .arg(&file)
            .arg("--headless")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kubestep replay"),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    eprintln!("--- replay of it: exit {:?}\n{stderr}", o.status.code());
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("kubestep: warning: ") && stderr.contains(": gap in the recording: "),
        "{stderr}"
    );

    // Watches that fail for a while and come back lose nothing: no gap, exit 0.
    let server = ApiServer::start();
    server.apply(node("n1"));
    server.fail_watches(true);
    let kc = server.write_kubeconfig(&dir, None);
    let child = Command::new(bin())
        .arg("record")
        .arg("--kubeconfig")
        .arg(&kc)
        .arg("-o")
        .arg(dir.join("back.jsonl"))
        .args(["--duration", "8s"])
        .env_remove("KUBECONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubestep record");
    server.wait_until("a watch request", Duration::from_secs(30), watch_failed);
    server.fail_watches(false);
    server.apply(pod("late", None));
    let o = wait_bounded(child, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(!stdout.contains("incomplete"), "{stdout}");
    let rec = read_file(&dir.join("back.jsonl"), ReadOptions { strict: true })
        .expect("read the recording");
    assert!(rec.events.iter().any(|e| e.object.key().contains("late")));
}

#[test]
fn live_record_marks_watches_that_fail_until_the_end() {
    let server = ApiServer::start();
    server.apply(node("n1"));
    server.fail_watches(true);
    let dir = temp_dir("live-gap");
    let kc = server.write_kubeconfig(&dir, None);
    let file = dir.join("live.jsonl");
    let child = Command::new(bin())
        .args(["live", "--headless", "--kubeconfig"])
        .arg(&kc)
        .arg("--record")
        .arg(&file)
        .args(["--duration", "4s"])
        .env_remove("KUBECONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubestep live");
    let watch_failed = |s: &ApiServer| s.requests().iter().any(|r| r.is_watch());
    server.wait_until("a watch request", Duration::from_secs(30), watch_failed);
    server.apply(pod("late", None));
    let o = wait_bounded(child, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("is incomplete: changes to ") && stderr.contains("the file marks the gap"),
        "{stderr}"
    );
    let rec = read_file(&file, ReadOptions { strict: true }).expect("read the recording");
    assert!(
        rec.warnings
            .iter()
            .any(|w| w.contains("gap in the recording") && w.contains("Pod")),
        "{:?}",
        rec.warnings
    );
    let _ = std::fs::remove_dir_all(&dir);
}
