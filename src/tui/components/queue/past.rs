//! Time travel for the queue and waiting panes: at a past step they show the queue and
//! the pods waiting at Permit as history kept them after that step
//! (`session::queue_history`), never the present's.

use super::pods;
use crate::app::App;

/// What the queue and waiting panes show of a past step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastQueue {
    pub seq: u64,
    /// History still holds this step's queue (it forgets the oldest beyond a budget).
    pub kept: bool,
    /// Pods bound then that the list cannot show: deleted, or changed, since.
    pub unlisted_bound: usize,
    /// Pods waiting at Permit then.
    pub waiting: usize,
}

impl App {
    /// The time of the moment shown: the past step's, or now.
    pub fn shown_time(&self) -> jiff::Timestamp {
        match self.cursor.and_then(|c| self.session.history.step(c)) {
            Some(s) => s.at,
            None => self.session.now(),
        }
    }

    /// Rebuilds the queue and waiting rows for the moment shown.
    pub(crate) fn refresh_queue_rows(&mut self) {
        let step = self
            .cursor
            .and_then(|c| self.session.history.step(c))
            .map(|s| (s.seq, s.at));
        let Some((seq, at)) = step else {
            let m = self.session.queue_now();
            let (rows, _) = pods::queue_rows(&self.session, &m, self.session.now(), false);
            self.queue.rows = rows;
            self.waiting = m.waiting;
            self.counts = self.session.counts();
            self.past = None;
            return;
        };
        match self.session.history.queues.at(seq).cloned() {
            Some(m) if m.recorded => {
                let (rows, unlisted_bound) = pods::queue_rows(&self.session, &m, at, true);
                let mut pods: Vec<&str> = m.waiting.iter().map(|w| w.pod.as_str()).collect();
                pods.dedup();
                self.past = Some(PastQueue {
                    seq,
                    kept: true,
                    unlisted_bound,
                    waiting: pods.len(),
                });
                self.queue.rows = rows;
                self.waiting = m.waiting.clone();
            }
            _ => {
                self.past = Some(PastQueue {
                    seq,
                    kept: false,
                    unlisted_bound: 0,
                    waiting: 0,
                });
                self.queue.rows.clear();
                self.waiting.clear();
            }
        }
    }

    /// `a`, `A` and `r` act on pods waiting now: refused at a past step, whose waiting
    /// list is history. True when refused.
    pub(crate) fn refuse_in_past(&mut self, what: &str) -> bool {
        let Some(seq) = self.cursor else {
            return false;
        };
        let end = self.keymap.key(crate::action::Command::Live);
        self.error(format!(
            "{what} acts on pods waiting now, not at step {seq} shown: {end} returns to the present"
        ));
        true
    }
}
