//! Preemption: find nodes where evicting lower-priority pods would let the preemptor fit,
//! pick one of them, and name the victims (upstream's `framework/preemption` Evaluator,
//! plus the ordering helpers of `scheduler/util` it relies on).
//!
//! The plugin decides the policy through [`Interface`] (eligibility, victims per node,
//! how many candidates to look for); the [`Evaluator`] runs the search.
//!
//! Where upstream is not deterministic, kubestep fixes one of the outcomes upstream can
//! produce:
//! * The dry run starts at an offset upstream draws at random; the plugin derives it from
//!   a seed instead (see `DefaultPreemption::seed`).
//! * Upstream checks the nodes of the dry run in parallel and cancels once it has enough
//!   candidates; kubestep examines them in order (in parallel waves, consumed in order)
//!   and stops at the same point a sequential run would.
//! * Upstream lists explicitly-failed nodes from a Go map (random order); kubestep takes
//!   the potential nodes in snapshot order.
//! * The final tie between equally good candidates goes, upstream, to the first node of a
//!   Go map iteration; kubestep takes the first in candidate order (non-violating
//!   candidates first, each group in dry-run order).
//! * A pod without `status.startTime` counts as started "now"; the evaluator is given a
//!   fixed instant for that.
//! * Extenders that support preemption narrow the candidates down; upstream rebuilds the
//!   list from a Go map, kubestep keeps the candidates' order.
//!
//! Deleting the victims and clearing lower-priority nominations are left to the driver,
//! which reads them from the `PostFilterResult`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use rayon::prelude::*;

use super::cycle_state::{CycleState, RenderState, StateTree};
use super::diagnosis::{Diagnosis, FitError, NodeToStatus};
use super::listers::Listers;
use super::node_info::NodeInfo;
use super::nominator::Nominator;
use super::plugin::{Handle, PostFilterResult};
use super::status::{Code, Status};
use super::types::{NodeVictims, PodInfo};
use crate::api::labels::Selector;
use crate::config::field::go_quote;
use crate::extender::{CallOutcome, ExtenderCall};

/// The error when the snapshot has no nodes at all.
pub const ERR_NO_NODES_AVAILABLE: &str = "no nodes available";
/// The absent-node reason of the "no candidates" FitError: nodes preemption did not try.
pub const PREEMPTION_NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
/// When no candidate could be selected.
pub const ERR_NO_CANDIDATE_NODE: &str = "no candidate node for preemption";

/// Dry runs smaller than this are examined one node at a time (no parallel waves).
const PARALLEL_THRESHOLD: usize = 32;
/// Nodes computed per parallel wave of the dry run.
const WAVE: usize = 64;

/// A node where the preemptor fits once `victims` are evicted.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub node: String,
    /// Most important first (upstream's `Victims.Pods`).
    pub victims: Vec<Arc<PodInfo>>,
    pub num_pdb_violations: i64,
}

impl Candidate {
    /// Victim keys (`namespace/name`), most important first.
    pub fn victim_keys(&self) -> Vec<String> {
        self.victims.iter().map(|p| p.key.clone()).collect()
    }
}

/// A PodDisruptionBudget as preemption reads it: namespace, parsed selector (`None` when
/// it is invalid, which matches no pod), `status.disruptionsAllowed` and the names in
/// `status.disruptedPods`.
#[derive(Debug, Clone)]
pub struct PdbInfo {
    pub key: String,
    pub namespace: String,
    pub selector: Option<Selector>,
    pub disruptions_allowed: i32,
    pub disrupted_pods: BTreeSet<String>,
}

impl PdbInfo {
    pub fn new(pdb: &PodDisruptionBudget) -> PdbInfo {
        let namespace = pdb.metadata.namespace.clone().unwrap_or_default();
        let name = pdb.metadata.name.clone().unwrap_or_default();
        let selector = pdb
            .spec
            .as_ref()
            .and_then(|s| Selector::from_label_selector(s.selector.as_ref()).ok());
        let status = pdb.status.as_ref();
        PdbInfo {
            key: format!("{namespace}/{name}"),
            namespace,
            selector,
            disruptions_allowed: status.map(|s| s.disruptions_allowed).unwrap_or(0),
            disrupted_pods: status
                .and_then(|s| s.disrupted_pods.as_ref())
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default(),
        }
    }

    /// Whether the budget covers the pod: same namespace, and a selector that is valid,
    /// not empty (an empty or missing selector covers nothing) and matches its labels.
    pub fn selects(&self, pod: &PodInfo) -> bool {
        self.namespace == pod.namespace
            && self
                .selector
                .as_ref()
                .is_some_and(|s| !s.is_empty() && s.matches(pod.labels()))
    }
}

/// Every PodDisruptionBudget known to the listers. Upstream lists them from its informer
/// cache in no particular order; the order does not change any decision.
pub fn list_pdbs(listers: &Listers) -> Vec<PdbInfo> {
    listers.pdbs.values().map(|p| PdbInfo::new(p)).collect()
}

/// A tie-breaking criterion over candidates: higher is better (upstream's score funcs).
pub type ScoreFunc<'a> = Box<dyn Fn(&Candidate) -> i64 + 'a>;

/// The policy a preemption plugin supplies (upstream's `preemption.Interface`).
pub trait Interface: Sync {
    /// Where the dry run starts among `num_nodes` potential nodes, and how many candidates
    /// it looks for.
    fn get_offset_and_num_candidates(&self, num_nodes: usize) -> (usize, usize);

    /// `Ok` when the pod may preempt others, else the reason it may not.
    fn pod_eligible_to_preempt_others(
        &self,
        h: &Handle,
        pod: &PodInfo,
        nominated_node_status: &Status,
    ) -> Result<(), String>;

    /// The fewest pods to evict from `node` so that `pod` fits, working on copies of the
    /// node and the cycle state. A non-success status says why the node cannot work.
    fn select_victims_on_node(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &mut NodeInfo,
        pdbs: &[PdbInfo],
        now: Timestamp,
    ) -> (NodeVictims, Status);

    /// Custom criteria to choose among candidates; empty for the default ones.
    fn ordered_score_funcs<'c>(&self, _candidates: &'c [Candidate]) -> Vec<ScoreFunc<'c>> {
        Vec::new()
    }
}

/// What one node of the dry run came to.
#[derive(Debug, Clone)]
pub enum DryRunVerdict {
    /// The pod fits once these victims are gone.
    Candidate {
        victims: Vec<String>,
        num_pdb_violations: i64,
    },
    /// The node cannot help (or something failed).
    Rejected(Status),
}

/// Everything one preemption attempt looked at, for display (kubestep's addition: upstream
/// keeps this only in its logs). Stored in CycleState by the plugin.
#[derive(Debug, Clone, Default)]
pub struct PreemptionTrace {
    /// Why the pod may not preempt, when it may not.
    pub ineligible: Option<String>,
    pub potential_nodes: usize,
    pub offset: usize,
    pub num_candidates: usize,
    /// Nodes the dry run examined, in the order it examined them.
    pub examined: Vec<(String, DryRunVerdict)>,
    pub candidates: Vec<Candidate>,
    /// Calls to extenders that support preemption, in order.
    pub extender_calls: Vec<ExtenderCall>,
    pub selected: Option<String>,
    /// How the candidates left for selection ranked (kubestep's addition: it tells an
    /// equally good candidate from a worse one when comparing with a recording).
    pub ranking: Option<Ranking>,
}

/// The names of upstream's default criteria for choosing among candidates, in order.
pub const DEFAULT_CRITERIA: [&str; 5] = [
    "fewest PDB violations",
    "lowest highest victim priority",
    "lowest sum of victim priorities",
    "fewest victims",
    "latest start of the highest-priority victims",
];

/// The candidates considered for selection, each with its score under every criterion
/// (higher is better), in the order they were considered. The selected candidate is the
/// first with the highest scores, compared criterion by criterion.
#[derive(Debug, Clone, Default)]
pub struct Ranking {
    /// The criteria's names (custom ones are numbered).
    pub criteria: Vec<String>,
    pub nodes: Vec<(String, Vec<i64>)>,
    /// The instant a victim without `status.startTime` stands for.
    pub now: Timestamp,
}

impl Ranking {
    fn scores(&self, node: &str) -> Option<&[i64]> {
        self.nodes
            .iter()
            .find(|(n, _)| n == node)
            .map(|(_, s)| s.as_slice())
    }

    /// The candidates that rank exactly as `node` does (itself included), in candidate
    /// order: any of them is a choice upstream could make, since it breaks the last tie by
    /// the iteration order of a Go map.
    pub fn tied_with(&self, node: &str) -> Vec<&str> {
        let Some(s) = self.scores(node) else {
            return Vec::new();
        };
        self.nodes
            .iter()
            .filter(|(_, o)| o.as_slice() == s)
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// The first criterion on which `a` and `b` differ: its index and name, and whether
    /// `a` ranks lower there. `None` when they tie (or one was not a candidate).
    pub fn first_difference(&self, a: &str, b: &str) -> Option<(usize, &str, bool)> {
        let (sa, sb) = (self.scores(a)?, self.scores(b)?);
        let i = sa.iter().zip(sb).position(|(x, y)| x != y)?;
        Some((
            i,
            self.criteria.get(i).map_or("", String::as_str),
            sa[i] < sb[i],
        ))
    }
}

impl Candidate {
    /// This candidate as the default criterion `i` sees it, in words.
    pub fn describe_criterion(&self, i: usize, now: Timestamp) -> String {
        match i {
            0 => format!("{} PDB violation(s)", self.num_pdb_violations),
            1 => format!(
                "highest victim priority {}",
                self.victims.first().map_or(0, |p| p.priority)
            ),
            2 => format!(
                "victim priorities summing to {}",
                self.victims
                    .iter()
                    .map(|p| i64::from(p.priority))
                    .sum::<i64>()
            ),
            3 => format!("{} victim(s)", self.victims.len()),
            4 => match earliest_pod_start_time(&self.victims, now) {
                Some(t) => format!("highest-priority victims started at {t}"),
                None => "no victims".into(),
            },
            _ => String::new(),
        }
    }
}

impl RenderState for PreemptionTrace {
    fn render(&self) -> StateTree {
        let mut children = Vec::new();
        if let Some(r) = &self.ineligible {
            children.push(StateTree::kv("not eligible", r));
        }
        children.push(StateTree::kv("potential nodes", self.potential_nodes));
        if self.potential_nodes > 0 {
            children.push(StateTree::kv("offset", self.offset));
            children.push(StateTree::kv("candidates wanted", self.num_candidates));
        }
        children.push(StateTree::list(
            "dry run",
            self.examined.iter().map(|(node, v)| match v {
                DryRunVerdict::Candidate {
                    victims,
                    num_pdb_violations,
                } => StateTree::node(
                    format!(
                        "{node}: {} victim(s), {num_pdb_violations} PDB violation(s)",
                        victims.len()
                    ),
                    victims.iter().map(|k| StateTree::leaf(k.clone())).collect(),
                ),
                DryRunVerdict::Rejected(s) => {
                    StateTree::leaf(format!("{node}: {}: {}", s.code(), s.message()))
                }
            }),
        ));
        children.push(StateTree::list(
            "candidates",
            self.candidates.iter().map(|c| {
                StateTree::leaf(format!(
                    "{} ({} victim(s), {} PDB violation(s))",
                    c.node,
                    c.victims.len(),
                    c.num_pdb_violations
                ))
            }),
        ));
        if !self.extender_calls.is_empty() {
            children.push(StateTree::list(
                "extenders",
                self.extender_calls.iter().map(|c| {
                    StateTree::leaf(match &c.outcome {
                        CallOutcome::Preempted { candidates } => format!(
                            "{}: kept {} of {} candidate(s): {}",
                            c.extender,
                            candidates.len(),
                            c.nodes,
                            candidates.join(", ")
                        ),
                        CallOutcome::Error { message, ignored } => format!(
                            "{}: error{}: {message}",
                            c.extender,
                            if *ignored { " (ignored)" } else { "" }
                        ),
                        other => format!("{}: {other:?}", c.extender),
                    })
                }),
            ));
        }
        children.push(StateTree::kv(
            "selected",
            self.selected.as_deref().unwrap_or("(none)"),
        ));
        if let (Some(sel), Some(r)) = (&self.selected, &self.ranking) {
            let tied = r.tied_with(sel);
            if tied.len() > 1 {
                children.push(StateTree::kv(
                    "equally ranked (the first is taken)",
                    tied.join(", "),
                ));
            }
        }
        StateTree::node("preemption", children)
    }
}

/// What the dry run found.
#[derive(Debug, Clone, Default)]
pub struct DryRun {
    /// Non-violating candidates, then violating ones, each list capped.
    pub candidates: Vec<Candidate>,
    /// Nodes that could not be candidates, with why.
    pub statuses: NodeToStatus,
    /// Messages of the Error statuses, in examination order.
    pub errors: Vec<String>,
    pub examined: Vec<(String, DryRunVerdict)>,
}

/// Runs preemption for one pod (upstream's `Evaluator`).
pub struct Evaluator<'a> {
    /// The plugin preempting (upstream rejects waiting victims in its name).
    pub plugin_name: &'static str,
    pub handle: Handle<'a>,
    pub interface: &'a dyn Interface,
    /// The instant a missing `status.startTime` stands for.
    pub now: Timestamp,
}

impl Evaluator<'_> {
    /// Upstream `Preempt`: on success the result nominates the chosen node and lists the
    /// victims; `None` keeps the pod's nomination as it is; a result with an empty node
    /// clears it.
    pub fn preempt(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        m: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status, PreemptionTrace) {
        let mut trace = PreemptionTrace::default();
        let h = &self.handle;

        let nominated_status = m.get(pod.nominated_node_name());
        if let Err(reason) = self
            .interface
            .pod_eligible_to_preempt_others(h, pod, nominated_status)
        {
            trace.ineligible = Some(reason.clone());
            return (None, Status::unschedulable(reason), trace);
        }

        let all_nodes = h.snapshot.num_nodes();
        let (candidates, statuses) = match self.find_candidates(state, pod, m, &mut trace) {
            Err(msg) => return (None, Status::error(msg), trace),
            Ok(found) => found,
        };
        trace.candidates = candidates.clone();

        if candidates.is_empty() {
            let mut node_to_status = statuses;
            node_to_status.set_absent(Status::unresolvable(PREEMPTION_NOT_HELPFUL));
            let fit_error = FitError {
                num_all_nodes: all_nodes,
                diagnosis: Diagnosis {
                    node_to_status,
                    ..Default::default()
                },
            };
            let clear = PostFilterResult {
                nominated_node_name: String::new(),
                override_nomination: true,
                victims: Vec::new(),
            };
            return (
                Some(clear),
                Status::unschedulable(fit_error.message()),
                trace,
            );
        }

        // Extenders that support preemption narrow the candidates down.
        let candidates = match self.call_extenders(pod, candidates, &mut trace) {
            Ok(c) => c,
            Err(msg) => return (None, Status::error(msg), trace),
        };

        trace.ranking = Some(self.rank(&candidates));
        let Some(best) = self.select_candidate(&candidates) else {
            return (None, Status::unschedulable(ERR_NO_CANDIDATE_NODE), trace);
        };
        if best.node.is_empty() {
            return (None, Status::unschedulable(ERR_NO_CANDIDATE_NODE), trace);
        }
        trace.selected = Some(best.node.clone());
        let result = PostFilterResult {
            nominated_node_name: best.node.clone(),
            override_nomination: true,
            victims: best.victim_keys(),
        };
        (Some(result), Status::success(), trace)
    }

    /// Upstream `callExtenders`: each interested extender that supports preemption gets
    /// the candidates (node → victims) left by the previous one and answers with those it
    /// keeps. `Err` is the error of an extender that is not ignorable. The candidates come
    /// back in their original order, nodes an extender added after them by name (upstream
    /// rebuilds them from a Go map, in random order).
    fn call_extenders(
        &self,
        pod: &PodInfo,
        candidates: Vec<Candidate>,
        trace: &mut PreemptionTrace,
    ) -> Result<Vec<Candidate>, String> {
        let extenders = self.handle.extenders;
        if extenders.is_empty() || candidates.is_empty() {
            return Ok(candidates);
        }
        let mut victims: BTreeMap<String, NodeVictims> = candidates
            .iter()
            .map(|c| {
                let v = NodeVictims {
                    pods: c.victims.clone(),
                    num_pdb_violations: c.num_pdb_violations,
                };
                (c.node.clone(), v)
            })
            .collect();
        for ext in extenders {
            if !ext.supports_preemption() || !ext.is_interested(pod.pod()) {
                continue;
            }
            let sent = victims.len();
            let call = |outcome| ExtenderCall {
                extender: ext.name().to_string(),
                verb: "preempt",
                nodes: sent,
                outcome,
            };
            let checked = ext
                .process_preemption(pod.pod(), &victims, self.handle.snapshot)
                .map_err(|e| e.0)
                .and_then(|mut result| {
                    let empty: Vec<String> = result
                        .iter()
                        .filter(|(_, v)| v.pods.is_empty())
                        .map(|(n, _)| n.clone())
                        .collect();
                    for node in empty {
                        if !ext.is_ignorable() {
                            return Err(format!(
                                "expected at least one victim pod on node {}",
                                go_quote(&node)
                            ));
                        }
                        // An ignorable extender's candidate without victims is dropped.
                        result.remove(&node);
                    }
                    Ok(result)
                });
            match checked {
                Err(message) => {
                    let ignored = ext.is_ignorable();
                    trace.extender_calls.push(call(CallOutcome::Error {
                        message: message.clone(),
                        ignored,
                    }));
                    if !ignored {
                        return Err(message);
                    }
                }
                Ok(result) => {
                    trace.extender_calls.push(call(CallOutcome::Preempted {
                        candidates: result.keys().cloned().collect(),
                    }));
                    victims = result;
                    if victims.is_empty() {
                        break;
                    }
                }
            }
        }
        let mut out = Vec::with_capacity(victims.len());
        for c in &candidates {
            if let Some(v) = victims.remove(&c.node) {
                out.push(Candidate {
                    node: c.node.clone(),
                    victims: v.pods,
                    num_pdb_violations: v.num_pdb_violations,
                });
            }
        }
        out.extend(victims.into_iter().map(|(node, v)| Candidate {
            node,
            victims: v.pods,
            num_pdb_violations: v.num_pdb_violations,
        }));
        Ok(out)
    }

    /// Upstream `findCandidates`: the dry run over the nodes whose status is Unschedulable.
    /// `Err` carries an error message when nothing was found and something failed.
    fn find_candidates(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        m: &NodeToStatus,
        trace: &mut PreemptionTrace,
    ) -> Result<(Vec<Candidate>, NodeToStatus), String> {
        let snapshot = self.handle.snapshot;
        if snapshot.num_nodes() == 0 {
            return Err(ERR_NO_NODES_AVAILABLE.to_string());
        }
        let potential = potential_nodes(snapshot.list(), m);
        trace.potential_nodes = potential.len();
        if potential.is_empty() {
            return Ok((Vec::new(), NodeToStatus::default()));
        }
        let pdbs = list_pdbs(self.handle.listers);
        let (offset, num_candidates) = self
            .interface
            .get_offset_and_num_candidates(potential.len());
        trace.offset = offset;
        trace.num_candidates = num_candidates;
        let dry = self.dry_run_preemption(state, pod, &potential, &pdbs, offset, num_candidates);
        trace.examined = dry.examined;
        if !dry.errors.is_empty() && dry.candidates.is_empty() {
            return Err(aggregate_message(&dry.errors));
        }
        Ok((dry.candidates, dry.statuses))
    }

    /// Upstream `DryRunPreemption`: tries `potential[(offset + i) % len]` in turn, and
    /// stops once it has a non-violating candidate and at least `num_candidates` in all.
    pub fn dry_run_preemption(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        potential: &[&NodeInfo],
        pdbs: &[PdbInfo],
        offset: usize,
        num_candidates: usize,
    ) -> DryRun {
        let n = potential.len();
        let mut out = DryRun::default();
        if n == 0 {
            return out;
        }
        let mut non_violating: Vec<Candidate> = Vec::new();
        let mut violating: Vec<Candidate> = Vec::new();
        let node_at = |i: usize| potential[(offset % n + i) % n];
        let check = |i: usize| self.check_node(state, pod, node_at(i), pdbs);
        let mut next = 0;
        'search: while next < n {
            let wave = if n <= PARALLEL_THRESHOLD {
                1
            } else {
                WAVE.min(n - next)
            };
            let results: Vec<Result<Candidate, Status>> = if wave == 1 {
                vec![check(next)]
            } else {
                match self.handle.pool {
                    Some(pool) => {
                        pool.install(|| (next..next + wave).into_par_iter().map(check).collect())
                    }
                    None => (next..next + wave).map(check).collect(),
                }
            };
            next += wave;
            for (i, r) in results.into_iter().enumerate() {
                let name = node_at(next - wave + i).name().to_string();
                match r {
                    Ok(c) => {
                        out.examined.push((
                            name,
                            DryRunVerdict::Candidate {
                                victims: c.victim_keys(),
                                num_pdb_violations: c.num_pdb_violations,
                            },
                        ));
                        let list = if c.num_pdb_violations == 0 {
                            &mut non_violating
                        } else {
                            &mut violating
                        };
                        // Upstream's candidate lists hold at most `num_candidates` each.
                        if list.len() < num_candidates {
                            list.push(c);
                        }
                        if !non_violating.is_empty()
                            && non_violating.len() + violating.len() >= num_candidates
                        {
                            break 'search;
                        }
                    }
                    Err(s) => {
                        out.examined
                            .push((name.clone(), DryRunVerdict::Rejected(s.clone())));
                        if s.code() == Code::Error {
                            out.errors.push(s.message());
                        }
                        out.statuses.set(name, s);
                    }
                }
            }
        }
        non_violating.extend(violating);
        out.candidates = non_violating;
        out
    }

    /// One node of the dry run, on copies of the node and the state.
    fn check_node(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        pdbs: &[PdbInfo],
    ) -> Result<Candidate, Status> {
        let mut node_copy = node.clone();
        let mut state_copy = state.clone();
        let (victims, status) = self.interface.select_victims_on_node(
            &self.handle,
            &mut state_copy,
            pod,
            &mut node_copy,
            pdbs,
            self.now,
        );
        if !status.is_success() {
            return Err(status);
        }
        if victims.pods.is_empty() {
            return Err(Status::error(format!(
                "expected at least one victim pod on node {}",
                go_quote(node.name())
            )));
        }
        Ok(Candidate {
            node: node.name().to_string(),
            victims: victims.pods,
            num_pdb_violations: victims.num_pdb_violations,
        })
    }

    /// Every candidate's score under each selection criterion (the plugin's, or the
    /// default ones).
    pub fn rank(&self, candidates: &[Candidate]) -> Ranking {
        let mut funcs = self.interface.ordered_score_funcs(candidates);
        let criteria = if funcs.is_empty() {
            funcs = default_score_funcs(self.now);
            DEFAULT_CRITERIA.iter().map(|c| c.to_string()).collect()
        } else {
            (1..=funcs.len())
                .map(|i| format!("criterion {i}"))
                .collect()
        };
        let nodes = candidates
            .iter()
            .map(|c| (c.node.clone(), funcs.iter().map(|f| f(c)).collect()))
            .collect();
        Ranking {
            criteria,
            nodes,
            now: self.now,
        }
    }

    /// Upstream `SelectCandidate`: a lone candidate directly, else the best by
    /// `pick_one_node_for_preemption`.
    pub fn select_candidate<'c>(&self, candidates: &'c [Candidate]) -> Option<&'c Candidate> {
        match candidates.len() {
            0 => None,
            1 => candidates.first(),
            _ => {
                let funcs = self.interface.ordered_score_funcs(candidates);
                let i = pick_one_node_for_preemption(candidates, funcs, self.now)?;
                candidates.get(i)
            }
        }
    }
}

/// Pods nominated to `node` with a lower priority than `pod` (upstream
/// `getLowerPriorityNominatedPods`). Once `pod` preempts on that node they may no longer fit
/// there, so the driver clears their nomination, which sends them back to the active queue.
pub fn lower_priority_nominated_pods(
    nominator: &Nominator,
    pod: &PodInfo,
    node: &str,
) -> Vec<Arc<PodInfo>> {
    nominator
        .nominated_pods_for_node(node)
        .iter()
        .filter(|p| p.priority < pod.priority)
        .cloned()
        .collect()
}

/// Nodes whose status has code Unschedulable, in snapshot order: every node with an
/// explicit Unschedulable status and, when the absent-node status is Unschedulable, every
/// node without one.
pub fn potential_nodes<'s>(all: &'s [NodeInfo], m: &NodeToStatus) -> Vec<&'s NodeInfo> {
    all.iter()
        .filter(|n| m.get(n.name()).code() == Code::Unschedulable)
        .collect()
}

/// The message of upstream's error aggregate: one error as is; several, deduplicated,
/// joined with ", " and bracketed.
pub fn aggregate_message(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [] => String::new(),
        [one] => (*one).to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Upstream `pickOneNodeForPreemption`: the candidate (index) that is best by each
/// criterion in turn, ties going to the next criterion and, at the end, to the first.
/// Without custom criteria: fewest PDB violations, lowest highest-victim priority, lowest
/// sum of (priority + 2^31), fewest victims, latest start among the highest-priority
/// victims.
pub fn pick_one_node_for_preemption(
    candidates: &[Candidate],
    score_funcs: Vec<ScoreFunc<'_>>,
    now: Timestamp,
) -> Option<usize> {
    if candidates.is_empty() {
        return None;
    }
    let funcs: Vec<ScoreFunc<'_>> = if score_funcs.is_empty() {
        default_score_funcs(now)
    } else {
        score_funcs
    };
    let mut remaining: Vec<usize> = (0..candidates.len()).collect();
    for f in &funcs {
        let mut best = i64::MIN;
        let mut selected: Vec<usize> = Vec::new();
        for &i in &remaining {
            let score = f(&candidates[i]);
            if score > best {
                best = score;
                selected.clear();
            }
            if score == best {
                selected.push(i);
            }
        }
        if selected.len() == 1 {
            return selected.first().copied();
        }
        remaining = selected;
    }
    remaining.first().copied()
}

/// The default criteria (`DEFAULT_CRITERIA`) as score functions, higher is better.
fn default_score_funcs(now: Timestamp) -> Vec<ScoreFunc<'static>> {
    vec![
        Box::new(|c: &Candidate| -c.num_pdb_violations),
        Box::new(|c: &Candidate| {
            -c.victims
                .first()
                .map(|p| i64::from(p.priority))
                .unwrap_or(0)
        }),
        Box::new(|c: &Candidate| {
            -c.victims
                .iter()
                .map(|p| i64::from(p.priority) + i64::from(i32::MAX) + 1)
                .sum::<i64>()
        }),
        Box::new(|c: &Candidate| -(c.victims.len() as i64)),
        Box::new(move |c: &Candidate| {
            earliest_pod_start_time(&c.victims, now)
                .map(timestamp_score)
                .unwrap_or(i64::MIN)
        }),
    ]
}

/// A start time as a score: nanoseconds since the epoch (upstream `UnixNano`), saturated
/// at the ends of the i64 range (the default "now" is the end of time).
fn timestamp_score(t: Timestamp) -> i64 {
    let ns = t.as_nanosecond();
    i64::try_from(ns).unwrap_or(if ns < 0 { i64::MIN + 1 } else { i64::MAX })
}

/// The pod's `status.startTime`, if it has one.
pub fn pod_start_time(pod: &PodInfo) -> Option<Timestamp> {
    pod.start_time()
}

/// Upstream `MoreImportantPod`: higher priority first, then the pod that started earlier;
/// a pod that has not started counts as started now.
pub fn more_important_pod(a: &PodInfo, b: &PodInfo, now: Timestamp) -> bool {
    if a.priority != b.priority {
        return a.priority > b.priority;
    }
    match (pod_start_time(a), pod_start_time(b)) {
        (Some(x), Some(y)) => x < y,
        (Some(x), None) => x < now,
        (None, Some(y)) => now < y,
        // Upstream reads the clock once for each pod, the first pod's first, so of two pods
        // that have not started the first one always looks older.
        (None, None) => true,
    }
}

/// Upstream `GetEarliestPodStartTime`: the earliest start among the victims that have the
/// highest priority (`None` for no victims).
pub fn earliest_pod_start_time(victims: &[Arc<PodInfo>], now: Timestamp) -> Option<Timestamp> {
    let first = victims.first()?;
    let mut earliest = pod_start_time(first).unwrap_or(now);
    let mut max_priority = first.priority;
    for p in victims {
        let start = pod_start_time(p).unwrap_or(now);
        if p.priority == max_priority {
            if start < earliest {
                earliest = start;
            }
        } else if p.priority > max_priority {
            max_priority = p.priority;
            earliest = start;
        }
    }
    Some(earliest)
}

/// Sorts pods most important first, in the order Go's `sort.Slice` leaves them.
///
/// For up to 12 elements Go sorts by insertion, which this reproduces exactly (including
/// its handling of pods that compare as more important both ways, see
/// `more_important_pod`). For longer lists Go switches to pattern-defeating quicksort,
/// which is not stable: pods with equal priority and equal start time (or both without
/// one) may then end up in another order upstream; all other orders agree.
pub fn sort_by_importance(pods: &mut [Arc<PodInfo>], now: Timestamp) {
    for i in 1..pods.len() {
        let mut j = i;
        while j > 0 && more_important_pod(&pods[j], &pods[j - 1], now) {
            pods.swap(j, j - 1);
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, priority: i32, start: Option<&str>) -> Arc<PodInfo> {
        let mut v = json!({"metadata": {"name": name, "namespace": "d", "uid": name},
            "spec": {"priority": priority, "containers": []}});
        if let Some(s) = start {
            v["status"] = json!({"startTime": s});
        }
        Arc::new(PodInfo::new(Arc::new(serde_json::from_value(v).unwrap())))
    }

    fn names(pods: &[Arc<PodInfo>]) -> Vec<&str> {
        pods.iter().map(|p| p.name.as_str()).collect()
    }

    fn candidate(node: &str, violations: i64, victims: Vec<Arc<PodInfo>>) -> Candidate {
        Candidate {
            node: node.into(),
            victims,
            num_pdb_violations: violations,
        }
    }

    const T1: &str = "2024-01-01T00:00:00Z";
    const T2: &str = "2024-01-02T00:00:00Z";
    const T3: &str = "2024-01-03T00:00:00Z";

    #[test]
    fn importance_is_priority_then_age() {
        let now = Timestamp::MAX;
        let mut v = vec![
            pod("young", 5, Some(T3)),
            pod("high", 9, Some(T3)),
            pod("unstarted", 5, None),
            pod("old", 5, Some(T1)),
        ];
        sort_by_importance(&mut v, now);
        assert_eq!(names(&v), ["high", "old", "young", "unstarted"]);
        assert!(more_important_pod(&v[1], &v[3], now));
        assert!(!more_important_pod(&v[3], &v[1], now));
    }

    #[test]
    fn unstarted_pods_of_equal_priority_reverse_as_upstream() {
        // Each comparison reads the clock anew, so insertion sort moves every later pod in
        // front of the earlier ones.
        let mut v = vec![pod("a", 1, None), pod("b", 1, None), pod("c", 1, None)];
        sort_by_importance(&mut v, Timestamp::MAX);
        assert_eq!(names(&v), ["c", "b", "a"]);
    }

    #[test]
    fn earliest_start_among_highest_priority() {
        let now: Timestamp = "2030-01-01T00:00:00Z".parse().unwrap();
        let v = vec![
            pod("a", 9, Some(T3)),
            pod("b", 9, Some(T2)),
            pod("c", 1, Some(T1)),
        ];
        assert_eq!(earliest_pod_start_time(&v, now), Some(T2.parse().unwrap()));
        assert_eq!(
            earliest_pod_start_time(&[pod("x", 1, None)], now),
            Some(now)
        );
        assert_eq!(earliest_pod_start_time(&[], now), None);
    }

    #[test]
    fn pick_one_node_criteria_in_order() {
        let now = Timestamp::MAX;
        let pick = |cs: &[Candidate]| {
            pick_one_node_for_preemption(cs, Vec::new(), now).map(|i| cs[i].node.clone())
        };
        // Fewest PDB violations first.
        let cs = [
            candidate("a", 1, vec![pod("p1", 1, Some(T1))]),
            candidate("b", 0, vec![pod("p2", 100, Some(T1))]),
        ];
        assert_eq!(pick(&cs).as_deref(), Some("b"));
        // Lowest highest priority.
        let cs = [
            candidate("a", 0, vec![pod("p1", 10, Some(T1))]),
            candidate("b", 0, vec![pod("p2", 5, Some(T1)), pod("p3", 5, Some(T1))]),
        ];
        assert_eq!(pick(&cs).as_deref(), Some("b"));
        // Lowest sum (offset so negative priorities count by number of pods).
        let cs = [
            candidate(
                "a",
                0,
                vec![pod("p1", -5, Some(T1)), pod("p2", -5, Some(T1))],
            ),
            candidate("b", 0, vec![pod("p3", -5, Some(T1))]),
        ];
        assert_eq!(pick(&cs).as_deref(), Some("b"));
        // Latest earliest start among the highest-priority victims.
        let cs = [
            candidate("a", 0, vec![pod("p1", 5, Some(T2))]),
            candidate("b", 0, vec![pod("p2", 5, Some(T3))]),
            candidate("c", 0, vec![pod("p3", 5, Some(T1))]),
        ];
        assert_eq!(pick(&cs).as_deref(), Some("b"));
        // Full tie: the first.
        let cs = [
            candidate("x", 0, vec![pod("p1", 5, Some(T2))]),
            candidate("y", 0, vec![pod("p2", 5, Some(T2))]),
        ];
        assert_eq!(pick(&cs).as_deref(), Some("x"));
        assert_eq!(pick(&[]), None);
    }

    #[test]
    fn aggregate_like_upstream() {
        assert_eq!(aggregate_message(&["a".into()]), "a");
        assert_eq!(
            aggregate_message(&["a".into(), "b".into(), "a".into()]),
            "[a, b]"
        );
        assert_eq!(aggregate_message(&["a".into(), "a".into()]), "a");
    }

    #[test]
    fn pdb_selection() {
        let pdb: PodDisruptionBudget = serde_json::from_value(json!({
            "metadata": {"name": "b", "namespace": "d"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": 1, "disruptedPods": {"x": "2024-01-01T00:00:00Z"},
                "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}}))
        .unwrap();
        let info = PdbInfo::new(&pdb);
        assert_eq!(info.disruptions_allowed, 1);
        assert!(info.disrupted_pods.contains("x"));
        let web = |ns: &str| {
            let v = json!({"metadata": {"name": "p", "namespace": ns, "labels": {"app": "web"}},
                "spec": {"containers": []}});
            PodInfo::new(Arc::new(serde_json::from_value(v).unwrap()))
        };
        assert!(info.selects(&web("d")));
        assert!(!info.selects(&web("other")));
        let empty: PodDisruptionBudget = serde_json::from_value(json!({
            "metadata": {"name": "e", "namespace": "d"}, "spec": {"selector": {}}}))
        .unwrap();
        assert!(!PdbInfo::new(&empty).selects(&web("d")));
        let none: PodDisruptionBudget =
            serde_json::from_value(json!({"metadata": {"name": "n", "namespace": "d"}})).unwrap();
        assert!(!PdbInfo::new(&none).selects(&web("d")));
    }

    /// A policy that claims every node works but names no victims, or fails outright.
    struct Broken {
        fail: bool,
    }

    impl Interface for Broken {
        fn get_offset_and_num_candidates(&self, num_nodes: usize) -> (usize, usize) {
            (0, num_nodes)
        }
        fn pod_eligible_to_preempt_others(
            &self,
            _h: &Handle,
            _pod: &PodInfo,
            _s: &Status,
        ) -> Result<(), String> {
            Ok(())
        }
        fn select_victims_on_node(
            &self,
            _h: &Handle,
            _state: &mut CycleState,
            _pod: &PodInfo,
            node: &mut NodeInfo,
            _pdbs: &[PdbInfo],
            _now: Timestamp,
        ) -> (NodeVictims, Status) {
            if self.fail {
                let s = Status::error(format!("boom on {}", node.name()));
                (NodeVictims::default(), s)
            } else {
                (NodeVictims::default(), Status::success())
            }
        }
    }

    fn nodes(names: &[&str]) -> Vec<Arc<k8s_openapi::api::core::v1::Node>> {
        names
            .iter()
            .map(|n| Arc::new(serde_json::from_value(json!({"metadata": {"name": n}})).unwrap()))
            .collect()
    }

    #[test]
    fn errors_of_the_dry_run_become_an_error_status() {
        let fw = crate::testing::minimal_framework();
        let snapshot = super::super::Snapshot::new(nodes(&["n1", "n2"]), []);
        let listers = Listers::default();
        let nominator = Nominator::default();
        let h = Handle {
            framework: &fw,
            snapshot: &snapshot,
            listers: &listers,
            nominator: &nominator,
            waiting: &crate::waiting::NO_WAITING,
            now: jiff::Timestamp::UNIX_EPOCH,
            extenders: &[],
            simulation: false,
            pool: None,
        };
        let m = NodeToStatus::new(Status::unschedulable("Insufficient cpu"));
        let preemptor = pod("p", 10, None);
        let run = |fail| {
            let iface = Broken { fail };
            let ev = Evaluator {
                plugin_name: "Test",
                handle: h,
                interface: &iface,
                now: Timestamp::MAX,
            };
            let (r, s, _) = ev.preempt(&CycleState::new(), &preemptor, &m);
            (r, s.code(), s.message())
        };
        assert_eq!(
            run(false),
            (
                None,
                Code::Error,
                "[expected at least one victim pod on node \"n1\", \
                 expected at least one victim pod on node \"n2\"]"
                    .to_string()
            )
        );
        assert_eq!(
            run(true),
            (None, Code::Error, "[boom on n1, boom on n2]".to_string())
        );
    }

    #[test]
    fn potential_nodes_follow_the_status_codes() {
        let all: Vec<NodeInfo> = nodes(&["a", "b", "c"])
            .into_iter()
            .map(NodeInfo::new)
            .collect();
        let names = |v: Vec<&NodeInfo>| v.iter().map(|n| n.name().to_string()).collect::<Vec<_>>();
        // Absent nodes count when the absent status is Unschedulable (a PreFilter verdict).
        let mut m = NodeToStatus::new(Status::unschedulable("x"));
        m.set("b", Status::unresolvable("y"));
        assert_eq!(names(potential_nodes(&all, &m)), ["a", "c"]);
        // Otherwise only the explicit Unschedulable ones.
        let mut m = NodeToStatus::default();
        m.set("c", Status::unschedulable("x"));
        m.set("a", Status::unresolvable("y"));
        assert_eq!(names(potential_nodes(&all, &m)), ["c"]);
    }

    #[test]
    fn lower_priority_nominations_on_the_node() {
        let mut nominator = Nominator::default();
        nominator.add(pod("low", 1, None), "n1");
        nominator.add(pod("same", 10, None), "n1");
        nominator.add(pod("elsewhere", 1, None), "n2");
        let got = lower_priority_nominated_pods(&nominator, &pod("p", 10, None), "n1");
        assert_eq!(names(&got), ["low"]);
    }
}
