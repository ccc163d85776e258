//! The command line's conventions: `--version` naming the Kubernetes version followed,
//! `-o yaml` beside `-o json`, the kubectl plugin name, long help with examples, and the
//! config file's defaults with located warnings. Shell completion: tests/completion.rs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_kubestep")
}

/// A throwaway directory, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("kubestep-conv-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs kubestep with an empty config directory (the user's own config never leaks in).
fn run_in(cfg: &Path, exe: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .args(args)
        .env("XDG_CONFIG_HOME", cfg)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("running kubestep")
}

fn run(args: &[&str]) -> Output {
    let d = Dir::new(&format!("run-{}", args.join("-").replace('/', "_")));
    run_in(&d.0, Path::new(bin()), args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn version_names_the_kube_scheduler_it_follows() {
    let o = run(&["--version"]);
    assert!(o.status.success());
    let out = stdout(&o);
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some(format!("kubestep {}", env!("CARGO_PKG_VERSION")).as_str())
    );
    assert_eq!(
        lines.next(),
        Some(
            "kube-scheduler semantics: v1.34 (checked against kube-scheduler v1.34.9), v1.35 (checked against kube-scheduler v1.35.4), v1.36 (checked against kube-scheduler v1.36.2), v1.37 (not checked against a real scheduler); default v1.36 (--kube-version chooses)"
        )
    );
}

#[test]
fn an_unknown_kube_version_or_gate_is_refused_naming_what_is_known() {
    let o = run(&[
        "explain",
        "--cluster",
        "example-cluster",
        "--pod",
        "ml/trainer-llm-0",
        "--kube-version",
        "1.33",
    ]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("kubestep follows kube-scheduler 1.34, 1.35, 1.36, 1.37"),
        "{err}"
    );
    let o = run(&[
        "explain",
        "--cluster",
        "example-cluster",
        "--pod",
        "ml/trainer-llm-0",
        "--feature-gates",
        "SchedulerQueueingHints=false",
    ]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "cannot set feature gate SchedulerQueueingHints to false, feature is locked to true"
        ),
        "{err}"
    );
    // A version that is known, with a gate set: both named on the first line.
    let o = run(&[
        "explain",
        "--cluster",
        "example-cluster",
        "--pod",
        "ml/trainer-llm-0",
        "--kube-version",
        "v1.34.9",
        "--feature-gates",
        "NominatedNodeNameForExpectation=true",
    ]);
    assert_eq!(
        stdout(&o).lines().next(),
        Some(
            "kube-scheduler v1.34 semantics (from --kube-version); feature gates NominatedNodeNameForExpectation=true"
        ),
        "{o:?}"
    );
}

#[test]
fn long_help_has_examples_and_short_help_stays_short() {
    for args in [
        vec!["--help"],
        vec!["explain", "--help"],
        vec!["replay", "--help"],
        vec!["live", "--help"],
        vec!["record", "--help"],
        vec!["tui", "--help"],
    ] {
        let o = run(&args);
        assert!(o.status.success(), "{args:?}");
        assert!(
            stdout(&o).contains("Examples:"),
            "{args:?}:\n{}",
            stdout(&o)
        );
    }
    let o = run(&["explain", "-h"]);
    assert!(!stdout(&o).contains("Examples:"));
    assert!(stdout(&run(&["--help"])).contains("kubectl-kubestep"));
}

/// kubectl runs a plugin `kubectl-kubestep` found on PATH, with its path as argv[0]:
/// usage and errors then read `kubectl kubestep`.
#[test]
fn works_as_the_kubectl_plugin() {
    let d = Dir::new("kubectl");
    let plugin = d.0.join("kubectl-kubestep");
    std::os::unix::fs::symlink(bin(), &plugin).unwrap();
    let o = run_in(&d.0, &plugin, &["--help"]);
    assert!(o.status.success());
    assert!(
        stdout(&o).contains("Usage: kubectl kubestep [COMMAND]"),
        "{}",
        stdout(&o)
    );
    let o = run_in(&d.0, &plugin, &["explain", "--help"]);
    assert!(
        stdout(&o).contains("Usage: kubectl kubestep explain"),
        "{}",
        stdout(&o)
    );
    let o = run_in(&d.0, &plugin, &["explain"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("kubectl kubestep explain"), "{err}");
    // It works, not only its help.
    let o = run_in(
        &d.0,
        &plugin,
        &[
            "explain",
            "--cluster",
            "recordings/example-cluster.yaml",
            "--pod",
            "shop/checkout-7d9f6c8b5-w8r2t",
        ],
    );
    assert!(o.status.success(), "{o:?}");
    // Under its own name, kubestep is kubestep.
    let o = run_in(&d.0, Path::new(bin()), &["--help"]);
    assert!(stdout(&o).contains("Usage: kubestep [COMMAND]"));
    // And kubectl itself finds it, when kubectl is installed.
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok()
    {
        let path = format!(
            "{}:{}",
            d.0.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let o = Command::new("kubectl")
            .args(["kubestep", "--version"])
            .env("PATH", path)
            .env("XDG_CONFIG_HOME", &d.0)
            .output()
            .unwrap();
        assert!(
            stdout(&o).contains("kube-scheduler semantics: v1.34"),
            "{o:?}"
        );
    } else {
        eprintln!("kubectl not installed: `kubectl kubestep` checked through argv[0] only");
    }
}

/// Under kubectl, what kubestep says on standard error begins with the command the user
/// typed: errors, warnings and notes alike.
#[test]
fn as_the_kubectl_plugin_errors_and_warnings_begin_kubectl_kubestep() {
    let d = Dir::new("kubectl-stderr");
    let plugin = d.0.join("kubectl-kubestep");
    std::os::unix::fs::symlink(bin(), &plugin).unwrap();
    let failing = [
        "explain",
        "--cluster",
        "/nonexistent/cluster.yaml",
        "--pod",
        "a/b",
    ];
    let o = run_in(&d.0, &plugin, &failing);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("kubectl kubestep: /nonexistent/cluster.yaml"),
        "{err}"
    );
    // A note on standard error (a pod taken by a prefix of its name) and a warning
    // (a recording's bad line, skipped).
    let o = run_in(
        &d.0,
        &plugin,
        &[
            "explain",
            "--cluster",
            "example-cluster",
            "--pod",
            "ml/trainer-llm",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("kubectl kubestep: ml/trainer-llm: taken as ml/trainer-llm-0"),
        "{err}"
    );
    let rec = d.0.join("bad-line.jsonl");
    std::fs::write(
        &rec,
        "{\"kubestep\":\"recording\",\"version\":1,\"started\":\"2026-01-01T00:00:00Z\"}\nnot json\n",
    )
    .unwrap();
    let o = run_in(
        &d.0,
        &plugin,
        &["replay", &rec.display().to_string(), "--headless"],
    );
    assert!(o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("kubectl kubestep: warning: "), "{err}");
    assert!(!err.lines().any(|l| l.starts_with("kubestep:")), "{err}");
    // Under its own name, the same failure begins `kubestep:`.
    let o = run_in(&d.0, Path::new(bin()), &failing);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("kubestep: /nonexistent/cluster.yaml"),
        "{err}"
    );
}

fn yaml_docs(s: &str) -> Vec<Value> {
    s.split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_saphyr::from_str::<Value>(d).unwrap_or_else(|e| panic!("{e}:\n{d}")))
        .collect()
}

#[test]
fn explain_yaml_is_the_json_in_yaml() {
    let args = |o: &'static str| {
        vec![
            "explain",
            "--cluster",
            "recordings/example-cluster.yaml",
            "--pod",
            "ml/trainer-llm-0",
            "-o",
            o,
        ]
    };
    let json = run(&args("json"));
    let yaml = run(&args("yaml"));
    assert_eq!(json.status.code(), Some(1), "the trainer does not fit");
    assert_eq!(yaml.status.code(), Some(1));
    let j: Value = serde_json::from_slice(&json.stdout).unwrap();
    let docs = yaml_docs(&stdout(&yaml));
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0], j);
}

#[test]
fn replay_yaml_documents_match_the_json_lines() {
    let jsonl = run(&["replay", "preemption", "--headless"]);
    let yaml = run(&["replay", "preemption", "--headless", "-o", "yaml"]);
    assert!(jsonl.status.success() && yaml.status.success());
    let lines: Vec<Value> = stdout(&jsonl)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let y = stdout(&yaml);
    assert!(y.starts_with("---\n"), "{y}");
    // Times are wall-clock measurements: the same fields, other values.
    fn untimed(mut v: Value) -> Value {
        if let Some(points) = v.get_mut("points").and_then(Value::as_array_mut) {
            for p in points {
                p.as_object_mut().unwrap().remove("micros");
            }
        }
        v
    }
    let docs: Vec<Value> = yaml_docs(&y).into_iter().map(untimed).collect();
    let lines: Vec<Value> = lines.into_iter().map(untimed).collect();
    assert_eq!(docs, lines);
}

#[test]
fn config_file_defaults_and_located_warnings_never_fatal() {
    let d = Dir::new("config");
    let dir = d.0.join("kubestep");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("config.toml");
    std::fs::write(
        &file,
        "context = \"staging\"\nhistory = \"lots\"\ncolour = \"blue\"\n\n[keys]\nfly = \"z\"\n",
    )
    .unwrap();
    let o = run_in(
        &d.0,
        Path::new(bin()),
        &["replay", "manual-approval", "--headless"],
    );
    assert!(o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    let f = file.display();
    assert!(
        err.contains(&format!(
            "kubestep: warning: config {f}:2: history: \"lots\" is not a size"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("config {f}:3: colour: unknown setting")),
        "{err}"
    );
    // The summary is the same as without the file.
    let plain = run(&["replay", "manual-approval", "--headless"]);
    assert_eq!(stdout(&o).lines().last(), stdout(&plain).lines().last());
    // The context default reaches live and record: a context the kubeconfig lacks is
    // named in the error.
    let kc = d.0.join("kubeconfig");
    std::fs::write(
        &kc,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: dev, context: {cluster: c, user: u}}]\ncurrent-context: dev\n",
    )
    .unwrap();
    let o = run_in(
        &d.0,
        Path::new(bin()),
        &[
            "record",
            "--kubeconfig",
            kc.to_str().unwrap(),
            "--duration",
            "1s",
            "-o",
            d.0.join("r.jsonl").to_str().unwrap(),
        ],
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("staging"), "{err}");
}

#[test]
fn the_tui_without_a_terminal_says_so() {
    // Output captured: standard output is a pipe, as in `kubestep replay demo | less`.
    let o = run(&["replay", "demo"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the terminal UI needs a terminal") && err.contains("--headless"),
        "{err}"
    );
}
