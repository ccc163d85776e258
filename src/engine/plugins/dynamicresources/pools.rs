//! Resource pools as one node sees them (upstream `GatherPools`): the slices that publish
//! devices for the node, by pool, at the pool's newest generation, with its counter sets
//! when partitionable devices are on. A pool some slices of which are missing is
//! incomplete; one whose newest generation this node does not see is left out.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::{Device, ResourceSlice};

use super::allocator::AllocFeatures;
use crate::api::node_affinity::{NodeSelectorMatcher, node_name};
use crate::api::quantity::Quantity;

/// Counter values per counter set, in nanos (upstream compares Quantities).
pub type CounterSets = BTreeMap<String, BTreeMap<String, i128>>;

/// A resource pool as seen from one node.
#[derive(Debug)]
pub struct Pool<'a> {
    pub driver: &'a str,
    pub name: &'a str,
    /// Slices with devices that can serve this node.
    pub slices: Vec<&'a ResourceSlice>,
    /// The pool's other device slices (partitionable devices: they draw on the same
    /// counters).
    pub other_slices: Vec<&'a ResourceSlice>,
    pub counter_sets: CounterSets,
    pub incomplete: bool,
    /// Why the pool cannot be used (duplicate device names, unknown counter sets).
    pub invalid: Option<String>,
}

impl<'a> Pool<'a> {
    pub fn usable(&self) -> bool {
        !self.incomplete && self.invalid.is_none()
    }

    /// The devices that can serve this node, in slice order.
    pub fn devices(&self) -> impl Iterator<Item = (&'a ResourceSlice, &'a Device)> + '_ {
        self.slices
            .iter()
            .flat_map(|s: &&'a ResourceSlice| {
                let s: &'a ResourceSlice = s;
                s.spec.devices.iter().flatten().map(move |d| (s, d))
            })
    }
}

pub fn node_matches(
    node: &Node,
    name: Option<&str>,
    all: bool,
    sel: Option<&k8s_openapi::api::core::v1::NodeSelector>,
) -> bool {
    match (name, sel) {
        (Some(n), _) if !n.is_empty() => n == node_name(node),
        _ if all => true,
        (_, Some(s)) => NodeSelectorMatcher::new(s).matches_node(node),
        _ => false,
    }
}

fn has_counters(s: &ResourceSlice) -> bool {
    s.spec.shared_counters.as_ref().is_some_and(|c| !c.is_empty())
}

/// The device's own node choice when its slice selects per device.
pub fn per_device(s: &ResourceSlice) -> bool {
    s.spec.per_device_node_selection.unwrap_or(false)
}

/// Whether the slice publishes anything for `node`.
fn for_node(s: &ResourceSlice, node: &Node) -> bool {
    let sp = &s.spec;
    if has_counters(s) {
        // Counter sets belong to the whole pool.
        return true;
    }
    let name = sp.node_name.as_deref().filter(|n| !n.is_empty());
    let all = sp.all_nodes.unwrap_or(false);
    if name.is_some() || all || sp.node_selector.is_some() {
        return node_matches(node, name, all, sp.node_selector.as_ref());
    }
    per_device(s)
        && sp.devices.iter().flatten().any(|d| {
            node_matches(
                node,
                d.node_name.as_deref(),
                d.all_nodes.unwrap_or(false),
                d.node_selector.as_ref(),
            )
        })
}

pub fn gather_pools<'a>(
    slices: &'a [ResourceSlice],
    node: &Node,
    features: AllocFeatures,
) -> Vec<Pool<'a>> {
    let ignored = |s: &ResourceSlice| {
        !features.partitionable && (s.spec.per_device_node_selection.is_some() || has_counters(s))
    };
    // Per pool, the slices of the newest generation this node sees.
    let mut by_pool: BTreeMap<(&str, &str), Vec<&ResourceSlice>> = BTreeMap::new();
    for s in slices.iter().filter(|s| !ignored(s) && for_node(s, node)) {
        let v = by_pool
            .entry((&s.spec.driver, &s.spec.pool.name))
            .or_default();
        match v.first().map(|f| f.spec.pool.generation) {
            Some(g) if s.spec.pool.generation < g => {}
            Some(g) if s.spec.pool.generation > g => *v = vec![s],
            _ => v.push(s),
        }
    }
    let mut out = Vec::new();
    for ((driver, name), mine) in by_pool {
        let generation = mine[0].spec.pool.generation;
        let count = mine[0].spec.pool.resource_slice_count;
        let mut all = None;
        if mine.len() as i64 != count {
            let same_pool = |s: &&ResourceSlice| s.spec.driver == driver && s.spec.pool.name == name;
            if slices
                .iter()
                .filter(same_pool)
                .any(|s| s.spec.pool.generation > generation)
            {
                // A newer generation exists that this node does not see: obsolete.
                continue;
            }
            let everything: Vec<&ResourceSlice> = slices
                .iter()
                .filter(same_pool)
                .filter(|s| s.spec.pool.generation == generation)
                .collect();
            if everything.len() as i64 != count {
                out.push(Pool {
                    driver,
                    name,
                    slices: Vec::new(),
                    other_slices: Vec::new(),
                    counter_sets: CounterSets::new(),
                    incomplete: true,
                    invalid: None,
                });
                continue;
            }
            all = Some(everything);
        }
        out.push(build_pool(driver, name, mine, all, features));
    }
    out
}

fn build_pool<'a>(
    driver: &'a str,
    name: &'a str,
    mine: Vec<&'a ResourceSlice>,
    all: Option<Vec<&'a ResourceSlice>>,
    features: AllocFeatures,
) -> Pool<'a> {
    let (counter_slices, device_slices): (Vec<_>, Vec<_>) = if features.partitionable {
        mine.iter().partition(|s| has_counters(s))
    } else {
        (Vec::new(), mine.clone())
    };
    let mut pool = Pool {
        driver,
        name,
        slices: device_slices,
        other_slices: Vec::new(),
        counter_sets: CounterSets::new(),
        incomplete: false,
        invalid: None,
    };
    let mut names = BTreeSet::new();
    if let Some(d) = pool
        .slices
        .iter()
        .flat_map(|s| s.spec.devices.iter().flatten())
        .find(|d| !names.insert(d.name.as_str()))
    {
        pool.invalid = Some(format!("duplicate device name {}", d.name));
        return pool;
    }
    if !features.partitionable {
        return pool;
    }
    for s in &counter_slices {
        for cs in s.spec.shared_counters.iter().flatten() {
            if pool.counter_sets.contains_key(&cs.name) {
                pool.invalid = Some(format!("duplicate counter set name {}", cs.name));
                return pool;
            }
            let values = cs
                .counters
                .iter()
                .map(|(k, c)| (k.clone(), nanos(&c.value.0)))
                .collect();
            pool.counter_sets.insert(cs.name.clone(), values);
        }
    }
    // Every device must draw on known counters, here and on the pool's other slices.
    if let Some(all) = all {
        let here: BTreeSet<&str> = mine.iter().filter_map(|s| s.metadata.name.as_deref()).collect();
        pool.other_slices = all
            .into_iter()
            .filter(|s| !here.contains(s.metadata.name.as_deref().unwrap_or("")))
            .filter(|s| !has_counters(s))
            .collect();
    }
    for s in mine.iter().chain(pool.other_slices.iter()) {
        for d in s.spec.devices.iter().flatten() {
            for c in d.consumes_counters.iter().flatten() {
                let Some(set) = pool.counter_sets.get(&c.counter_set) else {
                    pool.invalid = Some(format!("counter set {} not found", c.counter_set));
                    return pool;
                };
                if let Some(k) = c.counters.keys().find(|k| !set.contains_key(*k)) {
                    pool.invalid = Some(format!(
                        "counter {k} not found in counter set {}",
                        c.counter_set
                    ));
                    return pool;
                }
            }
        }
    }
    pool
}

/// A Quantity's value in nanos; unparsable values count as zero (the API server
/// validates them).
pub fn nanos(q: &str) -> i128 {
    Quantity::parse(q).map(|q| q.nanos()).unwrap_or(0)
}
