//! Test support: runs one plugin alone over the public conformance cases
//! (`tests/conformance/cases/NNNN`) and checks the parts of `expected.json` that belong to
//! it: its PreFilter rejection, its Filter verdict on the nodes it rejected and on the
//! feasible nodes, and its final (normalized, weighted) scores. The plugin is the one the
//! case's profile builds (so its args come from config.yaml), and it is checked at the
//! extension points that profile enables it at.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::cluster::{ClusterState, Object, manifest};
use crate::framework::listers::Listers;
use crate::framework::plugin::{NodeScore, Plugin};
use crate::framework::profile::{ExtensionPoint, Framework};
use crate::framework::{CycleState, NodeInfo, PodInfo, Snapshot};
use crate::plugins::testing::Env;

pub struct Case {
    pub env: Env,
    pub pod: Arc<PodInfo>,
    pub expected: Value,
}

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/cases")
}

pub fn load(id: &str) -> Case {
    let dir = cases_dir().join(id);
    let cluster = ClusterState::load(&[&dir.join("cluster.yaml")]).expect("cluster.yaml");
    let (objs, _) = manifest::load_file(&dir.join("pod.yaml")).expect("pod.yaml");
    let pod = objs
        .into_iter()
        .find_map(|mut o| {
            o.value.normalize();
            match o.value {
                Object::Pod(p) => Some(p),
                _ => None,
            }
        })
        .expect("a Pod in pod.yaml");
    let config_path = dir.join("config.yaml");
    let cfg = if config_path.exists() {
        crate::config::load_file(&config_path).expect("config.yaml")
    } else {
        crate::config::default_configuration()
    };
    let framework = Framework::new(
        &crate::plugins::registry::in_tree(),
        &cfg.profiles[0],
        &cfg.features,
    )
    .expect("the case's profile builds");
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("expected.json")).expect("expected.json"),
    )
    .expect("expected.json");
    Case {
        env: Env {
            framework,
            snapshot: cluster.snapshot_for(&cfg.features),
            listers: cluster.listers.clone(),
            nominator: cluster.nominator(),
            waiting: Default::default(),
            now: crate::plugins::testing::test_now(),
        },
        pod: Arc::new(PodInfo::new(Arc::new(*pod))),
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
    /// The plugin as the profile built it, if it runs at `ep`.
    fn plugin_at(&self, ep: ExtensionPoint, name: &str) -> Option<&dyn Plugin> {
        self.env
            .framework
            .plugins(ep)
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.plugin.as_ref())
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
pub fn check(case: &Case, name: &str, cov: &mut Coverage) -> Vec<String> {
    let mut errs = Vec::new();
    let h = case.env.handle();
    let pod = &case.pod;
    let exp = &case.expected;
    cov.cases += 1;
    let mut state = CycleState::new();
    let mut filter_skipped = false;
    if let Some(pf) = case
        .plugin_at(ExtensionPoint::PreFilter, name)
        .and_then(|p| p.as_pre_filter())
    {
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
    if let Some(f) = case
        .plugin_at(ExtensionPoint::Filter, name)
        .and_then(|p| p.as_filter())
    {
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
    let Some(pl) = case.plugin_at(ExtensionPoint::Score, name) else {
        return errs;
    };
    let Some(sc) = pl.as_score() else {
        return errs;
    };
    let scored = exp_scores
        .values()
        .any(|v| v["plugins"].get(name).is_some());
    let nodes: Vec<&NodeInfo> = feasible.iter().filter_map(|n| h.snapshot.get(n)).collect();
    let pre_score = case
        .plugin_at(ExtensionPoint::PreScore, name)
        .and_then(|p| p.as_pre_score());
    let s = match pre_score {
        Some(ps) => ps.pre_score(&h, &mut state, pod, &nodes),
        None => crate::framework::Status::success(),
    };
    if !scored {
        cov.pre_score_skips += 1;
        if !s.is_skip() {
            errs.push(format!("prescore: got {s}, want Skip"));
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
    let w = case.env.framework.score_weight(name);
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
