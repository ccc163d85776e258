//! `isCSIMigrationOn`, as the CSI limits plugin decides it.

use k8s_openapi::api::storage::v1::CSINode;

use crate::api::csi_translation::InTreePlugin;
use crate::api::volume::migrated_plugins;

/// Whether volumes of an in-tree plugin count as CSI volumes on this node. There must be a
/// CSINode; AWS EBS, GCE PD, Azure Disk and Cinder are then always migrated; Portworx too,
/// but up to 1.35 (`portworx_needs_annotation`) only when the CSINode lists it in its
/// migrated-plugins annotation; the others never.
pub fn is_csi_migration_on(
    csi_node: Option<&CSINode>,
    plugin_name: &str,
    portworx_needs_annotation: bool,
) -> bool {
    let (Some(csi_node), Some(plugin)) = (csi_node, InTreePlugin::from_in_tree_name(plugin_name))
    else {
        return false;
    };
    plugin.migration_on()
        && (plugin != InTreePlugin::Portworx
            || !portworx_needs_annotation
            || migrated_plugins(csi_node).contains(plugin_name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn migration_rules() {
        let plain: CSINode =
            serde_json::from_value(json!({"metadata": {"name": "n"}, "spec": {"drivers": []}}))
                .unwrap();
        let px: CSINode = serde_json::from_value(json!({"metadata": {"name": "n", "annotations": {
            "storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/portworx-volume,kubernetes.io/vsphere-volume"}},
            "spec": {"drivers": []}})).unwrap();
        let on = |n: Option<&CSINode>, plugin: &str| is_csi_migration_on(n, plugin, true);
        assert!(!on(None, "kubernetes.io/gce-pd"));
        assert!(on(Some(&plain), "kubernetes.io/gce-pd"));
        assert!(!on(Some(&plain), "kubernetes.io/portworx-volume"));
        assert!(on(Some(&px), "kubernetes.io/portworx-volume"));
        assert!(!on(Some(&px), "kubernetes.io/vsphere-volume"));
        // From 1.36 Portworx is migrated like the others, annotation or not.
        assert!(is_csi_migration_on(Some(&plain), "kubernetes.io/portworx-volume", false));
        assert!(!is_csi_migration_on(None, "kubernetes.io/portworx-volume", false));
    }
}
