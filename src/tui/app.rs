//! App state: the Session plus what the UI keeps of its own (focus, the time-travel
//! cursor, prompts, play); each pane's and each tab's state is its component's type, from
//! `components/`, in one field. `update.rs` applies actions to it; drawing reads it.

use crate::framework::StateTree;
use crate::session::detail::AttemptDetail;
use crate::session::{Session, StepRecord};
use std::sync::Arc;

use super::action::{Pane, Tab};
use super::components::queue::QueuePane;
use super::components::queue::pods::QueueRow;
use super::components::tabs;
use super::components::timeline::CyclePane;
use super::components::waiting::WaitingPane;
use super::keymap::Keymap;
use super::logs::LogBuffer;
use super::step_shown::{self, AttemptData};
use super::theme::Theme;

/// Replay speeds: each plays `PODS_PER_SEC` times its factor pods a second while there
/// is work (virtual time stands still while the scheduler works), and lets virtual time
/// pass at its factor while there is none. `max` runs pods as fast as the engine goes.
pub const SPEEDS: [(&str, u32); 7] = [
    ("×1", 1),
    ("×2", 2),
    ("×5", 5),
    ("×10", 10),
    ("×50", 50),
    ("×200", 200),
    ("max", 600),
];

/// Pod attempts a second at ×1: slow enough to watch each pod go through its extension
/// points, fast enough that 10,000 pods arriving at once take minutes at ×50, not hours.
pub const PODS_PER_SEC: f64 = 5.0;

/// The index in `SPEEDS` of the fastest speed not above `factor` (the slowest when below
/// them all), `+`/`-` move from there.
pub fn speed_index(factor: f64) -> usize {
    SPEEDS
        .iter()
        .rposition(|(_, f)| f64::from(*f) <= factor)
        .unwrap_or(0)
}

/// Play's pace: how many pod attempts it may still run, in steps' worth, and how many
/// steps an attempt takes (learnt as it plays), so a speed means pods a second whatever
/// the pods' attempts are made of.
#[derive(Debug, Clone, Default)]
pub struct Pace {
    /// Pod attempts play may run now (fractions: an attempt's steps run over ticks).
    pub credit: f64,
    /// Steps run and attempts ended while playing.
    pub steps: u64,
    pub attempts: u64,
}

impl Pace {
    /// The part of an attempt one step is: one over the steps an attempt takes (a dozen
    /// extension points until some attempts have ended).
    pub fn step_cost(&self) -> f64 {
        if self.attempts == 0 {
            1.0 / 12.0
        } else {
            self.attempts as f64 / self.steps.max(1) as f64
        }
    }

    /// Credit for `dt` of real time at `pods_per_sec`, kept to a quarter second's worth
    /// (and at least a step's) so time spent waiting for timers does not end in a burst.
    pub fn earn(&mut self, dt: std::time::Duration, pods_per_sec: f64) {
        let cap = (pods_per_sec / 4.0).max(self.step_cost());
        self.credit = (self.credit + dt.as_secs_f64() * pods_per_sec).min(cap);
    }

    /// One step ran; `ended` when it ended its attempt.
    pub fn spend(&mut self, ended: bool) {
        self.credit -= self.step_cost();
        self.steps += 1;
        self.attempts += u64::from(ended);
    }
}

/// What a line of input is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptKind {
    /// `:` — a headless script command.
    Command,
    JumpPod,
    /// A pane's or a tab's prompt (a filter, a what-if edit, a reject message): its text
    /// goes to that component as it is typed and when it is entered.
    Owned {
        owner: PromptOwner,
        label: String,
    },
}

/// The component a prompt belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptOwner {
    Pane(Pane),
    Tab(Tab),
}

impl PromptKind {
    pub fn label(&self) -> String {
        match self {
            PromptKind::Command => ":".into(),
            PromptKind::JumpPod => "jump to pod: ".into(),
            PromptKind::Owned { label, .. } => label.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Prompt {
        kind: PromptKind,
        text: String,
    },
    ConfirmQuit,
    Help(HelpState),
    Breakpoints {
        selected: usize,
    },
    /// A command's output (e.g. `:show queue`).
    Output {
        title: String,
        lines: Vec<String>,
        scroll: usize,
    },
}

/// Help's own state: how far it is scrolled and what it is searched for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HelpState {
    pub scroll: usize,
    pub query: String,
    /// The search is being typed (keys go into `query`).
    pub typing: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
    Error,
}

pub struct App {
    pub session: Session,
    /// What the session runs on (file name, or "demo").
    pub source: String,
    /// When the session started: times show as offsets from it.
    pub start: jiff::Timestamp,
    /// When the recording's last change happens, if after the start: where virtual time
    /// runs to (play goes on past it only for timers: backoffs, Permit timeouts).
    pub end: Option<jiff::Timestamp>,
    pub theme: Theme,
    pub keymap: Keymap,
    pub warnings: Vec<String>,
    /// How many informational notes went to Logs (see `note_all`).
    pub notes: usize,
    pub logs: LogBuffer,
    pub running: bool,
    /// Running to the next breakpoint or the end at full speed, whatever the speed.
    pub sprint: bool,
    /// This sprint runs on past the Permit waits to their timeouts, up to this time (F
    /// pressed again where only they were left).
    pub sprint_through_waits: Option<jiff::Timestamp>,
    pub speed: usize,
    pub pace: Pace,
    /// Time travel: the seq of the step shown, or `None` for the latest.
    pub cursor: Option<u64>,
    pub focus: Pane,
    pub tab: Tab,
    pub mode: Mode,
    pub status: Option<(Level, String)>,
    pub quit: bool,
    /// Text to put on the clipboard (the event loop sends it as OSC 52).
    pub clipboard: Option<String>,
    pub size: (u16, u16),
    /// The left column's width as the user set it (`{` `}` or a mouse drag).
    pub left_width: Option<u16>,
    /// A mouse drag of the border between the left column and the main pane.
    pub dragging: bool,
    /// The left column's panes' states (see `components::panes`).
    pub queue: QueuePane,
    pub waiting: WaitingPane,
    pub timeline: CyclePane,
    /// A pod jumped to (`p`) whose steps the history no longer has, with the step shown
    /// then: the panes' subject while that step stays shown.
    pub pinned_pod: Option<(String, Option<u64>)>,
    /// The tabs' states, one field per tab (declared by the registry, `components::tabs`).
    pub tabs: tabs::TabStates,
    /// Engine work off the UI thread (explain, what-if); results arrive as actions.
    pub background: super::background::Background,
    /// Live mode (`kubestep live`): the cluster link; `None` for recordings.
    pub live: Option<super::live::LiveLink>,
    /// The next tick continues from a stop (its breakpoint must not stop it again).
    pub(super) resume: bool,
    /// Attempts the panes show, recomputed in full (verdict matrix, scores, CycleState
    /// after each step): refreshed after each change, never while drawing.
    pub full: Vec<(u64, Result<Arc<AttemptDetail>, String>)>,
}

impl App {
    pub fn new(mut session: Session, source: &str, theme: Theme, keymap: Keymap) -> App {
        // Time travel shows each step's queue: history keeps it from now on.
        session.history.queues.keep = true;
        let start = session.now();
        let end = session.last_change_at();
        let mut app = App {
            session,
            source: source.to_string(),
            start,
            end: end.filter(|e| *e > start),
            theme,
            keymap,
            warnings: Vec::new(),
            notes: 0,
            logs: LogBuffer::default(),
            running: false,
            sprint: false,
            sprint_through_waits: None,
            speed: 0,
            pace: Pace::default(),
            cursor: None,
            focus: Pane::Queue,
            tab: Tab::ALL[0],
            mode: Mode::Normal,
            status: None,
            quit: false,
            clipboard: None,
            size: (80, 24),
            left_width: None,
            dragging: false,
            queue: Default::default(),
            waiting: Default::default(),
            timeline: Default::default(),
            pinned_pod: None,
            tabs: Default::default(),
            background: Default::default(),
            live: None,
            resume: false,
            full: Vec::new(),
        };
        tabs::init(&mut app);
        app.refresh();
        app
    }

    /// Adds informational notes (what loading adjusted or skipped in the input, e.g. a
    /// priority taken from a PriorityClass): logged and kept in Logs, but neither counted
    /// in the header's ⚠ nor shown on the status line.
    pub fn note_all(&mut self, notes: Vec<String>) {
        for n in &notes {
            tracing::info!(target: super::logs::SHOWN, "{n}");
            self.logs.push(super::logs::line("NOTE", n));
        }
        self.notes += notes.len();
    }

    /// Adds warnings (problems: config, theme, keys, an unreadable --compare): logged,
    /// counted in the header, and the first one shown in the status line.
    pub fn warn_all(&mut self, warnings: Vec<String>) {
        for w in &warnings {
            tracing::warn!(target: super::logs::SHOWN, "{w}");
            self.logs.push(super::logs::line("WARN", w));
        }
        if let Some(first) = warnings.first() {
            let more = if warnings.len() > 1 {
                format!(" (+{} more in Logs)", warnings.len() - 1)
            } else {
                String::new()
            };
            self.status = Some((Level::Warning, format!("{first}{more}")));
        }
        self.warnings.extend(warnings);
    }

    pub fn info(&mut self, msg: impl Into<String>) {
        let m = msg.into();
        tracing::info!("{m}");
        self.status = Some((Level::Info, m));
    }

    pub fn error(&mut self, msg: impl Into<String>) {
        let m = msg.into();
        tracing::warn!("{m}");
        self.status = Some((Level::Error, m));
    }

    /// The time of the step shown: the past step's, or now.
    pub fn shown_time(&self) -> jiff::Timestamp {
        match self.cursor.and_then(|c| self.session.history.step(c)) {
            Some(s) => s.at,
            None => self.session.now(),
        }
    }

    /// The step shown (past or latest).
    pub fn moment(&self) -> Option<&StepRecord> {
        step_shown::step_at(&self.session, self.cursor)
    }

    /// The attempt of the step shown.
    pub fn moment_attempt(&self) -> Option<AttemptData<'_>> {
        let step = self.moment()?;
        step_shown::attempt(
            &self.session,
            self.full_detail(step.attempt?),
            step.attempt?,
            Some(step),
        )
    }

    /// An attempt recomputed in full, when the panes asked for it.
    pub fn full_detail(&self, id: u64) -> Option<&AttemptDetail> {
        self.full
            .iter()
            .find(|(i, _)| *i == id)
            .and_then(|(_, d)| d.as_deref().ok())
    }

    /// Why an attempt could not be recomputed, if it could not.
    pub fn full_error(&self, id: u64) -> Option<&str> {
        self.full
            .iter()
            .find(|(i, _)| *i == id)
            .and_then(|(_, d)| d.as_ref().err().map(String::as_str))
    }

    /// CycleState as it was after the step shown.
    pub fn moment_state(&self) -> Option<Arc<Vec<StateTree>>> {
        let step = self.moment()?;
        let d = self.full_detail(step.attempt?)?;
        let i = self.session.step_index(step)?;
        d.states.get(i).cloned()
    }

    /// The attempts the tab shown shows in full, recomputed when they are not at hand
    /// (see `TabPane::attempts`).
    pub fn refresh_full(&mut self) {
        // At full speed the attempt shown changes every frame: recompute once stopped.
        if self.fast() {
            self.full.clear();
            return;
        }
        let Some(ids) = tabs::attempts(self) else {
            return;
        };
        let mut full = Vec::with_capacity(ids.len());
        for id in ids {
            let d = self.session.attempt_detail(id).map_err(|e| e.to_string());
            full.push((id, d));
        }
        self.full = full;
    }

    /// The pod the panes are about: the selected queue row when the queue has the focus,
    /// else a pod jumped to that has no step in the history (until the moment moves),
    /// else the pod of the step shown.
    pub fn subject_pod(&self) -> Option<String> {
        if self.focus == Pane::Queue
            && let Some(r) = self.queue.selected_row()
        {
            return Some(r.pod.clone());
        }
        if let Some((pod, at)) = &self.pinned_pod
            && self.moment().map(|s| s.seq) == *at
        {
            return Some(pod.clone());
        }
        self.moment()
            .and_then(|s| s.pod.as_deref().map(str::to_string))
    }

    /// The pod selected in the Queue pane.
    pub fn selected_queue_row(&self) -> Option<&QueueRow> {
        self.queue.selected_row()
    }

    /// Rebuilds what the tables show after the session or a filter changed.
    pub fn refresh(&mut self) {
        if let Some(c) = self.cursor
            && self.session.history.step(c).is_none()
        {
            self.cursor = None;
        }
        self.refresh_full();
        QueuePane::refresh(self);
        self.queue.refresh_order();
        clamp(&mut self.waiting.selected, self.waiting.rows.len());
        tabs::refresh(self);
    }

    /// The left column's width on a screen `width` wide (see `layout::left_width`).
    pub fn left_width_for(&self, width: u16) -> u16 {
        // Symbol, name, a space and room for the start of the status, in borders.
        let need = (self.queue.longest + 2 + 1 + 16 + 2).min(u16::MAX as usize) as u16;
        super::layout::left_width(width, self.left_width, need)
    }

    /// Where the panes are on the app's screen.
    pub fn areas(&self) -> super::layout::Areas {
        let footer = super::components::footer::height(self, self.size.0);
        super::layout::areas(self.size, self.left_width_for(self.size.0), footer)
    }

    /// Pods waiting at Permit right now.
    pub fn pods_waiting(&self) -> usize {
        self.session.waiting().len()
    }

    /// Pods waiting inside a PreBind plugin (device binding conditions) right now.
    pub fn pods_waiting_pre_bind(&self) -> usize {
        self.session.pre_bind_waits()
    }

    /// Running whole attempts against a time budget rather than a few steps a tick.
    pub fn fast(&self) -> bool {
        self.running && !self.is_live() && (self.sprint || self.speed >= SPEEDS.len() - 1)
    }

    /// The speed and what it means: `×5: 25 pods/s, virtual time 5× real time`.
    pub fn speed_words(&self) -> String {
        let i = self.speed.min(SPEEDS.len() - 1);
        let (label, factor) = SPEEDS[i];
        if self.sprint && self.running {
            return self.speed_label().to_string();
        }
        let pods = if i == SPEEDS.len() - 1 {
            "pods as fast as the engine goes".to_string()
        } else {
            format!("{} pods/s", PODS_PER_SEC * f64::from(factor))
        };
        format!("{label}: {pods}, virtual time {factor}× real time")
    }

    pub fn speed_label(&self) -> &'static str {
        if self.sprint && self.running {
            return "to the next breakpoint";
        }
        SPEEDS[self.speed.min(SPEEDS.len() - 1)].0
    }
}

/// A selection moved by `d` rows within `len` rows.
pub fn step(sel: usize, d: isize, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    (sel as isize).saturating_add(d).clamp(0, len as isize - 1) as usize
}

/// A scroll offset moved by `d` lines (never above the top).
pub fn scroll_by(v: usize, d: isize) -> usize {
    (v as isize).saturating_add(d).max(0) as usize
}

/// Keeps a selection inside `len` rows.
pub fn clamp(sel: &mut usize, len: usize) {
    if *sel >= len {
        *sel = len.saturating_sub(1);
    }
}
