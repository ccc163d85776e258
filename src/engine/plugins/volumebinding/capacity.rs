//! Storage capacity: whether a node can take a claim to provision (CSI drivers that opt in
//! with `CSIDriver.spec.storageCapacity`, checked against CSIStorageCapacity objects), and
//! the StorageCapacityScoring score of a node's volumes. Both kinds are kept as JSON.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;

use super::binder::PodVolumes;
use crate::api::labels::Selector;
use crate::api::node_affinity::node_labels;
use crate::api::quantity::Quantity;
use crate::api::volume::{
    CSI_DRIVER_KIND, CSI_STORAGE_CAPACITY_KIND, RESOURCE_STORAGE, pvc_storage_request,
};
use crate::framework::listers::Listers;
use crate::plugins::helper::{ShapePoint, broken_linear};


/// The CSIStorageCapacity that admitted a provisioned claim: its `capacity`, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeCapacity {
    pub capacity: i64,
}

fn quantity(v: Option<&Value>) -> Option<i64> {
    Some(Quantity::parse(v?.as_str()?).ok()?.value())
}

/// `hasEnoughCapacity`: `Ok(None)` when the node lacks room for the claim, else the
/// capacity object that has room (`None` inside when no check applies: no size asked, or
/// a provisioner that is no CSI driver or does not opt in).
pub fn has_enough_capacity(
    listers: &Listers,
    provisioner: &str,
    claim: &PersistentVolumeClaim,
    class: &str,
    node: &Node,
) -> Option<Option<NodeCapacity>> {
    let Some(size) = pvc_storage_request(claim).map(|q| q.value()) else {
        return Some(None);
    };
    let driver = listers
        .custom
        .get(CSI_DRIVER_KIND)
        .and_then(|m| m.get(provisioner));
    let opted_in = driver
        .and_then(|d| d.pointer("/spec/storageCapacity"))
        .and_then(Value::as_bool)
        == Some(true);
    if !opted_in {
        return Some(None);
    }
    // Upstream lists them in no particular order and takes the first that fits; kubestep
    // goes by namespace/name.
    let capacities = listers.custom.get(CSI_STORAGE_CAPACITY_KIND);
    capacities
        .into_iter()
        .flat_map(BTreeMap::values)
        .find(|c| {
            c.get("storageClassName").and_then(Value::as_str) == Some(class)
                && volume_limit(c).is_some_and(|l| l >= size)
                && node_has_access(node, c)
        })
        .map(|c| {
            Some(NodeCapacity {
                capacity: quantity(c.get("capacity")).unwrap_or(0),
            })
        })
}

/// `maximumVolumeSize` when given (more precise), else `capacity`.
fn volume_limit(c: &Value) -> Option<i64> {
    quantity(c.get("maximumVolumeSize")).or_else(|| quantity(c.get("capacity")))
}

/// Only label selection of nodes is supported; no `nodeTopology` means no access.
fn node_has_access(node: &Node, c: &Value) -> bool {
    let Some(t) = c.get("nodeTopology").filter(|t| !t.is_null()) else {
        return false;
    };
    let Ok(ls) = serde_json::from_value::<LabelSelector>(t.clone()) else {
        return false;
    };
    Selector::from_label_selector(Some(&ls)).is_ok_and(|s| s.matches(node_labels(node)))
}

/// Requested and available bytes of one storage class on a node.
#[derive(Debug, Default, Clone, Copy)]
struct StorageResource {
    requested: i64,
    capacity: i64,
}

/// VolumeBinding's Score with StorageCapacityScoring: the shape's score of each storage
/// class's utilization, averaged over the classes. Static bindings count (the PV's
/// capacity against the claim); without them, provisioned claims against the capacity
/// object that admitted them.
pub fn score(pv: &PodVolumes, shape: &[ShapePoint]) -> i64 {
    let mut classes: BTreeMap<String, StorageResource> = BTreeMap::new();
    let request = |c: &PersistentVolumeClaim| pvc_storage_request(c).map_or(0, |q| q.value());
    if !pv.static_bindings.is_empty() {
        for b in &pv.static_bindings {
            let spec = b.pv.spec.as_ref();
            let class = spec
                .and_then(|s| s.storage_class_name.clone())
                .unwrap_or_default();
            let capacity = spec
                .and_then(|s| s.capacity.as_ref())
                .and_then(|c| c.get(RESOURCE_STORAGE))
                .map_or(0, |q| Quantity::parse(&q.0).unwrap_or_default().value());
            let r = classes.entry(class).or_default();
            r.requested += request(&b.pvc);
            r.capacity += capacity;
        }
    } else {
        for p in &pv.dynamic_provisions {
            let Some(nc) = p.node_capacity else { continue };
            let class = p
                .pvc
                .spec
                .as_ref()
                .and_then(|s| s.storage_class_name.clone())
                .unwrap_or_default();
            let r = classes.entry(class).or_default();
            // The class's capacity once (two claims of one class share it), requests summed.
            r.capacity = nc.capacity;
            r.requested += request(&p.pvc);
        }
    }
    if classes.is_empty() {
        return 0;
    }
    const MAX_UTILIZATION: i64 = 100;
    let total: i64 = classes
        .values()
        .map(|r| {
            if r.capacity == 0 || r.requested > r.capacity {
                broken_linear(shape, MAX_UTILIZATION)
            } else {
                broken_linear(shape, r.requested * MAX_UTILIZATION / r.capacity)
            }
        })
        .sum();
    (total as f64 / classes.len() as f64).round() as i64
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::binder::{BindingInfo, DynamicProvision};
    use super::*;
    use serde_json::json;

    fn pvc(class: &str, size: &str) -> Arc<PersistentVolumeClaim> {
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": "c", "namespace": "d"},
                "spec": {"storageClassName": class, "resources": {"requests": {"storage": size}}}}))
            .unwrap(),
        )
    }

    /// The default shape: 100 at no utilization down to 0 at full.
    fn shape() -> Vec<ShapePoint> {
        vec![
            ShapePoint {
                utilization: 0,
                score: 100,
            },
            ShapePoint {
                utilization: 100,
                score: 0,
            },
        ]
    }

    #[test]
    fn classes_are_averaged_and_a_full_or_unknown_capacity_scores_as_full() {
        let provision = |class: &str, size: &str, capacity: Option<i64>| DynamicProvision {
            pvc: pvc(class, size),
            node_capacity: capacity.map(|capacity| NodeCapacity { capacity }),
        };
        let gi = 1i64 << 30;
        let pv = PodVolumes {
            static_bindings: Vec::new(),
            dynamic_provisions: vec![
                // Two claims of one class share its capacity: 30 of 100 → 70.
                provision("fast", "10Gi", Some(100 * gi)),
                provision("fast", "20Gi", Some(100 * gi)),
                // More than there is → 0; a claim no capacity object admitted is left out.
                provision("slow", "50Gi", Some(10 * gi)),
                provision("other", "1Gi", None),
            ],
        };
        assert_eq!(score(&pv, &shape()), 35);
        assert_eq!(score(&PodVolumes::default(), &shape()), 0);
    }

    #[test]
    fn static_bindings_count_the_pv_against_the_claim() {
        let pv: Arc<k8s_openapi::api::core::v1::PersistentVolume> = Arc::new(
            serde_json::from_value(json!({"metadata": {"name": "p"},
                "spec": {"storageClassName": "manual", "capacity": {"storage": "3Gi"}}}))
            .unwrap(),
        );
        let pv = PodVolumes {
            static_bindings: vec![BindingInfo {
                pvc: pvc("manual", "1Gi"),
                pv,
            }],
            dynamic_provisions: Vec::new(),
        };
        // 1 of 3: utilization 33 → 67.
        assert_eq!(score(&pv, &shape()), 67);
    }

    #[test]
    fn capacity_is_checked_only_for_drivers_that_opt_in() {
        let node: Node = serde_json::from_value(
            json!({"metadata": {"name": "n1", "labels": {"zone": "a"}}}),
        )
        .unwrap();
        let mut l = Listers::default();
        let claim = pvc("local", "50Gi");
        let check = |l: &Listers| has_enough_capacity(l, "csi.x", &claim, "local", &node);
        // No CSIDriver: no check.
        assert_eq!(check(&l), Some(None));
        let mut put = |kind: &str, key: &str, v: Value| {
            l.custom
                .entry(kind.into())
                .or_default()
                .insert(key.into(), Arc::new(v));
        };
        put(
            CSI_DRIVER_KIND,
            "csi.x",
            json!({"spec": {"storageCapacity": true}}),
        );
        put(
            CSI_STORAGE_CAPACITY_KIND,
            "d/small",
            json!({"storageClassName": "local", "capacity": "1Ti", "maximumVolumeSize": "10Gi",
                "nodeTopology": {"matchLabels": {"zone": "a"}}}),
        );
        put(
            CSI_STORAGE_CAPACITY_KIND,
            "d/elsewhere",
            json!({"storageClassName": "local", "capacity": "1Ti",
                "nodeTopology": {"matchLabels": {"zone": "b"}}}),
        );
        put(
            CSI_STORAGE_CAPACITY_KIND,
            "d/nowhere",
            json!({"storageClassName": "local", "capacity": "1Ti"}),
        );
        // maximumVolumeSize wins over capacity; other zones and no topology give no access.
        assert_eq!(check(&l), None);
        l.custom.get_mut(CSI_STORAGE_CAPACITY_KIND).unwrap().insert(
            "d/room".into(),
            Arc::new(json!({"storageClassName": "local", "capacity": "60Gi",
                "nodeTopology": {"matchLabels": {"zone": "a"}}})),
        );
        assert_eq!(
            check(&l),
            Some(Some(NodeCapacity {
                capacity: 60 * (1 << 30)
            }))
        );
    }
}
