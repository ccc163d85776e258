//! The kinds kubestep watches on a live cluster: every kind the engine reads (see
//! `cluster::object`), with where the API serves them.

use kube::discovery::ApiResource;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    pub kind: &'static str,
    /// API group, "" for core.
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
}

const fn kind(
    kind: &'static str,
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    namespaced: bool,
) -> Kind {
    Kind {
        kind,
        group,
        version,
        plural,
        namespaced,
    }
}

/// Always watched. Services and the workload controllers feed PodTopologySpread's
/// system-default constraints, so they are watched too.
pub const KINDS: &[Kind] = &[
    kind("Node", "", "v1", "nodes", false),
    kind("Namespace", "", "v1", "namespaces", false),
    kind(
        "PriorityClass",
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        false,
    ),
    kind(
        "StorageClass",
        "storage.k8s.io",
        "v1",
        "storageclasses",
        false,
    ),
    kind("CSINode", "storage.k8s.io", "v1", "csinodes", false),
    kind("CSIDriver", "storage.k8s.io", "v1", "csidrivers", false),
    kind(
        "CSIStorageCapacity",
        "storage.k8s.io",
        "v1",
        "csistoragecapacities",
        true,
    ),
    kind("PersistentVolume", "", "v1", "persistentvolumes", false),
    kind(
        "PersistentVolumeClaim",
        "",
        "v1",
        "persistentvolumeclaims",
        true,
    ),
    kind(
        "PodDisruptionBudget",
        "policy",
        "v1",
        "poddisruptionbudgets",
        true,
    ),
    kind("Service", "", "v1", "services", true),
    kind("ReplicaSet", "apps", "v1", "replicasets", true),
    kind("StatefulSet", "apps", "v1", "statefulsets", true),
    kind(
        "ReplicationController",
        "",
        "v1",
        "replicationcontrollers",
        true,
    ),
    kind("Pod", "", "v1", "pods", true),
];

/// The group/version of the DRA kinds (Kubernetes 1.34 made it GA).
pub const DRA_GROUP_VERSION: &str = "resource.k8s.io/v1";

/// The DRA kinds DynamicResources reads, watched when the server serves their group
/// (a cluster without DRA serves none of them: one warning, not four).
pub const DRA: &[Kind] = &[
    kind(
        "DeviceClass",
        "resource.k8s.io",
        "v1",
        "deviceclasses",
        false,
    ),
    kind(
        "ResourceSlice",
        "resource.k8s.io",
        "v1",
        "resourceslices",
        false,
    ),
    kind(
        "ResourceClaim",
        "resource.k8s.io",
        "v1",
        "resourceclaims",
        true,
    ),
    kind(
        "ResourceClaimTemplate",
        "resource.k8s.io",
        "v1",
        "resourceclaimtemplates",
        true,
    ),
];

/// DeviceTaintRules (DRADeviceTaintRules), in the newest version the server serves:
/// v1beta2 from 1.36, v1alpha3 in 1.35 (and only where enabled on the server).
pub const TAINT_RULES: &[Kind] = &[
    kind(
        "DeviceTaintRule",
        "resource.k8s.io",
        "v1beta2",
        "devicetaintrules",
        false,
    ),
    kind(
        "DeviceTaintRule",
        "resource.k8s.io",
        "v1alpha3",
        "devicetaintrules",
        false,
    ),
];

/// Every kind kubestep may watch: the ones always watched, then the optional ones.
pub fn all_kinds() -> impl Iterator<Item = &'static Kind> {
    KINDS
        .iter()
        .chain(DRA)
        .chain(TAINT_RULES)
        .chain([&POD_GROUP])
}

/// The scheduler-plugins PodGroup, watched when its CRD is installed.
pub const POD_GROUP: Kind = kind(
    "PodGroup",
    "scheduling.x-k8s.io",
    "v1alpha1",
    "podgroups",
    true,
);

impl Kind {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// "core/v1", "storage.k8s.io/v1": how messages name the group and version.
    pub fn group_version(&self) -> String {
        let g = if self.group.is_empty() {
            "core"
        } else {
            self.group
        };
        format!("{g}/{}", self.version)
    }

    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.into(),
            version: self.version.into(),
            api_version: self.api_version(),
            kind: self.kind.into(),
            plural: self.plural.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_watched_kind_is_one_the_engine_reads() {
        for k in all_kinds() {
            let v = serde_json::json!({"apiVersion": k.api_version(), "kind": k.kind,
                "metadata": {"name": "x", "namespace": "ns"}, "spec": {"containers": [], "drivers": [], "taint": {"key": "k", "effect": "NoSchedule"}},
                "provisioner": "p", "value": 1});
            assert!(
                matches!(crate::cluster::object::from_value(v), Ok(Some(_))),
                "{}",
                k.kind
            );
            assert_eq!(
                crate::cluster::object::is_namespaced(k.kind),
                k.namespaced,
                "{}",
                k.kind
            );
        }
    }
}
