//! The enumerated fields the API server checks and the scheduler reads: a taint effect, a
//! toleration operator, a node selector operator, a spread constraint's action and skew.
//! A hand-written manifest with a typo there (`NoSchedul`) would otherwise be scheduled
//! as a cluster could never hold it, and the explanation would mislead; the API server
//! refuses such objects, and so does kubestep, with its words and the field.

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorTerm, Pod, Taint, Toleration};

/// A field path and what is wrong there.
pub(super) type Problem = (String, String);

const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
const NODE_OPERATORS: [&str; 6] = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];

fn quoted(values: &[&str]) -> String {
    let v: Vec<String> = values.iter().map(|s| format!("{s:?}")).collect();
    v.join(", ")
}

fn unsupported(path: String, value: &str, supported: &[&str]) -> Problem {
    (
        path,
        format!(
            "Unsupported value: {value:?}: supported values: {}",
            quoted(supported)
        ),
    )
}

/// A taint's effect: required, and one of the three.
fn effect(path: String, effect: &str, allow_empty: bool) -> Result<(), Problem> {
    match effect {
        "" if allow_empty => Ok(()),
        "" => Err((path, "Required value".into())),
        e if EFFECTS.contains(&e) => Ok(()),
        e => Err(unsupported(path, e, &EFFECTS)),
    }
}

pub(super) fn taints(taints: Option<&Vec<Taint>>) -> Result<(), Problem> {
    for (i, t) in taints.into_iter().flatten().enumerate() {
        effect(format!("spec.taints[{i}].effect"), &t.effect, false)?;
    }
    Ok(())
}

fn tolerations(tolerations: Option<&Vec<Toleration>>) -> Result<(), Problem> {
    for (i, t) in tolerations.into_iter().flatten().enumerate() {
        let at = format!("spec.tolerations[{i}]");
        match t.operator.as_deref().unwrap_or("") {
            "" | "Equal" | "Exists" => {}
            op => {
                return Err(unsupported(
                    format!("{at}.operator"),
                    op,
                    &["Equal", "Exists"],
                ));
            }
        }
        effect(
            format!("{at}.effect"),
            t.effect.as_deref().unwrap_or(""),
            true,
        )?;
    }
    Ok(())
}

fn terms<'a>(
    at: &str,
    terms: impl Iterator<Item = (String, &'a NodeSelectorTerm)>,
) -> Result<(), Problem> {
    for (term_at, term) in terms {
        for (field, reqs) in [
            ("matchExpressions", term.match_expressions.as_ref()),
            ("matchFields", term.match_fields.as_ref()),
        ] {
            for (i, r) in reqs.into_iter().flatten().enumerate() {
                if !NODE_OPERATORS.contains(&r.operator.as_str()) {
                    return Err((
                        format!("{at}{term_at}.{field}[{i}].operator"),
                        format!(
                            "Invalid value: {:?}: not a valid selector operator",
                            r.operator
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn node_affinity(pod: &Pod) -> Result<(), Problem> {
    let Some(na) = pod
        .spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
    else {
        return Ok(());
    };
    let at = "spec.affinity.nodeAffinity.";
    if let Some(NodeSelector {
        node_selector_terms,
    }) = &na.required_during_scheduling_ignored_during_execution
    {
        terms(
            at,
            node_selector_terms.iter().enumerate().map(|(i, t)| {
                (
                    format!(
                        "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]"
                    ),
                    t,
                )
            }),
        )?;
    }
    let preferred = na
        .preferred_during_scheduling_ignored_during_execution
        .iter();
    terms(
        at,
        preferred.flatten().enumerate().map(|(i, p)| {
            (
                format!("preferredDuringSchedulingIgnoredDuringExecution[{i}].preference"),
                &p.preference,
            )
        }),
    )
}

fn spread(pod: &Pod) -> Result<(), Problem> {
    let list = pod
        .spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_ref());
    for (i, c) in list.into_iter().flatten().enumerate() {
        let at = format!("spec.topologySpreadConstraints[{i}]");
        if c.max_skew <= 0 {
            return Err((
                format!("{at}.maxSkew"),
                format!("Invalid value: {}: must be greater than zero", c.max_skew),
            ));
        }
        match c.when_unsatisfiable.as_str() {
            "DoNotSchedule" | "ScheduleAnyway" => {}
            "" => return Err((format!("{at}.whenUnsatisfiable"), "Required value".into())),
            w => {
                return Err(unsupported(
                    format!("{at}.whenUnsatisfiable"),
                    w,
                    &["DoNotSchedule", "ScheduleAnyway"],
                ));
            }
        }
    }
    Ok(())
}

pub(super) fn pod(pod: &Pod) -> Result<(), Problem> {
    tolerations(pod.spec.as_ref().and_then(|s| s.tolerations.as_ref()))?;
    node_affinity(pod)?;
    spread(pod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod_with(spec: serde_json::Value) -> Pod {
        let mut s = json!({"containers": [{"name": "c"}]});
        s.as_object_mut()
            .unwrap()
            .extend(spec.as_object().unwrap().clone());
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": s})).unwrap()
    }

    #[test]
    fn typos_in_enumerated_fields_name_the_field() {
        let t: Vec<Taint> = serde_json::from_value(json!([
            {"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoSchedul"}
        ]))
        .unwrap();
        assert_eq!(
            taints(Some(&t)).unwrap_err(),
            (
                "spec.taints[1].effect".into(),
                r#"Unsupported value: "NoSchedul": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute""#.into()
            )
        );
        let p = pod_with(json!({"tolerations": [{"key": "a", "operator": "Like"}]}));
        assert_eq!(pod(&p).unwrap_err().0, "spec.tolerations[0].operator");
        let p = pod_with(json!({"tolerations": [{"operator": "Exists", "effect": "Never"}]}));
        assert_eq!(pod(&p).unwrap_err().0, "spec.tolerations[0].effect");
        let p = pod_with(json!({"affinity": {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference":
                {"matchExpressions": [{"key": "z", "operator": "Equals", "values": ["a"]}]}}]}}}));
        assert_eq!(
            pod(&p).unwrap_err(),
            (
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].operator".into(),
                r#"Invalid value: "Equals": not a valid selector operator"#.into()
            )
        );
        let p = pod_with(json!({"topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Never"}]}));
        assert_eq!(
            pod(&p).unwrap_err().1,
            r#"Unsupported value: "Never": supported values: "DoNotSchedule", "ScheduleAnyway""#
        );
        let p = pod_with(json!({"topologySpreadConstraints": [
            {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}));
        assert_eq!(
            pod(&p).unwrap_err().0,
            "spec.topologySpreadConstraints[0].maxSkew"
        );
    }

    #[test]
    fn valid_values_pass() {
        let p = pod_with(json!({
            "tolerations": [{"operator": "Exists"}, {"key": "a", "value": "b", "effect": "NoExecute"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{"matchExpressions": [{"key": "n", "operator": "Gt", "values": ["3"]}]}]}}},
            "topologySpreadConstraints": [{"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]
        }));
        assert_eq!(pod(&p), Ok(()));
    }
}
