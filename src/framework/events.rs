//! Cluster events: what changed in the cluster (a resource and an action type, as
//! kube-scheduler's `ClusterEvent`), the objects involved, how registered events match
//! incoming ones, and which events the scheduler's informer handlers derive from an
//! object change.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::BitOr;
use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::api::pod_resources;
use crate::api::quantity::Quantity;
use crate::features::{Features, Gate};
use crate::types::PodInfo;

/// The kind of object an event is about (upstream `EventResource`). `AssignedPod` and
/// `UnschedulablePod` only appear on incoming events; plugins register `Pod`, which
/// matches both.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventResource {
    Pod,
    AssignedPod,
    UnschedulablePod,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    CsiNode,
    CsiDriver,
    VolumeAttachment,
    CsiStorageCapacity,
    StorageClass,
    ResourceClaim,
    ResourceSlice,
    DeviceClass,
    Workload,
    /// `*`: with action `All`, the wildcard event that moves every pod.
    WildCard,
    /// An out-of-tree kind, named by the kind given to [`events_for_object`] (for
    /// example `PodGroup`).
    Custom(String),
}

impl EventResource {
    /// Upstream's string for the resource (used in labels).
    pub fn as_str(&self) -> &str {
        match self {
            EventResource::Pod => "Pod",
            EventResource::AssignedPod => "AssignedPod",
            EventResource::UnschedulablePod => "UnschedulablePod",
            EventResource::Node => "Node",
            EventResource::PersistentVolume => "PersistentVolume",
            EventResource::PersistentVolumeClaim => "PersistentVolumeClaim",
            EventResource::CsiNode => "storage.k8s.io/CSINode",
            EventResource::CsiDriver => "storage.k8s.io/CSIDriver",
            EventResource::VolumeAttachment => "storage.k8s.io/VolumeAttachment",
            EventResource::CsiStorageCapacity => "storage.k8s.io/CSIStorageCapacity",
            EventResource::StorageClass => "storage.k8s.io/StorageClass",
            EventResource::ResourceClaim => "resource.k8s.io/ResourceClaim",
            EventResource::ResourceSlice => "resource.k8s.io/ResourceSlice",
            EventResource::DeviceClass => "resource.k8s.io/DeviceClass",
            EventResource::Workload => "scheduling.k8s.io/Workload",
            EventResource::WildCard => "*",
            EventResource::Custom(s) => s,
        }
    }

    /// The resource of an object kind (`PersistentVolumeClaim`, `CSINode`, ...); kinds
    /// the scheduler does not know become [`EventResource::Custom`].
    pub fn from_kind(kind: &str) -> EventResource {
        match kind {
            "Pod" => EventResource::Pod,
            "Node" => EventResource::Node,
            "PersistentVolume" => EventResource::PersistentVolume,
            "PersistentVolumeClaim" => EventResource::PersistentVolumeClaim,
            "CSINode" => EventResource::CsiNode,
            "CSIDriver" => EventResource::CsiDriver,
            "VolumeAttachment" => EventResource::VolumeAttachment,
            "CSIStorageCapacity" => EventResource::CsiStorageCapacity,
            "StorageClass" => EventResource::StorageClass,
            "ResourceClaim" => EventResource::ResourceClaim,
            // Upstream's slice tracker turns a DeviceTaintRule change into updates of the
            // slices it patches.
            "ResourceSlice" | "DeviceTaintRule" => EventResource::ResourceSlice,
            "DeviceClass" => EventResource::DeviceClass,
            "Workload" => EventResource::Workload,
            other => EventResource::Custom(other.to_string()),
        }
    }

    /// `matchEventResources`: the registered resource `self` covers `incoming`.
    pub fn covers(&self, incoming: &EventResource) -> bool {
        *self == EventResource::WildCard
            || self == incoming
            || (*self == EventResource::Pod
                && matches!(
                    incoming,
                    EventResource::AssignedPod | EventResource::UnschedulablePod
                ))
    }
}

impl fmt::Display for EventResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of changes, as upstream's bit set `ActionType`. Specific update types (a node's
/// labels, a pod's tolerations, ...) are bits of their own; `UPDATE` is all of them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ActionType(pub u64);

impl ActionType {
    pub const NONE: ActionType = ActionType(0);
    pub const ADD: ActionType = ActionType(1);
    pub const DELETE: ActionType = ActionType(1 << 1);
    pub const UPDATE_NODE_ALLOCATABLE: ActionType = ActionType(1 << 2);
    pub const UPDATE_NODE_LABEL: ActionType = ActionType(1 << 3);
    /// A node's taints, or `spec.unschedulable` turned off.
    pub const UPDATE_NODE_TAINT: ActionType = ActionType(1 << 4);
    pub const UPDATE_NODE_CONDITION: ActionType = ActionType(1 << 5);
    pub const UPDATE_NODE_ANNOTATION: ActionType = ActionType(1 << 6);
    pub const UPDATE_NODE_DECLARED_FEATURE: ActionType = ActionType(1 << 7);
    pub const UPDATE_POD_LABEL: ActionType = ActionType(1 << 8);
    /// Some resource request of the pod went down (or disappeared).
    pub const UPDATE_POD_SCALE_DOWN: ActionType = ActionType(1 << 9);
    pub const UPDATE_POD_TOLERATION: ActionType = ActionType(1 << 10);
    pub const UPDATE_POD_SCHEDULING_GATES_ELIMINATED: ActionType = ActionType(1 << 11);
    pub const UPDATE_POD_GENERATED_RESOURCE_CLAIM: ActionType = ActionType(1 << 12);
    pub const ALL: ActionType = ActionType((1 << 13) - 1);
    /// Every specific update type.
    pub const UPDATE: ActionType = ActionType(Self::ALL.0 & !(Self::ADD.0 | Self::DELETE.0));

    const NAMES: [(ActionType, &'static str); 13] = [
        (Self::ADD, "Add"),
        (Self::DELETE, "Delete"),
        (Self::UPDATE_NODE_ALLOCATABLE, "UpdateNodeAllocatable"),
        (Self::UPDATE_NODE_LABEL, "UpdateNodeLabel"),
        (Self::UPDATE_NODE_TAINT, "UpdateNodeTaint"),
        (Self::UPDATE_NODE_CONDITION, "UpdateNodeCondition"),
        (Self::UPDATE_NODE_ANNOTATION, "UpdateNodeAnnotation"),
        (
            Self::UPDATE_NODE_DECLARED_FEATURE,
            "UpdateNodeDeclaredFeature",
        ),
        (Self::UPDATE_POD_LABEL, "UpdatePodLabel"),
        (Self::UPDATE_POD_SCALE_DOWN, "UpdatePodScaleDown"),
        (Self::UPDATE_POD_TOLERATION, "UpdatePodToleration"),
        (
            Self::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
            "UpdatePodSchedulingGatesEliminated",
        ),
        (
            Self::UPDATE_POD_GENERATED_RESOURCE_CLAIM,
            "UpdatePodGeneratedResourceClaim",
        ),
    ];

    /// Any bit in common.
    pub fn intersects(self, other: ActionType) -> bool {
        self.0 & other.0 != 0
    }

    /// Upstream's `String()`: the name of a single type, `All` or `Update`; "" for other
    /// combinations.
    pub fn name(self) -> &'static str {
        if self == Self::ALL {
            return "All";
        }
        if self == Self::UPDATE {
            return "Update";
        }
        Self::NAMES
            .iter()
            .find(|(a, _)| *a == self)
            .map_or("", |(_, n)| n)
    }
}

impl BitOr for ActionType {
    type Output = ActionType;
    fn bitor(self, rhs: ActionType) -> ActionType {
        ActionType(self.0 | rhs.0)
    }
}

impl fmt::Debug for ActionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.name();
        if !n.is_empty() || self.0 == 0 {
            return f.write_str(if n.is_empty() { "None" } else { n });
        }
        let parts: Vec<&str> = Self::NAMES
            .iter()
            .filter(|(a, _)| self.intersects(*a))
            .map(|(_, n)| *n)
            .collect();
        f.write_str(&parts.join("|"))
    }
}

impl fmt::Display for ActionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A resource and the actions on it: what a plugin registers interest in, and the type of
/// an incoming [`ClusterEvent`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventType {
    pub resource: EventResource,
    pub action: ActionType,
}

impl EventType {
    pub const fn new(resource: EventResource, action: ActionType) -> EventType {
        EventType { resource, action }
    }

    /// `*` with `All`.
    pub fn is_wildcard(&self) -> bool {
        self.resource == EventResource::WildCard && self.action == ActionType::ALL
    }

    /// Upstream's `Label()` without a custom label: resource then action name.
    pub fn label(&self) -> String {
        format!("{}{}", self.resource, self.action.name())
    }

    /// `MatchClusterEvents(self, incoming)`: this registered event is the same as, or more
    /// general than, `incoming`. A wildcard registration matches everything; an incoming
    /// wildcard matches only a wildcard registration.
    pub fn matches(&self, incoming: &EventType) -> bool {
        self.is_wildcard()
            || (self.resource.covers(&incoming.resource)
                && self.action.intersects(incoming.action)
                && incoming.action <= self.action)
    }
}

/// Whether any of `registered` matches `incoming` (`MatchAnyClusterEvent`).
pub fn matches_any(incoming: &EventType, registered: &[EventType]) -> bool {
    registered.iter().any(|r| r.matches(incoming))
}

/// A pod in an event. The cluster's bound pods are packed, and most events are read by
/// no hint (none unless a pod waits for one), so the pod is read back whole only when a
/// hint reads it, once per event.
#[derive(Debug, Clone)]
pub struct EventPod {
    info: Option<Arc<PodInfo>>,
    whole: OnceLock<Arc<Pod>>,
}

impl EventPod {
    /// The cluster's pod, as it stores it.
    pub fn of(info: &Arc<PodInfo>) -> EventPod {
        match info.whole() {
            Some(p) => EventPod::from(p.clone()),
            None => EventPod {
                info: Some(info.clone()),
                whole: OnceLock::new(),
            },
        }
    }

    pub fn pod(&self) -> &Pod {
        self.whole.get_or_init(|| match &self.info {
            Some(i) => i.full_pod(),
            None => Arc::default(),
        })
    }

    /// The pod's UID, without reading a packed pod back.
    pub fn uid(&self) -> &str {
        match &self.info {
            Some(i) => &i.uid,
            None => self.pod().metadata.uid.as_deref().unwrap_or(""),
        }
    }
}

impl From<Arc<Pod>> for EventPod {
    fn from(p: Arc<Pod>) -> EventPod {
        EventPod {
            info: None,
            whole: OnceLock::from(p),
        }
    }
}

impl PartialEq for EventPod {
    fn eq(&self, other: &EventPod) -> bool {
        self.pod() == other.pod()
    }
}

/// An object involved in an event.
#[derive(Debug, Clone, PartialEq)]
pub enum EventObject {
    Pod(EventPod),
    Node(Arc<Node>),
    /// Any other kind, as JSON (hints deserialize what they need).
    Other(serde_json::Value),
}

impl EventObject {
    pub fn as_pod(&self) -> Option<&Pod> {
        match self {
            EventObject::Pod(p) => Some(p.pod()),
            _ => None,
        }
    }

    pub fn as_node(&self) -> Option<&Node> {
        match self {
            EventObject::Node(n) => Some(n),
            _ => None,
        }
    }

    /// `namespace/name` (or `name`) of the object, for display.
    pub fn describe(&self) -> String {
        let (ns, name) = match self {
            EventObject::Pod(p) => (
                p.pod().metadata.namespace.clone().unwrap_or_default(),
                p.pod().metadata.name.clone().unwrap_or_default(),
            ),
            EventObject::Node(n) => (String::new(), n.metadata.name.clone().unwrap_or_default()),
            EventObject::Other(v) => (
                v["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                v["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            ),
        };
        if ns.is_empty() {
            name
        } else {
            format!("{ns}/{name}")
        }
    }
}

/// Which unschedulable pods an event may move at all (upstream's `PreEnqueueCheck`
/// functions passed to `MoveAllToActiveOrBackoffQueue`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreCheck {
    /// Pods of at most this priority (a nominated pod was deleted or lost its nomination:
    /// only pods it could have blocked are worth retrying).
    PriorityAtMost(i32),
    /// Every pod but this one (by UID): a pod rejected in its binding cycle frees its
    /// place for the others.
    ExcludePod(String),
}

impl PreCheck {
    pub fn allows(&self, pod: &PodInfo) -> bool {
        match self {
            PreCheck::PriorityAtMost(p) => pod.priority <= *p,
            PreCheck::ExcludePod(uid) => pod.uid != *uid,
        }
    }
}

/// A change in the cluster, with the objects before (`old`) and after (`new`) it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterEvent {
    pub resource: EventResource,
    pub action: ActionType,
    /// None for an add.
    pub old: Option<EventObject>,
    /// None for a delete.
    pub new: Option<EventObject>,
    /// Upstream's label: `<Resource><Action>` (e.g. `NodeAdd`, `AssignedPodDelete`), or
    /// the name of a special event (`UnschedulableTimeout`, `ForceActivate`).
    pub label: String,
    /// Restricts the pods the event is considered for.
    pub pre_check: Option<PreCheck>,
}

/// Label of the wildcard event for pods left unschedulable too long.
pub const UNSCHEDULABLE_TIMEOUT: &str = "UnschedulableTimeout";
/// Label of the wildcard event that activates one pod (PodsToActivate).
pub const FORCE_ACTIVATE: &str = "ForceActivate";
/// Why a pod went back after a failed attempt.
pub const SCHEDULE_ATTEMPT_FAILURE: &str = "ScheduleAttemptFailure";
/// A pod's backoff completed.
pub const BACKOFF_COMPLETE: &str = "BackoffComplete";
/// A pod was popped from backoffQ because activeQ was empty.
pub const POP_FROM_BACKOFF_Q: &str = "PopFromBackoffQ";

impl ClusterEvent {
    pub fn new(
        resource: EventResource,
        action: ActionType,
        old: Option<EventObject>,
        new: Option<EventObject>,
    ) -> ClusterEvent {
        let label = EventType::new(resource.clone(), action).label();
        ClusterEvent {
            resource,
            action,
            old,
            new,
            label,
            pre_check: None,
        }
    }

    /// The wildcard event of the unschedulable-pods leftover flush.
    pub fn unschedulable_timeout() -> ClusterEvent {
        ClusterEvent {
            label: UNSCHEDULABLE_TIMEOUT.to_string(),
            ..ClusterEvent::new(EventResource::WildCard, ActionType::ALL, None, None)
        }
    }

    /// The wildcard event that activates `pod` only.
    pub fn force_activate(pod: Option<Arc<Pod>>) -> ClusterEvent {
        ClusterEvent {
            label: FORCE_ACTIVATE.to_string(),
            ..ClusterEvent::new(
                EventResource::WildCard,
                ActionType::ALL,
                None,
                pod.map(|p| EventObject::Pod(p.into())),
            )
        }
    }

    pub fn with_pre_check(mut self, pre_check: PreCheck) -> ClusterEvent {
        self.pre_check = Some(pre_check);
        self
    }

    pub fn event_type(&self) -> EventType {
        EventType::new(self.resource.clone(), self.action)
    }

    pub fn is_wildcard(&self) -> bool {
        self.resource == EventResource::WildCard && self.action == ActionType::ALL
    }
}

fn map_eq<V: PartialEq>(a: Option<&BTreeMap<String, V>>, b: Option<&BTreeMap<String, V>>) -> bool {
    // Semantic equality: a missing map equals an empty one.
    match (a.filter(|m| !m.is_empty()), b.filter(|m| !m.is_empty())) {
        (None, None) => true,
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

fn vec_eq<T: PartialEq>(a: Option<&Vec<T>>, b: Option<&Vec<T>>) -> bool {
    a.map_or(&[][..], Vec::as_slice) == b.map_or(&[][..], Vec::as_slice)
}

type K8sQuantities = BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>;

/// Quantities compare by value (`1000m` equals `1`); unparsable ones by their text.
fn quantities_eq(a: Option<&K8sQuantities>, b: Option<&K8sQuantities>) -> bool {
    let empty = BTreeMap::new();
    let (a, b) = (a.unwrap_or(&empty), b.unwrap_or(&empty));
    a.len() == b.len()
        && a.iter().all(|(k, qa)| {
            b.get(k).is_some_and(
                |qb| match (Quantity::parse(&qa.0), Quantity::parse(&qb.0)) {
                    (Ok(x), Ok(y)) => x == y,
                    _ => qa.0 == qb.0,
                },
            )
        })
}

fn node_labels(n: &Node) -> Option<&BTreeMap<String, String>> {
    n.metadata.labels.as_ref()
}

fn node_unschedulable(n: &Node) -> bool {
    n.spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
}

fn node_conditions(n: &Node) -> BTreeMap<String, String> {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .map(|c| (c.type_.clone(), c.status.clone()))
        .collect()
}

/// `NodeSchedulingPropertiesChange`: the specific update types of a node update, in
/// upstream's order (none when nothing the scheduler looks at changed).
pub fn node_update_actions(old: &Node, new: &Node) -> Vec<ActionType> {
    let mut out = Vec::new();
    if node_unschedulable(old) != node_unschedulable(new) && !node_unschedulable(new) {
        out.push(ActionType::UPDATE_NODE_TAINT);
    }
    fn alloc(n: &Node) -> Option<&K8sQuantities> {
        n.status.as_ref().and_then(|s| s.allocatable.as_ref())
    }
    if !quantities_eq(alloc(old), alloc(new)) {
        out.push(ActionType::UPDATE_NODE_ALLOCATABLE);
    }
    if !map_eq(node_labels(old), node_labels(new)) {
        out.push(ActionType::UPDATE_NODE_LABEL);
    }
    fn taints(n: &Node) -> Option<&Vec<k8s_openapi::api::core::v1::Taint>> {
        n.spec.as_ref().and_then(|s| s.taints.as_ref())
    }
    if !vec_eq(taints(old), taints(new)) {
        out.push(ActionType::UPDATE_NODE_TAINT);
    }
    if node_conditions(old) != node_conditions(new) {
        out.push(ActionType::UPDATE_NODE_CONDITION);
    }
    if !map_eq(
        old.metadata.annotations.as_ref(),
        new.metadata.annotations.as_ref(),
    ) {
        out.push(ActionType::UPDATE_NODE_ANNOTATION);
    }
    out
}

fn declared_features(n: &Node) -> &[String] {
    n.status
        .as_ref()
        .and_then(|s| s.declared_features.as_deref())
        .unwrap_or(&[])
}

/// The events the scheduler's node handlers emit: `NodeAdd`, `NodeDelete`, or one event
/// per specific update type (`NodeUpdateNodeLabel`, ...) found by comparing the two;
/// `UpdateNodeDeclaredFeature` last, only with the NodeDeclaredFeatures gate (`features`).
pub fn events_for_node_change(
    old: Option<&Node>,
    new: Option<&Node>,
    features: &crate::features::Features,
) -> Vec<ClusterEvent> {
    let obj = |n: &Node| EventObject::Node(Arc::new(n.clone()));
    match (old, new) {
        (None, Some(n)) => vec![ClusterEvent::new(
            EventResource::Node,
            ActionType::ADD,
            None,
            Some(obj(n)),
        )],
        (Some(o), None) => vec![ClusterEvent::new(
            EventResource::Node,
            ActionType::DELETE,
            Some(obj(o)),
            None,
        )],
        (Some(o), Some(n)) => {
            let (old_obj, new_obj) = (obj(o), obj(n));
            let mut actions = node_update_actions(o, n);
            if features.enabled(crate::features::Gate::NodeDeclaredFeatures)
                && declared_features(o) != declared_features(n)
            {
                actions.push(ActionType::UPDATE_NODE_DECLARED_FEATURE);
            }
            actions
                .into_iter()
                .map(|a| {
                    ClusterEvent::new(
                        EventResource::Node,
                        a,
                        Some(old_obj.clone()),
                        Some(new_obj.clone()),
                    )
                })
                .collect()
        }
        (None, None) => Vec::new(),
    }
}

fn pod_node_name(p: &Pod) -> &str {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("")
}

fn scaled_down(old: &Pod, new: &Pod, features: &Features) -> bool {
    let resize = features.enabled(Gate::InPlacePodLevelResourcesVerticalScaling);
    let (o, n) = (
        pod_resources::pod_requests_for(old, None, resize),
        pod_resources::pod_requests_for(new, None, resize),
    );
    o.iter().any(|(name, oq)| match n.get(name) {
        None => true,
        Some(nq) => oq.milli_value() > nq.milli_value(),
    })
}

fn gates_len(p: &Pod) -> usize {
    p.spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .map_or(0, Vec::len)
}

fn tolerations_len(p: &Pod) -> usize {
    p.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_ref())
        .map_or(0, Vec::len)
}

fn generated_claims_changed(old: &Pod, new: &Pod) -> bool {
    use k8s_openapi::api::core::v1::{PodExtendedResourceClaimStatus, PodResourceClaimStatus};
    fn statuses(p: &Pod) -> Option<&Vec<PodResourceClaimStatus>> {
        p.status
            .as_ref()
            .and_then(|s| s.resource_claim_statuses.as_ref())
    }
    fn extended(p: &Pod) -> Option<&PodExtendedResourceClaimStatus> {
        p.status
            .as_ref()
            .and_then(|s| s.extended_resource_claim_status.as_ref())
    }
    !vec_eq(statuses(old), statuses(new)) || extended(old) != extended(new)
}

/// `PodSchedulingPropertiesChange`: the specific update types of a pod update (labels,
/// scale-down, scheduling gates removed, tolerations, generated claims), or the generic
/// `Update` when none applies. The resource is `AssignedPod` when the new pod is bound,
/// `UnschedulablePod` otherwise.
pub fn pod_update_events(old: &Arc<Pod>, new: &Arc<Pod>, features: &Features) -> Vec<ClusterEvent> {
    let resource = if pod_node_name(new).is_empty() {
        EventResource::UnschedulablePod
    } else {
        EventResource::AssignedPod
    };
    let mut actions = Vec::new();
    if !map_eq(old.metadata.labels.as_ref(), new.metadata.labels.as_ref()) {
        actions.push(ActionType::UPDATE_POD_LABEL);
    }
    if scaled_down(old, new, features) {
        actions.push(ActionType::UPDATE_POD_SCALE_DOWN);
    }
    if gates_len(new) == 0 && gates_len(old) != 0 {
        actions.push(ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED);
    }
    if tolerations_len(new) != tolerations_len(old) {
        actions.push(ActionType::UPDATE_POD_TOLERATION);
    }
    if generated_claims_changed(old, new) {
        actions.push(ActionType::UPDATE_POD_GENERATED_RESOURCE_CLAIM);
    }
    if actions.is_empty() {
        actions.push(ActionType::UPDATE);
    }
    let (o, n) = (
        EventObject::Pod(old.clone().into()),
        EventObject::Pod(new.clone().into()),
    );
    actions
        .into_iter()
        .map(|a| ClusterEvent::new(resource.clone(), a, Some(o.clone()), Some(n.clone())))
        .collect()
}

/// The cluster events the scheduler's pod handlers emit (QueueingHints on) for a pod
/// change:
/// * a bound pod added, or a pod that got bound: `AssignedPodAdd`;
/// * a bound pod updated: its [`pod_update_events`];
/// * a bound pod deleted: `AssignedPodDelete`;
/// * an unscheduled pod deleted, or updated to lose its nominated node, while it was
///   nominated: `AssignedPodDelete` of the old pod for pods of at most its priority.
///
/// Unscheduled pods themselves enter and leave the queue through
/// [`SchedulingQueue::add`](super::SchedulingQueue::add),
/// [`update`](super::SchedulingQueue::update) and
/// [`delete`](super::SchedulingQueue::delete), which this does not do.
pub fn events_for_pod_change(
    old: Option<&Arc<PodInfo>>,
    new: Option<&Arc<PodInfo>>,
    features: &Features,
) -> Vec<ClusterEvent> {
    // Hints read bound pods' containers (NodePorts the host ports of a deleted pod), so
    // they get the whole pod (read back when they do), not the packed one.
    let obj = |p: &Arc<PodInfo>| EventObject::Pod(EventPod::of(p));
    let assigned_add = |p: &Arc<PodInfo>| {
        ClusterEvent::new(
            EventResource::AssignedPod,
            ActionType::ADD,
            None,
            Some(obj(p)),
        )
    };
    let nominated_gone = |p: &Arc<PodInfo>| {
        ClusterEvent::new(
            EventResource::AssignedPod,
            ActionType::DELETE,
            Some(obj(p)),
            None,
        )
        .with_pre_check(PreCheck::PriorityAtMost(p.priority))
    };
    let bound = |p: &PodInfo| !p.node_name().is_empty();
    match (old, new) {
        (None, Some(n)) if bound(n) => vec![assigned_add(n)],
        (Some(o), Some(n)) if bound(o) => pod_update_events(&o.full_pod(), &n.full_pod(), features),
        (Some(_), Some(n)) if bound(n) => vec![assigned_add(n)],
        (Some(o), Some(n)) => {
            let was = o.nominated_node_name();
            if !was.is_empty() && was != n.nominated_node_name() {
                vec![nominated_gone(o)]
            } else {
                Vec::new()
            }
        }
        (Some(o), None) if bound(o) => vec![ClusterEvent::new(
            EventResource::AssignedPod,
            ActionType::DELETE,
            Some(obj(o)),
            None,
        )],
        (Some(o), None) if !o.nominated_node_name().is_empty() => vec![nominated_gone(o)],
        _ => Vec::new(),
    }
}

/// The event for an add (`new` only), update (both) or delete (`old` only) of any other
/// kind: `<Resource>Add`, `<Resource>Update` (the generic update) or `<Resource>Delete`.
/// `Pod` and `Node` are delegated to [`events_for_pod_change`] and
/// [`events_for_node_change`].
pub fn events_for_object(
    kind: &str,
    old: Option<&serde_json::Value>,
    new: Option<&serde_json::Value>,
) -> Vec<ClusterEvent> {
    match kind {
        "Pod" => {
            let parse = |v: Option<&serde_json::Value>| {
                v.and_then(|v| serde_json::from_value::<Pod>(v.clone()).ok())
                    .map(|p| Arc::new(PodInfo::new(Arc::new(p))))
            };
            let (o, n) = (parse(old), parse(new));
            // As for nodes below: the session sends pod changes with its features.
            return events_for_pod_change(o.as_ref(), n.as_ref(), &Features::default());
        }
        "Node" => {
            let parse = |v: Option<&serde_json::Value>| {
                v.and_then(|v| serde_json::from_value::<Node>(v.clone()).ok())
            };
            let (o, n) = (parse(old), parse(new));
            // The session sends node changes through `events_for_node_change` with its
            // features; this generic path has none (the library's default gates).
            return events_for_node_change(o.as_ref(), n.as_ref(), &Features::default());
        }
        _ => {}
    }
    let action = match (old, new) {
        (None, None) => return Vec::new(),
        // Upstream's slice tracker turns any DeviceTaintRule change into updates of the
        // slices whose devices it taints (or tainted).
        _ if kind == crate::api::dra::TAINT_RULE => ActionType::UPDATE,
        (None, Some(_)) => ActionType::ADD,
        (Some(_), Some(_)) => ActionType::UPDATE,
        (Some(_), None) => ActionType::DELETE,
    };
    vec![ClusterEvent::new(
        EventResource::from_kind(kind),
        action,
        old.cloned().map(EventObject::Other),
        new.cloned().map(EventObject::Other),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod;
    use ActionType as A;
    use EventResource as R;
    use serde_json::{Value, json};

    #[test]
    fn a_device_taint_rule_change_is_a_resource_slice_update() {
        let rule = json!({"kind": "DeviceTaintRule", "metadata": {"name": "r"}});
        for (old, new) in [
            (None, Some(&rule)),
            (Some(&rule), Some(&rule)),
            (Some(&rule), None),
        ] {
            let e = events_for_object("DeviceTaintRule", old, new);
            assert_eq!(e.len(), 1);
            assert_eq!(
                (&e[0].resource, e[0].action),
                (&R::ResourceSlice, A::UPDATE)
            );
        }
    }

    #[test]
    fn a_node_declaring_other_features_is_an_event_only_with_the_gate() {
        use crate::features::{Features, KubeVersion};
        let node = |f: Value| -> Node {
            serde_json::from_value(
                json!({"metadata": {"name": "n"}, "status": {"declaredFeatures": f}}),
            )
            .unwrap()
        };
        let (old, new) = (
            node(json!([])),
            node(json!(["RestartAllContainersOnContainerExits"])),
        );
        let actions = |v| -> Vec<ActionType> {
            events_for_node_change(Some(&old), Some(&new), &Features::version(v))
                .iter()
                .map(|e| e.action)
                .collect()
        };
        assert_eq!(
            actions(KubeVersion::V1_36),
            [A::UPDATE_NODE_DECLARED_FEATURE]
        );
        assert!(actions(KubeVersion::V1_35).is_empty());
    }

    /// `events_for_pod_change` for pods as they are written in tests.
    fn pod_change(old: Option<&Pod>, new: Option<&Pod>) -> Vec<ClusterEvent> {
        let info = |p: &Pod| Arc::new(PodInfo::new(Arc::new(p.clone())));
        events_for_pod_change(
            old.map(info).as_ref(),
            new.map(info).as_ref(),
            &Features::default(),
        )
    }

    fn node(name: &str, cpu: &str, labels: Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}))
        .unwrap()
    }

    fn bound(v: Value) -> Pod {
        pod(v).pod().clone()
    }

    #[test]
    fn event_derivation_from_object_changes() {
        let a = node("n", "1", json!({"a": "1"}));
        let mut b = node("n", "2", json!({"a": "2"}));
        b.metadata.annotations = Some([("k".to_string(), "v".to_string())].into());
        let labels: Vec<String> = events_for_node_change(Some(&a), Some(&b), &Default::default())
            .into_iter()
            .map(|e| e.label)
            .collect();
        assert_eq!(
            labels,
            [
                "NodeUpdateNodeAllocatable",
                "NodeUpdateNodeLabel",
                "NodeUpdateNodeAnnotation"
            ]
        );
        // 1000m is 1: no change at all.
        let c = node("n", "1000m", json!({"a": "1"}));
        assert!(events_for_node_change(Some(&a), Some(&c), &Default::default()).is_empty());
        let mut cordoned = a.clone();
        cordoned.spec = Some(serde_json::from_value(json!({"unschedulable": true})).unwrap());
        let uncordon: Vec<A> =
            events_for_node_change(Some(&cordoned), Some(&a), &Default::default())
                .iter()
                .map(|e| e.action)
                .collect();
        assert_eq!(uncordon, [A::UPDATE_NODE_TAINT]);
        assert!(events_for_node_change(Some(&a), Some(&cordoned), &Default::default()).is_empty());
        assert_eq!(
            events_for_node_change(Some(&a), None, &Default::default())[0].label,
            "NodeDelete"
        );

        let p =
            bound(json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n", "containers": []}}));
        assert_eq!(pod_change(None, Some(&p))[0].label, "AssignedPodAdd");
        let same = pod_change(Some(&p), Some(&p));
        assert_eq!(
            (same.len(), same[0].label.as_str()),
            (1, "AssignedPodUpdate")
        );
        let unbound = bound(json!({"metadata": {"name": "u"}, "spec": {"containers": []}}));
        let mut got_bound = unbound.clone();
        got_bound.spec.as_mut().unwrap().node_name = Some("n".into());
        assert_eq!(
            pod_change(Some(&unbound), Some(&got_bound))[0].label,
            "AssignedPodAdd"
        );
        assert!(pod_change(None, Some(&unbound)).is_empty());

        let pvc = json!({"metadata": {"name": "c", "namespace": "d"}});
        let e = events_for_object("PersistentVolumeClaim", None, Some(&pvc));
        assert_eq!(e[0].label, "PersistentVolumeClaimAdd");
        let e = events_for_object("CSINode", Some(&pvc), Some(&pvc));
        assert_eq!(e[0].label, "storage.k8s.io/CSINodeUpdate");
        let e = events_for_object("PodGroup", Some(&pvc), None);
        assert_eq!(e[0].resource, R::Custom("PodGroup".into()));
    }

    #[test]
    fn registered_events_match_as_upstream() {
        let reg = |r, a| EventType::new(r, a);
        assert!(reg(R::Node, A::UPDATE).matches(&reg(R::Node, A::UPDATE_NODE_LABEL)));
        assert!(!reg(R::Node, A::UPDATE_NODE_LABEL).matches(&reg(R::Node, A::UPDATE)));
        assert!(reg(R::Pod, A::ADD | A::DELETE).matches(&reg(R::AssignedPod, A::ADD)));
        assert!(reg(R::Pod, A::ALL).matches(&reg(R::UnschedulablePod, A::UPDATE_POD_LABEL)));
        assert!(!reg(R::Node, A::ALL).matches(&reg(R::WildCard, A::ALL)));
        assert!(reg(R::WildCard, A::ALL).matches(&reg(R::CsiNode, A::ADD)));
        assert_eq!(A::UPDATE.name(), "Update");
        assert_eq!(
            format!("{:?}", A::ADD | A::UPDATE_NODE_TAINT),
            "Add|UpdateNodeTaint"
        );
    }
}
