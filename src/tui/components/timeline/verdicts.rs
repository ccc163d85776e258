//! The Cycle timeline's rows: every extension point of the attempt shown, with its
//! verdict and time as they stood at the step shown (so time travel shows what was known
//! then, not how the attempt ended). Pure: the inputs come from the history.

use std::time::Duration;

use jiff::Timestamp;

use crate::framework::Code;
use crate::session::{Point, StepRecord, fold_point_code};

/// What one extension point did, as of the step shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Finished: the point's status and the wall time its plugins took (`None`: not
    /// measured, e.g. PreEnqueue of an attempt history no longer holds).
    Ran(Code, Option<Duration>),
    /// Started and not finished (a plugin at a time): the time so far.
    Running(Duration),
    /// Held at Permit: the virtual time waited so far.
    Waiting(Duration),
    /// WaitOnPermit's outcome, after this much virtual time waiting.
    Waited(Code, Duration),
    /// Not reached yet.
    Pending,
    /// Passed over: the attempt went on (or ended) without running it.
    NotRun,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointRow {
    pub point: Point,
    pub verdict: Verdict,
    /// The point of the step shown.
    pub here: bool,
}

/// Where the attempt goes after the step shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// It runs this point next.
    Continues(Point),
    /// Parked at Permit, waiting for the waiting map to decide.
    Parked,
    /// It is over.
    Ended,
}

/// The attempt as the timeline needs it.
pub struct Attempt<'a> {
    /// Its steps up to and including the step shown, oldest first.
    pub steps: &'a [&'a StepRecord],
    pub after: After,
    /// PreEnqueue's time, when the attempt record is still kept.
    pub pre_enqueue: Option<Duration>,
    /// The time of the moment shown (a wait's length is measured to it).
    pub now: Timestamp,
}

/// The step where Permit parked the pod (Permit's summary, code Wait, no plugin).
fn park_step<'a>(steps: &[&'a StepRecord]) -> Option<&'a StepRecord> {
    steps
        .iter()
        .find(|s| s.point == Point::Permit && s.plugin.is_none() && s.code == Code::Wait)
        .copied()
}

pub fn rows(a: &Attempt) -> Vec<PointRow> {
    let Some(moment) = a.steps.last() else {
        return Vec::new();
    };
    let park = park_step(a.steps);
    // Points before this one that have no step were passed over.
    let frontier = match a.after {
        After::Continues(p) => Some(p),
        After::Parked => Some(Point::WaitOnPermit),
        After::Ended => None,
    };
    Point::ALL
        .iter()
        .map(|&point| {
            let mine: Vec<&StepRecord> = a
                .steps
                .iter()
                .filter(|s| s.point == point)
                .copied()
                .collect();
            let time: Duration = mine.iter().map(|s| s.duration).sum();
            let verdict = if point == Point::PreEnqueue {
                // It was popped, so PreEnqueue let it into the queue.
                Verdict::Ran(Code::Success, a.pre_enqueue)
            } else if mine.is_empty() {
                match (point, a.after, park) {
                    (Point::WaitOnPermit, After::Parked, Some(p)) => {
                        Verdict::Waiting(crate::session::clock::since(a.now, p.at))
                    }
                    _ if frontier.is_none_or(|f| point < f) => Verdict::NotRun,
                    _ => Verdict::Pending,
                }
            } else if point == moment.point && frontier == Some(point) {
                Verdict::Running(time)
            } else if point == Point::WaitOnPermit
                && let Some(p) = park
            {
                let code = worst(&mine);
                Verdict::Waited(code, crate::session::clock::since(mine[0].at, p.at))
            } else {
                Verdict::Ran(worst(&mine), Some(time))
            };
            PointRow {
                point,
                verdict,
                here: point == moment.point,
            }
        })
        .collect()
}

/// The point's status as the engine sums it up for every output (see
/// `fold_point_code`).
fn worst(steps: &[&StepRecord]) -> Code {
    steps
        .iter()
        .fold(None, |acc, s| {
            Some(fold_point_code(s.point, acc, s.code, s.plugin.is_none()))
        })
        .unwrap_or(Code::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::QueueCounts;

    fn step(seq: u64, point: Point, plugin: Option<&str>, code: Code, at: i64) -> StepRecord {
        StepRecord {
            seq,
            at: Timestamp::from_second(at).unwrap(),
            attempt: Some(1),
            pod: Some("ns/p".into()),
            point,
            plugin: plugin.map(|p| p.to_string().into()),
            code,
            reasons: None,
            rejected: None,
            duration: Duration::from_micros(10),
            queue: QueueCounts::default(),
            changed: Box::new([]),
        }
    }

    fn verdict(rows: &[PointRow], p: Point) -> Verdict {
        rows.iter().find(|r| r.point == p).unwrap().verdict
    }

    #[test]
    fn filter_is_what_the_search_found_not_its_plugins_rejections() {
        let mut s = vec![
            step(1, Point::QueueSort, None, Code::Success, 0),
            step(2, Point::PreFilter, Some("A"), Code::Skip, 0),
            step(3, Point::PreFilter, Some("B"), Code::Success, 0),
            step(4, Point::Filter, Some("A"), Code::Unschedulable, 0),
            step(5, Point::Filter, Some("B"), Code::Success, 0),
        ];
        let refs: Vec<&StepRecord> = s.iter().collect();
        let a = Attempt {
            steps: &refs,
            after: After::Continues(Point::Filter),
            pre_enqueue: Some(Duration::from_micros(3)),
            now: Timestamp::UNIX_EPOCH,
        };
        // Mid-Filter: Filter is running, later points pending, PreEnqueue measured.
        let r = rows(&a);
        assert_eq!(
            verdict(&r, Point::PreEnqueue),
            Verdict::Ran(Code::Success, Some(Duration::from_micros(3)))
        );
        assert_eq!(
            verdict(&r, Point::PreFilter),
            Verdict::Ran(Code::Success, Some(Duration::from_micros(20)))
        );
        assert_eq!(
            verdict(&r, Point::Filter),
            Verdict::Running(Duration::from_micros(20))
        );
        assert_eq!(verdict(&r, Point::PostFilter), Verdict::Pending);
        assert!(r.iter().find(|r| r.point == Point::Filter).unwrap().here);
        // The search found feasible nodes although plugin A rejected some: Filter passed,
        // PostFilter passed over.
        s.push(step(6, Point::Filter, None, Code::Success, 0));
        let refs: Vec<&StepRecord> = s.iter().collect();
        let a = Attempt {
            steps: &refs,
            after: After::Continues(Point::PreScore),
            pre_enqueue: None,
            now: Timestamp::UNIX_EPOCH,
        };
        let r = rows(&a);
        assert_eq!(
            verdict(&r, Point::Filter),
            Verdict::Ran(Code::Success, Some(Duration::from_micros(30)))
        );
        assert_eq!(verdict(&r, Point::PostFilter), Verdict::NotRun);
        assert_eq!(verdict(&r, Point::Score), Verdict::Pending);
        // No feasible node, and (shadow mode) a Reserve step that only notes the deferral:
        // Filter still failed.
        s[5] = step(6, Point::Filter, None, Code::Unschedulable, 0);
        s.push(step(
            7,
            Point::PostFilter,
            Some("P"),
            Code::Unschedulable,
            0,
        ));
        s.push(step(8, Point::Reserve, None, Code::Skip, 0));
        let refs: Vec<&StepRecord> = s.iter().collect();
        let a = Attempt {
            steps: &refs,
            after: After::Ended,
            pre_enqueue: None,
            now: Timestamp::UNIX_EPOCH,
        };
        let r = rows(&a);
        assert_eq!(
            verdict(&r, Point::Filter),
            Verdict::Ran(Code::Unschedulable, Some(Duration::from_micros(30)))
        );
        assert_eq!(verdict(&r, Point::Bind), Verdict::NotRun);
    }

    #[test]
    fn permit_waits_then_wait_on_permit_reports_the_wait() {
        let mut s = vec![
            step(1, Point::QueueSort, None, Code::Success, 0),
            step(2, Point::Reserve, Some("R"), Code::Success, 0),
            step(3, Point::Permit, Some("M"), Code::Wait, 0),
            step(4, Point::Permit, None, Code::Wait, 0),
        ];
        let refs: Vec<&StepRecord> = s.iter().collect();
        let a = Attempt {
            steps: &refs,
            after: After::Parked,
            pre_enqueue: None,
            now: Timestamp::from_second(90).unwrap(),
        };
        let r = rows(&a);
        assert_eq!(
            verdict(&r, Point::Permit),
            Verdict::Ran(Code::Wait, Some(Duration::from_micros(20)))
        );
        assert_eq!(
            verdict(&r, Point::WaitOnPermit),
            Verdict::Waiting(Duration::from_secs(90))
        );
        assert_eq!(verdict(&r, Point::Bind), Verdict::Pending);
        assert_eq!(verdict(&r, Point::Filter), Verdict::NotRun);
        assert_eq!(
            verdict(&r, Point::PreEnqueue),
            Verdict::Ran(Code::Success, None)
        );
        // Rejected after two minutes: WaitOnPermit failed, Unreserve ran, the rest not.
        s.push(step(
            5,
            Point::WaitOnPermit,
            Some("M"),
            Code::Unschedulable,
            120,
        ));
        s.push(step(6, Point::Unreserve, Some("R"), Code::Success, 120));
        let refs: Vec<&StepRecord> = s.iter().collect();
        let a = Attempt {
            steps: &refs,
            after: After::Ended,
            pre_enqueue: None,
            now: Timestamp::from_second(120).unwrap(),
        };
        let r = rows(&a);
        assert_eq!(
            verdict(&r, Point::WaitOnPermit),
            Verdict::Waited(Code::Unschedulable, Duration::from_secs(120))
        );
        assert_eq!(verdict(&r, Point::PreBind), Verdict::NotRun);
        assert_eq!(
            verdict(&r, Point::Unreserve),
            Verdict::Ran(Code::Success, Some(Duration::from_micros(10)))
        );
    }
}
