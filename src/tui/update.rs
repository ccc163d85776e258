//! `App::update`: the one place actions change state. Engine work goes through the
//! Session API (step, continue, allow, reject, run_command); nothing here schedules.
//! `App::command` keeps the app's own commands (stepping and play are in `play.rs`);
//! the rest go to the panes and tabs they are meant for (`components::panes`).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;

use crate::session::script::{self, Command as ScriptCommand};

use super::action::{Action, Command, Pane, Tab};
use super::app::{App, HelpState, Mode, PromptKind, PromptOwner, clamp};
use super::components::tabs::detail::DetailTarget;
use super::components::{panes, popups, tabs};
use super::layout;
use super::play::StepKind;

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
        if self.mode != Mode::Normal {
            popups::command(self, c);
            return;
        }
        match c {
            Command::Step => self.engine_step(StepKind::Point),
            Command::StepPlugin => self.engine_step(StepKind::Plugin),
            Command::FinishPod => self.engine_step(StepKind::Pod),
            Command::Sprint => self.sprint(),
            Command::ContinuePause => self.continue_pause(),
            Command::Breakpoint => self.toggle_breakpoint(),
            Command::Breakpoints => self.mode = Mode::Breakpoints { selected: 0 },
            Command::Back => self.travel(-1),
            Command::Forward => self.travel(1),
            Command::Live => {
                self.cursor = None;
                self.refresh();
            }
            Command::JumpPod => self.prompt(PromptKind::JumpPod),
            Command::SpeedUp | Command::SpeedDown => self.change_speed(c == Command::SpeedUp),
            Command::CommandLine => self.prompt(PromptKind::Command),
            Command::Help => self.mode = Mode::Help(HelpState::default()),
            Command::Quit => {
                // Shadow mode's waits are simulated: nothing real is lost by quitting.
                if self.pods_waiting() + self.pods_waiting_pre_bind() > 0 && !self.shadow() {
                    self.mode = Mode::ConfirmQuit;
                } else {
                    self.quit = true;
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
                panes::focused(self);
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
            // Whoever clears a filter, Esc clears the status line too.
            Command::Cancel => {
                panes::command(self, c);
                self.status = None;
            }
            // The rest are the panes' and the tabs' (moves, Enter, their own keys).
            _ => {
                panes::command(self, c);
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
        self.mode = Mode::Prompt {
            kind,
            text: String::new(),
        };
    }

    /// Opens a pane's or a tab's prompt, `text` already typed (a filter being changed).
    pub fn prompt_for(&mut self, owner: PromptOwner, label: &str, text: String) {
        let label = label.to_string();
        self.mode = Mode::Prompt {
            kind: PromptKind::Owned { owner, label },
            text,
        };
    }

    fn input(&mut self, c: char) {
        match &mut self.mode {
            Mode::Prompt { kind, text } => {
                text.push(c);
                // Filters apply as you type.
                if let PromptKind::Owned { owner, .. } = kind {
                    let (owner, text) = (*owner, text.clone());
                    prompt_input(self, owner, &text);
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
                PromptKind::JumpPod => self.jump_to_pod_matching(&text),
                PromptKind::Owned { owner, .. } => match owner {
                    PromptOwner::Pane(p) => panes::prompt_submit(self, p, &text),
                    PromptOwner::Tab(t) => tabs::prompt_submit(self, t, &text),
                },
            },
            other => self.mode = other,
        }
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
        self.tabs.detail.open(DetailTarget::Pod(pod.to_string()));
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

    fn toggle_breakpoint(&mut self) {
        let Some(b) = panes::breakpoint(self) else {
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
                if let ScriptCommand::Show(_) | ScriptCommand::Help = cmd {
                    let lines = ran
                        .output
                        .iter()
                        .flat_map(|v| {
                            let text = match v["text"].as_str() {
                                Some(help) if v["type"] == "help" => help.to_string(),
                                _ => serde_json::to_string_pretty(v).unwrap_or_default(),
                            };
                            text.lines().map(str::to_string).collect::<Vec<_>>()
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
        if let Some((area, p)) = pane_at(&l, x, y) {
            self.focus = p;
            panes::click(self, area, x, y);
        }
    }

    fn scroll(&mut self, x: u16, y: u16, down: bool) {
        let l = self.areas();
        if let Some((_, p)) = pane_at(&l, x, y) {
            self.focus = p;
            panes::move_selection(self, if down { 3 } else { -3 });
        }
    }
}

/// A character typed at a pane's or a tab's prompt: `text` is the whole line so far.
fn prompt_input(app: &mut App, owner: PromptOwner, text: &str) {
    match owner {
        PromptOwner::Pane(p) => panes::prompt_input(app, p, text),
        PromptOwner::Tab(t) => tabs::prompt_input(app, t, text),
    }
}

/// The pane at a screen position, with its area.
fn pane_at(l: &layout::Areas, x: u16, y: u16) -> Option<(Rect, Pane)> {
    [
        (l.queue, Pane::Queue),
        (l.waiting, Pane::Waiting),
        (l.timeline, Pane::Timeline),
        (l.main, Pane::Main),
    ]
    .into_iter()
    .find(|(r, _)| x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height)
}
