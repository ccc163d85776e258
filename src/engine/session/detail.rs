//! An attempt in full, computed when someone looks: the verdict of every Filter plugin on
//! every candidate node, raw, normalized and weighted scores, and CycleState after each
//! step. The session runs upstream's decision path and keeps only a cheap record of each
//! attempt; this module runs the attempt again over the inputs frozen at its start (see
//! `world.rs`), on copies of the profiles, and checks that the re-run decides what the
//! attempt decided. Each look is thereby also a test of the fast path against the full
//! one; a difference is reported with the detail, never hidden.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use super::attempt::summarize;
use super::history::{CycleSummary, Point};
use super::world::{Frozen, WorldError};
use super::{Core, Session};
use crate::framework::cycle::{CycleEnv, Detail, FilterMatrix, SchedulingCycle, ScoreTable};
use crate::framework::plugin::Handle;
use crate::framework::profile::{ExtensionPoint, Framework};
use crate::framework::{Code, PodInfo, StateTree, Status};

/// An attempt recomputed in full.
#[derive(Debug, Clone)]
pub struct AttemptDetail {
    pub id: u64,
    pub matrix: Option<FilterMatrix>,
    pub scores: Option<ScoreTable>,
    /// Snapshot index → node name, as of the attempt.
    pub node_names: Arc<Vec<String>>,
    /// CycleState after each step of the attempt, in the attempt's step order (its
    /// QueueSort step first); see [`Session::step_index`].
    pub states: Vec<Arc<Vec<StateTree>>>,
    /// What the re-run decided.
    pub summary: CycleSummary,
    /// Where the re-run differs from what the attempt recorded (`None`: it reproduced it).
    pub mismatch: Option<String>,
}

impl AttemptDetail {
    /// CycleState after the attempt's `index`-th step, and the entries that step changed
    /// (by comparing with the step before).
    pub fn state_at(&self, index: usize) -> Option<(Arc<Vec<StateTree>>, Vec<String>)> {
        let now = self.states.get(index)?.clone();
        let before = index.checked_sub(1).and_then(|i| self.states.get(i));
        let changed = now
            .iter()
            .filter(|t| before.is_none_or(|b| !b.contains(t)))
            .map(|t| t.label.split(':').next().unwrap_or(&t.label).to_string())
            .collect();
        Some((now, changed))
    }
}

/// Why an attempt cannot be shown in full.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DetailError {
    #[error("attempt {0} is no longer in the history")]
    UnknownAttempt(u64),
    #[error("attempt {id}: {source}")]
    World { id: u64, source: WorldError },
    #[error("attempt {id}: the profiles could not be copied: {message}")]
    Profiles { id: u64, message: String },
}

/// Recently recomputed attempts, and the copies of the profiles that recompute them.
#[derive(Default)]
pub struct Details {
    /// (attempt id, steps it had taken, detail), newest last.
    cache: VecDeque<(u64, usize, Arc<AttemptDetail>)>,
    frameworks: Option<Vec<Framework>>,
}

const CACHED: usize = 8;

/// What a re-run needs of an attempt, from its record or from the attempt in flight.
struct Inputs {
    id: u64,
    pod: Arc<PodInfo>,
    profile: usize,
    frozen: Frozen,
    cycle: Option<CycleSummary>,
    post_cycle: Vec<(Point, Option<Cow<'static, str>>, Status)>,
    /// The recording (or the live cluster) binds the pod: Permit was only simulated.
    deferred: bool,
    steps: usize,
}

impl Session {
    /// The attempt `id` in full (cached; recomputed when it has taken steps since).
    pub fn attempt_detail(&mut self, id: u64) -> Result<Arc<AttemptDetail>, DetailError> {
        let inputs = self.inputs(id)?;
        if let Some((_, _, d)) = self
            .details
            .cache
            .iter()
            .find(|(i, steps, _)| *i == id && *steps == inputs.steps)
        {
            return Ok(d.clone());
        }
        let Session { core, details, .. } = self;
        let fwks = details.frameworks(core, id)?;
        let d = Arc::new(rerun(core, fwks, &inputs)?);
        self.details.cache.retain(|(i, _, _)| *i != id);
        if self.details.cache.len() == CACHED {
            self.details.cache.pop_front();
        }
        self.details.cache.push_back((id, inputs.steps, d.clone()));
        Ok(d)
    }

    /// The position of a step within its attempt (what [`AttemptDetail::states`] is
    /// indexed by): steps of other pods may sit between an attempt's steps when it was
    /// parked at Permit.
    pub fn step_index(&self, step: &super::StepRecord) -> Option<usize> {
        let id = step.attempt?;
        let first = match self.current.as_ref().filter(|a| a.id == id) {
            Some(a) => a.first_seq,
            None => self
                .core
                .parked
                .values()
                .find(|a| a.id == id)
                .map(|a| a.first_seq)
                .or_else(|| self.history.attempt(id).map(|a| a.first_seq))?,
        };
        // Count the attempt's steps from its first one (steps are kept in seq order).
        let mut n: usize = 0;
        let start = self.history.steps.front()?.seq;
        let from = first.saturating_sub(start) as usize;
        for s in self.history.steps.range(from..) {
            if s.seq > step.seq {
                break;
            }
            if s.attempt == Some(id) {
                n += 1;
            }
        }
        let missed = start.saturating_sub(first) as usize;
        n.checked_sub(1).map(|i| i + missed)
    }

    fn inputs(&self, id: u64) -> Result<Inputs, DetailError> {
        let live = self
            .current
            .iter()
            .chain(self.core.parked.values())
            .find(|a| a.id == id);
        if let Some(a) = live {
            let deferred = self.core.externally_bound.contains_key(&a.pod().uid);
            return Ok(Inputs {
                id,
                pod: a.pod().clone(),
                profile: a.profile,
                frozen: a.frozen.clone().ok_or(DetailError::World {
                    id,
                    source: WorldError::NotRecorded,
                })?,
                cycle: a.cycle_summary.clone(),
                post_cycle: a.post_cycle.clone(),
                deferred,
                steps: a.post_cycle.len() + a.cycle.trace.len(),
            });
        }
        let r = self
            .history
            .attempt(id)
            .ok_or(DetailError::UnknownAttempt(id))?;
        Ok(Inputs {
            id,
            pod: r.pod_info.whole(),
            profile: r.profile_index,
            frozen: r.frozen.clone().ok_or(DetailError::World {
                id,
                source: WorldError::NotRecorded,
            })?,
            cycle: r.cycle.clone(),
            post_cycle: r.post_cycle.clone(),
            deferred: r.deferred,
            steps: usize::MAX,
        })
    }
}

impl Details {
    /// Copies of the session's profiles (built once), so that re-runs never touch the
    /// state of the plugins that schedule.
    fn frameworks(&mut self, core: &Core, id: u64) -> Result<&[Framework], DetailError> {
        if self.frameworks.is_none() {
            let fwks = crate::session::scheduler::frameworks(&core.sched.config).map_err(|e| {
                DetailError::Profiles {
                    id,
                    message: e.to_string(),
                }
            })?;
            for f in &fwks {
                for p in f.all_plugins() {
                    p.set_seed(core.sched.seed);
                }
            }
            self.frameworks = Some(fwks);
        }
        Ok(self.frameworks.as_deref().unwrap_or_default())
    }
}

/// Runs the attempt again in full over its frozen inputs.
fn rerun(core: &mut Core, fwks: &[Framework], inp: &Inputs) -> Result<AttemptDetail, DetailError> {
    let id = inp.id;
    let frozen = &inp.frozen;
    let fwk = fwks.get(inp.profile).ok_or(DetailError::Profiles {
        id,
        message: format!("no profile {}", inp.profile),
    })?;
    for (name, st) in frozen.plugin_states.iter() {
        if let Some((_, p)) = fwk.unique_plugins().into_iter().find(|(n, _)| n == name) {
            p.restore_state(st);
        }
    }
    let percentage = core.sched.config.percentage_of_nodes_to_score.unwrap_or(0);
    let pool = core.sched.pool();
    let extenders = &core.sched.extenders;
    let world = core
        .world
        .world_at(frozen.world)
        .map_err(|source| DetailError::World { id, source })?;
    let indexes_built = world.snapshot.pod_indexes_built();
    let waiting = frozen
        .waiting
        .as_ref()
        .map(|w| w.fork())
        .unwrap_or_default();
    let node_names: Arc<Vec<String>> = Arc::new(
        world
            .snapshot
            .list()
            .iter()
            .map(|n| n.name().to_string())
            .collect(),
    );
    let mut cycle = SchedulingCycle::new(inp.pod.clone(), Detail::Full, frozen.start_node_index)
        .with_batch(frozen.batch.clone());
    // The QueueSort step comes first and leaves CycleState empty.
    let mut states = vec![Arc::new(Vec::new())];
    {
        let env = CycleEnv {
            framework: fwk,
            snapshot: &world.snapshot,
            listers: &world.listers,
            nominator: &frozen.nominator,
            waiting: &waiting,
            now: frozen.now,
            percentage_of_nodes_to_score: percentage,
            pool,
            extenders,
        };
        let mut reported = 0;
        let run = |cycle: &mut SchedulingCycle| match pool {
            Some(p) => p.install(|| cycle.step_plugin(&env)),
            None => cycle.step_plugin(&env),
        };
        while !cycle.is_done() {
            run(&mut cycle);
            let new = cycle.trace.len() - reported;
            if new > 0 {
                let st = Arc::new(cycle.state.render());
                states.extend(std::iter::repeat_n(st, new));
                reported = cycle.trace.len();
            }
        }
    }
    let summary = summarize(&cycle, &world.snapshot);
    let mut mismatch = inp
        .cycle
        .as_ref()
        .and_then(|want| compare(want, &summary, &cycle));
    if let Some(node) = summary.selected.clone() {
        // The binding cycle's plugins, walked as the attempt walked them, on the pod
        // assumed into the rebuilt snapshot (taken back after).
        let undo = (!inp.deferred).then(|| {
            world
                .snapshot
                .add_pod_undoable(Arc::new(inp.pod.bound_to(&node)))
        });
        let h = Handle {
            framework: fwk,
            snapshot: &world.snapshot,
            listers: &world.listers,
            nominator: &frozen.nominator,
            waiting: &waiting,
            now: frozen.now,
            extenders,
            simulation: inp.deferred,
            pool: None,
        };
        for (point, plugin, recorded) in &inp.post_cycle {
            let got = post_cycle_step(
                &h,
                fwk,
                &mut cycle,
                &inp.pod,
                &node,
                *point,
                plugin.as_deref(),
            );
            if let Some(got) = got
                && got.code() != recorded.code()
                && mismatch.is_none()
            {
                mismatch = Some(format!(
                    "{} {}: the re-run returned {}, the attempt {}",
                    point.as_str(),
                    plugin.as_deref().unwrap_or(""),
                    got.code(),
                    recorded.code()
                ));
            }
            states.push(Arc::new(cycle.state.render()));
        }
        if let Some(u) = undo {
            world.snapshot.undo_add(u);
        }
    }
    // Indexes built by the re-run where the session had not built them go, or the
    // rebuilt snapshot would go on differently from the session's.
    world.snapshot.drop_pod_indexes_built_since(indexes_built);
    if let Some(m) = &mismatch {
        tracing::warn!(attempt = id, pod = %inp.pod.key, "re-running the attempt: {m}");
    }
    Ok(AttemptDetail {
        id,
        matrix: cycle.matrix.take(),
        scores: cycle.scores.take(),
        node_names,
        states,
        summary,
        mismatch,
    })
}

/// Where the re-run's decision differs from the recorded one.
fn compare(want: &CycleSummary, got: &CycleSummary, cycle: &SchedulingCycle) -> Option<String> {
    if want.selected != got.selected {
        return Some(format!(
            "the re-run chose {}, the attempt {}",
            got.selected.as_deref().unwrap_or("no node"),
            want.selected.as_deref().unwrap_or("no node")
        ));
    }
    if want.message != got.message {
        return Some(format!(
            "the re-run said {:?}, the attempt {:?}",
            got.message.as_deref().unwrap_or(""),
            want.message.as_deref().unwrap_or("")
        ));
    }
    if (want.feasible, want.evaluated) != (got.feasible, got.evaluated) {
        return Some(format!(
            "the re-run found {} feasible of {} evaluated node(s), the attempt {} of {}",
            got.feasible, got.evaluated, want.feasible, want.evaluated
        ));
    }
    if want.steps != 0 && want.steps != cycle.trace.len() {
        return Some(format!(
            "the re-run took {} step(s) in the scheduling cycle, the attempt {}",
            cycle.trace.len(),
            want.steps
        ));
    }
    None
}

/// One step after the scheduling cycle, on the re-run's CycleState: the plugin's answer,
/// or `None` for steps that call no plugin (waiting, skipped, an extender's binding).
fn post_cycle_step(
    h: &Handle,
    fwk: &Framework,
    cycle: &mut SchedulingCycle,
    pod: &PodInfo,
    node: &str,
    point: Point,
    plugin: Option<&str>,
) -> Option<Status> {
    let name = plugin?;
    let entry = |ep: ExtensionPoint| fwk.plugins(ep).iter().find(|e| e.name == name);
    let state = &mut cycle.state;
    match point {
        Point::Reserve => Some(
            entry(ExtensionPoint::Reserve)?
                .plugin
                .as_reserve()?
                .reserve(h, state, pod, node),
        ),
        Point::Unreserve => {
            entry(ExtensionPoint::Reserve)?
                .plugin
                .as_reserve()?
                .unreserve(h, state, pod, node);
            None
        }
        Point::Permit => Some(
            entry(ExtensionPoint::Permit)?
                .plugin
                .as_permit()?
                .permit(h, state, pod, node)
                .0,
        ),
        Point::PreBind => {
            let p = entry(ExtensionPoint::PreBind)?.plugin.as_pre_bind()?;
            if p.pre_bind_pre_flight(h, state, pod, node).is_skip() {
                return Some(Status::skip());
            }
            Some(p.pre_bind(h, state, pod, node))
        }
        Point::Bind => Some(
            entry(ExtensionPoint::Bind)?
                .plugin
                .as_bind()?
                .bind(h, state, pod, node),
        ),
        Point::PostBind => {
            entry(ExtensionPoint::PostBind)?
                .plugin
                .as_post_bind()?
                .post_bind(h, state, pod, node);
            None
        }
        _ => None,
    }
    .map(|s| {
        // Plugins' errors are wrapped when recorded: compare codes only.
        if s.is_success() || s.is_rejected() || s.code() == Code::Wait || s.is_skip() {
            s
        } else {
            Status::error(s.message())
        }
    })
}
