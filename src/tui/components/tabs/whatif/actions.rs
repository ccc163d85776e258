//! The What-if tab's actions: plugin edits (toggle, weight), field edits typed at the
//! prompt (`e`, undone with `u`), and the re-run of the pod shown under both sides, on
//! the background worker; its answer is kept only if it is for the newest re-run.

use crate::action::{Action, Command, Tab};
use crate::app::App;
use crate::background::JobKind;
use crate::components::tabs::whatif::compare::Comparison;

/// A worker's comparison.
#[derive(Debug, Clone)]
pub struct CompareDone {
    pub job: u64,
    pub comparison: Comparison,
}

impl App {
    pub(crate) fn edit_what_if(&mut self, c: Command) {
        if self.tab != Tab::WhatIf {
            self.show_tab(Tab::WhatIf);
            return;
        }
        let Some(row) = self
            .tabs
            .whatif
            .plugins
            .get(self.tabs.whatif.selected)
            .cloned()
        else {
            return;
        };
        let e = &mut self.tabs.whatif.edits;
        match c {
            c if c == super::TOGGLE => {
                if !e.disabled.remove(&row.name) {
                    e.disabled.insert(row.name.clone());
                }
            }
            _ => {
                let Some(base) = row.weight else {
                    self.error(format!("{} is not a Score plugin", row.name));
                    return;
                };
                let cur = e.weights.get(&row.name).copied().unwrap_or(base as i32);
                let next = if c == super::WEIGHT_UP {
                    cur + 1
                } else {
                    (cur - 1).max(1)
                };
                if i64::from(next) == base {
                    e.weights.remove(&row.name);
                } else {
                    e.weights.insert(row.name.clone(), next);
                }
            }
        }
        let d = self.tabs.whatif.edits.describe();
        let run = self.keymap.label(super::RUN);
        self.info(format!("what-if: {d} ({run} re-runs the pod)"));
    }

    /// A field edit typed at the prompt: checked, added, and the pod re-run with it.
    pub(crate) fn add_field_edit(&mut self, text: &str) {
        match crate::components::tabs::whatif::fields::parse(text, self.session.cluster()) {
            Ok(edit) => {
                let added = edit.describe();
                self.tabs.whatif.edits.fields.push(edit);
                self.run_what_if();
                // Say which edit the re-run is for, not only that one started.
                if let Some((_, pod)) = &self.tabs.whatif.job {
                    let msg = format!("what-if: {added} added; re-running {pod}");
                    self.info(msg);
                }
            }
            Err(e) => self.error(e),
        }
    }

    pub(crate) fn undo_field_edit(&mut self) {
        match self.tabs.whatif.edits.fields.pop() {
            Some(e) => {
                let undone = e.describe();
                self.run_what_if();
                self.info(format!("what-if: {undone} undone"));
            }
            None => self.error("what-if: no field edit to undo"),
        }
    }

    /// Re-runs the pod shown under both sides on the background worker (never into
    /// history).
    pub fn run_what_if(&mut self) {
        self.tab = Tab::WhatIf;
        let Some(pod) = self.subject_pod() else {
            self.error("no pod to re-run: step a pod or select one in the queue");
            return;
        };
        let (name, alt) = match &self.tabs.whatif.alt {
            Some((n, c)) => (n.clone(), c.clone()),
            None => (String::new(), self.session.config().clone()),
        };
        let job = crate::components::tabs::whatif::compare::compare_job(
            &self.session,
            &pod,
            &alt,
            &name,
            &self.tabs.whatif.edits,
        );
        match job {
            Ok(job) => {
                let id = self.background.submit(JobKind::WhatIf, move |id| {
                    Action::Compared(Box::new(CompareDone {
                        job: id,
                        comparison: job.run(),
                    }))
                });
                self.tabs.whatif.job = Some((id, pod.clone()));
                self.info(format!(
                    "what-if re-run of {pod} (not part of the session's history)"
                ));
            }
            Err(e) => {
                self.tabs.whatif.job = None;
                self.tabs.whatif.result = Some(Err(e.clone()));
                self.error(e);
            }
        }
    }

    /// The worker's comparison: shown if it answers the newest re-run.
    pub(crate) fn compared(&mut self, done: CompareDone) {
        if self
            .tabs
            .whatif
            .job
            .as_ref()
            .is_some_and(|(id, _)| *id == done.job)
        {
            self.tabs.whatif.job = None;
            self.tabs.whatif.result = Some(Ok(done.comparison));
        }
    }
}
