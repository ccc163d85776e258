//! History: every step the session took, kept (bounded) so any past moment can be looked
//! at again, and the JSON form of those steps (the trace).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;

use std::borrow::Cow;

use crate::framework::{Code, Status};

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

/// Queue sizes at a moment (kept with every step, so kept small).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct QueueCounts {
    pub active: u32,
    pub backoff: u32,
    pub unschedulable: u32,
    pub gated: u32,
    pub waiting: u32,
    pub bound: u32,
    /// Live shadow mode: pods kubestep would bind, parked in the unschedulable pool
    /// (and not counted in `unschedulable`) until the cluster's scheduler binds them.
    /// Absent from the JSON when 0 (replay never parks a pod).
    #[serde(skip_serializing_if = "is_zero")]
    pub awaiting: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One step: one extension point (or one plugin) of one pod's attempt, as always
/// recorded: statuses as the plugins returned them, nothing rendered to text. What an
/// attempt computed in full (verdict matrix, scores, CycleState after each step) is
/// recomputed when someone looks (see [`super::detail`]).
#[derive(Debug, Clone)]
pub struct StepRecord {
    pub seq: u64,
    pub at: Timestamp,
    pub attempt: Option<u64>,
    pub pod: Option<Arc<str>>,
    pub point: Point,
    pub plugin: Option<Cow<'static, str>>,
    pub code: Code,
    /// The status's reasons, when it has any (kept apart: most steps have none).
    pub reasons: Option<Box<Status>>,
    /// Filter plugins: the nodes the plugin rejected among those examined.
    pub rejected: Option<u32>,
    pub duration: Duration,
    /// The queue as it was when the step ran.
    pub queue: QueueCounts,
    /// Names of the CycleState entries this step added or changed.
    pub changed: Box<[&'static str]>,
}

impl StepRecord {
    /// The message as the trace shows it (Filter plugins: how many nodes they rejected).
    pub fn message(&self) -> String {
        match (self.rejected, &self.reasons) {
            (Some(n), _) if n > 0 => format!("rejected {n} node(s)"),
            (_, Some(s)) => s.message(),
            _ => String::new(),
        }
    }

    /// The step's status (code and reasons).
    pub fn status(&self) -> Status {
        match &self.reasons {
            Some(s) => (**s).clone(),
            None => Status::code_only(self.code),
        }
    }

    /// Keeps a status as a step record does: its code, and its reasons only if any.
    pub fn split_status(s: Status) -> (Code, Option<Box<Status>>) {
        let code = s.code();
        let reasons = (!s.reasons().is_empty()).then(|| Box::new(s));
        (code, reasons)
    }

    /// A rough size in bytes, heap included (history is bounded by bytes).
    pub fn approx_bytes(&self) -> usize {
        // Allocations cost their rounding and the allocator's bookkeeping.
        const ALLOC: usize = 16;
        std::mem::size_of::<StepRecord>()
            + self.reasons.as_ref().map_or(0, |s| {
                std::mem::size_of::<Status>()
                    + ALLOC
                    + s.reasons()
                        .iter()
                        .map(|r| r.len() + 24 + ALLOC)
                        .sum::<usize>()
            })
            + if self.changed.is_empty() {
                0
            } else {
                self.changed.len() * 16 + ALLOC
            }
            + match &self.plugin {
                Some(Cow::Owned(s)) => s.len() + ALLOC,
                _ => 0,
            }
    }
}

impl Serialize for StepRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("seq", &self.seq)?;
        m.serialize_entry("at", &self.at)?;
        m.serialize_entry("attempt", &self.attempt)?;
        m.serialize_entry("pod", &self.pod.as_deref())?;
        m.serialize_entry("point", &self.point)?;
        m.serialize_entry("plugin", &self.plugin.as_deref())?;
        m.serialize_entry("code", &self.code)?;
        m.serialize_entry("message", &self.message())?;
        m.serialize_entry("durationMicros", &(self.duration.as_micros() as u64))?;
        m.serialize_entry("queue", &self.queue)?;
        if !self.changed.is_empty() {
            m.serialize_entry("changed", &self.changed)?;
        }
        m.end()
    }
}

/// One status per extension point, folded over its steps in order (`so_far`: the
/// steps before this one). Usually the worst status any plugin returned (Skip only if
/// every plugin skipped). Filter is different, as upstream: its plugins run per node
/// and each reports the nodes it rejected, but the point fails only when the search
/// found no feasible node (a FitError); the search's own point-level step, last of the
/// point, says which, and only an Error outranks it.
pub fn fold_point_code(point: Point, so_far: Option<Code>, step: Code, point_level: bool) -> Code {
    match so_far {
        None => step,
        Some(Code::Error) => Code::Error,
        Some(_) if point == Point::Filter && point_level => step,
        Some(c) if severity(step) > severity(c) => step,
        Some(c) => c,
    }
}

/// How much a status says about a point: Skip < Success < Wait < Pending < rejections < Error.
fn severity(c: Code) -> u8 {
    match c {
        Code::Skip => 0,
        Code::Success => 1,
        Code::Wait => 2,
        Code::Pending => 3,
        Code::Unschedulable => 4,
        Code::UnschedulableAndUnresolvable => 5,
        Code::Error => 6,
    }
}

/// One extension point of an attempt, summed up: its status (`fold_point_code`) and
/// its time.
#[derive(Debug, Clone, Serialize)]
pub struct PointSummary {
    pub point: Point,
    pub code: Code,
    #[serde(rename = "micros", serialize_with = "micros")]
    pub duration: Duration,
}

fn micros<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_micros() as u64)
}

/// What the scheduling cycle decided, kept to check a re-run against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CycleSummary {
    /// The node SelectHost chose.
    pub selected: Option<String>,
    pub feasible: usize,
    pub evaluated: usize,
    /// The unschedulable or error message.
    pub message: Option<String>,
    /// Every node with the top total score, sorted (the selected node alone when
    /// nothing was scored).
    pub best: Vec<String>,
    /// Steps the scheduling cycle took.
    pub steps: usize,
    /// The node the batch's hint placed the pod on (OpportunisticBatching), if it did.
    pub hint: Option<String>,
    /// What the batch decided, in the words of the cycle's step (when a ranking was
    /// stored).
    pub batch: Option<String>,
}

/// The pod an attempt ran, kept small: once bound it is the packed pod the cluster
/// stores (containers as text), unpacked when the attempt is run again.
#[derive(Debug, Clone)]
pub enum AttemptPod {
    Whole(Arc<crate::framework::PodInfo>),
    BoundPacked(Arc<crate::framework::PodInfo>),
}

impl AttemptPod {
    /// The pod as it was popped, pending.
    pub fn whole(&self) -> Arc<crate::framework::PodInfo> {
        match self {
            AttemptPod::Whole(p) => p.clone(),
            AttemptPod::BoundPacked(p) => {
                let mut pod = (*p.full_pod()).clone();
                if let Some(spec) = pod.spec.as_mut() {
                    spec.node_name = None;
                }
                Arc::new(crate::framework::PodInfo::new(Arc::new(pod)))
            }
        }
    }
}

/// One scheduling attempt, as always recorded: its outcome, the statuses of its points,
/// and the inputs frozen at its start from which everything it computed can be computed
/// again exactly (see [`super::detail`]).
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    pub id: u64,
    pub pod: String,
    /// The pod as the attempt popped it.
    pub pod_info: AttemptPod,
    /// Index of the profile in the scheduler's frameworks.
    pub profile_index: usize,
    pub profile: String,
    /// When the queue enqueued the pod for this attempt.
    pub started: Timestamp,
    /// When the attempt began (the pod popped).
    pub at: Timestamp,
    /// Wall time of the PreEnqueue run that let the pod into the queue.
    pub pre_enqueue: Duration,
    pub outcome: Option<String>,
    /// The recording (or the cluster's scheduler) binds the pod, not kubestep: the
    /// attempt ended after SelectHost (its outcome says what kubestep decided).
    pub deferred: bool,
    pub node: Option<String>,
    pub message: Option<String>,
    /// Preemption's nomination (`Some("")` clears one) and its victims.
    pub nominated: Option<String>,
    pub victims: Vec<String>,
    pub cycle: Option<CycleSummary>,
    pub points: Vec<PointSummary>,
    /// The steps after the scheduling cycle (to walk them again when re-running).
    pub post_cycle: Vec<(Point, Option<Cow<'static, str>>, Status)>,
    /// Sequence number of the attempt's first step.
    pub first_seq: u64,
    /// Sequence number of its last step so far: the outcome holds from there on.
    pub last_seq: u64,
    /// How the attempt stood while parked (waiting at Permit or inside PreBind), when
    /// it parked before ending: time travel between the two shows this, not the end.
    pub parked: Option<Parked>,
    pub frozen: Option<super::world::Frozen>,
    /// Bytes of the pod version the record keeps alive (a pending pod's status is
    /// written at each attempt, so each attempt may hold its own copy); set by
    /// `History::push_attempt`.
    pub pod_bytes: usize,
}

/// An attempt as it stood once parked: from step `seq`, waiting on `node`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parked {
    pub seq: u64,
    pub node: Option<String>,
    pub message: Option<String>,
}

/// What an attempt had decided by a step (see [`AttemptRecord::as_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Decided<'a> {
    pub outcome: Option<&'a str>,
    pub node: Option<&'a str>,
    pub message: Option<&'a str>,
}

impl<'a> Decided<'a> {
    /// In progress at `step`: the node is known once SelectHost chose it, nothing else.
    pub fn in_progress(step: &StepRecord, node: Option<&'a str>) -> Decided<'a> {
        Decided {
            outcome: None,
            node: node.filter(|_| step.point >= Point::SelectHost),
            message: None,
        }
    }
}

impl AttemptRecord {
    /// What the attempt had decided by `step` (a step of it, or a later one): its end
    /// from its last step on, how it stood while parked, else nothing but the node
    /// SelectHost chose. Time travel reads this, never the end, before the end.
    pub fn as_of(&self, step: &StepRecord) -> Decided<'_> {
        if step.seq >= self.last_seq {
            return Decided {
                outcome: self.outcome.as_deref(),
                node: self.node.as_deref(),
                message: self.message.as_deref(),
            };
        }
        if let Some(p) = self.parked.as_ref().filter(|p| step.seq >= p.seq) {
            return Decided {
                outcome: Some("Waiting"),
                node: p.node.as_deref(),
                message: p.message.as_deref(),
            };
        }
        Decided::in_progress(step, self.node.as_deref())
    }

    pub fn approx_bytes(&self) -> usize {
        std::mem::size_of::<AttemptRecord>()
            + self.pod.len()
            + self.message.as_ref().map_or(0, String::len)
            + self.points.len() * std::mem::size_of::<PointSummary>()
            + self.post_cycle.len() * 64
            + self.victims.iter().map(|v| v.len() + 24).sum::<usize>()
            + self.pod_bytes
    }
}

/// What a tap heard: every step, and every attempt as it parked or ended.
#[derive(Debug, Clone)]
pub enum Tapped {
    Step(StepRecord),
    Attempt(Arc<AttemptRecord>),
}

/// Step and attempt history, bounded by bytes (oldest first out).
#[derive(Debug, Clone)]
pub struct History {
    pub steps: VecDeque<StepRecord>,
    pub attempts: VecDeque<Arc<AttemptRecord>>,
    /// Bytes the steps may take.
    pub step_budget: usize,
    /// Bytes the attempts may take.
    pub attempt_budget: usize,
    step_bytes: usize,
    attempt_bytes: usize,
    next_seq: u64,
    /// What was taken since a caller asked to hear about it (the trace of a command or
    /// a run), whether or not the bounded history keeps it; `true` when it wants steps.
    tap: Option<(bool, Vec<Tapped>)>,
    /// The queue at each step, when a driver asks for it (time travel in the TUI).
    pub queues: super::queue_history::QueueHistory,
    /// Sizes of the pods attempts keep (see `AttemptRecord::pod_bytes`).
    sizes: super::world_size::Sizes,
}

impl History {
    pub fn new(step_budget: usize, attempt_budget: usize) -> History {
        History {
            steps: VecDeque::new(),
            attempts: VecDeque::new(),
            step_budget,
            attempt_budget,
            step_bytes: 0,
            attempt_bytes: 0,
            next_seq: 1,
            tap: None,
            // Queue rows take up to half as much as the steps they belong to.
            queues: super::queue_history::QueueHistory::with_max_rows(
                (step_budget / 2 / super::queue_history::ROW_BYTES).max(64),
            ),
            sizes: Default::default(),
        }
    }

    /// Starts collecting steps and attempts taken from now on (see `take_tapped`);
    /// `steps: false` collects attempts only.
    pub fn start_tap(&mut self, steps: bool) {
        match self.tap.as_mut() {
            Some(t) => t.0 |= steps,
            None => self.tap = Some((steps, Vec::new())),
        }
    }

    /// What was collected since the tap started or was last emptied; it stays on.
    pub fn take_tapped(&mut self) -> Vec<Tapped> {
        self.tap
            .as_mut()
            .map(|t| std::mem::take(&mut t.1))
            .unwrap_or_default()
    }

    /// Stops collecting; returns what was still collected.
    pub fn stop_tap(&mut self) -> Vec<Tapped> {
        self.tap.take().map(|t| t.1).unwrap_or_default()
    }

    /// The steps among tapped items.
    pub fn steps_of(items: Vec<Tapped>) -> Vec<StepRecord> {
        items
            .into_iter()
            .filter_map(|t| match t {
                Tapped::Step(s) => Some(s),
                Tapped::Attempt(_) => None,
            })
            .collect()
    }

    /// Whether a step taken now would be heard by anyone (kept or tapped).
    pub fn wants_steps(&self) -> bool {
        self.step_budget > 0 || self.tap.as_ref().is_some_and(|t| t.0)
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
        if let Some(t) = self.tap.as_mut().filter(|t| t.0) {
            t.1.push(Tapped::Step(r.clone()));
        }
        if self.step_budget == 0 {
            return;
        }
        self.step_bytes += r.approx_bytes();
        self.steps.push_back(r);
        while self.step_bytes > self.step_budget {
            let Some(old) = self.steps.pop_front() else {
                break;
            };
            self.step_bytes = self.step_bytes.saturating_sub(old.approx_bytes());
        }
    }

    pub fn push_attempt(&mut self, mut a: AttemptRecord) {
        if self.attempt_budget > 0 {
            let p = match &a.pod_info {
                AttemptPod::Whole(p) | AttemptPod::BoundPacked(p) => p,
            };
            a.pod_bytes = self.sizes.pod(p);
        }
        let a = Arc::new(a);
        if let Some(t) = self.tap.as_mut() {
            t.1.push(Tapped::Attempt(a.clone()));
        }
        if self.attempt_budget == 0 {
            return;
        }
        // An attempt is recorded when it parks and again when it ends.
        // Ids only grow, except a parked attempt that ends later: keep the deque sorted.
        self.attempt_bytes += a.approx_bytes();
        match self.attempts.binary_search_by_key(&a.id, |x| x.id) {
            Ok(pos) => {
                let old = std::mem::replace(&mut self.attempts[pos], a);
                self.attempt_bytes = self.attempt_bytes.saturating_sub(old.approx_bytes());
                return;
            }
            Err(pos) if pos == self.attempts.len() => self.attempts.push_back(a),
            Err(pos) => self.attempts.insert(pos, a),
        }
        while self.attempt_bytes > self.attempt_budget {
            let Some(old) = self.attempts.pop_front() else {
                break;
            };
            self.attempt_bytes = self.attempt_bytes.saturating_sub(old.approx_bytes());
        }
    }

    /// Forgets the oldest attempts while `gone` says they can no longer be re-run (their
    /// world is older than the checkpoints kept), so every listed attempt can be shown.
    pub fn forget_attempts_while(&mut self, gone: impl Fn(&AttemptRecord) -> bool) {
        while self.attempts.front().is_some_and(|a| gone(a)) {
            if let Some(old) = self.attempts.pop_front() {
                self.attempt_bytes = self.attempt_bytes.saturating_sub(old.approx_bytes());
            }
        }
    }

    pub fn attempt(&self, id: u64) -> Option<&Arc<AttemptRecord>> {
        // Ids increase along the deque: search it by id.
        let i = self.attempts.binary_search_by_key(&id, |a| a.id).ok()?;
        self.attempts.get(i)
    }

    pub fn step(&self, seq: u64) -> Option<&StepRecord> {
        let first = self.steps.front()?.seq;
        let i = seq.checked_sub(first)? as usize;
        self.steps.get(i).filter(|s| s.seq == seq)
    }

    pub fn last(&self) -> Option<&StepRecord> {
        self.steps.back()
    }

    /// Bytes the kept steps and attempts take (roughly).
    pub fn bytes(&self) -> usize {
        self.step_bytes + self.attempt_bytes
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
            duration: Duration::ZERO,
            queue: QueueCounts::default(),
            changed: Box::new([]),
            reasons: None,
            rejected: None,
        }
    }

    #[test]
    fn bounded_and_indexed() {
        let one = step(0).approx_bytes();
        let mut h = History::new(3 * one, 0);
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
