//! `App::update`: the one place actions change state. Engine work goes through the
//! Session API (step, continue, allow, reject, run_command); nothing here schedules.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::session::script::{self, Command as ScriptCommand};
use crate::session::{Breakpoint, Point, StopReason, clock};

use super::action::{Action, Command, Pane, Tab};
use super::app::{App, HelpState, Level, Mode, PODS_PER_SEC, PromptKind, SPEEDS, clamp, step};
use super::components::detail::DetailTarget;
use super::components::filter::FilterTab;
use super::components::scores::ScoresTab;
use super::components::tabs;
use super::layout;

/// Rows a page key moves.
const PAGE: usize = 10;

impl App {
    /// The action a key means in the current mode (prompts take text, popups few keys).
    pub fn action_for_key(&self, key: &KeyEvent) -> Option<Action> {
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        match &self.mode {
            Mode::Prompt { .. } | Mode::Help(HelpState { typing: true, .. }) => match key.code {
                _ if ctrl_c => Some(Action::Command(Command::Cancel)),
                KeyCode::Enter => Some(Action::Submit),
                KeyCode::Esc => Some(Action::Command(Command::Cancel)),
                KeyCode::Backspace => Some(Action::Backspace),
                KeyCode::Char(c) => Some(Action::Input(c)),
                _ => None,
            },
            Mode::ConfirmQuit => match key.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => Some(Action::Submit),
                _ => Some(Action::Command(Command::Cancel)),
            },
            Mode::Breakpoints { .. }
                if matches!(key.code, KeyCode::Char('d') | KeyCode::Delete) =>
            {
                Some(Action::Input('d'))
            }
            _ => self.keymap.command(key).map(Action::Command),
        }
    }

    pub fn update(&mut self, action: Action) {
        match action {
            Action::Tick(dt) => self.tick(dt),
            Action::Resize(w, h) => self.size = (w, h),
            Action::Click(x, y) => self.click(x, y),
            Action::Drag(x, _) => self.drag(x),
            Action::Release => self.dragging = false,
            Action::ScrollUp(x, y) => self.scroll(x, y, false),
            Action::ScrollDown(x, y) => self.scroll(x, y, true),
            Action::Input(c) => self.input(c),
            Action::Backspace => match &mut self.mode {
                Mode::Prompt { text, .. } => {
                    text.pop();
                }
                Mode::Help(h) => {
                    h.query.pop();
                    h.scroll = 0;
                }
                _ => {}
            },
            Action::Submit => self.submit(),
            Action::Command(c) => self.command(c),
            Action::Explained(done) => self.explained(*done),
            Action::Compared(done) => self.compared(*done),
        }
        tabs::after_update(self);
    }

    fn command(&mut self, c: Command) {
        match &mut self.mode {
            Mode::Normal => {}
            Mode::Prompt { .. } | Mode::ConfirmQuit => {
                if c == Command::Cancel {
                    self.mode = Mode::Normal;
                }
                return;
            }
            Mode::Help(h) => {
                let h = h.clone();
                let max = super::components::help::max_scroll(self, &h);
                let Mode::Help(h) = &mut self.mode else {
                    return;
                };
                match c {
                    _ if h.typing => {
                        // Esc while typing: the search is dropped.
                        h.typing = false;
                        h.query.clear();
                    }
                    Command::Up => h.scroll = h.scroll.saturating_sub(1),
                    Command::Down => h.scroll = (h.scroll + 1).min(max),
                    Command::PageUp => h.scroll = h.scroll.saturating_sub(PAGE),
                    Command::PageDown => h.scroll = (h.scroll + PAGE).min(max),
                    Command::Top => h.scroll = 0,
                    Command::Bottom => h.scroll = max,
                    Command::Filter => h.typing = true,
                    Command::Cancel if !h.query.is_empty() => {
                        h.query.clear();
                        h.scroll = 0;
                    }
                    _ => self.mode = Mode::Normal,
                }
                return;
            }
            Mode::Output { scroll, .. } => {
                match c {
                    Command::Up => *scroll = scroll.saturating_sub(1),
                    Command::Down => *scroll += 1,
                    Command::PageUp => *scroll = scroll.saturating_sub(PAGE),
                    Command::PageDown => *scroll += PAGE,
                    Command::Top => *scroll = 0,
                    _ => self.mode = Mode::Normal,
                }
                return;
            }
            Mode::Breakpoints { selected } => {
                let n = self.session.breakpoints.len();
                match c {
                    Command::Up => *selected = selected.saturating_sub(1),
                    Command::Down => *selected = (*selected + 1).min(n.saturating_sub(1)),
                    _ => self.mode = Mode::Normal,
                }
                return;
            }
        }
        match c {
            Command::Step => self.engine_step(StepKind::Point),
            Command::StepPlugin => self.engine_step(StepKind::Plugin),
            Command::FinishPod => self.engine_step(StepKind::Pod),
            Command::Sprint if self.is_live() => {
                self.info("live mode follows the cluster: there is nothing to run ahead to");
            }
            Command::Sprint => {
                // Pressed again where only Permit waits are left: run on to their timeouts,
                // as a headless run does.
                self.sprint_through_waits = None;
                if self.at_the_end() {
                    self.sprint_through_waits = self.last_permit_deadline();
                }
                self.running = true;
                self.sprint = true;
                self.resume = true;
                self.cursor = None;
                let pause = self.keymap.key(Command::ContinuePause);
                if self.sprint_through_waits.is_some() {
                    self.info(format!(
                        "running on to the Permit timeouts at full speed ({pause} pauses)"
                    ));
                } else {
                    self.info(format!(
                        "running to the next breakpoint or the end at full speed ({pause} pauses)"
                    ));
                }
            }
            Command::ContinuePause => {
                self.running = !self.running;
                self.sprint = false;
                self.resume = true;
                if !self.running {
                    self.stop_running();
                    // At full speed nothing was recomputed: the panes catch up now, not
                    // when a tab is next entered.
                    self.refresh();
                }
                if self.running && self.is_live() {
                    self.cursor = None;
                    self.info("live: scheduling as changes arrive");
                } else if self.running {
                    self.cursor = None;
                    self.info(format!("running at {}", self.speed_words()));
                } else if self.is_live() {
                    let msg = format!(
                        "paused: changes still arrive; {} steps, {} resumes",
                        self.keymap.key(Command::Step),
                        self.keymap.key(Command::ContinuePause)
                    );
                    self.info(msg);
                } else {
                    self.info("paused");
                }
            }
            Command::Breakpoint => self.toggle_breakpoint(),
            Command::Breakpoints => self.mode = Mode::Breakpoints { selected: 0 },
            Command::Back => self.travel(-1),
            Command::Forward => self.travel(1),
            Command::Live => {
                self.cursor = None;
                self.refresh();
            }
            Command::JumpPod => self.prompt(PromptKind::JumpPod),
            Command::SpeedUp | Command::SpeedDown if self.is_live() => {
                self.info("live mode follows the wall clock: there is no replay speed");
            }
            Command::SpeedUp | Command::SpeedDown => {
                self.speed = if c == Command::SpeedUp {
                    (self.speed + 1).min(SPEEDS.len() - 1)
                } else {
                    self.speed.saturating_sub(1)
                };
                self.info(format!("replay speed {}", self.speed_words()));
            }
            Command::CommandLine => self.prompt(PromptKind::Command),
            Command::Copy => {
                let text = super::components::explain::text(self, None).join("\n");
                self.clipboard = Some(text);
                self.info("explanation copied to the clipboard (OSC 52)");
            }
            Command::Help => self.mode = Mode::Help(HelpState::default()),
            Command::Quit => {
                // Shadow mode's waits are simulated: nothing real is lost by quitting.
                if self.pods_waiting() > 0 && !self.shadow() {
                    self.mode = Mode::ConfirmQuit;
                } else {
                    self.quit = true;
                }
            }
            Command::Up => self.move_selection(-1),
            Command::Down => self.move_selection(1),
            Command::PageUp => self.move_selection(-(PAGE as isize)),
            Command::PageDown => self.move_selection(PAGE as isize),
            Command::Top => self.move_selection(isize::MIN / 2),
            Command::Bottom => self.move_selection(isize::MAX / 2),
            // The tab shown's columns, whichever pane has the focus.
            Command::ColumnLeft | Command::ColumnRight => {
                if !tabs::command(self, c) {
                    // These keys travelled in time once: say where that went.
                    let k = &self.keymap;
                    let msg = format!(
                        "{} {} move across columns in the Filter and Scores tabs; {} {} travel in time",
                        k.key(Command::ColumnLeft),
                        k.key(Command::ColumnRight),
                        k.key(Command::Back),
                        k.key(Command::Forward)
                    );
                    self.info(msg);
                }
            }
            Command::FocusNext | Command::FocusPrev => {
                let i = Pane::ORDER
                    .iter()
                    .position(|p| *p == self.focus)
                    .unwrap_or(0);
                let n = Pane::ORDER.len();
                let j = if c == Command::FocusNext {
                    (i + 1) % n
                } else {
                    (i + n - 1) % n
                };
                self.focus = Pane::ORDER[j];
                // The Cycle pane's cursor starts on the step shown (▶), so `b` breaks
                // where the person looks.
                if self.focus == Pane::Timeline
                    && let Some(p) = self.moment().map(|s| s.point)
                {
                    self.timeline_selected = Point::ALL.iter().position(|x| *x == p).unwrap_or(0);
                }
            }
            Command::Select => self.select(),
            // The tab shown's rows when it has a filter or a sort, else the queue's.
            Command::Filter => {
                if !tabs::command(self, c) {
                    self.focus = Pane::Queue;
                    self.prompt(PromptKind::QueueFilter);
                }
            }
            Command::Sort => {
                if !tabs::command(self, c) {
                    self.queue.sort = self.queue.sort.next();
                    self.refresh_queue_order();
                    self.info(format!("pods sorted by {}", self.queue.sort.label()));
                }
            }
            Command::ScoreView => ScoresTab::next_mode(self),
            Command::Allow | Command::AllowAll if self.refuse_in_past("allow") => {}
            Command::Reject if self.refuse_in_past("reject") => {}
            Command::Allow | Command::AllowAll => self.allow(c == Command::AllowAll),
            Command::Reject => match self.selected_waiting() {
                Some(w) => {
                    let kind = PromptKind::Reject {
                        pod: w.pod.clone(),
                        plugin: (!w.allowed).then(|| w.plugin.clone()),
                    };
                    self.prompt(kind);
                }
                None => self.error("no waiting pod selected"),
            },
            Command::WhatIfToggle | Command::WeightUp | Command::WeightDown => self.edit_what_if(c),
            Command::WhatIfRun => self.run_what_if(),
            Command::WhatIfField => {
                self.show_tab(Tab::WhatIf);
                self.prompt(PromptKind::WhatIfField);
            }
            Command::WhatIfUndo => self.undo_field_edit(),
            Command::Cancel => {
                if !self.queue.filter.is_empty() && self.focus == Pane::Queue {
                    self.queue.filter.clear();
                    self.refresh_queue_order();
                } else {
                    // The tab shown's filter.
                    tabs::command(self, c);
                }
                self.status = None;
            }
            Command::ShowTab(t) => self.show_tab(t),
            Command::PaneNarrower | Command::PaneWider => {
                let now = self.left_width_for(self.size.0);
                let w = if c == Command::PaneWider {
                    now.saturating_add(4)
                } else {
                    now.saturating_sub(4)
                };
                self.set_left_width(w);
            }
            // The tab shown's row of the node, else the Filter tab's.
            Command::JumpNode => {
                if !tabs::command(self, c) {
                    FilterTab::jump_to_chosen_node(self);
                }
            }
        }
    }

    pub fn show_tab(&mut self, t: Tab) {
        self.tab = t;
        self.focus = Pane::Main;
        self.refresh_full();
        tabs::refresh(self);
    }

    pub(super) fn prompt(&mut self, kind: PromptKind) {
        let text = match kind {
            PromptKind::QueueFilter => self.queue.filter.clone(),
            PromptKind::MatrixFilter => self.matrix.filter.clone(),
            _ => String::new(),
        };
        self.mode = Mode::Prompt { kind, text };
    }

    fn input(&mut self, c: char) {
        match &mut self.mode {
            Mode::Prompt { kind, text } => {
                text.push(c);
                // Filters apply as you type.
                match kind {
                    PromptKind::QueueFilter => {
                        self.queue.filter = text.clone();
                        self.refresh_queue_order();
                    }
                    PromptKind::MatrixFilter => {
                        let text = text.clone();
                        FilterTab::set_filter(self, text);
                    }
                    _ => {}
                }
            }
            Mode::Help(h) if h.typing => {
                h.query.push(c);
                h.scroll = 0;
            }
            Mode::Breakpoints { selected }
                if c == 'd' && *selected < self.session.breakpoints.len() =>
            {
                let b = self.session.breakpoints.remove(*selected);
                clamp(selected, self.session.breakpoints.len());
                self.info(format!("breakpoint {} removed", b.describe()));
            }
            _ => {}
        }
    }

    fn submit(&mut self) {
        let mode = std::mem::replace(&mut self.mode, Mode::Normal);
        match mode {
            Mode::ConfirmQuit => self.quit = true,
            Mode::Help(mut h) => {
                h.typing = false;
                self.mode = Mode::Help(h);
            }
            Mode::Prompt { kind, text } => match kind {
                PromptKind::Command => self.run_command_line(&text),
                PromptKind::QueueFilter | PromptKind::MatrixFilter => {}
                PromptKind::JumpPod => self.jump_to_pod_matching(&text),
                PromptKind::WhatIfField => self.add_field_edit(&text),
                PromptKind::Reject { pod, plugin } => {
                    match self.session.reject(&pod, plugin.as_deref(), &text) {
                        Ok(()) => {
                            let shown = if text.is_empty() {
                                "rejected by the user"
                            } else {
                                &text
                            };
                            self.resume_waiting(format!("{pod} rejected: {shown}"));
                        }
                        Err(e) => self.error(e.to_string()),
                    }
                }
            },
            other => self.mode = other,
        }
    }

    fn engine_step(&mut self, kind: StepKind) {
        let steps = match kind {
            StepKind::Point => self.session.step(),
            StepKind::Plugin => self.session.step_plugin(),
            StepKind::Pod => Some(self.session.finish_pod()).filter(|s| !s.is_empty()),
        };
        self.cursor = None;
        match steps {
            None => {
                let msg = format!(
                    "nothing to schedule now ({} lets time pass: backoffs, Permit timeouts)",
                    self.keymap.key(Command::ContinuePause)
                );
                self.info(msg)
            }
            Some(s) => {
                if let Some(last) = s.last() {
                    let plugin = last
                        .plugin
                        .as_deref()
                        .map(|p| format!(" {p}"))
                        .unwrap_or_default();
                    let msg = format!(
                        "{} {}{plugin}: {:?}{}",
                        last.pod.as_deref().unwrap_or("-"),
                        last.point.as_str(),
                        last.code,
                        if last.message().is_empty() {
                            String::new()
                        } else {
                            format!(" — {}", last.message())
                        }
                    );
                    self.info(msg);
                }
            }
        }
        self.refresh();
    }

    /// Real time passing: in running mode, pods at the speed's pace, and virtual time
    /// while nothing is left to run at the current time.
    fn tick(&mut self, dt: Duration) {
        if self.is_live() {
            self.live_tick();
            return;
        }
        if !self.running {
            return;
        }
        let resume = std::mem::take(&mut self.resume);
        let fast = self.fast();
        self.session.history.queues.coarse = fast;
        let outcome = self.play(dt, resume);
        match outcome {
            Some(StopReason::Breakpoint(b)) => {
                self.stop_running();
                self.status = Some((Level::Warning, format!("breakpoint: {b}")));
            }
            Some(StopReason::Stuck(m)) => {
                self.running = false;
                self.status = Some((Level::Error, format!("stopped: {m}")));
            }
            // Play ends where nothing more can happen.
            Some(StopReason::Idle) => {
                self.stop_running();
                match self.waits_left() {
                        Some(w) => {
                            let k = |c| self.keymap.key(c);
                            let msg = format!(
                                "paused: {w}: {} allows, {} rejects, {} runs on to the timeout",
                                k(Command::Allow),
                                k(Command::Reject),
                                k(Command::Sprint)
                            );
                            self.info(msg)
                        }
                    None => self.info("paused: nothing more can happen (every pod bound, or waiting for a cluster change)"),
                }
            }
            _ => {}
        }
        self.refresh();
    }

    /// One tick of play, for up to `FAST_BUDGET` of wall time so the screen and the keys
    /// keep up: pods at the speed's pace (whole attempts at full speed), and, whenever
    /// nothing can run at the current time, virtual time at the speed's factor, firing
    /// every timer (arrivals, backoffs, Permit timeouts) it passes; a sprint jumps to the
    /// next timer. `Idle` when play has reached its end.
    fn play(&mut self, dt: Duration, resume: bool) -> Option<StopReason> {
        let deadline = std::time::Instant::now() + super::terminal::FAST_BUDGET;
        let factor = SPEEDS[self.speed.min(SPEEDS.len() - 1)].1;
        let fast = self.fast();
        // Virtual time this tick may pass while nothing runs.
        let mut owed = dt.saturating_mul(factor);
        if !fast {
            self.pace.earn(dt, PODS_PER_SEC * f64::from(factor));
        }
        let mut resume = resume;
        loop {
            let outcome = if fast {
                self.session.continue_attempts_from(16, resume)
            } else if self.pace.credit > 0.0 {
                let r = self.session.continue_steps(1, resume);
                if r.is_none() {
                    self.pace.spend(self.session.current.is_none());
                }
                r
            } else if self.session.has_work() {
                // This tick's pods have run.
                return None;
            } else {
                Some(StopReason::Idle)
            };
            resume = false;
            match outcome {
                None => {}
                Some(StopReason::Idle) => {
                    if self.session.settled() || (self.sprint && self.at_the_end()) {
                        return Some(StopReason::Idle);
                    }
                    let now = self.session.now();
                    let next = self.session.next_timer();
                    let t = match next {
                        Some(t) if self.sprint => t,
                        _ if owed.is_zero() => return None,
                        _ => {
                            let target = clock::add(now, owed);
                            next.filter(|t| *t <= target).unwrap_or(target)
                        }
                    };
                    owed = owed.saturating_sub(clock::since(t, now));
                    self.session.set_time(t);
                    self.session.fire_timers_pub();
                }
                other => return other,
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
        }
    }

    /// Nothing is left but pods that wait for a person (at Permit, unless this sprint
    /// runs on to their timeouts) or a cluster change (the unschedulable pool's periodic
    /// flush would retry them forever).
    fn at_the_end(&mut self) -> bool {
        let through = self.sprint_through_waits;
        let s = &mut self.session;
        let c = s.counts();
        let now = s.now();
        !s.has_work() && s.feed_is_empty() && c.backoff == 0 && through.is_none_or(|t| now >= t)
    }

    /// When the last of the current Permit waits times out (a pod retried after it may
    /// wait again: that is a new wait, and the sprint stops there).
    fn last_permit_deadline(&self) -> Option<jiff::Timestamp> {
        self.session
            .waiting()
            .list()
            .iter()
            .filter(|w| w.outcome.is_none())
            .flat_map(|w| w.pending.values().copied())
            .max()
    }

    /// The pods still waiting at Permit, and when the first wait times out, in words.
    fn waits_left(&self) -> Option<String> {
        let waiting = self.session.waiting();
        let first = waiting.list().into_iter().next()?;
        let n = waiting.len();
        let timeout = waiting
            .next_deadline()
            .map(|d| {
                let left = crate::session::clock::since(d, self.session.now());
                format!(
                    " (the first timeout in {})",
                    crate::components::text::short_duration(left)
                )
            })
            .unwrap_or_default();
        let who = if n == 1 {
            format!("{} waits", first.pod.key)
        } else {
            format!("{n} pods wait ({} first)", first.pod.key)
        };
        Some(format!("{who} at Permit{timeout}"))
    }

    fn stop_running(&mut self) {
        self.running = false;
        self.sprint = false;
        self.cursor = None;
        self.session.history.queues.coarse = false;
        self.session.note_queue_now();
    }

    fn travel(&mut self, d: i64) {
        let Some(last) = self.session.history.last().map(|s| s.seq) else {
            return;
        };
        let Some(first) = self.session.history.steps.front().map(|s| s.seq) else {
            return;
        };
        let cur = self.cursor.unwrap_or(last) as i64;
        let next = (cur + d).clamp(first as i64, last as i64) as u64;
        self.cursor = (next != last).then_some(next);
        self.refresh();
    }

    /// Shows the latest step of `pod` (and the pod in Detail when it never ran).
    pub fn focus_pod(&mut self, pod: &str) {
        let seq = self
            .session
            .history
            .steps
            .iter()
            .rev()
            .find(|s| s.pod.as_deref() == Some(pod))
            .map(|s| s.seq);
        self.detail.open(DetailTarget::Pod(pod.to_string()));
        match seq {
            Some(seq) => {
                let last = self.session.history.last().map(|s| s.seq);
                self.cursor = (Some(seq) != last).then_some(seq);
                self.info(format!("{pod}: its latest step (#{seq})"));
            }
            None => {
                self.tab = Tab::Detail;
                // The pod becomes the subject, so Explain re-runs this pod, not the one
                // of the step shown.
                self.pinned_pod = Some((pod.to_string(), self.moment().map(|s| s.seq)));
                let attempts = self.session.record(pod).map_or(0, |r| r.attempts);
                if attempts == 0 {
                    self.info(format!("{pod} has not been attempted yet"));
                } else {
                    self.info(format!(
                        "{pod}: its {attempts} attempt(s) are no longer in the history (--history bounds it); Explain ({}) re-runs it on the current cluster",
                        self.keymap.key(Command::ShowTab(Tab::Explain))
                    ));
                }
            }
        }
        self.refresh();
    }

    fn jump_to_pod_matching(&mut self, text: &str) {
        let exact = self
            .session
            .records()
            .contains_key(text)
            .then(|| text.to_string());
        let found = exact.or_else(|| {
            self.session
                .records()
                .keys()
                .find(|k| crate::components::text::fuzzy(text, k))
                .cloned()
        });
        match found {
            Some(p) => {
                if let Some(i) = self
                    .queue
                    .order
                    .iter()
                    .position(|&i| self.queue.rows.get(i).is_some_and(|r| r.pod == p))
                {
                    self.queue.selected = i;
                }
                self.focus_pod(&p);
            }
            None => self.error(format!("no pod matches {text:?}")),
        }
    }

    fn select(&mut self) {
        match self.focus {
            Pane::Queue => {
                if let Some(p) = self.selected_queue_row().map(|r| r.pod.clone()) {
                    self.focus_pod(&p);
                }
            }
            Pane::Waiting => {
                if let Some(p) = self.selected_waiting().map(|w| w.pod.clone()) {
                    self.detail.target = Some(DetailTarget::Pod(p));
                    self.show_tab(Tab::Detail);
                }
            }
            Pane::Timeline => {
                let point = Point::ALL[self.timeline_selected.min(Point::ALL.len() - 1)];
                let Some(id) = self.moment().and_then(|s| s.attempt) else {
                    return;
                };
                let seq = self
                    .session
                    .history
                    .steps
                    .iter()
                    .rev()
                    .find(|s| s.attempt == Some(id) && s.point == point)
                    .map(|s| s.seq);
                match seq {
                    Some(seq) => {
                        let last = self.session.history.last().map(|s| s.seq);
                        self.cursor = (Some(seq) != last).then_some(seq);
                        self.refresh();
                    }
                    None => self.info(format!("{} has not run in this attempt", point.as_str())),
                }
            }
            Pane::Main => tabs::select(self),
        }
    }

    fn move_selection(&mut self, d: isize) {
        match self.focus {
            Pane::Queue => {
                self.queue.selected = step(self.queue.selected, d, self.queue.order.len());
                self.name_selected_if_cut();
            }
            Pane::Waiting => {
                self.waiting_selected = step(self.waiting_selected, d, self.waiting.len())
            }
            Pane::Timeline => {
                self.timeline_selected = step(self.timeline_selected, d, Point::ALL.len())
            }
            Pane::Main => tabs::move_selection(self, d),
        }
    }

    /// Puts the selected pod's full name and status on the status line when the queue
    /// pane's bottom border cannot hold it (a narrow left column).
    fn name_selected_if_cut(&mut self) {
        let room = self.areas().queue.width.saturating_sub(4) as usize;
        if let Some(row) = self.selected_queue_row() {
            let text = super::components::queue::selected_text(row);
            if text.chars().count() > room {
                self.status = Some((Level::Info, text));
            }
        }
    }

    fn toggle_breakpoint(&mut self) {
        let b = match self.focus {
            Pane::Queue => self
                .selected_queue_row()
                .map(|r| Breakpoint::Pod(r.pod.clone())),
            Pane::Timeline => Some(Breakpoint::Point(
                Point::ALL[self.timeline_selected.min(Point::ALL.len() - 1)],
            )),
            Pane::Main => tabs::breakpoint(self),
            Pane::Waiting => tabs::moment_breakpoint(self),
        };
        let Some(b) = b else {
            self.error("nothing selected to break on");
            return;
        };
        if let Some(i) = self.session.breakpoints.iter().position(|x| *x == b) {
            self.session.breakpoints.remove(i);
            self.info(format!("breakpoint {} removed", b.describe()));
        } else {
            self.info(format!("breakpoint {} set", b.describe()));
            self.session.add_breakpoint(b);
        }
    }

    fn allow(&mut self, all: bool) {
        let Some(w) = self.selected_waiting().cloned() else {
            self.error("no waiting pod selected");
            return;
        };
        let plugin = (!all && !w.allowed).then_some(w.plugin.as_str());
        match self.session.allow(&w.pod, plugin) {
            Ok(()) => {
                let what = plugin.map(|p| format!(" by {p}")).unwrap_or_default();
                self.resume_waiting(format!("{} allowed{what}", w.pod));
            }
            Err(e) => self.error(e.to_string()),
        }
    }

    /// After allow / reject: when the wait is over and no other pod is mid-attempt, run
    /// the parked attempt on (bind, or Unreserve and requeue) so the result shows at once.
    fn resume_waiting(&mut self, msg: String) {
        let decided = self.session.parked().keys().any(|uid| {
            self.session
                .waiting()
                .get(uid)
                .is_none_or(|w| w.outcome.is_some())
        });
        let mut msg = msg;
        if decided && self.session.current.is_none() {
            let steps = self.session.finish_pod();
            if let Some(last) = steps.last() {
                msg.push_str(&format!(
                    " → {} {}",
                    last.point.as_str(),
                    if last.code == crate::framework::Code::Success {
                        "done"
                    } else {
                        "failed"
                    }
                ));
            }
            if let Some(p) = steps.last().and_then(|s| s.pod.clone())
                && let Some(r) = self.session.record(&*p)
            {
                msg.push_str(&format!(
                    " ({:?}{})",
                    r.status,
                    r.node
                        .as_ref()
                        .map(|n| format!(" on {n}"))
                        .unwrap_or_default()
                ));
            }
        } else if decided {
            msg.push_str(" (resumes after the current pod)");
        }
        if self.shadow() {
            msg.push_str(" (simulated: shadow mode writes nothing)");
        }
        self.cursor = None;
        self.info(msg);
        self.refresh();
    }

    fn run_command_line(&mut self, text: &str) {
        let cmd = match script::parse(text) {
            Ok(Some(c)) => c,
            Ok(None) => return,
            Err(e) => {
                self.error(e);
                return;
            }
        };
        if cmd == ScriptCommand::Quit {
            self.command(Command::Quit);
            return;
        }
        let before = self.session.history.peek_seq();
        match self.session.run_command(&cmd) {
            Ok(ran) => {
                let steps = self.session.history.peek_seq() - before;
                if let ScriptCommand::Show(_) = cmd {
                    let lines = ran
                        .output
                        .iter()
                        .flat_map(|v| {
                            serde_json::to_string_pretty(v)
                                .unwrap_or_default()
                                .lines()
                                .map(str::to_string)
                                .collect::<Vec<_>>()
                        })
                        .collect();
                    self.mode = Mode::Output {
                        title: text.trim().to_string(),
                        lines,
                        scroll: 0,
                    };
                } else if let ScriptCommand::Break(b) = &cmd {
                    let n = self.session.breakpoints.len();
                    self.info(format!(
                        "breakpoint set: {} ({n} set; {} lists them, {} runs to one)",
                        b.describe(),
                        self.keymap.key(Command::Breakpoints),
                        self.keymap.key(Command::ContinuePause)
                    ));
                } else if cmd == ScriptCommand::Clear {
                    self.info("breakpoints cleared");
                } else {
                    let stop = ran
                        .output
                        .iter()
                        .rev()
                        .find(|v| v["type"] == "stop")
                        .map(|v| format!(", stopped: {}", v["reason"].as_str().unwrap_or("")))
                        .unwrap_or_default();
                    self.info(format!("{}: {steps} step(s){stop}", text.trim()));
                }
                self.cursor = None;
                self.refresh();
            }
            Err(e) => self.error(e.to_string()),
        }
    }

    /// Sets the left column's width (kept within bounds) and says so.
    fn set_left_width(&mut self, w: u16) {
        let w = layout::left_width(self.size.0, Some(w), 0);
        self.left_width = Some(w);
        self.info(format!(
            "left panes {w} columns wide ({} {} resize; drag the border with the mouse)",
            self.keymap.label(Command::PaneNarrower),
            self.keymap.label(Command::PaneWider)
        ));
    }

    /// A mouse drag: moves the border between the left column and the main pane when
    /// the drag started on it.
    fn drag(&mut self, x: u16) {
        if self.dragging {
            self.set_left_width(x.saturating_add(1));
        }
    }

    fn click(&mut self, x: u16, y: u16) {
        if self.mode != Mode::Normal {
            return;
        }
        let l = self.areas();
        // The border between the left column and the main pane: a drag starts.
        if y > l.header.y && y < l.footer.y && (x + 1 == l.main.x || x == l.main.x) {
            self.dragging = true;
            return;
        }
        let hit = |r: ratatui::layout::Rect| {
            x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height
        };
        if hit(l.queue) {
            self.focus = Pane::Queue;
            if let Some(i) = layout::row_at(l.queue, 0, 0, y, self.queue.selected) {
                self.queue.selected = i.min(self.queue.order.len().saturating_sub(1));
                self.name_selected_if_cut();
            }
        } else if hit(l.waiting) {
            self.focus = Pane::Waiting;
            if let Some(i) = layout::row_at(l.waiting, 0, 0, y, self.waiting_selected) {
                self.waiting_selected = i.min(self.waiting.len().saturating_sub(1));
            }
        } else if hit(l.timeline) {
            self.focus = Pane::Timeline;
            if let Some(i) = layout::row_at(l.timeline, 0, 0, y, self.timeline_selected) {
                self.timeline_selected = i.min(Point::ALL.len() - 1);
            }
        } else if hit(l.main) {
            self.focus = Pane::Main;
            if y == l.main.y
                && let Some(t) = layout::tab_at(l.main, x, self.tab)
            {
                self.tab = t;
                return;
            }
            tabs::click(self, l.main, y);
        }
    }

    fn scroll(&mut self, x: u16, y: u16, down: bool) {
        let l = self.areas();
        let hit = |r: ratatui::layout::Rect| {
            x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height
        };
        let focus = [
            (l.queue, Pane::Queue),
            (l.waiting, Pane::Waiting),
            (l.timeline, Pane::Timeline),
            (l.main, Pane::Main),
        ]
        .into_iter()
        .find(|(r, _)| hit(*r))
        .map(|(_, p)| p);
        if let Some(p) = focus {
            self.focus = p;
            self.move_selection(if down { 3 } else { -3 });
        }
    }
}

enum StepKind {
    Point,
    Plugin,
    Pod,
}
