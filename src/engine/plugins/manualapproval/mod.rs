//! ManualApproval (kubestep's own, not part of kube-scheduler): holds the pods it selects
//! at Permit until a person allows or rejects them in the debugger, or the wait times out.
//! Other pods pass. Enable it at permit; its args:
//!
//! * `labelSelector`: a metav1 LabelSelector; default `kubestep.io/approval=manual`.
//! * `timeoutSeconds`: how long to wait, 1 to 900 (Permit waits are capped at 15 minutes);
//!   default 900.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::api::labels::Selector;
use crate::config::{BadValue, FieldError, FieldPath, PluginArgs};
use crate::framework::events::{ActionType as A, EventResource as R};
use crate::framework::hints::ClusterEventWithHint;
use crate::framework::hints::access::queue_if_own_update;
use crate::framework::plugin::{Handle, MAX_PERMIT_TIMEOUT, PermitPlugin, Plugin};
use crate::framework::waiting::{WaitingPods, go_duration};
use crate::framework::{Code, CycleState, PodInfo, RenderState, StateTree, Status};
use crate::plugins::helper::RawArgs;

pub const NAME: &str = "ManualApproval";
pub const ARGS_KIND: &str = "ManualApprovalArgs";
pub const STATE_KEY: &str = "ManualApproval";
/// The label that selects pods by default, and its value.
pub const DEFAULT_LABEL_KEY: &str = "kubestep.io/approval";
pub const DEFAULT_LABEL_VALUE: &str = "manual";
pub const DEFAULT_TIMEOUT_SECONDS: i64 = 900;

/// `ManualApprovalArgs`.
#[derive(Debug, Clone, PartialEq)]
pub struct ManualApprovalArgs {
    pub label_selector: LabelSelector,
    pub timeout_seconds: i64,
}

impl Default for ManualApprovalArgs {
    fn default() -> Self {
        ManualApprovalArgs {
            label_selector: LabelSelector {
                match_labels: Some(
                    [(
                        DEFAULT_LABEL_KEY.to_string(),
                        DEFAULT_LABEL_VALUE.to_string(),
                    )]
                    .into(),
                ),
                match_expressions: None,
            },
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
        }
    }
}

impl ManualApprovalArgs {
    /// Decodes the profile's args; absent fields take the defaults.
    pub fn from_plugin_args(args: Option<&PluginArgs>) -> Result<ManualApprovalArgs, String> {
        let raw = RawArgs::new(args, ARGS_KIND, &["labelSelector", "timeoutSeconds"])?;
        let d = ManualApprovalArgs::default();
        let label_selector = match raw.get("labelSelector") {
            None => d.label_selector,
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
                format!("json: cannot decode labelSelector into Go struct field {ARGS_KIND}.labelSelector: {e}")
            })?,
        };
        Ok(ManualApprovalArgs {
            label_selector,
            timeout_seconds: raw
                .int("timeoutSeconds", "int64")?
                .unwrap_or(d.timeout_seconds),
        })
    }
}

/// The ManualApproval plugin.
#[derive(Debug, Clone)]
pub struct ManualApproval {
    selector: Selector,
    timeout: Duration,
}

impl Default for ManualApproval {
    fn default() -> Self {
        match ManualApproval::new(&ManualApprovalArgs::default()) {
            Ok(p) => p,
            Err(e) => unreachable!("the default args are valid: {e}"),
        }
    }
}

impl ManualApproval {
    /// Builds the plugin, refusing a timeout outside 1..=900 seconds or a selector that
    /// does not parse (errors in Kubernetes' field error form).
    pub fn new(args: &ManualApprovalArgs) -> Result<ManualApproval, String> {
        let mut errs = Vec::new();
        let selector = Selector::from_label_selector(Some(&args.label_selector))
            .map_err(|e| {
                errs.push(FieldError::invalid(
                    FieldPath::new("labelSelector"),
                    BadValue::None,
                    e,
                ))
            })
            .ok();
        let max = i64::try_from(MAX_PERMIT_TIMEOUT.as_secs()).unwrap_or(i64::MAX);
        if !(1..=max).contains(&args.timeout_seconds) {
            errs.push(FieldError::invalid(
                FieldPath::new("timeoutSeconds"),
                BadValue::Int(args.timeout_seconds),
                format!("must be between 1 and {max} (Permit waits are capped at 15 minutes)"),
            ));
        }
        match (selector, errs.len()) {
            (Some(selector), 0) => Ok(ManualApproval {
                selector,
                timeout: Duration::from_secs(u64::try_from(args.timeout_seconds).unwrap_or(0)),
            }),
            (_, 1) => Err(errs[0].to_string()),
            _ => {
                let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
                Err(format!("[{}]", msgs.join(", ")))
            }
        }
    }

    pub fn selector(&self) -> &Selector {
        &self.selector
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// The message a person's rejection carries (shown in the pod's scheduling failure).
pub fn rejection_message(reason: &str) -> String {
    if reason.is_empty() {
        "rejected at manual approval".to_string()
    } else {
        format!("rejected at manual approval: {reason}")
    }
}

/// A person approves a waiting pod. False when the pod is not waiting for approval.
pub fn approve(waiting: &WaitingPods, uid: &str) -> bool {
    waiting.allow(uid, NAME)
}

/// A person rejects a waiting pod, with an optional reason. False when it is not waiting.
pub fn reject(waiting: &WaitingPods, uid: &str, reason: &str) -> bool {
    waiting
        .get(uid)
        .is_some_and(|w| w.pending.contains_key(NAME))
        && waiting.reject(uid, NAME, &rejection_message(reason))
}

/// Whether the pod was selected, and what it waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalState {
    pub selector: String,
    pub selected: bool,
    pub timeout: Duration,
}

impl RenderState for ApprovalState {
    fn render(&self) -> StateTree {
        let verdict = if self.selected {
            format!(
                "waits for manual approval (up to {})",
                go_duration(self.timeout)
            )
        } else {
            "not selected, passes".to_string()
        };
        StateTree::node(
            verdict,
            vec![StateTree::kv("labelSelector", &self.selector)],
        )
    }
}

impl Plugin for ManualApproval {
    fn name(&self) -> &'static str {
        NAME
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(queueing_hints())
    }
    fn as_permit(&self) -> Option<&dyn PermitPlugin> {
        Some(self)
    }
}

impl PermitPlugin for ManualApproval {
    fn permit(
        &self,
        _h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        _node: &str,
    ) -> (Status, Duration) {
        let selected = self.selector.matches(pod.labels());
        state.write(
            STATE_KEY,
            ApprovalState {
                selector: self.selector.to_string(),
                selected,
                timeout: self.timeout,
            },
        );
        if !selected {
            return (Status::success(), Duration::ZERO);
        }
        let status = Status::new(
            Code::Wait,
            format!(
                "waiting for manual approval: allow or reject the pod (times out after {})",
                go_duration(self.timeout)
            ),
        );
        (status, self.timeout)
    }
}

// ---- queueing hints (EnqueueExtensions) ----

/// ManualApproval (kubestep): a person rejected the pod, so only a change to the pod's own
/// labels (which may take it out of the selector) is worth an early retry; otherwise it
/// comes back with the 5-minute flush instead of asking again at once.
fn queueing_hints() -> Vec<ClusterEventWithHint> {
    vec![ClusterEventWithHint::with_hint(
        R::Pod,
        A::UPDATE_POD_LABEL,
        |_, pod, old, new| queue_if_own_update(pod, old, new),
    )]
}

/// Built from `ManualApprovalArgs`, decoded here (kubestep's own plugin).
pub fn factory(
    ctx: &crate::framework::factory::FactoryContext,
) -> crate::framework::factory::Built {
    let args = ManualApprovalArgs::from_plugin_args(ctx.args)?;
    Ok(std::sync::Arc::new(ManualApproval::new(&args)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Snapshot;
    use crate::framework::listers::Listers;
    use crate::plugins::testing::{Env, pod};
    use serde_json::json;

    fn run(p: &ManualApproval, labels: serde_json::Value) -> (Status, Duration, CycleState) {
        let env = Env::new(Snapshot::default(), Listers::default());
        let mut state = CycleState::new();
        let pi =
            pod(json!({"metadata": {"name": "p", "labels": labels}, "spec": {"containers": []}}));
        let (s, d) = p.permit(&env.handle(), &mut state, &pi, "n1");
        (s, d, state)
    }

    #[test]
    fn default_selector_waits_for_labelled_pods() {
        let p = ManualApproval::default();
        let (s, d, state) = run(&p, json!({"kubestep.io/approval": "manual"}));
        assert!(s.is_wait());
        assert_eq!(d, Duration::from_secs(900));
        assert_eq!(
            s.message(),
            "waiting for manual approval: allow or reject the pod (times out after 15m0s)"
        );
        assert_eq!(
            state.render()[0],
            StateTree::node(
                "ManualApproval",
                vec![StateTree::node(
                    "waits for manual approval (up to 15m0s)",
                    vec![StateTree::leaf(
                        "labelSelector: kubestep.io/approval=manual"
                    )]
                )]
            )
        );
        let (s, d, state) = run(&p, json!({"kubestep.io/approval": "auto"}));
        assert!(s.is_success());
        assert_eq!(d, Duration::ZERO);
        let st = state.read::<ApprovalState>(STATE_KEY).unwrap();
        assert!(!st.selected);
        assert!(run(&p, json!({})).0.is_success());
    }

    #[test]
    fn custom_selector_and_timeout() {
        let args = PluginArgs::Other(json!({
            "labelSelector": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["ml", "data"]}]},
            "timeoutSeconds": 120
        }));
        let a = ManualApprovalArgs::from_plugin_args(Some(&args)).unwrap();
        let p = ManualApproval::new(&a).unwrap();
        let (s, d, _) = run(&p, json!({"team": "ml"}));
        assert!(s.is_wait());
        assert_eq!(d, Duration::from_secs(120));
        assert!(s.message().ends_with("(times out after 2m0s)"));
        assert!(run(&p, json!({"team": "web"})).0.is_success());
        // The default label means nothing to a custom selector.
        assert!(
            run(&p, json!({"kubestep.io/approval": "manual"}))
                .0
                .is_success()
        );
    }

    #[test]
    fn args_errors() {
        let build = |v: serde_json::Value| {
            ManualApprovalArgs::from_plugin_args(Some(&PluginArgs::Other(v)))
                .and_then(|a| ManualApproval::new(&a))
                .err()
        };
        assert_eq!(
            build(json!({"timeoutSeconds": 901})).unwrap(),
            "timeoutSeconds: Invalid value: 901: must be between 1 and 900 (Permit waits are capped at 15 minutes)"
        );
        assert_eq!(
            build(json!({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}, "timeoutSeconds": 0})).unwrap(),
            "[labelSelector: Invalid value: \"Near\" is not a valid label selector operator, timeoutSeconds: Invalid value: 0: must be between 1 and 900 (Permit waits are capped at 15 minutes)]"
        );
        assert!(
            build(json!({"labelSelector": "team=ml"}))
                .unwrap()
                .starts_with("json: cannot decode labelSelector")
        );
        assert_eq!(
            build(json!({"timeout": 5})).unwrap(),
            "strict decoding error: unknown field \"timeout\""
        );
        assert!(build(json!(null)).is_none());
    }

    #[test]
    fn a_person_allows_or_rejects() {
        let w = WaitingPods::default();
        let now = crate::plugins::testing::test_now();
        let a = pod(json!({"metadata": {"name": "a"}, "spec": {"containers": []}}));
        let b = pod(json!({"metadata": {"name": "b"}, "spec": {"containers": []}}));
        let waits = [(NAME.to_string(), Duration::from_secs(900))];
        w.add(a, "n1", &waits, now);
        w.add(b, "n1", &waits, now);
        assert!(approve(&w, "a"));
        assert!(w.get("a").unwrap().outcome.unwrap().is_success());
        assert!(reject(&w, "b", "not today"));
        let s = w.get("b").unwrap().outcome.unwrap();
        assert_eq!(s.message(), "rejected at manual approval: not today");
        assert_eq!(s.plugin(), NAME);
        assert!(!reject(&w, "missing", ""));
        assert_eq!(rejection_message(""), "rejected at manual approval");
    }
}
