//! `kubestep live --headless`: mirrors a live cluster into a Session and schedules its
//! pending pods as changes arrive — in shadow mode (default) only to explain them, with
//! `--active` for real. Prints the trace and, at the end, replay's summary.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use jiff::Timestamp;

use kubestep::config::{self, KubeSchedulerConfiguration};
use kubestep::framework::Detail;
use kubestep::live::actuator::{ApiActuator, ShadowActuator};
use kubestep::live::mirror::{self, Mirror};
use kubestep::live::{Update, WatchOptions, Watchers};
use kubestep::session::script::{self, Command};
use kubestep::session::{Actuator, SessionOptions, clock, trace};

use super::live_args::ClusterArgs;
use super::replay::{Output, Printer, read_script, script_name};

#[derive(Debug, Args)]
pub struct LiveArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Run without the terminal UI.
    #[arg(long)]
    headless: bool,
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Commands to run, one per line ("-" reads standard input), once the cluster is
    /// mirrored; afterwards kubestep keeps scheduling as changes arrive.
    #[arg(long, value_name = "FILE|-")]
    script: Option<String>,
    /// Stop after this much wall time; without it, run until Ctrl-C or `quit`.
    #[arg(long, value_name = "D")]
    duration: Option<String>,
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Jsonl)]
    output: Output,
    /// Act as the scheduler (bind, events, status, preemption) for --scheduler-name.
    #[arg(long, requires = "scheduler_name")]
    active: bool,
    /// The schedulerName kubestep serves; the configuration's profile of that name (or
    /// its only profile, renamed) is used.
    #[arg(long, value_name = "NAME")]
    scheduler_name: Option<String>,
    /// Steps kept in history.
    #[arg(long, default_value_t = 100_000)]
    history: usize,
}

pub fn run(a: LiveArgs) -> anyhow::Result<ExitCode> {
    if !a.headless {
        bail!("the terminal UI is not available yet; use --headless");
    }
    let duration = a
        .duration
        .as_deref()
        .map(clock::parse_duration)
        .transpose()
        .map_err(anyhow::Error::msg)
        .context("--duration")?;
    let mut cfg = match &a.config {
        Some(p) => config::load_file(p)?,
        None => config::default_configuration(),
    };
    if let Some(name) = &a.scheduler_name {
        serve_scheduler_name(&mut cfg, name)?;
    }
    let commands = match &a.script {
        Some(s) => script::parse_script(&read_script(s)?)
            .map_err(|e| anyhow::anyhow!("{}: {e}", script_name(s)))?,
        None => Vec::new(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    rt.spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            s.store(true, Ordering::SeqCst);
        }
    });
    let deadline = duration.map(|d| Instant::now() + d);

    let mut conn = rt.block_on(kubestep::live::connect(&a.cluster.connect_options()))?;
    let version = rt.block_on(conn.check_version())?;
    eprintln!("connected to {} (Kubernetes {version})", conn.server());
    let watch_opts = WatchOptions {
        namespace: a.cluster.namespace()?,
    };
    let mut watchers = rt.block_on(Watchers::start(&conn, &watch_opts))?;
    let sync = rt.block_on(mirror::initial_sync(&mut watchers, status_line))?;
    eprintln!("mirrored {} objects", sync.objects.len());
    for n in &sync.notes {
        eprintln!("{n}");
    }
    let actuator: Box<dyn Actuator> = match (&a.scheduler_name, a.active) {
        (Some(name), true) => Box::new(ApiActuator::new(
            conn.client.clone(),
            rt.handle().clone(),
            name,
        )),
        _ => Box::new(ShadowActuator),
    };
    let opts = SessionOptions {
        detail: Detail::Full,
        history_steps: a.history,
        start: Timestamp::now(),
        ..Default::default()
    };
    let mut m = Mirror::new(sync, cfg, opts, actuator, !a.active)?;
    let mut out = Printer {
        mode: a.output,
        stdout: std::io::stdout().lock(),
    };
    let mut script = commands.into_iter();
    let mut in_script = a.script.is_some();
    loop {
        while let Some(u) = watchers.try_next() {
            handle(&mut m, u)?;
        }
        if stop.load(Ordering::SeqCst) || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if in_script {
            match script.next() {
                Some((line, cmd)) => {
                    m.set_clock(Timestamp::now());
                    let ran = m.session.run_command(&cmd).map_err(|e| {
                        let _ = out.print(&trace::error(line, &e));
                        anyhow::anyhow!(
                            "{}: line {line}: {e}",
                            script_name(a.script.as_deref().unwrap_or("-"))
                        )
                    })?;
                    for v in &ran.output {
                        out.print(v)?;
                    }
                    if ran.quit || cmd == Command::Quit {
                        break;
                    }
                    continue;
                }
                None => in_script = false,
            }
        }
        for v in m.tick(Timestamp::now()) {
            out.print(&v)?;
        }
        out.stdout.flush()?;
        // Sleep until a change arrives, a timer is due, or the run ends.
        let mut wait = Duration::from_millis(200);
        if let Some(t) = m.session.next_timer() {
            let until = t.duration_since(Timestamp::now()).unsigned_abs();
            wait = wait.min(until);
        }
        if let Some(d) = deadline {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        let next = rt.block_on(async { tokio::time::timeout(wait, watchers.next()).await });
        if let Ok(Some(u)) = next {
            handle(&mut m, u)?;
        }
    }
    drop(watchers);
    for n in &m.notes {
        eprintln!("{n}");
    }
    out.print(&m.summary())?;
    Ok(ExitCode::SUCCESS)
}

fn handle(m: &mut Mirror, u: Update) -> anyhow::Result<()> {
    match u {
        Update::Change(c) => m.apply(&c),
        Update::Fatal(e) => return Err(e.into()),
        other => status_line(&other),
    }
    Ok(())
}

/// Sync progress and reconnects, on standard error.
fn status_line(u: &Update) {
    match u {
        Update::Synced { kind, objects } => eprintln!("listed {kind}: {objects} objects"),
        Update::Resynced {
            kind,
            added,
            modified,
            deleted,
        } => eprintln!(
            "{kind}: re-listed ({added} added, {modified} modified, {deleted} deleted while away)"
        ),
        Update::Reconnecting { kind, error } => {
            eprintln!("{kind}: reconnecting after error: {error}")
        }
        Update::Change(_) | Update::Fatal(_) => {}
    }
}

/// Makes the configuration schedule pods of `name`: its profile of that name, or its only
/// profile renamed.
fn serve_scheduler_name(cfg: &mut KubeSchedulerConfiguration, name: &str) -> anyhow::Result<()> {
    if cfg.profile(name).is_some() {
        cfg.profiles.retain(|p| p.scheduler_name == name);
        return Ok(());
    }
    match cfg.profiles.as_mut_slice() {
        [only] => {
            only.scheduler_name = name.to_string();
            Ok(())
        }
        _ => bail!(
            "--scheduler-name {name}: the configuration has no profile of that name (profiles: {})",
            cfg.profiles
                .iter()
                .map(|p| p.scheduler_name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
