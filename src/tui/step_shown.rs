//! The step shown: the latest step, or a past one (time travel), and the
//! attempt it belongs to (verdict matrix, scores) — read from the Session and its History.

use std::time::Duration;

use crate::framework::cycle::{FilterMatrix, ScoreTable};
use crate::framework::node_info::NodeInfo;
use crate::session::detail::AttemptDetail;
use crate::session::history::Decided;
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
/// (see `session::detail`), when the app has it. Its outcome, node and message are as
/// they stood at step `at` (the step shown): time travel never shows an attempt's end
/// before it came.
pub fn attempt<'a>(
    session: &'a Session,
    full: Option<&'a AttemptDetail>,
    id: u64,
    at: Option<&StepRecord>,
) -> Option<AttemptData<'a>> {
    let full = full.filter(|d| d.id == id);
    let names = match full {
        Some(d) => Names::Kept(&d.node_names),
        None => Names::Live(session.snapshot().list()),
    };
    if let Some(a) = session.history.attempt(id) {
        let d = match at {
            Some(step) => a.as_of(step),
            None => Decided {
                outcome: a.outcome.as_deref(),
                node: a.node.as_deref(),
                message: a.message.as_deref(),
            },
        };
        return Some(AttemptData {
            id,
            pod: &a.pod,
            profile: &a.profile,
            matrix: full.and_then(|d| d.matrix.as_ref()),
            scores: full.and_then(|d| d.scores.as_ref()),
            names,
            outcome: d.outcome,
            node: d.node,
            message: d.message,
            pre_enqueue: a.pre_enqueue,
        });
    }
    let a = session.current.as_ref().filter(|a| a.id == id)?;
    let node = match at {
        Some(step) => Decided::in_progress(step, a.node.as_deref()).node,
        None => a.node.as_deref(),
    };
    Some(AttemptData {
        id,
        pod: &a.pod().key,
        profile: &session.frameworks()[a.profile].profile_name,
        matrix: full.and_then(|d| d.matrix.as_ref()),
        scores: full.and_then(|d| d.scores.as_ref()),
        names,
        outcome: None,
        node,
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

/// How much of a score table existed at a step: Score fills each plugin's raw column
/// in turn, NormalizeScore each normalized one (a plugin without it keeps its raw
/// scores), and SelectHost the extenders' columns, the totals and the choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScoresThen {
    point: Point,
    /// The column of the step's own plugin (it has run), when the step is one plugin's.
    upto: Option<usize>,
}

impl ScoresThen {
    /// At `step` (`None` before Score ran).
    pub fn at(step: &StepRecord, table: &ScoreTable) -> Option<ScoresThen> {
        if !scores_ready(step) {
            return None;
        }
        let upto = step
            .plugin
            .as_deref()
            .and_then(|p| table.plugins.iter().position(|x| x.name == p));
        Some(ScoresThen {
            point: step.point,
            upto,
        })
    }

    fn ran(&self, point: Point, c: usize) -> bool {
        self.point > point || self.point == point && self.upto.is_none_or(|k| c <= k)
    }

    /// Column `c` (plugins, then extenders) had its raw scores.
    pub fn raw(&self, table: &ScoreTable, c: usize) -> bool {
        match table.plugins.get(c) {
            Some(_) => self.ran(Point::Score, c),
            None => self.totals(),
        }
    }

    /// Column `c` had its normalized (and so weighted) scores.
    pub fn normalized(&self, table: &ScoreTable, c: usize) -> bool {
        match table.plugins.get(c) {
            Some(p) => {
                self.raw(table, c) && (!p.has_normalize || self.ran(Point::NormalizeScore, c))
            }
            None => self.totals(),
        }
    }

    /// Column `c` had its weighted scores: upstream weighs every column once
    /// NormalizeScore is over.
    pub fn weighted(&self, table: &ScoreTable, c: usize) -> bool {
        self.normalized(table, c) && self.point > Point::NormalizeScore
    }

    /// The totals, the rank and the node chosen (SelectHost's work).
    pub fn totals(&self) -> bool {
        self.point >= Point::SelectHost
    }
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
