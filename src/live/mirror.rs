//! Live mode's engine side: a Session built from the first list of every kind and kept in
//! step with the watches, with the clock following the wall clock.
//!
//! Shadow mode evaluates each pending pod against the cluster as it is: kubestep's choice
//! is recorded but never assumed (the pod is marked as bound by its source, as replay does
//! for pods a recording binds), so one pod's simulated placement never skews another's,
//! and what the real scheduler does arrives through the watch.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::LiveError;
use super::watch::{Change, Update, Watchers};
use crate::cluster::{ClusterState, Located, Object, node_name, object};
use crate::config::KubeSchedulerConfiguration;
use crate::recording::EventType;
use crate::scheduler::SetupError;
use crate::session::{Actuator, PodStatus, Session, SessionOptions, StopReason, trace};

/// The first list of every kind, and the changes that arrived meanwhile.
pub struct InitialSync {
    pub objects: Vec<Object>,
    pub held: Vec<Change>,
    /// Objects that could not be read (named, skipped).
    pub notes: Vec<String>,
}

/// Waits for every kind's first list. `progress` hears about each kind and reconnects.
pub async fn initial_sync(
    w: &mut Watchers,
    mut progress: impl FnMut(&Update),
) -> Result<InitialSync, LiveError> {
    let mut out = InitialSync {
        objects: Vec::new(),
        held: Vec::new(),
        notes: Vec::new(),
    };
    let mut synced = 0;
    while synced < w.kinds().len() {
        let Some(u) = w.next().await else { break };
        match u {
            Update::Change(c) if c.initial => match to_object(&c) {
                Ok(Some(o)) => out.objects.push(o),
                Ok(None) => {}
                Err(e) => out.notes.push(e),
            },
            Update::Change(c) => out.held.push(c),
            Update::Synced { .. } => {
                synced += 1;
                progress(&u);
            }
            Update::Fatal(e) => return Err(e),
            other => progress(&other),
        }
    }
    Ok(out)
}

/// The engine's object for a change; `Ok(None)` for kinds it does not read.
pub fn to_object(c: &Change) -> Result<Option<Object>, String> {
    match object::from_value(c.object.clone()) {
        Ok(Some(mut o)) => {
            o.normalize();
            Ok(Some(o))
        }
        Ok(None) => Ok(None),
        Err(e) => Err(format!("skipped {}: {e}", c.kind)),
    }
}

pub struct Mirror {
    pub session: Session,
    shadow: bool,
    /// Objects skipped because they could not be read.
    pub notes: Vec<String>,
}

impl Mirror {
    pub fn new(
        sync: InitialSync,
        config: KubeSchedulerConfiguration,
        opts: SessionOptions,
        actuator: Box<dyn Actuator>,
        shadow: bool,
    ) -> Result<Mirror, SetupError> {
        let located = sync
            .objects
            .into_iter()
            .map(|value| Located {
                value,
                file: "cluster".into(),
                line: 0,
            })
            .collect();
        // The API server never serves two objects under one key.
        let cluster = ClusterState::from_objects(located).unwrap_or_default();
        let mut session = Session::new(cluster, config, opts, actuator)?;
        if shadow {
            let pending: Vec<String> = session
                .core
                .cluster
                .pending_pods()
                .filter_map(|p| p.metadata.uid.clone())
                .collect();
            // The real node is not known yet (the cluster's scheduler has not bound them).
            session
                .core
                .externally_bound
                .extend(pending.into_iter().map(|uid| (uid, String::new())));
        }
        let mut m = Mirror {
            session,
            shadow,
            notes: sync.notes,
        };
        for c in sync.held {
            m.apply(&c);
        }
        Ok(m)
    }

    /// Applies a watched change to the session.
    pub fn apply(&mut self, c: &Change) {
        let obj = match to_object(c) {
            Ok(Some(o)) => o,
            Ok(None) => return,
            Err(e) => {
                self.notes.push(e);
                return;
            }
        };
        self.set_clock(Timestamp::now());
        match c.event {
            EventType::Deleted => {
                let key = obj.key();
                self.session.delete(obj.kind(), &key);
            }
            EventType::Added | EventType::Modified => {
                if self.shadow
                    && let Object::Pod(p) = &obj
                    && node_name(p).is_empty()
                    && let Some(uid) = &p.metadata.uid
                {
                    self.session
                        .core
                        .externally_bound
                        .insert(uid.clone(), String::new());
                }
                self.session.apply(obj);
            }
        }
    }

    /// Moves the session's clock to `now` (never back).
    pub fn set_clock(&mut self, now: Timestamp) {
        if now > self.session.now() {
            self.session.core.clock.set(now);
        }
    }

    /// Lets the session catch up with the wall clock: timers fire, pods are scheduled.
    /// Returns the trace of what happened.
    pub fn tick(&mut self, now: Timestamp) -> Vec<Value> {
        let before = self.session.history.peek_seq();
        let target = now.max(self.session.now());
        let d = target.duration_since(self.session.now()).unsigned_abs();
        let r = self.session.advance(d);
        let mut out: Vec<Value> = self
            .session
            .history
            .since(before)
            .iter()
            .map(trace::step)
            .collect();
        if let StopReason::Breakpoint(_) = r {
            out.push(trace::stop(&self.session, &r));
        }
        out
    }

    /// The headless summary: replay's, and in shadow mode every pod still pending in the
    /// cluster as `"node":null,"status":"Pending"` with kubestep's `"selected"` nodes or
    /// its unschedulable `"message"`.
    pub fn summary(&self) -> Value {
        let records = self.session.summary();
        if !self.shadow {
            return trace::summary(&records);
        }
        let pods: Vec<Value> = records
            .iter()
            .map(|r| {
                let pending = self
                    .session
                    .core
                    .cluster
                    .pod(&r.pod)
                    .is_some_and(|p| node_name(p).is_empty());
                if !pending || r.status == PodStatus::Ignored {
                    return json!({"pod": r.pod, "node": r.node, "status": r.status, "message": r.message});
                }
                let mut v = json!({"pod": r.pod, "node": null, "status": "Pending"});
                match r.status {
                    PodStatus::Unschedulable | PodStatus::Gated => v["message"] = json!(r.message),
                    PodStatus::Waiting => {
                        v["selected"] = json!(r.node.iter().collect::<Vec<_>>());
                        v["message"] = json!("waiting at Permit (simulated: shadow mode writes nothing)");
                    }
                    _ => {
                        let selected = self.selected(&r.pod);
                        if selected.is_empty() {
                            v["message"] = json!(r.message);
                        } else {
                            v["selected"] = json!(selected);
                        }
                    }
                }
                v
            })
            .collect();
        json!({"summary": {"pods": pods}})
    }

    /// The best nodes of the pod's last attempt: every node sharing the top score (the one
    /// node when there was nothing to score).
    fn selected(&self, pod: &str) -> Vec<String> {
        let Some(a) = self
            .session
            .history
            .attempts
            .iter()
            .rev()
            .find(|a| a.pod == pod)
        else {
            return Vec::new();
        };
        if !matches!(a.outcome.as_deref(), Some("Bound" | "Waiting" | "Deferred"))
            || a.node.is_none()
        {
            return Vec::new();
        }
        let Some(scores) = a.scores.as_ref().filter(|s| !s.totals.is_empty()) else {
            return a.node.iter().cloned().collect();
        };
        let best = scores.totals.iter().copied().max().unwrap_or(0);
        let mut by_name: BTreeMap<&str, ()> = BTreeMap::new();
        for (i, t) in scores.totals.iter().enumerate() {
            if *t == best
                && let Some(name) = scores.nodes.get(i).and_then(|n| a.node_names.get(*n))
            {
                by_name.insert(name, ());
            }
        }
        by_name.keys().map(|s| s.to_string()).collect()
    }
}
