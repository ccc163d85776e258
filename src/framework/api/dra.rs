//! The resource.k8s.io/v1 kinds (Dynamic Resource Allocation). The cluster keeps them as
//! JSON custom objects; the loader refuses malformed ones and the DynamicResources plugin
//! types them where it reads them. Both name the kinds from here.

pub const CLAIM: &str = "ResourceClaim";
pub const TEMPLATE: &str = "ResourceClaimTemplate";
pub const CLASS: &str = "DeviceClass";
pub const SLICE: &str = "ResourceSlice";
