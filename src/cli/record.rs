//! `kubestep record`: lists and watches a live cluster and writes a recording, showing
//! progress on standard error and a summary at the end (Ctrl-C or --duration).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;

use kubestep::live::access;
use kubestep::live::recorder::{self, Note, RecordError, RecordOptions, Stats};
use kubestep::session::clock;
use kubestep::signals::Stop;

use super::live_args::ClusterArgs;

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  kubestep record --duration 10m                  # every namespace, current context
  kubestep record --context prod -n shop -o shop.jsonl.gz
  kubestep replay shop.jsonl.gz                   # then step through it

It only reads (every request is a GET): get, list and watch on nodes, pods, namespaces,
persistentvolumes, persistentvolumeclaims, storageclasses, csinodes, csidrivers,
csistoragecapacities, poddisruptionbudgets, priorityclasses, services, replicasets, statefulsets,
replicationcontrollers, and when served, the DRA kinds (resource.k8s.io/v1 deviceclasses,
resourceslices, resourceclaims, resourceclaimtemplates, devicetaintrules where served) and
podgroups.

Failed requests are retried with backoff until --duration or Ctrl-C (a refused connection
or refused credentials end it at once, exit code 2). A watch that fails until the end
leaves changes missing: the summary and the file (a gap marker, which replay warns about)
say which kinds and since when, and the exit code is 3.")]
pub struct RecordArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The recording to write; gzip-compressed when it ends in .gz.
    /// [default: kubestep-<UTC time>.jsonl.gz]
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Stop after this long (e.g. 30s, 10m, 1h); without it, record until Ctrl-C.
    #[arg(long, value_name = "D")]
    duration: Option<String>,
}

/// The exit code of a recording known to be incomplete: some kind's watch failed until the
/// end, so changes are missing (the file says where, in gap markers).
pub const EXIT_INCOMPLETE: u8 = 3;

pub fn run(mut a: RecordArgs) -> anyhow::Result<ExitCode> {
    if a.cluster.context.is_none() {
        a.cluster.context = super::user_defaults(true).context;
    }
    let duration = a
        .duration
        .as_deref()
        .map(clock::parse_duration)
        .transpose()
        .map_err(anyhow::Error::msg)
        .context("--duration")?;
    let output = a.output.unwrap_or_else(|| {
        let t = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ");
        PathBuf::from(format!("kubestep-{t}.jsonl.gz"))
    });
    let opts = RecordOptions {
        output: output.clone(),
        namespace: a.cluster.namespace()?,
        duration,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    // SIGINT, SIGTERM, SIGHUP and SIGQUIT end the recording as Ctrl-C does: the file is
    // closed (a .gz gets its trailer) and the summary printed.
    let signals = Stop::on_signals();
    let namespace = opts.namespace.clone();
    let stats = rt.block_on(async {
        let mut conn = kubestep::live::connect(&a.cluster.connect_options()).await?;
        let mut shown = Progress::new(opts.output.clone());
        let r = recorder::record(&mut conn, &opts, signals.wait(), |s, n| shown.update(s, n)).await;
        shown.finish();
        if let Err(RecordError::Live(e)) = &r
            && e.needs_rbac()
        {
            tell!(
                "{}",
                access::role_yaml(access::Mode::Record, namespace.as_deref())
            );
        }
        r.map_err(anyhow::Error::from)
    })?;
    let on_disk = std::fs::metadata(&output).map(|m| m.len()).ok();
    print_summary(&output, &stats, on_disk)?;
    if let Some(from) = stats.gaps.iter().map(|(from, _)| *from).min() {
        // Said on stderr too: the summary's lines may have gone to a file.
        let mut kinds: Vec<&str> = stats
            .gaps
            .iter()
            .flat_map(|(_, g)| g.kinds.iter().map(String::as_str))
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        tell!(
            "{}: {} is incomplete: changes to {} from {} on were not recorded (their watches failed until the end; the file marks the gap); exit code {EXIT_INCOMPLETE}",
            super::invoked_name(),
            output.display(),
            kinds.join(", "),
            from.strftime("%Y-%m-%dT%H:%M:%SZ")
        );
        return Ok(ExitCode::from(EXIT_INCOMPLETE));
    }
    Ok(ExitCode::SUCCESS)
}

/// Progress on standard error: one line rewritten in place on a terminal, else a line at
/// most every second; notes (connected, synced, reconnecting) always get a line.
struct Progress {
    tty: bool,
    last: Option<Instant>,
    pending: bool,
    /// The recording, whose size on disk each progress line reports (the writer counts
    /// JSON before compression; every line is flushed, so the file's size is current).
    output: PathBuf,
}

impl Progress {
    fn new(output: PathBuf) -> Progress {
        Progress {
            tty: std::io::stderr().is_terminal(),
            last: None,
            pending: false,
            output,
        }
    }

    fn update(&mut self, s: &Stats, note: Option<&Note>) {
        let mut err = std::io::stderr().lock();
        if let Some(n) = note {
            let text = match n {
                Note::Connected { server, version } => {
                    format!("connected to {server} (Kubernetes {version})")
                }
                Note::Synced { kind, objects } => {
                    format!(
                        "listed {kind}: {objects} objects ({}/{} kinds)",
                        s.synced, s.kinds
                    )
                }
                Note::AllSynced => format!(
                    "initial sync done: {} objects in {:.1}s; watching",
                    s.initial,
                    s.elapsed.as_secs_f64()
                ),
                Note::Reconnecting { kind, error } => {
                    format!("{kind}: reconnecting after error: {error}")
                }
                Note::Reconnected { kind } => format!("{kind}: watching again"),
                Note::Skipped { warning, .. } => format!("warning: {warning}"),
                Note::Retrying(text) => text.clone(),
                Note::Resynced {
                    kind,
                    added,
                    modified,
                    deleted,
                } => format!(
                    "{kind}: re-listed ({added} added, {modified} modified, {deleted} deleted while away)"
                ),
            };
            let clear = if self.tty { super::progress::CLEAR } else { "" };
            let _ = writeln!(err, "{clear}{text}");
        }
        self.pending = true;
        let due = self.last.is_none_or(|t| {
            t.elapsed() >= Duration::from_millis(if self.tty { 100 } else { 1000 })
        });
        if due {
            self.last = Some(Instant::now());
            self.pending = false;
            let on_disk = std::fs::metadata(&self.output).map(|m| m.len()).ok();
            let line = progress_line(s, on_disk);
            if self.tty {
                let _ = write!(err, "{}{line}", super::progress::CLEAR);
            } else {
                let _ = writeln!(err, "{line}");
            }
            let _ = err.flush();
        }
    }

    fn finish(&mut self) {
        if self.tty {
            let _ = writeln!(std::io::stderr());
        }
    }
}

fn progress_line(s: &Stats, on_disk: Option<u64>) -> String {
    format!(
        "recording: {} objects, {} events, {}, {:.0}s{}",
        s.initial,
        s.events,
        size(s.bytes, on_disk),
        s.elapsed.as_secs_f64(),
        if s.synced < s.kinds {
            format!(" (syncing: {}/{} kinds listed)", s.synced, s.kinds)
        } else {
            String::new()
        }
    )
}

/// What is written: the file's size, and the JSON it holds when that differs (gzip).
/// Without the file's size (it could not be read), the JSON alone, named as such.
fn size(json: u64, on_disk: Option<u64>) -> String {
    match on_disk {
        Some(d) if d == json => format!("{} on disk", bytes(d)),
        Some(d) => format!("{} on disk ({} of JSON)", bytes(d), bytes(json)),
        None => format!("{} of JSON", bytes(json)),
    }
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

fn print_summary(output: &std::path::Path, s: &Stats, on_disk: Option<u64>) -> std::io::Result<()> {
    let by_kind: Vec<String> = s
        .initial_by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    say!(
        "recorded {} objects and {} events to {} ({}) in {:.1}s",
        s.initial,
        s.events,
        output.display(),
        size(s.bytes, on_disk),
        s.elapsed.as_secs_f64()
    )?;
    if !by_kind.is_empty() {
        say!("  objects: {}", by_kind.join(", "))?;
    }
    if s.reconnects > 0 {
        say!("  reconnects: {}", s.reconnects)?;
    }
    for (from, gap) in &s.gaps {
        say!("  incomplete: {}", gap.warning(*from))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_says_what_is_on_disk_and_how_much_json_it_holds() {
        let s = Stats {
            initial: 10,
            bytes: 418_067_251,
            synced: 13,
            kinds: 13,
            ..Default::default()
        };
        assert_eq!(
            progress_line(&s, Some(15_938_355)),
            "recording: 10 objects, 0 events, 15.2 MiB on disk (398.7 MiB of JSON), 0s"
        );
        assert_eq!(size(2048, Some(2048)), "2.0 KiB on disk");
        assert_eq!(size(2048, None), "2.0 KiB of JSON");
    }
}
