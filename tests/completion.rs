//! Shell completion as people use it: `kubestep completions SHELL` prints a registration
//! script that calls kubestep back at each TAB (bash runs it here for real), and kubectl
//! (1.26+) completes `kubectl kubestep ...` through `kubectl_complete-kubestep`, a link to
//! the binary. The completers themselves are tested beside them (src/cli/completion).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;

use support::apiserver::ApiServer;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_kubestep")
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

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// kubestep with an empty config directory and no kubeconfig unless `env` sets one.
fn kubestep(exe: &Path, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(exe);
    c.args(args)
        .current_dir(cwd)
        .env("XDG_CONFIG_HOME", cwd.join("no-config"))
        .env("HOME", cwd)
        .env_remove("KUBECONFIG");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("running kubestep")
}

#[test]
fn every_shell_gets_a_script_that_calls_kubestep_back() {
    let d = Dir::new("scripts");
    for (shell, marker) in [
        (
            "bash",
            "complete -o nospace -o bashdefault -o nosort -F _clap_complete_kubestep kubestep",
        ),
        ("zsh", "compdef _clap_dynamic_completer_kubestep kubestep"),
        (
            "fish",
            "complete --keep-order --exclusive --command kubestep",
        ),
        ("elvish", "set edit:completion:arg-completer[kubestep]"),
        (
            "powershell",
            "Register-ArgumentCompleter -Native -CommandName kubestep",
        ),
    ] {
        let o = kubestep(Path::new(bin()), &d.0, &["completions", shell], &[]);
        assert!(o.status.success(), "{shell}: {o:?}");
        let s = stdout(&o);
        assert!(s.contains(marker), "{shell}:\n{s}");
        // It calls this binary back, with the shell named.
        assert!(s.contains(bin()), "{shell}:\n{s}");
        assert!(s.contains("KUBESTEP_COMPLETE"), "{shell}:\n{s}");
        assert!(o.stderr.is_empty(), "{shell}: {o:?}");
    }
    let o = kubestep(Path::new(bin()), &d.0, &["completions", "tcsh"], &[]);
    assert_eq!(o.status.code(), Some(2));
    // bash reads the script without complaint.
    let o = kubestep(Path::new(bin()), &d.0, &["completions", "bash"], &[]);
    let script = d.0.join("kubestep.bash");
    std::fs::write(&script, &o.stdout).unwrap();
    let check = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(check.status.success(), "{check:?}");
}

/// Completes `words` in bash through the registration script, as bash does at a TAB (the
/// last word being the one under the cursor): the candidates, sorted.
fn bash_complete(script: &Path, cwd: &Path, words: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let shell = format!(
        "source {}\nCOMP_WORDS=({})\nCOMP_CWORD={}\n_clap_complete_kubestep kubestep \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script.display(),
        quoted.join(" "),
        words.len() - 1
    );
    let mut c = Command::new("bash");
    c.arg("-c")
        .arg(shell)
        .current_dir(cwd)
        .env("XDG_CONFIG_HOME", cwd.join("no-config"))
        .env("HOME", cwd)
        .env_remove("KUBECONFIG");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("bash runs");
    assert!(o.status.success(), "{o:?}");
    assert!(o.stderr.is_empty(), "{words:?}: {o:?}");
    let mut got: Vec<String> = stdout(&o)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    got.sort();
    got
}

#[test]
fn bash_completes_subcommands_recordings_files_and_values() {
    let d = Dir::new("bash");
    let o = kubestep(Path::new(bin()), &d.0, &["completions", "bash"], &[]);
    let script = d.0.join("kubestep.bash");
    std::fs::write(&script, &o.stdout).unwrap();
    let cwd = d.0.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(cwd.join("dev-cluster.yaml"), "").unwrap();
    std::fs::write(cwd.join("demo-copy.jsonl"), "").unwrap();
    let complete = |words: &[&str]| bash_complete(&script, &cwd, words, &[]);
    // Subcommands, never the hidden one, and no options before a `-`.
    assert_eq!(
        complete(&["kubestep", ""]),
        [
            "bench",
            "completions",
            "explain",
            "help",
            "live",
            "record",
            "recordings",
            "replay",
            "tui",
            "version"
        ]
    );
    assert!(complete(&["kubestep", "kr"]).is_empty());
    assert_eq!(complete(&["kubestep", "rec"]), ["record", "recordings"]);
    // Where a recording is taken: the bundled names and files alike.
    assert_eq!(
        complete(&["kubestep", "replay", "de"]),
        ["demo", "demo-copy.jsonl", "dev-cluster.yaml"]
    );
    assert_eq!(
        complete(&["kubestep", "replay", "dev"]),
        ["dev-cluster.yaml"]
    );
    assert_eq!(
        complete(&["kubestep", "tui", "example"]),
        ["example-cluster"]
    );
    assert_eq!(
        complete(&["kubestep", "explain", "--cluster", "d"]),
        [
            "demo",
            "demo-copy.jsonl",
            "dev-cluster.yaml",
            "divergence",
            "dra-gpus"
        ]
    );
    assert_eq!(
        complete(&["kubestep", "bench", "--recording", "lar"]),
        ["large"]
    );
    // Options once a `-` is typed; fixed values from their ValueEnum.
    assert_eq!(
        complete(&["kubestep", "replay", "--he"]),
        ["--headless", "--help"]
    );
    assert_eq!(
        complete(&["kubestep", "replay", "demo", "--trace", "s"]),
        ["steps"]
    );
    assert_eq!(
        complete(&["kubestep", "explain", "-o", ""]),
        ["json", "name", "text", "wide", "yaml"]
    );
    assert_eq!(complete(&["kubestep", "completions", "f"]), ["fish"]);
}

/// The loopback API server with two namespaces, and a kubeconfig for it.
fn cluster(d: &Path) -> (ApiServer, PathBuf) {
    let api = ApiServer::start();
    for ns in ["team", "tools"] {
        api.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
    }
    let kc = api.write_kubeconfig(d, None);
    (api, kc)
}

#[test]
fn namespaces_and_contexts_come_from_the_kubeconfig() {
    let d = Dir::new("live");
    let (api, kc) = cluster(&d.0);
    let o = kubestep(Path::new(bin()), &d.0, &["completions", "bash"], &[]);
    let script = d.0.join("kubestep.bash");
    std::fs::write(&script, &o.stdout).unwrap();
    let k = kc.to_str().unwrap();
    // KUBECONFIG, as kubectl reads it.
    let env = [("KUBECONFIG", k)];
    assert_eq!(
        bash_complete(&script, &d.0, &["kubestep", "live", "-n", ""], &env),
        ["team", "tools"]
    );
    assert_eq!(
        bash_complete(
            &script,
            &d.0,
            &["kubestep", "record", "--namespace", "to"],
            &env
        ),
        ["tools"]
    );
    assert_eq!(
        bash_complete(&script, &d.0, &["kubestep", "live", "--context", ""], &env),
        ["fake"]
    );
    // --kubeconfig on the line.
    assert_eq!(
        bash_complete(
            &script,
            &d.0,
            &["kubestep", "record", "--kubeconfig", k, "-n", "te"],
            &[]
        ),
        ["team"]
    );
    // Read-only, and metadata only.
    let lists: Vec<_> = api
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/v1/namespaces")
        .collect();
    assert_eq!(lists.len(), 3, "{lists:?}");
    assert!(
        lists
            .iter()
            .all(|r| r.method == "GET" && r.query.contains("limit=1000"))
    );
    // No kubeconfig at all, or a cluster that does not answer: nothing, silently.
    assert!(bash_complete(&script, &d.0, &["kubestep", "live", "-n", ""], &[]).is_empty());
    api.go_silent();
    let started = std::time::Instant::now();
    assert!(bash_complete(&script, &d.0, &["kubestep", "live", "-n", ""], &env).is_empty());
    assert!(started.elapsed() < std::time::Duration::from_secs(6));
}

/// kubectl runs `kubectl_complete-kubestep` (found on PATH) with the words after
/// `kubectl kubestep`, and reads Cobra's `__complete` answer: a candidate a line, then
/// `:DIRECTIVE`.
#[test]
fn kubectl_completes_through_kubectl_complete_kubestep() {
    let d = Dir::new("kubectl");
    let completer = d.0.join("kubectl_complete-kubestep");
    std::os::unix::fs::symlink(bin(), &completer).unwrap();
    std::os::unix::fs::symlink(bin(), d.0.join("kubectl-kubestep")).unwrap();
    let cwd = d.0.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let ask = |args: &[&str]| {
        let o = kubestep(&completer, &cwd, args, &[]);
        assert!(o.status.success(), "{o:?}");
        assert!(o.stderr.is_empty(), "{o:?}");
        stdout(&o)
    };
    // explain's POD: the pods of --cluster's recording, pending first; -n its namespaces.
    let out = ask(&["explain", "--cluster", "example-cluster", "-n", "ml", ""]);
    assert_eq!(
        out,
        "trainer-llm-0\tPending\nfeature-store-0\ton node ip-10-0-3-32.eu-west-1.compute.internal\n:4\n"
    );
    assert_eq!(
        ask(&["explain", "--cluster", "example-cluster", "-n", ""]),
        "ml\t2 pods, 1 pending\nshop\t6 pods, 2 pending\n:4\n"
    );
    let out = ask(&["explain", "--cluster", "example-cluster", "shop/ch"]);
    assert!(
        out.starts_with("shop/checkout-7d9f6c8b5-w8r2t\tPending\n"),
        "{out}"
    );
    let out = ask(&["explain", "--cluster", "example-cluster", "-"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.last(), Some(&":4"), "{out}");
    assert!(lines.iter().any(|l| l.starts_with("--pod\t")), "{out}");
    assert_eq!(
        ask(&["explain", "--cluster", "exa"]),
        "example-cluster\tbundled recording\n:4\n"
    );
    assert_eq!(
        ask(&["explain", "--cluster=exa"]),
        "example-cluster\tbundled recording\n:4\n"
    );
    assert_eq!(ask(&["explain", "-o", "y"]), "yaml\n:4\n");
    let top = ask(&[""]);
    assert!(top.starts_with("explain\tExplain where a pod"), "{top}");
    assert!(!top.contains("krew"), "{top}");
    // Files among the candidates: the shell may complete files too (directive 0).
    std::fs::write(cwd.join("dump.yaml"), "").unwrap();
    assert_eq!(ask(&["replay", "dum"]), "dump.yaml\n:0\n");
    // Nothing typed after `kubectl kubestep`.
    assert!(ask(&[]).ends_with(":4\n"));
    // And kubectl itself, when installed (1.26+ runs plugin completers).
    let path = format!(
        "{}:{}",
        d.0.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    match Command::new("kubectl")
        .args(["__complete", "kubestep", "explain", "--cluster", "exa"])
        .env("PATH", &path)
        .current_dir(&cwd)
        .env("XDG_CONFIG_HOME", cwd.join("no-config"))
        .output()
    {
        Ok(o) => assert_eq!(
            stdout(&o),
            "example-cluster\tbundled recording\n:4\n",
            "{o:?}"
        ),
        Err(_) => eprintln!("kubectl not installed: its plugin completion not checked"),
    }
}
