//! Node selectors and node affinity, matched as component-helpers' `nodeaffinity` does.
//!
//! Terms are parsed once; a term that fails to parse never matches (upstream's "lazy error"
//! selector), and empty terms are ignored.

use k8s_openapi::api::core::v1::{
    Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, PreferredSchedulingTerm,
};

use super::labels::{Labels, Operator, Requirement, Selector, empty_labels};

/// Field selector over the only node field upstream exposes, `metadata.name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    pub key: String,
    pub value: String,
    pub equal: bool,
}

impl FieldRequirement {
    fn matches(&self, node_name: &str) -> bool {
        let have = if self.key == "metadata.name" {
            node_name
        } else {
            ""
        };
        (have == self.value) == self.equal
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSelectorTermMatcher {
    labels: Option<Selector>,
    fields: Option<Vec<FieldRequirement>>,
    parse_errors: Vec<String>,
}

impl NodeSelectorTermMatcher {
    pub fn new(term: &NodeSelectorTerm) -> NodeSelectorTermMatcher {
        let mut errs = Vec::new();
        let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
        let fields = term.match_fields.as_deref().unwrap_or(&[]);
        let labels = (!exprs.is_empty()).then(|| label_selector(exprs, &mut errs));
        let fields = (!fields.is_empty()).then(|| field_selector(fields, &mut errs));
        NodeSelectorTermMatcher {
            labels,
            fields,
            parse_errors: errs,
        }
    }

    pub fn matches(&self, node_name: &str, labels: &Labels) -> bool {
        if !self.parse_errors.is_empty() {
            return false;
        }
        if let Some(sel) = &self.labels
            && !sel.matches(labels)
        {
            return false;
        }
        if let Some(fields) = &self.fields {
            // The node's field set is empty only for a node without a name.
            if !node_name.is_empty() && !fields.iter().all(|f| f.matches(node_name)) {
                return false;
            }
        }
        true
    }

    pub fn parse_errors(&self) -> &[String] {
        &self.parse_errors
    }
}

pub fn is_empty_term(term: &NodeSelectorTerm) -> bool {
    term.match_expressions.as_deref().unwrap_or(&[]).is_empty()
        && term.match_fields.as_deref().unwrap_or(&[]).is_empty()
}

fn label_selector(exprs: &[NodeSelectorRequirement], errs: &mut Vec<String>) -> Selector {
    let mut reqs = Vec::new();
    for e in exprs {
        let op = match e.operator.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            "Gt" => Operator::Gt,
            "Lt" => Operator::Lt,
            other => {
                errs.push(format!(
                    "operator: Unsupported value: {other:?}: supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\""
                ));
                continue;
            }
        };
        match Requirement::new(&e.key, op, e.values.clone().unwrap_or_default()) {
            Ok(r) => reqs.push(r),
            Err(e) => errs.push(e),
        }
    }
    Selector::from_requirements(reqs)
}

fn field_selector(
    exprs: &[NodeSelectorRequirement],
    errs: &mut Vec<String>,
) -> Vec<FieldRequirement> {
    let mut out = Vec::new();
    for e in exprs {
        let values = e.values.as_deref().unwrap_or(&[]);
        let equal = match e.operator.as_str() {
            "In" => true,
            "NotIn" => false,
            other => {
                errs.push(format!(
                    "operator: Unsupported value: {other:?}: supported values: \"In\", \"NotIn\""
                ));
                continue;
            }
        };
        if values.len() != 1 {
            errs.push(format!(
                "values: Invalid value: {values:?}: must have one element"
            ));
            continue;
        }
        out.push(FieldRequirement {
            key: e.key.clone(),
            value: values[0].clone(),
            equal,
        });
    }
    out
}

/// `NodeSelector` (ORed terms) with upstream's lazy-error semantics.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeSelectorMatcher {
    terms: Vec<NodeSelectorTermMatcher>,
}

impl NodeSelectorMatcher {
    pub fn new(ns: &NodeSelector) -> NodeSelectorMatcher {
        let terms = ns
            .node_selector_terms
            .iter()
            .filter(|t| !is_empty_term(t))
            .map(NodeSelectorTermMatcher::new)
            .collect();
        NodeSelectorMatcher { terms }
    }

    pub fn matches(&self, node_name: &str, labels: &Labels) -> bool {
        self.terms.iter().any(|t| t.matches(node_name, labels))
    }

    pub fn matches_node(&self, node: &Node) -> bool {
        self.matches(node_name(node), node_labels(node))
    }

    pub fn parse_errors(&self) -> Vec<String> {
        self.terms
            .iter()
            .flat_map(|t| t.parse_errors.iter().cloned())
            .collect()
    }
}

/// Preferred terms with their weights; zero-weight and empty terms are dropped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PreferredSchedulingTerms {
    terms: Vec<(NodeSelectorTermMatcher, i64)>,
}

impl PreferredSchedulingTerms {
    pub fn new(terms: &[PreferredSchedulingTerm]) -> Result<PreferredSchedulingTerms, String> {
        let mut out = Vec::new();
        let mut errs = Vec::new();
        for t in terms {
            if t.weight == 0 || is_empty_term(&t.preference) {
                continue;
            }
            let m = NodeSelectorTermMatcher::new(&t.preference);
            if m.parse_errors.is_empty() {
                out.push((m, i64::from(t.weight)));
            } else {
                errs.extend(m.parse_errors);
            }
        }
        if !errs.is_empty() {
            return Err(errs.join(", "));
        }
        Ok(PreferredSchedulingTerms { terms: out })
    }

    pub fn score(&self, node_name: &str, labels: &Labels) -> i64 {
        self.terms
            .iter()
            .filter(|(m, _)| m.matches(node_name, labels))
            .map(|(_, w)| w)
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// The pod's nodeSelector AND its required node affinity.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequiredNodeAffinity {
    label_selector: Option<Selector>,
    node_selector: Option<NodeSelectorMatcher>,
}

impl RequiredNodeAffinity {
    pub fn from_pod(pod: &Pod) -> RequiredNodeAffinity {
        let spec = pod.spec.as_ref();
        let label_selector = spec
            .and_then(|s| s.node_selector.as_ref())
            .filter(|m| !m.is_empty())
            .map(Selector::from_set);
        let node_selector = spec
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(NodeSelectorMatcher::new);
        RequiredNodeAffinity {
            label_selector,
            node_selector,
        }
    }

    pub fn matches(&self, node_name: &str, labels: &Labels) -> bool {
        if let Some(sel) = &self.label_selector
            && !sel.matches(labels)
        {
            return false;
        }
        match &self.node_selector {
            Some(ns) => ns.matches(node_name, labels),
            None => true,
        }
    }

    /// True when there is neither a nodeSelector nor required node affinity.
    pub fn matches_everything(&self) -> bool {
        self.label_selector.is_none() && self.node_selector.is_none()
    }

    pub fn matches_node(&self, node: &Node) -> bool {
        self.matches(node_name(node), node_labels(node))
    }
}

pub fn node_name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or("")
}

pub fn node_labels(node: &Node) -> &Labels {
    node.metadata.labels.as_ref().unwrap_or(empty_labels())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|s| s.to_string()).collect()),
        }
    }
    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn terms_are_ored_and_expressions_anded() {
        let ns = NodeSelector {
            node_selector_terms: vec![
                NodeSelectorTerm {
                    match_expressions: Some(vec![
                        req("zone", "In", &["a"]),
                        req("gpu", "Exists", &[]),
                    ]),
                    match_fields: None,
                },
                NodeSelectorTerm {
                    match_expressions: None,
                    match_fields: Some(vec![req("metadata.name", "In", &["n9"])]),
                },
            ],
        };
        let m = NodeSelectorMatcher::new(&ns);
        assert!(m.matches("n1", &labels(&[("zone", "a"), ("gpu", "")])));
        assert!(!m.matches("n1", &labels(&[("zone", "a")])));
        assert!(m.matches("n9", &labels(&[])));
    }

    #[test]
    fn empty_terms_match_nothing_and_bad_terms_never_match() {
        let empty = NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm::default()],
        };
        assert!(!NodeSelectorMatcher::new(&empty).matches("n", &labels(&[])));
        let bad = NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![req("zone", "Bogus", &["a"])]),
                match_fields: None,
            }],
        };
        let m = NodeSelectorMatcher::new(&bad);
        assert!(!m.matches("n", &labels(&[("zone", "a")])));
        assert_eq!(m.parse_errors().len(), 1);
    }

    #[test]
    fn field_selector_needs_exactly_one_value() {
        let t = NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![req("metadata.name", "In", &["a", "b"])]),
        };
        let m = NodeSelectorTermMatcher::new(&t);
        assert!(!m.matches("a", &labels(&[])));
        let t = NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![req("metadata.name", "NotIn", &["a"])]),
        };
        let m = NodeSelectorTermMatcher::new(&t);
        assert!(!m.matches("a", &labels(&[])));
        assert!(m.matches("b", &labels(&[])));
    }
}
