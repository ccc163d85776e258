//! The recording loop's state between two watch updates: what each update writes, the
//! changes held back until every kind is listed, the kinds refused or reconnecting; and
//! how a stopped run ends (held changes written, gap markers, kinds never listed).

use std::time::Instant;

use jiff::Timestamp;

use super::{Note, RecordError, Stats, gaps, write_event};
use crate::error::LiveError;
use crate::recording::writer::Writer;
use crate::watch::{Change, Update, Watchers};

/// What one update leads to: go on (with a note to report), or stop with this result.
pub(super) enum Next {
    Go(Option<Note>),
    Stop(Result<(), RecordError>),
}

pub(super) struct Run {
    writer: Writer,
    started: Timestamp,
    clock: Instant,
    file: String,
    stats: Stats,
    /// Changes after the first lists, held until every kind is listed.
    held: Vec<Change>,
    last_at: Timestamp,
    /// Refusals during the first lists, reported together once every kind has answered.
    denied: Vec<LiveError>,
    listed: Vec<&'static str>,
    last_errors: Vec<(&'static str, String)>,
    /// Kinds since their last `Reconnecting` (from when), until their watch is open again.
    reconnecting: Vec<(&'static str, Timestamp)>,
}

impl Run {
    pub(super) fn new(
        writer: Writer,
        started: Timestamp,
        clock: Instant,
        file: String,
        kinds: usize,
    ) -> Run {
        let stats = Stats {
            kinds,
            bytes: writer.bytes,
            ..Default::default()
        };
        Run {
            writer,
            started,
            clock,
            file,
            stats,
            held: Vec::new(),
            last_at: started,
            denied: Vec::new(),
            listed: Vec::new(),
            last_errors: Vec::new(),
            reconnecting: Vec::new(),
        }
    }

    fn io(&self, error: std::io::Error) -> RecordError {
        RecordError::Io {
            file: self.file.clone(),
            error,
        }
    }

    /// Brings the counters up to date and tells the caller.
    pub(super) fn report(
        &mut self,
        progress: &mut impl FnMut(&Stats, Option<&Note>),
        note: Option<&Note>,
    ) {
        self.stats.bytes = self.writer.bytes;
        self.stats.elapsed = self.clock.elapsed();
        progress(&self.stats, note);
    }

    fn write(&mut self, c: &Change) -> Result<(), RecordError> {
        write_event(&mut self.writer, &mut self.last_at, c).map_err(|e| self.io(e))?;
        self.stats.events += 1;
        Ok(())
    }

    fn listing(&self) -> bool {
        self.stats.synced < self.stats.kinds
    }

    pub(super) fn update(
        &mut self,
        update: Update,
        watchers: &Watchers,
        progress: &mut impl FnMut(&Stats, Option<&Note>),
    ) -> Next {
        let note = match update {
            Update::Change(c) if c.initial => {
                *self.stats.initial_by_kind.entry(c.kind).or_default() += 1;
                self.stats.initial += 1;
                if let Err(e) = self.writer.event(self.started, c.event, &c.object) {
                    return Next::Stop(Err(self.io(e)));
                }
                None
            }
            Update::Change(c) if self.listing() => {
                self.held.push(c);
                None
            }
            Update::Change(c) => {
                if let Err(e) = self.write(&c) {
                    return Next::Stop(Err(e));
                }
                None
            }
            Update::Synced { .. } | Update::Unserved { .. } | Update::Fatal(_)
                if self.listing() =>
            {
                return self.first_lists(update, watchers, progress);
            }
            Update::Resynced {
                kind,
                added,
                modified,
                deleted,
            } => {
                self.reconnecting.retain(|(k, _)| *k != kind);
                Some(Note::Resynced {
                    kind,
                    added,
                    modified,
                    deleted,
                })
            }
            Update::Reconnecting { kind, error } => {
                self.stats.reconnects += 1;
                if !self.reconnecting.iter().any(|(k, _)| *k == kind) {
                    self.reconnecting.push((kind, Timestamp::now()));
                }
                self.last_errors.retain(|(k, _)| *k != kind);
                self.last_errors.push((kind, error.to_string()));
                Some(Note::Reconnecting {
                    kind,
                    error: error.to_string(),
                })
            }
            Update::Reconnected { kind } => {
                let i = self.reconnecting.iter().position(|(k, _)| *k == kind);
                i.map(|i| {
                    self.reconnecting.remove(i);
                    Note::Reconnected { kind }
                })
            }
            Update::Synced { .. } => None,
            Update::Unserved { kinds, warning } => Some(Note::Skipped { kinds, warning }),
            Update::Fatal(e) => return Next::Stop(Err(e.into())),
        };
        Next::Go(note)
    }

    /// A kind's first list ended (listed, not served, or refused). Once every kind has
    /// answered: refusals end the run together, else the held changes are written.
    fn first_lists(
        &mut self,
        update: Update,
        watchers: &Watchers,
        progress: &mut impl FnMut(&Stats, Option<&Note>),
    ) -> Next {
        let mut note = None;
        match update {
            Update::Synced { kind, objects } => {
                self.listed.push(kind);
                // A list that failed before is no loss: the watch starts from it.
                if let Some(r) = self.reconnecting.iter_mut().find(|(k, _)| *k == kind) {
                    r.1 = Timestamp::now();
                }
                note = Some(Note::Synced { kind, objects });
            }
            Update::Unserved { kinds, warning } => {
                self.listed.extend(&kinds);
                note = Some(Note::Skipped { kinds, warning });
            }
            Update::Fatal(e) => {
                if !e.is_access_denied() {
                    return Next::Stop(Err(e.into()));
                }
                if let LiveError::Forbidden { resource, .. } = &e
                    && let Some(k) = watchers.kinds().iter().find(|k| k.plural == resource)
                    && !self.listed.contains(&k.kind)
                {
                    self.listed.push(k.kind);
                } else if !matches!(e, LiveError::Forbidden { .. }) {
                    // Refused credentials: every kind says the same.
                    self.denied.push(e);
                    let denied = std::mem::take(&mut self.denied);
                    return Next::Stop(Err(LiveError::denied(denied).into()));
                }
                self.denied.push(e);
            }
            _ => {}
        }
        self.stats.synced = self.listed.len();
        if self.listing() {
            return Next::Go(note);
        }
        if !self.denied.is_empty() {
            let denied = std::mem::take(&mut self.denied);
            return Next::Stop(Err(LiveError::denied(denied).into()));
        }
        for c in std::mem::take(&mut self.held) {
            if let Err(e) = self.write(&c) {
                return Next::Stop(Err(e));
            }
        }
        self.report(progress, note.as_ref());
        Next::Go(Some(Note::AllSynced))
    }

    /// After a stop: the updates already received (initial objects written, later
    /// changes held with the rest).
    pub(super) fn drain(&mut self, watchers: &mut Watchers) {
        while let Some(u) = watchers.try_next() {
            match u {
                Update::Change(c)
                    if c.initial && self.writer.event(self.started, c.event, &c.object).is_ok() =>
                {
                    *self.stats.initial_by_kind.entry(c.kind).or_default() += 1;
                    self.stats.initial += 1;
                }
                Update::Change(c) if !c.initial => self.held.push(c),
                _ => {}
            }
        }
    }

    /// Ends the file: held changes, gap markers for kinds whose watch was still down, and
    /// an error naming the kinds never listed (the file is closed and readable).
    pub(super) fn finish(
        mut self,
        watchers: Watchers,
        result: Result<(), RecordError>,
    ) -> Result<Stats, RecordError> {
        for c in std::mem::take(&mut self.held) {
            // Best effort: the run is over; a change that cannot be written is not counted.
            let _ = self.write(&c);
        }
        let missing: Vec<&'static str> = watchers
            .kinds()
            .iter()
            .map(|k| k.kind)
            .filter(|k| !self.listed.contains(k))
            .collect();
        drop(watchers);
        // Kinds listed whose watch was still down: what changed since it went down is lost.
        let ended = Timestamp::now().max(self.last_at);
        let down: Vec<(&'static str, Timestamp)> = std::mem::take(&mut self.reconnecting)
            .into_iter()
            .filter(|(k, _)| self.listed.contains(k) && !missing.contains(k))
            .collect();
        for (from, gap) in gaps(down, ended, &self.last_errors) {
            self.writer.gap(from, &gap).map_err(|e| self.io(e))?;
            self.stats.gaps.push((from, gap));
        }
        self.stats.bytes = self.writer.bytes;
        self.stats.elapsed = self.clock.elapsed();
        let file = self.file.clone();
        self.writer
            .finish()
            .map_err(|error| RecordError::Io { file, error })?;
        result?;
        if !missing.is_empty() {
            // Stopped (signal or --duration) before every kind was listed: the file is
            // closed and readable, but it does not hold the whole cluster.
            let what = format!("; {} lacks {}", self.file, missing.join(", "));
            return Err(
                LiveError::stopped_before_first_lists(what, &missing, &self.last_errors).into(),
            );
        }
        Ok(self.stats)
    }
}
