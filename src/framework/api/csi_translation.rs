//! In-tree volume → CSI translation, as `k8s.io/csi-translation-lib` does it for what the
//! scheduler needs: which in-tree plugin a volume belongs to, its CSI driver, the CSI
//! volume handle a translated volume gets, and (for PVs) the node affinity after the zone
//! keys are rewritten to the driver's topology key.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{
    CSIPersistentVolumeSource, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    PersistentVolume, Volume, VolumeNodeAffinity,
};

use super::volume::{
    LABEL_FAILURE_DOMAIN_BETA_REGION, LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_MULTI_ZONE_DELIMITER,
    LABEL_TOPOLOGY_REGION, LABEL_TOPOLOGY_ZONE, pv_labels,
};

/// The in-tree plugins with migration logic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum InTreePlugin {
    GcePd,
    AwsEbs,
    Cinder,
    AzureDisk,
    AzureFile,
    VSphere,
    Portworx,
}

pub const GCE_PD_TOPOLOGY_KEY: &str = "topology.gke.io/zone";
pub const AWS_EBS_TOPOLOGY_KEY: &str = "topology.ebs.csi.aws.com/zone";
pub const CINDER_TOPOLOGY_KEY: &str = "topology.cinder.csi.openstack.org/zone";
const UNSPECIFIED: &str = "UNSPECIFIED";

impl InTreePlugin {
    pub const ALL: [InTreePlugin; 7] = [
        InTreePlugin::GcePd,
        InTreePlugin::AwsEbs,
        InTreePlugin::Cinder,
        InTreePlugin::AzureDisk,
        InTreePlugin::AzureFile,
        InTreePlugin::VSphere,
        InTreePlugin::Portworx,
    ];

    pub fn in_tree_name(self) -> &'static str {
        match self {
            InTreePlugin::GcePd => "kubernetes.io/gce-pd",
            InTreePlugin::AwsEbs => "kubernetes.io/aws-ebs",
            InTreePlugin::Cinder => "kubernetes.io/cinder",
            InTreePlugin::AzureDisk => "kubernetes.io/azure-disk",
            InTreePlugin::AzureFile => "kubernetes.io/azure-file",
            InTreePlugin::VSphere => "kubernetes.io/vsphere-volume",
            InTreePlugin::Portworx => "kubernetes.io/portworx-volume",
        }
    }

    pub fn csi_driver(self) -> &'static str {
        match self {
            InTreePlugin::GcePd => "pd.csi.storage.gke.io",
            InTreePlugin::AwsEbs => "ebs.csi.aws.com",
            InTreePlugin::Cinder => "cinder.csi.openstack.org",
            InTreePlugin::AzureDisk => "disk.csi.azure.com",
            InTreePlugin::AzureFile => "file.csi.azure.com",
            InTreePlugin::VSphere => "csi.vsphere.vmware.com",
            InTreePlugin::Portworx => "pxd.portworx.com",
        }
    }

    /// `IsMigratableIntreePluginByName` + `GetCSINameFromInTreeName`.
    pub fn from_in_tree_name(name: &str) -> Option<InTreePlugin> {
        InTreePlugin::ALL
            .into_iter()
            .find(|p| p.in_tree_name() == name)
    }

    /// `CanSupport` over a PV (`IsPVMigratable`, `GetInTreePluginNameFromSpec`).
    pub fn of_pv(pv: &PersistentVolume) -> Option<InTreePlugin> {
        let s = pv.spec.as_ref()?;
        InTreePlugin::first_of([
            s.gce_persistent_disk.is_some(),
            s.aws_elastic_block_store.is_some(),
            s.cinder.is_some(),
            s.azure_disk.is_some(),
            s.azure_file.is_some(),
            s.vsphere_volume.is_some(),
            s.portworx_volume.is_some(),
        ])
    }

    /// `CanSupportInline` over a pod volume (`IsInlineMigratable`).
    pub fn of_inline(v: &Volume) -> Option<InTreePlugin> {
        InTreePlugin::first_of([
            v.gce_persistent_disk.is_some(),
            v.aws_elastic_block_store.is_some(),
            v.cinder.is_some(),
            v.azure_disk.is_some(),
            v.azure_file.is_some(),
            v.vsphere_volume.is_some(),
            v.portworx_volume.is_some(),
        ])
    }

    /// The first plugin (in `ALL` order) whose source is set.
    fn first_of(set: [bool; 7]) -> Option<InTreePlugin> {
        InTreePlugin::ALL
            .into_iter()
            .zip(set)
            .find_map(|(p, set)| set.then_some(p))
    }

    /// `isCSIMigrationOnForPlugin`: whether the scheduler treats this plugin's volumes as
    /// migrated to CSI at all (per node, the CSINode still has a say). AWS EBS, GCE PD,
    /// Azure Disk and Cinder always; Portworx with its gate; Azure File and vSphere not.
    pub fn migration_on(self) -> bool {
        match self {
            InTreePlugin::AwsEbs
            | InTreePlugin::GcePd
            | InTreePlugin::AzureDisk
            | InTreePlugin::Cinder => true,
            InTreePlugin::Portworx => CSI_MIGRATION_PORTWORX,
            InTreePlugin::AzureFile | InTreePlugin::VSphere => false,
        }
    }
}

/// The `CSIMigrationPortworx` gate: GA and locked on in 1.35.
pub const CSI_MIGRATION_PORTWORX: bool = true;

/// `KubernetesVolumeIDToEBSVolumeID`: `aws://<zone>/vol-...` or a bare volume ID.
pub fn ebs_volume_id(kubernetes_id: &str) -> Result<String, String> {
    let Some(rest) = kubernetes_id.strip_prefix("aws://") else {
        return Ok(kubernetes_id.to_string());
    };
    // The URL path: everything after the host.
    let path = rest.find('/').map(|i| &rest[i..]).unwrap_or("");
    let id = path.trim_matches('/');
    if !id.starts_with("vol-") || id.contains('/') {
        return Err(format!("Invalid format for AWS volume ({kubernetes_id})"));
    }
    Ok(id.to_string())
}

fn azure_kind_ok(kind: Option<&str>) -> Result<(), String> {
    match kind {
        Some(k) if !k.eq_ignore_ascii_case("Managed") => {
            Err(format!("kind({k}) is not supported in csi migration"))
        }
        _ => Ok(()),
    }
}

/// `gceGetRegionFromZones`: every zone `{locale}-{region}-{zone}` must be in one region.
fn gce_region_from_zones(zones: &[&str]) -> Result<String, String> {
    if zones.is_empty() {
        return Err("no zones specified".into());
    }
    let mut regions = BTreeSet::new();
    for z in zones {
        let parts: Vec<&str> = z.split('-').collect();
        if parts.len() != 3 {
            return Err(format!(
                "zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {z}"
            ));
        }
        regions.insert(parts[..2].join("-"));
    }
    if regions.len() != 1 {
        return Err(format!(
            "multiple or no regions gotten from zones, got: {regions:?}"
        ));
    }
    Ok(regions.into_iter().next().unwrap_or_default())
}

fn csi(driver: &str, handle: String) -> CSIPersistentVolumeSource {
    CSIPersistentVolumeSource {
        driver: driver.to_string(),
        volume_handle: handle,
        ..Default::default()
    }
}

/// `TranslateInTreeInlineVolumeToCSI`, reduced to the CSI source (driver and handle).
pub fn translate_inline(
    v: &Volume,
    pod_namespace: &str,
) -> Result<CSIPersistentVolumeSource, String> {
    let Some(plugin) = InTreePlugin::of_inline(v) else {
        return Err(format!(
            "could not find in-tree plugin translation logic for {:?}",
            v.name
        ));
    };
    let d = plugin.csi_driver();
    Ok(match plugin {
        InTreePlugin::GcePd => {
            let pd = &v
                .gce_persistent_disk
                .as_ref()
                .map(|s| s.pd_name.as_str())
                .unwrap_or("");
            csi(
                d,
                format!("projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{pd}"),
            )
        }
        InTreePlugin::AwsEbs => {
            let id = v
                .aws_elastic_block_store
                .as_ref()
                .map(|s| s.volume_id.as_str())
                .unwrap_or("");
            let h = ebs_volume_id(id)
                .map_err(|e| format!("failed to translate Kubernetes ID to EBS Volume ID {e}"))?;
            csi(d, h)
        }
        InTreePlugin::Cinder => csi(
            d,
            v.cinder
                .as_ref()
                .map(|s| s.volume_id.clone())
                .unwrap_or_default(),
        ),
        InTreePlugin::AzureDisk => {
            let s = v.azure_disk.as_ref();
            azure_kind_ok(s.and_then(|s| s.kind.as_deref()))?;
            csi(d, s.map(|s| s.disk_uri.clone()).unwrap_or_default())
        }
        InTreePlugin::AzureFile => {
            let s = v.azure_file.as_ref();
            let secret = s.map(|s| s.secret_name.as_str()).unwrap_or("");
            let share = s.map(|s| s.share_name.as_str()).unwrap_or("");
            let ns = if pod_namespace.is_empty() {
                "default"
            } else {
                pod_namespace
            };
            let account = azure_storage_account(secret);
            csi(d, format!("#{account}#{share}#{}#{ns}", v.name))
        }
        InTreePlugin::VSphere => csi(
            d,
            v.vsphere_volume
                .as_ref()
                .map(|s| s.volume_path.clone())
                .unwrap_or_default(),
        ),
        InTreePlugin::Portworx => csi(
            d,
            v.portworx_volume
                .as_ref()
                .map(|s| s.volume_id.clone())
                .unwrap_or_default(),
        ),
    })
}

/// `getStorageAccountName`: `azure-storage-account-<name>-secret`, else the secret name.
fn azure_storage_account(secret: &str) -> &str {
    secret
        .strip_prefix("azure-storage-account-")
        .and_then(|s| s.strip_suffix("-secret"))
        .filter(|s| !s.is_empty())
        .unwrap_or(secret)
}

/// `TranslateInTreePVToCSI`: a copy of the PV with a CSI source and, for the zonal block
/// storage drivers (GCE PD, AWS EBS, Cinder), the zone topology rewritten to the driver's
/// key. Azure File and vSphere (never translated by the scheduler in 1.35: their CSI
/// migration is not "on" for its purposes) get the CSI source only.
pub fn translate_pv(pv: &PersistentVolume) -> Result<PersistentVolume, String> {
    let Some(plugin) = InTreePlugin::of_pv(pv) else {
        return Err(format!(
            "could not find in-tree plugin translation logic for {:?}",
            pv.metadata.name.as_deref().unwrap_or("")
        ));
    };
    let mut out = pv.clone();
    let d = plugin.csi_driver();
    let spec = out.spec.get_or_insert_with(Default::default);
    let source = match plugin {
        InTreePlugin::GcePd => {
            let pd = spec
                .gce_persistent_disk
                .take()
                .map(|s| s.pd_name)
                .unwrap_or_default();
            let labels = pv_labels(pv);
            let zones_label = labels
                .get(LABEL_FAILURE_DOMAIN_BETA_ZONE)
                .filter(|s| !s.is_empty())
                .or_else(|| labels.get(LABEL_TOPOLOGY_ZONE))
                .map(String::as_str)
                .unwrap_or("");
            let zones: Vec<&str> = zones_label.split(LABEL_MULTI_ZONE_DELIMITER).collect();
            let handle = if zones.len() == 1 && !zones[0].is_empty() {
                format!("projects/{UNSPECIFIED}/zones/{}/disks/{pd}", zones[0])
            } else if zones.len() > 1 {
                let region = gce_region_from_zones(&zones)
                    .map_err(|e| format!("failed to get region from zones: {e}"))?;
                format!("projects/{UNSPECIFIED}/regions/{region}/disks/{pd}")
            } else {
                format!("projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{pd}")
            };
            spec.access_modes = backward_compatible_access_modes(spec.access_modes.take());
            csi(d, handle)
        }
        InTreePlugin::AwsEbs => {
            let id = spec
                .aws_elastic_block_store
                .take()
                .map(|s| s.volume_id)
                .unwrap_or_default();
            let h = ebs_volume_id(&id)
                .map_err(|e| format!("failed to translate Kubernetes ID to EBS Volume ID {e}"))?;
            csi(d, h)
        }
        InTreePlugin::Cinder => csi(
            d,
            spec.cinder.take().map(|s| s.volume_id).unwrap_or_default(),
        ),
        InTreePlugin::AzureDisk => {
            let s = spec.azure_disk.take();
            azure_kind_ok(s.as_ref().and_then(|s| s.kind.as_deref()))?;
            csi(d, s.map(|s| s.disk_uri).unwrap_or_default())
        }
        InTreePlugin::AzureFile => {
            let s = spec.azure_file.take().unwrap_or_default();
            let ns = s
                .secret_namespace
                .clone()
                .or_else(|| spec.claim_ref.as_ref().and_then(|r| r.namespace.clone()))
                .unwrap_or_default();
            if ns.is_empty() {
                return Err(
                    "could not find a secret namespace in PersistentVolumeSource or ClaimRef"
                        .into(),
                );
            }
            let rg = pv
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("kubernetes.io/azure-file-resource-group"))
                .cloned()
                .unwrap_or_default();
            let account = azure_storage_account(&s.secret_name);
            let name = pv.metadata.name.as_deref().unwrap_or("");
            csi(d, format!("{rg}#{account}#{}#{name}#{ns}", s.share_name))
        }
        InTreePlugin::VSphere => csi(
            d,
            spec.vsphere_volume
                .take()
                .map(|s| s.volume_path)
                .unwrap_or_default(),
        ),
        InTreePlugin::Portworx => csi(
            d,
            spec.portworx_volume
                .take()
                .map(|s| s.volume_id)
                .unwrap_or_default(),
        ),
    };
    spec.csi = Some(source);
    let key = match plugin {
        InTreePlugin::GcePd => Some(GCE_PD_TOPOLOGY_KEY),
        InTreePlugin::AwsEbs => Some(AWS_EBS_TOPOLOGY_KEY),
        InTreePlugin::Cinder => Some(CINDER_TOPOLOGY_KEY),
        _ => None,
    };
    if let Some(key) = key {
        translate_topology_to_csi(&mut out, key);
    }
    Ok(out)
}

/// `backwardCompatibleAccessModes` (GCE PD): RWX counts as RWO; the result is one mode.
fn backward_compatible_access_modes(ams: Option<Vec<String>>) -> Option<Vec<String>> {
    let ams = ams?;
    let rwo = ams
        .iter()
        .any(|m| m == "ReadWriteOnce" || m == "ReadWriteMany");
    let rox = ams.iter().any(|m| m == "ReadOnlyMany");
    let mode = if rox && !rwo {
        "ReadOnlyMany"
    } else {
        "ReadWriteOnce"
    };
    Some(vec![mode.to_string()])
}

fn terms_mut(pv: &mut PersistentVolume) -> Option<&mut Vec<NodeSelectorTerm>> {
    pv.spec
        .as_mut()?
        .node_affinity
        .as_mut()?
        .required
        .as_mut()
        .map(|r| &mut r.node_selector_terms)
}

fn terms(pv: &PersistentVolume) -> &[NodeSelectorTerm] {
    pv.spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
        .map(|r| r.node_selector_terms.as_slice())
        .unwrap_or(&[])
}

fn topology_key_exists(pv: &PersistentVolume, key: &str) -> bool {
    terms(pv)
        .iter()
        .flat_map(|t| t.match_expressions.iter().flatten())
        .any(|r| r.key == key)
}

/// `getTopologyValues`: the values of `key` in every term, sorted and deduplicated.
fn topology_values(pv: &PersistentVolume, key: &str) -> Vec<String> {
    let set: BTreeSet<String> = terms(pv)
        .iter()
        .flat_map(|t| t.match_expressions.iter().flatten())
        .filter(|r| r.key == key)
        .flat_map(|r| r.values.iter().flatten().cloned())
        .collect();
    set.into_iter().collect()
}

fn replace_topology(pv: &mut PersistentVolume, old: &str, new: &str) {
    for t in terms_mut(pv).into_iter().flatten() {
        for r in t.match_expressions.iter_mut().flatten() {
            if r.key == old {
                r.key = new.to_string();
            }
        }
    }
}

/// `addTopology`: `key In zones` appended to every term (one term is created if none).
fn add_topology(pv: &mut PersistentVolume, key: &str, zones: &[&str]) {
    let zones: BTreeSet<String> = zones
        .iter()
        .map(|z| z.trim())
        .filter(|z| !z.is_empty())
        .map(str::to_string)
        .collect();
    if zones.is_empty() {
        return;
    }
    let spec = pv.spec.get_or_insert_with(Default::default);
    let na = spec
        .node_affinity
        .get_or_insert_with(VolumeNodeAffinity::default);
    let req = na.required.get_or_insert_with(NodeSelector::default);
    if req.node_selector_terms.is_empty() {
        req.node_selector_terms.push(NodeSelectorTerm::default());
    }
    for t in &mut req.node_selector_terms {
        t.match_expressions
            .get_or_insert_with(Vec::new)
            .push(NodeSelectorRequirement {
                key: key.to_string(),
                operator: "In".into(),
                values: Some(zones.iter().cloned().collect()),
            });
    }
}

/// `translateTopologyFromInTreeToCSI`.
fn translate_topology_to_csi(pv: &mut PersistentVolume, csi_key: &str) {
    let labels = pv_labels(pv);
    let (zone_label, region_label) = if topology_key_exists(pv, LABEL_TOPOLOGY_ZONE) {
        (LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION)
    } else if topology_key_exists(pv, LABEL_FAILURE_DOMAIN_BETA_ZONE) {
        (
            LABEL_FAILURE_DOMAIN_BETA_ZONE,
            LABEL_FAILURE_DOMAIN_BETA_REGION,
        )
    } else if labels.contains_key(LABEL_TOPOLOGY_ZONE) {
        (LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION)
    } else if labels.contains_key(LABEL_FAILURE_DOMAIN_BETA_ZONE) {
        (
            LABEL_FAILURE_DOMAIN_BETA_ZONE,
            LABEL_FAILURE_DOMAIN_BETA_REGION,
        )
    } else {
        (LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION)
    };
    if !topology_values(pv, zone_label).is_empty() {
        replace_topology(pv, zone_label, csi_key);
    } else if let Some(label) = labels.get(zone_label).cloned() {
        let zones: Vec<&str> = label.split(LABEL_MULTI_ZONE_DELIMITER).collect();
        add_topology(pv, csi_key, &zones);
    }
    if region_label == LABEL_FAILURE_DOMAIN_BETA_REGION
        && !topology_values(pv, region_label).is_empty()
    {
        replace_topology(pv, region_label, LABEL_TOPOLOGY_REGION);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::volume::{check_node_affinity, labels_of};
    use serde_json::json;

    fn pv(v: serde_json::Value) -> PersistentVolume {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn gce_pd_pv_gets_handle_and_gke_zone_key() {
        let p = pv(
            json!({"metadata": {"name": "p", "labels": {"topology.kubernetes.io/zone": "us-a1-b"}},
            "spec": {"gcePersistentDisk": {"pdName": "disk1"}, "accessModes": ["ReadWriteMany"],
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-a1-b"]}]}]}}}}),
        );
        let t = translate_pv(&p).unwrap();
        let c = t.spec.as_ref().unwrap().csi.as_ref().unwrap();
        assert_eq!(c.driver, "pd.csi.storage.gke.io");
        assert_eq!(
            c.volume_handle,
            "projects/UNSPECIFIED/zones/us-a1-b/disks/disk1"
        );
        assert_eq!(
            t.spec.as_ref().unwrap().access_modes,
            Some(vec!["ReadWriteOnce".into()])
        );
        assert!(check_node_affinity(
            &t,
            &labels_of(&[(GCE_PD_TOPOLOGY_KEY, "us-a1-b")])
        ));
        assert!(!check_node_affinity(
            &t,
            &labels_of(&[(LABEL_TOPOLOGY_ZONE, "us-a1-b")])
        ));
    }

    #[test]
    fn ebs_from_labels_adds_topology() {
        let p = pv(
            json!({"metadata": {"name": "p", "labels": {"failure-domain.beta.kubernetes.io/zone": "z1__z2"}},
            "spec": {"awsElasticBlockStore": {"volumeID": "aws://z1/vol-123"}}}),
        );
        let t = translate_pv(&p).unwrap();
        assert_eq!(
            t.spec.as_ref().unwrap().csi.as_ref().unwrap().volume_handle,
            "vol-123"
        );
        assert!(check_node_affinity(
            &t,
            &labels_of(&[(AWS_EBS_TOPOLOGY_KEY, "z2")])
        ));
        assert!(!check_node_affinity(
            &t,
            &labels_of(&[(AWS_EBS_TOPOLOGY_KEY, "z3")])
        ));
        assert!(ebs_volume_id("aws://z1/bogus").is_err());
        assert_eq!(ebs_volume_id("vol-9").unwrap(), "vol-9");
    }

    #[test]
    fn inline_handles() {
        let v: Volume =
            serde_json::from_value(json!({"name": "v", "gcePersistentDisk": {"pdName": "d"}}))
                .unwrap();
        assert_eq!(
            translate_inline(&v, "ns").unwrap().volume_handle,
            "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d"
        );
        let v: Volume = serde_json::from_value(
            json!({"name": "v", "azureDisk": {"diskName": "d", "diskURI": "u", "kind": "Shared"}}),
        )
        .unwrap();
        assert_eq!(
            translate_inline(&v, "ns").unwrap_err(),
            "kind(Shared) is not supported in csi migration"
        );
        assert_eq!(
            InTreePlugin::from_in_tree_name("kubernetes.io/cinder").map(InTreePlugin::csi_driver),
            Some("cinder.csi.openstack.org")
        );
    }
}
