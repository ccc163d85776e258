//! The queue's timers on the virtual clock: the backoff flush on whole seconds and the
//! unschedulable leftover flush every 30 seconds.

use jiff::{SignedDuration, Timestamp};

use super::backoff::{self, BACKOFF_WINDOW, backoff_expiry, is_backing_off, truncate_to_window};
use super::{ClusterEvent, Profile, SchedulingQueue, UNSCHEDULABLE_FLUSH_PERIOD};
use crate::framework::events::{BACKOFF_COMPLETE, matches_any};
use crate::framework::plugin::Handle;
use crate::framework::profile::Framework;
use crate::framework::queued::QueuedPodInfo;

impl SchedulingQueue {
    /// Timers: backoff completion (1 s windows), the 5-minute unschedulable leftover
    /// flush (checked every 30 s), as upstream. Runs every tick due up to `now`, in order.
    /// Call it before [`pop`](Self::pop) whenever the clock moved.
    pub fn flush(&mut self, h: &Handle, fwk: &Framework, now: Timestamp) {
        self.flush_all(h, std::slice::from_ref(fwk), now);
    }

    /// [`flush`](Self::flush) with every profile (pods re-run their own profile's
    /// PreEnqueue plugins when the leftover flush moves them).
    pub fn flush_all(&mut self, h: &Handle, frameworks: &[Framework], now: Timestamp) {
        self.start(now);
        let Some(first) = frameworks.first() else {
            return;
        };
        loop {
            let b = self.next_backoff_tick();
            let u = self.next_unschedulable_tick();
            let Some(t) = [b, u].into_iter().flatten().min() else {
                break;
            };
            if t > now {
                break;
            }
            if u == Some(t) {
                self.last_unschedulable_tick = Some(t);
                self.flush_unschedulable_leftover(h, frameworks, t);
            }
            if b == Some(t) {
                self.last_backoff_tick = Some(t);
                self.flush_backoff_completed(first, t);
            }
        }
    }

    /// `flushBackoffQCompleted` at tick `t`.
    pub(super) fn flush_backoff_completed(&mut self, fwk: &Framework, t: Timestamp) {
        let mut done = Vec::new();
        for q in [&mut self.backoff, &mut self.error_backoff] {
            while let Some(head) = q.front() {
                if is_backing_off(
                    backoff_expiry(head, self.initial_backoff, self.max_backoff),
                    t,
                ) {
                    break;
                }
                if let Some(qpi) = q.pop_front() {
                    done.push(qpi);
                }
            }
        }
        for qpi in done {
            // PreEnqueue already ran when the pod entered backoffQ.
            self.enter_active(fwk, qpi, BACKOFF_COMPLETE, t);
        }
    }

    /// Could the leftover flush move this pod (it is not gated, or its gating plugin
    /// listens to the wildcard event)?
    /// A pod whose retry would repeat its last attempt (nothing changed since) is left
    /// for the next event instead: upstream retries it every five minutes to the same
    /// answer, which in a replay of a quiet stretch is only noise, and without end.
    pub(super) fn leftover_eligible(&self, qpi: &QueuedPodInfo) -> bool {
        if self.is_quiet(qpi) {
            return false;
        }
        !qpi.gated()
            || matches_any(
                &ClusterEvent::unschedulable_timeout().event_type(),
                &qpi.gating_plugin_events,
            )
    }

    /// `flushUnschedulablePodsLeftover` at tick `t`.
    pub(super) fn flush_unschedulable_leftover(
        &mut self,
        h: &Handle,
        frameworks: &[Framework],
        t: Timestamp,
    ) {
        let max = self.max_in_unschedulable;
        let mut old: Vec<&QueuedPodInfo> = self
            .unschedulable
            .values()
            .filter(|q| backoff::add(q.timestamp, max) < t && self.leftover_eligible(q))
            .collect();
        if old.is_empty() {
            return;
        }
        old.sort_by(|a, b| a.timestamp.cmp(&b.timestamp).then(a.seq.cmp(&b.seq)));
        let uids = old.iter().map(|q| q.uid().to_string()).collect();
        let profiles: Vec<Profile> = frameworks.iter().map(|f| (f, self.hints(f))).collect();
        self.move_pods(
            h,
            &profiles,
            uids,
            &ClusterEvent::unschedulable_timeout(),
            t,
        );
    }

    /// The next backoff tick (a whole second) at which a pod completes its backoff.
    pub(super) fn next_backoff_tick(&self) -> Option<Timestamp> {
        let due = |q: &QueuedPodInfo| match self.expiry(q) {
            Some(e) => backoff::add(e, BACKOFF_WINDOW),
            None => backoff::add(truncate_to_window(q.timestamp), BACKOFF_WINDOW),
        };
        let t = [self.backoff.front(), self.error_backoff.front()]
            .into_iter()
            .flatten()
            .map(due)
            .min()?;
        Some(match self.last_backoff_tick {
            Some(last) => t.max(backoff::add(last, BACKOFF_WINDOW)),
            None => t,
        })
    }

    /// The next 30 s tick (counted from the queue's first instant) at which some pod has
    /// been unschedulable for longer than the limit.
    pub(super) fn next_unschedulable_tick(&self) -> Option<Timestamp> {
        let started = self.started?;
        let oldest = self
            .unschedulable
            .values()
            .filter(|q| self.leftover_eligible(q))
            .map(|q| q.timestamp)
            .min()?;
        let period = UNSCHEDULABLE_FLUSH_PERIOD.as_nanos() as i128;
        let tick_after = |t: Timestamp| -> Timestamp {
            // The first tick strictly after `t`, in i128 nanoseconds: a queue that started
            // centuries before `t` (a recording's header says so) must not overflow.
            let d = t.duration_since(started).as_nanos();
            let k = if d < 0 { 0 } else { d / period + 1 };
            let offset = k.saturating_mul(period);
            let secs = i64::try_from(offset / 1_000_000_000).unwrap_or(i64::MAX);
            let sub = (offset % 1_000_000_000) as i32;
            let span = SignedDuration::new(secs, sub);
            started.checked_add(span).unwrap_or(Timestamp::MAX)
        };
        let mut t = tick_after(backoff::add(oldest, self.max_in_unschedulable));
        if let Some(last) = self.last_unschedulable_tick
            && t <= last
        {
            t = tick_after(last);
        }
        Some(t)
    }

    /// When the next timer is due (for a virtual clock to jump to), if any; `now` when
    /// one is already due.
    pub fn next_timer(&self, now: Timestamp) -> Option<Timestamp> {
        [self.next_backoff_tick(), self.next_unschedulable_tick()]
            .into_iter()
            .flatten()
            .min()
            .map(|t| t.max(now))
    }
}
