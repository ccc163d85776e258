//! PodGroup (`scheduling.x-k8s.io/v1alpha1`): the object that makes pods a gang. Pods join
//! a group with the `scheduling.x-k8s.io/pod-group` label; the group lives in the pod's
//! namespace. The cluster keeps PodGroups as JSON (`Listers::custom["PodGroup"]`), read
//! here into the fields Coscheduling uses.

use jiff::Timestamp;
use serde_json::Value;

use crate::api::pod_resources::ResourceList;
use crate::api::quantity::Quantity;
use crate::framework::PodInfo;
use crate::framework::listers::{Listers, ns_key};

pub const KIND: &str = "PodGroup";
/// The label naming a pod's group (upstream `v1alpha1.PodGroupLabel`).
pub const POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";

/// The parts of a PodGroup Coscheduling reads.
#[derive(Debug, Clone, PartialEq)]
pub struct PodGroup {
    /// `namespace/name`, as upstream's "full name" of a group.
    pub key: String,
    pub name: String,
    /// `None` when the object has none (an API server always sets it; manifests often
    /// leave it out). It then sorts as Go's zero time, before any real one.
    pub creation_timestamp: Option<Timestamp>,
    pub min_member: i32,
    /// `None` when not given: no resource check at all (an empty list still checks pods).
    pub min_resources: Option<ResourceList>,
    pub schedule_timeout_seconds: Option<i32>,
}

/// The group a pod names in its label; an empty value names none, as upstream.
pub fn group_label(pod: &PodInfo) -> Option<&str> {
    pod.labels()
        .get(POD_GROUP_LABEL)
        .map(String::as_str)
        .filter(|s| !s.is_empty())
}

/// `namespace/group` of a pod's group (upstream `GetPodGroupFullName`).
pub fn full_name(pod: &PodInfo) -> Option<String> {
    group_label(pod).map(|g| ns_key(&pod.namespace, g))
}

/// The creation time of a PodGroup object, `None` when it has none or it cannot be read.
pub fn creation_time(v: &Value) -> Option<Timestamp> {
    v.pointer("/metadata/creationTimestamp")?
        .as_str()?
        .parse()
        .ok()
}

fn int_field(spec: &Value, name: &str) -> Result<Option<i32>, String> {
    match spec.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .and_then(|i| i32::try_from(i).ok())
            .map(Some)
            .ok_or_else(|| format!("spec.{name}: want a 32-bit integer, got {v}")),
    }
}

fn resource_list(v: &Value) -> Result<ResourceList, String> {
    let Value::Object(m) = v else {
        return Err(format!(
            "spec.minResources: want a map of quantities, got {v}"
        ));
    };
    let mut out = ResourceList::new();
    for (name, q) in m {
        let text = match q {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => {
                return Err(format!(
                    "spec.minResources.{name}: want a quantity, got {other}"
                ));
            }
        };
        let q = Quantity::parse(&text)
            .map_err(|e| format!("spec.minResources.{name}: invalid quantity {text:?}: {e}"))?;
        out.insert(name.clone(), q);
    }
    Ok(out)
}

impl PodGroup {
    /// Reads a PodGroup object; errors name the field.
    pub fn from_json(key: &str, v: &Value) -> Result<PodGroup, String> {
        let name = key.rsplit_once('/').map_or(key, |(_, n)| n).to_string();
        let creation_timestamp = match v.pointer("/metadata/creationTimestamp") {
            None | Some(Value::Null) => None,
            Some(t) => Some(
                t.as_str()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| format!("metadata.creationTimestamp: not a time: {t}"))?,
            ),
        };
        let spec = v.get("spec").unwrap_or(&Value::Null);
        let min_resources = match spec.get("minResources") {
            None | Some(Value::Null) => None,
            Some(rl) => Some(resource_list(rl)?),
        };
        Ok(PodGroup {
            key: key.to_string(),
            name,
            creation_timestamp,
            min_member: int_field(spec, "minMember")?.unwrap_or(0),
            min_resources,
            schedule_timeout_seconds: int_field(spec, "scheduleTimeoutSeconds")?,
        })
    }

    /// The group `namespace/name` from the listers: `None` when there is no such object,
    /// an error (naming the object) when it cannot be read.
    pub fn lookup(listers: &Listers, key: &str) -> Option<Result<PodGroup, String>> {
        let v = listers.custom_object(KIND, key)?;
        Some(PodGroup::from_json(key, v).map_err(|e| format!("PodGroup {key}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_fields() {
        let v = json!({"metadata": {"name": "pg", "creationTimestamp": "2030-01-01T00:00:00Z"},
            "spec": {"minMember": 3, "scheduleTimeoutSeconds": 30,
                     "minResources": {"cpu": "1500m", "memory": 1024}}});
        let pg = PodGroup::from_json("ns/pg", &v).unwrap();
        assert_eq!(pg.name, "pg");
        assert_eq!(pg.min_member, 3);
        assert_eq!(pg.schedule_timeout_seconds, Some(30));
        let rl = pg.min_resources.unwrap();
        assert_eq!(rl["cpu"].milli_value(), 1500);
        assert_eq!(rl["memory"].value(), 1024);
        assert_eq!(
            pg.creation_timestamp,
            Some("2030-01-01T00:00:00Z".parse().unwrap())
        );
        let bare = PodGroup::from_json("ns/pg", &json!({"metadata": {"name": "pg"}})).unwrap();
        assert_eq!((bare.min_member, bare.min_resources), (0, None));
        assert_eq!(bare.creation_timestamp, None);
    }

    #[test]
    fn errors_name_the_field() {
        let bad = |spec| PodGroup::from_json("ns/pg", &json!({"spec": spec})).unwrap_err();
        assert_eq!(
            bad(json!({"minMember": "three"})),
            "spec.minMember: want a 32-bit integer, got \"three\""
        );
        assert!(
            bad(json!({"minResources": {"cpu": "lots"}}))
                .starts_with("spec.minResources.cpu: invalid quantity \"lots\"")
        );
        let mut l = Listers::default();
        l.custom.entry(KIND.into()).or_default().insert(
            "ns/pg".into(),
            std::sync::Arc::new(json!({"spec": {"minMember": -1.5}})),
        );
        assert_eq!(
            PodGroup::lookup(&l, "ns/pg").unwrap().unwrap_err(),
            "PodGroup ns/pg: spec.minMember: want a 32-bit integer, got -1.5"
        );
        assert!(PodGroup::lookup(&l, "ns/other").is_none());
    }
}
