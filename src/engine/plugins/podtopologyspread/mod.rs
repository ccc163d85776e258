//! PodTopologySpread: spreads pods matching each constraint's selector evenly over the
//! domains of its topology key. DoNotSchedule constraints filter nodes (the skew after
//! placing the pod must stay within maxSkew); ScheduleAnyway constraints score them.
//! Pods without constraints get the default constraints (system: hostname maxSkew 3 and
//! zone maxSkew 5, ScheduleAnyway), selecting the pods of the same Services and controller.

use k8s_openapi::api::core::v1::TopologySpreadConstraint;

use crate::framework::hints::ClusterEventWithHint;
use crate::framework::plugin::{
    FilterPlugin, Plugin, PreFilterPlugin, PreScorePlugin, ScorePlugin,
};

pub mod common;
pub mod filtering;
mod hints;
pub mod scoring;

pub const NAME: &str = "PodTopologySpread";
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

#[derive(Debug, Clone)]
pub struct PodTopologySpread {
    /// `defaultingType: System`: the system default constraints are in use, and nodes
    /// missing a topology key still score.
    system_defaulted: bool,
    default_constraints: Vec<TopologySpreadConstraint>,
    /// The version's `hints_see_nominated_pods` (1.36): a pod with only a nominated node
    /// counts in the pod-event hint as placed.
    hints_see_nominated_pods: bool,
}

impl PodTopologySpread {
    /// Builds the plugin from `PodTopologySpreadArgs`: `defaultConstraints`, and whether
    /// `defaultingType` is System (which replaces them with the system defaults).
    pub fn new(
        default_constraints: Vec<TopologySpreadConstraint>,
        system_defaulting: bool,
    ) -> PodTopologySpread {
        if system_defaulting {
            PodTopologySpread {
                system_defaulted: true,
                default_constraints: common::system_default_constraints(),
                hints_see_nominated_pods: false,
            }
        } else {
            PodTopologySpread {
                system_defaulted: false,
                default_constraints,
                hints_see_nominated_pods: false,
            }
        }
    }

    /// The same plugin with the queueing hints of a version (`hints_see_nominated_pods`).
    pub fn with_hints_seeing_nominated_pods(mut self, on: bool) -> PodTopologySpread {
        self.hints_see_nominated_pods = on;
        self
    }

    pub fn default_constraints(&self) -> &[TopologySpreadConstraint] {
        &self.default_constraints
    }

    pub fn system_defaulted(&self) -> bool {
        self.system_defaulted
    }
}

impl Default for PodTopologySpread {
    /// Upstream's default args: `defaultingType: System`.
    fn default() -> Self {
        PodTopologySpread::new(Vec::new(), true)
    }
}

impl Plugin for PodTopologySpread {
    fn sign_pod(
        &self,
        pod: &crate::framework::PodInfo,
    ) -> Option<crate::framework::signature::SignResult> {
        let own = pod
            .pod()
            .spec
            .as_ref()
            .and_then(|s| s.topology_spread_constraints.as_ref());
        if own.is_some_and(|c| !c.is_empty()) {
            return Some(Err("pods with topology constraints are not signable".into()));
        }
        if !self.default_constraints.is_empty() {
            return Some(Err(
                "pods with default topology constraints are not signable".into(),
            ));
        }
        Some(Ok(Vec::new()))
    }
    fn name(&self) -> &'static str {
        NAME
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(hints::queueing_hints(self.clone()))
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
}

/// Built from validated `PodTopologySpreadArgs` (default constraints, and whether they are
/// the system's).
pub fn factory(
    ctx: &crate::framework::factory::FactoryContext,
) -> crate::framework::factory::Built {
    let args: crate::config::PodTopologySpreadArgs = ctx.args()?;
    let root = crate::config::FieldPath::root();
    crate::framework::factory::BuildError::check(
        crate::config::validation::validate_pod_topology_spread_args(&root, &args),
    )?;
    Ok(std::sync::Arc::new(
        PodTopologySpread::new(args.default_constraints.clone(), args.is_system_defaulted())
            .with_hints_seeing_nominated_pods(ctx.features.semantics.hints_see_nominated_pods),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::conformance_cases::{Coverage, all_case_ids, check, load};

    #[test]
    fn conformance_cases() {
        let mut cov = Coverage::default();
        let mut failures = Vec::new();
        for id in all_case_ids() {
            let case = load(&id);
            for e in check(&case, NAME, &mut cov) {
                failures.push(format!("{id}: {e}"));
            }
        }
        println!("{cov:?}");
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(cov.filter_rejections > 50 && cov.scored_cases > 15);
    }

    #[test]
    fn pods_are_signable_only_without_own_or_default_constraints() {
        use crate::plugins::testing::pod;
        use serde_json::json;
        let plain = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
        let spread = pod(json!({"metadata": {"name": "q"}, "spec": {"containers": [],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule"}]}}));
        let err = |r: Option<crate::framework::signature::SignResult>| r.unwrap().unwrap_err();
        assert_eq!(
            err(PodTopologySpread::default().sign_pod(&plain)),
            "pods with default topology constraints are not signable"
        );
        let list = PodTopologySpread::new(Vec::new(), false);
        assert_eq!(list.sign_pod(&plain), Some(Ok(Vec::new())));
        assert_eq!(
            err(list.sign_pod(&spread)),
            "pods with topology constraints are not signable"
        );
    }
}
