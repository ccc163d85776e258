//! Running the session over time: a step at a time (`n`, `s`, `f`), playing at a speed
//! (`c`, `+`, `-`) or sprinting to a breakpoint (`F`), each tick of real time passing
//! virtual time and firing the timers it passes. The engine work is the Session's.

use std::time::Duration;

use crate::session::{StopReason, clock};

use super::action::Command;
use super::app::{App, Level, PODS_PER_SEC, SPEEDS};

/// What a step key runs.
pub(super) enum StepKind {
    Point,
    Plugin,
    Pod,
}

impl App {
    pub(super) fn engine_step(&mut self, kind: StepKind) {
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

    /// `F`: runs to the next breakpoint or the end at full speed; pressed again where
    /// only Permit waits are left, on to their timeouts, as a headless run does.
    pub(super) fn sprint(&mut self) {
        if self.is_live() {
            self.info("live mode follows the cluster: there is nothing to run ahead to");
            return;
        }
        self.sprint_through_waits = None;
        if self.at_the_end() {
            self.sprint_through_waits = self.last_wait_deadline();
        }
        self.running = true;
        self.sprint = true;
        self.resume = true;
        self.cursor = None;
        let pause = self.keymap.key(Command::ContinuePause);
        if self.sprint_through_waits.is_some() {
            self.info(format!(
                "running on to the wait timeouts at full speed ({pause} pauses)"
            ));
        } else {
            self.info(format!(
                "running to the next breakpoint or the end at full speed ({pause} pauses)"
            ));
        }
    }

    /// `c`: plays at the speed set, or pauses.
    pub(super) fn continue_pause(&mut self) {
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

    /// `+` / `-`: the next replay speed up or down.
    pub(super) fn change_speed(&mut self, up: bool) {
        if self.is_live() {
            self.info("live mode follows the wall clock: there is no replay speed");
            return;
        }
        self.speed = if up {
            (self.speed + 1).min(SPEEDS.len() - 1)
        } else {
            self.speed.saturating_sub(1)
        };
        self.info(format!("replay speed {}", self.speed_words()));
    }

    /// Real time passing: in running mode, pods at the speed's pace, and virtual time
    /// while nothing is left to run at the current time.
    pub(super) fn tick(&mut self, dt: Duration) {
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
                match (self.waits_left(), self.pre_bind_waits_left()) {
                        (None, Some(w)) => {
                            let msg = format!(
                                "paused: {w}: the driver's write to the claim's device status ends it, {} runs on to the timeout",
                                self.keymap.key(Command::Sprint)
                            );
                            self.info(msg)
                        }
                        (Some(w), _) => {
                            let k = |c| self.keymap.key(c);
                            let msg = format!(
                                "paused: {w}: {} allows, {} rejects, {} runs on to the timeout",
                                k(crate::components::waiting::ALLOW),
                                k(crate::components::waiting::REJECT),
                                k(Command::Sprint)
                            );
                            self.info(msg)
                        }
                    (None, None) => self.info("paused: nothing more can happen (every pod bound, or waiting for a cluster change)"),
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

    /// When the last of the current Permit and PreBind waits times out (a pod retried
    /// after it may wait again: that is a new wait, and the sprint stops there).
    fn last_wait_deadline(&self) -> Option<jiff::Timestamp> {
        self.session
            .waiting()
            .list()
            .iter()
            .filter(|w| w.outcome.is_none())
            .flat_map(|w| w.pending.values().copied())
            .chain(self.pre_bind_holds().map(|(_, h)| h.deadline))
            .max()
    }

    /// Pods parked in a PreBind plugin's wait, with the wait.
    fn pre_bind_holds(
        &self,
    ) -> impl Iterator<Item = (&str, &crate::session::pre_bind_wait::PreBindHold)> {
        self.session.parked().values().filter_map(|a| {
            let h = a.open_pre_bind_wait()?;
            Some((a.pod().key.as_str(), h))
        })
    }

    /// The pods waiting at PreBind for their devices, and when the first wait times out.
    fn pre_bind_waits_left(&self) -> Option<String> {
        let (first, _) = self.pre_bind_holds().next()?;
        let n = self.pre_bind_holds().count();
        let deadline = self.pre_bind_holds().map(|(_, h)| h.deadline).min()?;
        let left = crate::session::clock::since(deadline, self.session.now());
        let who = if n == 1 {
            format!("{first} waits")
        } else {
            format!("{n} pods wait ({first} first)")
        };
        Some(format!(
            "{who} at PreBind for device binding conditions (the first timeout in {})",
            crate::components::text::short_duration(left)
        ))
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
}
