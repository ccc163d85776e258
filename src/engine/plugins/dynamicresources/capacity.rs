//! Consumable capacity (DRAConsumableCapacity): a device that allows multiple allocations
//! is shared by claims until its capacity runs out. What a request consumes follows the
//! capacity's request policy (default, valid values, valid range with step).

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{CapacityRequirements, DeviceCapacity};

use super::pools::nanos;

/// Consumed capacity per capacity name, in nanos.
pub type Consumed = BTreeMap<String, i128>;

/// The whole units of a value, rounding up (upstream `Quantity.Value()`).
fn units(n: i128) -> i128 {
    i128::from(crate::api::quantity::Quantity::from_nanos(n).value())
}

/// What a request of `requested` (none: unspecified) consumes of `cap`.
fn consumed(requested: Option<i128>, cap: &DeviceCapacity) -> i128 {
    let policy = cap.request_policy.as_ref();
    let Some(req) = requested else {
        return policy
            .and_then(|p| p.default.as_ref())
            .map_or(nanos(&cap.value.0), |d| nanos(&d.0));
    };
    let Some(policy) = policy else {
        return req;
    };
    if let Some(range) = &policy.valid_range {
        let min = nanos(&range.min.0);
        if req < min {
            return min;
        }
        let Some(step) = &range.step else {
            return req;
        };
        let (step, min_u) = (units(nanos(&step.0)), units(min));
        if step <= 0 {
            return req;
        }
        let added = units(req) - min_u;
        let n = added / step + i128::from(added % step != 0);
        return (min_u + step * n) * 1_000_000_000;
    }
    if let Some(values) = &policy.valid_values {
        return values
            .iter()
            .map(|v| nanos(&v.0))
            .find(|v| req <= *v)
            .unwrap_or(req);
    }
    req
}

fn violates(v: i128, cap: &DeviceCapacity) -> bool {
    let Some(policy) = &cap.request_policy else {
        return false;
    };
    if policy.default.as_ref().is_some_and(|d| nanos(&d.0) == v) {
        return false;
    }
    if let Some(range) = &policy.valid_range {
        if range.max.as_ref().is_some_and(|m| v > nanos(&m.0)) {
            return true;
        }
        if let Some(step) = &range.step {
            let step = units(nanos(&step.0));
            return step > 0 && (units(v) - units(nanos(&range.min.0))) % step != 0;
        }
        return false;
    }
    match &policy.valid_values {
        Some(values) if !values.is_empty() => !values.iter().any(|x| nanos(&x.0) == v),
        _ => false,
    }
}

fn requested(req: Option<&CapacityRequirements>, name: &str) -> Option<i128> {
    req.and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get(name))
        .map(|q| nanos(&q.0))
}

/// Whether the request fits the device beside what is allocated (`allocated`) and being
/// allocated in this search (`allocating`). Err: the request names a capacity the device
/// does not have.
pub fn fits(
    allocated: Option<&Consumed>,
    allocating: Option<&Consumed>,
    req: Option<&CapacityRequirements>,
    caps: &BTreeMap<String, DeviceCapacity>,
) -> Result<bool, String> {
    if let Some(names) = req.and_then(|r| r.requests.as_ref())
        && names.keys().any(|n| !caps.contains_key(n))
    {
        return Err("some requested capacity has not been defined".into());
    }
    for (name, cap) in caps {
        let c = consumed(requested(req, name), cap);
        if violates(c, cap) {
            return Ok(false);
        }
        let total = c
            + allocated.and_then(|a| a.get(name)).copied().unwrap_or(0)
            + allocating.and_then(|a| a.get(name)).copied().unwrap_or(0);
        if total > nanos(&cap.value.0) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What the request consumes of each of the device's capacities.
pub fn consumption(
    req: Option<&CapacityRequirements>,
    caps: &BTreeMap<String, DeviceCapacity>,
) -> Consumed {
    caps.iter()
        .map(|(name, cap)| (name.clone(), consumed(requested(req, name), cap)))
        .collect()
}

pub fn add(into: &mut Consumed, c: &Consumed) {
    for (k, v) in c {
        *into.entry(k.clone()).or_default() += v;
    }
}

pub fn sub(from: &mut Consumed, c: &Consumed) {
    for (k, v) in c {
        *from.entry(k.clone()).or_default() -= v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::resource::v1::{CapacityRequestPolicy, CapacityRequestPolicyRange};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;

    fn q(s: &str) -> Q {
        Q(s.into())
    }
    fn g(n: i128) -> i128 {
        n * 1_000_000_000 * 1_000_000_000
    }
    fn bandwidth(policy: Option<CapacityRequestPolicy>) -> BTreeMap<String, DeviceCapacity> {
        BTreeMap::from([(
            "bandwidth".to_string(),
            DeviceCapacity {
                value: q("100G"),
                request_policy: policy,
            },
        )])
    }
    fn ask(v: &str) -> CapacityRequirements {
        CapacityRequirements {
            requests: Some(BTreeMap::from([("bandwidth".to_string(), q(v))])),
        }
    }

    #[test]
    fn unspecified_requests_take_the_default_or_everything() {
        let range = Some(CapacityRequestPolicy {
            default: Some(q("10G")),
            valid_range: Some(CapacityRequestPolicyRange {
                min: q("1G"),
                step: Some(q("1G")),
                max: Some(q("40G")),
            }),
            valid_values: None,
        });
        assert_eq!(consumption(None, &bandwidth(range.clone()))["bandwidth"], g(10));
        assert_eq!(consumption(None, &bandwidth(None))["bandwidth"], g(100));
        // Rounded up to the step, refused above the maximum.
        assert_eq!(
            consumption(Some(&ask("2500M")), &bandwidth(range.clone()))["bandwidth"],
            g(3)
        );
        assert_eq!(
            fits(None, None, Some(&ask("50G")), &bandwidth(range.clone())),
            Ok(false)
        );
        // What others hold counts.
        let held = Consumed::from([("bandwidth".to_string(), g(95))]);
        assert_eq!(fits(Some(&held), None, Some(&ask("5G")), &bandwidth(None)), Ok(true));
        assert_eq!(fits(Some(&held), None, Some(&ask("6G")), &bandwidth(None)), Ok(false));
        assert!(fits(None, None, Some(&CapacityRequirements {
            requests: Some(BTreeMap::from([("lanes".to_string(), q("1"))])),
        }), &bandwidth(None))
        .is_err());
    }

    #[test]
    fn valid_values_round_up_to_the_next() {
        let values = Some(CapacityRequestPolicy {
            default: None,
            valid_range: None,
            valid_values: Some(vec![q("10G"), q("25G"), q("50G")]),
        });
        assert_eq!(consumption(Some(&ask("12G")), &bandwidth(values.clone()))["bandwidth"], g(25));
        assert_eq!(fits(None, None, Some(&ask("60G")), &bandwidth(values)), Ok(false));
    }
}
