//! DynamicResources (DRA with structured parameters, resource.k8s.io/v1). PreEnqueue waits
//! for claims that do not exist; PreFilter reads the pod's claims, pins it to the nodes of
//! claims already allocated and checks device classes; Filter runs the structured
//! allocator per node; Reserve assumes the chosen devices so later pods do not get them;
//! PreBind marks the claims allocated and reserved for the pod; Score favours earlier
//! `firstAvailable` alternatives.
//!
//! Upstream's claim controller creates claims from ResourceClaimTemplates; kubestep stands
//! in for it (see `objects::pod_claims`). What the plugin writes to claims (PreBind's
//! allocation and reservation, Unreserve's and PostFilter's undoing) goes into the
//! attempt's CycleState as `ObjectWrites`, which the session carries out: into the
//! replayed cluster, or to the API server in live active mode. Between cycles the plugin
//! remembers allocations in flight and its own writes (`assume`).

pub mod allocator;
mod assume;
mod binding;
mod capacity;
pub mod cel;
pub mod describe;
mod diagnose;
pub mod extended;
pub(crate) mod hints;
pub mod objects;
pub mod pools;
mod search;
mod state;

/// Built from the profile's `DynamicResourcesArgs` (the defaults without them): its
/// `filterTimeout`, when the feature gate is on and the timeout is not zero; and Score
/// only where the version has it.
pub fn factory(
    ctx: &crate::framework::factory::FactoryContext,
) -> crate::framework::factory::Built {
    let args: crate::config::DynamicResourcesArgs = ctx.args()?;
    let gate = ctx
        .features
        .enabled(crate::features::Gate::DRASchedulerFilterTimeout);
    let filter_timeout = args
        .filter_timeout
        .filter(|t| gate && !t.is_zero())
        .and_then(|t| t.to_std());
    let features = allocator::AllocFeatures::of(ctx.features);
    Ok(Arc::new(DynamicResources {
        filter_timeout,
        without_score: !ctx.features.semantics.dynamic_resources_score,
        features,
        binding_timeout: args
            .binding_timeout
            .filter(|_| features.binding_conditions)
            .and_then(|t| t.to_std()),
        owner_capitalized: ctx.features.semantics.dra_owner_message_capitalized,
        extended_resources: ctx
            .features
            .enabled(crate::features::Gate::DRAExtendedResource),
        taint_rules: ctx
            .features
            .enabled(crate::features::Gate::DRADeviceTaintRules),
        taint_rules_crash: ctx.features.semantics.device_taint_rules_crash,
        ..Default::default()
    }))
}

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::ContainerExtendedResourceRequest;
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimConsumerReference};

use crate::api::node_affinity::NodeSelectorMatcher;
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::plugin::{
    FilterPlugin, Handle, NodeScore, Plugin, PluginState, PostFilterPlugin, PostFilterResult,
    PreBindPlugin, PreBindPolling, PreEnqueuePlugin, PreFilterPlugin, PreFilterResult, ReservePlugin, ScorePlugin,
};
use crate::framework::queued::{ObjectOp, ObjectWrite, ObjectWrites};
use crate::framework::{Code, CycleState, NodeInfo, NodeToStatus, PodInfo, Status};
use crate::plugins::helper::default_normalize;
use allocator::{Allocator, Outcome};
use pools::gather_pools;
use assume::{Assumed, Written};
use state::{NodeResult, StateData};

pub const NAME: &str = "DynamicResources";
const STATE_KEY: &str = "DynamicResources";
/// Upstream `resourceapi.ResourceClaimReservedForMaxSize`.
const RESERVED_FOR_MAX: usize = 256;
/// Upstream `resourceapi.Finalizer`: set on a claim the scheduler allocates.
const CLAIM_FINALIZER: &str = "resource.kubernetes.io/delete-protection";
/// Upstream `resourceapi.FirstAvailableDeviceRequestMaxSize`.
const FIRST_AVAILABLE_MAX: i64 = 8;

#[derive(Debug, Default)]
pub struct DynamicResources {
    assumed: Mutex<Assumed>,
    /// `filterTimeout`: how long Filter may search one node's devices (`None` or zero:
    /// no limit). Wall-clock, as upstream's; at the 10s default no search kubestep runs
    /// comes near it, so replays stay deterministic in practice.
    filter_timeout: Option<std::time::Duration>,
    /// Before 1.35 the plugin does not score (no Score extension point at all).
    without_score: bool,
    /// What the allocator uses, from the DRA gates.
    features: allocator::AllocFeatures,
    /// `bindingTimeout`, when binding conditions are on.
    binding_timeout: Option<std::time::Duration>,
    /// The "not owner" message says "Pod" (from 1.36), not "pod".
    owner_capitalized: bool,
    /// DRAExtendedResource: extended resources served by DeviceClasses (`extended`).
    extended_resources: bool,
    /// DRADeviceTaintRules: DeviceTaintRules taint the devices they select.
    taint_rules: bool,
    /// ... where kube-scheduler crashes instead once a rule exists (1.36).
    taint_rules_crash: bool,
}

/// Upstream's reason when the device search on a node outlives `filterTimeout`.
pub const ERR_FILTER_TIMEOUT: &str = "timed out trying to allocate devices";

impl DynamicResources {
    fn pod_word(&self) -> &'static str {
        if self.owner_capitalized { "Pod" } else { "pod" }
    }
    fn lock(&self) -> MutexGuard<'_, Assumed> {
        self.assumed.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The extended-resource claim as a node needs it, and which container's resource each of
/// its requests stands for.
type NodeClaim = (Arc<ResourceClaim>, Vec<ContainerExtendedResourceRequest>);

impl DynamicResources {
    /// Upstream `deleteClaim`: the claim, its delete-protection finalizer dropped, is
    /// deleted. Until the cluster shows it gone it stands as being deleted.
    fn delete_claim(&self, cs: &mut CycleState, c: &objects::PodClaim) {
        let mut claim = (*c.claim).clone();
        if let Some(f) = claim.metadata.finalizers.as_mut() {
            f.retain(|f| f != CLAIM_FINALIZER);
        }
        let base = claim.metadata.resource_version.clone();
        let done = write_object(cs, ObjectOp::Delete, format!("delete claim {}", c.key), &claim);
        claim.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH));
        let mut assumed = self.lock();
        assumed.end(&c.key);
        assumed.wrote(&c.key, Written::of_status(claim, base, done));
    }

    /// The pod's extended-resource claim: its own from an earlier attempt's PreBind, else
    /// upstream's in-memory one, keyed by the name PreBind will create it under.
    fn extended_claim(&self, h: &Handle, pod: &PodInfo, view: &assume::View) -> objects::PodClaim {
        let ns = pod.pod().metadata.namespace.as_deref().unwrap_or("default");
        let mut all = objects::extended_resource_claims(h.listers, ns);
        all.extend(view.claims.iter().map(|(k, c)| (k.clone(), c.clone())));
        all.retain(|_, c| c.metadata.deletion_timestamp.is_none());
        let (key, claim) = extended::find_claim(pod.pod(), &all).unwrap_or_else(|| {
            let c = extended::in_memory_claim(pod.pod());
            let ns = c.metadata.namespace.as_deref().unwrap_or("default");
            let key = crate::framework::listers::ns_key(ns, &extended::created_name(&pod.name, &pod.uid));
            (key, Arc::new(c))
        });
        objects::PodClaim {
            key,
            claim,
            from_template: None,
        }
    }

    /// Upstream `filterExtendedResources`: `None` when the node serves the extended
    /// resources itself (and the pod has no other claims) or the claim is allocated.
    fn extended_on_node(&self, s: &StateData, pod: &PodInfo, node: &NodeInfo) -> Result<Option<NodeClaim>, Status> {
        let Some(ei) = s.extended else {
            return Ok(None);
        };
        let claim = &s.claims[ei].claim;
        if claim.spec.devices.as_ref().and_then(|d| d.requests.as_ref()).is_some() {
            return Err(Status::unresolvable("cannot schedule extended resource claim"));
        }
        let mut wanted = BTreeSet::new();
        for (name, &q) in &s.pod_scalar {
            if q == 0 || !extended::is_dra_extended_resource_name(name) {
                continue;
            }
            let have = node.allocatable.scalar_resources.get(name);
            if s.resolver.get(name).is_some() && have.copied().unwrap_or(0) == 0 {
                wanted.insert(name.clone());
            } else if have.is_none() {
                return Err(Status::unresolvable("cannot fit resource"));
            }
        }
        if wanted.is_empty() && s.no_user_claim() {
            return Ok(None);
        }
        if claim.status.as_ref().and_then(|st| st.allocation.as_ref()).is_some() {
            return Ok(None);
        }
        let (requests, mappings) = extended::requests_and_mappings(pod.pod(), &wanted, &s.resolver);
        let mut c = (**claim).clone();
        c.spec.devices.get_or_insert_with(Default::default).requests =
            (!requests.is_empty()).then_some(requests);
        Ok(Some((Arc::new(c), mappings)))
    }
}

/// The claim has a `reservedFor` entry for the pod.
fn reserved_for(c: &ResourceClaim, uid: &str) -> bool {
    c.status
        .as_ref()
        .and_then(|s| s.reserved_for.as_ref())
        .is_some_and(|r| r.iter().any(|r| r.uid == uid))
}

/// Hands a claim's new state to the session to write (see `ObjectWrites`).
fn write_claim(cs: &mut CycleState, what: String, claim: &ResourceClaim) -> Arc<AtomicBool> {
    write_object(cs, ObjectOp::UpdateStatus, what, claim)
}

fn write_object<T: serde::Serialize>(
    cs: &mut CycleState,
    op: ObjectOp,
    what: String,
    object: &T,
) -> Arc<AtomicBool> {
    let done = Arc::new(AtomicBool::new(false));
    let object = serde_json::to_value(object).unwrap_or_default();
    ObjectWrites::push(
        cs,
        ObjectWrite {
            op,
            what,
            object: Arc::new(object),
            written: done.clone(),
        },
    );
    done
}

fn has_claims(pod: &PodInfo) -> bool {
    pod.pod()
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
    // A claim's binding timeout runs on the clock.
    fn verdict_moves_with_clock(&self) -> bool {
        true
    }
    fn sign_pod(&self, pod: &PodInfo) -> Option<crate::framework::signature::SignResult> {
        let claims = pod
            .pod()
            .spec
            .as_ref()
            .and_then(|s| s.resource_claims.as_ref());
        if claims.is_some_and(|c| !c.is_empty()) {
            return Some(Err("pods with dra resource claims are not signable".into()));
        }
        Some(Ok(Vec::new()))
    }
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
        if let Some(a) = s.downcast_ref::<Assumed>() {
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
        (!self.without_score).then_some(self as &dyn ScorePlugin)
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
        match objects::pod_claims(h.listers, pod.pod(), &BTreeMap::new(), self.pod_word()) {
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
        let wants_extended = self.extended_resources
            && pod
                .resource
                .resource
                .scalar_resources
                .iter()
                .any(|(n, v)| *v != 0 && extended::is_dra_extended_resource_name(n));
        if !has_claims(pod) && !wants_extended {
            return (None, Status::skip());
        }
        let view = self.lock().view(h.listers);
        let mut claims = match objects::pod_claims(h.listers, pod.pod(), &view.claims, self.pod_word()) {
            Ok(c) => c,
            Err(e) => return (None, Status::unresolvable(e)),
        };
        let mut s = StateData::default();
        if wants_extended {
            let resolver = extended::ClassResolver::of(h.listers);
            if resolver.serves_any(pod.resource.resource.scalar_resources.iter().filter(|(_, v)| **v != 0).map(|(k, _)| k)) {
                s.extended = Some(claims.len());
                claims.push(self.extended_claim(h, pod, &view));
                s.pod_scalar = pod.resource.resource.scalar_resources.clone();
                s.resolver = Arc::new(resolver);
            }
        }
        if claims.is_empty() {
            return (None, Status::skip());
        }
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
                    // Upstream waits for an allocation in flight to be written.
                    if view.in_flight.contains_key(&c.key) {
                        return (
                            None,
                            Status::unresolvable(format!(
                                "resource claim {} is in the process of being allocated",
                                c.key
                            )),
                        );
                    }
                    s.pinned.push(None);
                    s.to_allocate.push(s.pinned.len() - 1);
                    // The extended-resource claim gets its requests per node, in Filter.
                    if s.extended == Some(s.pinned.len() - 1) {
                        continue;
                    }
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
            // Devices held by any claim (kubestep's writes standing for the cluster's
            // copies) or by an allocation in flight.
            let mut all: BTreeMap<String, Arc<ResourceClaim>> = objects::all_claims(h.listers)
                .into_iter()
                .map(|(k, c)| (k, Arc::new(c)))
                .collect();
            all.extend(view.claims.iter().map(|(k, c)| (k.clone(), c.clone())));
            let allocated: Vec<(String, &k8s_openapi::api::resource::v1::AllocationResult)> = all
                .iter()
                .filter_map(|(k, c)| Some((k.clone(), c.status.as_ref()?.allocation.as_ref()?)))
                .chain(view.in_flight.iter().map(|(k, a)| (k.clone(), a)))
                .collect();
            let (in_use, shared) = allocator::held(&allocated, self.features);
            s.shared = shared;
            s.in_use = in_use;
            let mut slices = objects::slices(h.listers);
            if self.taint_rules {
                let rules = objects::taint_rules(h.listers);
                if self.taint_rules_crash && !rules.is_empty() {
                    return (
                        None,
                        Status::error(format!(
                            "kube-scheduler crashes here: with DRADeviceTaintRules on, its slice tracker reads the {} DeviceTaintRule(s) (served as resource.k8s.io/v1beta2) as v1alpha3 and panics; it decides nothing for any pod",
                            rules.len()
                        )),
                    );
                }
                slices = objects::with_taint_rules(slices, &rules);
                s.taint_rules = Arc::new(rules);
            }
            s.slices = std::sync::Arc::new(slices);
            s.classes = std::sync::Arc::new(objects::all_classes(h.listers));
        }
        if self.features.binding_conditions {
            // Allocated claims whose binding failed or timed out: unusable on every node
            // (upstream asks in Filter; the answer does not depend on the node).
            s.binding_broken = claims
                .iter()
                .enumerate()
                .filter(|(_, c)| c.allocation().is_some())
                .filter(|(_, c)| match binding::ready(&c.claim) {
                    Err(_) => true,
                    Ok(ready) => {
                        !ready
                            && self
                                .binding_timeout
                                .is_some_and(|t| binding::timed_out(&c.claim, t, h.now))
                    }
                })
                .map(|(i, _)| i)
                .collect();
        }
        s.claims = claims;
        cs.write(STATE_KEY, s);
        (None, Status::success())
    }
}

impl FilterPlugin for DynamicResources {
    fn filter(&self, _h: &Handle, cs: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let s = match state(cs) {
            Ok(s) => s,
            Err(e) => return e,
        };
        if s.claims.is_empty() {
            return Status::success();
        }
        let node_claim = match self.extended_on_node(s, pod, node) {
            Ok(c) => c,
            Err(st) => return st,
        };
        // Only extended resources, all served by the node itself.
        if node_claim.is_none() && s.no_user_claim() {
            return Status::success();
        }
        let n = node.node();
        let unavailable: Vec<usize> = s
            .pinned
            .iter()
            .enumerate()
            .filter(|(i, m)| {
                m.as_ref().is_some_and(|m| !m.matches_node(n)) || s.binding_broken.contains(i)
            })
            .map(|(i, _)| i)
            .collect();
        let name = node.name().to_string();
        if !s.to_allocate.is_empty() {
            let claims: Vec<(&str, &k8s_openapi::api::resource::v1::ResourceClaim)> = s
                .to_allocate
                .iter()
                .map(|&i| match &node_claim {
                    Some((c, _)) if s.extended == Some(i) => (s.claims[i].key.as_str(), &**c),
                    _ => (s.claims[i].key.as_str(), &*s.claims[i].claim),
                })
                .collect();
            let classes = |c: &str| s.classes.get(c).cloned();
            let alloc = Allocator {
                claims: &claims,
                classes: &classes,
                in_use: &s.in_use,
                shared: &s.shared,
                pools: gather_pools(&s.slices, n, self.features),
                node: n,
                deadline: self.filter_timeout.map(|t| std::time::Instant::now() + t),
                features: self.features,
                taint_rules: &s.taint_rules,
            };
            match alloc.allocate() {
                Outcome::Error(e) => return Status::error(e),
                Outcome::TimedOut => {
                    s.record(name, NodeResult::Failed(None));
                    return Status::unresolvable(ERR_FILTER_TIMEOUT);
                }
                Outcome::InvalidPools => {
                    s.record(name, NodeResult::Failed(None));
                    return Status::unresolvable("invalid resource pools were encountered");
                }
                Outcome::Unsatisfiable(mut why) => {
                    if let Some(c) = node_claim.clone() {
                        s.record_node_claim(name.clone(), c);
                    }
                    if let (Some(w), Some((c, maps))) = (why.as_mut(), &node_claim)
                        && s.extended.is_some_and(|i| s.claims[i].key == w.claim)
                    {
                        w.about = extended::describe_request(c, maps, &w.request);
                    }
                    s.record(name, NodeResult::Failed(why));
                    return Status::unresolvable("cannot allocate all claims");
                }
                Outcome::Allocated(a) if unavailable.is_empty() => {
                    if let Some(c) = node_claim.clone() {
                        s.record_node_claim(name.clone(), c);
                    }
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
    /// Upstream deallocates one claim that is allocated but not available on some node
    /// and that no other pod holds, so that the next attempt can allocate it elsewhere:
    /// status.allocation, reservedFor and devices cleared in one status update. Upstream
    /// picks at random among such claims (a Go map); kubestep takes the first in the
    /// pod's order.
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
        let mut target = None;
        let created_extended = s
            .extended
            .filter(|&i| s.claims[i].claim.metadata.name.as_deref() != Some(extended::IN_MEMORY_NAME));
        for i in s.unavailable() {
            if s.extended == Some(i) {
                if created_extended.is_some() {
                    break;
                }
                continue;
            }
            let c = &s.claims[i];
            let reserved = c
                .claim
                .status
                .as_ref()
                .and_then(|s| s.reserved_for.as_deref())
                .unwrap_or_default();
            let only_this_pod = reserved.len() == 1 && reserved[0].uid == pod.uid;
            if reserved.is_empty() || only_this_pod {
                target = Some((c.key.clone(), (*c.claim).clone()));
                break;
            }
        }
        let Some((key, mut claim)) = target else {
            // The pod's extended-resource claim from an earlier attempt goes, so the next
            // attempt can allocate afresh.
            if let Some(i) = created_extended {
                let c = s.claims[i].clone();
                self.delete_claim(cs, &c);
                return (None, Status::unschedulable("deletion of ResourceClaim completed"));
            }
            return (None, Status::unschedulable("still not schedulable"));
        };
        let base = claim.metadata.resource_version.clone();
        if let Some(st) = claim.status.as_mut() {
            st.reserved_for = None;
            st.allocation = None;
            st.devices = None;
        }
        let done = write_claim(cs, format!("deallocate claim {key}"), &claim);
        self.lock()
            .wrote(&key, Written::of_status(claim, base, done));
        (
            None,
            Status::unschedulable("deallocation of ResourceClaim completed"),
        )
    }
}

impl ScorePlugin for DynamicResources {
    /// Node by node as `score`, but a pod without claims (most pods) reads the state once
    /// and scores 0 everywhere.
    fn score_nodes(
        &self,
        h: &Handle,
        cs: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Option<(usize, Status)> {
        match state(cs) {
            Ok(s) if s.claims.is_empty() => {
                out.iter_mut().for_each(|v| *v = 0);
                None
            }
            Err(e) if !nodes.is_empty() => {
                out.iter_mut().for_each(|v| *v = 0);
                Some((0, e))
            }
            _ => crate::framework::plugin::score_each(self, h, cs, pod, nodes, out),
        }
    }

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
        // A pod without claims scores 0 everywhere, as upstream's early return; and every
        // node is asked, so it must cost nothing.
        if s.claims.is_empty() {
            return (0, Status::success());
        }
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
    /// The allocations chosen for the node are in flight until PreBind writes them: other
    /// pods do not get their devices, and a pod sharing a claim waits (upstream's
    /// `SignalClaimPendingAllocation`).
    fn reserve(&self, _h: &Handle, cs: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let s = match state(cs) {
            Ok(s) => s,
            Err(e) => return e,
        };
        if s.to_allocate.is_empty() {
            return Status::success();
        }
        let allocs = match s.allocations(node) {
            Some(a) if !a.is_empty() => a,
            // Only the extended-resource claim, and the node serves those resources.
            _ if !s.user_claims_to_allocate() => return Status::success(),
            _ => return Status::error("claim allocation not found for node"),
        };
        let mut assumed = self.lock();
        for (&ci, a) in s.to_allocate.iter().zip(allocs) {
            assumed.start(&s.claims[ci].key, a, &pod.key);
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

    /// An allocation in flight ends once its claim shows an allocation (see `assume.rs`).
    fn holds_until_observed(&self) -> bool {
        true
    }

    /// Allocations in flight are dropped; a claim PreBind reserved for the pod gets the
    /// pod taken out of `reservedFor` again (upstream's strategic-merge patch; the
    /// allocation stays).
    fn unreserve(&self, _h: &Handle, cs: &mut CycleState, pod: &PodInfo, _node: &str) {
        let Ok(s) = state(cs) else { return };
        let mut writes = Vec::new();
        {
            let mut assumed = self.lock();
            for &ci in &s.to_allocate {
                assumed.end(&s.claims[ci].key);
            }
            for (i, c) in s.claims.iter().enumerate() {
                if s.extended == Some(i)
                    || c.allocation().is_none()
                    || !reserved_for(&c.claim, &pod.uid)
                {
                    continue;
                }
                // PreBind's write that never happened has nothing to undo.
                if !s.pre_bind_written(&c.key) {
                    assumed.forget(&c.key);
                    continue;
                }
                let mut claim = (*c.claim).clone();
                if let Some(rf) = claim.status.as_mut().and_then(|s| s.reserved_for.as_mut()) {
                    rf.retain(|r| r.uid != pod.uid);
                }
                let prev = assumed.written(&c.key).cloned();
                writes.push((c.key.clone(), claim, prev));
            }
        }
        s.set_reserved_none();
        // The extended-resource claim a PreBind created (this one or an earlier attempt's)
        // goes again.
        if let Some(i) = s.extended
            && s.claims[i].claim.metadata.name.as_deref() != Some(extended::IN_MEMORY_NAME)
        {
            let c = s.claims[i].clone();
            self.delete_claim(cs, &c);
        }
        for (key, claim, prev) in writes {
            let base = claim.metadata.resource_version.clone();
            // Upstream patches without a precondition: the write carries no version.
            let mut unconditional = claim.clone();
            unconditional.metadata.resource_version = None;
            let done = write_claim(cs, format!("unreserve claim {key}"), &unconditional);
            let (allocated, mut pods) = prev.map(|w| (w.allocated, w.pods)).unwrap_or_default();
            pods.retain(|(uid, _)| *uid != pod.uid);
            self.lock().wrote(
                &key,
                Written {
                    claim: Arc::new(claim),
                    base,
                    done,
                    allocated,
                    pods,
                },
            );
        }
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

    /// Upstream's `bindClaim` for each claim not yet reserved for the pod: the claim as it
    /// stands now, the allocation Reserve kept (with the delete-protection finalizer) and
    /// the pod appended to `reservedFor`, in one status update. The session carries the
    /// update out (see `ObjectWrites`); a failed write fails PreBind.
    fn pre_bind(&self, h: &Handle, cs: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let s = match state(cs) {
            Ok(s) => s,
            Err(e) => return e,
        };
        if s.claims.is_empty() {
            return Status::success();
        }
        let allocs = match s.allocations(node) {
            Some(a) => a,
            None if s.to_allocate.is_empty() || !s.user_claims_to_allocate() => Vec::new(),
            None => return Status::error("claim allocation not found for node"),
        };
        let view = self.lock().view(h.listers);
        let mut updates = Vec::new();
        let mut creates = None;
        for (i, c) in s.claims.iter().enumerate() {
            if reserved_for(&c.claim, &pod.uid) {
                continue;
            }
            let mut allocation = s
                .to_allocate
                .iter()
                .position(|&ci| ci == i)
                .and_then(|j| allocs.get(j).cloned());
            let mut created = None;
            if s.extended == Some(i) {
                let no_requests = c
                    .claim
                    .spec
                    .devices
                    .as_ref()
                    .and_then(|d| d.requests.as_ref())
                    .is_none();
                // The node serves the extended resources itself.
                if allocation.is_none() && no_requests {
                    continue;
                }
                if c.claim.metadata.name.as_deref() == Some(extended::IN_MEMORY_NAME) {
                    let Some((nc, maps)) = s.node_claim(node) else {
                        return Status::error(format!(
                            "extended resource claim not found for node {node}"
                        ));
                    };
                    let mut claim = (*nc).clone();
                    claim.metadata.name = c.key.split_once('/').map(|(_, n)| n.to_string());
                    claim.metadata.uid = None;
                    claim.status = None;
                    created = Some((claim, maps));
                }
            }
            if let (Some(a), true) = (allocation.as_mut(), self.features.binding_conditions) {
                a.allocation_timestamp
                    .get_or_insert(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(h.now));
            }
            // The claim as the API server has it now: kubestep's last write, the
            // cluster's, the one kubestep makes from a template, or the pod's
            // extended-resource claim it creates.
            let mut claim = match (&created, view.claims.get(&c.key)) {
                (Some((nc, maps)), _) => {
                    creates = Some((i, maps.clone()));
                    nc.clone()
                }
                (None, Some(w)) => (**w).clone(),
                (None, None) => {
                    objects::claim(h.listers, &c.key).unwrap_or_else(|| (*c.claim).clone())
                }
            };
            if claim.metadata.deletion_timestamp.is_some() {
                return Status::error(format!("claim {} got deleted in the meantime", c.key));
            }
            let allocated = allocation.is_some();
            let status = claim.status.get_or_insert_with(Default::default);
            if let Some(a) = allocation {
                if status.allocation.is_some() {
                    return Status::error(format!(
                        "claim {} got allocated elsewhere in the meantime",
                        c.key
                    ));
                }
                status.allocation = Some(a);
            }
            status
                .reserved_for
                .get_or_insert_with(Vec::new)
                .push(ResourceClaimConsumerReference {
                    resource: "pods".into(),
                    name: pod.name.clone(),
                    uid: pod.uid.clone(),
                    api_group: None,
                });
            if allocated {
                let f = claim.metadata.finalizers.get_or_insert_with(Vec::new);
                if !f.iter().any(|f| f == CLAIM_FINALIZER) {
                    f.push(CLAIM_FINALIZER.into());
                }
            }
            updates.push((i, c.key.clone(), allocated, claim));
        }
        let created_name = creates
            .as_ref()
            .and_then(|(i, _)| s.claims[*i].key.split_once('/'))
            .map(|(_, n)| n.to_string());
        let mut done_flags = Vec::new();
        for (i, key, allocated, claim) in updates {
            let create = creates.as_ref().is_some_and(|(ci, _)| *ci == i);
            let what = if create {
                format!("create claim {key} for the pod's extended resources, with allocation and reservation")
            } else if allocated {
                format!("add allocation and reservation to claim {key}")
            } else {
                format!("add reservation to claim {key}")
            };
            let base = claim.metadata.resource_version.clone();
            let claim = Arc::new(claim);
            let op = if create { ObjectOp::Create } else { ObjectOp::UpdateStatus };
            let done = write_object(cs, op, what, &*claim);
            let mut assumed = self.lock();
            let (was_allocated, mut pods) = assumed
                .written(&key)
                .cloned()
                .map(|w| (w.allocated, w.pods))
                .unwrap_or_default();
            pods.insert((pod.uid.clone(), pod.key.clone()));
            assumed.end(&key);
            assumed.wrote(
                &key,
                Written {
                    claim: claim.clone(),
                    base,
                    done: done.clone(),
                    allocated: allocated || was_allocated,
                    pods,
                },
            );
            drop(assumed);
            done_flags.push((i, key, claim, done));
        }
        // Upstream's patchPodExtendedResourceClaimStatus: the kubelet learns which request
        // serves which container's resource.
        if let Some((_, maps)) = creates {
            let name = created_name;
            let mut p = (*pod.pod()).clone();
            p.status.get_or_insert_with(Default::default).extended_resource_claim_status =
                Some(k8s_openapi::api::core::v1::PodExtendedResourceClaimStatus {
                    request_mappings: maps,
                    resource_claim_name: name.unwrap_or_default(),
                });
            let what = format!("update pod {} ExtendedResourceClaimStatus", pod.key);
            write_object(cs, ObjectOp::UpdateStatus, what, &p);
        }
        let mut waits = false;
        if let Ok(s) = cs.read_mut::<StateData>(STATE_KEY) {
            for (i, key, claim, done) in done_flags {
                // Unreserve works with the claim as PreBind wrote it.
                s.claims[i].claim = claim;
                s.set_pre_bind_write(key, done);
            }
            s.set_bound(node);
            waits = self.features.binding_conditions && binding::any_conditions(&s.claims);
        }
        // Upstream then blocks, polling until every device's binding conditions hold: the
        // session parks the attempt and polls (`pre_bind_poll`), the first look at once.
        if waits {
            return Status::new(
                Code::Wait,
                format!("waiting for binding conditions for device on node {node}"),
            );
        }
        Status::success()
    }

    fn pre_bind_polling(&self) -> PreBindPolling {
        PreBindPolling {
            every: std::time::Duration::from_secs(5),
            timeout: self.binding_timeout.unwrap_or(binding::DEFAULT_TIMEOUT),
            timeout_message: "device binding timeout",
            event_reason: "BindingConditionsPending",
        }
    }

    /// Upstream's `isPodReadyForBinding`: each claim as the cluster has it now.
    fn pre_bind_poll(&self, h: &Handle, cs: &mut CycleState, _pod: &PodInfo, _node: &str) -> Status {
        let Ok(s) = cs.read_mut::<StateData>(STATE_KEY) else {
            return Status::success();
        };
        let view = self.lock().view(h.listers);
        let timeout = self.binding_timeout.unwrap_or(binding::DEFAULT_TIMEOUT);
        let current = |key: &str| {
            view.claims
                .get(key)
                .map(|c| (**c).clone())
                .or_else(|| objects::claim(h.listers, key))
        };
        let poll = binding::poll(&mut s.claims, current, timeout, h.now);
        s.set_binding_wait(poll.open, Some(timeout));
        poll.status
    }
}
