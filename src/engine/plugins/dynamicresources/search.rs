//! The depth-first search over claims, requests, sub-requests and devices (upstream
//! `allocateOne` / `allocateDevice`), with what each device must pass: not in use,
//! selectable (binding conditions, selectors, per-device node), enough counters, no
//! untolerated taint, constraints, capacity.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use k8s_openapi::api::resource::v1::{Device, DeviceAttribute, ResourceSlice};

use super::allocator::{
    ALLOCATION_RESULTS_MAX_SIZE, Allocator, Chosen, DeviceId, Outcome, Req, taint_blocks,
};
use super::capacity::{self, Consumed};
use super::cel;
use super::pools::{CounterSets, node_matches, per_device};

pub(super) fn attr<'d>(d: &'d Device, id: &DeviceId, name: &str) -> Option<&'d DeviceAttribute> {
    let attrs = d.attributes.as_ref()?;
    attrs.get(name).or_else(|| {
        let (domain, short) = name.split_once('/')?;
        (domain == id.driver).then(|| attrs.get(short)).flatten()
    })
}

/// One of a claim's constraints while searching.
#[derive(Clone)]
pub(super) struct Constraint {
    /// The requests it covers; all when empty.
    pub requests: Vec<String>,
    pub attribute: String,
    /// matchAttribute: the value fixed so far and how many devices hold it;
    /// distinctAttribute: the values taken so far (one per device).
    pub distinct: bool,
    pub values: Vec<DeviceAttribute>,
}

impl Constraint {
    fn covers(&self, parent: &str, name: &str) -> bool {
        self.requests.is_empty() || self.requests.iter().any(|q| q == parent || q == name)
    }
    /// Whether the device may join (the caller adds its value when all agree).
    fn admits(&self, d: &Device, id: &DeviceId) -> Option<DeviceAttribute> {
        let v = attr(d, id, &self.attribute)?.clone();
        let ok = if self.distinct {
            !self.values.contains(&v)
        } else {
            self.values.first().is_none_or(|f| same_kind_equal(f, &v))
        };
        ok.then_some(v)
    }
}

/// Upstream compares the value of the kind the new attribute has.
fn same_kind_equal(a: &DeviceAttribute, b: &DeviceAttribute) -> bool {
    match (b.string.as_ref(), b.int, b.bool, b.version.as_ref()) {
        (Some(s), ..) => a.string.as_ref() == Some(s),
        (None, Some(i), ..) => a.int == Some(i),
        (None, None, Some(x), _) => a.bool == Some(x),
        (None, None, None, Some(v)) => a.version.as_ref() == Some(v),
        _ => false,
    }
}

pub(super) struct Search<'a, 'b> {
    pub a: &'b Allocator<'a>,
    /// Per claim, per top-level request: the candidate (sub-)requests in order.
    pub reqs: Vec<Vec<Vec<Req<'a>>>>,
    /// Devices this search gave, with the claims they went to.
    pub allocating: BTreeMap<DeviceId, BTreeSet<usize>>,
    pub allocating_capacity: BTreeMap<DeviceId, Consumed>,
    pub chosen: Vec<Vec<Chosen<'a>>>,
    pub constraints: Vec<Vec<Constraint>>,
    pub selectable: BTreeMap<(usize, usize, usize, DeviceId), bool>,
    /// Per pool name (upstream keys them so), counters left after other claims.
    pub available: BTreeMap<String, CounterSets>,
    pub consumed: BTreeMap<String, CounterSets>,
    pub timed_out: bool,
}

/// "All" requests' device lists, fixed before the search.
pub(super) type AllLists<'a> = BTreeMap<(usize, usize, usize), Vec<(DeviceId, &'a Device, &'a ResourceSlice)>>;

impl<'a> Allocator<'a> {
    pub fn allocate(&self) -> Outcome {
        let reqs = match self.requests() {
            Ok(r) => r,
            Err(e) => return Outcome::Error(e),
        };
        let mut constraints = Vec::new();
        for (key, claim) in self.claims {
            let mut cs = Vec::new();
            let list = claim.spec.devices.as_ref().and_then(|d| d.constraints.as_ref());
            for (i, c) in list.into_iter().flatten().enumerate() {
                let (attribute, distinct) = match (&c.match_attribute, &c.distinct_attribute) {
                    (Some(a), _) => (a.clone(), false),
                    (None, Some(a)) if self.features.experimental() => (a.clone(), true),
                    _ => {
                        return Outcome::Error(format!(
                            "claim {key}, constraint #{i}: empty constraint (unsupported constraint type?)"
                        ));
                    }
                };
                cs.push(Constraint {
                    requests: c.requests.clone().unwrap_or_default(),
                    attribute,
                    distinct,
                    values: Vec::new(),
                });
            }
            constraints.push(cs);
        }
        let mut s = Search {
            a: self,
            reqs,
            allocating: BTreeMap::new(),
            allocating_capacity: BTreeMap::new(),
            chosen: vec![Vec::new(); self.claims.len()],
            constraints,
            selectable: BTreeMap::new(),
            available: BTreeMap::new(),
            consumed: BTreeMap::new(),
            timed_out: false,
        };
        let all = match s.all_lists() {
            Ok(l) => l,
            Err(e) => return Outcome::Error(e),
        };
        match s.claim(0, &all) {
            Err(e) => Outcome::Error(e),
            Ok(false) if s.timed_out => Outcome::TimedOut,
            Ok(true) => match self.results(&s.chosen, &s.reqs) {
                Ok(r) => Outcome::Allocated(r),
                Err(e) => Outcome::Error(e),
            },
            Ok(false) if self.pools.iter().any(|p| p.invalid.is_some()) => Outcome::InvalidPools,
            Ok(false) => Outcome::Unsatisfiable(s.diagnose()),
        }
    }
}

impl<'a> Search<'a, '_> {
    fn all_lists(&mut self) -> Result<AllLists<'a>, String> {
        let mut lists = AllLists::new();
        let a = self.a;
        for ci in 0..self.reqs.len() {
            for ri in 0..self.reqs[ci].len() {
                for ai in 0..self.reqs[ci][ri].len() {
                    if !self.reqs[ci][ri][ai].all {
                        continue;
                    }
                    let mut devs = Vec::new();
                    for p in &a.pools {
                        let r = &self.reqs[ci][ri][ai];
                        let what = if p.incomplete {
                            "currently being updated"
                        } else if p.invalid.is_some() {
                            "currently invalid"
                        } else {
                            ""
                        };
                        if !what.is_empty() {
                            return Err(format!(
                                "claim {}, request {}: asks for all devices, but resource pool {}/{} is {what}",
                                a.claims[ci].0, r.own, p.driver, p.name
                            ));
                        }
                        for (sl, d) in p.devices() {
                            let id = DeviceId {
                                driver: p.driver.into(),
                                pool: p.name.into(),
                                device: d.name.clone(),
                            };
                            if !self.is_selectable(ci, ri, ai, &id, d, sl)? {
                                continue;
                            }
                            if a.features.consumable_capacity && !self.capacity_fits(ci, ri, ai, &id, d)? {
                                continue;
                            }
                            devs.push((id, d, sl));
                        }
                    }
                    lists.insert((ci, ri, ai), devs);
                }
            }
        }
        Ok(lists)
    }

    /// Upstream `isSelectable`: binding conditions allowed, class and request selectors
    /// match, and with per-device node selection the device serves this node.
    pub(super) fn is_selectable(
        &mut self,
        ci: usize,
        ri: usize,
        ai: usize,
        id: &DeviceId,
        d: &Device,
        slice: &ResourceSlice,
    ) -> Result<bool, String> {
        if !self.a.features.binding_conditions && d.binding_conditions.as_ref().is_some_and(|b| !b.is_empty()) {
            return Ok(false);
        }
        let memo = (ci, ri, ai, id.clone());
        if let Some(m) = self.selectable.get(&memo) {
            return Ok(*m);
        }
        let ok = self.selectors_match(ci, ri, ai, id, d, false)?
            && (!per_device(slice)
                || node_matches(
                    self.a.node,
                    d.node_name.as_deref(),
                    d.all_nodes.unwrap_or(false),
                    d.node_selector.as_ref(),
                ));
        self.selectable.insert(memo, ok);
        Ok(ok)
    }

    /// The class's selectors (and unless `class_only` the request's) accept the device.
    /// Errors read as upstream's.
    pub(super) fn selectors_match(
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
        let own = if class_only { &[][..] } else { r.selectors };
        let multi = self.a.features.consumable_capacity;
        for (who, sels) in [(format!("class {class_name}"), class_sels), (format!("claim {claim}"), own)] {
            for (i, s) in sels.iter().enumerate() {
                let Some(c) = &s.cel else {
                    return Err(format!(
                        "claim {claim}, request {}, selector #{i}: CEL expression empty (unsupported selector type?)",
                        r.own
                    ));
                };
                let expr = cel::compile(&c.expression)
                    .map_err(|e| format!("{who}: selector #{i}: CEL compile error: {e}"))?;
                if !cel::matches(&expr, &id.driver, d, multi)
                    .map_err(|e| format!("{who}: selector #{i}: CEL runtime error: {e}"))?
                {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn capacity_fits(&self, ci: usize, ri: usize, ai: usize, id: &DeviceId, d: &Device) -> Result<bool, String> {
        let r = &self.reqs[ci][ri][ai];
        let empty = BTreeMap::new();
        let caps = d.capacity.as_ref().unwrap_or(&empty);
        // Upstream logs a capacity error and treats the device as not fitting.
        Ok(capacity::fits(
            self.a.shared.get(id),
            self.allocating_capacity.get(id),
            r.capacity,
            caps,
        )
        .unwrap_or(false))
    }

    fn in_use(&self, id: &DeviceId) -> bool {
        self.a.in_use.contains_key(id) || self.allocating.get(id).is_some_and(|s| !s.is_empty())
    }

    fn allocating_for(&self, id: &DeviceId, ci: usize) -> bool {
        self.allocating.get(id).is_some_and(|s| s.contains(&ci))
    }

    /// Counters left in the device's pool suffice for it (its consumption then counted).
    fn take_counters(&mut self, pool: &str, d: &Device) -> bool {
        let a = self.a;
        if !self.available.contains_key(pool) {
            let mut left: CounterSets = BTreeMap::new();
            for p in a.pools.iter().filter(|p| p.name == pool) {
                left.extend(p.counter_sets.clone());
                for s in p.slices.iter().chain(p.other_slices.iter()) {
                    for dev in s.spec.devices.iter().flatten() {
                        let id = DeviceId {
                            driver: s.spec.driver.clone(),
                            pool: s.spec.pool.name.clone(),
                            device: dev.name.clone(),
                        };
                        if !a.in_use.contains_key(&id) {
                            continue;
                        }
                        for c in dev.consumes_counters.iter().flatten() {
                            let Some(set) = left.get_mut(&c.counter_set) else { continue };
                            for (k, v) in &c.counters {
                                if let Some(x) = set.get_mut(k) {
                                    *x -= super::pools::nanos(&v.value.0);
                                }
                            }
                        }
                    }
                }
            }
            self.available.insert(pool.to_string(), left);
        }
        self.add_counters(pool, d, 1);
        let used = &self.consumed[pool];
        let short = self.available[pool].iter().any(|(set, counters)| {
            counters.iter().any(|(k, v)| used.get(set).and_then(|u| u.get(k)).is_some_and(|u| v < u))
        });
        if short {
            self.add_counters(pool, d, -1);
        }
        !short
    }

    fn add_counters(&mut self, pool: &str, d: &Device, sign: i128) {
        let used = self.consumed.entry(pool.to_string()).or_default();
        for c in d.consumes_counters.iter().flatten() {
            let set = used.entry(c.counter_set.clone()).or_default();
            for (k, v) in &c.counters {
                *set.entry(k.clone()).or_default() += sign * super::pools::nanos(&v.value.0);
            }
        }
    }

    /// Upstream `allocateDevice`: false leaves nothing changed. `must` (All requests):
    /// a constraint refusing the device is an error.
    fn take(
        &mut self,
        ci: usize,
        ri: usize,
        ai: usize,
        (id, d, slice): (&DeviceId, &'a Device, &'a ResourceSlice),
        must: bool,
    ) -> Result<bool, String> {
        let f = self.a.features;
        let r = &self.reqs[ci][ri][ai];
        let (admin, name, own, parent) = (r.admin, r.name.clone(), r.own, r.parent);
        let multi = f.consumable_capacity && d.allow_multiple_allocations == Some(true);
        if !multi && admin && self.allocating_for(id, ci) {
            return Ok(false);
        }
        if !admin && self.in_use(id) {
            return Ok(false);
        }
        let counters = d.consumes_counters.as_ref().is_some_and(|c| !c.is_empty());
        if !f.partitionable && counters {
            return Ok(false);
        }
        let shared_in_use =
            self.a.shared.contains_key(id) || self.allocating_capacity.contains_key(id);
        let counted = counters && !(multi && shared_in_use);
        if counted && !self.take_counters(&id.pool, d) {
            return Ok(false);
        }
        let undo_counters = |s: &mut Self| {
            if counted {
                s.add_counters(&id.pool, d, -1);
            }
        };
        if f.taints && taint_blocks(d, self.reqs[ci][ri][ai].tolerations) {
            undo_counters(self);
            return Ok(false);
        }
        let mut added = Vec::new();
        for (i, c) in self.constraints[ci].iter().enumerate() {
            if !c.covers(parent, &name) {
                continue;
            }
            match c.admits(d, id) {
                Some(v) => added.push((i, v)),
                None => {
                    undo_counters(self);
                    if must {
                        return Err(format!(
                            "claim {}, request {own}: cannot add device {id} because a claim constraint would not be satisfied",
                            self.a.claims[ci].0
                        ));
                    }
                    return Ok(false);
                }
            }
        }
        let mut consumed = None;
        if f.consumable_capacity {
            if !self.capacity_fits(ci, ri, ai, id, d)? {
                undo_counters(self);
                return Ok(false);
            }
            if multi {
                let empty = BTreeMap::new();
                let c = capacity::consumption(self.reqs[ci][ri][ai].capacity, d.capacity.as_ref().unwrap_or(&empty));
                capacity::add(self.allocating_capacity.entry(id.clone()).or_default(), &c);
                consumed = Some(c);
            }
        }
        for (i, v) in added {
            self.constraints[ci][i].values.push(v);
        }
        if !multi {
            self.allocating.entry(id.clone()).or_default().insert(ci);
        }
        self.chosen[ci].push(Chosen {
            req: (ri, ai),
            name,
            id: id.clone(),
            device: d,
            slice,
            consumed,
        });
        Ok(true)
    }

    fn untake(&mut self, ci: usize) {
        let Some(c) = self.chosen[ci].pop() else {
            return;
        };
        let r = &self.reqs[ci][c.req.0][c.req.1];
        let parent = r.parent;
        for k in &mut self.constraints[ci] {
            if k.covers(parent, &c.name)
                && let Some(v) = attr(c.device, &c.id, &k.attribute)
                && let Some(pos) = k.values.iter().rposition(|x| x == v)
            {
                k.values.remove(pos);
            }
        }
        match &c.consumed {
            Some(used) => {
                if let Some(m) = self.allocating_capacity.get_mut(&c.id) {
                    capacity::sub(m, used);
                    if m.values().all(|v| *v == 0) {
                        self.allocating_capacity.remove(&c.id);
                    }
                }
            }
            None => {
                if let Some(s) = self.allocating.get_mut(&c.id) {
                    s.remove(&ci);
                }
                let counters = c.device.consumes_counters.as_ref().is_some_and(|x| !x.is_empty());
                if self.a.features.partitionable && counters {
                    self.add_counters(&c.id.pool, c.device, -1);
                }
            }
        }
    }

    fn claim(&mut self, ci: usize, all: &AllLists<'a>) -> Result<bool, String> {
        if ci == self.reqs.len() {
            return Ok(true);
        }
        self.request(ci, 0, all)
    }

    fn request(&mut self, ci: usize, ri: usize, all: &AllLists<'a>) -> Result<bool, String> {
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

    fn device(&mut self, ci: usize, ri: usize, ai: usize, n: usize, all: &AllLists<'a>) -> Result<bool, String> {
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
            let (id, d, sl) = &list[n];
            if !self.take(ci, ri, ai, (id, d, sl), true)? {
                return Ok(false);
            }
            if self.device(ci, ri, ai, n + 1, all)? {
                return Ok(true);
            }
            self.untake(ci);
            return Ok(false);
        }
        let a = self.a;
        let admin = r.admin;
        for p in a.pools.iter().filter(|p| p.usable()) {
            for (sl, d) in p.devices() {
                let id = DeviceId {
                    driver: p.driver.into(),
                    pool: p.name.into(),
                    device: d.name.clone(),
                };
                if admin && self.allocating_for(&id, ci) || !admin && self.in_use(&id) {
                    continue;
                }
                if !self.is_selectable(ci, ri, ai, &id, d, sl)? {
                    continue;
                }
                if a.features.consumable_capacity && !self.capacity_fits(ci, ri, ai, &id, d)? {
                    continue;
                }
                if !self.take(ci, ri, ai, (&id, d, sl), false)? {
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
}
