//! `kubestep live --headless` against the loopback API server: shadow mode explains
//! pending pods and writes nothing; active mode binds through pods/binding, writes events
//! and status as kube-scheduler does, and never binds a pod twice.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use support::apiserver::ApiServer;
use support::process::wait_bounded;

const KINDS: usize = 13;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kubestep-live-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn node(name: &str, cpu: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}})
}

fn pod(name: &str, cpu: &str, scheduler: Option<&str>, node: Option<&str>) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]});
    if let Some(s) = scheduler {
        spec["schedulerName"] = json!(s);
    }
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team"}, "spec": spec})
}

fn spawn(kubeconfig: &Path, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args(["live", "--headless", "--kubeconfig"])
        .arg(kubeconfig)
        .args(extra)
        .env_remove("KUBECONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubestep live")
}

/// The summary (last stdout line) as pod → entry.
fn finish(child: Child) -> (std::collections::BTreeMap<String, Value>, String) {
    let (pods, _, stderr) = finish_with_summary(child);
    (pods, stderr)
}

/// The summary's pods as pod → entry, the summary itself, and standard error.
fn finish_with_summary(child: Child) -> (std::collections::BTreeMap<String, Value>, Value, String) {
    let o = child.wait_with_output().expect("wait for kubestep");
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "stderr: {stderr}\nstdout: {stdout}");
    let last = stdout.lines().last().unwrap_or_default();
    let v: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {last}"));
    let pods = v["summary"]["pods"]
        .as_array()
        .unwrap_or_else(|| panic!("no summary: {last}"))
        .iter()
        .map(|p| (p["pod"].as_str().unwrap_or_default().to_string(), p.clone()))
        .collect();
    (pods, v, stderr)
}

#[test]
fn shadow_mode_explains_pending_pods_and_writes_nothing() {
    let server = ApiServer::start();
    server.apply(node("n1", "4"));
    server.apply(node("n2", "2"));
    server.apply(pod("web-1", "100m", None, Some("n1")));
    server.apply(pod("fits", "3", None, None));
    server.apply(pod("huge", "100", None, None));
    server.apply(pod("other", "1", Some("someone-else"), None));
    let dir = temp_dir("shadow");
    let kc = server.write_kubeconfig(&dir, None);
    let child = spawn(&kc, &["--duration", "3s"]);
    server.wait_until("every kind watched", Duration::from_secs(20), |s| {
        s.open_watches() == KINDS
    });
    // A pod arriving later is explained too, against the cluster as it is: the placement
    // kubestep chose for "fits" is not assumed.
    server.apply(pod("late", "3", None, None));
    let (pods, summary, stderr) = finish_with_summary(child);
    assert_eq!(
        pods["team/fits"],
        json!({"pod": "team/fits", "node": null, "status": "Pending", "selected": ["n1"]}),
        "{stderr}"
    );
    assert_eq!(
        pods["team/late"],
        json!({"pod": "team/late", "node": null, "status": "Pending", "selected": ["n1"]})
    );
    assert_eq!(
        pods["team/huge"],
        json!({"pod": "team/huge", "node": null, "status": "Pending",
            "message": "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."})
    );
    // Bound before kubestep looked and never attempted: counted, not listed.
    assert!(!pods.contains_key("team/web-1"), "{summary}");
    assert_eq!(summary["summary"]["boundNotAttempted"], 1, "{summary}");
    assert_eq!(pods["team/other"]["status"], "Ignored");
    // Not one create, update, patch or delete.
    assert!(server.writes().is_empty(), "{:?}", server.writes());
    assert!(server.events().is_empty());
}

#[test]
fn active_mode_binds_reports_and_never_binds_twice() {
    let server = ApiServer::start();
    server.apply(node("n1", "4"));
    server.apply(node("n2", "2"));
    server.apply(pod("a", "3", Some("kubestep"), None));
    server.apply(pod("huge", "100", Some("kubestep"), None));
    server.apply(pod("theirs", "1", None, None));
    // Another scheduler binds this one first: kubestep's binding gets 409.
    server.apply(pod("raced", "1", Some("kubestep"), None));
    server.race_binding("team", "raced", "n2");
    let dir = temp_dir("active");
    let kc = server.write_kubeconfig(&dir, None);
    let child = spawn(
        &kc,
        &[
            "--active",
            "--scheduler-name",
            "kubestep",
            "--duration",
            "3s",
        ],
    );
    let (pods, stderr) = finish(child);

    let a = server.get("Pod", Some("team"), "a").expect("pod a");
    assert_eq!(a["spec"]["nodeName"], "n1", "{stderr}");
    assert_eq!(
        pods["team/a"],
        json!({"pod": "team/a", "node": "n1", "status": "Bound", "message": null})
    );
    let raced = server.get("Pod", Some("team"), "raced").expect("pod raced");
    assert_eq!(raced["spec"]["nodeName"], "n2");
    assert_eq!(pods["team/raced"]["status"], "Bound");
    assert_eq!(pods["team/raced"]["node"], "n2");

    let msg = "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.";
    assert_eq!(pods["team/huge"]["status"], "Unschedulable");
    assert_eq!(pods["team/huge"]["message"], msg);
    let huge = server.get("Pod", Some("team"), "huge").expect("pod huge");
    let cond = &huge["status"]["conditions"][0];
    assert_eq!(cond["type"], "PodScheduled");
    assert_eq!(cond["status"], "False");
    assert_eq!(cond["reason"], "Unschedulable");
    assert_eq!(cond["message"], msg);
    assert_eq!(pods["team/theirs"]["status"], "Ignored");

    let events = server.events();
    let about = |pod: &str, reason: &str| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e["regarding"]["name"] == pod && e["reason"] == reason)
            .cloned()
            .collect()
    };
    let scheduled = about("a", "Scheduled");
    assert_eq!(scheduled.len(), 1, "{events:#?}");
    assert_eq!(scheduled[0]["note"], "Successfully assigned team/a to n1");
    assert_eq!(scheduled[0]["type"], "Normal");
    assert_eq!(scheduled[0]["reportingController"], "kubestep");
    let failed = about("huge", "FailedScheduling");
    assert!(!failed.is_empty());
    assert!(
        failed
            .iter()
            .all(|e| e["note"] == msg && e["type"] == "Warning")
    );

    // One binding request per pod kubestep scheduled; none for the other scheduler's pod.
    let bindings: Vec<String> = server
        .writes()
        .iter()
        .filter(|r| r.path.ends_with("/binding"))
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(
        bindings,
        [
            "/api/v1/namespaces/team/pods/a/binding",
            "/api/v1/namespaces/team/pods/raced/binding"
        ]
    );
    assert!(!server.writes().iter().any(|r| r.path.contains("/theirs")));
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

/// Runs `kubestep live` as scheduler `kubestep` with [`APPROVAL_CONFIG`], a script of
/// debugger commands if given, and `extra` arguments; the pod summary and stderr.
fn run_approval(
    server: &ApiServer,
    name: &str,
    script: Option<&str>,
    extra: &[&str],
) -> (std::collections::BTreeMap<String, Value>, String) {
    let dir = temp_dir(name);
    let kc = server.write_kubeconfig(&dir, None);
    let cfg = dir.join("scheduler.yaml");
    std::fs::write(&cfg, APPROVAL_CONFIG).unwrap();
    let script_path = dir.join("script");
    let mut args = vec![
        "--scheduler-name",
        "kubestep",
        "--config",
        cfg.to_str().unwrap(),
    ];
    if let Some(text) = script {
        std::fs::write(&script_path, text).unwrap();
        args.extend(["--script", script_path.to_str().unwrap()]);
    }
    args.extend(extra);
    finish(spawn(&kc, &args))
}

/// A pod ManualApproval holds (label `kubestep.io/approval=manual`).
fn held_pod(name: &str) -> Value {
    let mut p = pod(name, "1", Some("kubestep"), None);
    p["metadata"]["labels"] = json!({"kubestep.io/approval": "manual"});
    p
}

fn binding_paths(server: &ApiServer) -> Vec<String> {
    server
        .writes()
        .iter()
        .filter(|r| r.path.ends_with("/binding"))
        .map(|r| r.path.clone())
        .collect()
}

fn events_about(server: &ApiServer, pod: &str, reason: &str) -> Vec<Value> {
    server
        .events()
        .into_iter()
        .filter(|e| e["regarding"]["name"] == pod && e["reason"] == reason)
        .collect()
}

#[test]
fn approval_by_hand_binds_the_allowed_pod_and_never_the_rejected_one() {
    let server = ApiServer::start();
    server.apply(node("n1", "4"));
    server.apply(node("n2", "2"));
    server.apply(held_pod("approved"));
    server.apply(held_pod("refused"));
    let (pods, stderr) = run_approval(
        &server,
        "approval",
        Some(
            "continue\nshow waiting\nallow team/approved\nreject team/refused ManualApproval not during the freeze\ncontinue\nquit\n",
        ),
        &["--active", "--duration", "20s"],
    );
    let approved = server.get("Pod", Some("team"), "approved").unwrap();
    assert_eq!(approved["spec"]["nodeName"], "n1", "{stderr}");
    // Nominated to its node while it waited (NominatedNodeNameForExpectation); the
    // refused one's nomination is cleared with its failure.
    assert_eq!(
        approved["status"]["nominatedNodeName"], "n1",
        "{approved:#}"
    );
    assert_eq!(pods["team/approved"]["status"], "Bound");
    assert_eq!(
        binding_paths(&server),
        ["/api/v1/namespaces/team/pods/approved/binding"]
    );
    let refused = server.get("Pod", Some("team"), "refused").unwrap();
    assert!(refused["spec"]["nodeName"].is_null());
    assert_eq!(pods["team/refused"]["status"], "Unschedulable");
    let failed = events_about(&server, "refused", "FailedScheduling");
    assert!(
        failed.iter().any(|e| e["note"]
            .as_str()
            .is_some_and(|n| n.contains("not during the freeze"))),
        "{failed:#?}"
    );
    let cond = &refused["status"]["conditions"][0];
    assert_eq!(cond["reason"], "Unschedulable");
    let nnn = &refused["status"]["nominatedNodeName"];
    assert!(nnn.is_null() || nnn == "", "{refused:#}");
    assert_eq!(events_about(&server, "approved", "Scheduled").len(), 1);
}

#[test]
fn quitting_active_mode_rejects_waiting_pods_and_binds_nothing() {
    let server = ApiServer::start();
    server.apply(node("n1", "4"));
    server.apply(held_pod("held"));
    let (pods, stderr) = run_approval(&server, "quit", None, &["--active", "--duration", "3s"]);
    assert!(
        stderr.contains("rejected 1 pod(s) waiting at Permit: kubestep is shutting down"),
        "{stderr}"
    );
    assert!(binding_paths(&server).is_empty(), "{:?}", server.writes());
    let held = server.get("Pod", Some("team"), "held").unwrap();
    assert!(held["spec"]["nodeName"].is_null());
    let shutting = |s: &Value| {
        s.as_str()
            .is_some_and(|n| n.contains("kubestep is shutting down"))
    };
    assert!(
        shutting(&held["status"]["conditions"][0]["message"]),
        "{held:#}"
    );
    let failed = events_about(&server, "held", "FailedScheduling");
    assert!(failed.iter().any(|e| shutting(&e["note"])), "{failed:#?}");
    assert_eq!(pods["team/held"]["status"], "Unschedulable");
    assert!(shutting(&pods["team/held"]["message"]));
}

#[test]
fn record_writes_what_live_mode_saw_and_replays() {
    let server = ApiServer::start();
    server.apply(node("n1", "4"));
    server.apply(node("n2", "2"));
    server.apply(pod("fits", "3", None, None));
    let dir = temp_dir("record");
    let kc = server.write_kubeconfig(&dir, None);
    let file = dir.join("live.jsonl.gz");
    let cfg = dir.join("sched.yaml");
    std::fs::write(
        &cfg,
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 70\n",
    )
    .unwrap();
    let child = spawn(
        &kc,
        &[
            "--record",
            file.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
            "--duration",
            "3s",
        ],
    );
    server.wait_until("every kind watched", Duration::from_secs(20), |s| {
        s.open_watches() == KINDS
    });
    server.apply(pod("late", "1", None, None));
    server.delete("Node", None, "n2");
    let (_, stderr) = finish(child);
    assert!(stderr.contains("recorded"), "{stderr}");
    assert!(server.writes().is_empty());

    // The file: a header, the first lists at its start, then the changes.
    let mut text = String::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(std::fs::File::open(&file).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["kubestep"], "recording");
    let from = lines[0]["source"]["server"].as_str().unwrap_or_default();
    assert!(from.starts_with(&server.url()), "{from}");
    // The configuration kubestep ran with, so that the replay decides as it did.
    let sc = &lines[0]["schedulerConfiguration"];
    assert_eq!(sc["kind"], "KubeSchedulerConfiguration", "{sc}");
    assert_eq!(sc["percentageOfNodesToScore"], 70, "{sc}");
    let started = lines[0]["started"].clone();
    let find = |ty: &str, kind: &str, name: &str| {
        lines.iter().skip(1).position(|e| {
            e["type"] == ty
                && e["object"]["kind"] == kind
                && e["object"]["metadata"]["name"] == name
        })
    };
    let first = find("ADDED", "Pod", "fits").expect("the first list");
    assert_eq!(lines[first + 1]["at"], started);
    let late = find("ADDED", "Pod", "late").expect("the pod added later");
    let gone = find("DELETED", "Node", "n2").expect("the node deleted later");
    // Watches of different kinds are independent streams: only "after the first lists"
    // is guaranteed, not the order between a pod's and a node's change.
    assert!(first < late && first < gone, "{text}");

    // kubestep replays it.
    let o = Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args(["replay", "--headless"])
        .arg(&file)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let pods = summary["summary"]["pods"].to_string();
    assert!(
        pods.contains("team/fits") && pods.contains("team/late"),
        "{pods}"
    );
}

#[test]
fn shadow_mode_simulates_permit_waits_and_holds_nothing() {
    let server = ApiServer::start();
    server.apply(node("n1", "4"));
    server.apply(held_pod("held"));
    server.apply(pod("free", "1", Some("kubestep"), None));
    let (pods, stderr) = run_approval(&server, "shadow-permit", None, &["--duration", "3s"]);
    let held = &pods["team/held"];
    assert_eq!(held["status"], "Pending", "{stderr}");
    assert_eq!(held["selected"], json!(["n1"]));
    let msg = held["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("would wait at Permit on n1") && msg.contains("simulated in shadow mode"),
        "{msg}"
    );
    // A pod no Permit plugin holds is explained as before.
    assert_eq!(
        pods["team/free"],
        json!({"pod": "team/free", "node": null, "status": "Pending", "selected": ["n1"]})
    );
    assert!(server.writes().is_empty(), "{:?}", server.writes());
}

#[test]
fn active_mode_preemption_marks_and_deletes_the_victim() {
    let server = ApiServer::start();
    server.apply(node("n1", "2"));
    let mut low = pod("low", "2", None, Some("n1"));
    low["spec"]["priority"] = json!(0);
    server.apply(low);
    let mut high = pod("high", "2", Some("kubestep"), None);
    high["spec"]["priority"] = json!(1000);
    server.apply(high);
    let dir = temp_dir("preempt");
    let kc = server.write_kubeconfig(&dir, None);
    let child = spawn(
        &kc,
        &[
            "--active",
            "--scheduler-name",
            "kubestep",
            "--duration",
            "6s",
        ],
    );
    let (pods, stderr) = finish(child);
    // The victim is told why (DisruptionTarget), then deleted; the preemptor binds once
    // the deletion arrives through the watch.
    let writes = server.writes();
    let marked = writes
        .iter()
        .position(|r| r.method == "PATCH" && r.path.ends_with("/pods/low/status"));
    let deleted = writes
        .iter()
        .position(|r| r.method == "DELETE" && r.path.ends_with("/pods/low"));
    assert!(
        matches!((marked, deleted), (Some(m), Some(d)) if m < d),
        "{writes:?}\n{stderr}"
    );
    assert!(server.get("Pod", Some("team"), "low").is_none());
    let preempted = events_about(&server, "low", "Preempted");
    assert_eq!(preempted.len(), 1, "{preempted:#?}");
    assert_eq!(pods["team/high"]["status"], "Bound", "{stderr}");
    assert_eq!(
        server.get("Pod", Some("team"), "high").unwrap()["spec"]["nodeName"],
        "n1"
    );
}

#[test]
fn shadow_mode_reevaluates_a_pending_pod_when_the_cluster_changes() {
    let server = ApiServer::start();
    server.apply(node("n1", "2"));
    server.apply(pod("big", "3", None, None));
    let dir = temp_dir("reevaluate");
    let kc = server.write_kubeconfig(&dir, None);
    let mut child = spawn(&kc, &[]);
    let tap = StderrTap::new(&mut child);
    let mut out = StderrTap::of(child.stdout.take().expect("piped stdout"));
    out.wait_for("\"feasibleNodes\":0");
    // The cluster's scheduler writes a condition: status alone, no new attempt.
    let mut big = server.get("Pod", Some("team"), "big").unwrap();
    big["status"] = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
        "reason": "Unschedulable", "message": "0/1 nodes are available: 1 Insufficient cpu."}]});
    server.apply(big);
    // A node that fits arrives: the unschedulable pod is tried again (NodeResourcesFit's
    // hint for a new node) and is now explained against it.
    server.apply(node("n2", "4"));
    out.wait_for("\"node\":\"n2\"");
    // The cluster's scheduler binds it: it leaves kubestep's queue, nothing runs again.
    server.apply(pod("big", "3", None, Some("n2")));
    server.apply(pod("after", "1", None, Some("n1")));
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, libc::SIGINT);
    let o = wait_bounded(child, Duration::from_secs(60));
    let stderr = tap.rest();
    let stdout = out.rest();
    assert!(o.status.success(), "{stderr}");
    let attempts: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "attempt" && v["pod"] == "team/big")
        .collect();
    // Its first attempt, then one for the node; the condition moved nothing.
    assert_eq!(attempts.len(), 2, "{stdout}");
    assert_eq!(attempts[1]["node"], "n2", "{stdout}");
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let big = summary["summary"]["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pod"] == "team/big")
        .cloned()
        .unwrap();
    assert_eq!(big["status"], "Bound", "{stdout}");
    assert_eq!(big["node"], "n2");
    assert!(server.writes().is_empty(), "{:?}", server.writes());
}

#[test]
fn a_kind_the_server_does_not_serve_is_skipped_with_one_warning() {
    let server = ApiServer::start();
    server.unserve("replicasets");
    server.apply(node("n1", "4"));
    server.apply(pod("fits", "1", None, None));
    let dir = temp_dir("unserved");
    let kc = server.write_kubeconfig(&dir, None);
    let child = spawn(&kc, &["--duration", "3s"]);
    let o = wait_bounded(child, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let warning = "ReplicaSet (apps/v1 replicasets) is not served by the API server";
    assert_eq!(stderr.matches(warning).count(), 1, "{stderr}");
    assert!(
        stderr.contains("PodTopologySpread's system-default spreading"),
        "{stderr}"
    );
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(summary["summary"]["pods"][0]["selected"], json!(["n1"]));
    // The kind was asked for once, then left alone.
    let asked = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/replicasets"))
        .count();
    assert_eq!(asked, 1, "{:?}", server.requests());
    // Every request says who is asking.
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.user_agent.as_deref() == Some(&format!("kubestep/{version}"))),
        "{:?}",
        server.requests()
    );
}

#[test]
fn duration_bounds_a_silent_server_and_failing_first_lists() {
    use support::apiserver::ListFault;
    // A server that accepts the connection and never answers.
    let server = ApiServer::start();
    server.go_silent();
    let dir = temp_dir("silent");
    let kc = server.write_kubeconfig(&dir, None);
    let o = wait_bounded(spawn(&kc, &["--duration", "2s"]), Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--duration ended while waiting for http://127.0.0.1"),
        "{stderr}"
    );

    // A first list answered with 500, then with something that is not JSON.
    for fault in [ListFault::InternalError, ListFault::NotJson] {
        let server = ApiServer::start();
        server.apply(node("n1", "4"));
        server.fail_lists(Some(fault), &["pods"]);
        let dir = temp_dir("list-fault");
        let kc = server.write_kubeconfig(&dir, None);
        let o = wait_bounded(spawn(&kc, &["--duration", "3s"]), Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{fault:?}: {stderr}");
        assert!(stderr.contains("Pod: reconnecting after error"), "{stderr}");
        assert!(
            stderr.contains(
                "stopped before the first list of every kind arrived: still waiting for Pod"
            ),
            "{stderr}"
        );
    }
}

#[test]
fn active_mode_checks_write_permissions_first_and_names_every_one_missing() {
    let server = ApiServer::start();
    server.apply(node("n1", "4"));
    server.deny("create", "pods/binding", None);
    server.deny("patch", "pods/status", None);
    let dir = temp_dir("no-writes");
    let kc = server.write_kubeconfig(&dir, None);
    let o = wait_bounded(
        spawn(
            &kc,
            &[
                "--active",
                "--scheduler-name",
                "kubestep",
                "--duration",
                "5s",
            ],
        ),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--active needs write permissions: 2 permissions missing:"),
        "{stderr}"
    );
    assert!(
        stderr.contains("create pods/binding (core/v1) in all namespaces (to bind pods)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("patch pods/status (core/v1) in all namespaces"),
        "{stderr}"
    );
    assert!(!stderr.contains("delete pods"), "{stderr}");
    // The role that would grant it, ready to apply.
    assert!(
        stderr.contains("kind: ClusterRole\nmetadata:\n  name: kubestep-active\n"),
        "{stderr}"
    );
    assert!(
        server
            .writes()
            .iter()
            .all(|w| w.path.contains("selfsubjectaccessreviews"))
    );
}

#[test]
fn active_mode_reports_a_failed_write_and_patches_status_once_per_failure() {
    let server = ApiServer::start();
    server.apply(node("n1", "4"));
    let dir = temp_dir("write-fails");
    let kc = server.write_kubeconfig(&dir, None);
    let child = spawn(
        &kc,
        &[
            "--active",
            "--scheduler-name",
            "kubestep",
            "--duration",
            "4s",
        ],
    );
    server.wait_until("every kind watched", Duration::from_secs(20), |s| {
        s.open_watches() == KINDS
    });
    // Allowed when kubestep asked; refused by the time it writes.
    server.deny("create", "events", None);
    server.apply(pod("huge", "100", Some("kubestep"), None));
    let o = wait_bounded(child, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "write failed: creating event FailedScheduling for pod team/huge: events is forbidden"
        ),
        "{stderr}"
    );
    // The condition (and nomination) in one status update; a failure that changes
    // nothing writes nothing.
    let patches = server
        .writes()
        .iter()
        .filter(|r| r.method == "PATCH" && r.path.ends_with("/pods/huge/status"))
        .count();
    assert_eq!(patches, 1, "{:?}", server.writes());
}

#[test]
fn every_denied_list_is_named_at_once_with_the_role_that_grants_them() {
    let server = ApiServer::start();
    server.apply(node("n1", "4"));
    server.deny("list", "pods", None);
    server.deny("list", "nodes", None);
    server.deny("list", "poddisruptionbudgets", None);
    let dir = temp_dir("denials");
    let kc = server.write_kubeconfig(&dir, None);
    let o = wait_bounded(spawn(&kc, &["--duration", "10s"]), Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("3 permissions missing:"), "{stderr}");
    for what in [
        "list pods (core/v1) in all namespaces",
        "list nodes (core/v1) at cluster scope",
        "list poddisruptionbudgets (policy/v1) in all namespaces",
    ] {
        assert!(
            stderr.contains(&format!("\n  - {what}")),
            "{what}: {stderr}"
        );
    }
    assert!(
        stderr.contains("kind: ClusterRole\nmetadata:\n  name: kubestep-shadow\n"),
        "{stderr}"
    );
    assert!(!stderr.contains("pods/binding"), "{stderr}");
}

/// Reads the child's standard error as it comes: waits for a line containing `what`,
/// and returns everything read once the child is done.
struct StderrTap {
    rx: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl StderrTap {
    fn new(child: &mut Child) -> StderrTap {
        StderrTap::of(child.stderr.take().expect("piped stderr"))
    }

    fn of(err: impl std::io::Read + Send + 'static) -> StderrTap {
        use std::io::BufRead;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StderrTap {
            rx,
            seen: Vec::new(),
        }
    }

    fn wait_for(&mut self, what: &str) {
        while !self.seen.iter().any(|l| l.contains(what)) {
            match self.rx.recv_timeout(Duration::from_secs(60)) {
                Ok(l) => self.seen.push(l),
                Err(_) => panic!("no {what:?} on stderr: {:?}", self.seen),
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

#[test]
fn sigterm_and_sighup_end_headless_live_mode_as_quit_does() {
    // Active mode with a pod held at Permit: SIGTERM rejects it and prints the summary.
    let server = ApiServer::start();
    server.apply(node("n1", "4"));
    server.apply(held_pod("held"));
    let dir = temp_dir("sigterm");
    let kc = server.write_kubeconfig(&dir, None);
    let cfg = dir.join("scheduler.yaml");
    std::fs::write(&cfg, APPROVAL_CONFIG).unwrap();
    let mut child = spawn(
        &kc,
        &[
            "--active",
            "--scheduler-name",
            "kubestep",
            "--config",
            cfg.to_str().unwrap(),
        ],
    );
    let tap = StderrTap::new(&mut child);
    let mut out = StderrTap::of(child.stdout.take().expect("piped stdout"));
    // The attempt that leaves the pod waiting at Permit.
    out.wait_for("\"result\":\"Waiting\"");
    signal(&child, libc::SIGTERM);
    let o = wait_bounded(child, Duration::from_secs(60));
    let stderr = tap.rest();
    assert!(o.status.success(), "{stderr}");
    let stdout = out.rest();
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        summary["summary"]["pods"][0]["status"], "Unschedulable",
        "{stdout}"
    );
    assert!(
        stderr.contains("SIGTERM: stopping as quit does"),
        "{stderr}"
    );
    assert!(
        stderr.contains("rejected 1 pod(s) waiting at Permit: kubestep is shutting down"),
        "{stderr}"
    );
    let held = server.get("Pod", Some("team"), "held").unwrap();
    assert!(held["spec"]["nodeName"].is_null());
    assert!(binding_paths(&server).is_empty());

    // Shadow mode on SIGHUP.
    let server = ApiServer::start();
    server.apply(node("n1", "4"));
    server.apply(pod("fits", "1", None, None));
    let dir = temp_dir("sighup");
    let kc = server.write_kubeconfig(&dir, None);
    let mut child = spawn(&kc, &[]);
    let mut tap = StderrTap::new(&mut child);
    tap.wait_for("mirrored");
    signal(&child, libc::SIGHUP);
    let o = wait_bounded(child, Duration::from_secs(60));
    let stderr = tap.rest();
    assert!(o.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        summary["summary"]["pods"][0]["pod"], "team/fits",
        "{stdout}"
    );
    assert_eq!(summary["summary"]["divergences"], json!([]), "{stdout}");
}

#[test]
fn a_watch_cut_mid_stream_is_reported_as_reconnecting_and_back() {
    let server = ApiServer::start();
    server.apply(node("n1", "4"));
    server.apply(pod("early", "1", None, None));
    let dir = temp_dir("cut");
    let kc = server.write_kubeconfig(&dir, None);
    let mut child = spawn(&kc, &[]);
    let mut tap = StderrTap::new(&mut child);
    tap.wait_for("mirrored");
    server.wait_until("every kind watched", Duration::from_secs(20), |s| {
        s.open_watches() == KINDS
    });
    // The connections drop under the open watches (a load balancer, a restarting
    // server): kube-rs would start new watches without a word.
    server.drop_connections();
    tap.wait_for("Pod: reconnecting with backoff after error: watch pods (core/v1): the watch's connection was cut");
    tap.wait_for("Pod: watching again");
    server.wait_until("every kind watched again", Duration::from_secs(20), |s| {
        s.open_watches() == KINDS
    });
    // The reopened watch works: a pod created now is explained.
    server.apply(pod("late", "1", None, None));
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, libc::SIGTERM);
    let o = wait_bounded(child, Duration::from_secs(60));
    let stderr = tap.rest();
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("Node: reconnecting with backoff after error: watch nodes (core/v1)"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let late = summary["summary"]["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pod"] == "team/late")
        .cloned();
    assert_eq!(
        late,
        Some(json!({"pod": "team/late", "node": null, "status": "Pending", "selected": ["n1"]})),
        "{stdout}"
    );
}
