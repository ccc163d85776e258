//! `kubestep record` against the loopback API server (tests/support/apiserver.rs), run as
//! a subprocess through kube-rs's real HTTP client: initial objects and every event, in
//! order and without duplicates, across 410 Gone and dropped connections; clear errors
//! for RBAC denials, refused credentials, unreachable servers and bad kubeconfigs; and
//! not one write request.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use kubestep::recording::reader::{ReadOptions, read_file};
use kubestep::recording::{EventType, Recording};
use support::apiserver::ApiServer;

/// Kinds kubestep watches without the PodGroup CRD.
const KINDS: usize = 13;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_kubestep")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kubestep-record-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn managed() -> Value {
    json!([{"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}])
}

fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}, "managedFields": managed()},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}, "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
}

fn pod(ns: &str, name: &str, node: Option<&str>) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "managedFields": managed()}, "spec": spec})
}

/// A small cluster with one object of every kind kubestep reads.
fn seed(s: &ApiServer) {
    s.apply(node("n1"));
    s.apply(node("n2"));
    s.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}));
    s.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}));
    s.apply(pod("team", "web-1", Some("n1")));
    s.apply(pod("team", "web-2", None));
    s.apply(pod("default", "job-1", None));
    s.apply(json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}));
    s.apply(json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"}, "provisioner": "csi.example.com", "volumeBindingMode": "WaitForFirstConsumer"}));
    s.apply(json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n1"}, "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n1", "allocatable": {"count": 8}}]}}));
    s.apply(json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"}, "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "fast", "csi": {"driver": "csi.example.com", "volumeHandle": "v1"}}}));
    s.apply(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "team"}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast", "resources": {"requests": {"storage": "5Gi"}}}}));
    s.apply(json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "team"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}));
    s.apply(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "team"}, "spec": {"selector": {"app": "web"}}}));
}

fn record_cmd(kubeconfig: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.arg("record")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("-o")
        .arg(out)
        .args(extra)
        .env_remove("KUBECONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn wait_output(child: Child, timeout: Duration) -> Output {
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => panic!("waiting for kubestep: {e}"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(id.to_string()).status();
            panic!("kubestep record did not finish within {timeout:?}");
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// (event type, kind, key) of every recorded event after the initial objects.
fn changes(r: &Recording) -> Vec<(EventType, String, String)> {
    r.events
        .iter()
        .filter(|e| e.at > r.header.started)
        .map(|e| (e.kind, e.object.kind().to_string(), e.object.key()))
        .collect()
}

fn initial(r: &Recording) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = r
        .events
        .iter()
        .filter(|e| e.at == r.header.started)
        .map(|e| {
            assert_eq!(e.kind, EventType::Added);
            (e.object.kind().to_string(), e.object.key())
        })
        .collect();
    v.sort();
    v
}

/// Lines in a (plain or gzip, possibly unfinished) recording.
fn lines_in(path: &Path) -> usize {
    read_file(path, ReadOptions::default()).map_or(0, |r| r.events.len())
}

fn wait_lines(path: &Path, n: usize, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while lines_in(path) < n {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}: {} of {n} events in {}",
            lines_in(path),
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn records_initial_objects_then_every_event_read_only() {
    let server = ApiServer::start();
    server.set_bookmark_interval(Duration::from_millis(100));
    server.set_pod_groups(true);
    seed(&server);
    server.apply(json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "gang", "namespace": "team"}, "spec": {"minMember": 2}}));
    let dir = temp_dir("basic");
    let kc = server.write_kubeconfig(&dir, Some("secret-token"));
    server.require_token("secret-token");
    let out = dir.join("rec.jsonl");
    let child = record_cmd(&kc, &out, &["--duration", "2s"])
        .spawn()
        .expect("run kubestep");
    server.wait_until("every kind watched", Duration::from_secs(20), |s| {
        s.open_watches() == KINDS + 1
    });
    // A pod arrives, is bound, and a node goes away.
    server.apply(pod("team", "web-3", None));
    server.apply(pod("team", "web-3", Some("n2")));
    server.delete("Node", None, "n2");
    let o = wait_output(child, Duration::from_secs(30));
    let stderr = text(&o.stderr);
    assert!(o.status.success(), "stderr: {stderr}");

    let rec = read_file(&out, ReadOptions { strict: true }).expect("read recording");
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    let src = &rec.header.source;
    assert_eq!(src.context.as_deref(), Some("fake"));
    assert_eq!(src.cluster.as_deref(), Some("fake-cluster"));
    assert_eq!(src.server.as_deref(), Some(server.url().as_str()));
    assert_eq!(src.kubernetes_version.as_deref(), Some("v1.35.4"));
    assert_eq!(src.namespaces, None);

    let want: Vec<(String, String)> = [
        ("CSINode", "n1"),
        ("Namespace", "default"),
        ("Namespace", "team"),
        ("Node", "n1"),
        ("Node", "n2"),
        ("PersistentVolume", "pv-1"),
        ("PersistentVolumeClaim", "team/data"),
        ("Pod", "default/job-1"),
        ("Pod", "team/web-1"),
        ("Pod", "team/web-2"),
        ("PodDisruptionBudget", "team/web"),
        ("PodGroup", "team/gang"),
        ("PriorityClass", "high"),
        ("Service", "team/web"),
        ("StorageClass", "fast"),
    ]
    .iter()
    .map(|(k, n)| (k.to_string(), n.to_string()))
    .collect();
    assert_eq!(initial(&rec), want);
    assert_eq!(
        changes(&rec),
        vec![
            (EventType::Added, "Pod".into(), "team/web-3".into()),
            (EventType::Modified, "Pod".into(), "team/web-3".into()),
            (EventType::Deleted, "Node".into(), "n2".into()),
        ]
    );
    // Initial objects first, then events, in time order; managedFields gone.
    let lines: Vec<usize> = rec.events.iter().map(|e| e.line).collect();
    assert!(lines.windows(2).all(|w| w[0] < w[1]), "{lines:?}");
    assert!(
        rec.events
            .iter()
            .all(|e| e.object.meta().managed_fields.is_none())
    );
    let raw = std::fs::read_to_string(&out).expect("read file");
    assert!(!raw.contains("managedFields"));

    // Read-only: nothing but GETs, and the pods were listed and watched cluster-wide.
    let reqs = server.requests();
    assert!(server.writes().is_empty(), "{:?}", server.writes());
    assert!(
        reqs.iter()
            .any(|r| r.path == "/api/v1/pods" && r.is_watch())
    );
    assert!(reqs.iter().any(|r| r.path == "/version"));

    let stdout = text(&o.stdout);
    assert!(
        stdout.starts_with("recorded 15 objects and 3 events to "),
        "{stdout}"
    );
    assert!(
        stdout.contains("objects: CSINode 1, Namespace 2, Node 2,"),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!(
            "connected to {} (Kubernetes v1.35.4)",
            server.url()
        )),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn survives_410_gone_and_dropped_connections_without_duplicates() {
    let server = ApiServer::start();
    seed(&server);
    let dir = temp_dir("gone");
    let kc = server.write_kubeconfig(&dir, None);
    let out = dir.join("rec.jsonl.gz");
    let child = record_cmd(&kc, &out, &[]).spawn().expect("run kubestep");
    server.wait_until("every kind watched", Duration::from_secs(20), |s| {
        s.open_watches() == KINDS
    });
    // The CRD is absent: discovery said 404, and podgroups were never listed.
    let reqs = server.requests();
    assert!(
        reqs.iter()
            .any(|r| r.path == "/apis/scheduling.x-k8s.io/v1alpha1")
    );
    assert!(!reqs.iter().any(|r| r.path.contains("podgroups")));
    let initial_lines = 14;
    wait_lines(&out, initial_lines, "the initial objects");

    server.apply(pod("team", "a", None));
    wait_lines(&out, initial_lines + 1, "pod a");

    // 410 Gone for every watch; what changes meanwhile is seen only by re-listing.
    let lists_before = server
        .requests()
        .iter()
        .filter(|r| !r.is_watch() && r.path == "/api/v1/pods")
        .count();
    server.expire_watches();
    let mut a = pod("team", "a", None);
    a["metadata"]["labels"] = json!({"app": "web"});
    server.apply(a);
    server.delete("Node", None, "n1");
    server.apply(pod("team", "b", None));
    wait_lines(&out, initial_lines + 4, "the re-list after 410");
    server.wait_until("pods re-listed and watched", Duration::from_secs(20), |s| {
        s.requests()
            .iter()
            .filter(|r| !r.is_watch() && r.path == "/api/v1/pods")
            .count()
            > lists_before
            && s.open_watches() == KINDS
    });

    // A dropped connection: watches resume from their resourceVersion, no re-list.
    server.drop_connections();
    server.apply(pod("team", "c", Some("n2")));
    wait_lines(
        &out,
        initial_lines + 5,
        "pod c after the dropped connection",
    );
    server.wait_until("watches back", Duration::from_secs(20), |s| {
        s.open_watches() == KINDS
    });
    server.apply(pod("default", "d", None));
    wait_lines(&out, initial_lines + 6, "pod d");

    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    let o = wait_output(child, Duration::from_secs(20));
    let stderr = text(&o.stderr);
    assert!(o.status.success(), "stderr: {stderr}");
    assert!(stderr.contains("reconnecting after error"), "{stderr}");
    // The dropped connection is said, though kube-rs resumes those watches without a word.
    assert!(
        stderr.contains(
            "Pod: reconnecting after error: watch pods (core/v1): the watch's connection was cut"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("Pod: watching again"), "{stderr}");
    assert!(
        stderr.contains("Pod: re-listed (1 added, 1 modified, 0 deleted while away)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Node: re-listed (0 added, 0 modified, 1 deleted while away)"),
        "{stderr}"
    );

    // Finished properly: the gzip trailer is there.
    let rec = read_file(&out, ReadOptions { strict: true }).expect("read recording");
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    assert_eq!(initial(&rec).len(), 14);
    let got = changes(&rec);
    let mut by_object: BTreeMap<(String, String), Vec<EventType>> = BTreeMap::new();
    for (t, k, key) in &got {
        by_object
            .entry((k.clone(), key.clone()))
            .or_default()
            .push(*t);
    }
    let expect: BTreeMap<(String, String), Vec<EventType>> = [
        (
            ("Pod", "team/a"),
            vec![EventType::Added, EventType::Modified],
        ),
        (("Node", "n1"), vec![EventType::Deleted]),
        (("Pod", "team/b"), vec![EventType::Added]),
        (("Pod", "team/c"), vec![EventType::Added]),
        (("Pod", "default/d"), vec![EventType::Added]),
    ]
    .into_iter()
    .map(|((k, n), v)| ((k.to_string(), n.to_string()), v))
    .collect();
    assert_eq!(by_object, expect, "{got:?}");
    // A deletion the re-list inferred names the object as it was known (kubestep keeps
    // no copy of every object to repeat it whole).
    let gone = rec
        .events
        .iter()
        .find(|e| e.kind == EventType::Deleted)
        .expect("the inferred deletion");
    let m = &gone.object.meta();
    assert_eq!(m.name.as_deref(), Some("n1"));
    assert_eq!(m.uid.as_deref(), Some("uid-0--n1"));
    assert!(m.resource_version.is_some());
    // The order across objects is the order things happened.
    let pos = |k: &str| {
        got.iter()
            .position(|(_, _, key)| key == k)
            .unwrap_or(usize::MAX)
    };
    assert!(
        pos("team/a") < pos("team/b")
            && pos("team/b") < pos("team/c")
            && pos("team/c") < pos("default/d")
    );
    assert!(server.writes().is_empty());
    let stdout = text(&o.stdout);
    assert!(
        stdout.contains("recorded 14 objects and 6 events"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

fn run_to_failure(
    server: &ApiServer,
    name: &str,
    token: Option<&str>,
    extra: &[&str],
) -> (i32, String) {
    let dir = temp_dir(name);
    let kc = server.write_kubeconfig(&dir, token);
    let out = dir.join("rec.jsonl");
    let child = record_cmd(&kc, &out, extra).spawn().expect("run kubestep");
    let o = wait_output(child, Duration::from_secs(30));
    std::fs::remove_dir_all(&dir).ok();
    (o.status.code().unwrap_or(-1), text(&o.stderr))
}

#[test]
fn rbac_denials_name_the_missing_permission() {
    let server = ApiServer::start();
    seed(&server);
    server.deny("list", "pods", None);
    let (code, stderr) = run_to_failure(&server, "rbac", None, &["--duration", "5s"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.ends_with(
            "kubestep: missing permission: list pods (core/v1) in all namespaces; the API server says: pods is forbidden: User \"system:serviceaccount:kubestep:tester\" cannot list resource \"pods\" in API group \"\" at the cluster scope\n"
        ),
        "{stderr}"
    );

    let server = ApiServer::start();
    seed(&server);
    server.deny("watch", "poddisruptionbudgets", Some("team"));
    let (code, stderr) = run_to_failure(
        &server,
        "rbac-ns",
        None,
        &["-n", "team", "--duration", "5s"],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "kubestep: missing permission: watch poddisruptionbudgets (policy/v1) in namespace team; the API server says: poddisruptionbudgets is forbidden: User \"system:serviceaccount:kubestep:tester\" cannot watch resource \"poddisruptionbudgets\" in API group \"policy\" in the namespace \"team\""
        ),
        "{stderr}"
    );
    // Namespaced kinds were asked for in that namespace only.
    let reqs = server.requests();
    assert!(
        reqs.iter()
            .any(|r| r.path == "/api/v1/namespaces/team/pods")
    );
    assert!(!reqs.iter().any(|r| r.path == "/api/v1/pods"));
}

#[test]
fn refused_credentials_and_unreachable_servers_are_clear() {
    let server = ApiServer::start();
    server.require_token("good");
    let (code, stderr) = run_to_failure(&server, "401", Some("expired"), &["--duration", "5s"]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        format!(
            "kubestep: the API server at {} refused the credentials (401 Unauthorized): they are missing, invalid or expired; log in again or check the user of the kubeconfig context\n",
            server.url()
        )
    );

    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let dir = temp_dir("unreachable");
    let kc = dir.join("kubeconfig");
    std::fs::write(
        &kc,
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\nusers:\n- name: u\n  user: {{}}\n"),
    )
    .expect("write kubeconfig");
    let o = wait_output(
        record_cmd(&kc, &dir.join("r.jsonl"), &["--duration", "5s"])
            .spawn()
            .expect("run"),
        Duration::from_secs(60),
    );
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr.starts_with(&format!(
            "kubestep: cannot reach the API server at http://127.0.0.1:{port}: Connection refused"
        )),
        "{stderr}"
    );

    // Kubeconfig problems name the file and what is wrong.
    let o = wait_output(
        record_cmd(&kc, &dir.join("r.jsonl"), &["--context", "nope"])
            .spawn()
            .expect("run"),
        Duration::from_secs(20),
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "kubestep: kubeconfig {}: context \"nope\" not found (contexts: x)\n",
            kc.display()
        )
    );
    let missing = dir.join("missing");
    let o = wait_output(
        record_cmd(&missing, &dir.join("r.jsonl"), &[])
            .spawn()
            .expect("run"),
        Duration::from_secs(20),
    );
    assert_eq!(
        text(&o.stderr),
        format!("kubestep: kubeconfig {}: no such file\n", missing.display())
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A large initial sync (paged lists) arrives whole, every object once.
#[test]
fn a_large_initial_sync_arrives_whole() {
    use std::io::BufRead;
    let server = ApiServer::start();
    for i in 0..1_000 {
        server.apply(node(&format!("node-{i:05}")));
    }
    for i in 0..10_000 {
        let n = format!("node-{:05}", i % 1_000);
        server.apply(pod("load", &format!("pod-{i:06}"), Some(&n)));
    }
    let dir = temp_dir("throughput");
    let kc = server.write_kubeconfig(&dir, None);
    let out = dir.join("rec.jsonl.gz");
    let mut child = record_cmd(&kc, &out, &[]).spawn().expect("run kubestep");
    let stderr = child.stderr.take().expect("stderr");
    let mut done = String::new();
    for line in std::io::BufReader::new(stderr).lines() {
        let line = line.expect("read stderr");
        if line.starts_with("initial sync done") {
            done = line;
            break;
        }
    }
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let o = wait_output(child, Duration::from_secs(60));
    assert!(
        done.contains("11001 objects") || done.contains("11000 objects"),
        "{done}\n{}",
        text(&o.stderr)
    );
    let rec = read_file(&out, ReadOptions { strict: true }).expect("the recording reads");
    assert!(rec.events.len() >= 11_000, "{} events", rec.events.len());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sigterm_closes_the_recording_with_its_trailer() {
    let server = ApiServer::start();
    seed(&server);
    let dir = temp_dir("sigterm");
    let kc = server.write_kubeconfig(&dir, None);
    let out = dir.join("rec.jsonl.gz");
    let child = record_cmd(&kc, &out, &[]).spawn().expect("run kubestep");
    server.wait_until("every kind watched", Duration::from_secs(20), |s| {
        s.open_watches() == KINDS
    });
    server.apply(pod("team", "late", None));
    wait_lines(&out, 15, "the late pod");
    // SAFETY: kill(2) with the pid of our own child and a plain signal number.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let o = wait_output(child, Duration::from_secs(60));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("recorded 14 objects and 1 events"),
        "{}",
        text(&o.stdout)
    );
    // The whole gzip stream, trailer included: a truncated one fails to decode.
    let mut all = String::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(std::fs::File::open(&out).unwrap())
        .read_to_string(&mut all)
        .expect("a complete gzip file");
    assert_eq!(all.lines().count(), 16);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unserved_kinds_are_skipped_and_duration_bounds_every_phase() {
    use support::apiserver::ListFault;
    let server = ApiServer::start();
    seed(&server);
    server.unserve("statefulsets");
    let (code, stderr) = run_to_failure(&server, "unserved", None, &["--duration", "2s"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stderr
            .matches("warning: StatefulSet (apps/v1 statefulsets) is not served")
            .count(),
        1,
        "{stderr}"
    );

    let server = ApiServer::start();
    server.go_silent();
    let (code, stderr) = run_to_failure(&server, "silent", None, &["--duration", "2s"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("stopped while waiting for an answer from http://127.0.0.1"),
        "{stderr}"
    );

    let server = ApiServer::start();
    seed(&server);
    server.fail_lists(Some(ListFault::InternalError), &["nodes"]);
    let dir = temp_dir("list-500");
    let kc = server.write_kubeconfig(&dir, None);
    let out = dir.join("rec.jsonl.gz");
    let child = record_cmd(&kc, &out, &["--duration", "3s"])
        .spawn()
        .unwrap();
    let o = wait_output(child, Duration::from_secs(60));
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("Node: reconnecting after error"),
        "{stderr}"
    );
    assert!(stderr.contains("lacks Node"), "{stderr}");
    // What was listed is in a complete file.
    let r = read_file(&out, ReadOptions::default()).expect("a readable recording");
    assert!(r.events.iter().any(|e| e.object.kind() == "Pod"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn credentials_never_reach_errors_or_recordings() {
    let server = ApiServer::start();
    seed(&server);
    let dir = temp_dir("secrets");
    // A kubeconfig that does not parse, next to a token and key data.
    let bad = dir.join("bad-kubeconfig");
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: sekrit-token-0123456789abcdefXYZ\n    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVB\n    exec: [this, is, not, a, map\ncontexts: {}\n",
    )
    .unwrap();
    let o = record_cmd(&bad, &dir.join("r.jsonl"), &["--duration", "2s"])
        .output()
        .unwrap();
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("kubeconfig"), "{stderr}");
    for secret in [
        "sekrit",
        "0123456789abcdef",
        "LS0tLS1CRUdJTiBSU0Eg",
        "QpNSUlFb3dJQkFBS0NBUUVB",
    ] {
        assert!(!stderr.contains(secret), "{secret} in {stderr}");
    }

    // A password in the server's URL: not printed, not recorded.
    let url = server.url().replace("http://", "http://admin:hunter2@");
    let kc = dir.join("kubeconfig");
    std::fs::write(
        &kc,
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\nusers:\n- name: u\n  user: {{}}\n"),
    )
    .unwrap();
    let out = dir.join("r.jsonl");
    let o = wait_output(
        record_cmd(&kc, &out, &["--duration", "2s"])
            .spawn()
            .unwrap(),
        Duration::from_secs(60),
    );
    let all = format!("{}{}", text(&o.stdout), text(&o.stderr));
    assert!(!all.contains("hunter2"), "{all}");
    if let Ok(file) = std::fs::read_to_string(&out) {
        assert!(
            !file.contains("hunter2"),
            "{}",
            file.lines().next().unwrap_or("")
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A GPU pod's claim, class and slice, as a DRA driver and a user would create them.
fn seed_dra(s: &ApiServer) {
    s.apply(json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}}));
    s.apply(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n1-gpus"},
        "spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}]}}));
    s.apply(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "one-gpu", "namespace": "team"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}}));
    s.apply(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "train", "namespace": "team", "uid": "uid-train"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}));
    let mut p = pod("team", "trainer", None);
    p["spec"]["resourceClaims"] = json!([{"name": "gpu", "resourceClaimName": "train"}]);
    s.apply(p);
}

#[test]
fn dra_kinds_are_recorded_where_served_and_skipped_with_one_warning_where_not() {
    let server = ApiServer::start();
    server.set_dra(true);
    seed(&server);
    seed_dra(&server);
    let dir = temp_dir("dra");
    let kc = server.write_kubeconfig(&dir, None);
    let out = dir.join("rec.jsonl");
    let child = record_cmd(&kc, &out, &["--duration", "2s"])
        .spawn()
        .expect("run kubestep");
    server.wait_until("every kind watched", Duration::from_secs(20), |s| {
        s.open_watches() == KINDS + 4
    });
    // A claim changes while recording: the change is recorded too.
    server.apply(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "spare", "namespace": "team", "uid": "uid-spare"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}));
    let o = wait_output(child, Duration::from_secs(30));
    let stderr = text(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(!stderr.contains("resource.k8s.io/v1 ("), "{stderr}");
    let rec = read_file(&out, ReadOptions { strict: true }).expect("read recording");
    let got = initial(&rec);
    for (k, n) in [
        ("DeviceClass", "gpu"),
        ("ResourceSlice", "n1-gpus"),
        ("ResourceClaimTemplate", "team/one-gpu"),
        ("ResourceClaim", "team/train"),
    ] {
        assert!(
            got.contains(&(k.to_string(), n.to_string())),
            "{k} {n} not in {got:?}"
        );
    }
    assert!(
        changes(&rec)
            .iter()
            .any(|(_, k, n)| k == "ResourceClaim" && n == "team/spare"),
        "{:?}",
        changes(&rec)
    );
    // The recording explains the GPU pod as the objects do: its claim is found and
    // allocated on the node whose slice has the device.
    let e = Command::new(bin())
        .args(["explain", "--cluster"])
        .arg(&out)
        .args(["--pod", "team/trainer"])
        .output()
        .unwrap();
    let stdout = text(&e.stdout);
    assert!(e.status.success(), "{stdout}{}", text(&e.stderr));
    assert!(
        stdout.contains("team/trainer: schedulable on n1"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).ok();

    // A server without DRA: the four kinds are skipped with one warning, never listed.
    let server = ApiServer::start();
    seed(&server);
    let (code, stderr) = run_to_failure(&server, "no-dra", None, &["--duration", "1s"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stderr
            .matches("warning: resource.k8s.io/v1 (DeviceClasses, ResourceSlices, ResourceClaims, ResourceClaimTemplates) is not served")
            .count(),
        1,
        "{stderr}"
    );
    assert!(
        !server
            .requests()
            .iter()
            .any(|r| r.path.contains("resourceclaims"))
    );
}
