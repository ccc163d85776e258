//! A queue of pods kept in pop order by a comparator given on insertion (activeQ by the
//! QueueSort plugin, backoffQ by backoff expiry), with lookup by UID.

use std::cmp::Ordering;
use std::collections::{HashSet, VecDeque};

use crate::framework::queued::QueuedPodInfo;

#[derive(Debug, Clone, Default)]
pub struct OrderedQueue {
    items: VecDeque<QueuedPodInfo>,
    uids: HashSet<String>,
}

impl OrderedQueue {
    /// Inserts (or replaces, by UID) `qpi` at its place under `cmp`.
    pub fn insert(
        &mut self,
        qpi: QueuedPodInfo,
        cmp: impl Fn(&QueuedPodInfo, &QueuedPodInfo) -> Ordering,
    ) {
        self.remove(qpi.uid());
        let at = self
            .items
            .partition_point(|x| cmp(x, &qpi) != Ordering::Greater);
        self.uids.insert(qpi.uid().to_string());
        self.items.insert(at, qpi);
    }

    pub fn remove(&mut self, uid: &str) -> Option<QueuedPodInfo> {
        if !self.uids.remove(uid) {
            return None;
        }
        let i = self.items.iter().position(|q| q.uid() == uid)?;
        self.items.remove(i)
    }

    pub fn contains(&self, uid: &str) -> bool {
        self.uids.contains(uid)
    }

    pub fn get(&self, uid: &str) -> Option<&QueuedPodInfo> {
        if !self.contains(uid) {
            return None;
        }
        self.items.iter().find(|q| q.uid() == uid)
    }

    pub fn front(&self) -> Option<&QueuedPodInfo> {
        self.items.front()
    }

    pub fn pop_front(&mut self) -> Option<QueuedPodInfo> {
        let q = self.items.pop_front()?;
        self.uids.remove(q.uid());
        Some(q)
    }

    pub fn iter(&self) -> impl Iterator<Item = &QueuedPodInfo> {
        self.items.iter()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }
}
