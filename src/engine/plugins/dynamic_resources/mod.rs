//! DynamicResources (DRA with structured parameters, resource.k8s.io/v1). PreEnqueue waits
//! for claims that do not exist; PreFilter reads the pod's claims, pins it to the nodes of
//! claims already allocated and checks device classes; Filter runs the structured
//! allocator per node; Reserve assumes the chosen devices so later pods do not get them;
//! PreBind marks the claims allocated and reserved for the pod; Score favours earlier
//! `firstAvailable` alternatives.
//!
//! Upstream's claim controller creates claims from ResourceClaimTemplates; kubestep stands
//! in for it (see `objects::pod_claims`). Allocations kubestep makes are kept by the plugin
//! (upstream's assume cache) while a pod holding them exists, since the cluster objects
//! are not rewritten.

pub mod allocator;
pub mod cel;
pub(crate) mod hints;
pub mod objects;
mod state;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::AllocationResult;

use crate::api::node_affinity::NodeSelectorMatcher;
use crate::framework::listers::Listers;
use crate::framework::plugin::{
    FilterPlugin, Handle, NodeScore, Plugin, PluginState, PostFilterPlugin, PostFilterResult,
    PreBindPlugin, PreEnqueuePlugin, PreFilterPlugin, PreFilterResult, ReservePlugin, ScorePlugin,
};
use crate::framework::queue::hints::ClusterEventWithHint;
use crate::framework::{CycleState, NodeInfo, NodeToStatus, PodInfo, Status};
use crate::plugins::helper::default_normalize;
use allocator::{Allocator, InUse, Outcome, allocated_ids, gather_pools};
use state::{NodeResult, StateData};

pub const NAME: &str = "DynamicResources";
const STATE_KEY: &str = "DynamicResources";
/// Upstream `resourceapi.ResourceClaimReservedForMaxSize`.
const RESERVED_FOR_MAX: usize = 256;
/// Upstream `resourceapi.FirstAvailableDeviceRequestMaxSize`.
const FIRST_AVAILABLE_MAX: i64 = 8;

/// An allocation kubestep made, held for the pod it was made for.
#[derive(Debug, Clone)]
struct Assumed {
    allocation: AllocationResult,
    pod: String,
}

#[derive(Debug, Default)]
pub struct DynamicResources {
    /// By claim key.
    assumed: Mutex<BTreeMap<String, Assumed>>,
}

impl DynamicResources {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Assumed>> {
        self.assumed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Assumed allocations still held: their pod exists and the claim object does not
    /// show an allocation of its own.
    fn live_assumed(&self, h: &Handle) -> BTreeMap<String, AllocationResult> {
        self.lock()
            .iter()
            .filter(|(_, a)| h.listers.pods.contains_key(&a.pod))
            .map(|(k, a)| (k.clone(), a.allocation.clone()))
            .collect()
    }
}

fn has_claims(pod: &PodInfo) -> bool {
    pod.pod
        .spec
        .as_ref()
        .and_then(|s| s.resource_claims.as_ref())
        .is_some_and(|c| !c.is_empty())
}

fn state(cs: &CycleState) -> Result<&StateData, Status> {
    cs.read::<StateData>(STATE_KEY)
        .map_err(|e| Status::error(e.to_string()))
}

impl Plugin for DynamicResources {
    fn name(&self) -> &'static str {
        NAME
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(hints::events())
    }
    fn save_state(&self) -> Option<PluginState> {
        Some(std::sync::Arc::new(self.lock().clone()))
    }
    fn restore_state(&self, s: &PluginState) {
        if let Some(a) = s.downcast_ref::<BTreeMap<String, Assumed>>() {
            *self.lock() = a.clone();
        }
    }
    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
    fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
        Some(self)
    }
    fn as_pre_bind(&self) -> Option<&dyn PreBindPlugin> {
        Some(self)
    }
}

impl PreEnqueuePlugin for DynamicResources {
    fn pre_enqueue(&self, h: &Handle, pod: &PodInfo) -> Status {
        if !has_claims(pod) {
            return Status::success();
        }
        match objects::pod_claims(h.listers, &pod.pod, &BTreeMap::new()) {
            Ok(_) => Status::success(),
            Err(e) => Status::unresolvable(e),
        }
    }
}

/// Upstream `validateDeviceClass`.
fn check_class(h: &Handle, class: &str, request: &str) -> Option<Status> {
    if class.is_empty() {
        return Some(Status::error(format!(
            "request {request}: unsupported request type"
        )));
    }
    objects::class(h.listers, class).is_none().then(|| {
        Status::unresolvable(format!(
            "request {request}: device class {class} does not exist"
        ))
    })
}

impl PreFilterPlugin for DynamicResources {
    fn pre_filter(
        &self,
        h: &Handle,
        cs: &mut CycleState,
        pod: &PodInfo,
    ) -> (Option<PreFilterResult>, Status) {
        cs.write(STATE_KEY, StateData::default());
        if !has_claims(pod) {
            return (None, Status::skip());
        }
        let assumed = self.live_assumed(h);
        let claims = match objects::pod_claims(h.listers, &pod.pod, &assumed) {
            Ok(c) => c,
            Err(e) => return (None, Status::unresolvable(e)),
        };
        let mut s = StateData::default();
        for c in &claims {
            match c.allocation() {
                Some(a) => {
                    let reserved = c
                        .claim
                        .status
                        .as_ref()
                        .and_then(|s| s.reserved_for.as_ref());
                    let full = reserved.is_some_and(|r| r.len() >= RESERVED_FOR_MAX);
                    let for_pod = reserved.into_iter().flatten().any(|r| r.uid == pod.uid);
                    if full && !for_pod {
                        return (None, Status::unresolvable("resourceclaim in use"));
                    }
                    s.pinned
                        .push(a.node_selector.as_ref().map(NodeSelectorMatcher::new));
                }
                None => {
                    s.pinned.push(None);
                    s.to_allocate.push(s.pinned.len() - 1);
                    for r in c.requests() {
                        let bad = match (&r.exactly, &r.first_available) {
                            (Some(e), _) => check_class(h, &e.device_class_name, &r.name),
                            (None, Some(fa)) if !fa.is_empty() => fa.iter().find_map(|sub| {
                                check_class(
                                    h,
                                    &sub.device_class_name,
                                    &format!("{}/{}", r.name, sub.name),
                                )
                            }),
                            _ => Some(Status::unresolvable(format!(
                                "resource claim {}, request {}: unknown request type",
                                c.key, r.name
                            ))),
                        };
                        if let Some(st) = bad {
                            return (None, st);
                        }
                    }
                }
            }
        }
        if !s.to_allocate.is_empty() {
            // Devices held by any claim: the cluster's allocations and kubestep's own.
            let all = objects::all_claims(h.listers);
            let mut in_use: InUse = all
                .iter()
                .filter_map(|(k, c)| Some((k, c.status.as_ref()?.allocation.as_ref()?)))
                .flat_map(|(k, a)| allocated_ids(a).map(move |d| (d, k.clone())))
                .collect();
            for (k, a) in &assumed {
                let own = all
                    .get(k)
                    .is_some_and(|c| c.status.as_ref().is_some_and(|s| s.allocation.is_some()));
                if !own {
                    in_use.extend(allocated_ids(a).map(|d| (d, k.clone())));
                }
            }
            s.in_use = in_use;
            s.slices = std::sync::Arc::new(objects::slices(h.listers));
            s.classes = std::sync::Arc::new(objects::all_classes(h.listers));
        }
        s.claims = claims;
        cs.write(STATE_KEY, s);
        (None, Status::success())
    }
}

impl FilterPlugin for DynamicResources {
    fn filter(&self, _h: &Handle, cs: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let s = match state(cs) {
            Ok(s) => s,
            Err(e) => return e,
        };
        if s.claims.is_empty() {
            return Status::success();
        }
        let n = node.node();
        let unavailable: Vec<usize> = s
            .pinned
            .iter()
            .enumerate()
            .filter(|(_, m)| m.as_ref().is_some_and(|m| !m.matches_node(n)))
            .map(|(i, _)| i)
            .collect();
        let name = node.name().to_string();
        if !s.to_allocate.is_empty() {
            let claims: Vec<(&str, &k8s_openapi::api::resource::v1::ResourceClaim)> = s
                .to_allocate
                .iter()
                .map(|&i| (s.claims[i].key.as_str(), &*s.claims[i].claim))
                .collect();
            let classes = |c: &str| s.classes.get(c).cloned();
            let alloc = Allocator {
                claims: &claims,
                classes: &classes,
                in_use: &s.in_use,
                pools: gather_pools(&s.slices, n),
                node: n,
            };
            match alloc.allocate() {
                Outcome::Error(e) => return Status::error(e),
                Outcome::InvalidPools => {
                    s.record(name, NodeResult::Failed(None));
                    return Status::unresolvable("invalid resource pools were encountered");
                }
                Outcome::Unsatisfiable(why) => {
                    s.record(name, NodeResult::Failed(why));
                    return Status::unresolvable("cannot allocate all claims");
                }
                Outcome::Allocated(a) if unavailable.is_empty() => {
                    s.record(name.clone(), NodeResult::Allocated(a));
                }
                Outcome::Allocated(_) => {}
            }
        }
        if !unavailable.is_empty() {
            s.mark_unavailable(&unavailable);
            s.record(name, NodeResult::Unavailable(unavailable));
            return Status::unresolvable("resourceclaim not available on the node");
        }
        Status::success()
    }

    fn rejection_note(&self, cs: &CycleState, node: &str) -> Option<String> {
        state(cs).ok()?.note(node)
    }
}

/// The plugin's CycleState as a tree, for a pod with resource claims (explain shows it).
pub fn explain_state(cs: &CycleState, pod: &PodInfo) -> Option<crate::framework::StateTree> {
    if !has_claims(pod) {
        return None;
    }
    use crate::framework::RenderState;
    state(cs).ok().map(RenderState::render)
}

/// Per node Filter rejected for want of devices: the matching devices other claims hold
/// (`driver/pool/device`, claim).
pub fn held_devices(cs: &CycleState) -> BTreeMap<String, Vec<(String, String)>> {
    let Ok(s) = state(cs) else {
        return BTreeMap::new();
    };
    s.failed_nodes()
        .into_iter()
        .filter_map(|n| {
            let held = s.shortfall(&n)?.held;
            (!held.is_empty()).then(|| {
                let v = held.into_iter().map(|(d, c)| (d.to_string(), c)).collect();
                (n, v)
            })
        })
        .collect()
}

impl PostFilterPlugin for DynamicResources {
    /// Upstream deallocates one claim that is allocated but not in use and not available
    /// on some node, so the next attempt can allocate it elsewhere. kubestep holds no
    /// client to do so; it answers as upstream does when there is nothing to deallocate,
    /// or says it would have deallocated.
    fn post_filter(
        &self,
        _h: &Handle,
        cs: &mut CycleState,
        pod: &PodInfo,
        _statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let s = match state(cs) {
            Ok(s) => s,
            Err(e) => return (None, e),
        };
        if s.claims.is_empty() {
            return (None, Status::unschedulable("no new claims to deallocate"));
        }
        for i in s.unavailable() {
            let c = &s.claims[i];
            let reserved = c
                .claim
                .status
                .as_ref()
                .and_then(|s| s.reserved_for.as_deref())
                .unwrap_or_default();
            let only_this_pod = reserved.len() == 1 && reserved[0].uid == pod.uid;
            if c.allocation().is_some() && (reserved.is_empty() || only_this_pod) {
                // Only kubestep's own allocations can be dropped; a cluster claim's
                // status is not rewritten, though upstream would clear it.
                self.lock().remove(&c.key);
                return (
                    None,
                    Status::unschedulable("deallocation of ResourceClaim completed"),
                );
            }
        }
        (None, Status::unschedulable("still not schedulable"))
    }
}

impl ScorePlugin for DynamicResources {
    fn score(
        &self,
        _h: &Handle,
        cs: &CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
    ) -> (i64, Status) {
        let s = match state(cs) {
            Ok(s) => s,
            Err(e) => return (0, e),
        };
        let Some(allocs) = s.allocations(node.name()) else {
            return (0, Status::success());
        };
        let mut score = 0;
        for (&ci, a) in s.to_allocate.iter().zip(&allocs) {
            let picked: BTreeSet<&str> = a
                .devices
                .iter()
                .flat_map(|d| d.results.iter().flatten())
                .map(|r| r.request.as_str())
                .filter(|r| r.contains('/'))
                .collect();
            for r in s.claims[ci].requests() {
                for (i, sub) in r.first_available.iter().flatten().enumerate() {
                    if picked.contains(format!("{}/{}", r.name, sub.name).as_str()) {
                        score += FIRST_AVAILABLE_MAX - i as i64;
                    }
                }
            }
        }
        (score, Status::success())
    }

    fn has_normalize(&self) -> bool {
        true
    }

    fn normalize_score(
        &self,
        _h: &Handle,
        _cs: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore],
    ) -> Status {
        default_normalize(scores, false);
        Status::success()
    }
}

impl ReservePlugin for DynamicResources {
    fn reserve(&self, _h: &Handle, cs: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let s = match state(cs) {
            Ok(s) => s,
            Err(e) => return e,
        };
        if s.to_allocate.is_empty() {
            return Status::success();
        }
        let Some(allocs) = s.allocations(node) else {
            return Status::error("claim allocation not found for node");
        };
        let mut assumed = self.lock();
        for (&ci, a) in s.to_allocate.iter().zip(allocs) {
            assumed.insert(
                s.claims[ci].key.clone(),
                Assumed {
                    allocation: a,
                    pod: pod.key.clone(),
                },
            );
        }
        drop(assumed);
        s.set_reserved(node);
        Status::success()
    }

    /// A pod without claims: upstream's Reserve returns at once; kubestep keeps such
    /// pods' steps as they were before DRA was modelled.
    fn nothing_to_reserve(&self, cs: &CycleState) -> bool {
        state(cs).is_ok_and(|s| s.claims.is_empty())
    }

    fn unreserve(&self, _h: &Handle, cs: &mut CycleState, _pod: &PodInfo, _node: &str) {
        let Ok(s) = state(cs) else { return };
        let mut assumed = self.lock();
        for &ci in &s.to_allocate {
            assumed.remove(&s.claims[ci].key);
        }
        s.set_reserved_none();
    }
}

impl PreBindPlugin for DynamicResources {
    fn pre_bind_pre_flight(
        &self,
        _h: &Handle,
        cs: &CycleState,
        _pod: &PodInfo,
        _node: &str,
    ) -> Status {
        match state(cs) {
            Err(e) => e,
            Ok(s) if s.claims.is_empty() => Status::skip(),
            Ok(_) => Status::success(),
        }
    }

    /// A pod without claims (PreBindPreFlight skips it): no step, as before DRA was
    /// modelled.
    fn nothing_to_bind(&self, cs: &CycleState) -> bool {
        state(cs).is_ok_and(|s| s.claims.is_empty())
    }

    /// Upstream writes the allocation and the pod's reservation into each claim's status.
    /// kubestep keeps them as assumed (see the module comment); the CycleState tree shows
    /// what would be written.
    fn pre_bind(&self, _h: &Handle, cs: &mut CycleState, _pod: &PodInfo, node: &str) -> Status {
        match state(cs) {
            Err(e) => e,
            Ok(s) => {
                s.set_bound(node);
                Status::success()
            }
        }
    }
}

/// Checks what `explain` would otherwise report as a bare scheduling error: every class
/// the pod's unallocated claims name exists, and every selector (class and request)
/// compiles and evaluates on every published device. The error names the object, the
/// field and the expression. Claims that do not exist yet are not an input error (the pod
/// waits at PreEnqueue, as upstream).
pub fn check_inputs(l: &Listers, pod: &Pod) -> Result<(), String> {
    let Ok(claims) = objects::pod_claims(l, pod, &BTreeMap::new()) else {
        return Ok(());
    };
    let slices = objects::slices(l);
    for c in claims.iter().filter(|c| c.allocation().is_none()) {
        let what = match &c.from_template {
            Some(t) => format!("claim {} (from ResourceClaimTemplate {t})", c.key),
            None => format!("claim {}", c.key),
        };
        for r in c.requests() {
            let subs: Vec<(
                String,
                String,
                &[k8s_openapi::api::resource::v1::DeviceSelector],
            )> = match (&r.exactly, &r.first_available) {
                (Some(e), _) => vec![(
                    format!("spec.devices.requests[name={}].exactly", r.name),
                    e.device_class_name.clone(),
                    e.selectors.as_deref().unwrap_or(&[]),
                )],
                (None, Some(fa)) => fa
                    .iter()
                    .map(|s| {
                        (
                            format!(
                                "spec.devices.requests[name={}].firstAvailable[name={}]",
                                r.name, s.name
                            ),
                            s.device_class_name.clone(),
                            s.selectors.as_deref().unwrap_or(&[]),
                        )
                    })
                    .collect(),
                _ => {
                    return Err(format!(
                        "{what}, spec.devices.requests[name={}]: neither exactly nor firstAvailable is set",
                        r.name
                    ));
                }
            };
            for (field, class_name, sels) in subs {
                let Some(class) = objects::class(l, &class_name) else {
                    return Err(format!(
                        "{what}, {field}.deviceClassName: DeviceClass {class_name:?} does not exist (kube-scheduler keeps the pod unschedulable: request {}: device class {class_name} does not exist)",
                        r.name
                    ));
                };
                let class_sels = class.spec.selectors.as_deref().unwrap_or(&[]);
                let owners = [
                    (format!("DeviceClass {class_name}, spec"), class_sels),
                    (format!("{what}, {field}"), sels),
                ];
                for (owner, sels) in owners {
                    for (i, s) in sels.iter().enumerate() {
                        let at = format!("{owner}.selectors[{i}].cel.expression");
                        let Some(expr) = &s.cel else {
                            return Err(format!("{at}: no CEL expression"));
                        };
                        let src = &expr.expression;
                        let compiled = cel::compile(src).map_err(|e| {
                            format!("{at}: CEL compile error: {e} (expression: {src})")
                        })?;
                        for sl in &slices {
                            for d in sl.spec.devices.iter().flatten() {
                                if let Err(e) = cel::matches(&compiled, &sl.spec.driver, d) {
                                    return Err(format!(
                                        "{at}: CEL runtime error on device {}/{}/{} (request {}): {e} (expression: {src})",
                                        sl.spec.driver, sl.spec.pool.name, d.name, r.name
                                    ));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}
