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

/// bindingTimeout's default (the plugin's args default it whenever the gates are on).
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Upstream `hasBindingConditions`: an allocated device of some claim has binding
/// conditions, so PreBind waits for them.
pub fn any_conditions(claims: &[super::objects::PodClaim]) -> bool {
    claims.iter().any(|c| {
        c.allocation().is_some_and(|a| {
            a.devices
                .iter()
                .flat_map(|d| d.results.iter().flatten())
                .any(|r| r.binding_conditions.as_ref().is_some_and(|b| !b.is_empty()))
        })
    })
}

/// One look of PreBind's wait.
pub struct Poll {
    /// Success (every condition holds), Wait (the message names what is open) or the
    /// error that ends the wait.
    pub status: crate::framework::Status,
    /// Per claim key, the conditions still open (`device: cond, cond`).
    pub open: Vec<(String, Vec<String>)>,
}

/// Upstream `isPodReadyForBinding`: every claim read again (`current`), in order; the first
/// failure condition, vanished claim or timed-out claim ends the wait with an error.
pub fn poll(
    claims: &mut [super::objects::PodClaim],
    current: impl Fn(&str) -> Option<ResourceClaim>,
    timeout: std::time::Duration,
    now: jiff::Timestamp,
) -> Poll {
    use crate::framework::{Code, Status};
    let mut open = Vec::new();
    for c in claims.iter_mut() {
        let Some(claim) = current(&c.key) else {
            let e = format!("could not find ResourceClaim {:?}", c.key);
            return Poll { status: Status::error(e), open };
        };
        c.claim = std::sync::Arc::new(claim);
        match ready(&c.claim) {
            Err(e) => return Poll { status: Status::error(e), open },
            Ok(true) => {}
            Ok(false) if timed_out(&c.claim, timeout, now) => {
                let name = c.claim.metadata.name.as_deref().unwrap_or("");
                let e = format!("claim {name} binding timeout");
                return Poll { status: Status::error(e), open };
            }
            Ok(false) => {
                let mut p = pending(&c.claim);
                if p.is_empty() {
                    // Not allocated (yet, as the cluster shows it), or no device status.
                    p.push("allocation or device status not yet shown by the cluster".into());
                }
                open.push((c.key.clone(), p));
            }
        }
    }
    if open.is_empty() {
        return Poll { status: Status::success(), open };
    }
    let what: Vec<String> = open
        .iter()
        .map(|(k, p)| format!("claim {k}: {}", p.join("; ")))
        .collect();
    let msg = format!("binding conditions not met yet: {}", what.join("; "));
    Poll { status: Status::new(Code::Wait, msg), open }
}
