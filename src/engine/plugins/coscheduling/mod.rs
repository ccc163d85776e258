//! Coscheduling (kubernetes-sigs/scheduler-plugins): gang scheduling. Pods that name a
//! PodGroup in the `scheduling.x-k8s.io/pod-group` label are held at Permit until at least
//! `minMember` of the group are assumed or bound, then released together; when one member
//! cannot be placed, the waiting ones are rejected so that their resources free up.
//!
//! Not in the default profile: enable it at queueSort (replacing PrioritySort), preFilter,
//! postFilter, reserve and permit. Pods without the label pass through it (except at
//! PostFilter, whose "can not find pod group" answer upstream also gives them).
//!
//! Upstream keeps some memory between cycles (recently failed groups, groups whose
//! minResources passed, when a group last failed); so does this plugin, in
//! `GroupRecords`, timed by `Handle::now`. Group membership is not remembered: members
//! are counted from the pod lister (all pods) and the snapshot (assumed and bound pods).

mod pod_group;

// ---- queueing hints (EnqueueExtensions) ----

/// Coscheduling (scheduler-plugins): a new pod may complete a gang; a PodGroup added or
/// changed may change its minMember.
fn queueing_hints() -> Vec<ClusterEventWithHint> {
    vec![
        ClusterEventWithHint::new(R::Pod, A::ADD),
        ClusterEventWithHint::new(R::from_kind("PodGroup"), A::ADD | A::UPDATE),
    ]
}

/// Built from `CoschedulingArgs`, decoded here (it has no in-tree args type).
pub fn factory(
    ctx: &crate::framework::factory::FactoryContext,
) -> crate::framework::factory::Built {
    let args = CoschedulingArgs::from_plugin_args(ctx.args)?;
    Ok(std::sync::Arc::new(Coscheduling::new(args)?))
}

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;

pub use pod_group::{KIND, POD_GROUP_LABEL, PodGroup, full_name, group_label};

use crate::api::pod_resources::{self, ResourceList};
use crate::api::quantity::Quantity;
use crate::config::{BadValue, FieldError, FieldPath, PluginArgs};
use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::listers::Listers;
use crate::framework::plugin::{
    Handle, PermitPlugin, Plugin, PostFilterPlugin, PostFilterResult, PreFilterPlugin,
    PreFilterResult, QueueSortPlugin, ReservePlugin,
};
use crate::framework::queued::{PODS_TO_ACTIVATE_KEY, PodsToActivate, QueuedPodInfo};
use crate::framework::{
    Code, CycleState, NodeInfo, NodeToStatus, PodInfo, RenderState, Snapshot, StateTree, Status,
};
use crate::plugins::helper::RawArgs;

pub const NAME: &str = "Coscheduling";
pub const ARGS_KIND: &str = "CoschedulingArgs";
/// Where PreFilter and Permit describe the pod's group for this cycle.
pub const STATE_KEY: &str = "Coscheduling";
/// Upstream's key for the Permit state (whether to activate the siblings).
pub const PERMIT_STATE_KEY: &str = "PermitCoscheduling";

pub const DEFAULT_PERMIT_WAITING_TIME_SECONDS: i64 = 60;
pub const DEFAULT_POD_GROUP_BACKOFF_SECONDS: i64 = 0;
pub const DEFAULT_POD_GROUP_REJECT_PERCENTAGE: i32 = 10;
/// Upstream `util.DefaultWaitTime`: the wait when neither the group nor the args set one.
const DEFAULT_WAIT_TIME_SECONDS: i64 = 60;
/// How long a minResources pass is remembered when `permitWaitingTimeSeconds` is 0
/// (upstream's cache then falls back to its default expiration, 3s).
const PERMITTED_DEFAULT_TTL_SECONDS: i64 = 3;
/// How Go's zero `time.Time` sorts: before every real instant. A PodGroup without a
/// creation time has it.
const GO_ZERO_TIME: Timestamp = Timestamp::MIN;

/// `CoschedulingArgs` (v1 field names), with upstream's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoschedulingArgs {
    /// How long members wait at Permit for the rest of the group, unless the PodGroup sets
    /// `scheduleTimeoutSeconds`. Default 60.
    pub permit_waiting_time_seconds: i64,
    /// How long a group that failed is refused at PreFilter; 0 (the default) turns it off.
    pub pod_group_backoff_seconds: i64,
    /// PostFilter leaves the waiting members alone while the share of the group still to
    /// place is at most this percentage of minMember. Default 10.
    pub pod_group_reject_percentage: i32,
}

impl Default for CoschedulingArgs {
    fn default() -> Self {
        CoschedulingArgs {
            permit_waiting_time_seconds: DEFAULT_PERMIT_WAITING_TIME_SECONDS,
            pod_group_backoff_seconds: DEFAULT_POD_GROUP_BACKOFF_SECONDS,
            pod_group_reject_percentage: DEFAULT_POD_GROUP_REJECT_PERCENTAGE,
        }
    }
}

impl CoschedulingArgs {
    /// Decodes the profile's args (absent fields take the defaults) and validates them.
    pub fn from_plugin_args(args: Option<&PluginArgs>) -> Result<CoschedulingArgs, String> {
        let raw = RawArgs::new(
            args,
            ARGS_KIND,
            &[
                "permitWaitingTimeSeconds",
                "podGroupBackoffSeconds",
                "podGroupRejectPercentage",
            ],
        )?;
        let d = CoschedulingArgs::default();
        let a = CoschedulingArgs {
            permit_waiting_time_seconds: raw
                .int("permitWaitingTimeSeconds", "int64")?
                .unwrap_or(d.permit_waiting_time_seconds),
            pod_group_backoff_seconds: raw
                .int("podGroupBackoffSeconds", "int64")?
                .unwrap_or(d.pod_group_backoff_seconds),
            pod_group_reject_percentage: raw
                .int("podGroupRejectPercentage", "int32")?
                .unwrap_or(d.pod_group_reject_percentage),
        };
        a.validate()?;
        Ok(a)
    }

    /// Upstream `ValidateCoschedulingArgs`, with its messages.
    pub fn validate(&self) -> Result<(), String> {
        let mut errs = Vec::new();
        if self.permit_waiting_time_seconds < 0 {
            errs.push(FieldError::invalid(
                FieldPath::new("permitWaitingTimeSeconds"),
                BadValue::Int(self.permit_waiting_time_seconds),
                "must be greater than 0",
            ));
        }
        if self.pod_group_backoff_seconds < 0 {
            errs.push(FieldError::invalid(
                FieldPath::new("podGroupBackoffSeconds"),
                BadValue::Int(self.pod_group_backoff_seconds),
                "must be greater than 0",
            ));
        }
        if !(0..=100).contains(&self.pod_group_reject_percentage) {
            errs.push(FieldError::invalid(
                FieldPath::new("podGroupRejectPercentage"),
                BadValue::Int(i64::from(self.pod_group_reject_percentage)),
                "must be between 0 and 100",
            ));
        }
        let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
        match msgs.len() {
            0 => Ok(()),
            1 => Err(msgs[0].clone()),
            _ => Err(format!("[{}]", msgs.join(", "))),
        }
    }
}

fn seconds(s: i64) -> Duration {
    Duration::from_secs(u64::try_from(s).unwrap_or(0))
}

fn after(now: Timestamp, secs: i64) -> Timestamp {
    now.checked_add(SignedDuration::from_secs(secs))
        .unwrap_or(Timestamp::MAX)
}

/// What Coscheduling remembers between cycles, by group `namespace/name` (upstream's
/// PodGroupManager caches). The debugger can show it (`Coscheduling::records`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupRecords {
    /// Creation times of the PodGroups last seen in the cluster (`None`: the object has
    /// none), which QueueSort orders groups by.
    pub created: BTreeMap<String, Option<Timestamp>>,
    /// When the group's last attempt failed. Until a member is permitted, the group sorts
    /// by this instead of its creation time, so that it does not block the queue's head.
    pub last_failed: BTreeMap<String, Timestamp>,
    /// Groups refused at PreFilter until then (`podGroupBackoffSeconds`).
    pub backed_off_until: BTreeMap<String, Timestamp>,
    /// Groups whose minResources passed the cluster check; PreFilter does not check them
    /// again until then.
    pub permitted_until: BTreeMap<String, Timestamp>,
}

impl GroupRecords {
    /// The instant QueueSort orders a pod by (upstream `GetCreationTimestamp`).
    fn sort_time(&self, q: &QueuedPodInfo) -> Timestamp {
        let own = q.initial_attempt_timestamp.unwrap_or(q.timestamp);
        let Some(key) = full_name(&q.pod_info) else {
            return own;
        };
        if let Some(t) = self.last_failed.get(&key) {
            return *t;
        }
        match self.created.get(&key) {
            Some(t) => t.unwrap_or(GO_ZERO_TIME),
            None => own,
        }
    }

    /// Notes the creation time of one group as just read (or that it does not exist).
    fn note_group(&mut self, key: &str, found: Option<Option<Timestamp>>) {
        match found {
            Some(t) => {
                self.created.insert(key.to_string(), t);
            }
            None => {
                self.created.remove(key);
            }
        }
    }

    fn failed(&mut self, key: &str, now: Timestamp) {
        self.permitted_until.remove(key);
        self.last_failed.insert(key.to_string(), now);
    }
}

impl RenderState for GroupRecords {
    fn render(&self) -> StateTree {
        let times = |name: &str, m: &BTreeMap<String, Timestamp>| {
            StateTree::list(name, m.iter().map(|(k, t)| format!("{k}: {t}")))
        };
        StateTree::node(
            "Coscheduling records",
            vec![
                StateTree::list(
                    "podGroups",
                    self.created.iter().map(|(k, t)| match t {
                        Some(t) => format!("{k}: created {t}"),
                        None => format!("{k}: no creation time"),
                    }),
                ),
                times("last failed", &self.last_failed),
                times("backed off until", &self.backed_off_until),
                times("minResources passed, until", &self.permitted_until),
            ],
        )
    }
}

/// How PreFilter's minResources check went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceCheck {
    /// PreFilter did not get that far.
    NotReached,
    /// The group sets no minResources.
    NotSet,
    /// Passed recently; not checked again until then.
    Remembered(Timestamp),
    /// The cluster has room for minResources (and minMember pods).
    Passed,
    /// The cluster lacks this much.
    Gap(String),
}

/// The pod's group as this cycle sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupState {
    /// `namespace/name`
    pub group: String,
    /// `None` when no such PodGroup exists (the pod is then not held back).
    pub pod_group: Option<PodGroup>,
    /// Set while the group is backed off after a failure.
    pub backed_off_until: Option<Timestamp>,
    /// Pods of the group in the cluster, pending or placed, and how many are gated.
    pub members: Option<(usize, usize)>,
    pub resources: ResourceCheck,
    /// Members assumed or bound, this pod included (Permit).
    pub assigned: Option<usize>,
    /// Waiting members this cycle rejected (PostFilter, Unreserve).
    pub rejected_waiting: Vec<String>,
    /// Waiting members this cycle allowed (Permit).
    pub allowed_waiting: Vec<String>,
}

impl GroupState {
    fn new(group: String, pod_group: Option<PodGroup>) -> GroupState {
        GroupState {
            group,
            pod_group,
            backed_off_until: None,
            members: None,
            resources: ResourceCheck::NotReached,
            assigned: None,
            rejected_waiting: Vec::new(),
            allowed_waiting: Vec::new(),
        }
    }
}

fn render_resources(rl: &ResourceList) -> String {
    let parts: Vec<String> = rl.iter().map(|(k, q)| format!("{k}={q}")).collect();
    parts.join(", ")
}

impl RenderState for GroupState {
    fn render(&self) -> StateTree {
        let Some(pg) = &self.pod_group else {
            return StateTree::leaf(format!(
                "podGroup {}: not found (the pod is not held back)",
                self.group
            ));
        };
        let mut head = format!("podGroup {} (minMember {}", self.group, pg.min_member);
        if let Some(t) = pg.schedule_timeout_seconds {
            let _ = write!(head, ", scheduleTimeoutSeconds {t}");
        }
        head.push(')');
        let mut children = Vec::new();
        if let Some(t) = self.backed_off_until {
            children.push(StateTree::kv("backed off until", t));
        }
        if let Some((n, gated)) = self.members {
            children.push(StateTree::kv(
                "members in the cluster",
                format!("{n} ({gated} gated)"),
            ));
        }
        let res = match (&self.resources, &pg.min_resources) {
            (ResourceCheck::NotReached, _) => None,
            (ResourceCheck::NotSet, _) | (_, None) => Some("not set".to_string()),
            (ResourceCheck::Remembered(t), Some(rl)) => Some(format!(
                "{} (passed recently, not checked again until {t})",
                render_resources(rl)
            )),
            (ResourceCheck::Passed, Some(rl)) => {
                Some(format!("{} (the cluster has room)", render_resources(rl)))
            }
            (ResourceCheck::Gap(gap), Some(rl)) => {
                Some(format!("{} ({gap})", render_resources(rl)))
            }
        };
        if let Some(r) = res {
            children.push(StateTree::kv("minResources", r));
        }
        if let Some(a) = self.assigned {
            children.push(StateTree::kv(
                "assigned",
                format!("{a} of minMember {} (assumed or bound)", pg.min_member),
            ));
        }
        if !self.allowed_waiting.is_empty() {
            children.push(StateTree::list(
                "allowed waiting members",
                self.allowed_waiting.iter().cloned(),
            ));
        }
        if !self.rejected_waiting.is_empty() {
            children.push(StateTree::list(
                "rejected waiting members",
                self.rejected_waiting.iter().cloned(),
            ));
        }
        StateTree::node(head, children)
    }
}

/// Upstream's `PermitState`: set when the first member reaches Permit, so that its
/// siblings are moved to the active queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PermitState {
    pub activate: bool,
    /// kubestep's own: the first member came to Permit in the instant its group failed,
    /// so its siblings were not activated (see `Coscheduling::permit`).
    pub held_back: bool,
}

impl RenderState for PermitState {
    fn render(&self) -> StateTree {
        if self.held_back {
            return StateTree::kv(
                "activate siblings",
                "false (kubestep: the group failed at this instant; its members wait for an event, a timeout or the queue's flush)",
            );
        }
        StateTree::kv("activate siblings", self.activate)
    }
}

/// What a node has left for a group: allocatable minus what pods outside the group request
/// (upstream `getNodeResource`), as a resource list.
fn node_left_for_group(node: &NodeInfo, group: &str) -> ResourceList {
    let mut requested = node.requested.clone();
    let mut pods = node.pods.len();
    for p in &node.pods {
        if full_name(p).as_deref() == Some(group) {
            requested.add_signed(node.pod_request(p), -1);
            pods -= 1;
        }
    }
    let alloc = &node.allocatable;
    let units = |v: i64| Quantity::from_nanos(i128::from(v) * 1_000_000_000);
    let mut left = ResourceList::new();
    let milli_cpu = alloc.milli_cpu.saturating_sub(requested.milli_cpu);
    left.insert(
        pod_resources::CPU.into(),
        Quantity::from_nanos(i128::from(milli_cpu) * 1_000_000),
    );
    left.insert(
        pod_resources::MEMORY.into(),
        units(alloc.memory.saturating_sub(requested.memory)),
    );
    left.insert(
        pod_resources::EPHEMERAL_STORAGE.into(),
        units(
            alloc
                .ephemeral_storage
                .saturating_sub(requested.ephemeral_storage),
        ),
    );
    let pods = i64::try_from(pods).unwrap_or(i64::MAX);
    left.insert(
        pod_resources::PODS.into(),
        units(alloc.allowed_pod_number.saturating_sub(pods)),
    );
    for (name, a) in &alloc.scalar_resources {
        left.insert(
            name.clone(),
            units(a.saturating_sub(requested.scalar(name))),
        );
    }
    left
}

/// Upstream `CheckClusterResource`: walks the nodes, taking from the request what each
/// has left for the group, until nothing is left to find.
fn check_cluster_resource(
    snapshot: &Snapshot,
    mut request: ResourceList,
    group: &str,
) -> Result<(), String> {
    for node in snapshot.list() {
        let left = node_left_for_group(node, group);
        request.retain(|name, q| {
            let have = left.get(name).map_or(0, Quantity::nanos);
            let rest = q.nanos().saturating_sub(have);
            *q = Quantity::from_nanos(rest);
            rest > 0
        });
        if request.is_empty() {
            return Ok(());
        }
    }
    let parts: Vec<String> = request.iter().map(|(k, q)| format!("{k}:{q}")).collect();
    Err(format!("resource gap: map[{}]", parts.join(" ")))
}

/// Keys of the group's pods that are assumed or bound (in the snapshot).
fn assigned_keys<'a>(snapshot: &'a Snapshot, namespace: &str, group: &str) -> BTreeSet<&'a str> {
    snapshot
        .list()
        .iter()
        .flat_map(|n| n.pods.iter())
        .filter(|p| p.namespace == namespace && group_label(p) == Some(group))
        .map(|p| p.key.as_str())
        .collect()
}

/// The pods of a group in the cluster (the pod lister), with `this` pod counted even when
/// the lister does not hold it (a pod given on its own to `explain`).
fn members<'a>(listers: &'a Listers, this: &'a PodInfo, group: &'a str) -> Vec<&'a PodInfo> {
    let mut out: Vec<&PodInfo> = listers
        .pods_with_label(&this.namespace, POD_GROUP_LABEL, group)
        .map(|p| p.as_ref())
        .collect();
    if !listers.pods.contains_key(&this.key) {
        out.push(this);
    }
    out
}

/// A bound pod has no gates (the API server refuses them on a pod with a node), so
/// only pending pods, which are whole, are read.
fn is_gated(p: &PodInfo) -> bool {
    if p.is_packed() {
        return false;
    }
    p.pod()
        .spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| !g.is_empty())
}

/// The Coscheduling plugin.
#[derive(Debug, Default)]
pub struct Coscheduling {
    args: CoschedulingArgs,
    records: Mutex<GroupRecords>,
}

/// A group named by a pod: its key, and the PodGroup if one exists.
type Lookup = (String, Option<PodGroup>);

impl Coscheduling {
    pub fn new(args: CoschedulingArgs) -> Result<Coscheduling, String> {
        args.validate()?;
        Ok(Coscheduling {
            args,
            records: Mutex::new(GroupRecords::default()),
        })
    }

    pub fn args(&self) -> &CoschedulingArgs {
        &self.args
    }

    /// A copy of what the plugin remembers between cycles.
    pub fn records(&self) -> GroupRecords {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, GroupRecords> {
        // The records are plain maps; a panic elsewhere cannot leave them unusable.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pod's group: `Ok(None)` for a pod without the label, an error when the PodGroup
    /// object cannot be read. Notes the group's creation time for QueueSort.
    fn lookup(&self, h: &Handle, pod: &PodInfo) -> Result<Option<Lookup>, String> {
        let Some(key) = full_name(pod) else {
            return Ok(None);
        };
        let pg = PodGroup::lookup(h.listers, &key).transpose()?;
        self.lock()
            .note_group(&key, pg.as_ref().map(|g| g.creation_timestamp));
        Ok(Some((key, pg)))
    }

    /// Upstream `GetWaitTimeDuration` as Permit applies it: the group's
    /// scheduleTimeoutSeconds, else the args' wait, else 60s; a zero from the group falls
    /// back to the args' wait.
    fn wait_time(&self, pg: &PodGroup) -> Duration {
        let args = self.args.permit_waiting_time_seconds;
        let chosen = match pg.schedule_timeout_seconds {
            Some(s) => i64::from(s),
            None if args != 0 => args,
            None => DEFAULT_WAIT_TIME_SECONDS,
        };
        seconds(if chosen != 0 { chosen } else { args })
    }

    /// Rejects the waiting members of the group; returns their keys.
    fn reject_waiting(&self, h: &Handle, namespace: &str, group: &str, msg: &str) -> Vec<String> {
        let mut rejected = Vec::new();
        for w in h.waiting.list() {
            let member = w.pod.namespace == namespace && group_label(&w.pod) == Some(group);
            if member && h.waiting.reject(&w.pod.uid, NAME, msg) {
                rejected.push(w.pod.key.clone());
            }
        }
        rejected
    }

    /// Upstream `ActivateSiblings`: once asked to (the first member to wait), names the
    /// group's other pods for the queue to activate.
    fn activate_siblings(&self, h: &Handle, state: &mut CycleState, pod: &PodInfo, group: &str) {
        if !state
            .read::<PermitState>(PERMIT_STATE_KEY)
            .is_ok_and(|s| s.activate)
        {
            return;
        }
        let siblings: Vec<(String, Arc<Pod>)> = h
            .listers
            .pods_with_label(&pod.namespace, POD_GROUP_LABEL, group)
            .filter(|p| p.uid != pod.uid)
            .map(|p| (p.key.clone(), p.full_pod()))
            .collect();
        if siblings.is_empty() {
            return;
        }
        if state.read::<PodsToActivate>(PODS_TO_ACTIVATE_KEY).is_err() {
            state.write(PODS_TO_ACTIVATE_KEY, PodsToActivate::default());
        }
        if let Ok(s) = state.read_mut::<PodsToActivate>(PODS_TO_ACTIVATE_KEY) {
            s.pods.extend(siblings);
        }
    }
}

impl Plugin for Coscheduling {
    fn name(&self) -> &'static str {
        NAME
    }
    // A pod group's backoff and scheduling timeout run on the clock.
    fn verdict_moves_with_clock(&self) -> bool {
        true
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(queueing_hints())
    }
    fn save_state(&self) -> Option<crate::framework::plugin::PluginState> {
        Some(std::sync::Arc::new(self.records()))
    }
    fn restore_state(&self, state: &crate::framework::plugin::PluginState) {
        if let Some(r) = state.downcast_ref::<GroupRecords>() {
            *self.lock() = r.clone();
        }
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        Some(self)
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        Some(self)
    }
    fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
        Some(self)
    }
    fn as_permit(&self) -> Option<&dyn PermitPlugin> {
        Some(self)
    }
}

impl QueueSortPlugin for Coscheduling {
    /// Higher priority first; then the earlier of the group's creation (or last failure)
    /// time, or the pod's first attempt for pods outside any known group; then the pod key.
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod_info.priority, b.pod_info.priority);
        if pa != pb {
            return pa > pb;
        }
        let (ta, tb) = {
            let r = self.lock();
            (r.sort_time(a), r.sort_time(b))
        };
        if ta == tb {
            return a.pod_info.key < b.pod_info.key;
        }
        ta < tb
    }

    fn refresh(&self, listers: &Listers) {
        let created = listers
            .custom_objects(KIND)
            .map(|(k, v)| (k.clone(), pod_group::creation_time(v)))
            .collect();
        self.lock().created = created;
    }
}

impl PreFilterPlugin for Coscheduling {
    fn pre_filter(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (Option<PreFilterResult>, Status) {
        let (key, pg) = match self.lookup(h, pod) {
            Ok(Some(found)) => found,
            Ok(None) => return (None, Status::success()),
            Err(e) => return (None, Status::error(e)),
        };
        let Some(pg) = pg else {
            state.write(STATE_KEY, GroupState::new(key, None));
            return (None, Status::success());
        };
        let mut st = GroupState::new(key.clone(), Some(pg.clone()));
        let status = self.check_group(h, pod, &key, &pg, &mut st);
        state.write(STATE_KEY, st);
        // A refusal is UnschedulableAndUnresolvable, so no preemption is tried for it.
        (None, status)
    }
}

impl Coscheduling {
    /// Upstream's PreFilter checks, in order: backoff, quorum, gated members, minResources.
    fn check_group(
        &self,
        h: &Handle,
        pod: &PodInfo,
        key: &str,
        pg: &PodGroup,
        st: &mut GroupState,
    ) -> Status {
        let backed_off = self
            .lock()
            .backed_off_until
            .get(key)
            .copied()
            .filter(|t| *t > h.now);
        if let Some(until) = backed_off {
            st.backed_off_until = Some(until);
            return Status::unresolvable(format!("podGroup {key} failed recently"));
        }

        let group = pg.name.as_str();
        let pods = members(h.listers, pod, group);
        let gated = pods.iter().filter(|p| is_gated(p)).count();
        st.members = Some((pods.len(), gated));
        let total = i64::try_from(pods.len()).unwrap_or(i64::MAX);
        let gap = i64::from(pg.min_member) - total;
        if gap > 0 {
            return Status::unresolvable(format!(
                "pre-filter pod {} cannot find enough sibling pods, current pods number: {}, minMember of group: {}",
                pod.name,
                pods.len(),
                pg.min_member
            ));
        }
        // Gated members cannot be placed yet; only a surplus over minMember covers them.
        if gap + i64::try_from(gated).unwrap_or(i64::MAX) > 0 {
            return Status::unresolvable(format!(
                "pre-filter pod {} cannot proceed due to gated pods in the same PodGroup",
                pod.name
            ));
        }

        let Some(min_resources) = &pg.min_resources else {
            st.resources = ResourceCheck::NotSet;
            return Status::success();
        };
        let remembered = self
            .lock()
            .permitted_until
            .get(key)
            .copied()
            .filter(|t| *t > h.now);
        if let Some(until) = remembered {
            st.resources = ResourceCheck::Remembered(until);
            return Status::success();
        }
        let mut request = min_resources.clone();
        request.insert(
            pod_resources::PODS.into(),
            Quantity::from_nanos(i128::from(pg.min_member) * 1_000_000_000),
        );
        if let Err(gap) = check_cluster_resource(h.snapshot, request, key) {
            st.resources = ResourceCheck::Gap(gap.clone());
            return Status::unresolvable(gap);
        }
        st.resources = ResourceCheck::Passed;
        let ttl = match self.args.permit_waiting_time_seconds {
            0 => PERMITTED_DEFAULT_TTL_SECONDS,
            s => s,
        };
        self.lock()
            .permitted_until
            .insert(key.to_string(), after(h.now, ttl));
        Status::success()
    }
}

impl PostFilterPlugin for Coscheduling {
    fn post_filter(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        _statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let nothing = Some(PostFilterResult::default());
        let (key, pg) = match self.lookup(h, pod) {
            Ok(Some((key, Some(pg)))) => (key, pg),
            Ok(_) => return (nothing, Status::unschedulable("can not find pod group")),
            Err(e) => return (None, Status::error(e)),
        };
        let min = i64::from(pg.min_member);
        let assigned = assigned_keys(h.snapshot, &pod.namespace, &pg.name).len();
        let assigned = i64::try_from(assigned).unwrap_or(i64::MAX);
        // Enough members are placed already: no reason to give up on the group.
        if assigned >= min {
            return (nothing, Status::code_only(Code::Unschedulable));
        }
        // Few left to place: later members may still complete the group.
        let not_assigned = (min - assigned) as f64 / min as f64;
        let threshold = f64::from(self.args.pod_group_reject_percentage) / 100.0;
        if not_assigned <= threshold {
            return (nothing, Status::code_only(Code::Unschedulable));
        }

        // If this member cannot be placed, the others likely cannot either: release them.
        let rejected = self.reject_waiting(
            h,
            &pod.namespace,
            &pg.name,
            "optimistic rejection in PostFilter",
        );
        let backoff = self.args.pod_group_backoff_seconds;
        let mut records = self.lock();
        if backoff > 0 {
            let total = members(h.listers, pod, &pg.name).len();
            if i64::try_from(total).unwrap_or(i64::MAX) >= min {
                records
                    .backed_off_until
                    .insert(key.clone(), after(h.now, backoff));
            }
        }
        records.failed(&key, h.now);
        drop(records);
        if let Ok(st) = state.read_mut::<GroupState>(STATE_KEY) {
            st.rejected_waiting = rejected;
        }
        (
            nothing,
            Status::unschedulable(format!(
                "PodGroup {key} gets rejected due to Pod {} is unschedulable even after PostFilter",
                pod.name
            )),
        )
    }
}

impl ReservePlugin for Coscheduling {
    fn reserve(&self, _h: &Handle, _state: &mut CycleState, _pod: &PodInfo, _node: &str) -> Status {
        Status::success()
    }

    /// A member that will not bind (rejected, timed out, failed later): the rest of the
    /// group waiting at Permit is rejected too, and the group counts as failed.
    fn unreserve(&self, h: &Handle, state: &mut CycleState, pod: &PodInfo, _node: &str) {
        let Ok(Some((key, Some(pg)))) = self.lookup(h, pod) else {
            return;
        };
        let rejected = self.reject_waiting(h, &pod.namespace, &pg.name, "rejection in Unreserve");
        self.lock().failed(&key, h.now);
        match state.read_mut::<GroupState>(STATE_KEY) {
            Ok(st) => st.rejected_waiting = rejected,
            Err(_) => {
                let mut st = GroupState::new(key, Some(pg));
                st.rejected_waiting = rejected;
                state.write(STATE_KEY, st);
            }
        }
    }
}

impl PermitPlugin for Coscheduling {
    fn permit(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        _node: &str,
    ) -> (Status, Duration) {
        let (key, pg) = match self.lookup(h, pod) {
            Ok(Some((key, Some(pg)))) => (key, pg),
            Ok(Some((_, None))) => {
                return (Status::unschedulable("PodGroup not found"), Duration::ZERO);
            }
            Ok(None) => return (Status::success(), Duration::ZERO),
            Err(e) => return (Status::error(e), Duration::ZERO),
        };
        // The pod itself counts whether or not it is in the snapshot yet.
        let mut keys = assigned_keys(h.snapshot, &pod.namespace, &pg.name);
        keys.insert(&pod.key);
        let assigned = keys.len();
        let min = usize::try_from(pg.min_member).unwrap_or(0);
        if state.read::<GroupState>(STATE_KEY).is_err() {
            state.write(STATE_KEY, GroupState::new(key.clone(), Some(pg.clone())));
        }
        if assigned >= min {
            let mut allowed = Vec::new();
            // A simulation only asks for the answer: the group's failure backoff stays
            // and waiting members stay held.
            if !h.simulation {
                self.lock().last_failed.remove(&key);
            }
            for w in h.waiting.list().into_iter().filter(|_| !h.simulation) {
                let member = full_name(&w.pod).as_deref() == Some(key.as_str());
                if member && h.waiting.allow(&w.pod.uid, NAME) {
                    allowed.push(w.pod.key.clone());
                }
            }
            if let Ok(st) = state.read_mut::<GroupState>(STATE_KEY) {
                st.assigned = Some(assigned);
                st.allowed_waiting = allowed;
            }
            return (Status::success(), Duration::ZERO);
        }
        if let Ok(st) = state.read_mut::<GroupState>(STATE_KEY) {
            st.assigned = Some(assigned);
        }
        if assigned == 1 {
            // Upstream activates the siblings here. When the group failed at this very
            // instant (PostFilter's optimistic rejection, or Unreserve), those siblings are
            // the members that were just rejected: upstream brings them straight back
            // and, for a group that cannot be placed, repeats that round for as long as
            // it cannot (kubernetes-sigs/scheduler-plugins#429), each round taking real
            // time. On the virtual clock rounds take none, so that loop would never let
            // time pass: kubestep leaves the rejected members where their failure put
            // them, for a cluster event, this member's Permit timeout or the queue's
            // flush to move them, as time passes.
            let failed_now = self.lock().last_failed.get(&key) == Some(&h.now);
            state.write(
                PERMIT_STATE_KEY,
                PermitState {
                    activate: !failed_now,
                    held_back: failed_now,
                },
            );
        }
        let wait = self.wait_time(&pg);
        self.activate_siblings(h, state, pod, &pg.name);
        let status = Status::new(
            Code::Wait,
            format!(
                "waiting for PodGroup {key}: {assigned} of minMember {} assumed or bound",
                pg.min_member
            ),
        );
        (status, wait)
    }
}
