//! Breakpoints: stop before an extension point, a plugin or a pod's attempt, or after a
//! step with a given outcome.

use serde::Serialize;

use super::Session;
use super::history::{Point, StepRecord};
use crate::framework::Code;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Outcome {
    Unschedulable,
    Wait,
    Error,
}

impl Outcome {
    pub fn parse(s: &str) -> Option<Outcome> {
        match s.to_ascii_lowercase().as_str() {
            "unschedulable" => Some(Outcome::Unschedulable),
            "wait" => Some(Outcome::Wait),
            "error" => Some(Outcome::Error),
            _ => None,
        }
    }

    fn matches(self, code: Code) -> bool {
        match self {
            Outcome::Unschedulable => code.is_rejected(),
            Outcome::Wait => code == Code::Wait,
            Outcome::Error => code == Code::Error,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Breakpoint {
    /// Before the current pod runs this extension point.
    Point(Point),
    /// Before this plugin runs.
    Plugin(String),
    /// When this pod (namespace/name) starts an attempt.
    Pod(String),
    /// After a step with this outcome.
    Outcome(Outcome),
}

impl Breakpoint {
    /// `Filter`, `plugin=NodeResourcesFit`, `pod=ns/name`, `outcome=unschedulable`.
    pub fn parse(s: &str) -> Result<Breakpoint, String> {
        if let Some(v) = s.strip_prefix("plugin=") {
            return Ok(Breakpoint::Plugin(v.to_string()));
        }
        if let Some(v) = s.strip_prefix("pod=") {
            if !v.contains('/') {
                return Err(format!("pod breakpoint {v:?}: use namespace/name"));
            }
            return Ok(Breakpoint::Pod(v.to_string()));
        }
        if let Some(v) = s.strip_prefix("outcome=") {
            return Outcome::parse(v)
                .map(Breakpoint::Outcome)
                .ok_or_else(|| format!("unknown outcome {v:?} (unschedulable, wait, error)"));
        }
        Point::parse(s).map(Breakpoint::Point).ok_or_else(|| {
            let points: Vec<&str> = Point::ALL.iter().map(|p| p.as_str()).collect();
            format!("unknown breakpoint {s:?}: give an extension point ({}), plugin=NAME, pod=NS/NAME or outcome=unschedulable|wait|error", points.join(", "))
        })
    }

    pub fn describe(&self) -> String {
        match self {
            Breakpoint::Point(p) => p.as_str().to_string(),
            Breakpoint::Plugin(p) => format!("plugin={p}"),
            Breakpoint::Pod(p) => format!("pod={p}"),
            Breakpoint::Outcome(o) => format!("outcome={}", format!("{o:?}").to_lowercase()),
        }
    }
}

impl Session {
    pub fn add_breakpoint(&mut self, b: Breakpoint) {
        if !self.breakpoints.contains(&b) {
            self.breakpoints.push(b);
        }
    }

    pub fn clear_breakpoints(&mut self) {
        self.breakpoints.clear();
    }

    /// A breakpoint that stops before the next step.
    pub(super) fn break_before(&mut self) -> Option<String> {
        if self.breakpoints.is_empty() {
            return None;
        }
        let Some(a) = self.current.as_ref() else {
            // Between attempts the next step is QueueSort: the next pod's pop.
            let b = Breakpoint::Point(Point::QueueSort);
            let pops = self.resumable().is_none() && self.core.queue.has_poppable();
            return (pops && self.breakpoints.contains(&b))
                .then(|| format!("{} before QueueSort (the next pod's pop)", b.describe()));
        };
        let point = a.point();
        let plugin = a.next_plugin(&self.core);
        let pod = a.pod().key.clone();
        let at_start = point == Point::PreFilter && a.cycle.trace.is_empty();
        self.breakpoints.iter().find_map(|b| {
            let hit = match b {
                Breakpoint::Point(p) => *p == point,
                Breakpoint::Plugin(p) => plugin.as_deref() == Some(p.as_str()),
                Breakpoint::Pod(p) => at_start && *p == pod,
                Breakpoint::Outcome(_) => false,
            };
            hit.then(|| {
                format!(
                    "{} before {}{}",
                    b.describe(),
                    point.as_str(),
                    plugin
                        .as_ref()
                        .map(|p| format!(" ({p})"))
                        .unwrap_or_default()
                )
            })
        })
    }

    /// A breakpoint on the outcome of steps just taken.
    pub(super) fn break_after(&self, steps: &[StepRecord]) -> Option<String> {
        self.breakpoints.iter().find_map(|b| match b {
            Breakpoint::Outcome(o) => steps.iter().find(|s| o.matches(s.code)).map(|s| {
                format!(
                    "{} at {} {}",
                    b.describe(),
                    s.point.as_str(),
                    s.plugin.clone().unwrap_or_default()
                )
            }),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing() {
        assert_eq!(
            Breakpoint::parse("Filter").unwrap(),
            Breakpoint::Point(Point::Filter)
        );
        assert_eq!(
            Breakpoint::parse("plugin=NodeResourcesFit").unwrap(),
            Breakpoint::Plugin("NodeResourcesFit".into())
        );
        assert_eq!(
            Breakpoint::parse("outcome=wait").unwrap(),
            Breakpoint::Outcome(Outcome::Wait)
        );
        assert!(Breakpoint::parse("pod=nameonly").is_err());
        assert!(
            Breakpoint::parse("Filtr")
                .unwrap_err()
                .contains("unknown breakpoint")
        );
    }
}
