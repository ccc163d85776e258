//! The step shown: the latest step, or a past one (time travel), and the
//! attempt it belongs to (verdict matrix, scores) — read from the Session and its History.

use std::time::Duration;

use crate::framework::cycle::{FilterMatrix, ScoreTable};
use crate::framework::node_info::NodeInfo;
use crate::session::detail::AttemptDetail;
use crate::session::{Point, Session, StepRecord};

/// Snapshot index → node name, for the history (names kept) or the live attempt.
#[derive(Clone, Copy)]
pub enum Names<'a> {
    Kept(&'a [String]),
    Live(&'a [NodeInfo]),
}

impl<'a> Names<'a> {
    pub fn get(&self, i: usize) -> &'a str {
        match self {
            Names::Kept(v) => v.get(i).map_or("?", String::as_str),
            Names::Live(v) => v.get(i).map_or("?", NodeInfo::name),
        }
    }
}

/// What one attempt computed, wherever it is kept.
#[derive(Clone, Copy)]
pub struct AttemptData<'a> {
    pub id: u64,
    pub pod: &'a str,
    pub profile: &'a str,
    pub matrix: Option<&'a FilterMatrix>,
    pub scores: Option<&'a ScoreTable>,
    pub names: Names<'a>,
    pub outcome: Option<&'a str>,
    pub node: Option<&'a str>,
    pub message: Option<&'a str>,
    /// Wall time of the PreEnqueue run that let the pod into the queue.
    pub pre_enqueue: Duration,
}

/// The step shown: `cursor` (a past step's seq) or the latest one.
pub fn step_at(session: &Session, cursor: Option<u64>) -> Option<&StepRecord> {
    match cursor {
        Some(seq) => session.history.step(seq),
        None => session.history.last(),
    }
}

/// The attempt with this id: finished or parked ones from history, else the one in
/// flight; its verdict matrix and scores come from `full`, the attempt recomputed in full
/// (see `session::detail`), when the app has it.
pub fn attempt<'a>(
    session: &'a Session,
    full: Option<&'a AttemptDetail>,
    id: u64,
) -> Option<AttemptData<'a>> {
    let full = full.filter(|d| d.id == id);
    let names = match full {
        Some(d) => Names::Kept(&d.node_names),
        None => Names::Live(session.snapshot().list()),
    };
    if let Some(a) = session.history.attempt(id) {
        return Some(AttemptData {
            id,
            pod: &a.pod,
            profile: &a.profile,
            matrix: full.and_then(|d| d.matrix.as_ref()),
            scores: full.and_then(|d| d.scores.as_ref()),
            names,
            outcome: a.outcome.as_deref(),
            node: a.node.as_deref(),
            message: a.message.as_deref(),
            pre_enqueue: a.pre_enqueue,
        });
    }
    let a = session.current.as_ref().filter(|a| a.id == id)?;
    Some(AttemptData {
        id,
        pod: &a.pod().key,
        profile: &session.frameworks()[a.profile].profile_name,
        matrix: full.and_then(|d| d.matrix.as_ref()),
        scores: full.and_then(|d| d.scores.as_ref()),
        names,
        outcome: None,
        node: a.node.as_deref(),
        message: None,
        pre_enqueue: a.qpi.pre_enqueue,
    })
}

/// How much of the Filter matrix existed at `step`: `None` before Filter ran, else the
/// number of plugin columns filled.
pub fn filter_columns(step: &StepRecord, matrix: &FilterMatrix) -> Option<usize> {
    let all = matrix.plugins.len();
    match step.point {
        p if p < Point::Filter => None,
        Point::Filter => match &step.plugin {
            Some(name) => matrix
                .plugins
                .iter()
                .position(|p| p == name)
                .map(|i| i + 1)
                .or(Some(all)),
            None => Some(all),
        },
        _ => Some(all),
    }
}

/// Whether scores existed at `step`.
pub fn scores_ready(step: &StepRecord) -> bool {
    step.point >= Point::Score && step.point != Point::PostFilter
}

/// How far an attempt search walks through history (steps of other pods can sit
/// between an attempt's steps when it was parked).
const WINDOW: usize = 5_000;

/// The steps of `step`'s attempt up to and including it, oldest first. Steps of other
/// pods can sit between (a parked attempt resumes later), so this walks back to the
/// attempt's first step (`QueueSort`) within a bounded window.
pub fn attempt_steps<'a>(session: &'a Session, step: &StepRecord) -> Vec<&'a StepRecord> {
    let Some(id) = step.attempt else {
        return Vec::new();
    };
    let steps = &session.history.steps;
    let Some(first) = steps.front().map(|s| s.seq) else {
        return Vec::new();
    };
    let end = (step.seq.saturating_sub(first)) as usize;
    let mut out = Vec::new();
    for i in (end.saturating_sub(WINDOW)..=end.min(steps.len().saturating_sub(1))).rev() {
        let s = &steps[i];
        if s.attempt == Some(id) {
            out.push(s);
            if s.point == Point::QueueSort {
                break;
            }
        }
    }
    out.reverse();
    out
}

/// The step of `step`'s attempt that came right after it, if history has one.
pub fn next_attempt_step<'a>(session: &'a Session, step: &StepRecord) -> Option<&'a StepRecord> {
    let id = step.attempt?;
    let steps = &session.history.steps;
    let first = steps.front()?.seq;
    let start = (step.seq + 1).checked_sub(first)? as usize;
    steps
        .range(start.min(steps.len())..)
        .take(WINDOW)
        .find(|s| s.attempt == Some(id))
}
