//! Label selectors with apimachinery's matching rules.
//!
//! A `Selector` is either Nothing (matches no set, what a nil `LabelSelector` means), or a
//! conjunction of requirements (an empty conjunction matches everything).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

pub type Labels = BTreeMap<String, String>;

/// Shared empty label map for objects without labels.
pub fn empty_labels() -> &'static Labels {
    static EMPTY: Labels = BTreeMap::new();
    &EMPTY
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    pub key: String,
    pub op: Operator,
    pub values: Vec<String>,
    /// Parsed single value for Gt / Lt.
    int_value: Option<i64>,
}

impl Requirement {
    /// Builds a requirement, validating it as `labels.NewRequirement` does.
    pub fn new(key: &str, op: Operator, values: Vec<String>) -> Result<Requirement, String> {
        validate_label_key(key)?;
        let mut int_value = None;
        match op {
            Operator::In | Operator::NotIn => {
                if values.is_empty() {
                    return Err(format!(
                        "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty (key {key:?})"
                    ));
                }
            }
            Operator::Exists | Operator::DoesNotExist => {
                if !values.is_empty() {
                    return Err(format!(
                        "values: Invalid value: {values:?}: values set must be empty for exists and does not exist (key {key:?})"
                    ));
                }
            }
            Operator::Gt | Operator::Lt => {
                if values.len() != 1 {
                    return Err(format!(
                        "values: Invalid value: {values:?}: for 'Gt', 'Lt' operators, exactly one value is required (key {key:?})"
                    ));
                }
                int_value = Some(values[0].parse::<i64>().map_err(|_| {
                    format!(
                        "values[0]: Invalid value: {:?}: for 'Gt', 'Lt' operators, the value must be an integer",
                        values[0]
                    )
                })?);
            }
        }
        for v in &values {
            validate_label_value(v)?;
        }
        Ok(Requirement {
            key: key.to_string(),
            op,
            values,
            int_value,
        })
    }

    /// An equality requirement from a `matchLabels` or `nodeSelector` entry (not validated,
    /// as `SelectorFromSet` does not validate either).
    pub fn equals(key: &str, value: &str) -> Requirement {
        Requirement {
            key: key.to_string(),
            op: Operator::In,
            values: vec![value.to_string()],
            int_value: None,
        }
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        let v = labels.get(&self.key);
        match self.op {
            Operator::In => v.is_some_and(|v| self.values.iter().any(|x| x == v)),
            Operator::NotIn => v.is_none_or(|v| !self.values.iter().any(|x| x == v)),
            Operator::Exists => v.is_some(),
            Operator::DoesNotExist => v.is_none(),
            Operator::Gt | Operator::Lt => {
                let (Some(v), Some(want)) = (v, self.int_value) else {
                    return false;
                };
                match v.parse::<i64>() {
                    Ok(have) if self.op == Operator::Gt => have > want,
                    Ok(have) => have < want,
                    Err(_) => false,
                }
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Selector {
    /// `None` is labels.Nothing(); `Some(empty)` is labels.Everything().
    requirements: Option<Vec<Requirement>>,
}

impl Selector {
    pub fn nothing() -> Selector {
        Selector { requirements: None }
    }

    pub fn everything() -> Selector {
        Selector {
            requirements: Some(Vec::new()),
        }
    }

    pub fn from_requirements(reqs: Vec<Requirement>) -> Selector {
        Selector {
            requirements: Some(reqs),
        }
    }

    /// `labels.SelectorFromSet`: every key must equal its value.
    pub fn from_set(set: &Labels) -> Selector {
        Selector::from_requirements(set.iter().map(|(k, v)| Requirement::equals(k, v)).collect())
    }

    /// `metav1.LabelSelectorAsSelector`: nil selects nothing, an empty selector selects all.
    pub fn from_label_selector(ls: Option<&LabelSelector>) -> Result<Selector, String> {
        let Some(ls) = ls else {
            return Ok(Selector::nothing());
        };
        let labels = ls.match_labels.as_ref();
        let exprs = ls.match_expressions.as_deref().unwrap_or(&[]);
        if labels.is_none_or(|l| l.is_empty()) && exprs.is_empty() {
            return Ok(Selector::everything());
        }
        let mut reqs = Vec::new();
        for (k, v) in labels.into_iter().flatten() {
            let r = Requirement::new(k, Operator::In, vec![v.clone()])?;
            reqs.push(r);
        }
        for e in exprs {
            let op = match e.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => return Err(format!("{other:?} is not a valid label selector operator")),
            };
            reqs.push(Requirement::new(
                &e.key,
                op,
                e.values.clone().unwrap_or_default(),
            )?);
        }
        Ok(Selector::from_requirements(reqs))
    }

    pub fn add(&mut self, r: Requirement) {
        if let Some(v) = &mut self.requirements {
            v.push(r);
        }
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        match &self.requirements {
            None => false,
            Some(reqs) => reqs.iter().all(|r| r.matches(labels)),
        }
    }

    pub fn is_nothing(&self) -> bool {
        self.requirements.is_none()
    }

    /// True for a selector with no requirements (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.as_ref().is_some_and(|r| r.is_empty())
    }

    pub fn requirements(&self) -> &[Requirement] {
        self.requirements.as_deref().unwrap_or(&[])
    }
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(reqs) = &self.requirements else {
            return write!(f, "<none>");
        };
        if reqs.is_empty() {
            return write!(f, "<everything>");
        }
        let parts: Vec<String> = reqs
            .iter()
            .map(|r| match r.op {
                Operator::In if r.values.len() == 1 => format!("{}={}", r.key, r.values[0]),
                Operator::In => format!("{} in ({})", r.key, r.values.join(",")),
                Operator::NotIn => format!("{} notin ({})", r.key, r.values.join(",")),
                Operator::Exists => r.key.clone(),
                Operator::DoesNotExist => format!("!{}", r.key),
                Operator::Gt => format!("{}>{}", r.key, r.values[0]),
                Operator::Lt => format!("{}<{}", r.key, r.values[0]),
            })
            .collect();
        write!(f, "{}", parts.join(","))
    }
}

/// A qualified name, optionally prefixed by a DNS subdomain and '/'.
pub fn validate_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && (p.is_empty() || p.len() > 253 || !is_dns_subdomain(p))
    {
        return Err(format!(
            "key: Invalid value: {key:?}: prefix part must be a DNS subdomain"
        ));
    }
    if name.is_empty() || name.len() > 63 || !is_qualified_name_part(name) {
        return Err(format!(
            "key: Invalid value: {key:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

pub fn validate_label_value(v: &str) -> Result<(), String> {
    if v.is_empty() {
        return Ok(());
    }
    if v.len() > 63 || !is_qualified_name_part(v) {
        return Err(format!(
            "values: Invalid value: {v:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_alphanumeric();
    !b.is_empty()
        && alnum(b[0])
        && alnum(b[b.len() - 1])
        && b.iter()
            .all(|&c| alnum(c) || c == b'-' || c == b'_' || c == b'.')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.split('.').all(|part| {
        let b = part.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn nil_selects_nothing_and_empty_selects_everything() {
        let l = labels(&[("app", "web")]);
        assert!(!Selector::from_label_selector(None).unwrap().matches(&l));
        let empty = LabelSelector::default();
        assert!(
            Selector::from_label_selector(Some(&empty))
                .unwrap()
                .matches(&l)
        );
        assert!(
            Selector::from_label_selector(Some(&empty))
                .unwrap()
                .matches(&Labels::new())
        );
    }

    #[test]
    fn expressions() {
        let ls = LabelSelector {
            match_labels: Some(labels(&[("app", "web")])),
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: "tier".into(),
                    operator: "NotIn".into(),
                    values: Some(vec!["db".into()]),
                },
                LabelSelectorRequirement {
                    key: "env".into(),
                    operator: "Exists".into(),
                    values: None,
                },
            ]),
        };
        let s = Selector::from_label_selector(Some(&ls)).unwrap();
        assert!(s.matches(&labels(&[("app", "web"), ("env", "x")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("env", "x"), ("tier", "db")])));
        assert!(!s.matches(&labels(&[("app", "web")])));
    }

    #[test]
    fn invalid_operator_and_values_are_errors() {
        let bad = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "Gt".into(),
                values: Some(vec!["1".into()]),
            }]),
            ..Default::default()
        };
        assert!(Selector::from_label_selector(Some(&bad)).is_err());
        assert!(Requirement::new("a", Operator::In, vec![]).is_err());
        assert!(Requirement::new("a", Operator::Exists, vec!["x".into()]).is_err());
        assert!(Requirement::new("a", Operator::Gt, vec!["x".into()]).is_err());
        assert!(Requirement::new("-a", Operator::Exists, vec![]).is_err());
    }

    #[test]
    fn gt_lt_compare_integers() {
        let gt = Requirement::new("rank", Operator::Gt, vec!["10".into()]).unwrap();
        assert!(gt.matches(&labels(&[("rank", "18")])));
        assert!(!gt.matches(&labels(&[("rank", "9")])));
        assert!(!gt.matches(&labels(&[("rank", "x")])));
        assert!(!gt.matches(&labels(&[])));
        let lt = Requirement::new("rank", Operator::Lt, vec!["10".into()]).unwrap();
        assert!(lt.matches(&labels(&[("rank", "9")])));
    }
}
