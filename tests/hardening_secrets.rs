//! No credential in any output: kubeconfig faults are located, never quoted; server URLs
//! are checked before the client sees them (no panic for a missing scheme); user info in a
//! URL becomes basic auth and never reaches a message or a recording; an exec plugin's
//! failure shows neither its environment nor its output; an extender's `urlPrefix` is
//! masked in explain and in a recording's header. Every secret below holds `SEKRET`.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;
use support::apiserver::ApiServer;

const SECRET: &str = "SEKRET";

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_kubestep")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kubestep-secrets-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// `kubestep ARGS` with no proxy or kubeconfig from the environment.
fn kubestep(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(bin());
    c.args(args);
    for v in [
        "KUBECONFIG",
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "NO_PROXY",
        "no_proxy",
    ] {
        c.env_remove(v);
    }
    c.env("RUST_BACKTRACE", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run kubestep")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn record_with(kubeconfig: &Path, dir: &Path, env: &[(&str, &str)]) -> Output {
    let out = dir.join("out.jsonl");
    kubestep(
        &[
            "record",
            "--kubeconfig",
            &kubeconfig.display().to_string(),
            "--duration",
            "1s",
            "-o",
            &out.display().to_string(),
        ],
        env,
    )
}

fn assert_clean(what: &str, out: &Output) {
    let t = text(out);
    assert!(!t.contains(SECRET), "{what}: a secret was printed:\n{t}");
    assert!(!t.contains("panicked"), "{what}: panic:\n{t}");
}

const USER: &str = "users:\n- name: u\n";
const CONTEXT: &str =
    "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n";
const CLUSTER: &str = "clusters:\n- name: c\n  cluster: {server: \"http://127.0.0.1:1\"}\n";

#[test]
fn kubeconfig_faults_say_where_and_what_never_the_text() {
    let dir = temp_dir("kubeconfigs");
    let head = "apiVersion: v1\nkind: Config\n";
    let cases: Vec<(&str, String, usize)> = vec![
        (
            "flow mapping",
            format!("{head}{CLUSTER}{USER}  user: {{token: flowtokenSEKRET, password: pwSEKRET}}\n    bad: indentation\n{CONTEXT}"),
            8,
        ),
        (
            "JSON as kubectl writes it",
            r#"{"apiVersion":"v1","kind":"Config","users":[{"name":"u","user":{"token":"jsontokenSEKRET",,"password":"jsonpwSEKRET"}}]}"#.to_string(),
            1,
        ),
        (
            "JSON over lines",
            "{\n  \"users\": [{\"name\": \"u\", \"user\": {\"token\": \"tokSEKRET\" \"password\": \"pwSEKRET\"}}]\n}\n".to_string(),
            2,
        ),
        (
            "block scalar",
            format!("{head}{CLUSTER}{USER}  user:\n    password: |\n      blockSEKRET\n     bad: x\n{CONTEXT}"),
            11,
        ),
        (
            "value on the next line",
            format!("{head}{CLUSTER}{USER}  user:\n    token:\n      nextlineSEKRET\n   : bad\n{CONTEXT}"),
            10,
        ),
        (
            "complex key",
            format!("{head}{CLUSTER}{USER}  user:\n    ? token\n    : keySEKRET\n    : again\n{CONTEXT}"),
            10,
        ),
        (
            "tab in the line",
            format!("{head}{CLUSTER}{USER}  user:\n\ttoken: tabSEKRET\n{CONTEXT}"),
            9,
        ),
        (
            "unterminated key data",
            format!("{head}{CLUSTER}{USER}  user:\n    client-key-data: \"LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktSEKRET\n{CONTEXT}"),
            9,
        ),
        (
            "a string where a user belongs",
            format!("{head}{CLUSTER}{USER}  user: deadbeef0123SEKRET\n{CONTEXT}"),
            8,
        ),
    ];
    for (what, kc, line) in cases {
        let path = dir.join("kubeconfig");
        std::fs::write(&path, &kc).expect("write");
        let out = record_with(&path, &dir, &[]);
        assert_clean(what, &out);
        let t = text(&out);
        assert!(!out.status.success(), "{what}: accepted:\n{t}");
        assert!(
            t.contains(&format!("kubeconfig {}", path.display())),
            "{what}: {t}"
        );
        assert!(t.contains("line "), "{what}: no location:\n{t}");
        // The fault's own line or one near it (parsers report where they noticed).
        let said: usize = t
            .split("line ")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(
            said.abs_diff(line) <= 2,
            "{what}: line {said}, fault at {line}:\n{t}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn kubeconfig_for(server: &str, user: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: \"{server}\"\nusers:\n- name: u\n  user: {user}\n{CONTEXT}"
    )
}

#[test]
fn server_urls_are_checked_before_use() {
    let dir = temp_dir("urls");
    for (server, said) in [
        (
            "http://admin:hun/terSEKRET@127.0.0.1:25998",
            "'/', '?' or '#'",
        ),
        (
            "http://admin:hun?terSEKRET@127.0.0.1:25998",
            "'/', '?' or '#'",
        ),
        (
            "http://admin:hun#terSEKRET@127.0.0.1:25998",
            "'/', '?' or '#'",
        ),
        ("ftp://127.0.0.1:1", "neither http nor https"),
        ("http://u:pw SEKRET@127.0.0.1:1", "white space"),
        ("http://u:%zzSEKRET@127.0.0.1:1", "%-escape"),
        ("http://u:SEKRET@[::1:6443", "closing ']'"),
        ("http://u:SEKRET@host:notaport", "not a number"),
        // Without a scheme, as kubectl reads it: http here (no TLS configured).
        (
            "127.0.0.1:1",
            "cannot reach the API server at http://127.0.0.1:1",
        ),
        (
            "admin:pwSEKRET@127.0.0.1:1",
            "cannot reach the API server at http://127.0.0.1:1",
        ),
    ] {
        let path = dir.join("kubeconfig");
        std::fs::write(&path, kubeconfig_for(server, "{}")).expect("write");
        let out = record_with(&path, &dir, &[]);
        assert_clean(server, &out);
        let t = text(&out);
        assert!(!out.status.success(), "{server}: {t}");
        assert!(t.contains(said), "{server}: wanted {said:?}:\n{t}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn user_info_in_the_server_url_is_basic_auth_and_never_recorded() {
    let dir = temp_dir("basic");
    let server = ApiServer::start();
    server.apply(
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}),
    );
    // base64("admin:p@ss/SEKRET")
    server.require_authorization("Basic YWRtaW46cEBzcy9TRUtSRVQ=");
    let url = server.url().replacen("://", "://admin:p%40ss%2FSEKRET@", 1);
    let path = dir.join("kubeconfig");
    std::fs::write(&path, kubeconfig_for(&url, "{}")).expect("write");
    let out = record_with(&path, &dir, &[]);
    assert_clean("record", &out);
    assert!(out.status.success(), "{}", text(&out));
    let file = std::fs::read_to_string(dir.join("out.jsonl")).expect("recording");
    assert!(!file.contains(SECRET), "the recording holds the password");
    assert!(file.contains("\"n1\""), "node not recorded");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_exec_plugin_failure_shows_neither_its_environment_nor_its_output() {
    let dir = temp_dir("exec");
    let user = "\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: sh\n      args: [\"-c\", \"echo outSEKRET; echo errSEKRET >&2; exit 3\"]\n      env: [{name: API_KEY, value: envSEKRET}]\n      interactiveMode: Never";
    let path = dir.join("kubeconfig");
    std::fs::write(&path, kubeconfig_for("http://127.0.0.1:1", user)).expect("write");
    let out = record_with(&path, &dir, &[]);
    assert_clean("exec", &out);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("exec credential plugin"), "{t}");
    assert!(t.contains("exit status: 3"), "{t}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_proxy_from_the_environment_is_used_and_its_password_masked() {
    let dir = temp_dir("proxy");
    let path = dir.join("kubeconfig");
    // A host that does not resolve: only through the proxy could it be reached, and the
    // proxy (nothing listens on port 1) refuses the connection.
    std::fs::write(
        &path,
        kubeconfig_for("http://kubestep-proxy-test.invalid:6443", "{}"),
    )
    .expect("write");
    let out = record_with(
        &path,
        &dir,
        &[("HTTP_PROXY", "http://user:pxSEKRET@127.0.0.1:1")],
    );
    assert_clean("proxy", &out);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.to_lowercase().contains("refused"),
        "the proxy was not used:\n{t}"
    );
    // NO_PROXY naming the host: straight to it (and its name does not resolve).
    let out = record_with(
        &path,
        &dir,
        &[
            ("HTTP_PROXY", "http://user:pxSEKRET@127.0.0.1:1"),
            ("NO_PROXY", "localhost,,.invalid"),
        ],
    );
    assert_clean("no proxy", &out);
    let t = text(&out);
    assert!(
        !t.to_lowercase().contains("refused"),
        "NO_PROXY ignored:\n{t}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const EXTENDER_CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders:\n- urlPrefix: \"http://admin:extSEKRET@127.0.0.1:1/sched\"\n  filterVerb: filter\n  weight: 1\n";

#[test]
fn an_extenders_password_is_masked_in_explain_and_recordings() {
    let dir = temp_dir("extender");
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, EXTENDER_CONFIG).expect("write");
    let pod = dir.join("pod.yaml");
    std::fs::write(
        &pod,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  containers: [{name: c, image: x}]\n",
    )
    .expect("write");
    let (cfg, pod) = (cfg.display().to_string(), pod.display().to_string());
    for o in ["text", "json", "yaml"] {
        let out = kubestep(
            &[
                "explain",
                "--cluster",
                "demo",
                "--config",
                &cfg,
                "--pod",
                &pod,
                "-o",
                o,
            ],
            &[],
        );
        assert_clean(o, &out);
        let t = text(&out);
        assert!(t.contains("admin:***@127.0.0.1:1/sched"), "{o}: {t}");
        assert_eq!(out.status.code(), Some(1), "{o}: {t}");
        if o == "json" {
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            // The extender's error ended the cycle before a host was selected.
            assert_eq!(v["selected"], json!([]), "{v}");
        }
    }

    let server = ApiServer::start();
    let kc = server.write_kubeconfig(&dir, None);
    let rec = dir.join("live.jsonl");
    let out = kubestep(
        &[
            "live",
            "--headless",
            "--kubeconfig",
            &kc.display().to_string(),
            "--config",
            &cfg,
            "--record",
            &rec.display().to_string(),
            "--duration",
            "1s",
        ],
        &[],
    );
    assert_clean("live --record", &out);
    let file = std::fs::read_to_string(&rec).expect("recording");
    assert!(file.contains("admin:***@127.0.0.1:1/sched"), "{file}");
    assert!(
        !file.contains(SECRET),
        "the recording's header holds the password"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The shared regression inputs themselves (tests/data/regressions/hardening-2): two
/// malformed kubeconfigs and a URL whose password holds a `/`. Each ends with an error
/// that names the file (and the line, for the parse faults) and quotes none of its secrets.
#[test]
fn the_shared_kubeconfig_regressions_stay_fixed() {
    let dir = temp_dir("shared");
    let inputs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/regressions/hardening-2");
    for (file, secrets, said) in [
        (
            "kc5.yaml",
            &["flowtokensecretvalue", "flowpasswordsecret"][..],
            "line 9",
        ),
        (
            "kc6b.yaml",
            &["jsontokensecretvalue", "jsonpwsecret"][..],
            "line 1",
        ),
        (
            "url3.yaml",
            &["ter2SECRET", "hun/ter"][..],
            "'/', '?' or '#'",
        ),
    ] {
        let path = inputs.join(file);
        let out = record_with(&path, &dir, &[]);
        let t = text(&out);
        assert!(!out.status.success(), "{file}: accepted:\n{t}");
        assert!(!t.contains("panicked"), "{file}: panic:\n{t}");
        for s in secrets {
            assert!(!t.contains(s), "{file}: printed {s}:\n{t}");
        }
        assert!(t.contains(&path.display().to_string()), "{file}: {t}");
        assert!(t.contains(said), "{file}: wanted {said:?}:\n{t}");
        assert!(!dir.join("out.jsonl").exists(), "{file}: wrote a recording");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
