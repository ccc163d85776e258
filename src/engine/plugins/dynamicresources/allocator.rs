//! The structured allocator (upstream `structured/internal/stable`): for one node, finds
//! devices in the ResourceSlices available there for every request of the claims still to
//! allocate, skipping devices other claims hold, honouring class and request selectors
//! and `matchAttribute` constraints, by depth-first search in pool and slice order.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Instant;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::{
    AllocationResult, Device, DeviceAllocationResult, DeviceAttribute, DeviceClass,
    DeviceRequestAllocationResult, DeviceSelector, ResourceClaim, ResourceSlice,
};

use super::cel;
use crate::api::node_affinity::{NodeSelectorMatcher, node_name};

/// Upstream `resourceapi.AllocationResultsMaxSize`.
const ALLOCATION_RESULTS_MAX_SIZE: usize = 32;

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

/// A resource pool as seen from one node: the slices of its newest generation.
#[derive(Debug)]
pub struct Pool<'a> {
    pub driver: &'a str,
    pub name: &'a str,
    pub slices: Vec<&'a ResourceSlice>,
    pub incomplete: bool,
    pub invalid: bool,
}

fn node_matches(
    node: &Node,
    name: Option<&str>,
    all: bool,
    sel: Option<&k8s_openapi::api::core::v1::NodeSelector>,
) -> bool {
    match (name, sel) {
        (Some(n), _) => n == node_name(node),
        _ if all => true,
        (None, Some(s)) => NodeSelectorMatcher::new(s).matches_node(node),
        _ => false,
    }
}

/// Upstream `GatherPools`: slices for this node (by name, selector or all nodes), by pool.
pub fn gather_pools<'a>(slices: &'a [ResourceSlice], node: &Node) -> Vec<Pool<'a>> {
    let mut by_pool: BTreeMap<(&str, &str), Vec<&ResourceSlice>> = BTreeMap::new();
    for s in slices {
        let sp = &s.spec;
        let here = sp.per_device_node_selection.unwrap_or(false)
            || node_matches(
                node,
                sp.node_name.as_deref(),
                sp.all_nodes.unwrap_or(false),
                sp.node_selector.as_ref(),
            );
        if here {
            by_pool
                .entry((&sp.driver, &sp.pool.name))
                .or_default()
                .push(s);
        }
    }
    by_pool
        .into_iter()
        .map(|((driver, name), all)| {
            let newest = all
                .iter()
                .map(|s| s.spec.pool.generation)
                .max()
                .unwrap_or(0);
            let slices: Vec<_> = all
                .into_iter()
                .filter(|s| s.spec.pool.generation == newest)
                .collect();
            let count = slices
                .first()
                .map_or(0, |s| s.spec.pool.resource_slice_count);
            let mut names = BTreeSet::new();
            let invalid = !slices
                .iter()
                .flat_map(|s| s.spec.devices.iter().flatten())
                .all(|d| names.insert(d.name.as_str()));
            Pool {
                driver,
                name,
                incomplete: slices.len() as i64 != count,
                invalid,
                slices,
            }
        })
        .collect()
}

/// One request or sub-request, resolved: its class, selectors and how many devices.
struct Req<'a> {
    claim: usize,
    /// `request` or `request/sub`.
    name: String,
    /// The parent request, for constraints that name it.
    parent: &'a str,
    class: DeviceClass,
    selectors: &'a [DeviceSelector],
    all: bool,
    count: usize,
}

/// Why a request could not be met on a node, for kubestep's explanation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Shortfall {
    pub claim: String,
    pub request: String,
    pub reason: String,
    /// Matching devices on the node that other claims hold (device, claim): freeing
    /// them is what would help.
    pub held: Vec<(DeviceId, String)>,
}

impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.request.is_empty() {
            write!(f, "claim {}: {}", self.claim, self.reason)
        } else {
            write!(
                f,
                "claim {}, request {}: {}",
                self.claim, self.request, self.reason
            )
        }
    }
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

/// Devices other claims hold, with the claim (`namespace/name`) holding each.
pub type InUse = BTreeMap<DeviceId, String>;

pub struct Allocator<'a> {
    pub claims: &'a [(&'a str, &'a ResourceClaim)],
    pub classes: &'a dyn Fn(&str) -> Option<DeviceClass>,
    pub in_use: &'a InUse,
    pub pools: Vec<Pool<'a>>,
    pub node: &'a Node,
    /// When the search gives up (`filterTimeout`); `None`: never.
    pub deadline: Option<std::time::Instant>,
}

struct Search<'a, 'b> {
    a: &'b Allocator<'a>,
    /// Per claim, per top-level request: the candidate (sub-)requests in order.
    reqs: Vec<Vec<Vec<Req<'a>>>>,
    taken: BTreeSet<DeviceId>,
    chosen: Vec<Vec<(String, DeviceId, &'a Device)>>,
    /// Per claim: (request names or empty for all, attribute, value fixed so far, count).
    constraints: Vec<Vec<MatchAttribute>>,
    cel: BTreeMap<(usize, String, DeviceId), bool>,
    /// Set when the deadline passed: the search unwinds as if nothing fit.
    timed_out: bool,
}

fn attr<'d>(d: &'d Device, id: &DeviceId, name: &str) -> Option<&'d DeviceAttribute> {
    let attrs = d.attributes.as_ref()?;
    attrs.get(name).or_else(|| {
        let (domain, short) = name.split_once('/')?;
        (domain == id.driver).then(|| attrs.get(short)).flatten()
    })
}

/// An attribute's value in words.
fn attr_value(v: &DeviceAttribute) -> String {
    if let Some(b) = v.bool {
        b.to_string()
    } else if let Some(i) = v.int {
        i.to_string()
    } else if let Some(s) = &v.string {
        format!("{s:?}")
    } else {
        v.version.clone().unwrap_or_default()
    }
}

impl<'a> Allocator<'a> {
    pub fn allocate(&self) -> Outcome {
        let mut reqs = Vec::new();
        let mut constraints = Vec::new();
        for (ci, (key, claim)) in self.claims.iter().enumerate() {
            let dc = claim.spec.devices.as_ref();
            let mut per_claim = Vec::new();
            for r in dc.and_then(|d| d.requests.as_ref()).into_iter().flatten() {
                let mut alts = Vec::new();
                let subs: Vec<_> = match (&r.exactly, &r.first_available) {
                    (Some(e), _) => vec![(
                        r.name.clone(),
                        &e.device_class_name,
                        e.selectors.as_deref(),
                        e.allocation_mode.as_deref(),
                        e.count,
                    )],
                    (None, Some(fa)) => fa
                        .iter()
                        .map(|s| {
                            (
                                format!("{}/{}", r.name, s.name),
                                &s.device_class_name,
                                s.selectors.as_deref(),
                                s.allocation_mode.as_deref(),
                                s.count,
                            )
                        })
                        .collect(),
                    _ => {
                        return Outcome::Error(format!(
                            "claim {key}, request {}: unknown request type",
                            r.name
                        ));
                    }
                };
                for (name, class, sels, mode, count) in subs {
                    let Some(class) = (self.classes)(class) else {
                        return Outcome::Error(format!(
                            "claim {key}, request {name}: could not retrieve device class {class}: deviceclass.resource.k8s.io {class:?} not found"
                        ));
                    };
                    let all = mode == Some("All");
                    if !all && !matches!(mode, None | Some("ExactCount")) {
                        return Outcome::Error(format!(
                            "claim {key}, request {name}: unsupported count mode {}",
                            mode.unwrap_or("")
                        ));
                    }
                    alts.push(Req {
                        claim: ci,
                        name,
                        parent: &r.name,
                        class,
                        selectors: sels.unwrap_or(&[]),
                        all,
                        count: count.unwrap_or(1).max(0) as usize,
                    });
                }
                per_claim.push(alts);
            }
            reqs.push(per_claim);
            let mut cs = Vec::new();
            for (i, c) in dc
                .and_then(|d| d.constraints.as_ref())
                .into_iter()
                .flatten()
                .enumerate()
            {
                match &c.match_attribute {
                    Some(a) => {
                        cs.push((c.requests.clone().unwrap_or_default(), a.clone(), None, 0))
                    }
                    None => {
                        return Outcome::Error(format!(
                            "claim {key}, constraint #{i}: empty constraint (unsupported constraint type?)"
                        ));
                    }
                }
            }
            constraints.push(cs);
        }
        let mut s = Search {
            a: self,
            reqs,
            taken: BTreeSet::new(),
            chosen: vec![Vec::new(); self.claims.len()],
            constraints,
            cel: BTreeMap::new(),
            timed_out: false,
        };
        // "All" requests fix their device lists up front, which needs complete pools.
        let mut all_lists = BTreeMap::new();
        for (ci, per_claim) in s.reqs.iter().enumerate() {
            for (ri, alts) in per_claim.iter().enumerate() {
                for (ai, r) in alts.iter().enumerate().filter(|(_, r)| r.all) {
                    let mut devs = Vec::new();
                    for p in &self.pools {
                        if p.incomplete || p.invalid {
                            let what = if p.incomplete {
                                "currently being updated"
                            } else {
                                "currently invalid"
                            };
                            return Outcome::Error(format!(
                                "claim {}, request {}: asks for all devices, but resource pool {}/{} is {what}",
                                self.claims[ci].0, r.name, p.driver, p.name
                            ));
                        }
                        for d in p
                            .slices
                            .iter()
                            .flat_map(|sl| sl.spec.devices.iter().flatten())
                        {
                            devs.push((p.driver, p.name, d));
                        }
                    }
                    all_lists.insert((ci, ri, ai), devs);
                }
            }
        }
        let mut all_selected = BTreeMap::new();
        for ((ci, ri, ai), devs) in all_lists {
            let mut sel = Vec::new();
            for (driver, pool, d) in devs {
                let id = DeviceId {
                    driver: driver.into(),
                    pool: pool.into(),
                    device: d.name.clone(),
                };
                match s.selectable(ci, ri, ai, &id, d) {
                    Ok(true) => sel.push((id, d)),
                    Ok(false) => {}
                    Err(e) => return Outcome::Error(e),
                }
            }
            all_selected.insert((ci, ri, ai), sel);
        }
        match s.claim(0, &all_selected) {
            Err(e) => Outcome::Error(e),
            Ok(false) if s.timed_out => Outcome::TimedOut,
            Ok(true) => Outcome::Allocated(s.results()),
            Ok(false) if self.pools.iter().any(|p| p.invalid) => Outcome::InvalidPools,
            Ok(false) => Outcome::Unsatisfiable(s.diagnose()),
        }
    }
}

/// A `matchAttribute` constraint while searching: the requests it covers (all if empty),
/// the attribute, the value the first device fixed, and how many devices hold it.
type MatchAttribute = (Vec<String>, String, Option<DeviceAttribute>, usize);

type AllSelected<'a> = BTreeMap<(usize, usize, usize), Vec<(DeviceId, &'a Device)>>;

impl<'a> Search<'a, '_> {
    fn selectable(
        &mut self,
        ci: usize,
        ri: usize,
        ai: usize,
        id: &DeviceId,
        d: &Device,
    ) -> Result<bool, String> {
        let r = &self.reqs[ci][ri][ai];
        let memo = (ci, r.name.clone(), id.clone());
        if let Some(m) = self.cel.get(&memo) {
            return Ok(*m);
        }
        let ok = self.selectors_match(ci, ri, ai, id, d, false)?;
        self.cel.insert(memo, ok);
        Ok(ok)
    }

    /// The class's selectors (and unless `class_only` the request's) accept the device,
    /// and the device is available on this node. Errors read as upstream's.
    fn selectors_match(
        &self,
        ci: usize,
        ri: usize,
        ai: usize,
        id: &DeviceId,
        d: &Device,
        class_only: bool,
    ) -> Result<bool, String> {
        let r = &self.reqs[ci][ri][ai];
        let class_name = r.class.metadata.name.clone().unwrap_or_default();
        let class_sels = r.class.spec.selectors.as_deref().unwrap_or(&[]);
        let claim = self.a.claims[ci].0;
        let own: &[DeviceSelector] = if class_only { &[] } else { r.selectors };
        let mut ok = true;
        for (who, sels) in [
            (format!("class {class_name}"), class_sels),
            (format!("claim {claim}"), own),
        ] {
            for (i, s) in sels.iter().enumerate() {
                let Some(c) = &s.cel else {
                    return Err(format!(
                        "claim {claim}, request {}, selector #{i}: CEL expression empty (unsupported selector type?)",
                        r.name
                    ));
                };
                let expr = cel::compile(&c.expression)
                    .map_err(|e| format!("{who}: selector #{i}: CEL compile error: {e}"))?;
                if !cel::matches(&expr, &id.driver, d)
                    .map_err(|e| format!("{who}: selector #{i}: CEL runtime error: {e}"))?
                {
                    ok = false;
                    break;
                }
            }
            if !ok {
                break;
            }
        }
        if ok && (d.node_name.is_some() || d.all_nodes.is_some() || d.node_selector.is_some()) {
            ok = ok
                && node_matches(
                    self.a.node,
                    d.node_name.as_deref(),
                    d.all_nodes.unwrap_or(false),
                    d.node_selector.as_ref(),
                );
        }
        Ok(ok)
    }

    fn in_use(&self, id: &DeviceId) -> bool {
        self.a.in_use.contains_key(id) || self.taken.contains(id)
    }

    /// Adds a device unless in use or a constraint objects; false leaves nothing changed.
    fn take(&mut self, ci: usize, ri: usize, ai: usize, id: &DeviceId, d: &'a Device) -> bool {
        if self.in_use(id) {
            return false;
        }
        let r = &self.reqs[ci][ri][ai];
        let (name, parent) = (r.name.clone(), r.parent);
        let applies =
            |reqs: &[String]| reqs.is_empty() || reqs.iter().any(|q| *q == name || q == parent);
        for (reqs, a, fixed, _) in &self.constraints[ci] {
            if !applies(reqs) {
                continue;
            }
            let Some(v) = attr(d, id, a) else {
                return false;
            };
            if let Some(f) = fixed
                && f != v
            {
                return false;
            }
        }
        for (reqs, a, fixed, n) in &mut self.constraints[ci] {
            if applies(reqs) {
                *fixed = attr(d, id, a).cloned();
                *n += 1;
            }
        }
        self.taken.insert(id.clone());
        self.chosen[ci].push((name, id.clone(), d));
        true
    }

    fn untake(&mut self, ci: usize) {
        // Only called after a successful take; nothing to undo otherwise.
        let Some((name, id, _)) = self.chosen[ci].pop() else {
            return;
        };
        self.taken.remove(&id);
        for (reqs, _, fixed, n) in &mut self.constraints[ci] {
            if reqs.is_empty()
                || reqs
                    .iter()
                    .any(|q| *q == name || name.split('/').next() == Some(q))
            {
                *n -= 1;
                if *n == 0 {
                    *fixed = None;
                }
            }
        }
    }

    fn claim(&mut self, ci: usize, all: &AllSelected<'a>) -> Result<bool, String> {
        if ci == self.reqs.len() {
            return Ok(true);
        }
        self.request(ci, 0, all)
    }

    fn request(&mut self, ci: usize, ri: usize, all: &AllSelected<'a>) -> Result<bool, String> {
        if ri == self.reqs[ci].len() {
            return self.claim(ci + 1, all);
        }
        for ai in 0..self.reqs[ci][ri].len() {
            if self.device(ci, ri, ai, 0, all)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn device(
        &mut self,
        ci: usize,
        ri: usize,
        ai: usize,
        n: usize,
        all: &AllSelected<'a>,
    ) -> Result<bool, String> {
        if self.timed_out || self.a.deadline.is_some_and(|d| Instant::now() >= d) {
            self.timed_out = true;
            return Ok(false);
        }
        let r = &self.reqs[ci][ri][ai];
        let list = all.get(&(ci, ri, ai));
        let want = list.map_or(r.count, Vec::len);
        if list.is_some_and(Vec::is_empty) {
            return Ok(false);
        }
        if n == want {
            return self.request(ci, ri + 1, all);
        }
        if self.chosen[ci].len() + want - n > ALLOCATION_RESULTS_MAX_SIZE {
            return Ok(false);
        }
        if let Some(list) = list {
            let (id, d) = &list[n];
            if !self.take(ci, ri, ai, id, d) {
                return Ok(false);
            }
            if self.device(ci, ri, ai, n + 1, all)? {
                return Ok(true);
            }
            self.untake(ci);
            return Ok(false);
        }
        let pools: Vec<(&'a str, &'a str, Vec<&'a ResourceSlice>)> = self
            .a
            .pools
            .iter()
            .filter(|p| !p.incomplete && !p.invalid)
            .map(|p| (p.driver, p.name, p.slices.clone()))
            .collect();
        for (driver, pool, slices) in pools {
            for d in slices.iter().flat_map(|s| s.spec.devices.iter().flatten()) {
                let id = DeviceId {
                    driver: driver.into(),
                    pool: pool.into(),
                    device: d.name.clone(),
                };
                if self.in_use(&id) || !self.selectable(ci, ri, ai, &id, d)? {
                    continue;
                }
                if !self.take(ci, ri, ai, &id, d) {
                    continue;
                }
                if self.device(ci, ri, ai, n + 1, all)? {
                    return Ok(true);
                }
                self.untake(ci);
            }
        }
        Ok(false)
    }

    fn results(&self) -> Vec<AllocationResult> {
        self.chosen
            .iter()
            .map(|devs| AllocationResult {
                devices: Some(DeviceAllocationResult {
                    results: Some(
                        devs.iter()
                            .map(|(req, id, _)| DeviceRequestAllocationResult {
                                request: req.clone(),
                                driver: id.driver.clone(),
                                pool: id.pool.clone(),
                                device: id.device.clone(),
                                ..Default::default()
                            })
                            .collect(),
                    ),
                    config: None,
                }),
                node_selector: self.node_selector(devs),
                ..Default::default()
            })
            .collect()
    }

    /// Where an allocation can be used (upstream's allocation node selector): this node
    /// when a device is local to it (its slice or the device names the node), else the
    /// slice's node selector, else anywhere.
    fn node_selector(
        &self,
        devs: &[(String, DeviceId, &'a Device)],
    ) -> Option<k8s_openapi::api::core::v1::NodeSelector> {
        use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
        let slices_of = |id: &DeviceId| -> Vec<&'a ResourceSlice> {
            self.a
                .pools
                .iter()
                .filter(|p| p.driver == id.driver && p.name == id.pool)
                .flat_map(|p| p.slices.iter().copied())
                .collect()
        };
        let local = devs.iter().any(|(_, id, d)| {
            d.node_name.is_some() || slices_of(id).iter().any(|s| s.spec.node_name.is_some())
        });
        if local {
            return Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_fields: Some(vec![NodeSelectorRequirement {
                        key: "metadata.name".into(),
                        operator: "In".into(),
                        values: Some(vec![node_name(self.a.node).to_string()]),
                    }]),
                    match_expressions: None,
                }],
            });
        }
        devs.iter().find_map(|(_, id, d)| {
            d.node_selector.clone().or_else(|| {
                slices_of(id)
                    .iter()
                    .find_map(|s| s.spec.node_selector.clone())
            })
        })
    }

    fn shortfall(
        &mut self,
        devices: &[(DeviceId, &'a Device)],
        ci: usize,
        ri: usize,
        ai: usize,
    ) -> Option<Shortfall> {
        let r = &self.reqs[ci][ri][ai];
        let (name, count, all) = (r.name.clone(), r.count, r.all);
        let class = r.class.metadata.name.clone().unwrap_or_default();
        let of_class = devices
            .iter()
            .filter(|(id, d)| {
                self.selectors_match(ci, ri, ai, id, d, true)
                    .unwrap_or(false)
            })
            .count();
        let matching: Vec<&DeviceId> = devices
            .iter()
            .filter(|(id, d)| self.selectable(ci, ri, ai, id, d).unwrap_or(false))
            .map(|(id, _)| id)
            .collect();
        let held: Vec<(DeviceId, String)> = matching
            .iter()
            .filter_map(|id| Some(((*id).clone(), self.a.in_use.get(*id)?.clone())))
            .collect();
        let free = matching.len() - held.len();
        let holders = || {
            held.iter()
                .map(|(id, c)| format!("{} ({c})", id.device))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let reason = if devices.is_empty() {
            "no ResourceSlice publishes devices for this node".to_string()
        } else if of_class == 0 {
            format!(
                "none of the {} device(s) on this node matches device class {class}",
                devices.len()
            )
        } else if matching.is_empty() {
            format!(
                "{of_class} device(s) match device class {class}, none matches the request's selectors"
            )
        } else if all && free < matching.len() {
            format!(
                "allocationMode All: {} of {} matching device(s) allocated to other claims: {}",
                held.len(),
                matching.len(),
                holders()
            )
        } else if free == 0 {
            format!(
                "all {} matching device(s) are allocated to other claims: {}",
                matching.len(),
                holders()
            )
        } else if !all && free < count {
            let also = if held.is_empty() {
                String::new()
            } else {
                format!("; allocated to other claims: {}", holders())
            };
            format!(
                "needs {count} device(s), {free} of {} matching device(s) free{also}",
                matching.len()
            )
        } else {
            return None;
        };
        Some(Shortfall {
            claim: self.a.claims[ci].0.to_string(),
            request: name,
            reason,
            held,
        })
    }

    /// kubestep's diagnosis: the first request that cannot be met even on its own.
    fn diagnose(&mut self) -> Option<Shortfall> {
        let devices: Vec<(DeviceId, &'a Device)> = self
            .a
            .pools
            .iter()
            .filter(|p| !p.incomplete && !p.invalid)
            .flat_map(|p| {
                p.slices
                    .iter()
                    .copied()
                    .flat_map(|s| s.spec.devices.iter().flatten())
                    .map(|d| {
                        (
                            DeviceId {
                                driver: p.driver.into(),
                                pool: p.name.into(),
                                device: d.name.clone(),
                            },
                            d,
                        )
                    })
            })
            .collect();
        for ci in 0..self.reqs.len() {
            for ri in 0..self.reqs[ci].len() {
                // A request fails alone only if every alternative does; report the first.
                let mut first = None;
                let mut fits = false;
                for ai in 0..self.reqs[ci][ri].len() {
                    match self.shortfall(&devices, ci, ri, ai) {
                        Some(s) => {
                            first.get_or_insert(s);
                        }
                        None => fits = true,
                    }
                }
                if !fits && first.is_some() {
                    return first;
                }
            }
        }
        // Each request can be met alone: a constraint, or requests competing for the
        // same devices, stand in the way.
        for ci in 0..self.reqs.len() {
            let Some((reqs, attr_name, _, _)) = self.constraints[ci].first().cloned() else {
                continue;
            };
            let mut values: BTreeSet<String> = BTreeSet::new();
            for (id, d) in &devices {
                if self.in_use(id) {
                    continue;
                }
                if let Some(v) = attr(d, id, &attr_name) {
                    values.insert(attr_value(v));
                }
            }
            let covered = if reqs.is_empty() {
                "all requests".to_string()
            } else {
                format!("requests {}", reqs.join(", "))
            };
            let found = if values.is_empty() {
                "no free device has it".to_string()
            } else {
                format!(
                    "free devices have {}",
                    values.into_iter().collect::<Vec<_>>().join(", ")
                )
            };
            return Some(Shortfall {
                claim: self.a.claims[ci].0.to_string(),
                request: String::new(),
                reason: format!(
                    "each request can be met alone, but no choice of free devices gives {covered} the same {attr_name} ({found})"
                ),
                held: Vec::new(),
            });
        }
        self.reqs.first().and_then(|c| c.first()).and_then(|r| r.first()).map(|r| Shortfall {
            claim: self.a.claims[r.claim].0.to_string(),
            request: String::new(),
            reason: "each request can be met alone, but not all together: they compete for the same devices".into(),
            held: Vec::new(),
        })
    }
}
