//! What the plugin remembers between cycles, as upstream's DRA manager does:
//!
//! * allocations in flight: Reserve chose the devices, PreBind has not written them yet.
//!   Nobody else may take those devices, and a pod sharing the claim waits for it.
//! * the claims kubestep wrote (PreBind, Unreserve, PostFilter): they stand for the
//!   cluster's copy until the cluster shows a newer one (upstream's assume cache), which in
//!   live mode comes back through the watch.
//!
//! kubestep also stands in for the resource claim controller for the reservations it made
//! itself: a pod it reserved a claim for that no longer exists does not hold the claim any
//! more, and a claim kubestep allocated that no pod holds is free again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::resource::v1::{AllocationResult, ResourceClaim};

use super::objects;
use crate::framework::listers::Listers;

#[derive(Debug, Clone, Default)]
pub struct Assumed {
    /// By claim key: the allocation Reserve chose, and the pod (key) it is for.
    in_flight: BTreeMap<String, (AllocationResult, String)>,
    /// By claim key: kubestep's last write of the claim.
    written: BTreeMap<String, Written>,
}

#[derive(Debug, Clone)]
pub struct Written {
    pub claim: Arc<ResourceClaim>,
    /// The resourceVersion of the claim the write started from.
    pub base: Option<String>,
    /// Set by the session once the write happened.
    pub done: Arc<AtomicBool>,
    /// kubestep allocated the claim: it frees it when no pod it reserved holds it.
    pub allocated: bool,
    /// Pods kubestep reserved the claim for, as (uid, key).
    pub pods: BTreeSet<(String, String)>,
}

/// The claims as kubestep knows them at the start of a cycle.
#[derive(Debug, Default)]
pub struct View {
    /// Claims kubestep wrote, as they stand (the cluster's copy holds for the others).
    pub claims: BTreeMap<String, Arc<ResourceClaim>>,
    /// Allocations in flight by claim key.
    pub in_flight: BTreeMap<String, AllocationResult>,
}

fn version(c: &ResourceClaim) -> Option<&str> {
    c.metadata.resource_version.as_deref()
}

fn pod_exists(l: &Listers, uid: &str, key: &str) -> bool {
    l.pods.get(key).is_some_and(|p| p.uid == uid)
}

impl Written {
    /// A write that allocates nothing and reserves for no pod (a deallocation, a
    /// deletion).
    pub fn of_status(claim: ResourceClaim, base: Option<String>, done: Arc<AtomicBool>) -> Written {
        Written {
            claim: Arc::new(claim),
            base,
            done,
            allocated: false,
            pods: BTreeSet::new(),
        }
    }

    /// The claim as it stands: without the reservations of pods kubestep reserved it for
    /// that are gone, and deallocated when kubestep allocated it and nobody holds it.
    fn current(&self, l: &Listers) -> Arc<ResourceClaim> {
        let gone = |uid: &str| {
            self.pods
                .iter()
                .any(|(u, k)| u == uid && !pod_exists(l, u, k))
        };
        let reserved = self
            .claim
            .status
            .as_ref()
            .and_then(|s| s.reserved_for.as_ref());
        if !reserved.is_some_and(|r| r.iter().any(|r| gone(&r.uid))) {
            return self.claim.clone();
        }
        let mut c = (*self.claim).clone();
        if let Some(st) = c.status.as_mut() {
            let rf = st.reserved_for.take().unwrap_or_default();
            let kept: Vec<_> = rf.into_iter().filter(|r| !gone(&r.uid)).collect();
            if kept.is_empty() {
                if self.allocated {
                    st.allocation = None;
                }
            } else {
                st.reserved_for = Some(kept);
            }
        }
        Arc::new(c)
    }
}

impl Assumed {
    /// What kubestep knows of the claims now. Writes the cluster has moved past (a newer
    /// version, or the claim deleted) and writes that never happened are forgotten.
    pub fn view(&mut self, l: &Listers) -> View {
        self.written.retain(|key, w| {
            let cluster = objects::claim(l, key);
            w.done.load(Ordering::Acquire)
                && match &cluster {
                    Some(c) => version(c) == w.base.as_deref(),
                    // A deletion is over once the claim is gone; a claim kubestep made
                    // (no version yet) stands until the cluster shows it.
                    None => w.base.is_none() && w.claim.metadata.deletion_timestamp.is_none(),
                }
        });
        // In flight until PreBind writes it, the pod goes, or the cluster shows the claim
        // allocated (a pod the recording binds: the real scheduler's write arrives).
        self.in_flight.retain(|key, (_, pod)| {
            let unallocated = objects::claim(l, key)
                .is_none_or(|c| c.status.as_ref().is_none_or(|s| s.allocation.is_none()));
            l.pods.contains_key(pod.as_str()) && unallocated
        });
        View {
            claims: self
                .written
                .iter()
                .map(|(k, w)| (k.clone(), w.current(l)))
                .collect(),
            in_flight: self
                .in_flight
                .iter()
                .map(|(k, (a, _))| (k.clone(), a.clone()))
                .collect(),
        }
    }

    /// Reserve: the allocation is in flight for `pod`.
    pub fn start(&mut self, claim: &str, allocation: AllocationResult, pod: &str) {
        self.in_flight
            .insert(claim.to_string(), (allocation, pod.to_string()));
    }

    /// Unreserve or PreBind: the allocation is no longer in flight.
    pub fn end(&mut self, claim: &str) {
        self.in_flight.remove(claim);
    }

    /// kubestep wrote `w` (once the session has carried it out).
    pub fn wrote(&mut self, key: &str, w: Written) {
        self.written.insert(key.to_string(), w);
    }

    /// kubestep's last write of a claim, if it still stands.
    pub fn written(&self, key: &str) -> Option<&Written> {
        self.written.get(key)
    }

    /// A write that did not happen is not remembered.
    pub fn forget(&mut self, key: &str) {
        self.written.remove(key);
    }
}
