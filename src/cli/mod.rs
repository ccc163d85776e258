//! Subcommands. Errors reach `main` as anyhow errors and exit with code 2.

/// `println!` that returns the write error instead of panicking (a closed pipe, e.g.
/// `kubestep recordings | head -1`, is then a quiet exit in `main`).
/// Control characters in what it prints are escaped (`redact::printable`): names come
/// from files and clusters, and must not drive the terminal.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($t)*);
        writeln!(std::io::stdout().lock(), "{}", kubestep::redact::printable(&text))
    }};
}

/// `print!` without the panic, as `say!`.
macro_rules! say_raw {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($t)*);
        write!(std::io::stdout().lock(), "{}", kubestep::redact::printable(&text))
    }};
}

/// `eprintln!` with control characters escaped, as `say!`.
macro_rules! tell {
    ($($t:tt)*) => {{
        let text = format!($($t)*);
        eprintln!("{}", kubestep::redact::printable(&text));
    }};
}

mod bench;
mod completion;
mod explain;
mod krew;
mod kube;
mod live;
mod live_args;
mod progress;
mod record;
mod recordings;
mod replay;
mod trace_args;
mod trace_show;
mod trace_text;
mod tui;
mod version;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// `--version`: kubestep's version and the kube-scheduler versions it follows.
pub fn version_text() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| format!("{}\n{}", env!("CARGO_PKG_VERSION"), kube::versions_text()))
}

/// The name kubectl finds a plugin by: `kubectl kubestep ...` runs `kubectl-kubestep`.
pub const KUBECTL_PLUGIN: &str = "kubectl-kubestep";

const EXAMPLES: &str = "\
Examples:
  # The terminal UI on the demo (n steps, c runs, ? shows every key)
  kubestep

  # Why is my pod Pending? Explain it against a cluster exported with kubectl
  kubectl get nodes,pods,namespaces,pv,pvc,storageclasses,csinodes,csidrivers,csistoragecapacities,pdb,priorityclasses,services,replicasets,statefulsets,replicationcontrollers -A -o yaml > cluster.yaml
  kubestep explain --cluster cluster.yaml --pod shop/checkout-0

  # Watch the live cluster in shadow mode (reads only; writes nothing)
  kubestep live --context staging

  # Replay a bundled recording without a screen, as YAML
  kubestep replay preemption --headless -o yaml

  # Shell completion (bash; `kubestep completions --help` for the others)
  mkdir -p ~/.local/share/bash-completion/completions
  kubestep completions bash > ~/.local/share/bash-completion/completions/kubestep

As a kubectl plugin: install (or link) the binary as `kubectl-kubestep` on your PATH and
run `kubectl kubestep ...`; link it as `kubectl_complete-kubestep` beside that too, and
kubectl (1.26+) completes `kubectl kubestep <TAB>`.

Defaults (context, history, theme) and keys: $XDG_CONFIG_HOME/kubestep/config.toml.";

#[derive(Debug, Parser)]
#[command(
    name = "kubestep",
    about = "A step-through debugger for the Kubernetes scheduling framework",
    after_long_help = EXAMPLES
)]
pub struct Cli {
    /// Without a command: the terminal UI on the demo.
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Explain where a pod would be scheduled, or why it cannot be.
    Explain(explain::ExplainArgs),
    /// Replay a recording (a file or a bundled one) or a cluster manifest through the
    /// debugger.
    Replay(replay::ReplayArgs),
    /// The terminal UI on a cluster manifest (the demo without one).
    Tui(tui::TuiArgs),
    /// Mirror a live cluster and explain (or, with --active, schedule) its pending pods.
    Live(live::LiveArgs),
    /// Record a live cluster (objects, then every change) to a file for replay.
    Record(record::RecordArgs),
    /// List the bundled recordings.
    Recordings(recordings::RecordingsArgs),
    /// Measure scheduling throughput on generated 5,000-node workloads.
    Bench(bench::BenchArgs),
    /// Print kubestep's version, the kube-scheduler versions it follows, and the
    /// server's (as kubectl version).
    Version(version::VersionArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    ///
    /// The script asks kubestep for the candidates at each TAB, so pods, namespaces and
    /// contexts come from the cluster (or --cluster's file) the command would read.
    #[command(after_long_help = "\
Examples:
  # bash (with the bash-completion package)
  mkdir -p ~/.local/share/bash-completion/completions
  kubestep completions bash > ~/.local/share/bash-completion/completions/kubestep

  # zsh (after compinit in ~/.zshrc)
  echo 'source <(kubestep completions zsh)' >> ~/.zshrc

  # fish
  mkdir -p ~/.config/fish/completions
  kubestep completions fish > ~/.config/fish/completions/kubestep.fish

  # kubectl kubestep <TAB> (kubectl 1.26+ runs kubectl_complete-kubestep from PATH;
  # ~/.local/bin on PATH)
  mkdir -p ~/.local/bin
  ln -sf \"$(command -v kubestep)\" ~/.local/bin/kubectl-kubestep
  ln -sf \"$(command -v kubestep)\" ~/.local/bin/kubectl_complete-kubestep

After upgrading kubestep, write the script again: script and binary must match.")]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// For packagers: the krew (kubectl plugin index) manifest of this version.
    #[command(hide = true)]
    KrewManifest(krew::KrewArgs),
}

/// Whether this process was started as the kubectl plugin (`kubectl kubestep`): kubectl
/// runs `kubectl-kubestep` with its path as argv[0].
pub fn invoked_as_kubectl_plugin(argv0: Option<&std::ffi::OsStr>) -> bool {
    argv0
        .and_then(|a| std::path::Path::new(a).file_stem())
        .is_some_and(|n| n == KUBECTL_PLUGIN)
}

/// A recording's problems as warnings and its notes as notes, on standard error.
pub fn say_what_reading_found(rec: &kubestep::recording::Recording) {
    for w in &rec.warnings {
        tell!("{}: warning: {w}", invoked_name());
    }
    for n in &rec.notes {
        tell!("{}: note: {n}", invoked_name());
    }
}

/// The name the user invoked kubestep by, which begins its messages on standard error
/// and its usage: `kubectl kubestep` under kubectl, so an error names the command typed.
pub fn invoked_name() -> &'static str {
    static NAME: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        if invoked_as_kubectl_plugin(std::env::args_os().next().as_deref()) {
            "kubectl kubestep"
        } else {
            "kubestep"
        }
    })
}

/// clap's command, named as the user invoked it: usage and help read `kubectl kubestep`
/// under kubectl. Arguments that take a recording complete bundled names and files.
pub fn command() -> clap::Command {
    completion::with_completers(Cli::command())
        .bin_name(invoked_name())
        .version(version_text())
}

/// When the shell or kubectl started this process to complete a command line: prints
/// the candidates and exits (before anything else is read or printed).
pub fn complete_if_asked() {
    completion::complete_if_asked(command);
}

/// Parses the command line (clap's errors, `--help` and `--version` exit here).
pub fn parse() -> Cli {
    let matches = command().get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// The config file's defaults for the command line; its warnings on standard error
/// (the terminal UI shows them itself).
pub fn user_defaults(print_warnings: bool) -> kubestep::tui::config::UiConfig {
    let mut warnings = Vec::new();
    let cfg = kubestep::tui::config::load_user(&mut warnings);
    if print_warnings {
        for w in warnings {
            tell!("{}: warning: {w}", invoked_name());
        }
    }
    cfg
}

/// Leaves a command's cluster (or session) to the operating system: the process is
/// about to end, and freeing 150,000 pods one allocation at a time took 1.5 s of a
/// 6 s `explain`. Only for values that own nothing to flush or remove (memory only).
pub fn exit_without_freeing<T>(value: T) {
    std::mem::forget(value);
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Some(Command::Completions { shell }) => {
            // `kubectl kubestep completions` completes `kubectl-kubestep` run directly
            // (kubectl itself runs kubectl_complete-kubestep).
            let bin = invoked_name().replace(' ', "-");
            say_raw!("{}", completion::registration(shell, &bin)?)?;
            Ok(ExitCode::SUCCESS)
        }
        None => tui::run(tui::TuiArgs::default()),
        Some(Command::Tui(a)) => tui::run(a),
        Some(Command::Explain(a)) => explain::run(a),
        Some(Command::Bench(a)) => bench::run(a),
        Some(Command::Replay(a)) => replay::run(a),
        Some(Command::Record(a)) => record::run(a),
        Some(Command::Live(a)) => live::run(a),
        Some(Command::Recordings(a)) => recordings::run(a),
        Some(Command::KrewManifest(a)) => krew::run(a),
        Some(Command::Version(a)) => version::run(a),
    }
}
