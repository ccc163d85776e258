//! A session over a recording: the cluster at the recording's start, its later events in
//! the feed, the clock starting at the header's `started`, and the pods the recording
//! binds itself (whose cycles kubestep runs and compares, but does not bind).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::scheduler::SetupError;
use super::{Actuator, Feed, Session, SessionOptions};
use crate::cluster::{ClusterState, Object, node_name};
use crate::config::{self, ConfigError, KubeSchedulerConfiguration};
use crate::features::{Features, Request};
use crate::recording::{Event, EventType, Recording};

/// A replay's scheduler configuration for `features`: the `--config` file when given,
/// else the one the recording's header carries (its extenders only with
/// `call_header_extenders`, see `Recording::scheduler_config`), else upstream's defaults.
pub fn replay_config(
    rec: &Recording,
    name: &str,
    file: Option<&Path>,
    features: &Features,
    call_header_extenders: bool,
) -> Result<KubeSchedulerConfiguration, ConfigError> {
    match file {
        Some(p) => config::load_file_for(p, features),
        None => Ok(rec
            .scheduler_config(name, features, call_header_extenders)?
            .unwrap_or_else(|| config::default_configuration_for(features))),
    }
}

/// The version a replay of `rec` follows: the user's, else the one it was recorded from.
pub fn replay_features(rec: &Recording, request: &Request) -> Result<Features, SetupError> {
    request
        .resolve(rec.kube_version())
        .map_err(|e| SetupError::Gates(e.to_string()))
}

impl Session {
    /// The one place a recording becomes a session that replays it on its own copy of the
    /// cluster (the terminal UI, `replay --headless`, `bench`): its configuration as
    /// [`replay_config`] decides for the version [`replay_features`] resolves, decisions
    /// applied locally. `name` prefixes errors.
    pub fn open_replay(
        rec: Recording,
        name: &str,
        config_file: Option<&Path>,
        request: &Request,
        opts: SessionOptions,
        call_header_extenders: bool,
    ) -> Result<Session, SetupError> {
        let features = replay_features(&rec, request)?;
        let cfg = replay_config(&rec, name, config_file, &features, call_header_extenders)?;
        Session::from_recording(rec, cfg, opts, Box::new(super::LocalActuator))
    }

    /// A session replaying `rec`: events at or before the header's `started` make the
    /// initial cluster; the rest are applied when the clock reaches them.
    pub fn from_recording(
        rec: Recording,
        config: KubeSchedulerConfiguration,
        mut opts: SessionOptions,
        actuator: Box<dyn Actuator>,
    ) -> Result<Session, SetupError> {
        let start = rec.start();
        opts.start = start;
        let bindings = recorded_bindings(&rec.events);
        // Moved, not cloned: large recordings hold most of their memory in these objects.
        let mut cluster = ClusterState::default();
        let mut later = Vec::new();
        for e in rec.events {
            if e.at <= start {
                match e.kind {
                    EventType::Deleted => {
                        cluster.remove(e.object.kind(), &e.object.key());
                    }
                    _ => {
                        cluster.upsert(*e.object);
                    }
                }
            } else {
                later.push(e);
            }
        }
        cluster.resolve_priorities();
        let mut s = Session::new(cluster, config, opts, actuator)?;
        s.core.externally_bound = bindings;
        s.core.feed = Feed::from_sorted(later);
        Ok(s)
    }

    /// Applies every feed event whose time has come, except that a binding of a pod still
    /// waiting in the active queue is held back (with everything after it) until
    /// kubestep has run that pod's cycle: a recorded scheduler may bind within the
    /// recording's time resolution, and the pod's trace and comparison must still exist.
    pub fn apply_due(&mut self) {
        let now = self.now();
        while self.core.feed.has_due(now) {
            if self.binds_unattempted_pod() {
                return;
            }
            let Some(e) = self.core.feed.pop_due(now) else {
                return;
            };
            self.apply_event(e);
        }
    }

    /// The next feed event binds a pod that kubestep has pending and about to be popped.
    fn binds_unattempted_pod(&self) -> bool {
        let Some(e) = self.core.feed.front() else {
            return false;
        };
        if e.kind == EventType::Deleted || e.object.pod_node_name().is_none_or(str::is_empty) {
            return false;
        }
        let Some(uid) = e.object.pod_uid() else {
            return false;
        };
        let key = e.object.key();
        self.core
            .cluster
            .pod_info(&key)
            .is_some_and(|old| old.node_name().is_empty() && old.uid == uid)
            && self.core.queue.queue_of(uid) == Some(crate::backend::queue::QueueName::Active)
    }

    /// Applies one event from a recording or a watch.
    pub fn apply_event(&mut self, e: Event) {
        if let Some(uid) = e.object.pod_uid()
            && self.core.evicted.contains(uid)
        {
            let uid = uid.to_string();
            let key = e.object.key();
            let note = if e.kind == EventType::Deleted {
                self.core.evicted.remove(&uid);
                "deleted in the recording too"
            } else {
                "recorded update ignored: kubestep preempted it"
            };
            let now = self.now();
            self.core.changes.push((now, format!("Pod {key}: {note}")));
            return;
        }
        match (e.kind, *e.object) {
            (EventType::Deleted, obj) => self.delete(obj.kind(), &obj.key()),
            (_, Object::Pod(p)) => {
                let p = self.admit(*p);
                self.apply(Object::Pod(Box::new(p)));
            }
            (_, Object::PackedPod(pi)) if pi.node_name().is_empty() => {
                let p = self.admit(Arc::unwrap_or_clone(pi.full_pod()));
                self.apply(Object::Pod(Box::new(p)));
            }
            // A bound pod: only its priority may need admitting, and it stays packed.
            (_, Object::PackedPod(pi)) => {
                let pi = match self.core.cluster.resolve_priority_of(&pi) {
                    Some((admitted, _)) => admitted,
                    None => pi,
                };
                self.apply(Object::PackedPod(pi));
            }
            (_, obj) => self.apply(obj),
        }
    }

    /// What the API server would have done to a pod kubestep also tracks: the Priority
    /// admission plugin's `spec.priority`, and kubestep's own binding kept when the event
    /// (a status update, say) does not bind the pod.
    fn admit(&self, mut p: Pod) -> Pod {
        self.core.cluster.resolve_priority(&mut p);
        let key = super::pod_key(&p);
        if node_name(&p).is_empty()
            && let Some(old) = self.core.cluster.pod_info(&key)
            && !old.node_name().is_empty()
            && Some(old.uid.as_str()) == p.metadata.uid.as_deref()
        {
            let node = old.node_name().to_string();
            p.spec.get_or_insert_with(Default::default).node_name = Some(node);
        }
        p
    }
}

/// Pods that appear unbound and that a later event binds (same UID), with the node: the
/// recording's real scheduler placed them.
pub fn recorded_bindings(events: &[Event]) -> BTreeMap<String, String> {
    let mut seen_unbound = BTreeSet::new();
    let mut out = BTreeMap::new();
    for e in events {
        let (Some(uid), Some(node)) = (e.object.pod_uid(), e.object.pod_node_name()) else {
            continue;
        };
        if e.kind == EventType::Deleted {
            continue;
        }
        let uid = uid.to_string();
        if node.is_empty() {
            seen_unbound.insert(uid);
        } else if seen_unbound.contains(&uid) && !out.contains_key(&uid) {
            out.insert(uid, node.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::reader::{ReadOptions, read_str};

    fn pod(at: &str, t: &str, name: &str, uid: &str, node: Option<&str>) -> String {
        let node = node.map_or(String::new(), |n| format!(r#","nodeName":"{n}""#));
        format!(
            r#"{{"at":"{at}","type":"{t}","object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"web","uid":"{uid}"}},"spec":{{"containers":[{{"name":"c"}}]{node}}}}}}}"#
        )
    }

    #[test]
    fn pods_the_recording_binds_after_they_arrive_unbound() {
        let text = [
            r#"{"kubestep":"recording","version":1,"started":"2026-01-01T00:00:00Z"}"#.to_string(),
            pod("2026-01-01T00:00:00Z", "ADDED", "a", "u-a", None),
            pod(
                "2026-01-01T00:00:00Z",
                "ADDED",
                "running",
                "u-r",
                Some("n1"),
            ),
            pod("2026-01-01T00:00:05Z", "ADDED", "b", "u-b", None),
            pod("2026-01-01T00:00:06Z", "MODIFIED", "b", "u-b", Some("n2")),
            pod("2026-01-01T00:00:07Z", "MODIFIED", "a", "u-a", Some("n1")),
            // Recreated with a new UID and bound at once: not a binding of the old pod.
            pod("2026-01-01T00:00:08Z", "DELETED", "c", "u-c", None),
            pod("2026-01-01T00:00:09Z", "ADDED", "c", "u-c2", Some("n2")),
        ]
        .join("\n");
        let rec = read_str(&text, "r.jsonl", ReadOptions::default()).unwrap();
        let b = recorded_bindings(&rec.events);
        let want: BTreeMap<String, String> = [("u-a", "n1"), ("u-b", "n2")]
            .into_iter()
            .map(|(u, n)| (u.to_string(), n.to_string()))
            .collect();
        assert_eq!(b, want);
    }

    /// A session replaying `text` with the default configuration.
    fn session(text: &str) -> Session {
        let rec = read_str(text, "r.jsonl", ReadOptions::default()).unwrap();
        Session::from_recording(
            rec,
            crate::config::default_configuration(),
            SessionOptions::default(),
            Box::new(crate::session::LocalActuator),
        )
        .unwrap()
    }

    fn node(name: &str, cpu: &str) -> String {
        format!(
            r#"{{"at":"2026-01-01T00:00:00Z","type":"ADDED","object":{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{name}"}},"status":{{"allocatable":{{"cpu":"{cpu}","memory":"8Gi","pods":"110"}}}}}}}}"#
        )
    }

    /// A recorded scheduler can bind a pod within the recording's time resolution: the
    /// pod's add and its binding then share a timestamp. kubestep still runs its cycle for
    /// the pod before the binding lands, and compares.
    #[test]
    fn a_pod_added_and_bound_at_the_same_instant_is_still_attempted() {
        let text = [
            r#"{"kubestep":"recording","version":1,"started":"2026-01-01T00:00:00Z"}"#.to_string(),
            node("big", "8"),
            node("small", "2"),
            pod("2026-01-01T00:00:05Z", "ADDED", "b", "u-b", None),
            pod(
                "2026-01-01T00:00:05Z",
                "MODIFIED",
                "b",
                "u-b",
                Some("small"),
            ),
            pod("2026-01-01T00:00:05Z", "ADDED", "c", "u-c", None),
        ]
        .join("\n");
        let mut s = session(&text);
        let end = crate::session::clock::add(s.now(), std::time::Duration::from_secs(65));
        s.run_until(end);
        let sum = s.summary();
        let b = sum.iter().find(|p| p.pod == "web/b").unwrap();
        assert_eq!(b.attempts, 1, "{b:?}");
        assert_eq!(b.node.as_deref(), Some("small"), "{b:?}");
        let d = s.divergences();
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].real_node, "small");
        assert_eq!(d[0].kubestep_nodes, vec!["big".to_string()]);
        let c = sum.iter().find(|p| p.pod == "web/c").unwrap();
        assert_eq!(c.status, crate::session::PodStatus::Bound, "{c:?}");
    }

    fn running(at: &str, t: &str, name: &str, node: &str, priority: i32) -> String {
        format!(
            r#"{{"at":"{at}","type":"{t}","object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"web","uid":"u-{name}"}},"spec":{{"nodeName":"{node}","priority":{priority},"containers":[{{"name":"c","resources":{{"requests":{{"cpu":"2"}}}}}}]}},"status":{{"phase":"Running"}}}}}}"#
        )
    }

    /// kubestep's preemption deletes a victim the real cluster kept: the recording's later
    /// updates of that pod must not bring it back onto the node kubestep gave away.
    #[test]
    fn a_victim_kubestep_evicted_stays_gone_when_the_recording_updates_it() {
        let text = [
            r#"{"kubestep":"recording","version":1,"started":"2026-01-01T00:00:00Z"}"#.to_string(),
            node("n1", "2"),
            running("2026-01-01T00:00:00Z", "ADDED", "low", "n1", 0),
            r#"{"at":"2026-01-01T00:00:05Z","type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"high","namespace":"web","uid":"u-high"},"spec":{"priority":1000,"containers":[{"name":"c","resources":{"requests":{"cpu":"2"}}}]}}}"#.to_string(),
            running("2026-01-01T00:01:00Z", "MODIFIED", "low", "n1", 0),
            running("2026-01-01T00:02:00Z", "DELETED", "low", "n1", 0),
            running("2026-01-01T00:03:00Z", "ADDED", "low", "n1", 0)
                .replace("u-low", "u-low2"),
        ]
        .join("\n");
        let mut s = session(&text);
        let at = |m: i64| {
            crate::session::clock::add(s.now(), std::time::Duration::from_secs(m as u64 * 60 + 30))
        };
        let (t1, t3) = (at(1), at(3));
        s.run_until(t1);
        let on_n1: Vec<String> = s
            .core
            .cluster
            .pod_infos()
            .filter(|p| p.node_name() == "n1")
            .map(|p| p.key.clone())
            .collect();
        assert_eq!(on_n1, vec!["web/high".to_string()]);
        assert!(
            s.core
                .changes
                .iter()
                .any(|(_, c)| c.contains("web/low") && c.contains("preempted")),
            "{:?}",
            s.core.changes
        );
        // A new pod under the same name (its controller recreated it) is a pod like any.
        s.run_until(t3);
        let low = s.core.cluster.pod("web/low").expect("recreated pod");
        assert_eq!(low.metadata.uid.as_deref(), Some("u-low2"));
    }
}
