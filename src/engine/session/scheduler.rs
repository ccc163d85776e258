//! Scheduler: the profiles of a configuration over one cluster, scheduling pods one after
//! another as kube-scheduler's `ScheduleOne` does, with each placement assumed into the
//! cache before the next pod. The queue, Permit and the binding cycle build on it.

use std::borrow::Cow;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use crate::backend::cache::Cache;
use crate::cluster::ClusterState;
use crate::config::KubeSchedulerConfiguration;
use crate::config::{ConfigError, FieldPath, PluginArgs, Profile};
use crate::extender;
use crate::features::Gate;
use crate::framework::batch::{BatchProbe, CycleResult, OpportunisticBatch};
use crate::framework::cycle::{CycleEnv, CycleOutcome, Detail, SchedulingCycle};
use crate::framework::extender::{Extender, ExtenderError};
use crate::framework::listers::Listers;
use crate::framework::nominator::Nominator;
use crate::framework::profile::FrameworkError;
use crate::framework::waiting::{NO_WAITING, WaitingPods};
use crate::framework::{Framework, PodInfo, Snapshot};
use crate::plugins::registry;

/// Why a configuration cannot be turned into running profiles.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `location` is `FILE:LINE:COL: FIELD` when the entry the message is about was found
    /// in the file, else `FILE: profiles[N]`.
    #[error("{location} ({profile}): {message}")]
    Profile {
        location: String,
        index: usize,
        profile: String,
        message: String,
    },
    #[error("{file}: couldn't build extenders: {message}")]
    Extenders { file: String, message: String },
    /// `--feature-gates` (or config.toml's `feature-gates`) refused, in upstream's words.
    #[error("--feature-gates: {0}")]
    Gates(String),
}

/// Builds the configuration's extenders, ignorable ones last (upstream `buildExtenders`).
pub fn extenders(
    config: &KubeSchedulerConfiguration,
) -> Result<Vec<Arc<dyn Extender>>, SetupError> {
    extender::build(&config.extenders).map_err(|e| SetupError::Extenders {
        file: config.source.name.clone(),
        message: e.0,
    })
}

/// The profile with extender-managed resources marked `ignoredByScheduler` made
/// NodeResourcesFit's ignored resources, as upstream's `buildExtenders` rewrites them.
fn with_extender_ignored_resources<'p>(
    config: &KubeSchedulerConfiguration,
    profile: &'p Profile,
    ignored: &[String],
) -> Result<Cow<'p, Profile>, SetupError> {
    if ignored.is_empty() {
        return Ok(Cow::Borrowed(profile));
    }
    let mut p = profile.clone();
    let fail = |message: &str| SetupError::Extenders {
        file: config.source.name.clone(),
        message: message.to_string(),
    };
    match p
        .plugin_config
        .iter_mut()
        .find(|c| c.name == "NodeResourcesFit")
    {
        Some(c) => match &mut c.args {
            PluginArgs::NodeResourcesFit(a) => a.ignored_resources = ignored.to_vec(),
            _ => {
                return Err(fail(
                    "want args to be of type NodeResourcesFitArgs, got another type",
                ));
            }
        },
        None => return Err(fail("can't find NodeResourcesFitArgs in plugin config")),
    }
    Ok(Cow::Owned(p))
}

/// Builds every profile's framework, reporting problems against the configuration file.
pub fn frameworks(config: &KubeSchedulerConfiguration) -> Result<Vec<Framework>, SetupError> {
    let reg = registry::in_tree();
    let ignored = extender::ignored_extended_resources(&config.extenders);
    let mut out = Vec::new();
    for (i, p) in config.profiles.iter().enumerate() {
        let p = with_extender_ignored_resources(config, p, &ignored)?;
        let p = p.as_ref();
        // NodeResourcesFit validates its args when built (upstream's config validation
        // skips them); check them here so errors point at the file, line and field.
        if let Some(PluginArgs::NodeResourcesFit(a)) = p.plugin_args("NodeResourcesFit") {
            let path = config
                .plugin_config_path(i, "NodeResourcesFit")
                .unwrap_or_else(|| FieldPath::new("profiles"))
                .child("args");
            let errs = crate::config::validate_node_resources_fit_args(a, &path, &config.features);
            if !errs.is_empty() {
                return Err(config.locate_errors(errs).into());
            }
        }
        let f = Framework::new(&reg, p, &config.features).map_err(|e| SetupError::Profile {
            location: config.profile_error_location(
                i,
                e.plugin(),
                e.point(),
                matches!(e, FrameworkError::ScoreOverflow { .. }),
            ),
            index: i,
            profile: p.scheduler_name.clone(),
            message: e.to_string(),
        })?;
        out.push(f);
    }
    Ok(out)
}

pub struct Scheduler {
    pub config: KubeSchedulerConfiguration,
    pub frameworks: Vec<Framework>,
    /// The configured extenders, ignorable ones last.
    pub extenders: Vec<Arc<dyn Extender>>,
    /// The NodeInfos with the pods assumed onto them (upstream's scheduler cache).
    pub cache: Cache,
    /// Shared so that an attempt can keep the nominations it ran with (copied only when
    /// they change while kept).
    pub nominator: Arc<Nominator>,
    /// The seed given to `set_seed`, for building copies of the profiles.
    pub seed: u64,
    /// Where the next node search starts (upstream `nextStartNodeIndex`).
    pub next_start_node_index: usize,
    /// The real scheduler's log, when given: each next search starts where its did.
    pub scheduler_log: Option<super::scheduler_log::SchedulerLog>,
    /// Cycles whose next start followed the log instead of kubestep's own count.
    pub realigned: usize,
    /// Cycles run again from a shifted search start to follow the recording.
    pub followed: usize,
    /// The engine's clock, given to plugins as `Handle::now`: the wall clock when the
    /// scheduler is created; drivers that keep virtual time (replay, tests) set it.
    pub now: jiff::Timestamp,
    /// Each profile's OpportunisticBatching state (parallel to `frameworks`).
    pub batches: Vec<OpportunisticBatch>,
    /// Cycles `schedule_one` ran (its cycle numbers; the session numbers by its queue).
    cycles: u64,
    pool: Option<rayon::ThreadPool>,
}

impl Scheduler {
    pub fn new(
        config: KubeSchedulerConfiguration,
        cluster: &ClusterState,
    ) -> Result<Scheduler, SetupError> {
        let extenders = extenders(&config)?;
        let frameworks = frameworks(&config)?;
        // More workers than cores only adds contention; results do not depend on the count.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = (config.parallelism.max(1) as usize).min(cores);
        let pool = (threads > 1)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .ok()
            })
            .flatten();
        let batches = vec![OpportunisticBatch::default(); frameworks.len()];
        let cache = Cache::new(cluster.snapshot_for(&config.features));
        Ok(Scheduler {
            config,
            frameworks,
            extenders,
            cache,
            nominator: Arc::new(cluster.nominator()),
            seed: 0,
            next_start_node_index: 0,
            scheduler_log: None,
            realigned: 0,
            followed: 0,
            now: jiff::Timestamp::now(),
            batches,
            cycles: 0,
            pool,
        })
    }

    /// Where the search after `cycle` starts: kubestep's own count (`next`), or, when the
    /// real scheduler's log says how many nodes it evaluated binding this pod and that
    /// differs, the real count from `start` (where the search began before any shift to
    /// follow the recording: the log's counts run from there).
    pub fn next_start_after(
        &mut self,
        cycle: &SchedulingCycle,
        start: usize,
        next: usize,
    ) -> usize {
        let n = self.snapshot().list().len();
        let logged = self
            .scheduler_log
            .as_ref()
            .and_then(|l| l.evaluated.get(&cycle.pod.key));
        match (&cycle.outcome, logged) {
            (
                Some(CycleOutcome::Selected {
                    evaluated_nodes, ..
                }),
                Some(&real),
            ) if real != *evaluated_nodes && n > 0 => {
                self.realigned += 1;
                (start + real) % n
            }
            _ => next,
        }
    }

    pub fn framework_for(&self, pod: &PodInfo) -> Option<&Framework> {
        self.frameworks
            .iter()
            .find(|f| f.profile_name == pod.scheduler_name())
    }

    pub fn env<'a>(
        &'a self,
        fwk: &'a Framework,
        listers: &'a Listers,
        waiting: &'a WaitingPods,
    ) -> CycleEnv<'a> {
        CycleEnv {
            framework: fwk,
            snapshot: self.cache.snapshot(),
            listers,
            nominator: &self.nominator,
            waiting,
            now: self.now,
            percentage_of_nodes_to_score: self.config.percentage_of_nodes_to_score.unwrap_or(0),
            pool: self.pool.as_ref(),
            extenders: &self.extenders,
        }
    }

    /// Runs one scheduling cycle; a chosen host is assumed into the snapshot.
    /// Returns `None` when no profile handles the pod.
    pub fn schedule_one(
        &mut self,
        pod: Arc<PodInfo>,
        detail: Detail,
        listers: &Listers,
    ) -> Option<SchedulingCycle> {
        let fwk_index = self
            .frameworks
            .iter()
            .position(|f| f.profile_name == pod.scheduler_name())?;
        self.cycles += 1;
        let probe = self.batch_probe(fwk_index, self.cycles, &pod);
        let mut cycle =
            SchedulingCycle::new(pod, detail, self.next_start_node_index).with_batch(probe);
        {
            let env = self.env(&self.frameworks[fwk_index], listers, &NO_WAITING);
            // Same as the session: long Filter runs and Score passes use the pool.
            cycle.run(&env);
        }
        if let Some(next) = cycle.next_start_node_index {
            self.next_start_node_index = next;
        }
        let chosen = cycle.selected_node().map(str::to_string);
        self.store_schedule_results(fwk_index, &mut cycle, chosen.as_deref());
        if let Some(node) = chosen {
            self.assume(&cycle.pod, &node);
        }
        Some(cycle)
    }

    /// What profile `profile`'s batch tells the cycle numbered `cycle_count` for `pod`;
    /// with the real scheduler's log, also the hint the log says its cycle took.
    pub fn batch_probe(
        &self,
        profile: usize,
        cycle_count: u64,
        pod: &PodInfo,
    ) -> Option<BatchProbe> {
        if !self.config.features.enabled(Gate::OpportunisticBatching) {
            return None;
        }
        let mut probe = self.batches.get(profile)?.probe(cycle_count);
        if let Some(log) = &self.scheduler_log {
            probe.logged = log.hint_taken(&pod.key).map(|h| h.map(str::to_string));
        }
        Some(probe)
    }

    /// Upstream `StoreScheduleResults` for a finished cycle of profile `profile`: the pod
    /// went to `chosen` (kubestep's choice, or the recording's when it binds the pod).
    pub fn store_schedule_results(
        &mut self,
        profile: usize,
        cycle: &mut SchedulingCycle,
        chosen: Option<&str>,
    ) {
        let scored = std::mem::take(&mut cycle.ranking);
        let (Some(decision), Some(batch)) = (cycle.batch.as_ref(), self.batches.get_mut(profile))
        else {
            return;
        };
        batch.after_cycle(CycleResult {
            decision,
            chosen,
            own: cycle.selected_node(),
            scored,
            now: self.now,
        });
    }

    /// Seeds every plugin of every profile (see `Plugin::set_seed`).
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
        for fwk in &self.frameworks {
            for p in fwk.all_plugins() {
                p.set_seed(seed);
            }
        }
    }

    /// The thread pool, when the configuration's parallelism and the machine give one.
    pub fn pool(&self) -> Option<&rayon::ThreadPool> {
        self.pool.as_ref()
    }

    /// Binds through the extenders first (upstream `extendersBinding`): `None` when no
    /// binder extender is interested in the pod, so the profile's Bind plugins bind it.
    pub fn extenders_binding(
        &self,
        pod: &PodInfo,
        node: &str,
    ) -> Option<Result<(), ExtenderError>> {
        crate::framework::extender::extenders_binding(&self.extenders, pod, node)
    }

    /// What plugins read: the cache's NodeInfos.
    pub fn snapshot(&self) -> &Snapshot {
        self.cache.snapshot()
    }

    /// Places a pod on a node in the cache (upstream `AssumePod`).
    pub fn assume(&mut self, pod: &PodInfo, node: &str) -> Arc<PodInfo> {
        let assumed = Arc::new(pod.bound_to(node));
        self.assume_pod(assumed.clone());
        assumed
    }

    /// Places a pod already bound to its node (`spec.nodeName` set) in the cache; its
    /// nomination is done with.
    pub fn assume_pod(&mut self, assumed: Arc<PodInfo>) {
        if self.nominator.contains(&assumed.uid) {
            Arc::make_mut(&mut self.nominator).remove(&assumed.uid);
        }
        self.cache.assume_pod(assumed);
    }
}

/// A copy of the pod bound to `node`.
pub fn with_node_name(pod: &Pod, node: &str) -> Pod {
    let mut p = pod.clone();
    p.spec.get_or_insert_with(Default::default).node_name = Some(node.to_string());
    p
}
