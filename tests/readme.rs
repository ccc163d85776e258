//! Every shell command in README.md's ```sh blocks, run as it is written there (through
//! `sh -c`, in an empty directory, with the built binary first on PATH as `kubestep`), so
//! the README cannot drift from the program. A command that cannot run here (a live
//! cluster, the user's home, the terminal UI) must be named in `NOT_RUN` with the reason;
//! any other command fails this test.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Commands not run here, by how they begin, and why.
const NOT_RUN: &[(&str, &str)] = &[
    ("kubectl ", "needs a live cluster"),
    (
        "kubestep live",
        "needs a live cluster (tests/live.rs runs it against a fake API server)",
    ),
    (
        "kubestep record ",
        "needs a live cluster (tests/record.rs runs it against a fake API server)",
    ),
    (
        "cargo test --release",
        "the test suite this test is part of; .ci/run runs exactly this line",
    ),
    (
        "cargo install --path . --locked --profile dist",
        "writes to ~/.cargo/bin, after minutes of whole-program optimization (.ci/run installs the release profile)",
    ),
    (
        "cargo install ",
        "writes to ~/.cargo/bin; .ci/run installs into a temporary root and runs the binary",
    ),
    ("tar ", "packs the binary installed in the user's home"),
    (
        "kubestep explain -n ",
        "reads the current kubeconfig context's cluster (tests/cli_explain_live.rs runs it against a fake API server)",
    ),
    (
        "kubestep explain --pending -A",
        "reads the current kubeconfig context's cluster (tests/cli_explain_live.rs runs it against a fake API server)",
    ),
];

/// Commands that install into the home directory, by how they begin: they run here, in
/// the throwaway home this test gives them (as on a fresh account: nothing there yet).
const INSTALL: &[&str] = &["mkdir -p ~/", "ln -sf \"$(command -v kubestep)\" ~/"];

/// The commands that open the terminal UI: it needs a terminal, and tests/tui_tmux.rs
/// drives it in tmux.
const TUI: &str = "opens the terminal UI; tests/tui_tmux.rs runs it";

/// Files the commands in `NOT_RUN` write that later commands read, stood in for here by
/// what they would hold: (file, content, why that content).
fn stand_ins() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let example = std::fs::read(root().join("recordings/example-cluster.yaml")).unwrap();
    vec![
        (
            "cluster.yaml",
            example,
            "a cluster as `kubectl get ... -o yaml` writes it: the example cluster",
        ),
        (
            "dra.yaml",
            DRA.as_bytes().to_vec(),
            "the DRA objects `kubectl get deviceclasses,...` writes: one DeviceClass",
        ),
        (
            "kubestep-linux-amd64.tar.gz",
            b"an archive's bytes".to_vec(),
            "any bytes have a checksum",
        ),
    ]
}

const DRA: &str = "apiVersion: v1
kind: List
items:
- apiVersion: resource.k8s.io/v1
  kind: DeviceClass
  metadata:
    name: gpu.example.com
  spec:
    selectors:
    - cel:
        expression: device.driver == \"gpu.example.com\"
";

/// What a command run must give, besides exit code 0: (command as written, exit code, a
/// fragment of its standard output).
const EXPECT: &[(&str, i32, &str)] = &[
    (
        "kubestep recordings",
        0,
        "example-cluster              6       8",
    ),
    (
        "kubestep explain --cluster example-cluster -n ml trainer-llm-0",
        1,
        "ml/trainer-llm-0: unschedulable: 0/6 nodes are available",
    ),
    (
        "kubestep replay demo --headless -o text",
        0,
        "ml/llm-finetune-worker-0",
    ),
    (
        "kubestep explain --cluster cluster.yaml --pending",
        1,
        "shop        checkout-7d9f6c8b5-w8r2t         Schedulable",
    ),
    (
        "kubestep explain --cluster cluster.yaml --cluster dra.yaml --pending",
        1,
        "3 pending pod(s)",
    ),
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).unwrap()
}

/// One command of a ```sh block: its text (continuation lines joined), the README line
/// it starts on, and the `## ` section it is in.
#[derive(Debug)]
struct Cmd {
    text: String,
    line: usize,
    section: String,
}

fn sh_commands(text: &str) -> Vec<Cmd> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut in_sh = false;
    let mut pending: Option<Cmd> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if !in_sh {
            if let Some(h) = line.strip_prefix("## ") {
                section = h.to_string();
            }
            in_sh = trimmed == "```sh";
            continue;
        }
        if trimmed == "```" {
            in_sh = false;
            continue;
        }
        if let Some(mut cmd) = pending.take() {
            cmd.text.push(' ');
            cmd.text.push_str(trimmed.trim_end_matches('\\').trim());
            if trimmed.ends_with('\\') {
                pending = Some(cmd);
            } else {
                out.push(cmd);
            }
            continue;
        }
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let cmd = Cmd {
            text: trimmed.trim_end_matches('\\').trim().to_string(),
            line: i + 1,
            section: section.clone(),
        };
        if trimmed.ends_with('\\') {
            pending = Some(cmd);
        } else {
            out.push(cmd);
        }
    }
    out
}

/// The command without a trailing `# comment`.
fn without_comment(cmd: &str) -> &str {
    match cmd.find("  #").or_else(|| cmd.find(" # ")) {
        Some(i) => cmd[..i].trim_end(),
        None => cmd,
    }
}

enum Plan {
    Run(String),
    Skip(&'static str),
}

/// What to do with a README command; `Err` for one this test does not know.
fn plan(cmd: &str) -> Result<Plan, String> {
    let cmd = without_comment(cmd);
    // `cargo run --release [-- ARGS]` is `kubestep [ARGS]` built first.
    let cmd = match cmd.strip_prefix("cargo run --release") {
        Some("") => "kubestep".to_string(),
        Some(rest) => match rest.strip_prefix(" -- ") {
            Some(args) => format!("kubestep {args}"),
            None => return Err(format!("{cmd}: cargo options this test does not know")),
        },
        None => cmd.to_string(),
    };
    if let Some((_, why)) = NOT_RUN.iter().find(|(p, _)| cmd.starts_with(p)) {
        return Ok(Plan::Skip(why));
    }
    if INSTALL.iter().any(|p| cmd.starts_with(p)) {
        return Ok(Plan::Run(cmd));
    }
    let words: Vec<&str> = cmd.split_whitespace().collect();
    match words.as_slice() {
        ["kubestep"] | ["kubestep", "tui", ..] => Ok(Plan::Skip(TUI)),
        ["kubestep", "replay", ..] if !words.contains(&"--headless") => Ok(Plan::Skip(TUI)),
        ["kubestep", ..] => Ok(Plan::Run(cmd)),
        _ => Err(format!(
            "{cmd}: neither a kubestep command nor in NOT_RUN (add it there with the reason it cannot run here)"
        )),
    }
}

/// A directory under the system's temporary one, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("kubestep-readme-{tag}-{}", std::process::id()));
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
fn every_readme_command_runs_as_written() {
    let text = readme();
    let cmds = sh_commands(&text);
    assert!(
        cmds.len() >= 10,
        "only {} commands found: {cmds:?}",
        cmds.len()
    );
    let home = Dir::new("home");
    let bin = home.0.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kubestep"), bin.join("kubestep")).unwrap();
    let work = home.0.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let skipped: Vec<&Cmd> = cmds
        .iter()
        .filter(|c| matches!(plan(&c.text), Ok(Plan::Skip(_))))
        .collect();
    for (file, content, why) in stand_ins() {
        // A stand-in for a file no skipped command writes would hide a change.
        assert!(
            skipped
                .iter()
                .any(|c| c.text.contains(&format!("> {file}"))
                    || c.text.contains(&format!(" {file} "))),
            "{file} ({why}) is written by no command this test skips"
        );
        std::fs::write(work.join(file), content).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut failures = Vec::new();
    let mut ran = Vec::new();
    for c in &cmds {
        let run = match plan(&c.text) {
            Err(e) => {
                failures.push(format!("README.md:{}: {e}", c.line));
                continue;
            }
            Ok(Plan::Skip(why)) => {
                eprintln!("README.md:{}: not run ({why}): {}", c.line, c.text);
                continue;
            }
            Ok(Plan::Run(cmd)) => cmd,
        };
        let o = Command::new("sh")
            .arg("-c")
            .arg(&run)
            .current_dir(&work)
            .env("PATH", &path)
            .env("HOME", &home.0)
            .env("XDG_CONFIG_HOME", home.0.join("config"))
            .stdin(Stdio::null())
            .output()
            .expect("sh runs");
        let (code, fragment) = EXPECT
            .iter()
            .find(|(e, _, _)| *e == run)
            .map_or((0, ""), |(_, code, f)| (*code, *f));
        let out = String::from_utf8_lossy(&o.stdout);
        if o.status.code() != Some(code) || !out.contains(fragment) {
            failures.push(format!(
                "README.md:{}: `{run}` exited {:?} (expected {code}){}\nstderr: {}",
                c.line,
                o.status.code(),
                if out.contains(fragment) {
                    String::new()
                } else {
                    format!(", its output lacks {fragment:?}:\n{out}")
                },
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        ran.push(run);
    }
    // The install commands did what they say, in a home that had none of it.
    let completer = home.0.join(".local/bin/kubectl_complete-kubestep");
    let script = home
        .0
        .join(".local/share/bash-completion/completions/kubestep");
    for what in ["kubectl_complete-kubestep", "completions bash >"] {
        assert!(
            ran.iter().any(|r| r.contains(what)),
            "the README's install commands no longer run `{what}`: {ran:?}"
        );
    }
    {
        let o = Command::new(&completer)
            .args(["explain", "--cluster", "exa"])
            .current_dir(&work)
            .output()
            .expect("the completer runs");
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "example-cluster\tbundled recording\n:4\n"
        );
    }
    {
        let text = std::fs::read_to_string(&script).unwrap();
        assert!(text.contains("_clap_complete_kubestep"), "{text}");
    }
    for (cmd, _, _) in EXPECT {
        assert!(
            ran.iter().any(|r| r == cmd),
            "EXPECT names `{cmd}`, which the README no longer runs"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// "Two commands" lists exactly two: one on the demo, one running the tests, and CI runs
/// that same test command.
#[test]
fn two_commands_are_two_and_ci_runs_the_test_one() {
    let text = readme();
    let two: Vec<String> = sh_commands(&text)
        .into_iter()
        .filter(|c| c.section == "Two commands")
        .map(|c| c.text)
        .collect();
    assert_eq!(two, ["cargo run --release", "cargo test --release"]);
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == "cargo test --release"),
        ".ci/run does not run `cargo test --release`:\n{ci}"
    );
}

/// The README's export command is the one `kubestep explain --help` gives, and the
/// explain synopsis offers every output format.
#[test]
fn the_export_command_and_synopsis_match_the_help() {
    let text = readme();
    let o = Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args(["explain", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    let exports: Vec<&str> = help
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("kubectl get ") && l.contains("-o yaml >"))
        .collect();
    assert_eq!(exports.len(), 2, "{help}");
    let commands: Vec<String> = sh_commands(&text).into_iter().map(|c| c.text).collect();
    for e in exports {
        assert!(e.contains(" -A "), "{e}");
        assert!(
            commands.iter().any(|c| without_comment(c) == e),
            "README lacks `{e}` (from explain --help)"
        );
    }
    let synopsis: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("kubestep explain ") && l.contains(" [-"))
        .collect();
    assert_eq!(synopsis.len(), 3, "{synopsis:?}");
    assert!(
        synopsis[..2]
            .iter()
            .all(|l| l.contains("[-o text|wide|json|yaml|name]"))
    );
    assert!(synopsis[2].starts_with("kubestep explain --cluster FILE|RECORDING"));
}

#[test]
fn commands_are_classified_and_unknown_ones_refused() {
    let run = |c: &str| match plan(c) {
        Ok(Plan::Run(r)) => r,
        _ => panic!("{c} should run"),
    };
    assert_eq!(
        run("cargo run --release -- recordings"),
        "kubestep recordings"
    );
    assert_eq!(
        run("kubestep replay demo --headless -o text   # a comment"),
        "kubestep replay demo --headless -o text"
    );
    for (c, why) in [
        ("cargo run --release", TUI),
        ("kubestep tui cluster.yaml", TUI),
        ("kubestep replay demo", TUI),
        ("kubestep live --context x", NOT_RUN[1].1),
        ("cargo install --path . --locked", NOT_RUN[5].1),
    ] {
        assert!(matches!(plan(c), Ok(Plan::Skip(w)) if w == why), "{c}");
    }
    assert!(matches!(plan("kubestep recordings"), Ok(Plan::Run(_))));
    assert!(matches!(plan("mkdir -p ~/.local/bin"), Ok(Plan::Run(_))));
    assert!(plan("mkdir -p /usr/local/bin").is_err());
    assert!(plan("rm -rf /tmp/x").is_err());
    assert!(plan("cargo build --release").is_err());
    assert_eq!(
        sh_commands("## A\n```sh\n# c\nkubestep a \\\n  --b\n```\n```\nkubestep no\n```\n")
            .iter()
            .map(|c| (c.text.as_str(), c.line, c.section.as_str()))
            .collect::<Vec<_>>(),
        [("kubestep a --b", 4, "A")]
    );
}
