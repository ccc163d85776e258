//! Running a session on: continue to a breakpoint, advance virtual time, fire timers,
//! and the guard that stops a pod attempted over and over at one instant.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;

use super::*;

/// Why `continue` / `advance` stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum StopReason {
    Breakpoint(String),
    /// Nothing more can happen at the current time.
    Idle,
    /// `advance` reached its target time.
    Reached,
    /// A pod was attempted over and over at one virtual instant without anything
    /// changing: the run cannot go on (see `Spin`).
    Stuck(String),
}

/// Attempts each pod ended at the current virtual instant. On the virtual clock a loop of
/// attempts that never lets time pass would run forever; past `SPIN_LIMIT` the session
/// stops and says which pod and extension point went round.
#[derive(Default)]
pub(super) struct Spin {
    at: Option<Timestamp>,
    counts: HashMap<Arc<str>, u32>,
}

/// Far more attempts of one pod at one instant than any real sequence of events gives.
pub const SPIN_LIMIT: u32 = 1000;

impl Session {
    /// Counts a finished attempt towards the spin guard.
    pub(super) fn note_spin(&mut self, a: &Attempt) {
        let now = self.now();
        if self.spin.at != Some(now) {
            self.spin.at = Some(now);
            self.spin.counts.clear();
        }
        let n = self.spin.counts.entry(a.key.clone()).or_default();
        *n += 1;
        if *n <= SPIN_LIMIT || self.stuck.is_some() {
            return;
        }
        let last = a
            .points
            .iter()
            .rev()
            .find(|p| !matches!(p.code, Code::Success | Code::Skip))
            .or(a.points.last());
        let point = last.map_or("QueueSort", |p| p.point.as_str());
        let code = last.map_or(Code::Success, |p| p.code);
        self.stuck = Some(format!(
            "pod {} was attempted {n} times at {now} without time passing; its last attempt ended at {point} ({code:?}); the replay cannot make progress",
            a.key
        ));
    }

    /// Runs until a breakpoint or until nothing more can happen at the current time.
    /// The clock does not move.
    pub fn continue_(&mut self) -> StopReason {
        let mut resume = true;
        loop {
            if let Some(r) = self.continue_from(usize::MAX, resume) {
                return r;
            }
            resume = false;
        }
    }

    /// `continue_` for at most `max` attempts (or, with breakpoints set, extension
    /// points): `None` when the budget ran out first, to be called again without
    /// `resume`.
    pub fn continue_attempts(&mut self, max: usize) -> Option<StopReason> {
        let resume = !std::mem::take(&mut self.mid_continue);
        let r = self.continue_from(max, resume);
        self.mid_continue = r.is_none();
        r
    }

    /// `continue_attempts` with the caller keeping track of stops: `resume` is true on the
    /// first call after one (the TUI at full speed).
    pub fn continue_attempts_from(&mut self, max: usize, resume: bool) -> Option<StopReason> {
        self.continue_from(max, resume)
    }

    pub(super) fn continue_from(&mut self, max: usize, resume: bool) -> Option<StopReason> {
        let mut first = resume;
        for _ in 0..max {
            if let Some(m) = &self.stuck {
                return Some(StopReason::Stuck(m.clone()));
            }
            self.expire_waits();
            if !first && let Some(b) = self.break_before() {
                return Some(StopReason::Breakpoint(b));
            }
            first = false;
            self.advanced += 1;
            // Nothing to stop at: run whole attempts.
            let by = if self.breakpoints.is_empty() {
                By::Attempt
            } else {
                By::Point
            };
            let Some(steps) = self.advance_by(by) else {
                return Some(StopReason::Idle);
            };
            if let Some(b) = self.break_after(&steps) {
                return Some(StopReason::Breakpoint(b));
            }
        }
        None
    }

    /// `continue_` with a step budget, so a driver that must stay responsive (the TUI)
    /// can run a little at a time: `None` when the budget ran out first. `resume` is true
    /// on the first call after a stop, so the breakpoint stopped at does not stop it again.
    pub fn continue_steps(&mut self, max_steps: usize, resume: bool) -> Option<StopReason> {
        let mut first = resume;
        for _ in 0..max_steps {
            if let Some(m) = &self.stuck {
                return Some(StopReason::Stuck(m.clone()));
            }
            self.expire_waits();
            if !first && let Some(b) = self.break_before() {
                return Some(StopReason::Breakpoint(b));
            }
            first = false;
            let Some(steps) = self.advance_current(false) else {
                return Some(StopReason::Idle);
            };
            if let Some(b) = self.break_after(&steps) {
                return Some(StopReason::Breakpoint(b));
            }
        }
        None
    }

    /// Lets `d` of time pass with the scheduler running: timers fire in time order
    /// (backoff, unschedulable flushes, Permit timeouts), and scheduling continues between
    /// them. Stops early at a breakpoint.
    pub fn advance(&mut self, d: Duration) -> StopReason {
        let target = clock::add(self.now(), d);
        let mut resume = true;
        loop {
            match self.advance_until(target, usize::MAX, resume) {
                Some(r) => return r,
                None => resume = false,
            }
        }
    }

    /// `advance` to `target` at most `max` attempts at a time (with breakpoints set,
    /// extension points) between timers: `None` when the budget ran out first, to be
    /// called again with the same target and `resume` false, so a driver can show each
    /// attempt as it ends. `resume` is true on the first call after a stop, as for
    /// `continue_steps`.
    pub fn advance_until(
        &mut self,
        target: Timestamp,
        max: usize,
        resume: bool,
    ) -> Option<StopReason> {
        let mut resume = resume || std::mem::take(&mut self.fresh_after_timers);
        // The budget spans the timers fired: a quiet stretch of many timers, each with a
        // few attempts, returns now and then so that the caller can show (or stream) them.
        let until = self.advanced.saturating_add(max as u64);
        loop {
            // After the queue went idle and timers fired, scheduling starts afresh.
            let left = until.saturating_sub(self.advanced) as usize;
            match self.continue_from(left, std::mem::replace(&mut resume, true)) {
                None => return None,
                Some(StopReason::Idle) => {}
                Some(other) => return Some(other),
            }
            let next = self.next_timer().filter(|t| *t <= target).unwrap_or(target);
            self.core.clock.set(next);
            self.fire_timers();
            if next >= target && !self.has_work() {
                return Some(StopReason::Reached);
            }
            if self.advanced >= until {
                self.fresh_after_timers = true;
                return None;
            }
        }
    }

    /// When something next happens on its own (a backoff ending, a Permit deadline, ...).
    pub fn next_timer(&self) -> Option<Timestamp> {
        let now = self.now();
        [
            self.core.queue.next_timer(now),
            self.core.waiting.next_deadline(),
            self.core.feed.next_at(),
        ]
        .into_iter()
        .chain(self.core.parked.values().map(|a| a.next_poll()))
        .flatten()
        .filter(|t| *t > now)
        .min()
    }

    pub(super) fn fire_timers(&mut self) {
        self.expire_waits();
        self.poll_pre_bind_waits();
        let now = self.now();
        let c = &mut self.core;
        let h = handle_of(&c.sched, &c.cluster, &c.waiting, now, 0);
        c.queue.flush_all(&h, &c.sched.frameworks, now);
    }

    pub(super) fn expire_waits(&mut self) {
        let now = self.now();
        self.core.waiting.expire(now);
    }
}
