//! Ending a run from outside the program: SIGINT, SIGTERM, SIGHUP and SIGQUIT set one
//! flag that every phase of `live`, `record` and the terminal UI looks at, so that each
//! of them ends the way `q` does (summary printed, pods waiting at Permit rejected, files
//! closed, terminal restored) instead of dying where it stands.
//!
//! The handlers run on a thread of their own with its own small runtime, so they work
//! whatever the caller's runtime is doing (or whether it has one). A second signal while
//! the first is being handled ends the process at once, for a shutdown that hangs; during
//! a bounded shutdown (`Stop::shutting_down`) it ends that shutdown instead, which then
//! says what it did and did not do. The same signal again within `DUPLICATE_WINDOW` is
//! the same request: `timeout(1)` sends it to the child and then to its process group.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// The signals handled, with their numbers (for the exit status of a second signal).
const SIGNALS: [(&str, i32); 4] = [
    ("SIGINT", 2),
    ("SIGTERM", 15),
    ("SIGHUP", 1),
    ("SIGQUIT", 3),
];

/// The same signal within this long of the one before is taken as a copy of it.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(1);

/// How long a bounded shutdown may go on after a signal asked it to end, before the
/// process ends without it (a shutdown that does not listen is a bug, not a hang to wait).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// A request to stop, from a signal or from the program itself (`--duration`, tests).
#[derive(Clone, Default)]
pub struct Stop {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// 0: not stopped; otherwise 1 + the index in `SIGNALS`, or `usize::MAX` when
    /// triggered by the program.
    why: AtomicUsize,
    notify: Notify,
    /// Signals received, copies within `DUPLICATE_WINDOW` not counted.
    signals: AtomicUsize,
    /// 1 + the index in `SIGNALS` of the last signal counted; 0 before any.
    last: AtomicUsize,
    /// A bounded shutdown is under way and ends itself on a signal.
    shutting_down: AtomicBool,
}

impl std::fmt::Debug for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stop")
            .field("reason", &self.reason())
            .finish()
    }
}

impl Stop {
    /// A flag nothing sets but [`Stop::trigger`].
    pub fn new() -> Stop {
        Stop::default()
    }

    /// The flag the four signals set, one per process (every caller shares it, so two
    /// listeners never disagree on what a second signal is). Returns once the handlers are
    /// in place, so a signal sent after this call is never lost to the default action.
    pub fn on_signals() -> Stop {
        static PROCESS: OnceLock<Stop> = OnceLock::new();
        PROCESS.get_or_init(Stop::install).clone()
    }

    fn install() -> Stop {
        let stop = Stop::new();
        let s = stop.clone();
        let (ready, installed) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    let _ = ready.send(());
                    return;
                };
                rt.block_on(listen(s, ready));
            });
        if spawned.is_ok() {
            let _ = installed.recv_timeout(Duration::from_secs(5));
        }
        stop
    }

    /// Stops as a signal would (used for `--duration` and by tests).
    pub fn trigger(&self) {
        let _ = self
            .inner
            .why
            .compare_exchange(0, usize::MAX, Ordering::SeqCst, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    fn signalled(&self, i: usize) {
        let _ = self
            .inner
            .why
            .compare_exchange(0, i + 1, Ordering::SeqCst, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// Counts a signal; whether the process should end at once (a second signal with no
    /// bounded shutdown to end).
    fn received(&self, i: usize) -> bool {
        // Read before waking anyone: the shutdown this signal ends may be over (its
        // guard dropped) by the time `signalled` returns.
        let shutting_down = self.inner.shutting_down.load(Ordering::SeqCst);
        self.inner.last.store(i + 1, Ordering::SeqCst);
        let before = self.inner.signals.fetch_add(1, Ordering::SeqCst);
        self.signalled(i);
        before > 0 && !shutting_down
    }

    /// Signals received so far (copies within `DUPLICATE_WINDOW` not counted).
    pub fn signals(&self) -> usize {
        self.inner.signals.load(Ordering::SeqCst)
    }

    /// Completes when a signal arrives beyond the first `seen`; the signal's name.
    pub async fn signal_after(&self, seen: usize) -> &'static str {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.signals() > seen {
                return self.last_signal().unwrap_or("a signal");
            }
            notified.await;
        }
    }

    /// The last signal received ("SIGTERM").
    pub fn last_signal(&self) -> Option<&'static str> {
        match self.inner.last.load(Ordering::SeqCst) {
            0 => None,
            i => SIGNALS.get(i - 1).map(|(n, _)| *n),
        }
    }

    /// Marks a bounded shutdown as under way until the guard drops: meanwhile a further
    /// signal ends the shutdown (which waits on `signal_after`) rather than the process,
    /// so the shutdown can say what it did; if it has not ended `SHUTDOWN_GRACE` later,
    /// the process ends anyway.
    pub fn shutting_down(&self) -> ShuttingDown {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        ShuttingDown(self.clone())
    }

    pub fn is_stopped(&self) -> bool {
        self.inner.why.load(Ordering::SeqCst) != 0
    }

    /// The signal that stopped the run ("SIGTERM"), "stopped" when the program did, or
    /// `None` while running.
    pub fn reason(&self) -> Option<&'static str> {
        match self.inner.why.load(Ordering::SeqCst) {
            0 => None,
            usize::MAX => Some("stopped"),
            i => SIGNALS.get(i - 1).map(|(n, _)| *n),
        }
    }

    /// Completes once stopped.
    pub async fn wait(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(unix)]
async fn listen(stop: Stop, ready: std::sync::mpsc::Sender<()>) {
    use tokio::signal::unix::{SignalKind, signal};
    let kinds = [
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
        SignalKind::quit(),
    ];
    let mut streams: Vec<(usize, tokio::signal::unix::Signal)> = kinds
        .into_iter()
        .enumerate()
        .filter_map(|(i, k)| signal(k).ok().map(|s| (i, s)))
        .collect();
    let _ = ready.send(());
    if streams.is_empty() {
        return;
    }
    let mut copies = Copies::default();
    loop {
        let next = futures::future::select_all(
            streams
                .iter_mut()
                .map(|(i, s)| Box::pin(async move { s.recv().await.map(|_| *i) })),
        );
        let (got, _, _) = next.await;
        let Some(i) = got else { return };
        if copies.is_copy(i, Instant::now()) {
            continue;
        }
        let code = 128 + SIGNALS[i].1;
        let shutting_down = stop.inner.shutting_down.load(Ordering::SeqCst);
        if stop.received(i) {
            // A second signal: the shutdown the first one started is taking too long.
            std::process::exit(code);
        }
        if shutting_down {
            let s = stop.clone();
            tokio::spawn(async move {
                tokio::time::sleep(SHUTDOWN_GRACE).await;
                if s.inner.shutting_down.load(Ordering::SeqCst) {
                    std::process::exit(code);
                }
            });
        }
    }
}

/// Tells the copies of a signal from new ones.
#[derive(Default)]
#[cfg_attr(not(unix), allow(dead_code))]
struct Copies {
    /// The last signal counted, and when.
    last: Option<(usize, Instant)>,
}

impl Copies {
    /// Whether signal `i` at `now` is a copy of the last one counted (the same signal
    /// within `DUPLICATE_WINDOW`); if not, it is the one to compare with from now on.
    fn is_copy(&mut self, i: usize, now: Instant) -> bool {
        if self
            .last
            .is_some_and(|(j, at)| j == i && now.duration_since(at) < DUPLICATE_WINDOW)
        {
            return true;
        }
        self.last = Some((i, now));
        false
    }
}

/// A bounded shutdown under way (see [`Stop::shutting_down`]).
pub struct ShuttingDown(Stop);

impl Drop for ShuttingDown {
    fn drop(&mut self) {
        self.0.inner.shutting_down.store(false, Ordering::SeqCst);
    }
}

#[cfg(not(unix))]
async fn listen(stop: Stop, ready: std::sync::mpsc::Sender<()>) {
    let _ = ready.send(());
    if tokio::signal::ctrl_c().await.is_ok() {
        stop.received(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trigger_wakes_waiters_and_is_remembered() {
        let stop = Stop::new();
        assert!(!stop.is_stopped());
        assert_eq!(stop.reason(), None);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let s = stop.clone();
        rt.block_on(async move {
            let waiter = tokio::spawn(async move { s.wait().await });
            tokio::task::yield_now().await;
            stop.trigger();
            waiter.await.unwrap();
            assert!(stop.is_stopped());
            assert_eq!(stop.reason(), Some("stopped"));
            // Already stopped: returns at once.
            stop.wait().await;
        });
    }

    #[test]
    fn a_second_signal_ends_a_bounded_shutdown_not_the_process() {
        let stop = Stop::new();
        assert!(!stop.received(1), "the first signal only stops");
        assert_eq!(stop.reason(), Some("SIGTERM"));
        let guard = stop.shutting_down();
        let seen = stop.signals();
        assert!(!stop.received(0), "a shutdown under way ends itself");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(stop.signal_after(seen)), "SIGINT");
        drop(guard);
        assert!(
            stop.received(0),
            "with no shutdown to end, the process ends"
        );
    }

    #[test]
    fn the_same_signal_within_the_window_is_a_copy() {
        let mut c = Copies::default();
        let t = Instant::now();
        assert!(!c.is_copy(1, t));
        assert!(c.is_copy(1, t + Duration::from_millis(5)));
        assert!(
            !c.is_copy(0, t + Duration::from_millis(10)),
            "another signal"
        );
        assert!(
            !c.is_copy(0, t + DUPLICATE_WINDOW * 2),
            "later: a second signal"
        );
    }
}
