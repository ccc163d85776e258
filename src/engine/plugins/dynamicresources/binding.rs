//! Device binding conditions (DRADeviceBindingConditions with DRAResourceClaimDeviceStatus):
//! an allocated claim whose devices carry binding conditions is ready once every condition
//! is true in the claim's device status; a true failure condition, or a wait longer than
//! `bindingTimeout` since the allocation, makes the claim unusable, and PostFilter then
//! deallocates it so other devices can be tried.

use k8s_openapi::api::resource::v1::{AllocatedDeviceStatus, DeviceRequestAllocationResult, ResourceClaim};

fn status<'c>(c: &'c ResourceClaim, r: &DeviceRequestAllocationResult) -> Option<&'c AllocatedDeviceStatus> {
    c.status.as_ref()?.devices.as_ref()?.iter().find(|d| {
        d.driver == r.driver && d.pool == r.pool && d.device == r.device && d.share_id == r.share_id
    })
}

fn condition_true<'s>(s: &'s AllocatedDeviceStatus, ty: &str) -> Option<&'s k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    s.conditions.iter().flatten().find(|c| c.type_ == ty && c.status == "True")
}

/// The binding conditions of the claim's devices that do not hold yet, as
/// `device: cond, cond`.
pub fn pending(c: &ResourceClaim) -> Vec<String> {
    let Some(a) = c.status.as_ref().and_then(|s| s.allocation.as_ref()) else {
        return Vec::new();
    };
    a.devices
        .iter()
        .flat_map(|d| d.results.iter().flatten())
        .filter_map(|r| {
            let conds = r.binding_conditions.as_deref().unwrap_or(&[]);
            let s = status(c, r);
            let open: Vec<&str> = conds
                .iter()
                .filter(|ty| s.is_none_or(|s| condition_true(s, ty).is_none()))
                .map(String::as_str)
                .collect();
            (!open.is_empty()).then(|| format!("{}: {}", r.device, open.join(", ")))
        })
        .collect()
}

/// Upstream `isClaimReadyForBinding`: Ok(true) when every binding condition holds (or
/// there are none), Ok(false) while waiting, Err when a failure condition holds.
pub fn ready(c: &ResourceClaim) -> Result<bool, String> {
    let Some(a) = c.status.as_ref().and_then(|s| s.allocation.as_ref()) else {
        return Ok(false);
    };
    let name = c.metadata.name.as_deref().unwrap_or("");
    for r in a.devices.iter().flat_map(|d| d.results.iter().flatten()) {
        let conds = r.binding_conditions.as_deref().unwrap_or(&[]);
        if conds.is_empty() {
            continue;
        }
        let Some(s) = status(c, r) else {
            return Ok(false);
        };
        for f in r.binding_failure_conditions.iter().flatten() {
            if let Some(failed) = condition_true(s, f) {
                return Err(format!(
                    "claim {name} binding failed: reason={}, message={:?}",
                    failed.reason, failed.message
                ));
            }
        }
        if conds.iter().any(|ty| condition_true(s, ty).is_none()) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Upstream `isClaimTimeout`: a device with binding conditions was allocated more than
/// `timeout` before `now`.
pub fn timed_out(c: &ResourceClaim, timeout: std::time::Duration, now: jiff::Timestamp) -> bool {
    let Some(a) = c.status.as_ref().and_then(|s| s.allocation.as_ref()) else {
        return false;
    };
    let Some(at) = &a.allocation_timestamp else {
        return false;
    };
    let has = a
        .devices
        .iter()
        .flat_map(|d| d.results.iter().flatten())
        .any(|r| r.binding_conditions.is_some());
    let at = at.0;
    let Ok(timeout) = jiff::SignedDuration::try_from(timeout) else {
        return false;
    };
    has && at.checked_add(timeout).is_ok_and(|end| end < now)
}
