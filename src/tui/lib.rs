//! The terminal UI. The engine does not depend on it: it drives the Session API and
//! draws read-only views (see docs/architecture.md, "TUI").
//!
//! Shape (after television and ratatui's component template): crossterm events and a
//! tick become `Action`s, `App::update` applies them, `draw::draw` renders `&App`.

// The engine's modules, named at the root so paths read as inside the engine (its
// `config` and `live` are reached by crate name: this crate has modules of those names).
use kubestep_engine::{api, cluster, explain, framework, recording, session};

pub mod action;
pub mod app;
pub mod background;
pub mod components;
pub mod config;
pub mod draw;
pub mod keymap;
pub mod layout;
pub mod live;
pub mod logs;
mod play;
pub mod quit_keys;
pub mod step_shown;
pub mod terminal;
pub mod theme;
pub mod update;

use std::path::{Path, PathBuf};

use anyhow::Context;

#[cfg(test)]
use crate::cluster::{ClusterState, manifest};
use crate::session::{Session, SessionOptions};
use kubestep_engine::config as sched_config;
#[cfg(test)]
use kubestep_engine::config::KubeSchedulerConfiguration;

/// The UI tests' fixed scene: the example cluster, one pod for ManualApproval and the
/// demo configuration (`example_session`). The program's demo is the bundled `demo`
/// recording, opened by `open_session`.
pub const DEMO_CLUSTER: &str = include_str!("../../recordings/example-cluster.yaml");
pub const DEMO_EXTRA: &str = include_str!("demo-approval.yaml");
pub const DEMO_CONFIG: &str = include_str!("demo-config.yaml");

/// Options of `kubestep tui` (and of `kubestep replay` without `--headless`).
#[derive(Debug, Clone, Default)]
pub struct TuiOptions {
    /// A cluster manifest; `None` for the demo.
    pub source: Option<PathBuf>,
    pub config: Option<PathBuf>,
    /// `--theme NAME|FILE`.
    pub theme: Option<String>,
    pub log_file: Option<PathBuf>,
    /// A second configuration to compare against (the What-if tab).
    pub compare: Option<PathBuf>,
    /// Bytes of history (steps, attempts, and what re-runs past attempts).
    pub history: Option<usize>,
    /// `replay --speed`: the play speed to start at (the nearest of `app::SPEEDS` not
    /// above it; the slowest when below them all).
    pub speed: Option<f64>,
    /// `replay --scheduler-log`: the real scheduler's node-search counts to follow.
    pub scheduler_log: Option<kubestep_engine::session::scheduler_log::SchedulerLog>,
    /// `--kube-version` and `--feature-gates` (or config.toml's): resolved against the
    /// version the source reports.
    pub kube: kubestep_engine::features::Request,
    /// `--call-extenders`: call the extenders a recording's header names.
    pub call_extenders: bool,
}

#[cfg(test)]
fn load_config(config: Option<&Path>, demo: bool) -> anyhow::Result<KubeSchedulerConfiguration> {
    Ok(match config {
        Some(p) => sched_config::load_file(p)?,
        None if demo => sched_config::parse_str(DEMO_CONFIG, "the demo configuration")?,
        None => sched_config::default_configuration(),
    })
}

/// A source (a recording file, a bundled recording's name or a manifest; without one the
/// bundled `demo`) as the UI opens it, through `Session::open_replay`.
///
/// Also returns what reading the source said: its problems (bad lines skipped) and its
/// notes (kinds not used).
pub fn open_session(
    source: Option<&Path>,
    config: Option<&Path>,
    history_bytes: Option<usize>,
    kube: &kubestep_engine::features::Request,
    call_extenders: bool,
) -> anyhow::Result<(Session, Vec<String>, Vec<String>)> {
    let name = source
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| "demo".to_string());
    let rec = crate::recording::open(&name)?;
    let mut said = (rec.warnings.clone(), rec.notes.clone());
    said.0
        .extend(rec.withheld_extenders(call_extenders || config.is_some()));
    let opts = SessionOptions {
        history_bytes: history_bytes.unwrap_or(crate::session::DEFAULT_HISTORY_BYTES),
        ..Default::default()
    };
    let session = Session::open_replay(rec, &name, config, kube, opts, call_extenders)
        .context("starting the session")?;
    // What the version's choice and the gates said (a version out of range, a GA gate set).
    let features = &session.config().features;
    let mut warnings = said.0;
    warnings.extend(features.choice.warning.iter().cloned());
    warnings.extend(features.gates.warnings.iter().cloned());
    Ok((session, warnings, said.1))
}

/// The example cluster plus one ManualApproval pod: a small fixed scene for the UI's own
/// tests, independent of how the bundled recordings evolve.
#[cfg(test)]
pub fn example_session() -> anyhow::Result<Session> {
    let (mut objs, _) = manifest::parse_str(DEMO_CLUSTER, "demo")?;
    let (extra, _) = manifest::parse_str(DEMO_EXTRA, "demo")?;
    objs.extend(extra);
    let cluster = ClusterState::from_objects(objs)?;
    let cfg = load_config(None, true)?;
    Session::new(
        cluster,
        cfg,
        SessionOptions::default(),
        Box::new(crate::session::LocalActuator),
    )
    .context("starting the session")
}

/// Builds the app: session, config file, theme and keymap (problems there become
/// warnings shown in the UI).
pub fn build_app(opts: &TuiOptions, logs: logs::LogBuffer) -> anyhow::Result<app::App> {
    let (theme, keymap, mut warnings) = ui_setup(opts.theme.as_deref());
    // `--history`, else the config file's `history`, else the default.
    let history = opts
        .history
        .or_else(|| config::load_user(&mut Vec::new()).history);
    let (mut session, problems, mut notes) = open_session(
        opts.source.as_deref(),
        opts.config.as_deref(),
        history,
        &opts.kube,
        opts.call_extenders,
    )?;
    session.set_scheduler_log(opts.scheduler_log.clone());
    // What loading adjusted in the input (priorities from PriorityClasses, finished pods
    // skipped, kinds not used) is information, not a problem: Logs, not the ⚠ counter.
    notes.extend(session.cluster().notes.iter().cloned());
    // The version followed and why, first in the Logs pane (the header names the version).
    notes.insert(0, session.config().features.describe());
    warnings.extend(problems);
    let label = match &opts.source {
        Some(p) => p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.display().to_string()),
        None => "demo".to_string(),
    };
    let mut app = app::App::new(session, &label, theme, keymap);
    app.logs = logs;
    app.note_all(notes);
    if let Some(s) = opts.speed {
        app.speed = app::speed_index(s);
    }
    if let Some(p) = &opts.compare {
        match sched_config::load_file_for(p, &app.session.config().features) {
            Ok(c) => {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                app.tabs.whatif.alt = Some((name, c));
            }
            Err(e) => warnings.push(format!("--compare {}: {e}", p.display())),
        }
    }
    app.warn_all(warnings);
    if app.status.is_none() {
        let msg = start_status(&app);
        app.info(msg);
    }
    Ok(app)
}

/// The first status line: what the session holds and how to start, in the keys in force.
pub fn start_status(app: &app::App) -> String {
    let k = |c| app.keymap.key(c);
    format!(
        "{} pods, {} nodes · {} step · {} run · {} help",
        app.session.records().len(),
        app.session.snapshot().num_nodes(),
        k(action::Command::Step),
        k(action::Command::ContinuePause),
        k(action::Command::Help)
    )
}

/// The theme and keymap from the user's config file and `--theme`, with the warnings
/// their problems became.
pub fn ui_setup(theme_choice: Option<&str>) -> (theme::Theme, keymap::Keymap, Vec<String>) {
    let mut warnings = Vec::new();
    let ui_cfg = config::load_user(&mut warnings);
    let theme = theme::resolve(
        theme_choice,
        ui_cfg.theme.as_deref(),
        theme::ColorEnv::from_env(),
        ui_cfg.theme_dir.as_deref(),
        &mut warnings,
    );
    let keymap = ui_cfg.keymap(&mut warnings);
    (theme, keymap, warnings)
}

/// Runs the TUI until the user quits.
pub fn run(opts: TuiOptions) -> anyhow::Result<()> {
    let (logs, log_warning) = logs::install(opts.log_file.as_deref());
    let mut app = build_app(&opts, logs)?;
    if let Some(w) = log_warning {
        app.warn_all(vec![w]);
    }
    tracing::info!("kubestep TUI on {}", app.source);
    terminal::run(&mut app)
}

#[cfg(test)]
mod live_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_queue;
#[cfg(test)]
mod tests_sizes;
#[cfg(test)]
mod tests_waits;
