//! Live mode in the TUI (`kubestep live` without `--headless`). The watchers' updates are
//! applied to the App's Session on each tick through the same `live::mirror::Mirror` the
//! headless loop uses; the clock follows the wall clock; the link's state shows in the
//! header and its news in the status line. Shadow mode's Permit waits are labelled as
//! simulated; in active mode allow and reject bind or unreserve for real, because the
//! Session's actuator is the API's.

use std::time::{Duration, Instant};

use jiff::Timestamp;

use crate::session::{Session, StopReason};
use kubestep_live::actuator::{WriteBounds, WriteErrors};
use kubestep_live::link::Health;
use kubestep_live::mirror::{self, Mirror, SHUTDOWN_MESSAGE, Said};
use kubestep_live::signals::Stop;
use kubestep_live::{Update, Watchers};

use super::app::{App, Level};
use super::{logs, terminal};

/// Updates from the cluster, taken without blocking: the watchers, or a channel in tests.
pub trait Updates {
    fn try_next(&mut self) -> Option<Update>;
}

impl Updates for Watchers {
    fn try_next(&mut self) -> Option<Update> {
        Watchers::try_next(self)
    }
}

impl Updates for std::sync::mpsc::Receiver<Update> {
    fn try_next(&mut self) -> Option<Update> {
        self.try_recv().ok()
    }
}

/// Scheduling work per tick, so keys and drawing stay responsive when many pods arrive.
const BUDGET: Duration = Duration::from_millis(60);

/// Updates taken per tick; the rest wait for the next one (the watchers' channel is
/// bounded, so they slow down meanwhile instead of growing memory).
const MAX_UPDATES: usize = 5_000;

/// What the App keeps of live mode.
pub struct LiveLink {
    pub mirror: Mirror,
    updates: Box<dyn Updates>,
    /// The API server (the header's source label).
    pub server: String,
    /// The schedulerName served in active mode.
    pub scheduler_name: Option<String>,
    /// `--duration`: the App quits at this instant.
    pub deadline: Option<Instant>,
    /// The link's state as of the last tick.
    pub health: (Health, String),
    /// Active mode's failed writes, shown as they happen.
    pub write_errors: WriteErrors,
    /// Signals received before or while the TUI runs: the App quits as on q.
    pub stop: Option<Stop>,
    /// What bounds the active actuator's writes: shutdown's share one deadline.
    pub bounds: WriteBounds,
}

impl LiveLink {
    pub fn new(mirror: Mirror, updates: Box<dyn Updates>, server: &str) -> LiveLink {
        LiveLink {
            mirror,
            updates,
            server: server.to_string(),
            scheduler_name: None,
            deadline: None,
            health: (Health::Connected, "connected".into()),
            write_errors: WriteErrors::default(),
            stop: None,
            bounds: WriteBounds::default(),
        }
    }

    /// "shadow" or "active (NAME)", for the header.
    pub fn mode(&self) -> String {
        match (&self.scheduler_name, self.mirror.shadow) {
            (Some(n), false) => format!("active ({n})"),
            _ => "shadow".into(),
        }
    }

    /// Ends live mode: in active mode every pod waiting at Permit is rejected (Unreserve
    /// runs, nothing is bound later); what already arrived is recorded and the recording
    /// closed. Returns lines for the person, printed once the terminal is restored.
    pub fn shutdown(&mut self, s: &mut Session) -> Vec<String> {
        let mut out = Vec::new();
        let waiting = s.waiting().len();
        let pre_bind = s.pre_bind_waits();
        if !self.mirror.shadow && waiting + pre_bind > 0 {
            // The rejections' writes share one deadline, and a signal now ends them rather
            // than the process, so what was not written is still said.
            let shutting = self.stop.as_ref().map(Stop::shutting_down);
            self.bounds.begin();
            self.mirror.release_waiting(s, SHUTDOWN_MESSAGE);
            drop(shutting);
            if waiting > 0 {
                out.push(format!(
                    "rejected {waiting} pod(s) waiting at Permit: {SHUTDOWN_MESSAGE}"
                ));
            }
            if pre_bind > 0 {
                out.push(format!(
                    "stopped {pre_bind} pod(s) waiting at PreBind for device binding conditions (Unreserve ran): {SHUTDOWN_MESSAGE}"
                ));
            }
            out.extend(self.bounds.report());
        }
        while let Some(u) = self.updates.try_next() {
            if let Update::Change(_) = u {
                self.mirror.update(s, u);
            }
        }
        // The tape first: finishing it may add a note (a gap in the recording).
        let tape = self.mirror.finish_tape();
        out.extend(self.mirror.notes.iter().cloned());
        match tape {
            Some(Ok((file, n))) => out.push(format!("recorded {n} events to {}", file.display())),
            Some(Err(e)) => out.push(format!("the recording could not be finished: {e}")),
            None => {}
        }
        out
    }
}

impl App {
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// Live shadow mode: Permit waits are kubestep's simulation.
    pub fn shadow(&self) -> bool {
        self.live.as_ref().is_some_and(|l| l.mirror.shadow)
    }

    /// A tick in live mode: apply what arrived, then (when running) schedule until the
    /// session has caught up with the wall clock or the tick's budget is spent. Paused,
    /// changes still arrive and the clock still moves; timers fire on resuming.
    pub(super) fn live_tick(&mut self) {
        let Some(link) = self.live.as_mut() else {
            return;
        };
        let before = self.session.history.peek_seq();
        let mut said = Vec::new();
        let mut changed = false;
        for _ in 0..MAX_UPDATES {
            let Some(u) = link.updates.try_next() else {
                break;
            };
            changed = true;
            said.extend(link.mirror.update(&mut self.session, u));
        }
        let now = Timestamp::now();
        let stop = if self.running {
            let resume = std::mem::take(&mut self.resume);
            link.mirror
                .tick_within(&mut self.session, now, BUDGET, resume)
        } else {
            mirror::set_clock(&mut self.session, now);
            None
        };
        link.health = link.mirror.link.line(Instant::now());
        if link.deadline.is_some_and(|d| Instant::now() >= d)
            || link.stop.as_ref().is_some_and(Stop::is_stopped)
        {
            self.quit = true;
        }
        let failed_writes = link.write_errors.take();
        for s in said {
            match s {
                Said::Info(t) => self.info(t),
                Said::Problem(t) => {
                    tracing::warn!("{t}");
                    self.status = Some((Level::Warning, t));
                }
                Said::Denied(e) => self.error(format!("access denied, watch stopped: {e}")),
            }
        }
        for e in failed_writes {
            self.error(format!("write failed: {e}"));
        }
        if let Some(StopReason::Breakpoint(b)) = stop {
            self.running = false;
            self.cursor = None;
            self.status = Some((
                Level::Warning,
                format!("breakpoint: {b} (changes still arrive)"),
            ));
        }
        if changed || self.session.history.peek_seq() != before {
            self.refresh();
        }
    }
}

/// Options of the live TUI.
#[derive(Debug, Clone, Default)]
pub struct LiveUiOptions {
    /// `--theme NAME|FILE`.
    pub theme: Option<String>,
    pub log_file: Option<std::path::PathBuf>,
}

/// The App over a live session, running (scheduling as changes arrive).
pub fn app(
    session: Session,
    mut link: LiveLink,
    opts: &LiveUiOptions,
    logs: logs::LogBuffer,
) -> App {
    let (theme, keymap, mut warnings) = super::ui_setup(opts.theme.as_deref());
    // Shown now; notes left at the end are the ones that came later.
    warnings.append(&mut link.mirror.notes);
    let label = format!("live {}", link.server);
    let mode = link.mode();
    let mut app = App::new(session, &label, theme, keymap);
    app.logs = logs;
    let semantics = app.session.config().features.describe();
    app.note_all(vec![semantics]);
    app.live = Some(link);
    app.running = true;
    app.warn_all(warnings);
    if app.status.is_none() {
        let waits = if app.shadow() {
            " · Permit waits are simulated"
        } else {
            ""
        };
        let k = |c| app.keymap.key(c);
        let msg = format!(
            "live, {mode}: {} pods, {} nodes{waits} · {} pause · {} help",
            app.session.records().len(),
            app.session.snapshot().num_nodes(),
            k(super::action::Command::ContinuePause),
            k(super::action::Command::Help)
        );
        app.info(msg);
    }
    app
}

/// Runs the live TUI until the person quits (or `--duration` ends), then shuts live mode
/// down and prints what that did on standard error.
pub fn run(
    session: Session,
    link: LiveLink,
    opts: &LiveUiOptions,
    logs: logs::LogBuffer,
) -> anyhow::Result<()> {
    let mut app = app(session, link, opts, logs);
    tracing::info!("kubestep TUI on {}", app.source);
    let r = terminal::run(&mut app);
    let lines = match app.live.as_mut() {
        Some(l) => l.shutdown(&mut app.session),
        None => Vec::new(),
    };
    for l in lines {
        eprintln!("{l}");
    }
    r
}
