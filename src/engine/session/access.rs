//! Access to the session's parts for the drivers (the TUI, the CLI, live mode), so they go
//! through the Session API instead of reaching into `Core`: when `Core` is reshaped only these
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

    /// Attempts parked in a PreBind plugin's wait (counted apart from Permit's map).
    pub fn pre_bind_waits(&self) -> usize {
        self.core.pre_bind_waits()
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
        self.core.sched.snapshot()
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

    /// The scheduler core (its round-robin index, the scheduler log it follows, and what
    /// following it did).
    pub fn scheduler(&self) -> &super::scheduler::Scheduler {
        &self.core.sched
    }

    /// Seeds the scheduler's random choices (`--seed`).
    pub fn set_seed(&mut self, seed: u64) {
        self.core.sched.set_seed(seed);
    }

    /// What past attempts ran on (its size is reported after a replay).
    pub fn world(&self) -> &super::WorldHistory {
        &self.core.world
    }

    /// How many cluster changes are still to come.
    pub fn feed_len(&self) -> usize {
        self.core.feed.len()
    }

    /// Live shadow mode: the pod `uid` will be bound by the cluster's own scheduler;
    /// kubestep runs its cycle and compares, but does not bind it.
    pub fn expect_external_binding(&mut self, uid: &str) {
        self.core
            .externally_bound
            .insert(uid.to_string(), String::new());
    }

    /// Ends every attempt held at Permit (their plugins' verdicts already given): each runs
    /// its binding cycle or is unreserved, as a finished pod would.
    pub fn finish_parked(&mut self) {
        let parked: Vec<String> = self.core.parked.keys().cloned().collect();
        for uid in parked {
            if let Some(a) = self.core.parked.remove(&uid) {
                self.current = Some(a);
                self.finish_pod();
            }
        }
    }
}
