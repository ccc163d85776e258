//! The structured allocator: for one node, finds devices in the pools that node sees for
//! every request of the claims still to allocate, by depth-first search in pool, slice and
//! device order, the first full solution winning. Upstream keeps three implementations
//! (stable, incubating, experimental) and picks the first that supports every enabled
//! feature; here one search follows `AllocFeatures`, which says what each would ignore.
//! The search is in `search.rs`, kubestep's diagnosis of a failure in `diagnose.rs`.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::api::resource::v1::{
    AllocationResult, CapacityRequirements, Device, DeviceAllocationResult, DeviceClass,
    DeviceRequestAllocationResult, DeviceSelector, DeviceToleration, ResourceClaim,
    ResourceSlice,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;

use super::capacity::Consumed;
use super::pools::{Pool, per_device};
use crate::api::node_affinity::node_name;
use crate::features::{Features, Gate};

pub use super::diagnose::Shortfall;

/// Upstream `resourceapi.AllocationResultsMaxSize`.
pub(super) const ALLOCATION_RESULTS_MAX_SIZE: usize = 32;

/// The DRA features the allocator uses (upstream `structured.Features`), from the gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocFeatures {
    pub admin_access: bool,
    pub prioritized_list: bool,
    pub partitionable: bool,
    pub taints: bool,
    /// DRADeviceBindingConditions with DRAResourceClaimDeviceStatus.
    pub binding_conditions: bool,
    pub consumable_capacity: bool,
}

/// 1.35's defaults, as `Features::default()`.
impl Default for AllocFeatures {
    fn default() -> AllocFeatures {
        AllocFeatures::of(&Features::default())
    }
}

impl AllocFeatures {
    pub fn of(f: &Features) -> AllocFeatures {
        AllocFeatures {
            admin_access: f.enabled(Gate::DRAAdminAccess),
            prioritized_list: f.enabled(Gate::DRAPrioritizedList),
            partitionable: f.enabled(Gate::DRAPartitionableDevices),
            taints: f.enabled(Gate::DRADeviceTaints),
            binding_conditions: f.enabled(Gate::DRADeviceBindingConditions)
                && f.enabled(Gate::DRAResourceClaimDeviceStatus),
            consumable_capacity: f.enabled(Gate::DRAConsumableCapacity),
        }
    }

    /// Upstream's experimental allocator: the only one with consumable capacity and
    /// binding conditions, chosen when either is on.
    pub fn experimental(&self) -> bool {
        self.binding_conditions || self.consumable_capacity
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct DeviceId {
    pub driver: String,
    pub pool: String,
    pub device: String,
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.driver, self.pool, self.device)
    }
}

/// The devices an allocation result names.
pub fn allocated_ids(a: &AllocationResult) -> impl Iterator<Item = DeviceId> + '_ {
    a.devices
        .iter()
        .flat_map(|d| d.results.iter().flatten())
        .map(|r| DeviceId {
            driver: r.driver.clone(),
            pool: r.pool.clone(),
            device: r.device.clone(),
        })
}

/// Devices other claims hold for themselves, with the claim (`namespace/name`) holding
/// each. Admin-access allocations hold nothing; shared ones (consumable capacity) are in
/// `SharedUse` instead.
pub type InUse = BTreeMap<DeviceId, String>;
/// Per shared device, the capacity its allocations consume.
pub type SharedUse = BTreeMap<DeviceId, Consumed>;

/// Splits what allocated claims hold into dedicated devices and shared capacity, as the
/// scheduler's allocated-devices tracker does.
pub fn held(claims: &[(String, &AllocationResult)], features: AllocFeatures) -> (InUse, SharedUse) {
    let mut in_use = InUse::new();
    let mut shared = SharedUse::new();
    for (key, a) in claims {
        for r in a.devices.iter().flat_map(|d| d.results.iter().flatten()) {
            if r.admin_access == Some(true) {
                continue;
            }
            let id = DeviceId {
                driver: r.driver.clone(),
                pool: r.pool.clone(),
                device: r.device.clone(),
            };
            if features.consumable_capacity && r.share_id.is_some() {
                if let Some(c) = &r.consumed_capacity {
                    let c: Consumed = c.iter().map(|(k, v)| (k.clone(), super::pools::nanos(&v.0))).collect();
                    super::capacity::add(shared.entry(id).or_default(), &c);
                }
                continue;
            }
            in_use.insert(id, key.clone());
        }
    }
    (in_use, shared)
}

/// One request or sub-request, resolved.
pub(super) struct Req<'a> {
    pub claim: usize,
    /// The request's name, or the sub-request's.
    pub own: &'a str,
    /// `request` or `request/sub`, as results name it.
    pub name: String,
    /// The parent request's name.
    pub parent: &'a str,
    pub class: DeviceClass,
    pub selectors: &'a [DeviceSelector],
    pub all: bool,
    pub count: usize,
    pub admin: bool,
    pub tolerations: &'a [DeviceToleration],
    pub capacity: Option<&'a CapacityRequirements>,
    pub sub: bool,
}

/// The outcome for one node: allocations (one per claim) or why not.
pub enum Outcome {
    Allocated(Vec<AllocationResult>),
    /// Upstream's `cannot allocate all claims`, with kubestep's own diagnosis.
    Unsatisfiable(Option<Shortfall>),
    /// Upstream's ErrFailedAllocationOnNode for invalid pools.
    InvalidPools,
    /// A broken claim or class (e.g. a bad selector): an Error status upstream.
    Error(String),
    /// The search outlived its deadline (`filterTimeout`).
    TimedOut,
}

pub struct Allocator<'a> {
    pub claims: &'a [(&'a str, &'a ResourceClaim)],
    pub classes: &'a dyn Fn(&str) -> Option<DeviceClass>,
    pub in_use: &'a InUse,
    pub shared: &'a SharedUse,
    pub pools: Vec<Pool<'a>>,
    pub node: &'a Node,
    /// When the search gives up (`filterTimeout`); `None`: never.
    pub deadline: Option<std::time::Instant>,
    pub features: AllocFeatures,
    /// DeviceTaintRules whose taints the slices carry: reasons name the rule.
    pub taint_rules: &'a [crate::api::dra::DeviceTaintRule],
}

/// A chosen device.
#[derive(Clone)]
pub(super) struct Chosen<'a> {
    pub req: (usize, usize),
    pub name: String,
    pub id: DeviceId,
    pub device: &'a Device,
    pub slice: &'a ResourceSlice,
    pub consumed: Option<Consumed>,
}

impl<'a> Allocator<'a> {
    /// Resolves every request (upstream's checks, in its order) before searching.
    pub(super) fn requests(&self) -> Result<Vec<Vec<Vec<Req<'a>>>>, String> {
        let f = self.features;
        let mut out = Vec::new();
        for (ci, (key, claim)) in self.claims.iter().enumerate() {
            let mut per_claim = Vec::new();
            let mut min_devices = 0;
            let requests = claim.spec.devices.as_ref().and_then(|d| d.requests.as_ref());
            for r in requests.into_iter().flatten() {
                let subs = r.first_available.as_deref().unwrap_or(&[]);
                if !subs.is_empty() && !f.prioritized_list {
                    return Err(format!(
                        "claim {key}, request {}: has subrequests, but the DRAPrioritizedList feature is disabled",
                        r.name
                    ));
                }
                if f.experimental() && !f.consumable_capacity {
                    let has = r.exactly.as_ref().is_some_and(|e| e.capacity.is_some());
                    if has {
                        return Err(format!(
                            "claim {key}, request {}: has capacity requests, but the DRAConsumableCapacity feature is disabled",
                            r.name
                        ));
                    }
                    if let Some(s) = subs.iter().find(|s| s.capacity.is_some()) {
                        return Err(format!(
                            "claim {key}, subrequest {}: has capacity requests, but the DRAConsumableCapacity feature is disabled",
                            s.name
                        ));
                    }
                }
                let mut alts = Vec::new();
                if subs.is_empty() {
                    let Some(e) = &r.exactly else {
                        return Err(format!(
                            "claim {key}, request {}: missing device class name (unsupported request type?)",
                            r.name
                        ));
                    };
                    alts.push(self.request(ci, key, &r.name, &r.name, None, RequestParts {
                        class: &e.device_class_name,
                        selectors: e.selectors.as_deref().unwrap_or(&[]),
                        mode: e.allocation_mode.as_deref(),
                        count: e.count,
                        admin: e.admin_access.unwrap_or(false),
                        tolerations: e.tolerations.as_deref().unwrap_or(&[]),
                        capacity: e.capacity.as_ref(),
                    })?);
                } else {
                    for s in subs {
                        alts.push(self.request(ci, key, &s.name, &r.name, Some(&s.name), RequestParts {
                            class: &s.device_class_name,
                            selectors: s.selectors.as_deref().unwrap_or(&[]),
                            mode: s.allocation_mode.as_deref(),
                            count: s.count,
                            admin: false,
                            tolerations: s.tolerations.as_deref().unwrap_or(&[]),
                            capacity: s.capacity.as_ref(),
                        })?);
                    }
                }
                min_devices += alts.iter().map(|a| a.count).min().unwrap_or(0);
                per_claim.push(alts);
            }
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE {
                return Err(format!(
                    "claim {key}: number of requested devices {min_devices} exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                ));
            }
            out.push(per_claim);
        }
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn request(
        &self,
        ci: usize,
        key: &str,
        own: &'a str,
        parent: &'a str,
        sub: Option<&'a str>,
        p: RequestParts<'a>,
    ) -> Result<Req<'a>, String> {
        if let Some(i) = p.selectors.iter().position(|s| s.cel.is_none()) {
            return Err(format!(
                "claim {key}, request {own}, selector #{i}: CEL expression empty (unsupported selector type?)"
            ));
        }
        if p.admin && !self.features.admin_access {
            return Err(format!(
                "claim {key}, request {own}: admin access is requested, but the feature is disabled"
            ));
        }
        if p.class.is_empty() {
            return Err(format!(
                "claim {key}, request {own}: missing device class name (unsupported request type?)"
            ));
        }
        let Some(class) = (self.classes)(p.class) else {
            return Err(format!(
                "claim {key}, request {own}: could not retrieve device class {}: deviceclass.resource.k8s.io {:?} not found",
                p.class, p.class
            ));
        };
        let all = match p.mode {
            None | Some("ExactCount") | Some("") => false,
            Some("All") => true,
            Some(m) => {
                return Err(format!(
                    "claim {key}, request {own}: unsupported count mode {m}"
                ));
            }
        };
        Ok(Req {
            claim: ci,
            own,
            name: sub.map_or_else(|| own.to_string(), |s| format!("{parent}/{s}")),
            parent,
            class,
            selectors: p.selectors,
            all,
            count: if all { 0 } else { p.count.unwrap_or(1).max(0) as usize },
            admin: p.admin,
            tolerations: p.tolerations,
            capacity: p.capacity,
            sub: sub.is_some(),
        })
    }

    /// Upstream's allocation results: per claim its devices, the class and claim
    /// configuration for the requests chosen, and where the allocation can be used.
    pub(super) fn results(
        &self,
        chosen: &[Vec<Chosen<'a>>],
        reqs: &[Vec<Vec<Req<'a>>>],
    ) -> Result<Vec<AllocationResult>, String> {
        use k8s_openapi::api::resource::v1::DeviceAllocationConfiguration as Config;
        let mut out = Vec::new();
        for (ci, devs) in chosen.iter().enumerate() {
            let claim = self.claims[ci].1;
            let results = devs
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let r = &reqs[ci][c.req.0][c.req.1];
                    let consumed = c.consumed.as_ref().filter(|m| !m.is_empty()).map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), ApiQuantity(crate::api::quantity::Quantity::from_nanos(*v).to_string())))
                            .collect()
                    });
                    let binding = self.features.binding_conditions;
                    DeviceRequestAllocationResult {
                        request: c.name.clone(),
                        driver: c.id.driver.clone(),
                        pool: c.id.pool.clone(),
                        device: c.id.device.clone(),
                        admin_access: r.admin.then_some(true),
                        tolerations: (!r.tolerations.is_empty()).then(|| r.tolerations.to_vec()),
                        share_id: c.consumed.as_ref().map(|_| share_id(self.claims[ci].0, &c.id, i)),
                        consumed_capacity: consumed,
                        binding_conditions: c.device.binding_conditions.clone().filter(|_| binding),
                        binding_failure_conditions: c
                            .device
                            .binding_failure_conditions
                            .clone()
                            .filter(|_| binding),
                    }
                })
                .collect();
            // Configuration: each chosen request's class config once per class, then the
            // claim's own for the requests chosen.
            let mut config: Vec<Config> = Vec::new();
            let mut class_at: BTreeMap<String, (usize, usize)> = BTreeMap::new();
            let chosen_req = |ri: usize| -> Option<&Req<'a>> {
                let ai = devs.iter().find(|c| c.req.0 == ri).map_or(0, |c| c.req.1);
                reqs[ci].get(ri)?.get(ai)
            };
            for ri in 0..reqs[ci].len() {
                let Some(r) = chosen_req(ri) else { continue };
                let class = r.class.metadata.name.clone().unwrap_or_default();
                if let Some(&(start, end)) = class_at.get(&class) {
                    for c in &mut config[start..end] {
                        c.requests.get_or_insert_with(Vec::new).push(r.name.clone());
                    }
                    continue;
                }
                let start = config.len();
                for c in r.class.spec.config.iter().flatten() {
                    config.push(Config {
                        source: "FromClass".into(),
                        requests: Some(vec![r.name.clone()]),
                        opaque: c.opaque.clone(),
                    });
                }
                class_at.insert(class, (start, config.len()));
            }
            let spec = claim.spec.devices.as_ref();
            for c in spec.and_then(|d| d.config.as_ref()).into_iter().flatten() {
                let names = c.requests.clone().unwrap_or_default();
                let from_claim = || Config {
                    source: "FromClaim".into(),
                    requests: c.requests.clone(),
                    opaque: c.opaque.clone(),
                };
                if names.is_empty() {
                    config.push(from_claim());
                    continue;
                }
                for (ri, r) in spec.and_then(|d| d.requests.as_ref()).into_iter().flatten().enumerate() {
                    if names.contains(&r.name) {
                        config.push(from_claim());
                        continue;
                    }
                    if let Some(req) = chosen_req(ri).filter(|q| q.sub)
                        && names.contains(&req.name)
                    {
                        config.push(from_claim());
                    }
                }
            }
            out.push(AllocationResult {
                devices: Some(DeviceAllocationResult {
                    results: Some(results),
                    config: (!config.is_empty()).then_some(config),
                }),
                node_selector: self.node_selector(devs)?,
                ..Default::default()
            });
        }
        Ok(out)
    }

    /// Where an allocation can be used (upstream `createNodeSelector`): this node when a
    /// device is local (its slice, or with per-device selection the device, names a node;
    /// or it binds to the node), else the node selectors' requirements merged, else
    /// anywhere.
    fn node_selector(&self, devs: &[Chosen<'a>]) -> Result<Option<NodeSelector>, String> {
        let mut term = NodeSelectorTerm::default();
        for c in devs {
            let (name, sel) = if per_device(c.slice) {
                (c.device.node_name.as_deref(), c.device.node_selector.as_ref())
            } else {
                (c.slice.spec.node_name.as_deref(), c.slice.spec.node_selector.as_ref())
            };
            let binds = self.features.experimental() && c.device.binds_to_node == Some(true);
            if name.is_some_and(|n| !n.is_empty()) || binds {
                // Experimental names the target node; the others the slice's.
                let n = match name {
                    Some(n) if !n.is_empty() && !self.features.experimental() => n,
                    _ => node_name(self.node),
                };
                return Ok(Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_fields: Some(vec![NodeSelectorRequirement {
                            key: "metadata.name".into(),
                            operator: "In".into(),
                            values: Some(vec![n.to_string()]),
                        }]),
                        match_expressions: None,
                    }],
                }));
            }
            let Some(sel) = sel else { continue };
            match sel.node_selector_terms.as_slice() {
                [] => {}
                [t] => {
                    merge(&mut term.match_fields, t.match_fields.as_deref());
                    merge(&mut term.match_expressions, t.match_expressions.as_deref());
                }
                terms => {
                    return Err(format!(
                        "create NodeSelector for claim {}: unsupported ResourceSlice.NodeSelector with {} terms",
                        self.claims[0].0,
                        terms.len()
                    ));
                }
            }
        }
        let any = term.match_fields.as_ref().is_some_and(|v| !v.is_empty())
            || term.match_expressions.as_ref().is_some_and(|v| !v.is_empty());
        Ok(any.then(|| NodeSelector {
            node_selector_terms: vec![term],
        }))
    }
}

pub(super) struct RequestParts<'a> {
    class: &'a str,
    selectors: &'a [DeviceSelector],
    mode: Option<&'a str>,
    count: Option<i64>,
    admin: bool,
    tolerations: &'a [DeviceToleration],
    capacity: Option<&'a CapacityRequirements>,
}

fn merge(into: &mut Option<Vec<NodeSelectorRequirement>>, from: Option<&[NodeSelectorRequirement]>) {
    for r in from.into_iter().flatten() {
        let v = into.get_or_insert_with(Vec::new);
        if !v.contains(r) {
            v.push(r.clone());
        }
    }
}

/// Upstream draws a random UID per shared allocation; kubestep derives one from the claim
/// and device, so replays repeat themselves.
fn share_id(claim: &str, id: &DeviceId, i: usize) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (claim, id, i).hash(&mut h);
    let x = h.finish();
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        (x >> 32) as u32,
        (x >> 16) as u16,
        (x & 0xfff) as u16,
        ((x >> 12) & 0xfff) as u16,
        x & 0xffff_ffff_ffff
    )
}

/// Whether a device taint keeps the request away (DRADeviceTaints): NoSchedule and
/// NoExecute do unless tolerated; other effects (None among them) never do.
pub(super) fn taint_blocks(d: &Device, tolerations: &[DeviceToleration]) -> bool {
    d.taints.iter().flatten().any(|t| {
        matches!(t.effect.as_str(), "NoSchedule" | "NoExecute")
            && !tolerations.iter().any(|tol| tolerates(tol, t))
    })
}

pub(super) fn tolerates(tol: &DeviceToleration, t: &k8s_openapi::api::resource::v1::DeviceTaint) -> bool {
    if tol.key.as_deref().is_some_and(|k| !k.is_empty() && k != t.key) {
        return false;
    }
    if tol.effect.as_deref().is_some_and(|e| !e.is_empty() && e != t.effect) {
        return false;
    }
    match tol.operator.as_deref() {
        None | Some("") | Some("Equal") => tol.value.as_deref().unwrap_or("") == t.value.as_deref().unwrap_or(""),
        Some("Exists") => true,
        _ => false,
    }
}
