//! `kubestep explain` as a user runs it: exit codes, output, and one clear line for each
//! kind of bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kubestep"))
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn data(name: &str) -> String {
    root()
        .join("tests/data/bad")
        .join(name)
        .display()
        .to_string()
}

fn example() -> String {
    root()
        .join("recordings/example-cluster.yaml")
        .display()
        .to_string()
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("kubestep runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Standard output, less the text output's first line (the version followed, which
/// `the_first_line_names_the_version_and_where_it_came_from` checks).
fn stdout(o: &Output) -> String {
    let s = String::from_utf8_lossy(&o.stdout).to_string();
    match s.split_once("\n\n") {
        Some((first, rest)) if first.starts_with("kube-scheduler v") => rest.to_string(),
        _ => s,
    }
}

#[test]
fn the_first_line_names_the_version_and_where_it_came_from() {
    let first = |args: &[&str]| {
        let o = run(args);
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    // A bundled recording: its header's version.
    assert_eq!(
        first(&[
            "explain",
            "--cluster",
            "demo",
            "--pod",
            "ml/llm-finetune-worker-0"
        ]),
        "kube-scheduler v1.35 semantics (from the recording's header: v1.35.4)"
    );
    // A manifest without kubelet versions: the newest checked version, said as the default.
    let cluster = example();
    assert_eq!(
        first(&[
            "explain",
            "--cluster",
            &cluster,
            "--pod",
            "ml/trainer-llm-0"
        ]),
        "kube-scheduler v1.36 semantics (the default: the input names no version; --kube-version chooses)"
    );
    // Nodes whose kubelets run 1.36.1 and 1.34.2: the newest.
    let dir = std::env::temp_dir().join(format!("kubestep-kubelets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dump = dir.join("dump.json");
    let node = |name: &str, v: &str| {
        serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "nodeInfo": {"kubeletVersion": v, "architecture": "amd64", "bootID": "", "containerRuntimeVersion": "",
                    "kernelVersion": "", "kubeProxyVersion": "", "machineID": "", "operatingSystem": "linux",
                    "osImage": "", "systemUUID": ""}}})
    };
    let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}});
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List",
        "items": [node("a", "v1.34.2-eks-1"), node("b", "v1.36.1-eks-2"), pod]});
    std::fs::write(&dump, list.to_string()).unwrap();
    let dump = dump.to_string_lossy().into_owned();
    assert_eq!(
        first(&["explain", "--cluster", &dump, "--pod", "default/p"]),
        "kube-scheduler v1.36 semantics (from the nodes' kubelets: newest v1.36.1-eks-2 on b)"
    );
    let o = run(&[
        "explain",
        "--cluster",
        &dump,
        "--pod",
        "default/p",
        "-o",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["k8sVersion"], "v1.36");
    // The flag wins over the input.
    assert_eq!(
        first(&[
            "explain",
            "--cluster",
            &dump,
            "--pod",
            "default/p",
            "--kube-version",
            "1.35"
        ]),
        "kube-scheduler v1.35 semantics (from --kube-version)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fits_exit_zero_with_text_verdict() {
    let o = run(&[
        "explain",
        "--cluster",
        &example(),
        "--pod",
        "shop/checkout-7d9f6c8b5-w8r2t",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("shop/checkout-7d9f6c8b5-w8r2t: schedulable on "),
        "{out}"
    );
    assert!(out.contains("score breakdown"), "{out}");
}

#[test]
fn unschedulable_exit_one_with_exact_message() {
    let o = run(&[
        "explain",
        "--cluster",
        &example(),
        "--pod",
        "ml/trainer-llm-0",
        "-o",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json output");
    let msg = v["message"].as_str().expect("message");
    assert!(msg.starts_with("0/6 nodes are available: "), "{msg}");
    assert!(msg.contains("Insufficient nvidia.com/gpu"), "{msg}");
    assert!(
        msg.ends_with("Preemption is not helpful for scheduling."),
        "{msg}"
    );
    assert_eq!(v["feasible"], serde_json::json!([]));
    assert!(v["allFilters"].as_object().is_some_and(|m| m.len() == 6));
}

fn assert_bad_input(o: &Output, needles: &[&str]) {
    assert_eq!(
        o.status.code(),
        Some(2),
        "stdout: {} stderr: {}",
        stdout(o),
        stderr(o)
    );
    let err = stderr(o);
    assert!(err.starts_with("kubestep: "), "{err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err}"
    );
    for n in needles {
        assert!(err.contains(n), "{err:?} should mention {n:?}");
    }
}

#[test]
fn malformed_yaml_names_file_and_line() {
    let o = run(&[
        "explain",
        "--cluster",
        &data("malformed.yaml"),
        "--pod",
        "default/x",
    ]);
    assert_bad_input(&o, &["malformed.yaml:"]);
}

#[test]
fn invalid_quantity_names_object_and_field() {
    let o = run(&[
        "explain",
        "--cluster",
        &data("bad-quantity.yaml"),
        "--pod",
        "shop/web",
    ]);
    assert_bad_input(
        &o,
        &[
            // The field's own line and column, not the document's first line (8).
            "bad-quantity.yaml:17:18:",
            "Pod shop/web",
            "spec.containers[0].resources.requests.cpu",
            "\"two\"",
        ],
    );
}

#[test]
fn wrong_field_type_names_the_field() {
    let o = run(&[
        "explain",
        "--cluster",
        &data("wrong-field.yaml"),
        "--pod",
        "default/web",
    ]);
    assert_bad_input(&o, &["wrong-field.yaml:6:3:", "Pod web", "spec.containers"]);
}

/// A refused field is named at its own line and column, however deep it is and however
/// the objects are written: YAML documents, a kubectl List in YAML (items cut out and
/// dedented) or JSON, and a recording's line.
#[test]
fn a_refused_field_is_named_at_its_own_line_and_column() {
    let dir = std::env::temp_dir().join(format!("kubestep-fieldline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nstatus:\n  allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}\n";
    // (file text, the expected `file:line: column C:` and field)
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "depth2.yaml",
            format!("{node}---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n2\nspec:\n  unschedulable: yes-please\n"),
            "depth2.yaml:13:3: Node n2: spec.unschedulable",
        ),
        (
            "depth3.yaml",
            format!("{node}---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n2\nspec:\n  taints:\n  - key: gpu\n    effect: NoSchedul\n"),
            "depth3.yaml:15:5: Node n2: spec.taints[0].effect",
        ),
        (
            "depth5.yaml",
            format!("{node}---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: a\n    image: x\n  - name: b\n    image: x\n    resources:\n      limits:\n        memory: 1Gi\n        cpu: lots\n"),
            "depth5.yaml:21:9: Pod p: spec.containers[1].resources.limits.cpu",
        ),
        (
            "list.yaml",
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: n1\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p\n  spec:\n    tolerations:\n    - key: a\n      operator: Sometimes\n    containers: [{name: c, image: x}]\n".to_string(),
            "list.yaml:15:7: Pod p: spec.tolerations[0].operator",
        ),
        (
            "list.json",
            "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n  {\"apiVersion\": \"v1\", \"kind\": \"Pod\",\n   \"metadata\": {\"name\": \"p\"},\n   \"spec\": {\"containers\": [{\"name\": \"c\", \"resources\": {\"requests\": {\"memory\": \"-1Gi\"}}}]}}\n]}\n".to_string(),
            "list.json:4:69: Pod default/p: spec.containers[0].resources.requests.memory",
        ),
    ];
    for (name, text, want) in &cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let o = run(&[
            "explain",
            "--cluster",
            &path.display().to_string(),
            "--pod",
            "default/p",
        ]);
        assert_bad_input(&o, &[&format!("{}{want}", dir.join("").display())]);
    }
    // A recording: one object per line, so the column says where on it.
    let rec = dir.join("rec.jsonl");
    std::fs::write(
        &rec,
        "{\"kubestep\":\"recording\",\"version\":1,\"started\":\"2026-01-01T00:00:00Z\"}\n\
         {\"at\":\"2026-01-01T00:00:00Z\",\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"key\":\"a\",\"effect\":\"Sometimes\"}]}}}\n",
    )
    .unwrap();
    let o = run(&[
        "replay",
        &rec.display().to_string(),
        "--headless",
        "--strict",
    ]);
    assert_bad_input(
        &o,
        &[":2: bad line: column 141: Node n1: spec.taints[0].effect: Unsupported value"],
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unknown_kinds_are_skipped() {
    let o = run(&[
        "explain",
        "--cluster",
        &data("unknown-kind.yaml"),
        "--pod",
        "default/web",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn unknown_plugin_is_a_configuration_error() {
    let o = run(&[
        "explain",
        "--cluster",
        &example(),
        "--config",
        &data("unknown-plugin.yaml"),
        "--pod",
        "ml/trainer-llm-0",
    ]);
    assert_bad_input(
        &o,
        &[
            "unknown-plugin.yaml:8:9: profiles[0].plugins.filter.enabled[0].name",
            "FilterPlugin \"NoSuchPlugin\" does not exist",
        ],
    );
}

#[test]
fn invalid_plugin_args_name_the_plugin() {
    let o = run(&[
        "explain",
        "--cluster",
        &example(),
        "--config",
        &data("bad-args.yaml"),
        "--pod",
        "ml/trainer-llm-0",
    ]);
    assert_bad_input(
        &o,
        &[
            "bad-args.yaml:9:",
            "profiles[0].pluginConfig[0].args.scoringStrategy.type",
            "Fastest",
        ],
    );
}

#[test]
fn missing_pod_is_named() {
    let o = run(&["explain", "--cluster", &example(), "--pod", "shop/nope"]);
    assert_bad_input(&o, &["pod shop/nope does not exist in the cluster"]);
}

#[test]
fn pod_in_another_namespace_is_pointed_at() {
    let o = run(&[
        "explain",
        "--cluster",
        &example(),
        "--pod",
        "default/checkout-7d9f6c8b5-2xkqp",
    ]);
    assert_bad_input(
        &o,
        &["does not exist in the cluster (same name in: shop/checkout-7d9f6c8b5-2xkqp;"],
    );
    let o = run(&["explain", "--cluster", &example(), "--pod", "a/b/c"]);
    assert_bad_input(
        &o,
        &["a/b/c: no such file, and not a pod (NAME, NAMESPACE/NAME or pod/NAME)"],
    );
}

#[test]
fn missing_file_is_named() {
    let o = run(&[
        "explain",
        "--cluster",
        "/nonexistent/cluster.yaml",
        "--pod",
        "a/b",
    ]);
    assert_bad_input(&o, &["/nonexistent/cluster.yaml"]);
}

/// A pod manifest has not been through admission: its PriorityClass gives it its priority
/// (and so preemption), and a class the cluster objects lack is said, not ignored.
#[test]
fn a_pod_file_gets_its_priority_class_as_admission_would_give_it() {
    let dir = std::env::temp_dir().join(format!("kubestep-prio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cluster = dir.join("cluster.yaml");
    std::fs::write(
        &cluster,
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {kubernetes.io/hostname: n1}}\nstatus:\n  allocatable: {cpu: \"1\", memory: 8Gi, pods: \"110\"}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: low, namespace: default}\nspec:\n  nodeName: n1\n  containers: [{name: c, image: x, resources: {requests: {cpu: \"1\"}}}]\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n",
    )
    .unwrap();
    let pod = |class: &str| {
        let p = dir.join(format!("{class}.yaml"));
        std::fs::write(&p, format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: default}}\nspec:\n  priorityClassName: {class}\n  containers: [{{name: c, image: x, resources: {{requests: {{cpu: \"1\"}}}}}}]\n")).unwrap();
        p.display().to_string()
    };
    let c = cluster.display().to_string();
    let o = run(&["explain", "--cluster", &c, "--pod", &pod("high")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("preemption nominated n1 (evicting default/low)"),
        "{}",
        stdout(&o)
    );
    assert_eq!(stderr(&o), "");
    let o = run(&["explain", "--cluster", &c, "--pod", &pod("nope")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "warning: pod default/p: spec.priorityClassName: no PriorityClass \"nope\" among the cluster objects"
        ),
        "{}",
        stderr(&o)
    );
    assert!(
        !stdout(&o).contains("preemption nominated"),
        "{}",
        stdout(&o)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A 600-node cluster written as YAML: 4 cores a node with 3.5 cores in use, except
/// n-599 (1.2 cores in use, so 2.8 free) and n-200 (room for one pod, which it runs).
fn large_cluster(dir: &Path) -> String {
    let mut y = String::new();
    for i in 0..600 {
        let name = format!("n-{i:03}");
        let pods = if i == 200 { 1 } else { 110 };
        let used = if i == 599 { "1200m" } else { "3500m" };
        y.push_str(&format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\nstatus:\n  allocatable: {{cpu: \"4\", memory: 8Gi, pods: \"{pods}\"}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {{name: run-{i:03}, namespace: default}}\nspec:\n  nodeName: {name}\n  containers: [{{name: c, image: x, resources: {{requests: {{cpu: {used}}}}}}}]\n---\n"
        ));
    }
    let p = dir.join("cluster.yaml");
    std::fs::write(&p, y).unwrap();
    p.display().to_string()
}

fn pod_file(dir: &Path, name: &str, cpu: &str) -> String {
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(&p, format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  containers: [{{name: c, image: x, resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]\n")).unwrap();
    p.display().to_string()
}

/// On a large cluster the text is a screenful: nodes grouped by plugin and reason with
/// counts, how close the best node came, and `--nodes all` for every row; JSON keeps
/// every node and carries the same closeness facts.
#[test]
fn a_large_cluster_is_summarized_for_a_person() {
    let dir = std::env::temp_dir().join(format!("kubestep-large-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cluster = large_cluster(&dir);
    let big = pod_file(&dir, "big", "3");

    let o = run(&["explain", "--cluster", &cluster, "--pod", &big]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.lines().count() < 15, "{out}");
    assert!(
        out.starts_with("default/big: unschedulable: 0/600 nodes are available: 1 Too many pods, 600 Insufficient cpu. "),
        "{out}"
    );
    let table = "\
600 nodes in 2 groups (--nodes all lists every node):
NODES     PLUGIN            REASON / SCORE                   EXAMPLES
  599  ✗  NodeResourcesFit  Insufficient cpu                 n-000, n-001, n-002, …
    1  ✗  NodeResourcesFit  Too many pods, Insufficient cpu  n-200
";
    assert!(out.contains(table), "{out}");
    let close = "\
how close the rejected nodes came:
  Insufficient cpu on 600 nodes: the pod needs 3 cores; the most free on any of them is 2.8 cores (n-599)
  Too many pods on 1 node: the pod needs 1 pod slot; the most free on any of them is 0 pod slots (n-200)
";
    let fix = "\nwhat would make it fit (each confirmed by re-running the cycle):\n  would fit n-599 with cpu ≤ 2800m\n";
    assert!(out.ends_with(&format!("{close}{fix}")), "{out}");

    let o = run(&[
        "explain",
        "--cluster",
        &cluster,
        "--pod",
        &big,
        "--nodes",
        "all",
    ]);
    let out = stdout(&o);
    assert_eq!(out.lines().filter(|l| l.starts_with("n-")).count(), 600);
    assert!(out.ends_with(&format!("{close}{fix}")), "{out}");

    let o = run(&[
        "explain",
        "--cluster",
        &cluster,
        "--pod",
        &big,
        "-o",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json output");
    assert_eq!(v["filter"].as_object().map(|m| m.len()), Some(600));
    assert_eq!(v["allFilters"].as_object().map(|m| m.len()), Some(600));
    assert_eq!(
        v["closest"][0],
        serde_json::json!({
            "plugin": "NodeResourcesFit",
            "reason": "Insufficient cpu",
            "nodes": 600,
            "kind": "resource",
            "resource": "cpu",
            "unit": "millicores",
            "needs": 3000,
            "mostFree": 2800,
            "node": "n-599",
            "largestAllocatable": 4000,
            "summary": "Insufficient cpu on 600 nodes: the pod needs 3 cores; the most free on any of them is 2.8 cores (n-599)"
        })
    );

    // A pod that fits: the tie is counted, with a few names.
    let small = pod_file(&dir, "small", "100m");
    let o = run(&["explain", "--cluster", &cluster, "--pod", &small]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("default/small: schedulable on n-000, best of 276 feasible nodes; tied with 275 other nodes: n-001, n-002, n-003, …"),
        "{out}"
    );
    assert!(out.lines().count() < 40, "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Explaining a pod already on a node runs it again: the lean load of a dump keeps what
/// that re-run reads (its tolerations and spread constraints), so a taint it tolerates
/// is not reported against it.
#[test]
fn a_running_pod_is_explained_with_its_tolerations() {
    let dir = std::env::temp_dir().join(format!("kubestep-running-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dump = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
         "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "p", "namespace": "default", "annotations": {"a": "b"},
                      "labels": {"app": "p"}},
         "spec": {"nodeName": "n1",
                  "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                                   "effect": "NoSchedule"}],
                  "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                      "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "p"}}}],
                  "containers": [{"name": "c", "image": "nginx",
                                  "resources": {"requests": {"cpu": "100m"}}}]}}]});
    let path = dir.join("dump.json");
    std::fs::write(&path, dump.to_string()).unwrap();
    let o = run(&[
        "explain",
        "--cluster",
        path.to_str().unwrap(),
        "--pod",
        "default/p",
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(
        out.starts_with("default/p: already bound; the framework would choose n1"),
        "{out}"
    );
    assert!(!out.contains("untolerated"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `--pod` takes a unique prefix of the name, and lists the candidates when several pods
/// match.
#[test]
fn a_unique_name_prefix_is_enough_and_several_are_listed() {
    let o = run(&["explain", "--cluster", "demo", "--pod", "ml/jupyter"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ml/jupyter: taken as ml/jupyter-notebook-"),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).starts_with("ml/jupyter-notebook-"),
        "{}",
        stdout(&o)
    );
    let o = run(&["explain", "--cluster", "demo", "--pod", "ml/llm"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("3 pods' names start so; give one: ml/llm-finetune-worker-0 (pending)"),
        "{}",
        stderr(&o)
    );
}

/// `--pending`: a line per pending pod with the verdict `--pod` gives for it alone.
#[test]
fn pending_lists_every_pending_pod_with_the_verdict_explain_gives() {
    let o = run(&["explain", "--cluster", "demo", "--pending", "-o", "json"]);
    // 1: some of them cannot be placed.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let list: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 10);
    for v in list {
        let pod = v["pod"].as_str().unwrap();
        let one = run(&["explain", "--cluster", "demo", "--pod", pod, "-o", "json"]);
        let e: serde_json::Value = serde_json::from_str(&stdout(&one)).unwrap();
        match v["verdict"].as_str().unwrap() {
            "Schedulable" => {
                assert_eq!(one.status.code(), Some(0), "{pod}");
                let best = e["selected"].as_array().unwrap();
                assert!(best.contains(&v["node"]), "{pod}: {v} {best:?}");
            }
            "Unschedulable" => {
                assert_eq!(one.status.code(), Some(1), "{pod}");
                assert_eq!(v["message"], e["message"], "{pod}");
            }
            other => panic!("{pod}: {other}"),
        }
    }
    let text = stdout(&run(&["explain", "--cluster", "demo", "--pending"]));
    assert!(text.starts_with("NAMESPACE   NAME "), "{text}");
    assert!(
        text.contains("10 pending pod(s): 6 Schedulable, 4 Unschedulable"),
        "{text}"
    );
    // Where preemption would make room, the line says so first, as `explain POD` does.
    let line = text
        .lines()
        .find(|l| l.contains("checkout-api-"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("Unschedulable   preemption would nominate ip-10-0-3-78.ec2.internal, evicting 2 pods; 0/10 nodes are available:"),
        "{line}"
    );
}

/// A pod that fits nowhere: the text names the culprits (the taint, the selector's label)
/// and the what-if changes a re-run confirmed, and JSON carries the same hints.
#[test]
fn an_unschedulable_pod_is_told_the_culprits_and_the_confirmed_fixes() {
    let o = run(&["explain", "--cluster", "demo", "--pod", "ml/jupyter"]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(
        text.contains("nodeSelector nvidia.com/gpu.present=true (8 nodes without it)"),
        "{text}"
    );
    assert!(
        text.contains("the pod tolerates none of nvidia.com/gpu=present:NoSchedule"),
        "{text}"
    );
    assert!(
        text.contains("what would make it fit (each confirmed by re-running the cycle):\n  would fit ip-10-0-2-91.ec2.internal with toleration nvidia.com/gpu=present:NoSchedule"),
        "{text}"
    );
    // A host port: which one, and on how many nodes it is taken.
    let o = run(&[
        "explain",
        "--cluster",
        "demo",
        "--pod",
        "web/ingress-nginx-controller-w4vzbhs5pn-l7dlc",
    ]);
    assert!(
        stdout(&o).contains("didn't have free ports for the requested pod ports on 2 nodes: the pod asks for host port 443/TCP (in use on 2 nodes)"),
        "{}",
        stdout(&o)
    );
    let o = run(&[
        "explain",
        "--cluster",
        "demo",
        "--pod",
        "ml/jupyter",
        "-o",
        "json",
    ]);
    let e: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        e["whatIf"][0]["text"],
        "would fit ip-10-0-2-91.ec2.internal with toleration nvidia.com/gpu=present:NoSchedule"
    );
    assert_eq!(
        e["whatIf"][0]["nodes"],
        serde_json::json!(["ip-10-0-2-91.ec2.internal"])
    );
}

/// `--pending` lists a pod no profile schedules as Ignored, saying why, rather than
/// leaving it out.
#[test]
fn pending_lists_a_pod_of_another_scheduler_as_ignored() {
    let dir = std::env::temp_dir().join(format!("kubestep-pending-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let other = dir.join("other.yaml");
    std::fs::write(
        &other,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: elsewhere, namespace: default}\nspec:\n  schedulerName: my-scheduler\n  containers: [{name: c, image: pause}]\n",
    )
    .unwrap();
    let o = run(&[
        "explain",
        "--cluster",
        &example(),
        "--cluster",
        other.to_str().unwrap(),
        "--pending",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let line = stdout(&o)
        .lines()
        .find(|l| l.starts_with("default     elsewhere "))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("{}", stdout(&o)));
    assert!(line.contains("Ignored"), "{line}");
    assert!(line.contains("\"my-scheduler\""), "{line}");
}

/// The example cluster is bundled: its name works from any directory, as a file does from
/// the source tree, and `kubestep recordings` lists it.
#[test]
fn the_example_cluster_is_bundled_by_name() {
    let elsewhere = std::env::temp_dir();
    let by_name = bin()
        .args([
            "explain",
            "--cluster",
            "example-cluster",
            "--pod",
            "ml/trainer-llm-0",
        ])
        .current_dir(&elsewhere)
        .output()
        .unwrap();
    let by_file = run(&[
        "explain",
        "--cluster",
        &example(),
        "--pod",
        "ml/trainer-llm-0",
    ]);
    assert_eq!(by_name.status.code(), Some(1), "{}", stderr(&by_name));
    assert_eq!(stdout(&by_name), stdout(&by_file));
    assert!(
        stdout(&by_name).starts_with("ml/trainer-llm-0: unschedulable: 0/6 nodes are available")
    );
    let o = bin()
        .args(["replay", "example-cluster", "--headless", "-o", "text"])
        .current_dir(&elsewhere)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("ml/trainer-llm-0"), "{}", stdout(&o));
    let o = run(&["recordings"]);
    let line = stdout(&o)
        .lines()
        .find(|l| l.starts_with("example-cluster "))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("{}", stdout(&o)));
    assert!(line.contains("Example cluster (a manifest"), "{line}");
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cols[1..3], ["6", "8"], "{line}");
}

/// Nothing read (a `kubectl get` that failed and printed nothing, an empty file or List) is
/// an input error, not "0 pending pod(s)".
#[test]
fn an_empty_input_is_an_error_not_an_empty_cluster() {
    use std::io::Write as _;
    for input in [
        "",
        "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[]}\n",
    ] {
        let mut child = bin()
            .args(["explain", "--cluster", "-", "--pending"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubestep runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("written");
        let out = child.wait_with_output().expect("kubestep ends");
        assert_eq!(out.status.code(), Some(2), "{input:?}: {out:?}");
        let err = stderr(&out);
        assert!(err.contains("<stdin>: no objects in it"), "{err}");
        assert!(!stdout(&out).contains("pending pod(s)"), "{out:?}");
    }
}
