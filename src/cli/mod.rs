//! Subcommands. Errors reach `main` as anyhow errors and exit with code 2.

mod bench;
mod explain;
mod recordings;
mod replay;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "kubestep",
    version,
    about = "A step-through debugger for the Kubernetes scheduling framework"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Explain where a pod would be scheduled, or why it cannot be.
    Explain(explain::ExplainArgs),
    /// Replay a recording (a file or a bundled one) or a cluster manifest through the
    /// debugger.
    Replay(replay::ReplayArgs),
    /// List the bundled recordings.
    Recordings(recordings::RecordingsArgs),
    /// Measure scheduling throughput on generated 5,000-node workloads.
    Bench(bench::BenchArgs),
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Explain(a) => explain::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Replay(a) => replay::run(a),
        Command::Recordings(a) => recordings::run(a),
    }
}
