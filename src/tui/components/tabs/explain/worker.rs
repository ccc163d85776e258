//! The Explain tab's engine re-run and what-if hints, on the background worker: asked
//! for when the pane shows a pod whose explanation is missing or stale, shown as
//! "computing hints…" meanwhile, and taken only if it is still about the pod shown.

use std::sync::Arc;

use crate::explain::Explanation;
use crate::explain::hints::Hint;

use crate::action::Action;
use crate::app::App;
use crate::background::JobKind;

/// What the re-run found.
#[derive(Debug, Clone)]
pub struct Explained {
    pub result: Result<Explanation, String>,
    pub hints: Vec<Hint>,
}

/// The explanation of one pod, for one state of the session.
#[derive(Debug, Clone)]
pub struct ExplainCache {
    pub pod: String,
    /// `History::peek_seq` when it was asked for: the cluster it sees.
    pub seq: u64,
    /// The background job computing it.
    pub job: u64,
    /// `None` while the worker computes it.
    pub outcome: Option<Explained>,
}

/// A worker's answer.
#[derive(Debug, Clone)]
pub struct ExplainDone {
    pub job: u64,
    pub outcome: Explained,
}

impl App {
    /// Asks for the explanation of the pod shown when it is missing or stale (not while
    /// running: it would be stale by the next tick). The Explain tab asks after every
    /// action while it is shown.
    pub(crate) fn ensure_explain(&mut self) {
        if self.running {
            return;
        }
        let Some(pod) = self.subject_pod() else {
            self.tabs.explain.cache = None;
            return;
        };
        let seq = self.session.history.peek_seq();
        if let Some(c) = self.tabs.explain.cache.as_mut()
            && c.pod == pod
            && c.seq == seq
        {
            // The worker ended without answering (a panic in the engine, in Logs).
            if c.outcome.is_none() && !self.background.expects(JobKind::Explain, c.job) {
                c.outcome = Some(Explained {
                    result: Err("the re-run stopped: the background worker ended".into()),
                    hints: Vec::new(),
                });
            }
            return;
        }
        let Some(p) = self.session.cluster().full_pod(&pod) else {
            self.tabs.explain.cache = None;
            return;
        };
        // The worker gets its own copies: the session goes on changing meanwhile.
        let cluster = self.session.cluster().clone();
        let cfg = self.session.config().clone();
        let job = self.background.submit(JobKind::Explain, move |job| {
            let result =
                crate::explain::explain(&cluster, &cfg, Arc::clone(&p)).map_err(|e| e.to_string());
            let hints = match &result {
                Ok(e) => crate::explain::hints::what_if(&cluster, &cfg, &p, e),
                Err(_) => Vec::new(),
            };
            Action::Explained(Box::new(ExplainDone {
                job,
                outcome: Explained { result, hints },
            }))
        });
        self.tabs.explain.cache = Some(ExplainCache {
            pod,
            seq,
            job,
            outcome: None,
        });
        self.tabs.explain.scroll = 0;
    }

    /// A worker's explanation: kept if it answers the newest request, else dropped.
    pub(crate) fn explained(&mut self, done: ExplainDone) {
        match self.tabs.explain.cache.as_mut() {
            Some(c) if c.job == done.job => c.outcome = Some(done.outcome),
            _ => tracing::debug!("dropped a stale explanation (job {})", done.job),
        }
    }
}
