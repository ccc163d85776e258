//! Ending a run from outside the program: SIGINT, SIGTERM, SIGHUP and SIGQUIT set one
//! flag that every phase of `live`, `record` and the terminal UI looks at, so that each
//! of them ends the way `q` does (summary printed, pods waiting at Permit rejected, files
//! closed, terminal restored) instead of dying where it stands.
//!
//! The handlers run on a thread of their own with its own small runtime, so they work
//! whatever the caller's runtime is doing (or whether it has one). A second signal while
//! the first is being handled ends the process at once, for a shutdown that hangs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// The signals handled, with their numbers (for the exit status of a second signal).
const SIGNALS: [(&str, i32); 4] = [
    ("SIGINT", 2),
    ("SIGTERM", 15),
    ("SIGHUP", 1),
    ("SIGQUIT", 3),
];

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

    /// A flag the four signals set. Returns once the handlers are in place, so a signal
    /// sent after this call is never lost to the default action.
    pub fn on_signals() -> Stop {
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

    fn signalled(&self, i: usize) -> bool {
        let first = self
            .inner
            .why
            .compare_exchange(0, i + 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        self.inner.notify.notify_waiters();
        first
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
    loop {
        let next = futures::future::select_all(
            streams
                .iter_mut()
                .map(|(i, s)| Box::pin(async move { s.recv().await.map(|_| *i) })),
        );
        let (got, _, _) = next.await;
        let Some(i) = got else { return };
        if !stop.signalled(i) {
            // A second signal: the shutdown the first one started is taking too long.
            std::process::exit(128 + SIGNALS[i].1);
        }
    }
}

#[cfg(not(unix))]
async fn listen(stop: Stop, ready: std::sync::mpsc::Sender<()>) {
    let _ = ready.send(());
    if tokio::signal::ctrl_c().await.is_ok() {
        stop.signalled(0);
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
}
