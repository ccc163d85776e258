//! `kubestep live`: mirrors a live cluster into a Session and schedules its pending pods
//! as changes arrive — in shadow mode (default) only to explain them, with `--active`
//! for real — in the terminal UI, or with `--headless` printing the trace and, at the end,
//! replay's summary. `--record` also writes what is seen as a recording.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use jiff::Timestamp;
use serde_json::Value;

use kubestep::config::{self, KubeSchedulerConfiguration};
use kubestep::features::{Choice, Features, Source};
use kubestep::live::access;
use kubestep::live::actuator::{
    ApiActuator, SHUTDOWN_DEADLINE, ShadowActuator, WriteBounds, WriteErrors,
};
use kubestep::live::mirror::{self, Mirror, SHUTDOWN_MESSAGE, Said, SummaryHead};
use kubestep::live::recorder::Tape;
use kubestep::live::{LiveError, Update, WatchOptions, Watchers};
use kubestep::session::script::{self, Command};
use kubestep::session::{Actuator, Session, SessionOptions, clock, trace};
use kubestep::signals::Stop;
use kubestep::tui;
use kubestep::tui::live::{LiveLink, LiveUiOptions};

use super::live_args::ClusterArgs;
use super::replay::{Output, Printer, read_script, script_name};
use super::trace_text;

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  kubestep live                                   # shadow mode on the current context: reads only
  kubestep live --context staging -n shop         # one namespace's pods (nodes are always watched)
  kubestep live --headless --duration 10m -o yaml # the trace as YAML documents, then the summary
  kubestep live --record seen.jsonl.gz            # also record what is seen, for `kubestep replay`
  kubestep live --active --scheduler-name kubestep  # really schedule pods with schedulerName kubestep

Shadow mode (the default) writes nothing: pods are evaluated, not bound; Permit waits are
simulated. RBAC: get/list/watch on the kinds kubestep reads; --active also needs
create on pods/binding and events, patch on pods/status, delete on pods (victims).

Stopping (Ctrl-C, SIGTERM, --duration, quit): --active rejects the pods waiting at Permit;
those writes (events, status patches) get 5 seconds in all, and another signal ends them
at once; standard error says which were not made. A signal interrupts a write under way.")]
pub struct LiveArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Run without the terminal UI.
    #[arg(long)]
    headless: bool,
    /// KubeSchedulerConfiguration; the version's defaults without it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    kube: super::kube::KubeArgs,
    /// Commands to run, one per line ("-" reads standard input), once the cluster is
    /// mirrored; afterwards kubestep keeps scheduling as changes arrive.
    #[arg(long, value_name = "FILE|-", value_hint = clap::ValueHint::FilePath, requires = "headless")]
    script: Option<String>,
    /// Also write everything seen (the first lists, then every change) as a recording;
    /// gzip-compressed when FILE ends in .gz.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// The terminal UI's theme: dark, light, high-contrast, ansi16, mono, or a file.
    #[arg(long, value_name = "NAME|FILE")]
    theme: Option<String>,
    /// Also write kubestep's log to this file (terminal UI).
    #[arg(long, value_name = "FILE")]
    log_file: Option<PathBuf>,
    /// Stop after this much wall time; without it, run until Ctrl-C or `quit` (in the
    /// terminal UI, until q).
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
    /// Memory for history: the steps and attempts kept, and what re-runs a past attempt
    /// when you look at it (default 32MiB; 0 keeps none).
    #[arg(long, value_name = "SIZE", value_parser = super::trace_args::parse_size)]
    history: Option<usize>,
    /// What the headless run prints: a line per attempt, also per step, or also each
    /// attempt's verdict matrix, scores and CycleState.
    #[arg(long, value_enum, default_value_t = super::trace_args::TraceArg::Attempts)]
    trace: super::trace_args::TraceArg,
}

// The help says "5 seconds".
const _: () = assert!(SHUTDOWN_DEADLINE.as_secs() == 5);

pub fn run(mut a: LiveArgs) -> anyhow::Result<ExitCode> {
    // The config file's context and history when the flags are not given (the terminal
    // UI shows the file's warnings itself).
    let defaults = super::user_defaults(a.headless);
    if a.cluster.context.is_none() {
        a.cluster.context = defaults.context.clone();
    }
    let duration = a
        .duration
        .as_deref()
        .map(clock::parse_duration)
        .transpose()
        .map_err(anyhow::Error::msg)
        .context("--duration")?;
    let commands = match &a.script {
        Some(s) => script::parse_script(&read_script(s)?)
            .map_err(|e| anyhow::anyhow!("{}: {e}", script_name(s)))?,
        None => Vec::new(),
    };
    // The TUI's log pane hears kube-rs and kubestep from the start (connecting, syncing).
    let logs = (!a.headless).then(|| {
        let (buffer, warning) = tui::logs::install(a.log_file.as_deref());
        if let Some(w) = warning {
            tell!("{w}");
        }
        buffer
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let deadline = duration.map(|d| Instant::now() + d);
    // SIGINT, SIGTERM, SIGHUP and SIGQUIT end every phase as `quit` (or q) does.
    let signals = Stop::on_signals();
    // Until the terminal UI has the keyboard, q is read here and ends the phase too.
    let keys = Stop::new();
    let quit_keys = if a.headless {
        None
    } else {
        tui::quit_keys::QuitKeys::start(keys.clone())
    };
    let mode = if a.active {
        access::Mode::Active
    } else {
        access::Mode::Shadow
    };
    let namespace = a.cluster.namespace()?;
    let role = |e: &LiveError| {
        if e.needs_rbac() {
            tell!("{}", access::role_yaml(mode, namespace.as_deref()));
        }
    };
    let phase = Phase {
        rt: &rt,
        signals: &signals,
        keys: &keys,
        deadline,
    };

    let mut conn = rt.block_on(kubestep::live::connect(&a.cluster.connect_options()))?;
    let server = conn.server().to_string();
    if quit_keys.is_some() {
        tell!("connecting to {server} (q quits)");
    }
    let version = phase.bounded(
        kubestep::live::watch::check_version(&mut conn, |m| tell!("{m}")),
        &format!("waiting for {server} to answer"),
    )?;
    // The server's version chooses the semantics unless the user did.
    let reported = Choice::reported(&version, Source::Server);
    let features = a.kube.resolve(&defaults, reported)?;
    tell!(
        "connected to {server} (Kubernetes {version}): {}",
        features.describe()
    );
    let cfg = live_config(&a, &features)?;
    if a.active {
        phase.ask_writes(&conn, namespace.as_deref(), &role)?;
    }
    let tape = match &a.record {
        Some(p) => Some(Tape::create(
            p,
            &conn,
            namespace.clone(),
            Some(cfg.to_json()),
        )?),
        None => None,
    };
    let watch_opts = WatchOptions {
        namespace: namespace.clone(),
    };
    let mut watchers = phase.bounded(
        Watchers::start(&conn, &watch_opts, |m| tell!("{m}")),
        &format!("asking {server} for its API groups"),
    )?;
    let mut mirror = Mirror::new(!a.active, tape);
    let sync = rt.block_on(mirror.initial_sync(&mut watchers, phase.ended(), status_line));
    let sync = match sync {
        Ok(s) => s,
        Err(e) => {
            role(&e);
            return Err(phase.sync_failed(e, &mut mirror));
        }
    };
    tell!("mirrored {} objects", sync.objects.len());
    let write_errors = WriteErrors::default();
    let bounds = WriteBounds::new(signals.clone());
    let actuator = actuator(&a, &conn, &rt, &write_errors, &bounds);
    let opts = SessionOptions {
        history_bytes: a
            .history
            .or(defaults.history)
            .unwrap_or(kubestep::session::DEFAULT_HISTORY_BYTES),
        start: Timestamp::now(),
    };
    let mut session = mirror.start(sync, cfg, opts, actuator)?;
    session.trace_level = a.trace.into();
    // The terminal UI takes the keyboard from here; a q pressed just now still counts.
    drop(quit_keys);
    if keys.is_stopped() {
        return Err(LiveError::Stopped("q pressed before the terminal UI started".into()).into());
    }
    if let Some(logs) = logs {
        let mut link = LiveLink::new(mirror, Box::new(watchers), conn.server());
        link.scheduler_name = a.scheduler_name.clone().filter(|_| a.active);
        link.deadline = deadline;
        link.write_errors = write_errors;
        link.stop = Some(signals);
        link.bounds = bounds;
        let ui = LiveUiOptions {
            theme: a.theme.clone(),
            log_file: a.log_file.clone(),
        };
        tui::live::run(session, link, &ui, logs)?;
        return Ok(ExitCode::SUCCESS);
    }
    for n in mirror.notes.drain(..) {
        tell!("{n}");
    }
    let run = Headless {
        rt: &rt,
        watchers,
        mirror,
        session,
        write_errors,
        bounds,
        signals,
        out: Printer {
            mode: a.output,
            stdout: std::io::stdout().lock(),
            timings: true,
        },
    };
    run.run(commands, a.script.as_deref(), deadline)
}

/// `kubestep live --headless`: the script, then scheduling as changes arrive, until the
/// script's `quit`, Ctrl-C or `--duration`.
struct Headless<'a> {
    rt: &'a tokio::runtime::Runtime,
    watchers: Watchers,
    mirror: Mirror,
    session: Session,
    write_errors: WriteErrors,
    bounds: WriteBounds,
    signals: Stop,
    out: Printer<std::io::StdoutLock<'static>>,
}

impl Headless<'_> {
    fn run(
        mut self,
        commands: Vec<(usize, Command)>,
        script: Option<&str>,
        deadline: Option<Instant>,
    ) -> anyhow::Result<ExitCode> {
        let mut commands = commands.into_iter();
        let mut in_script = script.is_some();
        loop {
            while let Some(u) = self.watchers.try_next() {
                self.handle(u)?;
            }
            self.report_write_errors();
            if self.signals.is_stopped() || deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            if in_script {
                match commands.next() {
                    Some((line, cmd)) => {
                        mirror::set_clock(&mut self.session, Timestamp::now());
                        let mut failed = None;
                        let out = &mut self.out;
                        let ran =
                            self.session
                                .run_command_into(&cmd, &mut |v| match out.print(&v) {
                                    Ok(()) => std::ops::ControlFlow::Continue(()),
                                    Err(e) => {
                                        failed = Some(e);
                                        std::ops::ControlFlow::Break(())
                                    }
                                });
                        if let Some(e) = failed {
                            return Err(e);
                        }
                        let quit = ran.map_err(|e| {
                            let _ = self.out.print(&trace::error(line, &e.to_string()));
                            anyhow::anyhow!(
                                "{}: line {line}: {e}",
                                script_name(script.unwrap_or("-"))
                            )
                        })?;
                        if quit || cmd == Command::Quit {
                            break;
                        }
                        continue;
                    }
                    None => in_script = false,
                }
            }
            let out = &mut self.out;
            self.mirror
                .tick(&mut self.session, Timestamp::now(), |trace| {
                    if trace.is_empty() {
                        return Ok(());
                    }
                    for v in &trace {
                        out.print(v)?;
                    }
                    out.stdout.flush().map_err(anyhow::Error::from)
                })?;
            self.out.stdout.flush()?;
            // Sleep until a change arrives, a timer is due, or the run ends.
            let mut wait = Duration::from_millis(200);
            if let Some(t) = self.session.next_timer() {
                let until = t.duration_since(Timestamp::now()).unsigned_abs();
                wait = wait.min(until);
            }
            if let Some(d) = deadline {
                wait = wait.min(d.saturating_duration_since(Instant::now()));
            }
            let next = self
                .rt
                .block_on(async { tokio::time::timeout(wait, self.watchers.next()).await });
            if let Ok(Some(u)) = next {
                self.handle(u)?;
            }
        }
        self.shut_down()?;
        // JSON lines and text stream the summary (one entry per pod of the cluster in
        // shadow mode) rather than build it as one tree.
        let streamed = match self.out.mode {
            Output::Jsonl => self
                .mirror
                .write_summary(&self.session, &mut self.out.stdout)?,
            Output::Text => self.write_text_summary()?,
            Output::Yaml => false,
        };
        if !streamed {
            self.out.print(&self.mirror.summary(&self.session))?;
        }
        Ok(ExitCode::SUCCESS)
    }

    /// The shadow-mode summary as `-o text` prints it: the entries that are listed (all
    /// but Bound ones when those are many) gathered, then written.
    fn write_text_summary(&mut self) -> std::io::Result<bool> {
        type Gathered = (Option<SummaryHead>, Vec<Value>);
        let mut g: Gathered = (None, Vec::new());
        let shadow = self.mirror.each_summary_entry(
            &self.session,
            |g: &mut Gathered, head| {
                g.0 = Some(head);
                Ok(())
            },
            |g, _, entry| {
                let bound = g.0.as_ref().map_or(0, |h| h.bound);
                if trace_text::lists_entry(&entry, bound) {
                    g.1.push(entry);
                }
                Ok(())
            },
            &mut g,
        )?;
        let (Some(head), true) = (g.0, shadow) else {
            return Ok(false);
        };
        trace_text::write_summary(
            &mut self.out.stdout,
            &head.divergences,
            (head.bound, head.not_attempted),
            g.1.into_iter(),
        )?;
        Ok(true)
    }

    /// Writes that failed (active mode), on standard error as they happen.
    fn report_write_errors(&self) {
        for e in self.write_errors.take() {
            tell!("write failed: {e}");
        }
    }

    fn handle(&mut self, u: Update) -> anyhow::Result<()> {
        match self.mirror.update(&mut self.session, u) {
            Some(Said::Denied(e)) => return Err(e.into()),
            Some(Said::Info(t) | Said::Problem(t)) => tell!("{t}"),
            None => {}
        }
        Ok(())
    }

    /// Active mode rejects the pods waiting at Permit (nothing stays reserved), its writes
    /// bounded by `SHUTDOWN_DEADLINE` altogether and by a further signal; changes already
    /// received are recorded; the recording is closed.
    fn shut_down(&mut self) -> anyhow::Result<()> {
        if let Some(sig) = self.signals.reason() {
            tell!("{sig}: stopping as quit does");
        }
        let waiting = self.session.waiting().len();
        // A signal now ends the writes below, not the process, so what was not written
        // is still said.
        let shutting = self.signals.shutting_down();
        self.bounds.begin();
        let released = self
            .mirror
            .release_waiting(&mut self.session, SHUTDOWN_MESSAGE);
        drop(shutting);
        for v in released {
            self.out.print(&v)?;
        }
        if !self.mirror.shadow && waiting > 0 {
            tell!("rejected {waiting} pod(s) waiting at Permit: {SHUTDOWN_MESSAGE}");
        }
        self.report_write_errors();
        if let Some(r) = self.bounds.report() {
            tell!("{r}");
        }
        while let Some(u) = self.watchers.try_next() {
            if let Update::Change(_) = u {
                self.handle(u)?;
            }
        }
        // The tape first: finishing it may add a note (a gap in the recording).
        let tape = self.mirror.finish_tape();
        for n in &self.mirror.notes {
            tell!("{n}");
        }
        match tape {
            Some(Ok((file, n))) => tell!("recorded {n} events to {}", file.display()),
            Some(Err(e)) => bail!(e),
            None => {}
        }
        Ok(())
    }
}

/// What bounds each phase before the session runs: a signal, `--duration`, or q before
/// the terminal UI starts.
struct Phase<'a> {
    rt: &'a tokio::runtime::Runtime,
    signals: &'a Stop,
    keys: &'a Stop,
    deadline: Option<Instant>,
}

impl Phase<'_> {
    /// Completes on a signal, on q, or when `--duration` has passed.
    fn ended(&self) -> impl std::future::Future<Output = ()> + 'static {
        let signals = self.signals.clone();
        let keys = self.keys.clone();
        let deadline = self.deadline;
        async move {
            tokio::select! {
                () = signals.wait() => {}
                () = keys.wait() => {}
                () = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d.into()).await,
                        None => std::future::pending().await,
                    }
                } => {}
            }
        }
    }

    /// Runs `fut` unless the run ends first; then a `Stopped` error says what was going on.
    fn bounded<T, E>(
        &self,
        fut: impl std::future::Future<Output = Result<T, E>>,
        doing: &str,
    ) -> anyhow::Result<T>
    where
        E: Into<anyhow::Error>,
    {
        let ended = self.ended();
        self.rt.block_on(async {
            tokio::select! {
                r = fut => r.map_err(Into::into),
                () = ended => {
                    let why = match self.signals.reason() {
                        Some(sig) => format!("{sig} received"),
                        None if self.keys.is_stopped() => "q pressed".into(),
                        None => "--duration ended".into(),
                    };
                    Err(LiveError::Stopped(format!("{why} while {doing}")).into())
                }
            }
        })
    }
}

/// Sync progress and reconnects, on standard error.
fn status_line(u: &Update) {
    match u {
        Update::Synced { kind, objects } => tell!("listed {kind}: {objects} objects"),
        Update::Resynced {
            kind,
            added,
            modified,
            deleted,
        } => tell!(
            "{kind}: re-listed ({added} added, {modified} modified, {deleted} deleted while away)"
        ),
        Update::Reconnecting { kind, error } => {
            tell!("{kind}: reconnecting after error: {error}")
        }
        Update::Unserved { warning, .. } => tell!("warning: {warning}"),
        // Watches open and reopen all along; the first lists are the news here.
        Update::Change(_) | Update::Fatal(_) | Update::Reconnected { .. } => {}
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

impl Phase<'_> {
    /// Active mode: every write it makes, asked of the server before the first is needed.
    /// Refused writes end the run (after printing the role that grants them); a server
    /// that cannot say is only warned about.
    fn ask_writes(
        &self,
        conn: &kubestep::live::Connection,
        namespace: Option<&str>,
        role: &dyn Fn(&LiveError),
    ) -> anyhow::Result<()> {
        let server = conn.server();
        let asked = self.bounded(
            access::check_writes(conn, namespace),
            &format!("asking {server} what kubestep may write"),
        );
        match asked {
            Ok(denied) if !denied.is_empty() => {
                let e = LiveError::denied(denied);
                role(&e);
                Err(anyhow::anyhow!("--active needs write permissions: {e}"))
            }
            Ok(_) => Ok(()),
            Err(e)
                if e.downcast_ref::<LiveError>()
                    .is_some_and(|l| matches!(l, LiveError::Stopped(_))) =>
            {
                Err(e)
            }
            Err(e) => {
                tell!(
                    "warning: could not check write permissions ({e:#}); failed writes will be reported as they happen"
                );
                Ok(())
            }
        }
    }

    /// The first lists failed or were stopped: a recording begun is closed, readable, with
    /// what it holds; the error says first what ended the wait.
    fn sync_failed(&self, e: LiveError, mirror: &mut Mirror) -> anyhow::Error {
        if let Some(Ok((file, n))) = mirror.finish_tape() {
            tell!("recorded {n} events to {}", file.display());
        }
        let why = match self.signals.reason() {
            Some(sig) => Some(format!("{sig} received")),
            None if self.keys.is_stopped() => Some("q pressed".to_string()),
            None => None,
        };
        match why {
            Some(w) => anyhow::Error::from(e).context(w),
            None => e.into(),
        }
    }
}

/// The configuration kubestep runs with: `--config`, else upstream's defaults, for the
/// version followed; with `--scheduler-name`, the profile that serves that name.
fn live_config(a: &LiveArgs, features: &Features) -> anyhow::Result<KubeSchedulerConfiguration> {
    let mut cfg = match &a.config {
        Some(p) => config::load_file_for(p, features)?,
        None => config::default_configuration_for(features),
    };
    if let Some(name) = &a.scheduler_name {
        serve_scheduler_name(&mut cfg, name)?;
    }
    Ok(cfg)
}

/// What decisions do: API writes for `--active` with a scheduler name to serve, else
/// nothing (shadow mode).
fn actuator(
    a: &LiveArgs,
    conn: &kubestep::live::Connection,
    rt: &tokio::runtime::Runtime,
    write_errors: &WriteErrors,
    bounds: &WriteBounds,
) -> Box<dyn Actuator> {
    match (&a.scheduler_name, a.active) {
        (Some(name), true) => {
            let mut act = ApiActuator::new(conn.client.clone(), rt.handle().clone(), name);
            act.errors = write_errors.clone();
            act.bounds = bounds.clone();
            Box::new(act)
        }
        _ => Box::new(ShadowActuator),
    }
}
