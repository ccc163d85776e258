//! A PreBind plugin that waits: upstream's DynamicResources blocks inside PreBind, polling
//! (at once, then every 5s) until the devices' binding conditions hold, a failure
//! condition is set, or `bindingTimeout` passes. The binding cycle runs apart from the
//! scheduling loop upstream, so other pods go on being scheduled meanwhile. kubestep parks
//! the attempt as it parks one held at Permit: the session polls on its clock (`poll`),
//! and the attempt resumes once a look decided.

use std::time::Duration;

use jiff::Timestamp;

use super::attempt::{Attempt, AttemptResult, Failure, Stage, StepEvent, plugin_status};
use super::history::Point;
use super::{Core, Session};
use crate::framework::profile::ExtensionPoint;
use crate::framework::{Code, Status};

/// An attempt parked in a PreBind plugin.
#[derive(Debug, Clone)]
pub struct PreBindHold {
    pub plugin: &'static str,
    pub since: Timestamp,
    every: Duration,
    /// When the session looks again.
    pub next_poll: Timestamp,
    /// When the wait gives up (`timeout_message`, an error).
    pub deadline: Timestamp,
    timeout_message: &'static str,
    /// What the last look found still open.
    pub message: String,
    /// Set once a look decided: Success, or the error that ends the wait.
    pub outcome: Option<Status>,
}

impl PreBindHold {
    /// The next look after `now`, on the wait's 5s grid and never past the deadline.
    fn schedule_after(&mut self, now: Timestamp) {
        let every = jiff::SignedDuration::try_from(self.every).unwrap_or_default();
        let mut next = self.next_poll;
        while next <= now && !every.is_zero() {
            next = next.checked_add(every).unwrap_or(self.deadline);
        }
        self.next_poll = next.min(self.deadline);
    }
}

impl Attempt {
    /// The PreBind plugin at `i` answered Wait: the event upstream records, the first look
    /// at once, then parked unless that look decided.
    pub(super) fn begin_pre_bind_wait(
        &mut self,
        core: &mut Core,
        (i, waiting): (usize, String),
        out: &mut Vec<StepEvent>,
    ) {
        let Some(e) = self.entry(core, ExtensionPoint::PreBind, i) else {
            self.stage = Stage::PreBind(i + 1);
            return;
        };
        let Some(p) = e.plugin.as_pre_bind() else {
            self.stage = Stage::PreBind(i + 1);
            return;
        };
        let polling = p.pre_bind_polling();
        if !polling.event_reason.is_empty() {
            core.actuator
                .pod_event(self.pod(), polling.event_reason, &waiting);
        }
        let now = core.clock.now();
        let span = jiff::SignedDuration::try_from(polling.timeout).unwrap_or_default();
        let mut hold = PreBindHold {
            plugin: e.name,
            since: now,
            every: polling.every,
            next_poll: now,
            deadline: now.checked_add(span).unwrap_or(now),
            timeout_message: polling.timeout_message,
            message: waiting,
            outcome: None,
        };
        let s = self.poll_pre_bind(core, i);
        if s.is_wait() {
            hold.message = s.message();
            hold.schedule_after(now);
            self.pre_bind_hold = Some(hold);
            self.stage = Stage::WaitOnPreBind(i);
            self.result = Some(AttemptResult::Waiting { node: self.node() });
            return;
        }
        hold.outcome = Some(s);
        self.pre_bind_hold = Some(hold);
        self.stage = Stage::WaitOnPreBind(i);
        self.resume_pre_bind(core, i, out);
    }

    /// One look: the plugin's poll on the cluster as it is now.
    fn poll_pre_bind(&mut self, core: &mut Core, i: usize) -> Status {
        let Some(e) = self.entry(core, ExtensionPoint::PreBind, i) else {
            return Status::success();
        };
        let node = self.node();
        let pod = self.pod().clone();
        let h = core.handle(self.profile);
        match e.plugin.as_pre_bind() {
            Some(p) => p.pre_bind_poll(&h, &mut self.cycle.state, &pod, &node),
            None => Status::success(),
        }
    }

    /// Once a look decided: on to the next PreBind plugin, or the failure (Unreserve).
    pub(super) fn resume_pre_bind(&mut self, core: &mut Core, i: usize, out: &mut Vec<StepEvent>) {
        let Some(hold) = self.pre_bind_hold.as_ref() else {
            self.stage = Stage::PreBind(i + 1);
            return;
        };
        let Some(outcome) = hold.outcome.clone() else {
            return;
        };
        let waited = core.clock.now().duration_since(hold.since);
        let plugin = hold.plugin;
        self.pre_bind_hold = None;
        self.result = None;
        let s = if outcome.is_success() {
            let after =
                crate::framework::waiting::go_duration(waited.try_into().unwrap_or(Duration::ZERO));
            Status::new(
                Code::Success,
                format!("binding conditions met after {after}"),
            )
        } else {
            plugin_status(outcome, "PreBind", plugin, None)
        };
        out.push(StepEvent {
            point: Point::PreBind,
            plugin: Some(plugin.into()),
            status: s.clone().with_plugin(plugin),
            ..StepEvent::at(core)
        });
        if s.is_success() {
            self.stage = Stage::PreBind(i + 1);
        } else {
            let node = self.node();
            self.start_unreserve(core, Failure::after_cycle(&s, &node));
        }
    }

    /// What the parked attempt waits for, for its record and the Waiting pane.
    pub fn wait_note(&self) -> String {
        match &self.pre_bind_hold {
            Some(h) => format!("waiting at PreBind ({}): {}", h.plugin, h.message),
            None => "waiting at Permit".to_string(),
        }
    }

    /// Whether a parked attempt can go on: its Permit wait or PreBind wait decided.
    pub fn wait_decided(&self, waiting: &crate::framework::waiting::WaitingPods) -> bool {
        match (&self.stage, &self.pre_bind_hold) {
            (Stage::WaitOnPreBind(_), Some(h)) => h.outcome.is_some(),
            _ => waiting
                .get(&self.pod().uid)
                .is_none_or(|w| w.outcome.is_some()),
        }
    }

    /// The PreBind wait the attempt is parked in, while no look has decided it.
    pub fn open_pre_bind_wait(&self) -> Option<&PreBindHold> {
        self.pre_bind_hold.as_ref().filter(|h| h.outcome.is_none())
    }

    /// When the parked attempt's PreBind wait looks again.
    pub fn next_poll(&self) -> Option<Timestamp> {
        self.open_pre_bind_wait().map(|h| h.next_poll)
    }
}

impl Session {
    /// Looks again at every PreBind wait whose time has come: past its deadline it fails
    /// with the plugin's timeout error, else the plugin's poll decides or it waits on.
    pub(super) fn poll_pre_bind_waits(&mut self) {
        let now = self.now();
        let due: Vec<String> = self
            .core
            .parked
            .iter()
            .filter(|(_, a)| a.next_poll().is_some_and(|t| t <= now))
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in due {
            let Some(mut a) = self.core.parked.remove(&uid) else {
                continue;
            };
            let Stage::WaitOnPreBind(i) = a.stage else {
                self.core.parked.insert(uid, a);
                continue;
            };
            let past = a.pre_bind_hold.as_ref().is_some_and(|h| now >= h.deadline);
            let s = if past {
                let msg = a.pre_bind_hold.as_ref().map_or("", |h| h.timeout_message);
                Status::error(msg)
            } else {
                a.poll_pre_bind(&mut self.core, i)
            };
            if let Some(h) = a.pre_bind_hold.as_mut() {
                if s.is_wait() {
                    h.message = s.message();
                    h.schedule_after(now);
                } else {
                    h.outcome = Some(s);
                }
            }
            self.core.parked.insert(uid, a);
        }
    }

    /// Ends every PreBind wait with `message` (the scheduler stops: upstream's poll sees
    /// its context canceled).
    pub fn cancel_pre_bind_waits(&mut self, message: &str) {
        for a in self.core.parked.values_mut() {
            if let Some(h) = a.pre_bind_hold.as_mut().filter(|h| h.outcome.is_none()) {
                h.outcome = Some(Status::error(format!("context canceled: {message}")));
            }
        }
    }
}
