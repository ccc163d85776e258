//! `kubestep explain` on the current kubeconfig context's cluster (no `--cluster`),
//! against the loopback API server (tests/support/apiserver.rs) through kube-rs's real
//! client: paged LISTs of every kind, read-only, the same answer as on a dump of the same
//! objects, kubectl's namespace habits, the cluster's scheduler configuration, exit codes.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use support::apiserver::ApiServer;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_kubestep")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "kubestep-explain-live-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "1100"}, "capacity": {"cpu": "4", "memory": "8Gi", "pods": "1100"}}})
}

fn pod(ns: &str, name: &str, node: Option<&str>, cpu: &str) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{ns}-{name}")}, "spec": spec})
}

/// Two nodes; 1,200 bound pods (so the pod LIST takes three pages); pending pods in two
/// namespaces, one that fits nowhere.
fn objects() -> Vec<Value> {
    let mut all = vec![
        node("n1"),
        node("n2"),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
    ];
    for i in 0..1200 {
        let n = if i % 2 == 0 { "n1" } else { "n2" };
        all.push(pod("team", &format!("web-{i}"), Some(n), "1m"));
    }
    all.push(pod("team", "big", None, "64"));
    all.push(pod("team", "small-7d9f", None, "100m"));
    all.push(pod("default", "job-1", None, "100m"));
    all
}

fn serve() -> ApiServer {
    let s = ApiServer::start();
    for o in objects() {
        s.apply(o);
    }
    s
}

fn kubeconfig_with_namespace(s: &ApiServer, dir: &Path, ns: &str) -> PathBuf {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\ncontexts:\n- name: mine\n  context:\n    cluster: c\n    user: u\n    namespace: {ns}\ncurrent-context: mine\nusers:\n- name: u\n  user: {{}}\n",
        s.url()
    );
    let p = dir.join("kubeconfig-ns");
    std::fs::write(&p, text).expect("write kubeconfig");
    p
}

fn explain(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .arg("explain")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env_remove("HTTPS_PROXY")
        .env_remove("HTTP_PROXY")
        .output()
        .expect("run kubestep")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn explains_a_pod_of_the_cluster_read_once_read_only_and_paged() {
    let s = serve();
    let dir = temp_dir("pod");
    let kc = s.write_kubeconfig(&dir, None);
    let out = explain(&kc, &["-n", "team", "big"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("team/big: unschedulable: 0/2 nodes are available: 2 Insufficient cpu."),
        "{stdout}"
    );
    assert!(
        stderr.contains("read 2 nodes, 1,203 pods and 2 other objects from context fake"),
        "{stderr}"
    );
    assert!(stderr.contains("Kubernetes v1.35.4"), "{stderr}");
    assert!(
        stdout.starts_with("kube-scheduler v1.35 semantics"),
        "{stdout}"
    );
    // Read-only: GETs only; the pods were LISTed in pages of 500 following `continue`.
    let requests = s.requests();
    assert!(requests.iter().all(|r| r.method == "GET"), "{requests:?}");
    let pod_lists: Vec<_> = requests
        .iter()
        .filter(|r| r.path == "/api/v1/pods")
        .collect();
    assert_eq!(pod_lists.len(), 3, "{pod_lists:?}");
    assert!(pod_lists.iter().all(|r| r.query.contains("limit=500")));
    assert!(pod_lists[1].query.contains("continue="), "{pod_lists:?}");
    assert!(requests.iter().all(|r| !r.query.contains("watch")));
}

#[test]
fn the_same_answer_as_on_a_dump_of_the_same_objects() {
    let s = serve();
    let dir = temp_dir("same");
    let kc = s.write_kubeconfig(&dir, None);
    let dump = dir.join("dump.json");
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects()});
    std::fs::write(&dump, list.to_string()).expect("write dump");
    for args in [
        vec!["team/small-7d9f", "-o", "json"],
        vec!["team/big"],
        vec!["--pending", "-A", "-o", "wide"],
    ] {
        let live = explain(&kc, &[&args[..], &["--kube-version", "1.35"]].concat());
        let file = explain(
            &kc,
            &[
                &args[..],
                &["--kube-version", "1.35", "--cluster"],
                &[dump.to_str().unwrap()],
            ]
            .concat(),
        );
        assert_eq!(text(&live.stdout), text(&file.stdout), "{args:?}");
        assert_eq!(live.status.code(), file.status.code(), "{args:?}");
    }
}

#[test]
fn namespaces_as_kubectl_takes_them_and_exit_codes_scripts_can_trust() {
    let s = serve();
    let dir = temp_dir("ns");
    let kc = kubeconfig_with_namespace(&s, &dir, "team");
    // The context's namespace, and a unique prefix of the name.
    let out = explain(&kc, &["small"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("team/small-7d9f: schedulable on n"),
        "{}",
        text(&out.stdout)
    );
    // --pending: the context's namespace unless -n or -A; 1 when any pod cannot be placed.
    let out = explain(&kc, &["--pending"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("2 pending pod(s) in namespace team"),
        "{stdout}"
    );
    assert!(!stdout.contains("job-1"), "{stdout}");
    let out = explain(&kc, &["--pending", "-n", "default"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let out = explain(&kc, &["--pending", "-A", "-o", "name"]);
    assert_eq!(
        text(&out.stdout),
        "pod/job-1\npod/big\npod/small-7d9f\n",
        "{}",
        text(&out.stderr)
    );
    // A name in another namespace than the one given is not guessed at.
    let out = explain(&kc, &["-n", "default", "big"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("same name in: team/big"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn follows_the_scheduler_configuration_the_cluster_holds() {
    let s = serve();
    let config = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n  plugins:\n    score:\n      enabled:\n      - name: TaintToleration\n        weight: 7\nextenders:\n- urlPrefix: http://127.0.0.1:9/never\n  filterVerb: filter\n";
    s.apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "scheduler-config", "namespace": "kube-system"},
        "data": {"config.yaml": config}}));
    let dir = temp_dir("cfg");
    let kc = s.write_kubeconfig(&dir, None);
    let out = explain(&kc, &["team/small-7d9f", "-o", "json"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "following the scheduler configuration in ConfigMap kube-system/scheduler-config, key config.yaml"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("names 1 extender(s): not called"),
        "{stderr}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["weights"]["TaintToleration"], 7, "{v}");
}

#[test]
fn a_refused_list_names_the_permission_and_no_nodes_is_an_error() {
    let s = serve();
    let dir = temp_dir("deny");
    let kc = s.write_kubeconfig(&dir, None);
    s.deny("list", "pods", None);
    let out = explain(&kc, &["--pending"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("missing permission: list pods (core/v1) in all namespaces"),
        "{stderr}"
    );

    let empty = ApiServer::start();
    let kc = empty.write_kubeconfig(&dir, None);
    let out = explain(&kc, &["--pending"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no nodes in the cluster at context fake"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn version_names_the_client_the_versions_followed_and_the_server() {
    let s = ApiServer::start();
    let dir = temp_dir("version");
    let kc = s.write_kubeconfig(&dir, None);
    let run = |args: &[&str]| {
        Command::new(bin())
            .arg("version")
            .args(args)
            .env("KUBECONFIG", &kc)
            .output()
            .expect("run kubestep")
    };
    let out = run(&[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.starts_with("Client Version: "), "{stdout}");
    assert!(
        stdout.contains("v1.35 (checked against v1.35.4)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Server Version: v1.35.4 (context fake (")
            && stdout.contains("followed as kube-scheduler v1.35"),
        "{stdout}"
    );
    let v: Value = serde_json::from_slice(&run(&["-o", "json"]).stdout).expect("json");
    assert_eq!(v["serverVersion"]["gitVersion"], "v1.35.4", "{v}");
    assert_eq!(v["serverVersion"]["followed"], "v1.35", "{v}");
    let client: Value = serde_json::from_slice(&run(&["--client", "-o", "json"]).stdout).unwrap();
    assert!(client.get("serverVersion").is_none(), "{client}");
    // A server that cannot be reached: the client's part, then exit 1 saying why.
    drop(s);
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).starts_with("Client Version: "));
    assert!(
        text(&out.stderr).contains("the server's version: "),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_failing_list_is_retried_and_said() {
    let s = serve();
    let dir = temp_dir("retry");
    let kc = s.write_kubeconfig(&dir, None);
    s.fail_requests(
        "/api/v1/pods",
        support::apiserver::RequestFault::InternalError,
        1,
    );
    let out = explain(&kc, &["-n", "team", "small-7d9f"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("GET /api/v1/pods failed: "), "{stderr}");
    assert!(stderr.contains("retrying in 1s"), "{stderr}");
    assert!(stderr.contains("1,203 pods"), "{stderr}");
}
