//! Test support: runs one plugin alone over the public conformance cases
//! (`tests/conformance/cases/NNNN`) and checks the parts of `expected.json` that belong to
//! it: its PreFilter rejection, its Filter verdict on the nodes it rejected and on the
//! feasible nodes, and its final (normalized, weighted) scores.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::Value;

use crate::framework::listers::{Listers, ns_key};
use crate::framework::plugin::{NodeScore, Plugin};
use crate::framework::{CycleState, NodeInfo, PodInfo, Snapshot};
use crate::plugins::testing::Env;

pub struct Case {
    pub id: String,
    pub env: Env,
    pub pod: Arc<PodInfo>,
    pub config: Option<Value>,
    pub expected: Value,
}

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/cases")
}

fn yaml_docs(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    serde_saphyr::from_multiple::<Value>(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .filter(|v| !v.is_null())
        .collect()
}

fn pod_info(mut v: Value, n: usize) -> Arc<PodInfo> {
    let meta = &mut v["metadata"];
    if meta["namespace"].as_str().is_none_or(str::is_empty) {
        meta["namespace"] = Value::from("default");
    }
    if meta["uid"].is_null() {
        meta["uid"] = Value::from(format!("uid-{n}"));
    }
    let pod: Pod = serde_json::from_value(v).expect("pod");
    Arc::new(PodInfo::new(Arc::new(pod)))
}

pub fn load(id: &str) -> Case {
    let dir = cases_dir().join(id);
    let mut nodes: Vec<Arc<Node>> = Vec::new();
    let mut pods = Vec::new();
    let mut listers = Listers::default();
    for (n, doc) in yaml_docs(&dir.join("cluster.yaml")).into_iter().enumerate() {
        let name = doc["metadata"]["name"].as_str().unwrap_or("").to_string();
        let ns = doc["metadata"]["namespace"]
            .as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or("default")
            .to_string();
        match doc["kind"].as_str().unwrap_or("") {
            "Node" => nodes.push(Arc::new(serde_json::from_value(doc).expect("node"))),
            "Pod" => pods.push(pod_info(doc, n)),
            "Namespace" => {
                listers
                    .namespaces
                    .insert(name, Arc::new(serde_json::from_value(doc).expect("ns")));
            }
            "Service" => {
                listers.services.insert(
                    ns_key(&ns, &name),
                    Arc::new(serde_json::from_value(doc).expect("svc")),
                );
            }
            "ReplicaSet" => {
                listers.replica_sets.insert(
                    ns_key(&ns, &name),
                    Arc::new(serde_json::from_value(doc).expect("rs")),
                );
            }
            "StatefulSet" => {
                listers.stateful_sets.insert(
                    ns_key(&ns, &name),
                    Arc::new(serde_json::from_value(doc).expect("ss")),
                );
            }
            "ReplicationController" => {
                listers.replication_controllers.insert(
                    ns_key(&ns, &name),
                    Arc::new(serde_json::from_value(doc).expect("rc")),
                );
            }
            _ => {}
        }
    }
    let bound: Vec<Arc<PodInfo>> = pods
        .into_iter()
        .filter(|p| !p.node_name().is_empty())
        .collect();
    let pod_doc = yaml_docs(&dir.join("pod.yaml"))
        .into_iter()
        .next()
        .expect("pod.yaml");
    let config_path = dir.join("config.yaml");
    let config = config_path
        .exists()
        .then(|| yaml_docs(&config_path).into_iter().next())
        .flatten();
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("expected.json")).expect("expected.json"),
    )
    .expect("expected.json");
    Case {
        id: id.to_string(),
        env: Env::new(Snapshot::new(nodes, bound), listers),
        pod: pod_info(pod_doc, usize::MAX),
        config,
        expected,
    }
}

pub fn all_case_ids() -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(cases_dir())
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

impl Case {
    fn profile(&self) -> Option<&Value> {
        self.config.as_ref().map(|c| &c["profiles"][0])
    }

    /// The plugin's args from `pluginConfig`, if any.
    pub fn plugin_args(&self, name: &str) -> Option<&Value> {
        self.profile()?["pluginConfig"]
            .as_array()?
            .iter()
            .find(|pc| pc["name"] == name)
            .map(|pc| &pc["args"])
    }

    /// Whether the config mentions the plugin in its plugin sets at all.
    fn config_mentions(&self, name: &str) -> bool {
        let Some(p) = self.profile() else {
            return false;
        };
        let text = p["plugins"].to_string();
        text.contains(&format!("\"{name}\"")) || text.contains("\"*\"")
    }

    /// The plugin's score weight: an explicit weight in the score or multiPoint sets,
    /// else `default`.
    fn weight(&self, name: &str, default: i64) -> i64 {
        let Some(p) = self.profile() else {
            return default;
        };
        for set in ["score", "multiPoint"] {
            for e in p["plugins"][set]["enabled"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if e["name"] == name
                    && let Some(w) = e["weight"].as_i64().filter(|&w| w > 0)
                {
                    return w;
                }
            }
        }
        default
    }
}

/// What a check looked at, to make sure the cases exercised the plugin.
#[derive(Debug, Default)]
pub struct Coverage {
    pub cases: usize,
    pub pre_filter_rejections: usize,
    pub filter_rejections: usize,
    pub feasible_passes: usize,
    pub scored_cases: usize,
    pub pre_score_skips: usize,
}

fn status_json(s: &crate::framework::Status) -> (String, Vec<String>) {
    (
        s.code().to_string(),
        s.reasons().iter().map(|r| r.to_string()).collect(),
    )
}

fn expected_status(v: &Value) -> (String, Vec<String>) {
    (
        v["code"].as_str().unwrap_or("").to_string(),
        v["reasons"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| r.as_str().unwrap_or("").to_string())
            .collect(),
    )
}

/// Checks one plugin against one case; returns a list of mismatches.
pub fn check(case: &Case, pl: &dyn Plugin, default_weight: i64, cov: &mut Coverage) -> Vec<String> {
    let name = pl.name();
    let mut errs = Vec::new();
    let h = case.env.handle();
    let pod = &case.pod;
    let exp = &case.expected;
    cov.cases += 1;
    let mut state = CycleState::new();
    let mut filter_skipped = false;
    if let Some(pf) = pl.as_pre_filter() {
        let (_, s) = pf.pre_filter(&h, &mut state, pod);
        let exp_pf = &exp["prefilter"];
        if !exp_pf.is_null() {
            if exp_pf["plugin"] == name {
                cov.pre_filter_rejections += 1;
                if status_json(&s) != expected_status(exp_pf) {
                    errs.push(format!("prefilter: got {s}, want {exp_pf}"));
                }
            }
            return errs;
        }
        if !(s.is_success() || s.is_skip()) {
            errs.push(format!("prefilter rejected: {s}"));
            return errs;
        }
        filter_skipped = s.is_skip();
    }
    let feasible: Vec<&str> = exp["feasible"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if let Some(f) = pl.as_filter() {
        for node in h.snapshot.list() {
            let s = if filter_skipped {
                crate::framework::Status::success()
            } else {
                f.filter(&h, &state, pod, node)
            };
            let exp_f = &exp["filter"][node.name()];
            if exp_f["plugin"] == name {
                cov.filter_rejections += 1;
                if status_json(&s) != expected_status(exp_f) {
                    errs.push(format!("filter {}: got {s}, want {exp_f}", node.name()));
                }
            } else if feasible.contains(&node.name()) {
                cov.feasible_passes += 1;
                if !s.is_success() {
                    errs.push(format!("filter {}: got {s}, want pass", node.name()));
                }
            }
        }
    }
    let Some(exp_scores) = exp["scores"].as_object() else {
        return errs;
    };
    let Some(sc) = pl.as_score() else {
        return errs;
    };
    let scored = exp_scores
        .values()
        .any(|v| v["plugins"].get(name).is_some());
    let nodes: Vec<&NodeInfo> = feasible.iter().filter_map(|n| h.snapshot.get(n)).collect();
    let s = match pl.as_pre_score() {
        Some(ps) => ps.pre_score(&h, &mut state, pod, &nodes),
        None => crate::framework::Status::success(),
    };
    if !scored {
        if !case.config_mentions(name) {
            cov.pre_score_skips += 1;
            if !s.is_skip() {
                errs.push(format!("prescore: got {s}, want Skip"));
            }
        }
        return errs;
    }
    cov.scored_cases += 1;
    if !s.is_success() {
        errs.push(format!("prescore: got {s}, want Success"));
        return errs;
    }
    let mut scores: Vec<NodeScore> = Vec::new();
    for n in &nodes {
        let (v, st) = sc.score(&h, &state, pod, n);
        if !st.is_success() {
            errs.push(format!("score {}: {st}", n.name()));
        }
        scores.push(NodeScore {
            name: n.name(),
            score: v,
        });
    }
    if sc.has_normalize() {
        let st = sc.normalize_score(&h, &state, pod, &mut scores);
        if !st.is_success() {
            errs.push(format!("normalize: {st}"));
        }
    }
    let w = case.weight(name, default_weight);
    for ns in &scores {
        let want = exp_scores[ns.name]["plugins"][name].as_i64();
        if want != Some(ns.score * w) {
            errs.push(format!(
                "score {}: got {} (x{w}), want {want:?}",
                ns.name,
                ns.score * w
            ));
        }
    }
    errs
}

/// A small cluster for unit tests: nodes and bound pods from JSON (see `testing::pod`).
pub fn cluster(nodes: Vec<Value>, pods: Vec<Value>, listers: Listers) -> Env {
    let nodes = nodes
        .into_iter()
        .map(crate::plugins::testing::node_obj)
        .collect();
    let pods: Vec<Arc<PodInfo>> = pods.into_iter().map(crate::plugins::testing::pod).collect();
    Env::new(Snapshot::new(nodes, pods), listers)
}

/// A node named `name` with these labels.
pub fn labelled_node(name: &str, labels: Value) -> Value {
    serde_json::json!({"metadata": {"name": name, "labels": labels}})
}

/// A pod bound to `node`, with labels, in `namespace`, plus extra spec fields.
pub fn bound_pod(name: &str, namespace: &str, node: &str, labels: Value, spec: Value) -> Value {
    let mut s = serde_json::json!({"containers": [], "nodeName": node});
    if let (Some(s), Some(extra)) = (s.as_object_mut(), spec.as_object()) {
        for (k, v) in extra {
            s.insert(k.clone(), v.clone());
        }
    }
    serde_json::json!({"metadata": {"name": name, "namespace": namespace, "labels": labels}, "spec": s})
}
