//! The resource.k8s.io/v1 kinds (Dynamic Resource Allocation). The cluster keeps them as
//! JSON custom objects; the loader refuses malformed ones and the DynamicResources plugin
//! types them where it reads them. Both name the kinds from here.

pub const CLAIM: &str = "ResourceClaim";
pub const TEMPLATE: &str = "ResourceClaimTemplate";
pub const CLASS: &str = "DeviceClass";
pub const SLICE: &str = "ResourceSlice";
/// DRADeviceTaintRules: taints for devices chosen by driver, pool and name, kept apart from
/// the slices (resource.k8s.io/v1alpha3 in 1.35, v1beta2 from 1.36).
pub const TAINT_RULE: &str = "DeviceTaintRule";
/// The versions of DeviceTaintRule read (both have the same fields kubestep uses).
pub const TAINT_RULE_API_VERSIONS: &[&str] =
    &["resource.k8s.io/v1alpha3", "resource.k8s.io/v1beta2"];

/// A DeviceTaintRule, as far as the scheduler reads it.
#[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceTaintRule {
    #[serde(default)]
    pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    pub spec: DeviceTaintRuleSpec,
}

#[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceTaintRuleSpec {
    #[serde(default)]
    pub device_selector: Option<DeviceTaintSelector>,
    pub taint: k8s_openapi::api::resource::v1::DeviceTaint,
}

/// Which devices a rule taints: every one unless narrowed by driver, pool and device name.
#[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceTaintSelector {
    #[serde(default)]
    pub driver: Option<String>,
    #[serde(default)]
    pub pool: Option<String>,
    #[serde(default)]
    pub device: Option<String>,
}
