//! Subcommands. Errors reach `main` as anyhow errors and exit with code 2.

/// `println!` that returns the write error instead of panicking (a closed pipe, e.g.
/// `kubestep recordings | head -1`, is then a quiet exit in `main`).
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($t)*)
    }};
}

/// `print!` without the panic, as `say!`.
macro_rules! say_raw {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($t)*)
    }};
}

mod bench;
mod explain;
mod live;
mod live_args;
mod record;
mod recordings;
mod replay;
mod trace_args;
mod tui;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "kubestep",
    version,
    about = "A step-through debugger for the Kubernetes scheduling framework"
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
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        None => tui::run(tui::TuiArgs::default()),
        Some(Command::Tui(a)) => tui::run(a),
        Some(Command::Explain(a)) => explain::run(a),
        Some(Command::Bench(a)) => bench::run(a),
        Some(Command::Replay(a)) => replay::run(a),
        Some(Command::Record(a)) => record::run(a),
        Some(Command::Live(a)) => live::run(a),
        Some(Command::Recordings(a)) => recordings::run(a),
    }
}
