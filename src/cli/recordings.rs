//! `kubestep recordings`: the bundled recordings, with what each shows and its size.

use std::process::ExitCode;

use clap::Args;

use kubestep::recording::bundled;

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  # The bundled recordings: nodes, pods, events and what each shows
  kubestep recordings

  # Open one in the terminal UI, or replay it without a screen
  kubestep replay preemption
  kubestep replay demo --headless -o text

  # As JSON, one object per line
  kubestep recordings --json")]
pub struct RecordingsArgs {
    /// One JSON object per recording instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(a: RecordingsArgs) -> anyhow::Result<ExitCode> {
    let list = bundled::list()?;
    if a.json {
        for l in &list {
            say!("{}", serde_json::to_string(l)?)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let width = list.iter().map(|l| l.name.len()).max().unwrap_or(4).max(4);
    say!(
        "{:<width$}  {:>6}  {:>6}  {:>6}  DESCRIPTION",
        "NAME",
        "NODES",
        "PODS",
        "EVENTS"
    )?;
    for l in &list {
        say!(
            "{:<width$}  {:>6}  {:>6}  {:>6}  {}",
            l.name,
            l.counts.nodes,
            l.counts.pods,
            l.counts.events,
            l.description
        )?;
    }
    say!("\nReplay one with `kubestep replay NAME --headless`.")?;
    Ok(ExitCode::SUCCESS)
}
