//! A queue of pods kept in pop order by a comparator given on insertion (activeQ by the
//! QueueSort plugin, backoffQ by backoff expiry), with lookup by UID.

use std::cmp::Ordering;
use std::collections::{HashMap, VecDeque};

use crate::framework::queued::QueuedPodInfo;

/// Pods live in slots that do not move, so lookup by UID is a hash away and reordering
/// moves only slot numbers (a 10,000-pod queue no longer scans pods on every lookup).
#[derive(Debug, Clone, Default)]
pub struct OrderedQueue {
    slots: Vec<Option<QueuedPodInfo>>,
    free: Vec<usize>,
    order: VecDeque<usize>,
    index: HashMap<String, usize>,
}

impl OrderedQueue {
    fn slot(&self, s: usize) -> &QueuedPodInfo {
        self.slots[s]
            .as_ref()
            .expect("every ordered slot holds a pod")
    }

    /// Inserts (or replaces, by UID) `qpi` at its place under `cmp`.
    pub fn insert(
        &mut self,
        qpi: QueuedPodInfo,
        cmp: impl Fn(&QueuedPodInfo, &QueuedPodInfo) -> Ordering,
    ) {
        self.remove(qpi.uid());
        let at = self
            .order
            .partition_point(|&s| cmp(self.slot(s), &qpi) != Ordering::Greater);
        let uid = qpi.uid().to_string();
        let s = match self.free.pop() {
            Some(s) => {
                self.slots[s] = Some(qpi);
                s
            }
            None => {
                self.slots.push(Some(qpi));
                self.slots.len() - 1
            }
        };
        self.index.insert(uid, s);
        self.order.insert(at, s);
    }

    pub fn remove(&mut self, uid: &str) -> Option<QueuedPodInfo> {
        let s = self.index.remove(uid)?;
        if let Some(i) = self.order.iter().position(|&x| x == s) {
            self.order.remove(i);
        }
        self.free.push(s);
        self.slots[s].take()
    }

    pub fn contains(&self, uid: &str) -> bool {
        self.index.contains_key(uid)
    }

    pub fn get(&self, uid: &str) -> Option<&QueuedPodInfo> {
        self.index.get(uid).map(|&s| self.slot(s))
    }

    pub fn front(&self) -> Option<&QueuedPodInfo> {
        self.order.front().map(|&s| self.slot(s))
    }

    pub fn pop_front(&mut self) -> Option<QueuedPodInfo> {
        let s = self.order.pop_front()?;
        let q = self.slots[s].take()?;
        self.index.remove(q.uid());
        self.free.push(s);
        Some(q)
    }

    pub fn iter(&self) -> impl Iterator<Item = &QueuedPodInfo> {
        self.order.iter().map(|&s| self.slot(s))
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::queued::QueuedPodInfo;

    fn qpi(name: &str, seq: u64) -> QueuedPodInfo {
        let pod = crate::plugins::testing::pod(serde_json::json!({
            "metadata": {"name": name}, "spec": {"containers": []}
        }));
        let mut q = QueuedPodInfo::new(pod, jiff::Timestamp::UNIX_EPOCH);
        q.seq = seq;
        q
    }

    #[test]
    fn keeps_order_and_finds_by_uid_after_removals() {
        let by_seq = |a: &QueuedPodInfo, b: &QueuedPodInfo| a.seq.cmp(&b.seq);
        let mut q = OrderedQueue::default();
        for (n, s) in [("c", 3), ("a", 1), ("b", 2), ("d", 4)] {
            q.insert(qpi(n, s), by_seq);
        }
        let uid_b = q.iter().nth(1).unwrap().uid().to_string();
        assert_eq!(q.remove(&uid_b).unwrap().seq, 2);
        assert!(q.get(&uid_b).is_none());
        // The freed slot is reused without disturbing the order.
        q.insert(qpi("e", 0), by_seq);
        let seqs: Vec<u64> = q.iter().map(|x| x.seq).collect();
        assert_eq!(seqs, [0, 1, 3, 4]);
        assert_eq!(q.pop_front().unwrap().seq, 0);
        assert_eq!(q.len(), 3);
        let last = q.iter().last().unwrap().uid().to_string();
        assert_eq!(q.get(&last).unwrap().seq, 4);
    }
}
