//! The feed: cluster changes waiting for their time. Replay fills it from a recording;
//! live mode pushes watch events into it as they arrive. The session applies every event
//! whose time has come before it starts the next pod, and `next_timer` includes the
//! next event's time, so advancing the clock replays the recording.

use std::collections::VecDeque;

use jiff::Timestamp;

use crate::recording::Event;

#[derive(Debug, Clone, Default)]
pub struct Feed {
    /// In time order; events with the same time stay in the order they were pushed.
    pending: VecDeque<Event>,
    /// Events applied so far.
    pub applied: usize,
}

impl Feed {
    /// A feed over events already in time order (as `recording::reader` returns them).
    pub fn from_sorted(events: impl IntoIterator<Item = Event>) -> Feed {
        Feed {
            pending: events.into_iter().collect(),
            applied: 0,
        }
    }

    /// Adds one event at its place in time (after every event with the same time).
    pub fn push(&mut self, e: Event) {
        let i = self.pending.partition_point(|p| p.at <= e.at);
        self.pending.insert(i, e);
    }

    /// When the next event happens.
    pub fn next_at(&self) -> Option<Timestamp> {
        self.pending.front().map(|e| e.at)
    }

    /// The next event, due or not.
    pub fn front(&self) -> Option<&Event> {
        self.pending.front()
    }

    /// The next event if its time has come.
    pub fn pop_due(&mut self, now: Timestamp) -> Option<Event> {
        if self.pending.front()?.at > now {
            return None;
        }
        self.applied += 1;
        self.pending.pop_front()
    }

    pub fn has_due(&self, now: Timestamp) -> bool {
        self.next_at().is_some_and(|t| t <= now)
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The events still to come, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Event> {
        self.pending.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Object;
    use crate::recording::EventType;

    fn ev(sec: i64, name: &str) -> Event {
        let node = serde_json::from_value(serde_json::json!({"metadata": {"name": name}}));
        Event {
            at: Timestamp::from_second(sec).unwrap(),
            kind: EventType::Added,
            object: Box::new(Object::Node(node.unwrap())),
            line: 0,
        }
    }

    #[test]
    fn keeps_time_order_and_push_order() {
        let mut f = Feed::from_sorted([ev(1, "a"), ev(5, "b")]);
        f.push(ev(5, "c"));
        f.push(ev(3, "d"));
        let t = |s| Timestamp::from_second(s).unwrap();
        assert_eq!(f.next_at(), Some(t(1)));
        assert!(f.pop_due(t(0)).is_none());
        let order: Vec<String> = std::iter::from_fn(|| f.pop_due(t(10)))
            .map(|e| e.object.key())
            .collect();
        assert_eq!(order, ["a", "d", "b", "c"]);
        assert_eq!(f.applied, 4);
    }
}
