//! What the plugin keeps in CycleState, and how it shows itself: the pod's claims, per
//! node the allocation found or why none was, and the allocation chosen.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::resource::v1::{AllocationResult, DeviceClass, ResourceSlice};

use super::allocator::{DeviceId, InUse, SharedUse, Shortfall, allocated_ids};
use super::objects::PodClaim;
use crate::api::node_affinity::NodeSelectorMatcher;
use crate::framework::{RenderState, StateTree};

#[derive(Debug, Clone)]
pub enum NodeResult {
    Allocated(Vec<AllocationResult>),
    /// kubestep's diagnosis, when it has one.
    Failed(Option<Shortfall>),
    /// Claims (indices) already allocated for other nodes.
    Unavailable(Vec<usize>),
}

#[derive(Debug, Default, Clone)]
struct Inner {
    nodes: BTreeMap<String, NodeResult>,
    unavailable: BTreeSet<usize>,
    reserved: Option<String>,
    bound: Option<String>,
    /// PreBind's claim writes by claim key: set once the session carried each out.
    pre_bind_writes: BTreeMap<String, Arc<AtomicBool>>,
    /// Per node, the extended-resource claim with the requests that node needs.
    node_claims: BTreeMap<String, super::NodeClaim>,
    /// PreBind: binding conditions not yet met, per claim (kube-scheduler waits here).
    binding_wait: Vec<(String, Vec<String>)>,
    binding_timeout: Option<std::time::Duration>,
}

/// Fixed after PreFilter, except `inner`, which Filter (in parallel) and Reserve fill.
#[derive(Debug, Default)]
pub struct StateData {
    pub claims: Vec<PodClaim>,
    /// Per claim: the nodes an existing allocation limits it to.
    pub pinned: Vec<Option<NodeSelectorMatcher>>,
    /// Indices of the claims the scheduler allocates.
    pub to_allocate: Vec<usize>,
    /// Indices of allocated claims whose binding failed or timed out.
    pub binding_broken: Vec<usize>,
    pub in_use: InUse,
    pub shared: SharedUse,
    pub slices: Arc<Vec<ResourceSlice>>,
    pub classes: Arc<BTreeMap<String, DeviceClass>>,
    /// DRAExtendedResource: the index of the claim standing for the pod's extended
    /// resources (the last one), the pod's scalar requests, and who serves them.
    pub extended: Option<usize>,
    pub pod_scalar: BTreeMap<String, i64>,
    pub resolver: Arc<super::extended::ClassResolver>,
    /// DeviceTaintRules in force (their taints are in `slices`), for reasons to name.
    pub taint_rules: Arc<Vec<crate::api::dra::DeviceTaintRule>>,
    inner: Mutex<Inner>,
}

impl Clone for StateData {
    fn clone(&self) -> Self {
        StateData {
            claims: self.claims.clone(),
            pinned: self.pinned.clone(),
            to_allocate: self.to_allocate.clone(),
            binding_broken: self.binding_broken.clone(),
            in_use: self.in_use.clone(),
            shared: self.shared.clone(),
            slices: self.slices.clone(),
            classes: self.classes.clone(),
            extended: self.extended,
            pod_scalar: self.pod_scalar.clone(),
            resolver: self.resolver.clone(),
            taint_rules: self.taint_rules.clone(),
            inner: Mutex::new(self.lock().clone()),
        }
    }
}

impl StateData {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub fn record(&self, node: String, r: NodeResult) {
        self.lock().nodes.insert(node, r);
    }
    pub fn allocations(&self, node: &str) -> Option<Vec<AllocationResult>> {
        match self.lock().nodes.get(node) {
            Some(NodeResult::Allocated(a)) => Some(a.clone()),
            _ => None,
        }
    }
    pub fn record_node_claim(&self, node: String, c: super::NodeClaim) {
        self.lock().node_claims.insert(node, c);
    }
    /// The extended-resource claim as Filter made it for `node`.
    pub fn node_claim(&self, node: &str) -> Option<super::NodeClaim> {
        self.lock().node_claims.get(node).cloned()
    }
    /// Claims of the pod's own (not the extended-resource one) are to be allocated.
    pub fn user_claims_to_allocate(&self) -> bool {
        self.to_allocate.iter().any(|&i| Some(i) != self.extended)
    }
    /// The pod has no claims of its own (only the extended-resource one).
    pub fn no_user_claim(&self) -> bool {
        self.claims.len() == usize::from(self.extended.is_some())
    }
    pub fn mark_unavailable(&self, claims: &[usize]) {
        self.lock().unavailable.extend(claims);
    }
    pub fn unavailable(&self) -> BTreeSet<usize> {
        self.lock().unavailable.clone()
    }
    pub fn set_reserved(&self, node: &str) {
        self.lock().reserved = Some(node.to_string());
    }
    pub fn set_reserved_none(&self) {
        let mut i = self.lock();
        i.reserved = None;
        i.bound = None;
    }
    pub fn set_binding_wait(&self, w: Vec<(String, Vec<String>)>, timeout: Option<std::time::Duration>) {
        let mut i = self.lock();
        i.binding_wait = w;
        i.binding_timeout = timeout;
    }
    pub fn set_bound(&self, node: &str) {
        self.lock().bound = Some(node.to_string());
    }
    pub fn set_pre_bind_write(&self, claim: String, done: Arc<AtomicBool>) {
        self.lock().pre_bind_writes.insert(claim, done);
    }
    /// PreBind wrote this claim (the session carried the write out).
    pub fn pre_bind_written(&self, claim: &str) -> bool {
        self.lock()
            .pre_bind_writes
            .get(claim)
            .is_some_and(|d| d.load(Ordering::Acquire))
    }
    /// kubestep's reason a node could not take the pod's claims, if Filter found one.
    pub fn shortfall(&self, node: &str) -> Option<Shortfall> {
        match self.lock().nodes.get(node) {
            Some(NodeResult::Failed(s)) => s.clone(),
            _ => None,
        }
    }

    /// Nodes Filter could not allocate on.
    pub fn failed_nodes(&self) -> Vec<String> {
        self.lock()
            .nodes
            .iter()
            .filter(|(_, r)| matches!(r, NodeResult::Failed(_)))
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Why Filter rejected `node`, in words, when it knows more than upstream's reason.
    pub fn note(&self, node: &str) -> Option<String> {
        match self.lock().nodes.get(node)? {
            NodeResult::Failed(s) => s.as_ref().map(ToString::to_string),
            NodeResult::Unavailable(claims) => Some(unavailable_note(self, claims)),
            NodeResult::Allocated(_) => None,
        }
    }
}

fn unavailable_note(s: &StateData, claims: &[usize]) -> String {
    let v: Vec<String> = claims
        .iter()
        .map(|&i| {
            let c = &s.claims[i];
            let devs = c.allocation().map(devices).unwrap_or_default();
            format!(
                "claim {} is allocated ({devs}) for nodes its allocation selects, not this one",
                c.key
            )
        })
        .collect();
    v.join("; ")
}

fn devices(a: &AllocationResult) -> String {
    let v: Vec<String> = a
        .devices
        .iter()
        .flat_map(|d| d.results.iter().flatten())
        .map(|r| {
            format!(
                "{}={}",
                r.request,
                DeviceId {
                    driver: r.driver.clone(),
                    pool: r.pool.clone(),
                    device: r.device.clone(),
                }
            )
        })
        .collect();
    v.join(", ")
}

impl RenderState for StateData {
    fn render(&self) -> StateTree {
        if self.claims.is_empty() {
            // As before DRA was modelled: pods without claims look the same.
            return StateTree::list("claims", std::iter::empty::<String>());
        }
        let inner = self.lock();
        let claims = self
            .claims
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut label = c.key.clone();
                if let Some(t) = &c.from_template {
                    label += &format!(" (made by kubestep from template {t}, standing in for the claim controller)");
                }
                if self.extended == Some(i) {
                    let served: Vec<&str> = self
                        .pod_scalar
                        .iter()
                        .filter(|(n, v)| **v != 0 && self.resolver.get(n).is_some())
                        .map(|(n, _)| n.as_str())
                        .collect();
                    let made = if c.claim.metadata.name.as_deref() == Some(super::extended::IN_MEMORY_NAME) {
                        "in memory until PreBind creates it"
                    } else {
                        "created by an earlier PreBind"
                    };
                    label += &format!(
                        " (the pod's extended resources {} served by DeviceClasses; {made})",
                        served.join(", ")
                    );
                }
                let mut kids = Vec::new();
                match c.allocation() {
                    Some(a) => kids.push(StateTree::kv("allocated", devices(a))),
                    None => kids.push(StateTree::leaf("to allocate")),
                }
                for r in c.requests() {
                    let what = match (&r.exactly, &r.first_available) {
                        (Some(e), _) => format!(
                            "class {}, {} {}",
                            e.device_class_name,
                            e.allocation_mode.as_deref().unwrap_or("ExactCount"),
                            e.count.unwrap_or(1)
                        ),
                        (None, Some(fa)) => format!(
                            "firstAvailable: {}",
                            fa.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
                        ),
                        _ => "unknown request type".into(),
                    };
                    kids.push(StateTree::kv(&format!("request {}", r.name), what));
                }
                StateTree::node(label, kids)
            })
            .collect();
        let nodes = inner
            .nodes
            .iter()
            .map(|(n, r)| match r {
                NodeResult::Allocated(a) => StateTree::node(
                    n.clone(),
                    a.iter()
                        .zip(&self.to_allocate)
                        .map(|(a, &ci)| StateTree::kv(&self.claims[ci].key, devices(a)))
                        .collect(),
                ),
                NodeResult::Failed(Some(s)) => StateTree::leaf(format!("{n}: {s}")),
                NodeResult::Failed(None) => StateTree::leaf(format!("{n}: cannot allocate")),
                NodeResult::Unavailable(c) => {
                    StateTree::leaf(format!("{n}: {}", unavailable_note(self, c)))
                }
            })
            .collect();
        let mut top = vec![
            StateTree::node("claims", claims),
            StateTree::list(
                "devices in use",
                self.in_use.iter().map(|(d, c)| format!("{d} ({c})")),
            ),
            StateTree::node("per node", nodes),
        ];
        if let Some(n) = &inner.reserved {
            let chosen = match inner.nodes.get(n) {
                Some(NodeResult::Allocated(a)) => a
                    .iter()
                    .flat_map(allocated_ids)
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => String::new(),
            };
            top.push(StateTree::kv(&format!("chosen on {n}"), chosen));
        }
        if let Some(n) = &inner.bound {
            top.push(StateTree::kv("PreBind: claims written for node", n));
        }
        if !inner.binding_wait.is_empty() {
            let timeout = inner
                .binding_timeout
                .map(|t| format!("{}s", t.as_secs()))
                .unwrap_or_else(|| "bindingTimeout".into());
            top.push(StateTree::node(
                format!("PreBind: waiting (up to {timeout}) for these binding conditions"),
                inner
                    .binding_wait
                    .iter()
                    .map(|(c, p)| StateTree::kv(c, p.join("; ")))
                    .collect(),
            ));
        }
        StateTree::node("DynamicResources", top)
    }
}
