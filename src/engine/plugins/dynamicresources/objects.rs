//! The resource.k8s.io/v1 objects the plugin reads. The cluster keeps them as JSON (custom
//! kinds, checked at load by `cluster::object`); they are typed here.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceClass, DeviceRequest, ResourceClaim, ResourceClaimTemplate,
    ResourceSlice,
};

use crate::framework::listers::{Listers, ns_key};

pub use crate::api::dra::{CLAIM, CLASS, SLICE, TAINT_RULE, TEMPLATE};
use crate::api::dra::DeviceTaintRule;

fn get<T: serde::de::DeserializeOwned>(l: &Listers, kind: &str, key: &str) -> Option<T> {
    serde_json::from_value((**l.custom_object(kind, key)?).clone()).ok()
}

pub fn class(l: &Listers, name: &str) -> Option<DeviceClass> {
    get(l, CLASS, name)
}

pub fn all_classes(l: &Listers) -> BTreeMap<String, DeviceClass> {
    l.custom_objects(CLASS)
        .filter_map(|(k, v)| Some((k.clone(), serde_json::from_value((**v).clone()).ok()?)))
        .collect()
}

pub fn slices(l: &Listers) -> Vec<ResourceSlice> {
    l.custom_objects(SLICE)
        .filter_map(|(_, v)| serde_json::from_value((**v).clone()).ok())
        .collect()
}

/// The cluster's DeviceTaintRules, by name.
pub fn taint_rules(l: &Listers) -> Vec<DeviceTaintRule> {
    l.custom_objects(TAINT_RULE)
        .filter_map(|(_, v)| serde_json::from_value((**v).clone()).ok())
        .collect()
}

/// The slices with the rules' taints added to the devices they select, as upstream's
/// slice tracker patches them (`ListWithDeviceTaintRules`).
pub fn with_taint_rules(mut slices: Vec<ResourceSlice>, rules: &[DeviceTaintRule]) -> Vec<ResourceSlice> {
    for s in &mut slices {
        let (driver, pool) = (s.spec.driver.clone(), s.spec.pool.name.clone());
        for rule in rules {
            for d in s.spec.devices.iter_mut().flatten() {
                if selects(rule, &driver, &pool, &d.name) {
                    d.taints.get_or_insert_with(Vec::new).push(rule.spec.taint.clone());
                }
            }
        }
    }
    slices
}

/// Whether `rule` taints this device (its selector's driver, pool and device name).
pub fn selects(rule: &DeviceTaintRule, driver: &str, pool: &str, device: &str) -> bool {
    let Some(sel) = rule.spec.device_selector.as_ref() else {
        return true;
    };
    sel.driver.as_deref().is_none_or(|d| d == driver)
        && sel.pool.as_deref().is_none_or(|p| p == pool)
        && sel.device.as_deref().is_none_or(|n| n == device)
}

/// The namespace's claims marked as a pod's extended-resource claim, by `namespace/name`
/// (only those are decoded: a pod's lookup stays cheap in a cluster of many claims).
pub fn extended_resource_claims(l: &Listers, ns: &str) -> BTreeMap<String, Arc<ResourceClaim>> {
    let prefix = format!("{ns}/");
    l.custom_objects(CLAIM)
        .filter(|(k, v)| {
            k.starts_with(&prefix)
                && v["metadata"]["annotations"][super::extended::CLAIM_ANNOTATION] == "true"
        })
        .filter_map(|(k, v)| Some((k.clone(), Arc::new(serde_json::from_value((**v).clone()).ok()?))))
        .collect()
}

/// The cluster's ResourceClaim `namespace/name`.
pub fn claim(l: &Listers, key: &str) -> Option<ResourceClaim> {
    get(l, CLAIM, key)
}

/// Every claim in the cluster by `namespace/name`.
pub fn all_claims(l: &Listers) -> BTreeMap<String, ResourceClaim> {
    l.custom_objects(CLAIM)
        .filter_map(|(k, v)| Some((k.clone(), serde_json::from_value((**v).clone()).ok()?)))
        .collect()
}

/// One of the pod's claims, as the plugin sees it.
#[derive(Debug, Clone)]
pub struct PodClaim {
    /// `namespace/name` of the ResourceClaim.
    pub key: String,
    pub claim: Arc<ResourceClaim>,
    /// Made by kubestep from a ResourceClaimTemplate, standing in for the claim controller.
    pub from_template: Option<String>,
}

impl PodClaim {
    pub fn allocation(&self) -> Option<&AllocationResult> {
        self.claim.status.as_ref()?.allocation.as_ref()
    }

    /// The claim's device requests, in spec order.
    pub fn requests(&self) -> impl Iterator<Item = &DeviceRequest> {
        self.claim
            .spec
            .devices
            .iter()
            .flat_map(|d| d.requests.iter().flatten())
    }
}

/// The pod's claims in `spec.resourceClaims` order, or upstream's error for the first one
/// that does not exist or, made from a template, is not the pod's (`pod` names the pod in
/// that message: "pod" or "Pod", by version). `known` are claims as kubestep wrote them,
/// which stand for the cluster's copy (see `assume`).
pub fn pod_claims(
    l: &Listers,
    pod: &Pod,
    known: &BTreeMap<String, Arc<ResourceClaim>>,
    pod_word: &str,
) -> Result<Vec<PodClaim>, String> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let pod_name = pod.metadata.name.as_deref().unwrap_or("");
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.resource_claim_statuses.as_ref());
    let mut out = Vec::new();
    for pc in pod
        .spec
        .iter()
        .flat_map(|s| s.resource_claims.iter().flatten())
    {
        let mut check_owner = false;
        let (name, template) = match (&pc.resource_claim_name, &pc.resource_claim_template_name) {
            (Some(n), None) => (n.clone(), None),
            (None, Some(t)) => {
                let generated = statuses
                    .and_then(|st| st.iter().find(|s| s.name == pc.name))
                    .and_then(|s| s.resource_claim_name.clone());
                match generated {
                    Some(n) => {
                        check_owner = true;
                        (n, None)
                    }
                    // No claim generated yet: kubestep plays the claim controller, if the
                    // template exists; otherwise the pod waits as it would upstream.
                    None if l.custom_object(TEMPLATE, &ns_key(ns, t)).is_some() => {
                        (format!("{pod_name}-{}", pc.name), Some(t.clone()))
                    }
                    None => {
                        return Err(format!(
                            "pod \"{ns}/{pod_name}\": ResourceClaim not created yet"
                        ));
                    }
                }
            }
            _ => {
                return Err(format!(
                    "pod \"{ns}/{pod_name}\", spec.resourceClaim {:?}: none of the supported fields are set",
                    pc.name
                ));
            }
        };
        let key = ns_key(ns, &name);
        if let Some(c) = known.get(&key) {
            if c.metadata.deletion_timestamp.is_some() {
                return Err(format!("resourceclaim {name:?} is being deleted"));
            }
            out.push(PodClaim {
                key,
                claim: c.clone(),
                from_template: template,
            });
            continue;
        }
        let claim = match (&template, get::<ResourceClaim>(l, CLAIM, &key)) {
            (_, Some(c)) => c,
            (Some(t), None) => {
                let tpl: ResourceClaimTemplate =
                    get(l, TEMPLATE, &ns_key(ns, t)).ok_or_else(|| {
                        format!("pod \"{ns}/{pod_name}\": ResourceClaim not created yet")
                    })?;
                let mut c = ResourceClaim {
                    spec: tpl.spec.spec,
                    ..Default::default()
                };
                c.metadata.name = Some(name.clone());
                c.metadata.namespace = Some(ns.to_string());
                c.metadata.uid = Some(format!("kubestep-claim-{key}"));
                c
            }
            (None, None) => return Err(format!("could not find ResourceClaim {key:?}")),
        };
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(format!("resourceclaim {name:?} is being deleted"));
        }
        let controlled = claim
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.controller == Some(true) && Some(&o.uid) == pod.metadata.uid.as_ref());
        if check_owner && !controlled {
            return Err(format!(
                "ResourceClaim {key} was not created for {pod_word} {ns}/{pod_name} ({pod_word} is not owner)"
            ));
        }
        out.push(PodClaim {
            key,
            claim: Arc::new(claim),
            from_template: template,
        });
    }
    Ok(out)
}
