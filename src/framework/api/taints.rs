//! Taints and tolerations, matched as `Toleration.ToleratesTaint` does in v1.35
//! (with the TaintTolerationComparisonOperators gate off, its default).

use k8s_openapi::api::core::v1::{Taint, Toleration};

pub const EFFECT_NO_SCHEDULE: &str = "NoSchedule";
pub const EFFECT_PREFER_NO_SCHEDULE: &str = "PreferNoSchedule";
pub const EFFECT_NO_EXECUTE: &str = "NoExecute";

pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    let effect = t.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = t.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.as_deref().unwrap_or("") {
        "" | "Equal" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        "Exists" => true,
        // Lt / Gt need an alpha gate that is off in v1.35; any other operator never matches.
        _ => false,
    }
}

pub fn tolerations_tolerate(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| tolerates(t, taint))
}

/// The first taint passing `include` that no toleration tolerates.
pub fn find_untolerated<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    include: impl Fn(&Taint) -> bool,
) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| include(t))
        .find(|t| !tolerations_tolerate(tolerations, t))
}

pub fn is_no_schedule_or_no_execute(t: &Taint) -> bool {
    t.effect == EFFECT_NO_SCHEDULE || t.effect == EFFECT_NO_EXECUTE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(k: &str, v: &str, e: &str) -> Taint {
        Taint {
            key: k.into(),
            value: Some(v.into()),
            effect: e.into(),
            ..Default::default()
        }
    }
    fn tol(k: &str, op: &str, v: &str, e: &str) -> Toleration {
        let s = |x: &str| {
            if x.is_empty() {
                None
            } else {
                Some(x.to_string())
            }
        };
        Toleration {
            key: s(k),
            operator: s(op),
            value: s(v),
            effect: s(e),
            ..Default::default()
        }
    }

    #[test]
    fn matching_rules() {
        let t = taint("dedicated", "gpu", "NoSchedule");
        assert!(tolerates(
            &tol("dedicated", "Equal", "gpu", "NoSchedule"),
            &t
        ));
        assert!(tolerates(&tol("dedicated", "", "gpu", ""), &t));
        assert!(tolerates(&tol("dedicated", "Exists", "", ""), &t));
        assert!(tolerates(&tol("", "Exists", "", ""), &t));
        assert!(!tolerates(&tol("dedicated", "Equal", "infra", ""), &t));
        assert!(!tolerates(&tol("dedicated", "Exists", "", "NoExecute"), &t));
        assert!(!tolerates(&tol("other", "Exists", "", ""), &t));
        assert!(!tolerates(&tol("dedicated", "Gt", "1", ""), &t));
    }

    #[test]
    fn first_untolerated() {
        let taints = vec![
            taint("a", "1", "PreferNoSchedule"),
            taint("b", "", "NoSchedule"),
        ];
        let found = find_untolerated(&taints, &[], is_no_schedule_or_no_execute);
        assert_eq!(found.map(|t| t.key.as_str()), Some("b"));
        assert!(
            find_untolerated(
                &taints,
                &[tol("b", "Exists", "", "")],
                is_no_schedule_or_no_execute
            )
            .is_none()
        );
    }
}
