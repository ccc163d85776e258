//! OpportunisticBatching (beta, on by default in v1.35): a pod with the same signature as
//! the pod scheduled in the cycle just before it, whose node that pod has filled, is
//! offered the next node of that cycle's ranking (the "hint") instead of a new search. The
//! hint is filtered alone, like a nominated node; if it passes, the pod goes there,
//! evaluating one node and leaving the round-robin start where it was.
//!
//! The scheduler keeps one [`OpportunisticBatch`] per profile. A cycle is handed a
//! [`BatchProbe`] (a cheap copy of what the batch holds) and decides the hint itself, after
//! PreFilter, as upstream does; the driver then hands the finished cycle back
//! ([`OpportunisticBatch::after_cycle`]), which pops the hint or stores the new ranking.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;

use super::profile::{ExtensionPoint, Framework};
use super::select::{self, Scored};
use super::signature::{Signature, signer};
use super::types::PodInfo;

/// A stored ranking older than this is not used (upstream `maxBatchAge`).
pub const MAX_BATCH_AGE: Duration = Duration::from_millis(500);

/// The extension points whose plugins must all sign for a profile to batch.
pub const SIGNED_POINTS: [ExtensionPoint; 4] = [
    ExtensionPoint::PreFilter,
    ExtensionPoint::Filter,
    ExtensionPoint::PreScore,
    ExtensionPoint::Score,
];

/// Upstream `SignPod`: the scheduler name and every fragment of the profile's PreFilter,
/// Filter, PreScore and Score plugins (each plugin once), as one JSON object with sorted
/// keys.
pub fn sign_pod(
    fwk: &Framework,
    has_extenders: bool,
    pod: &PodInfo,
    listers: &crate::listers::Listers,
) -> Signature {
    if has_extenders {
        return Signature::Disabled("the configuration has extenders".into());
    }
    let mut sig = serde_json::Map::new();
    let scheduler = pod.scheduler_name().to_string();
    sig.insert(signer::SCHEDULER_NAME.into(), Value::String(scheduler));
    let mut seen: Vec<&'static str> = Vec::new();
    let mut unsignable = None;
    // Upstream stops at the first plugin that cannot sign; so does this, once it knows
    // every plugin has SignPod (a profile without is disabled whatever the pod).
    if let Some(missing) = fwk.unsigned_plugins() {
        return Signature::Disabled(format!("plugins without a signature: {missing}"));
    }
    'points: for ep in SIGNED_POINTS {
        for e in fwk.plugins(ep) {
            if seen.contains(&e.name) {
                continue;
            }
            seen.push(e.name);
            match e.plugin.sign_pod_in(pod, listers) {
                Some(Ok(fragments)) => {
                    for f in fragments {
                        sig.insert(f.key.into(), f.value);
                    }
                }
                Some(Err(reason)) => {
                    unsignable = Some((e.name, reason));
                    break 'points;
                }
                None => {}
            }
        }
    }
    if let Some((plugin, reason)) = unsignable {
        return Signature::Unsignable { plugin, reason };
    }
    // serde_json's map keeps keys sorted, so equal pods give equal text.
    Signature::Signed(Value::Object(sig).to_string().into())
}

/// Why a cycle got no hint (upstream's `BatchCacheFlushed` reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoHint {
    /// Nothing stored: the last cycle stored no ranking.
    Empty,
    /// Another cycle ran since the ranking was stored (a failure, another profile).
    PodSkipped,
    /// This pod's signature differs from the stored one, or it has none.
    PodIncompatible,
    /// The ranking is older than 500 ms.
    Expired,
    /// The node chosen last is gone.
    NodeMissing,
    /// The node chosen last still fits this pod, so the ranking may be out of date.
    NodeNotFull,
    /// The real scheduler's log shows its cycle for this pod took no hint (replay with
    /// its log only).
    NotInLog,
}

impl NoHint {
    /// Upstream's metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            NoHint::Empty => "empty",
            NoHint::PodSkipped => "pod_skipped",
            NoHint::PodIncompatible => "pod_incompatible",
            NoHint::Expired => "expired",
            NoHint::NodeMissing => "node_missing",
            NoHint::NodeNotFull => "node_not_full",
            NoHint::NotInLog => "not_in_scheduler_log",
        }
    }
}

/// What a cycle is told about the batch when it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchProbe {
    /// This cycle's number (upstream: the queue's scheduling cycle).
    pub cycle_count: u64,
    pub stored: Option<StoredRanking>,
    /// What the real scheduler's log says this pod's cycle took (`Some(None)`: no hint),
    /// when a replay follows the log; the batch's own decision is then not used.
    pub logged: Option<Option<String>>,
}

/// The head of the stored ranking and what decides whether it may be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRanking {
    pub signature: Arc<str>,
    pub last_cycle: u64,
    pub last_chosen: String,
    pub created: Timestamp,
    /// The node a hint would be.
    pub head: String,
    pub head_total: i64,
    /// Other stored nodes with the head's total (equally good hints).
    pub ties: Vec<String>,
    /// Nodes in the ranking, the head included.
    pub len: usize,
}

/// What the cycle decided about the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchDecision {
    pub cycle_count: u64,
    pub signature: Signature,
    /// The hint, or why there is none.
    pub hint: Result<String, NoHint>,
    /// What the hint came from, when there was a stored ranking.
    pub stored: Option<StoredRanking>,
    /// The recording placed the hinted pod on a node kubestep's ranking did not hold:
    /// that node and its total, scored by a search that examined it (replay only).
    pub recorded: Option<(String, i64)>,
    /// The hint (or its absence) came from the real scheduler's log: then what kubestep's
    /// batch alone would have given, to show beside it.
    pub own: Option<Result<String, NoHint>>,
}

impl BatchDecision {
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref().ok()
    }

    /// The trace's words for it: "hint n219 (n218, chosen last, is full; 41 more ranked)".
    pub fn describe(&self) -> String {
        let last = self.stored.as_ref().map_or("", |s| s.last_chosen.as_str());
        if let Some(own) = &self.own {
            let own = match own {
                Ok(h) => format!("hint {h}"),
                Err(why) => format!("no hint, {}", why.as_str()),
            };
            return match &self.hint {
                Ok(h) => format!(
                    "hint {h}, from the scheduler log: the real cycle took it (kubestep's batch alone: {own})"
                ),
                Err(_) => format!(
                    "no hint: the scheduler log shows the real cycle took none (kubestep's batch alone: {own})"
                ),
            };
        }
        match &self.hint {
            Ok(h) => {
                let more = self.stored.as_ref().map_or(0, |s| s.len.saturating_sub(1));
                format!(
                    "hint {h}: the last pod's node {last} is full for this pod and it has the same signature ({more} more node(s) ranked)"
                )
            }
            Err(NoHint::Empty) => "no hint: no ranking stored".into(),
            Err(NoHint::PodSkipped) => {
                "no hint: the ranking is from an earlier cycle (pod_skipped)".into()
            }
            Err(NoHint::PodIncompatible) => match self.signature.why_not() {
                Some(why) => format!("no hint: the pod has no signature ({why})"),
                None => {
                    "no hint: the pod's signature differs from the ranking's (pod_incompatible)"
                        .into()
                }
            },
            Err(NoHint::Expired) => "no hint: the ranking is older than 500ms (expired)".into(),
            Err(NoHint::NodeMissing) => {
                format!("no hint: the last pod's node {last} is gone (node_missing)")
            }
            Err(NoHint::NodeNotFull) => {
                format!("no hint: the last pod's node {last} still fits this pod (node_not_full)")
            }
            Err(NoHint::NotInLog) => "no hint: none in the scheduler log".into(),
        }
    }
}

/// A stored ranking: the rest of a cycle's scored nodes as upstream's heap.
#[derive(Debug, Clone)]
struct Ranking {
    signature: Arc<str>,
    heap: Vec<Scored>,
    /// Node names, indexed by `Scored::index`.
    names: Vec<String>,
    created: Timestamp,
}

impl Ranking {
    fn head(&self) -> Option<&Scored> {
        self.heap.first()
    }

    fn name(&self, s: &Scored) -> &str {
        &self.names[s.index]
    }

    fn pop(&mut self) -> Option<String> {
        select::heap_pop(&mut self.heap).map(|s| self.names[s.index].clone())
    }

    /// Takes `node` out wherever it sits (Go's `heap.Remove`); false if absent.
    fn remove(&mut self, node: &str) -> bool {
        let Some(i) = self.heap.iter().position(|s| self.names[s.index] == node) else {
            return false;
        };
        select::heap_remove(&mut self.heap, i);
        true
    }

    /// The real scheduler took `node` from its own ranking: `node` leaves ours, and so do
    /// the nodes ours ranks above it, which the real ranking cannot have held (it gives
    /// its best first): its search examined other nodes. False if `node` is not ranked.
    fn follow(&mut self, node: &str) -> bool {
        let Some(total) = self
            .heap
            .iter()
            .find(|s| self.names[s.index] == node)
            .map(|s| s.total)
        else {
            return false;
        };
        self.remove(node);
        self.drop_above(total);
        true
    }

    /// Nodes ranked above `total` leave the ranking.
    fn drop_above(&mut self, total: i64) {
        if self.heap.first().is_some_and(|h| h.total > total) {
            self.heap.retain(|s| s.total <= total);
            select::heap_init(&mut self.heap);
        }
    }
}

/// One profile's batch (upstream `OpportunisticBatch`).
#[derive(Debug, Clone, Default)]
pub struct OpportunisticBatch {
    ranking: Option<Ranking>,
    /// The last cycle that chose a node, and the node.
    last: Option<(u64, String)>,
    /// Pods placed on their hint.
    pub batched_pods: u64,
}

/// What a finished cycle tells the batch.
pub struct CycleResult<'a> {
    pub decision: &'a BatchDecision,
    /// The node the pod went to (`None`: the cycle chose none).
    pub chosen: Option<&'a str>,
    /// The node kubestep's cycle chose (`None`: none). It differs from `chosen` only when
    /// the recording placed the pod elsewhere.
    pub own: Option<&'a str>,
    /// The scored nodes with their totals and tie-breakers (empty when nothing was scored).
    pub scored: Vec<(String, Scored)>,
    pub now: Timestamp,
}

impl OpportunisticBatch {
    /// What a cycle numbered `cycle_count` is told.
    pub fn probe(&self, cycle_count: u64) -> BatchProbe {
        let stored = match (&self.ranking, &self.last) {
            (Some(r), Some((last_cycle, last_chosen))) => r.head().map(|h| {
                // The ties matter only to a cycle that can take the hint: the walk over the
                // ranking is skipped for any other (upstream's hint is a pop).
                let ties = if cycle_count == last_cycle + 1 {
                    r.heap
                        .iter()
                        .filter(|s| s.total == h.total && s.index != h.index)
                        .map(|s| r.name(s).to_string())
                        .collect()
                } else {
                    Vec::new()
                };
                StoredRanking {
                    signature: r.signature.clone(),
                    last_cycle: *last_cycle,
                    last_chosen: last_chosen.clone(),
                    created: r.created,
                    head: r.name(h).to_string(),
                    head_total: h.total,
                    ties,
                    len: r.heap.len(),
                }
            }),
            _ => None,
        };
        BatchProbe {
            cycle_count,
            stored,
            logged: None,
        }
    }

    /// Nodes in the stored ranking.
    pub fn len(&self) -> usize {
        self.ranking.as_ref().map_or(0, |r| r.heap.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Upstream `StoreScheduleResults` (and the hint's pop), for a finished cycle.
    ///
    /// When the recording says where the pod went and kubestep chose otherwise, the batch
    /// follows the recording, as the real scheduler's batch did: the real node is the one
    /// the next pod must find full, and it leaves the ranking instead of kubestep's choice
    /// (with the nodes ranked above it, which the real ranking did not hold).
    pub fn after_cycle(&mut self, r: CycleResult) {
        let d = r.decision;
        let hinted = d.hint();
        let realigned = r.chosen.is_some() && r.own != r.chosen;
        if let Some(h) = hinted
            && !realigned
            && let Some(rk) = self.ranking.as_mut()
            && rk.head().is_some_and(|s| rk.name(s) == h)
        {
            rk.pop();
        }
        // A hint from the real scheduler's log leaves the ranking wherever it sits.
        if d.own.is_some()
            && let Some(h) = hinted
            && let Some(rk) = self.ranking.as_mut()
        {
            rk.remove(h);
        }
        let Some(chosen) = r.chosen else {
            return;
        };
        self.last = Some((d.cycle_count, chosen.to_string()));
        if hinted == Some(chosen) {
            self.batched_pods += 1;
            return;
        }
        if realigned && (hinted.is_some() || r.scored.is_empty()) {
            // The real scheduler took `chosen` (from its own ranking): take it out of ours.
            if let Some(rk) = self.ranking.as_mut()
                && !rk.follow(chosen)
                && let Some((_, total)) = &d.recorded
            {
                // Not in ours: the real ranking held nothing above its total either.
                rk.drop_above(*total);
            }
            return;
        }
        let sig = d.signature.signed();
        match sig {
            Some(sig) if r.scored.len() > 1 => {
                let mut names = Vec::with_capacity(r.scored.len());
                let mut heap = Vec::with_capacity(r.scored.len());
                for (i, (name, s)) in r.scored.into_iter().enumerate() {
                    names.push(name);
                    heap.push(Scored { index: i, ..s });
                }
                select::heap_init(&mut heap);
                let mut rk = Ranking {
                    signature: sig.clone(),
                    heap,
                    names,
                    created: r.now,
                };
                if !(realigned && rk.follow(chosen)) {
                    rk.pop();
                }
                self.ranking = (!rk.heap.is_empty()).then_some(rk);
            }
            _ => self.ranking = None,
        }
    }
}

/// Upstream `batchStateCompatible` short of the Filter run on the last node: the reason
/// the stored ranking cannot be used, or the ranking to check the last node of.
pub fn precheck<'p>(
    probe: &'p BatchProbe,
    signature: &Signature,
    now: Timestamp,
) -> Result<&'p StoredRanking, NoHint> {
    let Some(s) = &probe.stored else {
        return Err(NoHint::Empty);
    };
    if probe.cycle_count != s.last_cycle + 1 {
        return Err(NoHint::PodSkipped);
    }
    if signature.signed() != Some(&s.signature) {
        return Err(NoHint::PodIncompatible);
    }
    let max_age = jiff::SignedDuration::from_millis(MAX_BATCH_AGE.as_millis() as i64);
    if s.created
        .checked_add(max_age)
        .is_ok_and(|expiry| now > expiry)
    {
        return Err(NoHint::Expired);
    }
    Ok(s)
}

#[cfg(test)]
mod tests;
