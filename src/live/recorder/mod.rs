//! Recording a live cluster: the objects as first listed, then every change, one line
//! each, written (and flushed) as they arrive so that a crash or kill loses at most the
//! last event. Changes that arrive while other kinds are still being listed wait until
//! every kind is listed, so the file holds the initial objects first, then the events, in
//! time order.
//!
//! A kind whose watch fails and never comes back before the end leaves changes missing
//! (a watch that comes back resumes, or re-lists and records the differences: nothing is
//! lost). Such gaps are written as gap markers at the end and returned in the stats, so
//! that the summary, the exit code and a replay of the file all say so.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use jiff::Timestamp;

use super::connect::Connection;
use super::error::LiveError;
use super::watch::{self, Change, WatchOptions, Watchers};
use crate::recording::writer::Writer;
use crate::recording::{Gap, Header};

mod run;
use run::{Next, Run};

#[derive(Debug, Clone)]
pub struct RecordOptions {
    pub output: PathBuf,
    /// Namespaced kinds from this namespace only (`None`: all namespaces).
    pub namespace: Option<String>,
    /// Stop after this long (`None`: until stopped).
    pub duration: Option<Duration>,
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Live(#[from] LiveError),
    #[error("{file}: {error}")]
    Io { file: String, error: std::io::Error },
}

/// What has been recorded so far.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Objects in the initial lists, by kind.
    pub initial_by_kind: BTreeMap<&'static str, u64>,
    pub initial: u64,
    /// Changes after the initial lists.
    pub events: u64,
    pub bytes: u64,
    /// Kinds whose first list is complete, of how many.
    pub synced: usize,
    pub kinds: usize,
    pub reconnects: u64,
    pub elapsed: Duration,
    /// Changes known to be missing: kinds whose watches failed until the end, from when.
    /// Written to the file as gap markers too.
    pub gaps: Vec<(Timestamp, Gap)>,
}

/// Something worth telling the person recording, beside the counters.
#[derive(Debug, Clone)]
pub enum Note {
    Connected {
        server: String,
        version: String,
    },
    Synced {
        kind: &'static str,
        objects: usize,
    },
    AllSynced,
    Reconnecting {
        kind: &'static str,
        error: String,
    },
    /// A kind's watch is open again after `Reconnecting`.
    Reconnected {
        kind: &'static str,
    },
    Resynced {
        kind: &'static str,
        added: usize,
        modified: usize,
        deleted: usize,
    },
    /// The server does not serve the kind: skipped, with what that hides.
    Skipped {
        kinds: Vec<&'static str>,
        warning: String,
    },
    /// A request before the watches began failed and is retried ("GET /version failed:
    /// ...; retrying in 1s").
    Retrying(String),
}

/// Records until `stop` completes, the duration ends or access is refused. `progress` is
/// called after every update (the caller throttles what it shows).
pub async fn record(
    conn: &mut Connection,
    opts: &RecordOptions,
    stop: impl Future<Output = ()>,
    mut progress: impl FnMut(&Stats, Option<&Note>),
) -> Result<Stats, RecordError> {
    // `--duration` and `stop` bound every phase, connecting included.
    let deadline = opts.duration.map(|d| tokio::time::Instant::now() + d);
    tokio::pin!(stop);
    let server = conn.server().to_string();
    let stopped = |doing: &str| {
        RecordError::Live(LiveError::Stopped(format!(
            "stopped while {doing} {server}: nothing was recorded"
        )))
    };
    let version = tokio::select! {
        v = watch::check_version(conn, |m| progress(&Stats::default(), Some(&Note::Retrying(m)))) => v?,
        () = &mut stop => return Err(stopped("connecting to")),
        () = sleep_until(deadline) => return Err(stopped("waiting for an answer from")),
    };
    progress(
        &Stats::default(),
        Some(&Note::Connected {
            server: conn.server().to_string(),
            version,
        }),
    );
    let started = Timestamp::now();
    let clock = Instant::now();
    let mut header = Header::new(started);
    header.source = conn.source.clone();
    header.source.namespaces = opts.namespace.clone().map(|n| vec![n]);
    let file = opts.output.display().to_string();
    let io = |error| RecordError::Io {
        file: file.clone(),
        error,
    };
    let writer = Writer::create(&opts.output, &header).map_err(io)?;
    let watch_opts = WatchOptions {
        namespace: opts.namespace.clone(),
    };
    let started_watchers = tokio::select! {
        w = Watchers::start(conn, &watch_opts, |m| progress(&Stats::default(), Some(&Note::Retrying(m)))) => w,
        () = &mut stop => Err(LiveError::Stopped(format!("stopped while asking {server} for its API groups"))),
        () = sleep_until(deadline) => Err(LiveError::Stopped(format!("--duration ended while asking {server} for its API groups"))),
    };
    let mut watchers = match started_watchers {
        Ok(w) => w,
        Err(e) => {
            writer.finish().map_err(io)?;
            return Err(e.into());
        }
    };
    let mut run = Run::new(writer, started, clock, file, watchers.kinds().len());
    let result = loop {
        let update = tokio::select! {
            _ = &mut stop => break Ok(()),
            _ = sleep_until(deadline) => break Ok(()),
            u = watchers.next() => u,
        };
        let Some(update) = update else { break Ok(()) };
        match run.update(update, &watchers, &mut progress) {
            Next::Go(note) => run.report(&mut progress, note.as_ref()),
            Next::Stop(r) => break r,
        }
    };
    // Changes already received when stopping are kept, as is whatever was held back.
    if result.is_ok() {
        run.drain(&mut watchers);
    }
    run.finish(watchers, result)
}

/// Kinds whose outages began within this long of each other share one gap marker.
const GAP_GROUPING: Duration = Duration::from_secs(1);

/// The gaps left by kinds whose watches were down (since when) at `ended`: kinds that went
/// down together (every watch failing at once, say) share one, from the earliest start.
pub(crate) fn gaps(
    mut down: Vec<(&'static str, Timestamp)>,
    ended: Timestamp,
    last_errors: &[(&'static str, String)],
) -> Vec<(Timestamp, Gap)> {
    down.sort_by_key(|(_, t)| *t);
    let mut out: Vec<(Timestamp, Timestamp, Vec<&'static str>)> = Vec::new();
    for (kind, since) in down {
        match out.last_mut() {
            Some((_, latest, kinds))
                if since.duration_since(*latest).unsigned_abs() <= GAP_GROUPING =>
            {
                *latest = since;
                kinds.push(kind);
            }
            _ => out.push((since, since, vec![kind])),
        }
    }
    out.into_iter()
        .map(|(from, _, mut kinds)| {
            let error = kinds.iter().find_map(|k| {
                last_errors
                    .iter()
                    .find(|(e, _)| e == k)
                    .map(|(_, e)| format!("{k}: {e}"))
            });
            kinds.sort_unstable();
            let reason = match error {
                Some(e) => format!("the watch failed until the recording ended; last error: {e}"),
                None => "the watch failed until the recording ended".to_string(),
            };
            let gap = Gap {
                until: ended,
                kinds: kinds.iter().map(|k| k.to_string()).collect(),
                reason: Some(reason),
            };
            (from, gap)
        })
        .collect()
}

/// A recording kept beside live mode (`kubestep live --record`): the objects as first
/// listed, at the start time, then every change as it arrives, each line flushed as
/// `kubestep record` does. The caller writes the initial objects while the first lists
/// arrive and the later changes as it applies them, so file order is time order.
pub struct Tape {
    writer: Writer,
    pub file: PathBuf,
    started: Timestamp,
    last_at: Timestamp,
}

impl Tape {
    /// Creates the file and writes its header (server, context and Kubernetes version
    /// from the connection, call `watch::check_version` first; and the scheduler configuration
    /// kubestep runs with, so that replaying the file repeats kubestep's decisions).
    pub fn create(
        path: &Path,
        conn: &Connection,
        namespace: Option<String>,
        config: Option<serde_json::Value>,
    ) -> Result<Tape, RecordError> {
        let started = Timestamp::now();
        let mut header = Header::new(started);
        header.source = conn.source.clone();
        header.source.namespaces = namespace.map(|n| vec![n]);
        header.scheduler_configuration = config;
        let writer = Writer::create(path, &header).map_err(|error| RecordError::Io {
            file: path.display().to_string(),
            error,
        })?;
        Ok(Tape {
            writer,
            file: path.to_path_buf(),
            started,
            last_at: started,
        })
    }

    pub fn write(&mut self, c: &Change) -> Result<(), RecordError> {
        let r = if c.initial {
            self.writer.event(self.started, c.event, &c.object)
        } else {
            write_event(&mut self.writer, &mut self.last_at, c)
        };
        r.map_err(|error| self.io(error))
    }

    /// Events written so far (initial objects included).
    pub fn events(&self) -> u64 {
        self.writer.events
    }

    /// Closes the file (the gzip trailer); returns the events written.
    /// The time of the last line written (the end of a gap that lasts to the end).
    pub fn last_at(&self) -> Timestamp {
        self.last_at.max(Timestamp::now())
    }

    /// Marks changes to some kinds as missing from `from` on (see `Gap`).
    pub fn gap(&mut self, from: Timestamp, gap: &Gap) -> Result<(), RecordError> {
        self.writer.gap(from, gap).map_err(|e| self.io(e))
    }

    pub fn finish(self) -> Result<u64, RecordError> {
        let events = self.writer.events;
        let file = self.file.display().to_string();
        self.writer
            .finish()
            .map(|_| events)
            .map_err(|error| RecordError::Io { file, error })
    }

    fn io(&self, error: std::io::Error) -> RecordError {
        RecordError::Io {
            file: self.file.display().to_string(),
            error,
        }
    }
}

/// Events carry the time they arrived, kept non-decreasing so file order is time order.
fn write_event(w: &mut Writer, last_at: &mut Timestamp, c: &Change) -> std::io::Result<()> {
    let at = c.at.max(*last_at);
    *last_at = at;
    w.event(at, c.event, &c.object)
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
