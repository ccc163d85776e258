//! Waiting pods: pods that passed Reserve and that a Permit plugin holds. Each waiting
//! plugin has a deadline; the pod goes on to bind when every plugin allowed it, and is
//! rejected (unreserved and requeued) when one rejects it or a deadline passes.
//!
//! Shared by all profiles, as upstream's map is. Plugins reach it through `Handle` (and
//! may allow or reject siblings, as Coscheduling does), so it locks internally.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use jiff::Timestamp;

use super::status::{Code, Status};
use super::types::PodInfo;

/// Permit waits are capped at 15 minutes.
pub const MAX_PERMIT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// One waiting pod, as the debugger shows it.
#[derive(Debug, Clone)]
pub struct WaitingPod {
    pub pod: Arc<PodInfo>,
    pub node: String,
    pub since: Timestamp,
    /// Plugins still to allow the pod, with the time each gives up.
    pub pending: BTreeMap<String, Timestamp>,
    /// Plugins that allowed it already.
    pub allowed: Vec<String>,
    /// Set once the wait is over: Success (all allowed) or the rejection.
    pub outcome: Option<Status>,
}

impl WaitingPod {
    /// Time left before the first pending plugin's deadline.
    pub fn time_left(&self, now: Timestamp) -> Option<Duration> {
        let first = self.pending.values().min()?;
        Some(
            first
                .duration_since(now)
                .try_into()
                .unwrap_or(Duration::ZERO),
        )
    }
}

#[derive(Debug, Default)]
pub struct WaitingPods {
    pods: Mutex<BTreeMap<String, WaitingPod>>,
}

/// An empty map, for one-off cycles (explain, tests) where nothing can wait.
pub static NO_WAITING: WaitingPods = WaitingPods {
    pods: Mutex::new(BTreeMap::new()),
};

/// Upstream's message when a Permit wait times out.
pub fn timeout_message(waited: Duration, plugin: &str) -> String {
    format!(
        "rejected due to timeout after waiting {} at plugin {plugin}",
        go_duration(waited)
    )
}

/// A duration as Go's `time.Duration.String()` prints it (e.g. `10s`, `1m30s`, `1.5s`).
pub fn go_duration(d: Duration) -> String {
    let total_ns = d.as_nanos();
    if total_ns == 0 {
        return "0s".into();
    }
    if total_ns < 1_000_000_000 {
        let (unit, div) = if total_ns < 1_000 {
            ("ns", 1)
        } else if total_ns < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{}{unit}", trim_fraction(total_ns, div));
    }
    let hours = total_ns / 3_600_000_000_000;
    let minutes = (total_ns / 60_000_000_000) % 60;
    let secs_ns = total_ns % 60_000_000_000;
    let mut out = String::new();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&format!("{}s", trim_fraction(secs_ns, 1_000_000_000)));
    out
}

fn trim_fraction(value: u128, div: u128) -> String {
    let whole = value / div;
    let frac = value % div;
    if frac == 0 {
        return whole.to_string();
    }
    let width = div.to_string().len() - 1;
    let s = format!("{frac:0width$}");
    format!("{whole}.{}", s.trim_end_matches('0'))
}

impl WaitingPods {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, WaitingPod>> {
        // A panic while holding the lock cannot leave the map half-updated in a way that
        // matters more than losing it, so recover the data.
        self.pods.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A copy of the waiting pods as they are now, for re-running a past attempt.
    pub fn fork(&self) -> WaitingPods {
        WaitingPods {
            pods: Mutex::new(self.lock().clone()),
        }
    }

    /// Starts a wait; each plugin's timeout is capped at 15 minutes as upstream.
    pub fn add(&self, pod: Arc<PodInfo>, node: &str, waits: &[(String, Duration)], now: Timestamp) {
        let pending = waits
            .iter()
            .map(|(p, d)| {
                let d = (*d).min(MAX_PERMIT_TIMEOUT);
                let deadline = now
                    .checked_add(jiff::SignedDuration::try_from(d).unwrap_or_default())
                    .unwrap_or(now);
                (p.clone(), deadline)
            })
            .collect();
        let uid = pod.uid.clone();
        let wp = WaitingPod {
            pod,
            node: node.to_string(),
            since: now,
            pending,
            allowed: Vec::new(),
            outcome: None,
        };
        self.lock().insert(uid, wp);
    }

    pub fn get(&self, uid: &str) -> Option<WaitingPod> {
        self.lock().get(uid).cloned()
    }

    pub fn contains(&self, uid: &str) -> bool {
        self.lock().contains_key(uid)
    }

    /// Every waiting pod, oldest first.
    pub fn list(&self) -> Vec<WaitingPod> {
        let mut v: Vec<WaitingPod> = self.lock().values().cloned().collect();
        v.sort_by(|a, b| a.since.cmp(&b.since).then(a.pod.key.cmp(&b.pod.key)));
        v
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// A plugin allows the pod; when none is left pending the wait succeeds.
    /// Returns false if the pod is not waiting (or not on that plugin).
    pub fn allow(&self, uid: &str, plugin: &str) -> bool {
        let mut map = self.lock();
        let Some(wp) = map.get_mut(uid) else {
            return false;
        };
        if wp.outcome.is_some() || wp.pending.remove(plugin).is_none() {
            return false;
        }
        wp.allowed.push(plugin.to_string());
        if wp.pending.is_empty() {
            wp.outcome = Some(Status::success());
        }
        true
    }

    /// A plugin (or a person) rejects the pod; the first outcome wins, as upstream's
    /// buffered channel does.
    pub fn reject(&self, uid: &str, plugin: &str, message: &str) -> bool {
        let mut map = self.lock();
        let Some(wp) = map.get_mut(uid) else {
            return false;
        };
        if wp.outcome.is_some() {
            return false;
        }
        wp.pending.clear();
        wp.outcome = Some(
            Status::new(Code::Unschedulable, message.to_string()).with_plugin(plugin.to_string()),
        );
        true
    }

    /// Preemption (1.36 on) stops the wait with an Error, so the pod goes to backoff rather
    /// than unschedulable. False when the wait was already over: the caller deletes then.
    pub fn preempt(&self, uid: &str, plugin: &str, message: &str) -> bool {
        let mut map = self.lock();
        let Some(wp) = map.get_mut(uid).filter(|w| w.outcome.is_none()) else {
            return false;
        };
        wp.pending.clear();
        wp.outcome = Some(Status::error(message.to_string()).with_plugin(plugin.to_string()));
        true
    }

    /// Rejects pods whose earliest pending deadline has passed.
    pub fn expire(&self, now: Timestamp) -> Vec<String> {
        let mut map = self.lock();
        let mut expired = Vec::new();
        for (uid, wp) in map.iter_mut() {
            if wp.outcome.is_some() {
                continue;
            }
            let due = wp
                .pending
                .iter()
                .filter(|(_, d)| **d <= now)
                .min_by_key(|(_, d)| **d)
                .map(|(p, d)| (p.clone(), *d));
            if let Some((plugin, deadline)) = due {
                let waited: Duration = deadline
                    .duration_since(wp.since)
                    .try_into()
                    .unwrap_or(Duration::ZERO);
                wp.pending.clear();
                wp.outcome = Some(
                    Status::unschedulable(timeout_message(waited, &plugin)).with_plugin(plugin),
                );
                expired.push(uid.clone());
            }
        }
        expired
    }

    /// The earliest deadline among pods still waiting.
    pub fn next_deadline(&self) -> Option<Timestamp> {
        self.lock()
            .values()
            .filter(|w| w.outcome.is_none())
            .flat_map(|w| w.pending.values().copied())
            .min()
    }

    /// Removes and returns the pods whose wait is over, oldest first.
    pub fn take_finished(&self) -> Vec<WaitingPod> {
        let mut map = self.lock();
        let done: Vec<String> = map
            .iter()
            .filter(|(_, w)| w.outcome.is_some())
            .map(|(k, _)| k.clone())
            .collect();
        let mut out: Vec<WaitingPod> = done.iter().filter_map(|k| map.remove(k)).collect();
        out.sort_by(|a, b| a.since.cmp(&b.since).then(a.pod.key.cmp(&b.pod.key)));
        out
    }

    pub fn remove(&self, uid: &str) -> Option<WaitingPod> {
        self.lock().remove(uid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod;
    use serde_json::json;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration(Duration::from_secs(10)), "10s");
        assert_eq!(go_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(go_duration(Duration::from_secs(900)), "15m0s");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(go_duration(Duration::from_secs(3600)), "1h0m0s");
    }

    #[test]
    fn allow_all_plugins_then_done() {
        let w = WaitingPods::default();
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
        w.add(
            p,
            "n1",
            &[
                ("A".into(), Duration::from_secs(10)),
                ("B".into(), Duration::from_secs(20)),
            ],
            t(0),
        );
        assert!(w.allow("p", "A"));
        assert!(w.get("p").unwrap().outcome.is_none());
        assert!(!w.allow("p", "A"));
        assert!(w.allow("p", "B"));
        let done = w.take_finished();
        assert_eq!(done.len(), 1);
        assert!(done[0].outcome.as_ref().unwrap().is_success());
        assert!(w.is_empty());
    }

    #[test]
    fn timeouts_and_first_outcome_wins() {
        let w = WaitingPods::default();
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
        w.add(
            p,
            "n1",
            &[("Coscheduling".into(), Duration::from_secs(3600))],
            t(0),
        );
        assert_eq!(w.next_deadline(), Some(t(900)));
        assert!(w.expire(t(899)).is_empty());
        assert_eq!(w.expire(t(900)), ["p"]);
        assert!(!w.reject("p", "X", "late"));
        let s = w.get("p").unwrap().outcome.unwrap();
        assert_eq!(
            s.message(),
            "rejected due to timeout after waiting 15m0s at plugin Coscheduling"
        );
        assert_eq!(s.plugin(), "Coscheduling");
    }
}
