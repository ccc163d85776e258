//! How pods move between the queues: PreEnqueue, activeQ / backoffQ / unschedulable
//! placement, and the queueing-hint verdicts that decide where an event sends a pod.

use std::sync::Arc;

use jiff::Timestamp;

use super::backoff::{backoff_expiry, is_backing_off};
use super::{
    ClusterEvent, EventObject, Profile, ProfileHints, QueueName, QueueingHint, SchedulingQueue,
    Strategy, active_order, handle_for, queue_sort,
};
use crate::framework::events::matches_any;
use crate::framework::hints;
use crate::framework::plugin::Handle;
use crate::framework::profile::{ExtensionPoint, Framework};
use crate::framework::queued::QueuedPodInfo;
use crate::framework::types::PodInfo;

impl SchedulingQueue {
    // ---- PreEnqueue and moves between queues ----

    /// Runs the profile's PreEnqueue plugins (the gating plugin first); the first that
    /// does not succeed gates the pod.
    pub(super) fn run_pre_enqueue(&self, h: &Handle, fwk: &Framework, qpi: &mut QueuedPodInfo) {
        let started = std::time::Instant::now();
        self.gate(h, fwk, qpi);
        qpi.pre_enqueue = started.elapsed();
    }

    fn gate(&self, h: &Handle, fwk: &Framework, qpi: &mut QueuedPodInfo) {
        let hh = handle_for(h, fwk);
        let plugins = fwk.plugins(ExtensionPoint::PreEnqueue);
        let gating = qpi.gating_plugin.clone();
        let ordered = gating
            .iter()
            .filter_map(|g| plugins.iter().find(|e| e.name == g.as_str()))
            .chain(plugins.iter().filter(|e| gating.as_deref() != Some(e.name)));
        for e in ordered {
            let Some(p) = e.plugin.as_pre_enqueue() else {
                continue;
            };
            let s = p.pre_enqueue(&hh, &qpi.pod_info);
            if s.is_success() {
                continue;
            }
            qpi.unschedulable_plugins.insert(e.name.to_string());
            qpi.gating_plugin = Some(e.name.to_string());
            qpi.gating_plugin_events = hints::plugin_events(fwk, e.name);
            qpi.gating_message = Some(s.message());
            return;
        }
        qpi.gating_plugin = None;
        qpi.gating_plugin_events.clear();
        qpi.gating_message = None;
    }

    /// Puts a pod that passed PreEnqueue into activeQ.
    pub(super) fn enter_active(
        &mut self,
        fwk: &Framework,
        mut qpi: QueuedPodInfo,
        event: &str,
        now: Timestamp,
    ) {
        qpi.initial_attempt_timestamp.get_or_insert(now);
        let uid = qpi.uid().to_string();
        self.unschedulable.remove(&uid);
        self.backoff.remove(&uid);
        self.error_backoff.remove(&uid);
        self.record(&qpi, QueueName::Active, event, now);
        let less = queue_sort(fwk);
        self.active.insert(qpi, |a, b| active_order(less, a, b));
    }

    /// `moveToActiveQ`: PreEnqueue, then activeQ, or unschedulable when gated. True when
    /// the pod reached activeQ.
    pub(super) fn move_to_active(
        &mut self,
        h: &Handle,
        fwk: &Framework,
        mut qpi: QueuedPodInfo,
        event: &str,
        now: Timestamp,
    ) -> bool {
        self.run_pre_enqueue(h, fwk, &mut qpi);
        if qpi.gated() {
            if !self.in_any_queue(qpi.uid()) {
                self.record(&qpi, QueueName::Gated, event, now);
                self.unschedulable.insert(qpi.uid().to_string(), qpi);
            }
            return false;
        }
        self.enter_active(fwk, qpi, event, now);
        true
    }

    /// `moveToBackoffQ`: PreEnqueue runs here (SchedulerPopFromBackoffQ), so a gated pod
    /// goes to unschedulable instead. True when the pod reached backoffQ.
    pub(super) fn move_to_backoff(
        &mut self,
        h: &Handle,
        fwk: &Framework,
        mut qpi: QueuedPodInfo,
        event: &str,
        now: Timestamp,
    ) -> bool {
        self.run_pre_enqueue(h, fwk, &mut qpi);
        let uid = qpi.uid().to_string();
        if qpi.gated() {
            if !self.unschedulable.contains_key(&uid) {
                self.record(&qpi, QueueName::Gated, event, now);
                self.unschedulable.insert(uid, qpi);
            }
            return false;
        }
        self.unschedulable.remove(&uid);
        let to = if qpi.has_rejectors() {
            QueueName::Backoff
        } else {
            QueueName::ErrorBackoff
        };
        self.record(&qpi, to, event, now);
        self.insert_backoff(fwk, qpi);
        true
    }

    /// Into backoffQ, or the error backoff queue when no plugin rejected the pod.
    pub(super) fn insert_backoff(&mut self, fwk: &Framework, qpi: QueuedPodInfo) {
        let uid = qpi.uid().to_string();
        let less = queue_sort(fwk);
        let (initial, max) = (self.initial_backoff, self.max_backoff);
        if qpi.has_rejectors() {
            self.error_backoff.remove(&uid);
            // Same as backoff_order, without borrowing self during the insert.
            self.backoff.insert(qpi, |a, b| {
                backoff_expiry(a, initial, max)
                    .cmp(&backoff_expiry(b, initial, max))
                    .then_with(|| active_order(less, a, b))
            });
        } else {
            self.backoff.remove(&uid);
            self.error_backoff.insert(qpi, |a, b| {
                backoff_expiry(a, initial, max)
                    .cmp(&backoff_expiry(b, initial, max))
                    .then_with(|| a.seq.cmp(&b.seq))
            });
        }
    }

    /// `requeuePodWithQueueingStrategy`.
    pub(super) fn requeue(
        &mut self,
        h: &Handle,
        fwk: &Framework,
        qpi: QueuedPodInfo,
        strategy: Strategy,
        event: &str,
        now: Timestamp,
    ) -> QueueName {
        match strategy {
            Strategy::Skip => {
                let to = if qpi.gated() {
                    QueueName::Gated
                } else {
                    QueueName::Unschedulable
                };
                self.record(&qpi, to, event, now);
                self.unschedulable.insert(qpi.uid().to_string(), qpi);
                to
            }
            Strategy::AfterBackoff if is_backing_off(self.expiry(&qpi), now) => {
                if self.move_to_backoff(h, fwk, qpi, event, now) {
                    QueueName::Backoff
                } else {
                    QueueName::Gated
                }
            }
            _ => {
                if self.move_to_active(h, fwk, qpi, event, now) {
                    QueueName::Active
                } else {
                    QueueName::Gated
                }
            }
        }
    }

    // ---- queueing hints ----

    /// `isPodWorthRequeuing`: the strategy the event earns the pod, from the hints of its
    /// rejector plugins (a Queue from a Pending plugin skips the backoff).
    pub(super) fn worth_requeuing(
        &self,
        h: &Handle,
        fwk: &Framework,
        hints: &ProfileHints,
        qpi: &QueuedPodInfo,
        event: &ClusterEvent,
    ) -> Strategy {
        if !qpi.has_rejectors() {
            return Strategy::AfterBackoff;
        }
        if event.is_wildcard() {
            // A wildcard event carrying a pod is for that pod only.
            return match &event.new {
                None => Strategy::AfterBackoff,
                Some(EventObject::Pod(p)) if p.uid() == qpi.uid() => Strategy::AfterBackoff,
                Some(_) => Strategy::Skip,
            };
        }
        let hh = handle_for(h, fwk);
        let et = event.event_type();
        let rejectors = qpi.rejector_plugins();
        let mut strategy = Strategy::Skip;
        for f in hints.matching(&et) {
            if !rejectors.contains(&f.plugin) {
                continue;
            }
            if hints::run_hint(&f.hint, &hh, &qpi.pod_info, event) == QueueingHint::QueueSkip {
                continue;
            }
            if qpi.pending_plugins.contains(&f.plugin) {
                return Strategy::Immediately;
            }
            if qpi.pending_plugins.is_empty() {
                return Strategy::AfterBackoff;
            }
            strategy = Strategy::AfterBackoff;
        }
        strategy
    }

    /// `determineSchedulingHintForInFlightPod`: replays the events recorded while the pod
    /// was in flight.
    pub(super) fn in_flight_strategy(
        &self,
        h: &Handle,
        fwk: &Framework,
        hints: &ProfileHints,
        qpi: &QueuedPodInfo,
    ) -> Strategy {
        if !qpi.has_rejectors() {
            return Strategy::AfterBackoff;
        }
        let Some(inf) = self.in_flight.get(qpi.uid()) else {
            tracing::warn!(pod = %qpi.pod_info.key, "in-flight pod not found in the queue");
            return Strategy::AfterBackoff;
        };
        let mut strategy = Strategy::Skip;
        for (_, e) in self
            .in_flight_events
            .iter()
            .filter(|(id, _)| *id >= inf.first_event)
        {
            match self.worth_requeuing(h, fwk, hints, qpi, e) {
                Strategy::Skip => {}
                Strategy::Immediately => return Strategy::Immediately,
                Strategy::AfterBackoff => {
                    strategy = Strategy::AfterBackoff;
                    if qpi.pending_plugins.is_empty() {
                        return strategy;
                    }
                }
            }
        }
        strategy
    }

    pub(super) fn push_in_flight_event(&mut self, event: Arc<ClusterEvent>) {
        self.in_flight_events.push_back((self.next_event_id, event));
        self.next_event_id += 1;
    }

    /// The profile of a pod among `profiles` (the first one when none has its scheduler
    /// name, so that no pod is stuck).
    pub(super) fn profile_of<'p, 'a>(
        profiles: &'p [Profile<'a>],
        pod: &PodInfo,
    ) -> Option<&'p Profile<'a>> {
        profiles
            .iter()
            .find(|(f, _)| f.profile_name == pod.scheduler_name())
            .or_else(|| profiles.first())
    }

    /// `movePodsToActiveOrBackoffQueue` for the given unschedulable pods.
    pub(super) fn move_pods(
        &mut self,
        h: &Handle,
        profiles: &[Profile],
        uids: Vec<String>,
        event: &ClusterEvent,
        now: Timestamp,
    ) {
        let et = event.event_type();
        for uid in uids {
            let Some(qpi) = self.unschedulable.get(&uid) else {
                continue;
            };
            if qpi.gated() && !matches_any(&et, &qpi.gating_plugin_events) {
                continue;
            }
            let Some((fwk, hints)) = Self::profile_of(profiles, &qpi.pod_info) else {
                continue;
            };
            let strategy = self.worth_requeuing(h, fwk, hints, qpi, event);
            if strategy == Strategy::Skip {
                continue;
            }
            let Some(qpi) = self.unschedulable.remove(&uid) else {
                continue;
            };
            self.requeue(h, fwk, qpi, strategy, &event.label, now);
        }
        if !self.in_flight.is_empty() {
            self.push_in_flight_event(Arc::new(event.clone()));
        }
    }
}
