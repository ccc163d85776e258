//! The Kubernetes kinds kubestep uses, parsed into k8s-openapi types with clear errors.

use std::fmt;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use std::sync::Arc;

use crate::api::dra;
use crate::api::quantity::Quantity;
use crate::framework::PodInfo;

/// API group/version of the scheduler-plugins PodGroup (gang scheduling).
pub const POD_GROUP_API_VERSION: &str = "scheduling.x-k8s.io/v1alpha1";
/// API group/version of dynamic resource allocation (kept as custom JSON, read by the
/// DynamicResources plugin).
pub const RESOURCE_API_VERSION: &str = "resource.k8s.io/v1";

/// The large kinds are boxed: a recording holds one `Object` per event, and an enum is as
/// large as its largest variant.
#[derive(Debug, Clone)]
pub enum Object {
    Node(Box<Node>),
    Pod(Box<Pod>),
    /// A bound pod as the cluster keeps it: with what the scheduler derives from it, its
    /// containers packed (see `framework::pod_pack`). Recordings pack while they parse.
    PackedPod(Arc<PodInfo>),
    Namespace(Box<Namespace>),
    PersistentVolume(Box<PersistentVolume>),
    PersistentVolumeClaim(Box<PersistentVolumeClaim>),
    StorageClass(Box<StorageClass>),
    CSINode(Box<CSINode>),
    PodDisruptionBudget(Box<PodDisruptionBudget>),
    PriorityClass(Box<PriorityClass>),
    Service(Box<Service>),
    ReplicaSet(Box<ReplicaSet>),
    StatefulSet(Box<StatefulSet>),
    ReplicationController(Box<ReplicationController>),
    /// Out-of-tree kinds kept as JSON (PodGroup).
    Custom {
        kind: String,
        meta: Box<ObjectMeta>,
        value: Value,
    },
}

/// An object that could not be read: which one, which field, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectError {
    pub kind: String,
    pub name: String,
    pub field: String,
    pub message: String,
}

impl fmt::Display for ObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let obj = if self.kind.is_empty() {
            "document".to_string()
        } else {
            format!("{} {}", self.kind, self.name)
        };
        if self.field.is_empty() {
            write!(f, "{obj}: {}", self.message)
        } else {
            write!(f, "{obj}: {}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ObjectError {}

/// Kinds kubestep reads, with the apiVersions accepted for each.
const KINDS: &[(&str, &[&str])] = &[
    ("Node", &["v1"]),
    ("Pod", &["v1"]),
    ("Namespace", &["v1"]),
    ("PersistentVolume", &["v1"]),
    ("PersistentVolumeClaim", &["v1"]),
    ("StorageClass", &["storage.k8s.io/v1"]),
    ("CSINode", &["storage.k8s.io/v1"]),
    ("CSIDriver", &["storage.k8s.io/v1"]),
    ("CSIStorageCapacity", &["storage.k8s.io/v1"]),
    ("PodDisruptionBudget", &["policy/v1"]),
    ("PriorityClass", &["scheduling.k8s.io/v1"]),
    ("Service", &["v1"]),
    ("ReplicaSet", &["apps/v1"]),
    ("StatefulSet", &["apps/v1"]),
    ("ReplicationController", &["v1"]),
    ("PodGroup", &[POD_GROUP_API_VERSION]),
    ("ResourceClaim", &[RESOURCE_API_VERSION]),
    ("ResourceClaimTemplate", &[RESOURCE_API_VERSION]),
    ("DeviceClass", &[RESOURCE_API_VERSION]),
    ("ResourceSlice", &[RESOURCE_API_VERSION]),
    (dra::TAINT_RULE, dra::TAINT_RULE_API_VERSIONS),
];

pub fn is_namespaced(kind: &str) -> bool {
    !matches!(
        kind,
        "Node"
            | "Namespace"
            | "PersistentVolume"
            | "StorageClass"
            | "CSINode"
            | "CSIDriver"
            | "PriorityClass"
            | "DeviceClass"
            | "ResourceSlice"
            | "DeviceTaintRule"
    )
}

/// Where the value of a top-level `key` of a JSON object's text starts (just past the
/// key's closing quote), found without parsing: the scan stops at the key. `None` when
/// the object has no such key.
pub fn find_top_key(text: &str, key: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 0u32;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                if depth == 1 && text.get(start..j.min(b.len())) == Some(key) {
                    return Some(j + 1);
                }
                i = j + 1;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            _ => {}
        }
        i += 1;
    }
    None
}

/// The string value of a top-level `key` of a JSON object, read without parsing it: the
/// scan stops at the key (near the start in the API server's and kubectl's layouts, which
/// put apiVersion and kind first). `None` when absent, escaped, or not a string.
pub fn sniff_top_string<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let at = find_top_key(text, key)?;
    let rest = text.get(at..)?.trim_start().strip_prefix(':')?;
    let rest = rest.trim_start().strip_prefix('"')?;
    let (value, _) = rest.split_once('"')?;
    (!value.contains('\\')).then_some(value)
}

/// The top-level `kind` of a JSON object's text, read without parsing it.
pub fn sniff_kind(text: &str) -> Option<&str> {
    sniff_top_string(text, "kind")
}

#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(borrow, default)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "apiVersion", borrow, default)]
    api_version: Option<std::borrow::Cow<'a, str>>,
}

/// `apiVersion` and `kind` read off the text without a parse of the whole object;
/// `None` for anything unusual, which the full parse handles.
fn sniff_head(text: &str) -> Option<Head<'_>> {
    Some(Head {
        kind: Some(sniff_kind(text)?.into()),
        api_version: Some(sniff_top_string(text, "apiVersion")?.into()),
    })
}

/// Parses one object from JSON text, as an API server serves it. Fast path for
/// recordings: typed parsing straight from the text, falling back to `from_value` (which
/// accepts numeric quantities and names the failing field) when that fails.
pub fn from_json_str(text: &str) -> Result<Option<Object>, ObjectError> {
    let head = match sniff_head(text) {
        Some(h) => h,
        None => serde_json::from_str(text).map_err(|e| ObjectError {
            kind: String::new(),
            name: String::new(),
            field: String::new(),
            message: e.to_string(),
        })?,
    };
    let kind = head.kind.as_deref().unwrap_or("");
    let Some((_, versions)) = KINDS.iter().find(|(k, _)| *k == kind) else {
        if kind.is_empty() {
            return from_value(serde_json::from_str(text).unwrap_or_default());
        }
        return Ok(None);
    };
    if !versions.contains(&head.api_version.as_deref().unwrap_or("")) {
        return from_value(serde_json::from_str(text).unwrap_or_default());
    }
    fn parse<T: serde::de::DeserializeOwned>(
        text: &str,
        wrap: fn(Box<T>) -> Object,
    ) -> Option<Object> {
        serde_json::from_str(text).ok().map(|v| wrap(Box::new(v)))
    }
    let typed = match kind {
        "Node" => parse(text, Object::Node),
        "Pod" => parse(text, Object::Pod),
        "Namespace" => parse(text, Object::Namespace),
        "PersistentVolume" => parse(text, Object::PersistentVolume),
        "PersistentVolumeClaim" => parse(text, Object::PersistentVolumeClaim),
        _ => None,
    };
    match typed {
        Some(obj) if obj.meta().name.as_deref().is_some_and(|n| !n.is_empty()) => {
            let name = obj.key();
            obj.validate().map_err(|(field, message)| ObjectError {
                kind: kind.to_string(),
                name,
                field,
                message,
            })?;
            Ok(Some(obj))
        }
        _ => {
            let v: Value = serde_json::from_str(text).map_err(|e| ObjectError {
                kind: kind.to_string(),
                name: String::new(),
                field: String::new(),
                message: e.to_string(),
            })?;
            from_value(v)
        }
    }
}

/// Parses one object; `Ok(None)` for kinds kubestep does not use.
pub fn from_value(mut v: Value) -> Result<Option<Object>, ObjectError> {
    let kind = v
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let name = object_name(&v);
    let err = |field: &str, message: String| ObjectError {
        kind: kind.clone(),
        name: name.clone(),
        field: field.into(),
        message,
    };
    if !v.is_object() {
        return Err(err("", "expected a Kubernetes object (a mapping)".into()));
    }
    if kind.is_empty() {
        return Err(err(
            "kind",
            "missing: every object needs apiVersion and kind".into(),
        ));
    }
    let Some((_, versions)) = KINDS.iter().find(|(k, _)| *k == kind) else {
        return Ok(None);
    };
    let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if !versions.contains(&api_version) {
        return Err(err(
            "apiVersion",
            format!(
                "{api_version:?} is not supported for {kind}; expected {}",
                versions.join(" or ")
            ),
        ));
    }
    match v.get("metadata").and_then(|m| m.get("name")) {
        Some(Value::String(s)) if !s.is_empty() => {}
        None | Some(Value::Null) | Some(Value::String(_)) => {
            return Err(err("metadata.name", "Required value".into()));
        }
        Some(other) => {
            let got = match other {
                Value::Bool(b) => format!("boolean `{b}`"),
                Value::Number(n) => format!("number {n}"),
                _ => "a structure".to_string(),
            };
            return Err(err(
                "metadata.name",
                with_yaml_hint(format!("invalid type: {got}, expected a string")),
            ));
        }
    }
    if matches!(
        kind.as_str(),
        "Node"
            | "Pod"
            | "PersistentVolume"
            | "PersistentVolumeClaim"
            | "ReplicaSet"
            | "StatefulSet"
            | "ReplicationController"
    ) {
        normalize_quantities(&mut v, false);
    }
    let obj = match kind.as_str() {
        "Node" => Object::Node(Box::new(typed(v, &err)?)),
        "Pod" => Object::Pod(Box::new(typed(v, &err)?)),
        "Namespace" => Object::Namespace(Box::new(typed(v, &err)?)),
        "PersistentVolume" => Object::PersistentVolume(Box::new(typed(v, &err)?)),
        "PersistentVolumeClaim" => Object::PersistentVolumeClaim(Box::new(typed(v, &err)?)),
        "StorageClass" => Object::StorageClass(Box::new(typed(v, &err)?)),
        "CSINode" => Object::CSINode(Box::new(typed(v, &err)?)),
        "PodDisruptionBudget" => Object::PodDisruptionBudget(Box::new(typed(v, &err)?)),
        "PriorityClass" => Object::PriorityClass(Box::new(typed(v, &err)?)),
        "Service" => Object::Service(Box::new(typed(v, &err)?)),
        "ReplicaSet" => Object::ReplicaSet(Box::new(typed(v, &err)?)),
        "StatefulSet" => Object::StatefulSet(Box::new(typed(v, &err)?)),
        "ReplicationController" => Object::ReplicationController(Box::new(typed(v, &err)?)),
        _ => {
            // DRA kinds stay JSON, but a malformed one is refused here, naming its field.
            check_dra(&kind, &v, &err)?;
            let meta: ObjectMeta = typed(
                v.get("metadata").cloned().unwrap_or(Value::Null),
                &|f: &str, m| err(&format!("metadata.{f}"), m),
            )?;
            Object::Custom {
                kind: kind.clone(),
                meta: Box::new(meta),
                value: v,
            }
        }
    };
    obj.validate()
        .map_err(|(field, message)| err(&field, message))?;
    Ok(Some(obj))
}

fn object_name(v: &Value) -> String {
    let meta = v.get("metadata");
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("(unnamed)");
    match meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
    {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

pub(crate) fn typed<T: serde::de::DeserializeOwned>(
    v: Value,
    err: &dyn Fn(&str, String) -> ObjectError,
) -> Result<T, ObjectError> {
    serde_path_to_error::deserialize::<_, T>(v).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        err(&path, with_yaml_hint(e.into_inner().to_string()))
    })
}

/// A boolean where a string belongs is most often YAML's doing: kubectl's YAML reads
/// unquoted y, n, yes, no, on and off as booleans too, and refuses the object the same way.
fn with_yaml_hint(message: String) -> String {
    if message.starts_with("invalid type: boolean") && message.contains("expected a string") {
        format!(
            "{message} (YAML reads unquoted y, n, yes, no, on, off, true and false as booleans: quote the value)"
        )
    } else {
        message
    }
}

/// Keys whose values are resource lists (maps of quantities) in the kinds kubestep reads.
const RESOURCE_LIST_KEYS: &[&str] = &[
    "requests",
    "limits",
    "capacity",
    "allocatable",
    "overhead",
    "allocatedResources",
];

/// YAML lets people write `cpu: 2`; the API server accepts numbers for quantities, so turn
/// numbers inside resource lists into strings before typed parsing.
fn normalize_quantities(v: &mut Value, in_resource_list: bool) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                if in_resource_list && let Value::Number(n) = child {
                    *child = Value::String(n.to_string());
                    continue;
                }
                normalize_quantities(child, RESOURCE_LIST_KEYS.contains(&k.as_str()));
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|c| normalize_quantities(c, false)),
        _ => {}
    }
}

type FieldProblem = (String, String);

fn check_list(
    list: Option<&std::collections::BTreeMap<String, K8sQuantity>>,
    path: &str,
) -> Result<(), FieldProblem> {
    for (name, q) in list.into_iter().flatten() {
        match Quantity::parse(&q.0) {
            Err(e) => {
                return Err((
                    format!("{path}.{name}"),
                    format!("invalid quantity {:?}: {e}", q.0),
                ));
            }
            // The API server refuses negative resource quantities (requests, limits,
            // overhead, capacity, allocatable); a cycle over one would explain nothing real.
            Ok(v) if v.nanos() < 0 => {
                return Err((
                    format!("{path}.{name}"),
                    format!(
                        "Invalid value: {:?}: must be greater than or equal to 0",
                        q.0
                    ),
                ));
            }
            Ok(_) => {}
        }
    }
    Ok(())
}

impl Object {
    pub fn kind(&self) -> &str {
        match self {
            Object::Node(_) => "Node",
            Object::Pod(_) | Object::PackedPod(_) => "Pod",
            Object::Namespace(_) => "Namespace",
            Object::PersistentVolume(_) => "PersistentVolume",
            Object::PersistentVolumeClaim(_) => "PersistentVolumeClaim",
            Object::StorageClass(_) => "StorageClass",
            Object::CSINode(_) => "CSINode",
            Object::PodDisruptionBudget(_) => "PodDisruptionBudget",
            Object::PriorityClass(_) => "PriorityClass",
            Object::Service(_) => "Service",
            Object::ReplicaSet(_) => "ReplicaSet",
            Object::StatefulSet(_) => "StatefulSet",
            Object::ReplicationController(_) => "ReplicationController",
            Object::Custom { kind, .. } => kind,
        }
    }

    pub fn meta(&self) -> &ObjectMeta {
        match self {
            Object::Node(o) => &o.metadata,
            Object::Pod(o) => &o.metadata,
            Object::PackedPod(o) => &o.pod().metadata,
            Object::Namespace(o) => &o.metadata,
            Object::PersistentVolume(o) => &o.metadata,
            Object::PersistentVolumeClaim(o) => &o.metadata,
            Object::StorageClass(o) => &o.metadata,
            Object::CSINode(o) => &o.metadata,
            Object::PodDisruptionBudget(o) => &o.metadata,
            Object::PriorityClass(o) => &o.metadata,
            Object::Service(o) => &o.metadata,
            Object::ReplicaSet(o) => &o.metadata,
            Object::StatefulSet(o) => &o.metadata,
            Object::ReplicationController(o) => &o.metadata,
            Object::Custom { meta, .. } => meta,
        }
    }

    /// `None` for a packed pod: what was derived from it (its key, for one) depends on
    /// its metadata, so it cannot change in place.
    pub(super) fn meta_mut(&mut self) -> Option<&mut ObjectMeta> {
        Some(match self {
            Object::Node(o) => &mut o.metadata,
            Object::Pod(o) => &mut o.metadata,
            Object::PackedPod(_) => return None,
            Object::Namespace(o) => &mut o.metadata,
            Object::PersistentVolume(o) => &mut o.metadata,
            Object::PersistentVolumeClaim(o) => &mut o.metadata,
            Object::StorageClass(o) => &mut o.metadata,
            Object::CSINode(o) => &mut o.metadata,
            Object::PodDisruptionBudget(o) => &mut o.metadata,
            Object::PriorityClass(o) => &mut o.metadata,
            Object::Service(o) => &mut o.metadata,
            Object::ReplicaSet(o) => &mut o.metadata,
            Object::StatefulSet(o) => &mut o.metadata,
            Object::ReplicationController(o) => &mut o.metadata,
            Object::Custom { meta, .. } => meta,
        })
    }

    /// The object as JSON (what the API server would serve).
    pub fn to_value(&self) -> Value {
        let v = match self {
            Object::Node(o) => serde_json::to_value(o),
            Object::Pod(o) => serde_json::to_value(o),
            Object::PackedPod(o) => serde_json::to_value(&*o.full_pod()),
            Object::Namespace(o) => serde_json::to_value(o),
            Object::PersistentVolume(o) => serde_json::to_value(o),
            Object::PersistentVolumeClaim(o) => serde_json::to_value(o),
            Object::StorageClass(o) => serde_json::to_value(o),
            Object::CSINode(o) => serde_json::to_value(o),
            Object::PodDisruptionBudget(o) => serde_json::to_value(o),
            Object::PriorityClass(o) => serde_json::to_value(o),
            Object::Service(o) => serde_json::to_value(o),
            Object::ReplicaSet(o) => serde_json::to_value(o),
            Object::StatefulSet(o) => serde_json::to_value(o),
            Object::ReplicationController(o) => serde_json::to_value(o),
            Object::Custom { value, .. } => Ok(value.clone()),
        };
        v.unwrap_or_default()
    }

    /// A pod's node name (empty while pending), read without unpacking a packed pod.
    pub fn pod_node_name(&self) -> Option<&str> {
        match self {
            Object::Pod(p) => Some(super::node_name(p)),
            Object::PackedPod(pi) => Some(pi.node_name()),
            _ => None,
        }
    }

    /// A pod's UID, read without unpacking a packed pod.
    pub fn pod_uid(&self) -> Option<&str> {
        match self {
            Object::Pod(p) => p.metadata.uid.as_deref(),
            Object::PackedPod(pi) => Some(pi.uid.as_str()).filter(|u| !u.is_empty()),
            _ => None,
        }
    }

    /// The pod, whole (a packed pod is read back and kept: for what many pods are
    /// asked, use [`pod_node_name`](Self::pod_node_name) and [`pod_uid`](Self::pod_uid)).
    pub fn as_pod(&self) -> Option<&Pod> {
        match self {
            Object::Pod(p) => Some(p),
            Object::PackedPod(pi) => Some(pi.pod()),
            _ => None,
        }
    }

    /// A pod packed (recordings hold their events so until they are applied); anything
    /// else as it is.
    pub fn packed(self) -> Object {
        match self {
            Object::Pod(p) => Object::PackedPod(Arc::new(PodInfo::new(Arc::new(*p)).packed())),
            other => other,
        }
    }

    /// `namespace/name` for namespaced kinds, `name` otherwise.
    pub fn key(&self) -> String {
        if let Object::PackedPod(pi) = self {
            let ns = if pi.namespace.is_empty() {
                "default"
            } else {
                &pi.namespace
            };
            return format!("{ns}/{}", pi.name);
        }
        let m = self.meta();
        let name = m.name.as_deref().unwrap_or("");
        if is_namespaced(self.kind()) {
            format!("{}/{name}", m.namespace.as_deref().unwrap_or("default"))
        } else {
            name.to_string()
        }
    }

    /// Fills in what an API server would always have: the namespace and a UID.
    pub fn normalize(&mut self) {
        let key_ns = is_namespaced(self.kind());
        let (no_namespace, no_uid) = match self {
            // Read without unpacking: packed pods are many.
            Object::PackedPod(pi) => (pi.namespace.is_empty(), pi.uid.is_empty()),
            _ => {
                let m = self.meta();
                let no_uid = m.uid.as_deref().is_none_or(str::is_empty);
                (
                    key_ns && m.namespace.as_deref().is_none_or(str::is_empty),
                    no_uid,
                )
            }
        };
        if !no_namespace && !no_uid {
            return;
        }
        if let Object::PackedPod(pi) = self {
            *self = Object::Pod(Box::new(Arc::unwrap_or_clone(pi.full_pod())));
        }
        let Some(m) = self.meta_mut() else { return };
        if key_ns && m.namespace.as_deref().is_none_or(str::is_empty) {
            m.namespace = Some("default".into());
        }
        if m.uid.as_deref().is_none_or(str::is_empty) {
            let ns = m.namespace.clone().unwrap_or_default();
            let name = m.name.clone().unwrap_or_default();
            let uid = format!("kubestep-{}-{ns}-{name}", self.kind().to_lowercase());
            if let Some(m) = self.meta_mut() {
                m.uid = Some(uid);
            }
        }
    }

    /// What the API server would refuse and the scheduler reads: quantities, then the
    /// enumerated fields (see `enums`).
    fn validate(&self) -> Result<(), FieldProblem> {
        self.validate_quantities()?;
        match self {
            Object::Pod(p) => super::enums::pod(p),
            Object::Node(n) => {
                super::enums::taints(n.spec.as_ref().and_then(|s| s.taints.as_ref()))
            }
            _ => Ok(()),
        }
    }

    fn validate_quantities(&self) -> Result<(), FieldProblem> {
        match self {
            Object::Pod(p) => {
                let Some(spec) = &p.spec else { return Ok(()) };
                for (group, list) in [
                    ("containers", Some(&spec.containers)),
                    ("initContainers", spec.init_containers.as_ref()),
                ] {
                    for (i, c) in list.into_iter().flatten().enumerate() {
                        let r = c.resources.as_ref();
                        check_list(
                            r.and_then(|r| r.requests.as_ref()),
                            &format!("spec.{group}[{i}].resources.requests"),
                        )?;
                        check_list(
                            r.and_then(|r| r.limits.as_ref()),
                            &format!("spec.{group}[{i}].resources.limits"),
                        )?;
                    }
                }
                check_list(spec.overhead.as_ref(), "spec.overhead")?;
                let r = spec.resources.as_ref();
                check_list(
                    r.and_then(|r| r.requests.as_ref()),
                    "spec.resources.requests",
                )?;
                check_list(r.and_then(|r| r.limits.as_ref()), "spec.resources.limits")
            }
            Object::Node(n) => {
                let s = n.status.as_ref();
                check_list(s.and_then(|s| s.allocatable.as_ref()), "status.allocatable")?;
                check_list(s.and_then(|s| s.capacity.as_ref()), "status.capacity")
            }
            Object::PersistentVolumeClaim(c) => {
                let r = c.spec.as_ref().and_then(|s| s.resources.as_ref());
                check_list(
                    r.and_then(|r| r.requests.as_ref()),
                    "spec.resources.requests",
                )
            }
            Object::PersistentVolume(v) => check_list(
                v.spec.as_ref().and_then(|s| s.capacity.as_ref()),
                "spec.capacity",
            ),
            _ => Ok(()),
        }
    }
}

/// Refuses a malformed DRA object at load time, naming the field (other kinds pass).
fn check_dra(
    kind: &str,
    v: &Value,
    err: &dyn Fn(&str, String) -> ObjectError,
) -> Result<(), ObjectError> {
    use k8s_openapi::api::resource::v1::{
        DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
    };
    match kind {
        dra::CLAIM => typed::<ResourceClaim>(v.clone(), err).map(drop),
        dra::TEMPLATE => typed::<ResourceClaimTemplate>(v.clone(), err).map(drop),
        dra::CLASS => typed::<DeviceClass>(v.clone(), err).map(drop),
        dra::SLICE => typed::<ResourceSlice>(v.clone(), err).map(drop),
        dra::TAINT_RULE => typed::<dra::DeviceTaintRule>(v.clone(), err).map(drop),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_become_quantities() {
        let v = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
            "status": {"allocatable": {"cpu": 4, "memory": "8Gi", "pods": 110}}});
        let Some(Object::Node(n)) = from_value(v).unwrap() else {
            panic!()
        };
        assert_eq!(n.status.unwrap().allocatable.unwrap()["cpu"].0, "4");
    }

    #[test]
    fn csinode_counts_stay_numbers() {
        let v = json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n"},
            "spec": {"drivers": [{"name": "d", "nodeID": "n", "allocatable": {"count": 3}}]}});
        assert!(matches!(from_value(v), Ok(Some(Object::CSINode(_)))));
    }

    #[test]
    fn errors_name_object_and_field() {
        let v = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}});
        let e = from_value(v).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "Pod ns/p: spec.containers[0].resources.requests.cpu: invalid quantity \"lots\""
            ),
            "{e}"
        );
        let v = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": "x"}});
        let e = from_value(v).unwrap_err().to_string();
        assert!(e.starts_with("Pod p: spec.containers: invalid type"), "{e}");
        let v = json!({"apiVersion": "v2", "kind": "Node", "metadata": {"name": "n"}});
        assert!(
            from_value(v)
                .unwrap_err()
                .to_string()
                .contains("\"v2\" is not supported for Node")
        );
        let v = json!({"apiVersion": "v1", "kind": "Node", "metadata": {}});
        assert_eq!(
            from_value(v).unwrap_err().to_string(),
            "Node (unnamed): metadata.name: Required value"
        );
        // `name: n` in YAML is a boolean: said as such, not as a missing name.
        let v = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": false}});
        let e = from_value(v).unwrap_err().to_string();
        assert!(
            e.starts_with("Node (unnamed): metadata.name: invalid type: boolean `false`, expected a string (YAML reads unquoted"),
            "{e}"
        );
        let v = json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "a", "labels": {"ssd": true}}});
        let e = from_value(v).unwrap_err().to_string();
        assert!(
            e.contains(
                "metadata.labels.ssd: invalid type: boolean `true`, expected a string (YAML"
            ),
            "{e}"
        );
    }

    #[test]
    fn negative_quantities_are_refused_naming_the_field() {
        let v = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]}});
        assert_eq!(
            from_value(v).unwrap_err().to_string(),
            "Pod p: spec.containers[0].resources.requests.cpu: Invalid value: \"-1\": must be greater than or equal to 0"
        );
        let v = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
            "status": {"allocatable": {"memory": "-2Gi"}}});
        let e = from_value(v).unwrap_err().to_string();
        assert!(
            e.starts_with("Node n: status.allocatable.memory: Invalid value"),
            "{e}"
        );
        let v = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "0"}}}]}});
        assert!(from_value(v).is_ok());
    }

    #[test]
    fn unknown_kinds_are_skipped_and_defaults_filled() {
        assert!(
            from_value(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}))
                .unwrap()
                .is_none()
        );
        let mut o = from_value(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}))
            .unwrap()
            .unwrap();
        o.normalize();
        assert_eq!(o.key(), "default/p");
        assert!(o.meta().uid.is_some());
    }
}
