//! A session over a recording: the cluster at the recording's start, its later events in
//! the feed, the clock starting at the header's `started`, and the pods the recording
//! binds itself (whose cycles kubestep runs and compares, but does not bind).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;

use super::{Actuator, Feed, Session, SessionOptions};
use crate::cluster::{ClusterState, Object, node_name};
use crate::config::KubeSchedulerConfiguration;
use crate::recording::{Event, EventType, Recording};
use crate::scheduler::SetupError;

impl Session {
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

    /// Applies every feed event whose time has come.
    pub fn apply_due(&mut self) {
        let now = self.now();
        while let Some(e) = self.core.feed.pop_due(now) {
            self.apply_event(e);
        }
    }

    /// Applies one event from a recording or a watch.
    pub fn apply_event(&mut self, e: Event) {
        match (e.kind, *e.object) {
            (EventType::Deleted, obj) => self.delete(obj.kind(), &obj.key()),
            (_, Object::Pod(p)) => {
                let p = self.admit(p);
                self.apply(Object::Pod(p));
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
            && let Some(old) = self.core.cluster.pod(&key)
            && !node_name(old).is_empty()
            && old.metadata.uid == p.metadata.uid
        {
            let node = node_name(old).to_string();
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
        let Object::Pod(p) = &*e.object else { continue };
        if e.kind == EventType::Deleted {
            continue;
        }
        let uid = match &p.metadata.uid {
            Some(u) => u.clone(),
            None => continue,
        };
        let node = node_name(p);
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
}
