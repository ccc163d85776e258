//! Engine work that can take long on a big cluster — the explain pane's re-run with its
//! what-if hints, the What-if tab's comparison — runs on one worker thread, on copies of
//! what it needs; each result comes back as an `Action`. Only the newest job of a kind
//! is worth running: older queued ones are dropped, and results the app no longer wants
//! (the pod changed meanwhile) are dropped by the app, which knows the newest id.

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, Sender, channel};

use super::action::Action;

/// What a job is for: one newest job per kind is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum JobKind {
    Explain,
    WhatIf,
}

type Work = Box<dyn FnOnce() -> Action + Send>;

struct Job {
    kind: JobKind,
    id: u64,
    work: Work,
}

/// A result: the action, and which job it answers.
struct Done {
    kind: JobKind,
    id: u64,
    action: Action,
}

/// Holds jobs until opened: lets a test see the screen while work is under way, with no
/// timing involved.
#[cfg(test)]
#[derive(Default)]
pub struct Gate {
    open: std::sync::Mutex<bool>,
    cv: std::sync::Condvar,
}

#[cfg(test)]
impl Gate {
    pub fn open(&self) {
        if let Ok(mut o) = self.open.lock() {
            *o = true;
        }
        self.cv.notify_all();
    }

    fn wait(&self) {
        let Ok(mut o) = self.open.lock() else { return };
        while !*o {
            match self.cv.wait(o) {
                Ok(g) => o = g,
                Err(_) => return,
            }
        }
    }
}

#[derive(Default)]
pub struct Background {
    /// Started on the first job (many sessions never need it).
    link: Option<(Sender<Job>, Receiver<Done>)>,
    /// Results of jobs run here because no thread could be started.
    ran_here: std::collections::VecDeque<Done>,
    next_id: u64,
    /// The newest job of each kind whose result has not come back.
    waiting: BTreeMap<JobKind, u64>,
    #[cfg(test)]
    pub gate: Option<std::sync::Arc<Gate>>,
}

impl Background {
    /// Queues `work` (run on the worker with its id); returns the id.
    pub fn submit(
        &mut self,
        kind: JobKind,
        work: impl FnOnce(u64) -> Action + Send + 'static,
    ) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        #[cfg(test)]
        let gate = self.gate.clone();
        let job = Job {
            kind,
            id,
            work: Box::new(move || {
                #[cfg(test)]
                if let Some(g) = gate {
                    g.wait();
                }
                work(id)
            }),
        };
        let sent = match &self.link {
            Some((tx, _)) => tx.send(job).map_err(|e| e.0),
            None => Err(job),
        };
        if let Err(job) = sent {
            // Not started yet, or the worker died (a panic in the engine): a new one.
            match start() {
                Some((tx, rx)) => match tx.send(job) {
                    Ok(()) => self.link = Some((tx, rx)),
                    Err(e) => self.run_here(e.0),
                },
                None => self.run_here(job),
            }
        }
        self.waiting.insert(kind, id);
        id
    }

    /// Whether a job's result is still to come.
    pub fn busy(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Without a thread the work is done now: slower, but the result still arrives.
    fn run_here(&mut self, job: Job) {
        let (kind, id) = (job.kind, job.id);
        let action = (job.work)();
        self.ran_here.push_back(Done { kind, id, action });
    }

    /// Whether job `id` of `kind` is the newest of its kind and its result is to come.
    pub fn expects(&self, kind: JobKind, id: u64) -> bool {
        self.waiting.get(&kind) == Some(&id)
    }

    /// A result, if one is ready (never blocks).
    pub fn try_next(&mut self) -> Option<Action> {
        let d = match self.ran_here.pop_front() {
            Some(d) => d,
            None => match self.link.as_ref()?.1.try_recv() {
                Ok(d) => d,
                Err(std::sync::mpsc::TryRecvError::Empty) => return None,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    // The worker ended (a panic in the engine): what it held is lost.
                    self.link = None;
                    self.waiting.clear();
                    return None;
                }
            },
        };
        Some(self.received(d))
    }

    /// Waits for the next result; `None` when no job is outstanding (or the worker is gone).
    pub fn wait_next(&mut self) -> Option<Action> {
        if !self.busy() {
            return None;
        }
        let d = match self.ran_here.pop_front() {
            Some(d) => d,
            None => self.link.as_ref()?.1.recv().ok()?,
        };
        Some(self.received(d))
    }

    fn received(&mut self, d: Done) -> Action {
        if self.waiting.get(&d.kind) == Some(&d.id) {
            self.waiting.remove(&d.kind);
        }
        d.action
    }
}

/// The worker: takes jobs, skips any a newer job of the same kind replaced, runs the rest.
fn start() -> Option<(Sender<Job>, Receiver<Done>)> {
    let (jobs_tx, jobs) = channel::<Job>();
    let (done_tx, done) = channel::<Done>();
    let spawned = std::thread::Builder::new()
        .name("kubestep-worker".into())
        .spawn(move || {
            while let Ok(first) = jobs.recv() {
                let mut newest: BTreeMap<JobKind, Job> = BTreeMap::new();
                newest.insert(first.kind, first);
                while let Ok(j) = jobs.try_recv() {
                    newest.insert(j.kind, j);
                }
                for (_, j) in newest {
                    let (kind, id) = (j.kind, j.id);
                    let action = (j.work)();
                    if done_tx.send(Done { kind, id, action }).is_err() {
                        return;
                    }
                }
            }
        });
    match spawned {
        Ok(_) => Some((jobs_tx, done)),
        Err(e) => {
            tracing::warn!("could not start the background worker, working in the UI thread: {e}");
            None
        }
    }
}
