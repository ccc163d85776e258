//! kubestep's own diagnosis when the search finds nothing on a node: the first request
//! that cannot be met even alone, and why, in words a person can act on (which devices
//! other claims hold, which taint is not tolerated, which counters ran out, which devices
//! the version's gates leave out).

use std::collections::BTreeSet;
use std::fmt;

use k8s_openapi::api::resource::v1::{Device, ResourceSlice};

use super::allocator::{DeviceId, taint_blocks, tolerates};
use super::search::{Search, attr};

/// Why a request could not be met on a node, for kubestep's explanation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Shortfall {
    pub claim: String,
    pub request: String,
    pub reason: String,
    /// Matching devices on the node that other claims hold (device, claim): freeing
    /// them is what would help.
    pub held: Vec<(DeviceId, String)>,
    /// Who asked, in a person's words, when the claim is not the pod's own (the
    /// extended-resource claim: which container's resource, through which class).
    pub about: Option<String>,
}

impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(a) = &self.about {
            write!(f, "{a}: {}", self.reason)
        } else if self.request.is_empty() {
            write!(f, "claim {}: {}", self.claim, self.reason)
        } else {
            write!(f, "claim {}, request {}: {}", self.claim, self.request, self.reason)
        }
    }
}

/// An attribute's value in words.
fn attr_value(v: &k8s_openapi::api::resource::v1::DeviceAttribute) -> String {
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

type Devices<'a> = Vec<(DeviceId, &'a Device, &'a ResourceSlice)>;

fn list(names: &[String]) -> String {
    const SHOWN: usize = 4;
    let mut s = names.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    s
}

impl<'a> Search<'a, '_> {
    /// Why request (ci, ri, ai) cannot be met alone, or None if it can.
    fn shortfall(&mut self, devices: &Devices<'a>, ci: usize, ri: usize, ai: usize) -> Option<Shortfall> {
        let f = self.a.features;
        let r = &self.reqs[ci][ri][ai];
        let (name, count, all, admin) = (r.name.clone(), r.count, r.all, r.admin);
        let class = r.class.metadata.name.clone().unwrap_or_default();
        let tolerations = r.tolerations;
        let of_class: Vec<&(DeviceId, &Device, &ResourceSlice)> = devices
            .iter()
            .filter(|(id, d, _)| self.selectors_match(ci, ri, ai, id, d, true).unwrap_or(false))
            .collect();
        // What the version leaves out, before anything else.
        let mut gated = Vec::new();
        let mut matching = Vec::new();
        for (id, d, sl) in devices {
            if !self.is_selectable(ci, ri, ai, id, d, sl).unwrap_or(false) {
                let bc = d.binding_conditions.as_ref().is_some_and(|b| !b.is_empty());
                if bc && !f.binding_conditions && self.selectors_match(ci, ri, ai, id, d, false).unwrap_or(false) {
                    gated.push(format!("{} (binding conditions: DRADeviceBindingConditions is off)", id.device));
                }
                continue;
            }
            if !f.partitionable && d.consumes_counters.as_ref().is_some_and(|c| !c.is_empty()) {
                gated.push(format!("{} (consumes counters: DRAPartitionableDevices is off)", id.device));
                continue;
            }
            matching.push((id, *d));
        }
        let tainted: Vec<String> = matching
            .iter()
            .filter(|(_, d)| f.taints && taint_blocks(d, tolerations))
            .map(|(id, d)| {
                // The first taint that blocks; a DeviceTaintRule's is named by its rule.
                let Some(t) = d.taints.iter().flatten().find(|t| {
                    matches!(t.effect.as_str(), "NoSchedule" | "NoExecute")
                        && !tolerations.iter().any(|tol| tolerates(tol, t))
                }) else {
                    return id.device.clone();
                };
                let from = self
                    .a
                    .taint_rules
                    .iter()
                    .find(|r| {
                        r.spec.taint.key == t.key
                            && r.spec.taint.value == t.value
                            && r.spec.taint.effect == t.effect
                            && super::objects::selects(r, &id.driver, &id.pool, &id.device)
                    })
                    .and_then(|r| r.metadata.name.as_deref())
                    .map(|n| format!(" from DeviceTaintRule {n}"))
                    .unwrap_or_default();
                let value = t.value.as_deref().unwrap_or("");
                format!("{} (taint {}={value}:{}{from} not tolerated)", id.device, t.key, t.effect)
            })
            .collect();
        // Shared devices (consumable capacity) whose capacity left is too small.
        let mut short = Vec::new();
        if f.consumable_capacity {
            let req = self.reqs[ci][ri][ai].capacity;
            for (id, d) in &matching {
                let Some(caps) = d.capacity.as_ref() else { continue };
                let held = self.a.shared.get(*id);
                if super::capacity::fits(held, None, req, caps) == Ok(true) {
                    continue;
                }
                let want = super::capacity::consumption(req, caps);
                let what: Vec<String> = caps
                    .iter()
                    .map(|(k, c)| {
                        let total = super::pools::nanos(&c.value.0);
                        let used = held.and_then(|h| h.get(k)).copied().unwrap_or(0);
                        format!("{k} {} asked, {} of {} left", show(want[k]), show(total - used), show(total))
                    })
                    .collect();
                short.push(format!("{} ({})", id.device, what.join(", ")));
            }
        }
        let held: Vec<(DeviceId, String)> = matching
            .iter()
            .filter(|_| !admin)
            .filter_map(|(id, _)| Some(((*id).clone(), self.a.in_use.get(*id)?.clone())))
            .collect();
        let usable = matching.len().saturating_sub(held.len() + tainted.len() + short.len());
        let holders = || {
            let v: Vec<String> = held.iter().map(|(id, c)| format!("{} ({c})", id.device)).collect();
            list(&v)
        };
        let reason = if devices.is_empty() {
            "no ResourceSlice publishes devices for this node".to_string()
        } else if of_class.is_empty() {
            format!("none of the {} device(s) on this node matches device class {class}", devices.len())
        } else if matching.is_empty() && !gated.is_empty() {
            format!("the matching device(s) are left out by this version's gates: {}", list(&gated))
        } else if matching.is_empty() {
            format!("{} device(s) match device class {class}, none matches the request's selectors", of_class.len())
        } else if usable == 0 && !short.is_empty() && held.is_empty() && tainted.is_empty() {
            format!("no shared device has the capacity the request asks for: {}", list(&short))
        } else if usable == 0 && !tainted.is_empty() && held.is_empty() {
            format!("every matching device has a taint the request does not tolerate: {}", list(&tainted))
        } else if all && usable < matching.len() {
            let mut parts = Vec::new();
            if !held.is_empty() {
                parts.push(format!("allocated to other claims: {}", holders()));
            }
            if !tainted.is_empty() {
                parts.push(format!("tainted: {}", list(&tainted)));
            }
            format!(
                "allocationMode All: {} of {} matching device(s) cannot be taken; {}",
                matching.len() - usable,
                matching.len(),
                parts.join("; ")
            )
        } else if usable == 0 && tainted.is_empty() {
            format!("all {} matching device(s) are allocated to other claims: {}", matching.len(), holders())
        } else if usable == 0 {
            let mut s = format!("all {} matching device(s) are unavailable", matching.len());
            if !held.is_empty() {
                s.push_str(&format!("; allocated to other claims: {}", holders()));
            }
            if !tainted.is_empty() {
                s.push_str(&format!("; tainted: {}", list(&tainted)));
            }
            s
        } else if !all && usable < count {
            let mut s = format!("needs {count} device(s), {usable} of {} matching device(s) free", matching.len());
            if !held.is_empty() {
                s.push_str(&format!("; allocated to other claims: {}", holders()));
            }
            if !tainted.is_empty() {
                s.push_str(&format!("; tainted: {}", list(&tainted)));
            }
            s
        } else {
            return None;
        };
        Some(Shortfall {
            claim: self.a.claims[ci].0.to_string(),
            request: name,
            reason,
            held,
            about: None,
        })
    }

    /// Counters: devices that fit alone but whose counter sets are used up.
    fn counter_shortfall(&mut self, devices: &Devices<'a>) -> Option<String> {
        if !self.a.features.partitionable {
            return None;
        }
        for p in &self.a.pools {
            let mut left = p.counter_sets.clone();
            for (id, d, _) in devices.iter().filter(|(id, ..)| id.pool == p.name) {
                if !self.a.in_use.contains_key(id) {
                    continue;
                }
                for c in d.consumes_counters.iter().flatten() {
                    if let Some(set) = left.get_mut(&c.counter_set) {
                        for (k, v) in &c.counters {
                            if let Some(x) = set.get_mut(k) {
                                *x -= super::pools::nanos(&v.value.0);
                            }
                        }
                    }
                }
            }
            for (set, counters) in &left {
                let total = &p.counter_sets[set];
                let low: Vec<String> = counters
                    .iter()
                    .filter(|(k, v)| **v < total[*k])
                    .map(|(k, v)| format!("{k} {} of {} left", show(*v), show(total[k])))
                    .collect();
                if !low.is_empty() {
                    return Some(format!("counter set {set} of pool {}: {}", p.name, low.join(", ")));
                }
            }
        }
        None
    }

    /// kubestep's diagnosis: the first request that cannot be met even on its own.
    pub(super) fn diagnose(&mut self) -> Option<Shortfall> {
        let devices: Devices<'a> = self
            .a
            .pools
            .iter()
            .filter(|p| p.usable())
            .flat_map(|p| {
                p.devices().map(|(s, d)| {
                    (
                        DeviceId {
                            driver: p.driver.into(),
                            pool: p.name.into(),
                            device: d.name.clone(),
                        },
                        d,
                        s,
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
        let claim0 = self.reqs.first().and_then(|c| c.first()).and_then(|r| r.first()).map(|r| self.a.claims[r.claim].0.to_string())?;
        if let Some(why) = self.counter_shortfall(&devices) {
            return Some(Shortfall {
                claim: claim0,
                request: String::new(),
                reason: format!("each request can be met alone, but the devices' shared counters run out: {why}"),
                held: Vec::new(),
                about: None,
            });
        }
        // Each request can be met alone: a constraint, or requests competing for the
        // same devices, stand in the way.
        for ci in 0..self.reqs.len() {
            let Some(c) = self.constraints[ci].first().cloned() else {
                continue;
            };
            let mut values: BTreeSet<String> = BTreeSet::new();
            for (id, d, _) in &devices {
                if self.a.in_use.contains_key(id) {
                    continue;
                }
                if let Some(v) = attr(d, id, &c.attribute) {
                    values.insert(attr_value(v));
                }
            }
            let covered = if c.requests.is_empty() {
                "all requests".to_string()
            } else {
                format!("requests {}", c.requests.join(", "))
            };
            let found = if values.is_empty() {
                "no free device has it".to_string()
            } else {
                format!("free devices have {}", values.into_iter().collect::<Vec<_>>().join(", "))
            };
            let how = if c.distinct { "a different" } else { "the same" };
            return Some(Shortfall {
                claim: self.a.claims[ci].0.to_string(),
                request: String::new(),
                reason: format!(
                    "each request can be met alone, but no choice of free devices gives {covered} {how} {} ({found})",
                    c.attribute
                ),
                held: Vec::new(),
                about: None,
            });
        }
        let capacity = self.a.features.consumable_capacity
            && devices.iter().any(|(_, d, _)| d.allow_multiple_allocations == Some(true));
        Some(Shortfall {
            claim: claim0,
            request: String::new(),
            reason: if capacity {
                "each request can be met alone, but not all together: shared devices' capacity or the same devices are asked for twice".into()
            } else {
                "each request can be met alone, but not all together: they compete for the same devices".into()
            },
            held: Vec::new(),
            about: None,
        })
    }
}

/// A quantity in nanos as people write it: `40Gi`, `100G`, `7`, `0.5`.
fn show(n: i128) -> String {
    const NANO: i128 = 1_000_000_000;
    if n % NANO != 0 {
        return crate::api::quantity::Quantity::from_nanos(n).to_string();
    }
    let v = n / NANO;
    if v == 0 {
        return "0".into();
    }
    // The shortest of the plain number and its largest whole binary and decimal units.
    let units: [(&str, i128); 8] = [
        ("Ti", 1 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
        ("T", 1_000_000_000_000),
        ("G", 1_000_000_000),
        ("M", 1_000_000),
        ("k", 1_000),
    ];
    let mut best = v.to_string();
    for (suffix, unit) in units {
        let t = format!("{}{suffix}", v / unit);
        if v % unit == 0 && t.len() < best.len() {
            best = t;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    #[test]
    fn quantities_read_as_written() {
        let n = |v: i128| v * 1_000_000_000;
        assert_eq!(super::show(n(40 << 30)), "40Gi");
        assert_eq!(super::show(n(100_000_000_000)), "100G");
        assert_eq!(super::show(n(7)), "7");
        assert_eq!(super::show(500_000_000), "0.5");
    }
}
