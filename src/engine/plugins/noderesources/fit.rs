//! NodeResourcesFit: Filter checks the pod's requests against what is left on the node
//! (and the pod count); Score ranks nodes by a configurable strategy (LeastAllocated by
//! default).

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

use super::resource_allocation::{
    ResourceAllocationScorer, ResourceSpec, Strategy, default_resources,
};
use crate::api::pod_resources::is_scalar_resource_name;
use crate::api::pod_resources::{self, is_extended_resource_name};
use crate::framework::events::EventObject;
use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::hints::HintResult;
use crate::framework::hints::access::{
    as_nodes, as_objects, as_pods, pod_node_name, pod_nominated, pod_uid, required, skip_or_queue,
};
use crate::framework::plugin::{
    FilterPlugin, Handle, Plugin, PreFilterPlugin, PreFilterResult, PreScorePlugin, ScorePlugin,
};
use crate::framework::{CycleState, NodeInfo, PodInfo, RenderState, Resource, StateTree, Status};
use k8s_openapi::api::core::v1::Pod;

pub const NAME: &str = "NodeResourcesFit";
const PRE_FILTER_STATE_KEY: &str = "PreFilterNodeResourcesFit";
const PRE_SCORE_STATE_KEY: &str = "PreScoreNodeResourcesFit";

/// What the plugin is configured with (from NodeResourcesFitArgs).
#[derive(Debug, Clone)]
pub struct FitArgs {
    pub ignored_resources: Vec<String>,
    pub ignored_resource_groups: Vec<String>,
    pub strategy: Strategy,
    pub resources: Vec<ResourceSpec>,
}

impl Default for FitArgs {
    fn default() -> Self {
        FitArgs {
            ignored_resources: Vec::new(),
            ignored_resource_groups: Vec::new(),
            strategy: Strategy::LeastAllocated,
            resources: default_resources(),
        }
    }
}

#[derive(Debug)]
pub struct Fit {
    ignored_resources: BTreeSet<String>,
    ignored_resource_groups: BTreeSet<String>,
    scorer: ResourceAllocationScorer,
    /// InPlacePodLevelResourcesVerticalScaling, for the scale-down hint.
    pod_level_resize: bool,
    /// DRAExtendedResource: which pods SignPod refuses.
    dra_sign: DraSign,
    /// DRAExtendedResource: extended resources a DeviceClass serves are left to
    /// DynamicResources on nodes that do not advertise them.
    dra_extended: bool,
}

/// What SignPod does under DRAExtendedResource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraSign {
    /// The gate is off: every pod is signed.
    Off,
    /// 1.35: no pod is signed.
    Never,
    /// 1.36: pods whose extended resources a DeviceClass serves are not.
    UnlessDeviceClass,
}

impl Default for Fit {
    fn default() -> Self {
        Fit::new(FitArgs::default())
    }
}

impl Fit {
    pub fn new(args: FitArgs) -> Fit {
        Fit {
            ignored_resources: args.ignored_resources.into_iter().collect(),
            ignored_resource_groups: args.ignored_resource_groups.into_iter().collect(),
            scorer: ResourceAllocationScorer::new(args.resources, args.strategy, false),
            pod_level_resize: false,
            dra_sign: DraSign::Off,
            dra_extended: false,
        }
    }

    /// DRAExtendedResource on: SignPod as the version does, and resources a DeviceClass
    /// serves delegated to DynamicResources.
    pub fn with_dra_sign(self, dra_sign: DraSign) -> Fit {
        let on = dra_sign != DraSign::Off;
        let mut scorer = self.scorer;
        scorer.dra_extended = on;
        Fit {
            dra_sign,
            dra_extended: on,
            scorer,
            ..self
        }
    }

    pub fn with_pod_level_resize(self, on: bool) -> Fit {
        Fit {
            pod_level_resize: on,
            ..self
        }
    }
}

/// The pod's nonzero extended resources a DeviceClass serves (DRAExtendedResource): on a
/// node that does not advertise one, DynamicResources allocates devices for it instead.
pub type DraServed = BTreeSet<String>;

fn dra_served(listers: &crate::framework::listers::Listers, req: &Resource) -> DraServed {
    use crate::plugins::dynamicresources::extended::{ClassResolver, is_dra_extended_resource_name};
    let wanted: Vec<&String> = req
        .scalar_resources
        .iter()
        .filter(|(n, v)| **v != 0 && is_dra_extended_resource_name(n))
        .map(|(k, _)| k)
        .collect();
    if wanted.is_empty() {
        return DraServed::new();
    }
    let resolver = ClassResolver::of(listers);
    wanted
        .into_iter()
        .filter(|n| resolver.get(n).is_some())
        .cloned()
        .collect()
}

/// The pod's requests as PreFilter computes them (no defaults, no resize status), and
/// which of them DeviceClasses serve.
#[derive(Debug, Clone)]
pub struct PreFilterState(pub Resource, pub DraServed);

impl RenderState for PreFilterState {
    fn render(&self) -> StateTree {
        let mut t = render_resource("podRequests", &self.0);
        if !self.1.is_empty() {
            t = StateTree::node(
                "NodeResourcesFit",
                vec![
                    t,
                    StateTree::list(
                        "served by DeviceClasses where a node does not advertise them",
                        self.1.iter().cloned(),
                    ),
                ],
            );
        }
        t
    }
}

pub fn render_resource(label: &str, r: &Resource) -> StateTree {
    let mut children = vec![
        StateTree::kv("cpu", format!("{}m", r.milli_cpu)),
        StateTree::kv("memory", r.memory),
        StateTree::kv("ephemeral-storage", r.ephemeral_storage),
    ];
    for (k, v) in &r.scalar_resources {
        children.push(StateTree::kv(k, v));
    }
    StateTree::node(label, children)
}

#[derive(Debug, Clone)]
struct PreScoreState {
    pod_requests: Vec<i64>,
    names: Vec<String>,
    dra: Option<Arc<super::resource_allocation::DeviceTotals>>,
}

impl RenderState for PreScoreState {
    fn render(&self) -> StateTree {
        StateTree::node(
            "podRequests (with defaults)",
            self.names
                .iter()
                .zip(&self.pod_requests)
                .map(|(n, v)| StateTree::kv(n, v))
                .collect(),
        )
    }
}

/// The pod's requests as this cycle's PreFilter left them, so an explanation compares
/// nodes against exactly what Filter checked.
pub fn pod_request(state: &CycleState) -> Option<&Resource> {
    state
        .read::<PreFilterState>(PRE_FILTER_STATE_KEY)
        .ok()
        .map(|s| &s.0)
}

/// `SetMaxResource` over an empty Resource: known resources only, never below zero.
pub(crate) fn pre_filter_resource(pod: &PodInfo) -> Resource {
    let reqs = pod_resources::pod_requests_with(pod.pod(), false, None);
    let mut r = Resource::default();
    for (name, q) in &reqs {
        match name.as_str() {
            pod_resources::CPU => r.milli_cpu = r.milli_cpu.max(q.milli_value()),
            pod_resources::MEMORY => r.memory = r.memory.max(q.value()),
            pod_resources::EPHEMERAL_STORAGE => {
                r.ephemeral_storage = r.ephemeral_storage.max(q.value())
            }
            n if pod_resources::is_scalar_resource_name(n) => {
                r.scalar_resources.insert(n.to_string(), q.value().max(0));
            }
            _ => {}
        }
    }
    r
}

/// A resource the node cannot give: its reason and whether no amount of preemption helps.
pub(crate) struct Insufficient {
    pub(crate) reason: String,
    pub(crate) unresolvable: bool,
}

impl Fit {
    pub(crate) fn fits_request(
        &self,
        req: &Resource,
        node: &NodeInfo,
        dra: &DraServed,
    ) -> Vec<Insufficient> {
        let mut out = Vec::new();
        let alloc = &node.allocatable;
        let used = &node.requested;
        if node.pods.len() as i64 + 1 > alloc.allowed_pod_number {
            out.push(Insufficient {
                reason: "Too many pods".into(),
                unresolvable: false,
            });
        }
        if req.milli_cpu == 0
            && req.memory == 0
            && req.ephemeral_storage == 0
            && req.scalar_resources.is_empty()
        {
            return out;
        }
        let mut check = |name: &str, want: i64, have: i64, in_use: i64| {
            if want > 0 && want > have - in_use {
                out.push(Insufficient {
                    reason: format!("Insufficient {name}"),
                    unresolvable: want > have,
                });
            }
        };
        check("cpu", req.milli_cpu, alloc.milli_cpu, used.milli_cpu);
        check("memory", req.memory, alloc.memory, used.memory);
        check(
            "ephemeral-storage",
            req.ephemeral_storage,
            alloc.ephemeral_storage,
            used.ephemeral_storage,
        );
        for (name, &want) in &req.scalar_resources {
            if want == 0 {
                continue;
            }
            if is_extended_resource_name(name) {
                let group = name.split('/').next().unwrap_or("");
                if self.ignored_resources.contains(name)
                    || self.ignored_resource_groups.contains(group)
                {
                    continue;
                }
            }
            let have = alloc.scalar(name);
            if have <= 0 && dra.contains(name) {
                continue;
            }
            if want > have - used.scalar(name) {
                out.push(Insufficient {
                    reason: format!("Insufficient {name}"),
                    unresolvable: want > have,
                });
            }
        }
        out
    }
}

impl Plugin for Fit {
    fn sign_pod(&self, pod: &PodInfo) -> Option<crate::framework::signature::SignResult> {
        Some(Ok(vec![crate::plugins::signers::resources(pod)]))
    }
    fn sign_pod_in(
        &self,
        pod: &PodInfo,
        listers: &crate::framework::listers::Listers,
    ) -> Option<crate::framework::signature::SignResult> {
        match self.dra_sign {
            DraSign::Off => {}
            DraSign::Never => {
                return Some(Err(
                    "signature disabled when dra extended resources enabled".into()
                ));
            }
            DraSign::UnlessDeviceClass => {
                if !dra_served(listers, &pod.resource.resource).is_empty() {
                    return Some(Err(
                        "signature disabled when dra extended resources are used in the cluster"
                            .into(),
                    ));
                }
            }
        }
        self.sign_pod(pod)
    }
    fn name(&self) -> &'static str {
        NAME
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(queueing_hints(self.pod_level_resize, self.dra_extended))
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
    // Upstream's Fit scores pod-group placements from 1.36; the framework lists it under
    // placementScore only in versions with placement sets.
    fn is_placement_score(&self) -> bool {
        true
    }
}

impl PreFilterPlugin for Fit {
    fn pre_filter(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (Option<PreFilterResult>, Status) {
        let req = pre_filter_resource(pod);
        let dra = if self.dra_extended {
            dra_served(h.listers, &req)
        } else {
            DraServed::new()
        };
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(req, dra));
        (None, Status::success())
    }
}

impl FilterPlugin for Fit {
    fn filter(&self, _h: &Handle, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Ok(PreFilterState(req, dra)) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return Status::error(format!(
                "error reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"
            ));
        };
        let insufficient = self.fits_request(req, node, dra);
        if insufficient.is_empty() {
            return Status::success();
        }
        let code = if insufficient.iter().any(|i| i.unresolvable) {
            crate::framework::Code::UnschedulableAndUnresolvable
        } else {
            crate::framework::Code::Unschedulable
        };
        Status::with_reasons(
            code,
            insufficient.into_iter().map(|i| i.reason.into()).collect(),
        )
    }
}

impl PreScorePlugin for Fit {
    fn pre_score(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[&NodeInfo],
    ) -> Status {
        let pod_requests = self.scorer.pod_requests(pod);
        let dra = self.scorer.device_totals(h.listers);
        let names = self
            .scorer
            .resources
            .iter()
            .map(|r| r.name.clone())
            .collect();
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                pod_requests,
                names,
                dra,
            },
        );
        Status::success()
    }
}

impl Fit {
    /// The pod's requests and the devices serving configured resources as PreScore
    /// stored them (computed afresh if it did not run).
    fn score_requests<'a>(
        &self,
        h: &Handle,
        state: &'a CycleState,
        pod: &PodInfo,
    ) -> (Cow<'a, [i64]>, Option<Arc<super::resource_allocation::DeviceTotals>>) {
        match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Ok(s) => (Cow::Borrowed(&s.pod_requests), s.dra.clone()),
            Err(_) => (
                Cow::Owned(self.scorer.pod_requests(pod)),
                self.scorer.device_totals(h.listers),
            ),
        }
    }
}

impl ScorePlugin for Fit {
    fn score(
        &self,
        h: &Handle,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> (i64, Status) {
        let (requests, dra) = self.score_requests(h, state, pod);
        (self.scorer.score(node, &requests, dra.as_deref()), Status::success())
    }

    fn score_nodes(
        &self,
        h: &Handle,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Option<(usize, Status)> {
        let (requests, dra) = self.score_requests(h, state, pod);
        self.scorer.score_all(nodes, &requests, dra.as_deref(), out);
        None
    }
}

// ---- queueing hints (EnqueueExtensions) ----

/// NodeResourcesFit's EnqueueExtensions.
pub(crate) fn queueing_hints(pod_level_resize: bool, dra_extended: bool) -> Vec<ClusterEventWithHint> {
    // InPlacePodVerticalScaling is on (GA): scale-downs of other pods may free room.
    let mut events = vec![
        ClusterEventWithHint::with_hint(
            R::Pod,
            A::DELETE | A::UPDATE_POD_SCALE_DOWN,
            move |_, pod, old, new| fit_after_pod_event(pod, old, new, pod_level_resize),
        ),
        ClusterEventWithHint::with_hint(
            R::Node,
            A::ADD | A::UPDATE_NODE_ALLOCATABLE,
            move |h, pod, old, new| {
                let request = pre_filter_resource(pod);
                let dra = if dra_extended {
                    dra_served(h.listers, &request)
                } else {
                    DraServed::new()
                };
                fit_after_node_change(&request, &dra, old, new)
            },
        ),
    ];
    if dra_extended {
        // A class that now serves an extended resource the pod asks for.
        events.push(ClusterEventWithHint::with_hint(
            R::DeviceClass,
            A::ADD | A::UPDATE,
            |_, pod, old, new| fit_after_device_class(pod, old, new),
        ));
    }
    events
}

/// `isSchedulableAfterDeviceClassEvent`: an added class whose implicit name the pod
/// requests, or a class whose `extendedResourceName` changed to one the pod requests.
fn fit_after_device_class(
    pod: &PodInfo,
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> HintResult {
    use k8s_openapi::api::resource::v1::DeviceClass;
    let (original, modified) = as_objects::<DeviceClass>(old, new)?;
    let modified = required(modified, "device class")?;
    let explicit = |c: &DeviceClass| c.spec.extended_resource_name.clone().unwrap_or_default();
    let requests = pod_resources::pod_requests(pod.pod(), None);
    match original {
        Some(original) if explicit(&original) == explicit(&modified) => return skip_or_queue(false),
        Some(_) => {}
        None => {
            let implicit = format!(
                "{}{}",
                crate::plugins::dynamicresources::extended::IMPLICIT_PREFIX,
                modified.metadata.name.as_deref().unwrap_or("")
            );
            if requests.contains_key(&implicit) {
                return skip_or_queue(true);
            }
        }
    }
    let named = modified.spec.extended_resource_name.as_ref();
    skip_or_queue(named.is_some_and(|n| requests.contains_key(n)))
}

fn fit_after_pod_event(
    pod: &PodInfo,
    old: Option<&EventObject>,
    new: Option<&EventObject>,
    pod_level_resize: bool,
) -> HintResult {
    let (original, modified) = as_pods(old, new)?;
    let Some(modified) = modified else {
        // A deleted pod frees room only if it was on (or nominated to) a node.
        let original = required(original, "pod")?;
        return skip_or_queue(
            !(pod_node_name(original).is_empty() && pod_nominated(original).is_empty()),
        );
    };
    let original = required(original, "old pod")?;
    skip_or_queue(scale_down_helps(pod, original, modified, pod_level_resize))
}

/// Requests of a pod as `SetMaxResource` over an empty Resource.
fn max_resource(p: &Pod, pod_level_resize: bool) -> Resource {
    let mut r = Resource::default();
    for (name, q) in &pod_resources::pod_requests_for(p, None, pod_level_resize) {
        match name.as_str() {
            pod_resources::CPU => r.milli_cpu = r.milli_cpu.max(q.milli_value()),
            pod_resources::MEMORY => r.memory = r.memory.max(q.value()),
            pod_resources::EPHEMERAL_STORAGE => {
                r.ephemeral_storage = r.ephemeral_storage.max(q.value())
            }
            n if is_scalar_resource_name(n) => {
                let e = r.scalar_resources.entry(n.to_string()).or_default();
                *e = (*e).max(q.value());
            }
            _ => {}
        }
    }
    r
}

/// The scaled-down pod is the target itself, or a bound pod that now requests less of a
/// resource the target asks for.
fn scale_down_helps(
    target: &PodInfo,
    original: &Pod,
    modified: &Pod,
    pod_level_resize: bool,
) -> bool {
    if pod_uid(modified) == target.uid {
        return true;
    }
    if pod_node_name(modified).is_empty() {
        return false;
    }
    let (o, m) = (
        max_resource(original, pod_level_resize),
        max_resource(modified, pod_level_resize),
    );
    pod_resources::pod_requests_for(target.pod(), None, pod_level_resize)
        .iter()
        .filter(|(_, q)| !q.is_zero())
        .any(|(name, _)| match name.as_str() {
            pod_resources::CPU => o.milli_cpu > m.milli_cpu,
            pod_resources::MEMORY => o.memory > m.memory,
            pod_resources::EPHEMERAL_STORAGE => o.ephemeral_storage > m.ephemeral_storage,
            n => is_scalar_resource_name(n) && o.scalar(n) > m.scalar(n),
        })
}

fn fit_after_node_change(
    request: &Resource,
    dra: &DraServed,
    old: Option<&EventObject>,
    new: Option<&EventObject>,
) -> HintResult {
    let (original, modified) = as_nodes(old, new)?;
    // An empty node of this shape: would the pod fit at all?
    let fits = modified.is_some_and(|n| {
        Fit::default()
            .fits_request(request, &NodeInfo::new(Arc::clone(n)), dra)
            .is_empty()
    });
    if !fits {
        return skip_or_queue(false);
    }
    let Some(original) = original else {
        return skip_or_queue(true);
    };
    let modified = required(modified, "node")?;
    skip_or_queue(requested_resources_increased(
        request,
        &NodeInfo::new(Arc::clone(original)).allocatable,
        &NodeInfo::new(Arc::clone(modified)).allocatable,
        dra,
    ))
}

/// `haveAnyRequestedResourcesIncreased`: more pods allowed, or more of something the pod
/// requests (or a node that leaves one to DynamicResources).
fn requested_resources_increased(
    req: &Resource,
    before: &Resource,
    after: &Resource,
    dra: &DraServed,
) -> bool {
    if after.allowed_pod_number > before.allowed_pod_number {
        return true;
    }
    if req.milli_cpu == 0
        && req.memory == 0
        && req.ephemeral_storage == 0
        && req.scalar_resources.is_empty()
    {
        return false;
    }
    if (req.milli_cpu > 0 && after.milli_cpu > before.milli_cpu)
        || (req.memory > 0 && after.memory > before.memory)
        || (req.ephemeral_storage > 0 && after.ephemeral_storage > before.ephemeral_storage)
    {
        return true;
    }
    req.scalar_resources
        .iter()
        .filter(|(_, v)| **v != 0)
        .any(|(name, _)| {
            after.scalar(name) > before.scalar(name)
                || (after.scalar(name) <= 0 && dra.contains(name))
        })
}

/// Built from validated `NodeResourcesFitArgs`: the scoring strategy becomes the scorer
/// (a RequestedToCapacityRatio shape scaled from 0..10 to 0..100).
pub fn factory(
    ctx: &crate::framework::factory::FactoryContext,
) -> crate::framework::factory::Built {
    use super::resource_allocation::{MAX_CUSTOM_PRIORITY_SCORE, ShapePoint, Strategy};
    use crate::config::ScoringStrategyType;
    let args: crate::config::NodeResourcesFitArgs = ctx.args()?;
    let root = crate::config::FieldPath::root();
    crate::framework::factory::BuildError::check(crate::config::validate_node_resources_fit_args(
        &args,
        &root,
        ctx.features,
    ))?;
    let s = &args.scoring_strategy;
    let strategy = match &s.type_ {
        ScoringStrategyType::LeastAllocated => Strategy::LeastAllocated,
        ScoringStrategyType::MostAllocated => Strategy::MostAllocated,
        ScoringStrategyType::RequestedToCapacityRatio => {
            let shape = s
                .requested_to_capacity_ratio
                .as_ref()
                .map_or(&[][..], |r| &r.shape[..]);
            let scale = crate::framework::plugin::MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE;
            Strategy::RequestedToCapacityRatio(
                shape
                    .iter()
                    .map(|p| ShapePoint {
                        utilization: i64::from(p.utilization),
                        score: i64::from(p.score) * scale,
                    })
                    .collect(),
            )
        }
        ScoringStrategyType::Other(t) => {
            return Err(format!("scoring strategy {t} is not supported").into());
        }
    };
    let resize = ctx
        .features
        .enabled(crate::features::Gate::InPlacePodLevelResourcesVerticalScaling);
    Ok(std::sync::Arc::new(
        Fit::new(FitArgs {
            ignored_resources: args.ignored_resources.clone(),
            ignored_resource_groups: args.ignored_resource_groups.clone(),
            strategy,
            resources: s.resources.clone(),
        })
        .with_pod_level_resize(resize)
        .with_dra_sign(
            if !ctx.features.enabled(crate::features::Gate::DRAExtendedResource) {
                DraSign::Off
            } else if ctx.features.semantics.fit_sign_refuses_only_dra_pods {
                DraSign::UnlessDeviceClass
            } else {
                DraSign::Never
            },
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dra_extended_resource_refuses_signatures_as_each_version_does() {
        use crate::framework::listers::Listers;
        let gpu_pod = crate::framework::testing::pod(serde_json::json!({
            "metadata": {"name": "g", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"example.com/gpu": "1"}}}]}
        }));
        let plain = crate::framework::testing::pod(serde_json::json!({
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
        }));
        let mut with_class = Listers::default();
        with_class.custom.entry("DeviceClass".into()).or_default().insert(
            "gpu.example.com".into(),
            std::sync::Arc::new(serde_json::json!({"metadata": {"name": "gpu.example.com"},
                "spec": {"extendedResourceName": "example.com/gpu"}})),
        );
        let none = Listers::default();
        let signs = |f: &Fit, p: &PodInfo, l: &Listers| matches!(f.sign_pod_in(p, l), Some(Ok(_)));
        let off = Fit::default();
        assert!(signs(&off, &gpu_pod, &with_class));
        let v135 = Fit::default().with_dra_sign(DraSign::Never);
        assert!(!signs(&v135, &plain, &none));
        let v136 = Fit::default().with_dra_sign(DraSign::UnlessDeviceClass);
        assert!(signs(&v136, &plain, &with_class));
        assert!(signs(&v136, &gpu_pod, &none));
        assert!(!signs(&v136, &gpu_pod, &with_class));
    }
    use crate::framework::{Code, Snapshot, listers::Listers};
    use crate::plugins::noderesources::resource_allocation::ShapePoint;
    use crate::plugins::testing::{Env, node, pod};
    use serde_json::json;
    use std::sync::Arc;

    fn n(cpu: &str, mem: &str, pods: &str) -> NodeInfo {
        node(
            json!({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": cpu, "memory": mem, "pods": pods, "example.com/gpu": "1"}}}),
        )
    }
    fn p(cpu: &str, mem: &str) -> Arc<PodInfo> {
        pod(
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}}}]}}),
        )
    }

    fn run_filter(fit: &Fit, pod: &PodInfo, node: &NodeInfo) -> Status {
        let env = Env::new(Snapshot::default(), Listers::default());
        let mut state = CycleState::new();
        fit.pre_filter(&env.handle(), &mut state, pod);
        fit.filter(&env.handle(), &state, pod, node)
    }

    #[test]
    fn insufficient_and_unresolvable() {
        let mut ni = n("2", "4Gi", "2");
        ni.add_pod(p("1500m", "1Gi"));
        let s = run_filter(&Fit::default(), &p("1", "1Gi"), &ni);
        assert_eq!(s.code(), Code::Unschedulable);
        assert_eq!(s.reasons(), ["Insufficient cpu"]);
        let s = run_filter(&Fit::default(), &p("3", "8Gi"), &ni);
        assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
        assert_eq!(s.message(), "Insufficient cpu, Insufficient memory");
        ni.add_pod(p("0", "0"));
        let s = run_filter(&Fit::default(), &p("0", "0"), &ni);
        assert_eq!(s.reasons(), ["Too many pods"]);
        assert_eq!(s.code(), Code::Unschedulable);
    }

    #[test]
    fn extended_resources_and_ignored_groups() {
        let ni = n("2", "4Gi", "10");
        let gpu = pod(
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"example.com/gpu": "2"}}}]}}),
        );
        let s = run_filter(&Fit::default(), &gpu, &ni);
        assert_eq!(s.message(), "Insufficient example.com/gpu");
        assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
        let ignoring = Fit::new(FitArgs {
            ignored_resource_groups: vec!["example.com".into()],
            ..Default::default()
        });
        assert!(run_filter(&ignoring, &gpu, &ni).is_success());
    }

    fn score(fit: &Fit, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let env = Env::new(Snapshot::default(), Listers::default());
        let mut state = CycleState::new();
        fit.pre_score(&env.handle(), &mut state, pod, &[]);
        fit.score(&env.handle(), &state, pod, node).0
    }

    #[test]
    fn strategies() {
        let ni = n("4", "8Gi", "10");
        // cpu (1000+0)/4000 -> 75; memory 2Gi/8Gi -> 75
        assert_eq!(score(&Fit::default(), &p("1", "2Gi"), &ni), 75);
        let most = Fit::new(FitArgs {
            strategy: Strategy::MostAllocated,
            ..Default::default()
        });
        assert_eq!(score(&most, &p("1", "2Gi"), &ni), 25);
        let shape = vec![
            ShapePoint {
                utilization: 0,
                score: 0,
            },
            ShapePoint {
                utilization: 100,
                score: 100,
            },
        ];
        let ratio = Fit::new(FitArgs {
            strategy: Strategy::RequestedToCapacityRatio(shape),
            ..Default::default()
        });
        assert_eq!(score(&ratio, &p("1", "2Gi"), &ni), 25);
        // A container without requests counts 100m / 200Mi when scoring.
        let empty =
            pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}));
        assert_eq!(score(&Fit::default(), &empty, &ni), (97 + 97) / 2);
    }

    #[test]
    fn batch_scores_match_single_scores() {
        let env = Env::new(Snapshot::default(), Listers::default());
        let h = env.handle();
        let nodes = [
            n("4", "8Gi", "10"),
            n("500m", "64Gi", "10"),
            n("32", "1Gi", "10"),
        ];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let p = p("1", "2Gi");
        for strategy in [Strategy::LeastAllocated, Strategy::MostAllocated] {
            let fit = Fit::new(FitArgs {
                strategy,
                ..Default::default()
            });
            crate::plugins::testing::assert_score_nodes_agrees(
                &fit,
                &h,
                &CycleState::new(),
                &p,
                &refs,
            );
            let mut state = CycleState::new();
            fit.pre_score(&h, &mut state, &p, &[]);
            crate::plugins::testing::assert_score_nodes_agrees(&fit, &h, &state, &p, &refs);
        }
    }
}
