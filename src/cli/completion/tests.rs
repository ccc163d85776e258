//! The completers on the arguments they are made for, through clap's engine as a shell
//! or kubectl calls it: a command shaped as `explain` takes a pod (POD, `-n`, `-A`,
//! `--cluster`, `--context`, `--kubeconfig`), and kubestep's own command.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{Arg, ArgAction};

use super::*;

/// `explain`'s arguments as kubectl users name a pod.
fn explain_shaped() -> clap::Command {
    let explain = clap::Command::new("explain")
        .arg(Arg::new("target").value_name("POD").add(pods()))
        .arg(
            Arg::new("namespace")
                .short('n')
                .long("namespace")
                .add(namespaces()),
        )
        .arg(
            Arg::new("all_namespaces")
                .short('A')
                .long("all-namespaces")
                .action(ArgAction::SetTrue),
        )
        .arg(
            Arg::new("cluster")
                .long("cluster")
                .action(ArgAction::Append)
                .value_parser(RecordingSource)
                .hide_possible_values(true),
        )
        .arg(Arg::new("context").long("context").add(contexts()))
        .arg(
            Arg::new("kubeconfig")
                .long("kubeconfig")
                .value_parser(clap::value_parser!(PathBuf)),
        );
    for_completion(with_completers(
        clap::Command::new("kubestep").subcommand(explain),
    ))
}

/// The candidates (value, help) for `line`, whose last word (maybe empty) is the one
/// being completed, as the registration scripts ask.
fn complete_in(cmd: clap::Command, line: &str) -> Vec<(String, Option<String>)> {
    let words: Vec<String> = line.split(' ').map(str::to_string).collect();
    line::set(words.clone());
    let index = words.len() - 1;
    let words = words.into_iter().map(OsString::from).collect();
    let cwd = std::env::current_dir().unwrap();
    clap_complete::engine::complete(&mut cmd.clone(), words, index, Some(&cwd))
        .unwrap()
        .into_iter()
        .map(|c| {
            (
                c.get_value().to_string_lossy().into_owned(),
                c.get_help().map(|h| h.to_string()),
            )
        })
        .collect()
}

fn complete(line: &str) -> Vec<(String, Option<String>)> {
    complete_in(explain_shaped(), line)
}

fn values(line: &str) -> Vec<String> {
    complete(line).into_iter().map(|(v, _)| v).collect()
}

/// The values offered for `line` that are not options (where no value fits, clap's
/// engine offers the options).
fn names(line: &str) -> Vec<String> {
    let mut v = values(line);
    v.retain(|v| !v.starts_with('-'));
    v
}

/// A throwaway directory, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("kubestep-compl-{tag}-{}", std::process::id()));
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

#[test]
fn namespaces_of_a_bundled_recording_with_their_pods() {
    assert_eq!(
        complete("kubestep explain --cluster example-cluster -n "),
        [
            ("ml".to_string(), Some("2 pods, 1 pending".to_string())),
            ("shop".to_string(), Some("6 pods, 2 pending".to_string())),
        ]
    );
    assert_eq!(
        values("kubestep explain --cluster example-cluster --namespace s"),
        ["shop"]
    );
    assert_eq!(
        values("kubestep explain --cluster example-cluster -ns"),
        ["-nshop"]
    );
    // A recording over time: its namespaces at its last event.
    assert_eq!(
        values("kubestep explain --cluster preemption -n "),
        ["batch", "data", "kube-system", "ml", "payments", "web"]
    );
}

#[test]
fn pods_of_a_bundled_recording_pending_first() {
    // No namespace given on a file: bare names (each is in one namespace), with it.
    assert_eq!(
        complete("kubestep explain --cluster example-cluster ")[..4],
        [
            (
                "checkout-7d9f6c8b5-w8r2t".to_string(),
                Some("Pending, namespace shop".to_string())
            ),
            (
                "search-indexer-6c5d4f8b7-zt5qv".to_string(),
                Some("Pending, namespace shop".to_string())
            ),
            (
                "trainer-llm-0".to_string(),
                Some("Pending, namespace ml".to_string())
            ),
            (
                "cart-5b8c9d7f4-9hdz2".to_string(),
                Some("on node ip-10-0-1-12.eu-west-1.compute.internal, namespace shop".to_string())
            ),
        ]
    );
    assert_eq!(
        values("kubestep explain --cluster example-cluster ").len(),
        8
    );
    // With -n: that namespace's pods, bare.
    assert_eq!(
        complete("kubestep explain --cluster example-cluster -n ml "),
        [
            ("trainer-llm-0".to_string(), Some("Pending".to_string())),
            (
                "feature-store-0".to_string(),
                Some("on node ip-10-0-3-32.eu-west-1.compute.internal".to_string())
            ),
        ]
    );
    // NAMESPACE/NAME once the word has a slash; a prefix narrows.
    assert_eq!(
        values("kubestep explain --cluster example-cluster shop/check"),
        [
            "shop/checkout-7d9f6c8b5-w8r2t",
            "shop/checkout-7d9f6c8b5-2xkqp"
        ]
    );
    assert_eq!(
        values("kubestep explain --cluster example-cluster -n shop pod/ca"),
        ["pod/cart-5b8c9d7f4-9hdz2", "pod/catalog-6f7d8c9b5-kq7wm"]
    );
    assert_eq!(
        values("kubestep explain --cluster example-cluster -A tr"),
        ["trainer-llm-0"]
    );
    assert!(names("kubestep explain --cluster example-cluster -n nowhere ").is_empty());
    // Options where no pod fits.
    assert!(
        values("kubestep explain --cluster example-cluster -n nowhere ")
            .contains(&"--namespace".to_string())
    );
}

#[test]
fn a_name_in_several_namespaces_is_offered_with_its_namespace() {
    let d = Dir::new("dup");
    let pod = |ns: &str, name: &str, node: &str| {
        format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  nodeName: \"{node}\"\n  containers:\n  - name: c\n    image: nginx\n"
        )
    };
    let file = d.0.join("dump.yaml");
    std::fs::write(
        &file,
        [
            pod("a", "web", ""),
            pod("b", "web", "n1"),
            pod("a", "solo", "n1"),
        ]
        .concat(),
    )
    .unwrap();
    let f = file.display();
    assert_eq!(
        values(&format!("kubestep explain --cluster {f} ")),
        ["a/web", "b/web", "solo"]
    );
    assert_eq!(
        values(&format!("kubestep explain --cluster {f} -n b ")),
        ["web"]
    );
    assert_eq!(
        names(&format!("kubestep explain --cluster {f} --cluster {f} ")),
        Vec::<String>::new(),
        "two files with the same pods are an error, and say nothing"
    );
}

#[test]
fn a_path_is_completed_as_a_file_beside_pods() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let got = values("kubestep explain --cluster example-cluster ./recordings/example-c");
    assert_eq!(got, ["./recordings/example-cluster.yaml"]);
    assert!(root.join("recordings").is_dir());
    let got = values("kubestep explain --cluster example-cluster recordings/pre");
    assert_eq!(got, ["recordings/preemption.jsonl"]);
}

#[test]
fn standard_input_and_unreadable_files_offer_nothing() {
    assert!(values("kubestep explain --cluster - -n ").is_empty());
    assert!(values("kubestep explain --cluster /nonexistent.yaml -n ").is_empty());
    assert!(names("kubestep explain --cluster /nonexistent.yaml ").is_empty());
}

#[test]
fn contexts_from_the_kubeconfig_given() {
    let d = Dir::new("contexts");
    let kc = d.0.join("kubeconfig");
    std::fs::write(
        &kc,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c1, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts:\n- {name: dev, context: {cluster: c1, user: u}}\n- {name: prod, context: {cluster: c1, user: u, namespace: shop}}\ncurrent-context: prod\n",
    )
    .unwrap();
    let k = kc.display();
    assert_eq!(
        complete(&format!("kubestep explain --kubeconfig {k} --context ")),
        [
            ("dev".to_string(), Some("cluster c1".to_string())),
            ("prod".to_string(), Some("current, cluster c1".to_string())),
        ]
    );
    assert_eq!(
        values(&format!("kubestep explain --kubeconfig {k} --context=p")),
        ["--context=prod"]
    );
    assert!(values("kubestep explain --kubeconfig /nonexistent --context ").is_empty());
}

#[test]
fn recordings_are_completed_by_name_and_as_files_everywhere_one_is_taken() {
    let cmd = for_completion(super::super::command());
    for line in [
        "kubestep replay exa",
        "kubestep tui exa",
        "kubestep explain --cluster exa",
        "kubestep bench --recording exa",
    ] {
        assert_eq!(
            complete_in(cmd.clone(), line),
            [
                (
                    "example-cluster".to_string(),
                    Some("bundled recording".to_string())
                ),
                ("examples/".to_string(), None)
            ],
            "{line}"
        );
    }
    let got: Vec<String> = complete_in(cmd.clone(), "kubestep replay recordings/d")
        .into_iter()
        .map(|(v, _)| v)
        .collect();
    assert_eq!(
        got,
        [
            "recordings/demo.jsonl",
            "recordings/divergence.jsonl",
            "recordings/dra-gpus.jsonl"
        ]
    );
}

#[test]
fn hidden_subcommands_are_never_offered() {
    let cmd = for_completion(super::super::command());
    let all: Vec<String> = complete_in(cmd.clone(), "kubestep ")
        .into_iter()
        .map(|(v, _)| v)
        .collect();
    assert!(all.contains(&"explain".to_string()), "{all:?}");
    assert!(all.contains(&"completions".to_string()), "{all:?}");
    assert!(!all.iter().any(|v| v.starts_with("krew")), "{all:?}");
    // clap's engine offers a hidden subcommand when nothing visible matches.
    assert!(complete_in(cmd.clone(), "kubestep kr").is_empty());
    assert!(complete_in(cmd.clone(), "kubestep help kr").is_empty());
}

#[test]
fn fixed_values_come_from_their_value_enum() {
    let cmd = for_completion(super::super::command());
    let got: Vec<String> = complete_in(cmd.clone(), "kubestep explain -o ")
        .into_iter()
        .map(|(v, _)| v)
        .collect();
    assert_eq!(got, ["text", "wide", "json", "yaml", "name"]);
    let got: Vec<String> = complete_in(cmd.clone(), "kubestep replay demo --output=j")
        .into_iter()
        .map(|(v, _)| v)
        .collect();
    assert_eq!(got, ["--output=jsonl"]);
    let got: Vec<String> = complete_in(cmd, "kubestep completions ")
        .into_iter()
        .map(|(v, _)| v)
        .collect();
    assert_eq!(got, ["bash", "elvish", "fish", "powershell", "zsh"]);
}

#[test]
fn kubectl_gets_cobras_format() {
    let answer = |words: &[&str]| {
        let words: Vec<OsString> = std::iter::once("kubestep")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect();
        let cwd = std::env::current_dir().unwrap();
        complete_for_kubectl(&mut explain_shaped(), words, Some(&cwd))
    };
    assert_eq!(
        answer(&["explain", "--cluster", "example-cluster", "-n", ""]),
        "ml\t2 pods, 1 pending\nshop\t6 pods, 2 pending\n:4\n"
    );
    let pods = answer(&["explain", "--cluster", "example-cluster", "-n", "ml", ""]);
    assert_eq!(
        pods,
        "trainer-llm-0\tPending\nfeature-store-0\ton node ip-10-0-3-32.eu-west-1.compute.internal\n:4\n"
    );
    // `--flag=VALUE`: the value alone, as Cobra answers.
    assert_eq!(
        answer(&["explain", "--cluster=example-cl"]),
        "example-cluster\tbundled recording\n:4\n"
    );
    // Files among the candidates: the shell may complete files (directive 0); a
    // directory alone keeps the cursor after its `/` (2).
    let files = answer(&["explain", "--cluster", "recordings/pre"]);
    assert_eq!(files, "recordings/preemption.jsonl\n:0\n");
    assert_eq!(
        answer(&["explain", "--cluster", "recordin"]),
        "recordings/\n:2\n"
    );
    // Nothing to offer: no files either.
    assert_eq!(
        answer(&["explain", "--cluster", "/nonexistent", "-n", ""]),
        ":4\n"
    );
    // The word under the cursor defaults to empty.
    assert!(
        complete_for_kubectl(&mut explain_shaped(), vec!["kubestep".into()], None)
            .ends_with(":4\n")
    );
}

/// A loopback API server for pod and namespace lists: answers each request with
/// `answer(path, query)` as JSON, and logs the requests.
struct FakeApi {
    addr: std::net::SocketAddr,
    requests: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl FakeApi {
    fn start(answer: fn(&str, &str) -> Option<String>) -> FakeApi {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = requests.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let log = log.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    loop {
                        let mut first = String::new();
                        if reader.read_line(&mut first).unwrap_or(0) == 0 {
                            return;
                        }
                        // The headers, up to the blank line.
                        let mut line = String::new();
                        while reader.read_line(&mut line).unwrap_or(0) > 2 {
                            line.clear();
                        }
                        let target = first.split(' ').nth(1).unwrap_or_default().to_string();
                        log.lock().unwrap().push(target.clone());
                        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
                        let (status, body) = match answer(path, query) {
                            Some(b) => ("200 OK", b),
                            None => ("404 Not Found", "{}".to_string()),
                        };
                        let _ = write!(
                            conn,
                            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                    }
                });
            }
        });
        FakeApi { addr, requests }
    }

    fn kubeconfig(&self, dir: &Path) -> PathBuf {
        let kc = dir.join("kubeconfig");
        std::fs::write(
            &kc,
            format!(
                "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://{}'}}}}]\nusers: [{{name: u, user: {{token: t}}}}]\ncontexts:\n- {{name: dev, context: {{cluster: c, user: u, namespace: team}}}}\ncurrent-context: dev\n",
                self.addr
            ),
        )
        .unwrap();
        kc
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// A metadata list of `kind` holding `items` (namespace, name).
fn metadata_list(items: &[(&str, &str)]) -> String {
    let items: Vec<serde_json::Value> = items
        .iter()
        .map(|(ns, name)| {
            let mut m = serde_json::json!({"name": name});
            if !ns.is_empty() {
                m["namespace"] = serde_json::json!(ns);
            }
            serde_json::json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": m})
        })
        .collect();
    serde_json::json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": {}, "items": items})
        .to_string()
}

fn cluster_answers(path: &str, query: &str) -> Option<String> {
    let pending = query.contains("fieldSelector=spec.nodeName%3D%2C");
    match path {
        "/api/v1/namespaces" => Some(metadata_list(&[("", "default"), ("", "team")])),
        "/api/v1/namespaces/team/pods" if pending => Some(metadata_list(&[("team", "web-2")])),
        "/api/v1/namespaces/team/pods" => {
            Some(metadata_list(&[("team", "web-1"), ("team", "web-2")]))
        }
        "/api/v1/pods" if pending => Some(metadata_list(&[("team", "web-2")])),
        "/api/v1/pods" => Some(metadata_list(&[
            ("other", "web-1"),
            ("team", "web-1"),
            ("team", "web-2"),
        ])),
        _ => None,
    }
}

#[test]
fn without_cluster_files_names_come_from_the_kubeconfig_context() {
    let d = Dir::new("live");
    let api = FakeApi::start(cluster_answers);
    let kc = api.kubeconfig(&d.0);
    let k = kc.display();
    assert_eq!(
        values(&format!("kubestep explain --kubeconfig {k} -n ")),
        ["default", "team"]
    );
    // The context's namespace (team), pending pods first, bare names.
    assert_eq!(
        complete(&format!("kubestep explain --kubeconfig {k} ")),
        [
            ("web-2".to_string(), Some("Pending".to_string())),
            ("web-1".to_string(), None),
        ]
    );
    // -A: a name in several namespaces with its namespace, any other bare.
    assert_eq!(
        names(&format!("kubestep explain --kubeconfig {k} -A ")),
        ["web-2", "other/web-1", "team/web-1"]
    );
    assert_eq!(
        names(&format!("kubestep explain --kubeconfig {k} team/")),
        ["team/web-2", "team/web-1"]
    );
    // Metadata only, one page, finished pods left out; the pending list by node name.
    let requests = api.requests();
    let pods = requests
        .iter()
        .find(|r| r.starts_with("/api/v1/namespaces/team/pods") && !r.contains("nodeName"))
        .unwrap();
    assert!(pods.contains("limit=1000"), "{pods}");
    assert!(
        pods.contains("fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"),
        "{pods}"
    );
}

#[test]
fn cluster_files_never_reach_the_network() {
    let d = Dir::new("offline");
    let api = FakeApi::start(cluster_answers);
    let kc = api.kubeconfig(&d.0);
    let k = kc.display();
    assert_eq!(
        values(&format!(
            "kubestep explain --kubeconfig {k} --cluster example-cluster -n "
        )),
        ["ml", "shop"]
    );
    assert_eq!(
        names(&format!(
            "kubestep explain --kubeconfig {k} --cluster example-cluster "
        ))
        .len(),
        8
    );
    assert!(api.requests().is_empty(), "{:?}", api.requests());
    // The same line without --cluster asks the server: the check above can fail.
    values(&format!("kubestep explain --kubeconfig {k} -n "));
    assert!(!api.requests().is_empty());
}

#[test]
fn a_server_that_never_answers_costs_the_deadline_and_says_nothing() {
    let d = Dir::new("silent");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Connections are taken and held, never answered.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming() {
            held.push(c);
        }
    });
    let kc = d.0.join("kubeconfig");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://{addr}'}}}}]\nusers: [{{name: u, user: {{}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\ncurrent-context: x\n"
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    assert!(
        names(&format!(
            "kubestep explain --kubeconfig {} -n ",
            kc.display()
        ))
        .is_empty()
    );
    let took = started.elapsed();
    assert!(
        took >= lookup::DEADLINE && took < lookup::DEADLINE + std::time::Duration::from_secs(2),
        "{took:?}"
    );
}
