//! What-if: the same pod re-run with a changed configuration (a plugin disabled, a score
//! weight changed) and changed fields of the pod or of nodes, next to the real one (the
//! session's configuration on the cluster as it is). Runs `explain` on copies, on the
//! background worker; nothing of it enters the session or its history.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use crate::cluster::ClusterState;
use crate::components::tabs::whatif::fields::FieldEdit;
use crate::explain::{self, Explanation};
use crate::framework::profile::ExtensionPoint;
use crate::session::Session;
use kubestep_engine::config::KubeSchedulerConfiguration;
use kubestep_engine::config::{PluginRef, PluginSet, Plugins};

/// One plugin row of the what-if editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginRow {
    pub name: String,
    /// `Filter`, `Score`, `Filter+Score`.
    pub points: String,
    /// Score weight in the base configuration (None: not a Score plugin).
    pub weight: Option<i64>,
}

/// The edits: plugin changes applied on top of the alternative configuration, field
/// changes to copies of the pod and the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Edits {
    pub disabled: BTreeSet<String>,
    pub weights: BTreeMap<String, i32>,
    /// In the order entered (a later edit of the same field wins).
    pub fields: Vec<FieldEdit>,
}

impl Edits {
    pub fn is_empty(&self) -> bool {
        self.disabled.is_empty() && self.weights.is_empty() && self.fields.is_empty()
    }

    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .disabled
            .iter()
            .map(|p| format!("{p} disabled"))
            .collect();
        parts.extend(self.weights.iter().map(|(p, w)| format!("{p} weight {w}")));
        parts.extend(self.fields.iter().map(FieldEdit::describe));
        if parts.is_empty() {
            "no changes".into()
        } else {
            parts.join(", ")
        }
    }

    /// The configuration with these edits, for every profile.
    pub fn apply(&self, base: &KubeSchedulerConfiguration) -> KubeSchedulerConfiguration {
        let mut cfg = base.clone();
        for p in &mut cfg.profiles {
            let plugins = &mut p.plugins;
            for name in &self.disabled {
                for set in sets(plugins) {
                    set.enabled.retain(|r| &r.name != name);
                }
            }
            for (name, w) in &self.weights {
                if let Some(r) = plugins.score.enabled.iter_mut().find(|r| &r.name == name) {
                    r.weight = *w;
                } else if let Some(r) = plugins
                    .multi_point
                    .enabled
                    .iter_mut()
                    .find(|r| &r.name == name)
                {
                    r.weight = *w;
                } else {
                    plugins.score.enabled.push(PluginRef::new(name, *w));
                }
            }
        }
        cfg
    }
}

/// Every plugin set, multiPoint included.
fn sets(p: &mut Plugins) -> [&mut PluginSet; 13] {
    [
        &mut p.pre_enqueue,
        &mut p.queue_sort,
        &mut p.pre_filter,
        &mut p.filter,
        &mut p.post_filter,
        &mut p.pre_score,
        &mut p.score,
        &mut p.reserve,
        &mut p.permit,
        &mut p.pre_bind,
        &mut p.bind,
        &mut p.post_bind,
        &mut p.multi_point,
    ]
}

/// Filter and Score plugins of the session's first profile.
pub fn plugin_rows(s: &Session) -> Vec<PluginRow> {
    let fwk = &s.frameworks()[0];
    let mut rows: Vec<PluginRow> = Vec::new();
    for (ep, label) in [
        (ExtensionPoint::Filter, "Filter"),
        (ExtensionPoint::Score, "Score"),
    ] {
        for e in fwk.plugins(ep) {
            match rows.iter_mut().find(|r| r.name == e.name) {
                Some(r) => r.points.push_str(&format!("+{label}")),
                None => rows.push(PluginRow {
                    name: e.name.to_string(),
                    points: label.to_string(),
                    weight: None,
                }),
            }
            if ep == ExtensionPoint::Score
                && let Some(r) = rows.iter_mut().find(|r| r.name == e.name)
            {
                r.weight = Some(fwk.score_weight(e.name));
            }
        }
    }
    rows
}

/// Both sides of a comparison on one pod.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub pod: String,
    pub base_label: String,
    pub alt_label: String,
    pub base: Result<Explanation, String>,
    pub alt: Result<Explanation, String>,
}

/// A comparison to run (on the background worker): copies of everything it reads.
pub struct CompareJob {
    pod: String,
    object: Arc<Pod>,
    cluster: ClusterState,
    base: KubeSchedulerConfiguration,
    alt: KubeSchedulerConfiguration,
    alt_label: String,
    fields: Vec<FieldEdit>,
}

/// Prepares the re-run of `pod` under the session's configuration and under `alt` with
/// `edits`: the cluster as it is now, copied.
pub fn compare_job(
    s: &Session,
    pod: &str,
    alt: &KubeSchedulerConfiguration,
    alt_name: &str,
    edits: &Edits,
) -> Result<CompareJob, String> {
    let object = s
        .cluster()
        .full_pod(pod)
        .ok_or_else(|| format!("pod {pod} is not in the cluster"))?;
    let name = if alt_name.is_empty() {
        String::new()
    } else {
        format!(" {alt_name}")
    };
    Ok(CompareJob {
        pod: pod.to_string(),
        object,
        cluster: s.cluster().clone(),
        base: s.config().clone(),
        alt: edits.apply(alt),
        alt_label: format!("WHAT-IF{name}: {}", edits.describe()),
        fields: edits.fields.clone(),
    })
}

impl CompareJob {
    /// Both re-runs, through `explain` (the path the hints take): the real side on the
    /// cluster as it is, the what-if side on the edited copies.
    pub fn run(self) -> Comparison {
        let base = explain::explain(&self.cluster, &self.base, Arc::clone(&self.object))
            .map_err(|e| e.to_string());
        let alt =
            crate::components::tabs::whatif::fields::apply(&self.fields, &self.cluster, &self.object)
                .and_then(|(cluster, pod)| {
                    let cluster = cluster.as_ref().unwrap_or(&self.cluster);
                    explain::explain(cluster, &self.alt, Arc::new(pod)).map_err(|e| e.to_string())
                });
        Comparison {
            pod: self.pod,
            base_label: "real (as it is)".into(),
            alt_label: self.alt_label,
            base,
            alt,
        }
    }
}
