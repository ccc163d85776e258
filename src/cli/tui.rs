//! `kubestep tui [SOURCE]` (and `kubestep` alone, on the demo): the terminal UI.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use kubestep::tui::{self, TuiOptions};

#[derive(Debug, Args, Default)]
#[command(after_long_help = "\
Examples:
  kubestep tui                                   # the demo
  kubestep tui cluster.yaml --config scheduler-config.yaml
  kubestep tui cluster.yaml --compare bin-packing.yaml   # What-if tab: two configurations side by side
  kubestep tui --theme light --log-file kubestep.log

Keys: ? in the UI lists every key (searchable with /). Theme, history size and keys
can be set in $XDG_CONFIG_HOME/kubestep/config.toml.")]
pub struct TuiArgs {
    /// A recording (a file or a bundled recording's name) or a cluster manifest (YAML,
    /// JSON or a kubectl List); the demo without it.
    #[arg(value_parser = super::completion::RecordingSource, hide_possible_values = true)]
    pub source: Option<String>,
    /// KubeSchedulerConfiguration; without it, a recording header's, else the defaults.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Call the extenders the recording's header names (without it they are listed, not
    /// called: opening a file never makes kubestep call the network).
    #[arg(long)]
    pub call_extenders: bool,
    /// Theme: dark, light, high-contrast, ansi16, mono, or a theme file.
    #[arg(long, value_name = "NAME|FILE")]
    pub theme: Option<String>,
    /// Also write kubestep's log to this file.
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// A second KubeSchedulerConfiguration to compare with (What-if tab).
    #[arg(long, value_name = "FILE")]
    pub compare: Option<PathBuf>,
    #[command(flatten)]
    pub kube: super::kube::KubeArgs,
}

pub fn run(a: TuiArgs) -> anyhow::Result<ExitCode> {
    tui::run(TuiOptions {
        source: a.source.map(PathBuf::from),
        config: a.config,
        theme: a.theme,
        log_file: a.log_file,
        compare: a.compare,
        history: None,
        speed: None,
        scheduler_log: None,
        kube: a.kube.request(&super::user_defaults(false)),
        call_extenders: a.call_extenders,
    })?;
    Ok(ExitCode::SUCCESS)
}
