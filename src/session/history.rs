//! History: every step the session took, kept (bounded) so any past moment can be looked
//! at again, and the JSON form of those steps (the trace).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;

use crate::framework::cycle::{FilterMatrix, ScoreTable};
use crate::framework::{Code, StateTree};

/// The extension points a pod goes through, in order (the debugger's timeline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Point {
    PreEnqueue,
    QueueSort,
    PreFilter,
    Filter,
    PostFilter,
    PreScore,
    Score,
    NormalizeScore,
    SelectHost,
    Reserve,
    Permit,
    WaitOnPermit,
    PreBind,
    Bind,
    PostBind,
    Unreserve,
}

impl Point {
    pub const ALL: [Point; 16] = [
        Point::PreEnqueue,
        Point::QueueSort,
        Point::PreFilter,
        Point::Filter,
        Point::PostFilter,
        Point::PreScore,
        Point::Score,
        Point::NormalizeScore,
        Point::SelectHost,
        Point::Reserve,
        Point::Permit,
        Point::WaitOnPermit,
        Point::PreBind,
        Point::Bind,
        Point::PostBind,
        Point::Unreserve,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Point::PreEnqueue => "PreEnqueue",
            Point::QueueSort => "QueueSort",
            Point::PreFilter => "PreFilter",
            Point::Filter => "Filter",
            Point::PostFilter => "PostFilter",
            Point::PreScore => "PreScore",
            Point::Score => "Score",
            Point::NormalizeScore => "NormalizeScore",
            Point::SelectHost => "SelectHost",
            Point::Reserve => "Reserve",
            Point::Permit => "Permit",
            Point::WaitOnPermit => "WaitOnPermit",
            Point::PreBind => "PreBind",
            Point::Bind => "Bind",
            Point::PostBind => "PostBind",
            Point::Unreserve => "Unreserve",
        }
    }

    pub fn parse(s: &str) -> Option<Point> {
        Point::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s))
    }
}

/// Queue sizes at a moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct QueueCounts {
    pub active: usize,
    pub backoff: usize,
    pub unschedulable: usize,
    pub gated: usize,
    pub waiting: usize,
    pub bound: usize,
}

/// One step: one extension point (or one plugin) of one pod's attempt.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRecord {
    pub seq: u64,
    pub at: Timestamp,
    pub attempt: Option<u64>,
    pub pod: Option<String>,
    pub point: Point,
    pub plugin: Option<String>,
    pub code: Code,
    pub message: String,
    #[serde(rename = "durationMicros", serialize_with = "micros")]
    pub duration: Duration,
    pub queue: QueueCounts,
    /// CycleState as it was after this step (kept when history detail is on).
    #[serde(skip)]
    pub state: Option<Arc<Vec<StateTree>>>,
    /// Names of the CycleState entries this step added or changed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
}

fn micros<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_micros() as u64)
}

/// What one scheduling attempt computed: the verdict matrix and scores, with node names
/// (the snapshot changes later, so indices would not do).
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    pub id: u64,
    pub pod: String,
    pub profile: String,
    pub started: Timestamp,
    /// Wall time of the PreEnqueue run that let the pod into the queue.
    pub pre_enqueue: Duration,
    pub matrix: Option<FilterMatrix>,
    pub scores: Option<ScoreTable>,
    /// Snapshot index → node name, as of the attempt.
    pub node_names: Arc<Vec<String>>,
    pub outcome: Option<String>,
    pub node: Option<String>,
    pub message: Option<String>,
}

/// Bounded step and attempt history.
#[derive(Debug, Clone)]
pub struct History {
    pub steps: VecDeque<StepRecord>,
    pub attempts: VecDeque<Arc<AttemptRecord>>,
    pub max_steps: usize,
    pub max_attempts: usize,
    next_seq: u64,
    /// Steps taken since a caller asked to hear about them (the trace of a command),
    /// whether or not the bounded history keeps them.
    tap: Option<Vec<StepRecord>>,
    /// The queue at each step, when a driver asks for it (time travel in the TUI).
    pub queues: super::queue_history::QueueHistory,
}

impl History {
    pub fn new(max_steps: usize, max_attempts: usize) -> History {
        History {
            steps: VecDeque::new(),
            attempts: VecDeque::new(),
            max_steps,
            max_attempts,
            next_seq: 1,
            tap: None,
            queues: Default::default(),
        }
    }

    /// Starts collecting every step taken from now on (see `take_tapped`).
    pub fn start_tap(&mut self) {
        self.tap.get_or_insert_with(Vec::new);
    }

    /// The steps collected since the tap started or was last emptied; it stays on.
    pub fn take_tapped(&mut self) -> Vec<StepRecord> {
        self.tap.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Stops collecting; returns what was still collected.
    pub fn stop_tap(&mut self) -> Vec<StepRecord> {
        self.tap.take().unwrap_or_default()
    }

    /// Whether a step taken now would be heard by anyone (kept or tapped).
    pub fn wants_steps(&self) -> bool {
        self.max_steps > 0 || self.tap.is_some()
    }

    pub fn next_seq(&mut self) -> u64 {
        let s = self.next_seq;
        self.next_seq += 1;
        s
    }

    /// The sequence number the next step will get.
    pub fn peek_seq(&self) -> u64 {
        self.next_seq
    }

    pub fn push(&mut self, r: StepRecord) {
        if let Some(t) = self.tap.as_mut() {
            t.push(r.clone());
        }
        if self.max_steps == 0 {
            return;
        }
        if self.steps.len() == self.max_steps {
            self.steps.pop_front();
        }
        self.steps.push_back(r);
    }

    pub fn push_attempt(&mut self, a: AttemptRecord) {
        if self.max_attempts == 0 {
            return;
        }
        // An attempt is recorded when it starts and again when it ends.
        if let Some(pos) = self.attempts.iter().rposition(|x| x.id == a.id) {
            self.attempts[pos] = Arc::new(a);
            return;
        }
        if self.attempts.len() == self.max_attempts {
            self.attempts.pop_front();
        }
        self.attempts.push_back(Arc::new(a));
    }

    pub fn attempt(&self, id: u64) -> Option<&Arc<AttemptRecord>> {
        self.attempts.iter().rev().find(|a| a.id == id)
    }

    pub fn step(&self, seq: u64) -> Option<&StepRecord> {
        let first = self.steps.front()?.seq;
        let i = seq.checked_sub(first)? as usize;
        self.steps.get(i).filter(|s| s.seq == seq)
    }

    pub fn last(&self) -> Option<&StepRecord> {
        self.steps.back()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(seq: u64) -> StepRecord {
        StepRecord {
            seq,
            at: Timestamp::UNIX_EPOCH,
            attempt: None,
            pod: None,
            point: Point::Filter,
            plugin: None,
            code: Code::Success,
            message: String::new(),
            duration: Duration::ZERO,
            queue: QueueCounts::default(),
            state: None,
            changed: Vec::new(),
        }
    }

    #[test]
    fn bounded_and_indexed() {
        let mut h = History::new(3, 2);
        for _ in 0..5 {
            let s = h.next_seq();
            h.push(step(s));
        }
        assert_eq!(h.steps.len(), 3);
        assert!(h.step(2).is_none());
        assert_eq!(h.step(4).unwrap().seq, 4);
        assert_eq!(Point::parse("filter"), Some(Point::Filter));
        let json = serde_json::to_value(h.last().unwrap()).unwrap();
        assert_eq!(json["point"], "Filter");
        assert_eq!(json["durationMicros"], 0);
    }
}
