//! Read access to the session's parts for front ends (the TUI), so they go through the
//! Session API instead of reaching into `Core`: when `Core` is reshaped only these
//! bodies change, not every caller.

use std::collections::BTreeMap;

use jiff::Timestamp;

use super::{Attempt, Clock, PodRecord, QueueCounts, Session};
use crate::cluster::ClusterState;
use crate::config::KubeSchedulerConfiguration;
use crate::framework::waiting::WaitingPods;
use crate::framework::{Framework, Snapshot};

impl Session {
    /// The pods' records, by pod key (namespace/name).
    pub fn records(&self) -> &BTreeMap<String, PodRecord> {
        &self.core.pods
    }

    /// The record of one pod, borrowed (`pod` clones it).
    pub fn record(&self, key: &str) -> Option<&PodRecord> {
        self.core.pods.get(key)
    }

    /// Pods waiting at Permit.
    pub fn waiting(&self) -> &WaitingPods {
        &self.core.waiting
    }

    /// Attempts held at Permit, by pod UID.
    pub fn parked(&self) -> &BTreeMap<String, Attempt> {
        &self.core.parked
    }

    /// The attempt being stepped and those held at Permit (tests even out their clocks).
    pub fn open_attempts_mut(&mut self) -> impl Iterator<Item = &mut Attempt> {
        self.current.iter_mut().chain(self.core.parked.values_mut())
    }

    /// The session's own copy of the cluster.
    pub fn cluster(&self) -> &ClusterState {
        &self.core.cluster
    }

    /// The scheduler's snapshot of the nodes.
    pub fn snapshot(&self) -> &Snapshot {
        &self.core.sched.snapshot
    }

    /// The profiles, in configuration order (the first is the default).
    pub fn frameworks(&self) -> &[Framework] {
        &self.core.sched.frameworks
    }

    /// The scheduler configuration the session runs.
    pub fn config(&self) -> &KubeSchedulerConfiguration {
        &self.core.sched.config
    }

    pub fn clock(&self) -> &Clock {
        &self.core.clock
    }

    /// Sets virtual time (play passing time while nothing runs; timers are fired by
    /// `fire_timers_pub`).
    pub fn set_time(&mut self, t: Timestamp) {
        self.core.clock.set(t);
    }

    /// How many pods are in each sub-queue, waiting and bound now.
    pub fn counts(&self) -> QueueCounts {
        self.core.counts()
    }

    /// No cluster change is left to come.
    pub fn feed_is_empty(&self) -> bool {
        self.core.feed.is_empty()
    }

    /// When the last cluster change still to come happens.
    pub fn last_change_at(&self) -> Option<Timestamp> {
        self.core.feed.iter().map(|e| e.at).max()
    }

    /// Upstream's scheduler log, to compare decisions with (`--scheduler-log`).
    pub fn set_scheduler_log(&mut self, log: Option<super::scheduler_log::SchedulerLog>) {
        self.core.sched.scheduler_log = log;
    }
}
