//! Scheduler extenders: HTTP webhooks consulted after Filter, alongside Score, during
//! preemption and for binding (upstream `pkg/scheduler/extender.go`).
//!
//! An [`HttpExtender`] is built from a configuration's `extenders` entry and implements
//! the framework's [`Extender`] trait. Its calls block for at most the configured
//! `httpTimeout` (5s when zero). The scheduling cycle uses them through
//! `CycleEnv::extenders`, preemption through `Handle::extenders`, and the binding driver
//! through `framework::extender::extenders_binding`.

mod http;
pub mod wire;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::config;
use crate::framework::extender::{Extender, ExtenderError, FilterResult, Filtered, HostPriority};
use crate::framework::node_info::NodeInfo;
use crate::framework::snapshot::Snapshot;
use crate::framework::types::NodeVictims;
use crate::framework::types::PodInfo;

pub use http::DEFAULT_EXTENDER_TIMEOUT;

/// One configured extender (upstream `HTTPExtender`).
#[derive(Debug, Clone)]
pub struct HttpExtender {
    name: String,
    url_prefix: String,
    filter_verb: String,
    preempt_verb: String,
    prioritize_verb: String,
    bind_verb: String,
    weight: i64,
    node_cache_capable: bool,
    managed_resources: BTreeSet<String>,
    ignorable: bool,
    transport: Arc<http::Transport>,
}

impl HttpExtender {
    /// Upstream `NewHTTPExtender`: fails only on unusable TLS settings.
    pub fn new(cfg: &config::Extender) -> Result<HttpExtender, ExtenderError> {
        let transport = http::Transport::new(cfg).map_err(ExtenderError)?;
        Ok(HttpExtender {
            // Shown and recorded with its password masked; only the transport has it.
            name: format!("extender:{}", crate::redact::url(&cfg.url_prefix)),
            url_prefix: crate::redact::url(&cfg.url_prefix).into_owned(),
            filter_verb: cfg.filter_verb.clone(),
            preempt_verb: cfg.preempt_verb.clone(),
            prioritize_verb: cfg.prioritize_verb.clone(),
            bind_verb: cfg.bind_verb.clone(),
            weight: cfg.weight,
            node_cache_capable: cfg.node_cache_capable,
            managed_resources: cfg
                .managed_resources
                .iter()
                .map(|r| r.name.clone())
                .collect(),
            ignorable: cfg.ignorable,
            transport: Arc::new(transport),
        })
    }

    fn has_managed_resources(&self, containers: &[Container]) -> bool {
        containers.iter().any(|c| {
            let r = c.resources.as_ref();
            let names = r
                .and_then(|r| r.requests.as_ref())
                .into_iter()
                .flatten()
                .chain(r.and_then(|r| r.limits.as_ref()).into_iter().flatten())
                .map(|(name, _)| name);
            names
                .into_iter()
                .any(|n| self.managed_resources.contains(n))
        })
    }

    fn args<'a>(&self, pod: &'a Pod, nodes: &[&'a NodeInfo]) -> wire::ExtenderArgs<'a> {
        if self.node_cache_capable {
            wire::ExtenderArgs {
                pod,
                nodes: None,
                node_names: Some(nodes.iter().map(|n| n.name()).collect()),
            }
        } else {
            wire::ExtenderArgs {
                pod,
                nodes: Some(wire::NodeListRef {
                    metadata: wire::EmptyObject {},
                    items: nodes.iter().map(|n| n.node()).collect(),
                }),
                node_names: None,
            }
        }
    }

    /// Upstream `convertToVictims`: UIDs back to the pods on each node.
    fn convert_to_victims(
        &self,
        meta: BTreeMap<String, Option<wire::MetaVictims>>,
        snapshot: &Snapshot,
    ) -> Result<BTreeMap<String, NodeVictims>, ExtenderError> {
        let mut out = BTreeMap::new();
        for (node_name, mv) in meta {
            let Some(node) = snapshot.get(&node_name) else {
                return Err(ExtenderError(format!(
                    "nodeinfo not found for node name {}",
                    crate::config::field::go_quote(&node_name)
                )));
            };
            // A null entry reads as no victims (upstream would dereference nil).
            let mv = mv.unwrap_or_default();
            let mut pods = Vec::with_capacity(mv.pods.len());
            for mp in &mv.pods {
                let Some(p) = node.pods.iter().find(|p| p.uid == mp.uid) else {
                    return Err(ExtenderError(format!(
                        "extender: {} claims to preempt pod (UID: &{{{}}}) on node: {}, but the pod is not found on that node",
                        self.url_prefix,
                        mp.uid,
                        node.name()
                    )));
                };
                pods.push(p.clone());
            }
            out.insert(
                node_name,
                NodeVictims {
                    pods,
                    num_pdb_violations: mv.num_pdb_violations,
                },
            );
        }
        Ok(out)
    }
}

impl Extender for HttpExtender {
    /// `extender:<urlPrefix>`: how kubestep labels this extender next to plugins.
    fn name(&self) -> &str {
        &self.name
    }

    fn url_prefix(&self) -> &str {
        &self.url_prefix
    }

    fn weight(&self) -> i64 {
        self.weight
    }

    fn is_filter(&self) -> bool {
        !self.filter_verb.is_empty()
    }

    fn is_prioritizer(&self) -> bool {
        !self.prioritize_verb.is_empty()
    }

    fn is_binder(&self) -> bool {
        !self.bind_verb.is_empty()
    }

    fn supports_preemption(&self) -> bool {
        !self.preempt_verb.is_empty()
    }

    /// Scheduling goes on without this extender when it cannot be reached.
    fn is_ignorable(&self) -> bool {
        self.ignorable
    }

    fn is_node_cache_capable(&self) -> bool {
        self.node_cache_capable
    }

    /// Whether the pod concerns this extender: always without managed resources, else when
    /// a container or init container requests or limits one of them.
    fn is_interested(&self, pod: &Pod) -> bool {
        if self.managed_resources.is_empty() {
            return true;
        }
        let spec = pod.spec.as_ref();
        let containers = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
        let init = spec
            .and_then(|s| s.init_containers.as_deref())
            .unwrap_or_default();
        self.has_managed_resources(containers) || self.has_managed_resources(init)
    }

    /// The nodes that pass, and the ones that failed with why. The passing nodes are
    /// those the extender answered with (an extender without a filter verb passes all).
    fn filter(&self, pod: &Pod, nodes: &[&NodeInfo]) -> Result<FilterResult, ExtenderError> {
        if !self.is_filter() {
            return Ok(FilterResult {
                nodes: (0..nodes.len()).map(Filtered::Input).collect(),
                ..Default::default()
            });
        }
        let answer = self
            .transport
            .send(&self.filter_verb, &self.args(pod, nodes))?;
        let result: wire::ExtenderFilterResult = wire::decode(answer).map_err(ExtenderError)?;
        if !result.error.is_empty() {
            return Err(ExtenderError(result.error));
        }
        let mut out = FilterResult {
            nodes: Vec::new(),
            failed: result.failed_nodes,
            failed_and_unresolvable: result.failed_and_unresolvable_nodes,
        };
        match (self.node_cache_capable, result.node_names, result.nodes) {
            (true, Some(names), _) => {
                let position: BTreeMap<&str, usize> = nodes
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n.name(), i))
                    .collect();
                for name in names {
                    let Some(&i) = position.get(name.as_str()) else {
                        return Err(ExtenderError(format!(
                            "extender {} claims a filtered node {} which is not found in the input node list",
                            crate::config::field::go_quote(&self.url_prefix),
                            crate::config::field::go_quote(&name)
                        )));
                    };
                    out.nodes.push(Filtered::Input(i));
                }
            }
            (_, _, Some(list)) => {
                out.nodes = list
                    .items
                    .into_iter()
                    .map(|n| Filtered::Returned(Box::new(n)))
                    .collect();
            }
            // Neither list: no node passes.
            _ => {}
        }
        Ok(out)
    }

    /// Scores (0..=10) for the nodes and this extender's weight. Without a prioritize
    /// verb every node scores 0 with weight 0, as upstream.
    fn prioritize(
        &self,
        pod: &Pod,
        nodes: &[&NodeInfo],
    ) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
        if !self.is_prioritizer() {
            let zeros = nodes
                .iter()
                .map(|n| HostPriority {
                    host: n.name().to_string(),
                    score: 0,
                })
                .collect();
            return Ok((zeros, 0));
        }
        let answer = self
            .transport
            .send(&self.prioritize_verb, &self.args(pod, nodes))?;
        let list: Vec<HostPriority> = wire::decode(answer).map_err(ExtenderError)?;
        Ok((list, self.weight))
    }

    /// Upstream `ProcessPreemption`: the candidates (node → victims) the extender keeps,
    /// its answer resolved against the pods on each node in `snapshot`.
    fn process_preemption(
        &self,
        pod: &Pod,
        victims: &BTreeMap<String, NodeVictims>,
        snapshot: &Snapshot,
    ) -> Result<BTreeMap<String, NodeVictims>, ExtenderError> {
        if !self.supports_preemption() {
            return Err(ExtenderError(format!(
                "preempt verb is not defined for extender {} but run into ProcessPreemption",
                self.url_prefix
            )));
        }
        // Victims go whole over the wire (bound pods are kept packed).
        let whole: Vec<Vec<Arc<Pod>>> = if self.node_cache_capable {
            Vec::new()
        } else {
            victims
                .values()
                .map(|v| v.pods.iter().map(|p| p.full_pod()).collect())
                .collect()
        };
        let args = if self.node_cache_capable {
            wire::ExtenderPreemptionArgs {
                pod,
                node_name_to_victims: None,
                node_name_to_meta_victims: Some(
                    victims
                        .iter()
                        .map(|(node, v)| (node.as_str(), meta_victims(v)))
                        .collect(),
                ),
            }
        } else {
            wire::ExtenderPreemptionArgs {
                pod,
                node_name_to_victims: Some(
                    victims
                        .iter()
                        .zip(&whole)
                        .map(|((node, v), pods)| {
                            let pods = pods.iter().map(AsRef::as_ref).collect();
                            let v = wire::VictimsRef {
                                pods,
                                num_pdb_violations: v.num_pdb_violations,
                            };
                            (node.as_str(), v)
                        })
                        .collect(),
                ),
                node_name_to_meta_victims: None,
            }
        };
        let answer = self.transport.send(&self.preempt_verb, &args)?;
        let result: wire::ExtenderPreemptionResult = wire::decode(answer).map_err(ExtenderError)?;
        self.convert_to_victims(result.node_name_to_meta_victims, snapshot)
    }

    /// Asks the extender to bind the pod to the node.
    fn bind(&self, pod: &PodInfo, node: &str) -> Result<(), ExtenderError> {
        if !self.is_binder() {
            return Err(ExtenderError(
                "unexpected empty bindVerb in extender".into(),
            ));
        }
        let args = wire::ExtenderBindingArgs {
            pod_name: pod.name.clone(),
            pod_namespace: pod.namespace.clone(),
            pod_uid: pod.uid.clone(),
            node: node.to_string(),
        };
        let answer = self.transport.send(&self.bind_verb, &args)?;
        let result: wire::ExtenderBindingResult = wire::decode(answer).map_err(ExtenderError)?;
        if !result.error.is_empty() {
            return Err(ExtenderError(result.error));
        }
        Ok(())
    }
}

fn meta_victims(v: &NodeVictims) -> wire::MetaVictims {
    wire::MetaVictims {
        pods: v
            .pods
            .iter()
            .map(|p| wire::MetaPod { uid: p.uid.clone() })
            .collect(),
        num_pdb_violations: v.num_pdb_violations,
    }
}

/// Upstream `buildExtenders`: every configured extender, the ignorable ones last.
pub fn build(configs: &[config::Extender]) -> Result<Vec<Arc<dyn Extender>>, ExtenderError> {
    let mut required = Vec::new();
    let mut ignorable = Vec::new();
    for c in configs {
        let e = HttpExtender::new(c)?;
        let e: Arc<dyn Extender> = Arc::new(e);
        if e.is_ignorable() {
            ignorable.push(e);
        } else {
            required.push(e);
        }
    }
    required.extend(ignorable);
    Ok(required)
}

/// Managed resources marked `ignoredByScheduler`: they become NodeResourcesFit's
/// `ignoredResources` in every profile.
pub fn ignored_extended_resources(configs: &[config::Extender]) -> Vec<String> {
    configs
        .iter()
        .flat_map(|c| &c.managed_resources)
        .filter(|r| r.ignored_by_scheduler)
        .map(|r| r.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ExtenderManagedResource;
    use serde_json::json;

    fn cfg(url: &str) -> config::Extender {
        config::Extender {
            url_prefix: url.into(),
            ..Default::default()
        }
    }

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn name_and_verbs() {
        let mut c = cfg("http://127.0.0.1:1/scheduler");
        c.filter_verb = "filter".into();
        c.weight = 3;
        let e = HttpExtender::new(&c).unwrap();
        assert_eq!(e.name(), "extender:http://127.0.0.1:1/scheduler");
        assert!(e.is_filter() && !e.is_prioritizer() && !e.is_binder());
        assert!(!e.supports_preemption() && !e.is_ignorable());
        assert_eq!(e.weight(), 3);
    }

    #[test]
    fn interest_follows_managed_resources() {
        let mut c = cfg("http://x");
        let e = HttpExtender::new(&c).unwrap();
        let plain = pod(json!({"spec": {"containers": [{"name": "c"}]}}));
        assert!(e.is_interested(&plain), "no managed resources: every pod");
        c.managed_resources = vec![ExtenderManagedResource {
            name: "example.com/gpu".into(),
            ignored_by_scheduler: true,
        }];
        let e = HttpExtender::new(&c).unwrap();
        assert!(!e.is_interested(&plain));
        let limits = pod(json!({"spec": {"containers": [{"name": "c",
            "resources": {"limits": {"example.com/gpu": "1"}}}]}}));
        assert!(e.is_interested(&limits));
        let init = pod(json!({"spec": {"containers": [{"name": "c"}],
            "initContainers": [{"name": "i", "resources": {"requests": {"example.com/gpu": "1"}}}]}}));
        assert!(e.is_interested(&init));
        assert_eq!(
            ignored_extended_resources(std::slice::from_ref(&c)),
            vec!["example.com/gpu".to_string()]
        );
    }

    #[test]
    fn build_puts_ignorable_extenders_last() {
        let mut a = cfg("http://a");
        a.ignorable = true;
        let b = cfg("http://b");
        let all = build(&[a, b]).unwrap();
        let names: Vec<&str> = all.iter().map(|e| e.url_prefix()).collect();
        assert_eq!(names, ["http://b", "http://a"]);
    }

    #[test]
    fn without_verbs_nothing_is_sent() {
        let e = HttpExtender::new(&cfg("http://127.0.0.1:1")).unwrap();
        let n = NodeInfo::new(Arc::new(
            serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap(),
        ));
        let p = Pod::default();
        let f = e.filter(&p, &[&n]).unwrap();
        assert!(matches!(f.nodes.as_slice(), [Filtered::Input(0)]));
        let (scores, weight) = e.prioritize(&p, &[&n]).unwrap();
        assert_eq!(weight, 0);
        assert_eq!(scores[0].score, 0);
        let pi = PodInfo::new(Arc::new(p));
        assert_eq!(
            e.bind(&pi, "n1").unwrap_err().0,
            "unexpected empty bindVerb in extender"
        );
        let all: Vec<Arc<dyn Extender>> = vec![Arc::new(e)];
        assert!(crate::framework::extender::extenders_binding(&all, &pi, "n1").is_none());
    }
}
