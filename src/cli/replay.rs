//! `kubestep replay SOURCE --headless`: the debugger without a screen, driven by a script
//! (or run to completion), printing one JSON object per line (or text). SOURCE is a
//! recording (a file, or the name of a bundled one) or a manifest.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use serde_json::Value;

use kubestep::recording::{self, ReadOptions};
use kubestep::session::script::{self, Command};
use kubestep::session::trace::TraceLine;
use kubestep::session::{Session, SessionOptions, clock, trace};

use super::trace_text;

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Output {
    Jsonl,
    /// Each object as a YAML document (`---` before each).
    Yaml,
    Text,
}

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  kubestep recordings                                # what is bundled
  kubestep replay demo                               # the terminal UI on it
  kubestep replay preemption --headless -o text      # run to the end, a line per attempt
  kubestep replay preemption --headless -o yaml      # the same objects as YAML documents
  kubestep replay my-cluster.jsonl.gz --headless --until 5m --trace steps
  echo 'break plugin=NodeResourcesFit
  continue
  show filter' | kubestep replay demo --headless --script -")]
pub struct ReplayArgs {
    /// A recording (.jsonl or .jsonl.gz), the name of a bundled recording (see
    /// `kubestep recordings`), or a cluster manifest (YAML, JSON or a kubectl List, taken
    /// as a snapshot at time zero). A file that exists wins over a bundled name.
    #[arg(value_parser = super::completion::RecordingSource, hide_possible_values = true)]
    source: String,
    /// Run without the terminal UI.
    #[arg(long)]
    headless: bool,
    /// Scheduler configuration; without it, the recording header's, else the defaults.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Call the extenders the recording's header names (without it they are listed, not
    /// called: opening a file never makes kubestep call the network).
    #[arg(long)]
    call_extenders: bool,
    #[command(flatten)]
    kube: super::kube::KubeArgs,
    /// Refuse a recording with a bad or truncated line instead of skipping it.
    #[arg(long)]
    strict: bool,
    /// Replay speed for the terminal UI (2 = twice as fast as recorded). The headless
    /// run ignores it: it jumps from one event or timer to the next.
    #[arg(long, default_value_t = 1.0, value_parser = parse_speed)]
    speed: f64,
    /// Commands to run, one per line ("-" reads standard input). Without it, kubestep runs
    /// until nothing more can change (or --until) and prints the summary.
    #[arg(long, value_name = "FILE|-", value_hint = clap::ValueHint::FilePath)]
    script: Option<String>,
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Jsonl)]
    output: Output,
    /// Seed for tie-breaking randomness (preemption offsets, extender ties).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Leave out the wall-clock times (`micros`, `durationMicros`), the only fields that
    /// differ between two runs with the same seed: the output is then reproducible byte
    /// for byte.
    #[arg(long)]
    no_timings: bool,
    /// Virtual time, from the recording's start, to stop at when running without a
    /// script (default: the recording's last event plus 10 minutes).
    #[arg(long)]
    until: Option<String>,
    /// Memory for history: the steps and attempts kept, and what re-runs a past attempt
    /// when you look at it (default 32MiB; 0 keeps none).
    #[arg(long, value_name = "SIZE", value_parser = super::trace_args::parse_size)]
    history: Option<usize>,
    /// What the headless run prints: a line per attempt, also per step, or also each
    /// attempt's verdict matrix, scores and CycleState.
    #[arg(long, value_enum, default_value_t = super::trace_args::TraceArg::Attempts)]
    trace: super::trace_args::TraceArg,
    /// The real kube-scheduler's log (klog text, -v=2 or more) of the recorded run: each
    /// node search after a pod it bound starts where the real one did, from the
    /// `evaluatedNodes` it logged (upstream's parallel search examines a node more or less
    /// depending on goroutine timing, which moves every later round-robin start).
    #[arg(long, value_name = "FILE")]
    scheduler_log: Option<PathBuf>,
    /// Terminal UI theme: dark, light, high-contrast, ansi16, mono, or a theme file.
    #[arg(long, value_name = "NAME|FILE")]
    theme: Option<String>,
    /// Terminal UI: also write kubestep's log to this file.
    #[arg(long, value_name = "FILE")]
    log_file: Option<PathBuf>,
}

pub fn run(a: ReplayArgs) -> anyhow::Result<ExitCode> {
    let user = super::user_defaults(a.headless);
    let request = a.kube.request(&user);
    let scheduler_log = match &a.scheduler_log {
        Some(p) => {
            let log = open_maybe_gz(p)
                .and_then(kubestep::session::scheduler_log::SchedulerLog::read)
                .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
            Some(log)
        }
        None => None,
    };
    if !a.headless {
        kubestep::tui::run(kubestep::tui::TuiOptions {
            source: Some(std::path::PathBuf::from(&a.source)),
            config: a.config,
            theme: a.theme,
            log_file: a.log_file,
            compare: None,
            history: a.history,
            speed: Some(a.speed),
            scheduler_log,
            kube: request,
            call_extenders: a.call_extenders,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let until = a
        .until
        .as_deref()
        .map(clock::parse_duration)
        .transpose()
        .map_err(anyhow::Error::msg)
        .context("--until")?;
    let started = std::time::Instant::now();
    let mut progress = super::progress::TtyLine::on_stderr(std::time::Duration::from_millis(250));
    if let Some(p) = progress.as_mut() {
        p.draw(&format!("replay {}: reading…", a.source));
    }
    let rec = recording::open_with(&a.source, ReadOptions { strict: a.strict })?;
    if let Some(p) = progress.as_mut() {
        p.clear();
    }
    // Counted only for the progress line: the recording's pods, whose bindings it shows.
    let totals = progress
        .as_ref()
        .map(|_| (rec.counts().pods, rec.events.len()));
    super::say_what_reading_found(&rec);
    let withheld = rec.withheld_extenders(a.call_extenders || a.config.is_some());
    if let Some(w) = withheld {
        tell!("{}: warning: {w}", super::invoked_name());
    }
    let start = rec.start();
    let deadline = match until {
        Some(d) => clock::add(start, d),
        None => clock::add(rec.end(), std::time::Duration::from_secs(600)),
    };
    let opts = SessionOptions {
        history_bytes: a
            .history
            .or(user.history)
            .unwrap_or(kubestep::session::DEFAULT_HISTORY_BYTES),
        ..Default::default()
    };
    let mut session = Session::open_replay(
        rec,
        &a.source,
        a.config.as_deref(),
        &request,
        opts,
        a.call_extenders,
    )?;
    // The start line: which scheduler's semantics the replay follows, and why.
    let features = &session.config().features;
    super::kube::say_warnings(features);
    tell!(
        "{}: replay {}: {}",
        super::invoked_name(),
        a.source,
        features.describe()
    );
    session.trace_level = a.trace.into();
    session.set_seed(a.seed);
    session.set_scheduler_log(scheduler_log);
    // Headless runs as fast as it can; --speed paces the terminal UI.
    let (mode, timings) = (a.output, !a.no_timings);
    let printer = || Printer {
        mode,
        stdout: std::io::stdout().lock(),
        timings,
    };
    match &a.script {
        None => {
            // Printed as the steps happen, so a long recording's trace never sits in
            // memory; the lines are built and written on a thread of their own while
            // the scheduling goes on (about a tenth of a replay's work). The queue is short:
            // a full trace's detail lines are large, and a slow reader must not make them
            // pile up (64 keeps the speed of 1,024).
            let (lines, printing) = std::sync::mpsc::sync_channel::<TraceLine>(64);
            let printed = std::thread::scope(|scope| {
                let writer = scope.spawn(move || -> anyhow::Result<()> {
                    let mut out = Printer {
                        mode,
                        stdout: std::io::BufWriter::new(std::io::stdout().lock()),
                        timings,
                    };
                    // Written in batches while lines queue up, and flushed whenever
                    // the queue is empty, so a reader sees each line as it happens.
                    while let Ok(l) = printing.recv() {
                        out.print(&l.into_value())?;
                        while let Ok(l) = printing.try_recv() {
                            out.print(&l.into_value())?;
                        }
                        out.stdout.flush()?;
                    }
                    Ok(())
                });
                session.run_until_observed(
                    deadline,
                    // A send fails only once the printer has stopped on an error.
                    Some(&mut |l| match lines.send(l) {
                        Ok(()) => std::ops::ControlFlow::Continue(()),
                        Err(_) => std::ops::ControlFlow::Break(()),
                    }),
                    &mut |s| {
                        if let (Some(p), Some((pods, events))) = (progress.as_mut(), totals)
                            && p.due()
                        {
                            p.draw(&progress_line(&a.source, s, pods, events, start, started));
                        }
                    },
                );
                drop(lines);
                writer.join()
            });
            if let Some(p) = progress.as_mut() {
                p.clear();
            }
            printed.map_err(|_| anyhow::anyhow!("printing the trace failed"))??;
        }
        Some(s) => run_script(&mut session, &mut printer(), s)?,
    }
    let mut out = printer();
    out.print(&trace::session_summary(&session))?;
    if let Some(log) = &session.scheduler().scheduler_log {
        tell!(
            "scheduler log: {} bound pods' evaluatedNodes read; the next search start followed it after {} cycle(s) whose own count differed",
            log.evaluated.len(),
            session.scheduler().realigned
        );
    }
    if session.scheduler().followed > 0 {
        tell!(
            "search start: moved to follow the recording in {} cycle(s) (upstream's parallel search examines a timing-dependent set of nodes)",
            session.scheduler().followed
        );
    }
    if let Some(m) = &session.stuck {
        bail!("{}: {m}", a.source);
    }
    tracing::info!(
        steps = session.history.steps.len(),
        attempts = session.history.attempts.len(),
        history_bytes = session.history.bytes(),
        world_bytes = session.world().bytes(),
        "replay finished"
    );
    super::exit_without_freeing(session);
    Ok(ExitCode::SUCCESS)
}

/// The progress line of a headless replay: pods bound of the recording's pods, events
/// applied, virtual time since the recording's start, wall time since kubestep started.
fn progress_line(
    source: &str,
    s: &Session,
    pods: usize,
    events: usize,
    start: jiff::Timestamp,
    started: std::time::Instant,
) -> String {
    use super::progress::{clock_offset, count};
    format!(
        "replay {source}: {}/{} pods bound, {}/{} events applied, virtual {}, {:.1}s",
        count(s.bound_pods()),
        count(pods),
        // The events at the start are applied before the feed holds the rest.
        count(events.saturating_sub(s.feed_len())),
        count(events),
        clock_offset(clock::since(s.now(), start)),
        started.elapsed().as_secs_f64()
    )
}

fn parse_speed(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a speed: give a positive number (1 = as recorded)"
        )),
    }
}

/// `--script`: each command in turn, its output printed; a failing command ends the run
/// with its line, after the summary.
fn run_script<W: Write>(
    session: &mut Session,
    out: &mut Printer<W>,
    s: &str,
) -> anyhow::Result<()> {
    let text = read_script(s)?;
    let cmds =
        script::parse_script(&text).map_err(|e| anyhow::anyhow!("{}: {e}", script_name(s)))?;
    for (line, cmd) in cmds {
        // Each line is printed as the command makes it: an `advance` over days of a
        // recording is never held whole.
        let mut failed = None;
        let ran = session.run_command_into(&cmd, &mut |v| match out.print(&v) {
            Ok(()) => std::ops::ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                std::ops::ControlFlow::Break(())
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        match ran {
            Ok(quit) => {
                if quit {
                    break;
                }
            }
            Err(e) => {
                out.print(&trace::error(line, &e.to_string()))?;
                // The summary is always the last line, even when a script fails.
                out.print(&trace::summary(&session.summary()))?;
                bail!("{}: line {line}: {e}", script_name(s));
            }
        }
        if cmd == Command::Quit {
            break;
        }
    }
    Ok(())
}

pub(super) fn script_name(s: &str) -> String {
    if s == "-" {
        "standard input".into()
    } else {
        s.to_string()
    }
}

/// The script's text, at most `limits::WHOLE_FILE`.
pub(super) fn read_script(s: &str) -> anyhow::Result<String> {
    use kubestep::limits;
    if s == "-" {
        let bytes = limits::read_to_end(std::io::stdin(), limits::WHOLE_FILE, "a script")
            .context("reading the script from standard input")?;
        return String::from_utf8(bytes)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()))
            .context("reading the script from standard input");
    }
    limits::read_file_to_string(Path::new(s), limits::WHOLE_FILE, "a script")
        .with_context(|| format!("reading script {s}"))
}

pub(super) struct Printer<W: Write> {
    pub(super) mode: Output,
    pub(super) stdout: W,
    /// Print the wall-clock times (`micros`, `durationMicros`); without them a replay's
    /// output is the same byte for byte from run to run.
    pub(super) timings: bool,
}

impl<W: Write> Printer<W> {
    pub(super) fn print(&mut self, v: &Value) -> anyhow::Result<()> {
        let stripped;
        let v = if self.timings {
            v
        } else {
            stripped = without_timings(v.clone());
            &stripped
        };
        match self.mode {
            Output::Jsonl => writeln!(self.stdout, "{v}")?,
            Output::Yaml => write!(self.stdout, "---\n{}", to_yaml(v)?)?,
            Output::Text => {
                let line = trace_text::line(v);
                writeln!(self.stdout, "{}", kubestep::redact::printable(&line))?
            }
        }
        Ok(())
    }
}

/// `v` without its wall-clock fields, at any depth.
fn without_timings(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("micros");
                m.remove("durationMicros");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

/// One value as YAML (serde-saphyr), ending in a newline.
pub(super) fn to_yaml<T: serde::Serialize>(v: &T) -> anyhow::Result<String> {
    let mut s = serde_saphyr::to_string(v).context("encoding YAML")?;
    if !s.ends_with('\n') {
        s.push('\n');
    }
    Ok(s)
}

/// A file read line by line, gunzipped when its name ends in `.gz`.
fn open_maybe_gz(p: &Path) -> std::io::Result<Box<dyn std::io::BufRead>> {
    let f = std::fs::File::open(p)?;
    Ok(if p.extension().is_some_and(|e| e == "gz") {
        Box::new(std::io::BufReader::new(flate2::read::GzDecoder::new(f)))
    } else {
        Box::new(std::io::BufReader::new(f))
    })
}
