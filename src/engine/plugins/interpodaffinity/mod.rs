//! InterPodAffinity: required pod affinity / anti-affinity (of the incoming pod, and the
//! anti-affinity of pods already running) filter nodes by topology domain; preferred terms
//! of both sides, and existing pods' required affinity, score them.

use crate::api::labels::{Selector, empty_labels};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::listers::Listers;
use crate::framework::plugin::{
    FilterPlugin, Plugin, PreFilterPlugin, PreScorePlugin, ScorePlugin,
};
use crate::framework::types::AffinityTerm;

pub mod filtering;
mod hints;
pub mod scoring;

pub const NAME: &str = "InterPodAffinity";
pub const ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";
pub const ERR_REASON_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod affinity rules";
pub const ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't match pod anti-affinity rules";

/// Upstream's `InterPodAffinityArgs` defaults.
pub const DEFAULT_HARD_POD_AFFINITY_WEIGHT: i32 = 1;

#[derive(Debug, Clone)]
pub struct InterPodAffinity {
    /// Score weight of an existing pod's required affinity term matching the incoming pod.
    hard_pod_affinity_weight: i32,
    /// Skip scoring entirely for pods without preferred (anti-)affinity of their own.
    ignore_preferred_terms_of_existing_pods: bool,
    /// The version's `hints_see_nominated_pods` (1.36): what the pod-event hint counts as
    /// placed, and the two events it queues on besides.
    hints_see_nominated_pods: bool,
}

impl InterPodAffinity {
    pub fn new(
        hard_pod_affinity_weight: i32,
        ignore_preferred_terms_of_existing_pods: bool,
    ) -> InterPodAffinity {
        InterPodAffinity {
            hard_pod_affinity_weight,
            ignore_preferred_terms_of_existing_pods,
            hints_see_nominated_pods: false,
        }
    }

    /// The same plugin with the queueing hints of a version (`hints_see_nominated_pods`).
    pub fn with_hints_seeing_nominated_pods(mut self, on: bool) -> InterPodAffinity {
        self.hints_see_nominated_pods = on;
        self
    }

    pub fn hard_pod_affinity_weight(&self) -> i32 {
        self.hard_pod_affinity_weight
    }

    pub fn ignore_preferred_terms_of_existing_pods(&self) -> bool {
        self.ignore_preferred_terms_of_existing_pods
    }
}

impl Default for InterPodAffinity {
    fn default() -> Self {
        InterPodAffinity::new(DEFAULT_HARD_POD_AFFINITY_WEIGHT, false)
    }
}

impl Plugin for InterPodAffinity {
    fn sign_pod(
        &self,
        pod: &crate::framework::PodInfo,
    ) -> Option<crate::framework::signature::SignResult> {
        let aff = pod.pod().spec.as_ref().and_then(|s| s.affinity.as_ref());
        if aff.is_some_and(|a| a.pod_affinity.is_some() || a.pod_anti_affinity.is_some()) {
            return Some(Err("pods with InterPodAffinity are not signable".into()));
        }
        // Existing pods' preferred terms can match this pod's labels, unless ignored.
        if self.ignore_preferred_terms_of_existing_pods {
            return Some(Ok(Vec::new()));
        }
        Some(Ok(vec![crate::plugins::signers::labels(pod)]))
    }
    fn name(&self) -> &'static str {
        NAME
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(hints::queueing_hints(self.hints_see_nominated_pods))
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

/// For one of the incoming pod's terms: a non-empty namespaceSelector is resolved, through
/// the Namespace lister, into the names of the namespaces it selects, and then becomes a
/// selector of nothing. An empty selector (`{}`) stays: it matches every namespace. So the
/// incoming pod's terms are matched without namespace labels afterwards.
pub fn merge_term_namespaces(term: &mut AffinityTerm, listers: &Listers) {
    if term.namespace_selector.is_empty() {
        return;
    }
    for (key, ns) in &listers.namespaces {
        let labels = ns.metadata.labels.as_ref().unwrap_or(empty_labels());
        if term.namespace_selector.matches(labels) {
            term.namespaces
                .insert(ns.metadata.name.clone().unwrap_or_else(|| key.clone()));
        }
    }
    term.namespace_selector = Selector::nothing();
}

/// How a term reads in the CycleState pane.
pub fn describe_term(t: &AffinityTerm) -> String {
    let mut ns: Vec<&str> = t.namespaces.iter().map(String::as_str).collect();
    ns.sort_unstable();
    let mut s = format!(
        "topologyKey={} selector={} namespaces=[{}]",
        t.topology_key,
        t.selector,
        ns.join(",")
    );
    if !t.namespace_selector.is_nothing() {
        s.push_str(&format!(" namespaceSelector={}", t.namespace_selector));
    }
    s
}

/// Built from validated `InterPodAffinityArgs`.
pub fn factory(
    ctx: &crate::framework::factory::FactoryContext,
) -> crate::framework::factory::Built {
    let args: crate::config::InterPodAffinityArgs = ctx.args()?;
    let root = crate::config::FieldPath::root();
    crate::framework::factory::BuildError::check(
        crate::config::validation::validate_inter_pod_affinity_args(&root, &args),
    )?;
    Ok(std::sync::Arc::new(
        InterPodAffinity::new(
            args.hard_pod_affinity_weight,
            args.ignore_preferred_terms_of_existing_pods,
        )
        .with_hints_seeing_nominated_pods(ctx.features.semantics.hints_see_nominated_pods),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::pod;
    use serde_json::json;
    use std::sync::Arc;

    #[test]
    fn namespace_selector_resolution() {
        let mut listers = Listers::default();
        for (name, labels) in [
            ("a", json!({"team": "x"})),
            ("b", json!({"team": "y"})),
            ("c", json!(null)),
        ] {
            let mut v = json!({"metadata": {"name": name}});
            if !labels.is_null() {
                v["metadata"]["labels"] = labels;
            }
            listers.namespaces.insert(
                name.to_string(),
                Arc::new(serde_json::from_value(v).unwrap()),
            );
        }
        let p = pod(
            json!({"metadata": {"name": "p", "namespace": "z"}, "spec": {"containers": [],
            "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {}, "topologyKey": "k", "namespaceSelector": {"matchLabels": {"team": "x"}}, "namespaces": ["q"]},
                {"labelSelector": {}, "topologyKey": "k", "namespaceSelector": {}},
                {"labelSelector": {}, "topologyKey": "k", "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}},
                {"labelSelector": {}, "topologyKey": "k"}]}}}}),
        );
        let mut terms = p.required_affinity_terms.clone();
        for t in &mut terms {
            merge_term_namespaces(t, &listers);
        }
        let names = |t: &AffinityTerm| t.namespaces.iter().cloned().collect::<Vec<_>>();
        assert_eq!(names(&terms[0]), ["a", "q"]);
        assert!(terms[0].namespace_selector.is_nothing());
        assert!(names(&terms[1]).is_empty());
        assert!(terms[1].namespace_selector.is_empty());
        assert_eq!(names(&terms[2]), ["c"]);
        assert_eq!(names(&terms[3]), ["z"]);
        assert!(terms[3].namespace_selector.is_nothing());
    }

    #[test]
    fn pods_with_pod_affinity_are_not_signable_and_labels_sign_the_rest() {
        let anti = pod(json!({"metadata": {"name": "a"}, "spec": {"containers": [],
            "affinity": {"podAntiAffinity": {}}}}));
        let plain = pod(
            json!({"metadata": {"name": "p", "labels": {"app": "web"}}, "spec": {"containers": []}}),
        );
        let pl = InterPodAffinity::default();
        assert_eq!(
            pl.sign_pod(&anti).unwrap().unwrap_err(),
            "pods with InterPodAffinity are not signable"
        );
        let f = pl.sign_pod(&plain).unwrap().unwrap();
        assert_eq!(f[0].key, crate::framework::signature::signer::LABELS);
        assert_eq!(f[0].value, json!({"app": "web"}));
        // Existing pods' preferred terms ignored: the labels no longer matter.
        let ignoring = InterPodAffinity::new(DEFAULT_HARD_POD_AFFINITY_WEIGHT, true);
        assert_eq!(ignoring.sign_pod(&plain), Some(Ok(Vec::new())));
    }
}

#[cfg(test)]
mod case_tests {
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
        assert!(cov.filter_rejections > 100 && cov.scored_cases > 20);
    }
}
